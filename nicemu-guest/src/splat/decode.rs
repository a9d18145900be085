// SPDX-License-Identifier: Apache-2.0
//! Call-trace frames decoded to source lines with the kernel's own `scripts/faddr2line`
//! (from the guest kernel's source), run in the sid root where binutils and the build
//! outputs are: `faddr2line OBJECT func+0xOFF/0xSIZE …` per object, the frames of modules
//! with the `.ko` the harness built (they keep their debug info), kernel frames with the
//! `vmlinux` of a kernel the harness built. Frames of objects without debug info (Debian's
//! stock kernel image and modules) stay undecoded, and the splat says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::model::{Frame, Splat};

/// Runs `faddr2line` on one object; returns its standard output.
pub trait Faddr2line {
    /// `object` is a host path; `symbols` are `func+0xOFF/0xSIZE`.
    fn run(&self, object: &Path, symbols: &[String]) -> Result<String, String>;
}

/// The kernel's `scripts/faddr2line` run with `bash -c` inside a root (chroot) that has
/// binutils (the sid root: module and kernel builds need them).
#[derive(Debug, Clone)]
pub struct InRoot {
    /// The root (host path).
    pub root: PathBuf,
    /// The script's text (`scripts/faddr2line` of the guest kernel's source).
    pub script: String,
}

impl Faddr2line for InRoot {
    fn run(&self, object: &Path, symbols: &[String]) -> Result<String, String> {
        let inside = object
            .strip_prefix(&self.root)
            .map_err(|_| format!("{} is outside {}", object.display(), self.root.display()))?;
        let mut c = std::process::Command::new("chroot");
        c.arg(&self.root)
            .args(["bash", "-c", &self.script, "faddr2line"])
            .arg(Path::new("/").join(inside))
            .args(symbols)
            .env("LANG", "C");
        answer(&c.output().map_err(|e| format!("chroot: {e}"))?)
    }
}

/// The kernel's `scripts/faddr2line` run with `bash -c` on the host (`scan-log`: the user's
/// own objects; needs the host's binutils).
#[derive(Debug, Clone)]
pub struct OnHost {
    /// The script's text.
    pub script: String,
}

impl Faddr2line for OnHost {
    fn run(&self, object: &Path, symbols: &[String]) -> Result<String, String> {
        let out = std::process::Command::new("bash")
            .args(["-c", &self.script, "faddr2line"])
            .arg(object)
            .args(symbols)
            .env("LANG", "C")
            .output()
            .map_err(|e| format!("bash: {e}"))?;
        answer(&out)
    }
}

/// The script's output, or its first error line.
fn answer(out: &std::process::Output) -> Result<String, String> {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if text.trim().is_empty() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().next().unwrap_or("no output").to_owned());
    }
    Ok(text)
}

/// The objects with debug info of one booted kernel.
#[derive(Debug, Clone, Default)]
pub struct DebugObjects {
    /// The kernel image with debug info (`vmlinux` of a harness-built kernel).
    pub vmlinux: Option<PathBuf>,
    /// Modules with debug info by name (built by the harness).
    pub modules: BTreeMap<String, PathBuf>,
    /// What the objects without debug info are, for the note ("Debian's 7.2.13+deb14-amd64").
    pub stock: String,
}

/// Frames decoded per splat, at most (the culprit always is).
const MAX_FRAMES: usize = 12;

impl DebugObjects {
    /// True if no frame can be decoded.
    pub fn is_empty(&self) -> bool {
        self.vmlinux.is_none() && self.modules.is_empty()
    }

    fn object(&self, f: &Frame) -> Option<&PathBuf> {
        match &f.module {
            Some(m) => self.modules.get(&m.replace('-', "_")),
            None => self.vmlinux.as_ref(),
        }
    }

    /// Decodes the culprit and the first frames of every splat; notes what stayed undecoded.
    pub fn decode(&self, splats: &mut [Splat], tool: &dyn Faddr2line) {
        let mut wanted: BTreeMap<&PathBuf, Vec<String>> = BTreeMap::new();
        for s in splats.iter() {
            for f in s.culprit.iter().chain(s.frames.iter().take(MAX_FRAMES)) {
                if let Some(o) = self.object(f) {
                    let v = wanted.entry(o).or_default();
                    if !v.contains(&f.symbol()) {
                        v.push(f.symbol());
                    }
                }
            }
        }
        let mut lines: BTreeMap<(PathBuf, String), Vec<String>> = BTreeMap::new();
        let mut failed: Vec<String> = Vec::new();
        for (o, syms) in wanted {
            match tool.run(o, &syms) {
                Ok(out) => {
                    for (k, v) in parse(&out) {
                        lines.insert((o.clone(), k), v);
                    }
                }
                Err(e) => failed.push(format!("{}: {e}", o.display())),
            }
        }
        for s in splats.iter_mut() {
            let mut missing: Vec<String> = Vec::new();
            let look = |f: &mut Frame, missing: &mut Vec<String>| match self.object(f) {
                Some(o) => {
                    let key = (o.clone(), key_of(&f.func, f.offset));
                    if let Some(l) = lines.get(&key) {
                        f.location = l.clone();
                    }
                }
                None => {
                    let what = f
                        .module
                        .clone()
                        .unwrap_or_else(|| "the kernel image".into());
                    if !missing.contains(&what) {
                        missing.push(what);
                    }
                }
            };
            if let Some(c) = s.culprit.as_mut() {
                look(c, &mut missing);
            }
            for f in s.frames.iter_mut().take(MAX_FRAMES) {
                look(f, &mut missing);
            }
            if let Some(l) = s.culprit.as_ref().and_then(Frame::line) {
                s.location = Some(l.to_owned());
            }
            s.decode_note = note(&missing, &failed, &self.stock);
        }
    }
}

fn note(missing: &[String], failed: &[String], stock: &str) -> Option<String> {
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!(
            "frames of {} not decoded: no debug info ({stock})",
            missing.join(", ")
        ));
    }
    if !failed.is_empty() {
        parts.push(format!("faddr2line failed: {}", failed.join("; ")));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// `func+0xoff`: how a frame and `faddr2line`'s answer are matched.
fn key_of(func: &str, offset: u64) -> String {
    format!("{func}+{offset:#x}")
}

/// `faddr2line`'s output: per `func+0xoff/SIZE:` header, the source lines that follow
/// (innermost first; `(inlined by)` removed, build-directory prefixes cut to the tree's
/// relative path).
pub fn parse(out: &str) -> Vec<(String, Vec<String>)> {
    let mut v: Vec<(String, Vec<String>)> = Vec::new();
    for l in out.lines().map(str::trim) {
        if let Some(h) = l
            .strip_suffix(':')
            .filter(|h| h.contains("+0x") && !h.contains(' '))
        {
            let (func, rest) = h.split_once('+').unwrap_or((h, ""));
            let off = rest.split('/').next().unwrap_or("");
            let off = u64::from_str_radix(off.trim_start_matches("0x"), 16).unwrap_or(u64::MAX);
            v.push((key_of(func, off), Vec::new()));
            continue;
        }
        let Some((_, lines)) = v.last_mut() else {
            continue;
        };
        let l = l.strip_prefix("(inlined by)").unwrap_or(l).trim();
        let Some((func, path)) = l.rsplit_once(" at ") else {
            continue;
        };
        let path = path.split(" (discriminator").next().unwrap_or(path);
        if path.starts_with("??") {
            continue;
        }
        lines.push(format!("{func} at {}", tree_path(path)));
    }
    // A duplicate symbol answers more than once: the first answer is kept.
    let mut seen = std::collections::BTreeSet::new();
    v.retain(|(k, l)| !l.is_empty() && seen.insert(k.clone()));
    v
}

/// A source path relative to the kernel tree: the harness's build directories keep the
/// tree in `…/src/` (`mod-ID/src/drivers/…`, `kernel-ID/out/../src/drivers/…`).
pub fn tree_path(p: &str) -> &str {
    let p = match p.rfind("/src/") {
        Some(i) => &p[i + 5..],
        None => p,
    };
    p.trim_start_matches("./")
}

#[cfg(test)]
mod tests {
    use super::super::samples::read;
    use super::super::scan;
    use super::*;

    const OUT: &str = "\
igb_get_stats64+0x2f/0x90:
igb_get_stats64 at /var/lib/nicemu-builds/mod-1a2b.tmp/src/drivers/net/ethernet/intel/igb/igb_main.c:6695

igb_get_stats64+0x2f/0x90:
igb_get_stats64 at /elsewhere/igb_main.c:1

dev_get_stats+0x102/0x5a0:
no match here
";

    #[test]
    fn faddr2line_output_is_cut_to_tree_paths() {
        let p = parse(OUT);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, "igb_get_stats64+0x2f");
        assert_eq!(
            p[0].1,
            ["igb_get_stats64 at drivers/net/ethernet/intel/igb/igb_main.c:6695"]
        );
        let inl = "igb_xmit_frame_ring+0x3b/2448:\n\
                   netif_tx_stop_queue at include/linux/netdevice.h:3512 (discriminator 2)\n\
                   (inlined by) igb_xmit_frame_ring at /b/kernel-9/out/../src/drivers/net/ethernet/intel/igb/igb_main.c:6533\n";
        let p = parse(inl);
        assert_eq!(
            p[0].1,
            [
                "netif_tx_stop_queue at include/linux/netdevice.h:3512",
                "igb_xmit_frame_ring at drivers/net/ethernet/intel/igb/igb_main.c:6533"
            ]
        );
        assert_eq!(tree_path("./drivers/x.c:1"), "drivers/x.c:1");
    }

    /// Canned answers per object, recording the calls.
    struct Fake(std::cell::RefCell<Vec<(PathBuf, Vec<String>)>>);

    impl Faddr2line for Fake {
        fn run(&self, object: &Path, symbols: &[String]) -> Result<String, String> {
            self.0
                .borrow_mut()
                .push((object.to_path_buf(), symbols.to_vec()));
            if object.ends_with("broken.ko") {
                return Err("ERROR: CONFIG_DEBUG_INFO not enabled".into());
            }
            Ok(symbols
                .iter()
                .map(|s| {
                    let func = s.split('+').next().unwrap();
                    format!("{s}:\n{func} at /b/mod-1.tmp/src/drivers/net/ethernet/intel/igb/igb_main.c:{}\n\n", func.len())
                })
                .collect())
        }
    }

    #[test]
    fn module_frames_are_decoded_and_the_rest_noted() {
        let mut s = scan(&read("sleep-in-atomic-igb-get-stats64.log"));
        let objs = DebugObjects {
            vmlinux: None,
            modules: [("igb".to_owned(), PathBuf::from("/root/b/igb.ko"))].into(),
            stock: "Debian's 7.2.13+deb14-amd64".into(),
        };
        let fake = Fake(Default::default());
        objs.decode(&mut s, &fake);
        // One faddr2line call for igb.ko with each symbol once (the culprit is a frame too).
        let calls = fake.0.borrow();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].1, ["igb_get_stats64+0x2f/0x90"]);
        let s = &s[0];
        assert_eq!(
            s.location.as_deref(),
            Some("drivers/net/ethernet/intel/igb/igb_main.c:15")
        );
        assert_eq!(
            s.headline(),
            "BUG: sleeping function called from invalid context in igb_get_stats64 (igb_main.c:15)"
        );
        assert!(s
            .frames
            .iter()
            .filter(|f| f.module.is_none())
            .all(|f| f.location.is_empty()));
        assert_eq!(
            s.decode_note.as_deref(),
            Some("frames of the kernel image not decoded: no debug info (Debian's 7.2.13+deb14-amd64)")
        );
        assert!(s.full_text().contains(
            "igb_get_stats64+0x2f/0x90 [igb] at drivers/net/ethernet/intel/igb/igb_main.c:15"
        ));
    }

    #[test]
    fn a_failing_object_is_named_and_nothing_is_decoded_without_objects() {
        let mut s = scan(&read("warn-igb-xmit.log"));
        let objs = DebugObjects {
            vmlinux: Some(PathBuf::from("/root/b/vmlinux")),
            modules: [("igb".to_owned(), PathBuf::from("/root/b/broken.ko"))].into(),
            stock: String::new(),
        };
        let fake = Fake(Default::default());
        objs.decode(&mut s, &fake);
        assert_eq!(fake.0.borrow().len(), 2);
        // The WARN's own line stays the location.
        assert_eq!(
            s[0].location.as_deref(),
            Some("drivers/net/ethernet/intel/igb/igb_main.c:6533")
        );
        assert!(s[0].decode_note.as_deref().unwrap().contains(
            "faddr2line failed: /root/b/broken.ko: ERROR: CONFIG_DEBUG_INFO not enabled"
        ));
        assert!(s[0]
            .frames
            .iter()
            .any(|f| f.module.is_none() && !f.location.is_empty()));
        let fake = Fake(Default::default());
        DebugObjects::default().decode(&mut s, &fake);
        assert!(fake.0.borrow().is_empty());
    }
}
