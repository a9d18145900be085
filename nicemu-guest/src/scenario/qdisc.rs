// SPDX-License-Identifier: Apache-2.0
//! `qdisc`: a prio + tbf + fq_codel hierarchy on the device under test under UDP load
//! (`netperf UDP_STREAM`); packets/s through the root qdisc and that every level saw traffic.

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

impl Scenario for Qdisc {
    fn name(&self) -> &'static str {
        "qdisc"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        p.num("qdisc.duration") as u64 + 10
    }

    fn script(&self, p: &Params) -> String {
        let d = p.num("qdisc.duration").max(1.0) as u64;
        format!(
            "{NEED_IFACE}{NEED_PEER}TC=/usr/sbin/tc\n\
             nicemu_out setup sh -c \"$TC qdisc replace dev $IFACE root handle 1: prio && \
             $TC qdisc add dev $IFACE parent 1:2 handle 10: tbf rate {} burst 64kb latency 100ms && \
             $TC qdisc add dev $IFACE parent 10:1 handle 100: fq_codel\"\n\
             nicemu_out before $TC -s qdisc show dev \"$IFACE\"\n{}\
             nicemu_window_begin flood\n\
             nicemu_out np timeout {} /usr/bin/netperf -H $PEER_IP -t UDP_STREAM -l {d} -P 0 -- -m {} \
             -k THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS\n\
             nicemu_window_end\n{}\
             nicemu_out after $TC -s qdisc show dev \"$IFACE\"\n\
             $TC qdisc del dev \"$IFACE\" root\ntrue",
            p.get("qdisc.rate"),
            cpu::snapshot("c0"),
            d + 40,
            p.num("qdisc.size") as u64,
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
        let np = netperf::parse_keyval(&s.lines("np").collect::<Vec<_>>());
        let secs = np.get("ELAPSED_TIME").and_then(|v| num(v)).unwrap_or(0.0);
        r.check("netperf UDP_STREAM result", secs > 0.0, || {
            format!(
                "netperf UDP_STREAM printed no result (rc {})",
                s.get("np_rc").unwrap_or("?")
            )
        });
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
        if let (Some(recv), true) = (np.get("REMOTE_RECV_CALLS").and_then(|v| num(v)), secs > 0.0) {
            r.metric("received_per_s", json!(round(recv / secs, 1)));
        }
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
