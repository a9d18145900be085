// SPDX-License-Identifier: Apache-2.0
//! The second initramfs archive of `kselftest` guests: the installed selftests tree at
//! `/ksft`, python3 with its standard library and PyYAML, the tools the tests call (bash,
//! socat, iperf3, bpftool, devlink, lldptool, coreutils' `timeout` and `env`; bash as `/bin/sh` and `/bin/bash`;
//! bpftrace when a selected program needs it), `/etc/protocols` and `/etc/services`, and
//! every shared library the ELF files among them need (listed by the sid root's own `ldd`).

use std::collections::BTreeSet;
use std::path::Path;

use super::cpio::CpioWriter;
use super::rootfs_path;
use crate::error::{Error, Result};

/// Where the selftests tree sits in the guest.
pub const GUEST_DIR: &str = "/ksft";

/// Tools the tests run (paths inside the sid root and the guest).
pub const TOOLS: &[&str] = &[
    "/usr/bin/bash",
    "/usr/bin/socat",
    "/usr/bin/iperf3",
    "/usr/sbin/bpftool",
    "/usr/sbin/devlink",
    "/usr/bin/timeout",
    // The tests start with `#!/usr/bin/env python3` (busybox puts its applets in /bin).
    "/usr/bin/env",
    "/usr/bin/python3",
    // net/forwarding/lib.sh (the forwarding-style hw/*.sh programs) requires both, and
    // finds itself with `readlink -e` (busybox's readlink has no -e).
    "/usr/bin/jq",
    "/usr/sbin/mausezahn",
    "/usr/bin/readlink",
    // ethtool_lib.sh (ethtool.sh, ethtool_extended_state.sh) intersects link mode lists
    // with `comm`, which busybox here lacks.
    "/usr/bin/comm",
    // ethtool_mm.sh requires it (`require_command lldptool`) before its first case; its
    // lldp case would also need the lldpad daemon, which it starts with systemctl.
    "/usr/sbin/lldptool",
];

/// A tool carried only when a program that needs it is selected: it is large.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionalTool {
    /// Kselftest name of the program that calls it.
    pub program: &'static str,
    /// Debian package (installed into the sid root when needed).
    pub package: &'static str,
    /// Its path inside the sid root and the guest.
    pub path: &'static str,
}

/// bpftrace: netpoll_basic.py counts `netpoll_poll_dev` calls with it. With its libraries
/// (LLVM 21, libclang, libclang-cpp, z3, BCC) it adds ~270 MiB to the ~60 MiB archive,
/// so only runs that select netpoll_basic.py (or `all`) carry it.
pub const OPTIONAL_TOOLS: &[OptionalTool] = &[OptionalTool {
    program: "drivers/net:netpoll_basic.py",
    package: "bpftrace",
    path: "/usr/bin/bpftrace",
}];

/// The optional tools `tests` (full kselftest names, or `all`) need.
pub fn optional_tools(tests: &[String]) -> Vec<OptionalTool> {
    OPTIONAL_TOOLS
        .iter()
        .filter(|o| tests.iter().any(|t| t == "all" || t == o.program))
        .copied()
        .collect()
}

/// Data files the tests read: ethtool_lib.sh maps link mode names to bit numbers with awk
/// over the uapi `ethtool.h` (linux-libc-dev, installed with the build tools).
const DATA: &[&str] = &["/usr/include/linux/ethtool.h"];

/// Modules the selftests use besides the drivers: `fq` / `etf` qdiscs under `prio` with
/// an `fw` filter (so_txtime.py), `clsact` (sch_ingress) with `flower` / `matchall`
/// filters and `skbedit` actions (ring_reconfig.py), macsec with its `gcm(aes)` cipher
/// (macsec.py: the `gcm` template builds on `ctr(aes)`, which the guest, having no
/// modprobe for the crypto API's module requests, cannot load on demand) and VLANs over it
/// (8021q), `cls_bpf` (the netkit programs' `tc filter … bpf` redirect, NetDrvContEnv), pppoe (its GRO handlers: gro.py's sw_pppoe cases), xfrm_user and ESP
/// with its offload and the templates of `seqiv(rfc4106(gcm(aes)))`: seqiv / echainiv as
/// ESP's IV generators (ipsec_vxlan.py), netconsole (netpoll_basic.py), tunnels (tso.py, csum and GRO variants,
/// hw_stats_l3_gre.sh), vrf (net/forwarding/lib.sh's `simple_if_init`).
pub const MODULES: &[&str] = &[
    "sch_fq",
    "sch_etf",
    "sch_prio",
    "cls_fw",
    "sch_ingress",
    "cls_flower",
    "cls_matchall",
    "act_skbedit",
    "macsec",
    "gcm",
    "ctr",
    "seqiv",
    "echainiv",
    "8021q",
    "cls_bpf",
    "pppoe",
    "xfrm_user",
    "esp4",
    "esp4_offload",
    "esp6",
    "esp6_offload",
    "netconsole",
    "ipip",
    "ip_gre",
    "vxlan",
    "ip6_tunnel",
    "sit",
    "vrf",
];

/// Data files of the sid root the tools read: the protocol names iproute2 resolves with
/// `getprotobyname` (`ip xfrm policy … proto udp` in ipsec_vxlan.py) and the service names.
const DATA_FILES: &[&str] = &["/etc/protocols", "/etc/services"];

/// Python directories besides the standard library (PyYAML and its C loader).
const PY_EXTRA: &[&str] = &[
    "/usr/lib/python3/dist-packages/yaml",
    "/usr/lib/python3/dist-packages/_yaml",
];

/// Builds the archive from the sid root and the installed selftests at `install` (host path),
/// with [`TOOLS`] and the `optional` ones.
pub fn archive(root: &Path, install: &Path, optional: &[OptionalTool]) -> Result<Vec<u8>> {
    let mut w = CpioWriter::new(Vec::new());
    let mut elves: Vec<String> = Vec::new();
    let install_in_root = install.strip_prefix(root).map_err(|_| {
        Error::Prerequisite(format!(
            "the selftests at {} are not inside the sid root {}",
            install.display(),
            root.display()
        ))
    })?;
    let install_in_root = format!("/{}", install_in_root.display());
    add_tree(&mut w, install, (GUEST_DIR, &install_in_root), &mut elves)?;
    let stdlib = python_stdlib(root)?;
    for dir in std::iter::once(stdlib.as_str()).chain(PY_EXTRA.iter().copied()) {
        let host = root.join(dir.trim_start_matches('/'));
        if host.is_dir() {
            add_tree(&mut w, &host, (dir, dir), &mut elves)?;
        }
    }
    let mut seen = BTreeSet::new();
    for t in TOOLS.iter().chain(optional.iter().map(|o| &o.path)) {
        let host = rootfs_path::resolve(root, t)?;
        let data = std::fs::read(&host).map_err(|e| Error::io(&host, e))?;
        w.file(t, 0o755, &data).map_err(|e| Error::io(&host, e))?;
        seen.insert(t.to_string());
        elves.push(t.to_string());
    }
    for f in DATA {
        let host = rootfs_path::resolve(root, f)?;
        let data = std::fs::read(&host).map_err(|e| Error::io(&host, e))?;
        w.file(f, 0o644, &data).map_err(|e| Error::io(&host, e))?;
    }
    for f in DATA_FILES {
        let host = root.join(f.trim_start_matches('/'));
        if host.is_file() {
            let data = std::fs::read(&host).map_err(|e| Error::io(&host, e))?;
            w.file(f, 0o644, &data).map_err(|e| Error::io(&host, e))?;
        }
    }
    // The tests run commands with `shell=True` (/bin/sh -c): busybox's sh would run its own
    // `ip`, `ping`, … applets before PATH, which lack the options the tests use. /init
    // itself names `/bin/busybox sh`, so only programs exec'ing /bin/sh get bash.
    w.symlink("/bin/sh", "/usr/bin/bash")
        .and_then(|_| w.symlink("/bin/bash", "/usr/bin/bash"))
        .map_err(|e| Error::io(install, e))?;
    for lib in libraries(root, &elves)? {
        if seen.insert(lib.clone()) {
            let host = rootfs_path::resolve(root, &lib)?;
            let data = std::fs::read(&host).map_err(|e| Error::io(&host, e))?;
            w.file(&lib, 0o755, &data)
                .map_err(|e| Error::io(&host, e))?;
        }
    }
    w.finish().map_err(|e| Error::io(install, e))
}

/// `/usr/lib/python3.X` of the root's `python3`.
fn python_stdlib(root: &Path) -> Result<String> {
    let bin = rootfs_path::resolve(root, "/usr/bin/python3")?;
    let name = bin
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.starts_with("python3."))
        .ok_or_else(|| {
            Error::Prerequisite(format!(
                "{} is not a python3.X binary (install python3 in the sid root)",
                bin.display()
            ))
        })?;
    Ok(format!("/usr/lib/{name}"))
}

/// Adds the tree at `host` as `guest`, keeping modes and symlinks; records the ELF files
/// by their path inside the sid root (`in_root`, where `ldd` finds them).
fn add_tree(
    w: &mut CpioWriter<Vec<u8>>,
    host: &Path,
    (guest, in_root): (&str, &str),
    elves: &mut Vec<String>,
) -> Result<()> {
    let meta = std::fs::symlink_metadata(host).map_err(|e| Error::io(host, e))?;
    let io = |e| Error::io(host, e);
    if meta.file_type().is_symlink() {
        let t = std::fs::read_link(host).map_err(io)?;
        return w.symlink(guest, &t.to_string_lossy()).map_err(io);
    }
    if meta.is_dir() {
        w.dir(guest, 0o755).map_err(io)?;
        let mut entries: Vec<_> = std::fs::read_dir(host)
            .map_err(io)?
            .filter_map(|e| e.ok())
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let g = format!("{guest}/{name}");
            let r = format!("{in_root}/{name}");
            add_tree(w, &e.path(), (&g, &r), elves)?;
        }
        return Ok(());
    }
    let data = std::fs::read(host).map_err(io)?;
    if data.starts_with(b"\x7fELF") {
        elves.push(in_root.to_owned());
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
    w.file(guest, mode, &data).map_err(io)
}

/// The libraries (and loader) the root's `ldd` lists for `files` (paths inside the root).
fn libraries(root: &Path, files: &[String]) -> Result<BTreeSet<String>> {
    let mut libs = BTreeSet::new();
    for chunk in files.chunks(64) {
        libs.extend(ldd(root, chunk.iter().map(|s| s.as_str()))?);
    }
    Ok(libs)
}

/// Runs the root's `ldd` on `files` (paths inside the root).
pub fn ldd<'a>(root: &Path, files: impl IntoIterator<Item = &'a str>) -> Result<Vec<String>> {
    let out = nicemu_provision::enter::in_root(root)
        .arg("ldd")
        .args(files)
        .output()
        .map_err(|e| Error::io("chroot ldd", e))?;
    // ldd exits 1 when one file is not dynamic; the others' lines are still right.
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: String = text
        .lines()
        .filter(|l| !l.trim_end().ends_with(':') && !l.contains("not a dynamic"))
        .map(|l| format!("{l}\n"))
        .collect();
    Ok(super::tools::parse_ldd(&lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bpftrace_comes_only_with_netpoll_basic_or_all() {
        let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(optional_tools(&names(&["drivers/net:ping.py"])).is_empty());
        let want = vec![OPTIONAL_TOOLS[0]];
        assert_eq!(
            optional_tools(&names(&["drivers/net:netpoll_basic.py"])),
            want
        );
        assert_eq!(optional_tools(&names(&["all"])), want);
    }
}
