// SPDX-License-Identifier: Apache-2.0
//! The kernel's own driver selftests (`tools/testing/selftests/drivers/net` and
//! `drivers/net/hw`, with `net/lib`, YNL and the netlink specs), built from the guest
//! kernel's exact Debian source inside the sid root with
//! `make -C tools/testing/selftests TARGETS="drivers/net drivers/net/hw" install`, cached per
//! kernel version in `SIDROOT/var/lib/nicemu-kselftest/VERSION/install` (made in `VERSION.tmp`
//! and renamed when complete, under a lock, so concurrent runs build it once).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use super::linux_source;
use super::lock::FileLock;
use crate::cmd::output_ok;
use crate::error::{Error, Result};

/// Parts of the kernel tree the selftests build reads (`lib.mk`, `net/ynl.mk` and
/// `net/bpf.mk` reach into tools/lib/bpf, tools/include, tools/net/ynl, the top Makefile
/// into scripts/subarch.include, the YNL C library into include/uapi; YNL reads
/// Documentation/netlink; the C generator `ynl_gen_c.py` finds the tree root by its
/// MAINTAINERS file and loops forever without one).
pub const SOURCE_PATHS: &[&str] = &[
    "tools",
    "scripts",
    "include/uapi",
    "Documentation/netlink",
    "MAINTAINERS",
];

/// The kselftest targets built and run.
pub const TARGETS: &str = "drivers/net drivers/net/hw";

/// Packages the build needs in the sid root (compilers for the helper programs and the
/// BPF objects, libmnl for the YNL C library, PyYAML + jsonschema for the YNL generator,
/// rsync for `make install`, and the uapi headers of the same kernel series).
pub const BUILD_PACKAGES: &[&str] = &[
    "gcc",
    "make",
    "libc6-dev",
    "linux-libc-dev",
    "libmnl-dev",
    "pkg-config",
    "clang",
    "llvm",
    "libelf-dev",
    "zlib1g-dev",
    "python3",
    "python3-yaml",
    "python3-jsonschema",
    "rsync",
];

/// Packages whose tools the tests call in the guest (drivers/net/README.rst: python3 +
/// PyYAML, socat, iperf3; `bash` for the remote channel, `bpftool` for XDP cases; `jq` and
/// `netsniff-ng`'s mausezahn, which net/forwarding/lib.sh requires; `lldpad`'s lldptool,
/// which ethtool_mm.sh requires before anything else).
pub const GUEST_PACKAGES: &[&str] = &[
    "bash",
    "python3",
    "python3-yaml",
    "socat",
    "iperf3",
    "bpftool",
    "iproute2",
    "ethtool",
    "netperf",
    "jq",
    "netsniff-ng",
    "lldpad",
];

/// Where builds live inside the sid root.
const BASE_IN_ROOT: &str = "var/lib/nicemu-kselftest";

/// An installed selftests tree.
#[derive(Debug, Clone)]
pub struct Built {
    /// Kernel version of the source ("7.2.13").
    pub version: String,
    /// Host path of the build directory (holds `install/` and `build.log`).
    pub dir: PathBuf,
}

impl Built {
    /// Host path of the `make install` output (the tree copied to the guest).
    pub fn install(&self) -> PathBuf {
        self.dir.join("install")
    }
}

/// Makes sure the selftests of the kernel `release` ("7.2.13+deb14-amd64") are built in
/// `sid_root`; returns the build.
pub fn ensure(sid_root: &Path, release: &str) -> Result<Built> {
    let src = linux_source::ensure(sid_root, release)?;
    let base = sid_root.join(BASE_IN_ROOT);
    let dir = base.join(&src.version);
    let built = Built {
        version: src.version.clone(),
        dir: dir.clone(),
    };
    if dir.join("install/kselftest-list.txt").is_file() {
        return Ok(built);
    }
    let _lock = FileLock::exclusive(&base.join(".lock"))?;
    if dir.join("install/kselftest-list.txt").is_file() {
        return Ok(built);
    }
    let tree = src.extract(SOURCE_PATHS)?;
    install_missing(sid_root, BUILD_PACKAGES)?;
    let tmp = base.join(format!("{}.tmp", src.version));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    output_ok(Command::new("cp").arg("-a").arg(&tree).arg(tmp.join("src")))?;
    let started = Instant::now();
    println!(
        "build: kselftest {TARGETS} of Linux {} (make in the sid root)",
        src.version
    );
    make(
        sid_root,
        &format!("{BASE_IN_ROOT}/{}.tmp", src.version),
        &tmp,
    )?;
    std::fs::remove_dir_all(tmp.join("src")).map_err(|e| Error::io(&tmp, e))?;
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    }
    std::fs::rename(&tmp, &dir).map_err(|e| Error::io(&dir, e))?;
    println!(
        "build: kselftest built in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(built)
}

/// Runs the selftests' `make install` in the chroot; output goes to `tmp/build.log`.
fn make(sid_root: &Path, tmp_in_root: &str, tmp: &Path) -> Result<()> {
    let log = tmp.join("build.log");
    let out = std::fs::File::create(&log).map_err(|e| Error::io(&log, e))?;
    let err = out.try_clone().map_err(|e| Error::io(&log, e))?;
    let _mounts = super::mounts::BindMounts::new(sid_root)?;
    let status = crate::enter::in_root(sid_root)
        .arg("make")
        .arg("-C")
        .arg(format!("/{tmp_in_root}/src/tools/testing/selftests"))
        .arg(format!("TARGETS={TARGETS}"))
        // The uapi headers of sid's linux-libc-dev (same series as the guest kernel)
        // instead of `make headers` in a full tree.
        .arg("KHDR_INCLUDES=-isystem /usr/include")
        .arg("-j2")
        .arg("install")
        .arg(format!("INSTALL_PATH=/{tmp_in_root}/install"))
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| Error::io("chroot", e))?;
    // The selftests' install target goes on past a target that failed to build (it only
    // says "Skipping non-existent dir"): the installed targets are the real check.
    let complete = tmp.join("install/kselftest-list.txt").is_file()
        && TARGETS
            .split(' ')
            .all(|t| tmp.join("install").join(t).is_dir());
    if status.success() && complete {
        return Ok(());
    }
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(8).collect();
    Err(Error::Command {
        cmd: format!("make -C tools/testing/selftests TARGETS=\"{TARGETS}\" install"),
        detail: format!(
            "{status}; see {}: {}",
            log.display(),
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ),
    })
}

/// apt-installs those of `packages` that are not installed in `root` (waiting for another
/// run's dpkg lock).
pub fn install_missing(root: &Path, packages: &[&str]) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .copied()
        .filter(|p| !installed(root, p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    println!(
        "provision: apt-get install {} in {}",
        missing.join(" "),
        root.display()
    );
    let _mounts = super::mounts::BindMounts::new(root)?;
    let apt = |args: &[&str]| {
        let mut c = super::enter::command(root, "apt-get");
        c.args([
            "-o",
            "DPkg::Lock::Timeout=900",
            "-o",
            "Acquire::Check-Valid-Until=false",
        ])
        .args(args)
        .env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    let mut install = apt(&["install", "-y", "--no-install-recommends"]);
    install.args(&missing);
    if output_ok(&mut install).is_ok() {
        return Ok(());
    }
    // A stale package list names versions the mirror no longer has: update, try again.
    output_ok(&mut apt(&["update"]))?;
    let mut again = apt(&["install", "-y", "--no-install-recommends"]);
    again.args(&missing);
    output_ok(&mut again).map(|_| ())
}

fn installed(root: &Path, pkg: &str) -> bool {
    crate::enter::in_root(root)
        .args(["dpkg-query", "-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}
