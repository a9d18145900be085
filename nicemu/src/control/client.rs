// SPDX-License-Identifier: Apache-2.0
//! `nicemu ctl`: sends one request to a running nicemu's control socket and
//! prints the answer, human-readable by default or as JSON with `--json`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Component, Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};

use super::protocol::{FaultSpec, Request, Response, VfSet};

/// `nicemu ctl` arguments.
#[derive(Debug, Args)]
pub struct CtlArgs {
    /// The control socket of the running nicemu (its --control PATH).
    #[arg(long, value_name = "PATH")]
    pub control: PathBuf,
    /// Print the raw JSON response.
    #[arg(long)]
    pub json: bool,
    /// What to do.
    #[command(subcommand)]
    pub verb: Verb,
}

/// On or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    /// On.
    On,
    /// Off.
    Off,
}

/// Up or down.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum UpDown {
    /// Cable connected.
    Up,
    /// Cable disconnected.
    Down,
}

/// `nicemu ctl` verbs.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Devices, ports, links, queues and the guest driver state seen.
    List,
    /// A device's hardware counters and its switch port counters.
    ///
    /// The counters are totals: reading them does not clear what the guest reads.
    Stats {
        /// Device id (the id= of a --device).
        dev: String,
        /// Also print counters that are zero.
        #[arg(long)]
        all: bool,
    },
    /// Turn a device's register trace on or off.
    Trace {
        /// Device id.
        dev: String,
        /// on or off.
        state: OnOff,
        /// Keep only registers whose name starts with REGNAME, or offsets in START-END.
        #[arg(long, value_name = "REGNAME|START-END")]
        filter: Option<String>,
        /// Write the trace to this file (default: nicemu's standard error or --trace-regs file).
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
    },
    /// Capture the frames leaving and entering a device's port into a pcap
    /// file; `capture DEV stop` ends it.
    Capture {
        /// Device id.
        dev: String,
        /// pcap file to write, or `stop`.
        file: String,
        /// Stop by itself after this many frames.
        #[arg(long)]
        count: Option<u64>,
    },
    /// Connect or disconnect a device's emulated cable.
    Link {
        /// Device id.
        dev: String,
        /// up or down.
        state: UpDown,
    },
    /// Where a port's transactions spend their time inside nicemu.
    ///
    /// Count, p50, p90, p99 and max of each latency stage (doorbell or kick → frame handed to
    /// the switch → pass done; a peer's frame → placed in the ring;
    /// interrupt raised → eventfd written, the write alone; doorbell →
    /// interrupt written), and how long each of the port's threads waited
    /// for a core per slice it ran.
    Latency {
        /// Device id.
        dev: String,
        /// Clear the histograms (and the threads' accounting) after reading them.
        #[arg(long)]
        reset: bool,
    },
    /// Inject a fault into a device.
    Fault {
        /// Device id.
        dev: String,
        /// The fault.
        #[command(subcommand)]
        fault: FaultSpec,
    },
    /// A VF's settings, as `ip link set PF vf N mac|vlan|spoofchk|trust|state`
    /// sets them, and what its driver asked the PF for; without a setting,
    /// shows them.
    Vf {
        /// Device id of the VF (an igbvf or ixgbevf --device).
        dev: String,
        /// The setting to change.
        #[command(subcommand)]
        set: Option<VfSet>,
    },
    /// A VF's mailbox: counters and the last 64 messages between its driver
    /// and nicemu's PF.
    Mailbox {
        /// Device id of the VF.
        dev: String,
    },
}

impl Verb {
    fn request(&self) -> Request {
        match self {
            Verb::List => Request::List,
            Verb::Stats { dev, .. } => Request::Stats { dev: dev.clone() },
            Verb::Trace {
                dev,
                state,
                filter,
                file,
            } => Request::Trace {
                dev: dev.clone(),
                on: *state == OnOff::On,
                filter: filter.clone(),
                file: file.as_ref().map(|f| absolute(f)),
            },
            Verb::Capture { dev, file, count } if file == "stop" => {
                let _ = count;
                Request::CaptureStop { dev: dev.clone() }
            }
            Verb::Capture { dev, file, count } => Request::Capture {
                dev: dev.clone(),
                file: absolute(Path::new(file)),
                count: *count,
            },
            Verb::Link { dev, state } => Request::Link {
                dev: dev.clone(),
                up: *state == UpDown::Up,
            },
            Verb::Latency { dev, reset } => Request::Latency {
                dev: dev.clone(),
                reset: *reset,
            },
            Verb::Fault { dev, fault } => Request::Fault {
                dev: dev.clone(),
                fault: fault.clone(),
            },
            Verb::Vf { dev, set } => Request::Vf {
                dev: dev.clone(),
                set: set.clone(),
            },
            Verb::Mailbox { dev } => Request::Mailbox { dev: dev.clone() },
        }
    }
}

/// The file name sent to nicemu: a plain name (no directory) as it is, a name in nicemu's
/// output directory wherever this client runs; any other path made absolute here, since
/// nicemu may run in another directory (it accepts that only inside its output directory).
fn absolute(p: &Path) -> String {
    let mut parts = p.components();
    if matches!(parts.next(), Some(Component::Normal(_))) && parts.next().is_none() {
        return p.display().to_string();
    }
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// Sends one request and returns the response.
pub fn call(control: &Path, req: &Request) -> Result<Response, String> {
    let mut s = UnixStream::connect(control).map_err(|e| {
        format!(
            "cannot connect to {}: {e} (is nicemu running with --control {}?)",
            control.display(),
            control.display()
        )
    })?;
    let line = serde_json::to_string(req).map_err(|e| e.to_string())?;
    // A refusal (busy, another user) may come before the request is sent:
    // read the answer even when sending failed.
    let sent = writeln!(s, "{line}");
    let mut resp = String::new();
    let read = BufReader::new(s).read_line(&mut resp);
    match (sent, read) {
        (_, Ok(n)) if n > 0 => {}
        (Err(e), _) => return Err(format!("cannot send: {e}")),
        (Ok(()), Err(e)) => return Err(format!("no answer: {e}")),
        (Ok(()), Ok(_)) => return Err("no answer: connection closed".into()),
    }
    serde_json::from_str(&resp).map_err(|e| format!("bad answer: {e}"))
}

/// Runs `nicemu ctl`; returns the text to print or an error message.
pub fn run(args: &CtlArgs) -> Result<String, String> {
    let resp = call(&args.control, &args.verb.request())?;
    if args.json {
        return serde_json::to_string_pretty(&resp).map_err(|e| e.to_string());
    }
    if !resp.ok {
        return Err(resp.error.unwrap_or_else(|| "request failed".into()));
    }
    Ok(human(&args.verb, &resp.data))
}

/// A reply as the text `nicemu ctl` prints without `--json`.
fn human(verb: &Verb, d: &serde_json::Value) -> String {
    match verb {
        Verb::List => list_table(d),
        Verb::Stats { .. } if d.get("wire").is_some() => wire_stats(d),
        Verb::Stats { all, .. } => port_stats(d, *all),
        Verb::Latency { .. } => latency_table(d),
        Verb::Vf { .. } => vf_text(d),
        Verb::Mailbox { .. } => mailbox_text(d),
        Verb::Capture { file, .. } if file == "stop" => {
            format!("capture stopped after {} frames\n", d["frames"])
        }
        _ => "ok\n".to_string(),
    }
}

/// `latency`: one line per stage, times in microseconds.
fn latency_table(d: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let us = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or(0) as f64 / 1000.0;
    let mut o = format!(
        "{:<17} {:>10} {:>10} {:>10} {:>10} {:>10}   (µs)\n",
        "stage", "count", "p50", "p90", "p99", "max"
    );
    for name in crate::latency::STAGES {
        if let Some(v) = d["stages"].get(name) {
            let _ = writeln!(
                o,
                "{name:<17} {:>10} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                v["count"].as_u64().unwrap_or(0),
                us(v, "p50"),
                us(v, "p90"),
                us(v, "p99"),
                us(v, "max")
            );
        }
    }
    threads_table(&mut o, &d["threads"]);
    o
}

/// `latency`: the port's threads, how long each waited for a core per
/// slice it ran (the wake-up → running delay of a sleeping thread).
fn threads_table(o: &mut String, threads: &serde_json::Value) {
    use std::fmt::Write as _;
    let Some(list) = threads.as_array().filter(|l| !l.is_empty()) else {
        return;
    };
    let us = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or(0) as f64 / 1000.0;
    let _ = writeln!(
        o,
        "\n{:<10} {:<16} {:>10} {:>14} {:>14}   (µs)",
        "thread", "name", "slices", "wait/slice", "on cpu/slice"
    );
    for t in list {
        let _ = writeln!(
            o,
            "{:<10} {:<16} {:>10} {:>14.1} {:>14.1}",
            t["role"].as_str().unwrap_or("?"),
            t["name"].as_str().unwrap_or("?"),
            t["slices"].as_u64().unwrap_or(0),
            us(t, "wait_per_slice_ns"),
            us(t, "on_cpu_per_slice_ns"),
        );
    }
}

/// `list`: one line per port.
fn list_table(d: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<10} {:<6} {:<8} {:<17} {:<5} {:<7} {:<9} {:<9} interrupts",
        "id", "model", "net", "mac", "link", "driver", "rx queues", "tx queues"
    );
    for p in d["devices"].as_array().into_iter().flatten() {
        let qs = |k: &str| {
            let v: Vec<String> = p[k]
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| x.to_string())
                .collect();
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(",")
            }
        };
        let _ = writeln!(
            o,
            "{:<10} {:<6} {:<8} {:<17} {:<5} {:<7} {:<9} {:<9} {}",
            p["id"].as_str().unwrap_or(""),
            p["model"].as_str().unwrap_or(""),
            p["net"].as_str().unwrap_or(""),
            p["mac"].as_str().unwrap_or(""),
            p["link"].as_str().unwrap_or(""),
            if p["driver_loaded"].as_bool() == Some(true) {
                "loaded"
            } else {
                "-"
            },
            qs("rx_queues"),
            qs("tx_queues"),
            p["interrupts"].as_str().unwrap_or("")
        );
    }
    o
}

/// `stats wireN`: the wire's switch port.
fn wire_stats(d: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let s = &d["switch"];
    let _ = writeln!(o, "wire: {}", d["wire"].as_str().unwrap_or(""));
    for k in [
        "tx_frames",
        "rx_frames",
        "rx_drops",
        "runt_drops",
        "egress_drops",
    ] {
        let _ = writeln!(o, "{k:<16} {}", s[k]);
    }
    o
}

/// `stats DEV`: its counters (the non-zero ones unless `all`), its switch
/// port, the network's MAC table and the guest errors.
fn port_stats(d: &serde_json::Value, all: bool) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for kv in d["counters"].as_array().into_iter().flatten() {
        let (k, v) = (kv[0].as_str().unwrap_or(""), kv[1].as_u64().unwrap_or(0));
        if all || v != 0 {
            let _ = writeln!(o, "{k:<16} {v}");
        }
    }
    let s = &d["switch"];
    let _ = writeln!(
        o,
        "switch port: tx_frames {} rx_frames {} rx_drops {} runt_drops {} spoof_drops {}",
        s["tx_frames"], s["rx_frames"], s["rx_drops"], s["runt_drops"], s["spoof_drops"]
    );
    let n = &d["net"];
    let _ = writeln!(
        o,
        "mac table: entries {} aged {} evictions {}",
        n["fdb_entries"], n["fdb_aged"], n["fdb_evictions"]
    );
    let errs: Vec<String> = d["guest_errors"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|kv| format!("{} {}", kv[0].as_str().unwrap_or(""), kv[1]))
        .collect();
    let _ = writeln!(o, "guest errors: {}", errs.join(", "));
    if let Some(a) = d["accesses"].as_object() {
        let l: Vec<String> = a.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(o, "register accesses: {}", l.join(", "));
    }
    o
}

/// `vf DEV`: one `key value` line per setting and agent state.
fn vf_text(d: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for k in [
        "vf",
        "mac",
        "admin_mac",
        "vlan",
        "qos",
        "spoofchk",
        "trust",
        "link_state",
        "query_rss",
        "clear_to_send",
        "api",
        "xcast",
        "max_frame",
        "vlans",
        "mc_hashes",
        "uc_filters",
        "nacks",
    ] {
        let v = &d[k];
        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        let _ = writeln!(o, "{k:<14} {v}");
    }
    o
}

/// `mailbox DEV`: its counters, then one line per message, oldest first.
fn mailbox_text(d: &serde_json::Value) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "requests {} pf_messages {} acks {} nacks {} unlocked_writes {} replaced {}",
        d["requests"], d["pf_messages"], d["acks"], d["nacks"], d["unlocked_writes"], d["replaced"]
    );
    for t in d["trace"].as_array().into_iter().flatten() {
        let words: Vec<&str> = t["words"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| w.as_str())
            .collect();
        let dir = if t["from"] == "vf" {
            "vf -> pf"
        } else {
            "pf -> vf"
        };
        let _ = writeln!(o, "{dir}  {}", words.join(" "));
    }
    o
}
