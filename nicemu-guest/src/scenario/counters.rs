// SPDX-License-Identifier: Apache-2.0
//! `stats`: send known traffic and check the counters. Two readings without traffic must be
//! equal (no double counting of clear-on-read registers); then N pings of S bytes payload and
//! N broadcast pings (the peer ignores broadcast echo, so they get no reply) must move
//! `ip -s link` and `ethtool -S` by exactly the expected amounts on both ends.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// Counter exactness scenario.
#[derive(Debug)]
pub struct Stats;

/// Parses `ethtool -S` output ("     name: value").
pub fn parse_ethtool_s(lines: &[&str]) -> BTreeMap<String, u64> {
    lines
        .iter()
        .filter_map(|l| l.trim().split_once(": "))
        .filter_map(|(k, v)| Some((k.trim().to_owned(), v.trim().parse().ok()?)))
        .collect()
}

/// Parses `ip -s link show` output into `rx_bytes`, `rx_packets`, `tx_…` etc.
pub fn parse_ip_s_link(lines: &[&str]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut it = lines.iter().map(|l| l.trim());
    while let Some(l) = it.next() {
        let dir = if l.starts_with("RX:") {
            "rx"
        } else if l.starts_with("TX:") {
            "tx"
        } else {
            continue;
        };
        let names: Vec<&str> = l[3..].split_whitespace().collect();
        let Some(values) = it.next() else { break };
        for (n, v) in names.iter().zip(values.split_whitespace()) {
            if let Ok(v) = v.parse::<u64>() {
                out.insert(format!("{dir}_{n}"), v);
            }
        }
    }
    out
}

/// Counters that moved between two readings: name → (before, after).
pub fn changed(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> Vec<(String, u64, u64)> {
    a.iter()
        .filter_map(|(k, va)| {
            let vb = *b.get(k)?;
            (vb != *va).then(|| (k.clone(), *va, vb))
        })
        .collect()
}

/// The counters [`changed`] found, as "name before→after" joined by commas (empty when none).
pub fn describe_changed(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>) -> String {
    changed(a, b)
        .iter()
        .map(|(k, x, y)| format!("{k} {x}→{y}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn delta(a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>, k: &str) -> Option<i128> {
    Some(i128::from(*b.get(k)?) - i128::from(*a.get(k)?))
}

const SNAPSHOT: &str = r#"nicemu_snap() {
    nicemu_out ${1}_dut_ethtool /usr/sbin/ethtool -S "$IFACE"
    nicemu_out ${1}_dut_ip /usr/bin/ip -s link show "$IFACE"
    nicemu_out ${1}_peer_ethtool nicemu_peer /usr/sbin/ethtool -S "$PEER_IFACE"
    nicemu_out ${1}_peer_ip nicemu_peer /usr/bin/ip -s link show "$PEER_IFACE"
}
"#;

impl Scenario for Stats {
    fn name(&self) -> &'static str {
        "stats"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        (p.num("stats.count") * 0.05) as u64 + 20
    }

    fn script(&self, p: &Params) -> String {
        let n = p.num("stats.count") as u64;
        let size = p.num("stats.size") as u64;
        let bound = n / 10 + 30;
        format!(
            "{NEED_IFACE}{NEED_PEER}{SNAPSHOT}nicemu_kv count {n}\nnicemu_kv size {size}\n\
             nicemu_peer sh -c 'echo 1 > /proc/sys/net/ipv4/icmp_echo_ignore_broadcasts'\n\
             sleep 1\nnicemu_snap a\nnicemu_snap b\n\
             nicemu_out ping timeout {bound} /usr/bin/ping -q -c {n} -i 0.01 -s {size} -W 2 $PEER_IP\n\
             nicemu_out bcast timeout {bound} /usr/bin/ping -q -b -c {n} -i 0.01 -s {size} -W 1 192.168.100.255\n\
             sleep 1\nnicemu_snap c\ntrue"
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let n = i128::from(
            s.get("count")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0),
        );
        let size = i128::from(
            s.get("size")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0),
        );
        let read = |snap: &str, side: &str, kind: &str| {
            let lines: Vec<&str> = s.lines(&format!("{snap}_{side}_{kind}")).collect();
            if kind == "ethtool" {
                parse_ethtool_s(&lines)
            } else {
                parse_ip_s_link(&lines)
            }
        };
        let mut checked = 0;
        let mut mismatches = Vec::new();
        let mut deltas = serde_json::Map::new();
        for side in ["dut", "peer"] {
            for kind in ["ip", "ethtool"] {
                let (a, b, c) = (
                    read("a", side, kind),
                    read("b", side, kind),
                    read("c", side, kind),
                );
                if !r.check(
                    &format!("{side} {kind} counters read"),
                    !(a.is_empty() || c.is_empty()),
                    || format!("{side}: no `{kind}` counters read"),
                ) {
                    continue;
                }
                check_quiet(side, kind, &a, &b, &mut r);
                let off = mismatches.len();
                let want = expected(side, kind, n, size, &b);
                let mut d = serde_json::Map::new();
                for (k, expect) in want {
                    let Some(got) = delta(&b, &c, k) else {
                        continue;
                    };
                    checked += 1;
                    d.insert(
                        k.to_owned(),
                        json!({"delta": got as i64, "expected": expect as i64}),
                    );
                    if got != expect {
                        mismatches.push(format!("{side} {kind} {k} +{got} (expected +{expect})"));
                    }
                }
                r.check(
                    &format!("{side} {kind} deltas exact"),
                    mismatches.len() == off,
                    || format!("counter deltas not exact: {}", mismatches[off..].join(", ")),
                );
                deltas.insert(format!("{side}_{kind}"), serde_json::Value::Object(d));
            }
        }
        r.metric("deltas", serde_json::Value::Object(deltas));
        r.metric("checked", json!(checked));
        r.summary = Some(format!("{checked} counters, {} off", mismatches.len()));
        r
    }
}

/// Two readings with no traffic between them must agree: a counter that
/// moved is a failure in `r`.
fn check_quiet(
    side: &str,
    kind: &str,
    a: &BTreeMap<String, u64>,
    b: &BTreeMap<String, u64>,
    r: &mut ScenarioResult,
) {
    let moved = describe_changed(a, b);
    r.check(
        &format!("{side} {kind} quiet without traffic"),
        moved.is_empty(),
        || format!("{side} {kind}: counters changed between two readings without traffic: {moved}"),
    );
}

/// The counters `n` pings and `n` broadcast pings of `size` bytes must move
/// on `side` (`dut` sends both, the peer answers the unicast ones), by how
/// much: packets and bytes in `ip -s link`, packets and the broadcast
/// counter (where the driver has one, as in reading `b`) in `ethtool -S`.
fn expected(
    side: &str,
    kind: &str,
    n: i128,
    size: i128,
    b: &BTreeMap<String, u64>,
) -> Vec<(&'static str, i128)> {
    // Frame length without FCS: Ethernet 14 + IPv4 20 + ICMP 8 + payload.
    let frame = 42 + size;
    let (tx_pk, rx_pk) = if side == "dut" {
        (2 * n, n)
    } else {
        (n, 2 * n)
    };
    let mut want: Vec<(&str, i128)> = vec![("tx_packets", tx_pk), ("rx_packets", rx_pk)];
    if kind == "ip" {
        want.push(("tx_bytes", tx_pk * frame));
        want.push(("rx_bytes", rx_pk * frame));
        return want;
    }
    let bcast = if side == "dut" {
        "tx_broadcast"
    } else {
        "rx_broadcast"
    };
    if b.contains_key(bcast) {
        want.push((bcast, n));
    }
    want
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_s_link_both_header_styles() {
        let new = [
            "2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc mq state UP mode DEFAULT group default qlen 1000",
            "    link/ether 52:54:00:12:34:56 brd ff:ff:ff:ff:ff:ff",
            "    RX:  bytes packets errors dropped  missed   mcast           ",
            "         1420      10      0       0       0       0 ",
            "    TX:  bytes packets errors dropped carrier collsns           ",
            "         2840      20      0       0       0       0 ",
        ];
        let m = parse_ip_s_link(&new);
        assert_eq!(m["rx_bytes"], 1420);
        assert_eq!(m["tx_packets"], 20);
        assert_eq!(m["tx_collsns"], 0);
        let e = parse_ethtool_s(&[
            "NIC statistics:",
            "     rx_packets: 12",
            "     tx_queue_0_bytes: 7",
        ]);
        assert_eq!(e["rx_packets"], 12);
        assert_eq!(e["tx_queue_0_bytes"], 7);
    }
}
