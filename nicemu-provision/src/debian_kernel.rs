// SPDX-License-Identifier: Apache-2.0
//! Debian kernels other than the sid root's own: trixie's `linux-image-amd64` and
//! `linux-image-rt-amd64` (PREEMPT_RT). apt inside the sid root resolves and downloads the
//! `.deb` with a private configuration (its own sources list, lists and status under
//! `/var/lib/nicemu-apt/SUITE`), so the sid root's own apt state is untouched; `dpkg-deb -x`
//! unpacks it and `depmod` writes `modules.dep`. Everything lives under
//! `SIDROOT/var/lib/nicemu-kernels/NAME/` and a `READY` file makes it idempotent.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{output_ok, stdout_ok};
use crate::error::{Error, Result};

/// A Debian kernel flavour known by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flavour {
    /// Name on the command line ("trixie-rt").
    pub name: &'static str,
    /// Debian suite.
    pub suite: &'static str,
    /// Metapackage depending on the versioned image package.
    pub meta: &'static str,
}

/// Kernels fetched by name (sid's own comes with the sid root).
pub const FLAVOURS: &[Flavour] = &[
    Flavour {
        name: "trixie",
        suite: "trixie",
        meta: "linux-image-amd64",
    },
    Flavour {
        name: "trixie-rt",
        suite: "trixie",
        meta: "linux-image-rt-amd64",
    },
];

/// Looks a flavour up by name.
pub fn flavour(name: &str) -> Option<Flavour> {
    FLAVOURS.iter().copied().find(|f| f.name == name)
}

/// An unpacked kernel.
#[derive(Debug, Clone)]
pub struct Unpacked {
    /// Host path of the bzImage.
    pub image: PathBuf,
    /// Host path of `lib/modules/KVER`.
    pub modules_dir: PathBuf,
    /// KVER.
    pub release: String,
}

/// Makes sure `flavour` is downloaded and unpacked in `sid_root`; returns its files.
pub fn ensure(sid_root: &Path, f: Flavour) -> Result<Unpacked> {
    let rel_dir = format!("var/lib/nicemu-kernels/{}", f.name);
    let dir = sid_root.join(&rel_dir);
    let ready = dir.join("READY");
    if let Some(u) = ready_kernel(&dir, &ready) {
        return Ok(u);
    }
    let _mounts = super::mounts::BindMounts::new(sid_root)?;
    let apt = AptConfig::new(sid_root, f.suite)?;
    println!(
        "provision: {} kernel: resolving {} in Debian {}",
        f.name, f.meta, f.suite
    );
    apt.update()?;
    let pkg = apt.image_package(f.meta)?;
    let deb = download(&apt, &f, &dir, &rel_dir, &pkg)?;
    let release = pkg.strip_prefix("linux-image-").unwrap_or(&pkg).to_owned();
    let root = unpack(sid_root, &f, &dir, &rel_dir, &deb, &release)?;
    let u = unpacked(&root, &release);
    if !u.image.is_file() {
        return Err(Error::Kernel(format!(
            "{} has no boot/vmlinuz-{release}",
            pkg
        )));
    }
    std::fs::write(&ready, format!("{release}\n")).map_err(|e| Error::io(&ready, e))?;
    println!("provision: {} kernel {release} ready", f.name);
    Ok(u)
}

/// The kernel unpacked before, when its `READY` stamp and its files are there.
fn ready_kernel(dir: &Path, ready: &Path) -> Option<Unpacked> {
    let release = std::fs::read_to_string(ready).ok()?;
    let u = unpacked(&dir.join("root"), release.trim());
    (u.image.is_file() && u.modules_dir.join("modules.dep").is_file()).then_some(u)
}

/// The image package's .deb in `dir/debs`, downloaded unless it is there.
fn download(apt: &AptConfig, f: &Flavour, dir: &Path, rel_dir: &str, pkg: &str) -> Result<PathBuf> {
    let debs = dir.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| Error::io(&debs, e))?;
    if let Some(d) = find_deb(&debs, pkg) {
        return Ok(d);
    }
    println!("provision: {} kernel: downloading {pkg}", f.name);
    apt.download(&format!("/{rel_dir}/debs"), pkg)?;
    find_deb(&debs, pkg).ok_or_else(|| {
        Error::Prerequisite(format!(
            "apt-get download {pkg} left no .deb in {}",
            debs.display()
        ))
    })
}

/// Unpacks `deb` into `dir/root` (through `root.tmp`, renamed when complete)
/// and runs depmod for `release` there; returns `dir/root`.
fn unpack(
    sid_root: &Path,
    f: &Flavour,
    dir: &Path,
    rel_dir: &str,
    deb: &Path,
    release: &str,
) -> Result<PathBuf> {
    let tmp = dir.join("root.tmp");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let deb_in = format!(
        "/{rel_dir}/debs/{}",
        deb.file_name().unwrap_or_default().to_string_lossy()
    );
    println!("provision: {} kernel: unpacking {}", f.name, deb.display());
    output_ok(crate::enter::in_root(sid_root).args([
        "dpkg-deb",
        "-x",
        &deb_in,
        &format!("/{rel_dir}/root.tmp"),
    ]))?;
    // Merged-/usr packages ship usr/lib/modules; depmod -b looks in BASE/lib/modules.
    if !tmp.join("lib").exists() {
        std::os::unix::fs::symlink("usr/lib", tmp.join("lib")).map_err(|e| Error::io(&tmp, e))?;
    }
    output_ok(crate::enter::in_root(sid_root).args([
        "depmod",
        "-b",
        &format!("/{rel_dir}/root.tmp"),
        release,
    ]))?;
    let root = dir.join("root");
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    }
    std::fs::rename(&tmp, &root).map_err(|e| Error::io(&root, e))?;
    Ok(root)
}

fn unpacked(root: &Path, release: &str) -> Unpacked {
    Unpacked {
        image: root.join("boot").join(format!("vmlinuz-{release}")),
        modules_dir: root.join("lib/modules").join(release),
        release: release.to_owned(),
    }
}

fn find_deb(dir: &Path, pkg: &str) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let named = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{pkg}_")));
            named && p.extension().is_some_and(|e| e == "deb")
        })
}

/// apt inside the sid root with a private state directory for one suite.
pub(crate) struct AptConfig {
    root: PathBuf,
    base: String,
    suite: String,
}

impl AptConfig {
    pub(crate) fn new(root: &Path, suite: &str) -> Result<Self> {
        let base = format!("/var/lib/nicemu-apt/{suite}");
        let host = root.join(&base[1..]);
        for d in ["lists/partial", "cache/archives/partial", "etc"] {
            let p = host.join(d);
            std::fs::create_dir_all(&p).map_err(|e| Error::io(&p, e))?;
        }
        let list = host.join("etc/sources.list");
        std::fs::write(
            &list,
            format!("deb http://deb.debian.org/debian {suite} main\n"),
        )
        .map_err(|e| Error::io(&list, e))?;
        let status = host.join("status");
        if !status.exists() {
            std::fs::write(&status, "").map_err(|e| Error::io(&status, e))?;
        }
        Ok(AptConfig {
            root: root.to_path_buf(),
            base,
            suite: suite.to_owned(),
        })
    }

    fn options(&self) -> Vec<String> {
        let b = &self.base;
        [
            format!("Dir::Etc::SourceList={b}/etc/sources.list"),
            "Dir::Etc::SourceParts=/nonexistent".to_owned(),
            "Acquire::Check-Valid-Until=false".to_owned(),
            format!("Dir::State::Lists={b}/lists"),
            format!("Dir::Cache={b}/cache"),
            format!("Dir::State::status={b}/status"),
        ]
        .into_iter()
        .flat_map(|o| ["-o".to_owned(), o])
        .collect()
    }

    pub(crate) fn chroot(&self, tool: &str) -> Command {
        let mut c = super::enter::command(&self.root, tool);
        c.args(self.options());
        c.env("DEBIAN_FRONTEND", "noninteractive");
        c
    }

    pub(crate) fn update(&self) -> Result<()> {
        output_ok(self.chroot("apt-get").arg("update"))
            .map(|_| ())
            .map_err(|e| {
                Error::Prerequisite(format!(
                    "apt-get update for Debian {} failed (network or mirror?): {e}",
                    self.suite
                ))
            })
    }

    /// The versioned image package `meta` depends on ("linux-image-6.12.57+deb13-amd64").
    fn image_package(&self, meta: &str) -> Result<String> {
        let text = stdout_ok(self.chroot("apt-cache").args(["depends", meta]))?;
        parse_image_dep(&text).ok_or_else(|| {
            Error::Kernel(format!(
                "{meta} in Debian {} depends on no linux-image-*: {text}",
                self.suite
            ))
        })
    }

    pub(crate) fn download(&self, dir_in_root: &str, pkg: &str) -> Result<()> {
        let mut opts = String::new();
        for o in self.options() {
            opts.push_str(&format!(" '{o}'"));
        }
        output_ok(crate::enter::in_root(&self.root).args([
            "sh",
            "-c",
            &format!("cd '{dir_in_root}' && apt-get{opts} download '{pkg}'"),
        ]))
        .map(|_| ())
    }
}

/// Finds the `Depends: linux-image-…` line of `apt-cache depends`.
pub fn parse_image_dep(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("Depends:"))
        .map(str::trim)
        .find(|p| p.starts_with("linux-image-") && !p.starts_with('<'))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apt_cache_depends_gives_versioned_image() {
        let t = "linux-image-rt-amd64\n  Depends: linux-image-6.12.117+deb13-rt-amd64\n";
        assert_eq!(
            parse_image_dep(t).unwrap(),
            "linux-image-6.12.117+deb13-rt-amd64"
        );
        assert!(parse_image_dep("x\n  Depends: foo\n").is_none());
        assert!(flavour("trixie-rt").is_some() && flavour("bullseye").is_none());
    }
}
