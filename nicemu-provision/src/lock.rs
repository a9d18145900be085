// SPDX-License-Identifier: Apache-2.0
//! An exclusive advisory lock on a file (`flock(2)`), held while one run fills a cache entry
//! that a concurrent run may want too (a source package, an extracted tree, a build).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::error::{Error, Result};

/// Holds `flock(LOCK_EX)` on a file until dropped.
#[derive(Debug)]
pub struct FileLock {
    _file: File,
}

impl FileLock {
    /// Blocks until the lock on `path` (created if missing) is held.
    pub fn exclusive(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        loop {
            // SAFETY: flock on a descriptor this function owns; no memory is passed.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
            if rc == 0 {
                return Ok(FileLock { _file: file });
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(Error::io(path, err));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_waits_for_the_first() {
        let dir = std::env::temp_dir().join(format!("nicemu-lock-{}", std::process::id()));
        let path = dir.join("l");
        let first = FileLock::exclusive(&path).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let p2 = path.clone();
        let t = std::thread::spawn(move || {
            let _second = FileLock::exclusive(&p2).unwrap();
            tx.send(()).unwrap();
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
        t.join().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
