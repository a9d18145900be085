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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
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
                overflows: None,
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
                overflows: None,
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
            "nicemu_kv stats_reader {}\nrm -f /tmp/cyc.stop; echo 0 > /tmp/cyc.reads\n",
            u8::from(reader)
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
        let out = parse_output(&lines);
        if out.threads.is_empty() {
            r.add_failure(format!(
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
            ));
            return r;
        }
        let max = out.threads.iter().map(|t| t.max).max().unwrap_or(0);
        r.metric("threads", json!(out.threads));
        r.metric("max_us", json!(max));
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
            if reads == 0.0 {
                r.add_failure("the stats reader loop never completed a read");
            }
        }
        if secs > 0.0 {
            r.metric("secs", json!(secs));
        }
        let per: Vec<String> = out.threads.iter().map(|t| t.max.to_string()).collect();
        r.summary = Some(format!("max {} µs ({})", max, per.join("/")));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPTURE: &str = include_str!("../../tests/fixtures/cyclictest-histogram.txt");

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
