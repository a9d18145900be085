// SPDX-License-Identifier: Apache-2.0
//! Checks of the CI templates (ci/templates/*.yml) and the composite action (action.yml): the
//! inputs a template passes exist, every input reaches `ci/nicemu-ci` through the environment
//! variable it reads, and the `nicemu-guest run` command `ci/nicemu-ci` composes from each
//! template's values — for a kernel tree, a patch series (`git format-patch BASE..HEAD` of a
//! real repository) and a driver directory — parses with the harness's real flags. The
//! engines' JSON schemas are checked by ci/check-ci-templates (ci/test).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;

use crate::cli::Cli;

const ACTION: &str = include_str!("../../action.yml");
const GITHUB: &str = include_str!("../../ci/templates/github-actions.yml");
const GITLAB: &str = include_str!("../../ci/templates/gitlab-ci.yml");
const SCRIPT: &str = include_str!("../../ci/nicemu-ci");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

/// `key: value` pairs.
type Entries = Vec<(String, String)>;

/// `key: value` entries of the block under the first line whose trimmed text starts with
/// `head` (after line `from`), at the block's own indent; `# key: value` lines there are
/// returned as commented alternatives.
fn block(yaml: &str, from: usize, head: &str) -> (Entries, Entries) {
    let lines: Vec<&str> = yaml.lines().collect();
    let Some(at) = (from..lines.len()).find(|&i| lines[i].trim_start().starts_with(head)) else {
        return (Vec::new(), Vec::new());
    };
    let base = indent(lines[at]);
    let (mut active, mut commented) = (Vec::new(), Vec::new());
    let mut own = None;
    for l in &lines[at + 1..] {
        if l.trim().is_empty() {
            continue;
        }
        if indent(l) <= base {
            break;
        }
        let own_indent = *own.get_or_insert(indent(l));
        if indent(l) != own_indent {
            continue;
        }
        let t = l.trim();
        let (t, list) = match t.strip_prefix("# ") {
            Some(c) => (c, &mut commented),
            None if t.starts_with('#') => continue,
            None => (t, &mut active),
        };
        if let Some((k, v)) = t.split_once(':').filter(|(k, _)| !k.contains(' ')) {
            let v = v.split(" #").next().unwrap_or("").trim();
            list.push((k.trim().to_owned(), v.trim_matches('"').to_owned()));
        }
    }
    (active, commented)
}

/// The action's inputs with their defaults.
fn action_inputs() -> BTreeMap<String, String> {
    let lines: Vec<&str> = ACTION.lines().collect();
    let start = lines.iter().position(|l| *l == "inputs:").unwrap();
    let mut inputs = BTreeMap::new();
    let mut current = None;
    for l in &lines[start + 1..] {
        if indent(l) == 0 && !l.trim().is_empty() {
            break;
        }
        if indent(l) == 2 {
            current = Some(l.trim().trim_end_matches(':').to_owned());
            inputs.insert(current.clone().unwrap(), String::new());
        } else if let (Some(c), Some(d)) = (&current, l.trim().strip_prefix("default:")) {
            inputs.insert(c.clone(), d.trim().trim_matches('\'').to_owned());
        }
    }
    inputs
}

/// `NICEMU_X` → input name, from the action's `env:` lines (`${{ … inputs.NAME … }}`: the
/// last input named).
fn action_env_map() -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for l in ACTION.lines() {
        let t = l.trim();
        let Some((var, expr)) = t.split_once(':') else {
            continue;
        };
        if !var.starts_with("NICEMU_") {
            continue;
        }
        if let Some(at) = expr.rfind("inputs.") {
            let name: String = expr[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            map.insert(var.to_owned(), name);
        }
    }
    map
}

/// A git repository with a base commit and one commit changing igb_main.c on top: what a
/// patch-series or driver repository looks like. Returns (dir, base revision).
fn user_repo(tag: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("nicemu-ci-tmpl-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let drv = dir.join("drivers/net/ethernet/intel/igb");
    std::fs::create_dir_all(&drv).unwrap();
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .arg("-C")
            .arg(&dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.org"])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    git(&["init", "-q"]);
    std::fs::write(
        drv.join("igb_main.c"),
        "int igb_probe(void) { return 0; }\n",
    )
    .unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    let base = git(&["rev-parse", "HEAD"]);
    std::fs::write(
        drv.join("igb_main.c"),
        "int igb_probe(void) { return 1; }\n",
    )
    .unwrap();
    git(&["commit", "-q", "-am", "igb: probe returns 1"]);
    (dir, base)
}

/// `ci/nicemu-ci print-run` in `cwd` with `env` (and nothing else of NICEMU_*): the words of
/// the command, nicemu-guest first; Err(stderr) when the script refuses.
fn print_run(cwd: &Path, env: &BTreeMap<String, String>) -> Result<Vec<String>, String> {
    let mut cmd = Command::new("bash");
    cmd.arg(repo().join("ci/nicemu-ci"))
        .arg("print-run")
        .current_dir(cwd);
    for (k, _) in std::env::vars() {
        if k.starts_with("NICEMU_") || k.starts_with("GITHUB_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("NICEMU_OUT", cwd.join("nicemu-out"));
    cmd.envs(env);
    let o = cmd.output().unwrap();
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    let mut words: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(words[0].ends_with("/release/nicemu-guest"), "{words:?}");
    words[0] = "nicemu-guest".into();
    Ok(words)
}

fn assert_real_command(what: &str, words: &[String]) {
    if let Err(e) = Cli::try_parse_from(words) {
        panic!("{what}: `{}` is not a valid command: {e}", words.join(" "));
    }
    let shard = words.windows(2).find(|w| w[0] == "--shard").unwrap();
    crate::matrix::Shard::parse(&shard[1]).unwrap();
}

/// Checks the command of each mode a template offers: its active values, then each commented
/// alternative (kernel-tree / patch-base / driver-dir) in place of the kernel tree.
fn check_modes(name: &str, env: BTreeMap<String, String>, alternatives: &[(String, String)]) {
    let (dir, base) = user_repo(name);
    let words = print_run(&dir, &env).unwrap();
    assert_real_command(name, &words);
    let tree = words.windows(2).find(|w| w[0] == "--kernel-tree").unwrap();
    assert_eq!(Path::new(&tree[1]), dir.canonicalize().unwrap());
    for (var, _) in alternatives {
        let mut env = env.clone();
        env.remove("NICEMU_KERNEL_TREE");
        match var.as_str() {
            "NICEMU_PATCH_BASE" => {
                env.insert(var.clone(), base.clone());
                let words = print_run(&dir, &env).unwrap();
                assert_real_command(name, &words);
                let patches: Vec<&String> = words
                    .windows(2)
                    .filter(|w| w[0] == "--patch")
                    .map(|w| &w[1])
                    .collect();
                assert_eq!(patches.len(), 1, "{name}: one commit, one patch: {words:?}");
                let text = std::fs::read_to_string(patches[0]).unwrap();
                assert!(
                    text.contains("+int igb_probe(void) { return 1; }"),
                    "{text}"
                );
                // No commits in BASE..HEAD: the script says so and exits 2.
                env.insert(var.clone(), "HEAD".into());
                let e = print_run(&dir, &env).unwrap_err();
                assert!(e.contains("no commits in HEAD..HEAD"), "{e}");
            }
            "NICEMU_DRIVER_DIR" => {
                env.insert(var.clone(), "drivers/net/ethernet/intel/igb".into());
                let words = print_run(&dir, &env).unwrap();
                assert_real_command(name, &words);
                assert!(words.iter().any(|w| w.ends_with("/intel/igb")), "{words:?}");
            }
            other => panic!("{name}: unexpected alternative {other}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_input_the_github_template_passes_reaches_nicemu_ci() {
    let inputs = action_inputs();
    for i in [
        "devices",
        "scenarios",
        "shard",
        "shards",
        "kernel-tree",
        "patch-base",
        "merge",
    ] {
        assert!(inputs.contains_key(i), "action.yml has no input {i}");
    }
    let map = action_env_map();
    for (var, input) in &map {
        assert!(
            inputs.contains_key(input),
            "{var} reads unknown input {input}"
        );
        assert!(
            SCRIPT.contains(var.as_str()),
            "ci/nicemu-ci never reads {var}"
        );
    }
    for input in inputs.keys() {
        assert!(
            map.values().any(|v| v == input),
            "input {input} reaches no NICEMU_* variable"
        );
    }
    let mut uses = 0;
    for (i, l) in GITHUB.lines().enumerate() {
        if !l.contains("uses: YOUR-ORG/nicemu@") {
            continue;
        }
        uses += 1;
        let (active, commented) = block(GITHUB, i, "with:");
        for (k, _) in active.iter().chain(&commented) {
            assert!(
                inputs.contains_key(k),
                "github-actions.yml passes unknown input {k}"
            );
        }
    }
    assert_eq!(uses, 2, "a run job and a merge job use the action");
}

#[test]
fn the_github_template_runs_real_commands_for_each_kind_of_repository() {
    let inputs = action_inputs();
    let map = action_env_map();
    let at = GITHUB
        .lines()
        .position(|l| l.contains("uses: YOUR-ORG/nicemu@"))
        .unwrap();
    let (active, commented) = block(GITHUB, at, "with:");
    let given: BTreeMap<String, String> = active
        .into_iter()
        .map(|(k, v)| (k, v.replace("${{ matrix.shard }}", "2")))
        .collect();
    let mut env = BTreeMap::new();
    for (var, input) in &map {
        let v = given
            .get(input)
            .or_else(|| inputs.get(input))
            .cloned()
            .unwrap_or_default();
        if !v.is_empty() && input != "merge" {
            env.insert(var.clone(), v);
        }
    }
    let alternatives: Vec<(String, String)> = commented
        .iter()
        .map(|(k, v)| {
            let var = map.iter().find(|(_, i)| *i == k).unwrap().0.clone();
            (var, v.clone())
        })
        .collect();
    assert_eq!(alternatives.len(), 2, "{alternatives:?}");
    check_modes("github", env, &alternatives);
}

#[test]
fn the_gitlab_template_runs_real_commands_for_each_kind_of_repository() {
    let (vars, commented) = block(GITLAB, 0, "variables:");
    let mut env: BTreeMap<String, String> = vars
        .into_iter()
        .filter(|(k, _)| k.starts_with("NICEMU_") && k != "NICEMU_SRC")
        .collect();
    // The guests job's own settings, as its script exports them.
    assert!(GITLAB.contains("export NICEMU_SHARD=$CI_NODE_INDEX NICEMU_SHARDS=$CI_NODE_TOTAL"));
    env.insert("NICEMU_SHARD".into(), "2".into());
    let dir_var = env.get_mut("NICEMU_KERNEL_TREE").unwrap();
    assert_eq!(dir_var, "$CI_PROJECT_DIR");
    *dir_var = ".".into();
    assert!(GITLAB.contains("parallel: 2") && env["NICEMU_SHARDS"] == "2");
    check_modes("gitlab", env, &commented);
    for job in ["nicemu-build", "nicemu-guests", "nicemu-report"] {
        assert!(GITLAB.contains(&format!("\n{job}:\n")), "no job {job}");
    }
    // One JUnit report per pipeline: only the merge job reports one.
    assert_eq!(GITLAB.matches("junit:").count(), 1);
}

#[test]
fn a_wrong_flag_in_the_extra_arguments_is_caught() {
    let (dir, _) = user_repo("bad");
    let env: BTreeMap<String, String> = [
        ("NICEMU_DEVICES", "nicemu-igb"),
        ("NICEMU_ARGS", "--shards 1/4"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let words = print_run(&dir, &env).unwrap();
    Cli::try_parse_from(&words).unwrap_err();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs ci/guest-matrix as a user (a fake `id -u` of 1000) with only `tools` on PATH (each a
/// do-nothing executable; bash and dirname are the host's), HOME a fresh directory, a complete
/// sid root in its cache when `provisioned`; returns the exit code and stderr.
fn guest_matrix_as_user(tag: &str, tools: &[&str], provisioned: bool) -> (Option<i32>, String) {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let dir = std::env::temp_dir().join(format!("nicemu-gm-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for host in ["bash", "dirname"] {
        let p = nicemu_provision::cmd::on_path(host).expect(host);
        symlink(p, bin.join(host)).unwrap();
    }
    let fake = |name: &str, body: &str| {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    fake("id", "echo 1000");
    for t in tools {
        fake(t, "exit 0");
    }
    let home = dir.join("home");
    if provisioned {
        let qemu = home.join(".cache/nicemu/sid-root/usr/bin/qemu-system-x86_64");
        std::fs::create_dir_all(qemu.parent().unwrap()).unwrap();
        std::fs::write(&qemu, "").unwrap();
        std::fs::set_permissions(&qemu, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(repo().join("ci/guest-matrix"))
        .env_clear()
        .env("PATH", &bin)
        .env("HOME", &home)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn guest_matrix_names_missing_rootless_tools_before_building() {
    let (code, err) = guest_matrix_as_user("none", &[], false);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("needs bubblewrap mmdebstrap uidmap: as root, apt-get install bubblewrap mmdebstrap uidmap"),
        "{err}"
    );
    assert!(!err.contains("cargo"), "stopped before the build: {err}");
    // A provisioned cache needs only bwrap to enter it.
    let (code, err) = guest_matrix_as_user("entered", &[], true);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("needs bubblewrap:"), "{err}");
    // Everything there: the check passes and the script goes on to cargo (absent here).
    for (tag, tools, provisioned) in [
        ("all", &["bwrap", "mmdebstrap", "newuidmap"][..], false),
        ("bwrap", &["bwrap"][..], true),
    ] {
        let (code, err) = guest_matrix_as_user(tag, tools, provisioned);
        assert_ne!(code, Some(2), "{tag}: {err}");
        assert!(
            err.contains("cargo: command not found") && !err.contains("apt-get install"),
            "{tag}: {err}"
        );
    }
}
