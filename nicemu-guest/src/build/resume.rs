// SPDX-License-Identifier: Apache-2.0
//! Resuming an interrupted kernel build safely. kbuild writes a target's `.NAME.cmd` file
//! only after the command that made `NAME` succeeded (scripts/Kbuild.include,
//! `cmd_and_savecmd` / `cmd_and_fixdep`), and rebuilds a target whose `.cmd` is missing or
//! names another command. One case slips through: a target that was being rewritten when the
//! build was killed (SIGKILL, power loss) keeps the previous build's `.cmd` with the same
//! command, and its fresh mtime makes it look up to date. Such a target is newer than its
//! `.cmd` file; a finished one never is. So a build that finds the `BUILDING` marker of an
//! interrupted predecessor first removes every target newer than its `.cmd`, and make redoes
//! exactly those.

use std::path::Path;
use std::time::SystemTime;

use crate::error::{Error, Result};

/// The marker a build writes before make starts and removes when it ends well.
const MARKER: &str = "BUILDING";

/// Marks `build_dir` as being built; if a previous build there was interrupted, first
/// removes the targets under `out` it may have left half-written. Returns how many.
pub fn begin(build_dir: &Path, out: &Path) -> Result<usize> {
    let marker = build_dir.join(MARKER);
    let removed = if marker.exists() {
        discard_partial_targets(out)?
    } else {
        0
    };
    std::fs::write(&marker, b"").map_err(|e| Error::io(&marker, e))?;
    Ok(removed)
}

/// Clears the marker after a build that ended well.
pub fn end(build_dir: &Path) -> Result<()> {
    let marker = build_dir.join(MARKER);
    match std::fs::remove_file(&marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&marker, e)),
        _ => Ok(()),
    }
}

/// Removes every file under `dir` that is newer than its kbuild `.NAME.cmd` file.
pub fn discard_partial_targets(dir: &Path) -> Result<usize> {
    let mut removed = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(target) = name
                .strip_prefix('.')
                .and_then(|n| n.strip_suffix(".cmd"))
                .filter(|t| !t.is_empty())
            else {
                continue;
            };
            let target = d.join(target);
            if newer(&target, &e.path()) {
                log::info!(
                    "resume: {} is newer than its .cmd: rebuilt",
                    target.display()
                );
                std::fs::remove_file(&target).map_err(|err| Error::io(&target, err))?;
                removed += 1;
            }
        }
    }
    Ok(removed)
}

fn newer(a: &Path, b: &Path) -> bool {
    let m = |p: &Path| -> Option<SystemTime> { std::fs::metadata(p).ok()?.modified().ok() };
    matches!((m(a), m(b)), (Some(x), Some(y)) if x > y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn touch(p: &Path, at: SystemTime) {
        std::fs::write(p, b"x").unwrap();
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    #[test]
    fn only_targets_newer_than_their_cmd_go_and_only_after_an_interruption() {
        let base = std::env::temp_dir().join(format!("nicemu-resume-{}", std::process::id()));
        let out = base.join("out");
        let sub = out.join("net/core");
        std::fs::create_dir_all(&sub).unwrap();
        let t0 = SystemTime::now() - Duration::from_secs(100);
        let later = t0 + Duration::from_secs(50);
        // Finished: object, then its .cmd.
        touch(&sub.join("sock.o"), t0);
        touch(&sub.join(".sock.o.cmd"), t0 + Duration::from_secs(1));
        // Killed while rewriting: the old .cmd, a fresh object.
        touch(&sub.join(".dev.o.cmd"), t0);
        touch(&sub.join("dev.o"), later);
        // First build killed: no .cmd at all (kbuild rebuilds it by itself).
        touch(&sub.join("skbuff.o"), later);

        assert_eq!(begin(&base, &out).unwrap(), 0, "no marker: nothing removed");
        assert!(sub.join("dev.o").exists());
        // The marker is still there: the next build resumes an interrupted one.
        assert_eq!(begin(&base, &out).unwrap(), 1);
        assert!(!sub.join("dev.o").exists());
        assert!(sub.join("sock.o").exists() && sub.join("skbuff.o").exists());
        end(&base).unwrap();
        assert!(!base.join(MARKER).exists());
        end(&base).unwrap();
        let _ = std::fs::remove_dir_all(&base);
    }
}
