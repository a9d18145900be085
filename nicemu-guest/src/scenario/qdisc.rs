// SPDX-License-Identifier: Apache-2.0
//! `qdisc`: a prio + tbf + fq_codel hierarchy on the device under test under UDP load
//! (`netperf UDP_STREAM`); packets/s through the root qdisc and that every level saw traffic.
//!
//! `qdisc.senders` > 1 starts that many senders at once, sender i pinned (`taskset`) to CPU i
//! of `qdisc.cpus` (default: CPU i modulo the guest's CPUs). The prio qdisc is the device's
//! root, so every transmit queue and every sender shares its one root lock: with a tbf rate
//! below what the senders offer, tbf throttles, its watchdog raises NET_TX and
//! `net_tx_action` runs the qdisc on one CPU while the others enqueue under the same lock
//! (the pressure of the seed's "net: drop spin_trylock() in net_tx_action()").

use std::collections::BTreeMap;

use serde_json::json;

use super::{
    cpu, netperf, num, round, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER,
};
use crate::cost::metrics::CostUnit;
use crate::params::Params;

/// qdisc hierarchy scenario.
#[derive(Debug)]
pub struct Qdisc;

/// One qdisc of `tc -s qdisc show`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QdiscStats {
    /// Kind ("prio", "tbf", "fq_codel").
    pub kind: String,
    /// Handle ("1:").
    pub handle: String,
    /// Packets sent.
    pub packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets dropped.
    pub dropped: u64,
}

/// Parses `tc -s qdisc show` output.
pub fn parse_tc_s(lines: &[&str]) -> Vec<QdiscStats> {
    let mut out: Vec<QdiscStats> = Vec::new();
    for l in lines {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("qdisc ") {
            let mut w = rest.split_whitespace();
            out.push(QdiscStats {
                kind: w.next().unwrap_or("").to_owned(),
                handle: w.next().unwrap_or("").to_owned(),
                packets: 0,
                bytes: 0,
                dropped: 0,
            });
        } else if let (Some(rest), Some(q)) = (t.strip_prefix("Sent "), out.last_mut()) {
            let w: Vec<&str> = rest.split_whitespace().collect();
            q.bytes = w.first().and_then(|v| v.parse().ok()).unwrap_or(0);
            q.packets = w.get(2).and_then(|v| v.parse().ok()).unwrap_or(0);
            if let Some(pos) = rest.find("dropped ") {
                q.dropped = num(&rest[pos + 8..]).unwrap_or(0.0) as u64;
            }
        }
    }
    out
}

/// Shell (after `NS`, `CPUS`, `LIMIT`, `NETPERF`, `NP_ARGS`, `TASKSET`, `NP_OUT`): `PINS` is
/// the CPU of each of the `NS` senders (the `CPUS` list in turn, else CPU i modulo the
/// guest's CPUs; none for one sender, which runs where the scheduler puts it), printed as
/// `sender_cpus`; `nicemu_senders` starts every sender at once (netperf, pinned with
/// `taskset -c`, its output and `RC=status` in `$NP_OUT$I`) and waits for all of them.
const SENDERS: &str = r#"nicemu_pins() {
    local i k c n
    [ "$NS" -gt 1 ] || return 0
    n=$(grep -c ^processor /proc/cpuinfo)
    set -- $CPUS
    i=0
    while [ $i -lt "$NS" ]; do
        if [ $# -gt 0 ]; then
            k=$((i % $# + 1))
            eval c=\${$k}
        else
            c=$((i % n))
        fi
        echo $c
        i=$((i + 1))
    done
}
PINS=$(nicemu_pins)
nicemu_kv senders "$NS"
nicemu_kv sender_cpus "$(echo $PINS | tr ' ' ,)"
nicemu_senders() {
    local i pids pin
    set -- $PINS
    i=0
    pids=
    while [ $i -lt "$NS" ]; do
        pin=
        if [ $# -gt 0 ]; then pin="$TASKSET -c $1"; shift; fi
        ( timeout $LIMIT $pin $NETPERF $NP_ARGS; echo "RC=$?" ) </dev/null >$NP_OUT$i 2>&1 &
        pids="$pids $!"
        i=$((i + 1))
    done
    wait $pids
}
"#;

/// `qdisc.senders`, at least 1.
fn senders(p: &Params) -> u64 {
    p.num("qdisc.senders").max(1.0) as u64
}

/// The senders' netperf results: `npI` for I < `senders` (`np` in logs from before
/// `qdisc.senders`, one sender).
fn sender_results(s: &Section) -> Vec<BTreeMap<String, String>> {
    let tags: Vec<String> = match s.get("senders").and_then(|v| v.parse::<usize>().ok()) {
        Some(n) => (0..n).map(|i| format!("np{i}")).collect(),
        None => vec!["np".to_owned()],
    };
    tags.iter()
        .map(|t| netperf::parse_keyval(&s.lines(t).collect::<Vec<_>>()))
        .collect()
}

/// A sender's elapsed seconds, when it printed a result.
fn elapsed(np: &BTreeMap<String, String>) -> Option<f64> {
    np.get("ELAPSED_TIME")
        .and_then(|v| num(v))
        .filter(|t| *t > 0.0)
}

/// Checks every sender printed a result and records the senders, their CPUs and their rates
/// summed (each over its own elapsed time); returns the flood's seconds (its longest
/// sender's).
fn check_senders(s: &Section, r: &mut ScenarioResult) -> f64 {
    let nps = sender_results(s);
    let missing: Vec<String> = nps
        .iter()
        .enumerate()
        .filter(|(_, np)| elapsed(np).is_none())
        .map(|(i, np)| {
            let rc = np
                .get("RC")
                .map(String::as_str)
                .or_else(|| s.get("np_rc"))
                .unwrap_or("?");
            format!("sender {i} (rc {rc})")
        })
        .collect();
    r.check("netperf UDP_STREAM result", missing.is_empty(), || {
        format!(
            "netperf UDP_STREAM printed no result: {}",
            missing.join(", ")
        )
    });
    let sum = |key: &str| -> Option<f64> {
        nps.iter()
            .map(|np| Some(np.get(key).and_then(|v| num(v))? / elapsed(np)?))
            .sum()
    };
    r.metric("senders", json!(nps.len()));
    if let Some(cpus) = s.get("sender_cpus").filter(|c| !c.is_empty()) {
        r.metric("sender_cpus", json!(cpus));
    }
    if let Some(sent) = sum("LOCAL_SEND_CALLS") {
        r.metric("sent_per_s", json!(round(sent, 1)));
    }
    if let Some(recv) = sum("REMOTE_RECV_CALLS") {
        r.metric("received_per_s", json!(round(recv, 1)));
    }
    nps.iter().filter_map(elapsed).fold(0.0, f64::max)
}

impl Scenario for Qdisc {
    fn name(&self) -> &'static str {
        "qdisc"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        p.num("qdisc.duration") as u64 + 10 + 2 * senders(p)
    }

    fn script(&self, p: &Params) -> String {
        let d = p.num("qdisc.duration").max(1.0) as u64;
        format!(
            "{NEED_IFACE}{NEED_PEER}TC=/usr/sbin/tc\n\
             nicemu_out setup sh -c \"$TC qdisc replace dev $IFACE root handle 1: prio && \
             $TC qdisc add dev $IFACE parent 1:2 handle 10: tbf rate {} burst 64kb latency 100ms && \
             $TC qdisc add dev $IFACE parent 10:1 handle 100: fq_codel\"\n\
             nicemu_out before $TC -s qdisc show dev \"$IFACE\"\n\
             NS={}\nCPUS=\"{}\"\nLIMIT={}\nNETPERF=/usr/bin/netperf\n\
             TASKSET=/usr/bin/taskset\nNP_OUT=/tmp/qdisc-np\nNP_ARGS='-H '$PEER_IP' -t UDP_STREAM -l {d} -P 0 -- -m {} \
             -k THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS'\n\
             {SENDERS}{}\
             nicemu_window_begin flood\n\
             nicemu_senders\n\
             nicemu_window_end\n{}\
             i=0\nwhile [ $i -lt $NS ]; do nicemu_out np$i cat $NP_OUT$i; i=$((i + 1)); done\n\
             nicemu_out after $TC -s qdisc show dev \"$IFACE\"\n\
             $TC qdisc del dev \"$IFACE\" root\ntrue",
            p.get("qdisc.rate"),
            senders(p),
            p.get("qdisc.cpus").replace(',', " "),
            d + 40,
            p.num("qdisc.size") as u64,
            cpu::snapshot("c0"),
            cpu::snapshot("c1"),
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("setup_rc") != Some("0") {
            let out: Vec<&str> = s.lines("setup").collect();
            r.check_failed("tc setup", format!("tc setup failed: {}", out.join(" | ")));
            return r;
        }
        r.check_passed("tc setup");
        let before = parse_tc_s(&s.lines("before").collect::<Vec<_>>());
        let after = parse_tc_s(&s.lines("after").collect::<Vec<_>>());
        let secs = check_senders(s, &mut r);
        let mut levels = serde_json::Map::new();
        for kind in ["prio", "tbf", "fq_codel"] {
            let find = |v: &[QdiscStats]| v.iter().find(|q| q.kind == kind).cloned();
            match (find(&before), find(&after)) {
                (Some(b), Some(a)) => {
                    let pk = a.packets.saturating_sub(b.packets);
                    let mut m = serde_json::Map::new();
                    m.insert("packets".into(), json!(pk));
                    m.insert("dropped".into(), json!(a.dropped.saturating_sub(b.dropped)));
                    if secs > 0.0 {
                        m.insert("pps".into(), json!(round(pk as f64 / secs, 1)));
                    }
                    r.check(&format!("packets through {kind}"), pk > 0, || {
                        format!("no packets went through {kind}")
                    });
                    levels.insert(kind.into(), serde_json::Value::Object(m));
                }
                _ => r.check_failed(
                    &format!("packets through {kind}"),
                    format!("qdisc {kind} missing from tc -s qdisc show"),
                ),
            }
        }
        let pps = levels
            .get("prio")
            .and_then(|m| m.get("pps"))
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0);
        r.metric("levels", serde_json::Value::Object(levels));
        r.metric("pps", json!(pps));
        if let Some((busy, sirq)) = cpu::deltas(s, "c0", "c1", secs) {
            r.metric("busy_cpu_s", json!(busy));
            if busy > 0.0 {
                r.metric("pps_per_cpu_s", json!(round(pps * secs / busy, 1)));
            }
            r.metric("softirq", sirq);
        }
        r.summary = Some(format!("{:.1}k pps", pps / 1000.0));
        r
    }

    /// The flood's window: per packet through the root (prio) qdisc.
    fn cost_unit(&self, window: &str, r: &ScenarioResult) -> Option<CostUnit> {
        let packets = r
            .metrics
            .get("levels")?
            .get("prio")?
            .get("packets")?
            .as_f64()?;
        (window == "flood" && packets > 0.0).then(|| CostUnit {
            path: Vec::new(),
            units: packets,
            unit: "packet",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `sh FLAGS SCRIPT` (e.g. `-n -c`: parse only), requires it to succeed and
    /// returns what it printed.
    fn run_sh(flags: &[&str], script: &str) -> std::process::Output {
        let out = std::process::Command::new("sh")
            .args(flags)
            .arg(script)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }
    use crate::scenario::{Console, Status};

    /// Runs [`SENDERS`] and `nicemu_senders` under `sh` with `NS` senders and `CPUS`, netperf
    /// and taskset replaced by stubs (netperf waits until all `NS` have started, up to 5 s,
    /// and prints how many it saw; taskset prints its CPU); returns the `key=value` lines
    /// and each sender's output.
    fn run_senders(ns: u32, cpus: &str) -> (String, Vec<String>) {
        let dir = std::env::temp_dir().join(format!(
            "nicemu-qdisc-senders-{}-{ns}-{}",
            std::process::id(),
            cpus.replace(' ', "_")
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.display();
        let script = format!(
            "D={d}\n\
             printf '%s\\n' '#!/bin/sh' 'echo PIN=$2' 'shift 2' 'exec \"$@\"' > $D/ts\n\
             printf '%s\\n' '#!/bin/sh' 'touch $D/started.$$' 'n=0' \
             'while [ $(ls $D | grep -c started) -lt $NS ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n+1)); done' \
             'echo ARGS=\"$*\"' 'echo SEEN=$(ls $D | grep -c started)' 'echo ELAPSED_TIME=1.0' > $D/np\n\
             chmod +x $D/ts $D/np\n\
             nicemu_kv() {{ echo \"$1=$2\"; }}\n\
             export D NS={ns}\nCPUS=\"{cpus}\"\nLIMIT=20\nNETPERF=$D/np\nTASKSET=$D/ts\n\
             NP_OUT=$D/out\nNP_ARGS='-H 10.0.0.2 -t UDP_STREAM'\n{SENDERS}nicemu_senders\n"
        );
        let out = run_sh(&["-c"], &script);
        let outs = (0..ns)
            .map(|i| std::fs::read_to_string(dir.join(format!("out{i}"))).unwrap_or_default())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        (String::from_utf8_lossy(&out.stdout).into_owned(), outs)
    }

    #[test]
    fn senders_run_at_once_pinned_to_the_cpus_in_turn() {
        let (kv, outs) = run_senders(3, "1 2");
        assert!(kv.contains("senders=3\n"), "{kv}");
        assert!(kv.contains("sender_cpus=1,2,1\n"), "{kv}");
        for (o, cpu) in outs.iter().zip(["1", "2", "1"]) {
            assert!(o.contains(&format!("PIN={cpu}\n")), "{o}");
            assert!(o.contains("SEEN=3\n"), "senders ran one after another: {o}");
            assert!(o.contains("ARGS=-H 10.0.0.2 -t UDP_STREAM\n"), "{o}");
            assert!(o.ends_with("RC=0\n"), "{o}");
        }
    }

    #[test]
    fn senders_without_cpus_take_cpu_i_modulo_the_cpus_and_one_sender_is_not_pinned() {
        let n = std::fs::read_to_string("/proc/cpuinfo")
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("processor"))
            .count();
        let (kv, outs) = run_senders(4, "");
        let want: Vec<String> = (0..4).map(|i| (i % n).to_string()).collect();
        assert!(
            kv.contains(&format!("sender_cpus={}\n", want.join(","))),
            "{kv}"
        );
        for (o, cpu) in outs.iter().zip(&want) {
            assert!(o.contains(&format!("PIN={cpu}\n")), "{o}");
        }
        let (kv, outs) = run_senders(1, "");
        assert!(kv.contains("senders=1\nsender_cpus=\n"), "{kv}");
        assert!(!outs[0].contains("PIN="), "{}", outs[0]);
        assert!(outs[0].contains("SEEN=1\n"), "{}", outs[0]);
    }

    #[test]
    fn script_sets_the_senders_and_their_cpus_and_parses() {
        let mut p = Params::default();
        p.set_pair("qdisc.senders=2").unwrap();
        p.set_pair("qdisc.cpus=1,2").unwrap();
        p.set_pair("qdisc.rate=5mbit").unwrap();
        let s = Qdisc.script(&p);
        assert!(s.contains("\nNS=2\nCPUS=\"1 2\"\n"), "{s}");
        assert!(s.contains("tbf rate 5mbit "), "{s}");
        let w = s.find("nicemu_window_begin flood").unwrap();
        assert!(s[w..].find("nicemu_senders").unwrap() < s[w..].find("nicemu_window_end").unwrap());
        run_sh(&["-n", "-c"], &s);
    }

    /// A flood's section: `senders` senders (none printed: a log from before
    /// `qdisc.senders`), sender I's netperf output in `np` lines.
    fn flood(senders: Option<u32>, np: &[&str]) -> ScenarioResult {
        let mut t = String::from(
            "@@NICEMU-BEGIN qdisc\n@@NICEMU qdisc setup_rc=0\n\
             @@NICEMU-OUT qdisc before qdisc prio 1: root\n\
             @@NICEMU-OUT qdisc before  Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n\
             @@NICEMU-OUT qdisc before qdisc tbf 10: parent 1:2\n\
             @@NICEMU-OUT qdisc before  Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n\
             @@NICEMU-OUT qdisc before qdisc fq_codel 100: parent 10:1\n\
             @@NICEMU-OUT qdisc before  Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n",
        );
        if let Some(n) = senders {
            t += &format!("@@NICEMU qdisc senders={n}\n@@NICEMU qdisc sender_cpus=0,1\n");
        }
        for l in np {
            t += &format!("@@NICEMU-OUT qdisc {l}\n");
        }
        t += "@@NICEMU-OUT qdisc after qdisc prio 1: root\n\
              @@NICEMU-OUT qdisc after  Sent 106000 bytes 1000 pkt (dropped 0, overlimits 0 requeues 0)\n\
              @@NICEMU-OUT qdisc after qdisc tbf 10: parent 1:2\n\
              @@NICEMU-OUT qdisc after  Sent 106000 bytes 1000 pkt (dropped 5, overlimits 90 requeues 0)\n\
              @@NICEMU-OUT qdisc after qdisc fq_codel 100: parent 10:1\n\
              @@NICEMU-OUT qdisc after  Sent 106000 bytes 1000 pkt (dropped 5, overlimits 0 requeues 0)\n\
              @@NICEMU-DONE qdisc rc=0\n";
        let c = Console::parse(&t);
        Qdisc.parse(&c.sections["qdisc"], &Target::for_test("igb", None))
    }

    #[test]
    fn rates_are_summed_over_the_senders_and_per_packet_units_kept() {
        let r = flood(
            Some(2),
            &[
                "np0 ELAPSED_TIME=10.00",
                "np0 LOCAL_SEND_CALLS=3000",
                "np0 REMOTE_RECV_CALLS=600",
                "np0 RC=0",
                "np1 ELAPSED_TIME=8.00",
                "np1 LOCAL_SEND_CALLS=4000",
                "np1 REMOTE_RECV_CALLS=400",
                "np1 RC=0",
            ],
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(r.metrics["senders"], json!(2));
        assert_eq!(r.metrics["sender_cpus"], json!("0,1"));
        assert_eq!(r.metrics["sent_per_s"], json!(800.0)); // 300 + 500
        assert_eq!(r.metrics["received_per_s"], json!(110.0)); // 60 + 50
                                                               // 1000 packets through prio over the longest sender's 10 s.
        assert_eq!(r.metrics["pps"], json!(100.0));
        assert_eq!(r.metrics["levels"]["tbf"]["dropped"], json!(5));
        let u = Qdisc.cost_unit("flood", &r).unwrap();
        assert_eq!((u.units, u.unit), (1000.0, "packet"));
    }

    #[test]
    fn a_sender_without_a_result_fails_and_old_logs_still_parse() {
        let r = flood(
            Some(2),
            &[
                "np0 ELAPSED_TIME=10.00",
                "np0 LOCAL_SEND_CALLS=3000",
                "np1 RC=124",
            ],
        );
        assert_eq!(r.status, Status::Fail, "{r:?}");
        let reason = r.reason.unwrap();
        assert!(reason.contains("sender 1 (rc 124)"), "{reason}");
        assert!(!reason.contains("sender 0"), "{reason}");
        let r = flood(
            None,
            &[
                "np ELAPSED_TIME=5.00",
                "np LOCAL_SEND_CALLS=2000",
                "np_rc=0",
            ],
        );
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(r.metrics["senders"], json!(1));
        assert_eq!(r.metrics["pps"], json!(200.0));
        assert_eq!(r.metrics["sent_per_s"], json!(400.0));
    }

    #[test]
    fn tc_s_qdisc_hierarchy() {
        let out = [
            "qdisc prio 1: root refcnt 3 bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
            " Sent 73950 bytes 1020 pkt (dropped 3, overlimits 0 requeues 0) ",
            " backlog 0b 0p requeues 0",
            "qdisc tbf 10: parent 1:2 rate 200Mbit burst 64Kb lat 100ms ",
            " Sent 73800 bytes 1018 pkt (dropped 0, overlimits 12 requeues 0) ",
        ];
        let q = parse_tc_s(&out);
        assert_eq!(q.len(), 2);
        assert_eq!(
            (q[0].kind.as_str(), q[0].packets, q[0].dropped),
            ("prio", 1020, 3)
        );
        assert_eq!((q[1].handle.as_str(), q[1].bytes), ("10:", 73800));
    }
}
