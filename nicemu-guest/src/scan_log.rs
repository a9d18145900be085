// SPDX-License-Identifier: Apache-2.0
//! `nicemu-guest scan-log FILE`: the splat watch of `run` on any console log (a cell's
//! kernel.log, a vng or QEMU serial log, dmesg output), with the same ignore list and, given
//! the objects with debug info, decoded call traces.

use std::path::{Path, PathBuf};

use crate::cli::ScanLogArgs;
use crate::error::{Error, Result};
use crate::splat::decode::{DebugObjects, OnHost};
use crate::splat::ignore::IgnoreList;
use crate::splat::{self, Splat};

/// Runs `scan-log`; exit code 1 if a splat is not ignored, 0 if none.
pub fn run(args: &ScanLogArgs) -> Result<i32> {
    let ignore = match &args.ignore {
        Some(p) => IgnoreList::read(p).map_err(Error::Usage)?,
        None => IgnoreList::builtin(),
    };
    let objects = objects(args)?;
    let script = match (&objects.is_empty(), &args.faddr2line) {
        (true, _) => None,
        (false, Some(p)) => Some(read_script(p)?),
        (false, None) => Some(read_script(&default_script(args)?)?),
    };
    let bytes = std::fs::read(&args.file)
        .map_err(|e| Error::Usage(format!("{}: {e}", args.file.display())))?;
    let mut splats = splat::scan(&String::from_utf8_lossy(&bytes));
    if let Some(script) = script {
        objects.decode(&mut splats, &OnHost { script });
    }
    ignore.judge(&args.kernel, &args.device, &mut splats);
    print!("{}", render(&args.file, &splats));
    if let Some(j) = &args.json {
        let text = serde_json::to_string_pretty(&splats)?;
        std::fs::write(j, text + "\n").map_err(|e| Error::io(j, e))?;
    }
    Ok(i32::from(splats.iter().any(Splat::fails)))
}

/// The objects named on the command line (each must exist).
fn objects(args: &ScanLogArgs) -> Result<DebugObjects> {
    let exists = |p: &Path| {
        if p.is_file() {
            Ok(p.to_path_buf())
        } else {
            Err(Error::Usage(format!("{}: no such file", p.display())))
        }
    };
    let mut o = DebugObjects {
        vmlinux: args.vmlinux.as_deref().map(exists).transpose()?,
        stock: "no object given for it".into(),
        ..DebugObjects::default()
    };
    for m in &args.modules {
        let name = m
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".ko"))
            .ok_or_else(|| Error::Usage(format!("--module {}: not a NAME.ko file", m.display())))?;
        o.modules.insert(name.replace('-', "_"), exists(m)?);
    }
    Ok(o)
}

/// scripts/faddr2line of the tree --vmlinux was built in (`O=` trees link it as `source`).
fn default_script(args: &ScanLogArgs) -> Result<PathBuf> {
    let dir = args.vmlinux.as_deref().and_then(Path::parent);
    dir.into_iter()
        .flat_map(|d| {
            [
                d.join("scripts/faddr2line"),
                d.join("source/scripts/faddr2line"),
            ]
        })
        .find(|p| p.is_file())
        .ok_or_else(|| {
            Error::Usage(
                "decoding needs the kernel's scripts/faddr2line: give --faddr2line PATH".into(),
            )
        })
}

fn read_script(p: &Path) -> Result<String> {
    std::fs::read_to_string(p)
        .map_err(|e| Error::Usage(format!("--faddr2line {}: {e}", p.display())))
}

/// The report: a summary line, then each splat's line and its text, indented.
pub fn render(file: &Path, splats: &[Splat]) -> String {
    let fails = splats.iter().filter(|s| s.fails()).count();
    let mut s = format!(
        "{}: {} kernel splat{} ({fails} failing, {} ignored)\n",
        file.display(),
        splats.len(),
        if splats.len() == 1 { "" } else { "s" },
        splats.len() - fails
    );
    for sp in splats {
        s.push_str(&format!("\n{}\n", sp.describe()));
        for l in sp.full_text().lines() {
            s.push_str(&format!("    {l}\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splat::samples::read;

    fn args(file: PathBuf) -> ScanLogArgs {
        ScanLogArgs {
            file,
            ignore: None,
            kernel: String::new(),
            device: String::new(),
            vmlinux: None,
            modules: Vec::new(),
            faddr2line: None,
            json: None,
        }
    }

    #[test]
    fn a_log_with_a_warning_fails_and_names_it() {
        let d = std::env::temp_dir().join(format!("nicemu-scan-log-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let log = d.join("kernel.log");
        std::fs::write(
            &log,
            read("warn-igb-xmit.log") + &read("netdev-watchdog.log"),
        )
        .unwrap();
        let mut a = args(log.clone());
        a.json = Some(d.join("splats.json"));
        a.device = "nicemu-igb".into();
        assert_eq!(run(&a).unwrap(), 1);
        let j: Vec<Splat> =
            serde_json::from_str(&std::fs::read_to_string(d.join("splats.json")).unwrap()).unwrap();
        assert_eq!(j.len(), 2);
        assert!(
            j[0].fails() && !j[1].fails(),
            "the watchdog during faults is ignored"
        );
        let text = render(&log, &j);
        assert!(
            text.contains("2 kernel splats (1 failing, 1 ignored)"),
            "{text}"
        );
        assert!(text.contains("FAIL WARNING in igb_xmit_frame_ring (igb_main.c:6533): warning during ping, at 12.2 s"), "{text}");
        assert!(text.contains("IGNORED NETDEV WATCHDOG: transmit queue timed out in igb: netdev-watchdog during faults"), "{text}");
        // A clean log passes; a missing file or a bad ignore list is exit 2 (an error).
        std::fs::write(&log, "[    1.0] igb: eth0 NIC Link is Up\n").unwrap();
        assert_eq!(run(&args(log.clone())).unwrap(), 0);
        assert!(matches!(
            run(&args(d.join("none.log"))),
            Err(Error::Usage(_))
        ));
        std::fs::write(d.join("bad.toml"), "[[ignore]]\nkind = 1\n").unwrap();
        let mut a = args(log.clone());
        a.ignore = Some(d.join("bad.toml"));
        let e = run(&a).unwrap_err().to_string();
        assert!(e.contains("bad.toml:2: "), "{e}");
        let mut a = args(log);
        a.modules = vec![d.join("igb.ko")];
        assert!(matches!(run(&a), Err(Error::Usage(_))));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
