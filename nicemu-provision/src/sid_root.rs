// SPDX-License-Identifier: Apache-2.0
//! The Debian sid root (made with mmdebstrap, as root or rootless: [`super::bootstrap`]): QEMU
//! 11, the guest kernel + modules and the guest tools. Built into `sid-root.tmp` under a lock
//! and renamed when complete; a stamp file inside the root records the package list, so a
//! longer list apt-installs the extra packages.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::enter;
use super::lock::FileLock;
use crate::cmd::output_ok;
use crate::error::{Error, Result};

/// Packages the sid root must hold.
pub const PACKAGES: &[&str] = &[
    "qemu-system-x86",
    "linux-image-amd64",
    "busybox-static",
    "iproute2",
    "ethtool",
    "netperf",
    "rt-tests",
    "linuxptp",
    "kmod",
    "util-linux",
    "procps",
    "iputils-ping",
    "linux-perf",
    "xdp-tools",
];

/// Name of the root directory inside the cache.
pub const DIR_NAME: &str = "sid-root";
/// Stamp file (inside the root) listing the provisioned packages.
pub const STAMP: &str = "etc/nicemu-provision.stamp";

/// Makes sure `CACHE/sid-root` exists, is complete and holds `packages`; returns its path.
pub fn ensure(cache: &Path, packages: &[&str]) -> Result<PathBuf> {
    let root = cache.join(DIR_NAME);
    if !is_complete(&root) {
        build(cache, &root, packages)?;
    }
    let stamp = root.join(STAMP);
    let have: Vec<String> = match std::fs::read_to_string(&stamp) {
        Ok(s) => s.lines().map(str::to_owned).collect(),
        Err(_) => {
            // A complete root made outside the harness with our list: adopt it.
            log::info!("adopting existing sid root {}", root.display());
            write_stamp(&root, packages)?;
            packages.iter().map(|s| s.to_string()).collect()
        }
    };
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| !have.iter().any(|h| h == p))
        .collect();
    if !missing.is_empty() {
        install_extra(&root, &missing)?;
        let mut all = have.clone();
        all.extend(missing.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = all.iter().map(String::as_str).collect();
        write_stamp(&root, &refs)?;
    }
    Ok(root)
}

/// A root is complete when it has QEMU and a kernel.
pub fn is_complete(root: &Path) -> bool {
    root.join("usr/bin/qemu-system-x86_64").is_file() && !find_vmlinuz(root).is_empty()
}

/// All `boot/vmlinuz-*` files in `root`, sorted.
pub fn find_vmlinuz(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root.join("boot"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .collect();
    v.sort();
    v
}

fn write_stamp(root: &Path, packages: &[&str]) -> Result<()> {
    let stamp = root.join(STAMP);
    let mut text = packages.join("\n");
    text.push('\n');
    std::fs::write(&stamp, text).map_err(|e| Error::io(&stamp, e))
}

fn build(cache: &Path, root: &Path, packages: &[&str]) -> Result<()> {
    let _lock = FileLock::exclusive(&cache.join(format!("{DIR_NAME}.lock")))?;
    if is_complete(root) {
        return Ok(());
    }
    let tmp = cache.join(format!("{DIR_NAME}.tmp"));
    if tmp.exists() {
        println!("provision: removing unfinished {}", tmp.display());
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    let log_path = cache.join("mmdebstrap.log");
    let start = Instant::now();
    super::bootstrap::make_root("sid", packages, &tmp, &log_path)?;
    if !is_complete(&tmp) {
        return Err(Error::Prerequisite(format!(
            "mmdebstrap finished but {} lacks QEMU or a kernel (see {})",
            tmp.display(),
            log_path.display()
        )));
    }
    write_stamp(&tmp, packages)?;
    std::fs::rename(&tmp, root).map_err(|e| Error::io(root, e))?;
    println!(
        "provision: sid root ready in {} s: {}",
        start.elapsed().as_secs(),
        root.display()
    );
    Ok(())
}

/// apt-get installs `missing` into the sid root (waiting for another run's dpkg lock).
pub fn install_packages(root: &Path, missing: &[&str]) -> Result<()> {
    install_extra(root, missing)
}

fn install_extra(root: &Path, missing: &[&str]) -> Result<()> {
    println!(
        "provision: apt-get install {} in {}",
        missing.join(" "),
        root.display()
    );
    let _mounts = super::mounts::BindMounts::new(root)?;
    output_ok(
        enter::command(root, "apt-get")
            // A mirror snapshot older than the machine's clock has an expired Release.
            .args(["-o", "Acquire::Check-Valid-Until=false", "update"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    output_ok(
        enter::command(root, "apt-get")
            // Another nicemu-guest may be installing into the same root: wait for its lock.
            .args(["-o", "DPkg::Lock::Timeout=900", "install", "-y"])
            // No fsync per unpacked file (a root made before the root's own dpkg.cfg.d said
            // so); the root is synced once below.
            .args(["-o", "Dpkg::Options::=--force-unsafe-io"])
            .arg("--no-install-recommends")
            .args(missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    super::bootstrap::sync_fs(root)
}
