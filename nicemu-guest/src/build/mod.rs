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
//!   is built ([`whole_kernel`]) with x86_64 defconfig + `nicemu-guest/kernel/nicemu.config`;
//!   a `NAME-debug` kernel likewise, with `nicemu-guest/kernel/debug.config` on top;
//! - patches that only touch Documentation/: said so, the stock kernel boots;
//! - `--driver-dir DIR`: one driver's sources built against the kernel's build tree.
//!
//! Builds live under `SIDROOT/var/lib/nicemu-builds/` (make runs inside the sid root), keyed
//! by source version, config and the patches' contents; an entry is used only once its
//! `READY` file exists.

pub mod config_input;
pub mod kbuild;
pub mod make;
pub mod module;
pub mod patch;
pub mod prepare;
pub mod requests;
pub mod resume;
pub mod store;
pub mod tree;
pub mod tree_mirror;
pub mod whole_kernel;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::image::guest_kernel::{self, GuestKernel, KernelSpec};
use nicemu_provision::linux_source::KernelSource;
use patch::Patch;
use tree::ModuleTree;

/// A guest kernel and the changes to make to it before it boots.
#[derive(Debug, Clone)]
pub struct KernelRequest {
    /// The kernel (sid, trixie, a bzImage, `sid-built`, `tree:DIR`).
    pub spec: KernelSpec,
    /// Patches applied in order to its source.
    pub patches: Vec<Patch>,
    /// Driver source directories built against its build tree (`--driver-dir`).
    pub driver_dirs: Vec<PathBuf>,
    /// What a whole-kernel build's `.config` is made from (`--config`, `--config-fragment`, a
    /// tree's own `.config`).
    pub config: config_input::ConfigInput,
}

impl KernelRequest {
    /// A request without changes.
    pub fn plain(spec: KernelSpec) -> Self {
        KernelRequest {
            spec,
            patches: Vec::new(),
            driver_dirs: Vec::new(),
            config: config_input::ConfigInput::default(),
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

/// The test [`plan`] uses for `kernel` (a stock Debian kernel or one the harness built): a
/// changed file is module source when the kernel's modules tree has modules from its
/// directory and the directory's Makefile, under the kernel's own config
/// ([`kernel_config`]), puts the file only into modules ([`kbuild::only_in_modules`]). The
/// Makefiles come from `src`, the kernel's source.
fn module_source(
    src: &KernelSource,
    kernel: &GuestKernel,
    patches: &[Patch],
) -> Result<impl Fn(&str) -> bool> {
    let dirs = module_dirs(patches, |d| stock_has_modules_in(&kernel.modules_dir, d));
    let config = kbuild::parse_config(&kernel_config(kernel));
    let mut makefiles = std::collections::HashMap::new();
    if !dirs.is_empty() && !config.is_empty() {
        // The directories whole, not only their Makefiles: a module build then extracts the
        // same directories (the same cache key), and the tarball is decompressed once, not
        // twice (~60 s each for 160 MB of xz on a loaded 2-core host).
        let refs: Vec<&str> = dirs.iter().map(String::as_str).collect();
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

/// The directories of the changed files (Documentation/ aside) where the stock kernel has
/// modules (`has_modules`), sorted: what [`module_source`] extracts, and, when [`plan`] says
/// [`Plan::Modules`], the same directories that plan builds (one extraction serves both).
fn module_dirs(patches: &[Patch], has_modules: impl Fn(&str) -> bool) -> Vec<String> {
    let mut dirs: Vec<String> = patches
        .iter()
        .flat_map(|p| p.files.iter())
        .filter_map(|f| f.rsplit_once('/').map(|(d, _)| d.to_owned()))
        .filter(|d| !d.starts_with("Documentation") && has_modules(d))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The `.config` `kernel` was built with: a harness build's `O=DIR/.config`, else the
/// `config-KVER` Debian installs beside the image; empty if there is none.
fn kernel_config(kernel: &GuestKernel) -> String {
    let path = match &kernel.build_dir {
        Some(out) => out.join(".config"),
        None => kernel
            .image
            .with_file_name(format!("config-{}", kernel.release)),
    };
    std::fs::read_to_string(path).unwrap_or_default()
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
        KernelSpec::Tree(dir) => {
            if !req.driver_dirs.is_empty() {
                return Err(Error::Usage(format!(
                    "--driver-dir with the kernel tree {}: edit the driver in the tree instead \
                     (the next run rebuilds only what changed)",
                    dir.display()
                )));
            }
            whole_kernel::from_tree(sid_root, dir, &req.patches, &req.config, log_dir)?
        }
        KernelSpec::Built(base) => {
            let stock = guest_kernel::resolve(&base_spec(base)?, sid_root)?;
            built_with_changes(req, &stock, sid_root, log_dir)?
        }
        KernelSpec::Debug(base) => {
            let stock = guest_kernel::resolve(&base_spec(base)?, sid_root)?;
            let mut debug = req.clone();
            debug.config.debug = true;
            built_with_changes(&debug, &stock, sid_root, log_dir)?
        }
        spec if !req.config.is_default() => {
            // --config / --config-fragment: the kernel is built whole from its source.
            if matches!(spec, KernelSpec::Custom { .. }) {
                return Err(Error::Usage(
                    "--config / --config-fragment need a kernel the harness builds (sid, \
                     trixie, NAME-built, tree:DIR); a bzImage is built already"
                        .into(),
                ));
            }
            let stock = guest_kernel::resolve(spec, sid_root)?;
            built_with_changes(req, &stock, sid_root, log_dir)?
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

/// `--driver-dir`s of `req` built against the harness-built `kernel` (none: `kernel`).
fn with_driver_dirs(
    req: &KernelRequest,
    kernel: GuestKernel,
    sid_root: &Path,
    log_dir: &Path,
) -> Result<GuestKernel> {
    if req.driver_dirs.is_empty() {
        return Ok(kernel);
    }
    let tree = built_tree(sid_root, &kernel)?;
    module::from_driver_dirs(&tree, kernel, &req.driver_dirs, log_dir)
}

/// The module build tree of a kernel the harness built.
fn built_tree(sid_root: &Path, kernel: &GuestKernel) -> Result<ModuleTree> {
    let out = kernel
        .build_dir
        .as_deref()
        .ok_or_else(|| Error::Kernel(format!("{} was not built by the harness", kernel.name)))?;
    ModuleTree::built(sid_root, out, &kernel.release)
}

/// A whole kernel built from `stock`'s Debian source (`NAME-built`) with `req`'s changes:
/// patches confined to module source are built as modules against the unpatched build (so
/// A and B of an experiment share one kernel); anything else is a whole build with them.
fn built_with_changes(
    req: &KernelRequest,
    stock: &GuestKernel,
    sid_root: &Path,
    log_dir: &Path,
) -> Result<GuestKernel> {
    if req.patches.is_empty() {
        let base = whole_kernel::from_debian_source(sid_root, stock, &[], &req.config, log_dir)?;
        return with_driver_dirs(req, base, sid_root, log_dir);
    }
    if !req.driver_dirs.is_empty() {
        return Err(both_driver_dir_and_patch());
    }
    let src = nicemu_provision::linux_source::ensure(sid_root, &stock.release)?;
    // The stock kernel's config is known before any build: a patch it would rebuild whole
    // is built whole at once.
    if let Plan::Modules(_) = plan(&req.patches, module_source(&src, stock, &req.patches)?) {
        let base = whole_kernel::from_debian_source(sid_root, stock, &[], &req.config, log_dir)?;
        // The built kernel's own config decides (a driver could be built in there).
        if let Plan::Modules(dirs) = plan(&req.patches, module_source(&src, &base, &req.patches)?) {
            let tree = built_tree(sid_root, &base)?;
            let source = module::Source {
                root: whole_kernel::source_dir(&base)?,
                name: format!(
                    "Linux {} (the {} build's source)",
                    src.version, base.release
                ),
            };
            return module::from_patches(&tree, &source, base, &req.patches, &dirs, log_dir);
        }
    }
    println!(
        "build: the patches change files outside module directories: building the whole kernel"
    );
    whole_kernel::from_debian_source(sid_root, stock, &req.patches, &req.config, log_dir)
}

fn both_driver_dir_and_patch() -> Error {
    Error::Usage(
        "--driver-dir and --patch on one kernel: apply the patch to the directory instead".into(),
    )
}

/// The Debian root a stock kernel's modules are built in: the sid root for sid kernels,
/// the trixie build root for trixie's (its build tree needs trixie's compiler and kbuild).
fn build_root_for(sid_root: &Path, release: &str) -> Result<PathBuf> {
    match nicemu_provision::linux_source::parse_release(release).and_then(|p| p.debian) {
        Some(13) => Ok(nicemu_provision::build_root::ensure("trixie")?),
        _ => Ok(sid_root.to_path_buf()),
    }
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
            return Err(both_driver_dir_and_patch());
        }
        let root = build_root_for(sid_root, &stock.release)?;
        let tree = ModuleTree::debian(&root, &stock.release, &kernel_config(&stock))?;
        return module::from_driver_dirs(&tree, stock, &req.driver_dirs, log_dir);
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
    let src = nicemu_provision::linux_source::ensure(sid_root, &stock.release)?;
    let is_module_file = module_source(&src, &stock, &req.patches)?;
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
        Plan::Modules(dirs) => {
            let root = build_root_for(sid_root, &stock.release)?;
            let tree = ModuleTree::debian(&root, &stock.release, &kernel_config(&stock))?;
            let refs: Vec<&str> = dirs.iter().map(String::as_str).collect();
            let source = module::Source {
                root: src.extract(&refs)?,
                name: format!("Linux {} (the {} kernel's source)", src.version, stock.name),
            };
            module::from_patches(&tree, &source, stock, &req.patches, &dirs, log_dir)
        }
        Plan::WholeKernel => {
            println!("build: the patches change files outside module directories: building the whole kernel");
            whole_kernel::from_debian_source(sid_root, &stock, &req.patches, &req.config, log_dir)
        }
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
    fn a_module_build_extracts_the_directories_the_makefile_check_extracted() {
        let igb = "drivers/net/ethernet/intel/igb";
        let ixgbe = "drivers/net/ethernet/intel/ixgbe";
        let has = |d: &str| d == igb || d == ixgbe;
        let module_file = |f: &str| has(f.rsplit_once('/').map_or("", |(d, _)| d));
        let set = [
            p(&[
                &format!("{ixgbe}/ixgbe_main.c"),
                &format!("{igb}/igb_main.c"),
            ]),
            p(&[&format!("{igb}/igb.h"), "Documentation/networking/igb.rst"]),
        ];
        let Plan::Modules(mut built) = plan(&set, module_file) else {
            panic!("a module plan");
        };
        built.sort();
        assert_eq!(module_dirs(&set, has), built);
        assert_eq!(
            module_dirs(&set, has),
            vec![igb.to_owned(), ixgbe.to_owned()]
        );
        // A directory without stock modules is not extracted for the check.
        assert_eq!(
            module_dirs(&[p(&["net/core/dev.c"])], has),
            Vec::<String>::new()
        );
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
}
