// SPDX-License-Identifier: Apache-2.0
//! What `run` prints as it goes: each cell's results as the cell ends, and at the end the
//! Markdown report with, for an A/B of one round, the side-by-side comparison.

use super::{compare, markdown, CellRun, RunReport};
use crate::scenario::Status;

/// A cell's lines as it ends: network setup failure, one line per scenario, nicemu's
/// note, how the boot ended.
pub fn cell(done: usize, total: usize, r: &CellRun) {
    let who = format!("[{done}/{total}] {} / {}", r.kernel, r.device);
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
            compare::render(&report.only_kernel(&ka), &report.only_kernel(&kb))
        );
    }
}
