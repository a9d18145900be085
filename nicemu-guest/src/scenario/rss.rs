// SPDX-License-Identifier: Apache-2.0
//! `rss`: receive-side scaling as the guest driver sees it (issues 4 and 5). For every
//! `ethtool -L IFACE combined N` (N = 1 … the driver's maximum, or `rss.max_combined`):
//! netperf TCP_CRR to the peer, to three data ports (a new connection, so a new TCP 4-tuple,
//! per transaction: many flows) must put received packets on every active RX queue (`rx_queue_Q_packets`
//! in `ethtool -S`) and none on inactive ones; then one TCP_RR connection (one flow) must
//! land on one queue (the netperf control connection may add a handful elsewhere). Drivers
//! without `ethtool -L` (one queue) are skipped.
//!
//! On ixgbe the scenario first turns `ntuple` on: by default the driver runs the 82599's Flow
//! Director in ATR mode (ixgbe_atr samples transmitted TCP segments and adds a signature
//! filter steering the flow's receive side to the sending CPU's queue, before RSS — datasheet
//! §7.1.2.7), so one flow follows netperf from CPU to CPU. Perfect-filter mode
//! (ixgbe_set_features: NETIF_F_NTUPLE clears IXGBE_FLAG_FDIR_HASH_CAPABLE) leaves RSS alone.

use std::collections::BTreeMap;

use serde_json::json;

use super::netperf::parse_keyval;
use super::{Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// RSS spreading scenario.
#[derive(Debug)]
pub struct Rss;

/// Share of a single flow's received packets that must land on its one queue.
pub const ONE_FLOW_SHARE: f64 = 0.9;

/// Packets the netperf control connection (a flow of its own, port 12865: SYN-ACK, ACKs,
/// the test request's answer, the results, FIN) may put on other queues during the one-flow
/// test. In a slow (TCG, loaded host) guest the data flow makes few transactions, and these
/// few packets alone would take the other queues past 10 % (seen: 43 on the flow's queue, 5
/// on another).
pub const CONTROL_CONNECTION_PACKETS: u64 = 10;

/// Parses `rx_queue_Q_packets: V` lines into queue → packets.
pub fn parse_rx_queues(lines: &[&str]) -> BTreeMap<u32, u64> {
    lines
        .iter()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            let q = k.strip_prefix("rx_queue_")?.strip_suffix("_packets")?;
            Some((q.parse().ok()?, v.trim().parse().ok()?))
        })
        .collect()
}

/// Per-queue increase from `a` to `b` (queues missing in `a` count from 0).
pub fn queue_deltas(a: &BTreeMap<u32, u64>, b: &BTreeMap<u32, u64>) -> BTreeMap<u32, u64> {
    b.iter()
        .map(|(q, v)| (*q, v.saturating_sub(*a.get(q).unwrap_or(&0))))
        .collect()
}

const SCRIPT: &str = r#"nicemu_out l /usr/sbin/ethtool -l "$IFACE"
max=$(/usr/sbin/ethtool -l "$IFACE" 2>/dev/null | awk '/^Pre-set/ {p=1} /^Current/ {p=0} p && /^Combined:/ {print $2}')
cur=$(/usr/sbin/ethtool -l "$IFACE" 2>/dev/null | awk '/^Current/ {p=1} p && /^Combined:/ {print $2}')
if [ -z "$max" ] || [ "$max" = 0 ] || [ "$max" = n/a ]; then nicemu_kv supported 0; exit 0; fi
nicemu_kv supported 1
nicemu_kv max_combined $max
nicemu_kv initial_combined $cur
[ "$LIMIT" -gt 0 ] && [ "$max" -gt "$LIMIT" ] && max=$LIMIT
# Queues that received nothing are left out (ixgbe lists all 64).
# ixgbe: Flow Director's ATR would steer flows to the sending CPU's queue; perfect-filter mode
# (no filters) leaves receive queues to RSS. Put back at the end.
ntuple=$(/usr/sbin/ethtool -k "$IFACE" 2>/dev/null | awk '/^ntuple-filters:/ {print $2}')
[ "$DRIVER" = ixgbe ] && [ "$ntuple" = off ] && nicemu_out ntuple /usr/sbin/ethtool -K "$IFACE" ntuple on
nicemu_rxq() { /usr/sbin/ethtool -S "$IFACE" | grep -E 'rx_queue_[0-9]+_packets' | grep -v ': 0$'; true; }
for c in $(seq 1 $max); do
    nicemu_kv count$c tried
    nicemu_out set$c /usr/sbin/ethtool -L "$IFACE" combined $c
    nicemu_carrier "$IFACE" 150
    n=0
    while [ $n -lt 30 ]; do /usr/bin/ping -c 1 -W 1 $PEER_IP >/dev/null 2>&1 && break; n=$((n+1)); done
    nicemu_kv reach$c $n
    nicemu_out a$c nicemu_rxq
    # Toeplitz is linear in the input bits: consecutive ephemeral ports alone vary only a few
    # of them, and with some (random) keys their hashes reach only a coset of the queues.
    # Three data ports that differ in many bits give the flows the entropy of real traffic.
    for dport in 20011 38446 53709; do
        nicemu_out many$c timeout $((D * 3 + 20)) /usr/bin/netperf -H $PEER_IP -t TCP_CRR -l $D -- -P ,$dport -k THROUGHPUT,THROUGHPUT_UNITS
    done
    nicemu_out b$c nicemu_rxq
    nicemu_out one$c timeout $((D * 3 + 20)) /usr/bin/netperf -H $PEER_IP -t TCP_RR -l $D -- -k THROUGHPUT,THROUGHPUT_UNITS
    nicemu_out c$c nicemu_rxq
done
[ -n "$cur" ] && /usr/sbin/ethtool -L "$IFACE" combined $cur
[ "$DRIVER" = ixgbe ] && [ "$ntuple" = off ] && /usr/sbin/ethtool -K "$IFACE" ntuple off
nicemu_carrier "$IFACE" 150
true"#;

impl Scenario for Rss {
    fn name(&self) -> &'static str {
        "rss"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        let d = p.num("rss.duration").max(1.0) as u64;
        let limit = p.num("rss.max_combined") as u64;
        let counts = if limit == 0 { 8 } else { limit.min(8) };
        counts * (4 * d + 10) + 10
    }

    fn script(&self, p: &Params) -> String {
        format!(
            "{NEED_IFACE}{NEED_PEER}D={}\nLIMIT={}\n{SCRIPT}",
            p.num("rss.duration").max(1.0) as u64,
            p.num("rss.max_combined") as u64
        )
    }

    fn parse(&self, s: &Section, t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("supported") != Some("1") {
            let l: Vec<&str> = s.lines("l").collect();
            r.set_skip(format!(
                "driver has no combined channels, one queue (ethtool -l: {})",
                l.last().copied().unwrap_or("no output")
            ));
            return r;
        }
        let max: u32 = s
            .get("max_combined")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        r.metric("max_combined", json!(max));
        let mut counts = serde_json::Map::new();
        let mut tried = 0;
        // Idle queues under many flows on QEMU's own devices: their RSS is
        // QEMU's, reported as information (nicemu's devices must spread).
        let mut qemu_idle = Vec::new();
        for n in 1..=max {
            if s.get(&format!("count{n}")).is_none() {
                continue;
            }
            tried = n;
            if let Some(c) = parse_combined(s, t, n, &mut r, &mut qemu_idle) {
                counts.insert(n.to_string(), serde_json::Value::Object(c));
            }
        }
        r.check("a channel count tried", tried > 0, || {
            "no channel count was tried".into()
        });
        r.metric("counts", serde_json::Value::Object(counts));
        let mut summary = format!("combined 1..{tried}: spread and single-flow checked");
        if !qemu_idle.is_empty() {
            let note = format!("informational on QEMU's device: {}", qemu_idle.join("; "));
            summary.push_str(&format!("; spread {note}"));
            r.metric("spread_informational", json!(note));
        }
        r.summary = Some(summary);
        r
    }
}

/// The runs with `n` combined channels: the channel count set, then
/// netperf's rates and the queues' packet counts under many flows (`a`→`b`)
/// and one flow (`b`→`c`). `None` when they cannot be read (a failure
/// recorded in `r`).
fn parse_combined(
    s: &Section,
    t: &Target,
    n: u32,
    r: &mut ScenarioResult,
    qemu_idle: &mut Vec<String>,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    if s.get(&format!("set{n}_rc")) != Some("0") {
        let out: Vec<&str> = s.lines(&format!("set{n}")).collect();
        r.check_failed(
            &format!("combined {n}: ethtool -L"),
            format!("ethtool -L combined {n} failed: {}", out.join(" ")),
        );
        return None;
    }
    r.check_passed(&format!("combined {n}: ethtool -L"));
    let read = |tag: String| parse_rx_queues(&s.lines(&tag).collect::<Vec<_>>());
    let (a, b, cc) = (
        read(format!("a{n}")),
        read(format!("b{n}")),
        read(format!("c{n}")),
    );
    if !r.check(
        &format!("combined {n}: rx_queue_N_packets read"),
        !(b.is_empty() || cc.is_empty()),
        || format!("combined {n}: ethtool -S has no rx_queue_N_packets"),
    ) {
        return None;
    }
    let mut c = serde_json::Map::new();
    for (tag, label) in [("many", "TCP_CRR"), ("one", "TCP_RR")] {
        let rc = s.get(&format!("{tag}{n}_rc"));
        let out: Vec<&str> = s.lines(&format!("{tag}{n}")).collect();
        let kv = parse_keyval(&out);
        let check = format!("combined {n}: netperf {label} result");
        match kv.get("THROUGHPUT").and_then(|v| super::num(v)) {
            Some(t) if rc == Some("0") => {
                r.check_passed(&check);
                c.insert(format!("{tag}_trans_per_s"), json!(super::round(t, 1)));
            }
            _ => r.check_failed(
                &check,
                format!(
                    "combined {n}: netperf {label} gave no result ({})",
                    super::describe_rc(rc)
                ),
            ),
        }
    }
    let many = queue_deltas(&a, &b);
    let one = queue_deltas(&b, &cc);
    check_spread(n, &many, &one, t, r, qemu_idle);
    let (top_q, share) = check_one_flow(n, &one, r);
    let per_queue = |d: &BTreeMap<u32, u64>| -> Vec<u64> {
        (0..n).map(|q| d.get(&q).copied().unwrap_or(0)).collect()
    };
    c.insert("many_per_queue".into(), json!(per_queue(&many)));
    c.insert("one_per_queue".into(), json!(per_queue(&one)));
    c.insert("one_flow_queue".into(), json!(top_q));
    c.insert("one_flow_share".into(), json!(super::round(share, 3)));
    Some(c)
}

/// Many flows must reach every active queue (on QEMU's own devices an idle
/// queue is information, in `qemu_idle`), and no packet may land on a queue
/// beyond the `n` in use.
fn check_spread(
    n: u32,
    many: &BTreeMap<u32, u64>,
    one: &BTreeMap<u32, u64>,
    t: &Target,
    r: &mut ScenarioResult,
    qemu_idle: &mut Vec<String>,
) {
    let idle: Vec<u32> = (0..n)
        .filter(|q| many.get(q).copied().unwrap_or(0) == 0)
        .collect();
    if !idle.is_empty() {
        let what = format!(
            "combined {n}: many flows left active queue(s) {idle:?} without packets ({many:?})"
        );
        if t.host_actions {
            r.check_failed(&format!("combined {n}: many flows on every queue"), what);
        } else {
            qemu_idle.push(what);
        }
    } else if t.host_actions {
        r.check_passed(&format!("combined {n}: many flows on every queue"));
    }
    let stray: Vec<u32> = many
        .iter()
        .chain(one.iter())
        .filter(|(q, v)| **q >= n && **v > 0)
        .map(|(q, _)| *q)
        .collect();
    r.check(
        &format!("combined {n}: no packets on inactive queues"),
        stray.is_empty(),
        || format!("combined {n}: packets on inactive queue(s) {stray:?}"),
    );
}

/// One flow stays on one queue: the busiest queue's share of its packets
/// must reach [`ONE_FLOW_SHARE`], unless what the other queues got is no more than the
/// control connection's [`CONTROL_CONNECTION_PACKETS`]. Returns that queue and its share.
fn check_one_flow(n: u32, one: &BTreeMap<u32, u64>, r: &mut ScenarioResult) -> (u32, f64) {
    let total: u64 = one.values().sum();
    let (top_q, top) = one
        .iter()
        .max_by_key(|(_, v)| **v)
        .map(|(q, v)| (*q, *v))
        .unwrap_or((0, 0));
    let share = if total > 0 {
        top as f64 / total as f64
    } else {
        0.0
    };
    let elsewhere = total - top;
    r.check(
        &format!("combined {n}: one flow on one queue"),
        !(total == 0 || (share < ONE_FLOW_SHARE && elsewhere > CONTROL_CONNECTION_PACKETS)),
        || {
            format!(
                "combined {n}: one flow spread over queues ({one:?}; top queue {top_q} has {:.0}%)",
                share * 100.0
            )
        },
    );
    (top_q, share)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Status;

    #[test]
    fn queue_counters_and_deltas() {
        let a = parse_rx_queues(&[
            "     rx_queue_0_packets: 10",
            "     rx_queue_1_packets: 5",
            "     rx_queue_10_packets: 0",
        ]);
        assert_eq!(a[&0], 10);
        assert_eq!(a[&10], 0);
        let b = parse_rx_queues(&["rx_queue_0_packets: 12", "rx_queue_1_packets: 5"]);
        let d = queue_deltas(&a, &b);
        assert_eq!(d[&0], 2);
        assert_eq!(d[&1], 0);
    }

    fn one_flow(counts: &[(u32, u64)]) -> ScenarioResult {
        let mut r = ScenarioResult::pass("rss");
        check_one_flow(4, &counts.iter().copied().collect(), &mut r);
        r
    }

    #[test]
    fn one_flow_may_share_with_the_control_connection_but_not_split() {
        // A slow guest's short TCP_RR: 43 packets of the flow, 5 of netperf's control connection.
        assert_eq!(
            one_flow(&[(0, 0), (1, 5), (2, 0), (3, 43)]).status,
            Status::Pass
        );
        // A long run where the control connection's share is small.
        assert_eq!(one_flow(&[(1, 6), (3, 4000)]).status, Status::Pass);
        // The flow itself over two queues, whatever the length.
        let r = one_flow(&[(1, 400), (3, 528)]);
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("one flow spread"));
        assert_eq!(one_flow(&[(1, 11), (3, 40)]).status, Status::Fail);
        assert_eq!(one_flow(&[]).status, Status::Fail);
    }
}
