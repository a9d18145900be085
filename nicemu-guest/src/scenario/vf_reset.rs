// SPDX-License-Identifier: Apache-2.0
//! `vf-reset`: an SR-IOV VF's driver (igbvf, ixgbevf) recovers from each way a VF is reset
//! (issue 35). Cases (`vf-reset.cases`, in this order), each followed by the same checks:
//! carrier back, the peer reachable and 5 of 5 pings answered, and the driver's VF_RESET
//! message among the mailbox messages since the reset (`ctl --json mailbox DUT` before and
//! after: the driver really started over with the PF agent):
//! - `flr`: a function level reset through sysfs (`echo 1 > /sys/bus/pci/devices/…/reset`,
//!   the PCIe FLR the VF's capability offers); the drivers have no `reset_prepare`, so they
//!   find out from the mailbox's reset-done bit and reset themselves.
//! - `pf-reset`: nicemu's `fault DUT pf-reset` (the PF resets: RSTI, then reset done and a
//!   control message without clear to send).
//! - `vflr`: nicemu's `fault DUT vflr`, a function level reset from the host's side as
//!   Linux's `pci_reset_function` does it for a VF the host holds: the FLR resets the VF
//!   (clearing PCI COMMAND, bus mastering, as the hardware does) and the host restores the
//!   config header it saved; the guest's PCI core knows nothing, the driver finds the reset
//!   from the mailbox as after `flr`.
//! - `reload`: `rmmod` of the VF driver (both VFs of the guest go) and `insmod` again: the
//!   interfaces come back with the administrative MAC, the peer is put back in its namespace.
//!
//! Before nicemu restored the header after its `vflr` fault, no driver recovered from it
//! (the VF drivers' own reset does not set bus mastering again): igbvf re-did VF_RESET and
//! reported link up, but no frame moved.

use serde_json::json;

use super::cases::{self, host_ok};
use super::vf_admin::ctl_data;
use super::{ping, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// The VF reset scenario.
#[derive(Debug)]
pub struct VfReset;

/// All cases, in run order.
pub const CASES: &[&str] = &["flr", "pf-reset", "vflr", "reload"];

/// Seconds a case waits for the carrier after the reset (igbvf resets itself at most every
/// 10 s, from its 2 s watchdog).
const RECOVER_SECS: u64 = 30;

const SCRIPT: &str = r#"# nicemu_recover TAG M: carrier, reachability, pings and what the kernel logged since line M.
nicemu_recover() {
    local t0=$(nicemu_uptime)
    sleep 0.5
    nicemu_carrier "$IFACE" RECOVER_TENTHS
    nicemu_kv ${1}_carrier "$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)"
    nicemu_reach RECOVER_SECS ${1}_reach_tries
    nicemu_kv ${1}_t0 "$t0"
    nicemu_kv ${1}_t1 "$(nicemu_uptime)"
    nicemu_out ${1}_ping timeout 30 /usr/bin/ping -q -c 5 -i 0.2 -W 2 $PEER_IP
    nicemu_out ${1}_log sh -c "dmesg | tail -n +$(($2 + 1)) | grep -iE 'reset|link|mailbox|mac|ixgbevf|igbvf' | tail -n 20"
    nicemu_host ${1}_m1 ctl --json mailbox DUT
}
case "$CASES" in *" flr "*)
    nicemu_kv case_flr 1
    m=$(dmesg | wc -l)
    nicemu_host flr_m0 ctl --json mailbox DUT
    dev=$(readlink -f /sys/class/net/$IFACE/device)
    nicemu_kv flr_dev "${dev##*/}"
    nicemu_out flr_reset sh -c "echo 1 > $dev/reset"
    nicemu_recover flr $m
esac
case "$CASES" in *" pf-reset "*)
    nicemu_kv case_pf-reset 1
    m=$(dmesg | wc -l)
    nicemu_host pf-reset_m0 ctl --json mailbox DUT
    nicemu_host pf-reset ctl fault DUT pf-reset
    nicemu_recover pf-reset $m
esac
case "$CASES" in *" vflr "*)
    nicemu_kv case_vflr 1
    m=$(dmesg | wc -l)
    nicemu_host vflr_m0 ctl --json mailbox DUT
    nicemu_host vflr ctl fault DUT vflr
    nicemu_recover vflr $m
esac
case "$CASES" in *" reload "*)
    nicemu_kv case_reload 1
    m=$(dmesg | wc -l)
    nicemu_host reload_m0 ctl --json mailbox DUT
    ko=/lib/modules/nicemu/$DRIVER.ko
    nicemu_out reload_rmmod timeout 60 rmmod "$DRIVER"
    nicemu_out reload_insmod timeout 60 insmod "$ko"
    new=$(nicemu_iface $MAC 300)
    nicemu_kv reload_iface "${new:-none}"
    if [ -n "$new" ] && [ "$new" != "$IFACE" ]; then /usr/bin/ip link set "$new" name "$IFACE"; fi
    pnew=$(nicemu_iface $PEER_MAC 100)
    nicemu_kv reload_peer "${pnew:-none}"
    if [ -n "$pnew" ]; then
        [ "$pnew" != "$PEER_IFACE" ] && /usr/bin/ip link set "$pnew" name "$PEER_IFACE"
        /usr/bin/ip link set "$PEER_IFACE" netns peer
        nicemu_peer /usr/bin/ip addr add $PEER_IP/24 dev "$PEER_IFACE"
        nicemu_peer /usr/bin/ip link set "$PEER_IFACE" up
        nicemu_peer /usr/bin/ip neigh replace $DUT_IP lladdr $MAC nud permanent dev "$PEER_IFACE"
    fi
    /usr/bin/ip addr add $DUT_IP/24 dev "$IFACE" 2>/dev/null
    /usr/bin/ip link set "$IFACE" up
    /usr/bin/ip neigh replace $PEER_IP lladdr $PEER_MAC nud permanent dev "$IFACE"
    nicemu_recover reload $m
esac
true"#;

impl Scenario for VfReset {
    fn name(&self) -> &'static str {
        "vf-reset"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn needs_host(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        selected(p).len() as u64 * (RECOVER_SECS + 15) + 5
    }

    fn script(&self, p: &Params) -> String {
        let body = SCRIPT
            .replace("RECOVER_TENTHS", &(RECOVER_SECS * 10).to_string())
            .replace("RECOVER_SECS", &RECOVER_SECS.to_string());
        format!(
            "{NEED_IFACE}{NEED_PEER}CASES=\" {} \"\n\
             nicemu_kv cases \"$(echo $CASES | tr ' ' ',')\"\n{body}",
            selected(p).join(" ")
        )
    }

    fn parse(&self, s: &Section, _t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        let mut recovery = serde_json::Map::new();
        cases::judge(
            s,
            CASES,
            &mut r,
            |case, r| check_case(s, case, r, &mut recovery),
            || "no case selected (vf-reset.cases)".into(),
        );
        r.metric("recovery", serde_json::Value::Object(recovery));
        r
    }
}

fn selected(p: &Params) -> Vec<&'static str> {
    cases::selected(CASES, &p.get("vf-reset.cases"))
}

/// The VF_RESET opcode (the low 16 bits of a VF's first word; `E1000_VF_RESET`,
/// `IXGBE_VF_RESET`).
const VF_RESET: u64 = 0x01;

/// VF_RESET messages among the requests a VF sent between two `ctl --json mailbox`
/// answers: the newest `requests` difference of the second trace's VF messages (all of the
/// trace's when more were sent than it keeps). `None` when an answer is unreadable.
pub fn resets_between(before: &serde_json::Value, after: &serde_json::Value) -> Option<u64> {
    let sent = after["requests"]
        .as_u64()?
        .checked_sub(before["requests"].as_u64()?)?;
    let from_vf: Vec<u64> = after["trace"]
        .as_array()?
        .iter()
        .filter(|m| m["from"] == "vf")
        .filter_map(|m| {
            let w = m["words"].as_array()?.first()?.as_str()?;
            u64::from_str_radix(w.trim_start_matches("0x"), 16).ok()
        })
        .collect();
    let new = &from_vf[from_vf.len().saturating_sub(sent as usize)..];
    Some(new.iter().filter(|w| *w & 0xffff == VF_RESET).count() as u64)
}

/// The reset `case` asked for (a sysfs FLR, a driver reload, a host action) succeeded; its
/// checks named "CASE: …".
fn check_reset(s: &Section, case: &str, r: &mut ScenarioResult) -> bool {
    match case {
        "flr" => {
            if !r.check(
                "flr: sysfs reset",
                s.get("flr_reset_rc") == Some("0"),
                || {
                    format!(
                        "flr: `echo 1 > …/reset` failed ({})",
                        s.lines("flr_reset").next().unwrap_or("")
                    )
                },
            ) {
                return false;
            }
        }
        "reload" => {
            for step in ["rmmod", "insmod"] {
                if !r.check(
                    &format!("reload: {step}"),
                    s.get(&format!("reload_{step}_rc")) == Some("0"),
                    || {
                        format!(
                            "reload: {step} failed ({})",
                            s.lines(&format!("reload_{step}")).next().unwrap_or("")
                        )
                    },
                ) {
                    return false;
                }
            }
            if !r.check(
                "reload: interface back",
                s.get("reload_iface") != Some("none"),
                || "reload: no interface with the VF's MAC after insmod".into(),
            ) {
                return false;
            }
        }
        other => {
            if !host_ok(s, other, other, r) {
                return false;
            }
        }
    }
    true
}

fn check_case(
    s: &Section,
    case: &str,
    r: &mut ScenarioResult,
    recovery: &mut serde_json::Map<String, serde_json::Value>,
) {
    if !check_reset(s, case, r) {
        return;
    }
    r.check(
        &format!("{case}: carrier back"),
        s.get(&format!("{case}_carrier")) == Some("1"),
        || format!("{case}: no carrier {RECOVER_SECS} s after the reset"),
    );
    let pings = format!("{case}: pings answered after the reset");
    match ping::parse_summary(&s.lines(&format!("{case}_ping")).collect::<Vec<_>>()) {
        Some(p) if p.transmitted > 0 && p.received == p.transmitted => r.check_passed(&pings),
        Some(p) => r.check_failed(
            &pings,
            format!(
                "{case}: after the reset {} of {} pings answered",
                p.received, p.transmitted
            ),
        ),
        None => r.check_failed(
            &pings,
            format!("{case}: ping after the reset printed no summary"),
        ),
    }
    let view = |tag: &str| ctl_data(&s.lines(&format!("host_{tag}")).collect::<Vec<_>>());
    let resets = match (view(&format!("{case}_m0")), view(&format!("{case}_m1"))) {
        (Some(a), Some(b)) => resets_between(&a, &b),
        _ => None,
    };
    let sent = format!("{case}: VF_RESET sent to the PF");
    match resets {
        Some(n) if n >= 1 => r.check_passed(&sent),
        Some(_) => r.check_failed(
            &sent,
            format!("{case}: the driver sent no VF_RESET to the PF agent after the reset"),
        ),
        None => r.check_failed(
            &sent,
            format!("{case}: ctl --json mailbox DUT printed no trace"),
        ),
    }
    let secs = match (
        s.uptime(&format!("{case}_t0")),
        s.uptime(&format!("{case}_t1")),
    ) {
        (Some(a), Some(b)) => Some(((b - a) * 10.0).round() / 10.0),
        _ => None,
    };
    let log: Vec<&str> = s.lines(&format!("{case}_log")).collect();
    recovery.insert(
        case.into(),
        json!({"secs_to_reach": secs, "vf_resets": resets, "log": log.last()}),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{evaluate, Console, Status};

    fn mailbox(requests: u64, vf_words: &[&str]) -> serde_json::Value {
        let trace: Vec<_> = vf_words
            .iter()
            .flat_map(|w| {
                [
                    json!({"from": "vf", "words": [w], "len": 1}),
                    json!({"from": "pf", "words": ["0xa0000000"], "len": 1}),
                ]
            })
            .collect();
        json!({"requests": requests, "trace": trace})
    }

    #[test]
    fn only_a_vf_reset_sent_since_the_first_reading_counts() {
        let before = mailbox(10, &["0x00000001", "0x00000008"]);
        let after = mailbox(
            13,
            &[
                "0x00000001",
                "0x00000008",
                "0x00000001",
                "0x00000008",
                "0x00000009",
            ],
        );
        assert_eq!(resets_between(&before, &after), Some(1));
        // The only VF_RESET in the trace is older than the requests since.
        let after = mailbox(
            12,
            &["0x00000001", "0x00000008", "0x00000009", "0x00000010"],
        );
        assert_eq!(resets_between(&before, &after), Some(0));
        // Nothing sent at all.
        assert_eq!(resets_between(&before, &before), Some(0));
        // A NACKed/CTS-flagged reply's bits do not hide the opcode of a VF's request.
        let after = mailbox(11, &["0x00000001", "0x00000008", "0x20000001"]);
        assert_eq!(resets_between(&before, &after), Some(1));
        assert_eq!(resets_between(&json!({}), &after), None);
    }

    fn host(tag: &str, data: &serde_json::Value) -> String {
        let json = json!({"ok": true, "data": data});
        format!("@@NICEMU-OUT vf-reset host_{tag} {json}\n@@NICEMU vf-reset host_{tag}_rc=0\n")
    }

    fn case(name: &str, carrier: u8, answered: u64, m1: &serde_json::Value) -> String {
        let m0 = mailbox(10, &["0x00000001"]);
        format!(
            "@@NICEMU vf-reset case_{name}=1\n{}{}@@NICEMU vf-reset {name}_carrier={carrier}\n\
             @@NICEMU-OUT vf-reset {name}_ping 5 packets transmitted, {answered} received, 0% packet loss\n{}",
            host(&format!("{name}_m0"), &m0),
            host(name, &json!("ok")),
            host(&format!("{name}_m1"), m1),
        )
    }

    #[test]
    fn a_case_passes_on_carrier_pings_and_a_new_vf_reset() {
        let t = Target::for_test("igbvf", Some("y"));
        let good = mailbox(12, &["0x00000001", "0x00000001", "0x00000008"]);
        let c = Console::parse(&format!(
            "@@NICEMU-BEGIN vf-reset\n@@NICEMU vf-reset cases=pf-reset\n{}@@NICEMU-DONE vf-reset rc=0\n",
            case("pf-reset", 1, 5, &good)
        ));
        let r = evaluate(&VfReset, &c, &t);
        assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
        let c = Console::parse(&format!(
            "@@NICEMU-BEGIN vf-reset\n@@NICEMU vf-reset cases=pf-reset,reload\n{}@@NICEMU-DONE vf-reset rc=0\n",
            case("pf-reset", 0, 3, &mailbox(10, &["0x00000001"]))
        ));
        let r = evaluate(&VfReset, &c, &t);
        assert_eq!(r.status, Status::Fail);
        let why = r.reason.unwrap();
        assert!(why.contains("no carrier"), "{why}");
        assert!(why.contains("3 of 5"), "{why}");
        assert!(why.contains("no VF_RESET"), "{why}");
        assert!(why.contains("reload: not run"), "{why}");
    }

    #[test]
    fn cases_follow_the_parameter() {
        let mut p = Params::default();
        assert_eq!(selected(&p), CASES);
        p.set("vf-reset.cases", "reload,flr").unwrap();
        assert_eq!(selected(&p), ["flr", "reload"]);
        let s = VfReset.script(&p);
        assert!(s.contains("CASES=\" flr reload \""));
        assert!(!s.contains("RECOVER_"));
    }
}

#[cfg(test)]
mod capture_tests {
    use super::*;
    use crate::scenario::{evaluate, Console, Status};

    /// A run's `vf-reset` sections with all four cases (run 1796494626-25421, sid 7.2.13,
    /// TCG, 2 vCPUs).
    const IGBVF: &str = include_str!("../../tests/fixtures/nicemu-igbvf-vf-reset.serial.log");
    const IXGBEVF: &str = include_str!("../../tests/fixtures/nicemu-ixgbevf-vf-reset.serial.log");

    #[test]
    fn both_vf_drivers_recover_from_every_reset() {
        for (text, driver) in [(IGBVF, "igbvf"), (IXGBEVF, "ixgbevf")] {
            let r = evaluate(
                &VfReset,
                &Console::parse(text),
                &Target::for_test(driver, Some("y")),
            );
            assert_eq!(r.status, Status::Pass, "{driver}: {:?}", r.reason);
            for case in CASES {
                let rec = &r.metrics["recovery"][case];
                assert!(rec["vf_resets"].as_u64().unwrap() >= 1, "{driver} {case}");
                assert!(
                    rec["secs_to_reach"].as_f64().unwrap() > 0.0,
                    "{driver} {case}"
                );
            }
        }
    }
}
