// SPDX-License-Identifier: Apache-2.0
//! The exact Linux source of a Debian guest kernel: Debian's `linux-source-X.Y` package of the
//! same version as the kernel image (`linux-image-KVER`), downloaded once and unpacked under
//! `SIDROOT/var/lib/nicemu-src/DEBVERSION/`, and parts of its tarball extracted on demand into
//! `CACHE/linux-src/…`. sid kernels' source comes from the sid root's own apt; trixie kernels'
//! (`+deb13`) from trixie through the private apt configuration of [`super::debian_kernel`].

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use sha2::{Digest, Sha256};

use super::debian_kernel::AptConfig;
use super::lock::FileLock;
use crate::cmd::{output_ok, stdout_ok};
use crate::error::{Error, Result};

/// One kernel's source tarball.
#[derive(Debug, Clone)]
pub struct KernelSource {
    /// Upstream version ("7.2.13").
    pub version: String,
    /// Host path of `linux-source-X.Y.tar.xz`.
    pub tarball: PathBuf,
}

/// What a guest kernel release ("7.2.13+deb14-amd64") says about its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseParts {
    /// Upstream version ("7.2.13").
    pub upstream: String,
    /// Source series, the X.Y of `linux-source-X.Y` ("7.2").
    pub series: String,
    /// Debian release number of the ABI tag ("+deb14" → 14), if any.
    pub debian: Option<u32>,
}

/// Splits a Debian kernel release into upstream version, series and Debian release.
pub fn parse_release(release: &str) -> Option<ReleaseParts> {
    let upstream: String = release
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let nums: Vec<&str> = upstream.split('.').collect();
    if nums.len() < 2 || nums.iter().any(|n| n.is_empty()) {
        return None;
    }
    let series = format!("{}.{}", nums[0], nums[1]);
    let debian = release
        .split("+deb")
        .nth(1)
        .and_then(|t| t.split('-').next())
        .and_then(|n| n.parse().ok());
    Some(ReleaseParts {
        upstream,
        series,
        debian,
    })
}

/// Installs Debian's `linux-source-X.Y` matching the guest kernel `release` into the sid root
/// (cached once) and checks that its version is the kernel's.
pub fn ensure(sid_root: &Path, release: &str) -> Result<KernelSource> {
    let parts = parse_release(release)
        .ok_or_else(|| Error::Kernel(format!("cannot read a version from release {release:?}")))?;
    let base = sid_root.join("var/lib/nicemu-src");
    let _lock = FileLock::exclusive(&base.join(".lock"))?;
    let marker = base.join(format!("{release}.source"));
    if let Ok(deb_version) = std::fs::read_to_string(&marker) {
        let src = source_at(&base, deb_version.trim(), &parts);
        if src.tarball.is_file() {
            return Ok(src);
        }
    }
    let _mounts = super::mounts::BindMounts::new(sid_root)?;
    let apt = SourceApt::for_release(sid_root, release, &parts)?;
    let deb_version = apt.image_version(release)?;
    check_upstream(&deb_version, &parts.upstream, release)?;
    let started = Instant::now();
    let pkg = format!("linux-source-{}", parts.series);
    println!("provision: kernel source: downloading {pkg}={deb_version} (about 160 MB)");
    unpack_source_deb(sid_root, &apt, &base, &pkg, &deb_version)?;
    let src = source_at(&base, &deb_version, &parts);
    if !src.tarball.is_file() {
        return Err(Error::Kernel(format!(
            "{pkg}={deb_version} holds no {}",
            src.tarball.display()
        )));
    }
    std::fs::write(&marker, format!("{deb_version}\n")).map_err(|e| Error::io(&marker, e))?;
    println!(
        "provision: kernel source {} ready ({:.0} s)",
        parts.upstream,
        started.elapsed().as_secs_f64()
    );
    Ok(src)
}

fn source_at(base: &Path, deb_version: &str, parts: &ReleaseParts) -> KernelSource {
    KernelSource {
        version: parts.upstream.clone(),
        tarball: base
            .join(deb_version)
            .join(format!("usr/src/linux-source-{}.tar.xz", parts.series)),
    }
}

/// The Debian package version "7.2.13-1" must be of upstream "7.2.13".
fn check_upstream(deb_version: &str, upstream: &str, release: &str) -> Result<()> {
    let up = deb_version.split('-').next().unwrap_or("");
    if up == upstream {
        Ok(())
    } else {
        Err(Error::Kernel(format!(
            "linux-image-{release} is version {deb_version}, not of upstream {upstream}"
        )))
    }
}

/// Downloads `pkg=version` and unpacks it to `base/version` (via `version.tmp`, renamed when
/// complete, so an interrupted unpack is never taken for a finished one).
fn unpack_source_deb(
    sid_root: &Path,
    apt: &SourceApt,
    base: &Path,
    pkg: &str,
    version: &str,
) -> Result<()> {
    let debs = base.join("debs");
    std::fs::create_dir_all(&debs).map_err(|e| Error::io(&debs, e))?;
    let deb_name = format!("{pkg}_{}_all.deb", version.replace(':', "%3a"));
    if !debs.join(&deb_name).is_file() {
        apt.download("/var/lib/nicemu-src/debs", &format!("{pkg}={version}"))?;
    }
    if !debs.join(&deb_name).is_file() {
        return Err(Error::Prerequisite(format!(
            "apt-get download {pkg}={version} left no {deb_name} in {}",
            debs.display()
        )));
    }
    let tmp = base.join(format!("{version}.tmp"));
    let done = base.join(version);
    for d in [&tmp, &done] {
        if d.exists() {
            std::fs::remove_dir_all(d).map_err(|e| Error::io(d, e))?;
        }
    }
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    output_ok(crate::enter::in_root(sid_root).args([
        "dpkg-deb",
        "-x",
        &format!("/var/lib/nicemu-src/debs/{deb_name}"),
        &format!("/var/lib/nicemu-src/{version}.tmp"),
    ]))?;
    std::fs::rename(&tmp, &done).map_err(|e| Error::io(&done, e))?;
    // The tarball inside is all that is used: don't keep the 160 MB twice.
    let deb = debs.join(&deb_name);
    std::fs::remove_file(&deb).map_err(|e| Error::io(&deb, e))
}

/// Which apt knows the kernel: the sid root's own, or a private one for an older suite.
enum SourceApt {
    Sid(PathBuf),
    Suite(AptConfig),
}

impl SourceApt {
    fn for_release(sid_root: &Path, release: &str, parts: &ReleaseParts) -> Result<Self> {
        match parts.debian {
            Some(13) => {
                let apt = AptConfig::new(sid_root, "trixie")?;
                apt.update()?;
                Ok(SourceApt::Suite(apt))
            }
            Some(12) => Err(Error::Kernel(format!(
                "kernel {release} is bookworm's; sources are fetched for sid and trixie kernels"
            ))),
            _ => Ok(SourceApt::Sid(sid_root.to_path_buf())),
        }
    }

    fn apt_cache(&self) -> Command {
        match self {
            SourceApt::Sid(root) => super::enter::command(root, "apt-cache"),
            SourceApt::Suite(apt) => apt.chroot("apt-cache"),
        }
    }

    /// The Debian version of `linux-image-RELEASE` ("7.2.13-1").
    fn image_version(&self, release: &str) -> Result<String> {
        let pkg = format!("linux-image-{release}");
        let text =
            stdout_ok(self.apt_cache().args(["show", "--no-all-versions", &pkg])).map_err(|e| {
                Error::Kernel(format!(
                    "apt does not know {pkg} (is the suite's index current?): {e}"
                ))
            })?;
        text.lines()
            .find_map(|l| l.strip_prefix("Version:"))
            .map(|v| v.trim().to_owned())
            .ok_or_else(|| Error::Kernel(format!("apt-cache show {pkg} names no version")))
    }

    fn download(&self, dir_in_root: &str, spec: &str) -> Result<()> {
        match self {
            SourceApt::Suite(apt) => apt.download(dir_in_root, spec),
            SourceApt::Sid(root) => output_ok(crate::enter::in_root(root).args([
                "sh",
                "-c",
                &format!("cd '{dir_in_root}' && apt-get download '{spec}'"),
            ]))
            .map(|_| ()),
        }
    }
}

impl KernelSource {
    /// Extracts only `paths` (directories or files relative to the tree root, e.g.
    /// `drivers/net/ethernet/intel/igb`; an empty list means the whole tree) plus the top
    /// `Makefile` into a cache directory keyed by version and paths. Built in `KEY.tmp` and
    /// renamed when complete, so a half-made extraction is never reused. Returns the tree root.
    pub fn extract(&self, paths: &[&str]) -> Result<PathBuf> {
        let cache = super::cache::cache_dir()?.join("linux-src");
        let dir = cache.join(self.extract_key(paths));
        if dir.is_dir() {
            return Ok(dir);
        }
        let _lock = FileLock::exclusive(&cache.join(".lock"))?;
        if dir.is_dir() {
            return Ok(dir);
        }
        let tmp = cache.join(format!("{}.tmp", self.extract_key(paths)));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        }
        std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let started = Instant::now();
        println!(
            "build: extracting {} from {}",
            if paths.is_empty() {
                "the whole tree".to_owned()
            } else {
                paths.join(", ")
            },
            self.tarball.display()
        );
        self.untar(&tmp, paths)?;
        self.check_makefile(&tmp)?;
        std::fs::rename(&tmp, &dir).map_err(|e| Error::io(&dir, e))?;
        println!(
            "build: extracted in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        Ok(dir)
    }

    /// `VERSION-HASH`: the hash covers the sorted path list.
    fn extract_key(&self, paths: &[&str]) -> String {
        let mut sorted: Vec<&str> = paths.iter().map(|p| p.trim_matches('/')).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut h = Sha256::new();
        for p in &sorted {
            h.update(p.as_bytes());
            h.update([0]);
        }
        let hex: String = h.finalize()[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{}-{hex}", self.version)
    }

    fn untar(&self, into: &Path, paths: &[&str]) -> Result<()> {
        let top = self
            .tarball
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".tar.xz"))
            .unwrap_or("linux-source")
            .to_owned();
        let mut c = Command::new("tar");
        c.arg("-xJf")
            .arg(&self.tarball)
            .arg("-C")
            .arg(into)
            .arg("--strip-components=1");
        if !paths.is_empty() {
            c.arg(format!("{top}/Makefile"));
            for p in paths {
                c.arg(format!("{top}/{}", p.trim_matches('/')));
            }
        }
        output_ok(&mut c).map(|_| ()).map_err(|e| {
            Error::Kernel(format!(
                "extracting {} from {}: {e}",
                paths.join(", "),
                self.tarball.display()
            ))
        })
    }

    /// The tree's top Makefile must say the version this source claims.
    fn check_makefile(&self, root: &Path) -> Result<()> {
        let mk = root.join("Makefile");
        let text = std::fs::read_to_string(&mk).map_err(|e| Error::io(&mk, e))?;
        let found = makefile_version(&text);
        if found.as_deref() == Some(self.version.as_str()) {
            Ok(())
        } else {
            Err(Error::Kernel(format!(
                "{} is Linux {}, expected {}",
                self.tarball.display(),
                found.unwrap_or_else(|| "of unknown version".into()),
                self.version
            )))
        }
    }
}

/// "X.Y.Z" from a kernel Makefile's `VERSION`, `PATCHLEVEL` and `SUBLEVEL` lines.
pub fn makefile_version(text: &str) -> Option<String> {
    let field = |name: &str| {
        text.lines().take(20).find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().to_owned())
        })
    };
    let (v, p, s) = (field("VERSION")?, field("PATCHLEVEL")?, field("SUBLEVEL")?);
    Some(if s.is_empty() || s == "0" {
        format!("{v}.{p}")
    } else {
        format!("{v}.{p}.{s}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_name_their_source() {
        let p = parse_release("7.2.13+deb14-amd64").unwrap();
        assert_eq!(p.upstream, "7.2.13");
        assert_eq!(p.series, "7.2");
        assert_eq!(p.debian, Some(14));
        let rt = parse_release("6.12.57+deb13-rt-amd64").unwrap();
        assert_eq!((rt.series.as_str(), rt.debian), ("6.12", Some(13)));
        assert!(parse_release("vmlinuz").is_none());
        assert_eq!(parse_release("7.3.0-rc1").unwrap().debian, None);
    }

    #[test]
    fn debian_version_must_match_upstream() {
        check_upstream("7.2.13-1", "7.2.13", "r").unwrap();
        assert!(check_upstream("7.2.14-1", "7.2.13", "r").is_err());
    }

    #[test]
    fn makefile_version_reads_the_header() {
        let mk = "# SPDX\nVERSION = 7\nPATCHLEVEL = 2\nSUBLEVEL = 13\nEXTRAVERSION =\n";
        assert_eq!(makefile_version(mk).as_deref(), Some("7.2.13"));
        let mk0 = "VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 0\n";
        assert_eq!(makefile_version(mk0).as_deref(), Some("7.3"));
        assert!(makefile_version("all:\n").is_none());
    }

    #[test]
    fn extract_key_ignores_order_and_slashes() {
        let s = KernelSource {
            version: "7.2.13".into(),
            tarball: PathBuf::from("/x.tar.xz"),
        };
        assert_eq!(s.extract_key(&["a/b", "c/"]), s.extract_key(&["c", "/a/b"]));
        assert_ne!(s.extract_key(&["a"]), s.extract_key(&["b"]));
        assert!(s.extract_key(&[]).starts_with("7.2.13-"));
    }
}
