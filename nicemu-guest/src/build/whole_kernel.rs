// SPDX-License-Identifier: Apache-2.0
//! Whole-kernel builds: x86_64 defconfig + the repo's fragment (`nicemu-guest/kernel/
//! nicemu.config`: igb/ixgbe as modules, virtio-net, MSI-X, PTP, netns, the scenarios'
//! qdiscs, 8021q, BPF/XDP and the latency tracers), built inside the sid root with ccache,
//! out of tree (`O=`), from a Debian kernel's own source (with `--patch`es) or from a
//! developer's tree (`tree:DIR`, its source files mirrored into the build directory, so DIR
//! is only read: [`super::tree_mirror`]). A developer's `.config` or a `--config` replaces
//! defconfig + fragment, with what the scenarios need added ([`super::config_input`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::config_input::{self, ConfigInput};
pub use super::config_input::{unmet_options, DEBUG_FRAGMENT, FRAGMENT};
use super::make;
use super::patch::{self, Patch};
use super::store::{builds_dir, key, BUILDS_IN_ROOT};
use crate::error::{Error, Result};
use crate::image::guest_kernel::GuestKernel;
use nicemu_provision::cmd::output_ok;
use nicemu_provision::linux_source;

/// LOCALVERSION of every kernel the harness builds ("7.2.13-nicemu").
pub const LOCALVERSION: &str = "-nicemu";

/// Builds the kernel `stock` came from, from its Debian source with `patches` applied.
pub fn from_debian_source(
    sid_root: &Path,
    stock: &GuestKernel,
    patches: &[Patch],
    config: &ConfigInput,
    log_dir: &Path,
) -> Result<GuestKernel> {
    let src = linux_source::ensure(sid_root, &stock.release)?;
    let cc = ensure_tools(sid_root)?;
    let mut parts: Vec<&[u8]> = vec![
        b"kernel-v2",
        src.version.as_bytes(),
        FRAGMENT.as_bytes(),
        cc.version.as_bytes(),
    ];
    parts.extend(patches.iter().map(|p| p.text.as_bytes()));
    // The default configuration keeps the keys builds had before --config existed.
    let identity = config.identity();
    if !config.is_default() {
        parts.push(identity.as_bytes());
    }
    let id = key(&parts, 16);
    let (host, chroot) = builds_dir(sid_root);
    let b = host.join(format!("kernel-{id}"));
    let _lock =
        nicemu_provision::lock::FileLock::exclusive(&host.join(format!("kernel-{id}.lock")))?;
    if let Some(k) = ready(&b, stock, patches, log_dir) {
        println!("build: kernel {} cached ({})", k.release, b.display());
        return Ok(k);
    }
    if !b.join("src").is_dir() {
        let tree = src.extract(&[])?;
        let tmp = b.join("src.tmp");
        remove(&tmp)?;
        std::fs::create_dir_all(&b).map_err(|e| Error::io(&b, e))?;
        link_copy(&tree, &tmp)?;
        let name = format!("Linux {} (the {} kernel's source)", src.version, stock.name);
        if let Err(e) = patch::apply_all(&tmp, patches, &name) {
            let _ = remove(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, b.join("src")).map_err(|e| Error::io(&b, e))?;
    }
    let inside = format!("{chroot}/kernel-{id}");
    let log = log_dir.join("build.log");
    build(
        sid_root,
        &cc,
        &format!("{inside}/src"),
        &inside,
        &id,
        config,
        &log,
    )?;
    finish(&b, &log)?;
    ready(&b, stock, patches, log_dir)
        .ok_or_else(|| Error::Build(format!("the build in {} left no kernel", b.display())))
}

/// Builds a developer's kernel tree `dir` out of tree, incrementally (the output directory
/// persists per tree); `patches` apply on top in a copy of the tree.
pub fn from_tree(
    sid_root: &Path,
    dir: &Path,
    patches: &[Patch],
    config: &ConfigInput,
    log_dir: &Path,
) -> Result<GuestKernel> {
    let dir = check_tree(dir)?;
    super::tree_mirror::check_state(&dir)?;
    // The output directory persists per tree (and patches): a new configuration is applied
    // to it, so only what it changes is rebuilt.
    let mut parts: Vec<&[u8]> = vec![b"tree-v2", dir.as_os_str().as_encoded_bytes()];
    parts.extend(patches.iter().map(|p| p.text.as_bytes()));
    let id = key(&parts, 16);
    let (host, chroot) = builds_dir(sid_root);
    let b = host.join(format!("tree-{id}"));
    let _lock = nicemu_provision::lock::FileLock::exclusive(&host.join(format!("tree-{id}.lock")))?;
    let cc = ensure_tools(sid_root)?;
    let started = std::time::Instant::now();
    let files = super::tree_mirror::source_files(&dir)?;
    let synced = super::tree_mirror::sync(&dir, &b.join("src"), &files)?;
    println!(
        "build: tree {}: {} source files, {} copied, {} removed, {} unchanged ({:.0} s)",
        dir.display(),
        files.len(),
        synced.copied,
        synced.removed,
        synced.unchanged,
        started.elapsed().as_secs_f64()
    );
    if !patches.is_empty() {
        patch::apply_all(
            &b.join("src"),
            patches,
            &format!("the tree {}", dir.display()),
        )?;
    }
    let inside = format!("{chroot}/tree-{id}");
    let log = log_dir.join("build.log");
    build(
        sid_root,
        &cc,
        &format!("{inside}/src"),
        &inside,
        &id,
        config,
        &log,
    )?;
    finish(&b, &log)?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stock = GuestKernel {
        name: format!("tree:{name}"),
        label: format!("tree {}", dir.display()),
        image: PathBuf::new(),
        modules_dir: PathBuf::new(),
        release: String::new(),
        built_modules: Vec::new(),
        build_log: None,
        build_dir: None,
    };
    ready(&b, &stock, patches, log_dir)
        .ok_or_else(|| Error::Build(format!("the build in {} left no kernel", b.display())))
}

/// The source tree a harness-built kernel came from (`DIR/src` beside its `O=DIR/out`).
pub fn source_dir(k: &GuestKernel) -> Result<PathBuf> {
    let src = k
        .build_dir
        .as_deref()
        .and_then(Path::parent)
        .map(|b| b.join("src"))
        .filter(|s| s.join("Makefile").is_file())
        .ok_or_else(|| Error::Kernel(format!("{} has no build source tree", k.name)))?;
    Ok(src)
}

/// A Linux tree: a top Makefile with VERSION/PATCHLEVEL, Kconfig and arch/x86 (a `.config`
/// or an in-place build's objects are fine: only its source files are mirrored).
pub fn check_tree(dir: &Path) -> Result<PathBuf> {
    let d = dir
        .canonicalize()
        .map_err(|e| Error::Usage(format!("--kernel-tree {}: {e}", dir.display())))?;
    let mk = std::fs::read_to_string(d.join("Makefile")).unwrap_or_default();
    if linux_source::makefile_version(&mk).is_none()
        || !d.join("Kconfig").is_file()
        || !d.join("arch/x86").is_dir()
    {
        return Err(Error::Usage(format!(
            "--kernel-tree {}: not a Linux kernel tree (needs a top Makefile with VERSION/PATCHLEVEL, Kconfig and arch/x86)",
            d.display()
        )));
    }
    Ok(d)
}

/// The compiler a build uses: the package name (`gcc-16`) and its `--version` line, which is
/// part of every build's cache key (a compiler upgrade in the sid root is a new build).
#[derive(Debug, Clone)]
pub struct Compiler {
    /// Program name inside the sid root.
    pub name: String,
    /// First line of `NAME --version`.
    pub version: String,
}

/// The build script: defconfig + fragment, then bzImage and modules, then modules_install.
/// `b` is the build directory inside the chroot; `O=b/out` persists, so a build that was
/// interrupted, or a tree that changed, makes only what is missing or out of date.
fn build(
    sid_root: &Path,
    cc: &Compiler,
    src: &str,
    b: &str,
    id: &str,
    config: &ConfigInput,
    log: &Path,
) -> Result<()> {
    let make = make_command(cc, src, b, id, localversion(config));
    let host_b = sid_root.join(&b[1..]);
    let removed = super::resume::begin(&host_b, &host_b.join("out"))?;
    if removed > 0 {
        println!("build: resuming an interrupted build; {removed} half-written targets removed");
    }
    let identity = config.identity();
    if configured(&host_b, &identity) {
        println!("build: configuration kept (kbuild re-syncs it if a Kconfig file changed)");
    } else {
        configure(sid_root, &make, src, b, config, log)?;
        mark_configured(&host_b, &identity)?;
    }
    make::run_in_root(
        sid_root,
        &format!("{make} bzImage modules"),
        log,
        "compiling the kernel and modules",
    )?;
    let install = format!(
        "set -e; rm -rf {b}/mods; {make} INSTALL_MOD_PATH={b}/mods INSTALL_MOD_STRIP=1 modules_install; ccache -s | head -8"
    );
    make::run_in_root(sid_root, &install, log, "installing modules")?;
    super::resume::end(&host_b)
}

/// Writes `out/.config` of the build in `b` (inside the root) from `config`: defconfig + the
/// fragment (+ `--config-fragment`s), or a full config (+ fragments) with the scenarios' needs
/// it lacks added by `scripts/config`; then `olddefconfig`. Says what it changed.
fn configure(
    sid_root: &Path,
    make: &str,
    src: &str,
    b: &str,
    config: &ConfigInput,
    log: &Path,
) -> Result<()> {
    let host_b = sid_root.join(&b[1..]);
    let write = |name: &str, text: &str| -> Result<String> {
        let p = host_b.join(name);
        std::fs::write(&p, text).map_err(|e| Error::io(&p, e))?;
        Ok(format!("{b}/{name}"))
    };
    let mut frags = Vec::new();
    if config.debug {
        frags.push(write("debug.config", DEBUG_FRAGMENT)?);
    }
    for (i, f) in config.fragments.iter().enumerate() {
        frags.push(write(&format!("fragment-{}.config", i + 1), &f.text)?);
    }
    let merge = |files: &[String]| {
        format!(
            "{src}/scripts/kconfig/merge_config.sh -m -O {b}/out {b}/out/.config {}; ",
            files.join(" ")
        )
    };
    let (script, phase, before) = match &config.base {
        None => {
            let mut files = vec![write("nicemu.config", FRAGMENT)?];
            files.extend(frags.iter().cloned());
            let script = format!(
                "set -e; mkdir -p {b}/out; {make} x86_64_defconfig; {}{make} olddefconfig",
                merge(&files)
            );
            let what = if config.debug {
                "x86_64_defconfig + nicemu.config + debug.config"
            } else {
                "x86_64_defconfig + nicemu.config"
            };
            (script, format!("configuring ({what})"), None)
        }
        Some(base) => {
            let base_file = write("base.config", &base.text)?;
            let add =
                config_input::additions(&config_input::merged(&base.text, &config.all_fragments()));
            let mut script = format!("set -e; mkdir -p {b}/out; cp {base_file} {b}/out/.config; ");
            if !frags.is_empty() {
                script.push_str(&merge(&frags));
            }
            if !add.is_empty() {
                script.push_str(&format!(
                    "{src}/scripts/config --file {b}/out/.config {}; ",
                    add.join(" ")
                ));
            }
            script.push_str(&format!("{make} olddefconfig"));
            (
                script,
                format!("configuring (from {})", base.name),
                Some(base.text.clone()),
            )
        }
    };
    make::run_in_root(sid_root, &script, log, &phase)?;
    report_config(config, before, &host_b.join("out/.config"));
    Ok(())
}

/// Says what the configuring step left out or changed: options of the repo's fragments that
/// did not stick, what the scenarios' needs changed in a developer's config, and
/// `--config-fragment` options missing from the final `.config`.
fn report_config(config: &ConfigInput, before: Option<String>, config_path: &Path) {
    let final_config = std::fs::read_to_string(config_path).unwrap_or_default();
    if config.debug {
        let unmet = unmet_options(DEBUG_FRAGMENT, &final_config);
        if !unmet.is_empty() {
            println!(
                "build: config: {} option(s) of debug.config did not stick: {}",
                unmet.len(),
                unmet.join(", ")
            );
        }
    }
    match before {
        None => report_unmet(config_path),
        Some(before) => {
            let changed = config_input::changed(&before, &final_config);
            if changed.is_empty() {
                println!("build: config: it has everything the scenarios need; nothing changed");
            } else {
                println!(
                    "build: config: set for the scenarios (scripts/config + olddefconfig): {}",
                    changed.join(", ")
                );
            }
        }
    }
    for f in &config.fragments {
        let miss = config_input::fragment_misses(f, &final_config);
        if !miss.is_empty() {
            println!(
                "build: config: warning: {}: not in the final .config (unknown to this kernel, \
                 or a dependency is off): {}",
                f.name,
                miss.join(", ")
            );
        }
    }
}

/// The stamp written once `out/.config` is configured; it holds the configuration's identity.
const CONFIGURED: &str = "CONFIGURED";

/// Whether `out/.config` of the build directory `b` was made from `identity`. The output
/// directory of a tree persists, and configuring again costs ~25 s of an incremental
/// rebuild; a change to a Kconfig file is still picked up (kbuild's syncconfig runs when
/// `.config` or any Kconfig is newer than `include/config/auto.conf`).
fn configured(b: &Path, identity: &str) -> bool {
    b.join("out/.config").is_file()
        && std::fs::read_to_string(b.join(CONFIGURED)).is_ok_and(|f| f == identity)
}

/// Records that `b/out/.config` was made from `identity`.
fn mark_configured(b: &Path, identity: &str) -> Result<()> {
    let stamp = b.join(CONFIGURED);
    std::fs::write(&stamp, identity).map_err(|e| Error::io(&stamp, e))
}

/// The LOCALVERSION of a build made from `config`.
fn localversion(config: &ConfigInput) -> &'static str {
    if config.debug {
        config_input::DEBUG_LOCALVERSION
    } else {
        LOCALVERSION
    }
}

/// The make command line of a build in `b` (inside the chroot). ccache's base directory is
/// the builds directory, so absolute paths under it hash as relative ones and builds of the
/// same source in different cache entries (A and B of an experiment) share ccache's results;
/// with debug info (`sid-debug`) the working directory is left out of the hash for the same
/// reason (`CCACHE_NOHASHDIR`: the paths in the DWARF are the build's own either way).
fn make_command(cc: &Compiler, src: &str, b: &str, id: &str, localversion: &str) -> String {
    format!(
        "CCACHE_BASEDIR={BUILDS_IN_ROOT} CCACHE_NOHASHDIR=1 make -C {src} O={b}/out -j{} \
         CC='ccache {cc}' HOSTCC={cc} LOCALVERSION={localversion} KBUILD_BUILD_USER=nicemu \
         KBUILD_BUILD_HOST=build-{}",
        super::make::jobs(),
        &id[..12],
        cc = cc.name,
    )
}

/// Prints the fragment's options that the kernel's Kconfig did not keep (a dependency
/// missing in this version), so a user sees why, e.g., a tracer is absent.
fn report_unmet(config_path: &Path) {
    let Ok(config) = std::fs::read_to_string(config_path) else {
        return;
    };
    let unmet = unmet_options(FRAGMENT, &config);
    if !unmet.is_empty() {
        println!(
            "build: config: {} option(s) of nicemu.config did not stick: {}",
            unmet.len(),
            unmet.join(", ")
        );
    }
}

/// The compiler the sid root's own kernel was built with (`gcc-16`), else `gcc`.
fn compiler_name(sid_root: &Path) -> String {
    nicemu_provision::sid_root::find_vmlinuz(sid_root)
        .last()
        .and_then(|v| {
            v.file_name()?
                .to_str()?
                .strip_prefix("vmlinuz-")
                .map(str::to_owned)
        })
        .and_then(|r| std::fs::read_to_string(sid_root.join(format!("boot/config-{r}"))).ok())
        .and_then(|c| make::compiler_package(&c))
        .unwrap_or_else(|| "gcc".into())
}

/// Installs the build tools and the compiler into the sid root; returns the compiler.
fn ensure_tools(sid_root: &Path) -> Result<Compiler> {
    let mut pkgs: Vec<String> = [
        "make",
        "bc",
        "bison",
        "flex",
        "libelf-dev",
        "libssl-dev",
        "ccache",
        "kmod",
        "cpio",
        "gcc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let name = compiler_name(sid_root);
    if name != "gcc" {
        pkgs.push(name.clone());
    }
    make::ensure_packages(sid_root, &pkgs)?;
    let out = nicemu_provision::cmd::stdout_ok(
        nicemu_provision::enter::in_root(sid_root).args([name.as_str(), "--version"]),
    )?;
    let version = out.lines().next().unwrap_or_default().trim().to_owned();
    Ok(Compiler { name, version })
}

/// Writes READY (the kernel release) once bzImage and the modules are in place; keeps the log.
fn finish(b: &Path, log: &Path) -> Result<()> {
    let rel_file = b.join("out/include/config/kernel.release");
    let release = std::fs::read_to_string(&rel_file).map_err(|e| Error::io(&rel_file, e))?;
    let _ = std::fs::copy(log, b.join("build.log"));
    let ready = b.join("READY");
    std::fs::write(&ready, release.trim()).map_err(|e| Error::io(&ready, e))
}

fn ready(b: &Path, stock: &GuestKernel, patches: &[Patch], log_dir: &Path) -> Option<GuestKernel> {
    let release = std::fs::read_to_string(b.join("READY"))
        .ok()?
        .trim()
        .to_owned();
    let image = b.join("out/arch/x86/boot/bzImage");
    let modules_dir = b.join("mods/lib/modules").join(&release);
    if !image.is_file() || !modules_dir.join("modules.dep").is_file() {
        return None;
    }
    let names: Vec<String> = patches.iter().map(Patch::name).collect();
    let what = if names.is_empty() {
        String::new()
    } else {
        format!(" + {}", names.join(" + "))
    };
    let run_log = log_dir.join("build.log");
    if !run_log.is_file() {
        let _ = std::fs::copy(b.join("build.log"), &run_log);
    }
    Some(GuestKernel {
        name: stock.name.clone(),
        label: format!("{} built {release}{what}", stock.name),
        image,
        modules_dir,
        release,
        built_modules: Vec::new(),
        build_log: Some(run_log),
        build_dir: Some(b.join("out")),
    })
}

/// A copy of `from` at `to` made of hard links (same filesystem), else a plain copy; GNU
/// patch replaces the files it changes, so the linked originals stay untouched.
fn link_copy(from: &Path, to: &Path) -> Result<()> {
    if output_ok(Command::new("cp").arg("-al").arg(from).arg(to)).is_ok() {
        return Ok(());
    }
    remove(to)?;
    output_ok(Command::new("cp").arg("-a").arg(from).arg(to))?;
    Ok(())
}

fn remove(d: &Path) -> Result<()> {
    if d.exists() {
        std::fs::remove_dir_all(d).map_err(|e| Error::io(d, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_has_what_the_scenarios_and_experiments_need() {
        for opt in [
            "CONFIG_IGB=m",
            "CONFIG_IXGBE=m",
            "CONFIG_VIRTIO_NET=m",
            "CONFIG_PCI_MSI=y",
            "CONFIG_PTP_1588_CLOCK=y",
            "CONFIG_NET_NS=y",
            "CONFIG_NET_SCH_PRIO=m",
            "CONFIG_NET_SCH_TBF=m",
            "CONFIG_NET_SCH_FQ_CODEL=m",
            "CONFIG_VLAN_8021Q=m",
            "CONFIG_BPF_SYSCALL=y",
            "CONFIG_XDP_SOCKETS=y",
            "CONFIG_FTRACE=y",
            "CONFIG_PREEMPT_TRACER=y",
            "CONFIG_IRQSOFF_TRACER=y",
            "CONFIG_TIMERLAT_TRACER=y",
            "CONFIG_OSNOISE_TRACER=y",
        ] {
            assert!(FRAGMENT.lines().any(|l| l == opt), "{opt} missing");
        }
    }

    #[test]
    fn options_the_kconfig_dropped_are_named() {
        let frag = "# c\nCONFIG_IGB=m\nCONFIG_PREEMPT_TRACER=y\nCONFIG_DRM=n\nCONFIG_SOUND=n\n";
        let config = "CONFIG_IGB=m\n# CONFIG_PREEMPT_TRACER is not set\nCONFIG_SOUND=y\n";
        assert_eq!(
            unmet_options(frag, config),
            ["CONFIG_PREEMPT_TRACER=y (got n)", "CONFIG_SOUND=n (got y)"]
        );
        assert!(unmet_options(FRAGMENT, FRAGMENT).is_empty());
    }

    #[test]
    fn a_directory_that_is_no_kernel_tree_is_one_line() {
        let d = std::env::temp_dir().join(format!("nicemu-notree-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let e = check_tree(&d).unwrap_err().to_string();
        assert!(
            e.contains("not a Linux kernel tree") && !e.contains('\n'),
            "{e}"
        );
        let e = check_tree(&d.join("missing")).unwrap_err().to_string();
        assert!(e.contains("--kernel-tree") && !e.contains('\n'), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_configuration_is_kept_only_when_made_from_the_same_fragment() {
        let b = std::env::temp_dir().join(format!("nicemu-configured-{}", std::process::id()));
        std::fs::create_dir_all(b.join("out")).unwrap();
        mark_configured(&b, FRAGMENT).unwrap();
        assert!(!configured(&b, FRAGMENT), "no .config yet");
        std::fs::write(b.join("out/.config"), "CONFIG_IGB=m\n").unwrap();
        assert!(configured(&b, FRAGMENT));
        assert!(
            !configured(&b, "CONFIG_IGB=y\n"),
            "made from another configuration"
        );
        let _ = std::fs::remove_dir_all(&b);
    }
}
