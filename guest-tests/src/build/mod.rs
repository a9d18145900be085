// SPDX-License-Identifier: Apache-2.0
//! From a patch, a driver directory or a kernel tree to a bootable guest kernel.
//!
//! [`resolve`] is the one place that turns "kernel + changes" into a [`GuestKernel`]:
//! - no changes: the kernel as provisioned;
//! - patches whose files all lie in module directories (directories the stock kernel has
//!   modules for, e.g. drivers/net/ethernet/intel/igb): those modules are built from the
//!   kernel's own Debian source against its own build tree ([`module`]) and replace the stock
//!   ones; the stock kernel boots;
//! - patches that touch anything else, a `NAME-built` kernel, or a `tree:DIR`: the whole kernel
//!   is built ([`kernel`]) with x86_64 defconfig + `guest-tests/kernel/nicemu.config`;
//! - patches that only touch Documentation/: said so, the stock kernel boots;
//! - `--driver-dir DIR`: one driver's sources built against the kernel's build tree.
//!
//! Builds live under `SIDROOT/var/lib/nicemu-builds/` (make runs inside the sid root), keyed
//! by source version, config and the patches' contents; an entry is used only once its
//! `READY` file exists.

pub mod kbuild;
pub mod kernel;
pub mod make;
pub mod module;
pub mod patch;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::image::kernel::{self as guest_kernel, GuestKernel, KernelSpec};
use patch::Patch;

/// A guest kernel and the changes to make to it before it boots.
#[derive(Debug, Clone)]
pub struct KernelRequest {
    /// The kernel (sid, trixie, a bzImage, `sid-built`, `tree:DIR`).
    pub spec: KernelSpec,
    /// Patches applied in order to its source.
    pub patches: Vec<Patch>,
    /// Driver source directories built against its build tree (`--driver-dir`).
    pub driver_dirs: Vec<PathBuf>,
}

impl KernelRequest {
    /// A request without changes.
    pub fn plain(spec: KernelSpec) -> Self {
        KernelRequest {
            spec,
            patches: Vec::new(),
            driver_dirs: Vec::new(),
        }
    }

    /// Short name for reports: the kernel's, plus the patches' and driver directories' names
    /// ("sid+igb-stats-mutex"), so A and B of one base kernel stay apart.
    pub fn name(&self) -> String {
        let mut n = self.spec.name();
        for p in &self.patches {
            let stem = p.name();
            n.push('+');
            n.push_str(stem.strip_suffix(".patch").unwrap_or(&stem));
        }
        for d in &self.driver_dirs {
            n.push_str("+dir:");
            n.push_str(
                &d.file_name()
                    .map(|f| f.to_string_lossy())
                    .unwrap_or_default(),
            );
        }
        n
    }
}

/// What a set of patches asks to be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Only documentation changes: boot the stock kernel.
    DocsOnly,
    /// Only files in these module directories changed: build those modules.
    Modules(Vec<String>),
    /// Something else changed: build the whole kernel.
    WholeKernel,
}

/// Classifies the files `patches` change. `is_module_file(path)` says whether the stock kernel
/// compiles that file only into loadable modules ([`module_source`]).
pub fn plan(patches: &[Patch], is_module_file: impl Fn(&str) -> bool) -> Plan {
    let files: Vec<&str> = patches
        .iter()
        .flat_map(|p| p.files.iter().map(String::as_str))
        .collect();
    if files.iter().all(|f| f.starts_with("Documentation/")) {
        return Plan::DocsOnly;
    }
    let mut dirs: Vec<String> = Vec::new();
    for f in files.iter().filter(|f| !f.starts_with("Documentation/")) {
        let (dir, name) = f.rsplit_once('/').unwrap_or(("", f));
        // Kconfig changes what gets built: only a whole build sees them.
        if name == "Kconfig" || dir.is_empty() || !is_module_file(f) {
            return Plan::WholeKernel;
        }
        if !dirs.iter().any(|d| d == dir) {
            dirs.push(dir.to_owned());
        }
    }
    Plan::Modules(dirs)
}

/// The test [`plan`] uses for the stock kernel `stock`: a changed file is module source when
/// the stock modules tree has modules from its directory and the directory's Makefile, under
/// the kernel's own config (`boot/config-KVER`), puts the file only into modules
/// ([`kbuild::only_in_modules`]). The Makefiles come from the kernel's source.
fn module_source(
    sid_root: &Path,
    stock: &GuestKernel,
    patches: &[Patch],
) -> Result<impl Fn(&str) -> bool> {
    let mut dirs: Vec<String> = patches
        .iter()
        .flat_map(|p| p.files.iter())
        .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d.to_owned()))
        .filter(|d| !d.starts_with("Documentation") && stock_has_modules_in(&stock.modules_dir, d))
        .collect();
    dirs.sort();
    dirs.dedup();
    let config_path = stock
        .image
        .with_file_name(format!("config-{}", stock.release));
    let config = std::fs::read_to_string(&config_path)
        .map(|t| kbuild::parse_config(&t))
        .unwrap_or_default();
    let mut makefiles = std::collections::HashMap::new();
    if !dirs.is_empty() && !config.is_empty() {
        let src = crate::provision::linux_source::ensure(sid_root, &stock.release)?;
        let wanted: Vec<String> = dirs.iter().map(|d| format!("{d}/Makefile")).collect();
        let refs: Vec<&str> = wanted.iter().map(String::as_str).collect();
        let root = src.extract(&refs)?;
        for d in dirs {
            let mk = root.join(&d).join("Makefile");
            let text = std::fs::read_to_string(&mk).map_err(|e| Error::io(&mk, e))?;
            makefiles.insert(d, text);
        }
    }
    Ok(move |f: &str| {
        let (dir, name) = f.rsplit_once('/').unwrap_or(("", f));
        makefiles
            .get(dir)
            .is_some_and(|mk| kbuild::only_in_modules(mk, &config, name))
    })
}

/// True if the stock modules tree has a module built from `dir` (`kernel/DIR/*.ko*`).
pub fn stock_has_modules_in(modules_dir: &Path, dir: &str) -> bool {
    std::fs::read_dir(modules_dir.join("kernel").join(dir))
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains(".ko"))
}

/// Resolves `req` to a bootable kernel, building what it needs. Build logs are copied into
/// `log_dir` (the run directory). This is the function A/B rounds go through.
pub fn resolve(req: &KernelRequest, sid_root: &Path, log_dir: &Path) -> Result<GuestKernel> {
    let mut k = match &req.spec {
        KernelSpec::Tree(dir) => kernel::from_tree(sid_root, dir, &req.patches, log_dir)?,
        KernelSpec::Built(base) => {
            let stock = guest_kernel::resolve(&base_spec(base)?, sid_root)?;
            kernel::from_debian_source(sid_root, &stock, &req.patches, log_dir)?
        }
        spec => {
            let stock = guest_kernel::resolve(spec, sid_root)?;
            with_changes(req, stock, sid_root, log_dir)?
        }
    };
    k.name = req.name();
    Ok(k)
}

fn base_spec(name: &str) -> Result<KernelSpec> {
    KernelSpec::from_args(name, None)
}

/// A provisioned kernel plus `--patch` / `--driver-dir` changes.
fn with_changes(
    req: &KernelRequest,
    stock: GuestKernel,
    sid_root: &Path,
    log_dir: &Path,
) -> Result<GuestKernel> {
    if !req.driver_dirs.is_empty() {
        if !req.patches.is_empty() {
            return Err(Error::Usage(
                "--driver-dir and --patch on one kernel: apply the patch to the directory instead"
                    .into(),
            ));
        }
        return module::from_driver_dirs(sid_root, stock, &req.driver_dirs, log_dir);
    }
    if req.patches.is_empty() {
        return Ok(stock);
    }
    if matches!(req.spec, KernelSpec::Custom { .. }) {
        return Err(Error::Usage(
            "--patch needs a Debian kernel (sid, trixie, trixie-rt) or tree:DIR, whose source \
             the harness knows; a bzImage has none"
                .into(),
        ));
    }
    let is_module_file = module_source(sid_root, &stock, &req.patches)?;
    match plan(&req.patches, is_module_file) {
        Plan::DocsOnly => {
            println!(
                "build: the patches change only Documentation/: booting the stock {} kernel",
                stock.release
            );
            let mut k = stock;
            k.label.push_str(" (patches change only Documentation/)");
            Ok(k)
        }
        Plan::Modules(dirs) => module::from_patches(sid_root, stock, &req.patches, &dirs, log_dir),
        Plan::WholeKernel => {
            println!("build: the patches change files outside module directories: building the whole kernel");
            kernel::from_debian_source(sid_root, &stock, &req.patches, log_dir)
        }
    }
}

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

/// `SIDROOT/var/lib/nicemu-builds` and its path inside the chroot.
pub fn builds_dir(sid_root: &Path) -> (PathBuf, &'static str) {
    (
        sid_root.join("var/lib/nicemu-builds"),
        "/var/lib/nicemu-builds",
    )
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

    fn p(files: &[&str]) -> Patch {
        Patch {
            path: PathBuf::from("x.patch"),
            text: String::new(),
            files: files.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn plans_follow_the_changed_files() {
        let modules = |f: &str| f.contains("intel/igb/") || f.contains("intel/ixgbe/");
        let igb = "drivers/net/ethernet/intel/igb";
        assert_eq!(
            plan(
                &[p(&[&format!("{igb}/igb.h"), &format!("{igb}/igb_main.c")])],
                modules
            ),
            Plan::Modules(vec![igb.into()])
        );
        assert_eq!(
            plan(
                &[p(&[&format!("{igb}/igb_main.c")]), p(&["net/core/dev.c"])],
                modules
            ),
            Plan::WholeKernel
        );
        assert_eq!(
            plan(&[p(&[&format!("{igb}/Kconfig")])], modules),
            Plan::WholeKernel
        );
        assert_eq!(
            plan(&[p(&["Documentation/x.rst"])], modules),
            Plan::DocsOnly
        );
        assert_eq!(
            plan(
                &[p(&["Documentation/x.rst", &format!("{igb}/igb.h")])],
                modules
            ),
            Plan::Modules(vec![igb.into()])
        );
        assert_eq!(plan(&[p(&["Makefile"])], modules), Plan::WholeKernel);
    }

    #[test]
    fn names_keep_a_and_b_apart() {
        let mut r = KernelRequest::plain(KernelSpec::Sid);
        assert_eq!(r.name(), "sid");
        r.patches.push(Patch {
            path: PathBuf::from("/p/igb-stats-mutex.patch"),
            text: String::new(),
            files: vec![],
        });
        assert_eq!(r.name(), "sid+igb-stats-mutex");
    }

    #[test]
    fn keys_depend_on_every_part() {
        assert_eq!(key(&[b"a", b"b"], 12), key(&[b"a", b"b"], 12));
        assert_ne!(key(&[b"a", b"b"], 12), key(&[b"ab"], 12));
        assert_eq!(key(&[b"x"], 12).len(), 12);
    }
}
