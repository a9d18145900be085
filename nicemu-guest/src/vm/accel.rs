// SPDX-License-Identifier: Apache-2.0
//! Choosing KVM or TCG. `auto` tries a short KVM boot (nested KVM can open /dev/kvm and
//! still fail on the first guest instructions) and falls back to TCG.

use std::time::Duration;

use crate::error::{Error, Result};

/// Acceleration requested on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// Probe KVM with a short boot, fall back to TCG.
    Auto,
    /// Hardware virtualization.
    Kvm,
    /// Software emulation.
    Tcg,
}

impl Accel {
    /// The `-accel` value.
    pub fn qemu_name(self) -> &'static str {
        match self {
            Accel::Kvm => "kvm",
            Accel::Auto | Accel::Tcg => "tcg",
        }
    }
}

/// How long the KVM probe boot may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// True if /dev/kvm can be opened read-write.
pub fn kvm_device_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok()
}

/// Resolves `auto` with `probe` (a closure booting the probe image under KVM and
/// returning whether the probe marker appeared).
pub fn resolve(requested: Accel, probe: impl FnOnce() -> Result<bool>) -> Result<Accel> {
    match requested {
        Accel::Tcg => Ok(Accel::Tcg),
        Accel::Kvm => {
            if kvm_device_usable() {
                Ok(Accel::Kvm)
            } else {
                Err(Error::Prerequisite(
                    "--accel kvm: /dev/kvm cannot be opened".into(),
                ))
            }
        }
        Accel::Auto => {
            if !kvm_device_usable() {
                println!("accel: /dev/kvm not usable, using TCG");
                return Ok(Accel::Tcg);
            }
            println!(
                "accel: probing KVM with a short boot (up to {} s)",
                PROBE_TIMEOUT.as_secs()
            );
            let start = std::time::Instant::now();
            let ok = probe()?;
            let secs = start.elapsed().as_secs_f64();
            if ok {
                println!("accel: KVM works ({secs:.1} s)");
                Ok(Accel::Kvm)
            } else {
                println!("accel: KVM guest did not come up in {secs:.1} s, using TCG");
                Ok(Accel::Tcg)
            }
        }
    }
}
