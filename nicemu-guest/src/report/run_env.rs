// SPDX-License-Identifier: Apache-2.0
//! The run's environment as the report records it: host cores, load, nicemu's and QEMU's
//! versions, the pinning.

use std::path::Path;

use super::ab::RunEnv;
use crate::provision::{Provisioned, QemuLauncher};
use crate::vm::pin::{host_cores, PinPlan};

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
            std::process::Command::new("chroot")
                .arg(root)
                .args(["qemu-system-x86_64", "--version"]),
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
    }
}
