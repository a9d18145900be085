// SPDX-License-Identifier: Apache-2.0
//! `hostile`: a hostile guest (issue 14). The guest unbinds the driver from the device under
//! test and drives its BAR0 itself through `/dev/mem` (busybox `devmem`) for
//! `hostile.secs` seconds: random values in the queue 0 ring, interrupt and control
//! registers, rings outside guest RAM (high dwords of 64 GiB and up), rings at the BAR's
//! own MMIO addresses, head write-back anywhere, and bus mastering switched off and on under
//! doorbells. Meanwhile the peer port pings the unbound device (frames out of the peer,
//! through nicemu). nicemu must keep serving the peer — its frames leave, its registers
//! answer — and the DUT's guest error counters (`nicemu ctl stats DUT`) must say what
//! happened (`dma_errors`, `ring_errors`, `dma_blocked`).
//!
//! Only nicemu's igb runs it (it needs host actions, and the register program is the
//! 82576's queue 0 layout). It leaves the device unbound, so run it last (it is last in
//! [`super::NAMES`]). Guest memory is never a DMA target: every ring base's high dword is
//! written (≥ 16, i.e. ≥ 64 GiB, far above the VM's RAM) before its low dword, or the ring
//! sits at the BAR's MMIO address; device resets (CTRL.RST, which would zero the high
//! dwords) are masked out of the random CTRL values.

use std::collections::BTreeMap;

use serde_json::json;

use super::{Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// Hostile guest scenario.
#[derive(Debug)]
pub struct Hostile;

/// The guest's error counters this scenario expects to grow (at least one of them).
pub const ERROR_COUNTERS: &[&str] = &["dma_errors", "ring_errors", "dma_blocked"];

const SCRIPT: &str = r#"DEV=$(readlink -f /sys/class/net/$IFACE/device)
BDF=${DEV##*/}
nicemu_kv bdf "$BDF"
nicemu_host e0 ctl --json stats DUT
nicemu_host p0 ctl --json stats PEER
PTX0=$(nicemu_peer cat /sys/class/net/$PEER_IFACE/statistics/tx_packets)
echo "$BDF" > "$DEV/driver/unbind"
nicemu_kv unbind_rc $?
BAR0=$(( $(head -n 1 "$DEV/resource" | cut -d' ' -f1) ))
nicemu_kv bar0 "$(printf '%#x' $BAR0)"
echo 1 > "$DEV/enable" 2>/dev/null
# PCI COMMAND (offset 4): memory space, bus master on/off.
nicemu_command() { printf "$1" | dd of="$DEV/config" bs=1 seek=4 count=2 conv=notrunc 2>/dev/null; }
nicemu_command '\006\000'
nicemu_kv bme_rc $?
w() { /bin/busybox devmem $((BAR0 + $1)) 32 $(( $2 & 0xffffffff )); }
r32() { echo $(( (RANDOM << 17) ^ (RANDOM << 2) ^ RANDOM )); }
hi() { case $((RANDOM % 3)) in 0) echo 4294967295;; *) echo $((16 + RANDOM));; esac; }
nicemu_peer /usr/bin/ping -i 0.5 -W 1 -w $SECS $DUT_IP >/dev/null 2>&1 &
PING=$!
end=$(( $(cut -d. -f1 /proc/uptime) + SECS ))
steps=0; fails=0
while :; do
    now=$(cut -d. -f1 /proc/uptime)
    [ "$now" -ge "$end" ] && break
    case $((RANDOM % 6)) in
    0)  w 0x3804 $(hi); w 0x3800 $(r32); w 0x3808 $(r32); w 0x3828 $(( $(r32) | 1 << 25 ))
        w 0x0400 $(( $(r32) | 2 )); w 0x3818 $(( $(r32) & 0xffff )) ;;
    1)  w 0x2804 $(hi); w 0x2800 $(r32); w 0x2808 $(r32); w 0x280c $(r32)
        w 0x2828 $(( $(r32) | 1 << 25 )); w 0x0100 $(( $(r32) | 2 )); w 0x2818 $(( $(r32) & 0xffff )) ;;
    2)  w 0x3804 0; w 0x3800 $BAR0; w 0x2804 0; w 0x2800 $((BAR0 + 4096))
        w 0x3818 $(( $(r32) & 0xffff )); w 0x2818 $(( $(r32) & 0xffff )) ;;
    3)  w 0x383c $(hi); w 0x3838 $(( $(r32) | 1 )); w 0x3818 $(( $(r32) & 0xffff )) ;;
    4)  w 0x1514 $(r32); w 0x1524 $(r32); w 0x1508 $(r32); w 0x0000 $(( $(r32) & ~0x84000000 )) ;;
    *)  nicemu_command '\002\000'; w 0x3818 $(( $(r32) & 0xffff )); nicemu_command '\006\000' ;;
    esac || fails=$((fails + 1))
    steps=$((steps + 1))
done
nicemu_kv steps $steps
nicemu_kv step_failures $fails
wait $PING 2>/dev/null
nicemu_host e1 ctl --json stats DUT
nicemu_host p1 ctl --json stats PEER
PTX1=$(nicemu_peer cat /sys/class/net/$PEER_IFACE/statistics/tx_packets)
nicemu_kv peer_tx $((PTX1 - PTX0))
nicemu_kv peer_carrier "$(nicemu_peer cat /sys/class/net/$PEER_IFACE/carrier)"
nicemu_peer /usr/sbin/ethtool -S "$PEER_IFACE" >/dev/null 2>&1
nicemu_kv peer_ethtool_rc $?
"#;

impl Scenario for Hostile {
    fn name(&self) -> &'static str {
        "hostile"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn needs_host(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        p.num("hostile.secs") as u64 + 90
    }

    fn script(&self, p: &Params) -> String {
        format!(
            "{NEED_IFACE}{NEED_PEER}SECS={}\nnicemu_kv t_secs $SECS\n{SCRIPT}",
            p.num("hostile.secs") as u64
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        for (key, want, name) in [
            ("unbind_rc", "0", "DUT unbound"),
            ("bme_rc", "0", "bus mastering enabled"),
            ("peer_carrier", "1", "peer carrier up"),
        ] {
            r.check(name, s.get(key) == Some(want), || {
                format!("{key} is {:?}, expected {want}", s.get(key))
            });
        }
        r.check(
            "peer registers answer",
            s.get("peer_ethtool_rc") == Some("0"),
            || "the peer's registers did not answer (ethtool -S)".into(),
        );
        let steps = num(s, "steps");
        r.metric("steps", json!(steps));
        r.check("hostile steps ran", steps >= 20, || {
            format!("only {steps} hostile steps ran")
        });
        check_errors(s, &mut r);
        check_peer(s, &mut r);
        r.summary = Some(format!(
            "{steps} hostile steps; dma_errors +{} ring_errors +{} dma_blocked +{}; peer sent {}",
            r.metrics.get("dma_errors").unwrap_or(&json!(0)),
            r.metrics.get("ring_errors").unwrap_or(&json!(0)),
            r.metrics.get("dma_blocked").unwrap_or(&json!(0)),
            r.metrics.get("peer_tx").unwrap_or(&json!(0)),
        ));
        r
    }
}

fn num(s: &Section, key: &str) -> u64 {
    s.get(key).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The DUT's guest error counters grew over the hostile steps.
fn check_errors(s: &Section, r: &mut ScenarioResult) {
    let (Some(before), Some(after)) = (ctl_errors(s, "e0"), ctl_errors(s, "e1")) else {
        r.check_failed(
            "DUT error counters grew",
            "nicemu ctl stats DUT did not answer before and after",
        );
        return;
    };
    let mut grew = 0;
    for name in ERROR_COUNTERS {
        let d = after
            .get(*name)
            .copied()
            .unwrap_or(0)
            .saturating_sub(before.get(*name).copied().unwrap_or(0));
        r.metric(name, json!(d));
        grew += d;
    }
    r.check("DUT error counters grew", grew > 0, || {
        "no guest error counter of the DUT grew: nicemu did not see the abuse".into()
    });
}

/// The peer kept being served: its frames left through nicemu during the abuse (the guest's
/// count and nicemu's switch count agree it sent at least one frame per two seconds).
fn check_peer(s: &Section, r: &mut ScenarioResult) {
    let secs = num(s, "t_secs").max(1);
    let sent = num(s, "peer_tx");
    r.metric("peer_tx", json!(sent));
    let switch = match (switch_tx(s, "p0"), switch_tx(s, "p1")) {
        (Some(a), Some(b)) => b.saturating_sub(a),
        _ => {
            r.check_failed(
                "peer served",
                "nicemu ctl stats PEER did not answer before and after",
            );
            return;
        }
    };
    r.metric("peer_switch_tx", json!(switch));
    r.check("peer served", !(sent < secs / 2 || switch < sent), || {
        format!("the peer sent {sent} frames ({switch} through nicemu's switch) in {secs} s")
    });
}

/// `guest_errors` of a `nicemu ctl --json stats` the harness ran for `tag`.
fn ctl_errors(s: &Section, tag: &str) -> Option<BTreeMap<String, u64>> {
    let v = ctl_json(s, tag)?;
    let list = v.get("data")?.get("guest_errors")?.as_array()?;
    Some(
        list.iter()
            .filter_map(|kv| Some((kv.get(0)?.as_str()?.to_owned(), kv.get(1)?.as_u64()?)))
            .collect(),
    )
}

/// The switch port's `tx_frames` of a `nicemu ctl --json stats` for `tag`.
fn switch_tx(s: &Section, tag: &str) -> Option<u64> {
    ctl_json(s, tag)?
        .get("data")?
        .get("switch")?
        .get("tx_frames")?
        .as_u64()
}

fn ctl_json(s: &Section, tag: &str) -> Option<serde_json::Value> {
    if s.get(&format!("host_{tag}_rc")) != Some("0") {
        return None;
    }
    let text = s
        .lines(&format!("host_{tag}"))
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str(&text).ok()
}
