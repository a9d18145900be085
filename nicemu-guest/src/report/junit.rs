// SPDX-License-Identifier: Apache-2.0
//! JUnit XML for CI systems: one test suite per (kernel, device), one test case per scenario.

use std::path::Path;

use super::escape::esc;
use super::RunReport;
use crate::error::{Error, Result};
use crate::scenario::Status;

/// One JUnit test case.
struct Entry {
    class: String,
    name: String,
    time: f64,
    status: Status,
    message: String,
    /// The case's `system-out` (a splat's report text).
    out: String,
}

/// The kernel splats of a cell, first: a failed case each (class `…splat`, named by the
/// fingerprint), an ignored one skipped with its entry and reason; the report's text is the
/// case's `system-out`.
fn splat_entries(c: &super::CellRun, class: &str) -> Vec<Entry> {
    c.splats
        .iter()
        .map(|sp| Entry {
            class: format!("{class}.splat"),
            name: sp.fingerprint.clone(),
            time: 0.0,
            status: if sp.fails() {
                Status::Fail
            } else {
                Status::Skip
            },
            message: match &sp.ignored {
                None => format!("{} during {}", sp.headline(), sp.during),
                Some(i) => format!("ignored by {}: {}", i.entry, i.reason),
            },
            out: sp.full_text(),
        })
        .collect()
}

/// The test cases of one cell: one per scenario, plus one per `kselftest` case (class
/// `…kselftest`; a case that does not pass but is what the expectations file says is
/// `skipped` with the result in its message, one that deviates is a failure).
fn entries(c: &super::CellRun) -> Vec<Entry> {
    let class = format!("nicemu.{}.{}", c.kernel, c.device);
    let mut v = splat_entries(c, &class);
    for r in &c.scenarios {
        v.push(Entry {
            class: class.clone(),
            name: r.scenario.clone(),
            time: r
                .metrics
                .get("guest_secs")
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0),
            status: r.status,
            message: r.reason.clone().unwrap_or_default(),
            out: String::new(),
        });
    }
    let one = super::RunReport {
        runs: vec![c.clone()],
        ..super::empty_report()
    };
    for (name, _, cells) in super::cases::table(&one).rows {
        let Some(cell) = cells.into_iter().next().flatten() else {
            continue;
        };
        let reason = cell.reason.unwrap_or_default();
        let (status, message) = match (cell.status.as_str(), cell.deviates) {
            ("PASS", false) => (Status::Pass, String::new()),
            (_, true) => (Status::Fail, format!("{}: {reason}", cell.status)),
            ("SKIP", false) => (Status::Skip, reason),
            (st, false) => (Status::Skip, format!("{st} (as expected): {reason}")),
        };
        v.push(Entry {
            class: format!("{class}.kselftest"),
            name,
            time: 0.0,
            status,
            message,
            out: String::new(),
        });
    }
    v
}

/// Renders the report as JUnit XML.
pub fn render(report: &RunReport) -> String {
    let cells: Vec<Vec<Entry>> = report.runs.iter().map(entries).collect();
    let all = cells.iter().flatten();
    let count = |st: Status| cells.iter().flatten().filter(|e| e.status == st).count();
    let mut s = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"nicemu-guest\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.1}\">\n",
        all.count(),
        count(Status::Fail),
        count(Status::Skip),
        report.wall_secs
    );
    for (c, es) in report.runs.iter().zip(&cells) {
        let f = es.iter().filter(|e| e.status == Status::Fail).count();
        let k = es.iter().filter(|e| e.status == Status::Skip).count();
        s.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{f}\" skipped=\"{k}\" time=\"{:.1}\">\n",
            esc(&format!("{} / {}", c.kernel_label, c.device)),
            es.len(),
            c.wall_secs
        ));
        for e in es {
            s.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.2}\"",
                esc(&e.class),
                esc(&e.name),
                e.time
            ));
            let reason = esc(&e.message);
            let out = if e.out.is_empty() {
                String::new()
            } else {
                format!("\n      <system-out>{}</system-out>", esc(&e.out))
            };
            match e.status {
                Status::Pass => s.push_str(" />\n"),
                Status::Skip => s.push_str(&format!(
                    ">\n      <skipped message=\"{reason}\" />{out}\n    </testcase>\n"
                )),
                Status::Fail => {
                    let tail = esc(&c.console_tail.join("\n"));
                    s.push_str(&format!(
                        ">\n      <failure message=\"{reason}\">{reason}\n{tail}\nlogs: {}</failure>{out}\n    </testcase>\n",
                        esc(&c.dir)
                    ));
                }
            }
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

/// Writes the JUnit XML to `path`.
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    std::fs::write(path, render(report)).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    #[test]
    fn suites_cases_failures_and_escaping() {
        let mut c = cell("sid", "qemu-igb", 0.5, 600.0, true);
        c.scenarios[0].set_skip("needs <peer> & more");
        let x = render(&report("r", vec![c]));
        assert!(
            x.contains(
                "<testsuites name=\"nicemu-guest\" tests=\"3\" failures=\"1\" skipped=\"1\""
            ),
            "{x}"
        );
        assert!(x.contains("<testcase classname=\"nicemu.sid.qemu-igb\" name=\"netperf\""));
        assert!(x.contains("<failure message=\"TCP_RR: no result\">"));
        assert!(x.contains("<skipped message=\"needs &lt;peer&gt; &amp; more\" />"));
        assert_eq!(x.matches("<testcase").count(), 3);
    }

    #[test]
    fn splats_are_the_first_cases_with_their_text_as_system_out() {
        let x = render(&crate::report::splats::tests::with_splats());
        let doc = roxmltree::Document::parse(&x).unwrap();
        let suites: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        let first = suites[0]
            .children()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        assert_eq!(
            first.attribute("classname"),
            Some("nicemu.sid.nicemu-igb.splat")
        );
        assert_eq!(
            first.attribute("name"),
            Some("WARNING in igb_xmit_frame_ring")
        );
        let f = first
            .children()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert_eq!(
            f.attribute("message"),
            Some("WARNING in igb_xmit_frame_ring (igb_main.c:6533) during ping")
        );
        let out = first
            .children()
            .find(|n| n.has_tag_name("system-out"))
            .unwrap();
        assert!(out
            .text()
            .unwrap()
            .contains("---[ end trace 0000000000000000 ]---"));
        let ignored = suites[1]
            .children()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        let sk = ignored
            .children()
            .find(|n| n.has_tag_name("skipped"))
            .unwrap();
        assert_eq!(
            sk.attribute("message"),
            Some("ignored by ignore.toml:3: on purpose")
        );
        assert!(
            x.contains("tests=\"8\" failures=\"1\" skipped=\"1\""),
            "{x}"
        );
    }

    #[test]
    fn kselftest_cases_are_test_cases_and_only_deviations_fail() {
        let mut c = cell("sid", "nicemu-igb", 0.5, 600.0, false);
        let mut k = crate::scenario::ScenarioResult::pass("kselftest");
        k.metric(
            "cases",
            serde_json::json!([
                {"case": "ping.test_v4", "program": "p", "status": "PASS"},
                {"case": "stats.check_pause", "program": "s", "status": "FAIL", "reason": "no stats"},
                {"case": "stats.check_fec", "program": "s", "status": "SKIP", "reason": "no FEC"},
                {"case": "csum.x", "program": "c", "status": "TIMEOUT", "reason": "slow"}
            ]),
        );
        k.metric(
            "deviations",
            serde_json::json!(["csum.x: TIMEOUT (not in the expectations)"]),
        );
        k.add_failure("1 case(s) differ");
        c.scenarios.push(k);
        let x = render(&report("r", vec![c]));
        assert!(
            x.contains("tests=\"8\" failures=\"2\" skipped=\"2\""),
            "{x}"
        );
        assert!(x.contains("classname=\"nicemu.sid.nicemu-igb.kselftest\" name=\"ping.test_v4\""));
        assert!(
            x.contains("<skipped message=\"FAIL (as expected): no stats\" />"),
            "{x}"
        );
        assert!(x.contains("<failure message=\"TIMEOUT: slow\">"), "{x}");
    }
}
