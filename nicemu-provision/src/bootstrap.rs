// SPDX-License-Identifier: Apache-2.0
//! Making a Debian root with mmdebstrap: `--mode=root` into the directory as root, and as an
//! ordinary user `--mode=unshare` (a user namespace over the user's subordinate ids) writing a
//! tarball that is unpacked as the user, so every file of the root belongs to them and the
//! cache can be copied, packed and removed without privilege.
//!
//! The root is lean: the `apt` variant (essential packages + apt) plus what is asked for, no
//! recommends, no manual pages, documentation (copyright files kept) or translations, and no
//! kernel postinst hooks (the harness packs its own initramfs; Debian's would run dracut for
//! nothing). dpkg unpacks with `force-unsafe-io` (no fsync per file: at ~10 ms an fsync on a
//! loaded host's disk, a root of tens of thousands of files spent minutes in them); the root
//! is synced once, with `syncfs`, before the caller renames it complete. The Date of the suite's Release file it was made from is kept in
//! [`SNAPSHOT`]: the Debian snapshot the root came from (CI caches are keyed by it).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::privilege::{self, Privilege};
use crate::cmd::{on_path, output_ok};
use crate::error::{Error, Result};

/// File (inside a root) holding the Date of the Release file the root was made from.
pub const SNAPSHOT: &str = "etc/nicemu-debian-snapshot";

/// mmdebstrap's options for a root of `packages` made in `mode`.
pub(crate) fn options(mode: Privilege, packages: &[&str]) -> Vec<String> {
    let mut o: Vec<String> = vec![
        match mode {
            Privilege::Root => "--mode=root",
            Privilege::Rootless => "--mode=unshare",
        }
        .into(),
        "--variant=apt".into(),
        format!("--include={}", packages.join(",")),
        // A mirror snapshot older than the machine's clock has an expired Release.
        "--aptopt=Acquire::Check-Valid-Until \"false\"".into(),
        "--aptopt=APT::Install-Recommends \"false\"".into(),
        // The package lists stay: later steps look packages up (linux-source, headers).
        "--skip=cleanup/apt/lists".into(),
    ];
    if mode == Privilege::Rootless {
        // Inside bwrap there is one uid: apt cannot drop to _apt for downloads.
        o.push("--aptopt=APT::Sandbox::User \"root\"".into());
    }
    for p in [
        "path-exclude=/usr/share/man/*",
        "path-exclude=/usr/share/locale/*",
        "path-exclude=/usr/share/info/*",
        "path-exclude=/usr/share/doc/*",
        "path-include=/usr/share/doc/*/copyright",
        "path-exclude=/etc/kernel/postinst.d/*",
        // Kept in the root's dpkg.cfg.d: later apt-get installs there skip the fsyncs too.
        "force-unsafe-io",
    ] {
        o.push(format!("--dpkgopt={p}"));
    }
    o.push(format!(
        "--customize-hook=sed -n 's/^Date: //p' \"$1\"/var/lib/apt/lists/*_InRelease | head -n 1 \
         > \"$1\"/{SNAPSHOT}"
    ));
    o
}

/// Makes a Debian `suite` root holding `packages` in `dir` (which must not exist), mmdebstrap's
/// output in `log_path`, printing its last line every 15 s; Ctrl-C stops it.
pub(crate) fn make_root(suite: &str, packages: &[&str], dir: &Path, log_path: &Path) -> Result<()> {
    let mode = privilege::current();
    let mmdebstrap = ensure_mmdebstrap(mode)?;
    let log_file = std::fs::File::create(log_path).map_err(|e| Error::io(log_path, e))?;
    println!(
        "provision: mmdebstrap Debian {suite} into {} ({}; a few minutes; log {})",
        dir.display(),
        match mode {
            Privilege::Root => "as root",
            Privilege::Rootless => "rootless, --mode=unshare",
        },
        log_path.display()
    );
    let mut cmd = Command::new(&mmdebstrap);
    cmd.args(options(mode, packages))
        .arg(suite)
        .stdin(Stdio::null())
        .stderr(log_file.try_clone().map_err(|e| Error::io(log_path, e))?);
    let mut children = Vec::new();
    match mode {
        Privilege::Root => {
            cmd.arg(dir).stdout(log_file);
            children.push(spawn(&mut cmd)?);
        }
        Privilege::Rootless => {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            cmd.arg("-").stdout(Stdio::piped());
            let mut m = spawn(&mut cmd)?;
            let tarball = m.stdout.take().expect("stdout is piped");
            // Device nodes cannot be made (bwrap gives each command a /dev); owners are the
            // user's, modes as in the packages.
            let mut tar = Command::new("tar");
            tar.args(["-x", "-p", "--no-same-owner", "--exclude=./dev/*", "-C"])
                .arg(dir)
                .stdin(tarball)
                .stdout(Stdio::null())
                .stderr(log_file);
            children.push(m);
            children.push(spawn(&mut tar)?);
        }
    }
    wait_all(&mut children, &cmd, log_path)?;
    sync_fs(dir)
}

/// Writes the filesystem holding `dir` to disk once (dpkg ran with `force-unsafe-io`), so a
/// root renamed complete is complete after a crash too.
pub(crate) fn sync_fs(dir: &Path) -> Result<()> {
    let d = std::fs::File::open(dir).map_err(|e| Error::io(dir, e))?;
    // SAFETY: `d` is an open descriptor for the whole call; syncfs only reads the fd number.
    let rc = unsafe { libc::syncfs(std::os::fd::AsRawFd::as_raw_fd(&d)) };
    if rc != 0 {
        return Err(Error::io(dir, std::io::Error::last_os_error()));
    }
    Ok(())
}

fn spawn(cmd: &mut Command) -> Result<Child> {
    cmd.spawn().map_err(|e| Error::Command {
        cmd: crate::cmd::display(cmd),
        detail: e.to_string(),
    })
}

/// Waits for every child (printing progress from the log); the first failure is the error.
fn wait_all(children: &mut [Child], cmd: &Command, log_path: &Path) -> Result<()> {
    let start = Instant::now();
    let mut last_report = Instant::now();
    let mut status = vec![None; children.len()];
    while status.iter().any(Option::is_none) {
        for (c, s) in children.iter_mut().zip(status.iter_mut()) {
            if s.is_none() {
                *s = c.try_wait().map_err(|e| Error::io(log_path, e))?;
            }
        }
        if crate::signals::interrupted() {
            for c in children.iter_mut() {
                let _ = c.kill();
                let _ = c.wait();
            }
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
    }
    if let Some(bad) = status.iter().flatten().find(|s| !s.success()) {
        return Err(Error::Command {
            cmd: crate::cmd::display(cmd),
            detail: format!(
                "{bad}; last log line: {} (see {})",
                last_line(log_path).unwrap_or_default(),
                log_path.display()
            ),
        });
    }
    Ok(())
}

/// mmdebstrap's path: installed with apt-get as root when missing.
fn ensure_mmdebstrap(mode: Privilege) -> Result<PathBuf> {
    if let Some(p) = on_path("mmdebstrap") {
        return Ok(p);
    }
    if mode == Privilege::Rootless {
        // check_rootless named it already; this is for a race with an uninstall.
        return Err(Error::Prerequisite(
            "mmdebstrap is not installed: apt-get install mmdebstrap uidmap (as root)".into(),
        ));
    }
    if on_path("apt-get").is_none() {
        return Err(Error::Prerequisite(
            "mmdebstrap is not installed and apt-get is not available to install it".into(),
        ));
    }
    println!("provision: installing mmdebstrap with apt-get");
    let install = || {
        output_ok(
            Command::new("apt-get")
                .args([
                    "install",
                    "-y",
                    "-qq",
                    "--no-install-recommends",
                    "mmdebstrap",
                ])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
    };
    if install().is_err() {
        output_ok(Command::new("apt-get").args(["update", "-qq"]))?;
        install().map_err(|e| Error::Prerequisite(format!("could not install mmdebstrap: {e}")))?;
    }
    on_path("mmdebstrap")
        .ok_or_else(|| Error::Prerequisite("mmdebstrap still not found after install".into()))
}

/// The last non-empty line of a log file.
pub(crate) fn last_line(path: &Path) -> Option<String> {
    let f = std::fs::File::open(path).ok()?;
    BufReader::new(f)
        .lines()
        .map_while(|l| l.ok())
        .filter(|l| !l.trim().is_empty())
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rootless_root_is_made_in_a_user_namespace_and_keeps_apt_working_as_one_uid() {
        let root = options(Privilege::Root, &["qemu-system-x86", "kmod"]);
        let user = options(Privilege::Rootless, &["qemu-system-x86", "kmod"]);
        assert_eq!(root[0], "--mode=root");
        assert_eq!(user[0], "--mode=unshare");
        assert!(root.contains(&"--include=qemu-system-x86,kmod".to_string()));
        let sandbox = "--aptopt=APT::Sandbox::User \"root\"".to_string();
        assert!(user.contains(&sandbox) && !root.contains(&sandbox));
        for o in [&root, &user] {
            assert!(o.contains(&"--variant=apt".to_string()));
            assert!(o.contains(&"--skip=cleanup/apt/lists".to_string()));
            assert!(o.contains(&"--dpkgopt=path-exclude=/etc/kernel/postinst.d/*".to_string()));
            assert!(o.contains(&"--dpkgopt=force-unsafe-io".to_string()));
            assert!(o
                .iter()
                .any(|x| x.starts_with("--customize-hook=") && x.contains(SNAPSHOT)));
        }
    }

    #[test]
    fn a_finished_root_is_synced_once_and_a_missing_one_is_an_error() {
        let dir = std::env::temp_dir().join(format!("nicemu-syncfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), b"x").unwrap();
        sync_fs(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let e = sync_fs(&dir).unwrap_err().to_string();
        assert!(e.contains("nicemu-syncfs"), "{e}");
    }
}
