// SPDX-License-Identifier: Apache-2.0
//! `hwstamp`: hardware receive time stamps (seed 001 asked of igb). The device under test
//! gets `hwstamp_ctl -r 12` (HWTSTAMP_FILTER_PTP_V2_EVENT: the 82576 stamps only PTP event
//! frames, one at a time — RXSTMPL/H stay latched until the driver reads them, datasheet
//! §7.9.2.3) and a netserver; the peer namespace sends it PTP v2 Sync headers to UDP port
//! 319, in two ways:
//!
//! - **fixed count** (`hwstamp.count` frames, window `stamp`): `netperf UDP_RR -l -N` with
//!   the Sync header as the 44-byte request (`-F`), so one frame is in flight at a time:
//!   each is received alone, in an interrupt and NAPI poll of its own, and stamped (the
//!   latch is free again when the next arrives). The device's interrupts go to CPU 0 with
//!   netserver, the peer's to CPU 1 with netperf (`-T 1,0`), as the netperf scenario pins
//!   them. Reported under `stamp`: transactions, stamped frames (nicemu counts the
//!   driver's RXSTMPH reads in its register trace) and their share, transactions/s and per
//!   guest CPU-second; the counting window's figures per stamped frame (`stamp.cost`):
//!   the ruler of an A/B, since no batching can drift.
//! - **flood** (`hwstamp.duration` s, window `flood`): `netperf UDP_STREAM -F` for that
//!   long: frames/s received, frames/s stamped, the stamped share, frames per guest
//!   CPU-second, and the window's figures per frame received (`cost`). The stamped share
//!   follows the driver's poll rate (one stamp per poll at most), and frames per poll drift
//!   with the host's load: the counts per frame spread by tens of percent.
//!
//! Each stamp costs the driver three register reads (TSYNCRXCTL, RXSTMPL, RXSTMPH): the
//! register-read round trip bounds the stamped rate here long before the timecounter lock
//! does.

use serde_json::json;

use super::{
    cpu, netperf, num, round, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER,
};
use crate::cost::metrics::CostUnit;
use crate::params::Params;

/// Hardware time-stamp scenario.
#[derive(Debug)]
pub struct Hwstamp;

/// HWTSTAMP_FILTER_PTP_V2_EVENT (include/uapi/linux/net_tstamp.h).
pub const FILTER_PTP_V2_EVENT: u32 = 12;

/// omni output selectors of both runs (`-k`).
const SELECTORS: &str =
    "THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS";

/// A 44-byte PTP v2 Sync header (messageType 0, versionPTP 2, messageLength 44) as printf
/// octal escapes.
fn sync_header() -> String {
    let mut b = [0u8; 44];
    b[1] = 2;
    b[3] = 44;
    b.iter().map(|x| format!("\\{x:03o}")).collect()
}

/// Seconds the fixed-count run may take: 10 ms a transaction (a fraction of the slowest
/// seen under TCG, as netperf's fixed counts), plus 40; 0 when it does not run.
fn count_limit(count: u64) -> u64 {
    if count == 0 {
        0
    } else {
        count / 100 + 40
    }
}

/// The run's frame count and flood seconds.
fn lengths(p: &Params) -> (u64, u64) {
    (
        p.num("hwstamp.count").max(0.0) as u64,
        p.num("hwstamp.duration").max(0.0) as u64,
    )
}

impl Scenario for Hwstamp {
    fn name(&self) -> &'static str {
        "hwstamp"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn needs_host(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        let (n, d) = lengths(p);
        let flood = if d > 0 { d + 40 } else { 0 };
        (count_limit(n) + flood).max(40)
    }

    fn script(&self, p: &Params) -> String {
        let (n, d) = lengths(p);
        let mut s = format!(
            "{NEED_IFACE}{NEED_PEER}\
             nicemu_out hwctl /usr/sbin/hwstamp_ctl -i \"$IFACE\" -t 0 -r {FILTER_PTP_V2_EVENT}\n\
             : > /tmp/ptp.bin; i=0; while [ $i -lt 64 ]; do printf '{hdr}' >> /tmp/ptp.bin; i=$((i+1)); done\n\
             /usr/bin/netserver -4 -p 12866 >/dev/null 2>&1\n",
            hdr = sync_header(),
        );
        if n > 0 {
            s.push_str(netperf::IRQS_TO);
            // netperf, in the peer namespace, on CPU 1; netserver's data process on CPU 0.
            s.push_str(&netperf::pin_irqs("HW_BIND", "1,0"));
            s.push_str(&format!(
                "nicemu_host rr_tr_on ctl trace DUT on --filter RXSTMPH --file stamps-rr.log\n\
                 {}nicemu_window_begin stamp\n\
                 nicemu_out rr timeout {} /usr/bin/ip netns exec peer /usr/bin/netperf -H $DUT_IP -p 12866 \
                 $HW_BIND -t UDP_RR -l -{n} -P 0 -F /tmp/ptp.bin -- -r 44,1 -P ,319 -k {SELECTORS}\n\
                 nicemu_window_end\n{}\
                 nicemu_host rr_tr_off ctl trace DUT off\n\
                 nicemu_host rr_cnt regcount stamps-rr.log\n",
                cpu::snapshot("s0"),
                count_limit(n),
                cpu::snapshot("s1"),
            ));
        }
        if d > 0 {
            s.push_str(&format!(
                "nicemu_host tr_on ctl trace DUT on --filter RXSTMPH --file stamps.log\n\
                 {}nicemu_window_begin flood\n\
                 nicemu_out np timeout {} /usr/bin/ip netns exec peer /usr/bin/netperf -H $DUT_IP -p 12866 \
                 -t UDP_STREAM -l {d} -P 0 -F /tmp/ptp.bin -- -m 44 -P ,319 -k {SELECTORS}\n\
                 nicemu_window_end\n{}\
                 nicemu_host tr_off ctl trace DUT off\n\
                 nicemu_host cnt regcount stamps.log\n",
                cpu::snapshot("c0"),
                d + 40,
                cpu::snapshot("c1"),
            ));
        }
        s.push_str(
            "nicemu_out ethS sh -c \"/usr/sbin/ethtool -S $IFACE | grep -i tstamp\"\n\
             /usr/sbin/hwstamp_ctl -i \"$IFACE\" -t 0 -r 0 >/dev/null 2>&1\ntrue",
        );
        s
    }

    fn parse(&self, s: &Section, t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let hw: Vec<&str> = s.lines("hwctl").collect();
        let want = format!("rx_filter {FILTER_PTP_V2_EVENT}");
        if !hw
            .iter()
            .any(|l| l.contains("new settings") || l.contains(&want))
            || s.get("hwctl_rc") != Some("0")
        {
            r.set_skip(format!(
                "hwstamp_ctl could not enable PTP v2 event stamping: {}",
                hw.join(" | ")
            ));
            return r;
        }
        let ran =
            |tag: &str| s.get(&format!("{tag}_rc")).is_some() || s.lines(tag).next().is_some();
        let (stamp, flood) = (ran("rr"), ran("np"));
        if !r.check("a fixed count or a flood ran", stamp || flood, || {
            "nothing measured: hwstamp.count and hwstamp.duration are both 0".into()
        }) {
            return r;
        }
        let mut summary = Vec::new();
        if stamp {
            summary.extend(parse_stamp(s, t, &mut r));
        }
        if flood {
            summary.extend(parse_flood(s, t, &mut r));
        }
        if !summary.is_empty() {
            r.summary = Some(summary.join("; "));
        }
        r
    }

    /// The fixed-count window `stamp`, per stamped frame (RXSTMPH reads, or transactions
    /// when nicemu's trace is not there): `stamp.cost`; the flood's window `flood`, per
    /// frame the device under test received (the stamped ones' path is
    /// `fn.igb:igb_ptp_rx_rgtstamp`: per call = per stamped frame): `cost`.
    fn cost_unit(&self, window: &str, r: &ScenarioResult) -> Option<CostUnit> {
        match window {
            "stamp" => {
                let m = r.metrics.get("stamp")?;
                let units = (m.get("stamped").or_else(|| m.get("transactions")))?.as_f64()?;
                (units > 0.0).then(|| CostUnit {
                    path: vec!["stamp".into()],
                    units,
                    unit: "stamped frame",
                })
            }
            "flood" => {
                let frames = r.metrics.get("rx_frames")?.as_f64()?;
                (frames > 0.0).then(|| CostUnit {
                    path: Vec::new(),
                    units: frames,
                    unit: "frame",
                })
            }
            _ => None,
        }
    }
}

/// RXSTMPH reads nicemu's `regcount` host action `tag` counted, if it ran.
fn stamped(s: &Section, tag: &str) -> Option<f64> {
    s.lines(&format!("host_{tag}"))
        .find_map(|l| l.strip_prefix("reads="))
        .and_then(num)
}

/// The fixed-count run into `r.metrics["stamp"]`; returns its summary.
fn parse_stamp(s: &Section, t: &Target, r: &mut ScenarioResult) -> Option<String> {
    let kv = netperf::parse_keyval(&s.lines("rr").collect::<Vec<_>>());
    let get = |k: &str| kv.get(k).and_then(|v| num(v)).unwrap_or(0.0);
    let (secs, recv) = (get("ELAPSED_TIME"), get("REMOTE_RECV_CALLS"));
    if !r.check(
        "PTP event frames exchanged one at a time",
        secs > 0.0 && recv > 0.0,
        || {
            format!(
                "the fixed count of PTP event frames got no answer (netperf UDP_RR {})",
                super::describe_rc(s.get("rr_rc"))
            )
        },
    ) {
        return None;
    }
    let mut m = serde_json::Map::new();
    m.insert("transactions".into(), json!(recv));
    m.insert("trans_per_s".into(), json!(round(recv / secs, 1)));
    if let Some((busy, _)) = cpu::deltas(s, "s0", "s1", secs).filter(|(b, _)| *b > 0.0) {
        m.insert("busy_cpu_s".into(), json!(busy));
        m.insert("trans_per_cpu_s".into(), json!(round(recv / busy, 1)));
    }
    let n = stamped(s, "rr_cnt");
    if let Some(n) = n {
        m.insert("stamped".into(), json!(n));
        m.insert("stamped_pct".into(), json!(round(n * 100.0 / recv, 2)));
    }
    r.metric("stamp", serde_json::Value::Object(m));
    match n {
        Some(n) => {
            if t.host_actions {
                r.check(
                    "every frame sent one at a time was stamped",
                    n == recv,
                    || {
                        format!(
                            "{recv} PTP event frames received one at a time, {n} RXSTMPH reads: \
                         the driver did not read one stamp per frame"
                        )
                    },
                );
            }
            Some(format!(
                "{recv:.0} PTP frames one at a time, {n:.0} stamped, {:.0}/s",
                recv / secs
            ))
        }
        None => Some(format!(
            "{recv:.0} PTP frames one at a time, {:.0}/s (stamps not counted)",
            recv / secs
        )),
    }
}

/// The flood's rates into `r`; returns its summary.
fn parse_flood(s: &Section, t: &Target, r: &mut ScenarioResult) -> Option<String> {
    let kv = netperf::parse_keyval(&s.lines("np").collect::<Vec<_>>());
    let secs = kv.get("ELAPSED_TIME").and_then(|v| num(v)).unwrap_or(0.0);
    let recv = kv
        .get("REMOTE_RECV_CALLS")
        .and_then(|v| num(v))
        .unwrap_or(0.0);
    if !r.check("PTP event flood received", secs > 0.0 && recv > 0.0, || {
        format!(
            "the PTP event flood received nothing (netperf {})",
            super::describe_rc(s.get("np_rc"))
        )
    }) {
        return None;
    }
    let rx = recv / secs;
    r.metric("rx_frames", json!(recv));
    r.metric("rx_pps", json!(round(rx, 1)));
    if let Some((busy, _)) = cpu::deltas(s, "c0", "c1", secs).filter(|(b, _)| *b > 0.0) {
        r.metric("busy_cpu_s", json!(busy));
        r.metric("rx_per_cpu_s", json!(round(recv / busy, 1)));
    }
    match stamped(s, "cnt") {
        Some(n) => {
            r.metric("stamped_per_s", json!(round(n / secs, 1)));
            r.metric("stamped_pct", json!(round(n * 100.0 / recv, 2)));
            if t.host_actions {
                r.check("driver read RXSTMPH", n > 0.0, || {
                    "time stamping is on but the driver read no RXSTMPH".into()
                });
            }
            Some(format!(
                "flood {rx:.0} frames/s received, {:.0}/s stamped",
                n / secs
            ))
        }
        None => Some(format!(
            "flood {rx:.0} frames/s received (stamps not counted)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Console, Status};

    fn target() -> Target {
        Target::for_test("igb", Some("y"))
    }

    #[test]
    fn rates_and_stamped_share() {
        let c = Console::parse(
            "@@NICEMU-BEGIN hwstamp\n@@NICEMU hwstamp iface=eth0\n\
             @@NICEMU-OUT hwstamp hwctl current settings:\n\
             @@NICEMU-OUT hwstamp hwctl new settings:\n\
             @@NICEMU-OUT hwstamp hwctl tx_type 0\n\
             @@NICEMU-OUT hwstamp hwctl rx_filter 12\n@@NICEMU hwstamp hwctl_rc=0\n\
             @@NICEMU-OUT hwstamp c0_stat cpu  100 0 100 1000 0 0 0 0\n\
             @@NICEMU-OUT hwstamp np ELAPSED_TIME=10.00\n\
             @@NICEMU-OUT hwstamp np REMOTE_RECV_CALLS=50000\n\
             @@NICEMU-OUT hwstamp c1_stat cpu  300 0 300 1500 0 0 0 0\n\
             @@NICEMU-OUT hwstamp host_cnt reads=20000\n@@NICEMU-OUT hwstamp host_cnt secs=9.9\n\
             @@NICEMU hwstamp host_cnt_rc=0\n@@NICEMU-DONE hwstamp rc=0\n",
        );
        let r = Hwstamp.parse(&c.sections["hwstamp"], &target());
        assert_eq!(r.status, Status::Pass, "{r:?}");
        assert_eq!(r.metrics["rx_pps"], json!(5000.0));
        assert_eq!(r.metrics["stamped_per_s"], json!(2000.0));
        assert_eq!(r.metrics["stamped_pct"], json!(40.0));
        assert_eq!(r.metrics["rx_per_cpu_s"], json!(12500.0)); // 400 ticks = 4 CPU-s
    }

    const HWCTL: &str = "@@NICEMU-BEGIN hwstamp\n@@NICEMU hwstamp iface=eth0\n\
         @@NICEMU-OUT hwstamp hwctl new settings:\n\
         @@NICEMU-OUT hwstamp hwctl rx_filter 12\n@@NICEMU hwstamp hwctl_rc=0\n";

    fn fixed_count(stamped: u32) -> ScenarioResult {
        let c = Console::parse(&format!(
            "{HWCTL}@@NICEMU hwstamp pinned=1\n\
             @@NICEMU-OUT hwstamp s0_stat cpu  100 0 100 1000 0 0 0 0\n\
             @@NICEMU-OUT hwstamp rr THROUGHPUT=250.00\n\
             @@NICEMU-OUT hwstamp rr ELAPSED_TIME=8.00\n\
             @@NICEMU-OUT hwstamp rr LOCAL_SEND_CALLS=2000\n\
             @@NICEMU-OUT hwstamp rr REMOTE_RECV_CALLS=2000\n@@NICEMU hwstamp rr_rc=0\n\
             @@NICEMU-OUT hwstamp s1_stat cpu  300 0 300 1500 0 0 0 0\n\
             @@NICEMU-OUT hwstamp host_rr_cnt reads={stamped}\n\
             @@NICEMU hwstamp host_rr_cnt_rc=0\n@@NICEMU-DONE hwstamp rc=0\n"
        ));
        Hwstamp.parse(&c.sections["hwstamp"], &target())
    }

    #[test]
    fn a_fixed_count_is_measured_per_stamped_frame() {
        let r = fixed_count(2000);
        assert_eq!(r.status, Status::Pass, "{r:?}");
        let m = &r.metrics["stamp"];
        assert_eq!(m["transactions"], json!(2000.0));
        assert_eq!(m["stamped"], json!(2000.0));
        assert_eq!(m["stamped_pct"], json!(100.0));
        assert_eq!(m["trans_per_s"], json!(250.0));
        assert_eq!(m["trans_per_cpu_s"], json!(500.0)); // 400 ticks = 4 CPU-s
        assert!(!r.metrics.contains_key("rx_pps"), "no flood ran");
        let u = Hwstamp.cost_unit("stamp", &r).unwrap();
        assert_eq!(
            (u.path, u.units, u.unit),
            (vec!["stamp".to_owned()], 2000.0, "stamped frame")
        );
        assert!(Hwstamp.cost_unit("flood", &r).is_none());
        assert!(r.summary.unwrap().contains("2000 stamped"));
    }

    #[test]
    fn a_frame_of_the_fixed_count_left_unstamped_fails() {
        let r = fixed_count(1990);
        assert_eq!(r.status, Status::Fail, "{r:?}");
        assert!(r
            .reason
            .unwrap()
            .contains("2000 PTP event frames received one at a time, 1990"));
        // The units stay what was stamped.
        assert_eq!(
            Hwstamp
                .cost_unit("stamp", &fixed_count(1990))
                .unwrap()
                .units,
            1990.0
        );
    }

    #[test]
    fn the_count_and_the_flood_run_as_asked() {
        let mut p = Params::default();
        let s = Hwstamp.script(&p);
        assert!(
            s.contains("-t UDP_RR -l -1000 -P 0 -F /tmp/ptp.bin -- -r 44,1 -P ,319"),
            "{s}"
        );
        assert!(
            s.contains("$HW_BIND") && s.contains("HW_BIND=\"-T 1,0\""),
            "{s}"
        );
        assert!(
            s.contains("nicemu_window_begin stamp") && !s.contains("flood"),
            "{s}"
        );
        assert_eq!(Hwstamp.budget_secs(&p), 50);
        p.set("hwstamp.duration", "3").unwrap();
        p.set("hwstamp.count", "0").unwrap();
        let s = Hwstamp.script(&p);
        assert!(
            s.contains("-t UDP_STREAM -l 3 ") && s.contains("nicemu_window_begin flood"),
            "{s}"
        );
        assert!(!s.contains("UDP_RR"), "{s}");
        assert_eq!(Hwstamp.budget_secs(&p), 43);
        p.set("hwstamp.count", "5000").unwrap();
        let s = Hwstamp.script(&p);
        assert!(
            s.find("UDP_RR").unwrap() < s.find("UDP_STREAM").unwrap(),
            "count first"
        );
        assert_eq!(Hwstamp.budget_secs(&p), 90 + 43);
        // Neither: the result says nothing was measured.
        let c = Console::parse(&format!("{HWCTL}@@NICEMU-DONE hwstamp rc=0\n"));
        let r = Hwstamp.parse(&c.sections["hwstamp"], &target());
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("both 0"));
    }

    #[test]
    fn header_is_44_octal_escapes_of_a_v2_sync() {
        let h = sync_header();
        assert_eq!(h.matches('\\').count(), 44);
        assert!(h.starts_with("\\000\\002\\000\\054"));
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf '{h}' | od -An -tu1 | tr -s ' ' | head -1"))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).starts_with(" 0 2 0 44 0"));
    }
}
