// SPDX-License-Identifier: Apache-2.0
//! The VF models driven as the igbvf and ixgbevf drivers drive them: each
//! test runs on both parts.

use super::agent::{msgtype, op, Admin, LinkMode};
use super::double::{acked, mbx_call, mbx_read, reply_mac, reset_handshake};
use super::igbvf::I82576Vf;
use super::ixgbevf::I82599Vf;
use super::mailbox::bits;
use super::*;
use crate::function::q;
use crate::port::{Introspect, NetPort, PciFunction};
use crate::testutil::driver::{
    frame_to, rd, rx_buffer, rx_written, send, setup_rings, total, tx_done, wr, DriverQueues, MAC,
};
use crate::testutil::Irq;
use crate::Fault;

macro_rules! on_both_vfs {
    ($($test:ident),* $(,)?) => {
        mod igbvf_part {
            $(
            #[test]
            fn $test() {
                super::$test::<super::I82576Vf>();
            }
            )*
        }
        mod ixgbevf_part {
            $(
            #[test]
            fn $test() {
                super::$test::<super::I82599Vf>();
            }
            )*
        }
    };
}

on_both_vfs!(
    config_space_is_a_vf_with_msix_and_flr,
    registers_beyond_the_bar_are_out_of_the_guests_reach,
    reset_handshake_gives_the_admin_mac_or_nack,
    traffic_flows_after_the_reset_and_counts_in_wrapping_vf_counters,
    the_pools_filters_decide_what_the_vf_receives,
    spoofed_frames_are_dropped_and_counted,
    queue_and_mailbox_causes_route_through_the_ivars,
    link_changes_reach_the_vf_as_a_control_message,
    flr_and_pf_reset_take_clear_to_send_away,
    hostile_register_writes_stay_bounded,
    random_register_programs_never_panic,
    a_port_vlan_tags_and_strips_and_vlan_spoofs_drop,
    mailbox_faults_nack_and_drop,
    loopback_counts_and_the_mac_the_veb_reads,
    host_settings_leave_a_trusted_vfs_own_mac,
    a_host_vflr_resets_the_vf_and_the_host_restores_its_header,
    a_bad_l4_checksum_is_reported_in_the_parts_own_error_bit,
);

fn up<P: VfPart>() -> (Function<Vf<P>>, crate::testutil::TestEnv) {
    let (d, t) = Vf::<P>::dev();
    let r = reset_handshake(&d);
    assert_eq!(r[0], op::RESET | msgtype::ACK);
    (d, t)
}

fn config_space_is_a_vf_with_msix_and_flr<P: VfPart>() {
    let (d, _) = Vf::<P>::dev();
    let mut b = [0u8; 4];
    d.config_read(0, &mut b);
    let dev = u16::from_le_bytes([b[2], b[3]]);
    assert_eq!(u16::from_le_bytes([b[0], b[1]]), 0x8086);
    assert!(dev == 0x10ca || dev == 0x10ed);
    d.config_read(0x3c, &mut b);
    assert_eq!(b[1], 0, "no INTx pin");
    assert_eq!(d.msix_vectors(), 3);
    let bars: Vec<_> = d.bars().iter().map(|b| (b.index, b.size)).collect();
    assert_eq!(bars, [(0, 16 * 1024), (3, 16 * 1024)]);
    d.config_read(0x70, &mut b);
    assert_eq!(b[0], 0x11, "MSI-X capability");
    assert_eq!(u16::from_le_bytes([b[2], b[3]]) & 0x7ff, 2, "3 vectors");
    d.config_read(PCIE_CAP as u64 + 4, &mut b);
    assert_ne!(u32::from_le_bytes(b) & (1 << 28), 0, "FLR capable");
}

fn registers_beyond_the_bar_are_out_of_the_guests_reach<P: VfPart>() {
    let (d, _) = up::<P>();
    // The pool's receive address holds the VF's MAC, beyond the BAR.
    assert_ne!(d.regs.peek(pool::RAL0), 0);
    wr(&d, pool::RAL0, 0);
    assert_ne!(d.regs.peek(pool::RAL0), 0, "a write there is ignored");
    assert_eq!(rd(&d, pool::RAL0), 0, "and reads as 0");
    assert_eq!(rd(&d, 0x3ffc), 0);
}

fn reset_handshake_gives_the_admin_mac_or_nack<P: VfPart>() {
    let (d, _) = Vf::<P>::dev();
    assert_eq!(rd(&d, P::MAP.mailbox), bits::RSTD, "reset done at power-on");
    let r = reset_handshake(&d);
    assert!(r[0] & msgtype::ACK != 0);
    assert_eq!(reply_mac(&r), MAC);
    assert_eq!(d.vf_mac(), MAC);
    // Without an administrative MAC: NACK; the driver then picks one and
    // sets it.
    let (d, _) = Vf::<P>::dev_with(VfConfig {
        vf: 1,
        admin: Admin::default(),
    });
    let r = reset_handshake(&d);
    assert_eq!(r[0], op::RESET | msgtype::NACK);
    let mine = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
    let set = mbx_call(
        &d,
        &[
            op::SET_MAC_ADDR,
            u32::from_le_bytes([mine[0], mine[1], mine[2], mine[3]]),
            u32::from(u16::from_le_bytes([mine[4], mine[5]])),
        ],
        1,
    );
    assert!(acked(set[0]));
    assert_eq!(d.vf_mac(), mine);
    let trace = d.mailbox_trace();
    assert!(trace.len() >= 4);
    assert!(trace[0].from_vf && trace[0].words[0] == op::RESET);
}

fn traffic_flows_after_the_reset_and_counts_in_wrapping_vf_counters<P: VfPart>() {
    let (d, t) = Vf::<P>::dev();
    setup_rings(&d, 8);
    // Before VF_RESET the PF has not enabled the pool.
    assert_eq!(
        NetPort::deliver(&d, &frame_to(MAC), None, true),
        crate::Delivery::Done
    );
    assert_eq!(rx_written(&d, 0).0 & 1, 0, "not received before the reset");
    let r = reset_handshake(&d);
    assert!(acked(r[0] | msgtype::CTS));
    setup_rings(&d, 8);
    let stats = if P::KIND == agent::PfKind::Igb {
        (
            igbvf::stat::VFGPRC,
            igbvf::stat::VFGORC,
            igbvf::stat::VFGPTC,
        )
    } else {
        (
            ixgbevf::stat::VFGPRC,
            ixgbevf::stat::VFGORC_LSB,
            ixgbevf::stat::VFGPTC,
        )
    };
    let base = rd(&d, stats.0);
    let mut f = frame_to(MAC);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 9]);
    NetPort::deliver(&d, &f, None, true);
    let (st, len) = rx_written(&d, 0);
    assert_eq!(st & 3, 3, "DD|EOP");
    assert_eq!(usize::from(len), f.len());
    assert_eq!(rx_buffer(&d, 0, f.len()), f);
    assert_eq!(rd(&d, stats.0), base + 1);
    assert_eq!(rd(&d, stats.0), base + 1, "not cleared by a read");
    assert_eq!(rd(&d, stats.1), 64, "octets with FCS");
    // A counter near its 32-bit end wraps, as the drivers expect.
    d.inject(Fault::CounterPreset("GPRC".into(), u64::from(u32::MAX)))
        .unwrap();
    NetPort::deliver(&d, &f, None, true);
    assert_eq!(rd(&d, stats.0), 0, "wrapped");
    // Transmit from the VF's own address.
    let mut out = frame_to([0x52, 0x54, 0, 0, 0, 9]);
    out[6..12].copy_from_slice(&MAC);
    send(&d, 0, 8, &out);
    assert!(tx_done(&d, 0));
    assert_eq!(t.wire.take(), vec![out]);
    assert_eq!(rd(&d, stats.2), 1);
}

fn the_pools_filters_decide_what_the_vf_receives<P: VfPart>() {
    let (d, _) = up::<P>();
    setup_rings(&d, 8);
    let before = total(&d, "GPRC");
    NetPort::deliver(&d, &frame_to([0x52, 0x54, 0, 0, 0, 0x77]), None, true);
    let group = [0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb];
    NetPort::deliver(&d, &frame_to(group), None, true);
    assert_eq!(
        total(&d, "GPRC"),
        before,
        "another's unicast, unknown group"
    );
    let h = u32::from(agent::mc_hash(&group));
    let r = mbx_call(&d, &[op::SET_MULTICAST | (1 << msgtype::INFO_SHIFT), h], 1);
    assert!(acked(r[0]));
    NetPort::deliver(&d, &frame_to(group), None, true);
    NetPort::deliver(&d, &frame_to([0xff; 6]), None, true);
    assert_eq!(total(&d, "GPRC"), before + 2);
    assert_eq!(total(&d, "MPRC"), 1);
    // A tagged frame needs the VLAN filter.
    let mut tagged = vec![0u8; 64];
    tagged[..6].copy_from_slice(&MAC);
    tagged[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
    tagged[14..16].copy_from_slice(&10u16.to_be_bytes());
    NetPort::deliver(&d, &tagged, None, true);
    assert_eq!(total(&d, "GPRC"), before + 2);
    let r = mbx_call(&d, &[op::SET_VLAN | (1 << msgtype::INFO_SHIFT), 10], 1);
    assert!(acked(r[0]));
    if P::KIND == agent::PfKind::Ixgbe {
        let v = rd(&d, P::rxq_base(0) + q::DCTL) | ixgbevf::RXDCTL_VME;
        wr(&d, P::rxq_base(0) + q::DCTL, v);
    }
    NetPort::deliver(&d, &tagged, None, true);
    assert_eq!(total(&d, "GPRC"), before + 3);
    let (st, len) = rx_written(&d, 2);
    assert_eq!(st & (1 << 3), 1 << 3, "VP: the tag went to the descriptor");
    assert_eq!(usize::from(len), 60);
    // SET_LPE: a long frame passes only after it.
    let long = vec![0xffu8; 1600];
    NetPort::deliver(&d, &long, None, true);
    assert_eq!(total(&d, "ROC"), 1);
    assert!(acked(mbx_call(&d, &[op::SET_LPE, 1600 + 4], 1)[0]));
    NetPort::deliver(&d, &long, None, true);
    assert_eq!(total(&d, "ROC"), 1);
}

fn spoofed_frames_are_dropped_and_counted<P: VfPart>() {
    let (d, t) = up::<P>();
    setup_rings(&d, 8);
    let mut spoof = frame_to([0x52, 0x54, 0, 0, 0, 9]);
    spoof[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 0x66]);
    send(&d, 0, 8, &spoof);
    assert!(tx_done(&d, 0), "the descriptor completes");
    assert!(t.wire.take().is_empty(), "the frame does not leave");
    assert_eq!(total(&d, "SPOOF_DROPS"), 1);
    let mut admin = d.admin();
    admin.spoofchk = false;
    d.set_admin(admin);
    send(&d, 1, 8, &spoof);
    assert_eq!(t.wire.take(), vec![spoof], "spoof checking off");
}

fn queue_and_mailbox_causes_route_through_the_ivars<P: VfPart>() {
    let (d, t) = up::<P>();
    setup_rings(&d, 8);
    let m = P::MAP;
    // Rx queue 0 → vector 0, Tx queue 0 → vector 1, other causes → 2.
    wr(&d, m.ivar0, 0x80 | (0x81 << 8));
    // As igbvf_configure_msix and ixgbevf_set_ivar write it: vector 2, valid.
    wr(&d, m.ivar_misc, 0x82);
    wr(&d, m.eiac, 0x3);
    wr(&d, m.eiam, 0x3);
    wr(&d, m.eims, 0x7);
    t.irq.take();
    NetPort::deliver(&d, &frame_to(MAC), None, true);
    assert_eq!(t.irq.take(), vec![Irq::Msix(0)]);
    assert_eq!(rd(&d, m.eims), 0x6, "EIAM masked vector 0");
    assert_eq!(rd(&d, m.eicr) & 1, 0, "EIAC cleared its cause");
    let mut out = frame_to([2; 6]);
    out[6..12].copy_from_slice(&MAC);
    send(&d, 0, 8, &out);
    assert_eq!(t.irq.take(), vec![Irq::Msix(1)]);
    mbx_call(&d, &[op::SET_LPE, 1518], 1);
    assert_eq!(t.irq.take(), vec![Irq::Msix(2)], "the PF's reply");
    assert_eq!(rd(&d, m.eicr) & 4, 4, "not auto-cleared");
}

fn link_changes_reach_the_vf_as_a_control_message<P: VfPart>() {
    let (d, t) = up::<P>();
    let m = P::MAP;
    // As igbvf_configure_msix and ixgbevf_set_ivar write it: vector 2, valid.
    wr(&d, m.ivar_misc, 0x82);
    wr(&d, m.eims, 0x4);
    assert_eq!(rd(&d, m.link), P::link_reg(true));
    t.irq.take();
    d.set_link(false);
    assert_eq!(rd(&d, m.link), P::link_reg(false));
    assert_eq!(t.irq.take(), vec![Irq::Msix(2)]);
    assert_ne!(rd(&d, m.mailbox) & bits::PFSTS, 0);
    let w = mbx_read(&d, 1);
    assert_eq!(w[0], op::PF_CONTROL_MSG | msgtype::CTS);
    d.set_link(true);
    assert_eq!(rd(&d, m.link), P::link_reg(true));
    // The host's link state setting wins over the port's.
    let mut admin = d.admin();
    admin.link = LinkMode::Disable;
    d.set_admin(admin);
    assert_eq!(rd(&d, m.link), P::link_reg(false));
    assert!(!d.link_up());
}

fn flr_and_pf_reset_take_clear_to_send_away<P: VfPart>() {
    let (d, _) = up::<P>();
    let devctl = PCIE_CAP as u64 + 8;
    let mut b = [0u8; 2];
    d.config_read(devctl, &mut b);
    let v = u16::from_le_bytes(b) | (1 << 15);
    d.config_write(devctl, &v.to_le_bytes());
    assert_eq!(rd(&d, P::MAP.mailbox) & bits::RSTD, bits::RSTD);
    let r = mbx_call(&d, &[op::SET_LPE, 2000], 1);
    assert_eq!(r[0] & (msgtype::NACK | msgtype::CTS), msgtype::NACK);
    let (d, t) = up::<P>();
    t.clock.set(5_000_000_000);
    d.pf_reset();
    assert_ne!(rd(&d, P::MAP.mailbox) & bits::RSTD, 0);
    let w = mbx_read(&d, 1);
    assert_eq!(w[0], op::PF_CONTROL_MSG, "no CTS after the PF's reset");
    // Reading while not clear to send earns a bare NACK (the drivers' link
    // check then resets the VF), at most every 2 s.
    assert_ne!(rd(&d, P::MAP.mailbox) & bits::PFSTS, 0);
    assert_eq!(mbx_read(&d, 1)[0], msgtype::NACK);
    assert_eq!(rd(&d, P::MAP.mailbox) & bits::PFSTS, 0, "not again at once");
    t.clock.set(7_000_000_000);
    wr(&d, P::MAP.mailbox, bits::ACK);
    assert_ne!(rd(&d, P::MAP.mailbox) & bits::PFSTS, 0, "2 s later");
    assert_eq!(mbx_read(&d, 1)[0], msgtype::NACK);
    let r = reset_handshake(&d);
    assert!(r[0] & msgtype::ACK != 0, "the VF driver recovers");
    t.clock.set(20_000_000_000);
    mbx_read(&d, 1);
    assert_eq!(
        rd(&d, P::MAP.mailbox) & bits::PFSTS,
        0,
        "clear to send: no NACK for an ACK"
    );
}

fn hostile_register_writes_stay_bounded<P: VfPart>() {
    let (d, _) = up::<P>();
    setup_rings(&d, 8);
    let mut x = 0x9e37_79b9u32;
    for _ in 0..20_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let off = (x >> 8) & 0x3ffc;
        let v = x.rotate_left(7);
        if off == P::MAP.ctrl || off == P::MAP.mailbox && v & bits::REQ == 0 {
            continue;
        }
        wr(&d, off, v);
        rd(&d, off ^ 4);
    }
    let (st, nacks) = d.mailbox_stats();
    assert!(st.requests >= nacks);
    assert!(d.mailbox_trace().len() <= agent::TRACE_LEN);
    // Still a working VF after the junk.
    let r = reset_handshake(&d);
    assert!(r[0] & msgtype::ACK != 0);
    assert!(d.driver_view().interrupts.starts_with("MSI-X"));
}

fn random_register_programs_never_panic<P: VfPart>() {
    let (d, _) = up::<P>();
    setup_rings(&d, 8);
    let mut r = crate::testutil::XorShift(0x5eed_0000 + u64::from(P::LAYOUT.srrctl));
    let mut prog = vec![0u8; 7 * 4000];
    r.fill(&mut prog);
    crate::testutil::run_program(&d, &prog);
    let r = reset_handshake(&d);
    assert!(r[0] & msgtype::ACK != 0, "responsive after the program");
}

fn a_port_vlan_tags_and_strips_and_vlan_spoofs_drop<P: VfPart>() {
    let (d, t) = up::<P>();
    setup_rings(&d, 8);
    let mut admin = d.admin();
    admin.vlan = Some((100, 5));
    d.set_admin(admin);
    let mut out = frame_to([0x52, 0x54, 0, 0, 0, 9]);
    out[6..12].copy_from_slice(&MAC);
    send(&d, 0, 8, &out);
    let wire = t.wire.take();
    assert_eq!(wire.len(), 1);
    assert_eq!(wire[0][12..16], [0x81, 0x00, 0xa0, 100], "PCP 5, VID 100");
    assert_eq!(wire[0].len(), out.len() + 4);
    // The VF may not tag under a port VLAN.
    let mut tagged = out.clone();
    tagged.splice(12..12, [0x81, 0x00, 0x00, 7]);
    send(&d, 1, 8, &tagged);
    assert!(t.wire.take().is_empty());
    assert_eq!(total(&d, "SPOOF_DROPS"), 1);
    // Received: only the port VLAN's frames, tag stripped.
    NetPort::deliver(&d, &frame_to(MAC), None, true);
    assert_eq!(total(&d, "GPRC"), 0, "untagged: not the VF's VLAN");
    let mut inbound = frame_to(MAC);
    inbound.splice(12..12, [0x81, 0x00, 0x00, 100]);
    NetPort::deliver(&d, &inbound, None, true);
    let (st, len) = rx_written(&d, 0);
    assert_eq!(
        (st & 3, usize::from(len)),
        (3, 60),
        "placed without the tag"
    );
    assert_eq!(st & (1 << 3), 0, "no VP: the PF stripped it");
    assert_eq!(rx_buffer(&d, 0, 60), frame_to(MAC));
    // Without a port VLAN, spoof checking drops a VLAN the VF has not.
    admin.vlan = None;
    d.set_admin(admin);
    send(&d, 2, 8, &tagged);
    assert!(t.wire.take().is_empty());
    assert!(acked(
        mbx_call(&d, &[op::SET_VLAN | (1 << msgtype::INFO_SHIFT), 7], 1)[0]
    ));
    send(&d, 3, 8, &tagged);
    assert_eq!(t.wire.take(), vec![tagged]);
}

fn mailbox_faults_nack_and_drop<P: VfPart>() {
    let (d, _) = up::<P>();
    d.mbx_nack(1);
    let r = mbx_call(&d, &[op::SET_LPE, 2000], 1);
    assert_eq!(r[0], op::SET_LPE | msgtype::NACK | msgtype::CTS);
    assert!(acked(mbx_call(&d, &[op::SET_LPE, 2000], 1)[0]), "one only");
    d.mbx_drop(1);
    let m = P::MAP;
    wr(&d, m.mailbox, bits::VFU);
    wr(&d, m.mbmem, op::SET_LPE);
    wr(&d, m.mailbox, bits::REQ);
    assert_eq!(
        rd(&d, m.mailbox) & (bits::PFACK | bits::PFSTS),
        0,
        "no answer"
    );
    assert!(acked(mbx_call(&d, &[op::SET_LPE, 2000], 1)[0]));
    // A host-side VFLR: reset done, not clear to send.
    d.vflr();
    assert_ne!(rd(&d, m.mailbox) & bits::RSTD, 0);
    assert!(!d.agent().cts);
}

fn loopback_counts_and_the_mac_the_veb_reads<P: VfPart>() {
    let (d, _) = Vf::<P>::dev_with(VfConfig {
        vf: 2,
        admin: Admin::default(),
    });
    assert_eq!(d.vf_mac(), [0; 6], "none before the driver sets one");
    reset_handshake(&d);
    let mine = [0x02, 0, 0, 0, 0, 0x42];
    let w1 = u32::from_le_bytes([mine[0], mine[1], mine[2], mine[3]]);
    let w2 = u32::from(u16::from_le_bytes([mine[4], mine[5]]));
    assert!(acked(mbx_call(&d, &[op::SET_MAC_ADDR, w1, w2], 1)[0]));
    assert_eq!(d.vf_mac(), mine);
    reset_handshake(&d);
    assert_eq!(d.vf_mac(), mine, "kept across the VF's reset");
    d.count_loopback(true, 2, 128);
    d.count_loopback(false, 1, 64);
    assert_eq!(total(&d, "GPTLBC"), 2);
    assert_eq!(total(&d, "GOTLBC"), 128);
    assert_eq!(total(&d, "GPRLBC"), 1);
    if P::KIND == agent::PfKind::Igb {
        assert_eq!(rd(&d, 0x0f44), 2, "VFGPTLBC");
        assert_eq!(rd(&d, 0x0f50), 128, "VFGOTLBC");
        assert_eq!(rd(&d, 0x0f40), 1, "VFGPRLBC");
        assert_eq!(rd(&d, 0x0f48), 64, "VFGORLBC");
    }
}

fn host_settings_leave_a_trusted_vfs_own_mac<P: VfPart>() {
    let (d, _) = up::<P>();
    let mine = [0x52, 0x54, 0, 0x12, 0x34, 0x99];
    let w1 = u32::from_le_bytes([mine[0], mine[1], mine[2], mine[3]]);
    let w2 = u32::from(u16::from_le_bytes([mine[4], mine[5]]));
    let r = mbx_call(&d, &[op::SET_MAC_ADDR, w1, w2], 1);
    assert!(!acked(r[0]), "untrusted under an admin MAC: refused");
    assert_eq!(d.vf_mac(), MAC);
    let mut admin = d.admin();
    admin.trust = true;
    d.set_admin(admin);
    assert!(acked(mbx_call(&d, &[op::SET_MAC_ADDR, w1, w2], 1)[0]));
    assert_eq!(d.vf_mac(), mine);
    admin.trust = false;
    admin.spoofchk = false;
    d.set_admin(admin);
    assert_eq!(d.vf_mac(), mine, "trust off keeps the MAC the VF chose");
    assert_eq!(d.agent().mac, mine);
    admin.mac = Some([0x52, 0x54, 0, 0x12, 0x34, 0x77]);
    d.set_admin(admin);
    assert_eq!(
        d.vf_mac(),
        [0x52, 0x54, 0, 0x12, 0x34, 0x77],
        "a new admin MAC"
    );
}

/// `fault DEV vflr`: the host resets the VF as Linux's `pci_reset_function` does
/// (the header saved, the FLR, the header restored): the VF's registers and mailbox
/// start over (reset done, not clear to send) while memory space and bus mastering are
/// back, so the driver's own reset recovers.
fn a_host_vflr_resets_the_vf_and_the_host_restores_its_header<P: VfPart>() {
    let (d, _) = up::<P>();
    crate::testutil::bus_master(&d);
    assert!(d.mem.bus_master());
    d.vflr();
    let mut b = [0u8; 2];
    d.config_read(4, &mut b);
    assert_eq!(
        u16::from_le_bytes(b) & 0x6,
        0x6,
        "memory space and bus mastering"
    );
    assert!(d.mem.bus_master(), "DMA allowed again");
    assert_ne!(rd(&d, P::MAP.mailbox) & bits::RSTD, 0, "the VF was reset");
    assert!(!d.agent().cts);
    let r = reset_handshake(&d);
    assert_eq!(r[0] & !msgtype::CTS, op::RESET | msgtype::ACK);
}

/// A UDP/IPv4 frame with a good IP header checksum and a wrong UDP one is
/// received with the part's own status and error bits: the 82576's TCPCS/UDPCS
/// and L4E (bit 29), the 82599's L4CS and TCPE (bit 30; its bit 29 is USE, one of
/// the frame errors ixgbevf drops a frame for, `IXGBE_RXDADV_ERR_FRAME_ERR_MASK`).
fn a_bad_l4_checksum_is_reported_in_the_parts_own_error_bit<P: VfPart>() {
    let (d, _) = up::<P>();
    setup_rings(&d, 8);
    let mut f = vec![0u8; 14 + 20 + 8 + 18];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 9]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&46u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[192, 168, 100, 2]);
    ip[16..20].copy_from_slice(&[192, 168, 100, 1]);
    let sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    let folded = (sum & 0xffff) + (sum >> 16);
    let csum = !(((folded & 0xffff) + (folded >> 16)) as u16);
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&1000u16.to_be_bytes());
    udp[2..4].copy_from_slice(&2000u16.to_be_bytes());
    udp[4..6].copy_from_slice(&26u16.to_be_bytes());
    udp[6..8].copy_from_slice(&0x1234u16.to_be_bytes());
    NetPort::deliver(&d, &f, None, true);
    let (st, _) = rx_written(&d, 0);
    assert_eq!(st & 3, 3, "DD|EOP: received");
    let (cs, err, not) = if P::KIND == agent::PfKind::Igb {
        (1 << 4, 1 << 29, 1 << 30)
    } else {
        (1 << 5, 1 << 30, 1 << 29)
    };
    assert_eq!(st & (1 << 6), 1 << 6, "IPCS");
    assert_eq!(st & cs, cs, "UDP checksum checked: {st:#x}");
    assert_eq!(st & err, err, "L4 checksum error: {st:#x}");
    assert_eq!(st & not, 0, "no other error: {st:#x}");
    assert_eq!(st & (1 << 31), 0, "no IP checksum error: {st:#x}");
}

/// igbvf at an MTU above 1504 (`igbvf_change_mtu`: 2048-byte buffers, half a
/// page) programs SRRCTL as `igbvf_setup_srrctl` does: DROP_EN, BSIZEPACKET
/// 2 KiB, BSIZEHEADER 128 bytes, DESCTYPE 101b "header split, always use the
/// header buffer" (the 82576 datasheet's "Header Splitting and
/// Replication" and its table; SRRCTL), and gives every descriptor a header buffer
/// (`hdr_addr`, an skb's data) and a packet buffer (`pkt_addr`, half a page).
/// `igbvf_clean_rx_irq` takes HDR_LEN bytes from the header buffer into the
/// skb's linear part and the packet buffers as page fragments, then
/// `eth_type_trans` pulls 14 bytes from the linear part: a write-back with a
/// HDR_LEN below 14 is a guest `BUG()` (`__skb_pull`, skbuff.h).
#[test]
fn igbvf_header_split_always_at_mtu_9000() {
    use vm_memory::{Bytes, GuestAddress};
    const HDR_BUFS: u64 = 0xc_0000;
    const HDR: usize = 128;
    let (d, _) = up::<I82576Vf>();
    // igbvf_set_rlpml: the MTU 9000 frame plus a VLAN tag.
    assert!(acked(mbx_call(&d, &[op::SET_LPE, 9018 + 4], 1)[0]));
    let n = 16u32;
    setup_rings(&d, n);
    let rb = I82576Vf::rxq_base(0);
    wr(&d, rb + q::DCTL, 0);
    let srrctl = (1 << 31) | (5 << 25) | (((HDR as u32) >> 6) << 8) | 2;
    wr(&d, rb + 0x0c, srrctl);
    assert_eq!(rd(&d, rb + 0x0c), srrctl, "SRRCTL keeps DESCTYPE");
    let hdr_buf = |i: u32| HDR_BUFS + u64::from(i) * HDR as u64;
    for i in 0..n {
        let desc = crate::testutil::driver::RX_RING + u64::from(i) * 16;
        d.mem()
            .write_obj(hdr_buf(i), GuestAddress(desc + 8))
            .unwrap();
    }
    wr(&d, rb + q::H, 0);
    wr(&d, rb + q::DCTL, crate::function::QUEUE_ENABLE);
    wr(&d, rb + q::T, n - 1);
    // What igbvf_clean_rx_irq builds from descriptors `from..`: the skb's
    // linear part (HDR_LEN of the first descriptor, capped at the header
    // buffer's size) and its fragments; the descriptors it took.
    let rebuild = |from: u32| -> (Vec<u8>, Vec<u8>, u32) {
        let (mut linear, mut frags) = (Vec::new(), Vec::new());
        let mut i = from;
        loop {
            let desc = crate::testutil::driver::RX_RING + u64::from(i) * 16;
            let hdr_info: u32 = d.mem().read_obj(GuestAddress(desc)).unwrap();
            let (st, len) = rx_written(&d, i);
            assert_eq!(st & 1, 1, "DD on descriptor {i}");
            if i == from {
                let hlen = ((hdr_info >> 21) & 0x3ff) as usize;
                linear = vec![0u8; hlen.min(HDR)];
                d.mem()
                    .read_slice(&mut linear, GuestAddress(hdr_buf(i)))
                    .unwrap();
            }
            frags.extend(rx_buffer(&d, i, usize::from(len)));
            i += 1;
            if st & 2 != 0 {
                return (linear, frags, i - from);
            }
        }
    };
    let frame = |len: usize| -> Vec<u8> {
        let mut f: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        f[..6].copy_from_slice(&MAC);
        f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 9]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f
    };
    // An echo request of ping's default size: all of it in the header
    // buffer (packet length <= BSIZEHEADER: HDR_LEN the packet's length,
    // PKT_LEN 0).
    let small = frame(98);
    NetPort::deliver(&d, &small, None, true);
    let (linear, frags, used) = rebuild(0);
    assert_eq!(used, 1);
    assert!(linear.len() >= 14, "eth_type_trans needs 14 linear bytes");
    assert_eq!(linear, small, "the whole frame in the header buffer");
    assert!(frags.is_empty(), "PKT_LEN 0");
    // A 9014-byte frame: its first 128 bytes in the first descriptor's
    // header buffer (HDR_LEN = BSIZEHEADER), the rest in 2 KiB packet
    // buffers over five descriptors.
    let big = frame(9014);
    NetPort::deliver(&d, &big, None, true);
    let (linear, frags, used) = rebuild(1);
    assert_eq!(used, 5, "128 + 4 * 2048 + 694 bytes");
    assert_eq!(linear.len(), HDR);
    assert_eq!([linear, frags].concat(), big);
    assert_eq!(total(&d, "GPRC"), 2);
}
