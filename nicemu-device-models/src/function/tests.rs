// SPDX-License-Identifier: Apache-2.0
//! What [`Function`] does the same way on every part, tested once and run on
//! each: the 82576 (igb) and the 82599 (ixgbe), driven by the driver double
//! ([`crate::testutil::driver`]). Each test is a function generic over the
//! part; [`on_every_part!`] makes a `#[test]` of it per part. The parts'
//! own test files keep what differs.

use crate::function::stats::stat;
use crate::function::{q, Function};
use crate::port::{Delivery, Introspect, NetPort, PciFunction};
use crate::testutil::driver::{
    autoneg_done, error_counter, frame_to, loopback_round_trips, pause_frame, rd, rx_written, send,
    setup_rings, total, tx_done, wr, write_tx, DriverPart, BUF, MAC, RX_BUFS, RX_RING, TX_RING,
};
use crate::testutil::{bus_master, TestEnv};
use vm_memory::{Bytes, GuestAddress};

/// A `#[test]` per part for each generic test named.
macro_rules! on_every_part {
    ($($test:ident),* $(,)?) => {
        mod igb {
            $(#[test]
            fn $test() {
                super::$test::<crate::igb::I82576>();
            })*
        }
        mod ixgbe {
            $(#[test]
            fn $test() {
                super::$test::<crate::ixgbe::I82599>();
            })*
        }
    };
}

on_every_part!(
    loopback_self_test,
    without_bus_mastering_there_is_no_dma,
    a_full_receive_ring_counts_missed_frames,
    hostile_rings_do_not_crash_or_hang,
    control_totals_survive_a_function_reset,
    no_link_holds_transmits_and_every_frame_not_received_is_counted,
    pause_frames_are_counted_as_xon_xoff_and_not_posted,
    a_busy_receive_queue_holds_up_neither_transmit_nor_control,
    a_received_batch_counts_and_signals_as_its_frames_one_by_one,
    a_received_batch_places_as_its_frames_one_by_one,
    a_receive_batch_rereads_the_set_up_of_a_queue_it_let_go,
    statistics_clear_on_read_and_unknown_offsets_read_zero,
);

/// The MAC link up as the driver brings it up, and a negotiation the
/// medium started (at reset) run to its end.
fn link_ready<M: DriverPart>(d: &Function<M>, t: &TestEnv) {
    M::link_up(d);
    if M::NEGOTIATES {
        autoneg_done(d, t);
    }
}

/// The loopback self-test (`igb_loopback_test`, `ixgbe_loopback_test`):
/// every frame comes back into the receive ring and none reaches the wire;
/// without loopback the frame goes to the wire.
fn loopback_self_test<M: DriverPart>() {
    let (d, t) = M::dev();
    let n = 16;
    setup_rings(&d, n);
    M::set_loopback(&d, &t, true);
    loopback_round_trips(&d, &t, n, 40);
    M::set_loopback(&d, &t, false);
    send(&d, 40 % n, n, &M::lbtest_frame());
    assert_eq!(t.wire.take().len(), 1);
}

/// PCI COMMAND.BME clear (the driver's remove path, or a hostile guest):
/// a bus master does no DMA, so a doorbell fetches no descriptor and a
/// frame from the wire is not written (issue 14 item 10).
fn without_bus_mastering_there_is_no_dma<M: DriverPart>() {
    let (d, t) = M::dev();
    setup_rings(&d, 16);
    M::link_up(&d);
    d.config_write(4, &0x0002u16.to_le_bytes());
    send(&d, 0, 16, &M::lbtest_frame());
    assert!(t.wire.take().is_empty(), "no descriptor fetched");
    let tb = M::driver_txq(0);
    assert_eq!(rd(&d, tb + q::H), 0, "TDH stays");
    assert!(!tx_done(&d, 0), "no DD written");
    d.receive(&M::lbtest_frame());
    assert_eq!(rx_written(&d, 0), (0, 0), "no receive write-back");
    assert_eq!(rd(&d, M::driver_rxq(0) + q::H), 0, "RDH stays");
    assert_eq!(d.guest_errors().dma_blocked, 2);
    assert_eq!(d.guest_errors().dma_errors, 0);
    // Back on: the pending descriptor goes out at the next doorbell.
    bus_master(&d);
    wr(&d, tb + q::T, 1);
    assert_eq!(t.wire.take().len(), 1);
    // A function reset clears COMMAND, and with it bus mastering.
    PciFunction::reset(&d);
    let mut cmd = [0u8; 2];
    d.config_read(4, &mut cmd);
    assert_eq!(u16::from_le_bytes(cmd) & 0x4, 0, "BME clear after reset");
}

/// Frames that find no posted buffer are missed: MPC, RNBC and the queue's
/// drop counter count them.
fn a_full_receive_ring_counts_missed_frames<M: DriverPart>() {
    let (d, _t) = M::dev();
    setup_rings(&d, 8);
    for _ in 0..10 {
        d.receive(&M::lbtest_frame());
    }
    let missed = 3;
    let gprc = 7 + if M::GPRC_COUNTS_MISSED { missed } else { 0 };
    assert_eq!(rd(&d, stat::GPRC), gprc, "seven buffers posted");
    assert_eq!(rd(&d, M::MPC), missed);
    assert_eq!(rd(&d, M::RNBC), missed);
    assert_eq!(rd(&d, M::rx_queue_drops(0)), missed);
}

/// Tails beyond the ring, rings and buffers outside guest memory, huge
/// lengths, chains without EOP, a TSO context with an MSS of 0 and header
/// lengths beyond the frame, empty rings, queue registers of queues the
/// part has not and the I/O window's extremes: counted, never a panic or a
/// hang.
fn hostile_rings_do_not_crash_or_hang<M: DriverPart>() {
    let (d, _t) = M::dev();
    setup_rings(&d, 8);
    let tb = M::driver_txq(0);
    // Tail beyond the ring.
    wr(&d, tb + q::T, 200);
    assert!(d.guest_errors().ring_errors >= 1);
    // Descriptor ring outside guest memory.
    let restart = |bal: u32, bah: u32| {
        wr(&d, tb + q::DCTL, 0);
        wr(&d, tb, bal);
        wr(&d, tb + 4, bah);
        wr(&d, tb + q::H, 0);
        wr(&d, tb + q::T, 0);
        wr(&d, tb + q::DCTL, crate::function::QUEUE_ENABLE);
    };
    restart(0xffff_ff80, 0xffff_ffff);
    wr(&d, tb + q::T, 7);
    assert!(d.guest_errors().dma_errors >= 7);
    assert_eq!(
        rd(&d, tb + q::H),
        7,
        "head advanced past the bad descriptors"
    );
    // Buffers outside RAM, huge lengths, no EOP: dropped and counted.
    restart(TX_RING as u32, 0);
    for i in 0..8u64 {
        let desc = TX_RING + i * 16;
        d.mem()
            .write_obj(0xffff_0000_0000u64, GuestAddress(desc))
            .unwrap();
        let cmd = 0x2b30_0000u32 | 0xffff;
        d.mem().write_obj(cmd, GuestAddress(desc + 8)).unwrap();
    }
    wr(&d, tb + q::T, 7);
    assert!(d.guest_errors().tx_malformed >= 1);
    // TSO with a hostile context: MSS 0, header lengths beyond the frame.
    let mut ctx = [0u8; 16];
    ctx[0..4].copy_from_slice(&((127u32 << 9) | 511).to_le_bytes());
    ctx[8..12].copy_from_slice(&(0x2020_0000u32 | (0x6 << 9)).to_le_bytes());
    d.mem().write_slice(&ctx, GuestAddress(TX_RING)).unwrap();
    write_tx(&d, 1, &[0u8; 100], 0xab30_0000);
    restart(TX_RING as u32, 0);
    wr(&d, tb + q::T, 2);
    // A one-descriptor ring (16 bytes) with tail 0 does nothing.
    wr(&d, tb + q::DCTL, 0);
    wr(&d, tb + 8, 16);
    wr(&d, tb + q::H, 0);
    wr(&d, tb + q::DCTL, crate::function::QUEUE_ENABLE);
    wr(&d, tb + q::T, 0);
    // RX with a zero-length ring and buffers outside RAM.
    let rb = M::driver_rxq(0);
    wr(&d, rb + 8, 0);
    d.receive(&M::lbtest_frame());
    wr(&d, rb + q::DCTL, 0);
    wr(&d, rb + 8, 128);
    wr(&d, rb, RX_RING as u32);
    wr(&d, rb + q::H, 0);
    wr(&d, rb + q::DCTL, crate::function::QUEUE_ENABLE);
    for i in 0..8u64 {
        d.mem()
            .write_obj(u64::MAX - 100, GuestAddress(RX_RING + i * 16))
            .unwrap();
    }
    wr(&d, rb + q::T, 7);
    d.receive(&M::lbtest_frame());
    d.receive(&[0u8; 3]);
    d.receive(&vec![0xffu8; 20000]);
    assert!(d.guest_errors().dma_errors >= 8);
    // Queue registers of the last queue and beyond, and the I/O window.
    let queues = M::LAYOUT.queues;
    for qi in [queues - 1, queues, 127] {
        wr(&d, M::rxq_base(qi) + q::DCTL, crate::function::QUEUE_ENABLE);
        wr(&d, M::txq_base(qi) + q::DCTL, crate::function::QUEUE_ENABLE);
        wr(&d, M::txq_base(qi) + q::T, 5);
    }
    let io = M::LAYOUT.io_bar;
    d.bar_write(io, 0, &u32::MAX.to_le_bytes());
    d.bar_write(io, 4, &u32::MAX.to_le_bytes());
    let mut b = [0u8; 4];
    d.bar_read(io, 4, &mut b);
    // The device still answers.
    assert!(d.driver_view().link_up);
}

/// `ctl stats` shows totals for the life of the process: a function reset
/// (also done by nicemu between vfio-user clients) clears what the guest
/// reads, not the totals.
fn control_totals_survive_a_function_reset<M: DriverPart>() {
    let (d, _t) = M::dev();
    setup_rings(&d, 16);
    d.receive(&frame_to(MAC));
    assert_eq!(total(&d, "GPRC"), 1);
    PciFunction::reset(&d);
    assert_eq!(rd(&d, stat::GPRC), 0, "the guest's register is reset");
    assert_eq!(total(&d, "GPRC"), 1, "the total is not");
}

/// Without link the controller stops transmit DMA ("We've lost link, so the
/// controller stops DMA", `igb_watchdog_task`, `ixgbe_watchdog_flush_tx`):
/// a doorbell fetches nothing, nothing reaches the wire or GPTC, and the
/// frame goes out once the link is back. A frame from the wire that cannot
/// arrive (no link), that arrives at a disabled receiver (the statistics
/// "only increment if receives are enabled", so no register counts it) or
/// that the address filter rejects is counted by nicemu, never silently
/// lost.
fn no_link_holds_transmits_and_every_frame_not_received_is_counted<M: DriverPart>() {
    let (d, t) = M::dev();
    setup_rings(&d, 16);
    M::link_up(&d);
    d.set_cable(false);
    send(&d, 0, 16, &M::lbtest_frame());
    assert!(t.wire.take().is_empty(), "nothing on the wire without link");
    let tdh = M::driver_txq(0) + q::H;
    assert_eq!(rd(&d, tdh), 0, "TDH stays: no descriptor fetched");
    assert!(!tx_done(&d, 0), "no DD written");
    assert_eq!(rd(&d, stat::GPTC), 0);
    d.receive(&M::lbtest_frame());
    assert_eq!(error_counter(&d, "rx_no_link"), 1);
    d.set_cable(true);
    if M::NEGOTIATES {
        assert!(t.wire.take().is_empty(), "held while autonegotiating");
        autoneg_done(&d, &t);
    }
    assert_eq!(t.wire.take().len(), 1, "the held frame leaves at link up");
    assert_eq!(rd(&d, tdh), 1);
    assert_eq!(rd(&d, stat::GPTC), 1);
    // Receiver disabled: no statistics register moves, nicemu counts it.
    M::set_rx_enabled(&d, false);
    d.receive(&M::lbtest_frame());
    assert_eq!(error_counter(&d, "rx_disabled"), 1);
    // Enabled, but addressed to another station.
    M::set_rx_enabled(&d, true);
    d.receive(&frame_to([0x52, 0x54, 0, 0, 0, 1]));
    assert_eq!(error_counter(&d, "rx_filtered"), 1);
    assert_eq!(rd(&d, stat::GPRC) + rd(&d, M::MPC), 0);
}

/// IEEE 802.3x PAUSE frames count as XON (pause time 0) or XOFF in the
/// part's flow control counters and are not posted to the driver; a MAC
/// control frame of another opcode counts as neither.
fn pause_frames_are_counted_as_xon_xoff_and_not_posted<M: DriverPart>() {
    let (d, t) = M::dev();
    setup_rings(&d, 16);
    link_ready(&d, &t);
    d.receive(&pause_frame(0xffff));
    d.receive(&pause_frame(0xffff));
    d.receive(&pause_frame(0));
    assert_eq!(rd(&d, M::PAUSE_RX.xoff), 2, "XOFF");
    assert_eq!(rd(&d, M::PAUSE_RX.xon), 1, "XON");
    assert_eq!(
        rd(&d, stat::GPRC),
        0,
        "flow control frames are not good packets"
    );
    let rdh = M::driver_rxq(0) + q::H;
    assert_eq!(rd(&d, rdh), 0, "RDH: nothing posted");
    let mut other = pause_frame(0);
    other[15] = 2;
    d.receive(&other);
    assert_eq!(
        rd(&d, M::PAUSE_RX.xon) + rd(&d, M::PAUSE_RX.xoff),
        0,
        "another opcode counts as neither"
    );
    d.receive(&M::lbtest_frame());
    assert_eq!(rd(&d, stat::GPRC), 1, "the receiver takes other frames");
}

/// A frame for a receive queue another thread holds is refused without
/// side effects (the caller retries), and meanwhile transmit and register
/// accesses go on.
fn a_busy_receive_queue_holds_up_neither_transmit_nor_control<M: DriverPart>() {
    let (d, t) = M::dev();
    setup_rings(&d, 16);
    link_ready(&d, &t);
    let f = frame_to(MAC);
    let guard = d.rxq[0].lock().unwrap();
    assert_ne!(
        d.deliver(&f, Some(0), false),
        Delivery::Done,
        "queue 0 busy: refused"
    );
    assert_eq!(total(&d, "GPRC"), 0, "refused without side effects");
    send(&d, 0, 16, &M::lbtest_frame());
    assert_eq!(t.wire.take().len(), 1);
    assert_eq!(rd(&d, M::driver_txq(0) + q::H), 1);
    drop(guard);
    assert_eq!(d.deliver(&f, Some(0), false), Delivery::Done);
    assert_eq!(total(&d, "GPRC"), 1);
    assert_eq!(rd(&d, M::driver_rxq(0) + q::H), 1);
}

/// A batch of frames from the switch is received as its frames one by one
/// would be: the same counters, size buckets, descriptors and causes.
fn a_received_batch_counts_and_signals_as_its_frames_one_by_one<M: DriverPart>() {
    let frame = |dst: [u8; 6], len: usize| {
        let mut f = vec![0u8; len];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f
    };
    let frames = vec![
        frame([0xff; 6], 60),
        frame(MAC, 100),
        frame(MAC, 300),
        frame(MAC, 1500),
        frame([0xff; 6], 1000),
        frame([2, 0, 0, 0, 0, 9], 80),
    ];
    let (a, _ta) = M::dev();
    setup_rings(&a, 16);
    let (b, _tb) = M::dev();
    setup_rings(&b, 16);
    let taken = a.deliver_batch(crate::Frames::Many(&frames), None, false);
    assert_eq!(taken, frames.len(), "every frame consumed");
    for f in &frames {
        assert_eq!(b.deliver(f, None, false), Delivery::Done);
    }
    let totals = |d: &Function<M>| -> std::collections::HashMap<String, u64> {
        Introspect::counters(d).into_iter().collect()
    };
    let (ca, cb) = (totals(&a), totals(&b));
    assert_eq!(ca, cb, "a batch counts as its frames one by one");
    assert_eq!(
        (ca["GPRC"], ca["BPRC"]),
        (5, 2),
        "the foreign unicast is filtered"
    );
    assert_eq!(
        ca["GORC"],
        [60, 100, 300, 1500, 1000].iter().sum::<u64>() + 5 * 4
    );
    for off in (stat::PRC64..=stat::PRC64 + 20).step_by(4) {
        assert_eq!(rd(&a, off), rd(&b, off), "size bucket at {off:#x}");
    }
    let rdh = M::driver_rxq(0) + q::H;
    assert_eq!(rd(&a, rdh), 5, "five descriptors written back");
    assert_eq!(rd(&a, rdh), rd(&b, rdh));
    let icr = (rd(&a, M::ICR), rd(&b, M::ICR));
    assert_eq!(icr.0 & M::RX_CAUSE, M::RX_CAUSE, "receive cause raised");
    assert_eq!(icr.0, icr.1);
}

/// A batch whose frames the receiver places in a run of their own (the
/// frames after the first that the batch's set-up covers) leaves what its
/// frames one by one leave, whatever stops the run: the same descriptors
/// and buffers, head, counters, error counts and causes. The frames stop it
/// every way a frame can: an injected fault, a frame too long or too short,
/// one the filters drop or take apart (broadcast, PAUSE, another station),
/// one that spans two buffers, and the ring running out of descriptors.
fn a_received_batch_places_as_its_frames_one_by_one<M: DriverPart>() {
    let frame = |dst: [u8; 6], len: usize, fill: u8| {
        let mut f = vec![fill; len.max(16)];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..16].copy_from_slice(&[0x88, 0xb5, 0, 0]);
        f.truncate(len);
        f
    };
    let mut frames: Vec<Vec<u8>> = (0..6).map(|i| frame(MAC, 60 + i, i as u8)).collect();
    frames.push(frame(MAC, 1514, 6));
    frames.push(frame(MAC, 1000, 7));
    frames.push(frame(MAC, 3000, 8));
    frames.push(frame(MAC, 12, 9));
    frames.extend((10..14).map(|i| frame(MAC, 64, i)));
    frames.push(frame([0xff; 6], 80, 14));
    frames.push(frame([0xff; 6], 90, 15));
    frames.push(pause_frame(0));
    frames.push(frame([2, 0, 0, 0, 0, 9], 70, 16));
    frames.extend((17..40).map(|i| frame(MAC, 100 + usize::from(i), i)));
    let n = 16;
    let run = |batch: bool| {
        let (d, t) = M::dev();
        setup_rings(&d, n);
        link_ready(&d, &t);
        // 1 KiB buffers: a 1514-byte frame spans two.
        let rb = M::driver_rxq(0);
        let bsize = M::LAYOUT.srrctl_bsize;
        wr(&d, rb + M::LAYOUT.srrctl, (M::SRRCTL & !bsize) | 1);
        Introspect::inject(&d, crate::fault::Fault::DropRx(2)).unwrap();
        // The first frame alone (the fault takes it), then the rest as one
        // batch, whose first frame the fault takes too, or one by one.
        assert_eq!(d.deliver(&frames[0], None, false), Delivery::Done);
        if batch {
            let rest = &frames[1..];
            assert_eq!(
                d.deliver_batch(crate::Frames::Many(rest), None, false),
                rest.len()
            );
        } else {
            for f in &frames[1..] {
                assert_eq!(d.deliver(f, None, false), Delivery::Done);
            }
        }
        let mut ring = vec![0u8; (n * 16) as usize];
        d.mem()
            .read_slice(&mut ring, GuestAddress(RX_RING))
            .unwrap();
        let mut bufs = vec![0u8; (u64::from(n) * BUF) as usize];
        d.mem()
            .read_slice(&mut bufs, GuestAddress(RX_BUFS))
            .unwrap();
        let counters: std::collections::HashMap<String, u64> =
            Introspect::counters(&d).into_iter().collect();
        let head = rd(&d, rb + q::H);
        let icr = rd(&d, M::ICR);
        let missed = rd(&d, M::MPC);
        (
            ring,
            bufs,
            counters,
            d.guest_errors(),
            (head, icr, missed),
            d.descriptors(),
        )
    };
    let (one, many) = (run(false), run(true));
    assert_eq!(one.0, many.0, "descriptors written back");
    assert!(one.1 == many.1, "receive buffers");
    assert_eq!(one.2, many.2, "counters");
    assert_eq!(one.3, many.3, "guest errors");
    assert_eq!(one.4, many.4, "head, causes, missed frames");
    assert_eq!(one.5, many.5, "descriptors used");
    let c = &one.2;
    let (head, _, missed) = one.4;
    assert_eq!(
        head,
        n - 1,
        "the ring filled up: every posted descriptor used"
    );
    assert_eq!((c["RUC"], c["GPRC"] > 10), (1, true), "{c:?}");
    assert!(
        missed > 2,
        "frames beyond the ring were missed, and 2 dropped"
    );
}

/// A receive batch reads a queue's set-up (enable, ring, buffer size) once
/// while it holds the queue's lock. A frame for another queue makes it let
/// the lock go; meanwhile the driver may disable the queue, or move its ring
/// (`igb_configure_rx_ring`, `ixgbe_configure_rx_ring` disable, program, then
/// enable), and the batch's next frame for the queue must see that: a frame
/// for a disabled queue is missed, and one for a moved ring lands in the new
/// ring, never in the memory the driver took the old ring from.
fn a_receive_batch_rereads_the_set_up_of_a_queue_it_let_go<M: DriverPart>() {
    let (d, t) = M::dev();
    let n = 16;
    setup_rings(&d, n);
    link_ready(&d, &t);
    // RSS over IPv4 with every RETA entry naming queue 1: an IPv4 frame goes
    // to queue 1 (and is filtered there: it is for another station), any
    // other frame to queue 0.
    wr(&d, M::LAYOUT.mrqc, 1 | 1 << 17);
    for i in 0..32 {
        wr(&d, M::LAYOUT.reta + 4 * i, 0x0101_0101);
    }
    let to_q0 = frame_to(MAC);
    let mut to_q1 = frame_to([2, 0, 0, 0, 0, 9]);
    to_q1[12..14].copy_from_slice(&[0x08, 0x00]);
    to_q1[14] = 0x45;
    to_q1[16..18].copy_from_slice(&46u16.to_be_bytes());
    to_q1[22] = 64;
    to_q1[23] = 17;
    let rb = M::driver_rxq(0);
    let missed = || rd(&d, M::rx_queue_drops(0));
    let view = d.mem.get();
    let mut done = super::rx::RxDone::new(view.as_deref());
    assert!(d.rx_one(&to_q0, None, true, &mut done));
    assert_eq!(rd(&d, rb + q::H), 1, "the first frame placed");
    assert!(d.rx_one(&to_q1, None, true, &mut done));
    assert_eq!(
        error_counter(&d, "rx_filtered"),
        1,
        "queue 1's frame filtered"
    );
    // The batch let queue 0 go (this write takes its lock): disabled.
    wr(&d, rb + q::DCTL, 0);
    assert_eq!(rd(&d, rb + q::H), 0, "a disabled queue forgets its head");
    let desc0 = rx_written(&d, 0);
    let drops = missed();
    assert!(d.rx_one(&to_q0, None, true, &mut done));
    assert_eq!(rd(&d, rb + q::H), 0, "nothing placed into a disabled queue");
    assert_eq!(rx_written(&d, 0), desc0, "the old ring untouched");
    assert_eq!(missed(), drops + 1, "the frame missed");
    assert!(d.rx_one(&to_q1, None, true, &mut done));
    // Let go again: the ring moved, buffers posted, the queue enabled.
    let ring = RX_RING + 0x1000;
    wr(&d, rb, ring as u32);
    wr(&d, rb + 4, (ring >> 32) as u32);
    wr(&d, rb + 8, n * 16);
    wr(&d, rb + q::H, 0);
    wr(&d, rb + q::T, 0);
    for i in 0..u64::from(n) {
        d.mem()
            .write_obj(RX_BUFS + (16 + i) * BUF, GuestAddress(ring + i * 16))
            .unwrap();
        d.mem()
            .write_obj(0u64, GuestAddress(ring + i * 16 + 8))
            .unwrap();
    }
    wr(&d, rb + q::DCTL, M::RXDCTL);
    wr(&d, rb + q::T, n - 1);
    assert!(d.rx_one(&to_q0, None, true, &mut done));
    d.rx_done(&mut done);
    assert_eq!(rx_written(&d, 0), desc0, "the old ring untouched");
    let st: u32 = d.mem().read_obj(GuestAddress(ring + 8)).unwrap();
    assert_ne!(st & 1, 0, "DD: the frame is in the new ring");
    assert_eq!(rd(&d, rb + q::H), 1);
    let mut got = vec![0u8; to_q0.len()];
    d.mem()
        .read_slice(&mut got, GuestAddress(RX_BUFS + 16 * BUF))
        .unwrap();
    assert_eq!(got, to_q0, "in the new ring's buffer");
}

/// Statistics registers clear when read (the drivers add each read to
/// their totals); an unknown, misaligned or out-of-range offset reads 0,
/// ignores writes and counts as `unknown_regs`.
fn statistics_clear_on_read_and_unknown_offsets_read_zero<M: DriverPart>() {
    let (d, _t) = M::dev();
    d.stat_add(stat::GPRC, 3);
    assert_eq!(rd(&d, stat::GPRC), 3);
    assert_eq!(rd(&d, stat::GPRC), 0);
    assert_eq!(rd(&d, 0x0004), 0);
    wr(&d, 0x1ff00, 5);
    let mut b = [0xffu8; 4];
    d.bar_read(0, 1 << 40, &mut b);
    assert_eq!(b, [0; 4]);
    d.bar_write(0, u64::MAX - 3, &[1, 2, 3, 4]);
    assert!(d.guest_errors().unknown_regs >= 2);
}

/// SRRCTL's descriptor type decides the header buffer: only "header split,
/// always use the header buffer" (DESCTYPE 101b) with a BSIZEHEADER, and
/// only on a part whose model places header buffers (the 82576's field).
#[test]
fn header_buffer_only_for_split_always_with_a_size() {
    use crate::function::rx::header_buffer;
    let igb_hdr = <crate::igb::I82576 as crate::function::Model>::LAYOUT.srrctl_bsizehdr;
    let ixgbe_hdr = <crate::ixgbe::I82599 as crate::function::Model>::LAYOUT.srrctl_bsizehdr;
    // igbvf_setup_srrctl at MTU 9000: DROP_EN, 128-byte header, 2 KiB.
    assert_eq!(header_buffer(0x8a00_0202, igb_hdr), 128);
    assert_eq!(header_buffer(0x0a00_0f02, igb_hdr), 15 * 64);
    // One buffer, header split without "always", no header size.
    assert_eq!(header_buffer(0x8200_0202, igb_hdr), 0);
    assert_eq!(header_buffer(0x8400_0202, igb_hdr), 0);
    assert_eq!(header_buffer(0x8a00_0002, igb_hdr), 0);
    // The 82599 models place no header buffer.
    assert_eq!(ixgbe_hdr, 0);
    assert_eq!(header_buffer(0x0a00_0202, ixgbe_hdr), 0);
}
