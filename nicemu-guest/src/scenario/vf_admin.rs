// SPDX-License-Identifier: Apache-2.0
//! `vf-admin`: the host's settings of an SR-IOV VF (`nicemu ctl vf DUT …`, nicemu's
//! counterpart of `ip link set PF vf N mac|vlan|spoofchk|trust|state`) as the guest's VF
//! driver (igbvf, ixgbevf) sees them (issue 35). The device under test is VF 0 of the
//! adapter, the peer VF 1 (in netns `peer`); the harness gives VF 0 an administrative MAC
//! (`mac=` on nicemu's command line). Cases (`vf-admin.cases`, in this order):
//! - `mac`: the guest's `ip link set DEV address` to another MAC is refused while the VF
//!   is untrusted (the PF NACKs SET_MAC_ADDR; igbvf answers EADDRNOTAVAIL, ixgbevf EPERM)
//!   and the address stays; `ctl vf DUT trust on`: the same change is taken (the agent's
//!   MAC follows); the address is put back and trust turned off.
//! - `spoof`: a macvlan on the VF (another source MAC, IPv6 off, neighbours pinned) pings
//!   the peer: with spoof checking on, every echo request is dropped at the PF and counted
//!   (`SPOOF_DROPS` in `ctl stats` grows by exactly the count, the peer's ICMP `InEchos` by
//!   0); `ctl vf DUT spoofchk off`: the same requests reach the peer (`InEchos` + count,
//!   `SPOOF_DROPS` + 0). The macvlan's unicast filter is refused (untrusted under an
//!   administrative MAC), so the peer's replies do not come back either way.
//! - `vlan`: the peer gets a VLAN 100 interface; an untagged ping to its address gets no
//!   answer (its replies are tagged, the VF has no VLAN 100 filter); `ctl vf DUT vlan 100`:
//!   the PF tags what the VF sends and strips what it receives, so the same ping is answered
//!   and the peer's VLAN interface counts the requests; the untagged peer address is now out
//!   of reach; `vlan 0` brings it back.
//! - `link`: `ctl vf DUT state disable`: carrier off, `ip link` NO-CARRIER, no pings;
//!   `state enable`: carrier back, the peer reachable within 20 tries, then 5 of 5 pings
//!   answered; then `state auto`.

use std::collections::BTreeMap;

use serde_json::json;

use super::cases::{self, host_ok};
use super::faults::parse_ctl_stats;
use super::{ping, Scenario, ScenarioResult, Section, Target, NEED_IFACE, NEED_PEER};
use crate::params::Params;

/// The VF administration scenario.
#[derive(Debug)]
pub struct VfAdmin;

/// All cases, in run order.
pub const CASES: &[&str] = &["mac", "spoof", "vlan", "link"];

/// The MAC the guest tries to give the VF.
pub const ALT_MAC: &str = "52:54:00:12:34:99";
/// The macvlan's MAC (the spoofed source).
pub const SPOOF_MAC: &str = "52:54:00:12:34:aa";
/// Echo requests sent from the macvlan in each spoof phase.
pub const SPOOF_PINGS: u64 = 10;
/// The port VLAN the `vlan` case sets.
pub const PORT_VLAN: u16 = 100;
/// Echo requests of the `vlan` case's tagged ping.
pub const VLAN_PINGS: u64 = 10;

const SCRIPT: &str = r#"nicemu_addr() { nicemu_kv "$1" "$(cat /sys/class/net/$IFACE/address 2>/dev/null)"; }
PING="/usr/bin/ping -q -i 0.1"
case "$CASES" in *" mac "*)
    nicemu_kv case_mac 1
    nicemu_host mac_v0 ctl --json vf DUT
    nicemu_out mac_untrusted /usr/bin/ip link set "$IFACE" address ALT_MAC
    nicemu_addr mac_addr_untrusted
    nicemu_host mac_v1 ctl --json vf DUT
    nicemu_host mac_trust ctl vf DUT trust on
    nicemu_out mac_trusted /usr/bin/ip link set "$IFACE" address ALT_MAC
    nicemu_addr mac_addr_trusted
    nicemu_host mac_v2 ctl --json vf DUT
    nicemu_out mac_back /usr/bin/ip link set "$IFACE" address $MAC
    nicemu_host mac_untrust ctl vf DUT trust off
    nicemu_addr mac_addr_back
    nicemu_host mac_v3 ctl --json vf DUT
    nicemu_out mac_ping timeout 30 $PING -c 5 -W 2 $PEER_IP
esac
case "$CASES" in *" spoof "*)
    nicemu_kv case_spoof 1
    nicemu_out sp_add /usr/bin/ip link add link "$IFACE" name sp0 address SPOOF_MAC type macvlan mode bridge
    echo 1 > /proc/sys/net/ipv6/conf/sp0/disable_ipv6
    /usr/bin/ip addr add 192.168.100.11/24 dev sp0
    /usr/bin/ip link set sp0 up
    /usr/bin/ip neigh replace $PEER_IP lladdr $PEER_MAC nud permanent dev sp0
    nicemu_peer /usr/bin/ip neigh replace 192.168.100.11 lladdr SPOOF_MAC nud permanent dev "$PEER_IFACE"
    sleep 1
    nicemu_host sp_c0 ctl --json stats DUT
    nicemu_out sp_snmp0 nicemu_peer cat /proc/net/snmp
    nicemu_out sp_on timeout 30 $PING -c SPOOF_N -W 1 -I sp0 $PEER_IP
    sleep 0.5
    nicemu_host sp_c1 ctl --json stats DUT
    nicemu_out sp_snmp1 nicemu_peer cat /proc/net/snmp
    nicemu_host sp_off ctl vf DUT spoofchk off
    nicemu_out sp_offping timeout 30 $PING -c SPOOF_N -W 1 -I sp0 $PEER_IP
    sleep 0.5
    nicemu_host sp_c2 ctl --json stats DUT
    nicemu_out sp_snmp2 nicemu_peer cat /proc/net/snmp
    nicemu_host sp_v ctl --json vf DUT
    nicemu_host sp_back ctl vf DUT spoofchk on
    /usr/bin/ip link del sp0
    nicemu_peer /usr/bin/ip neigh del 192.168.100.11 dev "$PEER_IFACE"
    nicemu_out sp_ping timeout 30 $PING -c 5 -W 2 $PEER_IP
esac
case "$CASES" in *" vlan "*)
    nicemu_kv case_vlan 1
    nicemu_out vl_add nicemu_peer /usr/bin/ip link add link "$PEER_IFACE" name pv PORT_VLAN type vlan id PORT_VLAN
    nicemu_peer /usr/bin/ip addr add 192.168.101.2/24 dev pv PORT_VLAN
    nicemu_peer /usr/bin/ip link set pv PORT_VLAN up
    nicemu_peer /usr/bin/ip neigh replace 192.168.101.1 lladdr $MAC nud permanent dev pv PORT_VLAN
    /usr/bin/ip addr add 192.168.101.1/24 dev "$IFACE"
    /usr/bin/ip neigh replace 192.168.101.2 lladdr $PEER_MAC nud permanent dev "$IFACE"
    nicemu_out vl_before timeout 30 $PING -c 3 -W 1 192.168.101.2
    nicemu_host vl_set ctl vf DUT vlan PORT_VLAN
    nicemu_host vl_v ctl --json vf DUT
    nicemu_out vl_pv0 nicemu_peer /usr/bin/ip -s link show pv PORT_VLAN
    nicemu_out vl_on timeout 30 $PING -c VLAN_N -W 2 192.168.101.2
    nicemu_out vl_pv1 nicemu_peer /usr/bin/ip -s link show pv PORT_VLAN
    nicemu_out vl_plain timeout 30 $PING -c 3 -W 1 $PEER_IP
    nicemu_host vl_unset ctl vf DUT vlan 0
    nicemu_out vl_after timeout 30 $PING -c 5 -W 2 $PEER_IP
    nicemu_peer /usr/bin/ip link del pv PORT_VLAN
    /usr/bin/ip addr del 192.168.101.1/24 dev "$IFACE"
esac
case "$CASES" in *" link "*)
    nicemu_kv case_link 1
    nicemu_host ln_dis ctl vf DUT state disable
    nicemu_nocarrier "$IFACE" 150
    nicemu_kv ln_dis_carrier "$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)"
    nicemu_out ln_dis_ip /usr/bin/ip link show "$IFACE"
    nicemu_host ln_v ctl --json vf DUT
    nicemu_out ln_dis_ping timeout 10 $PING -c 3 -W 1 $PEER_IP
    nicemu_host ln_en ctl vf DUT state enable
    nicemu_carrier "$IFACE" 200
    nicemu_kv ln_en_carrier "$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)"
    nicemu_out ln_en_ip /usr/bin/ip link show "$IFACE"
    # As after `ctl link DUT up` (faults): the driver may still be resetting behind the carrier.
    nicemu_reach 20 ln_en_reach_tries
    nicemu_out ln_en_ping timeout 30 $PING -c 5 -W 2 $PEER_IP
    nicemu_host ln_auto ctl vf DUT state auto
esac
true"#;

impl Scenario for VfAdmin {
    fn name(&self) -> &'static str {
        "vf-admin"
    }

    fn needs_peer(&self) -> bool {
        true
    }

    fn needs_host(&self) -> bool {
        true
    }

    fn budget_secs(&self, p: &Params) -> u64 {
        selected(p)
            .iter()
            .map(|c| match *c {
                "spoof" | "vlan" => 25,
                _ => 15,
            })
            .sum::<u64>()
            + 5
    }

    fn script(&self, p: &Params) -> String {
        let body = SCRIPT
            .replace("ALT_MAC", ALT_MAC)
            .replace("SPOOF_MAC", SPOOF_MAC)
            .replace("SPOOF_N", &SPOOF_PINGS.to_string())
            .replace("VLAN_N", &VLAN_PINGS.to_string())
            .replace("pv PORT_VLAN", &format!("pv{PORT_VLAN}"))
            .replace("PORT_VLAN", &PORT_VLAN.to_string());
        format!(
            "{NEED_IFACE}{NEED_PEER}CASES=\" {} \"\n\
             nicemu_kv cases \"$(echo $CASES | tr ' ' ',')\"\n{body}",
            selected(p).join(" ")
        )
    }

    fn parse(&self, s: &Section, t: &Target) -> ScenarioResult {
        let mut r = ScenarioResult::pass(self.name());
        cases::judge(
            s,
            CASES,
            &mut r,
            |case, r| match case {
                "mac" => check_mac(s, t, r),
                "spoof" => check_spoof(s, r),
                "vlan" => check_vlan(s, r),
                "link" => check_link(s, r),
                _ => {}
            },
            || "no case selected (vf-admin.cases)".into(),
        );
        r
    }
}

fn selected(p: &Params) -> Vec<&'static str> {
    cases::selected(CASES, &p.get("vf-admin.cases"))
}

/// The `data` object of a `nicemu ctl --json` answer (one object, maybe over many lines).
pub fn ctl_data(lines: &[&str]) -> Option<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(&lines.join("\n")).ok()?;
    if v.get("ok").and_then(|o| o.as_bool()) == Some(false) {
        return None;
    }
    v.get("data").cloned()
}

/// `ctl --json vf DUT` as host action `tag` printed it.
fn vf_view(s: &Section, tag: &str) -> Option<serde_json::Value> {
    ctl_data(&s.lines(&format!("host_{tag}")).collect::<Vec<_>>())
}

fn ctl_stats(s: &Section, tag: &str) -> Option<BTreeMap<String, u64>> {
    parse_ctl_stats(&s.lines(&format!("host_{tag}")).collect::<Vec<_>>())
}

/// Counter `name` of row `table` in `/proc/net/snmp` (a names line, then a values line).
pub fn snmp(lines: &[&str], table: &str, name: &str) -> Option<u64> {
    let prefix = format!("{table}:");
    let mut rows = lines.iter().filter(|l| l.starts_with(&prefix));
    let names = rows.next()?;
    let values = rows.next()?;
    let i = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// `ip -s link show` RX packets.
fn rx_packets(lines: &[&str]) -> Option<u64> {
    super::counters::parse_ip_s_link(lines)
        .get("rx_packets")
        .copied()
}

fn summary(s: &Section, tag: &str) -> Option<ping::Summary> {
    ping::parse_summary(&s.lines(tag).collect::<Vec<_>>())
}

/// The check "CASE: WHAT: every ping answered": the ping `tag` sent some echo requests and
/// all were answered.
fn ping_all(s: &Section, tag: &str, case: &str, what: &str, r: &mut ScenarioResult) {
    let name = format!("{case}: {what}: every ping answered");
    match summary(s, tag) {
        Some(p) if p.transmitted > 0 && p.received == p.transmitted => r.check_passed(&name),
        Some(p) => r.check_failed(
            &name,
            format!(
                "{case}: {what}: {} of {} pings answered (want all)",
                p.received, p.transmitted
            ),
        ),
        None => r.check_failed(&name, format!("{case}: {what}: ping printed no summary")),
    }
}

/// The check "CASE: WHAT: no ping answered": the ping `tag` sent some echo requests and
/// none was answered.
fn ping_none(s: &Section, tag: &str, case: &str, what: &str, r: &mut ScenarioResult) {
    let name = format!("{case}: {what}: no ping answered");
    match summary(s, tag) {
        Some(p) if p.transmitted > 0 && p.received == 0 => r.check_passed(&name),
        Some(p) => r.check_failed(
            &name,
            format!(
                "{case}: {what}: {} of {} pings answered (want none)",
                p.received, p.transmitted
            ),
        ),
        None => r.check_failed(&name, format!("{case}: {what}: ping printed no summary")),
    }
}

fn check_mac(s: &Section, t: &Target, r: &mut ScenarioResult) {
    check_mac_untrusted(s, t, r);
    if !host_ok(s, "mac_trust", "mac", r) {
        return;
    }
    check_mac_trusted(s, t, r);
    ping_all(s, "mac_ping", "mac", "after putting the MAC back", r);
}

/// Untrusted under an administrative MAC, the guest's change is refused by the driver (the
/// PF agent NACKs it) and the address stays.
fn check_mac_untrusted(s: &Section, t: &Target, r: &mut ScenarioResult) {
    let addr = |k: &str| s.get(k).unwrap_or("?");
    if r.check(
        "mac: untrusted, the change refused",
        s.get("mac_untrusted_rc") != Some("0"),
        || {
            format!(
                "mac: untrusted under an administrative MAC, `ip link set address {ALT_MAC}` \
                 succeeded"
            )
        },
    ) {
        let said = s.lines("mac_untrusted").next().unwrap_or("");
        r.metric("mac_refused", json!(said));
    }
    r.check(
        "mac: untrusted, the address stays",
        addr("mac_addr_untrusted") == t.mac,
        || {
            format!(
                "mac: after the refused change the address is {} (want {})",
                addr("mac_addr_untrusted"),
                t.mac
            )
        },
    );
    let nacks = |tag: &str| vf_view(s, tag).and_then(|v| v["nacks"].as_u64());
    const NACKED: &str = "mac: untrusted, the agent refused the change";
    match (nacks("mac_v0"), nacks("mac_v1")) {
        (Some(a), Some(b)) if b > a => {
            r.metric("mac_nacks", json!(b - a));
            r.check_passed(NACKED);
        }
        (Some(a), Some(b)) => r.check_failed(
            NACKED,
            format!("mac: the agent refused nothing (ctl vf nacks {a} -> {b})"),
        ),
        _ => r.check_failed(NACKED, "mac: ctl --json vf DUT printed no nacks"),
    }
}

/// Trusted, the guest's change is taken (the agent's MAC follows), the address goes back
/// and trust is off at the end.
fn check_mac_trusted(s: &Section, t: &Target, r: &mut ScenarioResult) {
    let rc = |tag: &str| s.get(&format!("{tag}_rc"));
    let addr = |k: &str| s.get(k).unwrap_or("?");
    r.check(
        "mac: trusted, the change taken",
        rc("mac_trusted") == Some("0") && addr("mac_addr_trusted") == ALT_MAC,
        || {
            format!(
                "mac: trusted, `ip link set address {ALT_MAC}` gave exit {:?}, address {}",
                rc("mac_trusted"),
                addr("mac_addr_trusted")
            )
        },
    );
    let agent_mac = vf_view(s, "mac_v2").and_then(|v| v["mac"].as_str().map(str::to_owned));
    r.check(
        "mac: trusted, the agent's MAC follows",
        agent_mac.as_deref() == Some(ALT_MAC),
        || {
            format!(
                "mac: trusted, the agent's MAC is {agent_mac:?} after the guest's change \
                 (want {ALT_MAC})"
            )
        },
    );
    r.check(
        "mac: the address put back",
        rc("mac_back") == Some("0") && addr("mac_addr_back") == t.mac,
        || {
            format!(
                "mac: putting {} back gave exit {:?}, address {}",
                t.mac,
                rc("mac_back"),
                addr("mac_addr_back")
            )
        },
    );
    let v3 = vf_view(s, "mac_v3");
    r.check(
        "mac: trust off at the end",
        v3.as_ref().and_then(|v| v["trust"].as_bool()) == Some(false),
        || "mac: ctl vf does not show trust off at the end".into(),
    );
}

fn check_spoof(s: &Section, r: &mut ScenarioResult) {
    if !r.check(
        "spoof: macvlan added",
        s.get("sp_add_rc") == Some("0"),
        || {
            format!(
                "spoof: could not add a macvlan ({})",
                s.lines("sp_add").next().unwrap_or("")
            )
        },
    ) {
        return;
    }
    for tag in ["sp_c0", "sp_c1", "sp_off", "sp_c2", "sp_back"] {
        if !host_ok(s, tag, "spoof", r) {
            return;
        }
    }
    let drops: Vec<Option<u64>> = ["sp_c0", "sp_c1", "sp_c2"]
        .iter()
        .map(|t| ctl_stats(s, t).and_then(|c| c.get("SPOOF_DROPS").copied()))
        .collect();
    let echos: Vec<Option<u64>> = ["sp_snmp0", "sp_snmp1", "sp_snmp2"]
        .iter()
        .map(|t| snmp(&s.lines(t).collect::<Vec<_>>(), "Icmp", "InEchos"))
        .collect();
    let (Some(d0), Some(d1), Some(d2)) = (drops[0], drops[1], drops[2]) else {
        r.check_failed(
            "spoof: SPOOF_DROPS read",
            "spoof: ctl --json stats DUT has no SPOOF_DROPS",
        );
        return;
    };
    r.check_passed("spoof: SPOOF_DROPS read");
    let (Some(e0), Some(e1), Some(e2)) = (echos[0], echos[1], echos[2]) else {
        r.check_failed(
            "spoof: the peer's InEchos read",
            "spoof: the peer's /proc/net/snmp has no Icmp InEchos",
        );
        return;
    };
    r.check_passed("spoof: the peer's InEchos read");
    check_spoof_counts(s, [d0, d1, d2], [e0, e1, e2], r);
    r.check(
        "spoof: ctl vf shows spoofchk off",
        vf_view(s, "sp_v").and_then(|v| v["spoofchk"].as_bool()) == Some(false),
        || "spoof: ctl vf does not show spoofchk off after `spoofchk off`".into(),
    );
    ping_all(
        s,
        "sp_ping",
        "spoof",
        "after spoofchk on and the macvlan gone",
        r,
    );
}

/// The macvlan's requests with spoof checking on are each dropped and counted
/// (`SPOOF_DROPS` readings `d`), with it off each reaches the peer (its `InEchos` readings
/// `e`): before, after the spoofchk-on ping, after the spoofchk-off one.
fn check_spoof_counts(s: &Section, d: [u64; 3], e: [u64; 3], r: &mut ScenarioResult) {
    let (on_drops, off_drops) = (d[1].saturating_sub(d[0]), d[2].saturating_sub(d[1]));
    let (on_echos, off_echos) = (e[1].saturating_sub(e[0]), e[2].saturating_sub(e[1]));
    r.metric(
        "spoof",
        json!({
            "spoofchk_on": {"spoof_drops": on_drops, "peer_in_echos": on_echos},
            "spoofchk_off": {"spoof_drops": off_drops, "peer_in_echos": off_echos},
        }),
    );
    let sent = |tag: &str| summary(s, tag).map_or(0, |p| p.transmitted);
    let (n_on, n_off) = (sent("sp_on"), sent("sp_offping"));
    r.check(
        "spoof: the macvlan sent every request",
        n_on == SPOOF_PINGS && n_off == SPOOF_PINGS,
        || {
            format!(
                "spoof: the macvlan sent {n_on} and {n_off} echo requests \
                 (want {SPOOF_PINGS} each)"
            )
        },
    );
    r.check(
        "spoof: spoofchk on, each request dropped and counted",
        on_drops == n_on && on_echos == 0,
        || {
            format!(
                "spoof: spoofchk on, {n_on} requests from {SPOOF_MAC}: SPOOF_DROPS +{on_drops}, \
                 the peer got {on_echos} (want +{n_on} and 0)"
            )
        },
    );
    r.check(
        "spoof: spoofchk off, each request through",
        off_drops == 0 && off_echos == n_off,
        || {
            format!(
                "spoof: spoofchk off, {n_off} requests from {SPOOF_MAC}: \
                 SPOOF_DROPS +{off_drops}, the peer got {off_echos} (want +0 and {n_off})"
            )
        },
    );
}

fn check_vlan(s: &Section, r: &mut ScenarioResult) {
    if !r.check(
        "vlan: the peer's VLAN interface added",
        s.get("vl_add_rc") == Some("0"),
        || {
            format!(
                "vlan: the peer's VLAN interface could not be added ({})",
                s.lines("vl_add").next().unwrap_or("")
            )
        },
    ) {
        return;
    }
    ping_none(
        s,
        "vl_before",
        "vlan",
        "without a port VLAN, the peer's VLAN address",
        r,
    );
    if !host_ok(s, "vl_set", "vlan", r) {
        return;
    }
    let v = vf_view(s, "vl_v");
    r.check(
        &format!("vlan: ctl vf shows vlan {PORT_VLAN}"),
        v.as_ref().and_then(|v| v["vlan"].as_u64()) == Some(u64::from(PORT_VLAN)),
        || format!("vlan: ctl vf does not show vlan {PORT_VLAN}"),
    );
    ping_all(
        s,
        "vl_on",
        "vlan",
        "under the port VLAN, the peer's VLAN address",
        r,
    );
    let pv = |tag: &str| rx_packets(&s.lines(tag).collect::<Vec<_>>());
    let tagged = format!("vlan: the peer's VLAN {PORT_VLAN} interface got every request");
    match (pv("vl_pv0"), pv("vl_pv1")) {
        (Some(a), Some(b)) => {
            let d = b.saturating_sub(a);
            r.metric("vlan_peer_rx", json!(d));
            r.check(&tagged, d >= VLAN_PINGS, || {
                format!(
                    "vlan: the peer's VLAN {PORT_VLAN} interface received {d} frames for \
                     {VLAN_PINGS} requests"
                )
            });
        }
        _ => r.check_failed(
            &tagged,
            "vlan: the peer's `ip -s link show` printed no RX packets",
        ),
    }
    ping_none(
        s,
        "vl_plain",
        "vlan",
        "under the port VLAN, the peer's untagged address",
        r,
    );
    if !host_ok(s, "vl_unset", "vlan", r) {
        return;
    }
    ping_all(s, "vl_after", "vlan", "after `vlan 0`", r);
}

fn check_link(s: &Section, r: &mut ScenarioResult) {
    if !host_ok(s, "ln_dis", "link", r) {
        return;
    }
    r.check(
        "link: disabled, carrier off",
        s.get("ln_dis_carrier") == Some("0"),
        || "link: carrier stayed on after `state disable`".into(),
    );
    r.check(
        "link: disabled, ip link shows NO-CARRIER",
        s.lines("ln_dis_ip").any(|l| l.contains("NO-CARRIER")),
        || "link: `ip link` does not show NO-CARRIER after `state disable`".into(),
    );
    r.check(
        "link: ctl vf shows link_state disable",
        vf_view(s, "ln_v").and_then(|v| v["link_state"].as_str().map(str::to_owned))
            == Some("disable".into()),
        || "link: ctl vf does not show link_state disable".into(),
    );
    ping_none(s, "ln_dis_ping", "link", "link disabled", r);
    if !host_ok(s, "ln_en", "link", r) {
        return;
    }
    r.check(
        "link: enabled, carrier back",
        s.get("ln_en_carrier") == Some("1"),
        || "link: no carrier after `state enable`".into(),
    );
    r.check(
        "link: enabled, ip link without NO-CARRIER",
        !s.lines("ln_en_ip").any(|l| l.contains("NO-CARRIER")),
        || "link: `ip link` still shows NO-CARRIER after `state enable`".into(),
    );
    ping_all(s, "ln_en_ping", "link", "link enabled", r);
    host_ok(s, "ln_auto", "link", r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{evaluate, Console, Status};

    #[test]
    fn snmp_counters_and_ctl_answers() {
        let snmp_text = [
            "Ip: Forwarding DefaultTTL InReceives",
            "Ip: 2 64 100",
            "Icmp: InMsgs InErrors InCsumErrors InDestUnreachs InTimeExcds InParmProbs InSrcQuenchs InRedirects InEchos",
            "Icmp: 12 0 0 1 0 0 0 0 10",
        ];
        assert_eq!(snmp(&snmp_text, "Icmp", "InEchos"), Some(10));
        assert_eq!(snmp(&snmp_text, "Ip", "InReceives"), Some(100));
        assert_eq!(snmp(&snmp_text, "Icmp", "OutEchos"), None);
        assert_eq!(snmp(&snmp_text[..1], "Ip", "Forwarding"), None);
        let v = ctl_data(&[
            "{\"ok\": true,",
            "\"data\": {\"nacks\": 3, \"mac\": \"x\"}}",
        ])
        .unwrap();
        assert_eq!(v["nacks"], 3);
        assert!(ctl_data(&["{\"ok\": false, \"error\": \"no\"}"]).is_none());
        assert!(ctl_data(&["not json"]).is_none());
    }

    #[test]
    fn cases_follow_the_parameter_and_the_script_is_filled_in() {
        let mut p = Params::default();
        assert_eq!(selected(&p), CASES);
        p.set("vf-admin.cases", "link,mac").unwrap();
        assert_eq!(selected(&p), ["mac", "link"]);
        let s = VfAdmin.script(&p);
        assert!(s.contains("CASES=\" mac link \""));
        assert!(s.contains("address 52:54:00:12:34:99"));
        assert!(s.contains("name pv100 type vlan id 100"));
        assert!(s.contains("ctl vf DUT vlan 100"));
        for word in ["ALT_MAC", "SPOOF_MAC", "SPOOF_N", "VLAN_N", "PORT_VLAN"] {
            assert!(!s.contains(word), "{word} left in the script");
        }
    }

    fn ping_lines(tag: &str, sent: u64, got: u64) -> String {
        format!(
            "@@NICEMU-OUT vf-admin {tag} {sent} packets transmitted, {got} received, {}% packet loss, time 1000ms\n",
            (sent - got) * 100 / sent.max(1)
        )
    }

    fn host(tag: &str, json: &str) -> String {
        format!("@@NICEMU-OUT vf-admin host_{tag} {json}\n@@NICEMU vf-admin host_{tag}_rc=0\n")
    }

    fn stats(drops: u64) -> String {
        format!(
            "{{\"ok\":true,\"data\":{{\"counters\":[[\"GPRC\",1],[\"SPOOF_DROPS\",{drops}]]}}}}"
        )
    }

    fn snmp_out(tag: &str, echos: u64) -> String {
        format!(
            "@@NICEMU-OUT vf-admin {tag} Icmp: InMsgs InEchos\n@@NICEMU-OUT vf-admin {tag} Icmp: 5 {echos}\n"
        )
    }

    /// A spoof case's console section with these drops and peer echo counts.
    fn spoof_console(drops: [u64; 3], echos: [u64; 3]) -> Console {
        let mut c = String::from(
            "@@NICEMU-BEGIN vf-admin\n@@NICEMU vf-admin cases=spoof\n@@NICEMU vf-admin case_spoof=1\n@@NICEMU vf-admin sp_add_rc=0\n",
        );
        for (i, tag) in ["sp_c0", "sp_c1", "sp_c2"].iter().enumerate() {
            c.push_str(&host(tag, &stats(drops[i])));
            c.push_str(&snmp_out(&format!("sp_snmp{i}"), echos[i]));
        }
        c.push_str(&host("sp_off", "ok"));
        c.push_str(&host("sp_back", "ok"));
        c.push_str(&host("sp_v", "{\"ok\":true,\"data\":{\"spoofchk\":false}}"));
        c.push_str(&ping_lines("sp_on", 10, 0));
        c.push_str(&ping_lines("sp_offping", 10, 0));
        c.push_str(&ping_lines("sp_ping", 5, 5));
        c.push_str("@@NICEMU-DONE vf-admin rc=0\n");
        Console::parse(&c)
    }

    #[test]
    fn spoofed_requests_must_be_dropped_and_counted_exactly() {
        let t = Target::for_test("igbvf", Some("y"));
        let good = spoof_console([4, 14, 14], [7, 7, 17]);
        let r = evaluate(&VfAdmin, &good, &t);
        assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
        assert_eq!(r.metrics["spoof"]["spoofchk_on"]["spoof_drops"], 10);
        // A request that got through with spoof checking on.
        let r = evaluate(&VfAdmin, &spoof_console([4, 13, 13], [7, 8, 18]), &t);
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("SPOOF_DROPS +9"));
        // Spoof checking off still dropping.
        let r = evaluate(&VfAdmin, &spoof_console([4, 14, 24], [7, 7, 7]), &t);
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("spoofchk off"));
    }

    #[test]
    fn link_case_wants_no_carrier_then_carrier() {
        let t = Target::for_test("ixgbevf", Some("y"));
        let base = format!(
            "@@NICEMU-BEGIN vf-admin\n@@NICEMU vf-admin cases=link\n@@NICEMU vf-admin case_link=1\n{}{}{}{}\
             @@NICEMU vf-admin ln_en_carrier=1\n\
             @@NICEMU-OUT vf-admin ln_en_ip 3: eth1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500\n{}{}",
            host("ln_dis", "ok"),
            host("ln_v", "{\"ok\":true,\"data\":{\"link_state\":\"disable\"}}"),
            host("ln_en", "ok"),
            host("ln_auto", "ok"),
            ping_lines("ln_dis_ping", 3, 0),
            ping_lines("ln_en_ping", 5, 5),
        );
        let down = "@@NICEMU vf-admin ln_dis_carrier=0\n\
                    @@NICEMU-OUT vf-admin ln_dis_ip 3: eth1: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500\n";
        let c = Console::parse(&format!("{base}{down}@@NICEMU-DONE vf-admin rc=0\n"));
        let r = evaluate(&VfAdmin, &c, &t);
        assert_eq!(r.status, Status::Pass, "{:?}", r.reason);
        let c = Console::parse(&format!(
            "{base}@@NICEMU vf-admin ln_dis_carrier=1\n@@NICEMU-DONE vf-admin rc=0\n"
        ));
        let r = evaluate(&VfAdmin, &c, &t);
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("NO-CARRIER"));
    }
}

#[cfg(test)]
mod capture_tests {
    use super::*;
    use crate::scenario::ethtool_ops::EthtoolOps;
    use crate::scenario::{evaluate, Console, Status};

    /// Real runs (sid 7.2.13, TCG, 2 vCPUs; VFs 0 and 1 of one adapter, nicemu their PF):
    /// the `ethtool` and `vf-admin` sections.
    const IGBVF: &str =
        include_str!("../../tests/fixtures/nicemu-igbvf-ethtool-vf-admin.serial.log");
    const IXGBEVF: &str =
        include_str!("../../tests/fixtures/nicemu-ixgbevf-ethtool-vf-admin.serial.log");

    fn target(driver: &str) -> Target {
        let mut t = Target::for_test(driver, Some(crate::vm::device::PEER_MAC));
        t.mac = crate::vm::device::TEST_MAC.into();
        t
    }

    #[test]
    fn both_vf_drivers_see_the_hosts_settings() {
        for (text, driver) in [(IGBVF, "igbvf"), (IXGBEVF, "ixgbevf")] {
            let r = evaluate(&VfAdmin, &Console::parse(text), &target(driver));
            assert_eq!(r.status, Status::Pass, "{driver}: {:?}", r.reason);
            let sp = &r.metrics["spoof"];
            assert_eq!(sp["spoofchk_on"]["spoof_drops"], SPOOF_PINGS, "{driver}");
            assert_eq!(sp["spoofchk_on"]["peer_in_echos"], 0, "{driver}");
            assert_eq!(sp["spoofchk_off"]["spoof_drops"], 0, "{driver}");
            assert_eq!(sp["spoofchk_off"]["peer_in_echos"], SPOOF_PINGS, "{driver}");
            assert_eq!(r.metrics["vlan_peer_rx"], VLAN_PINGS, "{driver}");
            // igbvf refuses the address with EADDRNOTAVAIL, ixgbevf with EPERM.
            let said = r.metrics["mac_refused"].as_str().unwrap().to_owned();
            let want = if driver == "igbvf" {
                "Cannot assign requested address"
            } else {
                "Operation not permitted"
            };
            assert!(said.contains(want), "{driver}: {said}");
        }
    }

    #[test]
    fn a_guest_mac_under_the_wrong_admin_mac_fails() {
        // The capture's DUT MAC read as another: the address checks must notice.
        let mut t = target("igbvf");
        t.mac = "52:54:00:00:00:01".into();
        let r = evaluate(&VfAdmin, &Console::parse(IGBVF), &t);
        assert_eq!(r.status, Status::Fail);
        assert!(r.reason.unwrap().contains("mac:"));
    }

    #[test]
    fn vf_ethtool_answers_are_each_drivers_own() {
        for (text, driver, other) in [(IGBVF, "igbvf", "ixgbevf"), (IXGBEVF, "ixgbevf", "igbvf")] {
            let r = evaluate(&EthtoolOps, &Console::parse(text), &target(driver));
            assert_eq!(r.status, Status::Pass, "{driver}: {:?}", r.reason);
            let r = evaluate(&EthtoolOps, &Console::parse(text), &target(other));
            assert_eq!(r.status, Status::Fail, "{driver} capture read as {other}");
        }
    }
}
