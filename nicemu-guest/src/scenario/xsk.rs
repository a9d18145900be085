// SPDX-License-Identifier: Apache-2.0
//! `xsk`: AF_XDP on the device under test with `nicemu-xsk` (built in the sid root against
//! libxdp's xsk API, `provision::xsk`): one socket on queue 0 (`ethtool -L combined 1` for
//! the run, so every flow lands there) in copy mode and in zero-copy mode (ixgbe_xsk.c,
//! igb_xsk.c), for `rx_drop` and `l2fwd` while the peer floods the port with 18-byte UDP
//! datagrams (`netperf UDP_STREAM`, as the `xdp` scenario), and `tx_only` (64-byte frames
//! to the peer). Reports packets/s per mode: the median of the intervals from the first
//! with traffic on (binding the socket resets the port in copy mode: the XDP program's
//! attach). PASS when every mode moved packets: rx_drop received, tx_only sent, l2fwd
//! received and sent back.

use serde_json::json;

use super::xdp::steady_median;
use super::{Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// The AF_XDP benchmark scenario.
#[derive(Debug)]
pub struct Xsk;

/// Modes and bind flags run, in order.
const RUNS: &[(&str, &str)] = &[
    ("rx_drop", "copy"),
    ("rx_drop", "zc"),
    ("tx_only", "copy"),
    ("tx_only", "zc"),
    ("l2fwd", "copy"),
    ("l2fwd", "zc"),
];

const SCRIPT: &str = r#"if [ ! -x "$XSK" ]; then nicemu_kv tools missing; exit 0; fi
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
/usr/bin/netserver >/dev/null 2>&1
C0=$(/usr/sbin/ethtool -l "$IFACE" | sed -n 's/^Combined:[[:space:]]*//p' | tail -n 1)
/usr/sbin/ethtool -L "$IFACE" combined 1
nicemu_carrier "$IFACE" 150
# Datagrams the DUT's UDP layer received (/proc/net/snmp, InDatagrams).
udp_in() { awk '/^Udp:/ { n++; if (n == 2) print $2 }' /proc/net/snmp; }
for r in $XSK_RUNS; do
    mode=${r%%:*}; bind=${r#*:}
    if [ "$mode" = tx_only ]; then
        nicemu_out "${mode}_$bind" timeout $((XSK_SECS + 15)) "$XSK" "$IFACE" 0 "$mode" "$bind" \
            $((XSK_SECS + 3)) "$PEER_MAC" "$MAC"
    else
        # Both ends up and answering before the flood starts: its control connection is TCP,
        # and a SYN lost while the peer's port still renegotiates after the reset waits 1 s
        # or more for its retransmission (a run saw netperf never start its flood).
        n=0
        until [ "$(nicemu_peer cat /sys/class/net/$PEER_IFACE/carrier 2>/dev/null)" = 1 ] ||
            [ $n -ge 150 ]; do sleep 0.1; n=$((n+1)); done
        n=0
        until /usr/bin/ping -q -c 1 -W 1 "$PEER_IP" >/dev/null || [ $n -ge 10 ]; do n=$((n+1)); done
        u0=$(udp_in)
        nicemu_peer timeout $((XSK_SECS + 26)) netperf -H "$DUT_IP" -t UDP_STREAM \
            -l $((XSK_SECS + 16)) -- -m 18 >/tmp/xskgen 2>&1 &
        gen=$!
        # The socket binds once the flood runs: its program takes every frame of the queue,
        # netperf's control connection too, and a netperf still setting up (TCG, loaded
        # host) never started (a run saw rx 1/s: the control connection's retransmissions).
        n=0
        while [ "$(udp_in)" = "$u0" ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
        sleep 1
        nicemu_out "${mode}_$bind" timeout $((XSK_SECS + 15)) "$XSK" "$IFACE" 0 "$mode" "$bind" \
            $((XSK_SECS + 3))
        wait $gen
        nicemu_out "gen_${mode}_$bind" cat /tmp/xskgen
    fi
    nicemu_carrier "$IFACE" 150
done
/usr/sbin/ethtool -L "$IFACE" combined "${C0:-1}"
true"#;

/// Per-second packet counts of one nicemu-xsk run (`xsk rx=N tx=N` lines).
#[derive(Debug, Default, PartialEq)]
pub struct XskRates {
    /// Received per interval.
    pub rx: Vec<f64>,
    /// Sent (completed) per interval.
    pub tx: Vec<f64>,
    /// The program's `xsk error: …` line, if it failed.
    pub error: Option<String>,
}

/// Parses nicemu-xsk's output.
pub fn parse_xsk(lines: &[&str]) -> XskRates {
    let mut r = XskRates::default();
    for l in lines {
        if let Some(e) = l.strip_prefix("xsk error: ") {
            r.error = Some(e.trim().to_owned());
            continue;
        }
        let Some(rest) = l.strip_prefix("xsk rx=") else {
            continue;
        };
        let mut it = rest.split(" tx=");
        if let (Some(rx), Some(tx)) = (it.next(), it.next()) {
            if let (Ok(rx), Ok(tx)) = (rx.trim().parse(), tx.trim().parse()) {
                r.rx.push(rx);
                r.tx.push(tx);
            }
        }
    }
    r
}

impl Scenario for Xsk {
    fn name(&self) -> &'static str {
        "xsk"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn script(&self, p: &Params) -> String {
        let runs: Vec<String> = RUNS.iter().map(|(m, b)| format!("{m}:{b}")).collect();
        format!(
            "{NEED_IFACE}{NEED_PEER}XSK={}\nXSK_SECS={}\nXSK_RUNS='{}'\n{SCRIPT}",
            nicemu_provision::xsk::GUEST_PATH,
            p.num("xsk.duration").max(2.0) as u64,
            runs.join(" ")
        )
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        RUNS.len() as u64 * (p.num("xsk.duration").max(2.0) as u64 + 30) + 20
    }

    fn parse(&self, s: &Section, _target: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("tools") == Some("missing") {
            r.check_failed(
                "nicemu-xsk in the image",
                "nicemu-xsk is not in the guest image (provision::xsk builds it)",
            );
            return r;
        }
        let mut summary = Vec::new();
        for (mode, bind) in RUNS {
            let key = format!("{mode}_{bind}");
            let lines: Vec<&str> = s.lines(&key).collect();
            let x = parse_xsk(&lines);
            let (rx, tx) = (steady_median(&x.rx), steady_median(&x.tx));
            r.metric(
                &key,
                json!({"rx_pps": rx, "tx_pps": tx, "intervals": x.rx.len()}),
            );
            let moved = match *mode {
                "rx_drop" => rx,
                "tx_only" => tx,
                _ => rx.zip(tx).map(|(a, b)| a.min(b)),
            };
            let check = format!("{key}: packets moved");
            match (moved, &x.error) {
                (_, Some(e)) => r.check_failed(&check, format!("{key}: {e}")),
                (Some(v), None) if v > 0.0 => {
                    r.check_passed(&check);
                    summary.push(format!("{key} {v:.0}/s"))
                }
                _ => r.check_failed(
                    &check,
                    format!("{key}: no packets moved ({} intervals)", x.rx.len()),
                ),
            }
        }
        if r.status == super::Status::Pass {
            r.summary = Some(summary.join(", "));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_second_lines_errors_and_the_verdict() {
        let x = parse_xsk(&[
            "xsk rx=0 tx=0",
            "xsk rx=1200 tx=0",
            "xsk rx=30000 tx=0",
            "xsk done rx=31200 tx=0",
        ]);
        assert_eq!(x.rx, vec![0.0, 1200.0, 30000.0]);
        assert_eq!(steady_median(&x.rx), Some(30000.0));
        let e =
            parse_xsk(&["xsk error: socket on eth0 queue 0 (zero-copy): Operation not supported"]);
        assert!(e.error.unwrap().contains("not supported"));
        let mut text = String::from("@@NICEMU-BEGIN xsk\n");
        for (m, b) in RUNS {
            let line = match *m {
                "tx_only" => "xsk rx=0 tx=5000",
                _ => "xsk rx=5000 tx=5000",
            };
            for _ in 0..3 {
                text.push_str(&format!("@@NICEMU-OUT xsk {m}_{b} {line}\n"));
            }
        }
        text.push_str("@@NICEMU-DONE xsk rc=0\n");
        let c = super::super::Console::parse(&text);
        let r = super::super::evaluate(&Xsk, &c, &Target::for_test("ixgbe", Some("y")));
        assert_eq!(r.status, super::super::Status::Pass, "{:?}", r.reason);
        let c = super::super::Console::parse(
            "@@NICEMU-BEGIN xsk\n@@NICEMU-OUT xsk rx_drop_copy xsk rx=0 tx=0\n@@NICEMU-DONE xsk rc=0\n",
        );
        let r = super::super::evaluate(&Xsk, &c, &Target::for_test("ixgbe", Some("y")));
        assert!(r.reason.unwrap().contains("rx_drop_copy: no packets moved"));
    }

    #[test]
    fn a_real_nicemu_ixgbe_capture_passes_with_its_rates() {
        const CAPTURE: &str = include_str!("../../tests/fixtures/nicemu-ixgbe-xsk.serial.log");
        let c = super::super::Console::parse(CAPTURE);
        let r = super::super::evaluate(&Xsk, &c, &Target::for_test("ixgbe", Some("y")));
        assert_eq!(r.status, super::super::Status::Pass, "{:?}", r.reason);
        assert_eq!(r.metrics["rx_drop_copy"]["rx_pps"], 14246.0);
        assert_eq!(r.metrics["tx_only_zc"]["tx_pps"], 70652.0);
        assert_eq!(r.metrics["l2fwd_zc"]["intervals"], 7);
    }
}
