// SPDX-License-Identifier: Apache-2.0
//! JUnit XML for CI systems, written with `quick-junit` (nextest's JUnit writer): one test
//! suite per (kernel, device) cell, one test case per scenario, per kernel selftest case and
//! per kernel splat.
//!
//! Each case's `system-out` is what the guest printed for it (its section of the cell's
//! `serial.log`, when the log is there to read) or its summary and metrics, followed by the
//! cell's logs as attachments in the `[[ATTACHMENT|path]]` form CI plugins pick up (Jenkins'
//! junit-attachments; GitLab shows the lines as links); the suite's `system-out` lists them
//! too. A failed case's text has each failed check on a line of its own.

use std::path::Path;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{cell_files, CellRun, RunReport};
use crate::error::{Error, Result};
use crate::scenario::{ScenarioResult, Status};

/// Largest `system-out` taken from a serial log per case (its last bytes are kept).
const OUTPUT_MAX: usize = 64 * 1024;

/// The lines of `serial` from `@@NICEMU-BEGIN name` to `@@NICEMU-DONE name` (the
/// scenario's own output), at most [`OUTPUT_MAX`] bytes of its end.
pub fn section_output(serial: &str, name: &str) -> Option<String> {
    let begin = format!("@@NICEMU-BEGIN {name}");
    let done = format!("@@NICEMU-DONE {name} ");
    let mut lines = Vec::new();
    let mut inside = false;
    for l in serial.lines() {
        let l = l.trim_end_matches('\r');
        if !inside {
            inside = l.contains(&begin) && l.trim_end().ends_with(name);
            continue;
        }
        if l.contains(&done) || l.trim_end().ends_with(&format!("@@NICEMU-DONE {name}")) {
            lines.push(l);
            break;
        }
        lines.push(l);
    }
    if !inside {
        return None;
    }
    let text = lines.join("\n");
    if text.len() <= OUTPUT_MAX {
        return Some(text);
    }
    let mut cut = text.len() - OUTPUT_MAX;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    Some(format!("[… first {cut} bytes left out]\n{}", &text[cut..]))
}

/// The attachment lines of a cell's logs.
fn attachments(c: &CellRun) -> String {
    cell_files::existing(c)
        .iter()
        .map(|f| format!("[[ATTACHMENT|{}]]\n", Path::new(&c.dir).join(f).display()))
        .collect()
}

/// The text of a scenario's case: its guest output when `serial` has it, else its summary
/// and metrics.
fn scenario_output(r: &ScenarioResult, serial: Option<&str>) -> String {
    if let Some(out) = serial.and_then(|s| section_output(s, &r.scenario)) {
        return out;
    }
    let mut s = String::new();
    if let Some(sum) = &r.summary {
        s.push_str(&format!("{sum}\n"));
    }
    if !r.metrics.is_empty() {
        s.push_str(&serde_json::to_string_pretty(&r.metrics).unwrap_or_default());
        s.push('\n');
    }
    s
}

fn seconds(x: f64) -> Duration {
    Duration::try_from_secs_f64(x).unwrap_or_default()
}

/// A failed case's status: the message line, each failed check on a line of its own, the
/// console's last lines and where the logs are.
fn failure(message: &str, checks: &[String], c: &CellRun) -> TestCaseStatus {
    let mut st = TestCaseStatus::non_success(NonSuccessKind::Failure);
    st.set_message(message);
    let mut text: String = checks.iter().map(|l| format!("{l}\n")).collect();
    if !c.console_tail.is_empty() {
        text.push_str("console (last lines):\n");
        text.push_str(&c.console_tail.join("\n"));
        text.push('\n');
    }
    text.push_str(&format!("logs: {}", c.dir));
    st.set_description(text);
    st
}

fn skipped(message: &str) -> TestCaseStatus {
    let mut st = TestCaseStatus::skipped();
    st.set_message(message);
    st
}

/// The test cases of one cell: its kernel splats first (class `…splat`, named by the
/// fingerprint, the report's text as `system-out`; an ignored one skipped with its entry
/// and reason), one per scenario, then one per `kselftest` case (class `…kselftest`; a
/// case that does not pass but is what the expectations file says is `skipped` with the
/// result in its message, one that deviates is a failure).
fn cases(c: &CellRun, serial: Option<&str>) -> Vec<TestCase> {
    let class = format!("nicemu.{}.{}", c.kernel, c.device);
    let files = attachments(c);
    let mut v = Vec::new();
    for sp in &c.splats {
        let st = match &sp.ignored {
            None => failure(&format!("{} during {}", sp.headline(), sp.during), &[], c),
            Some(i) => skipped(&format!("ignored by {}: {}", i.entry, i.reason)),
        };
        let mut tc = TestCase::new(sp.fingerprint.clone(), st);
        tc.set_classname(format!("{class}.splat"));
        tc.set_system_out(format!("{}\n{files}", sp.full_text()));
        v.push(tc);
    }
    for r in &c.scenarios {
        let message = r.reason.clone().unwrap_or_default();
        let st = match r.status {
            Status::Pass => TestCaseStatus::success(),
            Status::Skip => skipped(&message),
            Status::Fail => failure(&message, &r.failed_checks(), c),
        };
        let mut tc = TestCase::new(r.scenario.clone(), st);
        tc.set_classname(class.clone());
        if let Some(t) = r.metrics.get("guest_secs").and_then(|v| v.as_f64()) {
            tc.set_time(seconds(t));
        }
        tc.set_system_out(format!("{}\n{files}", scenario_output(r, serial)));
        v.push(tc);
    }
    let one = RunReport {
        runs: vec![c.clone()],
        ..super::empty_report()
    };
    for (name, program, cells) in super::cases::table(&one).rows {
        let Some(cell) = cells.into_iter().next().flatten() else {
            continue;
        };
        let reason = cell.reason.unwrap_or_default();
        let st = match (cell.status.as_str(), cell.deviates) {
            ("PASS", false) => TestCaseStatus::success(),
            (_, true) => failure(&format!("{}: {reason}", cell.status), &[], c),
            ("SKIP", false) => skipped(&reason),
            (st, false) => skipped(&format!("{st} (as expected): {reason}")),
        };
        let mut tc = TestCase::new(name, st);
        tc.set_classname(format!("{class}.kselftest"));
        tc.set_system_out(format!("program: {program}\n{files}"));
        v.push(tc);
    }
    v
}

/// Reads a cell's serial.log when it is there (a report rendered where the run ran).
fn serial_log(c: &CellRun) -> Option<String> {
    let p = Path::new(&c.dir).join("serial.log");
    let bytes = std::fs::read(p).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Renders the report as JUnit XML; `read_logs` takes each case's output from the cells'
/// serial logs where they exist.
pub fn render_with(report: &RunReport, read_logs: bool) -> String {
    let mut out = Report::new("nicemu-guest");
    out.set_time(seconds(report.wall_secs));
    if let Some(t) = report
        .env
        .as_ref()
        .and_then(|e| e.started.as_deref())
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    {
        out.set_timestamp(t);
    }
    for c in &report.runs {
        let serial = read_logs.then(|| serial_log(c)).flatten();
        let mut suite = TestSuite::new(format!("{} / {}", c.kernel_label, c.device));
        suite.set_time(seconds(c.wall_secs));
        suite.add_property(Property::new("kernel", c.kernel_release.clone()));
        suite.add_property(Property::new("device", c.device.clone()));
        suite.add_property(Property::new("accel", report.accel.clone()));
        suite.add_property(Property::new("logs", c.dir.clone()));
        suite.add_test_cases(cases(c, serial.as_deref()));
        suite.set_system_out(attachments(c));
        out.add_test_suite(suite);
    }
    out.to_string().unwrap_or_else(|e| {
        // Serialising to a String has no I/O to fail; say so in the file if it ever does.
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- JUnit writer error: {e} -->\n<testsuites/>\n")
    })
}

/// Writes the JUnit XML to `path`, with each case's output from the serial logs.
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    std::fs::write(path, render_with(report, true)).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    /// The XML from the results alone (no log files read).
    fn render(report: &RunReport) -> String {
        render_with(report, false)
    }

    fn attr<'a>(n: roxmltree::Node<'a, 'a>, a: &str) -> &'a str {
        n.attribute(a).unwrap_or("")
    }

    fn testcases<'a>(doc: &'a roxmltree::Document<'a>) -> Vec<roxmltree::Node<'a, 'a>> {
        doc.descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .collect()
    }

    fn child<'a>(n: roxmltree::Node<'a, 'a>, tag: &str) -> Option<roxmltree::Node<'a, 'a>> {
        n.children().find(|c| c.has_tag_name(tag))
    }

    #[test]
    fn suites_cases_failures_and_escaping() {
        let mut c = cell("sid", "qemu-igb", 0.5, 600.0, true);
        c.scenarios[1].add_failure("TCP_STREAM below 1 Mbit/s");
        c.scenarios[0].set_skip("needs <peer> & more");
        c.dir = "/runs/1/1-sid-qemu-igb".into();
        let x = render(&report("r", vec![c]));
        let doc = roxmltree::Document::parse(&x).unwrap();
        let root = doc.root_element();
        assert_eq!(attr(root, "name"), "nicemu-guest");
        assert_eq!(
            (
                attr(root, "tests"),
                attr(root, "failures"),
                attr(root, "skipped")
            ),
            ("3", "1", "1")
        );
        let cs = testcases(&doc);
        assert_eq!(cs.len(), 3);
        assert_eq!(attr(cs[1], "classname"), "nicemu.sid.qemu-igb");
        assert_eq!(attr(cs[1], "name"), "netperf");
        let f = child(cs[1], "failure").unwrap();
        assert_eq!(
            attr(f, "message"),
            "TCP_RR: no result; TCP_STREAM below 1 Mbit/s"
        );
        let text = f.text().unwrap();
        assert!(
            text.starts_with("TCP_RR: no result\nTCP_STREAM below 1 Mbit/s\n"),
            "{text}"
        );
        assert!(text.ends_with("logs: /runs/1/1-sid-qemu-igb"), "{text}");
        let sk = child(cs[0], "skipped").unwrap();
        assert_eq!(attr(sk, "message"), "needs <peer> & more");
        assert!(x.contains("needs &lt;peer&gt; &amp; more"));
    }

    #[test]
    fn each_case_has_its_output_and_the_cell_s_logs_as_attachments() {
        let mut c = cell("sid", "nicemu-igb", 0.5, 600.0, false);
        c.dir = "/runs/1/1-sid-nicemu-igb".into();
        let x = render(&report("r", vec![c]));
        let doc = roxmltree::Document::parse(&x).unwrap();
        let ping = testcases(&doc)[0];
        let out = child(ping, "system-out").unwrap().text().unwrap();
        assert!(out.starts_with("0% loss, 0.5 ms\n"), "{out}");
        assert!(out.contains("\"rtt_avg_ms\": 0.5"), "{out}");
        for f in ["serial.log", "kernel.log", "qemu.log", "nicemu.log"] {
            assert!(
                out.contains(&format!("[[ATTACHMENT|/runs/1/1-sid-nicemu-igb/{f}]]")),
                "{f}: {out}"
            );
        }
        let suite = doc
            .descendants()
            .find(|n| n.has_tag_name("testsuite"))
            .unwrap();
        let sout = child(suite, "system-out").unwrap().text().unwrap();
        assert!(sout.contains("[[ATTACHMENT|/runs/1/1-sid-nicemu-igb/serial.log]]"));
        assert!(suite
            .descendants()
            .any(|p| p.has_tag_name("property") && attr(p, "name") == "logs"));
    }

    #[test]
    fn a_scenario_s_output_is_its_section_of_the_serial_log() {
        let serial = "boot noise\n@@NICEMU-BEGIN ping\nPING 10.0.0.2\n64 bytes from 10.0.0.2\n\
                      @@NICEMU ping loss_pct=0\n@@NICEMU-DONE ping rc=0 uptime=9.1\n\
                      @@NICEMU-BEGIN netperf\nother\n";
        let out = section_output(serial, "ping").unwrap();
        assert_eq!(
            out,
            "PING 10.0.0.2\n64 bytes from 10.0.0.2\n@@NICEMU ping loss_pct=0\n@@NICEMU-DONE ping rc=0 uptime=9.1"
        );
        assert_eq!(section_output(serial, "netperf").unwrap(), "other");
        assert!(section_output(serial, "rss").is_none());
        let big = format!(
            "@@NICEMU-BEGIN x\n{}\n@@NICEMU-DONE x rc=0\n",
            "é".repeat(OUTPUT_MAX)
        );
        let out = section_output(&big, "x").unwrap();
        assert!(out.len() <= OUTPUT_MAX + 64, "{}", out.len());
        assert!(out.starts_with("[… first "), "{}", &out[..40]);
    }

    #[test]
    fn splats_are_the_first_cases_with_their_text_as_system_out() {
        let x = render(&crate::report::splats::tests::with_splats());
        let doc = roxmltree::Document::parse(&x).unwrap();
        let suites: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        let first = child(suites[0], "testcase").unwrap();
        assert_eq!(attr(first, "classname"), "nicemu.sid.nicemu-igb.splat");
        assert_eq!(attr(first, "name"), "WARNING in igb_xmit_frame_ring");
        let f = child(first, "failure").unwrap();
        assert_eq!(
            attr(f, "message"),
            "WARNING in igb_xmit_frame_ring (igb_main.c:6533) during ping"
        );
        let out = child(first, "system-out").unwrap();
        assert!(out
            .text()
            .unwrap()
            .contains("---[ end trace 0000000000000000 ]---"));
        let ignored = child(suites[1], "testcase").unwrap();
        let sk = child(ignored, "skipped").unwrap();
        assert_eq!(attr(sk, "message"), "ignored by ignore.toml:3: on purpose");
        let root = doc.root_element();
        assert_eq!(
            (
                attr(root, "tests"),
                attr(root, "failures"),
                attr(root, "skipped")
            ),
            ("8", "1", "1")
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
        let doc = roxmltree::Document::parse(&x).unwrap();
        let root = doc.root_element();
        assert_eq!(
            (
                attr(root, "tests"),
                attr(root, "failures"),
                attr(root, "skipped")
            ),
            ("8", "2", "2")
        );
        let cs = testcases(&doc);
        let by = |n: &str| *cs.iter().find(|c| attr(**c, "name") == n).unwrap();
        assert_eq!(
            attr(by("ping.test_v4"), "classname"),
            "nicemu.sid.nicemu-igb.kselftest"
        );
        assert_eq!(
            attr(
                child(by("stats.check_pause"), "skipped").unwrap(),
                "message"
            ),
            "FAIL (as expected): no stats"
        );
        assert_eq!(
            attr(child(by("csum.x"), "failure").unwrap(), "message"),
            "TIMEOUT: slow"
        );
    }
}
