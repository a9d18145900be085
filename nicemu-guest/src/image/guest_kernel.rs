// SPDX-License-Identifier: Apache-2.0
//! The guest kernel: which bzImage and which modules directory.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use nicemu_provision::debian_kernel;

/// Kernel names accepted besides a path.
pub const NAMES: &[&str] = &[
    "sid",
    "trixie",
    "trixie-rt",
    "sid-built",
    "trixie-built",
    "trixie-rt-built",
    "sid-debug",
    "trixie-debug",
];

/// How the user named a guest kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSpec {
    /// Debian sid's kernel from the sid root (`sid`, the default).
    Sid,
    /// A Debian kernel fetched by name (`trixie`, `trixie-rt`).
    Debian(String),
    /// The whole kernel built from a Debian kernel's own source (`sid-built`,
    /// `trixie-built`): x86_64 defconfig + the repo's config fragment.
    Built(String),
    /// The whole kernel built from a Debian kernel's own source with the repo's debug
    /// fragment on top (`sid-debug`): lockdep, atomic-sleep checks, KASAN, kmemleak, UBSAN
    /// (`nicemu-guest/kernel/debug.config`).
    Debug(String),
    /// A developer's kernel tree, built out of tree in the cache (`tree:DIR`).
    Tree(PathBuf),
    /// A user's own bzImage plus its `lib/modules/KVER` directory.
    Custom {
        /// The bzImage.
        kernel: PathBuf,
        /// The modules directory (`.../lib/modules/KVER`, holding modules.dep).
        modules: PathBuf,
    },
}

impl KernelSpec {
    /// Builds a spec from a `--kernel` value and `--modules` (used by paths only).
    pub fn from_args(kernel: &str, modules: Option<&Path>) -> Result<Self> {
        match kernel {
            "sid" => Ok(KernelSpec::Sid),
            k if k.strip_prefix("tree:").is_some() => Ok(KernelSpec::Tree(PathBuf::from(&k[5..]))),
            k if k
                .strip_suffix("-built")
                .is_some_and(|b| b == "sid" || debian_kernel::flavour(b).is_some()) =>
            {
                Ok(KernelSpec::Built(k.trim_end_matches("-built").to_owned()))
            }
            k if k
                .strip_suffix("-debug")
                .is_some_and(|b| b == "sid" || debian_kernel::flavour(b).is_some()) =>
            {
                Ok(KernelSpec::Debug(k.trim_end_matches("-debug").to_owned()))
            }
            k if debian_kernel::flavour(k).is_some() => Ok(KernelSpec::Debian(k.to_owned())),
            k if !k.contains('/') && !Path::new(k).exists() => Err(Error::Usage(format!(
                "unknown kernel {k:?} (names: {}; or a bzImage path with --modules DIR)",
                NAMES.join(", ")
            ))),
            k => match modules {
                Some(m) => Ok(KernelSpec::Custom {
                    kernel: PathBuf::from(k),
                    modules: m.to_path_buf(),
                }),
                None => Err(Error::Usage(format!(
                    "--kernel {k} needs --modules DIR (the lib/modules/KVER directory of \
                     `make modules_install INSTALL_MOD_PATH=DIR`)"
                ))),
            },
        }
    }

    /// Short name for reports and matching ("sid", "trixie", "bzImage").
    pub fn name(&self) -> String {
        match self {
            KernelSpec::Sid => "sid".into(),
            KernelSpec::Debian(n) => n.clone(),
            KernelSpec::Built(n) => format!("{n}-built"),
            KernelSpec::Debug(n) => format!("{n}-debug"),
            KernelSpec::Tree(dir) => format!(
                "tree:{}",
                dir.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| dir.display().to_string())
            ),
            KernelSpec::Custom { kernel, .. } => kernel
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| kernel.display().to_string()),
        }
    }
}

/// A resolved guest kernel.
#[derive(Debug, Clone)]
pub struct GuestKernel {
    /// Short name ("sid", "trixie-rt", or the bzImage file name).
    pub name: String,
    /// Label for reports ("sid 7.2.13+deb14-amd64").
    pub label: String,
    /// Host path of the bzImage.
    pub image: PathBuf,
    /// Host path of `lib/modules/KVER`.
    pub modules_dir: PathBuf,
    /// Kernel release string (KVER).
    pub release: String,
    /// Modules built by the harness that replace the stock ones of the same name.
    pub built_modules: Vec<BuiltModule>,
    /// The log of the build that made this kernel or its modules, if one ran.
    pub build_log: Option<PathBuf>,
    /// Host path of the `O=` directory of a kernel the harness built (its modules are
    /// built against it); `None` for a kernel as provisioned.
    pub build_dir: Option<PathBuf>,
}

/// A module the harness built (from `--patch` or `--driver-dir`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltModule {
    /// Module name ("igb").
    pub name: String,
    /// Host path of the built `.ko`.
    pub ko: PathBuf,
    /// The `MODULE_VERSION` the harness stamped in; the guest reads it back from
    /// `/sys/module/NAME/version`.
    pub stamp: String,
}

/// Resolves `spec` to files on the host (fetching named Debian kernels when needed).
pub fn resolve(spec: &KernelSpec, sid_root: &Path) -> Result<GuestKernel> {
    match spec {
        KernelSpec::Sid => {
            let images = nicemu_provision::sid_root::find_vmlinuz(sid_root);
            let image = images.last().cloned().ok_or_else(|| {
                Error::Kernel(format!("no boot/vmlinuz-* in {}", sid_root.display()))
            })?;
            let release = image
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix("vmlinuz-"))
                .unwrap_or_default()
                .to_owned();
            let modules_dir = sid_root.join("lib/modules").join(&release);
            check_modules_dir(&modules_dir)?;
            Ok(GuestKernel {
                name: spec.name(),
                label: format!("sid {release}"),
                image,
                modules_dir,
                release,
                built_modules: Vec::new(),
                build_log: None,
                build_dir: None,
            })
        }
        KernelSpec::Debian(name) => {
            let f = debian_kernel::flavour(name)
                .ok_or_else(|| Error::Usage(format!("unknown kernel {name:?}")))?;
            let u = debian_kernel::ensure(sid_root, f)?;
            check_modules_dir(&u.modules_dir)?;
            Ok(GuestKernel {
                name: spec.name(),
                label: format!("{name} {}", u.release),
                image: u.image,
                modules_dir: u.modules_dir,
                release: u.release,
                built_modules: Vec::new(),
                build_log: None,
                build_dir: None,
            })
        }
        KernelSpec::Custom { kernel, modules } => {
            if !kernel.is_file() {
                return Err(Error::Kernel(format!("{} is not a file", kernel.display())));
            }
            check_modules_dir(modules)?;
            let release = modules
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(GuestKernel {
                name: spec.name(),
                label: format!("{} ({release})", kernel.display()),
                image: kernel.clone(),
                modules_dir: modules.clone(),
                release,
                built_modules: Vec::new(),
                build_log: None,
                build_dir: None,
            })
        }
        KernelSpec::Built(_) | KernelSpec::Debug(_) | KernelSpec::Tree(_) => {
            Err(Error::Kernel(format!(
                "{} is built, not fetched (crate::build::resolve builds it)",
                spec.name()
            )))
        }
    }
}

fn check_modules_dir(dir: &Path) -> Result<()> {
    if dir.join("modules.dep").is_file() {
        Ok(())
    } else {
        Err(Error::Kernel(format!(
            "{} has no modules.dep (run depmod for that kernel)",
            dir.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        assert_eq!(KernelSpec::from_args("sid", None).unwrap(), KernelSpec::Sid);
        assert_eq!(
            KernelSpec::from_args("trixie-rt", None).unwrap().name(),
            "trixie-rt"
        );
        KernelSpec::from_args("bookworm", None).unwrap_err();
        KernelSpec::from_args("/boot/bzImage", None).unwrap_err();
        let k = KernelSpec::from_args("/x/bzImage", Some(Path::new("/m/7.0"))).unwrap();
        assert_eq!(k.name(), "bzImage");
        assert_eq!(
            KernelSpec::from_args("sid-built", None).unwrap(),
            KernelSpec::Built("sid".into())
        );
        assert_eq!(
            KernelSpec::from_args("trixie-rt-built", None).unwrap(),
            KernelSpec::Built("trixie-rt".into())
        );
        KernelSpec::from_args("bookworm-built", None).unwrap_err();
        let d = KernelSpec::from_args("sid-debug", None).unwrap();
        assert_eq!(
            (d.clone(), d.name()),
            (KernelSpec::Debug("sid".into()), "sid-debug".into())
        );
        KernelSpec::from_args("bookworm-debug", None).unwrap_err();
        assert_eq!(
            KernelSpec::from_args("tree:/src/linux", None)
                .unwrap()
                .name(),
            "tree:linux"
        );
    }
}
