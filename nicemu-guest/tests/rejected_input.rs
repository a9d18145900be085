// SPDX-License-Identifier: Apache-2.0
//! Bad command-line input to `nicemu-guest run` is refused before anything starts: exit 2,
//! one line naming the argument, its value and what would be accepted, and nothing made —
//! no cache, no provisioning, no run directory.
//!
//! The cache (`NICEMU_CACHE`) points below a regular file, so if the harness got as far as
//! provisioning it would fail there with a message about the cache instead, and could not
//! create anything.
#![allow(clippy::unwrap_used, reason = "tests: a step that fails panics")]

use std::path::PathBuf;
use std::process::Command;

struct Attempt {
    code: Option<i32>,
    stderr: String,
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "nicemu-guest-rejected-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("not-a-dir"), b"").unwrap();
    d
}

fn run(name: &str, args: &[&str]) -> Attempt {
    let d = scratch(name);
    let out = Command::new(env!("CARGO_BIN_EXE_nicemu-guest"))
        .arg("run")
        .args(args)
        .env("NICEMU_CACHE", d.join("not-a-dir/cache"))
        .output()
        .unwrap();
    let left: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["not-a-dir"], "{name}: files were made");
    std::fs::remove_dir_all(&d).unwrap();
    Attempt {
        code: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Exit 2 with one line on stderr that holds every one of `words`.
fn refused(name: &str, args: &[&str], words: &[&str]) {
    let a = run(name, args);
    assert_eq!(a.code, Some(2), "{name}: {}", a.stderr);
    let lines: Vec<&str> = a.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{name}: {}", a.stderr);
    for w in words {
        assert!(lines[0].contains(w), "{name}: no {w:?} in {}", lines[0]);
    }
}

#[test]
fn a_parameter_that_does_not_parse_names_its_range() {
    let t = std::time::Instant::now();
    refused(
        "param",
        &[
            "--device",
            "nicemu-igb",
            "--scenario",
            "netperf",
            "--param",
            "netperf.duration=abc",
        ],
        &["netperf.duration=abc", "an integer from 1 to 3600"],
    );
    // Refused at once, not after a guest started (the issue: a ten-minute run).
    assert!(
        t.elapsed() < std::time::Duration::from_secs(1),
        "{:?}",
        t.elapsed()
    );
    refused(
        "param-range",
        &["--device", "nicemu-virtio", "--param", "virtio.queues=99"],
        &["virtio.queues=99", "from 1 to 16"],
    );
}

#[test]
fn missing_paths_are_refused_before_provisioning() {
    refused(
        "tree",
        &[
            "--device",
            "nicemu-igb",
            "--kernel-tree",
            "/nonexistent/linux",
        ],
        &["--kernel-tree", "/nonexistent/linux"],
    );
    refused(
        "driver-dir",
        &["--device", "nicemu-igb", "--driver-dir", "/nonexistent/igb"],
        &["--driver-dir", "/nonexistent/igb"],
    );
    refused(
        "bzimage",
        &[
            "--device",
            "nicemu-igb",
            "--kernel",
            "/nonexistent/bzImage",
            "--modules",
            "/nonexistent/m",
        ],
        &["/nonexistent/bzImage"],
    );
    refused(
        "json",
        &[
            "--device",
            "nicemu-igb",
            "--json",
            "/nonexistent/dir/r.json",
        ],
        &["--json", "/nonexistent/dir"],
    );
    for flag in ["--html", "--junit"] {
        refused(
            &flag[2..],
            &["--device", "nicemu-igb", flag, "/nonexistent/dir/r"],
            &[flag, "/nonexistent/dir", "its directory does not exist"],
        );
    }
    refused(
        "config",
        &["--device", "nicemu-igb", "--config", "/nonexistent/.config"],
        &["--config", "/nonexistent/.config"],
    );
    refused(
        "config-fragment",
        &[
            "--device",
            "nicemu-igb",
            "--config-fragment",
            "/nonexistent/x.config",
        ],
        &["--config-fragment", "/nonexistent/x.config"],
    );
    refused(
        "patch",
        &["--device", "nicemu-igb", "--patch", "/nonexistent.patch"],
        &["--patch", "/nonexistent.patch"],
    );
    refused(
        "nicemu",
        &["--device", "nicemu-igb", "--nicemu", "/nonexistent/nicemu"],
        &["--nicemu", "/nonexistent/nicemu"],
    );
}

#[test]
fn a_malformed_splat_ignore_list_names_its_file_and_line() {
    let d = std::env::temp_dir().join(format!("nicemu-guest-ignore-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let bad = d.join("ignore.toml");
    std::fs::write(
        &bad,
        "# a comment\n[[ignore]]\nkind = \"warning\"\nreason = \"x\"\n\n[[ignore]]\nkind = \"warnings\"\nreason = \"y\"\n",
    )
    .unwrap();
    let bad_s = bad.to_str().unwrap();
    refused(
        "splat-ignore",
        &["--device", "nicemu-igb", "--splat-ignore", bad_s],
        &[&format!("{bad_s}:7: unknown variant `warnings`")],
    );
    refused(
        "splat-ignore-missing",
        &[
            "--device",
            "nicemu-igb",
            "--splat-ignore",
            "/nonexistent/ignore.toml",
        ],
        &["/nonexistent/ignore.toml"],
    );
    std::fs::remove_dir_all(&d).unwrap();
}
