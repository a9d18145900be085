// SPDX-License-Identifier: Apache-2.0
//! `hwstamp`: receive rate with hardware receive time stamps on (seed 001 asked of igb).
//! The device under test gets `hwstamp_ctl -r 12` (HWTSTAMP_FILTER_PTP_V2_EVENT: the 82576
//! stamps only PTP event frames, one at a time — RXSTMPL/H stay latched until the driver
//! reads them, datasheet §7.9.2.3); the peer floods it with PTP v2 Sync headers to UDP
//! port 319 (`netperf UDP_STREAM -F` with a file of headers, `-- -P ,319`, for
//! `hwstamp.duration` s) to a netserver on the device under test. Reported: frames/s
//! received, frames/s stamped (nicemu counts the driver's RXSTMPH reads in its register
//! trace), the stamped share, and frames per guest CPU-second. Each stamp costs the driver
//! register reads (TSYNCRXCTL, RXSTMPL, RXSTMPH): the register-read round trip bounds the
//! stamped rate here long before the timecounter lock does.

use serde_json::json;

use super::{
    cpu, netperf, num, round, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER,
};
use crate::cost::metrics::CostUnit;
use crate::params::Params;

/// Hardware time-stamp flood scenario.
#[derive(Debug)]
pub struct Hwstamp;

/// HWTSTAMP_FILTER_PTP_V2_EVENT (include/uapi/linux/net_tstamp.h).
pub const FILTER_PTP_V2_EVENT: u32 = 12;

/// A 44-byte PTP v2 Sync header (messageType 0, versionPTP 2, messageLength 44) as printf
/// octal escapes.
fn sync_header() -> String {
    let mut b = [0u8; 44];
    b[1] = 2;
    b[3] = 44;
    b.iter().map(|x| format!("\\{x:03o}")).collect()
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
        p.num("hwstamp.duration") as u64 + 40
    }

    fn script(&self, p: &Params) -> String {
        let d = p.num("hwstamp.duration").max(1.0) as u64;
        format!(
            "{NEED_IFACE}{NEED_PEER}\
             nicemu_out hwctl /usr/sbin/hwstamp_ctl -i \"$IFACE\" -t 0 -r {FILTER_PTP_V2_EVENT}\n\
             : > /tmp/ptp.bin; i=0; while [ $i -lt 64 ]; do printf '{hdr}' >> /tmp/ptp.bin; i=$((i+1)); done\n\
             /usr/bin/netserver -4 -p 12866 >/dev/null 2>&1\n\
             nicemu_host tr_on ctl trace DUT on --filter RXSTMPH --file stamps.log\n\
             {}nicemu_window_begin flood\n\
             nicemu_out np timeout {} /usr/bin/ip netns exec peer /usr/bin/netperf -H $DUT_IP -p 12866 \
             -t UDP_STREAM -l {d} -P 0 -F /tmp/ptp.bin -- -m 44 -P ,319 \
             -k THROUGHPUT,THROUGHPUT_UNITS,ELAPSED_TIME,LOCAL_SEND_CALLS,REMOTE_RECV_CALLS\n\
             nicemu_window_end\n{}\
             nicemu_host tr_off ctl trace DUT off\n\
             nicemu_host cnt regcount stamps.log\n\
             nicemu_out ethS sh -c \"/usr/sbin/ethtool -S $IFACE | grep -i tstamp\"\n\
             /usr/sbin/hwstamp_ctl -i \"$IFACE\" -t 0 -r 0 >/dev/null 2>&1\ntrue",
            cpu::snapshot("c0"),
            d + 40,
            cpu::snapshot("c1"),
            hdr = sync_header(),
        )
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
            return r;
        }
        let rx = recv / secs;
        r.metric("rx_frames", json!(recv));
        r.metric("rx_pps", json!(round(rx, 1)));
        if let Some((busy, _)) = cpu::deltas(s, "c0", "c1", secs).filter(|(b, _)| *b > 0.0) {
            r.metric("busy_cpu_s", json!(busy));
            r.metric("rx_per_cpu_s", json!(round(recv / busy, 1)));
        }
        let stamped = s
            .lines("host_cnt")
            .find_map(|l| l.strip_prefix("reads="))
            .and_then(num);
        match stamped {
            Some(n) => {
                r.metric("stamped_per_s", json!(round(n / secs, 1)));
                r.metric("stamped_pct", json!(round(n * 100.0 / recv, 2)));
                r.summary = Some(format!(
                    "{:.0} frames/s received, {:.0}/s stamped",
                    rx,
                    n / secs
                ));
                if t.host_actions {
                    r.check("driver read RXSTMPH", n > 0.0, || {
                        "time stamping is on but the driver read no RXSTMPH".into()
                    });
                }
            }
            None => r.summary = Some(format!("{rx:.0} frames/s received (stamps not counted)")),
        }
        r
    }

    /// The flood's window: per frame the device under test received (the stamped ones'
    /// path is `fn.igb:igb_ptp_rx_rgtstamp`: per call = per stamped frame).
    fn cost_unit(&self, window: &str, r: &ScenarioResult) -> Option<CostUnit> {
        let frames = r.metrics.get("rx_frames")?.as_f64()?;
        (window == "flood" && frames > 0.0).then(|| CostUnit {
            path: Vec::new(),
            units: frames,
            unit: "frame",
        })
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
