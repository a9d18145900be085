// SPDX-License-Identifier: Apache-2.0
//! Finding nicemu's TCG plugin: `libnicemu_tcg_plugin.so` next to this executable (where
//! `cargo build` of the workspace puts it), else built with cargo when this executable
//! is in a cargo target directory of the nicemu workspace.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// The plugin's file name.
pub const FILE: &str = "libnicemu_tcg_plugin.so";

/// The workspace root of a cargo target directory `dir` (`ROOT/target/PROFILE`), when
/// it is the nicemu workspace.
fn workspace_of(dir: &Path) -> Option<PathBuf> {
    let root = dir.parent()?.parent()?;
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).ok()?;
    manifest
        .contains("\"nicemu-tcg-plugin\"")
        .then(|| root.to_path_buf())
}

/// The plugin next to the executable in `dir`, built there first when missing and
/// `dir` is a cargo target directory of the nicemu workspace.
pub fn find_in(dir: &Path) -> Result<PathBuf> {
    let so = dir.join(FILE);
    if so.is_file() {
        return Ok(so);
    }
    let missing = || {
        Error::Prerequisite(format!(
            "nicemu's TCG plugin {FILE} is not next to nicemu-guest in {} (build it with \
             `cargo build --release -p nicemu-tcg-plugin`, or count nothing: --param cost=0)",
            dir.display()
        ))
    };
    let root = workspace_of(dir).ok_or_else(missing)?;
    let mut cmd = Command::new("cargo");
    cmd.current_dir(&root)
        .args(["build", "-p", "nicemu-tcg-plugin"]);
    if dir.file_name().is_some_and(|p| p == "release") {
        cmd.arg("--release");
    }
    println!(
        "cost: building the TCG plugin ({})",
        nicemu_provision::cmd::display(&cmd)
    );
    nicemu_provision::cmd::output_ok(&mut cmd)?;
    so.is_file().then_some(so).ok_or_else(missing)
}

/// The plugin for this executable.
pub fn find() -> Result<PathBuf> {
    let exe = std::env::current_exe().map_err(|e| Error::io("current executable", e))?;
    find_in(exe.parent().unwrap_or(Path::new(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_outside_the_workspace_says_how_to_get_the_plugin() {
        let dir = std::env::temp_dir().join(format!("nicemu-plugin-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = find_in(&dir).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            e.contains("cargo build --release -p nicemu-tcg-plugin"),
            "{e}"
        );
        assert!(e.contains("--param cost=0"), "{e}");
    }

    #[test]
    fn the_workspace_is_recognised_from_its_target_directory() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let target = here.join("target").join("release");
        assert_eq!(workspace_of(&target).as_deref(), Some(here));
        assert_eq!(workspace_of(Path::new("/usr/bin")), None);
    }
}
