// SPDX-License-Identifier: Apache-2.0
//! Guest tools copied from the sid root, with the shared libraries they need
//! (found with the root's own `ldd`, so the root's loader and libc are used).

use std::collections::BTreeSet;
use std::path::Path;

use crate::error::{Error, Result};

/// Tools every guest image must have (paths as inside the sid root and the guest).
pub const REQUIRED: &[&str] = &[
    "/usr/sbin/ethtool",
    "/usr/bin/ip",
    "/usr/bin/netperf",
    "/usr/bin/netserver",
    "/usr/bin/cyclictest",
    "/usr/bin/taskset",
    "/usr/bin/ping",
    "/usr/sbin/tc",
];

/// Tools copied when present.
pub const OPTIONAL: &[&str] = &[
    "/usr/sbin/ptp4l",
    "/usr/sbin/phc2sys",
    "/usr/sbin/phc_ctl",
    "/usr/sbin/hwstamp_ctl",
    "/usr/bin/perf",
    // xdp-tools: the `xdp` scenario's benchmark.
    "/usr/sbin/xdp-bench",
    // The `xsk` scenario's AF_XDP benchmark, built in the sid root (provision::xsk).
    nicemu_provision::xsk::GUEST_PATH,
];

/// Data files copied when present (no libraries of their own): libxdp's dispatcher,
/// which it loads from disk to attach XDP programs, and its default AF_XDP program.
pub const DATA: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/bpf/xdp-dispatcher.o",
    "/usr/lib/x86_64-linux-gnu/bpf/xsk_def_xdp_prog.o",
    "/usr/lib/x86_64-linux-gnu/bpf/xsk_def_xdp_prog_5.3.o",
];

/// Where busybox lives inside the sid root.
pub const BUSYBOX: &str = "/usr/bin/busybox";

/// Returns the guest paths of the tools to copy, plus all their libraries (and loader),
/// and the [`DATA`] files present.
pub fn closure(root: &Path) -> Result<BTreeSet<String>> {
    let mut files: BTreeSet<String> = DATA
        .iter()
        .filter(|d| super::rootfs_path::resolve(root, d).is_ok())
        .map(|d| d.to_string())
        .collect();
    for t in REQUIRED.iter().chain(OPTIONAL) {
        if super::rootfs_path::resolve(root, t).is_err() {
            if REQUIRED.contains(t) {
                return Err(Error::Prerequisite(format!(
                    "{t} is missing in {} (its package is not installed)",
                    root.display()
                )));
            }
            continue;
        }
        files.insert(t.to_string());
        for lib in libraries(root, t)? {
            files.insert(lib);
        }
    }
    Ok(files)
}

/// The libraries `ldd` (run inside `root`) lists for `tool`.
pub fn libraries(root: &Path, tool: &str) -> Result<Vec<String>> {
    let text = nicemu_provision::cmd::stdout_ok(
        nicemu_provision::enter::in_root(root).args(["ldd", tool]),
    )?;
    Ok(parse_ldd(&text))
}

/// Extracts absolute library paths from `ldd` output.
pub fn parse_ldd(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = match l.split_once("=>") {
                Some((_, rhs)) => rhs.split_whitespace().next()?,
                None => l.split_whitespace().next()?,
            };
            path.starts_with('/').then(|| path.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_output_gives_libs_and_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibmnl.so.0 => /lib/x86_64-linux-gnu/libmnl.so.0 (0x00007f)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text),
            [
                "/lib/x86_64-linux-gnu/libmnl.so.0",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }
}
