// SPDX-License-Identifier: Apache-2.0
//! Booting one guest: the QEMU command line, a bounded wait for the end marker while
//! the serial console is logged, and the outcome.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use nicemu_provision::QemuLauncher;

use super::accel::Accel;
use super::host::{HostActions, REQUEST_MARKER};
use super::kernel_log::{self, KernelConsole, KernelLog};

/// Everything needed to boot a guest.
#[derive(Debug, Clone)]
pub struct BootSpec {
    /// How QEMU is started.
    pub launcher: QemuLauncher,
    /// KVM or TCG (`Auto` means TCG here).
    pub accel: Accel,
    /// vCPUs.
    pub smp: u32,
    /// Guest RAM in MiB.
    pub mem_mb: u32,
    /// Kernel path as QEMU sees it.
    pub kernel: String,
    /// Initramfs path as QEMU sees it.
    pub initrd: String,
    /// Kernel command line.
    pub append: String,
    /// Device arguments.
    pub extra: Vec<String>,
    /// Upper bound for the whole boot.
    pub timeout: Duration,
    /// Host path of the serial log to write.
    pub serial_log: PathBuf,
    /// Host path of QEMU's own stderr log.
    pub qemu_log: PathBuf,
    /// Console marker after which the guest is done.
    pub done_marker: &'static str,
    /// Pin the vCPU threads (and nicemu's, by pid) to host cores (`--pin`).
    pub pin: Option<(super::pin::PinPlan, Option<u32>)>,
    /// The kernel's console on a second serial port: (host path, path as QEMU sees it)
    /// ([`super::kernel_log`]); `None`: the kernel prints on `/init`'s console.
    pub kernel_log: Option<(PathBuf, String)>,
}

/// How the QEMU process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// QEMU exited by itself.
    Exited(Option<i32>),
    /// The timeout hit and QEMU was killed.
    TimedOut,
}

/// What a boot produced.
#[derive(Debug, Clone)]
pub struct BootOutcome {
    /// Everything the serial console printed.
    pub console: String,
    /// Host time from QEMU start until `@@NICEMU-BOOT` appeared.
    pub to_userspace: Option<Duration>,
    /// Host time from QEMU start until the done marker appeared.
    pub to_done: Option<Duration>,
    /// How QEMU ended.
    pub exit: Exit,
    /// What the kernel's own console showed (splats, its last lines, a panic).
    pub kernel: KernelConsole,
}

impl BootOutcome {
    /// The last `n` non-empty console lines.
    pub fn tail(&self, n: usize) -> Vec<String> {
        let lines: Vec<&str> = self
            .console
            .lines()
            .map(|l| l.trim_end_matches('\r'))
            .filter(|l| !l.trim().is_empty())
            .collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }
}

/// The full QEMU command for `spec`.
pub fn command(spec: &BootSpec) -> Command {
    let mut cmd = match &spec.launcher {
        QemuLauncher::Host(q) => Command::new(q),
        QemuLauncher::Chroot(root) => nicemu_provision::enter::command(root, "qemu-system-x86_64"),
    };
    let mem = format!("{}M", spec.mem_mb);
    cmd.args(["-accel", spec.accel.qemu_name()]);
    if spec.accel == Accel::Kvm {
        cmd.args(["-cpu", "host"]);
    }
    cmd.args(["-machine", "q35,memory-backend=mem"])
        .arg("-object")
        .arg(format!("memory-backend-memfd,id=mem,size={mem},share=on"))
        .args(["-m", &mem])
        .args(["-smp", &spec.smp.to_string()])
        .args([
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-no-reboot",
        ])
        .args(["-serial", "stdio", "-monitor", "none"])
        .args(
            spec.kernel_log
                .iter()
                .flat_map(|(_, g)| kernel_log::qemu_args(g)),
        )
        .args(["-kernel", &spec.kernel, "-initrd", &spec.initrd])
        .args(["-append", &spec.append])
        .args(&spec.extra);
    cmd
}

/// Boots the guest and waits for the done marker, QEMU's exit, the timeout or a signal.
/// With `host`, guest requests (`@@NICEMU-HOST …`) are served as they appear: their
/// results join the console and the acknowledgement goes to the guest's serial input.
pub fn boot(spec: &BootSpec, mut host: Option<&mut HostActions>) -> Result<BootOutcome> {
    let qlog = std::fs::File::create(&spec.qemu_log).map_err(|e| Error::io(&spec.qemu_log, e))?;
    let mut serial =
        std::fs::File::create(&spec.serial_log).map_err(|e| Error::io(&spec.serial_log, e))?;
    let (mut child, start) = spawn_qemu(spec, qlog, host.is_some())?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut serial_in = child.stdin.take();
    let (rx, reader) = read_lines(stdout);
    let mut w = Watch::new(start, spec.pin.is_none());
    w.klog = spec
        .kernel_log
        .as_ref()
        .map(|(h, _)| KernelLog::new(h.clone()));
    loop {
        w.pin(spec, &child);
        w.follow_kernel(&mut child);
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => {
                w.take_line(&line, spec, &mut serial);
                if let (Some(h), Some(pos)) = (host.as_deref_mut(), line.find(REQUEST_MARKER)) {
                    w.serve_host_action(h, &line[pos..], &mut serial, serial_in.as_mut());
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // EOF: QEMU closed stdout (it is exiting).
                let st = child.wait().map_err(|e| Error::io("qemu", e))?;
                if !w.killed_for_timeout {
                    w.out.exit = Exit::Exited(st.code());
                }
                break;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        w.police(spec, &mut child);
    }
    let _ = reader.join();
    let _ = serial.flush();
    if w.interrupted {
        return Err(Error::Interrupted);
    }
    if let Some(k) = w.klog.take() {
        w.out.kernel = k.finish();
    }
    Ok(w.out)
}

/// Starts QEMU for `spec` (its stderr into `qlog`, its stdin piped when a host serves
/// the guest's requests), recording the command line next to the log.
fn spawn_qemu(
    spec: &BootSpec,
    qlog: std::fs::File,
    stdin: bool,
) -> Result<(std::process::Child, Instant)> {
    let mut cmd = command(spec);
    cmd.stdin(if stdin { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::from(qlog));
    log::info!("starting {}", nicemu_provision::cmd::display(&cmd));
    let _ = std::fs::write(
        spec.qemu_log.with_extension("cmd"),
        format!("{cmd:?}\n").as_bytes(),
    );
    let start = Instant::now();
    let child = cmd.spawn().map_err(|e| Error::Command {
        cmd: nicemu_provision::cmd::display(&cmd),
        detail: e.to_string(),
    })?;
    Ok((child, start))
}

/// The console's lines as they come, read on a thread of their own.
fn read_lines(
    stdout: std::process::ChildStdout,
) -> (mpsc::Receiver<String>, std::thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if tx.send(String::from_utf8_lossy(&buf).into_owned()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    (rx, reader)
}

/// What watching one boot has seen so far, and what it did to QEMU.
struct Watch {
    out: BootOutcome,
    start: Instant,
    /// QEMU was killed at the timeout before the done marker.
    killed_for_timeout: bool,
    kill_sent: bool,
    last_log_check: Instant,
    /// SIGINT/SIGTERM arrived.
    interrupted: bool,
    /// The vCPU threads are pinned (or need not be).
    pinned: bool,
    /// The kernel's console, followed.
    klog: Option<KernelLog>,
    last_klog_poll: Instant,
}

impl Watch {
    fn new(start: Instant, pinned: bool) -> Self {
        Watch {
            out: BootOutcome {
                console: String::new(),
                to_userspace: None,
                to_done: None,
                exit: Exit::TimedOut,
                kernel: KernelConsole::default(),
            },
            start,
            killed_for_timeout: false,
            kill_sent: false,
            last_log_check: Instant::now(),
            interrupted: false,
            pinned,
            klog: None,
            last_klog_poll: Instant::now(),
        }
    }

    /// Reads the kernel's console (every 100 ms); once the kernel panicked and printed its
    /// report, QEMU is stopped (the cell ends with the panic, not a timeout).
    fn follow_kernel(&mut self, child: &mut std::process::Child) {
        let Some(k) = self.klog.as_mut() else { return };
        if self.last_klog_poll.elapsed() < Duration::from_millis(100) {
            return;
        }
        self.last_klog_poll = Instant::now();
        k.poll();
        if k.panic_done() && !self.kill_sent {
            log::info!("the guest kernel panicked: stopping QEMU");
            self.kill_sent = true;
            let _ = child.kill();
        }
    }

    /// Pins QEMU's threads (and nicemu's) once they exist, when `spec` asks.
    fn pin(&mut self, spec: &BootSpec, child: &std::process::Child) {
        if self.pinned {
            return;
        }
        if let Some((plan, nicemu)) = &spec.pin {
            self.pinned = super::pin::apply(plan, child.id(), *nicemu);
        }
    }

    /// A console line: logged, timed against the boot and done markers, kept.
    fn take_line(&mut self, line: &str, spec: &BootSpec, serial: &mut std::fs::File) {
        let _ = serial.write_all(line.as_bytes());
        if self.out.to_userspace.is_none() && line.contains(crate::image::init_script::BOOT_MARKER)
        {
            self.out.to_userspace = Some(self.start.elapsed());
        }
        if self.out.to_done.is_none() && line.contains(spec.done_marker) {
            self.out.to_done = Some(self.start.elapsed());
        }
        self.out.console.push_str(line);
    }

    /// Serves a guest's host action: its result lines join the console and the serial
    /// log, the acknowledgement goes to the guest's serial input.
    fn serve_host_action(
        &mut self,
        h: &mut HostActions,
        request: &str,
        serial: &mut std::fs::File,
        serial_in: Option<&mut std::process::ChildStdin>,
    ) {
        let handled = h.handle(request);
        for l in &handled.console {
            let _ = writeln!(serial, "[host] {l}");
            self.out.console.push_str(l);
            self.out.console.push('\n');
        }
        if let Some(w) = serial_in {
            let sent = writeln!(w, "{}", handled.ack).and_then(|_| w.flush());
            if let Err(e) = sent {
                log::warn!("cannot acknowledge a host action to the guest: {e}");
            }
        }
    }

    /// Kills QEMU when a KVM guest failed, a signal arrived or the time is up (shortly
    /// after the done marker: the guest powers off right after it).
    fn police(&mut self, spec: &BootSpec, child: &mut std::process::Child) {
        if spec.accel == Accel::Kvm
            && !self.kill_sent
            && self.last_log_check.elapsed() >= Duration::from_millis(500)
        {
            self.last_log_check = Instant::now();
            let qlog = std::fs::read_to_string(&spec.qemu_log).unwrap_or_default();
            if qlog.contains("KVM internal error") || qlog.contains("emulation failure") {
                log::info!("KVM guest failed (see {})", spec.qemu_log.display());
                self.kill_sent = true;
                let _ = child.kill();
            }
        }
        if nicemu_provision::signals::interrupted() && !self.interrupted {
            self.interrupted = true;
            let _ = child.kill();
        }
        let limit = match self.out.to_done {
            Some(d) => (d + Duration::from_secs(10)).min(spec.timeout),
            None => spec.timeout,
        };
        if !self.kill_sent && self.start.elapsed() > limit {
            self.kill_sent = true;
            self.killed_for_timeout = self.out.to_done.is_none();
            let _ = child.kill();
        }
    }
}
