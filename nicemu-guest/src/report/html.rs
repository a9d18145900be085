// SPDX-License-Identifier: Apache-2.0
//! A self-contained HTML report (no scripts, no external files), written with `maud`
//! templates: the verdict; what was tested (date, command, nicemu, QEMU and kernel versions,
//! accel, host); the results table with links to each cell's logs and KTAP files; the
//! cyclictest percentiles; the kernel selftest cases; plots (netperf / qdisc / ping bars,
//! cyclictest histograms per kernel) in which each device keeps one colour; the A/B verdicts
//! with a dot per round; and the problems.

use std::path::Path;

use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::cell_files;
use super::svg::{self, Bar, Line};
use super::{markdown, CellRun, RunReport};
use crate::error::{Error, Result};
use crate::params::Params;
use crate::scenario::cyclictest::{beyond_histogram, micros_text};
use crate::scenario::Status;

const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1200px}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px;text-align:left}\
th{background:#f0f0f0}.PASS{background:#e6f4e6}.FAIL{background:#f8d7d7}.SKIP{background:#f0f0f0;color:#666}\
table.about th{background:none;border:none;padding:2px 12px 2px 0}table.about td{border:none;padding:2px 0}\
.swatch{display:inline-block;width:0.8em;height:0.8em;margin-right:0.4em;vertical-align:middle}\
td.logs{max-width:18em}.logs a{margin-right:0.6em;display:inline-block}.verdict{font-size:1.2em;font-weight:bold}.caveat{color:#8a5a00}\
.plots svg{margin:0.5em 1em 0.5em 0;border:1px solid #eee}pre{background:#f7f7f7;padding:0.5em;overflow-x:auto}";

/// The colour of each device, in order of first appearance in the run.
struct Colours(Vec<String>);

impl Colours {
    fn of(report: &RunReport) -> Self {
        let mut v: Vec<String> = Vec::new();
        for c in &report.runs {
            if !v.contains(&c.device) {
                v.push(c.device.clone());
            }
        }
        Colours(v)
    }

    fn get(&self, device: &str) -> &'static str {
        svg::colour(self.0.iter().position(|d| d == device).unwrap_or(0))
    }
}

/// Renders the report as one HTML document whose links to cell files are relative to
/// `at` (the directory the page is written to) when the cells are under it, else absolute.
pub fn render_at(report: &RunReport, at: Option<&Path>) -> String {
    let colours = Colours::of(report);
    let (pass, fail, skip) = report.counts();
    let verdict = if fail == 0 { "PASS" } else { "FAIL" };
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "nicemu-guest run " (report.run_id) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { "nicemu-guest results" }
                p.verdict.(verdict) {
                    (verdict) ": " (pass) " passed, " (fail) " failed, " (skip) " skipped in "
                    (report.runs.len()) " guest(s)"
                }
                (about(report))
                (PreEscaped(super::splats::html(report)))
                h2 { "Results" }
                (results_table(report, &colours, at))
                (cyclictest_table(report, &colours))
                (cases_table(report))
                h2 { "Plots" }
                div.plots {
                    (netperf_plots(report, &colours))
                    (simple_bars(report, &colours, "qdisc", "qdisc prio+tbf+fq_codel", "pps", "packets/s"))
                    (simple_bars(report, &colours, "ping", "ping average RTT", "rtt_avg_ms", "ms"))
                    (cyclictest_plots(report, &colours))
                }
                @if let Some(ab) = &report.ab {
                    (ab_section(ab, report, &colours))
                }
                @let problems = problems(report);
                @if !problems.is_empty() {
                    h2 { "Problems" }
                    pre { (problems) }
                }
            }
        }
    };
    page.into_string() + "\n"
}

/// What was tested, when and with what.
fn about(report: &RunReport) -> Markup {
    let env = report.env.clone().unwrap_or_default();
    let mut kernels: Vec<&str> = Vec::new();
    for c in &report.runs {
        if !kernels.contains(&c.kernel_label.as_str()) {
            kernels.push(&c.kernel_label);
        }
    }
    html! {
        table.about {
            tr { th { "run" } td { (report.run_id) } }
            @if let Some(d) = &env.started { tr { th { "date" } td { (d) } } }
            @if let Some(c) = &env.command { tr { th { "command" } td { code { (c) } } } }
            @if let Some(v) = &env.nicemu_version { tr { th { "nicemu" } td { (v) } } }
            @if let Some(v) = &env.qemu_version { tr { th { "QEMU" } td { (v) } } }
            tr { th { "kernels" } td { (kernels.join(", ")) } }
            tr {
                th { "guest" }
                td { "accel " (report.accel) ", " (report.smp) " vCPUs, " (report.mem_mb) " MiB, peer " (report.topology) }
            }
            @if env.host_cores > 0 {
                tr {
                    th { "host" }
                    td {
                        (env.host_cores) " cores"
                        @if let Some(l) = env.load_avg { " (load " (format!("{l:.1}")) ")" }
                        @if let Some(p) = &env.pinning { ", pinned " (p) }
                    }
                }
            }
            tr { th { "wall time" } td { (format!("{:.0}", report.wall_secs)) " s" } }
            tr { th { "directory" } td { (report.run_dir) } }
        }
        @if report.accel == "tcg" {
            p.caveat { (super::text::TCG_CAVEAT) }
        }
    }
}

/// The href of `file` in cell `c`'s directory, relative to `at` when the cell is under it.
fn href(c: &CellRun, file: &str, at: Option<&Path>) -> String {
    let full = Path::new(&c.dir).join(file);
    match at.and_then(|a| full.strip_prefix(a).ok()) {
        Some(rel) => rel.display().to_string(),
        None => full.display().to_string(),
    }
}

fn results_table(report: &RunReport, colours: &Colours, at: Option<&Path>) -> Markup {
    html! {
        table id="results" {
            tr {
                th { "kernel" } th { "device" } th { "kernel splats" }
                @for sc in &report.scenarios { th { (sc) } }
                th { "boot→result" } th { "logs" }
            }
            @for c in &report.runs {
                tr {
                    td { (c.kernel_label) }
                    td {
                        span.swatch style={"background:" (colours.get(&c.device))} {}
                        (c.device)
                        @if let Some(side) = &c.side { " (" (side) (c.round.unwrap_or(1)) ")" }
                    }
                    td class=[(c.failing_splats().next().is_some()).then_some("FAIL")] {
                        (super::splats::table_cell(c).replace("**", ""))
                    }
                    @for sc in &report.scenarios {
                        @let r = c.result(sc);
                        td class=[r.map(|r| r.status.to_string())]
                            title=[r.and_then(|r| r.reason.clone())] {
                            (markdown::cell(r).replace("**", ""))
                        }
                    }
                    td {
                        @match c.secs_to_result {
                            Some(x) => (format!("{x:.1} s")),
                            None => (c.boot),
                        }
                    }
                    td.logs {
                        @for f in cell_files::existing(c) {
                            a.log href=(href(c, f, at)) { (f) }
                        }
                    }
                }
            }
        }
    }
}

/// A thread's percentile, or what is known when it lies beyond the histogram.
fn pct(t: &serde_json::Value, key: &str, hist_us: u64) -> String {
    match t.get(key).and_then(|v| v.as_u64()) {
        Some(v) => v.to_string(),
        None if t.get("overflows").and_then(|v| v.as_u64()).unwrap_or(0) > 0 => {
            beyond_histogram(hist_us)
        }
        None => "—".into(),
    }
}

/// The histogram's end for a cyclictest result: as the guest printed it, else the
/// run's parameter.
fn hist_end(r: &crate::scenario::ScenarioResult, params: &Params) -> u64 {
    r.metrics
        .get("histogram_us")
        .and_then(|v| v.as_u64())
        .unwrap_or(params.num("cyclictest.histogram") as u64)
}

fn cyclictest_table(report: &RunReport, colours: &Colours) -> Markup {
    let rows: Vec<(&CellRun, &serde_json::Value, u64)> = report
        .runs
        .iter()
        .filter_map(|c| {
            let r = c.result("cyclictest")?;
            let end = hist_end(r, &report.params);
            Some(
                r.metrics
                    .get("threads")?
                    .as_array()?
                    .iter()
                    .map(move |t| (c, t, end)),
            )
        })
        .flatten()
        .collect();
    html! {
        @if !rows.is_empty() {
            h2 { "cyclictest latency (µs)" }
            table id="cyclictest" {
                tr {
                    th { "kernel" } th { "device" } th { "CPU" } th { "min" } th { "avg" }
                    th { "p50" } th { "p99" } th { "p99.9" } th { "max" } th { "beyond the histogram" }
                }
                @for (c, t, end) in &rows {
                    tr {
                        td { (c.kernel_label) }
                        td { span.swatch style={"background:" (colours.get(&c.device))} {} (c.device) }
                        td { (t.get("thread").and_then(|v| v.as_u64()).unwrap_or(0)) }
                        td { (t.get("min").and_then(|v| v.as_u64()).unwrap_or(0)) }
                        td { (t.get("avg").and_then(|v| v.as_u64()).unwrap_or(0)) }
                        td { (pct(t, "p50", *end)) }
                        td { (pct(t, "p99", *end)) }
                        td { (pct(t, "p99_9", *end)) }
                        td { (t.get("max").and_then(|v| v.as_u64()).unwrap_or(0)) }
                        td {
                            @let n = t.get("overflows").and_then(|v| v.as_u64()).unwrap_or(0);
                            @let cycles = t.get("cycles").and_then(|v| v.as_u64()).unwrap_or(0);
                            (n) " samples > " (micros_text(*end))
                            @if cycles > 0 { (format!(" ({:.1} %)", 100.0 * n as f64 / cycles as f64)) }
                        }
                    }
                }
            }
        }
    }
}

fn cases_table(report: &RunReport) -> Markup {
    let t = super::cases::table(report);
    html! {
        @if !t.rows.is_empty() {
            h2 { "kselftest cases" }
            p { "! = not what the device's expectations file says" }
            table id="kselftest" {
                tr { th { "case" } @for c in &t.columns { th { (c) } } }
                @for (name, program, cells) in &t.rows {
                    tr {
                        td title=(program) { (name) }
                        @for c in cells {
                            @match c {
                                None => td { "—" },
                                Some(c) => td class=(if c.status == "TIMEOUT" { "FAIL" } else { c.status.as_str() })
                                    title=(c.reason.as_deref().unwrap_or("")) {
                                    (c.status) @if c.deviates { " !" }
                                },
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The A/B verdicts: a table of the main metrics and per-round dots for each.
fn ab_section(ab: &super::ab_record::AbSummary, report: &RunReport, colours: &Colours) -> Markup {
    let main: Vec<_> = ab
        .metrics
        .iter()
        .filter(|m| m.main)
        .filter_map(|m| Some((m, m.verdict.as_ref()?)))
        .collect();
    html! {
        h2 { "A/B verdict (" (ab.rounds) " round(s) per side)" }
        p {
            "A: " (ab.a_label) " · B: " (ab.b_label) " · accel " (report.accel) " · " (report.smp) " vCPU"
            @if let Some(e) = &report.env { " · " (e.line()) }
        }
        p { (ab.method) }
        table id="ab" {
            tr {
                th { "device" } th { "metric" } th { "A median (min–max)" } th { "B median (min–max)" }
                th { "verdict" } th { "test" } th { "noise" }
            }
            @for (m, v) in &main {
                tr {
                    td { (m.device) }
                    td { (m.scenario) "." (m.metric) }
                    td { (super::ab::spread(v, true)) }
                    td { (super::ab::spread(v, false)) }
                    td class=(if v.significant { "FAIL" } else { "PASS" }) { (v.headline()) }
                    td { (v.test_note()) }
                    td { (v.noise_note()) }
                }
            }
        }
        div.plots {
            @for (m, _) in &main {
                (svg::dots(
                    &format!("{} {}.{} — a dot per round", m.device, m.scenario, m.metric),
                    &[("A".into(), m.a.clone(), colours.get(&m.device)), ("B".into(), m.b.clone(), colours.get(&m.device))],
                ))
            }
        }
    }
}

fn who(c: &CellRun) -> String {
    match (&c.side, c.round) {
        (Some(s), r) => format!("{} / {} {s}{}", c.kernel, c.device, r.unwrap_or(1)),
        (None, Some(r)) => format!("{} / {} #{r}", c.kernel, c.device),
        _ => format!("{} / {}", c.kernel, c.device),
    }
}

fn netperf_plots(report: &RunReport, colours: &Colours) -> Markup {
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
    html! {
        @for label in &labels {
            @let mut unit = String::new();
            @let items: Vec<Bar> = report.runs.iter().filter_map(|c| {
                let t = c.result("netperf")?.metrics.get("tests")?.get(label)?;
                let (v, u) = if label.starts_with("UDP_STREAM") {
                    (t.get("msgs_per_s_received")?.as_f64()?, "msg/s".to_owned())
                } else {
                    let u = t.get("units").and_then(|u| u.as_str()).unwrap_or("");
                    (t.get("throughput")?.as_f64()?, u.replace("10^6bits/s", "Mbit/s"))
                };
                unit = u;
                Some(Bar { label: who(c), value: v, colour: colours.get(&c.device) })
            }).collect();
            @if !items.is_empty() {
                (svg::bars(&format!("netperf {label}"), &unit, &items))
            }
        }
    }
}

fn simple_bars(
    report: &RunReport,
    colours: &Colours,
    scenario: &str,
    title: &str,
    key: &str,
    unit: &str,
) -> Markup {
    let items: Vec<Bar> = report
        .runs
        .iter()
        .filter_map(|c| {
            let r = c.result(scenario)?;
            (r.status != Status::Skip).then_some(())?;
            Some(Bar {
                label: who(c),
                value: r.metrics.get(key)?.as_f64()?,
                colour: colours.get(&c.device),
            })
        })
        .collect();
    html! {
        @if !items.is_empty() { (svg::bars(title, unit, &items)) }
    }
}

/// The histogram lines of one cell (the device's colour; CPU0 solid, the others dashed),
/// each with its samples beyond the histogram.
fn histogram_lines(
    c: &CellRun,
    r: &crate::scenario::ScenarioResult,
    colours: &Colours,
) -> Vec<Line> {
    let threads = r.metrics.get("threads").and_then(|t| t.as_array());
    let overflow = |cpu: &str| {
        threads
            .into_iter()
            .flatten()
            .find(|t| {
                t.get("thread")
                    .and_then(|v| v.as_u64())
                    .map(|v| v.to_string())
                    .as_deref()
                    == Some(cpu)
            })
            .and_then(|t| t.get("overflows")?.as_u64())
            .unwrap_or(0)
    };
    let Some(h) = r.metrics.get("histogram").and_then(|h| h.as_object()) else {
        return Vec::new();
    };
    h.iter()
        .enumerate()
        .map(|(i, (cpu, pts))| Line {
            name: format!("{} CPU{cpu}", c.device),
            colour: colours.get(&c.device),
            dashed: i > 0,
            points: pts
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
                .collect(),
            overflow: overflow(cpu),
        })
        .collect()
}

/// The per-CPU maxima of one cell's cyclictest, as bars in the device's colour.
fn max_bars(c: &CellRun, r: &crate::scenario::ScenarioResult, colours: &Colours) -> Vec<Bar> {
    r.metrics
        .get("threads")
        .and_then(|t| t.as_array())
        .into_iter()
        .flatten()
        .filter_map(|t| {
            Some(Bar {
                label: format!("{} CPU{}", who(c), t.get("thread")?.as_u64()?),
                value: t.get("max")?.as_f64()?,
                colour: colours.get(&c.device),
            })
        })
        .collect()
}

/// One histogram per kernel (and round) with a line per device and CPU, and one bar chart
/// of the per-CPU maxima.
fn cyclictest_plots(report: &RunReport, colours: &Colours) -> Markup {
    let mut groups: Vec<(String, Vec<&CellRun>)> = Vec::new();
    for c in report
        .runs
        .iter()
        .filter(|c| c.result("cyclictest").is_some())
    {
        let key = match (&c.side, c.round) {
            (Some(s), r) => format!("{} {s}{}", c.kernel, r.unwrap_or(1)),
            (None, Some(r)) => format!("{} #{r}", c.kernel),
            _ => c.kernel.clone(),
        };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(c),
            None => groups.push((key, vec![c])),
        }
    }
    let mut maxima: Vec<Bar> = Vec::new();
    let mut plots: Vec<Markup> = Vec::new();
    for (key, cells) in &groups {
        let mut lines = Vec::new();
        let mut end = 0;
        for c in cells {
            let Some(r) = c.result("cyclictest") else {
                continue;
            };
            end = end.max(hist_end(r, &report.params));
            lines.extend(histogram_lines(c, r, colours));
            maxima.extend(max_bars(c, r, colours));
        }
        if !lines.is_empty() {
            plots.push(svg::histogram(
                &format!("cyclictest latency histogram — {key}"),
                "latency (µs)",
                end as f64,
                &format!("> {}", micros_text(end)),
                &lines,
            ));
        }
    }
    html! {
        @for p in &plots { (p) }
        @if !maxima.is_empty() { (svg::bars("cyclictest max latency", "µs", &maxima)) }
    }
}

fn problems(report: &RunReport) -> String {
    let md = markdown::render(report);
    md.split_once("### Problems\n\n")
        .map(|(_, p)| p.to_owned())
        .unwrap_or_default()
}

/// Writes the HTML report to `path` (links to the cells' files relative to its directory).
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    let at = std::path::absolute(path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf));
    std::fs::write(path, render_at(report, at.as_deref())).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};
    use scraper::{Html, Selector};

    fn count(doc: &Html, css: &str) -> usize {
        doc.select(&Selector::parse(css).unwrap()).count()
    }

    fn texts(doc: &Html, css: &str) -> Vec<String> {
        doc.select(&Selector::parse(css).unwrap())
            .map(|e| e.text().collect::<String>())
            .collect()
    }

    fn attrs(doc: &Html, css: &str, a: &str) -> Vec<String> {
        doc.select(&Selector::parse(css).unwrap())
            .filter_map(|e| e.value().attr(a).map(str::to_owned))
            .collect()
    }

    /// The main job's results as the fresh-machine run wrote them (two devices).
    fn main_job() -> RunReport {
        let text = include_str!("../../tests/fixtures/main-job.results.json");
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn the_main_job_s_page_has_its_tables_plots_and_log_links() {
        let r = main_job();
        let at = Path::new(&r.run_dir);
        let doc = Html::parse_document(&render_at(&r, Some(at)));
        assert!(doc.errors.is_empty(), "{:?}", doc.errors);
        assert_eq!(
            texts(&doc, "p.verdict"),
            ["PASS: 10 passed, 0 failed, 0 skipped in 2 guest(s)"]
        );
        // The results table: a header and a row per cell, a column per scenario.
        assert_eq!(count(&doc, "table#results tr"), 3);
        assert_eq!(count(&doc, "table#results tr:first-child th"), 3 + 5 + 2);
        // Each cell's logs, relative to the run directory the page is in.
        let links = attrs(&doc, "table#results td.logs a.log", "href");
        for f in ["serial.log", "kernel.log", "qemu.log", "scenarios.tap"] {
            assert!(
                links.contains(&format!("1-sid-nicemu-igb/{f}")),
                "{f}: {links:?}"
            );
            assert!(
                links.contains(&format!("2-sid-qemu-igb/{f}")),
                "{f}: {links:?}"
            );
        }
        assert!(links.contains(&"1-sid-nicemu-igb/nicemu.log".to_owned()));
        assert!(!links.contains(&"2-sid-qemu-igb/nicemu.log".to_owned()));
        // What was tested.
        let about = texts(&doc, "table.about td").join("\n");
        assert!(about.contains("nicemu 0.1.0"), "{about}");
        assert!(about.contains("QEMU emulator version 11.1.3"), "{about}");
        assert!(about.contains("sid 7.2.13+deb14-amd64"), "{about}");
        assert_eq!(texts(&doc, "p.caveat"), [super::super::text::TCG_CAVEAT]);
        // cyclictest: the overflowed percentiles say where the histogram ends.
        assert_eq!(count(&doc, "table#cyclictest tr"), 1 + 4);
        let cyc = texts(&doc, "table#cyclictest td").join("|");
        assert!(cyc.contains("> 4 ms (histogram end)"), "{cyc}");
        assert!(!cyc.contains("ovf"), "{cyc}");
        assert!(cyc.contains("910 samples > 4 ms (4.5 %)"), "{cyc}");
        // Plots: three netperf bars, ping bars, one histogram for the kernel with a line
        // per device and CPU, the maxima.
        assert_eq!(count(&doc, "div.plots svg.plot.bars"), 3 + 1 + 1);
        assert_eq!(count(&doc, "svg.plot.histogram"), 1);
        assert_eq!(count(&doc, "svg.plot.histogram polyline"), 4);
        assert_eq!(count(&doc, "svg.plot.histogram circle.overflow"), 4);
        assert!(count(&doc, "script") == 0);
    }

    #[test]
    fn a_device_has_one_colour_in_every_plot() {
        let r = main_job();
        let doc = Html::parse_document(&render_at(&r, None));
        let nicemu = svg::colour(0);
        let qemu = svg::colour(1);
        // Bars: each chart lists nicemu-igb then qemu-igb.
        for svg in doc.select(&Selector::parse("svg.plot.bars").unwrap()) {
            let fills: Vec<&str> = svg
                .select(&Selector::parse("rect").unwrap())
                .filter_map(|e| e.value().attr("fill"))
                .collect();
            let labels: Vec<String> = svg
                .select(&Selector::parse("text[text-anchor=end]").unwrap())
                .map(|e| e.text().collect())
                .collect();
            for (f, l) in fills.iter().zip(&labels) {
                let want = if l.contains("qemu-igb") { qemu } else { nicemu };
                assert_eq!(*f, want, "{l}");
            }
        }
        let strokes = attrs(&doc, "svg.plot.histogram polyline", "stroke");
        assert_eq!(strokes, [nicemu, nicemu, qemu, qemu]);
        let swatches = attrs(&doc, "table#results span.swatch", "style");
        assert_eq!(
            swatches,
            [format!("background:{nicemu}"), format!("background:{qemu}")]
        );
        // Absolute links when the page is not beside the run.
        let links = attrs(&doc, "a.log", "href");
        assert!(links[0].starts_with(&r.runs[0].dir), "{links:?}");
    }

    #[test]
    fn an_ab_run_has_its_verdict_table_and_a_dot_per_round() {
        let text = include_str!("../../tests/fixtures/aa-hwstamp-lock.results.json");
        let r: RunReport = serde_json::from_str(text).unwrap();
        let doc = Html::parse_document(&render_at(&r, None));
        let ab = r.ab.as_ref().unwrap();
        let main: Vec<_> = ab
            .metrics
            .iter()
            .filter(|m| m.main && m.verdict.is_some())
            .collect();
        assert!(!main.is_empty());
        assert_eq!(count(&doc, "table#ab tr"), 1 + main.len());
        assert_eq!(count(&doc, "svg.plot.dots"), main.len());
        let rounds: usize = main.iter().map(|m| m.a.len() + m.b.len()).sum();
        assert_eq!(count(&doc, "svg.plot.dots circle.round"), rounds);
        assert_eq!(count(&doc, "svg.plot.dots line.median"), 2 * main.len());
    }

    #[test]
    fn failures_and_escaping() {
        let mut a = cell("sid", "qemu-igb", 0.5, 600.0, false);
        a.device = "<b>x</b>".into();
        let b = cell("sid", "nicemu-igb", 0.7, 300.0, true);
        let h = render_at(&report("r", vec![a, b]), None);
        let doc = Html::parse_document(&h);
        assert_eq!(count(&doc, "table#results td.FAIL"), 1);
        assert!(h.contains("&lt;b&gt;x&lt;/b&gt;"));
        assert_eq!(
            texts(&doc, "h2").last().map(String::as_str),
            Some("Problems")
        );
        assert!(texts(&doc, "p.verdict")[0].starts_with("FAIL: "));
    }
}
