// SPDX-License-Identifier: Apache-2.0
//! KTAP files for TAP tooling, one pair per cell in the cell's directory:
//! `kselftest.tap` (one test point per kernel selftest case) and `scenarios.tap` (one per
//! scenario, each with a subtest of one point per check it made, then one per kernel splat).
//!
//! The format is KTAP version 1 as the kernel's `Documentation/dev-tools/ktap.rst` describes
//! it, with the version line kselftest itself prints (`TAP version 13`, which KTAP accepts),
//! so that plain TAP 13 consumers read every top-level point too. A subtest is a whole
//! document of its own (version line, plan, points) indented by four spaces before the point
//! of its parent, which names it (KTAP's nesting; KUnit's optional `# Subtest: NAME` line is
//! left out: between the version line and the plan it breaks TAP 13's plan rule, which a
//! subtest read on its own must keep); TAP 13 consumers that do not nest skip its lines.
//! Points:
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
    /// The subtest before the point: its points (its name is the point's).
    sub: Option<Vec<Point>>,
}

impl Point {
    fn flat(ok: bool, name: String, directive: Option<String>, diag: Vec<String>) -> Self {
        Point {
            ok,
            name,
            directive,
            diag,
            sub: None,
        }
    }
}

/// Indentation of one nesting level.
const INDENT: &str = "    ";

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
    body(&mut s, points);
    s
}

fn body(s: &mut String, points: &[Point]) {
    for (i, p) in points.iter().enumerate() {
        if let Some(sub) = &p.sub {
            s.push_str(&format!(
                "{INDENT}TAP version 13\n{INDENT}1..{}\n",
                sub.len()
            ));
            let mut inner = String::new();
            body(&mut inner, sub);
            for l in inner.lines() {
                s.push_str(&format!("{INDENT}{l}\n"));
            }
        }
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
        points.push(Point::flat(
            ok,
            format!("{} {name}", field("program")),
            directive,
            diag,
        ));
    }
    Some(document(&points))
}

/// `scenarios.tap` of one cell: the network setup (when it ran), one point per scenario
/// (each failed check a diagnostic line before it, and before that the subtest of every
/// check it made, passed or failed, in order), then one per kernel splat (failed, or skipped
/// with the ignore list's reason).
pub fn scenarios(c: &CellRun) -> String {
    let mut points = Vec::new();
    if let Some(e) = &c.error {
        points.push(Point::flat(false, "boot".into(), None, vec![e.clone()]));
    }
    for r in c.setup.iter().chain(&c.scenarios) {
        let checks: Vec<Point> = r
            .points()
            .into_iter()
            .map(|(name, failure)| match failure {
                None => Point::flat(true, name, None, Vec::new()),
                Some(f) if f == name => Point::flat(false, name, None, Vec::new()),
                Some(f) => Point::flat(false, name, None, vec![f]),
            })
            .collect();
        let mut p = match r.status {
            Status::Pass => Point::flat(
                true,
                r.scenario.clone(),
                None,
                r.summary.clone().into_iter().collect(),
            ),
            Status::Skip => Point::flat(
                true,
                r.scenario.clone(),
                Some(format!("SKIP {}", r.reason.as_deref().unwrap_or(""))),
                Vec::new(),
            ),
            Status::Fail => Point::flat(false, r.scenario.clone(), None, r.failed_checks()),
        };
        if !checks.is_empty() {
            p.sub = Some(checks);
        }
        points.push(p);
    }
    for sp in &c.splats {
        points.push(Point::flat(
            !sp.fails(),
            format!("kernel splat: {}", sp.fingerprint),
            sp.ignored
                .as_ref()
                .map(|i| format!("SKIP ignored by {}: {}", i.entry, i.reason)),
            vec![format!("{} during {}", sp.headline(), sp.during)],
        ));
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
        // Failures recorded without a check's name (and results of schema 2, which have
        // no checks) are points named by what they say.
        let mut c = cell("sid", "nicemu-igb", 0.5, 600.0, true);
        c.scenarios[2].add_failure("CPU1 p99 # beyond the histogram");
        c.scenarios[0].set_skip("needs a peer");
        let t = scenarios(&c);
        assert_eq!(
            t,
            "TAP version 13\n1..3\n\
             ok 1 ping # SKIP needs a peer\n\
             \x20   TAP version 13\n\
             \x20   1..1\n\
             \x20   not ok 1 TCP_RR: no result\n\
             # TCP_RR: no result\n\
             not ok 2 netperf\n\
             \x20   TAP version 13\n\
             \x20   1..1\n\
             \x20   not ok 1 CPU1 p99 no. beyond the histogram\n\
             # CPU1 p99 no. beyond the histogram\n\
             not ok 3 cyclictest\n"
        );
    }

    #[test]
    fn each_named_check_is_a_point_of_its_scenario_s_subtest() {
        let mut c = cell("sid", "nicemu-igb", 0.5, 600.0, false);
        c.scenarios.truncate(1);
        let r = &mut c.scenarios[0];
        r.check_passed("summary printed");
        r.check("replies received", true, String::new);
        r.check("loss within ping.max_loss", false, || {
            "5% loss (19 of 20 replies)".into()
        });
        r.add_failure("an unnamed # failure");
        let t = scenarios(&c);
        assert_eq!(
            t,
            "TAP version 13\n1..1\n\
             \x20   TAP version 13\n\
             \x20   1..4\n\
             \x20   ok 1 summary printed\n\
             \x20   ok 2 replies received\n\
             \x20   # 5% loss (19 of 20 replies)\n\
             \x20   not ok 3 loss within ping.max_loss\n\
             \x20   not ok 4 an unnamed no. failure\n\
             # 5% loss (19 of 20 replies)\n\
             # an unnamed no. failure\n\
             not ok 1 ping\n"
        );
        // The subtest, dedented, is a document the project's reader reads point by point.
        let sub: Vec<&str> = t.lines().filter_map(|l| l.strip_prefix(INDENT)).collect();
        let doc = reader::parse(sub.iter().copied());
        assert_eq!(doc.plan, Some(4));
        let st: Vec<CaseStatus> = doc.points.iter().map(|p| p.status).collect();
        use CaseStatus::{Fail, Pass};
        assert_eq!(st, [Pass, Pass, Fail, Fail]);
        // The top level, read by a consumer that skips indented lines, is one point.
        let top = reader::parse(t.lines());
        assert_eq!((top.plan, top.points.len()), (Some(1), 1));
    }

    #[test]
    fn a_real_capture_gives_one_point_per_check_the_scenarios_made() {
        let c = crate::scenario::fixture_tests::capture_cell();
        let t = scenarios(&c);
        // Probe on QEMU's igb in the capture: every check it makes, passed (the capture
        // predates the guest's `ethtool IFACE` lines, so speed and link are not checked).
        assert!(
            t.contains(
                "    TAP version 13\n    1..6\n\
                 \x20   ok 1 ran to the end\n\
                 \x20   ok 2 interface found\n\
                 \x20   ok 3 driver bound\n\
                 \x20   ok 4 MAC address\n\
                 \x20   ok 5 carrier up\n\
                 \x20   ok 6 no driver errors in dmesg\n\
                 # igb 2.1.0\nok 2 probe\n"
            ),
            "{t}"
        );
        // Each subtest's plan, by the scenario whose point follows it.
        let mut plans = Vec::new();
        let mut plan = None;
        for l in t.lines() {
            if let Some(p) = l.strip_prefix("    1..") {
                plan = Some(p.to_owned());
            } else if !l.starts_with(INDENT) && (l.starts_with("ok ") || l.starts_with("not ok")) {
                let name = l.split_whitespace().last().unwrap_or("").to_owned();
                plans.push((name, plan.take()));
            }
        }
        let want: Vec<(String, Option<String>)> = [
            ("net", 6),
            ("probe", 6),
            ("ping", 4),
            ("netperf", 7),
            ("cyclictest", 3),
        ]
        .iter()
        .map(|(n, c)| ((*n).to_owned(), Some(c.to_string())))
        .collect();
        assert_eq!(plans, want, "{t}");
        let n: usize = c
            .setup
            .iter()
            .chain(&c.scenarios)
            .map(|r| r.checks.len())
            .sum();
        assert_eq!(t.matches("\n    ok ").count(), n, "{t}");
        assert!(!t.contains("not ok"), "{t}");
    }

    /// ci/check-tap (tappy, what ci/test reads every run's KTAP files with) reads the
    /// files of a real capture and of a failing cell, subtests included, as results.json
    /// says. Needs Debian's python3-tap (ci/test installs it); without it the test says so
    /// and checks nothing else.
    #[test]
    fn ci_check_tap_reads_the_files_and_their_subtests() {
        let has_tappy = std::process::Command::new("/usr/bin/python3")
            .args(["-c", "import tap"])
            .status()
            .is_ok_and(|s| s.success());
        if !has_tappy {
            eprintln!("skipped: no tappy (apt-get install python3-tap)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("nicemu-ktap-{}", std::process::id()));
        let mut good = crate::scenario::fixture_tests::capture_cell();
        let mut bad = cell("sid", "nicemu-igb", 0.5, 600.0, true);
        bad.scenarios[0].check_failed("replies received", "no replies to 20 requests");
        for (c, n) in [(&mut good, "1-good"), (&mut bad, "2-bad")] {
            c.dir = dir.join(n).to_string_lossy().into_owned();
            std::fs::create_dir_all(&c.dir).unwrap();
        }
        let report = crate::report::testdata::report("r", vec![good, bad]);
        write_cells(&report).unwrap();
        let json = dir.join("results.json");
        std::fs::write(&json, serde_json::to_string(&report).unwrap()).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ci/check-tap");
        let run = |json: &Path| {
            let out = std::process::Command::new(&script)
                .arg(json)
                .output()
                .unwrap();
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            )
        };
        let (code, out) = run(&json);
        let points: usize = report
            .runs
            .iter()
            .map(|c| {
                c.setup.iter().chain(&c.scenarios).count()
                    + c.setup
                        .iter()
                        .chain(&c.scenarios)
                        .map(|r| r.points().len())
                        .sum::<usize>()
            })
            .sum();
        assert_eq!(code, Some(0), "{out}");
        assert!(
            out.ends_with(&format!(
                "check-tap: 2 cell(s), {points} TAP points read by tappy; 0 problem(s)\n"
            )),
            "{out}"
        );
        // A check the file does not have is found.
        let mut lying = report.clone();
        lying.runs[0].scenarios[0].check_passed("a check never written");
        std::fs::write(&json, serde_json::to_string(&lying).unwrap()).unwrap();
        let (code, out) = run(&json);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("probe's subtest: points"), "{out}");
        std::fs::remove_dir_all(&dir).unwrap();
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
