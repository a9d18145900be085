// SPDX-License-Identifier: Apache-2.0
//! The Debian sid root made with debootstrap: QEMU 11, the guest kernel + modules and the
//! guest tools. Built into `sid-root.tmp` and renamed when complete; a stamp file inside
//! the root records the package list, so a longer list apt-installs the extra packages.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cmd::{is_root, on_path, output_ok};
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

fn require_root(what: &str) -> Result<()> {
    if is_root() {
        Ok(())
    } else {
        Err(Error::Prerequisite(format!(
            "{what} needs root (debootstrap/chroot); run nicemu-guest as root"
        )))
    }
}

// Split in the kbuild branch (debootstrap() on its own); drop this allow when it lands.
#[allow(clippy::too_many_lines)]
fn build(cache: &Path, root: &Path, packages: &[&str]) -> Result<()> {
    require_root("creating the sid root")?;
    let tmp = cache.join(format!("{DIR_NAME}.tmp"));
    if tmp.exists() {
        if let Some(pid) = debootstrap_running_on(&tmp) {
            return Err(Error::Prerequisite(format!(
                "{} is being built by debootstrap (pid {pid}); wait for it to finish",
                tmp.display()
            )));
        }
        if is_complete(&tmp) && !root.exists() {
            log::info!("finishing an already complete {}", tmp.display());
            std::fs::rename(&tmp, root).map_err(|e| Error::io(root, e))?;
            return Ok(());
        }
        println!("provision: removing unfinished {}", tmp.display());
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    let log_path = cache.join("debootstrap.log");
    let start = Instant::now();
    debootstrap("sid", packages, &tmp, &log_path)?;
    if !is_complete(&tmp) {
        return Err(Error::Prerequisite(format!(
            "debootstrap finished but {} lacks QEMU or a kernel (see {})",
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

/// Runs `debootstrap --variant=minbase --include=PACKAGES SUITE DIR` (default mirror), its
/// output in `log_path`, printing its last line every 15 s; Ctrl-C stops it.
pub(crate) fn debootstrap(
    suite: &str,
    packages: &[&str],
    dir: &Path,
    log_path: &Path,
) -> Result<()> {
    let debootstrap = ensure_debootstrap()?;
    let log_file = std::fs::File::create(log_path).map_err(|e| Error::io(log_path, e))?;
    let log_err = log_file.try_clone().map_err(|e| Error::io(log_path, e))?;
    println!(
        "provision: debootstrap Debian {suite} into {} (a few minutes; log {})",
        dir.display(),
        log_path.display()
    );
    let mut cmd = Command::new(&debootstrap);
    cmd.arg("--variant=minbase")
        .arg(format!("--include={}", packages.join(",")))
        .arg(suite)
        .arg(dir)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err);
    let mut child = cmd.spawn().map_err(|e| Error::Command {
        cmd: crate::cmd::display(&cmd),
        detail: e.to_string(),
    })?;
    let start = Instant::now();
    let mut last_report = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| Error::io(&debootstrap, e))? {
            break st;
        }
        if crate::signals::interrupted() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Interrupted);
        }
        if last_report.elapsed() >= Duration::from_secs(15) {
            last_report = Instant::now();
            println!(
                "provision: [{:>4}s] {}",
                start.elapsed().as_secs(),
                last_line(log_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    if status.success() {
        return Ok(());
    }
    Err(Error::Command {
        cmd: crate::cmd::display(&cmd),
        detail: format!(
            "{status}; last log line: {} (see {})",
            last_line(log_path).unwrap_or_default(),
            log_path.display()
        ),
    })
}

fn ensure_debootstrap() -> Result<PathBuf> {
    if let Some(p) = on_path("debootstrap").or_else(|| {
        let p = PathBuf::from("/usr/sbin/debootstrap");
        p.is_file().then_some(p)
    }) {
        return Ok(p);
    }
    if on_path("apt-get").is_none() {
        return Err(Error::Prerequisite(
            "debootstrap is not installed and apt-get is not available to install it".into(),
        ));
    }
    println!("provision: installing debootstrap with apt-get");
    output_ok(
        Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", "debootstrap"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
    .map_err(|e| Error::Prerequisite(format!("could not install debootstrap: {e}")))?;
    on_path("debootstrap")
        .or_else(|| {
            let p = PathBuf::from("/usr/sbin/debootstrap");
            p.is_file().then_some(p)
        })
        .ok_or_else(|| Error::Prerequisite("debootstrap still not found after install".into()))
}

/// apt-get installs `missing` into the sid root (waiting for another run's dpkg lock).
pub(crate) fn install_packages(root: &Path, missing: &[&str]) -> Result<()> {
    install_extra(root, missing)
}

fn install_extra(root: &Path, missing: &[&str]) -> Result<()> {
    require_root("installing extra packages into the sid root")?;
    println!(
        "provision: apt-get install {} in {}",
        missing.join(" "),
        root.display()
    );
    let _mounts = super::mounts::BindMounts::new(root)?;
    output_ok(
        Command::new("chroot")
            .arg(root)
            // A mirror snapshot older than the machine's clock has an expired Release.
            .args([
                "apt-get",
                "-o",
                "Acquire::Check-Valid-Until=false",
                "update",
            ])
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    output_ok(
        Command::new("chroot")
            .arg(root)
            // Another nicemu-guest may be installing into the same root: wait for its lock.
            .args(["apt-get", "-o", "DPkg::Lock::Timeout=900", "install", "-y"])
            .arg("--no-install-recommends")
            .args(missing)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )?;
    Ok(())
}

/// The last non-empty line of a log file.
fn last_line(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    BufReader::new(f)
        .lines()
        .map_while(|l| l.ok())
        .filter(|l| !l.trim().is_empty())
        .last()
}

/// The pid of a running debootstrap whose command line mentions `dir`.
fn debootstrap_running_on(dir: &Path) -> Option<u32> {
    let want = dir.to_string_lossy().into_owned();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("debootstrap") && cmdline.contains(&want) {
            return Some(pid);
        }
    }
    None
}
