// SPDX-License-Identifier: Apache-2.0
//! Unit tests that drive the 82576 model the way the igb driver does: what
//! only the 82576 does (what both parts do alike is `function/tests.rs`).

use vm_memory::{Bytes, GuestAddress};

use super::double::{phy_read, phy_write};
use super::*;
use crate::testutil::driver::DriverQueues as _;
use crate::testutil::driver::{
    autoneg_done, nvm_read, ptp_l2_frame, rd, send, setup_rings, systim, wr, DriverPart, MAC,
};
use crate::testutil::{Irq, TestEnv};
use crate::{Clock, Delivery, Introspect, NetPort, PciFunction};

#[test]
fn probe_sequence_reset_nvm_mac_phy_link() {
    let (d, t) = I82576::dev();
    // igb_reset_hw_82575: master disable, reset, auto-read done.
    let v = rd(&d, CTRL) | ctrl::GIO_MASTER_DISABLE;
    wr(&d, CTRL, v);
    assert_eq!(rd(&d, STATUS) & status::GIO_MASTER_ENABLE, 0);
    let v = rd(&d, CTRL) | ctrl::RST;
    wr(&d, CTRL, v);
    assert_eq!(rd(&d, CTRL) & ctrl::RST, 0, "RST self-clears");
    assert_ne!(rd(&d, STATUS) & status::GIO_MASTER_ENABLE, 0);
    let eecd = rd(&d, EECD);
    assert_ne!(eecd & (1 << 9), 0, "AUTO_RD");
    assert_ne!(eecd & (1 << 8), 0, "PRES");
    assert_eq!(1usize << (((eecd >> 11) & 0xf) + 6), NVM_WORDS);
    assert_ne!(rd(&d, EEMNGCTL) & (1 << 18), 0, "CFG_DONE0");
    // igb_validate_nvm_checksum
    let sum = (0..0x40).fold(0u16, |s, w| s.wrapping_add(nvm_read(&d, w)));
    assert_eq!(sum, 0xbaba);
    assert_eq!(nvm_read(&d, 0x37), 0xffff, "no alternate MAC");
    // igb_read_mac_addr: RAL0/RAH0
    let ral = rd(&d, RAL).to_le_bytes();
    let rah = rd(&d, RAH);
    assert_eq!(&ral[..], &MAC[..4]);
    assert_eq!((rah as u16).to_le_bytes(), [MAC[4], MAC[5]]);
    assert_ne!(rah & (1 << 31), 0, "AV");
    // igb_get_phy_id: IGP03
    let id = (u32::from(phy_read(&d, 2)) << 16) | u32::from(phy_read(&d, 3) & 0xfff0);
    assert_eq!(id, 0x02a8_0390);
    // Autonegotiation restart, then the driver reads BMSR twice: no link
    // until the negotiation is over.
    let t0 = t.clock.now_ns();
    t.timer.take();
    phy_write(&d, 0, 0x1000 | 0x0200);
    assert_eq!(phy_read(&d, 0) & 0x0200, 0, "restart self-clears");
    assert_eq!(t.timer.take(), vec![t0 + crate::phy::AUTONEG_NS]);
    let _ = phy_read(&d, 1);
    assert_eq!(phy_read(&d, 1) & 0x0024, 0, "negotiating: no link");
    autoneg_done(&d, &t);
    let _ = phy_read(&d, 1);
    let bmsr = phy_read(&d, 1);
    assert_ne!(bmsr & 0x0004, 0, "link");
    assert_ne!(bmsr & 0x0020, 0, "autoneg complete");
    assert_ne!(phy_read(&d, 0x0a) & 0x1000, 0, "remote receiver ok");
    let v = rd(&d, CTRL) | ctrl::SLU;
    wr(&d, CTRL, v);
    let st = rd(&d, STATUS);
    assert_eq!(
        st & (status::LU | status::FD | status::SPEED_1000),
        status::LU | status::FD | status::SPEED_1000
    );
    // MDIC to another PHY address reports an error.
    wr(&d, MDIC, (2 << 16) | (3 << 21) | (2 << 26));
    assert_ne!(rd(&d, MDIC) & (1 << 30), 0);
}

#[test]
fn register_semantics_of_the_self_test() {
    let (d, _t) = I82576::dev();
    // STATUS ignores writes (toggle test).
    let before = rd(&d, STATUS);
    wr(&d, STATUS, 0x7fff_f3ff);
    assert_eq!(rd(&d, STATUS), before);
    // RCTL set-and-read rows.
    wr(&d, RCTL, 0);
    assert_eq!(rd(&d, RCTL), 0);
    wr(&d, RCTL, 0x003f_fffb & 0x04cf_b0fe);
    assert_eq!(rd(&d, RCTL) & 0x04cf_b0fe, 0x000f_b0fa);
    wr(&d, RCTL, 0x04cf_b0fe);
    assert_eq!(rd(&d, RCTL) & 0x04cf_b0fe, 0x04cf_b0fe);
    wr(&d, TCTL, 0);
    assert_eq!(rd(&d, TCTL), 0);
    // Pattern rows: queue arrays through both address ranges.
    for pat in [0x5a5a_5a5au32, 0xa5a5_a5a5, 0, u32::MAX] {
        for (off, mask, write) in [
            (0x2808u32, 0x000f_fff0u32, 0x000f_ffffu32),
            (0xc3c8, 0x000f_fff0, 0x000f_ffff),
            (0x2900, 0xffff_ff80, u32::MAX),
            (0x3b04, u32::MAX, u32::MAX),
            (0x002c, 0xffff, u32::MAX),
            (0x0038, u32::MAX, u32::MAX),
            (0x2168, 0xfff0, 0xfff0),
            (0x0410, 0x3fff_ffff, 0x3fff_ffff),
            (0x54e4, 0x83ff_ffff, u32::MAX),
        ] {
            wr(&d, off, pat & write);
            assert_eq!(rd(&d, off) & mask, pat & write & mask, "{off:#x} {pat:#x}");
        }
    }
    // RDT sticks while the queue is enabled, without any DMA.
    wr(&d, 0x2828, QUEUE_ENABLE);
    wr(&d, 0x2818, 0xffff);
    assert_eq!(rd(&d, 0x2818), 0xffff);
    assert_eq!(rd(&d, RXQ_BASE + q::T), 0xffff, "alias of queue 0");
    // Legacy alias and canonical block are one register.
    wr(&d, 0x3900, 0x1000);
    assert_eq!(rd(&d, TXQ_BASE + QUEUE_STRIDE), 0x1000);
}

#[test]
fn semaphores() {
    let (d, _t) = I82576::dev();
    assert_eq!(rd(&d, SWSM) & 1, 0, "first read acquires");
    assert_eq!(rd(&d, SWSM) & 1, 1, "taken");
    let v = rd(&d, SWSM) | 2;
    wr(&d, SWSM, v);
    assert_eq!(rd(&d, SWSM) & 2, 2);
    wr(&d, SWSM, 0);
    assert_eq!(rd(&d, SWSM) & 1, 0);
    wr(&d, SW_FW_SYNC, 0xffff_0002);
    assert_eq!(rd(&d, SW_FW_SYNC), 2, "firmware bits stay clear");
    wr(&d, EECD, 1 << 6);
    assert_ne!(rd(&d, EECD) & (1 << 7), 0, "grant follows request");
}

#[test]
fn interrupt_self_test_legacy_path() {
    // igb_intr_test after a reset: GPIE = 0, every ICS bit enabled in IMS fires
    // the single interrupt and the handler's ICR read sees (and clears) it.
    let (d, t) = I82576::dev();
    wr(&d, IMC, u32::MAX);
    for i in 0..31 {
        let bit = 1u32 << i;
        if bit & 0x77d4_fbfd == 0 {
            continue;
        }
        wr(&d, ICR, u32::MAX);
        wr(&d, IMC, bit);
        wr(&d, ICS, bit);
        assert!(t.irq.take().is_empty(), "masked bit {i} must not fire");
        wr(&d, ICR, u32::MAX);
        wr(&d, IMS, bit);
        wr(&d, ICS, bit);
        assert_eq!(t.irq.take(), vec![Irq::Legacy], "bit {i}");
        assert_ne!(rd(&d, ICR) & bit, 0);
        assert_eq!(rd(&d, ICR), 0, "cleared by the read");
        wr(&d, ICR, u32::MAX);
        wr(&d, IMC, !bit);
        wr(&d, ICS, !bit);
        assert_eq!(rd(&d, ICR) & bit, 0, "bit {i} not raised by others");
    }
}

#[test]
fn msix_routing_autoclear_automask() {
    let (d, t) = I82576::dev();
    wr(&d, GPIE, 0xc000_0011);
    wr(&d, IVAR_MISC, 0x8000);
    wr(&d, IVAR0, 0x0000_8281); // rx0 -> 1, tx0 -> 2
    wr(&d, EIAC, 0x7);
    wr(&d, EIAM, 0x7);
    wr(&d, EIMS, 0x7);
    wr(&d, IMS, intr::ICR_LSC);
    wr(&d, ICS, intr::ICR_LSC);
    assert_eq!(t.irq.take(), vec![Irq::Msix(0)]);
    assert_eq!(rd(&d, EIMS) & 1, 0, "auto-masked");
    assert_ne!(rd(&d, ICR) & intr::ICR_LSC, 0);
    wr(&d, EIMS, 1);
    // Watchdog: EICS fires queue vectors once each, then they are masked.
    wr(&d, EICS, 0x6);
    assert_eq!(t.irq.take(), vec![Irq::Msix(1), Irq::Msix(2)]);
    wr(&d, EICS, 0x6);
    assert!(t.irq.take().is_empty(), "masked until re-armed");
    assert_eq!(rd(&d, EICR) & 0x6, 0x6, "cause pending");
    wr(&d, EIMS, 0x2);
    assert_eq!(
        t.irq.take(),
        vec![Irq::Msix(1)],
        "re-arm delivers the pending cause"
    );
    assert_eq!(intr::ivar_slot(9, intr::Dir::Tx), (1, 24));
    assert_eq!(intr::ivar_slot(3, intr::Dir::Rx), (3, 0));
}

#[test]
fn filters_unicast_multicast_broadcast() {
    let (d, _t) = I82576::dev();
    setup_rings(&d, 16);
    wr(&d, RCTL, rctl::EN | rctl::SECRC);
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0xff; 6]);
    d.receive(&f);
    assert_eq!(rd(&d, regs::stat::GPRC), 0, "broadcast needs BAM");
    f[..6].copy_from_slice(&MAC);
    d.receive(&f);
    f[..6].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 1]);
    d.receive(&f);
    assert_eq!(rd(&d, regs::stat::GPRC), 1, "own MAC only");
    // Multicast 01:00:5e:00:00:01 with MO = 0: hash = (0x00 >> 4) | (0x01 << 4) = 0x10.
    f[..6].copy_from_slice(&[0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]);
    d.receive(&f);
    assert_eq!(rd(&d, regs::stat::MPRC), 0);
    wr(&d, MTA, 1 << 0x10);
    d.receive(&f);
    assert_eq!(rd(&d, regs::stat::MPRC), 1);
}

fn tcp_frame(sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 54];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 2]);
    f[12] = 0x08;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&[192, 168, 100, 2]);
    f[30..34].copy_from_slice(&[192, 168, 100, 1]);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&5001u16.to_be_bytes());
    f[46] = 5 << 4;
    nicemu_net_util::csum::ipv4_header_csum(&mut f, 14).unwrap();
    nicemu_net_util::csum::l4_csum(&mut f, 14, 34, true, 6).unwrap();
    f
}

/// Four RSS receive queues of 64 descriptors at 0x100000 + q * 0x1000,
/// buffers after, RETA spreading hashes over them.
fn setup_rss_queues(d: &Igb) {
    for q in 0..4u32 {
        let base = RXQ_BASE + q * QUEUE_STRIDE;
        let ring = 0x10_0000 + u64::from(q) * 0x1000;
        wr(d, base + q::BAL, ring as u32);
        wr(d, base + q::LEN, 64 * 16);
        wr(d, base + q::SRRCTL, 0x0200_0402);
        wr(d, base + q::DCTL, QUEUE_ENABLE);
        for i in 0..64u64 {
            let buf = 0x20_0000 + u64::from(q) * 0x2_0000 + i * 2048;
            d.mem().write_obj(buf, GuestAddress(ring + i * 16)).unwrap();
        }
        wr(d, base + q::T, 63);
    }
    for i in 0..10 {
        wr(d, RSSRK + 4 * i, 0x6d5a_56da ^ (i * 0x0101_0101));
    }
    for i in 0..32 {
        wr(d, RETA + 4 * i, 0x0302_0100);
    }
    wr(d, MRQC, 0x0033_0002); // RSS, IPv4 + TCP/IPv4 (+ IPv6 bits)
    wr(d, RXCSUM, 0x0000_2300); // IPOFL | TUOFL | PCSD
    wr(d, RCTL, rctl::EN | rctl::SECRC);
}

/// The receive queue RSS picks for a frame.
fn rss_queue_of(d: &Igb, f: &[u8]) -> usize {
    let (h, ty) = d.rss_hash(f);
    d.rx_queue_for(h, ty)
}

#[test]
fn a_busy_queue_holds_up_no_other_queue() {
    let (d, t) = I82576::dev();
    setup_rss_queues(&d);
    let d = d;
    let busy = rss_queue_of(&d, &tcp_frame(1000));
    let other = (1001..1100)
        .find(|p| rss_queue_of(&d, &tcp_frame(*p)) != busy)
        .expect("some flow hashes to another queue");
    let head = |d: &Igb, q: usize| rd(d, RXQ_BASE + q as u32 * QUEUE_STRIDE + q::H);
    // Another thread is placing a frame into `busy` (its lock is held).
    let guard = d.rxq[busy].lock().unwrap();
    // Frames for other queues go in, from this thread and from another one.
    assert!((d.deliver(&tcp_frame(other), Some(0), false) == Delivery::Done));
    std::thread::scope(|s| {
        s.spawn(|| d.receive(&tcp_frame(other))).join().unwrap();
    });
    // A frame for the busy queue is refused without side effects...
    let gprc_total = |d: &Igb| {
        d.counters()
            .iter()
            .find(|(n, _)| n == "GPRC")
            .map(|c| c.1)
            .unwrap()
    };
    let before = (head(&d, busy), gprc_total(&d));
    assert!(!(d.deliver(&tcp_frame(1000), Some(0), false) == Delivery::Done));
    assert_eq!((head(&d, busy), gprc_total(&d)), before);
    // ...and the transmit path does not wait for it either.
    wr(&d, 0x3800, 0x10000);
    wr(&d, 0x3808, 16 * 16);
    wr(&d, 0x3828, QUEUE_ENABLE);
    wr(&d, TCTL, tctl::EN | tctl::PSP);
    wr(&d, CTRL, rd(&d, CTRL) | ctrl::SLU);
    send(&d, 0, 16, &tcp_frame(7));
    assert_eq!(
        t.wire.take().len(),
        1,
        "sent while RX queue {busy} was busy"
    );
    drop(guard);
    // Once free, the queue takes the frame.
    assert!((d.deliver(&tcp_frame(1000), Some(0), false) == Delivery::Done));
    assert_eq!(head(&d, busy), before.0 + 1);
    assert_eq!(gprc_total(&d), before.1 + 1);
    assert_eq!(head(&d, rss_queue_of(&d, &tcp_frame(other))), 2);
}

/// A received batch holds a queue's lock from one of its frames to the next
/// while they go to that queue: frames alternating between two queues and
/// runs of one queue all land, in order, and no lock stays held after the
/// batch (a batch whose later frame meets a busy queue stops there).
#[test]
fn a_batch_over_two_queues_places_every_frame_and_releases_their_locks() {
    let (d, _t) = I82576::dev();
    setup_rss_queues(&d);
    let d = d;
    let qa = rss_queue_of(&d, &tcp_frame(1000));
    let other = (1001..1100)
        .find(|p| rss_queue_of(&d, &tcp_frame(*p)) != qa)
        .expect("some flow hashes to another queue");
    let qb = rss_queue_of(&d, &tcp_frame(other));
    let ports = [1000, other, 1000, 1000, other, other, 1000];
    let frames: Vec<Vec<u8>> = ports.iter().map(|p| tcp_frame(*p)).collect();
    let head = |q: usize| rd(&d, RXQ_BASE + q as u32 * QUEUE_STRIDE + q::H);
    assert_eq!(
        d.deliver_batch(crate::Frames::Many(&frames), None, false),
        7
    );
    assert_eq!((head(qa), head(qb)), (4, 3));
    assert!(d.rxq.iter().all(|q| q.try_lock().is_ok()), "no lock held");
    // Queue B busy: the batch places what comes before its first frame
    // for B and leaves the rest.
    let guard = d.rxq[qb].lock().unwrap();
    let taken = d.deliver_batch(crate::Frames::Many(&frames), None, false);
    drop(guard);
    assert_eq!((taken, head(qa), head(qb)), (1, 5, 3));
    assert!(d.rxq.iter().all(|q| q.try_lock().is_ok()), "no lock held");
}

#[test]
fn rss_spreads_flows_over_queues_and_reports_hash_and_checksums() {
    let (d, _t) = I82576::dev();
    setup_rss_queues(&d);
    for sport in 1000..1040 {
        d.receive(&tcp_frame(sport));
    }
    let heads: Vec<u32> = (0..4)
        .map(|q| rd(&d, RXQ_BASE + q * QUEUE_STRIDE + q::H))
        .collect();
    assert_eq!(heads.iter().sum::<u32>(), 40);
    assert!(
        heads.iter().all(|h| *h > 0),
        "every queue gets flows: {heads:?}"
    );
    // One flow always lands on the same queue.
    let before = heads.clone();
    for _ in 0..10 {
        d.receive(&tcp_frame(1000));
    }
    let after: Vec<u32> = (0..4)
        .map(|q| rd(&d, RXQ_BASE + q * QUEUE_STRIDE + q::H))
        .collect();
    let moved: Vec<usize> = (0..4).filter(|q| after[*q] != before[*q]).collect();
    assert_eq!(moved.len(), 1, "{before:?} -> {after:?}");
    let q = moved[0] as u64;
    let wb = 0x10_0000 + q * 0x1000 + u64::from(before[q as usize]) * 16;
    let pkt_info: u16 = d.mem().read_obj(GuestAddress(wb)).unwrap();
    assert_eq!(pkt_info & 0xf, 1, "RSS type TCP/IPv4");
    assert_eq!(pkt_info & 0x0110, 0x0110, "packet type IPv4 + TCP");
    let hash: u32 = d.mem().read_obj(GuestAddress(wb + 4)).unwrap();
    assert_eq!(u64::from(hash & 0x7f) % 4, q, "RETA[hash] picked the queue");
    let st: u32 = d.mem().read_obj(GuestAddress(wb + 8)).unwrap();
    assert_eq!(st & 0x63, 0x63, "DD|EOP|IPCS|TCPCS");
    assert_eq!(st & 0x6000_0000, 0, "no checksum errors");
    // A corrupted TCP checksum is flagged.
    let mut bad = tcp_frame(1000);
    bad[50] ^= 0xff;
    d.receive(&bad);
    let wb = 0x10_0000 + q * 0x1000 + u64::from(after[q as usize]) * 16;
    let st: u32 = d.mem().read_obj(GuestAddress(wb + 8)).unwrap();
    assert_ne!(st & (1 << 29), 0, "L4E");
}

#[test]
fn eitr_moderates_interrupts_of_a_vector() {
    let (d, t) = I82576::dev();
    wr(&d, GPIE, 0xc000_0011);
    wr(&d, EIAC, 0x2);
    wr(&d, EIAM, 0x2);
    wr(&d, EITR0 + 4, 196); // 49 µs
    t.clock.set(1_000_000);
    wr(&d, EIMS, 0x2);
    wr(&d, EICS, 0x2);
    assert_eq!(t.irq.take(), vec![Irq::Msix(1)]);
    // The driver re-arms 10 µs later and a cause arrives: held back.
    t.clock.set(1_010_000);
    wr(&d, EIMS, 0x2);
    wr(&d, EICS, 0x2);
    assert!(t.irq.take().is_empty(), "within the EITR interval");
    assert_eq!(t.timer.take(), vec![1_049_000]);
    t.clock.set(1_049_000);
    d.on_timer(1_049_000);
    assert_eq!(
        t.irq.take(),
        vec![Irq::Msix(1)],
        "delivered when the interval ends"
    );
    // EITR 0: no moderation.
    wr(&d, EITR0 + 4, 0);
    wr(&d, EIMS, 0x2);
    wr(&d, EICS, 0x2);
    assert_eq!(t.irq.take(), vec![Irq::Msix(1)]);
}

#[test]
fn faults_and_control_counters() {
    use crate::Fault;
    let (d, t) = I82576::dev();
    setup_rings(&d, 16);
    d.inject(Fault::CorruptRx(10)).unwrap();
    for _ in 0..12 {
        d.receive(&I82576::lbtest_frame());
    }
    assert_eq!(rd(&d, 0x4000), 10, "CRCERRS");
    assert_eq!(rd(&d, regs::stat::GPRC), 2);
    // The control view keeps totals the guest's clear-on-read does not reset.
    let c: std::collections::HashMap<String, u64> = d.counters().into_iter().collect();
    assert_eq!(c["CRCERRS"], 10);
    assert_eq!(c["GPRC"], 2);
    assert_eq!(c["GORC"], 2 * 260);
    assert_eq!(
        rd(&d, regs::stat::GPRC),
        0,
        "reading totals did not refill the register"
    );
    d.inject(Fault::DropRx(3)).unwrap();
    for _ in 0..3 {
        d.receive(&I82576::lbtest_frame());
    }
    assert_eq!(rd(&d, regs::stat::MPC), 3);
    // A stalled TX queue fetches nothing until the device is reset.
    d.inject(Fault::StallTx(0)).unwrap();
    send(&d, 0, 16, &I82576::lbtest_frame());
    assert_eq!(rd(&d, 0x3810), 0, "TDH did not move");
    assert!(t.wire.take().is_empty());
    assert_eq!(
        d.inject(Fault::StallTx(16)),
        Err(crate::FaultError::BadQueue(16, 16))
    );
    let v = rd(&d, CTRL) | ctrl::RST;
    wr(&d, CTRL, v);
    setup_rings(&d, 16);
    phy_write(&d, 0, 0x1140);
    autoneg_done(&d, &t);
    let v = rd(&d, CTRL) | ctrl::SLU;
    wr(&d, CTRL, v);
    send(&d, 0, 16, &I82576::lbtest_frame());
    assert_eq!(rd(&d, 0x3810), 1, "the reset cleared the stall");
    // Counter preset near the wrap point.
    d.inject(Fault::CounterPreset("GPRC".into(), 0xffff_fffe))
        .unwrap();
    assert_eq!(rd(&d, regs::stat::GPRC), 0xffff_fffe);
    assert!(d.inject(Fault::CounterPreset("NOPE".into(), 1)).is_err());
    // NVM checksum corruption shows after the next reset.
    d.inject(Fault::NvmCorrupt).unwrap();
    let sum = |d: &Igb| (0..0x40).fold(0u16, |s, w| s.wrapping_add(nvm_read(d, w)));
    assert_eq!(sum(&d), 0xbaba, "not before the reset");
    let v = rd(&d, CTRL) | ctrl::RST;
    wr(&d, CTRL, v);
    assert_ne!(sum(&d), 0xbaba);
    // The reset restarted autonegotiation: link again once it is over.
    assert_eq!(rd(&d, STATUS) & status::LU, 0);
    autoneg_done(&d, &t);
    assert_ne!(rd(&d, STATUS) & status::LU, 0);
    // Link down/up reaches the driver as LSC and STATUS.LU.
    rd(&d, ICR);
    wr(&d, IMS, intr::ICR_LSC);
    t.irq.take();
    d.set_link(false);
    assert_eq!(rd(&d, STATUS) & status::LU, 0);
    assert_eq!(t.irq.take(), vec![Irq::Legacy]);
    assert!(!d.driver_view().link_up);
    assert_ne!(
        rd(&d, ICR) & intr::ICR_LSC,
        0,
        "read (and cleared) by the driver"
    );
    wr(&d, IMS, intr::ICR_LSC);
    d.set_link(true);
    assert_eq!(rd(&d, STATUS) & status::LU, 0, "negotiating");
    autoneg_done(&d, &t);
    assert_ne!(rd(&d, STATUS) & status::LU, 0);
    assert_eq!(t.irq.take(), vec![Irq::Legacy], "LSC when the link is up");
}

const TIMINCA: u32 = 0xb608;
const TSYNCTXCTL: u32 = 0xb614;
const TXSTMPL: u32 = 0xb618;
const TXSTMPH: u32 = 0xb61c;
const TSYNCRXCTL: u32 = 0xb620;
const RXSTMPL: u32 = 0xb624;
const RXSTMPH: u32 = 0xb628;
const RXSATRH: u32 = 0xb630;

#[test]
fn ptp_clock_rate_frequency_adjust_and_latch() {
    let (d, t) = I82576::dev();
    t.clock.set(1_000);
    assert_eq!(systim(&d), 0);
    // igb_ptp_init: INCPERIOD 1, INCVALUE 16 << 19; cc.shift 19.
    wr(&d, TIMINCA, (1 << 24) | (16 << 19));
    assert_eq!(rd(&d, TIMINCA), (1 << 24) | (16 << 19));
    t.clock.set(1_000 + 2_000_000_000);
    let lo = rd(&d, SYSTIML);
    t.clock.set(1_000 + 9_000_000_000);
    let hi = rd(&d, SYSTIML + 4);
    let cycles = u64::from(lo) | (u64::from(hi) << 32);
    assert_eq!(cycles >> 19, 2_000_000_000, "H latched with the L read");
    // igb_ptp_adjfine_82576 for +100000 ppb: IV = 16 << 19 + 838.
    let base = 16u64 << 19;
    let iv = base + base * (100_000 * 65536 / 1000) / (1_000_000 << 16);
    t.clock.set(10_000_000_000);
    let before = systim(&d);
    wr(&d, TIMINCA, (1 << 24) | iv as u32);
    t.clock.set(12_000_000_000);
    let elapsed = (systim(&d) - before) >> 19;
    let ppb = (elapsed as f64 / 2e9 - 1.0) * 1e9;
    // IV has a resolution of 1 / (16 << 19) = 119 ppb: the driver asks 838.
    assert!((ppb - 100_000.0).abs() < 120.0, "{ppb} ppb");
    // CTRL.RST resets the time sync unit; the driver re-dials TIMINCA.
    let v = rd(&d, CTRL) | ctrl::RST;
    wr(&d, CTRL, v);
    assert_eq!((rd(&d, TIMINCA), systim(&d)), (0, 0));
}

#[test]
fn ptp_tx_stamp_latches_until_txstmph_is_read() {
    let (d, t) = I82576::dev();
    setup_rings(&d, 16);
    let v = rd(&d, CTRL) | ctrl::SLU;
    wr(&d, CTRL, v);
    wr(&d, TIMINCA, (1 << 24) | (16 << 19));
    wr(&d, TSYNCTXCTL, 0x10);
    let f = ptp_l2_frame(0, 1);
    // Data descriptor with ADVTXD_MAC_TSTAMP (igb_tx_cmd_type).
    let stamp_send = |d: &Igb, idx: u32| {
        let buf = 0x80000 + u64::from(idx) * 2048;
        d.mem().write_slice(&f, GuestAddress(buf)).unwrap();
        let desc = 0x10000 + u64::from(idx) * 16;
        d.mem().write_obj(buf, GuestAddress(desc)).unwrap();
        let cmd = 0x2b38_0000u32 | f.len() as u32;
        d.mem().write_obj(cmd, GuestAddress(desc + 8)).unwrap();
        d.mem()
            .write_obj((f.len() as u32) << 14, GuestAddress(desc + 12))
            .unwrap();
        wr(d, 0x3818, idx + 1);
    };
    t.clock.set(5_000);
    send(&d, 0, 16, &f);
    assert_eq!(rd(&d, TSYNCTXCTL), 0x10, "no stamp without MAC_TSTAMP");
    t.clock.set(7_000);
    stamp_send(&d, 1);
    assert_eq!(t.wire.take().len(), 2);
    assert_eq!(rd(&d, TSYNCTXCTL), 0x11, "VALID");
    assert_eq!(rd(&d, 0xb66c) & 2, 2, "TSICR.TXTS");
    t.clock.set(9_000);
    stamp_send(&d, 2);
    let lo = rd(&d, TXSTMPL);
    assert_eq!(rd(&d, TSYNCTXCTL), 0x11, "TXSTMPL does not unlock");
    let hi = rd(&d, TXSTMPH);
    assert_eq!(
        u64::from(lo) | (u64::from(hi) << 32),
        7_000 << 19,
        "first stamp kept"
    );
    assert_eq!(rd(&d, TSYNCTXCTL), 0x10, "TXSTMPH unlocks");
    t.clock.set(11_000);
    stamp_send(&d, 3);
    assert_eq!(rd(&d, TXSTMPL), (11_000u64 << 19) as u32);
}

#[test]
fn ptp_rx_stamp_descriptor_bit_delay_and_unlock() {
    let (d, t) = I82576::dev();
    setup_rings(&d, 16);
    let v = rd(&d, RCTL) | rctl::MPE;
    wr(&d, RCTL, v);
    wr(&d, TIMINCA, (1 << 24) | (16 << 19));
    d.set_wire_delay_ns(2_500);
    // igb_ptp_set_timestamp_mode for HWTSTAMP_FILTER_PTP_V2_EVENT.
    wr(&d, TSYNCRXCTL, 0x10 | 0x0a);
    wr(&d, 0x5f50, 0);
    wr(&d, 0x5cb0 + 12, (1 << 26) | (1 << 30) | 0x88f7);
    let status = |d: &Igb, i: u64| -> u32 {
        d.mem()
            .read_obj(GuestAddress(0x20000 + i * 16 + 8))
            .unwrap()
    };
    t.clock.set(100_000);
    d.receive(&ptp_l2_frame(0, 7));
    assert_eq!(status(&d, 0) & 0x1_0003, 0x1_0003, "DD|EOP|TS");
    assert_eq!(rd(&d, TSYNCRXCTL), 0x1b, "VALID");
    t.clock.set(200_000);
    d.receive(&ptp_l2_frame(0, 8));
    assert_eq!(status(&d, 1) & 0x1_0000, 0, "locked: no stamp");
    d.receive(&ptp_l2_frame(8, 9));
    assert_eq!(status(&d, 2) & 0x1_0000, 0, "Follow_Up is no event");
    assert_eq!(rd(&d, RXSATRH) >> 16, 7, "sequence id of the stamped frame");
    let lo = rd(&d, RXSTMPL);
    let hi = rd(&d, RXSTMPH);
    assert_eq!(
        u64::from(lo) | (u64::from(hi) << 32),
        102_500 << 19,
        "arrival plus wire delay"
    );
    assert_eq!(rd(&d, TSYNCRXCTL), 0x1a, "RXSTMPH unlocks");
    d.receive(&ptp_l2_frame(1, 10));
    assert_eq!(status(&d, 3) & 0x1_0000, 0x1_0000);
    // Without the ETQF 1588 filter L2 frames are not stamped.
    let _ = rd(&d, RXSTMPH);
    wr(&d, 0x5cb0 + 12, 0);
    d.receive(&ptp_l2_frame(0, 11));
    assert_eq!(status(&d, 4) & 0x1_0000, 0);
}

#[test]
fn a_set_autonegotiation_time_is_when_the_link_comes_back() {
    let (d, t) = I82576::dev();
    d.set_autoneg_ns(300_000_000);
    let t0 = t.clock.now_ns();
    t.timer.take();
    phy_write(&d, 0, 0x1000 | 0x0200);
    assert_eq!(t.timer.take(), vec![t0 + 300_000_000]);
    // Just before: still negotiating; at the time: link.
    t.clock.set(t0 + 299_999_999);
    d.on_timer(t0 + 299_999_999);
    let _ = phy_read(&d, 1);
    assert_eq!(phy_read(&d, 1) & 0x0004, 0, "no link before the set time");
    t.clock.set(t0 + 300_000_000);
    d.on_timer(t0 + 300_000_000);
    let _ = phy_read(&d, 1);
    assert_ne!(phy_read(&d, 1) & 0x0004, 0, "link at the set time");
}

/// Plays the transport's timers of cabled devices: every round moves both
/// clocks past any negotiation and fires both timers (kicks arm them).
fn pump(devs: &[(&Igb, &TestEnv)]) {
    for _ in 0..6 {
        let now = devs[0].1.clock.now_ns() + crate::phy::AUTONEG_NS;
        for (d, t) in devs {
            t.timer.take();
            t.clock.set(now);
            d.on_timer(now);
        }
    }
}

#[test]
fn cabled_ports_run_at_their_highest_common_mode_and_report_it_in_status() {
    let ((a, ta), (b, tb)) = (I82576::dev(), I82576::dev());
    let (ea, eb) = crate::cable::CableEnd::pair();
    assert!(a.attach_cable(ea) && b.attach_cable(eb));
    pump(&[(&a, &ta), (&b, &tb)]);
    for d in [&a, &b] {
        let st = rd(d, STATUS);
        assert_eq!(
            st & (status::LU | status::FD | status::SPEED_1000),
            0x83,
            "{st:#x}"
        );
    }
    wr(&b, ICR, u32::MAX);
    let _ = rd(&b, ICR);
    // a advertises 10/100 only (ethtool -s advertise 0x00f) and restarts.
    phy_write(&a, 4, 0x01e1);
    phy_write(&a, 9, 0);
    phy_write(&a, 0, 0x1140 | 0x0200);
    pump(&[(&a, &ta), (&b, &tb)]);
    for d in [&a, &b] {
        let st = rd(d, STATUS);
        assert_eq!(st & (status::LU | status::FD), status::LU | status::FD);
        assert_eq!(
            st & (status::SPEED_100 | status::SPEED_1000),
            status::SPEED_100
        );
    }
    assert_ne!(rd(&b, ICR) & (1 << 2), 0, "b saw its link change (LSC)");
    // 10 FD against 100 FD: neither has link.
    phy_write(&a, 4, 0x0041);
    phy_write(&a, 0, 0x1140 | 0x0200);
    phy_write(&b, 4, 0x0101);
    phy_write(&b, 9, 0);
    phy_write(&b, 0, 0x1140 | 0x0200);
    pump(&[(&a, &ta), (&b, &tb)]);
    assert_eq!(rd(&a, STATUS) & status::LU, 0);
    assert_eq!(rd(&b, STATUS) & status::LU, 0);
}
