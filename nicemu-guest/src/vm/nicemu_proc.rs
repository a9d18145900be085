// SPDX-License-Identifier: Apache-2.0
//! The `nicemu` process serving a device under test: found, started, waited for (its
//! socket appears), and stopped with SIGTERM (so it removes its sockets).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How long nicemu may take to create its socket.
pub const SOCKET_TIMEOUT: Duration = Duration::from_secs(15);

/// Finds the nicemu binary: `--nicemu PATH`, else `nicemu` next to this executable,
/// else `nicemu` on PATH.
pub fn find_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return if nicemu_provision::cmd::is_executable(p) {
            Ok(p.to_path_buf())
        } else {
            Err(Error::Prerequisite(format!(
                "--nicemu {}: not an executable file",
                p.display()
            )))
        };
    }
    if let Some(sibling) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|d| d.join("nicemu")))
        .filter(|p| nicemu_provision::cmd::is_executable(p))
    {
        return Ok(sibling);
    }
    nicemu_provision::cmd::on_path("nicemu").ok_or_else(|| {
        Error::Prerequisite(
            "no nicemu binary next to nicemu-guest or on PATH; build it (cargo build -p nicemu) \
             or pass --nicemu PATH"
                .into(),
        )
    })
}

/// A running nicemu; stopped on drop.
#[derive(Debug)]
pub struct NicemuProcess {
    child: Child,
    log: PathBuf,
}

impl NicemuProcess {
    /// The nicemu process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Starts `binary ARGS…` (`--device SPEC`, `--wire SPEC`, `--control PATH`: one
    /// process, all ports on one switch) with stderr/stdout to `log`, then waits until
    /// every socket in `sockets` exists (failing early if nicemu exits).
    pub fn start(binary: &Path, args: &[String], sockets: &[PathBuf], log: &Path) -> Result<Self> {
        for socket in sockets {
            if socket.as_os_str().len() >= 108 {
                return Err(Error::Usage(format!(
                    "socket path {} is too long for a unix socket (and no short link could be made in /tmp); set NICEMU_CACHE to a shorter dir",
                    socket.display()
                )));
            }
        }
        let out = std::fs::File::create(log).map_err(|e| Error::io(log, e))?;
        let err = out.try_clone().map_err(|e| Error::io(log, e))?;
        let mut cmd = Command::new(binary);
        cmd.args(args);
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        if std::env::var_os("RUST_LOG").is_none() {
            cmd.env("RUST_LOG", "info");
        }
        log::info!("starting {}", nicemu_provision::cmd::display(&cmd));
        let child = cmd.spawn().map_err(|e| Error::Command {
            cmd: nicemu_provision::cmd::display(&cmd),
            detail: e.to_string(),
        })?;
        let mut me = NicemuProcess {
            child,
            log: log.to_path_buf(),
        };
        let start = Instant::now();
        loop {
            let missing = sockets.iter().find(|s| !s.exists());
            let Some(socket) = missing else {
                return Ok(me);
            };
            if let Ok(Some(st)) = me.child.try_wait() {
                return Err(Error::Command {
                    cmd: nicemu_provision::cmd::display(&cmd),
                    detail: format!(
                        "nicemu exited ({st}) before creating {}: {}",
                        socket.display(),
                        me.log_tail(3)
                    ),
                });
            }
            if nicemu_provision::signals::interrupted() {
                return Err(Error::Interrupted);
            }
            if start.elapsed() > SOCKET_TIMEOUT {
                return Err(Error::Command {
                    cmd: nicemu_provision::cmd::display(&cmd),
                    detail: format!(
                        "socket {} did not appear within {} s: {}",
                        socket.display(),
                        SOCKET_TIMEOUT.as_secs(),
                        me.log_tail(3)
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The last `n` lines of nicemu's log, joined with " | ".
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join(" | ")
    }

    /// Exit status if it already exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM, waits up to 3 s, then kills.
    pub fn stop(&mut self) {
        if self.exited().is_some() {
            return;
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for NicemuProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
