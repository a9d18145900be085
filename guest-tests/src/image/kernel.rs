//! The guest kernel: which bzImage and which modules directory.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// How the user named the guest kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSpec {
    /// Debian sid's kernel from the sid root (`--kernel sid`, the default).
    Sid,
    /// A user's own bzImage plus its `lib/modules/KVER` directory.
    Custom {
        /// The bzImage.
        kernel: PathBuf,
        /// The modules directory (`.../lib/modules/KVER`, holding modules.dep).
        modules: PathBuf,
    },
}

impl KernelSpec {
    /// Builds a spec from `--kernel` and `--modules`.
    pub fn from_args(kernel: &str, modules: Option<&Path>) -> Result<Self> {
        match (kernel, modules) {
            ("sid", None) => Ok(KernelSpec::Sid),
            ("sid", Some(_)) => Err(Error::Usage(
                "--modules is only used with --kernel PATH".into(),
            )),
            (k, Some(m)) => Ok(KernelSpec::Custom {
                kernel: PathBuf::from(k),
                modules: m.to_path_buf(),
            }),
            (k, None) => Err(Error::Usage(format!(
                "--kernel {k} needs --modules DIR (the lib/modules/KVER directory)"
            ))),
        }
    }
}

/// A resolved guest kernel.
#[derive(Debug, Clone)]
pub struct GuestKernel {
    /// Short name for reports ("sid 7.2.13+deb14-amd64").
    pub label: String,
    /// Host path of the bzImage.
    pub image: PathBuf,
    /// Host path of `lib/modules/KVER`.
    pub modules_dir: PathBuf,
    /// Kernel release string (KVER).
    pub release: String,
}

/// Resolves `spec` to files on the host.
pub fn resolve(spec: &KernelSpec, sid_root: &Path) -> Result<GuestKernel> {
    match spec {
        KernelSpec::Sid => {
            let images = crate::provision::sid_root::find_vmlinuz(sid_root);
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
                label: format!("sid {release}"),
                image,
                modules_dir,
                release,
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
                label: format!("{} ({release})", kernel.display()),
                image: kernel.clone(),
                modules_dir: modules.clone(),
                release,
            })
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
