// SPDX-License-Identifier: Apache-2.0
//! Out-of-tree module builds against a Debian kernel's own build tree
//! (`/usr/src/linux-headers-KVER` + `linux-kbuild`, with the compiler that tree names), so the
//! module's vermagic is the kernel's. Each build stamps `MODULE_VERSION("nicemu-ID")` into the
//! driver's copy (unless it has its own version); the guest reads it back from
//! `/sys/module/NAME/version`, which shows that the built module is the one that ran.

use std::path::{Path, PathBuf};

use super::patch::{self, Patch};
use super::{builds_dir, keep_log, key, make};
use crate::error::{Error, Result};
use crate::image::kernel::{BuiltModule, GuestKernel};
use crate::provision::linux_source;

/// The marker of a finished module build: one `NAME\tRELPATH\tSTAMP` line per module.
const READY: &str = "READY";

/// Builds the modules of `dirs` from the kernel's source with `patches` applied.
pub fn from_patches(
    sid_root: &Path,
    stock: GuestKernel,
    patches: &[Patch],
    dirs: &[String],
    log_dir: &Path,
) -> Result<GuestKernel> {
    let headers = ensure_build_tree(sid_root, &stock.release)?;
    let config = read_config(sid_root, &headers)?;
    let mut parts: Vec<&[u8]> = vec![b"modules-v1", stock.release.as_bytes(), config.as_bytes()];
    parts.extend(dirs.iter().map(|d| d.as_bytes()));
    parts.extend(patches.iter().map(|p| p.text.as_bytes()));
    let id = key(&parts, 16);
    let (host_builds, _) = builds_dir(sid_root);
    let done = host_builds.join(format!("mod-{id}"));
    // A concurrent run building the same modules: wait, then use its result.
    let _lock =
        crate::provision::lock::FileLock::exclusive(&host_builds.join(format!("mod-{id}.lock")))?;
    if let Some(mods) = load_ready(&done) {
        println!(
            "build: modules {} cached ({})",
            dirs.join(", "),
            done.display()
        );
        return Ok(with_modules(stock, mods, &done, log_dir, patches));
    }
    let src = linux_source::ensure(sid_root, &stock.release)?;
    let dir_refs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let tree = src.extract(&dir_refs)?;
    let tmp = host_builds.join(format!("mod-{id}.tmp"));
    remove_dir(&tmp)?;
    let built = build_patched(
        sid_root, &src, &tree, &tmp, &id, patches, dirs, &stock, &headers, log_dir,
    );
    let mods = match built {
        Ok(m) => m,
        Err(e) => {
            // Nothing half-applied or half-built stays behind.
            let _ = remove_dir(&tmp);
            return Err(e);
        }
    };
    let log = log_dir.join("build.log");
    let _ = std::fs::copy(&log, tmp.join("build.log"));
    write_ready(&tmp, &mods)?;
    remove_dir(&done)?;
    std::fs::rename(&tmp, &done).map_err(|e| Error::io(&done, e))?;
    Ok(with_modules(stock, mods, &done, log_dir, patches))
}

/// Copies `dirs` of the extracted `tree` into `tmp/src`, applies the patches, stamps and
/// builds each directory; the log goes to `log_dir/build.log`.
#[allow(clippy::too_many_arguments)]
fn build_patched(
    sid_root: &Path,
    src: &linux_source::KernelSource,
    tree: &Path,
    tmp: &Path,
    id: &str,
    patches: &[Patch],
    dirs: &[String],
    stock: &GuestKernel,
    headers: &str,
    log_dir: &Path,
) -> Result<Vec<BuiltModule>> {
    let (_, chroot_builds) = builds_dir(sid_root);
    for d in dirs {
        copy_dir(&tree.join(d), &tmp.join("src").join(d))?;
    }
    let tree_name = format!("Linux {} (the {} kernel's source)", src.version, stock.name);
    patch::apply_all(&tmp.join("src"), patches, &tree_name)?;
    let stamp = format!("nicemu-{}", &id[..12]);
    let log = log_dir.join("build.log");
    let _ = std::fs::remove_file(&log);
    let mut mods = Vec::new();
    for d in dirs {
        let stamped = stamp_dir(&tmp.join("src").join(d), &stamp)?;
        let m = format!("{chroot_builds}/mod-{id}.tmp/src/{d}");
        build_dir(
            sid_root,
            headers,
            &m,
            &log,
            &format!("building {d} against {headers}"),
        )?;
        mods.extend(collect_kos(
            tmp,
            &format!("src/{d}"),
            &stock.release,
            stamped.as_deref(),
        )?);
    }
    Ok(mods)
}

/// Builds the driver sources in `dirs` (e.g. a copy of igb/ edited in place) against the
/// kernel's build tree. Each directory is synced into a build directory of its own (only
/// changed files are copied), so `make` rebuilds only what changed; `dirs` are never
/// written to.
pub fn from_driver_dirs(
    sid_root: &Path,
    stock: GuestKernel,
    dirs: &[PathBuf],
    log_dir: &Path,
) -> Result<GuestKernel> {
    let headers = ensure_build_tree(sid_root, &stock.release)?;
    let (host_builds, chroot_builds) = builds_dir(sid_root);
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
                b"dir-v1",
                stock.release.as_bytes(),
                dir.as_os_str().as_encoded_bytes(),
            ],
            16,
        );
        let b = host_builds.join(format!("dir-{id}"));
        let content = sync_sources(&dir, &b.join("src"))?;
        let stamp = format!("nicemu-{}", &content[..12]);
        let stamped = stamp_dir(&b.join("src"), &stamp)?;
        let log = b.join("build.log");
        let _ = std::fs::remove_file(&log);
        let m = format!("{chroot_builds}/dir-{id}/src");
        build_dir(
            sid_root,
            &headers,
            &m,
            &log,
            &format!("building {} against {headers}", dir.display()),
        )?;
        let mods = collect_kos(&b, "src", &stock.release, stamped.as_deref())?;
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

/// Installs the kernel's build tree and compiler into the sid root; returns the tree's path
/// inside the chroot (`/usr/src/linux-headers-KVER`).
fn ensure_build_tree(sid_root: &Path, release: &str) -> Result<String> {
    let parts = linux_source::parse_release(release);
    if parts.as_ref().and_then(|p| p.debian) == Some(13) {
        return Err(Error::Usage(format!(
            "module builds need the kernel's build tree in the sid root; {release} is trixie's \
             (build the whole kernel instead: --kernel trixie-built --patch …)"
        )));
    }
    let headers = format!("/usr/src/linux-headers-{release}");
    let config = std::fs::read_to_string(sid_root.join(format!("boot/config-{release}")))
        .unwrap_or_default();
    let mut pkgs = vec![
        format!("linux-headers-{release}"),
        "make".to_owned(),
        "ccache".to_owned(),
    ];
    pkgs.extend(make::compiler_package(&config));
    make::ensure_packages(sid_root, &pkgs)?;
    if !sid_root.join(&headers[1..]).join("Makefile").is_file() {
        return Err(Error::Kernel(format!(
            "{headers} has no Makefile after installing it"
        )));
    }
    Ok(headers)
}

fn read_config(sid_root: &Path, headers: &str) -> Result<String> {
    let p = sid_root.join(&headers[1..]).join(".config");
    std::fs::read_to_string(&p).map_err(|e| Error::io(&p, e))
}

fn build_dir(sid_root: &Path, headers: &str, m: &str, log: &Path, phase: &str) -> Result<()> {
    let script = format!(
        "make -C {headers} M={m} -j{} CCACHE=ccache DEBIAN_KERNEL_USE_CCACHE=1 modules",
        jobs()
    );
    make::run_in_root(sid_root, &script, log, phase).map(|_| ())
}

/// Parallel jobs for make: the host's CPUs.
pub fn jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// Appends `MODULE_VERSION("STAMP")` to the file of `dir` that registers the module, unless
/// the driver sets a version itself. Returns the stamp written, if any.
fn stamp_dir(dir: &Path, stamp: &str) -> Result<Option<String>> {
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
    let line = format!("MODULE_VERSION(\"{stamp}\"); /* stamped by nicemu-guest */\n");
    if !text.ends_with(&line) {
        text.push_str(&line);
        std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
    }
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
    crate::cmd::output_ok(std::process::Command::new("cp").arg("-a").arg(from).arg(to)).map(|_| ())
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
        if std::fs::read(&dest).ok().as_deref() != Some(data.as_slice()) {
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
        stamp_dir(&d, "nicemu-1").unwrap();
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
}
