// SPDX-License-Identifier: Apache-2.0
//! The `net` setup run before the scenarios: finds the device under test by MAC and, with a
//! peer port, moves the peer into network namespace `peer`, addresses both ends
//! (`DUT_IP`/24 and `PEER_IP`/24), pins the neighbour entries (so no ARP disturbs counters),
//! waits for carrier on both and starts `netserver` in the peer namespace.
//!
//! It runs in `/init`'s own shell (not a subshell) so `IFACE`, `PEER_IFACE` and `PEER_OK`
//! stay set for the scenarios.

use serde_json::json;

use super::{ScenarioResult, Section, Target, DUT_IP, PEER_IP};

/// Name of the setup's console section.
pub const NAME: &str = "net";

const PEER_SETUP: &str = r#"PEER_IFACE=$(nicemu_iface $PEER_MAC 100)
nicemu_kv peer_iface "${PEER_IFACE:-none}"
if [ -n "$IFACE" ] && [ -n "$PEER_IFACE" ]; then
    /usr/bin/ip netns add peer
    /usr/bin/ip link set "$PEER_IFACE" netns peer
    nicemu_kv netns_rc $?
    nicemu_peer /usr/bin/ip link set lo up
    /usr/bin/ip addr add $DUT_IP/24 dev "$IFACE"
    nicemu_peer /usr/bin/ip addr add $PEER_IP/24 dev "$PEER_IFACE"
    /usr/bin/ip link set "$IFACE" up
    nicemu_peer /usr/bin/ip link set "$PEER_IFACE" up
    n=0
    while [ $n -lt 100 ]; do
        [ "$(cat /sys/class/net/$IFACE/carrier 2>/dev/null)" = 1 ] &&
            [ "$(nicemu_peer cat /sys/class/net/$PEER_IFACE/carrier 2>/dev/null)" = 1 ] && break
        sleep 0.1; n=$((n+1))
    done
    nicemu_kv carrier_wait_ms $((n*100))
    /usr/bin/ip neigh replace $PEER_IP lladdr $PEER_MAC nud permanent dev "$IFACE"
    nicemu_peer /usr/bin/ip neigh replace $DUT_IP lladdr $MAC nud permanent dev "$PEER_IFACE"
    nicemu_peer /usr/bin/netserver -4 >/dev/null 2>&1
    nicemu_kv netserver_rc $?
    nicemu_out ping /usr/bin/ping -c 3 -i 0.2 -W 3 $PEER_IP && PEER_OK=1
    nicemu_kv peer_ok "${PEER_OK:-0}"
fi
"#;

/// For `qemu-igbvf`: QEMU's igb PF (found by its MAC) is brought up with two VFs, not probed
/// until the PF gave them the ports' MACs (as a host does before handing VFs to VMs), then
/// bound to igbvf.
const SRIOV_PF_SETUP: &str = r#"SRIOV_PF=$(nicemu_iface PF_MAC 100)
nicemu_kv sriov_pf "${SRIOV_PF:-none}"
if [ -n "$SRIOV_PF" ]; then
    pfdev=/sys/class/net/$SRIOV_PF/device
    /usr/bin/ip link set "$SRIOV_PF" up
    echo 0 > $pfdev/sriov_drivers_autoprobe
    echo 2 > $pfdev/sriov_numvfs
    nicemu_kv sriov_numvfs "$(cat $pfdev/sriov_numvfs)"
    /usr/bin/ip link set "$SRIOV_PF" vf 0 mac $MAC
    /usr/bin/ip link set "$SRIOV_PF" vf 1 mac PEER_MAC
    echo 1 > $pfdev/sriov_drivers_autoprobe
    for vf in 0 1; do
        bdf=$(basename "$(readlink -f $pfdev/virtfn$vf)")
        nicemu_kv "sriov_vf$vf" "$bdf"
        echo "$bdf" > /sys/bus/pci/drivers_probe
        nicemu_kv "sriov_probe$vf" "$? $(basename "$(readlink -f /sys/bus/pci/devices/$bdf/driver)")"
    done
fi
"#;

/// Renders the setup (plain shell in `/init`).
pub fn render(target: &Target) -> String {
    let mut s = format!(
        "SCEN={NAME}; MAC={}; DRIVER={}; DUT_IP={DUT_IP}; PEER_IP={PEER_IP}; PEER_OK=0\n\
         HOST_ACTIONS={}\n\
         nicemu_begin {NAME}\n\
         IFACE=$(nicemu_iface $MAC 100)\nnicemu_kv iface \"${{IFACE:-none}}\"\n",
        target.mac,
        target.driver,
        u8::from(target.host_actions)
    );
    if target.device == "qemu-igbvf" {
        let i = s.find("IFACE=").unwrap_or(s.len());
        s.insert_str(
            i,
            &SRIOV_PF_SETUP
                .replace("PF_MAC", crate::vm::device::SRIOV_PF_MAC)
                .replace("PEER_MAC", crate::vm::device::PEER_MAC),
        );
    }
    if let Some(peer) = &target.peer_mac {
        s.push_str(&format!("PEER_MAC={peer}\n"));
        s.push_str(PEER_SETUP);
    } else {
        s.push_str("PEER_IFACE=\n");
    }
    s.push_str(&format!(
        "echo \"@@NICEMU-DONE {NAME} rc=0 uptime=$(nicemu_uptime)\"\n"
    ));
    s
}

/// Evaluates the setup section.
pub fn parse(s: Option<&Section>, target: &Target) -> ScenarioResult {
    let Some(s) = s else {
        let mut r = ScenarioResult::pass(NAME);
        r.check_failed(
            super::result::STARTED,
            "the guest never ran the network setup",
        );
        return r;
    };
    let mut r = ScenarioResult::pass(NAME);
    match s.get("iface") {
        Some("none") | None => r.check_failed(
            "device interface found",
            format!(
                "no interface with MAC {} (device under test) appeared",
                target.mac
            ),
        ),
        Some(i) => {
            r.check_passed("device interface found");
            r.metric("iface", json!(i))
        }
    }
    let Some(peer) = &target.peer_mac else {
        return r;
    };
    match s.get("peer_iface") {
        Some("none") | None => {
            r.check_failed(
                "peer interface found",
                format!("no interface with MAC {peer} (peer) appeared"),
            );
            return r;
        }
        Some(i) => {
            r.check_passed("peer interface found");
            r.metric("peer_iface", json!(i))
        }
    }
    r.check("peer in netns peer", s.get("netns_rc") == Some("0"), || {
        "could not move the peer port into netns `peer`".into()
    });
    if let Some(ms) = s.get("carrier_wait_ms").and_then(|v| v.parse::<u64>().ok()) {
        r.metric("carrier_wait_ms", json!(ms));
        r.check("carrier on both ports", ms < 10_000, || {
            "no carrier on both ports after 10 s".into()
        });
    }
    r.check(
        "netserver started",
        s.get("netserver_rc") == Some("0"),
        || "netserver did not start in the peer namespace".into(),
    );
    let ping: Vec<&str> = s.lines("ping").collect();
    if let Some(p) = super::ping::parse_summary(&ping) {
        r.metric("ping_received", json!(p.received));
        r.check("peer answers pings", p.received > 0, || {
            format!(
                "the peer does not answer pings ({} sent, 0 received)",
                p.transmitted
            )
        });
    } else {
        r.check_failed("peer answers pings", "ping to the peer printed no summary");
    }
    r
}

#[cfg(test)]
mod sriov_tests {
    use super::*;

    #[test]
    fn qemu_igbvf_enables_and_names_the_vfs_before_finding_them() {
        let mut t = Target::for_test("igbvf", Some("52:54:00:12:34:57"));
        t.device = "qemu-igbvf".into();
        let s = render(&t);
        let vfs = s.find("echo 2 > $pfdev/sriov_numvfs").unwrap();
        let mac = s.find("vf 1 mac 52:54:00:12:34:57").unwrap();
        let bind = s.find("/sys/bus/pci/drivers_probe").unwrap();
        let iface = s.find("IFACE=$(nicemu_iface $MAC").unwrap();
        assert!(vfs < mac && mac < bind && bind < iface, "{s}");
        assert!(s.contains("nicemu_iface 52:54:00:12:34:58 100"));
        t.device = "nicemu-igbvf".into();
        assert!(!render(&t).contains("sriov_numvfs"));
    }
}
