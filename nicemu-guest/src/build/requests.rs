// SPDX-License-Identifier: Apache-2.0
//! What `run` asks of each kernel of the matrix: the patches, driver directories and
//! configuration (`--patch`, `--patch-a/-b`, `--driver-dir`, `--config`,
//! `--config-fragment`, a `--kernel-tree`'s own `.config`), read and checked before anything
//! starts.

use std::path::{Path, PathBuf};

use crate::build::config_input::{self, ConfigInput};
use crate::build::{patch::Patch, tree_mirror, whole_kernel, KernelRequest};
use crate::cli::RunArgs;
use crate::error::Result;
use crate::image::guest_kernel::KernelSpec;
use crate::matrix::Matrix;

/// The kernels of `matrix` with the changes `args` ask for (`--patch`, `--patch-a/-b`,
/// `--driver-dir`, `--driver-dir-a/-b`), each patch read once.
pub fn kernel_requests(args: &RunArgs, matrix: &Matrix) -> Result<Vec<KernelRequest>> {
    let read = |v: &[PathBuf]| v.iter().map(|p| Patch::read(p)).collect::<Result<Vec<_>>>();
    let common = read(&args.patches)?;
    let sides = [
        (read(&args.patches_a)?, &args.driver_dirs_a),
        (read(&args.patches_b)?, &args.driver_dirs_b),
    ];
    let ab = args.kernel_a.is_some();
    let config = config_inputs(args)?;
    matrix
        .kernels
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let mut r = KernelRequest::plain(spec.clone());
            r.patches = common.clone();
            r.driver_dirs = args.driver_dirs.clone();
            if let Some((p, d)) = sides.get(i).filter(|_| ab) {
                r.patches.extend(p.iter().cloned());
                r.driver_dirs.extend(d.iter().cloned());
            }
            r.config = config.clone();
            if let KernelSpec::Tree(dir) = spec {
                tree_config(dir, &mut r.config)?;
            }
            Ok(r)
        })
        .collect()
}

/// `--config` and `--config-fragment`, read and checked before anything starts.
fn config_inputs(args: &RunArgs) -> Result<ConfigInput> {
    Ok(ConfigInput {
        base: args
            .config
            .as_deref()
            .map(|p| config_input::read(p, "--config"))
            .transpose()?,
        fragments: args
            .config_fragments
            .iter()
            .map(|p| config_input::read(p, "--config-fragment"))
            .collect::<Result<_>>()?,
        debug: false,
    })
}

/// A kernel tree is checked before anything starts (a kernel tree, not mid-rebase, no
/// conflict markers); its own `.config` is the base unless `--config` gave one.
fn tree_config(dir: &Path, config: &mut ConfigInput) -> Result<()> {
    let dir = whole_kernel::check_tree(dir)?;
    tree_mirror::check_state(&dir)?;
    let own = dir.join(".config");
    if config.base.is_none() && own.is_file() {
        config.base = Some(config_input::read(&own, "--kernel-tree")?);
    }
    Ok(())
}
