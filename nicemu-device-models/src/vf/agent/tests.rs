// SPDX-License-Identifier: Apache-2.0
//! The agent's answers, message by message, as the igbvf and ixgbevf
//! drivers read them, and its bounds against a hostile VF.

use super::*;

const MAC: [u8; 6] = [0x52, 0x54, 0, 0xaa, 0, 1];
const OTHER: [u8; 6] = [0x52, 0x54, 0, 0xaa, 0, 2];

fn msg(words: &[u32]) -> [u32; WORDS] {
    let mut w = [0; WORDS];
    w[..words.len()].copy_from_slice(words);
    w
}

fn mac_words(op: u32, m: [u8; 6]) -> [u32; WORDS] {
    let mut w = [0; WORDS];
    w[0] = op;
    put_mac(&mut w, 1, m);
    w
}

fn agent(kind: PfKind, admin: Admin) -> Agent {
    let mut a = Agent::new(kind, admin);
    let r = a.handle(&msg(&[op::RESET]));
    assert_eq!(r.words[0] & msgtype::OP_MASK, op::RESET);
    a
}

fn admin_mac() -> Admin {
    Admin {
        mac: Some(MAC),
        ..Admin::default()
    }
}

fn ok(r: &Message) -> bool {
    r.words[0] & msgtype::ACK != 0 && r.words[0] & msgtype::NACK == 0
}

#[test]
fn reset_replies_with_the_mac_or_nack_as_each_pf_does() {
    let mut a = Agent::new(PfKind::Igb, admin_mac());
    let r = a.handle(&msg(&[op::RESET]));
    assert_eq!(r.words[0], op::RESET | msgtype::ACK);
    assert_eq!(mac_of(&r.words, 1), MAC);
    assert_eq!(r.len, 3, "igb: three words");
    assert!(a.cts && a.enabled);
    let mut a = Agent::new(PfKind::Ixgbe, Admin::default());
    let r = a.handle(&msg(&[op::RESET]));
    assert_eq!(r.words[0], op::RESET | msgtype::NACK, "no MAC: NACK");
    assert_eq!(r.len, 4, "ixgbe: four words, the filter type last");
    assert!(a.cts, "clear to send all the same");
}

#[test]
fn messages_before_reset_and_unknown_opcodes_are_refused() {
    for kind in [PfKind::Igb, PfKind::Ixgbe] {
        let mut a = Agent::new(kind, admin_mac());
        let r = a.handle(&msg(&[op::SET_LPE, 9000]));
        assert_eq!(
            r.words[0],
            op::SET_LPE | msgtype::NACK,
            "not CTS: no CTS bit"
        );
        assert_eq!(a.max_frame, STD_FRAME);
        let mut a = agent(kind, admin_mac());
        for junk in [0x07, 0x0f, 0x99, 0xffff, 0x00] {
            let r = a.handle(&msg(&[junk]));
            assert_eq!(r.words[0] & msgtype::NACK, msgtype::NACK, "{junk:#x}");
            assert_ne!(r.words[0] & msgtype::CTS, 0);
        }
        // igb knows none of ixgbe's later messages.
        if kind == PfKind::Igb {
            let r = a.handle(&msg(&[op::API_NEGOTIATE, api::V11]));
            assert!(!ok(&r));
        }
    }
}

#[test]
fn an_admin_mac_is_kept_from_an_untrusted_vf() {
    for kind in [PfKind::Igb, PfKind::Ixgbe] {
        let mut a = agent(kind, admin_mac());
        let r = a.handle(&mac_words(op::SET_MAC_ADDR, OTHER));
        assert!(!ok(&r), "{kind:?}: refused");
        assert_eq!(a.mac, MAC);
        let same = a.handle(&mac_words(op::SET_MAC_ADDR, MAC));
        assert_eq!(
            ok(&same),
            kind == PfKind::Ixgbe,
            "ixgbe takes the same address"
        );
        a.admin.trust = true;
        assert!(ok(&a.handle(&mac_words(op::SET_MAC_ADDR, OTHER))));
        assert_eq!(a.mac, OTHER);
        // Without an admin MAC the VF chooses, but never a multicast one.
        let mut a = agent(kind, Admin::default());
        assert!(ok(&a.handle(&mac_words(op::SET_MAC_ADDR, OTHER))));
        let mut mc = OTHER;
        mc[0] |= 1;
        assert!(!ok(&a.handle(&mac_words(op::SET_MAC_ADDR, mc))));
        assert!(!ok(&a.handle(&mac_words(op::SET_MAC_ADDR, [0; 6]))));
        assert_eq!(a.mac, OTHER);
    }
}

#[test]
fn multicast_lists_are_clamped_and_filter_by_hash() {
    let mut a = agent(PfKind::Ixgbe, admin_mac());
    let group = [0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb];
    let h = u32::from(mc_hash(&group));
    let mut w = [0xffff_ffff; WORDS];
    w[0] = op::SET_MULTICAST | (255 << msgtype::INFO_SHIFT);
    w[1] = h | (0x123 << 16);
    assert!(ok(&a.handle(&w)));
    assert_eq!(a.mc.len(), MAX_MC_HASHES, "a count of 255 is clamped to 30");
    assert!(a.accepts_dst(&group));
    assert!(!a.accepts_dst(&[0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]));
    assert!(a.accepts_dst(&[0xff; 6]));
    assert!(a.accepts_dst(&MAC));
    assert!(!a.accepts_dst(&OTHER));
}

#[test]
fn vlans_are_bounded_and_refused_under_a_port_vlan() {
    let mut a = agent(PfKind::Igb, admin_mac());
    for vid in 1..=40u32 {
        let r = a.handle(&msg(&[op::SET_VLAN | (1 << msgtype::INFO_SHIFT), vid]));
        assert_eq!(ok(&r), vid as usize <= MAX_VLANS, "vid {vid}");
    }
    assert!(a.accepts_vlan(Some(5)) && !a.accepts_vlan(Some(39)));
    assert!(a.accepts_vlan(None) && a.accepts_vlan(Some(0)));
    assert!(ok(&a.handle(&msg(&[op::SET_VLAN, 5]))));
    assert!(!a.accepts_vlan(Some(5)), "removed");
    let mut a = agent(
        PfKind::Ixgbe,
        Admin {
            vlan: Some((100, 0)),
            ..admin_mac()
        },
    );
    let r = a.handle(&msg(&[op::SET_VLAN | (1 << msgtype::INFO_SHIFT), 7]));
    assert!(!ok(&r), "a port VLAN is the host's");
}

#[test]
fn api_negotiation_answers_as_the_linux_ixgbe_pf() {
    let mut a = agent(PfKind::Ixgbe, admin_mac());
    assert!(
        !ok(&a.handle(&msg(&[op::GET_QUEUES]))),
        "1.0 has no GET_QUEUES"
    );
    for (v, accepted) in [
        (api::V15, false),
        (api::V20, false),
        (99, false),
        (api::V10, true),
        (api::V12, true),
        (api::V16, true),
        (api::V17, true),
        (api::V14, true),
    ] {
        let r = a.handle(&msg(&[op::API_NEGOTIATE, v]));
        assert_eq!(ok(&r), accepted, "api {v}");
    }
    assert_eq!(a.api, api::V14);
    let r = a.handle(&msg(&[op::GET_QUEUES]));
    assert!(ok(&r));
    assert_eq!(r.words[1..5], [POOL_QUEUES, POOL_QUEUES, 0, 0]);
    assert_eq!(r.len, WORDS);
    let r = a.handle(&msg(&[op::GET_LINK_STATE]));
    assert_eq!((ok(&r), r.words[1]), (true, 1));
    assert!(
        !ok(&a.handle(&msg(&[op::FEATURES_NEGOTIATE, 3]))),
        "1.7 only"
    );
    a.handle(&msg(&[op::API_NEGOTIATE, api::V17]));
    let r = a.handle(&msg(&[op::FEATURES_NEGOTIATE, 3]));
    assert_eq!((ok(&r), r.words[1]), (true, 0), "no feature in common");
    // VF_RESET goes back to 1.0.
    a.handle(&msg(&[op::RESET]));
    assert_eq!(a.api, api::V10);
}

#[test]
fn rss_queries_need_the_hosts_permission() {
    let mut a = agent(PfKind::Ixgbe, admin_mac());
    a.handle(&msg(&[op::API_NEGOTIATE, api::V13]));
    assert!(!ok(&a.handle(&msg(&[op::GET_RETA]))));
    assert!(!ok(&a.handle(&msg(&[op::GET_RSS_KEY]))));
    a.admin.rss_query = true;
    let mut w = msg(&[op::GET_RSS_KEY]);
    w[1..11].fill(0xdead);
    let r = a.handle(&w);
    assert!(ok(&r));
    assert_eq!(r.words[1..11], [0; 10]);
}

#[test]
fn xcast_modes_beyond_multicast_need_trust() {
    let mut a = agent(PfKind::Ixgbe, admin_mac());
    assert!(
        !ok(&a.handle(&msg(&[op::UPDATE_XCAST_MODE, 2]))),
        "API 1.2 first"
    );
    a.handle(&msg(&[op::API_NEGOTIATE, api::V12]));
    let r = a.handle(&msg(&[op::UPDATE_XCAST_MODE, 2]));
    assert_eq!((ok(&r), r.words[1]), (true, 1), "untrusted: multicast");
    assert!(
        !ok(&a.handle(&msg(&[op::UPDATE_XCAST_MODE, 3]))),
        "promisc: 1.3"
    );
    a.handle(&msg(&[op::API_NEGOTIATE, api::V13]));
    a.admin.trust = true;
    let r = a.handle(&msg(&[op::UPDATE_XCAST_MODE, 3]));
    assert_eq!((ok(&r), r.words[1]), (true, 3));
    assert!(a.accepts_dst(&OTHER) && a.accepts_vlan(Some(77)));
    assert!(!ok(&a.handle(&msg(&[op::UPDATE_XCAST_MODE, 4]))));
    // igb: multicast promiscuous only.
    let mut a = agent(PfKind::Igb, admin_mac());
    let r = a.handle(&msg(&[
        op::SET_PROMISC_OR_MACVLAN | (2 << msgtype::INFO_SHIFT)
    ]));
    assert!(ok(&r));
    assert_eq!(a.xcast, Xcast::AllMulti);
    let r = a.handle(&msg(&[
        op::SET_PROMISC_OR_MACVLAN | (1 << msgtype::INFO_SHIFT)
    ]));
    assert!(!ok(&r), "unicast promiscuous refused");
}

#[test]
fn extra_unicast_filters_are_bounded_and_trust_gated() {
    let mut a = agent(PfKind::Ixgbe, Admin::default());
    for i in 1..=20u8 {
        let m = [0x52, 0, 0, 0, 1, i];
        let r = a.handle(&mac_words(
            op::SET_PROMISC_OR_MACVLAN | (u32::from(i) << msgtype::INFO_SHIFT),
            m,
        ));
        assert_eq!(ok(&r), usize::from(i) <= MAX_UC_FILTERS);
    }
    assert!(a.accepts_dst(&[0x52, 0, 0, 0, 1, 3]));
    a.handle(&msg(&[op::SET_PROMISC_OR_MACVLAN]));
    assert!(a.uc.is_empty(), "index 0 clears");
    let mut a = agent(PfKind::Igb, admin_mac());
    let r = a.handle(&mac_words(
        op::SET_MAC_ADDR | (2 << msgtype::INFO_SHIFT),
        OTHER,
    ));
    assert!(!ok(&r), "igb: an admin MAC allows no filters untrusted");
}

#[test]
fn lpe_limits_per_pf() {
    let mut a = agent(PfKind::Igb, admin_mac());
    assert!(ok(&a.handle(&msg(&[op::SET_LPE, 100_000]))));
    assert_eq!(a.max_frame, IGB_MAX_FRAME, "igb clamps");
    let mut a = agent(PfKind::Ixgbe, admin_mac());
    assert!(
        !ok(&a.handle(&msg(&[op::SET_LPE, 100_000]))),
        "ixgbe refuses"
    );
    assert!(ok(&a.handle(&msg(&[op::SET_LPE, 9018]))));
    assert_eq!(a.max_frame, 9018);
}

#[test]
fn a_flood_of_junk_costs_bounded_memory() {
    let mut a = agent(PfKind::Ixgbe, admin_mac());
    let mut x = 0x1234_5678u32;
    for _ in 0..20_000 {
        let mut w = [0; WORDS];
        for v in &mut w {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *v = x;
        }
        a.handle(&w);
        assert!(a.mc.len() <= MAX_MC_HASHES);
        assert!(a.vlans.len() <= MAX_VLANS);
        assert!(a.uc.len() <= MAX_UC_FILTERS);
    }
    assert_eq!(a.trace().len(), TRACE_LEN);
}

#[test]
fn the_control_message_carries_cts_once_clear_to_send() {
    let mut a = Agent::new(PfKind::Igb, admin_mac());
    assert_eq!(a.control_msg().words[0], op::PF_CONTROL_MSG);
    a.handle(&msg(&[op::RESET]));
    assert_eq!(a.control_msg().words[0], op::PF_CONTROL_MSG | msgtype::CTS);
}
