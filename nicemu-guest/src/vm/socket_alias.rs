// SPDX-License-Identifier: Apache-2.0
//! Short paths for the unix sockets of a deep run directory. A socket's path must fit
//! `sockaddr_un.sun_path` (108 bytes with its NUL, unix(7)); a cache under a CI job's
//! workspace or a deep `NICEMU_CACHE` makes the run directory alone longer than that. Then
//! the sockets are bound and connected through a symlink `/tmp/nicemu-XXXXXXXX` → the run
//! directory (the kernel resolves it like any path), made once per run when the first
//! socket needs it and removed when the run ends; the socket files stay in the run
//! directory, where QEMU finds them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The longest socket path `bind`/`connect` take: `sun_path` is 108 bytes with the NUL.
pub const SOCKET_PATH_MAX: usize = 107;

/// A run directory and, once one of its sockets needed it, its short symlink.
#[derive(Debug)]
pub struct SocketAlias {
    target: PathBuf,
    link: OnceLock<Option<PathBuf>>,
}

impl SocketAlias {
    /// For the run directory `target` (nothing is made until a path needs it).
    pub fn new(target: &Path) -> Self {
        SocketAlias {
            target: target.to_path_buf(),
            link: OnceLock::new(),
        }
    }

    /// The path to bind or connect `path` (a file under the run directory) at: `path`
    /// itself when it fits, else the same file through the short symlink. When no symlink
    /// can be made, `path` (the caller's length check then says so).
    pub fn path(&self, path: &Path) -> PathBuf {
        if path.as_os_str().len() <= SOCKET_PATH_MAX {
            return path.to_path_buf();
        }
        let Ok(rel) = path.strip_prefix(&self.target) else {
            return path.to_path_buf();
        };
        match self.link.get_or_init(|| make_link(&self.target)) {
            Some(link) => link.join(rel),
            None => path.to_path_buf(),
        }
    }
}

impl Drop for SocketAlias {
    fn drop(&mut self) {
        if let Some(Some(link)) = self.link.get() {
            let _ = std::fs::remove_file(link);
        }
    }
}

/// A new symlink `/tmp/nicemu-XXXXXXXX` → `target` (a name nobody has: `symlink` fails on
/// an existing one, so another user's file is never reused), or None.
fn make_link(target: &Path) -> Option<PathBuf> {
    let tmp = Path::new("/tmp");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id().rotate_left(16);
    for i in 0..32u32 {
        let n = seed
            .wrapping_mul(2_654_435_761)
            .wrapping_add(i.wrapping_mul(40_503));
        let link = tmp.join(format!("nicemu-{n:08x}"));
        match std::os::unix::fs::symlink(target, &link) {
            Ok(()) => {
                log::info!(
                    "sockets of {} through the short path {}",
                    target.display(),
                    link.display()
                );
                return Some(link);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                log::warn!("cannot make a short socket path in /tmp: {e}");
                return None;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_path_is_kept_and_a_long_one_goes_through_a_link_removed_at_the_end() {
        let top = std::env::temp_dir().join(format!("nicemu-alias-{}", std::process::id()));
        let deep = top.join("x".repeat(120));
        std::fs::create_dir_all(&deep).unwrap();
        let a = SocketAlias::new(&deep);
        assert_eq!(a.path(Path::new("/r/igb0.sock")), Path::new("/r/igb0.sock"));
        let long = deep.join("cell/igb0.sock");
        let short = a.path(&long);
        assert!(short.as_os_str().len() <= SOCKET_PATH_MAX);
        assert!(short.ends_with("cell/igb0.sock"));
        assert_eq!(a.path(&deep.join("cell/ctl.sock")).parent(), short.parent());
        let link = short.parent().unwrap().parent().unwrap().to_path_buf();
        assert_eq!(std::fs::read_link(&link).unwrap(), deep);
        // A path outside the directory is left as it is.
        let other = Path::new("/elsewhere").join("y".repeat(120));
        assert_eq!(a.path(&other), other);
        drop(a);
        assert!(
            link.symlink_metadata().is_err(),
            "{} left behind",
            link.display()
        );
        let _ = std::fs::remove_dir_all(&top);
    }
}
