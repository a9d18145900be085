// SPDX-License-Identifier: Apache-2.0
//! Two runs side by side (A/B): per device and scenario, the status and every numeric
//! metric of both with the relative change — the table a patch author pastes into a mail.

use std::collections::BTreeMap;

use super::metric_select::Select;
use super::{CellRun, RunReport};
use crate::scenario::ScenarioResult;

/// Flattens numeric leaves of a metric value into `prefix.key` → number. Arrays of objects
/// are indexed by their `thread` field (or position); arrays of numbers are skipped.
pub fn flatten(prefix: &str, v: &serde_json::Value, out: &mut BTreeMap<String, f64>) {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(f) = n.as_f64() {
                out.insert(prefix.to_owned(), f);
            }
        }
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                flatten(&join(prefix, k), v, out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                if let serde_json::Value::Object(m) = v {
                    let key = m
                        .get("thread")
                        .and_then(|t| t.as_u64())
                        .map(|t| format!("cpu{t}"))
                        .unwrap_or_else(|| i.to_string());
                    for (k, v) in m.iter().filter(|(k, _)| *k != "thread") {
                        flatten(&join(&join(prefix, &key), k), v, out);
                    }
                }
            }
        }
        _ => {}
    }
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_owned()
    } else {
        format!("{a}.{b}")
    }
}

/// Metrics left out of comparisons (histograms, bookkeeping).
pub fn interesting(key: &str) -> bool {
    !(key.starts_with("histogram")
        || key.ends_with(".cycles")
        || key == "carrier_wait_ms"
        || key == "dmesg_lines"
        || key == "checked"
        || key.starts_with("counts.")
        || key.starts_with("deltas."))
}

/// Pairs the cells of `a` and `b` by device (in order when a device appears several times).
pub fn pair<'a>(
    a: &'a RunReport,
    b: &'a RunReport,
) -> Vec<(Option<&'a CellRun>, Option<&'a CellRun>)> {
    let mut used = vec![false; b.runs.len()];
    let mut out = Vec::new();
    for ca in &a.runs {
        let j = b
            .runs
            .iter()
            .enumerate()
            .position(|(j, cb)| !used[j] && cb.device == ca.device);
        match j {
            Some(j) => {
                used[j] = true;
                out.push((Some(ca), Some(&b.runs[j])));
            }
            None => out.push((Some(ca), None)),
        }
    }
    for (j, cb) in b.runs.iter().enumerate() {
        if !used[j] {
            out.push((None, Some(cb)));
        }
    }
    out
}

fn label(r: &RunReport) -> String {
    let mut k: Vec<String> = Vec::new();
    for c in &r.runs {
        if !k.contains(&c.kernel_label) {
            k.push(c.kernel_label.clone());
        }
    }
    format!("{} (run {})", k.join(", "), r.run_id)
}

/// Formats a number compactly.
pub fn fmt_num(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e12 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// One line of a comparison: a scenario's status (`metric` empty) or one metric, A and B.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Device kind.
    pub device: String,
    /// Scenario.
    pub scenario: String,
    /// Flattened metric key; empty for the status row.
    pub metric: String,
    /// A's status or value (`—` when A has none).
    pub a: String,
    /// B's status or value.
    pub b: String,
    /// The change: `changed` for a status, `+10.4%` / `=` for a value, empty if unknown.
    pub delta: String,
}

/// The rows of A against B, per device and scenario: the status, then the metrics `select`
/// keeps (histograms and bookkeeping never).
pub fn rows(a: &RunReport, b: &RunReport, select: &Select) -> Vec<Row> {
    let mut scenarios: Vec<String> = a.scenarios.clone();
    for x in &b.scenarios {
        if !scenarios.contains(x) {
            scenarios.push(x.clone());
        }
    }
    let mut out = Vec::new();
    for (ca, cb) in pair(a, b) {
        let device = ca.or(cb).map(|c| c.device.clone()).unwrap_or_default();
        for sc in &scenarios {
            let ra = ca.and_then(|c| c.result(sc));
            let rb = cb.and_then(|c| c.result(sc));
            if ra.is_none() && rb.is_none() {
                continue;
            }
            let row = |metric: &str, a: String, b: String, delta: String| Row {
                device: device.clone(),
                scenario: sc.clone(),
                metric: metric.to_owned(),
                a,
                b,
                delta,
            };
            let st = |r: Option<&ScenarioResult>| {
                r.map(|r| r.status.to_string())
                    .unwrap_or_else(|| "—".into())
            };
            let (sa, sb) = (st(ra), st(rb));
            let changed = if sa == sb { "" } else { "changed" };
            out.push(row("", sa, sb, changed.into()));
            let (ma, mb) = (numbers(ra), numbers(rb));
            let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys
                .into_iter()
                .filter(|k| interesting(k) && select.keeps(sc, k))
            {
                let (va, vb) = (ma.get(k), mb.get(k));
                let delta = match (va, vb) {
                    (Some(x), Some(y)) if x == y => "=".into(),
                    (Some(x), Some(y)) if *x != 0.0 => {
                        format!("{:+.1}%", (y - x) / x.abs() * 100.0)
                    }
                    _ => String::new(),
                };
                let show = |v: Option<&f64>| v.map(|v| fmt_num(*v)).unwrap_or_else(|| "—".into());
                out.push(row(k, show(va), show(vb), delta));
            }
        }
    }
    out
}

/// A result's numeric metrics, flattened.
fn numbers(r: Option<&ScenarioResult>) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    if let Some(r) = r {
        flatten(
            "",
            &serde_json::to_value(&r.metrics).unwrap_or_default(),
            &mut m,
        );
    }
    m
}

/// The A and B lines of a comparison's header.
pub fn labels(a: &RunReport, b: &RunReport) -> (String, String) {
    (label(a), label(b))
}

/// Renders the comparison as Markdown.
pub fn render(a: &RunReport, b: &RunReport, select: &Select) -> String {
    let mut s = format!(
        "## nicemu-guest compare\n\n- **A**: {}\n- **B**: {}\n\n",
        label(a),
        label(b)
    );
    s.push_str("| device | scenario | metric | A | B | Δ |\n|---|---|---|---:|---:|---:|\n");
    for r in rows(a, b, select) {
        let metric = if r.metric.is_empty() {
            "status"
        } else {
            &r.metric
        };
        s.push_str(&format!(
            "| {} | {} | {metric} | {} | {} | {} |\n",
            r.device, r.scenario, r.a, r.b, r.delta
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    #[test]
    fn side_by_side_with_deltas() {
        let a = report("ra", vec![cell("sid", "qemu-igb", 0.5, 600.0, false)]);
        let b = report(
            "rb",
            vec![
                cell("trixie", "qemu-igb", 0.6, 450.0, true),
                cell("trixie", "nicemu-igb", 0.6, 450.0, false),
            ],
        );
        let md = render(&a, &b, &Select::All);
        assert!(md.contains("**A**: sid 1.0 (run ra)"), "{md}");
        assert!(
            md.contains("| qemu-igb | ping | rtt_avg_ms | 0.500 | 0.600 | +20.0% |"),
            "{md}"
        );
        assert!(md
            .contains("| qemu-igb | netperf | tests.TCP_STREAM.throughput | 600 | 450 | -25.0% |"));
        assert!(md.contains("| qemu-igb | netperf | status | PASS | FAIL | changed |"));
        assert!(md.contains("| qemu-igb | cyclictest | threads.cpu1.max | 400 | 400 | = |"));
        assert!(md.contains("| nicemu-igb | ping | rtt_avg_ms | — | 0.600 |  |"));
        assert!(!md.contains("histogram"));
    }

    #[test]
    fn real_ab_run_splits_by_kernel() {
        let text = include_str!("../../tests/fixtures/ab-sid-trixie-qemu-igb.results.json");
        let r: RunReport = serde_json::from_str(text).unwrap();
        assert_eq!(r.kernels(), ["sid", "trixie"]);
        let md = render(
            &r.only_kernel("sid"),
            &r.only_kernel("trixie"),
            &Select::All,
        );
        assert!(md.contains("**A**: sid 7.2.13+deb14-amd64"), "{md}");
        assert!(md.contains("**B**: trixie 6.12.117+deb13-amd64"));
        assert!(md.contains(
            "| qemu-igb | netperf | tests.TCP_STREAM.throughput | 140.5 | 91.630 | -34.8% |"
        ));
        assert!(
            md.contains("| qemu-igb | cyclictest | threads.cpu1.max | 50143 | 28099 | -44.0% |")
        );
    }
}
