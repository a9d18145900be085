// SPDX-License-Identifier: Apache-2.0
//! `nicemu-xsk` (`nicemu-guest/tools/nicemu-xsk.c`, written for this project), the `xsk`
//! scenario's AF_XDP benchmark: no Debian package has one (xdp-tools' `xdp-bench` has no
//! AF_XDP mode, the kernel's `xdpsock` sample is not packaged), so it is built inside the
//! sid root against libxdp's xsk API, once per source content, into
//! `SIDROOT/usr/local/bin/nicemu-xsk`, where the guest image's tool list finds it.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::kselftest_build::install_missing;
use super::lock::FileLock;
use crate::cmd::output_ok;
use crate::error::{Error, Result};

/// The program's source.
pub const SOURCE: &str = include_str!("../../nicemu-guest/tools/nicemu-xsk.c");
/// Where the binary lives (in the sid root and in the guest).
pub const GUEST_PATH: &str = "/usr/local/bin/nicemu-xsk";
/// What the build needs in the sid root.
pub const PACKAGES: &[&str] = &["gcc", "libc6-dev", "libxdp-dev", "libbpf-dev"];
/// Build directory inside the sid root.
const DIR_IN_ROOT: &str = "var/lib/nicemu-tools";

/// The first 12 hex digits of the source's SHA-256.
pub fn source_id() -> String {
    let d = Sha256::digest(SOURCE.as_bytes());
    d.iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// Builds `nicemu-xsk` in `sid_root` unless the binary of this source is there.
pub fn ensure(sid_root: &Path) -> Result<()> {
    let dir = sid_root.join(DIR_IN_ROOT);
    let stamp = dir.join(format!("nicemu-xsk.{}", source_id()));
    let bin = sid_root.join(GUEST_PATH.trim_start_matches('/'));
    if stamp.is_file() && bin.is_file() {
        return Ok(());
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let _lock = FileLock::exclusive(&dir.join(".lock"))?;
    if stamp.is_file() && bin.is_file() {
        return Ok(());
    }
    install_missing(sid_root, PACKAGES)?;
    let src = dir.join("nicemu-xsk.c");
    std::fs::write(&src, SOURCE).map_err(|e| Error::io(&src, e))?;
    let tmp = format!("{GUEST_PATH}.tmp");
    println!("build: nicemu-xsk (AF_XDP benchmark) in the sid root");
    output_ok(crate::enter::in_root(sid_root).args([
        "gcc",
        "-O2",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-o",
        &tmp,
        &format!("/{DIR_IN_ROOT}/nicemu-xsk.c"),
        "-lxdp",
        "-lbpf",
    ]))?;
    let tmp_host = sid_root.join(tmp.trim_start_matches('/'));
    std::fs::rename(&tmp_host, &bin).map_err(|e| Error::io(&bin, e))?;
    std::fs::write(&stamp, b"").map_err(|e| Error::io(&stamp, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_is_the_projects_and_its_id_follows_it() {
        assert!(SOURCE.starts_with("// SPDX-License-Identifier: Apache-2.0"));
        assert!(SOURCE.contains("xsk_socket__create"));
        assert_eq!(source_id().len(), 12);
        assert_eq!(source_id(), source_id());
    }
}
