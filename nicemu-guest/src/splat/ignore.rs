// SPDX-License-Identifier: Apache-2.0
//! The ignore list: kernel reports that do not fail a cell, each entry with the reason, kept
//! in the repo (`nicemu-guest/splats/ignore.toml`, compiled in; `--splat-ignore FILE` reads
//! another). An ignored splat is still reported, with its entry and reason; an entry that
//! could have matched in a run (its kernels and devices ran) but matched nothing is listed
//! as unused, so stale entries do not pile up.
//!
//! ```toml
//! [[ignore]]
//! kind = "netdev-watchdog"          # a splat kind (`nicemu-guest list` names them)
//! fingerprint = "NETDEV WATCHDOG*"  # glob (`*`) on the fingerprint
//! text = "transmit queue"           # substring of the report's text
//! kernels = ["sid*"]                # globs on the kernel name (default: every kernel)
//! devices = ["nicemu-*"]            # globs on the device kind (default: every device)
//! scenarios = ["faults"]            # what the guest was doing (default: any time)
//! reason = "why this report is expected and not the patch's fault"
//! ```
//! `reason` and at least one of `kind`, `fingerprint`, `text` are required.

use serde::Deserialize;

use super::model::{Ignored, Kind, Splat};

/// The repo's ignore list.
pub const BUILTIN_NAME: &str = "nicemu-guest/splats/ignore.toml";
const BUILTIN: &str = include_str!("../../splats/ignore.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    #[serde(default)]
    ignore: Vec<toml::Spanned<EntrySpec>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EntrySpec {
    kind: Option<Kind>,
    fingerprint: Option<String>,
    text: Option<String>,
    kernels: Option<Vec<String>>,
    devices: Option<Vec<String>>,
    scenarios: Option<Vec<String>>,
    reason: String,
}

/// One entry.
#[derive(Debug, Clone)]
struct Entry {
    /// `FILE:LINE` of its `[[ignore]]`.
    at: String,
    spec: EntrySpecOwned,
}

#[derive(Debug, Clone)]
struct EntrySpecOwned {
    kind: Option<Kind>,
    fingerprint: Option<String>,
    text: Option<String>,
    kernels: Vec<String>,
    devices: Vec<String>,
    scenarios: Vec<String>,
    reason: String,
}

/// A parsed ignore list.
#[derive(Debug, Clone)]
pub struct IgnoreList {
    /// The file it came from, as named in messages.
    pub file: String,
    entries: Vec<Entry>,
}

impl IgnoreList {
    /// The repo's list.
    pub fn builtin() -> Self {
        // A unit test parses it: a broken built-in file cannot ship.
        Self::parse(BUILTIN_NAME, BUILTIN).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Reads `path`; a missing or malformed file is one line naming the file and line.
    pub fn read(path: &std::path::Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&path.display().to_string(), &text)
    }

    /// Parses `text` (from `file`); errors are "FILE:LINE: what is wrong".
    pub fn parse(file: &str, text: &str) -> Result<Self, String> {
        let spec: FileSpec = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            let msg: Vec<&str> = e
                .message()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            format!("{file}:{line}: {}", msg.join("; "))
        })?;
        let mut entries = Vec::new();
        for s in spec.ignore {
            let at = format!("{file}:{}", line_of(text, s.span().start));
            let e = s.into_inner();
            if e.reason.trim().is_empty() {
                return Err(format!(
                    "{at}: the entry's reason is empty (say why the report is expected)"
                ));
            }
            if e.kind.is_none() && e.fingerprint.is_none() && e.text.is_none() {
                return Err(format!(
                    "{at}: the entry matches every report (give kind, fingerprint or text)"
                ));
            }
            entries.push(Entry {
                at,
                spec: EntrySpecOwned {
                    kind: e.kind,
                    fingerprint: e.fingerprint,
                    text: e.text,
                    kernels: e.kernels.unwrap_or_default(),
                    devices: e.devices.unwrap_or_default(),
                    scenarios: e.scenarios.unwrap_or_default(),
                    reason: e.reason.trim().to_owned(),
                },
            });
        }
        Ok(IgnoreList {
            file: file.to_owned(),
            entries,
        })
    }

    /// "FILE (N entries)".
    pub fn describe(&self) -> String {
        format!("{} ({} entries)", self.file, self.entries.len())
    }

    /// Marks the splats of a cell (kernel, device) that an entry accepts.
    pub fn judge(&self, kernel: &str, device: &str, splats: &mut [Splat]) {
        for s in splats.iter_mut() {
            s.ignored = self
                .entries
                .iter()
                .find(|e| applies(&e.spec, kernel, device) && matches(&e.spec, s))
                .map(|e| Ignored {
                    entry: e.at.clone(),
                    reason: e.spec.reason.clone(),
                });
        }
    }

    /// The entries that applied to a cell of `cells` and accepted none of their splats:
    /// "FILE:LINE (reason)". An entry applies to a cell of its kernels and devices that ran
    /// one of its scenarios (or any, when it names parts of every boot: "boot", "modules",
    /// "net", "end").
    pub fn unused<'a>(&self, cells: impl IntoIterator<Item = CellUse<'a>>) -> Vec<String> {
        let cells: Vec<CellUse> = cells.into_iter().collect();
        self.entries
            .iter()
            .filter(|e| cells.iter().any(|c| applies_to(&e.spec, c)))
            .filter(|e| {
                !cells
                    .iter()
                    .flat_map(|c| c.splats.iter())
                    .any(|s| s.ignored.as_ref().is_some_and(|i| i.entry == e.at))
            })
            .map(|e| format!("{} ({})", e.at, e.spec.reason))
            .collect()
    }
}

/// The parts of every boot (besides its scenarios) a splat can happen during.
const EVERY_BOOT: [&str; 4] = ["boot", "modules", "net", "end"];

/// What [`IgnoreList::unused`] needs of a cell.
#[derive(Debug, Clone)]
pub struct CellUse<'a> {
    /// Kernel name.
    pub kernel: &'a str,
    /// Device kind.
    pub device: &'a str,
    /// The scenarios it ran.
    pub scenarios: Vec<&'a str>,
    /// Its splats, judged.
    pub splats: &'a [Splat],
}

fn applies_to(e: &EntrySpecOwned, c: &CellUse) -> bool {
    applies(e, c.kernel, c.device)
        && (e.scenarios.is_empty()
            || e.scenarios
                .iter()
                .any(|x| EVERY_BOOT.contains(&x.as_str()) || c.scenarios.contains(&x.as_str())))
}

fn applies(e: &EntrySpecOwned, kernel: &str, device: &str) -> bool {
    (e.kernels.is_empty() || e.kernels.iter().any(|g| glob(g, kernel)))
        && (e.devices.is_empty() || e.devices.iter().any(|g| glob(g, device)))
}

fn matches(e: &EntrySpecOwned, s: &Splat) -> bool {
    e.kind.is_none_or(|k| k == s.kind)
        && e.fingerprint
            .as_deref()
            .is_none_or(|g| glob(g, &s.fingerprint))
        && e.text.as_deref().is_none_or(|t| s.text.contains(t))
        && (e.scenarios.is_empty() || e.scenarios.contains(&s.during))
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).unwrap_or(text).matches('\n').count() + 1
}

/// `*` matches any run of characters; everything else matches itself.
pub fn glob(pattern: &str, s: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == s;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || s.len() < first.len() + last.len() || !s.ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for p in &parts[1..parts.len() - 1] {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::samples::read;
    use super::super::scan;
    use super::*;

    #[test]
    fn the_builtin_list_parses_and_every_entry_has_a_reason() {
        let l = IgnoreList::builtin();
        assert!(!l.entries.is_empty());
        assert!(l
            .describe()
            .starts_with("nicemu-guest/splats/ignore.toml ("));
        assert!(l.entries.iter().all(|e| e.spec.reason.len() > 20));
    }

    #[test]
    fn globs() {
        assert!(glob("nicemu-*", "nicemu-igb"));
        assert!(glob("*", ""));
        assert!(glob(
            "WARNING in *_xmit_*",
            "WARNING in igb_xmit_frame_ring"
        ));
        assert!(!glob("nicemu-*", "qemu-igb"));
        assert!(!glob("a*b*c", "acb"));
        assert!(glob("sid", "sid") && !glob("sid", "sid-debug"));
    }

    const LIST: &str = "\
# test list
[[ignore]]
kind = \"netdev-watchdog\"
devices = [\"nicemu-*\"]
scenarios = [\"faults\"]
reason = \"the stall case stops a queue on purpose\"

[[ignore]]
fingerprint = \"WARNING in igb_*\"
kernels = [\"trixie\"]
reason = \"only on trixie\"
";

    #[test]
    fn entries_match_by_kind_scenario_device_and_kernel() {
        let l = IgnoreList::parse("t.toml", LIST).unwrap();
        let mut wd = scan(&read("netdev-watchdog.log"));
        l.judge("sid", "nicemu-igb", &mut wd);
        let i = wd[0].ignored.clone().unwrap();
        assert_eq!(i.entry, "t.toml:2");
        assert_eq!(i.reason, "the stall case stops a queue on purpose");
        assert!(!wd[0].fails());
        // Not on QEMU's device, not outside `faults`.
        l.judge("sid", "qemu-igb", &mut wd);
        assert!(wd[0].fails());
        wd[0].during = "ping".into();
        l.judge("sid", "nicemu-igb", &mut wd);
        assert!(wd[0].fails());
        let mut w = scan(&read("warn-igb-xmit.log"));
        l.judge("sid", "nicemu-igb", &mut w);
        assert!(w[0].fails());
        l.judge("trixie", "nicemu-igb", &mut w);
        assert_eq!(w[0].ignored.as_ref().unwrap().entry, "t.toml:8");
    }

    #[test]
    fn unused_entries_are_the_applicable_ones_that_matched_nothing() {
        let l = IgnoreList::parse("t.toml", LIST).unwrap();
        let mut wd = scan(&read("netdev-watchdog.log"));
        l.judge("sid", "nicemu-igb", &mut wd);
        let cell = |kernel, device, scenarios: Vec<&'static str>, splats| CellUse {
            kernel,
            device,
            scenarios,
            splats,
        };
        // The trixie entry does not apply to a sid-only run: not listed.
        assert!(l
            .unused([cell("sid", "nicemu-igb", vec!["faults"], wd.as_slice())])
            .is_empty());
        let none: Vec<Splat> = Vec::new();
        // The faults entry applies only where faults ran.
        assert!(l
            .unused([cell("sid", "nicemu-igb", vec!["ping"], none.as_slice())])
            .is_empty());
        assert_eq!(
            l.unused([
                cell("sid", "nicemu-igb", vec!["faults"], none.as_slice()),
                cell("trixie", "qemu-igb", vec![], none.as_slice())
            ]),
            [
                "t.toml:2 (the stall case stops a queue on purpose)",
                "t.toml:8 (only on trixie)"
            ]
        );
    }

    #[test]
    fn a_malformed_file_is_one_line_naming_file_and_line() {
        let bad = [
            (
                "[[ignore]]\nkind = \"warning\"\n",
                "t.toml:1: missing field `reason`",
            ),
            (
                "[[ignore]]\nkind = \"warnings\"\nreason = \"x\"\n",
                "t.toml:2: unknown variant `warnings`",
            ),
            (
                "[[ignore]]\nreason = \"x\"\n",
                "t.toml:1: the entry matches every report",
            ),
            (
                "[[ignore]]\nkind = \"oops\"\nreason = \"  \"\n",
                "t.toml:1: the entry's reason is empty",
            ),
            (
                "\n\n[[ignore]]\nkind = \"oops\"\nreason = \"x\"\nwhy = 1\n",
                "t.toml:6: unknown field `why`",
            ),
            ("[[ignore]\n", "t.toml:1: "),
        ];
        for (text, want) in bad {
            let e = IgnoreList::parse("t.toml", text).unwrap_err();
            assert!(e.starts_with(want), "{e:?} (want {want:?})");
            assert!(!e.contains('\n'), "{e:?}");
        }
        let e = IgnoreList::read(std::path::Path::new("/nonexistent/ignore.toml")).unwrap_err();
        assert!(e.starts_with("/nonexistent/ignore.toml: "), "{e}");
    }
}
