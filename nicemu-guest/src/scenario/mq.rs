// SPDX-License-Identifier: Apache-2.0
//! `mq`: multiqueue under load (issue 7). `ethtool -L IFACE combined N` on both ports
//! (`mq.combined`, 0 = the driver's maximum), then many flows (one netperf TCP_CRR run: a
//! new TCP 4-tuple per transaction) and `mq.streams` parallel netperf TCP_STREAM streams
//! of `mq.duration` seconds (`mq.direction=both`: every second one TCP_MAERTS, so both
//! ports send bulk at once). Checks:
//! - every stream ends in time with a throughput (a queue the device stops serving shows up
//!   as a stream that times out),
//! - the guest's per-queue counters grew on every active queue pair Q < N: `ethtool -S`
//!   `rx_queue_Q_packets` / `tx_queue_Q_packets` where the driver has them (igb, ixgbe,
//!   virtio_net before 6.10); virtio_net since 6.10 reports per-queue packets only through
//!   netlink queue stats, so there receive queue Q is judged by its interrupts
//!   (`/proc/interrupts` `virtioN-input.Q`) and transmit queue Q by `ethtool -S` `txQ_kicks`,
//! - nicemu's per-queue-pair counters (`nicemu ctl --json stats DUT`, virtio-net ports
//!   only: `queues[Q].rx_frames` / `tx_frames`) grew on every active pair and not on the
//!   others,
//! - the link still carries pings afterwards.

use std::collections::BTreeMap;

use serde_json::json;

use super::counters::parse_ethtool_s;
use super::netperf::parse_keyval;
use super::{num, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// Multiqueue load scenario.
#[derive(Debug)]
pub struct Mq;

/// Seconds of the many-flows TCP_CRR run.
const CRR_SECS: u64 = 3;

const SCRIPT: &str = r#"nicemu_out l /usr/sbin/ethtool -l "$IFACE"
max=$(/usr/sbin/ethtool -l "$IFACE" 2>/dev/null | awk '/^Pre-set/ {p=1} /^Current/ {p=0} p && /^Combined:/ {print $2}')
if [ -z "$max" ] || [ "$max" = 0 ] || [ "$max" = n/a ]; then nicemu_kv supported 0; exit 0; fi
nicemu_kv supported 1
nicemu_kv max_combined $max
N=$WANT
[ "$N" -gt 0 ] || N=$max
nicemu_kv combined $N
nicemu_out set /usr/sbin/ethtool -L "$IFACE" combined $N
nicemu_out pset nicemu_peer /usr/sbin/ethtool -L "$PEER_IFACE" combined $N
nicemu_carrier "$IFACE" 150
n=0
while [ $n -lt 30 ]; do /usr/bin/ping -c 1 -W 1 $PEER_IP >/dev/null 2>&1 && break; n=$((n+1)); done
nicemu_kv reach $n
vdev=$(basename "$(readlink /sys/class/net/$IFACE/device)")
nicemu_irqs() { grep -E " $vdev-(input|output)\.[0-9]+\$" /proc/interrupts; true; }
nicemu_out a /usr/sbin/ethtool -S "$IFACE"
nicemu_out ia nicemu_irqs
nicemu_host c0 ctl --json stats DUT
nicemu_host p0 ctl --json stats PEER
nicemu_out crr timeout $((CRR * 3 + 30)) /usr/bin/netperf -H $PEER_IP -t TCP_CRR -l $CRR -P 0 -- -k THROUGHPUT,THROUGHPUT_UNITS
t0=$(nicemu_uptime)
i=1
while [ $i -le $S ]; do
    t=TCP_STREAM
    [ "$BOTH" = 1 ] && [ $((i % 2)) = 0 ] && t=TCP_MAERTS
    ( timeout $((D * 3 + 40)) /usr/bin/netperf -H $PEER_IP -t $t -l $D -P 0 -- -k THROUGHPUT,THROUGHPUT_UNITS; echo "RC=$?" ) </dev/null >/tmp/mq$i 2>&1 &
    i=$((i + 1))
done
wait
nicemu_kv load_secs "$(awk -v a="$t0" -v b="$(nicemu_uptime)" 'BEGIN {printf "%.1f", b - a}')"
i=1
while [ $i -le $S ]; do nicemu_out s$i cat /tmp/mq$i; i=$((i + 1)); done
nicemu_out b /usr/sbin/ethtool -S "$IFACE"
nicemu_out ib nicemu_irqs
nicemu_host c1 ctl --json stats DUT
nicemu_host p1 ctl --json stats PEER
nicemu_out after timeout 30 /usr/bin/ping -q -c 5 -i 0.2 -W 2 $PEER_IP
true"#;

impl Scenario for Mq {
    fn name(&self) -> &'static str {
        "mq"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn needs_host(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        let d = duration(p);
        // Under TCG the streams share two vCPUs; allow them their timeout.
        30 + CRR_SECS * 2 + d * 3 + 40 + streams(p) * 2
    }

    fn script(&self, p: &Params) -> String {
        format!(
            "{NEED_IFACE}{NEED_PEER}WANT={}\nS={}\nD={}\nCRR={CRR_SECS}\nBOTH={}\n{SCRIPT}",
            p.num("mq.combined").max(0.0) as u64,
            streams(p),
            duration(p),
            u8::from(p.get("mq.direction") == "both"),
        )
    }

    fn parse(&self, s: &Section, t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("supported") != Some("1") {
            let l: Vec<&str> = s.lines("l").collect();
            r.set_skip(format!(
                "driver has no combined channels (ethtool -l: {})",
                l.last().copied().unwrap_or("no output")
            ));
            return r;
        }
        let n: u32 = s.get("combined").and_then(|v| v.parse().ok()).unwrap_or(0);
        r.metric("combined", json!(n));
        for tag in ["set", "pset"] {
            let who = if tag == "set" { "DUT" } else { "peer" };
            r.check(
                &format!("ethtool -L combined on the {who}"),
                s.get(&format!("{tag}_rc")) == Some("0"),
                || {
                    let out: Vec<&str> = s.lines(tag).collect();
                    format!(
                        "ethtool -L combined {n} on the {who} failed: {}",
                        out.join(" ")
                    )
                },
            );
        }
        let streams = check_streams(s, &mut r);
        let guest = check_guest_queues(s, n, &mut r);
        let ctl = check_ctl_queues(s, n, t.driver == "virtio_net", &mut r);
        record_waits(s, &mut r);
        if let Some(secs) = s.get("load_secs").and_then(num) {
            r.metric("load_secs", json!(secs));
        }
        const PINGS: &str = "pings answered after the load";
        match super::ping::parse_summary(&s.lines("after").collect::<Vec<_>>()) {
            Some(p) if p.transmitted > 0 && p.received == p.transmitted => r.check_passed(PINGS),
            Some(p) => r.check_failed(
                PINGS,
                format!(
                    "after the load {} of {} pings answered",
                    p.received, p.transmitted
                ),
            ),
            None => r.check_failed(PINGS, "the ping after the load printed no summary"),
        }
        r.summary = Some(format!(
            "{n} queue pairs; {streams}; guest queues {guest}; nicemu queues {ctl}"
        ));
        r
    }
}

fn streams(p: &Params) -> u64 {
    (p.num("mq.streams") as u64).clamp(1, 64)
}

fn duration(p: &Params) -> u64 {
    (p.num("mq.duration") as u64).clamp(1, 600)
}

/// Checks every TCP_STREAM ended in time with a throughput; returns a summary.
fn check_streams(s: &Section, r: &mut ScenarioResult) -> String {
    let mut total = 0.0;
    let mut per = Vec::new();
    for i in 1.. {
        let tag = format!("s{i}");
        if s.get(&format!("{tag}_rc")).is_none() {
            break;
        }
        let lines: Vec<&str> = s.lines(&tag).collect();
        let rc = lines
            .iter()
            .rev()
            .find_map(|l| l.trim().strip_prefix("RC="))
            .map(str::to_owned);
        let kv = parse_keyval(&lines);
        let tp = kv.get("THROUGHPUT").and_then(|v| num(v));
        let name = format!("stream {i}: ended with a throughput");
        match (rc.as_deref(), tp) {
            (Some("0"), Some(t)) if t > 0.0 => {
                r.check_passed(&name);
                total += t;
                per.push(t);
            }
            (rc, _) => {
                r.check_failed(
                    &name,
                    format!("stream {i}: {} without throughput", super::describe_rc(rc)),
                );
                per.push(0.0);
            }
        }
    }
    r.check("a stream reported", !per.is_empty(), || {
        "no TCP_STREAM stream reported".into()
    });
    r.metric("stream_mbps", json!(per));
    r.metric("total_mbps", json!(super::round(total, 1)));
    format!("{} streams {total:.0} Mbit/s", per.len())
}

/// `rx_queue_Q_packets` / `tx_queue_Q_packets` (dir "rx" / "tx") of an `ethtool -S` map.
pub fn queue_packets(stats: &BTreeMap<String, u64>, dir: &str) -> BTreeMap<u32, u64> {
    stats
        .iter()
        .filter_map(|(k, v)| {
            let q = k
                .strip_prefix(dir)?
                .strip_prefix("_queue_")?
                .strip_suffix("_packets")?;
            Some((q.parse().ok()?, *v))
        })
        .collect()
}

/// `txQ_kicks` (virtio_net's count of notifications on transmit queue Q) of an `ethtool -S`
/// map.
pub fn tx_kicks(stats: &BTreeMap<String, u64>) -> BTreeMap<u32, u64> {
    stats
        .iter()
        .filter_map(|(k, v)| {
            let q = k.strip_prefix("tx")?.strip_suffix("_kicks")?;
            Some((q.parse().ok()?, *v))
        })
        .collect()
}

/// Interrupts per virtio queue from `/proc/interrupts` lines ending in
/// `virtioN-input.Q` (kind "input") or `virtioN-output.Q`, summed over CPUs.
pub fn queue_irqs(lines: &[&str], kind: &str) -> BTreeMap<u32, u64> {
    lines
        .iter()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            words.next()?.strip_suffix(':')?;
            let name = l.split_whitespace().last()?;
            let (_, q) = name.rsplit_once(&format!("-{kind}."))?;
            let total = words.map_while(|w| w.parse::<u64>().ok()).sum();
            Some((q.parse().ok()?, total))
        })
        .collect()
}

/// Checks the guest's per-queue counters grew on every active queue; returns a summary.
fn check_guest_queues(s: &Section, n: u32, r: &mut ScenarioResult) -> String {
    let a = parse_ethtool_s(&s.lines("a").collect::<Vec<_>>());
    let b = parse_ethtool_s(&s.lines("b").collect::<Vec<_>>());
    let ia: Vec<&str> = s.lines("ia").collect();
    let ib: Vec<&str> = s.lines("ib").collect();
    let mut out = Vec::new();
    for dir in ["rx", "tx"] {
        let (mut qa, mut qb) = (queue_packets(&a, dir), queue_packets(&b, dir));
        let mut what = format!("{dir}_queue_Q_packets");
        if qb.is_empty() && dir == "rx" {
            (qa, qb) = (queue_irqs(&ia, "input"), queue_irqs(&ib, "input"));
            what = "virtio input.Q interrupts".into();
        } else if qb.is_empty() {
            (qa, qb) = (tx_kicks(&a), tx_kicks(&b));
            what = "txQ_kicks".into();
        }
        let d: Vec<u64> = (0..n)
            .map(|q| {
                qb.get(&q)
                    .copied()
                    .unwrap_or(0)
                    .saturating_sub(qa.get(&q).copied().unwrap_or(0))
            })
            .collect();
        let idle: Vec<u32> = (0..n).filter(|q| d[*q as usize] == 0).collect();
        let name = format!("guest {dir} queues: every active one moved");
        if qb.is_empty() {
            r.check_failed(
                &name,
                format!(
                    "the guest shows no per-queue {dir} counter ({dir}_queue_Q_packets, \
                     virtio queue interrupts or kicks)"
                ),
            );
        } else {
            r.check(&name, idle.is_empty(), || {
                format!("guest {dir} queues {idle:?} moved nothing ({what} deltas {d:?})")
            });
        }
        r.metric(&format!("guest_{dir}_queue_counter"), json!(what));
        r.metric(&format!("guest_{dir}_queue_deltas"), json!(d));
        out.push(format!("{dir} {d:?}"));
    }
    out.join(" ")
}

/// Per-queue-pair counters of a virtio-net port from `nicemu ctl --json stats`:
/// `(rx_frames, tx_frames)` by pair.
pub fn parse_ctl_queues(lines: &[&str]) -> Option<Vec<(u64, u64)>> {
    let v: serde_json::Value = serde_json::from_str(&lines.join("\n")).ok()?;
    let qs = v.get("data")?.get("queues")?.as_array()?;
    qs.iter()
        .map(|q| Some((q.get("rx_frames")?.as_u64()?, q.get("tx_frames")?.as_u64()?)))
        .collect()
}

/// Waits for receive buffers and receive drops of a virtio-net port from
/// `nicemu ctl --json stats`: (sum of `rx_no_buffers` over pairs,
/// `port.switch_rx_drops` + `port.rx_backlog_drops`).
pub fn parse_ctl_waits(lines: &[&str]) -> Option<(u64, u64)> {
    let v: serde_json::Value = serde_json::from_str(&lines.join("\n")).ok()?;
    let d = v.get("data")?;
    let waits = d
        .get("queues")?
        .as_array()?
        .iter()
        .filter_map(|q| q.get("rx_no_buffers")?.as_u64())
        .sum();
    let port = d.get("port")?;
    let drops = port.get("switch_rx_drops")?.as_u64()?
        + port
            .get("rx_backlog_drops")
            .and_then(|v| v.as_u64())
            .unwrap_or(0);
    Some((waits, drops))
}

/// Records (informational) how often each port waited for receive buffers and how many
/// frames it dropped for want of them (switch queue or receive backlog full).
fn record_waits(s: &Section, r: &mut ScenarioResult) {
    let get = |tag: &str| parse_ctl_waits(&s.lines(&format!("host_{tag}")).collect::<Vec<_>>());
    for (who, a, b) in [("dut", "c0", "c1"), ("peer", "p0", "p1")] {
        if let (Some((wa, da)), Some((wb, db))) = (get(a), get(b)) {
            r.metric(
                &format!("{who}_rx_no_buffers"),
                json!(wb.saturating_sub(wa)),
            );
            r.metric(
                &format!("{who}_switch_rx_drops"),
                json!(db.saturating_sub(da)),
            );
        }
    }
}

/// Checks nicemu's per-pair counters moved on every active pair and only there. Only
/// virtio-net ports (`virtio`) report per-pair counters; for igb/ixgbe functions the
/// guest's counters above are the check.
fn check_ctl_queues(s: &Section, n: u32, virtio: bool, r: &mut ScenarioResult) -> String {
    let get = |tag: &str| {
        if s.get(&format!("host_{tag}_rc")) != Some("0") {
            return None;
        }
        parse_ctl_queues(&s.lines(&format!("host_{tag}")).collect::<Vec<_>>())
    };
    const READ: &str = "nicemu per-pair counters read";
    let (Some(a), Some(b)) = (get("c0"), get("c1")) else {
        if virtio {
            r.check_failed(
                READ,
                "nicemu ctl --json stats DUT printed no per-queue counters",
            );
        }
        return "-".into();
    };
    r.check_passed(READ);
    let d: Vec<(u64, u64)> = b
        .iter()
        .enumerate()
        .map(|(q, (rx, tx))| {
            let (ra, ta) = a.get(q).copied().unwrap_or((0, 0));
            (rx.saturating_sub(ra), tx.saturating_sub(ta))
        })
        .collect();
    for (q, (rx, tx)) in d.iter().enumerate() {
        if (q as u32) < n {
            r.check(
                &format!("nicemu queue pair {q}: frames both ways"),
                *rx != 0 && *tx != 0,
                || {
                    format!(
                        "nicemu queue pair {q}: rx +{rx} tx +{tx} \
                         (every active pair must move frames)"
                    )
                },
            );
        } else {
            r.check(
                &format!("nicemu queue pair {q}: nothing received (inactive)"),
                *rx == 0,
                || {
                    format!(
                        "nicemu queue pair {q} is inactive (combined {n}) but received +{rx} frames"
                    )
                },
            );
        }
    }
    r.check(
        "nicemu reports every pair in use",
        d.len() >= n as usize,
        || format!("nicemu reports {} queue pairs, the guest uses {n}", d.len()),
    );
    r.metric(
        "nicemu_queue_frames",
        json!(d
            .iter()
            .map(|(rx, tx)| json!({"rx": rx, "tx": tx}))
            .collect::<Vec<_>>()),
    );
    format!(
        "rx {:?} tx {:?}",
        d.iter().map(|x| x.0).collect::<Vec<_>>(),
        d.iter().map(|x| x.1).collect::<Vec<_>>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Console;

    const CTL0: &str = r#"{"ok": true, "data": {"dev": "vn0", "queues": [{"rx_frames": 1, "tx_frames": 2}, {"rx_frames": 0, "tx_frames": 0}]}}"#;

    fn section(lines: &[String]) -> Console {
        let mut text = String::from("@@NICEMU-BEGIN mq\n");
        for l in lines {
            text.push_str(l);
            text.push('\n');
        }
        text.push_str("@@NICEMU-DONE mq rc=0 uptime=10.0\n");
        Console::parse(&text)
    }

    fn good(n: u32, stream_rc: &str, q1_rx: u64) -> Vec<String> {
        let mut l = vec![
            "@@NICEMU mq supported=1".to_owned(),
            format!("@@NICEMU mq combined={n}"),
            "@@NICEMU mq set_rc=0".to_owned(),
            "@@NICEMU mq pset_rc=0".to_owned(),
            "@@NICEMU-OUT mq a NIC statistics:".to_owned(),
            "@@NICEMU-OUT mq b NIC statistics:".to_owned(),
        ];
        for q in 0..n {
            l.push(format!("@@NICEMU-OUT mq a      rx_queue_{q}_packets: 10"));
            l.push(format!("@@NICEMU-OUT mq a      tx_queue_{q}_packets: 10"));
            let rx = if q == 1 { 10 + q1_rx } else { 50 };
            l.push(format!("@@NICEMU-OUT mq b      rx_queue_{q}_packets: {rx}"));
            l.push(format!("@@NICEMU-OUT mq b      tx_queue_{q}_packets: 60"));
        }
        l.push(format!("@@NICEMU-OUT mq host_c0 {CTL0}"));
        l.push("@@NICEMU mq host_c0_rc=0".into());
        l.push(format!(
            "@@NICEMU-OUT mq host_c1 {}",
            r#"{"ok": true, "data": {"queues": [{"rx_frames": 9, "tx_frames": 9}, {"rx_frames": 5, "tx_frames": 7}]}}"#
        ));
        l.push("@@NICEMU mq host_c1_rc=0".into());
        for i in 1..=2 {
            l.push(format!("@@NICEMU-OUT mq s{i} THROUGHPUT=100.5"));
            l.push(format!("@@NICEMU-OUT mq s{i} THROUGHPUT_UNITS=10^6bits/s"));
            let rc = if i == 2 { stream_rc } else { "0" };
            l.push(format!("@@NICEMU-OUT mq s{i} RC={rc}"));
            l.push(format!("@@NICEMU mq s{i}_rc=0"));
        }
        l.push(
            "@@NICEMU-OUT mq after 5 packets transmitted, 5 received, 0% packet loss, time 800ms"
                .into(),
        );
        l
    }

    #[test]
    fn all_queues_moving_passes() {
        let c = section(&good(2, "0", 5));
        let t = crate::scenario::Target {
            module_version: None,
            mac: String::new(),
            driver: "virtio_net".into(),
            peer_mac: Some(String::new()),
            host_actions: true,
            unsupported: Vec::new(),
            device: String::new(),
        };
        let r = Mq.parse(&c.sections["mq"], &t);
        assert_eq!(r.reason, None, "{r:?}");
        assert!(r.summary.unwrap().contains("2 streams 201 Mbit/s"));
    }

    #[test]
    fn idle_queue_and_timed_out_stream_fail() {
        let t = crate::scenario::Target {
            module_version: None,
            mac: String::new(),
            driver: "virtio_net".into(),
            peer_mac: Some(String::new()),
            host_actions: true,
            unsupported: Vec::new(),
            device: String::new(),
        };
        let c = section(&good(2, "0", 0));
        let r = Mq.parse(&c.sections["mq"], &t);
        assert!(r
            .reason
            .unwrap()
            .contains("guest rx queues [1] moved nothing"));
        let c = section(&good(2, "124", 5));
        let r = Mq.parse(&c.sections["mq"], &t);
        assert!(r.reason.unwrap().contains("stream 2: timed out"));
        // Four pairs in use but nicemu reports two: a failure, not a pass.
        let c = section(&good(4, "0", 5));
        let r = Mq.parse(&c.sections["mq"], &t);
        assert!(r.reason.unwrap().contains("nicemu reports 2 queue pairs"));
    }

    #[test]
    fn virtio_7_2_counters_interrupts_and_kicks() {
        let irqs = [
            " 30:        120        300  PCI-MSIX-0000:00:02.0   1-edge      virtio1-input.0",
            " 31:          7          0  PCI-MSIX-0000:00:02.0   2-edge      virtio1-output.0",
            " 32:          0         55  PCI-MSIX-0000:00:02.0   3-edge      virtio1-input.1",
        ];
        let q = queue_irqs(&irqs, "input");
        assert_eq!(q.into_iter().collect::<Vec<_>>(), [(0, 420), (1, 55)]);
        assert_eq!(queue_irqs(&irqs, "output").get(&0), Some(&7));
        let mut e = BTreeMap::new();
        e.insert("tx_kicks".to_owned(), 9);
        e.insert("tx0_kicks".to_owned(), 5);
        e.insert("tx1_kicks".to_owned(), 4);
        e.insert("rx0_kicks".to_owned(), 1);
        assert_eq!(
            tx_kicks(&e).into_iter().collect::<Vec<_>>(),
            [(0, 5), (1, 4)]
        );
        // A section with only these counters: the fallback is used and judged.
        let mut l = good(2, "0", 5)
            .into_iter()
            .filter(|x| !x.contains("_queue_"))
            .collect::<Vec<_>>();
        l.extend([
            "@@NICEMU-OUT mq a      tx0_kicks: 1".to_owned(),
            "@@NICEMU-OUT mq a      tx1_kicks: 1".to_owned(),
            "@@NICEMU-OUT mq b      tx0_kicks: 8".to_owned(),
            "@@NICEMU-OUT mq b      tx1_kicks: 1".to_owned(),
            format!("@@NICEMU-OUT mq ia {}", irqs[0]),
            format!("@@NICEMU-OUT mq ia {}", irqs[2]),
        ]);
        l.push(format!(
            "@@NICEMU-OUT mq ib {}",
            " 30:        130        300  PCI-MSIX-0000:00:02.0   1-edge      virtio1-input.0"
        ));
        l.push(format!(
            "@@NICEMU-OUT mq ib {}",
            " 32:          0         60  PCI-MSIX-0000:00:02.0   3-edge      virtio1-input.1"
        ));
        let c = section(&l);
        let t = crate::scenario::Target {
            module_version: None,
            mac: String::new(),
            driver: "virtio_net".into(),
            peer_mac: Some(String::new()),
            host_actions: true,
            unsupported: Vec::new(),
            device: String::new(),
        };
        let r = Mq.parse(&c.sections["mq"], &t);
        let why = r.reason.unwrap();
        assert!(
            why.contains("guest tx queues [1] moved nothing (txQ_kicks"),
            "{why}"
        );
        assert!(!why.contains("guest rx"), "{why}");
        assert_eq!(r.metrics["guest_rx_queue_deltas"], json!([10, 5]));
    }

    #[test]
    fn script_follows_the_parameters() {
        let mut p = Params::default();
        let s = Mq.script(&p);
        assert!(s.contains("\nS=8\nD=10\n") && s.contains("BOTH=0"), "{s}");
        p.set("mq.direction", "both").unwrap();
        p.set("mq.streams", "16").unwrap();
        let s = Mq.script(&p);
        assert!(s.contains("\nS=16\n") && s.contains("BOTH=1"), "{s}");
        assert!(s.contains("t=TCP_MAERTS"));
    }

    #[test]
    fn register_models_need_no_per_pair_ctl_counters() {
        let l: Vec<String> = good(2, "0", 5)
            .into_iter()
            .filter(|x| !x.contains("host_c"))
            .collect();
        let c = section(&l);
        let mut t = crate::scenario::Target {
            module_version: None,
            mac: String::new(),
            driver: "igb".into(),
            peer_mac: Some(String::new()),
            host_actions: true,
            unsupported: Vec::new(),
            device: String::new(),
        };
        assert_eq!(Mq.parse(&c.sections["mq"], &t).reason, None);
        t.driver = "virtio_net".into();
        let why = Mq.parse(&c.sections["mq"], &t).reason.unwrap();
        assert!(why.contains("no per-queue counters"), "{why}");
    }

    #[test]
    fn ctl_queue_json() {
        assert_eq!(parse_ctl_queues(&[CTL0]), Some(vec![(1, 2), (0, 0)]));
        let w = r#"{"ok": true, "data": {"port": {"switch_rx_drops": 7}, "queues": [{"rx_no_buffers": 2}, {"rx_no_buffers": 3}]}}"#;
        assert_eq!(parse_ctl_waits(&[w]), Some((5, 7)));
        let w = r#"{"ok": true, "data": {"port": {"switch_rx_drops": 7, "rx_backlog_drops": 4}, "queues": []}}"#;
        assert_eq!(parse_ctl_waits(&[w]), Some((0, 11)));
        assert_eq!(parse_ctl_waits(&[CTL0]), None);
        assert_eq!(parse_ctl_queues(&["{\"ok\": false}"]), None);
    }
}
