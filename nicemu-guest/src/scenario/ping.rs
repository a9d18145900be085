// SPDX-License-Identifier: Apache-2.0
//! `ping`: N echo requests from the device under test to the peer at a short interval;
//! loss and round-trip times (iputils or busybox summary lines).

use serde_json::json;

use super::{num, round, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::cost::metrics::CostUnit;
use crate::params::Params;

/// Ping loss/RTT scenario.
#[derive(Debug)]
pub struct Ping;

/// A ping summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Requests sent.
    pub transmitted: u64,
    /// Replies received.
    pub received: u64,
    /// Loss in percent as printed.
    pub loss_pct: f64,
    /// Round-trip min/avg/max in ms, when any reply came.
    pub rtt_ms: Option<(f64, f64, f64)>,
}

/// Parses the statistics lines of iputils or busybox `ping`.
pub fn parse_summary(lines: &[&str]) -> Option<Summary> {
    let stats = lines.iter().find(|l| l.contains("packets transmitted"))?;
    let mut sum = Summary {
        transmitted: 0,
        received: 0,
        loss_pct: 100.0,
        rtt_ms: None,
    };
    for part in stats.split(',') {
        let part = part.trim();
        if part.ends_with("packets transmitted") {
            sum.transmitted = num(part)? as u64;
        } else if part.ends_with("received") {
            sum.received = num(part)? as u64;
        } else if part.ends_with("packet loss") {
            sum.loss_pct = num(part)?;
        }
    }
    sum.rtt_ms = lines
        .iter()
        .find(|l| l.starts_with("rtt ") || l.starts_with("round-trip "))
        .and_then(|l| l.split_once('='))
        .and_then(|(_, v)| {
            let v: Vec<f64> = v
                .trim()
                .trim_end_matches("ms")
                .split('/')
                .filter_map(num)
                .collect();
            (v.len() >= 3).then(|| (v[0], v[1], v[2]))
        });
    Some(sum)
}

impl Scenario for Ping {
    fn name(&self) -> &'static str {
        "ping"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        (p.num("ping.count") * p.num("ping.interval") * 3.0) as u64 + 10
    }

    fn script(&self, p: &Params) -> String {
        let bound = (p.num("ping.count") * p.num("ping.interval") * 5.0) as u64 + 30;
        format!(
            "{NEED_IFACE}{NEED_PEER}nicemu_kv max_loss {}\nnicemu_window_begin echo\nnicemu_out ping timeout {bound} /usr/bin/ping -q -c {} -i {} -s {} -W 2 $PEER_IP\nnicemu_window_end\ntrue",
            p.get("ping.max_loss"),
            p.get("ping.count"),
            p.get("ping.interval"),
            p.get("ping.size")
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let lines: Vec<&str> = s.lines("ping").collect();
        let Some(sum) = parse_summary(&lines) else {
            r.check_failed(
                "summary printed",
                format!(
                    "ping printed no summary (rc {}): {}",
                    s.get("ping_rc").unwrap_or("?"),
                    lines.join(" | ")
                ),
            );
            return r;
        };
        r.metric("transmitted", json!(sum.transmitted));
        r.metric("received", json!(sum.received));
        r.metric("loss_pct", json!(sum.loss_pct));
        if let Some((min, avg, max)) = sum.rtt_ms {
            r.metric("rtt_min_ms", json!(min));
            r.metric("rtt_avg_ms", json!(avg));
            r.metric("rtt_max_ms", json!(max));
        }
        r.summary = Some(match sum.rtt_ms {
            Some((_, avg, _)) => format!("{}% loss, {} ms", sum.loss_pct, round(avg, 3)),
            None => format!("{}% loss", sum.loss_pct),
        });
        r.check_passed("summary printed");
        if r.check("replies received", sum.received > 0, || {
            format!("no replies to {} requests", sum.transmitted)
        }) {
            let max = s.get("max_loss").and_then(num).unwrap_or(0.0);
            r.check("loss within ping.max_loss", sum.loss_pct <= max, || {
                format!(
                    "{}% loss ({} of {} replies)",
                    sum.loss_pct, sum.received, sum.transmitted
                )
            });
        }
        r
    }

    /// The ping run's window: per echo request sent (request, reply and both ends'
    /// kernels).
    fn cost_unit(&self, window: &str, r: &ScenarioResult) -> Option<CostUnit> {
        let sent = r.metrics.get("transmitted")?.as_f64()?;
        (window == "echo" && sent > 0.0).then(|| CostUnit {
            path: Vec::new(),
            units: sent,
            unit: "echo",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iputils_and_busybox_summaries() {
        let iputils = [
            "PING 192.168.100.2 (192.168.100.2) 56(84) bytes of data.",
            "",
            "--- 192.168.100.2 ping statistics ---",
            "1000 packets transmitted, 998 received, 0.2% packet loss, time 10331ms",
            "rtt min/avg/max/mdev = 0.201/0.532/4.876/0.310 ms",
        ];
        let s = parse_summary(&iputils).unwrap();
        assert_eq!((s.transmitted, s.received, s.loss_pct), (1000, 998, 0.2));
        assert_eq!(s.rtt_ms, Some((0.201, 0.532, 4.876)));
        let bb = ["3 packets transmitted, 0 packets received, 100% packet loss"];
        let s = parse_summary(&bb).unwrap();
        assert_eq!((s.received, s.loss_pct, s.rtt_ms), (0, 100.0, None));
        let errs = ["5 packets transmitted, 2 received, +3 errors, 60% packet loss, time 4ms"];
        assert_eq!(parse_summary(&errs).unwrap().loss_pct, 60.0);
    }
}
