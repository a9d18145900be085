// SPDX-License-Identifier: Apache-2.0
//! Markdown results table: one row per (kernel, device), one column per scenario with its
//! status and headline, then the problems (failures, skips, broken boots) in detail.

use super::RunReport;
use crate::scenario::{ScenarioResult, Status};

/// The table cell for one result: status plus headline.
pub fn cell(r: Option<&ScenarioResult>) -> String {
    let Some(r) = r else {
        return "—".into();
    };
    let st = match r.status {
        Status::Pass => "PASS".to_owned(),
        st => format!("**{st}**"),
    };
    match (headline(r), r.status) {
        (Some(s), Status::Pass) if !s.is_empty() => format!("{st} {}", s.replace('|', "/")),
        _ => st,
    }
}

/// A result's headline (its `summary`); cyclictest's made again from its metrics: results
/// of older runs said "ovf" where a percentile lay beyond the histogram.
pub fn headline(r: &ScenarioResult) -> Option<String> {
    match r.scenario.as_str() {
        "cyclictest" => crate::scenario::cyclictest::summary_of(r).or(r.summary.clone()),
        _ => r.summary.clone(),
    }
}

/// Renders the results table and details.
pub fn render(report: &RunReport) -> String {
    let (pass, fail, skip) = report.counts();
    let mut s = format!(
        "## nicemu-guest results (run {}, accel {}, {} vCPU, {} MiB, peer {}{})\n\n",
        report.run_id,
        report.accel,
        report.smp,
        report.mem_mb,
        report.topology,
        report
            .shard
            .as_ref()
            .map(|x| format!(", shard {x}"))
            .unwrap_or_default()
    );
    s.push_str(&super::splats::markdown(report));
    s.push_str(&results_table(report));
    s.push_str(&format!(
        "\n{pass} passed, {fail} failed, {skip} skipped; wall time {:.0} s\n",
        report.wall_secs
    ));
    s.push_str(&super::cases::markdown(&super::cases::table(report)));
    s.push_str(&super::splats::unused_markdown(report));
    let details: String = report.runs.iter().map(problems).collect();
    if !details.is_empty() {
        s.push_str("\n### Problems\n\n");
        s.push_str(&details);
    }
    if let Some(ab) = &report.ab {
        s.push('\n');
        s.push_str(&super::ab::render_markdown(ab, report));
    }
    s
}

/// The table: a row per cell, a column per scenario, and the boot times.
fn results_table(report: &RunReport) -> String {
    let mut s = String::from("| kernel | device | kernel splats |");
    for sc in &report.scenarios {
        s.push_str(&format!(" {sc} |"));
    }
    s.push_str(" boot→userspace | boot→result |\n|---|---|---|");
    for _ in &report.scenarios {
        s.push_str("---|");
    }
    s.push_str("---|---|\n");
    for d in &report.runs {
        s.push_str(&format!(
            "| {} | {} | {} |",
            row_label(d),
            d.device,
            super::splats::table_cell(d)
        ));
        for sc in &report.scenarios {
            s.push_str(&format!(" {} |", cell(d.result(sc))));
        }
        s.push_str(&format!(
            " {} | {} |\n",
            secs(d.secs_to_userspace),
            match d.secs_to_result {
                Some(_) => secs(d.secs_to_result),
                None => d.boot.clone(),
            }
        ));
    }
    s
}

/// One cell's problems as list items: its error, a failed network setup,
/// each scenario that did not pass, and the console's end for a broken boot.
fn problems(d: &super::CellRun) -> String {
    let mut details = String::new();
    let who = format!("{} / {}", d.kernel, d.device);
    if let Some(e) = &d.error {
        details.push_str(&format!("- {who}: {e}\n"));
    }
    if let Some(note) = &d.retried {
        details.push_str(&format!("- {who}: booted again (not judged): {note}\n"));
    }
    if let Some(setup) = d.setup.as_ref().filter(|r| r.status == Status::Fail) {
        details.push_str(&format!(
            "- {who} / network setup: FAIL — {}\n",
            setup.reason.as_deref().unwrap_or("")
        ));
    }
    for r in &d.scenarios {
        if r.status != Status::Pass {
            details.push_str(&format!(
                "- {who} / {}: {} — {}\n",
                r.scenario,
                r.status,
                r.reason.as_deref().unwrap_or("")
            ));
        }
    }
    if !d.console_tail.is_empty() {
        details.push_str(&format!(
            "- {who} console ended with ({}, logs in {}):\n",
            d.boot, d.dir
        ));
        for l in &d.console_tail {
            details.push_str(&format!("    {l}\n"));
        }
    }
    details
}

/// The kernel column: its label, prefixed with the side and round in A/B runs ("A2 sid …").
pub fn row_label(d: &super::CellRun) -> String {
    match (&d.side, d.round) {
        (Some(side), Some(r)) => format!("{side}{r} {}", d.kernel_label),
        (Some(side), None) => format!("{side} {}", d.kernel_label),
        _ => d.kernel_label.clone(),
    }
}

fn secs(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1} s")).unwrap_or_else(|| "—".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell as tcell, report};

    #[test]
    fn rows_per_kernel_and_device_with_headlines_and_problems() {
        let r = report(
            "r1",
            vec![
                tcell("sid", "qemu-igb", 0.5, 600.0, false),
                tcell("trixie", "qemu-igb", 0.6, 500.0, true),
            ],
        );
        let md = render(&r);
        assert!(
            md.contains("| sid 1.0 | qemu-igb | — | PASS 0% loss, 0.5 ms |"),
            "{md}"
        );
        assert!(md.contains("| trixie 1.0 | qemu-igb | — | PASS 0% loss, 0.6 ms | **FAIL** |"));
        assert!(md.contains("- trixie / qemu-igb / netperf: FAIL — TCP_RR: no result"));
        assert!(md.contains("5 passed, 1 failed, 0 skipped"));
    }

    #[test]
    fn splats_come_first_and_count_as_failures() {
        let r = crate::report::splats::tests::with_splats();
        let md = render(&r);
        let splats = md.find("### Kernel splats: 1 failing, 1 ignored").unwrap();
        assert!(splats < md.find("| kernel | device |").unwrap(), "{md}");
        assert!(
            md.contains("| sid 1.0 | nicemu-igb | **1 FAIL** | PASS"),
            "{md}"
        );
        assert!(md.contains("6 passed, 1 failed, 0 skipped"), "{md}");
    }
}
