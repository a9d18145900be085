// SPDX-License-Identifier: Apache-2.0
//! Running long build steps inside the sid root: the full output goes to a log file, the
//! terminal gets the phase and the elapsed time every so often, and a failure reports the
//! compiler's first error lines and the log's path. Also the build packages (headers,
//! kbuild, the compiler a build tree names, ccache) installed into the sid root once.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use nicemu_provision::cmd::stdout_ok;

/// How often a running step prints its progress line.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);
/// ccache's directory inside the sid root.
pub const CCACHE_DIR: &str = "/var/cache/nicemu-ccache";

/// Runs `sh -c script` chrooted into `sid_root`, appending its output to `log`; prints
/// `build: PHASE: N s` while it runs. Returns the elapsed time.
pub fn run_in_root(sid_root: &Path, script: &str, log: &Path, phase: &str) -> Result<Duration> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::io(log, e))?;
    let _ = writeln!(file, "### {phase}\n### {script}");
    let log_start = file.metadata().map_or(0, |m| m.len());
    let err = file.try_clone().map_err(|e| Error::io(log, e))?;
    let mut cmd = nicemu_provision::enter::in_root(sid_root);
    cmd.args(["sh", "-c", script])
        .env("CCACHE_DIR", CCACHE_DIR)
        .env("CCACHE_MAXSIZE", "8G")
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        // Its own process group, so an interrupted run stops make and every compiler it
        // started, not only the shell.
        .process_group(0);
    // objtool and kbuild read /proc: hold the shared bind mounts for the whole step.
    let _mounts = nicemu_provision::mounts::BindMounts::new(sid_root)?;
    let started = Instant::now();
    println!("build: {phase} (log {})", log.display());
    let mut child = cmd.spawn().map_err(|e| Error::Command {
        cmd: nicemu_provision::cmd::display(&cmd),
        detail: e.to_string(),
    })?;
    let mut next = PROGRESS_EVERY;
    let status = loop {
        if let Some(st) = child.try_wait().map_err(|e| Error::io(log, e))? {
            break st;
        }
        if nicemu_provision::signals::interrupted() {
            kill_group(&mut child);
            return Err(Error::Interrupted);
        }
        if started.elapsed() >= next {
            println!(
                "build: {phase}: {} s{}",
                started.elapsed().as_secs(),
                progress_note(log, log_start)
            );
            next += PROGRESS_EVERY;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let took = started.elapsed();
    if status.success() {
        println!("build: {phase}: done in {:.0} s", took.as_secs_f64());
        return Ok(took);
    }
    let text = std::fs::read_to_string(log).unwrap_or_default();
    Err(Error::Build(format!(
        "build failed ({phase}, {status}):\n{}\nfull log: {}",
        first_errors(&text, 6).join("\n"),
        log.display()
    )))
}

/// ", N files compiled" for the kbuild `CC`/`AS` lines the step has logged since `from`.
fn progress_note(log: &Path, from: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut text = String::new();
    let read = std::fs::File::open(log).and_then(|mut f| {
        f.seek(SeekFrom::Start(from))?;
        f.read_to_string(&mut text)
    });
    match read.map(|_| compiled_count(&text)) {
        Ok(1) => ", 1 file compiled".to_owned(),
        Ok(n) if n > 1 => format!(", {n} files compiled"),
        _ => String::new(),
    }
}

/// The number of kbuild quiet-mode compile lines (`  CC      net/core/dev.o`, `  CC [M]
/// …`, `  AS      …`) in `text`.
pub fn compiled_count(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            let t = l.trim_start();
            l.len() > t.len() && (t.starts_with("CC ") || t.starts_with("AS "))
        })
        .count()
}

/// How long an interrupted build's processes get after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);

/// Ends the build's whole process group (make's children too) and reaps its leader.
/// SIGTERM first: make then deletes the target it was writing ("Deleting file") and gcc
/// its output, so no half-written object stays behind with a fresh mtime; SIGKILL follows
/// for whatever still runs after [`TERM_GRACE`].
fn kill_group(child: &mut std::process::Child) {
    let Ok(pgid) = i32::try_from(child.id()) else {
        let _ = child.kill();
        let _ = child.wait();
        return;
    };
    signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + TERM_GRACE;
    while Instant::now() < deadline && group_alive(pgid) {
        let _ = child.try_wait();
        std::thread::sleep(Duration::from_millis(100));
    }
    signal_group(pgid, libc::SIGKILL);
    let _ = child.kill();
    let _ = child.wait();
}

fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: kill(2) with a negative pid signals that process group; no memory is
    // involved, and the group is the one this child leads (process_group(0)).
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// True while any process of group `pgid` exists (kill with signal 0 only checks).
fn group_alive(pgid: i32) -> bool {
    // SAFETY: as in signal_group; signal 0 delivers nothing.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// The first `n` compiler/linker error lines of a build log (with the "In function" line
/// before the first one); the log's last lines if none matches.
pub fn first_errors(log: &str, n: usize) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let is_err = |l: &str| {
        l.contains(": error:")
            || l.contains(": fatal error:")
            || l.contains("undefined reference")
            || (l.starts_with("ERROR:") && l.contains("modpost"))
    };
    let Some(first) = lines.iter().position(|l| is_err(l)) else {
        return lines
            .iter()
            .rev()
            .take(n)
            .rev()
            .map(|l| format!("  {l}"))
            .collect();
    };
    let mut out = Vec::new();
    if first > 0 && lines[first - 1].contains("In function") {
        out.push(format!("  {}", lines[first - 1]));
    }
    out.extend(
        lines[first..]
            .iter()
            .filter(|l| is_err(l))
            .take(n)
            .map(|l| format!("  {l}")),
    );
    out
}

/// Installs `packages` into the sid root unless dpkg already has them all.
pub fn ensure_packages(sid_root: &Path, packages: &[String]) -> Result<()> {
    let missing: Vec<&str> = packages
        .iter()
        .map(String::as_str)
        .filter(|p| !installed(sid_root, p))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Ok(nicemu_provision::sid_root::install_packages(
        sid_root, &missing,
    )?)
}

fn installed(sid_root: &Path, pkg: &str) -> bool {
    stdout_ok(nicemu_provision::enter::in_root(sid_root).args([
        "dpkg-query",
        "-W",
        "-f=${Status}",
        pkg,
    ]))
    .is_ok_and(|s| s.contains("install ok installed"))
}

/// The compiler package a Debian kernel config names (`CONFIG_CC_VERSION_TEXT=
/// "x86_64-linux-gnu-gcc-16 (Debian 16.2.0-4) 16.2.0"` → `gcc-16`).
pub fn compiler_package(config: &str) -> Option<String> {
    let text = config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_CC_VERSION_TEXT="))?
        .trim_matches('"');
    let prog = text.split_whitespace().next()?;
    let name = prog.rsplit('/').next()?;
    let gcc = name.find("gcc-").map(|i| &name[i..])?;
    Some(gcc.to_owned())
}

/// Parallel jobs for make: the host's CPUs.
pub fn jobs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_from_config() {
        let c = "CONFIG_X=y\nCONFIG_CC_VERSION_TEXT=\"x86_64-linux-gnu-gcc-16 (Debian 16.2.0-4) 16.2.0\"\n";
        assert_eq!(compiler_package(c).as_deref(), Some("gcc-16"));
        assert_eq!(
            compiler_package("CONFIG_CC_VERSION_TEXT=\"clang 19\"\n"),
            None
        );
    }

    #[test]
    fn compile_lines_are_counted() {
        let log = "### compiling\n  CC      init/main.o\n  CC [M]  drivers/net/ethernet/intel/igb/igb_main.o\n\
                   \x20 AS      arch/x86/entry/entry_64.o\n  LD      vmlinux.o\nCC not indented\n";
        assert_eq!(compiled_count(log), 3);
    }

    #[test]
    fn first_errors_skip_warnings() {
        let log = "  CC [M]  igb_main.o\nigb_main.c: In function 'igb_down':\n\
                   igb_main.c:12:2: error: 'x' undeclared\nigb_main.c:13:1: warning: y\n\
                   igb_main.c:20:2: error: expected ';'\nmake[2]: *** Error 1\n";
        let e = first_errors(log, 6);
        assert_eq!(e.len(), 3);
        assert!(e[0].contains("In function") && e[1].contains("'x' undeclared"));
        assert!(e[2].contains("expected ';'"));
        assert_eq!(first_errors("a\nb\n", 1), ["  b"]);
    }
}
