// SPDX-License-Identifier: Apache-2.0
//! Small helpers for running external commands with errors that name the command.

use std::process::{Command, Output};

use crate::error::{Error, Result};

/// Renders a command for messages (program and arguments, space separated).
pub fn display(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    if s.len() > 200 {
        s.truncate(200);
        s.push('…');
    }
    s
}

/// Runs `cmd` to completion, capturing output; a non-zero exit is an error with stderr's tail.
pub fn output_ok(cmd: &mut Command) -> Result<Output> {
    let out = cmd.output().map_err(|e| Error::Command {
        cmd: display(cmd),
        detail: e.to_string(),
    })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::Command {
            cmd: display(cmd),
            detail: format!("{} {}", out.status, tail.join(" | ")),
        });
    }
    Ok(out)
}

/// Runs `cmd` and returns its stdout as text, failing on a non-zero exit.
pub fn stdout_ok(cmd: &mut Command) -> Result<String> {
    let out = output_ok(cmd)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// True if `name` is an executable found on PATH.
pub fn on_path(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// True if `p` is a regular file with an execute bit.
pub fn is_executable(p: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// True when running as root (effective uid 0).
pub fn is_root() -> bool {
    // Reading /proc avoids an unsafe libc call.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
