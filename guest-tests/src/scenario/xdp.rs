//! `xdp`: xdp-tools' `xdp-bench` in native mode on the device under test — `drop`, `pass`,
//! `tx` (XDP_TX back out of the port) and `redirect` (XDP_REDIRECT through the driver's
//! `ndo_xdp_xmit`, here into the same port) — while the peer port floods it with 64-byte UDP
//! frames from `xdp-trafficgen` (XDP live frames). Reports packets/s per mode; PASS when
//! every mode saw traffic and `tx`/`redirect` transmitted it.

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
nicemu_kv secs "$XDP_SECS"
for m in $XDP_MODES; do
    mode=${m%%:*}; args=$(eval echo "${m#*:}" | tr , ' ')
    # The peer floods the port; xdp-bench counts what its program saw each second.
    # `ip netns exec` mounts a fresh /sys: libxdp wants its bpffs there too.
    nicemu_peer sh -c "mount -t bpf bpf /sys/fs/bpf 2>/dev/null; \
        timeout -s INT $((XDP_SECS + 3)) xdp-trafficgen udp $PEER_IFACE -m $MAC -I 1 -v; \
        echo trafficgen exit \$?" > /tmp/xdpgen.$mode 2>&1 &
    gen=$!
    sleep 1
    nicemu_out "$mode" timeout -s INT "$XDP_SECS" xdp-bench "$mode" $args -i 1
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

/// Parses xdp-bench's per-interval `Summary  N rx/s  N err,drop/s [N xmit/s]` lines.
pub fn parse_bench(lines: &[&str]) -> BenchRates {
    let mut r = BenchRates::default();
    for l in lines {
        let Some(rest) = l.trim().strip_prefix("Summary") else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
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

/// The median of `v` without its first value (the interval the flood started in), or of
/// all when there is only one.
fn steady_median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = if v.len() > 1 {
        v[1..].to_vec()
    } else {
        v.to_vec()
    };
    if s.is_empty() {
        return None;
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
        MODES.len() as u64 * (p.num("xdp.duration").max(2.0) as u64 + 8)
    }

    fn parse(&self, s: &Section, _target: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        if s.get("tools") == Some("missing") {
            r.add_failure("xdp-bench is not in the guest image (xdp-tools in the sid root)");
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
            match rx {
                Some(v) if v > 0.0 => summary.push(format!("{mode} {v:.0}/s")),
                _ => r.add_failure(format!(
                    "{mode}: no packets seen ({})",
                    lines
                        .iter()
                        .rev()
                        .take(2)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(" / ")
                )),
            }
            let transmits = matches!(*mode, "tx" | "redirect");
            if transmits && !xmit.is_some_and(|v| v > 0.0) {
                r.add_failure(format!("{mode}: nothing transmitted"));
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
        assert!(why.contains("tx: nothing transmitted"), "{why}");
        assert!(
            !why.contains("drop: nothing"),
            "drop transmits nothing by design"
        );
    }
}
