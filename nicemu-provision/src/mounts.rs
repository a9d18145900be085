// SPDX-License-Identifier: Apache-2.0
//! Bind mounts of /proc and /dev into the sid root, shared by every nicemu-guest process
//! that uses the root at the same time (as root; rootless commands get their own from bwrap).
//!
//! Each user registers itself with a file `SIDROOT/run/nicemu-mounts/PID`; the mounts are made
//! when missing and undone only by the last live user (files of dead processes are ignored
//! and removed), so one run finishing never pulls `/dev` away from another run's QEMU.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// Directory (inside the root) holding one file per live user of the mounts.
const USERS_DIR: &str = "run/nicemu-mounts";

/// This process's registration as a user of the sid root's bind mounts; dropping it
/// unmounts them when no other live process still uses them.
#[derive(Debug)]
pub struct BindMounts {
    root: PathBuf,
    registered: Option<PathBuf>,
}

impl BindMounts {
    /// Registers this process and bind-mounts `/proc` and `/dev` into `root` unless already
    /// mounted there.
    pub fn new(root: &Path) -> Result<Self> {
        if super::privilege::current() == super::privilege::Privilege::Rootless {
            // bwrap gives every command its own /proc and /dev (see enter.rs).
            return Ok(BindMounts {
                root: root.to_path_buf(),
                registered: None,
            });
        }
        let users = root.join(USERS_DIR);
        std::fs::create_dir_all(&users).map_err(|e| Error::io(&users, e))?;
        let me_file = users.join(std::process::id().to_string());
        std::fs::write(&me_file, b"").map_err(|e| Error::io(&me_file, e))?;
        let me = BindMounts {
            root: root.to_path_buf(),
            registered: Some(me_file),
        };
        for src in ["/proc", "/dev"] {
            let target = root.join(&src[1..]);
            if is_mount_point(&target) {
                log::debug!("{} already mounted", target.display());
                continue;
            }
            std::fs::create_dir_all(&target).map_err(|e| Error::io(&target, e))?;
            crate::cmd::output_ok(Command::new("mount").arg("--bind").arg(src).arg(&target))?;
        }
        Ok(me)
    }

    /// Unregisters this process and, when it was the last live user, unmounts (also done
    /// on drop).
    pub fn release(&mut self) {
        let Some(me_file) = self.registered.take() else {
            return;
        };
        let _ = std::fs::remove_file(&me_file);
        if other_live_users(&self.root.join(USERS_DIR)) {
            return;
        }
        for src in ["dev", "proc"] {
            let t = self.root.join(src);
            if !is_mount_point(&t) {
                continue;
            }
            let ok = Command::new("umount")
                .arg(&t)
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                // A busy mount (e.g. a QEMU still exiting) is detached lazily.
                let _ = Command::new("umount").arg("-l").arg(&t).status();
            }
        }
    }
}

impl Drop for BindMounts {
    fn drop(&mut self) {
        self.release();
    }
}

/// True if a process other than this one that registered in `users` is still alive;
/// registrations of dead processes are removed.
fn other_live_users(users: &Path) -> bool {
    let me = std::process::id();
    let mut live = false;
    for e in std::fs::read_dir(users).into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        if Path::new("/proc").join(pid.to_string()).exists() {
            live = true;
        } else {
            let _ = std::fs::remove_file(e.path());
        }
    }
    live
}

/// True if `path` appears as a mount point in /proc/self/mountinfo.
pub fn is_mount_point(path: &Path) -> bool {
    let Ok(canon) = path.canonicalize() else {
        return false;
    };
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = canon.to_string_lossy();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .any(|mp| unescape(mp) == want)
}

fn unescape(s: &str) -> String {
    s.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_registrations_do_not_hold_the_mounts() {
        let dir = std::env::temp_dir().join(format!("nicemu-mounts-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A pid far above pid_max is never alive.
        std::fs::write(dir.join("4194304999"), b"").unwrap();
        std::fs::write(dir.join(std::process::id().to_string()), b"").unwrap();
        assert!(!other_live_users(&dir));
        assert!(!dir.join("4194304999").exists(), "stale entry removed");
        // pid 1 is always alive.
        std::fs::write(dir.join("1"), b"").unwrap();
        assert!(other_live_users(&dir));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
