// SPDX-License-Identifier: Apache-2.0
//! Detection of a usable host QEMU (>= 10.1 with `vfio-user-pci`).

use std::path::PathBuf;
use std::process::Command;

/// Minimum QEMU version with a vfio-user client.
pub const MIN_VERSION: (u32, u32) = (10, 1);

/// Returns the host `qemu-system-x86_64` if it is new enough and lists `vfio-user-pci`.
pub fn detect() -> Option<PathBuf> {
    let qemu = crate::cmd::on_path("qemu-system-x86_64")?;
    let out = Command::new(&qemu).arg("--version").output().ok()?;
    let version = parse_version(&String::from_utf8_lossy(&out.stdout))?;
    if version < MIN_VERSION {
        log::info!(
            "host QEMU {}.{} is older than {}.{}; using the sid root's QEMU",
            version.0,
            version.1,
            MIN_VERSION.0,
            MIN_VERSION.1
        );
        return None;
    }
    let out = Command::new(&qemu)
        .args(["-device", "help"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !text.contains("\"vfio-user-pci\"") {
        log::info!("host QEMU lacks vfio-user-pci; using the sid root's QEMU");
        return None;
    }
    Some(qemu)
}

/// Parses "QEMU emulator version 11.1.3 (Debian ...)" into (major, minor).
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    let rest = text.split("version ").nth(1)?;
    let ver = rest.split_whitespace().next()?;
    let mut parts = ver.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_debian_version_line() {
        let v = parse_version("QEMU emulator version 11.1.3 (Debian 1:11.1.3+ds-1)\nCopyright");
        assert_eq!(v, Some((11, 1)));
        assert_eq!(parse_version("QEMU emulator version 7.2.15"), Some((7, 2)));
        assert!(parse_version("garbage").is_none());
    }
}
