// SPDX-License-Identifier: Apache-2.0
//! A developer's kernel tree as the build sees it: its source files mirrored into the build
//! directory (`tree-KEY/src`), so the tree itself is only read — never written, never mounted,
//! whether it holds a `.config` or objects of an in-place build (kbuild refuses an `O=` build
//! from a source tree that has them), as root or rootless.
//!
//! The files are git's view of the work tree when it is one (tracked files plus untracked ones
//! `.gitignore` does not exclude: the kernel's ignores every build output), else every file
//! but the build outputs kbuild writes. A sync copies only files whose size or mtime changed,
//! keeping the mtime, and removes files that left the tree, so make stays incremental. A tree
//! in the middle of a rebase or merge, or with conflict markers in a file it would build, is
//! refused with one line (a git tree before anything starts, through `git grep`; any tree
//! when a sync is about to copy a changed file that has them).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use crate::error::{Error, Result};

/// What one sync did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Synced {
    /// Files copied (new or changed).
    pub copied: usize,
    /// Mirror files removed (gone from the tree).
    pub removed: usize,
    /// Files already equal.
    pub unchanged: usize,
}

/// True if `dir` is the top of a git work tree.
fn is_git(dir: &Path) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--show-toplevel"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            Path::new(String::from_utf8_lossy(&o.stdout).trim())
                .canonicalize()
                .ok()
        })
        .is_some_and(|top| dir.canonicalize().is_ok_and(|d| d == top))
}

fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| Error::io("git", e))?;
    if !out.status.success() {
        return Err(Error::Usage(format!(
            "--kernel-tree {}: git {} failed: {}",
            dir.display(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(out.stdout)
}

/// Refuses a git tree in the middle of a rebase, merge or cherry-pick, or with unmerged
/// paths or conflict markers (`<<<<<<< ` and `>>>>>>> ` at line starts) in its files.
pub fn check_state(dir: &Path) -> Result<()> {
    if !is_git(dir) {
        return Ok(());
    }
    let git_dir = String::from_utf8_lossy(&git(dir, &["rev-parse", "--absolute-git-dir"])?)
        .trim()
        .to_owned();
    let git_dir = PathBuf::from(git_dir);
    for (what, path) in [
        ("a rebase", "rebase-merge"),
        ("a rebase", "rebase-apply"),
        ("a merge", "MERGE_HEAD"),
        ("a cherry-pick", "CHERRY_PICK_HEAD"),
        ("a revert", "REVERT_HEAD"),
    ] {
        if git_dir.join(path).exists() {
            return Err(Error::Usage(format!(
                "--kernel-tree {}: the tree is in the middle of {what} ({}); finish or abort it first",
                dir.display(),
                git_dir.join(path).display()
            )));
        }
    }
    let unmerged = git(dir, &["ls-files", "-u", "-z"])?;
    if let Some(first) = unmerged.split(|b| *b == 0).find(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(first);
        let file = entry.split('\t').nth(1).unwrap_or(&entry).to_owned();
        return Err(Error::Usage(format!(
            "--kernel-tree {}: {file} has unresolved merge conflicts; resolve them first",
            dir.display()
        )));
    }
    // Files holding both kinds of marker line; git grep reads the work tree.
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["grep", "-I", "-l", "--untracked", "--all-match"])
        .args(["-e", "^<<<<<<< ", "-e", "^>>>>>>> ", "--", "."])
        .output()
        .map_err(|e| Error::io("git grep", e))?;
    let files = String::from_utf8_lossy(&out.stdout);
    if let Some(f) = files.lines().next() {
        return Err(Error::Usage(format!(
            "--kernel-tree {}: {f} has conflict markers (<<<<<<< / >>>>>>>); resolve them first",
            dir.display()
        )));
    }
    Ok(())
}

/// The source files of the tree, relative to it.
pub fn source_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if is_git(dir) {
        let out = git(
            dir,
            &[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
        )?;
        let mut v: Vec<PathBuf> = out
            .split(|b| *b == 0)
            .filter(|e| !e.is_empty())
            .map(|e| PathBuf::from(String::from_utf8_lossy(e).into_owned()))
            .filter(|p| dir.join(p).symlink_metadata().is_ok())
            .collect();
        v.sort();
        v.dedup();
        return Ok(v);
    }
    let mut v = Vec::new();
    walk(dir, Path::new(""), &mut v)?;
    v.sort();
    Ok(v)
}

/// A path kbuild writes in an in-place build (never part of the source).
fn build_output(rel: &Path) -> bool {
    let s = rel.to_string_lossy();
    let name = rel
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    s == ".config"
        || s.starts_with(".config.")
        || s.starts_with("include/config")
        || s.starts_with("include/generated")
        || (s.starts_with("arch/") && s.contains("/include/generated"))
        || name.starts_with(".tmp")
        || (name.starts_with('.') && name.ends_with(".cmd"))
        || [
            ".o", ".ko", ".mod", ".mod.c", ".a", ".order", ".symvers", ".d",
        ]
        .iter()
        .any(|ext| name.ends_with(ext))
        || ["vmlinux", "vmlinux.a", "System.map", "bzImage", ".git"].contains(&name.as_ref())
}

fn walk(top: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let here = top.join(rel);
    for e in std::fs::read_dir(&here).map_err(|e| Error::io(&here, e))? {
        let e = e.map_err(|e| Error::io(&here, e))?;
        let r = rel.join(e.file_name());
        if build_output(&r) {
            continue;
        }
        let ft = e.file_type().map_err(|er| Error::io(e.path(), er))?;
        if ft.is_dir() {
            walk(top, &r, out)?;
        } else {
            out.push(r);
        }
    }
    Ok(())
}

/// Makes `mirror` hold exactly `files` of `dir`: copies new or changed ones (size or mtime),
/// keeping their mtime and mode, and removes what is no longer there.
pub fn sync(dir: &Path, mirror: &Path, files: &[PathBuf]) -> Result<Synced> {
    let mut done = Synced::default();
    let want: BTreeSet<&Path> = files.iter().map(PathBuf::as_path).collect();
    for rel in files {
        let from = dir.join(rel);
        let to = mirror.join(rel);
        let meta = from.symlink_metadata().map_err(|e| Error::io(&from, e))?;
        if same(&from, &meta, &to) {
            done.unchanged += 1;
            continue;
        }
        if meta.is_file() {
            refuse_conflicts(dir, rel, &from)?;
        }
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let _ = std::fs::remove_file(&to);
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&from).map_err(|e| Error::io(&from, e))?;
            std::os::unix::fs::symlink(target, &to).map_err(|e| Error::io(&to, e))?;
        } else {
            std::fs::copy(&from, &to).map_err(|e| Error::io(&to, e))?;
            let mtime = meta.modified().map_err(|e| Error::io(&from, e))?;
            let f = std::fs::File::options()
                .write(true)
                .open(&to)
                .map_err(|e| Error::io(&to, e))?;
            f.set_modified(mtime).map_err(|e| Error::io(&to, e))?;
        }
        done.copied += 1;
    }
    let mut have = Vec::new();
    if mirror.is_dir() {
        walk_all(mirror, Path::new(""), &mut have)?;
    }
    for rel in have {
        if !want.contains(rel.as_path()) {
            let p = mirror.join(&rel);
            std::fs::remove_file(&p).map_err(|e| Error::io(&p, e))?;
            done.removed += 1;
        }
    }
    Ok(done)
}

/// Refuses a file about to be copied that holds conflict markers: a line starting
/// `<<<<<<< ` and one starting `>>>>>>> ` (binary files, with a NUL in their first 8 KiB as
/// git decides, are skipped). This is the check a tree without git gets (`check_state` runs
/// `git grep` on a git tree); it reads only files a sync copies, i.e. the changed ones.
fn refuse_conflicts(dir: &Path, rel: &Path, from: &Path) -> Result<()> {
    let text = std::fs::read(from).map_err(|e| Error::io(from, e))?;
    if has_conflict_markers(&text) {
        return Err(Error::Usage(format!(
            "--kernel-tree {}: {} has conflict markers (<<<<<<< / >>>>>>>); resolve them first",
            dir.display(),
            rel.display()
        )));
    }
    Ok(())
}

/// Whether `text` (not binary) has both a `<<<<<<< ` and a `>>>>>>> ` line.
fn has_conflict_markers(text: &[u8]) -> bool {
    if text[..text.len().min(8192)].contains(&0) {
        return false;
    }
    let mut lines = text.split(|b| *b == b'\n');
    let (mut open, mut close) = (false, false);
    for l in &mut lines {
        open |= l.starts_with(b"<<<<<<< ");
        close |= l.starts_with(b">>>>>>> ");
        if open && close {
            return true;
        }
    }
    false
}

/// True if `to` already has `meta`'s size and mtime (symlinks: the same target).
fn same(from: &Path, meta: &std::fs::Metadata, to: &Path) -> bool {
    let Ok(t) = to.symlink_metadata() else {
        return false;
    };
    if meta.file_type().is_symlink() || t.file_type().is_symlink() {
        return meta.file_type().is_symlink()
            && t.file_type().is_symlink()
            && std::fs::read_link(from).ok() == std::fs::read_link(to).ok();
    }
    let m = |x: &std::fs::Metadata| x.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    t.len() == meta.len() && m(&t) == m(meta)
}

fn walk_all(top: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let here = top.join(rel);
    for e in std::fs::read_dir(&here).map_err(|e| Error::io(&here, e))? {
        let e = e.map_err(|e| Error::io(&here, e))?;
        let r = rel.join(e.file_name());
        if e.file_type()
            .map_err(|er| Error::io(e.path(), er))?
            .is_dir()
        {
            walk_all(top, &r, out)?;
        } else {
            out.push(r);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nicemu-mirror-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn git_in(dir: &Path, args: &[&str]) {
        let st = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .output()
            .unwrap();
        assert!(st.status.success(), "git {args:?}: {st:?}");
    }

    #[test]
    fn a_sync_copies_only_what_changed_and_drops_what_left() {
        let t = tmp("sync");
        let (dir, mirror) = (t.join("tree"), t.join("mirror"));
        std::fs::create_dir_all(dir.join("drivers/igb")).unwrap();
        std::fs::write(dir.join("Makefile"), "VERSION = 7\n").unwrap();
        std::fs::write(dir.join("drivers/igb/igb_main.c"), "int a;\n").unwrap();
        std::fs::write(dir.join(".config"), "CONFIG_IGB=m\n").unwrap();
        std::fs::write(dir.join("drivers/igb/igb_main.o"), "obj").unwrap();
        let files = source_files(&dir).unwrap();
        assert_eq!(
            files,
            [
                PathBuf::from("Makefile"),
                PathBuf::from("drivers/igb/igb_main.c")
            ],
            "the in-place build's .config and objects are not source"
        );
        let s = sync(&dir, &mirror, &files).unwrap();
        assert_eq!((s.copied, s.removed, s.unchanged), (2, 0, 0));
        let mtime = |p: &Path| p.metadata().unwrap().modified().unwrap();
        assert_eq!(
            mtime(&mirror.join("Makefile")),
            mtime(&dir.join("Makefile"))
        );
        let s = sync(&dir, &mirror, &files).unwrap();
        assert_eq!(
            (s.copied, s.unchanged),
            (0, 2),
            "nothing changed: nothing copied"
        );
        std::fs::write(dir.join("drivers/igb/igb_main.c"), "int ab;\n").unwrap();
        std::fs::remove_file(dir.join("Makefile")).unwrap();
        let files = source_files(&dir).unwrap();
        let s = sync(&dir, &mirror, &files).unwrap();
        assert_eq!((s.copied, s.removed, s.unchanged), (1, 1, 0));
        assert_eq!(
            std::fs::read_to_string(mirror.join("drivers/igb/igb_main.c")).unwrap(),
            "int ab;\n"
        );
        assert!(!mirror.join("Makefile").exists());
        let _ = std::fs::remove_dir_all(&t);
    }

    /// Every entry under `dir` with its size, mtime and content hash.
    fn snapshot(dir: &Path) -> Vec<(PathBuf, u64, SystemTime, String)> {
        let mut files = Vec::new();
        walk_all(dir, Path::new(""), &mut files).unwrap();
        files.sort();
        files
            .into_iter()
            .map(|f| {
                let p = dir.join(&f);
                let m = p.symlink_metadata().unwrap();
                let bytes = std::fs::read(&p).unwrap_or_default();
                let hash = crate::build::store::key(&[&bytes], 16);
                (f, m.len(), m.modified().unwrap(), hash)
            })
            .collect()
    }

    #[test]
    fn the_tree_is_only_read() {
        let t = tmp("readonly");
        let (dir, mirror) = (t.join("tree"), t.join("mirror"));
        std::fs::create_dir_all(dir.join("include/config")).unwrap();
        std::fs::write(dir.join("Makefile"), "VERSION = 7\n").unwrap();
        std::fs::write(dir.join(".config"), "CONFIG_IGB=m\n").unwrap();
        std::fs::write(dir.join("include/config/auto.conf"), "CONFIG_IGB=m\n").unwrap();
        std::fs::write(dir.join("a.c"), "int a;\n").unwrap();
        std::fs::write(dir.join("a.o"), "obj").unwrap();
        std::os::unix::fs::symlink("a.c", dir.join("link.c")).unwrap();
        git_in(&dir, &["init", "-q"]);
        git_in(&dir, &["add", "Makefile", "a.c", "link.c"]);
        git_in(&dir, &["commit", "-q", "-m", "base"]);
        let before = snapshot(&dir);
        check_state(&dir).unwrap();
        let files = source_files(&dir).unwrap();
        sync(&dir, &mirror, &files).unwrap();
        // Whatever the build then does happens in the mirror.
        std::fs::write(mirror.join("a.c"), "int b;\n").unwrap();
        sync(&dir, &mirror, &files).unwrap();
        assert_eq!(snapshot(&dir), before, "the tree changed");
        assert_eq!(
            std::fs::read_to_string(mirror.join("a.c")).unwrap(),
            "int a;\n"
        );
        assert_eq!(
            std::fs::read_link(mirror.join("link.c")).unwrap(),
            Path::new("a.c")
        );
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn git_trees_list_tracked_and_untracked_files_but_not_ignored_ones() {
        let t = tmp("git");
        std::fs::write(t.join(".gitignore"), "*.o\n.config\n").unwrap();
        std::fs::write(t.join("a.c"), "int a;\n").unwrap();
        git_in(&t, &["init", "-q"]);
        git_in(&t, &["add", "."]);
        git_in(&t, &["commit", "-q", "-m", "base"]);
        std::fs::write(t.join("new.c"), "int n;\n").unwrap();
        std::fs::write(t.join("a.o"), "obj").unwrap();
        std::fs::write(t.join(".config"), "CONFIG_X=y\n").unwrap();
        let files = source_files(&t).unwrap();
        assert_eq!(
            files,
            [PathBuf::from(".gitignore"), "a.c".into(), "new.c".into()]
        );
        check_state(&t).unwrap();
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn a_tree_mid_rebase_or_with_conflict_markers_is_refused_in_one_line() {
        let t = tmp("conflict");
        std::fs::write(t.join("a.c"), "int a;\n").unwrap();
        git_in(&t, &["init", "-q", "-b", "main"]);
        git_in(&t, &["add", "."]);
        git_in(&t, &["commit", "-q", "-m", "base"]);
        git_in(&t, &["checkout", "-q", "-b", "side"]);
        std::fs::write(t.join("a.c"), "int side;\n").unwrap();
        git_in(&t, &["commit", "-q", "-am", "side"]);
        git_in(&t, &["checkout", "-q", "main"]);
        std::fs::write(t.join("a.c"), "int main_;\n").unwrap();
        git_in(&t, &["commit", "-q", "-am", "main"]);
        // A rebase that stops on the conflict.
        let st = Command::new("git")
            .arg("-C")
            .arg(&t)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(["rebase", "side"])
            .output()
            .unwrap();
        assert!(!st.status.success());
        let e = check_state(&t).unwrap_err().to_string();
        assert!(e.contains("middle of a rebase") && !e.contains('\n'), "{e}");
        git_in(&t, &["rebase", "--abort"]);
        check_state(&t).unwrap();
        // Markers left in a committed file.
        std::fs::write(
            t.join("b.c"),
            "<<<<<<< HEAD\nint x;\n=======\nint y;\n>>>>>>> side\n",
        )
        .unwrap();
        let e = check_state(&t).unwrap_err().to_string();
        assert!(
            e.contains("b.c has conflict markers") && !e.contains('\n'),
            "{e}"
        );
        // A lone `=======` (an rst underline) is no conflict.
        std::fs::write(t.join("b.c"), "Title\n=======\n").unwrap();
        check_state(&t).unwrap();
        let _ = std::fs::remove_dir_all(&t);
    }

    /// A tree that is no git work tree has no `git grep`: a file the sync is about to copy
    /// (new or changed, so every file on the first build and only what changed later) is
    /// checked for conflict markers, and the build is refused in one line before it is
    /// copied, so a later sync checks it again.
    #[test]
    fn a_plain_tree_with_conflict_markers_in_a_changed_file_is_refused_in_one_line() {
        let t = tmp("plain-conflict");
        let (dir, mirror) = (t.join("tree"), t.join("mirror"));
        std::fs::create_dir_all(dir.join("drivers/igb")).unwrap();
        std::fs::write(dir.join("Makefile"), "VERSION = 7\n").unwrap();
        std::fs::write(dir.join("drivers/igb/igb_main.c"), "int a;\n").unwrap();
        std::fs::write(dir.join("README.rst"), "Title\n=======\n").unwrap();
        check_state(&dir).unwrap();
        sync(&dir, &mirror, &source_files(&dir).unwrap()).unwrap();
        let conflicted = "int a;\n<<<<<<< HEAD\nint x;\n=======\nint y;\n>>>>>>> side\n";
        std::fs::write(dir.join("drivers/igb/igb_main.c"), conflicted).unwrap();
        for _ in 0..2 {
            let e = sync(&dir, &mirror, &source_files(&dir).unwrap())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("drivers/igb/igb_main.c has conflict markers") && !e.contains('\n'),
                "{e}"
            );
            assert_eq!(
                std::fs::read_to_string(mirror.join("drivers/igb/igb_main.c")).unwrap(),
                "int a;\n"
            );
        }
        std::fs::write(dir.join("drivers/igb/igb_main.c"), "int b;\n").unwrap();
        let done = sync(&dir, &mirror, &source_files(&dir).unwrap()).unwrap();
        assert_eq!(done.copied, 1);
        let _ = std::fs::remove_dir_all(&t);
    }
}
