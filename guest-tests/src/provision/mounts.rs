//! Bind mounts of /proc and /dev into the sid root, mounted idempotently and undone on drop
//! (only the ones this process mounted).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::Result;

/// Holds the bind mounts this process made; unmounts them when dropped.
#[derive(Debug)]
pub struct BindMounts {
    mounted: Vec<PathBuf>,
}

impl BindMounts {
    /// Bind-mounts `/proc` and `/dev` into `root` unless already mounted there.
    pub fn new(root: &Path) -> Result<Self> {
        let mut me = BindMounts {
            mounted: Vec::new(),
        };
        for src in ["/proc", "/dev"] {
            let target = root.join(&src[1..]);
            if is_mount_point(&target) {
                log::debug!("{} already mounted", target.display());
                continue;
            }
            std::fs::create_dir_all(&target).map_err(|e| crate::error::Error::io(&target, e))?;
            crate::cmd::output_ok(Command::new("mount").arg("--bind").arg(src).arg(&target))?;
            me.mounted.push(target);
        }
        Ok(me)
    }

    /// Unmounts what this process mounted (also done on drop).
    pub fn release(&mut self) {
        while let Some(t) = self.mounted.pop() {
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
