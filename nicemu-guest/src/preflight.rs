// SPDX-License-Identifier: Apache-2.0
//! The paths a run is given, checked before anything is provisioned or a run directory is
//! made: a kernel tree, a bzImage and its modules, driver directories, the nicemu binary
//! and where the `--json`/`--html`/`--junit` copies go. A bad one is a usage error (exit 2)
//! naming the argument and the path. Patches and matrix files are read, and so checked,
//! when the run's plan is made, which is before this.

use std::path::Path;

use crate::cli::{Outputs, RunArgs};
use crate::error::{Error, Result};
use crate::image::guest_kernel::KernelSpec;
use crate::matrix::Matrix;

/// Checks every path of `args` and of the kernels of `matrix`.
pub fn check_paths(args: &RunArgs, matrix: &Matrix) -> Result<()> {
    for k in &matrix.kernels {
        match k {
            KernelSpec::Tree(dir) => {
                crate::build::whole_kernel::check_tree(dir)?;
            }
            KernelSpec::Custom { kernel, modules } => {
                file("--kernel", kernel)?;
                dir("--modules", modules)?;
            }
            _ => {}
        }
    }
    for (flag, dirs) in [
        ("--driver-dir", &args.driver_dirs),
        ("--driver-dir-a", &args.driver_dirs_a),
        ("--driver-dir-b", &args.driver_dirs_b),
    ] {
        for d in dirs {
            dir(flag, d)?;
        }
    }
    if let Some(n) = &args.guest.nicemu {
        file("--nicemu", n)?;
    }
    outputs(&args.out)
}

/// The `--json`, `--html` and `--junit` files: each in a directory that exists, and not
/// a directory itself.
pub fn outputs(out: &Outputs) -> Result<()> {
    for (flag, f) in [
        ("--json", &out.json),
        ("--html", &out.html),
        ("--junit", &out.junit),
    ] {
        let Some(f) = f else { continue };
        if f.is_dir() {
            return Err(usage(flag, f, "is a directory; give a file name"));
        }
        let parent = f.parent().filter(|p| !p.as_os_str().is_empty());
        if parent.is_some_and(|p| !p.is_dir()) {
            return Err(usage(flag, f, "its directory does not exist"));
        }
    }
    Ok(())
}

fn file(flag: &str, p: &Path) -> Result<()> {
    if p.is_file() {
        Ok(())
    } else if p.exists() {
        Err(usage(flag, p, "is not a file"))
    } else {
        Err(usage(flag, p, "does not exist"))
    }
}

fn dir(flag: &str, p: &Path) -> Result<()> {
    if p.is_dir() {
        Ok(())
    } else if p.exists() {
        Err(usage(flag, p, "is not a directory"))
    } else {
        Err(usage(flag, p, "does not exist"))
    }
}

fn usage(flag: &str, p: &Path, what: &str) -> Error {
    Error::Usage(format!("{flag} {}: {what}", p.display()))
}
