// SPDX-License-Identifier: Apache-2.0
//! The `kselftest` cases × devices table: every selftest case (rows, in program order) by
//! every (kernel, device) cell (columns), from the scenario's `cases` metric. A result that
//! differs from the device's expectations file is marked `!`.

use super::RunReport;

/// One case's result in one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseCell {
    /// "PASS", "FAIL", "SKIP", "XFAIL", "TIMEOUT".
    pub status: String,
    /// Skip reason or failure diagnostics.
    pub reason: Option<String>,
    /// True when the expectations file does not account for this result.
    pub deviates: bool,
}

/// The table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaseTable {
    /// Column headings ("sid / nicemu-igb").
    pub columns: Vec<String>,
    /// (case, program, one entry per column).
    pub rows: Vec<(String, String, Vec<Option<CaseCell>>)>,
}

/// Collects the table from `report` (empty when no cell ran `kselftest`).
pub fn table(report: &RunReport) -> CaseTable {
    let mut t = CaseTable::default();
    let cells: Vec<_> = report
        .runs
        .iter()
        .filter_map(|c| c.result("kselftest").map(|r| (c, r)))
        .collect();
    for (ci, (c, r)) in cells.iter().enumerate() {
        t.columns.push(format!("{} / {}", c.kernel, c.device));
        let deviations: Vec<&str> = r
            .metrics
            .get("deviations")
            .and_then(|v| v.as_array())
            .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
            .unwrap_or_default();
        let Some(cases) = r.metrics.get("cases").and_then(|v| v.as_array()) else {
            continue;
        };
        for case in cases {
            let field = |k: &str| case.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            let (Some(name), Some(status)) = (field("case"), field("status")) else {
                continue;
            };
            let cell = CaseCell {
                deviates: deviations
                    .iter()
                    .any(|d| d.starts_with(&format!("{name}: "))),
                status,
                reason: field("reason"),
            };
            let row = match t.rows.iter().position(|(n, _, _)| *n == name) {
                Some(i) => i,
                None => {
                    let program = field("program").unwrap_or_default();
                    t.rows.push((name, program, vec![None; cells.len()]));
                    t.rows.len() - 1
                }
            };
            t.rows[row].2[ci] = Some(cell);
        }
    }
    t
}

/// The table as Markdown (empty when no cell ran `kselftest`).
pub fn markdown(t: &CaseTable) -> String {
    if t.rows.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "\n### kselftest cases (`!`: not what the expectations file says)\n\n| case |",
    );
    for c in &t.columns {
        s.push_str(&format!(" {c} |"));
    }
    s.push_str("\n|---|");
    for _ in &t.columns {
        s.push_str("---|");
    }
    s.push('\n');
    for (name, _, cells) in &t.rows {
        s.push_str(&format!("| {name} |"));
        for c in cells {
            s.push_str(&match c {
                None => " — |".to_owned(),
                Some(c) => format!(" {}{} |", c.status, if c.deviates { " !" } else { "" }),
            });
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};
    use crate::scenario::ScenarioResult;
    use serde_json::json;

    fn ksft(device: &str, cases: serde_json::Value, deviations: &[&str]) -> crate::report::CellRun {
        let mut c = cell("sid", device, 0.5, 1.0, false);
        let mut r = ScenarioResult::pass("kselftest");
        r.metric("cases", cases);
        r.metric("deviations", json!(deviations));
        c.scenarios = vec![r];
        c
    }

    #[test]
    fn rows_are_the_union_of_cases_with_marks_for_deviations() {
        let a = ksft(
            "nicemu-igb",
            json!([{"case": "ping.test_v4", "program": "drivers/net:ping.py", "status": "PASS"},
                   {"case": "stats.check_pause", "program": "drivers/net:stats.py", "status": "FAIL", "reason": "x"}]),
            &["stats.check_pause: FAIL (not in the expectations)"],
        );
        let b = ksft(
            "qemu-igb",
            json!([{"case": "ping.test_v4", "program": "drivers/net:ping.py", "status": "SKIP"},
                   {"case": "csum.test", "program": "drivers/net/hw:csum.py", "status": "PASS"}]),
            &[],
        );
        let r = report("r", vec![a, b]);
        let t = table(&r);
        assert_eq!(t.columns, ["sid / nicemu-igb", "sid / qemu-igb"]);
        assert_eq!(t.rows.len(), 3);
        let md = markdown(&t);
        assert!(md.contains("| ping.test_v4 | PASS | SKIP |"), "{md}");
        assert!(md.contains("| stats.check_pause | FAIL ! | — |"), "{md}");
        assert!(md.contains("| csum.test | — | PASS |"), "{md}");
        assert_eq!(markdown(&table(&report("r", vec![]))), "");
        let h = crate::report::html::render_at(&r, None);
        assert!(
            h.contains("<td class=\"FAIL\" title=\"x\">FAIL !</td>"),
            "{h}"
        );
    }
}
