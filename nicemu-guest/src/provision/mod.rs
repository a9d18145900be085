// SPDX-License-Identifier: Apache-2.0
//! Provisioning: the cache directory, a QEMU new enough for vfio-user, and the Debian sid
//! root that supplies the guest kernel, its modules and the guest tools.

pub mod bootstrap;
pub mod build_root;
pub mod cache;
pub mod debian_kernel;
pub mod enter;
pub mod host_qemu;
pub mod kselftest_build;
pub mod linux_source;
pub mod lock;
pub mod mounts;
pub mod privilege;
pub mod sid_root;
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
