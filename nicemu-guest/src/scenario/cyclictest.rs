// SPDX-License-Identifier: Apache-2.0
//! `cyclictest`: `cyclictest -l N -Smp90 -i200 -q -h H` while a stats reader
//! (`ethtool -S` + `ip -s link` in a loop) runs; per-thread Min/Avg/Max and the latency
//! histogram (non-empty buckets only).

use std::collections::BTreeMap;

use serde_json::json;

use super::{num, Scenario, ScenarioResult, Section, Target, NEED_IFACE};
use crate::params::Params;

/// cyclictest latency scenario.
#[derive(Debug)]
pub struct Cyclictest;

/// One measurement thread's summary.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Thread {
    /// Thread index (T:N; with -S one per CPU).
    pub thread: u32,
    /// Cycles counted (T: lines only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    /// Minimum latency (µs).
    pub min: u64,
    /// Average latency (µs).
    pub avg: u64,
    /// Maximum latency (µs).
    pub max: u64,
    /// Samples beyond the histogram (with -h).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overflows: Option<u64>,
    /// Median latency from the histogram (µs, bucket upper edge).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p50: Option<u64>,
    /// 99th percentile (µs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99: Option<u64>,
    /// 99.9th percentile (µs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_9: Option<u64>,
    /// Share of samples above the threshold (`cyclictest.threshold`), in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub above_pct: Option<f64>,
}

/// Percentiles of one thread's histogram.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Percentiles {
    /// p50, p99, p99.9 (µs, upper edge of the bucket holding them); `None` when the
    /// percentile lies among the overflows (beyond the histogram's range).
    pub p: [Option<u64>; 3],
    /// Percent of all samples (overflows included) in buckets at or above `threshold`.
    pub above_pct: f64,
}

/// The quantiles [`Percentiles::p`] holds.
pub const QUANTILES: [f64; 3] = [0.5, 0.99, 0.999];

/// Percentiles from histogram buckets (start µs, count) of width `bin` µs, plus
/// `overflows` samples beyond the histogram: the q-quantile is the first bucket where the
/// cumulative count reaches q · total. The threshold share counts buckets whose start is at
/// or above `threshold` µs, and every overflow.
pub fn percentiles(
    hist: &[(u64, u64)],
    overflows: u64,
    bin: u64,
    threshold: u64,
) -> Option<Percentiles> {
    let mut buckets = hist.to_vec();
    buckets.sort_unstable();
    let total = buckets.iter().map(|b| b.1).sum::<u64>() + overflows;
    if total == 0 {
        return None;
    }
    let mut p = [None; 3];
    for (i, q) in QUANTILES.iter().enumerate() {
        let need = (q * total as f64).ceil().max(1.0) as u64;
        let mut cum = 0;
        for (us, c) in &buckets {
            cum += c;
            if cum >= need {
                p[i] = Some(us + bin.max(1) - 1);
                break;
            }
        }
    }
    let above: u64 = buckets
        .iter()
        .filter(|b| b.0 >= threshold)
        .map(|b| b.1)
        .sum::<u64>()
        + overflows;
    Some(Percentiles {
        p,
        above_pct: above as f64 * 100.0 / total as f64,
    })
}

/// Adds histogram percentiles and the threshold share to each thread of `out`.
pub fn add_percentiles(out: &mut Output, bin: u64, threshold: u64) {
    for t in &mut out.threads {
        let Some(h) = out.histogram.get(&t.thread) else {
            continue;
        };
        // `-q -h` prints no T: lines: the cycles are the histogram's samples.
        if t.cycles.is_none() {
            t.cycles = Some(h.iter().map(|b| b.1).sum::<u64>() + t.overflows.unwrap_or(0));
        }
        if let Some(p) = percentiles(h, t.overflows.unwrap_or(0), bin, threshold) {
            [t.p50, t.p99, t.p99_9] = p.p;
            t.above_pct = Some((p.above_pct * 1000.0).round() / 1000.0);
        }
    }
}

/// The seed's table (`T: N … Min Avg Max` per CPU) plus p99 / p99.9 and the threshold share,
/// one line per thread: "T: 0 P:90 I:200 C:  30000 Min:   5 Avg:  231 Max: 11871 p99:   531 p99.9:  3900 >100µs: 1.2 %";
/// a percentile beyond the histogram (`hist_us` µs) is written `>4000`.
pub fn seed_lines(
    threads: &[Thread],
    priority: &str,
    interval: u64,
    threshold: u64,
    hist_us: u64,
) -> Vec<String> {
    let opt = |v: Option<u64>| v.map_or_else(|| format!(">{hist_us}"), |v| v.to_string());
    threads
        .iter()
        .map(|t| {
            format!(
                "T:{:>2} P:{priority} I:{} C:{:>8} Min:{:>6} Avg:{:>6} Max:{:>6} p99:{:>6} p99.9:{:>6} >{threshold}µs: {}",
                t.thread,
                // cyclictest -i I with -S: thread N's interval is I + 500·N µs.
                interval + 500 * u64::from(t.thread),
                t.cycles.map(|c| c.to_string()).unwrap_or_else(|| "-".into()),
                t.min,
                t.avg,
                t.max,
                opt(t.p99),
                opt(t.p99_9),
                t.above_pct.map(|a| format!("{a:.2} %")).unwrap_or_else(|| "-".into())
            )
        })
        .collect()
}

/// A latency of `us` microseconds as the reports write it ("4 ms", "750 µs").
pub fn micros_text(us: u64) -> String {
    if us >= 1000 && us.is_multiple_of(1000) {
        format!("{} ms", us / 1000)
    } else {
        format!("{us} µs")
    }
}

/// What a percentile beyond a histogram of `hist_us` µs is known to be.
pub fn beyond_histogram(hist_us: u64) -> String {
    format!("> {} (histogram end)", micros_text(hist_us))
}

/// Per-CPU percentiles for a summary: "531/612 µs", or with some beyond the histogram
/// "531 µs/> 4 ms (histogram end)", or all beyond it "> 4 ms (histogram end)".
pub fn percentiles_text(p: &[Option<u64>], hist_us: u64) -> String {
    if p.iter().all(Option::is_some) {
        let v: Vec<String> = p.iter().flatten().map(u64::to_string).collect();
        return format!("{} µs", v.join("/"));
    }
    if p.iter().all(Option::is_none) {
        return beyond_histogram(hist_us);
    }
    p.iter()
        .map(|v| v.map_or_else(|| beyond_histogram(hist_us), |v| format!("{v} µs")))
        .collect::<Vec<_>>()
        .join("/")
}

/// The table's headline: "max 1175678 µs (1175678/862548), p99 > 4 ms (histogram end)".
pub fn summary(threads: &[Thread], hist_us: u64) -> String {
    let max = threads.iter().map(|t| t.max).max().unwrap_or(0);
    let per: Vec<String> = threads.iter().map(|t| t.max.to_string()).collect();
    let p99: Vec<Option<u64>> = threads.iter().map(|t| t.p99).collect();
    format!(
        "max {max} µs ({}), p99 {}",
        per.join("/"),
        percentiles_text(&p99, hist_us)
    )
}

/// [`summary`] from a result's metrics (results written before it said where the
/// histogram ends read with the parameter's default).
pub fn summary_of(r: &ScenarioResult) -> Option<String> {
    let threads: Vec<Thread> = serde_json::from_value(r.metrics.get("threads")?.clone()).ok()?;
    if threads.is_empty() {
        return None;
    }
    let hist_us = r
        .metrics
        .get("histogram_us")
        .and_then(|v| v.as_u64())
        .unwrap_or(Params::default().num("cyclictest.histogram") as u64);
    Some(summary(&threads, hist_us))
}

/// Parsed cyclictest output.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    /// Per-thread summaries.
    pub threads: Vec<Thread>,
    /// Histogram: per thread, (latency µs, count) for non-empty buckets.
    pub histogram: BTreeMap<u32, Vec<(u64, u64)>>,
}

/// Parses `cyclictest -q` output, with or without `-h`.
pub fn parse_output(lines: &[&str]) -> Output {
    let mut out = Output::default();
    let mut hist_min = Vec::new();
    let mut hist_avg = Vec::new();
    let mut hist_max = Vec::new();
    let mut hist_ovf = Vec::new();
    for l in lines {
        let l = l.trim();
        if let Some(rest) = l.strip_prefix("T:") {
            let field = |name: &str| -> Option<f64> {
                let pos = rest.find(name)?;
                num(rest[pos + name.len()..].trim_start())
            };
            let thread = num(rest.trim_start()).unwrap_or(0.0) as u32;
            out.threads.push(Thread {
                thread,
                cycles: field("C:").map(|v| v as u64),
                min: field("Min:").unwrap_or(0.0) as u64,
                avg: field("Avg:").unwrap_or(0.0) as u64,
                max: field("Max:").unwrap_or(0.0) as u64,
                ..Thread::default()
            });
        } else if let Some(rest) = l.strip_prefix('#') {
            let rest = rest.trim();
            let values = |p: &str| -> Option<Vec<u64>> {
                rest.strip_prefix(p).map(|v| {
                    v.split_whitespace()
                        .filter_map(|x| x.parse::<u64>().ok())
                        .collect()
                })
            };
            if let Some(v) = values("Min Latencies:") {
                hist_min = v;
            } else if let Some(v) = values("Avg Latencies:") {
                hist_avg = v;
            } else if let Some(v) = values("Max Latencies:") {
                hist_max = v;
            } else if let Some(v) = values("Histogram Overflows:") {
                hist_ovf = v;
            }
        } else if l.starts_with(|c: char| c.is_ascii_digit()) {
            let v: Vec<u64> = l
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            if let Some((us, counts)) = v.split_first() {
                for (t, c) in counts.iter().enumerate() {
                    if *c > 0 {
                        out.histogram.entry(t as u32).or_default().push((*us, *c));
                    }
                }
            }
        }
    }
    if out.threads.is_empty() {
        for (i, max) in hist_max.iter().enumerate() {
            out.threads.push(Thread {
                thread: i as u32,
                cycles: None,
                min: hist_min.get(i).copied().unwrap_or(0),
                avg: hist_avg.get(i).copied().unwrap_or(0),
                max: *max,
                ..Thread::default()
            });
        }
    }
    for (i, o) in hist_ovf.iter().enumerate() {
        if let Some(t) = out.threads.get_mut(i) {
            t.overflows = Some(*o);
        }
    }
    out
}

/// Re-bins cyclictest's 1 µs histogram rows into `w` µs buckets (at most ~100 rows on the
/// console) and drops empty buckets; `#` summary lines pass through (not the long lists of
/// overflow cycle numbers). (`$` is escaped for `sh -c "…"`.)
const HIST_AWK: &str = "/^# Thread|^# Histogram Overflow at/ { next } /^[0-9]/ { b=int(\\$1/w)*w; for (i=2; i<=NF; i++) s[b\\\",\\\"i]+=\\$i; \
    if (b>m) m=b; if (NF>nf) nf=NF; next } { print } \
    END { for (b=0; b<=m; b+=w) { l=sprintf(\\\"%06d\\\", b); nz=0; \
    for (i=2; i<=nf; i++) { v=s[b\\\",\\\"i]+0; if (v>0) nz=1; l=l \\\" \\\" v } if (nz) print l } }";

/// Histogram bucket width for `h` µs of histogram (≤ 100 buckets).
pub fn bin_width(h: u64) -> u64 {
    h.div_ceil(100).max(1)
}

impl Scenario for Cyclictest {
    fn name(&self) -> &'static str {
        "cyclictest"
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        (p.num("cyclictest.loops") * p.num("cyclictest.interval") / 1e6 * 2.0) as u64 + 10
    }

    fn script(&self, p: &Params) -> String {
        let loops = p.num("cyclictest.loops") as u64;
        let interval = p.num("cyclictest.interval") as u64;
        let bound = loops * interval / 1_000_000 * 10 + 60;
        let reader = p.get("cyclictest.stats_reader") == "1";
        let mut s = String::from(NEED_IFACE);
        s.push_str(&format!(
            "nicemu_kv stats_reader {}\nnicemu_kv hist_bin {}\nnicemu_kv hist_us {}\nnicemu_kv threshold {}\n\
             rm -f /tmp/cyc.stop; echo 0 > /tmp/cyc.reads\n",
            u8::from(reader),
            bin_width(p.num("cyclictest.histogram") as u64),
            p.num("cyclictest.histogram") as u64,
            p.num("cyclictest.threshold") as u64
        ));
        if reader {
            s.push_str(
                "( i=0; while [ ! -e /tmp/cyc.stop ]; do /usr/sbin/ethtool -S \"$IFACE\" >/dev/null 2>&1; \
                 /usr/bin/ip -s link show \"$IFACE\" >/dev/null 2>&1; i=$((i+1)); echo $i > /tmp/cyc.reads; done ) &\n\
                 rdr=$!\n",
            );
        }
        s.push_str(&format!(
            "t0=$(nicemu_uptime)\n\
             nicemu_out cyc timeout {bound} sh -c \"/usr/bin/cyclictest -l {loops} -Smp{} -i{interval} -q -h {} \
             | awk -v w={bin} '{HIST_AWK}'\"\n\
             nicemu_kv secs \"$(echo $t0 $(nicemu_uptime) | awk '{{print $2-$1}}')\"\n",
            p.get("cyclictest.priority"),
            p.get("cyclictest.histogram"),
            bin = bin_width(p.num("cyclictest.histogram") as u64),
        ));
        if reader {
            s.push_str("touch /tmp/cyc.stop; wait $rdr\n");
        }
        s.push_str("nicemu_kv stats_reads \"$(cat /tmp/cyc.reads)\"\ntrue");
        s
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let lines: Vec<&str> = s.lines("cyc").collect();
        let mut out = parse_output(&lines);
        let bin = s.get("hist_bin").and_then(num).unwrap_or(1.0) as u64;
        let threshold = s.get("threshold").and_then(num).unwrap_or(100.0) as u64;
        add_percentiles(&mut out, bin, threshold);
        if out.threads.is_empty() {
            r.check_failed(
                "results printed",
                format!(
                    "cyclictest printed no results (rc {}): {}",
                    s.get("cyc_rc").unwrap_or("?"),
                    lines
                        .iter()
                        .rev()
                        .take(3)
                        .rev()
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" | ")
                ),
            );
            return r;
        }
        r.check_passed("results printed");
        let max = out.threads.iter().map(|t| t.max).max().unwrap_or(0);
        r.metric("threads", json!(out.threads));
        r.metric("max_us", json!(max));
        r.metric("threshold_us", json!(threshold));
        r.metric(
            "avg_us",
            json!(out.threads.iter().map(|t| t.avg).sum::<u64>() / out.threads.len() as u64),
        );
        let hist: BTreeMap<String, Vec<(u64, u64)>> = out
            .histogram
            .iter()
            .map(|(t, v)| (t.to_string(), v.clone()))
            .collect();
        r.metric("histogram", json!(hist));
        let reads = s.get("stats_reads").and_then(num).unwrap_or(0.0);
        let secs = s.get("secs").and_then(num).unwrap_or(0.0);
        if s.get("stats_reader") == Some("1") {
            r.metric("stats_reads", json!(reads as u64));
            r.check("stats reader read", reads > 0.0, || {
                "the stats reader loop never completed a read".into()
            });
        }
        if secs > 0.0 {
            r.metric("secs", json!(secs));
        }
        // Guests before `hist_us` was printed: the buckets are a hundredth of the histogram.
        let hist_us = s
            .get("hist_us")
            .and_then(num)
            .map_or(bin * 100, |v| v as u64);
        r.metric("histogram_us", json!(hist_us));
        r.summary = Some(summary(&out.threads, hist_us));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = include_str!("../../tests/fixtures/cyclictest-histogram.txt");

    #[test]
    fn percentiles_beyond_the_histogram_say_where_it_ends() {
        assert_eq!(
            percentiles_text(&[Some(531), Some(612)], 4000),
            "531/612 µs"
        );
        assert_eq!(
            percentiles_text(&[Some(531), None], 4000),
            "531 µs/> 4 ms (histogram end)"
        );
        assert_eq!(
            percentiles_text(&[None, None], 4000),
            "> 4 ms (histogram end)"
        );
        assert_eq!(beyond_histogram(2500), "> 2500 µs (histogram end)");
    }

    #[test]
    fn histogram_summary_and_rebinned_rows() {
        let lines: Vec<&str> = CAPTURE.lines().collect();
        let o = parse_output(&lines);
        assert_eq!(o.threads.len(), 2);
        assert_eq!(
            (o.threads[0].min, o.threads[0].avg, o.threads[0].max),
            (2, 231, 11871)
        );
        assert_eq!(o.threads[1].overflows, Some(30));
        assert!(o.histogram[&0].iter().any(|&(us, c)| us == 8 && c == 93));
    }

    #[test]
    fn percentiles_from_buckets_and_overflows() {
        let h = [(3, 40), (2, 50), (10, 9), (500, 1)];
        let p = percentiles(&h, 0, 1, 100).unwrap();
        assert_eq!(p.p, [Some(2), Some(10), Some(500)]);
        assert!((p.above_pct - 1.0).abs() < 1e-12);
        // 40 µs buckets report their upper edge; one overflow pushes p99.9 out of range.
        let p = percentiles(&[(0, 51), (40, 48), (400, 1)], 1, 40, 100).unwrap();
        assert_eq!(p.p, [Some(39), Some(439), None]);
        assert!((p.above_pct - 200.0 / 101.0).abs() < 1e-12);
        assert_eq!(percentiles(&[], 0, 1, 100), None);
    }

    #[test]
    fn captured_histogram_percentiles_are_ordered_and_within_range() {
        let lines: Vec<&str> = CAPTURE.lines().collect();
        let mut o = parse_output(&lines);
        add_percentiles(&mut o, 1, 100);
        for t in &o.threads {
            let (p50, p99) = (t.p50.unwrap(), t.p99.unwrap());
            assert!(t.min <= p50 && p50 <= p99 && p99 <= t.max, "{t:?}");
            assert!(t.above_pct.unwrap() > 0.0 && t.above_pct.unwrap() < 100.0);
        }
        let table = seed_lines(&o.threads, "90", 200, 100, 4000);
        assert_eq!(table.len(), 2);
        assert!(table[0].starts_with("T: 0 P:90 I:200 C:"), "{}", table[0]);
        assert!(table[1].starts_with("T: 1 P:90 I:700 C:"), "{}", table[1]);
        assert!(table[0].contains("Max: 11871 p99:"), "{}", table[0]);
        assert!(table[1].contains(" >100µs: "), "{}", table[1]);
    }

    #[test]
    fn t_lines_parse() {
        let l = ["T: 0 ( 1234) P:90 I:200 C:  20000 Min:      7 Act:   23 Avg:   31 Max:    1234"];
        let o = parse_output(&l);
        assert_eq!(o.threads[0].cycles, Some(20000));
        assert_eq!(
            (o.threads[0].min, o.threads[0].avg, o.threads[0].max),
            (7, 31, 1234)
        );
    }

    #[test]
    fn rebinning_awk_runs_in_a_real_shell() {
        let script = Cyclictest.script(&Params::default());
        let line = script.lines().find(|l| l.contains("awk -v w=")).unwrap();
        // Replace the tool by the captured output; keep the shell quoting as the guest sees it.
        let cmd = &line[line.find("sh -c").unwrap()..];
        let pipe = cmd.find(" | awk").unwrap();
        let cmd = format!("sh -c \"cat {FIXTURE}{}", &cmd[pipe..]);
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{cmd}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('0')).collect();
        assert!(!rows.is_empty() && rows.len() <= 101, "{text}");
        assert!(rows[0].starts_with("000000 "), "{text}");
        let o = parse_output(&text.lines().collect::<Vec<_>>());
        assert_eq!(o.threads.len(), 2);
        let total: u64 = o.histogram[&0].iter().map(|(_, c)| c).sum();
        assert!(total > 1000, "{total}");
    }

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/cyclictest-histogram.txt"
    );
}
