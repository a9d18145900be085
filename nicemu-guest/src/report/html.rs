// SPDX-License-Identifier: Apache-2.0
//! A self-contained HTML report: the results table, netperf / qdisc / ping bars per
//! kernel and device, cyclictest latency histograms per CPU, and the problems.

use std::path::Path;

use super::escape::esc;
use super::{markdown, svg, RunReport};
use crate::error::{Error, Result};
use crate::scenario::Status;

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1200px}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}\
th{background:#f0f0f0}.PASS{background:#e6f4e6}.FAIL{background:#f8d7d7}.SKIP{background:#f0f0f0;color:#666}\
.plots svg{margin:0.5em 1em 0.5em 0;border:1px solid #eee}pre{background:#f7f7f7;padding:0.5em}";

/// Renders the report as one HTML document.
pub fn render(report: &RunReport) -> String {
    let mut s = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>nicemu-guest run {}</title><style>{STYLE}</style></head><body>\n\
         <h1>nicemu-guest results</h1>\n<p>run {} · accel {} · {} vCPU · {} MiB · peer {} · wall time {:.0} s</p>\n",
        esc(&report.run_id),
        esc(&report.run_id),
        esc(&report.accel),
        report.smp,
        report.mem_mb,
        esc(&report.topology),
        report.wall_secs
    );
    s.push_str(&super::splats::html(report));
    s.push_str("<table><tr><th>kernel</th><th>device</th><th>kernel splats</th>");
    for sc in &report.scenarios {
        s.push_str(&format!("<th>{}</th>", esc(sc)));
    }
    s.push_str("<th>boot→result</th></tr>\n");
    for c in &report.runs {
        let fails = c.failing_splats().count();
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td>",
            esc(&c.kernel_label),
            esc(&c.device),
            if fails > 0 { "FAIL" } else { "" },
            esc(&super::splats::table_cell(c).replace("**", ""))
        ));
        for sc in &report.scenarios {
            let r = c.result(sc);
            let class = r.map(|r| r.status.to_string()).unwrap_or_default();
            let title = r.and_then(|r| r.reason.clone()).unwrap_or_default();
            s.push_str(&format!(
                "<td class=\"{class}\" title=\"{}\">{}</td>",
                esc(&title),
                esc(&markdown::cell(r).replace("**", ""))
            ));
        }
        s.push_str(&format!(
            "<td>{}</td></tr>\n",
            c.secs_to_result
                .map(|x| format!("{x:.1} s"))
                .unwrap_or_else(|| esc(&c.boot))
        ));
    }
    s.push_str("</table>\n");
    s.push_str(&super::cases::html(&super::cases::table(report)));
    s.push_str("<div class=\"plots\">\n");
    s.push_str(&netperf_plots(report));
    s.push_str(&simple_bars(
        report,
        "qdisc",
        "qdisc prio+tbf+fq_codel",
        "pps",
        "packets/s",
    ));
    s.push_str(&simple_bars(
        report,
        "ping",
        "ping average RTT",
        "rtt_avg_ms",
        "ms",
    ));
    s.push_str(&cyclictest_plots(report));
    s.push_str("</div>\n");
    if let Some(ab) = &report.ab {
        s.push_str(&ab_section(ab, report));
    }
    let problems = problems(report);
    if !problems.is_empty() {
        s.push_str(&format!(
            "<h2>Problems</h2>\n<pre>{}</pre>\n",
            esc(&problems)
        ));
    }
    s.push_str("</body></html>\n");
    s
}

/// The A/B verdicts: a table of the main metrics and per-round dots for each.
fn ab_section(ab: &super::ab_record::AbSummary, report: &RunReport) -> String {
    let mut s = format!(
        "<h2>A/B verdict ({} round(s) per side)</h2>\n<p>A: {} · B: {} · accel {} · {} vCPU{}</p>\n<p>{}</p>\n\
         <table><tr><th>device</th><th>metric</th><th>A median (min–max)</th><th>B median (min–max)</th><th>verdict</th><th>test</th><th>noise</th></tr>\n",
        ab.rounds,
        esc(&ab.a_label),
        esc(&ab.b_label),
        esc(&report.accel),
        report.smp,
        report.env.as_ref().map(|e| format!(" · {}", esc(&e.line()))).unwrap_or_default(),
        esc(&ab.method)
    );
    let mut plots = String::new();
    for m in ab.metrics.iter().filter(|m| m.main) {
        let Some(v) = &m.verdict else { continue };
        let class = if v.significant { "FAIL" } else { "PASS" };
        s.push_str(&format!(
            "<tr><td>{}</td><td>{}.{}</td><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&m.device),
            esc(&m.scenario),
            esc(&m.metric),
            esc(&super::ab::spread(v, true)),
            esc(&super::ab::spread(v, false)),
            esc(&v.headline()),
            esc(&v.test_note()),
            esc(&v.noise_note())
        ));
        plots.push_str(&svg::dots(
            &format!("{} {}.{}", m.device, m.scenario, m.metric),
            &[("A".into(), m.a.clone()), ("B".into(), m.b.clone())],
        ));
    }
    s.push_str("</table>\n<div class=\"plots\">\n");
    s.push_str(&plots);
    s.push_str("</div>\n");
    s
}

fn who(c: &super::CellRun) -> String {
    format!("{} / {}", c.kernel, c.device)
}

fn netperf_plots(report: &RunReport) -> String {
    let mut labels: Vec<String> = Vec::new();
    for c in &report.runs {
        if let Some(t) = c
            .result("netperf")
            .and_then(|r| r.metrics.get("tests"))
            .and_then(|t| t.as_object())
        {
            for k in t.keys() {
                if !labels.contains(k) {
                    labels.push(k.clone());
                }
            }
        }
    }
    let mut s = String::new();
    for label in labels {
        let mut unit = String::new();
        let items: Vec<(String, f64)> = report
            .runs
            .iter()
            .filter_map(|c| {
                let t = c.result("netperf")?.metrics.get("tests")?.get(&label)?;
                let (v, u) = if label.starts_with("UDP_STREAM") {
                    (t.get("msgs_per_s_received")?.as_f64()?, "msg/s".to_owned())
                } else {
                    let u = t.get("units").and_then(|u| u.as_str()).unwrap_or("");
                    (
                        t.get("throughput")?.as_f64()?,
                        u.replace("10^6bits/s", "Mbit/s"),
                    )
                };
                unit = u;
                Some((who(c), v))
            })
            .collect();
        if !items.is_empty() {
            s.push_str(&svg::bars(&format!("netperf {label}"), &unit, &items));
        }
    }
    s
}

fn simple_bars(report: &RunReport, scenario: &str, title: &str, key: &str, unit: &str) -> String {
    let items: Vec<(String, f64)> = report
        .runs
        .iter()
        .filter_map(|c| {
            let r = c.result(scenario)?;
            (r.status != Status::Skip).then_some(())?;
            Some((who(c), r.metrics.get(key)?.as_f64()?))
        })
        .collect();
    if items.is_empty() {
        String::new()
    } else {
        svg::bars(title, unit, &items)
    }
}

fn cyclictest_plots(report: &RunReport) -> String {
    let mut s = String::new();
    for c in &report.runs {
        let Some(r) = c.result("cyclictest") else {
            continue;
        };
        let mut series = Vec::new();
        if let Some(h) = r.metrics.get("histogram").and_then(|h| h.as_object()) {
            for (cpu, pts) in h {
                let pts: Vec<(f64, f64)> = pts
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
                    .collect();
                series.push((format!("CPU{cpu}"), pts));
            }
        }
        if !series.is_empty() {
            s.push_str(&svg::log_lines(
                &format!("cyclictest latency histogram — {}", who(c)),
                "latency (µs)",
                &series,
            ));
        }
        let items: Vec<(String, f64)> = r
            .metrics
            .get("threads")
            .and_then(|t| t.as_array())
            .into_iter()
            .flatten()
            .filter_map(|t| {
                Some((
                    format!("CPU{} max", t.get("thread")?.as_u64()?),
                    t.get("max")?.as_f64()?,
                ))
            })
            .collect();
        if !items.is_empty() {
            s.push_str(&svg::bars(
                &format!("cyclictest max latency — {}", who(c)),
                "µs",
                &items,
            ));
        }
    }
    s
}

fn problems(report: &RunReport) -> String {
    let md = markdown::render(report);
    md.split_once("### Problems\n\n")
        .map(|(_, p)| p.to_owned())
        .unwrap_or_default()
}

/// Writes the HTML report to `path`.
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    std::fs::write(path, render(report)).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    #[test]
    fn html_has_table_bars_and_histograms() {
        let r = report(
            "r",
            vec![
                cell("sid", "qemu-igb", 0.5, 600.0, false),
                cell("sid", "nicemu-igb", 0.7, 300.0, true),
            ],
        );
        let h = render(&r);
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(h.contains("<td class=\"FAIL\""));
        assert!(h.contains("netperf TCP_STREAM"));
        assert!(h.contains("Mbit/s"));
        assert!(h.contains("cyclictest latency histogram — sid / nicemu-igb"));
        assert!(h.contains("<h2>Problems</h2>"));
        assert!(!h.contains("<script"));
    }
}
