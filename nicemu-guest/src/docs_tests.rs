// SPDX-License-Identifier: Apache-2.0
//! Checks of what the repository ships for other tools (the CI templates: ci_templates_tests):
//! the libvirt
//! domain example is well-formed XML whose `<qemu:commandline>` is what `qemu-args` prints, and
//! the user docs (README.md, nicemu-guest/README.md, the book in docs/) stay within 200 README
//! lines and 120-column prose, with `nicemu-guest` commands that parse (naming patches that
//! exist).

use std::path::Path;

use clap::Parser;

use crate::cli::{Cli, QemuArgsArgs, QemuArgsFormat};
use crate::vm::device::Topology;

const LIBVIRT: &str = include_str!("../examples/libvirt-nicemu-igb.xml");
const GUEST_README: &str = include_str!("../README.md");

/// The `nicemu-guest …` lines (also written `target/release/nicemu-guest …`) of a Markdown
/// file's `sh` code blocks, trailing `# comments` dropped, split into words (the docs'
/// examples use no quoting).
fn readme_commands(md: &str) -> Vec<Vec<String>> {
    let mut in_sh = false;
    let mut out = Vec::new();
    for l in md.lines() {
        let t = l.trim_start();
        if t.starts_with("```") {
            in_sh = !in_sh && t == "```sh";
            continue;
        }
        let t = t.strip_prefix("target/release/").unwrap_or(t);
        if in_sh && t.starts_with("nicemu-guest ") {
            let code = t.split(" #").next().unwrap_or(t);
            out.push(code.split_whitespace().map(str::to_owned).collect());
        }
    }
    out
}

/// The repository's user documentation: README.md, nicemu-guest/README.md and every page of
/// the book under docs/src, as (path relative to the repository, text).
fn user_docs() -> Vec<(String, String)> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut paths = vec![
        "README.md".to_owned(),
        "CHANGELOG.md".to_owned(),
        "nicemu-guest/README.md".to_owned(),
    ];
    let mut dirs = vec![repo.join("docs/src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("docs/src") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "md") {
                let rel = p.strip_prefix(&repo).expect("under the repository");
                paths.push(rel.to_string_lossy().into_owned());
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(repo.join(&p)).expect("readable docs");
            (p, text)
        })
        .collect()
}

/// Lines of prose (outside code blocks and tables) longer than `max` characters, as
/// "line number: length".
fn long_prose_lines(md: &str, max: usize) -> Vec<String> {
    let mut in_code = false;
    let mut out = Vec::new();
    for (i, l) in md.lines().enumerate() {
        let t = l.trim_start();
        if t.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        let len = l.chars().count();
        if !in_code && !t.starts_with('|') && len > max {
            out.push(format!("{}: {len}", i + 1));
        }
    }
    out
}

#[test]
fn the_docs_nicemu_guest_commands_are_real_commands() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut total = 0;
    for (path, md) in user_docs() {
        let cmds = readme_commands(&md);
        total += cmds.len();
        for c in &cmds {
            if let Err(e) = Cli::try_parse_from(c) {
                panic!("{path}: `{}` is not a valid command: {e}", c.join(" "));
            }
            for w in c.windows(2) {
                if w[0].starts_with("--patch") && !w[1].starts_with("my-") {
                    assert!(repo.join(&w[1]).is_file(), "{path}: {} {}", w[0], w[1]);
                }
            }
        }
    }
    let guest = readme_commands(GUEST_README);
    assert!(guest.len() >= 8, "nicemu-guest/README.md: {guest:?}");
    assert!(total >= 20, "{total} commands in the docs");
    let bad = "```sh\nnicemu-guest run --kernel-trees /x   # typo\n```\n";
    Cli::try_parse_from(&readme_commands(bad)[0]).unwrap_err();
    let bad = "```sh\ntarget/release/nicemu-guest run --kernel-trees /x\n```\n";
    Cli::try_parse_from(&readme_commands(bad)[0]).unwrap_err();
}

#[test]
fn the_readme_is_short_and_prose_lines_fit_120_columns() {
    let docs = user_docs();
    let readme = &docs
        .iter()
        .find(|(p, _)| p == "README.md")
        .expect("README")
        .1;
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines (at most 200)");
    for (path, md) in &docs {
        let long = long_prose_lines(md, 120);
        assert!(
            long.is_empty(),
            "{path}: prose lines over 120 characters: {long:?}"
        );
    }
    let md = "```\n{}\n```\n| {} |\n{}\n";
    let long = "x".repeat(121);
    let md = md.replace("{}", &long);
    assert_eq!(long_prose_lines(&md, 120), vec!["5: 121"]);
}

#[test]
fn libvirt_example_matches_qemu_args() {
    let doc = roxmltree::Document::parse(LIBVIRT).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "domain");
    let qemu_ns = "http://libvirt.org/schemas/domain/qemu/1.0";
    let find = |name: &str| root.descendants().find(|n| n.tag_name().name() == name);
    let backing = find("memoryBacking").expect("memoryBacking");
    let has = |tag: &str, attr: &str, val: &str| {
        backing
            .children()
            .any(|n| n.tag_name().name() == tag && n.attribute(attr) == Some(val))
    };
    assert!(has("source", "type", "memfd") && has("access", "mode", "shared"));
    let cmdline = root
        .children()
        .find(|n| n.tag_name().name() == "commandline" && n.tag_name().namespace() == Some(qemu_ns))
        .expect("qemu:commandline");
    let values: Vec<String> = cmdline
        .children()
        .filter(|n| n.tag_name().name() == "arg")
        .filter_map(|n| n.attribute("value").map(str::to_owned))
        .collect();
    let args = QemuArgsArgs {
        device: "nicemu-igb".into(),
        topology: Topology::Single,
        dir: "/tmp/nicemu".into(),
        mem: 1024,
        nicemu: None,
        format: QemuArgsFormat::Qemu,
    };
    let (_, q) = crate::qemu_args::vectors(&args, Path::new("nicemu")).unwrap();
    // libvirt makes the machine, memory and shared backend itself; the devices are ours.
    let devices: Vec<String> = q.iter().skip(6).cloned().collect();
    assert_eq!(values, devices);
}
