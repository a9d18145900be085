// SPDX-License-Identifier: Apache-2.0
//! Patches given with `--patch`: which files they touch (unified diff headers, `-p1`), and
//! applying them with GNU `patch` — first a dry run of the whole series on a scratch copy's
//! files, so a patch that does not apply leaves nothing half-applied, and a failure names the
//! patch, the file and the hunk.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// One patch file, read once (its bytes key the build cache).
#[derive(Debug, Clone)]
pub struct Patch {
    /// Where the user's patch is.
    pub path: PathBuf,
    /// Its contents.
    pub text: String,
    /// Tree-relative paths it changes (`-p1`), in order of appearance, without duplicates.
    pub files: Vec<String>,
}

impl Patch {
    /// Reads and parses `path`; a file with no diff in it is a one-line error.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!("--patch {}: cannot read it: {e}", path.display()))
        })?;
        let files = touched_files(&text);
        if files.is_empty() {
            return Err(Error::Usage(format!(
                "--patch {}: no unified diff in it (expected ---/+++ headers)",
                path.display()
            )));
        }
        // `patch -d TREE` resolves a relative -i against TREE: keep the absolute path.
        let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        Ok(Patch { path, text, files })
    }

    /// The file name, for messages and labels.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string())
    }
}

/// Paths a unified diff changes, with the first component (`a/`, `b/`) stripped.
pub fn touched_files(text: &str) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    let mut minus: Option<String> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("--- ") {
            minus = strip_p1(rest);
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            // A deleted file has `+++ /dev/null`: the `---` side names it.
            if let Some(f) = strip_p1(rest).or_else(|| minus.take()) {
                if !files.contains(&f) {
                    files.push(f);
                }
            }
        }
    }
    files
}

fn strip_p1(header: &str) -> Option<String> {
    let path = header.split('\t').next()?.trim();
    if path == "/dev/null" {
        return None;
    }
    let (_, rest) = path.split_once('/')?;
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// Applies `patches` in order to the tree at `root` (`patch -p1`). Every patch is first
/// checked with `--dry-run` against the tree as the previous ones leave it; on a failure the
/// tree may hold the earlier patches, so callers apply into a scratch copy they discard.
pub fn apply_all(root: &Path, patches: &[Patch], tree_name: &str) -> Result<()> {
    for p in patches {
        run_patch(root, p, true, tree_name)?;
        run_patch(root, p, false, tree_name)?;
    }
    Ok(())
}

fn run_patch(root: &Path, p: &Patch, dry: bool, tree_name: &str) -> Result<()> {
    let mut c = Command::new("patch");
    c.args([
        "-p1",
        "--batch",
        "--forward",
        "--no-backup-if-mismatch",
        "-r",
        "-",
    ])
    .arg("-d")
    .arg(root)
    .arg("-i")
    .arg(&p.path);
    if dry {
        c.arg("--dry-run");
    }
    let out = c.output().map_err(|e| Error::Command {
        cmd: nicemu_provision::cmd::display(&c),
        detail: e.to_string(),
    })?;
    if out.status.success() {
        return Ok(());
    }
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Err(Error::Build(format!(
        "patch {} does not apply to {tree_name}: {}",
        p.path.display(),
        failure_reason(&text)
    )))
}

/// Turns GNU patch's output into "FILE: hunk #N (at line L) failed" (or its own words).
pub fn failure_reason(output: &str) -> String {
    let mut file = String::new();
    let mut failed: Vec<String> = Vec::new();
    for line in output.lines() {
        let line = line.trim();
        if let Some(f) = line
            .strip_prefix("checking file ")
            .or_else(|| line.strip_prefix("patching file "))
        {
            file = f.trim_matches(|c| c == '\'' || c == '"').to_owned();
        } else if let Some(rest) = line.strip_prefix("Hunk #") {
            if let Some((n, tail)) = rest.split_once(" FAILED") {
                let at = tail
                    .trim()
                    .strip_prefix("at ")
                    .map(|l| format!(" (at line {})", l.trim_end_matches('.')))
                    .unwrap_or_default();
                failed.push(format!("{file}: hunk #{n}{at} failed"));
            }
        } else if line.starts_with("can't find file to patch") {
            return "a file it changes does not exist in this tree".into();
        } else if line.starts_with("Reversed (or previously applied) patch detected") {
            return format!("{file}: already applied (or reversed)");
        }
    }
    if failed.is_empty() {
        output
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("patch failed")
            .trim()
            .to_owned()
    } else {
        failed.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_from_headers_strip_one_component() {
        let d = "intro\n--- a/drivers/x/a.c\t2026-01-01\n+++ b/drivers/x/a.c\t2026-01-01\n@@ -1 +1 @@\n\
                 --- a/old.c\n+++ /dev/null\n--- /dev/null\n+++ b/new.h\n\
                 --- a/drivers/x/a.c\n+++ b/drivers/x/a.c\n";
        assert_eq!(touched_files(d), ["drivers/x/a.c", "old.c", "new.h"]);
        assert!(touched_files("just text\n").is_empty());
    }

    #[test]
    fn failure_names_file_and_hunk() {
        let out = "checking file drivers/net/ethernet/intel/igb/igb.h\n\
                   checking file drivers/net/ethernet/intel/igb/igb_main.c\n\
                   Hunk #2 FAILED at 2215.\n1 out of 5 hunks FAILED\n";
        assert_eq!(
            failure_reason(out),
            "drivers/net/ethernet/intel/igb/igb_main.c: hunk #2 (at line 2215) failed"
        );
        assert!(
            failure_reason("can't find file to patch at input line 3\n").contains("does not exist")
        );
        assert_eq!(failure_reason("odd\n"), "odd");
    }

    #[test]
    fn a_patch_that_does_not_apply_leaves_the_tree_unchanged() {
        let dir = std::env::temp_dir().join(format!("nicemu-patch-{}", std::process::id()));
        let tree = dir.join("t");
        std::fs::create_dir_all(tree.join("d")).unwrap();
        std::fs::write(tree.join("d/f.c"), "one\ntwo\nthree\n").unwrap();
        let good = dir.join("good.patch");
        std::fs::write(
            &good,
            "--- a/d/f.c\n+++ b/d/f.c\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
        )
        .unwrap();
        let bad = dir.join("bad.patch");
        std::fs::write(
            &bad,
            "--- a/d/f.c\n+++ b/d/f.c\n@@ -1,3 +1,3 @@\n one\n-zwei\n+ZWEI\n three\n",
        )
        .unwrap();
        let bad_p = Patch::read(&bad).unwrap();
        let e = apply_all(&tree, &[bad_p], "Linux 0.0")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad.patch") && e.contains("d/f.c: hunk #1"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(tree.join("d/f.c")).unwrap(),
            "one\ntwo\nthree\n"
        );
        apply_all(&tree, &[Patch::read(&good).unwrap()], "Linux 0.0").unwrap();
        assert_eq!(
            std::fs::read_to_string(tree.join("d/f.c")).unwrap(),
            "one\nTWO\nthree\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
