// SPDX-License-Identifier: Apache-2.0
//! `channels`: `ethtool -L IFACE combined N` for every N up to the pre-set maximum; after
//! each, traffic to the peer still flows and every tx queue's XPS map is reported (and
//! required non-empty with `channels.require_xps=1`). Drivers without `-L` are skipped.

use serde_json::json;

use super::{ping, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// Channel count scenario.
#[derive(Debug)]
pub struct Channels;

/// Parses `ethtool -l` into (pre-set maximum, current) combined counts.
pub fn parse_ethtool_l(lines: &[&str]) -> (Option<u32>, Option<u32>) {
    let mut section = 0;
    let (mut max, mut cur) = (None, None);
    for l in lines {
        let l = l.trim();
        if l.starts_with("Pre-set maximums") {
            section = 1;
        } else if l.starts_with("Current hardware settings") {
            section = 2;
        } else if let Some(v) = l.strip_prefix("Combined:") {
            let v = v.trim().parse().ok();
            match section {
                1 => max = v,
                2 => cur = v,
                _ => {}
            }
        }
    }
    (max, cur)
}

const SCRIPT: &str = r#"nicemu_out l /usr/sbin/ethtool -l "$IFACE"
max=$(/usr/sbin/ethtool -l "$IFACE" 2>/dev/null | awk '/^Pre-set/ {p=1} /^Current/ {p=0} p && /^Combined:/ {print $2}')
cur=$(/usr/sbin/ethtool -l "$IFACE" 2>/dev/null | awk '/^Current/ {p=1} p && /^Combined:/ {print $2}')
if [ -z "$max" ] || [ "$max" = 0 ] || [ "$max" = n/a ]; then nicemu_kv supported 0; exit 0; fi
nicemu_kv supported 1
for c in $(seq 1 $max); do
    nicemu_kv count$c tried
    nicemu_out set$c /usr/sbin/ethtool -L "$IFACE" combined $c
    nicemu_carrier "$IFACE" 100
    nicemu_out ping$c /usr/bin/ping -q -c $NPINGS -i 0.05 -W 2 $PEER_IP
    nicemu_out txq$c sh -c "for f in /sys/class/net/$IFACE/queues/tx-*/xps_cpus; do q=\${f%/xps_cpus}; echo \${q##*/} \$(cat \$f); done"
done
[ -n "$cur" ] && /usr/sbin/ethtool -L "$IFACE" combined $cur
nicemu_carrier "$IFACE" 100
true"#;

impl Scenario for Channels {
    fn name(&self) -> &'static str {
        "channels"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn script(&self, p: &Params) -> String {
        format!(
            "{NEED_IFACE}{NEED_PEER}NPINGS={}\nnicemu_kv require_xps {}\n{SCRIPT}",
            p.num("channels.pings") as u64,
            p.get("channels.require_xps")
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let l: Vec<&str> = s.lines("l").collect();
        let (max, cur) = parse_ethtool_l(&l);
        if s.get("supported") != Some("1") {
            r.set_skip(format!(
                "driver has no combined channels (ethtool -l: {})",
                l.last().copied().unwrap_or("no output")
            ));
            return r;
        }
        r.metric("max_combined", json!(max));
        r.metric("initial_combined", json!(cur));
        let require_xps = s.get("require_xps") == Some("1");
        let mut counts = serde_json::Map::new();
        let mut empty_xps_total = 0;
        for n in 1..=max.unwrap_or(0) {
            if !r.check(
                &format!("combined {n} tried"),
                s.get(&format!("count{n}")).is_some(),
                || format!("combined {n} was not tried"),
            ) {
                continue;
            }
            let mut c = serde_json::Map::new();
            r.check(
                &format!("ethtool -L combined {n}"),
                s.get(&format!("set{n}_rc")) == Some("0"),
                || {
                    let out: Vec<&str> = s.lines(&format!("set{n}")).collect();
                    format!("ethtool -L combined {n} failed: {}", out.join(" "))
                },
            );
            check_pings(s, n, &mut r, &mut c);
            let txq: Vec<(String, String)> = s
                .lines(&format!("txq{n}"))
                .map(|l| {
                    let (q, m) = l.split_once(' ').unwrap_or((l, ""));
                    (q.to_owned(), m.trim().to_owned())
                })
                .collect();
            let empty: Vec<&str> = txq
                .iter()
                .filter(|(_, m)| m.chars().all(|ch| ch == '0' || ch == ','))
                .map(|(q, _)| q.as_str())
                .collect();
            empty_xps_total += empty.len();
            c.insert("tx_queues".into(), json!(txq.len()));
            c.insert(
                "xps".into(),
                json!(txq
                    .iter()
                    .cloned()
                    .collect::<std::collections::BTreeMap<_, _>>()),
            );
            if require_xps {
                r.check(
                    &format!("combined {n}: XPS map on every queue"),
                    empty.is_empty(),
                    || format!("combined {n}: empty XPS map on {}", empty.join(" ")),
                );
            }
            counts.insert(n.to_string(), serde_json::Value::Object(c));
        }
        r.metric("counts", serde_json::Value::Object(counts));
        r.metric("empty_xps_maps", json!(empty_xps_total));
        r.summary = Some(format!(
            "1..{} ok{}",
            max.unwrap_or(0),
            if empty_xps_total > 0 {
                ", XPS unset"
            } else {
                ", XPS set"
            }
        ));
        r
    }
}

/// With `n` combined channels every ping must be answered (its count in `c`).
fn check_pings(
    s: &Section,
    n: u32,
    r: &mut ScenarioResult,
    c: &mut serde_json::Map<String, serde_json::Value>,
) {
    let pl: Vec<&str> = s.lines(&format!("ping{n}")).collect();
    let every_ping = format!("combined {n}: every ping answered");
    match ping::parse_summary(&pl) {
        Some(p) if p.received == p.transmitted && p.transmitted > 0 => {
            r.check_passed(&every_ping);
            c.insert("ping_received".into(), json!(p.received));
        }
        Some(p) => r.check_failed(
            &every_ping,
            format!(
                "combined {n}: {} of {} pings answered",
                p.received, p.transmitted
            ),
        ),
        None => r.check_failed(
            &every_ping,
            format!("combined {n}: ping printed no summary"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ethtool_l_max_and_current() {
        let out = [
            "Channel parameters for eth0:",
            "Pre-set maximums:",
            "RX:\t\tn/a",
            "TX:\t\tn/a",
            "Other:\t\t1",
            "Combined:\t2",
            "Current hardware settings:",
            "RX:\t\tn/a",
            "TX:\t\tn/a",
            "Other:\t\t1",
            "Combined:\t1",
        ];
        assert_eq!(parse_ethtool_l(&out), (Some(2), Some(1)));
    }
}
