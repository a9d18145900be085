// SPDX-License-Identifier: Apache-2.0
//! Provisioning for nicemu's guest harness: the cache directory, a QEMU new enough for
//! vfio-user, and the Debian sid root that supplies the guest kernel, its modules and the
//! guest tools; Debian kernels, kernel sources and the kselftest build on demand.
//!
//! A crate of its own with few dependencies, and a binary (`nicemu-provision`) that does
//! what `nicemu-guest provision` does: on a first run `ci/guest-matrix` builds it in
//! seconds and starts the sid root's `mmdebstrap` while the harness and nicemu compile.

pub mod bootstrap;
pub mod build_root;
pub mod cache;
pub mod cmd;
pub mod debian_kernel;
pub mod enter;
pub mod error;
pub mod host_qemu;
pub mod kselftest_build;
pub mod linux_source;
pub mod lock;
pub mod mounts;
pub mod privilege;
pub mod sid_root;
pub mod signals;
pub mod xsk;

use std::path::PathBuf;

use crate::error::Result;

/// How QEMU is started.
#[derive(Debug, Clone)]
pub enum QemuLauncher {
    /// The host's own `qemu-system-x86_64` (new enough, has vfio-user-pci).
    Host(PathBuf),
    /// `qemu-system-x86_64` inside the sid root (chroot as root, bwrap as a user: see
    /// [`enter`]).
    Chroot(PathBuf),
}

impl std::fmt::Display for QemuLauncher {
    /// The line `provision` prints: the binary, or the root it runs inside.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QemuLauncher::Host(q) => write!(f, "{}", q.display()),
            QemuLauncher::Chroot(r) => write!(f, "inside the sid root {}", r.display()),
        }
    }
}

/// Everything provisioning produced.
#[derive(Debug, Clone)]
pub struct Provisioned {
    /// The cache directory.
    pub cache: PathBuf,
    /// The sid root (guest kernel, modules, tools; QEMU when the host has none).
    pub sid_root: PathBuf,
    /// How to start QEMU.
    pub qemu: QemuLauncher,
}

/// Provisions everything (idempotent; fast when already done).
pub fn provision() -> Result<Provisioned> {
    let cache = cache::cache_dir()?;
    if privilege::current() == privilege::Privilege::Rootless {
        let creating = !sid_root::is_complete(&cache.join(sid_root::DIR_NAME));
        privilege::check_rootless(creating)?;
    }
    let sid_root = sid_root::ensure(&cache, sid_root::PACKAGES)?;
    let qemu = match host_qemu::detect() {
        Some(p) => {
            log::info!("using host QEMU {}", p.display());
            QemuLauncher::Host(p)
        }
        None => QemuLauncher::Chroot(sid_root.clone()),
    };
    Ok(Provisioned {
        cache,
        sid_root,
        qemu,
    })
}
