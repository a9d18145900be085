// SPDX-License-Identifier: Apache-2.0
//! KTAP files for TAP tooling, one pair per cell in the cell's directory:
//! `kselftest.tap` (one test point per kernel selftest case) and `scenarios.tap` (one per
//! scenario, then one per kernel splat).
//!
//! The format is KTAP version 1 as the kernel's `Documentation/dev-tools/ktap.rst` describes
//! it, flat (no subtests), with the version line kselftest itself prints (`TAP version 13`,
//! which KTAP accepts), so that plain TAP 13 consumers read every point too:
//! `ok N name`, `not ok N name`, `ok N name # SKIP reason`, `ok N name # XFAIL reason`
//! (kselftest's `ksft.py`), `not ok N name # TIMEOUT reason`, and `not ok N name # TODO
//! reason` for a failure the device's expectations file lists (TAP's "known failure": it
//! does not fail the file). Diagnostic lines (`# …`) come before the point they explain.

use std::path::Path;

use super::{CellRun, RunReport};
use crate::error::{Error, Result};
use crate::scenario::Status;

/// The file names, in each cell's directory.
pub const KSELFTEST_FILE: &str = "kselftest.tap";
/// See [`KSELFTEST_FILE`].
pub const SCENARIOS_FILE: &str = "scenarios.tap";

/// One test point before numbering.
struct Point {
    ok: bool,
    name: String,
    directive: Option<String>,
    diag: Vec<String>,
}

/// A description or reason as one KTAP line: no `#` (it starts the directive), no line
/// breaks.
fn clean(s: &str) -> String {
    s.replace('#', "no.")
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" / ")
}

fn document(points: &[Point]) -> String {
    let mut s = format!("TAP version 13\n1..{}\n", points.len());
    for (i, p) in points.iter().enumerate() {
        for d in &p.diag {
            s.push_str(&format!("# {}\n", clean(d)));
        }
        s.push_str(&format!(
            "{} {} {}",
            if p.ok { "ok" } else { "not ok" },
            i + 1,
            clean(&p.name)
        ));
        if let Some(d) = &p.directive {
            s.push_str(&format!(" # {}", clean(d)));
        }
        s.push('\n');
    }
    s
}

/// `kselftest.tap` of one cell: one point per case of its `kselftest` result, in the order
/// the guest ran them; `None` when the cell did not run `kselftest`.
pub fn kselftest(c: &CellRun) -> Option<String> {
    let r = c.result("kselftest")?;
    let deviations: Vec<&str> = r
        .metrics
        .get("deviations")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default();
    let mut points = Vec::new();
    for case in r
        .metrics
        .get("cases")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        let field = |k: &str| case.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let (name, status, reason) = (field("case"), field("status"), field("reason"));
        if name.is_empty() {
            continue;
        }
        let deviates = deviations
            .iter()
            .any(|d| d.starts_with(&format!("{name}: ")));
        let why = |word: &str| {
            if reason.is_empty() {
                word.to_owned()
            } else {
                format!("{word} {reason}")
            }
        };
        let (ok, directive) = match (status, deviates) {
            ("PASS", _) => (true, None),
            ("SKIP", _) => (true, Some(why("SKIP"))),
            ("XFAIL", _) => (true, Some(why("XFAIL"))),
            ("TIMEOUT", true) => (false, Some(why("TIMEOUT"))),
            (st, false) => (
                false,
                Some(why(&format!("TODO {st} as the expectations file says:"))),
            ),
            (_, true) => (false, None),
        };
        let diag = if !ok && directive.is_none() && !reason.is_empty() {
            vec![reason.to_owned()]
        } else if status == "PASS" && deviates {
            vec!["passed, which the expectations file does not say".to_owned()]
        } else {
            Vec::new()
        };
        points.push(Point {
            ok,
            name: format!("{} {name}", field("program")),
            directive,
            diag,
        });
    }
    Some(document(&points))
}

/// `scenarios.tap` of one cell: the network setup (when it ran), one point per scenario
/// (each failed check a diagnostic line before it), then one per kernel splat (failed, or
/// skipped with the ignore list's reason).
pub fn scenarios(c: &CellRun) -> String {
    let mut points = Vec::new();
    if let Some(e) = &c.error {
        points.push(Point {
            ok: false,
            name: "boot".into(),
            directive: None,
            diag: vec![e.clone()],
        });
    }
    for r in c.setup.iter().chain(&c.scenarios) {
        let summary = r.summary.clone().into_iter();
        points.push(match r.status {
            Status::Pass => Point {
                ok: true,
                name: r.scenario.clone(),
                directive: None,
                diag: summary.collect(),
            },
            Status::Skip => Point {
                ok: true,
                name: r.scenario.clone(),
                directive: Some(format!("SKIP {}", r.reason.as_deref().unwrap_or(""))),
                diag: Vec::new(),
            },
            Status::Fail => Point {
                ok: false,
                name: r.scenario.clone(),
                directive: None,
                diag: r.failed_checks(),
            },
        });
    }
    for sp in &c.splats {
        points.push(Point {
            ok: !sp.fails(),
            name: format!("kernel splat: {}", sp.fingerprint),
            directive: sp
                .ignored
                .as_ref()
                .map(|i| format!("SKIP ignored by {}: {}", i.entry, i.reason)),
            diag: vec![format!("{} during {}", sp.headline(), sp.during)],
        });
    }
    document(&points)
}

/// Writes each cell's KTAP files into its directory (cells whose directory is gone, e.g.
/// a report re-rendered on another machine, are left out).
pub fn write_cells(report: &RunReport) -> Result<()> {
    for c in &report.runs {
        let dir = Path::new(&c.dir);
        if !dir.is_dir() {
            continue;
        }
        let p = dir.join(SCENARIOS_FILE);
        std::fs::write(&p, scenarios(c)).map_err(|e| Error::io(&p, e))?;
        if let Some(k) = kselftest(c) {
            let p = dir.join(KSELFTEST_FILE);
            std::fs::write(&p, k).map_err(|e| Error::io(&p, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::cell;
    use crate::scenario::ktap::{self as reader, CaseStatus};

    fn with_kselftest() -> CellRun {
        let mut c = cell("sid", "nicemu-igb", 0.5, 600.0, false);
        let mut k = crate::scenario::ScenarioResult::pass("kselftest");
        k.metric(
            "cases",
            serde_json::json!([
                {"case": "ping.test_v4", "program": "drivers/net:ping.py", "status": "PASS"},
                {"case": "stats.check_pause", "program": "drivers/net:stats.py", "status": "FAIL", "reason": "no # stats\nat all"},
                {"case": "stats.check_fec", "program": "drivers/net:stats.py", "status": "SKIP", "reason": "no FEC"},
                {"case": "csum.x", "program": "drivers/net:csum.py", "status": "TIMEOUT", "reason": "slow"},
                {"case": "xdp.y", "program": "drivers/net:xdp.py", "status": "FAIL", "reason": "bad"},
                {"case": "q.z", "program": "drivers/net:q.py", "status": "XFAIL", "reason": "known"}
            ]),
        );
        k.metric(
            "deviations",
            serde_json::json!([
                "csum.x: TIMEOUT (not in the expectations)",
                "xdp.y: FAIL (expected PASS)"
            ]),
        );
        c.scenarios.push(k);
        c
    }

    #[test]
    fn kselftest_file_has_one_point_per_case_with_directives() {
        let t = kselftest(&with_kselftest()).unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "TAP version 13");
        assert_eq!(lines[1], "1..6");
        assert!(t.contains("ok 1 drivers/net:ping.py ping.test_v4\n"), "{t}");
        assert!(
            t.contains("not ok 2 drivers/net:stats.py stats.check_pause # TODO FAIL as the expectations file says: no no. stats / at all\n"),
            "{t}"
        );
        assert!(
            t.contains("ok 3 drivers/net:stats.py stats.check_fec # SKIP no FEC\n"),
            "{t}"
        );
        assert!(
            t.contains("not ok 4 drivers/net:csum.py csum.x # TIMEOUT slow\n"),
            "{t}"
        );
        assert!(
            t.contains("# bad\nnot ok 5 drivers/net:xdp.py xdp.y\n"),
            "{t}"
        );
        assert!(
            t.contains("ok 6 drivers/net:q.py q.z # XFAIL known\n"),
            "{t}"
        );
        assert!(kselftest(&cell("sid", "qemu-igb", 0.5, 1.0, false)).is_none());
    }

    #[test]
    fn the_project_s_own_ktap_reader_reads_back_every_point() {
        let t = kselftest(&with_kselftest()).unwrap();
        let doc = reader::parse(t.lines());
        assert_eq!(doc.plan, Some(6));
        let st: Vec<CaseStatus> = doc.points.iter().map(|p| p.status).collect();
        assert_eq!(
            st,
            [
                CaseStatus::Pass,
                CaseStatus::Fail,
                CaseStatus::Skip,
                CaseStatus::Fail,
                CaseStatus::Fail,
                CaseStatus::Xfail
            ]
        );
    }

    #[test]
    fn scenarios_file_lists_each_failed_check_before_its_point() {
        let mut c = cell("sid", "nicemu-igb", 0.5, 600.0, true);
        c.scenarios[2].add_failure("CPU1 p99 # beyond the histogram");
        c.scenarios[0].set_skip("needs a peer");
        let t = scenarios(&c);
        assert_eq!(
            t,
            "TAP version 13\n1..3\n\
             ok 1 ping # SKIP needs a peer\n\
             # TCP_RR: no result\n\
             not ok 2 netperf\n\
             # CPU1 p99 no. beyond the histogram\n\
             not ok 3 cyclictest\n"
        );
    }

    #[test]
    fn splats_are_points_after_the_scenarios() {
        let r = crate::report::splats::tests::with_splats();
        let t = scenarios(&r.runs[0]);
        assert!(
            t.contains("not ok 4 kernel splat: WARNING in igb_xmit_frame_ring\n"),
            "{t}"
        );
        let t = scenarios(&r.runs[1]);
        assert!(
            t.contains(" kernel splat: ")
                && t.contains("# SKIP ignored by ignore.toml:3: on purpose"),
            "{t}"
        );
    }
}
