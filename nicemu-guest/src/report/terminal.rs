// SPDX-License-Identifier: Apache-2.0
//! What `run` prints as it goes: each cell's results as the cell ends, and at the end the
//! Markdown report with, for an A/B of one round, the side-by-side comparison.

use std::path::Path;

use super::{compare, markdown, CellRun, RunReport};
use crate::cli::Outputs;
use crate::scenario::Status;

/// A cell's lines as it ends: its kernel splats, network setup failure, one line per
/// scenario, nicemu's note, how the boot ended.
pub fn cell(done: usize, total: usize, r: &CellRun) {
    let who = format!("[{done}/{total}] {} / {}", r.kernel, r.device);
    for sp in &r.splats {
        println!("{who}: kernel splat {}", sp.describe());
    }
    if r.splats_dropped > 0 {
        println!("{who}: {} more kernel splat(s) not kept", r.splats_dropped);
    }
    if let Some(s) = r.setup.as_ref().filter(|s| s.status == Status::Fail) {
        println!(
            "{who}: network setup FAIL ({})",
            s.reason.as_deref().unwrap_or("")
        );
    }
    for sr in &r.scenarios {
        let extra = match (&sr.reason, &sr.summary) {
            (Some(x), _) => format!(" ({x})"),
            (None, Some(s)) => format!(" — {s}"),
            _ => String::new(),
        };
        println!("{who}: {} {}{extra}", sr.scenario, sr.status);
    }
    if let Some(e) = &r.error {
        println!("{who}: {e}");
    }
    if let Some(note) = &r.retried {
        println!("{who}: booted again: {note}");
    }
    println!("{who}: {} in {:.0} s", r.boot, r.wall_secs);
}

/// The Markdown report, and for an A/B of one round the side-by-side
/// comparison of kernels `ab` (with rounds, the A/B verdicts are part of the report).
pub fn reports(report: &RunReport, ab: Option<(String, String)>) {
    println!("\n{}", markdown::render(report));
    if report.ab.is_some() {
        return;
    }
    if let Some((ka, kb)) = ab {
        println!(
            "{}",
            compare::render(
                &report.only_kernel(&ka),
                &report.only_kernel(&kb),
                &super::metric_select::Select::Headline,
            )
        );
    }
}

/// Where a run's files are, printed last: results.json, report.html, junit.xml (with the
/// copies `--json`/`--html`/`--junit` asked for) and each guest's directory (logs, KTAP).
pub fn locations(report: &RunReport, dir: &Path, out: &Outputs) -> String {
    let file = |name: &str, copy: &Option<std::path::PathBuf>| {
        let mut s = dir.join(name).display().to_string();
        if let Some(c) = copy {
            s.push_str(&format!(" (and {})", c.display()));
        }
        s
    };
    let mut s = format!("results:    {}\n", file("results.json", &out.json));
    s.push_str(&format!("report:     {}\n", file("report.html", &out.html)));
    s.push_str(&format!("junit:      {}\n", file("junit.xml", &out.junit)));
    for (i, c) in report.runs.iter().enumerate() {
        let head = if i == 0 { "logs:" } else { "" };
        let mut logs = String::from("serial.log, qemu.log");
        if c.device.starts_with("nicemu") {
            logs.push_str(", nicemu.log");
        }
        logs.push_str(", scenarios.tap");
        if c.result("kselftest").is_some() {
            logs.push_str(", kselftest.tap");
        }
        s.push_str(&format!("{head:<12}{}/ ({logs})\n", c.dir));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    #[test]
    fn the_end_of_a_run_names_the_report_the_junit_file_and_every_cell_s_logs() {
        let mut a = cell("sid", "nicemu-igb", 0.1, 900.0, false);
        a.dir = "/runs/1/1-sid-nicemu-igb".into();
        let mut b = cell("sid", "qemu-igb", 0.1, 600.0, false);
        b.dir = "/runs/1/2-sid-qemu-igb".into();
        let r = report("1", vec![a, b]);
        let out = Outputs {
            json: None,
            html: Some("/tmp/mine.html".into()),
            junit: None,
        };
        let text = locations(&r, std::path::Path::new("/runs/1"), &out);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.contains(&"results:    /runs/1/results.json"),
            "{text}"
        );
        assert!(
            lines.contains(&"report:     /runs/1/report.html (and /tmp/mine.html)"),
            "{text}"
        );
        assert!(lines.contains(&"junit:      /runs/1/junit.xml"), "{text}");
        assert!(
            lines.contains(
                &"logs:       /runs/1/1-sid-nicemu-igb/ (serial.log, qemu.log, nicemu.log, scenarios.tap)"
            ),
            "{text}"
        );
        assert!(
            lines.contains(
                &"            /runs/1/2-sid-qemu-igb/ (serial.log, qemu.log, scenarios.tap)"
            ),
            "{text}"
        );
    }
}
