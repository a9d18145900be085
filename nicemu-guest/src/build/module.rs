// SPDX-License-Identifier: Apache-2.0
//! Out-of-tree module builds against a Debian kernel's own build tree
//! (`/usr/src/linux-headers-KVER` + `linux-kbuild`, with the compiler that tree names), so the
//! module's vermagic is the kernel's. Each build stamps `MODULE_VERSION("nicemu-ID")` into the
//! driver's copy (unless it has its own version); the guest reads it back from
//! `/sys/module/NAME/version`, which shows that the built module is the one that ran.

use std::path::{Path, PathBuf};

use super::make;
use super::patch::{self, Patch};
use super::store::{keep_log, key};
use super::tree::ModuleTree;
use crate::error::{Error, Result};
use crate::image::guest_kernel::{BuiltModule, GuestKernel};

/// The marker of a finished module build: one `NAME\tRELPATH\tSTAMP` line per module.
const READY: &str = "READY";

/// The source the modules come from: a kernel tree on the host holding (at least) the
/// module directories, and its name for messages.
#[derive(Debug, Clone)]
pub struct Source {
    /// Host path of the tree's root.
    pub root: PathBuf,
    /// "Linux 7.2.13 (the sid kernel's source)".
    pub name: String,
}

/// Builds the modules of `dirs` from `source` with `patches` applied, against `tree`.
pub fn from_patches(
    tree: &ModuleTree,
    source: &Source,
    stock: GuestKernel,
    patches: &[Patch],
    dirs: &[String],
    log_dir: &Path,
) -> Result<GuestKernel> {
    let config = tree.config()?;
    let identity = tree.identity();
    let mut parts: Vec<&[u8]> = vec![
        b"modules-v2",
        tree.release.as_bytes(),
        identity.as_bytes(),
        config.as_bytes(),
    ];
    parts.extend(dirs.iter().map(|d| d.as_bytes()));
    parts.extend(patches.iter().map(|p| p.text.as_bytes()));
    let id = key(&parts, 16);
    let (host_builds, _) = tree.builds_dir();
    let done = host_builds.join(format!("mod-{id}"));
    // A concurrent run building the same modules: wait, then use its result.
    let _lock =
        nicemu_provision::lock::FileLock::exclusive(&host_builds.join(format!("mod-{id}.lock")))?;
    if let Some(mods) = load_ready(&done) {
        println!(
            "build: modules {} cached ({})",
            dirs.join(", "),
            done.display()
        );
        return Ok(with_modules(stock, mods, &done, log_dir, patches));
    }
    let tmp = host_builds.join(format!("mod-{id}.tmp"));
    remove_dir(&tmp)?;
    let job = Job {
        tree,
        source,
        tmp: &tmp,
        id: &id,
        log: log_dir.join("build.log"),
    };
    let mods = match job.build(patches, dirs) {
        Ok(m) => m,
        Err(e) => {
            // Nothing half-applied or half-built stays behind.
            let _ = remove_dir(&tmp);
            return Err(e);
        }
    };
    let _ = std::fs::copy(&job.log, tmp.join("build.log"));
    write_ready(&tmp, &mods)?;
    remove_dir(&done)?;
    std::fs::rename(&tmp, &done).map_err(|e| Error::io(&done, e))?;
    Ok(with_modules(stock, mods, &done, log_dir, patches))
}

/// One patched module build in `tmp` (`mod-ID.tmp` in the tree's builds directory).
struct Job<'a> {
    tree: &'a ModuleTree,
    source: &'a Source,
    tmp: &'a Path,
    id: &'a str,
    log: PathBuf,
}

impl Job<'_> {
    /// Copies `dirs` of the source into `tmp/src`, applies the patches, stamps and builds
    /// each directory; the log goes to `log`.
    fn build(&self, patches: &[Patch], dirs: &[String]) -> Result<Vec<BuiltModule>> {
        let (_, chroot_builds) = self.tree.builds_dir();
        for d in dirs {
            copy_dir(&self.source.root.join(d), &self.tmp.join("src").join(d))?;
        }
        patch::apply_all(&self.tmp.join("src"), patches, &self.source.name)?;
        let stamp = format!("nicemu-{}", &self.id[..12]);
        let _ = std::fs::remove_file(&self.log);
        let mut mods = Vec::new();
        for d in dirs {
            let stamped = stamp_dir(&self.tmp.join("src").join(d), &stamp)?;
            let m = format!("{chroot_builds}/mod-{}.tmp/src/{d}", self.id);
            build_dir(
                self.tree,
                &m,
                &self.log,
                &format!("building {d} against {}", self.tree.dir),
            )?;
            mods.extend(collect_kos(
                self.tmp,
                &format!("src/{d}"),
                &self.tree.release,
                stamped.as_deref(),
            )?);
        }
        Ok(mods)
    }
}

/// Builds the driver sources in `dirs` (e.g. a copy of igb/ edited in place) against
/// `tree`. Each directory is synced into a build directory of its own (only changed files
/// are copied), so `make` rebuilds only what changed; `dirs` are never written to.
pub fn from_driver_dirs(
    tree: &ModuleTree,
    stock: GuestKernel,
    dirs: &[PathBuf],
    log_dir: &Path,
) -> Result<GuestKernel> {
    let (host_builds, chroot_builds) = tree.builds_dir();
    let identity = tree.identity();
    let mut all = Vec::new();
    let mut last_log = None;
    for dir in dirs {
        let dir = dir
            .canonicalize()
            .map_err(|e| Error::Usage(format!("--driver-dir {}: {e}", dir.display())))?;
        if !dir.join("Makefile").is_file() && !dir.join("Kbuild").is_file() {
            return Err(Error::Usage(format!(
                "--driver-dir {}: no Makefile or Kbuild in it (give a driver's source directory)",
                dir.display()
            )));
        }
        let id = key(
            &[
                b"dir-v2",
                tree.release.as_bytes(),
                identity.as_bytes(),
                dir.as_os_str().as_encoded_bytes(),
            ],
            16,
        );
        let b = host_builds.join(format!("dir-{id}"));
        let _lock = nicemu_provision::lock::FileLock::exclusive(
            &host_builds.join(format!("dir-{id}.lock")),
        )?;
        let content = sync_sources(&dir, &b.join("src"))?;
        let stamp = format!("nicemu-{}", &content[..12]);
        let stamped = stamp_dir(&b.join("src"), &stamp)?;
        let log = b.join("build.log");
        let _ = std::fs::remove_file(&log);
        let m = format!("{chroot_builds}/dir-{id}/src");
        build_dir(
            tree,
            &m,
            &log,
            &format!("building {} against {}", dir.display(), tree.dir),
        )?;
        let mods = collect_kos(&b, "src", &tree.release, stamped.as_deref())?;
        all.extend(mods.into_iter().map(|mut m| {
            m.ko = b.join(&m.ko);
            m
        }));
        last_log = Some(keep_log(&log, log_dir, "build.log"));
    }
    let mut k = stock;
    let names: Vec<String> = all
        .iter()
        .map(|m| format!("{} {}", m.name, m.stamp))
        .collect();
    k.label = format!("{} + built {}", k.label, names.join(", "));
    k.built_modules = all;
    k.build_log = last_log;
    Ok(k)
}

fn build_dir(tree: &ModuleTree, m: &str, log: &Path, phase: &str) -> Result<()> {
    make::run_in_root(&tree.root, &tree.make_modules(m), log, phase).map(|_| ())
}

/// Ends the line [`stamp_dir`] appends.
const STAMP_MARK: &str = "/* stamped by nicemu-guest */";

/// Whether `copy` (a synced file) is `source`, or `source` plus the version line
/// [`stamp_dir`] appended: rewriting such a file would give it a new mtime and make kbuild
/// compile it again on every run of an unchanged driver directory.
fn holds_source(copy: &[u8], source: &[u8]) -> bool {
    copy.strip_prefix(source).is_some_and(|rest| {
        rest.is_empty()
            || (rest.starts_with(b"MODULE_VERSION(")
                && rest.ends_with(format!("{STAMP_MARK}\n").as_bytes())
                && rest.iter().position(|&b| b == b'\n') == Some(rest.len() - 1))
    })
}

/// Appends `MODULE_VERSION("STAMP")` to the file of `dir` that registers the module, unless
/// the driver sets a version itself. Returns the stamp written, if any.
fn stamp_dir(dir: &Path, stamp: &str) -> Result<Option<String>> {
    let line = format!("MODULE_VERSION(\"{stamp}\"); {STAMP_MARK}\n");
    let mut main = None;
    for e in std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
    {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "c") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        if text.ends_with(&line) {
            return Ok(Some(stamp.to_owned()));
        }
        if text.contains("MODULE_VERSION(") {
            return Ok(None);
        }
        if text.contains("module_init(") || text.contains("module_pci_driver(") {
            main = Some((p, text));
        }
    }
    let Some((p, mut text)) = main else {
        return Ok(None);
    };
    text.push_str(&line);
    std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
    Ok(Some(stamp.to_owned()))
}

/// The `.ko` files make left in `base/rel`, checked for the kernel's vermagic.
fn collect_kos(
    base: &Path,
    rel: &str,
    release: &str,
    stamp: Option<&str>,
) -> Result<Vec<BuiltModule>> {
    let mut out = Vec::new();
    let dir = base.join(rel);
    for e in std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".ko") else {
            continue;
        };
        let data = std::fs::read(e.path()).map_err(|err| Error::io(e.path(), err))?;
        let vermagic = modinfo(&data, "vermagic").unwrap_or_default();
        if !vermagic.starts_with(&format!("{release} ")) {
            return Err(Error::Build(format!(
                "{name} was built with vermagic {vermagic:?}, not the kernel's {release}"
            )));
        }
        let version = stamp
            .map(str::to_owned)
            .or_else(|| modinfo(&data, "version"))
            .unwrap_or_default();
        out.push(BuiltModule {
            name: stem.replace('-', "_"),
            ko: PathBuf::from(rel).join(&name),
            stamp: version,
        });
    }
    if out.is_empty() {
        return Err(Error::Build(format!(
            "the build left no .ko in {}",
            dir.display()
        )));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// A `KEY=value` entry of a module's `.modinfo` section (entries are NUL-separated).
pub fn modinfo(ko: &[u8], field: &str) -> Option<String> {
    let pat = format!("{field}=");
    let pat = pat.as_bytes();
    let mut i = 0;
    while let Some(off) = ko[i..].windows(pat.len()).position(|w| w == pat) {
        let at = i + off;
        if at == 0 || ko[at - 1] == 0 {
            let start = at + pat.len();
            let end = ko[start..]
                .iter()
                .position(|&b| b == 0)
                .map_or(ko.len(), |e| start + e);
            return Some(String::from_utf8_lossy(&ko[start..end]).into_owned());
        }
        i = at + 1;
    }
    None
}

fn write_ready(dir: &Path, mods: &[BuiltModule]) -> Result<()> {
    let text: String = mods
        .iter()
        .map(|m| format!("{}\t{}\t{}\n", m.name, m.ko.display(), m.stamp))
        .collect();
    let p = dir.join(READY);
    std::fs::write(&p, text).map_err(|e| Error::io(&p, e))
}

fn load_ready(dir: &Path) -> Option<Vec<BuiltModule>> {
    let text = std::fs::read_to_string(dir.join(READY)).ok()?;
    let mods: Vec<BuiltModule> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split('\t');
            Some(BuiltModule {
                name: f.next()?.to_owned(),
                ko: PathBuf::from(f.next()?),
                stamp: f.next().unwrap_or("").to_owned(),
            })
        })
        .collect();
    (!mods.is_empty() && mods.iter().all(|m| dir.join(&m.ko).is_file())).then_some(mods)
}

fn with_modules(
    stock: GuestKernel,
    mods: Vec<BuiltModule>,
    dir: &Path,
    log_dir: &Path,
    patches: &[Patch],
) -> GuestKernel {
    let mut k = stock;
    let names: Vec<String> = patches.iter().map(Patch::name).collect();
    let built: Vec<String> = mods
        .iter()
        .map(|m| format!("{} {}", m.name, m.stamp))
        .collect();
    k.label = format!(
        "{} + {} (built {})",
        k.label,
        names.join(" + "),
        built.join(", ")
    );
    k.built_modules = mods
        .into_iter()
        .map(|mut m| {
            m.ko = dir.join(&m.ko);
            m
        })
        .collect();
    let run_log = log_dir.join("build.log");
    k.build_log = Some(if run_log.is_file() {
        run_log
    } else {
        keep_log(&dir.join("build.log"), log_dir, "build.log")
    });
    k
}

fn remove_dir(d: &Path) -> Result<()> {
    if d.exists() {
        std::fs::remove_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    nicemu_provision::cmd::output_ok(std::process::Command::new("cp").arg("-a").arg(from).arg(to))?;
    Ok(())
}

/// True for files a build writes into a driver directory (never copied from the user's).
fn is_build_output(name: &str) -> bool {
    name.starts_with('.')
        || [".o", ".ko", ".mod", ".mod.c", ".a", ".order", ".symvers"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// Copies the sources of `from` (one level of subdirectories deep) into `to`, writing only
/// files whose bytes differ so make's timestamps stay meaningful; returns a hash of them all.
fn sync_sources(from: &Path, to: &Path) -> Result<String> {
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    collect_sources(from, "", 0, &mut files)?;
    files.sort();
    for (rel, data) in &files {
        let dest = to.join(rel);
        if !std::fs::read(&dest).is_ok_and(|copy| holds_source(&copy, data)) {
            if let Some(p) = dest.parent() {
                std::fs::create_dir_all(p).map_err(|e| Error::io(p, e))?;
            }
            std::fs::write(&dest, data).map_err(|e| Error::io(&dest, e))?;
        }
    }
    let parts: Vec<&[u8]> = files
        .iter()
        .flat_map(|(r, d)| [r.as_bytes(), d.as_slice()])
        .collect();
    Ok(key(&parts, 16))
}

fn collect_sources(
    dir: &Path,
    rel: &str,
    depth: usize,
    out: &mut Vec<(String, Vec<u8>)>,
) -> Result<()> {
    for e in std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if is_build_output(&name) {
            continue;
        }
        let r = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let ft = e.file_type().map_err(|err| Error::io(e.path(), err))?;
        if ft.is_dir() && depth < 2 {
            collect_sources(&e.path(), &r, depth + 1, out)?;
        } else if ft.is_file() {
            let data = std::fs::read(e.path()).map_err(|err| Error::io(e.path(), err))?;
            out.push((r, data));
        }
        if out.len() > 10_000 {
            return Err(Error::Usage(format!(
                "--driver-dir {}: more than 10000 files; give one driver's directory",
                dir.display()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modinfo_fields_are_nul_separated() {
        let ko = b"\x7fELF..\0srcversion=ABC\0version=nicemu-1\0vermagic=7.2.13+deb14-amd64 SMP\0";
        assert_eq!(modinfo(ko, "version").as_deref(), Some("nicemu-1"));
        assert_eq!(modinfo(ko, "srcversion").as_deref(), Some("ABC"));
        assert_eq!(
            modinfo(ko, "vermagic").as_deref(),
            Some("7.2.13+deb14-amd64 SMP")
        );
        assert_eq!(modinfo(ko, "license"), None);
    }

    #[test]
    fn stamp_goes_into_the_registering_file_once() {
        let d = std::env::temp_dir().join(format!("nicemu-stamp-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("a.c"), "int x;\n").unwrap();
        std::fs::write(d.join("main.c"), "module_init(f);\n").unwrap();
        assert_eq!(
            stamp_dir(&d, "nicemu-1").unwrap().as_deref(),
            Some("nicemu-1")
        );
        let again = stamp_dir(&d, "nicemu-1").unwrap();
        assert_eq!(
            again.as_deref(),
            Some("nicemu-1"),
            "an unchanged stamped copy"
        );
        let main = std::fs::read_to_string(d.join("main.c")).unwrap();
        assert_eq!(main.matches("MODULE_VERSION").count(), 1);
        assert_eq!(std::fs::read_to_string(d.join("a.c")).unwrap(), "int x;\n");
        std::fs::write(d.join("a.c"), "MODULE_VERSION(\"5.0\");\n").unwrap();
        assert_eq!(stamp_dir(&d, "nicemu-2").unwrap(), None);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn sync_copies_sources_not_outputs_and_hashes_content() {
        let base = std::env::temp_dir().join(format!("nicemu-sync-{}", std::process::id()));
        let (from, to) = (base.join("from"), base.join("to"));
        std::fs::create_dir_all(&from).unwrap();
        std::fs::write(from.join("igb_main.c"), "a").unwrap();
        std::fs::write(from.join("igb_main.o"), "obj").unwrap();
        std::fs::write(from.join(".igb_main.o.cmd"), "cmd").unwrap();
        let h1 = sync_sources(&from, &to).unwrap();
        assert!(to.join("igb_main.c").is_file() && !to.join("igb_main.o").exists());
        assert!(!to.join(".igb_main.o.cmd").exists());
        assert_eq!(h1, sync_sources(&from, &to).unwrap());
        std::fs::write(from.join("igb_main.c"), "b").unwrap();
        assert_ne!(h1, sync_sources(&from, &to).unwrap());
        assert_eq!(std::fs::read_to_string(to.join("igb_main.c")).unwrap(), "b");
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn a_stamped_copy_of_an_unchanged_file_is_not_rewritten() {
        let src = b"module_init(x);\n";
        let stamped = [
            &src[..],
            b"MODULE_VERSION(\"nicemu-1\"); /* stamped by nicemu-guest */\n",
        ]
        .concat();
        assert!(holds_source(src, src));
        assert!(holds_source(&stamped, src));
        assert!(!holds_source(&stamped, b"module_init(y);\n"));
        let extra = [&stamped[..], b"int z;\n"].concat();
        assert!(!holds_source(&extra, src));
        assert!(!holds_source(b"module_init(x);\nint z;\n", src));
    }
}
