// SPDX-License-Identifier: Apache-2.0
//! A/B over repeated rounds (`--rounds N`, A B A B …, each a fresh boot): per metric the
//! samples of both sides, median and range, the relative change of B against A and the
//! verdict of [`crate::stats::verdict`] — the Mann–Whitney U test decides, a seeded
//! bootstrap interval of the ratio of medians says by how much.

use std::collections::BTreeMap;

use super::ab_record::{AbMetric, AbSummary};
use super::compare::{flatten, fmt_num, interesting};
use super::{CellRun, RunReport};
use crate::stats::verdict::{self, Verdict};

/// How every verdict is reached (printed with the tables).
pub const METHOD: &str = "Mann–Whitney U, two-sided, 5 % (exact without ties); \
    instruction counts per unit of work: Welch's t, two-sided, 5 % (noise assumed normal), \
    a change inside the noise threshold (`--param cost.noise`, %) reported as noise; \
    95 % CI: percentile bootstrap of median(B)/median(A), 10 000 resamples, fixed seed; \
    detectable effect at 80 % power from the rounds' CV";

/// The side of a cell: its `side` field, else A for the first kernel of the report.
fn side_of(c: &CellRun, first_kernel: &str) -> bool {
    match c.side.as_deref() {
        Some(s) => s == "A",
        None => c.kernel == first_kernel,
    }
}

/// True if `key` matches `pattern`, segment by segment, `*` matching one segment
/// ("threads.*.p99" matches "threads.cpu0.p99").
pub fn matches(pattern: &str, key: &str) -> bool {
    let (p, k): (Vec<&str>, Vec<&str>) = (pattern.split('.').collect(), key.split('.').collect());
    p.len() == k.len() && p.iter().zip(&k).all(|(p, k)| *p == "*" || p == k)
}

use super::cost_table::Samples;

fn collect(report: &RunReport) -> (Samples, super::cost_table::Censored) {
    let first = report
        .runs
        .first()
        .map(|c| c.kernel.clone())
        .unwrap_or_default();
    let mut samples = Samples::new();
    let mut windows = super::cost_table::Windows::new();
    for c in report.runs.iter().filter(|c| c.boot == "ok") {
        let is_a = side_of(c, &first);
        for r in &c.scenarios {
            let mut m = BTreeMap::new();
            flatten(
                "",
                &serde_json::to_value(&r.metrics).unwrap_or_default(),
                &mut m,
            );
            for (k, v) in m
                .into_iter()
                .filter(|(k, v)| interesting(k) && v.is_finite())
            {
                let at = (c.device.as_str(), r.scenario.as_str());
                if super::cost_table::note_window(&mut windows, at, &k, v, is_a) {
                    continue;
                }
                let e = samples
                    .entry((c.device.clone(), r.scenario.clone(), k))
                    .or_default();
                if is_a {
                    e.0.push(v)
                } else {
                    e.1.push(v)
                }
            }
        }
    }
    let censored = super::cost_table::pad_functions(&mut samples, &windows);
    (samples, censored)
}

/// Summarises the A/B rounds of `report`; `main` lists the headline metrics as
/// `scenario.key` patterns (all metrics are main when empty).
pub fn summarise(report: &RunReport, rounds: u32, main: &[String]) -> AbSummary {
    let label = |a: bool| {
        let first = report
            .runs
            .first()
            .map(|c| c.kernel.clone())
            .unwrap_or_default();
        report
            .runs
            .iter()
            .find(|c| side_of(c, &first) == a)
            .map(|c| c.kernel_label.clone())
            .unwrap_or_default()
    };
    let (samples, censored) = collect(report);
    let noise = report.params.num("cost.noise") / 100.0;
    let metrics = samples
        .into_iter()
        .filter(|(_, (a, b))| !a.is_empty() && !b.is_empty())
        .map(|(key, (a, b))| {
            let below_cut = censored.get(&key).copied();
            let (device, scenario, metric) = key;
            let full = format!("{scenario}.{metric}");
            let count = crate::cost::metrics::is_count(&metric);
            let mut verdict = if count {
                verdict::compare_counts(&a, &b, noise)
            } else {
                verdict::compare(&a, &b)
            };
            // A side known only as "below the table's cut" in some rounds: not judged.
            if let (Some(v), Some(_)) = (verdict.as_mut(), below_cut) {
                v.significant = false;
            }
            AbMetric {
                main: main.is_empty() || main.iter().any(|p| matches(p, &full)),
                count,
                below_cut,
                verdict,
                device,
                scenario,
                metric,
                a,
                b,
            }
        })
        .collect();
    AbSummary {
        a_label: label(true),
        b_label: label(false),
        rounds,
        method: METHOD.to_owned(),
        metrics,
    }
}

/// "median (min–max)" of one side.
pub fn spread(v: &Verdict, a: bool) -> String {
    let s = if a { &v.a } else { &v.b };
    format!(
        "{} ({}–{})",
        fmt_num(s.median),
        fmt_num(s.min),
        fmt_num(s.max)
    )
}

/// The Markdown section: context lines, then one row per main metric.
pub fn render_markdown(ab: &AbSummary, report: &RunReport) -> String {
    let mut s = format!(
        "## A/B verdict ({} round(s) per side, A B A B …, each a fresh boot)\n\n\
         - **A**: {}\n- **B**: {}\n- accel {}, {} vCPU{}\n- test: {}\n\n",
        ab.rounds,
        ab.a_label,
        ab.b_label,
        report.accel,
        report.smp,
        report
            .env
            .as_ref()
            .map(|e| format!(", {}", e.line()))
            .unwrap_or_default(),
        ab.method
    );
    if let Some(sab) = &report.splat_ab {
        for l in sab.verdict_lines() {
            s.push_str(&format!("**{l}**\n\n"));
        }
    }
    s.push_str(
        "| device | metric | A median (min–max) | B median (min–max) | B vs A | verdict | test | noise |\n\
         |---|---|---:|---:|---:|---|---|---|\n",
    );
    let mut others = 0;
    // Deterministic counts first: under TCG they are the sturdiest figures.
    let ordered =
        (ab.metrics.iter().filter(|m| m.count)).chain(ab.metrics.iter().filter(|m| !m.count));
    for m in ordered {
        if !m.main {
            others += 1;
            continue;
        }
        let Some(v) = &m.verdict else { continue };
        s.push_str(&format!(
            "| {} | {}.{} | {} | {} | {} | {} | {} | {} |\n",
            m.device,
            m.scenario,
            m.metric,
            spread(v, true),
            spread(v, false),
            v.change
                .map(|c| format!("{} %", verdict::pct(c)))
                .unwrap_or_default(),
            v.headline(),
            v.test_note(),
            v.noise_note()
        ));
    }
    s.push_str(&super::cost_table::render(ab, 15));
    if ab
        .metrics
        .iter()
        .any(|m| m.metric.contains(".model.") || m.metric.starts_with("cost.model."))
    {
        let p = &report.params;
        let m = crate::cost::metrics::Model {
            ghz: p.num("cost.ghz"),
            ipc: p.num("cost.ipc"),
            mmio_read_ns: p.num("cost.mmio_read_ns"),
        };
        s.push_str(&format!("\n`cost.model.*`: {}.\n", m.describe()));
    }
    s.push_str(&cyclictest_tables(report));
    if others > 0 {
        s.push_str(&format!(
            "\n{others} further metric(s) with verdicts in results.json (`ab.metrics`).\n"
        ));
    }
    s
}

/// cyclictest per side and round in the seed's shape (`T: N … Min Avg Max` per CPU) plus
/// p99, p99.9 and the threshold share; empty when no cell ran cyclictest.
pub fn cyclictest_tables(report: &RunReport) -> String {
    use crate::scenario::cyclictest::{seed_lines, Thread};
    let p = &report.params;
    let (prio, interval) = (
        p.get("cyclictest.priority"),
        p.num("cyclictest.interval") as u64,
    );
    let threshold = p.num("cyclictest.threshold") as u64;
    let first = report
        .runs
        .first()
        .map(|c| c.kernel.clone())
        .unwrap_or_default();
    let mut s = String::new();
    for (is_a, name) in [(true, "A"), (false, "B")] {
        let mut block = String::new();
        for c in report.runs.iter().filter(|c| side_of(c, &first) == is_a) {
            let Some(threads) = c
                .result("cyclictest")
                .and_then(|r| r.metrics.get("threads"))
            else {
                continue;
            };
            let threads: Vec<Thread> = serde_json::from_value(threads.clone()).unwrap_or_default();
            block.push_str(&format!(
                "# {name}{} {} / {}\n",
                c.round.unwrap_or(1),
                c.kernel_label,
                c.device
            ));
            let hist_us = c
                .result("cyclictest")
                .and_then(|r| r.metrics.get("histogram_us"))
                .and_then(|v| v.as_u64())
                .unwrap_or(p.num("cyclictest.histogram") as u64);
            for l in seed_lines(&threads, &prio, interval, threshold, hist_us) {
                block.push_str(&l);
                block.push('\n');
            }
        }
        if !block.is_empty() {
            s.push_str(&format!("\ncyclictest, side {name}:\n\n```\n{block}```\n"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::testdata::{cell, report};

    fn ab_report(pairs: &[(f64, f64)]) -> RunReport {
        let mut runs = Vec::new();
        for (i, (a, b)) in pairs.iter().enumerate() {
            for (side, mbps) in [("A", a), ("B", b)] {
                let mut c = cell("sid", "nicemu-igb", 0.5, *mbps, false);
                c.side = Some(side.into());
                c.round = Some(i as u32 + 1);
                runs.push(c);
            }
        }
        report("r1", runs)
    }

    /// Puts a TCP_STREAM counting window with a cut own-instructions table in each cell:
    /// `(self table, self_cut)` for A's rounds, then B's.
    fn with_tables(r: &mut RunReport, a: (serde_json::Value, f64), b: (serde_json::Value, f64)) {
        for c in &mut r.runs {
            let (table, cut) = if c.side.as_deref() == Some("A") {
                &a
            } else {
                &b
            };
            let np = c.scenarios.iter_mut().find(|s| s.scenario == "netperf");
            let tests = np.unwrap().metrics.get_mut("tests").unwrap();
            tests["TCP_STREAM"]["cost"] =
                serde_json::json!({"kernel": 5000.0, "self": table, "self_cut": cut});
        }
    }

    #[test]
    fn a_function_below_one_sides_table_cut_is_not_read_as_zero() {
        // ixgbe-xps, run 1796529026-13885: B's table (25 functions) left out
        // dev_gro_receive (119 a message on A), and the report called it "differs";
        // __siphash_unaligned is gone from B because B's code no longer runs it.
        let mut r = ab_report(&[(100.0, 110.0), (101.0, 111.0), (99.0, 109.0)]);
        let a = serde_json::json!({"dev_gro_receive": 119.0, "__siphash_unaligned": 317.0});
        let b = serde_json::json!({"udp_rcv": 160.0});
        with_tables(&mut r, (a, 59.0), (b, 150.0));
        let ab = summarise(&r, 3, &[]);
        let get = |f: &str| {
            let key = format!("tests.TCP_STREAM.cost.self.{f}");
            ab.metrics.iter().find(|m| m.metric == key).unwrap()
        };
        let gro = get("dev_gro_receive");
        assert_eq!(gro.below_cut, Some((None, Some(150.0))));
        assert!(!gro.verdict.as_ref().unwrap().significant);
        assert_eq!(get("udp_rcv").below_cut, Some((Some(59.0), None)));
        assert!(
            ab.metrics.iter().all(|m| !m.metric.ends_with("self_cut")),
            "the cut is not a metric"
        );
        let table = super::super::cost_table::render(&ab, 10);
        assert!(
            table.contains(
                "| dev_gro_receive | 119 | < 150 | ? | not judged: below the table's cut on B |"
            ),
            "{table}"
        );
        // Tables that list every function (cut 0): a missing function did not run.
        let mut r = ab_report(&[(100.0, 110.0), (101.0, 111.0), (99.0, 109.0)]);
        let a = serde_json::json!({"__siphash_unaligned": 317.0});
        with_tables(&mut r, (a, 0.0), (serde_json::json!({}), 0.0));
        let ab = summarise(&r, 3, &[]);
        let table = super::super::cost_table::render(&ab, 10);
        assert!(
            table.contains("| __siphash_unaligned | 317 | 0 | -317.0 | -100.0 % |"),
            "{table}"
        );
    }

    #[test]
    fn samples_are_split_by_side_in_round_order() {
        let r = ab_report(&[
            (100.0, 110.0),
            (101.0, 111.0),
            (99.0, 109.0),
            (100.5, 110.5),
            (99.5, 109.5),
        ]);
        let ab = summarise(&r, 5, &["netperf.tests.*.throughput".into()]);
        let m = ab
            .metrics
            .iter()
            .find(|m| m.metric == "tests.TCP_STREAM.throughput")
            .unwrap();
        assert!(m.main);
        assert_eq!(m.a, [100.0, 101.0, 99.0, 100.5, 99.5]);
        assert_eq!(m.b[0], 110.0);
        let v = m.verdict.as_ref().unwrap();
        assert!(v.significant);
        // Same kernel name on both sides (A/A): the side field decides, not the name.
        assert_eq!(ab.a_label, ab.b_label);
        let ping = ab
            .metrics
            .iter()
            .find(|m| m.metric == "rtt_avg_ms")
            .unwrap();
        assert!(!ping.main);
        assert!(!ping.verdict.as_ref().unwrap().significant);
    }

    #[test]
    fn markdown_table_shape() {
        let r = ab_report(&[
            (100.0, 110.0),
            (101.0, 111.0),
            (99.0, 109.0),
            (100.5, 110.5),
            (99.5, 109.5),
        ]);
        let ab = summarise(&r, 5, &["netperf.tests.TCP_STREAM.throughput".into()]);
        let md = render_markdown(&ab, &r);
        assert!(
            md.starts_with("## A/B verdict (5 round(s) per side"),
            "{md}"
        );
        assert!(md.contains("| device | metric | A median (min–max) | B median (min–max) | B vs A | verdict | test | noise |"));
        let row = md
            .lines()
            .find(|l| l.starts_with("| nicemu-igb | netperf.tests.TCP_STREAM.throughput |"))
            .unwrap();
        let cols: Vec<&str> = row.split(" | ").collect();
        assert_eq!(cols[2], "100 (99–101)");
        assert_eq!(cols[3], "110 (109–111)");
        assert_eq!(cols[4], "+10.0 %");
        assert!(
            cols[5].starts_with("+10.0 % (95 % CI +") && cols[5].ends_with("n=5+5)"),
            "{row}"
        );
        assert_eq!(cols[6], "Mann–Whitney U=25, exact p=0.008");
        assert!(md.contains("further metric(s)"));
        // The seed's cyclictest shape per side and round.
        assert!(md.contains("cyclictest, side A:\n\n```\n# A1 sid 1.0 / nicemu-igb\nT: 0 P:90 I:200 C:       - Min:     5 Avg:    20 Max:   300 p99:"), "{md}");
        assert!(md.contains("# B5 sid 1.0 / nicemu-igb\nT: 0 P:90 I:200"));
    }

    #[test]
    fn json_round_trip_and_html_dots() {
        let mut r = ab_report(&[(100.0, 110.0), (101.0, 111.0), (99.0, 109.0)]);
        r.ab = Some(summarise(
            &r,
            3,
            &["netperf.tests.TCP_STREAM.throughput".into()],
        ));
        let text = serde_json::to_string(&r).unwrap();
        let back: RunReport = serde_json::from_str(&text).unwrap();
        let heads = |ab: &Option<AbSummary>| -> Vec<String> {
            let ab = ab.as_ref().unwrap();
            ab.metrics
                .iter()
                .map(|m| m.verdict.as_ref().unwrap().headline())
                .collect()
        };
        assert_eq!(heads(&back.ab), heads(&r.ab));
        assert_eq!(back.ab.as_ref().unwrap().metrics[7].a, [100.0, 101.0, 99.0]);
        assert_eq!(back.runs[1].side.as_deref(), Some("B"));
        assert_eq!(back.runs[5].round, Some(3));
        let html = crate::report::html::render_at(&r, None);
        assert!(html.contains("<h2>A/B verdict (3 round(s) per side)</h2>"));
        // 3+3 rounds: the exact test cannot reach 5 %, so no verdict claims a difference.
        assert!(html.contains("no significant difference (n=3+3)"));
        assert!(html.contains("cannot detect at 5 % with n=3+3"));
        assert_eq!(html.matches("<circle").count(), 6);
        let md = crate::report::markdown::render(&r);
        assert!(md.contains("| A1 sid 1.0 | nicemu-igb |"), "{md}");
        assert!(md.contains("| B3 sid 1.0 | nicemu-igb |"));
    }

    #[test]
    fn captured_aa_run_finds_no_difference_and_keeps_the_table_shape() {
        // `experiment hwstamp-lock --aa --rounds 5` on nicemu-igb, TCG, host load ~10.
        let text = include_str!("../../tests/fixtures/aa-hwstamp-lock.results.json");
        let r: RunReport = serde_json::from_str(text).unwrap();
        let main: Vec<String> = [
            "hwstamp.rx_pps",
            "hwstamp.stamped_per_s",
            "hwstamp.rx_per_cpu_s",
            "regsweep.read_us",
        ]
        .map(String::from)
        .to_vec();
        // Recomputed from the rounds, not read back: the statistics of this build.
        let ab = summarise(&r, 5, &main);
        let md = render_markdown(&ab, &r);
        let rows: Vec<&str> = md
            .lines()
            .filter(|l| l.starts_with("| nicemu-igb |"))
            .collect();
        assert_eq!(rows.len(), 4, "{md}");
        for row in &rows {
            let cols: Vec<&str> = row.trim_matches('|').split(" | ").collect();
            assert_eq!(cols.len(), 8, "{row}");
            assert_eq!(cols[5], "no significant difference (n=5+5)", "{row}");
            assert!(cols[6].starts_with("Mann–Whitney U="), "{row}");
            assert!(
                cols[7].starts_with("spread CV ") && cols[7].contains(", detects ≥ "),
                "{row}"
            );
        }
        assert!(
            md.contains("- accel tcg, 2 vCPU, host 2 cores (load "),
            "{md}"
        );
        // The verdicts recorded by the run are the ones this build computes.
        let recorded = r.ab.as_ref().unwrap();
        for m in ab.metrics.iter().filter(|m| m.main) {
            let old = recorded
                .metrics
                .iter()
                .find(|o| o.metric == m.metric && o.scenario == m.scenario)
                .unwrap();
            assert_eq!(old.a, m.a);
            assert_eq!(
                old.verdict.as_ref().unwrap().headline(),
                m.verdict.as_ref().unwrap().headline()
            );
        }
    }

    #[test]
    fn pattern_matching_is_per_segment() {
        assert!(matches(
            "cyclictest.threads.*.p99",
            "cyclictest.threads.cpu1.p99"
        ));
        assert!(!matches(
            "cyclictest.threads.*.p99",
            "cyclictest.threads.cpu1.p99_9"
        ));
        assert!(!matches("a.*", "a.b.c"));
    }
}
