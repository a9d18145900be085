// SPDX-License-Identifier: Apache-2.0
//! The run's environment as the report records it (host cores, load, nicemu's and QEMU's
//! versions, the pinning), and its measurement.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::vm::pin::{host_cores, PinPlan};
use nicemu_provision::{Provisioned, QemuLauncher};

/// What the numbers of a run depend on, besides accel, vCPUs and kernels (in the report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnv {
    /// Host CPUs online.
    pub host_cores: usize,
    /// `nicemu --version`, when nicemu served a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nicemu_version: Option<String>,
    /// `qemu-system-x86_64 --version` (first line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qemu_version: Option<String>,
    /// Host cores QEMU's and nicemu's threads were pinned to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinning: Option<String>,
    /// Host load average (1 min) when the run started: the machine may be shared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_avg: Option<f64>,
    /// When the run started (UTC, RFC 3339: "2026-12-05T08:10:00Z").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
    /// The command line that made the run, quoted for a POSIX shell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

/// The date for [`RunEnv::started`].
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `args` as one line a POSIX shell reads back: words with characters other than
/// `[A-Za-z0-9_./:=,+@%-]` in single quotes.
pub fn shell_line(args: impl IntoIterator<Item = String>) -> String {
    args.into_iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_./:=,+@%-".contains(c));
            if plain {
                a
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

impl RunEnv {
    /// One line: "host 2 cores (load 3.1), nicemu 0.1.0, QEMU emulator version 11.1.3,
    /// pinned vCPU0→0 vCPU1→1 nicemu→0".
    pub fn line(&self) -> String {
        let mut s = format!("host {} cores", self.host_cores);
        if let Some(l) = self.load_avg {
            s.push_str(&format!(" (load {l:.1})"));
        }
        // The versions name themselves ("nicemu 0.1.0", "QEMU emulator version 11.1.3 …").
        for v in [&self.nicemu_version, &self.qemu_version]
            .into_iter()
            .flatten()
        {
            s.push_str(&format!(", {v}"));
        }
        if let Some(p) = &self.pinning {
            s.push_str(&format!(", pinned {p}"));
        }
        s
    }
}

/// What the run's numbers depend on: host cores, load, nicemu and QEMU versions.
pub fn measure(prov: &Provisioned, nicemu: Option<&Path>, pin: bool, smp: u32) -> RunEnv {
    let first_line = |cmd: &mut std::process::Command| {
        cmd.output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .map(str::to_owned)
            })
    };
    let qemu_version = match &prov.qemu {
        QemuLauncher::Host(q) => first_line(std::process::Command::new(q).arg("--version")),
        QemuLauncher::Chroot(root) => first_line(
            nicemu_provision::enter::in_root(root).args(["qemu-system-x86_64", "--version"]),
        ),
    };
    RunEnv {
        host_cores: host_cores(),
        nicemu_version: nicemu
            .and_then(|n| first_line(std::process::Command::new(n).arg("--version"))),
        qemu_version,
        pinning: pin.then(|| PinPlan::new(smp, host_cores()).describe()),
        load_avg: std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().and_then(|x| x.parse().ok())),
        started: None,
        command: Some(shell_line(std::env::args())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_reads_back_in_a_shell() {
        let line = shell_line(
            [
                "nicemu-guest",
                "run",
                "--device",
                "nicemu-igb,qemu-igb",
                "--param",
                "netperf.duration=3",
                "it's here",
                "",
            ]
            .map(String::from),
        );
        assert_eq!(
            line,
            "nicemu-guest run --device nicemu-igb,qemu-igb --param netperf.duration=3 'it'\\''s here' ''"
        );
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf '%s|' {line}")])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "nicemu-guest|run|--device|nicemu-igb,qemu-igb|--param|netperf.duration=3|it's here||"
        );
    }

    #[test]
    fn env_line_names_each_version_once() {
        let e = RunEnv {
            host_cores: 2,
            nicemu_version: Some("nicemu 0.1.0".into()),
            qemu_version: Some("QEMU emulator version 11.1.3".into()),
            pinning: Some("vCPU0→0 nicemu→0".into()),
            load_avg: Some(10.04),
            started: None,
            command: None,
        };
        assert_eq!(
            e.line(),
            "host 2 cores (load 10.0), nicemu 0.1.0, QEMU emulator version 11.1.3, pinned vCPU0→0 nicemu→0"
        );
    }
}
