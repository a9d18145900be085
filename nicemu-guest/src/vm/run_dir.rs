// SPDX-License-Identifier: Apache-2.0
//! Per-run work directories, visible to QEMU (inside the sid root when QEMU is chrooted).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::vm::socket_alias::SocketAlias;

/// A directory as the harness sees it and as QEMU sees it.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Path on the host.
    pub host: PathBuf,
    /// The same directory as QEMU sees it (under the chroot, if any).
    pub guest: PathBuf,
    /// Short socket paths for a run's directory tree (shared by its subdirectories); none
    /// for a directory the user named (`qemu-args --dir`), whose paths are printed as given.
    alias: Option<Arc<SocketAlias>>,
}

impl RunDir {
    /// The directory `host` (seen by QEMU as `guest`), as it is (nothing is created, socket
    /// paths are never shortened).
    pub fn at(host: impl Into<PathBuf>, guest: impl Into<PathBuf>) -> Self {
        RunDir {
            host: host.into(),
            guest: guest.into(),
            alias: None,
        }
    }

    /// Creates `BASE/var/lib/nicemu-runs/ID` for a chrooted QEMU (`chroot_root` set) or
    /// `CACHE/runs/ID` for host QEMU.
    pub fn create(cache: &Path, chroot_root: Option<&Path>, id: &str) -> Result<Self> {
        let me = match chroot_root {
            Some(root) => {
                let guest = PathBuf::from("/var/lib/nicemu-runs").join(id);
                RunDir::at(root.join(guest.strip_prefix("/").unwrap_or(&guest)), guest)
            }
            None => {
                let p = cache.join("runs").join(id);
                RunDir::at(p.clone(), p)
            }
        };
        let me = RunDir {
            alias: Some(Arc::new(SocketAlias::new(&me.host))),
            ..me
        };
        std::fs::create_dir_all(&me.host).map_err(|e| Error::io(&me.host, e))?;
        Ok(me)
    }

    /// A subdirectory (created).
    pub fn sub(&self, name: &str) -> Result<RunDir> {
        let d = RunDir {
            host: self.host.join(name),
            guest: self.guest.join(name),
            alias: self.alias.clone(),
        };
        std::fs::create_dir_all(&d.host).map_err(|e| Error::io(&d.host, e))?;
        Ok(d)
    }

    /// Host and guest paths of a file in this directory.
    pub fn file(&self, name: &str) -> (PathBuf, String) {
        (
            self.host.join(name),
            self.guest.join(name).to_string_lossy().into_owned(),
        )
    }

    /// Host and guest paths of a unix socket in this directory, each short enough to bind
    /// and connect: through the run's short symlink when a run directory is too deep (see
    /// [`SocketAlias`]). A QEMU in a chroot sees the run under a short path already; a
    /// QEMU on the host connects through the symlink too.
    pub fn socket(&self, name: &str) -> (PathBuf, String) {
        let (host, guest) = self.file(name);
        let short = self
            .alias
            .as_ref()
            .map_or_else(|| host.clone(), |a| a.path(&host));
        let guest = if self.guest == self.host {
            short.to_string_lossy().into_owned()
        } else {
            guest
        };
        (short, guest)
    }
}

/// A run id: UTC-ish timestamp (seconds since the epoch) and pid, unique per invocation.
pub fn new_id() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{secs}-{}", std::process::id())
}

/// A kernel name as a directory name ("tree:linux" → "tree_linux").
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Removes the large per-run copies (kernel, initramfs) and leftover sockets, keeping logs.
pub fn remove_images(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p: PathBuf = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            remove_images(&p);
        } else if name == "vmlinuz"
            || name == "initrd.cpio"
            || std::os::unix::fs::FileTypeExt::is_socket(&ft)
        {
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// The kernel part of a cell directory's name: the base kernel (at most 10 characters),
/// "+p" when patches or a driver directory were applied ("sid+igb-stats-mutex" →
/// "sid+p"). The sockets nicemu makes inside the cell directory must stay under the
/// unix socket path limit (108 bytes) however long the patch names are; results.json keeps
/// the full name.
pub fn cell_kernel_name(name: &str) -> String {
    let (base, changed) = match name.split_once('+') {
        Some((b, _)) => (b, true),
        None => (name, false),
    };
    let mut short: String = sanitize(base).chars().take(10).collect();
    if changed {
        short.push_str("+p");
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run directory under the default cache plus a patched kernel's cell must leave room
    /// for nicemu's sockets (the whole name made `1-sid+igb-stats-mutex-nicemu-igb/igb0.sock`
    /// 108 bytes long, one over the limit).
    #[test]
    fn cell_names_stay_short_whatever_the_patches() {
        assert_eq!(cell_kernel_name("sid"), "sid");
        assert_eq!(cell_kernel_name("sid+igb-stats-mutex"), "sid+p");
        assert_eq!(
            cell_kernel_name("tree:/home/me/src/linux-next+a+b"),
            "tree__home+p"
        );
        let run = "/root/.cache/nicemu/sid-root/var/lib/nicemu-runs/1796161598-16192";
        let cell = format!(
            "{run}/99-{}-nicemu-ixgbe/ixgbe1.sock",
            cell_kernel_name("trixie-rt+igb-stats-mutex+ixgbe-xps")
        );
        assert!(cell.len() < 108, "{} bytes: {cell}", cell.len());
    }
}
