// SPDX-License-Identifier: Apache-2.0
//! The `nicemu` process: command line, ports (vfio-user functions), the L2
//! switch joining them, register tracing and signal handling.
// The length rule is for non-test code (tests read best as one scenario).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod capture;
pub mod config;
pub mod control;
pub mod error;
pub mod fdb;
pub mod irq;
pub mod latency;
pub mod outfile;
pub mod poll;
pub mod ports;
pub mod sched;
pub mod schedstat;
pub mod signals;
pub mod socket;
pub mod switch;
pub mod threads;
pub mod timer;
pub mod trace;
pub mod veb;
pub mod vfio;
pub mod vhost;
pub mod wire;

use std::path::PathBuf;

use clap::Parser;

/// `nicemu --version`: the crate version and the git commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("NICEMU_COMMIT"), ")");

/// Command line of `nicemu`.
#[derive(Debug, Parser)]
#[command(
    name = "nicemu",
    version = VERSION,
    about = "Emulated Intel igb (82576) / ixgbe (82599) NICs and virtio-net ports for QEMU VMs",
    long_about = "Serves emulated PCI network functions to QEMU over vfio-user \
(-device '{\"driver\":\"vfio-user-pci\",\"socket\":{\"type\":\"unix\",\"path\":SOCKET}}', \
guest RAM shared with -object memory-backend-memfd,share=on). Devices on the same net= share one \
L2 switch. Runs until SIGINT/SIGTERM, then removes its sockets.",
    after_help = "Example:\n  nicemu --device igb,id=igb0,socket=/run/nicemu/igb0.sock,mac=52:54:00:00:00:01 \\\n         --device igb,id=igb1,socket=/run/nicemu/igb1.sock --trace-regs=/tmp/regs.log"
)]
pub struct Cli {
    /// `nicemu ctl …` talks to a running nicemu instead of starting one.
    #[command(subcommand)]
    pub command: Option<Command>,
    // The doc comment is --help text (clap), where brackets mean optional parts.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// A PCI function or port: KIND,id=NAME,socket=PATH[,mac=MAC][,net=NET][,queues=N][,coalesce=on][,delay=NS]
    /// (KIND: igb, ixgbe, virtio-net, or an SR-IOV VF: igbvf, ixgbevf with
    /// adapter=A,vf=N[,vlan=N[,qos=Q]][,spoofchk=on|off][,trust=on|off][,link=auto|enable|disable],
    /// nicemu playing the host's PF; igb/ixgbe: adapter=A makes the port adapter A's
    /// PF port (its VFs' frames to and from it are VEB loopback), port-security=on
    /// drops frames from another source MAC; net defaults to lan0; delay: wire delay in ns
    /// of frames arriving at an igb/ixgbe port, seen in its PTP receive time
    /// stamps; give both ends delay=D for a symmetric wire of D ns; coalesce=on:
    /// a virtio-net port's receive coalescing, off by default since the guest
    /// cannot switch it off).
    #[arg(long = "device", value_name = "SPEC")]
    pub devices: Vec<String>,
    /// A wire joining a network to the outside: stream,path=SOCKET[,net=NET]
    /// (QEMU -netdev stream peer, nicemu listens) or tap,ifname=NAME[,net=NET].
    #[arg(long = "wire", value_name = "SPEC")]
    pub wires: Vec<String>,
    /// Serve the control socket (`nicemu ctl --control PATH …`) at PATH.
    #[arg(long = "control", value_name = "PATH")]
    pub control: Option<PathBuf>,
    /// Directory the files named over the control socket (`ctl capture`,
    /// `ctl trace --file`) are created in; a name outside it is refused.
    /// Default: the control socket's directory.
    #[arg(long = "output-dir", value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Trace every register access (time, R/W, offset, register name, value)
    /// to FILE (a new file: an existing one or a symlink is refused), or to
    /// standard error without =FILE.
    #[arg(long = "trace-regs", value_name = "FILE", num_args = 0..=1, require_equals = true, default_missing_value = "-")]
    pub trace_regs: Option<PathBuf>,
    /// Scheduling policy of the data-path threads (vfio-user servers, receive
    /// threads, vhost-user workers, wires): batch serves doorbells in batches
    /// without preempting the vCPU that rang them; normal lets a doorbell
    /// preempt when the scheduler agrees; short (normal with a 0.1 ms slice,
    /// Linux 6.12 and later) preempts at once; idle runs the data path only
    /// on idle cores. Timers and the control socket always run normal.
    #[arg(long = "sched", value_enum, default_value_t = sched::DataPathSched::Batch)]
    pub sched: sched::DataPathSched,
    /// Scheduling policy of the threads that take doorbells (vfio-user
    /// servers, vhost-user queue workers), when it should differ from
    /// --sched's (which then covers receive threads and wires). Default:
    /// --sched's.
    #[arg(long = "sched-doorbell", value_enum, value_name = "POLICY")]
    pub sched_doorbell: Option<sched::DataPathSched>,
    /// After a message or kick, the vfio-user server and vhost-user worker
    /// threads poll for the next one for up to N µs (spinning, a core busy)
    /// before blocking; 0 to 1000. For hosts with cores to spare.
    #[arg(long = "poll-us", value_name = "N", default_value_t = 0, value_parser = poll::parse_poll_us)]
    pub poll_us: u64,
}

/// Subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Inspect and steer a running nicemu through its control socket:
    /// list, stats, trace, capture, link, fault.
    #[command(arg_required_else_help = true)]
    Ctl(control::client::CtlArgs),
}

/// Runs nicemu until a termination signal; returns the process exit code.
pub fn run(cli: Cli) -> Result<(), error::Error> {
    let devices = config::parse_devices(&cli.devices)?;
    let wires = cli
        .wires
        .iter()
        .map(|w| config::WireSpec::parse(w))
        .collect::<Result<Vec<_>, _>>()?;
    let output_dir = match &cli.control {
        Some(c) if c.symlink_metadata().is_ok() => {
            return Err(error::Error::SocketExists(c.clone()));
        }
        Some(c) => {
            let dir = cli.output_dir.clone().unwrap_or_else(|| match c.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            });
            let out = outfile::OutputDir::open(&dir)
                .map_err(|source| error::Error::OutputDir { path: dir, source })?;
            Some(out)
        }
        None => None,
    };
    // One sink for --trace-regs; each device gets its own switchable tracer.
    let tracer = match cli.trace_regs.as_deref() {
        None => None,
        Some(p) if p.as_os_str() == "-" => Some(trace::open_sink(None)?),
        Some(p) => Some(trace::open_sink(Some(p))?),
    };
    sched::set_data_path_policy(cli.sched);
    if let Some(p) = cli.sched_doorbell {
        sched::set_doorbell_policy(p);
    }
    poll::set(cli.poll_us);
    let signals = signals::Signals::block()?;
    let running = ports::start(&devices, &wires, tracer)?;
    if let (Some(path), Some(out)) = (&cli.control, output_dir) {
        match control::server::start(path, running.registry.clone(), out) {
            Ok(p) => running.add_socket(p),
            Err(e) => {
                running.remove_sockets();
                return Err(e);
            }
        }
    }
    let sig = signals.wait();
    log::info!("signal {sig}: shutting down");
    running.remove_sockets();
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_names_the_commit_it_was_built_from() {
        let v = super::VERSION;
        let commit = v
            .strip_prefix(concat!(env!("CARGO_PKG_VERSION"), " ("))
            .and_then(|r| r.strip_suffix(')'))
            .unwrap_or_else(|| panic!("{v}"));
        assert!(
            commit == "unknown"
                || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
            "{v}"
        );
    }
}
