// SPDX-License-Identifier: Apache-2.0
//! Choosing KVM or TCG. `auto` tries a short KVM boot (nested KVM can open /dev/kvm and
//! still fail on the first guest instructions) and falls back to TCG — except where the host's
//! KVM is known not to run a stock guest: PVM's (module `kvm_pvm` without `kvm_intel` or
//! `kvm_amd`) runs only kernels built as PVM guests, so the probe could only time out.

use std::path::Path;
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

/// What kind of KVM the host's modules (`SYS/module/*`) provide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KvmKind {
    /// `kvm_intel` or `kvm_amd`: hardware virtualization for any guest.
    Hardware,
    /// Only `kvm_pvm`: PVM, which runs kernels built as PVM guests (not Debian's).
    PvmOnly,
    /// No module named (KVM built in, or not there): only a probe can tell.
    Unknown,
}

/// The host's KVM kind from the module directory of sysfs (`/sys` on a live host).
pub fn kvm_kind(sys: &Path) -> KvmKind {
    let loaded = |m: &str| sys.join("module").join(m).is_dir();
    if loaded("kvm_intel") || loaded("kvm_amd") {
        KvmKind::Hardware
    } else if loaded("kvm_pvm") {
        KvmKind::PvmOnly
    } else {
        KvmKind::Unknown
    }
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
            if kvm_kind(Path::new("/sys")) == KvmKind::PvmOnly {
                println!(
                    "accel: /dev/kvm is PVM's (module kvm_pvm), which runs only PVM guest \
                     kernels: using TCG without a probe"
                );
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sys_with(modules: &[&str]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "nicemu-accel-{}-{}",
            std::process::id(),
            modules.join("-")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        for m in modules {
            std::fs::create_dir_all(dir.join("module").join(m)).unwrap();
        }
        std::fs::create_dir_all(dir.join("module")).unwrap();
        dir
    }

    #[test]
    fn a_pvm_only_host_is_known_without_a_probe() {
        let cases: [(&[&str], KvmKind); 5] = [
            (&["kvm", "kvm_pvm"], KvmKind::PvmOnly),
            (&["kvm", "kvm_intel"], KvmKind::Hardware),
            (&["kvm", "kvm_amd", "kvm_pvm"], KvmKind::Hardware),
            (&["kvm"], KvmKind::Unknown),
            (&[], KvmKind::Unknown),
        ];
        for (mods, want) in cases {
            let sys = sys_with(mods);
            assert_eq!(kvm_kind(&sys), want, "{mods:?}");
            let _ = std::fs::remove_dir_all(&sys);
        }
    }
}
