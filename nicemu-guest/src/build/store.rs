// SPDX-License-Identifier: Apache-2.0
//! Where builds are kept: `SIDROOT/var/lib/nicemu-builds/` (make runs inside the sid root),
//! each entry named by a key of what it was built from; and the build logs kept in the run.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Hex SHA-256 of the parts (each followed by a NUL), first `len` hex digits.
pub fn key(parts: &[&[u8]], len: usize) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
        h.update([0]);
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    hex[..len.min(hex.len())].to_owned()
}

/// Where builds live, as the chroot sees it.
pub const BUILDS_IN_ROOT: &str = "/var/lib/nicemu-builds";

/// `SIDROOT/var/lib/nicemu-builds` and its path inside the chroot.
pub fn builds_dir(sid_root: &Path) -> (PathBuf, &'static str) {
    (sid_root.join(&BUILDS_IN_ROOT[1..]), BUILDS_IN_ROOT)
}

/// Copies `log` into `log_dir` as `name` (best effort: the build's own copy stays).
pub fn keep_log(log: &Path, log_dir: &Path, name: &str) -> PathBuf {
    let dest = log_dir.join(name);
    if std::fs::copy(log, &dest).is_ok() {
        dest
    } else {
        log.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_every_part() {
        assert_eq!(key(&[b"a", b"b"], 12), key(&[b"a", b"b"], 12));
        assert_ne!(key(&[b"a", b"b"], 12), key(&[b"ab"], 12));
        assert_eq!(key(&[b"x"], 12).len(), 12);
    }
}
