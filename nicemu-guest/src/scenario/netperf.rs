// SPDX-License-Identifier: Apache-2.0
//! `netperf`: TCP_STREAM / TCP_RR / UDP_STREAM (message sizes, duration, optional CPU
//! pinning with `taskset` and `ethtool -L combined N` first) from the device under test to
//! `netserver` in the peer namespace. Uses omni's `-k` key=value output.

use std::collections::BTreeMap;

use serde_json::json;

use super::{num, round, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::cost::metrics::CostUnit;
use crate::params::Params;

/// netperf throughput scenario.
#[derive(Debug)]
pub struct Netperf;

/// Tests accepted in `netperf.tests`.
pub const TESTS: &[&str] = &[
    "TCP_STREAM",
    "TCP_MAERTS",
    "TCP_RR",
    "TCP_CRR",
    "UDP_STREAM",
    "UDP_RR",
];

/// omni output selectors printed (`-k`).
const SELECTORS: &str =
    "THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS,MEAN_LATENCY,LOCAL_SEND_SIZE";

/// One requested test: name and optional message size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestSpec {
    /// netperf -t value.
    pub test: String,
    /// -m message size.
    pub size: Option<u32>,
}

impl TestSpec {
    /// The label used in results ("UDP_STREAM:64").
    pub fn label(&self) -> String {
        match self.size {
            Some(m) => format!("{}:{m}", self.test),
            None => self.test.clone(),
        }
    }
}

/// Parses `netperf.tests` ("TCP_STREAM,UDP_STREAM:64"); unknown tests are dropped with a
/// warning (the validated list is what runs).
pub fn parse_tests(spec: &str) -> Vec<TestSpec> {
    spec.split(',')
        .filter(|s| !s.trim().is_empty())
        .filter_map(|s| {
            let (t, m) = match s.trim().split_once(':') {
                Some((t, m)) => (t, m.parse().ok()),
                None => (s.trim(), None),
            };
            let t = t.to_ascii_uppercase();
            if TESTS.contains(&t.as_str()) {
                Some(TestSpec { test: t, size: m })
            } else {
                log::warn!(
                    "netperf: unknown test {t:?} ignored (known: {})",
                    TESTS.join(", ")
                );
                None
            }
        })
        .collect()
}

/// Shell: `nicemu_irqs_to SYSFS_DEVICE MASK` steers every MSI/MSI-X vector of a network
/// device to the CPUs of hex `MASK` (`/proc/irq/N/smp_affinity`). virtio-net's vectors
/// belong to the PCI device above the virtio device.
pub const IRQS_TO: &str = r#"nicemu_irqs_to() {
    local d n
    d=$(readlink -f "$1")
    [ -d "$d/msi_irqs" ] || d=${d%/*}
    for n in $(ls "$d/msi_irqs" 2>/dev/null); do echo "$2" > /proc/irq/$n/smp_affinity 2>/dev/null; done
}
"#;

/// Shell (after [`IRQS_TO`]): with two or more CPUs, steers every MSI/MSI-X vector of the
/// device under test to CPU 0 and the peer's to CPU 1, prints `pinned=1` and sets shell
/// variable `var` to netperf's `-T bind` (`"0,1"`: netperf on CPU 0, netserver's data
/// process on CPU 1); with one CPU, `var` is empty and `pinned=0`.
pub fn pin_irqs(var: &str, bind: &str) -> String {
    format!(
        r#"{var}=
if [ "$(grep -c ^processor /proc/cpuinfo)" -ge 2 ]; then
    nicemu_irqs_to /sys/class/net/$IFACE/device 1
    nicemu_irqs_to "$(nicemu_peer readlink -f /sys/class/net/$PEER_IFACE/device)" 2
    {var}="-T {bind}"
    nicemu_kv pinned 1
else
    nicemu_kv pinned 0
fi
"#
    )
}

/// Shell: `nicemu_lat TAG` reads nicemu's latency histograms of both ports and clears them
/// (`nicemu ctl --json latency DUT|PEER --reset`, as host actions `TAG` and `TAG_peer`)
/// when the harness serves host actions (a nicemu device under test); else nothing.
const LATENCY: &str = r#"nicemu_lat() {
    [ "$HOST_ACTIONS" = 1 ] || return 0
    nicemu_host "$1" ctl --json latency DUT --reset
    nicemu_host "$1_peer" ctl --json latency PEER --reset
}
"#;

/// netperf's `-l` for test `t`: `-N` transactions for an RR test with a fixed `count`,
/// else `secs` seconds. STREAM tests stay timed: with `-l -BYTES` netserver has no timer of
/// its own and waits for the sender's end-of-test datagrams, so when the loaded receiver
/// drops them (UDP) both ends wait until the guest-side timeout (seen here in 2 of 6
/// UDP_STREAM runs); their units are the messages actually sent.
fn length(t: &TestSpec, secs: u64, count: u64) -> String {
    if count > 0 && t.test.ends_with("_RR") {
        format!("-{count}")
    } else {
        secs.to_string()
    }
}

/// Seconds a test may take before the guest-side `timeout` stops it: its duration, or
/// for a fixed count 10 ms per transaction (~100 transactions/s, a fraction of the
/// slowest seen under TCG at host load 25), plus 40.
fn limit(t: &TestSpec, secs: u64, count: u64) -> u64 {
    let fixed = if count > 0 && t.test.ends_with("_RR") {
        count / 100
    } else {
        0
    };
    secs.max(fixed) + 40
}

/// What one unit of a netperf test's work is: a message sent (UDP_STREAM), a
/// transaction (RR), a send call (TCP_STREAM).
fn unit_of(label: &str) -> &'static str {
    if label.starts_with("UDP_STREAM") {
        "msg"
    } else if label.contains("_RR") {
        "transaction"
    } else {
        "send"
    }
}

/// Parses `-k` output (KEY=VALUE lines) into a map.
pub fn parse_keyval(lines: &[&str]) -> BTreeMap<String, String> {
    lines
        .iter()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| {
            !k.is_empty()
                && k.chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
        })
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

/// Part `key` of nicemu's `ctl latency` answer for both ports during test `i`
/// (`{"DUT": …, "PEER": …}`), when the harness read it: `stages` (the latency
/// histograms) or `threads` (how long each of the port's threads waited for a core).
fn latency(s: &Section, i: usize, key: &str) -> Option<serde_json::Value> {
    let mut ports = serde_json::Map::new();
    for (port, tag) in [("DUT", format!("lat{i}")), ("PEER", format!("lat{i}_peer"))] {
        if s.get(&format!("host_{tag}_rc")) != Some("0") {
            continue;
        }
        let text = s
            .lines(&format!("host_{tag}"))
            .collect::<Vec<_>>()
            .join("\n");
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        if let Some(part) = v.get("data").and_then(|d| d.get(key)) {
            ports.insert(port.into(), part.clone());
        }
    }
    (!ports.is_empty()).then_some(serde_json::Value::Object(ports))
}

/// UDP_STREAM test `i`'s message rates (sent, received, sent per busy guest CPU-second)
/// into `m`; returns the summary text.
fn udp_rates(
    s: &Section,
    i: usize,
    label: &str,
    kv: &BTreeMap<String, String>,
    secs: f64,
    m: &mut serde_json::Map<String, serde_json::Value>,
) -> String {
    let get = |k: &str| kv.get(k).and_then(|v| num(v)).unwrap_or(0.0);
    let (sent, recv) = (get("LOCAL_SEND_CALLS"), get("REMOTE_RECV_CALLS"));
    m.insert("msgs_per_s_sent".into(), json!(round(sent / secs, 1)));
    m.insert("msgs_per_s_received".into(), json!(round(recv / secs, 1)));
    let cpu = super::cpu::deltas(s, &format!("c{i}a"), &format!("c{i}b"), secs);
    if let Some((busy, _)) = cpu.filter(|(b, _)| *b > 0.0) {
        m.insert("busy_cpu_s".into(), json!(busy));
        m.insert("msgs_sent_per_cpu_s".into(), json!(round(sent / busy, 1)));
    }
    format!("{label} {:.1}k msg/s", recv / secs / 1000.0)
}

/// ": last lines" of a tool's output, or nothing.
fn tail(lines: &[&str]) -> String {
    let t: Vec<&str> = lines.iter().rev().take(3).rev().copied().collect();
    if t.is_empty() {
        String::new()
    } else {
        format!(": {}", t.join(" | "))
    }
}

impl Scenario for Netperf {
    fn name(&self) -> &'static str {
        "netperf"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        let (d, count) = (
            p.num("netperf.duration") as u64,
            p.num("netperf.count") as u64,
        );
        let tests: u64 = parse_tests(&p.get("netperf.tests"))
            .iter()
            .map(|t| limit(t, d, count) - 35)
            .sum();
        tests + 5 + p.num("netperf.warmup").max(0.0) as u64
    }

    fn script(&self, p: &Params) -> String {
        let d = p.num("netperf.duration").max(1.0) as u64;
        let mut s = format!("{NEED_IFACE}{NEED_PEER}");
        let combined = p.get("netperf.combined");
        if !combined.is_empty() {
            s.push_str(&format!(
                "nicemu_out ethtool_L /usr/sbin/ethtool -L \"$IFACE\" combined {combined}\nnicemu_carrier \"$IFACE\" 100\n"
            ));
        }
        let mask = p.get("netperf.cpumask");
        let pin = if mask.is_empty() {
            String::new()
        } else {
            format!("/usr/bin/taskset {mask} ")
        };
        // Two hosts in one guest: the sender (netperf) and the device's interrupts on
        // CPU 0, the receiver (netserver) and the peer's interrupts on CPU 1, so the
        // guest scheduler cannot stack both ends on one vCPU now and then.
        let bind = if p.num("netperf.pin") != 0.0 {
            s.push_str(IRQS_TO);
            s.push_str(&pin_irqs("NP_BIND", "0,1"));
            "$NP_BIND "
        } else {
            ""
        };
        let tests = parse_tests(&p.get("netperf.tests"));
        // Warm-up: the first test's traffic, not measured (caches, ARP, NAPI settle).
        let warm = p.num("netperf.warmup").max(0.0) as u64;
        if let (Some(t), true) = (tests.first(), warm > 0) {
            let m = t.size.map(|m| format!("-m {m} ")).unwrap_or_default();
            s.push_str(&format!(
                "timeout {} {pin}/usr/bin/netperf -H $PEER_IP {bind}-t {} -l {warm} -P 0 -- {m}>/dev/null 2>&1\nnicemu_kv warmup_secs {warm}\n",
                warm + 30,
                t.test
            ));
        }
        // nicemu's latency histograms: cleared before the first test, read and cleared
        // after each.
        s.push_str(LATENCY);
        s.push_str("nicemu_lat lat_start\n");
        // Labels first, so tests cut short by an abort are still reported.
        for (i, t) in tests.iter().enumerate() {
            s.push_str(&format!("nicemu_kv test{i} {}\n", t.label()));
        }
        let count = p.num("netperf.count").max(0.0) as u64;
        for (i, t) in tests.iter().enumerate() {
            let m = t.size.map(|m| format!("-m {m} ")).unwrap_or_default();
            s.push_str(&super::cpu::snapshot(&format!("c{i}a")));
            // The counting window holds the test, from netperf's start to its end.
            s.push_str(&format!(
                "nicemu_window_begin {label}\n\
                 nicemu_out np{i} timeout {} {pin}/usr/bin/netperf -H $PEER_IP {bind}-t {} -l {} -P 0 -- {m}-k {SELECTORS}; np_rc=$?\n\
                 nicemu_window_end\n\
                 [ $np_rc != 143 ] || {{ nicemu_kv aborted {i}; exit 0; }}\n",
                limit(t, d, count),
                t.test,
                length(t, d, count),
                label = t.label(),
            ));
            s.push_str(&super::cpu::snapshot(&format!("c{i}b")));
            s.push_str(&format!("nicemu_lat lat{i}\n"));
        }
        s.push_str("true");
        s
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if let Some(rc) = s.get("ethtool_L_rc") {
            r.check("ethtool -L queues set", rc == "0", || {
                let out: Vec<&str> = s.lines("ethtool_L").collect();
                format!("ethtool -L failed: {}", out.join(" "))
            });
        }
        let mut tests = serde_json::Map::new();
        let mut summary = Vec::new();
        let aborted: Option<usize> = s.get("aborted").and_then(|v| v.parse().ok());
        for i in 0.. {
            let Some(label) = s.get(&format!("test{i}")) else {
                break;
            };
            if aborted.is_some_and(|a| i > a) {
                r.check_failed(
                    &format!("{label} result"),
                    format!("{label}: not run (an earlier test timed out)"),
                );
                continue;
            }
            let tag = format!("np{i}");
            let lines: Vec<&str> = s.lines(&tag).collect();
            let kv = parse_keyval(&lines);
            let rc = super::describe_rc(s.get(&format!("{tag}_rc")));
            let Some(tp) = kv.get("THROUGHPUT").and_then(|v| num(v)) else {
                r.check_failed(
                    &format!("{label} result"),
                    format!("{label}: no result ({rc}){}", tail(&lines)),
                );
                continue;
            };
            r.check_passed(&format!("{label} result"));
            let units = kv.get("THROUGHPUT_UNITS").cloned().unwrap_or_default();
            let mut m = serde_json::Map::new();
            m.insert("throughput".into(), json!(tp));
            m.insert("units".into(), json!(units));
            let secs = kv.get("ELAPSED_TIME").and_then(|v| num(v)).unwrap_or(0.0);
            m.insert("secs".into(), json!(secs));
            if let Some(sends) = kv.get("LOCAL_SEND_CALLS").and_then(|v| num(v)) {
                m.insert("send_calls".into(), json!(sends));
            }
            if let Some(lat) = kv.get("MEAN_LATENCY").and_then(|v| num(v)) {
                m.insert("mean_latency_us".into(), json!(lat));
            }
            let short = if label.starts_with("UDP_STREAM") && secs > 0.0 {
                udp_rates(s, i, label, &kv, secs, &mut m)
            } else if units.contains("bits") {
                format!("{label} {tp:.0} Mbit/s")
            } else {
                format!("{label} {tp:.0} {}", units.replace("Trans/s", "tr/s"))
            };
            r.check(&format!("{label} throughput above 0"), tp > 0.0, || {
                format!("{label}: throughput 0")
            });
            summary.push(short);
            if let Some(lat) = latency(s, i, "stages") {
                m.insert("nicemu_latency".into(), lat);
            }
            if let Some(threads) = latency(s, i, "threads") {
                m.insert("nicemu_threads".into(), threads);
            }
            tests.insert(label.to_owned(), serde_json::Value::Object(m));
        }
        if tests.is_empty() && r.status == super::Status::Pass {
            r.check_failed("a test ran", "no netperf test ran");
        }
        r.metric("tests", serde_json::Value::Object(tests));
        if let Some(pinned) = s.get("pinned") {
            r.metric("pinned", json!(pinned == "1"));
        }
        r.summary = Some(summary.join(", "));
        r
    }

    /// A test's window (named by its label): its send calls are the units (messages,
    /// transactions), the cost figures go next to its throughput.
    fn cost_unit(&self, window: &str, r: &ScenarioResult) -> Option<CostUnit> {
        let sends = r
            .metrics
            .get("tests")?
            .get(window)?
            .get("send_calls")?
            .as_f64()?;
        (sends > 0.0).then(|| CostUnit {
            path: vec!["tests".into(), window.into()],
            units: sends,
            unit: unit_of(window),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_specs_parse_with_sizes_and_drop_unknown() {
        let t = parse_tests("TCP_STREAM, udp_stream:1,FOO,TCP_RR");
        assert_eq!(t.len(), 3);
        assert_eq!(t[1].label(), "UDP_STREAM:1");
        assert_eq!(t[1].size, Some(1));
    }

    #[test]
    fn nicemu_latency_is_read_after_each_test_and_kept_with_it() {
        let mut p = Params::default();
        p.set("netperf.tests", "TCP_RR,UDP_STREAM:64").unwrap();
        let s = Netperf.script(&p);
        let start = s.find("nicemu_lat lat_start").unwrap();
        let np0 = s.find("nicemu_out np0 ").unwrap();
        let lat0 = s.find("nicemu_lat lat0").unwrap();
        assert!(start < np0 && np0 < lat0 && lat0 < s.find("nicemu_out np1 ").unwrap());
        assert!(s.contains("[ \"$HOST_ACTIONS\" = 1 ] || return 0"), "{s}");
        let stages = r#"{"ok":true,"data":{"dev":"igb0","stages":{"doorbell_to_wire":{"count":5,"p50":9000}},"threads":[{"role":"doorbell","name":"vfio-igb0","slices":40,"wait_per_slice_ns":31000}]}}"#;
        let text = format!(
            "@@NICEMU-BEGIN netperf\n@@NICEMU netperf test0=TCP_RR\n\
             @@NICEMU-OUT netperf np0 THROUGHPUT=1500\n@@NICEMU-OUT netperf np0 THROUGHPUT_UNITS=Trans/s\n\
             @@NICEMU netperf np0_rc=0\n@@NICEMU-OUT netperf host_lat0 {stages}\n\
             @@NICEMU netperf host_lat0_rc=0\n@@NICEMU netperf host_lat0_peer_rc=1\n\
             @@NICEMU-DONE netperf rc=0\n"
        );
        let c = super::super::Console::parse(&text);
        let r = Netperf.parse(&c.sections["netperf"], &Target::for_test("igb", Some("y")));
        assert_eq!(r.status, super::super::Status::Pass, "{:?}", r.reason);
        let lat = &r.metrics["tests"]["TCP_RR"]["nicemu_latency"];
        assert_eq!(lat["DUT"]["doorbell_to_wire"]["p50"], 9000, "{lat}");
        assert!(
            lat.get("PEER").is_none(),
            "a failed read is left out: {lat}"
        );
        let threads = &r.metrics["tests"]["TCP_RR"]["nicemu_threads"];
        assert_eq!(threads["DUT"][0]["wait_per_slice_ns"], 31000, "{threads}");
        assert!(threads.get("PEER").is_none(), "{threads}");
    }

    #[test]
    fn a_fixed_count_runs_rr_tests_by_transactions_inside_a_window() {
        let mut p = Params::default();
        p.set("netperf.tests", "TCP_RR,UDP_STREAM:1").unwrap();
        p.set("netperf.count", "5000").unwrap();
        let s = Netperf.script(&p);
        assert!(s.contains("nicemu_window_begin TCP_RR\n"), "{s}");
        assert!(
            s.contains("timeout 90 "),
            "5000 transactions at 100/s + 40: {s}"
        );
        assert!(s.contains("-t TCP_RR -l -5000 "), "{s}");
        assert!(
            s.contains("-t UDP_STREAM -l 5 "),
            "STREAM tests stay timed: {s}"
        );
        let end = s.find("nicemu_window_end").unwrap();
        assert!(s.find("nicemu_out np0").unwrap() < end);
        assert_eq!(
            Netperf.budget_secs(&p),
            (50 + 5) + (5 + 5) + 5,
            "the guest's budget covers the counted test"
        );
    }

    #[test]
    fn pinning_binds_both_ends_and_steers_both_ports_interrupts() {
        let mut p = Params::default();
        p.set("netperf.tests", "TCP_RR").unwrap();
        let s = Netperf.script(&p);
        assert!(s.contains("netperf -H $PEER_IP $NP_BIND -t TCP_RR"), "{s}");
        assert!(s.contains("nicemu_irqs_to /sys/class/net/$IFACE/device 1"));
        assert!(s.contains("/sys/class/net/$PEER_IFACE/device)\" 2"));
        p.set("netperf.pin", "0").unwrap();
        let s = Netperf.script(&p);
        assert!(s.contains("netperf -H $PEER_IP -t TCP_RR"), "{s}");
        assert!(!s.contains("smp_affinity"));
    }
}
