// SPDX-License-Identifier: Apache-2.0
//! Which metrics a comparison shows: each scenario's headline metrics (the default), every
//! metric (`--all`), or those matching `--metric GLOB` patterns.

/// Each scenario's headline metrics, as patterns over `SCENARIO.KEY` (see [`glob`]).
/// A scenario not listed shows its status only unless `--all` or `--metric` asks.
pub const HEADLINES: &[&str] = &[
    "ping.loss_pct",
    "ping.rtt_avg_ms",
    "netperf.tests.*.throughput",
    "cyclictest.threads.*.p99",
    "cyclictest.threads.*.max",
    "cyclictest.threads.*.above_pct",
    "qdisc.*pps*",
    "mq.*throughput*",
    "xdp.*.rx_pps",
    "xsk.*.rx_pps",
    "xsk.*.tx_pps",
    "hwstamp.rx_pps",
    "hwstamp.stamped_per_s",
    "hwstamp.stamp.trans_per_s",
    "regsweep.sweep_us",
    "regsweep.read_us",
    "preemptoff.*_max_us",
];

/// What to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Select {
    /// [`HEADLINES`].
    Headline,
    /// Every metric.
    All,
    /// Metrics matching any of the patterns.
    Globs(Vec<String>),
}

impl Select {
    /// From `--metric` patterns and `--all`: patterns win, then `--all`, else the headlines.
    pub fn from_args(metrics: &[String], all: bool) -> Self {
        if !metrics.is_empty() {
            Self::Globs(metrics.to_vec())
        } else if all {
            Self::All
        } else {
            Self::Headline
        }
    }

    /// Whether metric `key` of `scenario` is shown.
    pub fn keeps(&self, scenario: &str, key: &str) -> bool {
        let full = format!("{scenario}.{key}");
        match self {
            Self::All => true,
            Self::Headline => HEADLINES.iter().any(|p| glob(p, &full)),
            Self::Globs(ps) => ps.iter().any(|p| glob(p, &full)),
        }
    }
}

/// Shell-style wildcard match: `*` matches any run of characters, dots included
/// (`netperf.*` is every netperf metric, `*.p99` every p99), `?` one character. Written
/// here: ten lines against a dependency for the same.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // Classic two-pointer match with backtracking to the last `*`.
    let (mut i, mut j, mut star, mut mark) = (0, 0, None, 0);
    while j < t.len() {
        if i < p.len() && (p[i] == '?' || p[i] == t[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some(i);
            mark = j;
            i += 1;
        } else if let Some(s) = star {
            i = s + 1;
            mark += 1;
            j = mark;
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_cross_dots() {
        assert!(glob("netperf.*", "netperf.tests.TCP_RR.throughput"));
        assert!(glob("*.p99", "cyclictest.threads.cpu0.p99"));
        assert!(glob(
            "cyclictest.threads.*.p99",
            "cyclictest.threads.cpu1.p99"
        ));
        assert!(!glob(
            "cyclictest.threads.*.p99",
            "cyclictest.threads.cpu1.p999"
        ));
        assert!(glob("ping.rtt_?vg_ms", "ping.rtt_avg_ms"));
        assert!(!glob("ping", "ping.loss_pct"));
        assert!(glob("*", ""));
    }

    #[test]
    fn headlines_by_default_patterns_when_given() {
        let h = Select::from_args(&[], false);
        assert!(h.keeps("netperf", "tests.TCP_STREAM.throughput"));
        assert!(!h.keeps("netperf", "tests.TCP_RR.nicemu_latency.DUT.irq_write.p99"));
        assert!(Select::from_args(&[], true)
            .keeps("netperf", "tests.TCP_RR.nicemu_latency.DUT.irq_write.p99"));
        let g = Select::from_args(&["ping.*".into()], true);
        assert!(g.keeps("ping", "rtt_max_ms"));
        assert!(!g.keeps("netperf", "tests.TCP_STREAM.throughput"));
    }
}
