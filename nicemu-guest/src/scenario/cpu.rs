// SPDX-License-Identifier: Apache-2.0
//! Guest CPU time and softirq counts around a measurement: `/proc/stat`'s aggregate `cpu`
//! line (busy = user + nice + system + irq + softirq + steal, in USER_HZ = 100 ticks) and
//! `/proc/softirqs` (per-CPU counts per softirq — what `mpstat -I SCPU 1` reads and divides
//! by the interval). Rates normalised by the guest CPU time they cost (messages per guest
//! CPU-second) vary less with host contention than raw rates: idle time the guest spends
//! waiting for a descheduled vCPU counts for neither.

use std::collections::BTreeMap;

use serde_json::json;

use super::{round, Section};

/// USER_HZ of the guest kernels (x86 Linux).
pub const USER_HZ: f64 = 100.0;

/// Shell lines taking a snapshot tagged `tag` (`TAG_stat`, `TAG_sirq`).
pub fn snapshot(tag: &str) -> String {
    format!("nicemu_out {tag}_stat head -1 /proc/stat\nnicemu_out {tag}_sirq cat /proc/softirqs\n")
}

/// (busy, total) ticks of a `cpu  user nice system idle iowait irq softirq steal …` line.
pub fn parse_stat(line: &str) -> Option<(u64, u64)> {
    let mut w = line.split_whitespace();
    if w.next()? != "cpu" {
        return None;
    }
    let v: Vec<u64> = w.take(8).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 8 {
        return None;
    }
    let busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    Some((busy, v.iter().sum()))
}

/// `/proc/softirqs`: softirq name → per-CPU counts.
pub fn parse_softirqs(lines: &[&str]) -> BTreeMap<String, Vec<u64>> {
    lines
        .iter()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(':')?;
            let v: Vec<u64> = rest
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (!v.is_empty()).then(|| (name.trim().to_owned(), v))
        })
        .collect()
}

/// Guest busy CPU-seconds and per-CPU NET_TX / NET_RX softirq rates between snapshots
/// `before` and `after` over `secs` seconds, as metrics: `busy_cpu_s`,
/// `softirq.NET_TX.cpu0_per_s`, …; `None` when a snapshot is missing.
pub fn deltas(
    s: &Section,
    before: &str,
    after: &str,
    secs: f64,
) -> Option<(f64, serde_json::Value)> {
    let stat = |t: &str| s.lines(&format!("{t}_stat")).find_map(parse_stat);
    let ((b0, _), (b1, _)) = (stat(before)?, stat(after)?);
    let busy = b1.saturating_sub(b0) as f64 / USER_HZ;
    let sirq = |t: &str| parse_softirqs(&s.lines(&format!("{t}_sirq")).collect::<Vec<_>>());
    let (s0, s1) = (sirq(before), sirq(after));
    let mut rates = serde_json::Map::new();
    for name in ["NET_TX", "NET_RX"] {
        let (Some(a), Some(b)) = (s0.get(name), s1.get(name)) else {
            continue;
        };
        let mut per = serde_json::Map::new();
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            if secs > 0.0 {
                per.insert(
                    format!("cpu{i}_per_s"),
                    json!(round(y.saturating_sub(*x) as f64 / secs, 1)),
                );
            }
        }
        rates.insert(name.into(), serde_json::Value::Object(per));
    }
    Some((round(busy, 2), serde_json::Value::Object(rates)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_line_busy_and_total() {
        let (busy, total) = parse_stat("cpu  100 5 50 1000 10 3 7 2 0 0").unwrap();
        assert_eq!(busy, 100 + 5 + 50 + 3 + 7 + 2);
        assert_eq!(total, 1177);
        assert_eq!(parse_stat("cpu0 1 2 3 4 5 6 7 8"), None);
    }

    #[test]
    fn softirqs_table() {
        let t = [
            "                    CPU0       CPU1",
            "          HI:          0          1",
            "      NET_TX:        120         30",
            "      NET_RX:       5000       4000",
        ];
        let m = parse_softirqs(&t);
        assert_eq!(m["NET_TX"], [120, 30]);
        assert_eq!(m["NET_RX"], [5000, 4000]);
        assert!(!m.contains_key("CPU0       CPU1"));
    }
}
