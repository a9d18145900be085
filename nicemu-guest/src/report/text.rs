// SPDX-License-Identifier: Apache-2.0
//! Plain-text results for a mail or a cover letter (`report --format text`, `compare
//! --format text`): at most [`WIDTH`] columns, the verdict lines first, the tables, then a
//! "Tested-on:" block (nicemu version and commit, QEMU, kernels, devices, accel, host cores)
//! and, under TCG, a one-line caveat. Tables are laid out by `comfy-table`, which wraps
//! cells to the width.

use comfy_table::{presets, ContentArrangement, Table};

use super::compare::{self, Row};
use super::metric_select::Select;
use super::RunReport;
use crate::scenario::Status;

/// The widest line.
pub const WIDTH: u16 = 75;

/// Under TCG, said once under the Tested-on block.
pub const TCG_CAVEAT: &str =
    "TCG emulates the guest CPU in software: rates are not hardware figures.";

/// `report --format text`.
pub fn report(r: &RunReport) -> String {
    let (pass, fail, skip) = r.counts();
    let verdict = if fail == 0 { "PASS" } else { "FAIL" };
    let mut s = format!(
        "{verdict}: {pass} passed, {fail} failed, {skip} skipped in {} guest(s)\n",
        r.runs.len()
    );
    if let Some(sab) = &r.splat_ab {
        for l in sab.verdict_lines() {
            s.push_str(&wrap(&l));
        }
    }
    for c in &r.runs {
        for sp in c.failing_splats() {
            s.push_str(&wrap(&format!(
                "FAIL {} kernel splat: {} during {}",
                c.device,
                sp.headline(),
                sp.during
            )));
        }
    }
    for c in &r.runs {
        for sr in c.scenarios.iter().filter(|x| x.status == Status::Fail) {
            let why = sr.reason.as_deref().unwrap_or("failed");
            s.push_str(&wrap(&format!("FAIL {} {}: {why}", c.device, sr.scenario)));
        }
        if let Some(e) = &c.error {
            s.push_str(&wrap(&format!("FAIL {}: {e}", c.device)));
        }
    }
    if let Some(ab) = &r.ab {
        s.push_str(&ab_verdicts(ab));
    }
    s.push('\n');
    let mut t = table(&["device", "scenario", "result"]);
    for c in &r.runs {
        for sr in &c.scenarios {
            let summary = super::markdown::headline(sr)
                .or(sr.reason.clone())
                .unwrap_or_default();
            t.add_row(vec![
                c.device.clone(),
                sr.scenario.clone(),
                format!("{} {summary}", sr.status),
            ]);
        }
    }
    s.push_str(&format!("{t}\n\n"));
    s.push_str(&tested_on(r));
    s
}

/// `compare --format text`: verdict lines (status changes; with rounds, the tested
/// verdicts), the metrics `select` keeps, and each side's Tested-on block.
pub fn compare(a: &RunReport, b: &RunReport, select: &Select) -> String {
    let (la, lb) = compare::labels(a, b);
    let rows = compare::rows(a, b, select);
    let mut s = String::new();
    let changed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.metric.is_empty() && !r.delta.is_empty())
        .collect();
    if changed.is_empty() {
        s.push_str("Status: the same in every scenario of every device.\n");
    }
    for r in &changed {
        s.push_str(&wrap(&format!(
            "Status changed: {} {}: {} -> {}",
            r.device, r.scenario, r.a, r.b
        )));
    }
    s.push_str(&wrap(
        "Values are single runs, not tested for significance (run --rounds N for verdicts).",
    ));
    s.push_str(&wrap(&format!("A: {la}")));
    s.push_str(&wrap(&format!("B: {lb}")));
    s.push('\n');
    let mut devices: Vec<&str> = Vec::new();
    for r in &rows {
        if !devices.contains(&r.device.as_str()) {
            devices.push(&r.device);
        }
    }
    for d in devices {
        let mut t = table(&["metric", "A", "B", "B vs A"]);
        for r in rows.iter().filter(|r| r.device == d) {
            let metric = if r.metric.is_empty() {
                format!("{} status", r.scenario)
            } else {
                format!("{}.{}", r.scenario, r.metric)
            };
            t.add_row(vec![metric, r.a.clone(), r.b.clone(), r.delta.clone()]);
        }
        s.push_str(&format!("{d}:\n{t}\n\n"));
    }
    if a.env == b.env && a.accel == b.accel {
        s.push_str(&tested_on(a));
    } else {
        s.push_str("A ");
        s.push_str(&tested_on(a));
        s.push_str("B ");
        s.push_str(&tested_on(b));
    }
    s
}

/// The headline verdicts of an A/B run with rounds, one line each: instruction counts
/// (deterministic under TCG) first, then the rates and times.
fn ab_verdicts(ab: &super::ab_record::AbSummary) -> String {
    let mut s = String::new();
    let any_main = ab.metrics.iter().any(|m| m.main);
    let shown = |m: &&super::ab_record::AbMetric| m.main || !any_main;
    let counts = ab.metrics.iter().filter(|m| m.count).filter(shown);
    for m in counts.chain(ab.metrics.iter().filter(|m| !m.count).filter(shown)) {
        let Some(v) = &m.verdict else { continue };
        s.push_str(&wrap(&format!(
            "B vs A, {} {}.{}: {}",
            m.device,
            m.scenario,
            m.metric,
            v.headline()
        )));
    }
    s
}

/// The "Tested-on:" block and, under TCG, the caveat.
pub fn tested_on(r: &RunReport) -> String {
    let mut kernels: Vec<&str> = Vec::new();
    let mut devices: Vec<&str> = Vec::new();
    for c in &r.runs {
        if !kernels.contains(&c.kernel_label.as_str()) {
            kernels.push(&c.kernel_label);
        }
        if !devices.contains(&c.device.as_str()) {
            devices.push(&c.device);
        }
    }
    let env = r.env.as_ref();
    let unknown = || "unknown".to_owned();
    let nicemu = env
        .and_then(|e| e.nicemu_version.clone())
        .unwrap_or_else(unknown);
    let qemu = env
        .and_then(|e| e.qemu_version.clone())
        .map(|q| q.replace("QEMU emulator version ", ""))
        .unwrap_or_else(unknown);
    let host = env.map_or_else(unknown, |e| match e.load_avg {
        Some(l) => format!("{} cores (load {l:.1})", e.host_cores),
        None => format!("{} cores", e.host_cores),
    });
    let mut s = String::from("Tested-on:\n");
    for (k, v) in [
        ("nicemu", nicemu),
        ("QEMU", qemu),
        ("kernel", kernels.join(", ")),
        ("devices", devices.join(", ")),
        (
            "accel",
            format!("{}, {} vCPUs, {} MiB", r.accel, r.smp, r.mem_mb),
        ),
        ("host", host),
    ] {
        s.push_str(&wrap_indented(&format!("  {k:<9}"), 11, &v));
    }
    if r.accel == "tcg" {
        s.push_str(TCG_CAVEAT);
        s.push('\n');
    }
    s
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::ASCII_BORDERS_ONLY_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(WIDTH)
        .set_header(header.to_vec());
    t
}

/// `line` wrapped at [`WIDTH`] columns, continuation lines indented by two.
fn wrap(line: &str) -> String {
    wrap_indented("", 2, line)
}

/// `prefix` then `text` wrapped at [`WIDTH`] columns, continuation lines indented by
/// `indent`.
fn wrap_indented(prefix: &str, indent: usize, text: &str) -> String {
    let width = usize::from(WIDTH);
    let indent = " ".repeat(indent);
    let mut out = String::new();
    let mut cur = prefix.to_owned();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && cur.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&cur);
            out.push('\n');
            cur.clone_from(&indent);
            empty = true;
        }
        if !empty {
            cur.push(' ');
        }
        cur.push_str(word);
        empty = false;
    }
    out.push_str(&cur);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::run_env::RunEnv;
    use crate::report::testdata::{cell, report as run};

    fn env() -> RunEnv {
        RunEnv {
            host_cores: 2,
            nicemu_version: Some("nicemu 0.1.0 (5a2ed05c1d2e)".into()),
            qemu_version: Some("QEMU emulator version 11.1.3 (Debian 1:11.1.3+ds-1)".into()),
            pinning: None,
            load_avg: Some(3.25),
            started: None,
            command: None,
        }
    }

    fn widths_ok(text: &str) {
        for l in text.lines() {
            assert!(
                l.chars().count() <= 75,
                "{} columns: {l}",
                l.chars().count()
            );
        }
    }

    /// The main job's results as the fresh-machine run wrote them.
    fn main_job() -> RunReport {
        let text = include_str!("../../tests/fixtures/main-job.results.json");
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_main_job_s_report_fits_75_columns_with_verdict_first_and_tested_on() {
        let t = report(&main_job());
        widths_ok(&t);
        let first = t.lines().next().unwrap();
        assert_eq!(first, "PASS: 10 passed, 0 failed, 0 skipped in 2 guest(s)");
        assert!(t.contains("Tested-on:\n"), "{t}");
        assert!(t.contains("  nicemu   nicemu 0.1.0"), "{t}");
        assert!(
            t.contains("  QEMU     11.1.3 (Debian 1:11.1.3+ds-1)"),
            "{t}"
        );
        assert!(t.contains("  kernel   sid 7.2.13+deb14-amd64"), "{t}");
        assert!(t.contains("  devices  nicemu-igb, qemu-igb"), "{t}");
        assert!(t.contains("  accel    tcg, 2 vCPUs, 1024 MiB"), "{t}");
        assert!(t.contains("  host     2 cores (load "), "{t}");
        assert!(t.trim_end().ends_with(TCG_CAVEAT), "{t}");
        assert!(t.contains("netperf"), "{t}");
        // The run's cyclictest p99 lay past the histogram: said as such, not "ovf".
        assert!(!t.contains("ovf"), "{t}");
        assert!(
            t.contains("p99 > 4") && t.contains("(histogram end)"),
            "{t}"
        );
    }

    #[test]
    fn instruction_counts_head_the_a_b_verdicts() {
        use crate::report::ab_record::{AbMetric, AbSummary};
        let m = |metric: &str, count: bool| AbMetric {
            device: "nicemu-igb".into(),
            scenario: "ping".into(),
            metric: metric.into(),
            main: true,
            count,
            below_cut: None,
            a: vec![1.0, 2.0, 3.0],
            b: vec![2.0, 3.0, 4.0],
            verdict: crate::stats::verdict::compare(&[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0]),
        };
        let ab = AbSummary {
            a_label: "A".into(),
            b_label: "B".into(),
            rounds: 3,
            method: String::new(),
            metrics: vec![m("rtt_avg_ms", false), m("cost.kernel", true)],
        };
        let t = ab_verdicts(&ab);
        let (count, rate) = (
            t.find("ping.cost.kernel").unwrap(),
            t.find("ping.rtt_avg_ms").unwrap(),
        );
        assert!(count < rate, "{t}");
    }

    #[test]
    fn a_failure_comes_before_the_table() {
        let mut r = run("x", vec![cell("sid", "nicemu-igb", 0.1, 900.0, true)]);
        r.env = Some(env());
        let t = report(&r);
        widths_ok(&t);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("FAIL: "), "{t}");
        assert!(lines[1].starts_with("FAIL nicemu-igb netperf: "), "{t}");
        assert!(t.contains("  nicemu   nicemu 0.1.0 (5a2ed05c1d2e)"), "{t}");
    }

    #[test]
    fn kernel_splats_come_first() {
        let mut r = crate::report::splats::tests::with_splats();
        r.env = Some(env());
        let t = report(&r);
        widths_ok(&t);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("FAIL: "), "{t}");
        assert!(
            lines[1].starts_with("FAIL nicemu-igb kernel splat: WARNING in igb_xmit_frame_ring"),
            "{t}"
        );
        assert!(lines[2].trim() == "(igb_main.c:6533) during ping", "{t}");
    }

    #[test]
    fn compare_shows_headlines_by_default_and_what_metric_asks() {
        let a = main_job();
        let mut b = main_job();
        b.runs[0].scenarios[0].status = Status::Fail;
        let t = compare(&a, &b, &Select::Headline);
        widths_ok(&t);
        assert!(
            t.starts_with("Status changed: nicemu-igb probe: PASS -> FAIL\n"),
            "{t}"
        );
        assert!(t.contains("netperf.tests.TCP_STREAM.throughput"), "{t}");
        assert!(!t.contains("nicemu_latency"), "{t}");
        let lines = t.lines().count();
        assert!(lines < 80, "{lines} lines:\n{t}");
        let all = compare(&a, &b, &Select::All);
        assert!(all.contains("nicemu_latency"));
        let only = compare(&a, &b, &Select::Globs(vec!["ping.*".into()]));
        assert!(only.contains("ping.rtt_avg_ms"), "{only}");
        assert!(!only.contains("netperf.tests"), "{only}");
        assert!(!only.contains("cyclictest.threads"), "{only}");
    }
}
