// SPDX-License-Identifier: Apache-2.0
//! `xdp`: xdp-tools' `xdp-bench` in native mode on the device under test — `drop`, `pass`,
//! `tx` (XDP_TX back out of the port) and `redirect` (XDP_REDIRECT through the driver's
//! `ndo_xdp_xmit`, here into the same port) — while the peer port floods it with 18-byte UDP
//! datagrams (`netperf -t UDP_STREAM` to a netserver on the DUT, started before the
//! program attaches). Reports packets/s per mode; PASS when every mode saw traffic and
//! `redirect` transmitted it (`tx` reports its verdicts as rx/s only). (xdp-trafficgen on
//! the peer port hung in a TCG guest.)

use serde_json::json;

use super::{Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// The XDP benchmark scenario.
#[derive(Debug)]
pub struct Xdp;

/// The xdp-bench modes run, with their arguments after the mode (`$IFACE` the port;
/// commas stand for spaces).
const MODES: &[(&str, &str)] = &[
    ("drop", "$IFACE"),
    ("pass", "$IFACE"),
    ("tx", "$IFACE"),
    ("redirect", "$IFACE,$IFACE"),
];

const SCRIPT: &str = r#"if ! command -v xdp-bench >/dev/null; then nicemu_kv tools missing; exit 0; fi
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
/usr/bin/netserver >/dev/null 2>&1
nicemu_kv secs "$XDP_SECS"
for m in $XDP_MODES; do
    mode=${m%%:*}; args=$(eval echo "${m#*:}" | tr , ' ')
    # The peer floods the port with small UDP datagrams to a netserver here: the control
    # connection and the data socket are set up before the program attaches (a closed
    # port would answer ICMP unreachable and stop netperf); xdp-bench counts what its
    # program saw.
    # Attaching the program resets the port (igb_xdp_setup, ixgbe_xdp_setup): the link
    # renegotiates first, so xdp-bench runs 5 s longer than the measured time.
    nicemu_peer timeout $((XDP_SECS + 16)) netperf -H "$DUT_IP" -t UDP_STREAM \
        -l $((XDP_SECS + 9)) -- -m 18 > /tmp/xdpgen.$mode 2>&1 &
    gen=$!
    sleep 2
    nicemu_out "$mode" timeout -s INT $((XDP_SECS + 5)) xdp-bench "$mode" $args -i 1
    wait $gen
    nicemu_out "gen_$mode" cat /tmp/xdpgen.$mode
done
true"#;

/// Packets/s figures of one xdp-bench run: the `Summary` lines' `rx/s` and `xmit/s`.
#[derive(Debug, Default, PartialEq)]
pub struct BenchRates {
    /// Received (seen by the program) per second, one value per interval.
    pub rx: Vec<f64>,
    /// Transmitted (XDP_TX / redirected out) per second, where the mode reports it.
    pub xmit: Vec<f64>,
}

/// Parses xdp-bench's per-interval lines (`Summary  N rx/s  N err,drop/s`, and for
/// `redirect` `IN->OUT  N rx/s  N err,drop/s  N xmit/s`).
pub fn parse_bench(lines: &[&str]) -> BenchRates {
    let mut r = BenchRates::default();
    for l in lines {
        let words: Vec<&str> = l.split_whitespace().collect();
        if !words.contains(&"rx/s") {
            continue;
        }
        for w in words.windows(2) {
            let v = w[0].replace(',', "").parse::<f64>();
            match (v, w[1]) {
                (Ok(v), "rx/s") => r.rx.push(v),
                (Ok(v), "xmit/s") => r.xmit.push(v),
                _ => {}
            }
        }
    }
    r
}

/// The median of the intervals from the first one with traffic on (the port comes back
/// from the reset that attached the program, and the first interval is partial).
pub(crate) fn steady_median(v: &[f64]) -> Option<f64> {
    let first = v.iter().position(|&x| x > 0.0)?;
    let mut s: Vec<f64> = v[first..].to_vec();
    if s.len() > 1 {
        s.remove(0);
    }
    s.sort_by(f64::total_cmp);
    Some(s[s.len() / 2])
}

impl Scenario for Xdp {
    fn name(&self) -> &'static str {
        "xdp"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn script(&self, p: &Params) -> String {
        let modes: Vec<String> = MODES.iter().map(|(m, a)| format!("{m}:{a}")).collect();
        format!(
            "{NEED_IFACE}{NEED_PEER}XDP_SECS={}\nXDP_MODES='{}'\n{SCRIPT}",
            (p.num("xdp.duration").max(2.0)) as u64,
            modes.join(" ")
        )
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        MODES.len() as u64 * (p.num("xdp.duration").max(2.0) as u64 + 16)
    }

    fn parse(&self, s: &Section, _target: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("tools") == Some("missing") {
            r.check_failed(
                "xdp-bench in the image",
                "xdp-bench is not in the guest image (xdp-tools in the sid root)",
            );
            return r;
        }
        let mut summary = Vec::new();
        for (mode, _) in MODES {
            let lines: Vec<&str> = s.lines(mode).collect();
            let b = parse_bench(&lines);
            let rx = steady_median(&b.rx);
            let xmit = steady_median(&b.xmit);
            r.metric(
                mode,
                json!({"rx_pps": rx, "xmit_pps": xmit, "intervals": b.rx.len()}),
            );
            let seen = format!("{mode}: packets seen");
            match rx {
                Some(v) if v > 0.0 => {
                    r.check_passed(&seen);
                    summary.push(format!("{mode} {v:.0}/s"))
                }
                _ => r.check_failed(
                    &seen,
                    format!(
                        "{mode}: no packets seen ({})",
                        lines
                            .iter()
                            .rev()
                            .take(2)
                            .copied()
                            .collect::<Vec<_>>()
                            .join(" / ")
                    ),
                ),
            }
            // `tx` reports its XDP_TX verdicts as rx/s only.
            if *mode == "redirect" {
                r.check(
                    &format!("{mode}: packets transmitted"),
                    xmit.is_some_and(|v| v > 0.0),
                    || format!("{mode}: nothing transmitted"),
                );
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
    fn summary_lines_give_rx_and_xmit_rates() {
        let lines = [
            "Hairpinning (XDP_TX) packets on eth0 (ifindex 2; driver igb)",
            "Summary                      1,020 rx/s                   0 err,drop/s       1,019 xmit/s",
            "Summary                     41,302 rx/s                   0 err,drop/s      41,300 xmit/s",
            "Summary                     40,118 rx/s                   0 err,drop/s      40,101 xmit/s",
            "  Packets received    : 82,440",
        ];
        let b = parse_bench(&lines);
        assert_eq!(b.rx, vec![1020.0, 41302.0, 40118.0]);
        assert_eq!(b.xmit.len(), 3);
        assert_eq!(steady_median(&b.rx), Some(41302.0));
        assert_eq!(steady_median(&[]), None);
        assert_eq!(steady_median(&[0.0, 0.0]), None, "no traffic at all");
        // The link comes back from the attach reset a few intervals in.
        assert_eq!(
            steady_median(&[0.0, 0.0, 1455.0, 3145.0, 3000.0]),
            Some(3145.0)
        );
        let redirect = ["eth0->eth0   4936 rx/s   0 err,drop/s   4920 xmit/s"];
        assert_eq!(parse_bench(&redirect).xmit, vec![4920.0]);
    }

    fn run(text: &str) -> ScenarioResult {
        let c = super::super::Console::parse(text);
        super::super::evaluate(&Xdp, &c, &Target::for_test("igb", Some("y")))
    }

    #[test]
    fn every_mode_needs_traffic_and_tx_modes_need_transmits() {
        let mut t = String::from("@@NICEMU-BEGIN xdp\n");
        for m in ["drop", "pass", "tx", "redirect"] {
            t.push_str(&format!(
                "@@NICEMU-OUT xdp {m} Summary 10 rx/s 0 err/s\n@@NICEMU-OUT xdp {m} Summary 5,000 rx/s 0 err/s 4,999 xmit/s\n"
            ));
        }
        let ok = format!("{t}@@NICEMU-DONE xdp rc=0\n");
        let r = run(&ok);
        assert_eq!(r.status, super::super::Status::Pass, "{:?}", r.reason);
        assert_eq!(r.metrics["drop"]["rx_pps"], 5000.0);
        let idle = ok.replace("Summary 5,000 rx/s", "Summary 0 rx/s");
        assert_eq!(run(&idle).status, super::super::Status::Fail);
        let no_tx = ok.replace("4,999 xmit/s", "0 xmit/s");
        let why = run(&no_tx).reason.unwrap();
        assert!(why.contains("redirect: nothing transmitted"), "{why}");
        assert!(
            !why.contains("\ntx: nothing"),
            "tx reports its verdicts as rx/s"
        );
        assert!(
            !why.contains("drop: nothing"),
            "drop transmits nothing by design"
        );
    }
}
