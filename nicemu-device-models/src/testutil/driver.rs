// SPDX-License-Identifier: Apache-2.0
//! A driver double for any [`Function<M>`]: what vm-virtio's `MockSplitQueue`
//! and Firecracker's net `TestHelper` are to their devices. It does what the
//! igb and ixgbe drivers do to a function (register accesses, the NVM read
//! through EERD, queue 0's rings set up and its buffers posted, a frame
//! queued for transmission, the loopback self-test's frame), so one test
//! drives either part the same way; what a driver does its own part's way
//! is a [`DriverQueues`] knob (queues, which a PF part and an SR-IOV virtual
//! function implement) or a [`DriverPart`] one (the rest of a PF).
//!
//! Guest memory of a test function: the transmit ring at [`TX_RING`], the
//! receive ring at [`RX_RING`], 2 KiB receive buffers from [`RX_BUFS`] and
//! transmit buffers from [`TX_BUFS`], one per descriptor.
#![allow(
    clippy::unwrap_used,
    reason = "test doubles: a set-up that fails panics"
)]

use vm_memory::{Bytes, GuestAddress};

use super::{bus_master, ram, TestEnv};
use crate::function::stats::stat;
use crate::function::{q, Function, Part, QUEUE_ENABLE};
use crate::port::{Introspect, PciFunction};
use crate::Clock;

/// The MAC address of a test function.
pub const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];
/// Transmit descriptor ring of queue 0.
pub const TX_RING: u64 = 0x10000;
/// Receive descriptor ring of queue 0.
pub const RX_RING: u64 = 0x20000;
/// Receive buffers, 2 KiB each, one per receive descriptor.
pub const RX_BUFS: u64 = 0x40000;
/// Transmit buffers, 2 KiB each, one per transmit descriptor.
pub const TX_BUFS: u64 = 0x80000;
/// Size of one buffer.
pub const BUF: u64 = 2048;

/// Advanced transmit data descriptor command of one whole frame: DEXT, RS,
/// IFCS, EOP, DTYP data (82576 §7.2.2.3, 82599 §7.2.3.2.4).
pub const TX_DATA_CMD: u32 = 0x2b30_0000;

/// What a driver does to set up and run a function's queues its part's
/// own way: the registers and values that differ between parts, for every
/// function the double drives — a PF or an SR-IOV virtual function.
pub trait DriverQueues: Part {
    /// Guest RAM of a test function, in bytes.
    const RAM: usize;
    /// TXDCTL as the driver enables transmit queue 0.
    const TXDCTL: u32;
    /// RXDCTL as the driver enables receive queue 0.
    const RXDCTL: u32;
    /// SRRCTL of the driver's receive queues: advanced one-buffer
    /// descriptors, 2 KiB buffers.
    const SRRCTL: u32;

    /// A test function's configuration with MAC address `mac`.
    fn test_config(mac: [u8; 6]) -> Self::Config;
    /// Receive queue `q`'s register block at the offsets the driver uses
    /// (the 82576's driver writes queues 0-3 through their legacy aliases).
    fn driver_rxq(q: usize) -> u32 {
        Self::rxq_base(q)
    }
    /// Transmit queue `q`'s register block at the offsets the driver uses.
    fn driver_txq(q: usize) -> u32 {
        Self::txq_base(q)
    }
    /// Enables the transmitter as the driver does after its rings (TCTL,
    /// DMATXCTL; nothing on a VF, whose transmit the PF enables).
    fn enable_tx(d: &Function<Self>);
    /// Enables or disables the receiver (RCTL.EN, RXCTRL.RXEN; nothing on a
    /// VF, whose receive the PF enables); enabled, it takes broadcasts and
    /// frames to its own address.
    fn set_rx_enabled(d: &Function<Self>, on: bool);

    /// A test function with [`MAC`], its RAM and bus mastering on, and its
    /// recording environment.
    fn dev() -> (Function<Self>, TestEnv) {
        Self::dev_with(Self::test_config(MAC))
    }

    /// [`Self::dev`] with configuration `cfg`.
    fn dev_with(cfg: Self::Config) -> (Function<Self>, TestEnv) {
        let t = TestEnv::new();
        let d = Function::<Self>::new(cfg, t.env.clone());
        d.set_memory(ram(Self::RAM));
        bus_master(&d);
        (d, t)
    }
}

/// What a driver does its part's own way beyond the queues, for physical
/// functions the double drives (NVM, time sync, the PF's interrupt causes
/// and counters, the link, loopback). Each part implements it next to its
/// model (`igb/double.rs`, `ixgbe/double.rs`).
pub trait DriverPart: DriverQueues {
    /// EERD, the NVM read register.
    const EERD: u32;
    /// SYSTIML (SYSTIMH follows at +4).
    const SYSTIML: u32;
    /// The first ICR / EICR: the interrupt causes the driver reads.
    const ICR: u32;
    /// The cause a received frame raises in [`Self::ICR`] with the
    /// interrupt registers as reset leaves them (the 82576's RXT0; none on
    /// the 82599, whose queue causes need an IVAR entry).
    const RX_CAUSE: u32;
    /// Missed packets (MPC; the 82599's first of eight).
    const MPC: u32;
    /// Receive no buffers count (RNBC; the 82599's first of eight).
    const RNBC: u32;
    /// GPRC counts frames the receiver had no buffer for too (the 82599's
    /// does: its driver computes GPRC - MPC).
    const GPRC_COUNTS_MISSED: bool;
    /// The medium negotiates the link after a cable is connected (a copper
    /// PHY's autonegotiation), so the link comes up only after the timer.
    const NEGOTIATES: bool;
    /// Size of the loopback self-test's frame (`igb_run_loopback_test`,
    /// `ixgbe_run_loopback_test`).
    const LBTEST_SIZE: usize;

    /// Per-queue register counting frames receive queue `q` dropped for
    /// want of a buffer (RQDPC, QPRDC).
    fn rx_queue_drops(q: usize) -> u32;
    /// Brings the MAC's link up as the driver does at open (the 82576's
    /// CTRL.SLU; nothing on the 82599, whose link follows the SFP+ cage).
    fn link_up(d: &Function<Self>);
    /// Loops transmitted frames back into the receiver (`on`), as the
    /// loopback self-test sets it up, or undoes that with the link up.
    fn set_loopback(d: &Function<Self>, t: &TestEnv, on: bool);

    /// The loopback self-test's frame, [`Self::LBTEST_SIZE`] bytes.
    fn lbtest_frame() -> Vec<u8> {
        lbtest_frame(Self::LBTEST_SIZE)
    }
}

/// Reads the register at `off` of BAR 0.
pub fn rd(d: &impl PciFunction, off: u32) -> u32 {
    let mut b = [0u8; 4];
    d.bar_read(0, u64::from(off), &mut b);
    u32::from_le_bytes(b)
}

/// Writes `v` to the register at `off` of BAR 0.
pub fn wr(d: &impl PciFunction, off: u32, v: u32) {
    d.bar_write(0, u64::from(off), &v.to_le_bytes());
}

/// Reads NVM word `word` through EERD (`igb_read_nvm_eerd`,
/// `ixgbe_read_eerd_buffer_generic`).
pub fn nvm_read<M: DriverPart>(d: &Function<M>, word: u32) -> u16 {
    wr(d, M::EERD, (word << 2) | 1);
    let v = rd(d, M::EERD);
    assert_ne!(v & 2, 0, "EERD done");
    (v >> 16) as u16
}

/// SYSTIM: SYSTIML, then SYSTIMH (`igb_ptp_read_82576`,
/// `ixgbe_ptp_read_82599`).
pub fn systim<M: DriverPart>(d: &Function<M>) -> u64 {
    let lo = rd(d, M::SYSTIML);
    u64::from(lo) | (u64::from(rd(d, M::SYSTIML + 4)) << 32)
}

/// Sets up transmit and receive queue 0 with `n` descriptors each, as the
/// drivers' ring set-up does (`igb_configure_tx_ring` and `_rx_ring`,
/// `ixgbe_configure_tx_ring` and `_rx_ring`), gives every receive
/// descriptor a buffer and posts `n - 1` of them.
pub fn setup_rings<M: DriverQueues>(d: &Function<M>, n: u32) {
    let tb = M::driver_txq(0);
    wr(d, tb + q::DCTL, 0);
    ring_registers(d, tb, TX_RING, n);
    wr(d, tb + q::DCTL, M::TXDCTL);
    assert_ne!(rd(d, tb + q::DCTL) & QUEUE_ENABLE, 0);
    M::enable_tx(d);
    M::set_rx_enabled(d, false);
    let rb = M::driver_rxq(0);
    wr(d, rb + q::DCTL, 0);
    assert_eq!(rd(d, rb + q::DCTL) & QUEUE_ENABLE, 0);
    ring_registers(d, rb, RX_RING, n);
    wr(d, rb + M::LAYOUT.srrctl, M::SRRCTL);
    wr(d, rb + q::DCTL, M::RXDCTL);
    assert_ne!(rd(d, rb + q::DCTL) & QUEUE_ENABLE, 0);
    for i in 0..n {
        post_rx(d, i);
    }
    wr(d, rb + q::T, n - 1);
    M::set_rx_enabled(d, true);
}

/// Base, length, head and tail of the ring of the queue block at `block`.
fn ring_registers(d: &impl PciFunction, block: u32, ring: u64, n: u32) {
    wr(d, block, ring as u32);
    wr(d, block + 4, (ring >> 32) as u32);
    wr(d, block + 8, n * 16);
    wr(d, block + q::H, 0);
    wr(d, block + q::T, 0);
}

/// Gives receive descriptor `i` its buffer again (status cleared), as the
/// driver's refill does; the tail is the caller's.
pub fn post_rx<M: DriverQueues>(d: &Function<M>, i: u32) {
    let desc = RX_RING + u64::from(i) * 16;
    d.mem()
        .write_obj(RX_BUFS + u64::from(i) * BUF, GuestAddress(desc))
        .unwrap();
    d.mem().write_obj(0u64, GuestAddress(desc + 8)).unwrap();
}

/// Queues `frame` in transmit descriptor `idx` of a ring of `n` and moves
/// the tail past it (a doorbell).
pub fn send<M: DriverQueues>(d: &Function<M>, idx: u32, n: u32, frame: &[u8]) {
    write_tx(d, idx, frame, TX_DATA_CMD);
    wr(d, M::driver_txq(0) + q::T, (idx + 1) % n);
}

/// Writes `frame` into transmit descriptor `idx`'s buffer and the
/// descriptor with command `cmd` (its length added), without a doorbell.
pub fn write_tx<M: DriverQueues>(d: &Function<M>, idx: u32, frame: &[u8], cmd: u32) {
    let buf = TX_BUFS + u64::from(idx) * BUF;
    d.mem().write_slice(frame, GuestAddress(buf)).unwrap();
    let desc = TX_RING + u64::from(idx) * 16;
    d.mem().write_obj(buf, GuestAddress(desc)).unwrap();
    let len = frame.len() as u32;
    d.mem()
        .write_obj(cmd | len, GuestAddress(desc + 8))
        .unwrap();
    d.mem()
        .write_obj(len << 14, GuestAddress(desc + 12))
        .unwrap();
}

/// The status/error dword and the length of receive descriptor `i` as the
/// function wrote it back.
pub fn rx_written<M: DriverQueues>(d: &Function<M>, i: u32) -> (u32, u16) {
    let desc = RX_RING + u64::from(i) * 16;
    let st: u32 = d.mem().read_obj(GuestAddress(desc + 8)).unwrap();
    let len: u16 = d.mem().read_obj(GuestAddress(desc + 12)).unwrap();
    (st, len)
}

/// Transmit descriptor `i`'s DD bit, as the function wrote it back.
pub fn tx_done<M: DriverQueues>(d: &Function<M>, i: u32) -> bool {
    let st: u32 = d
        .mem()
        .read_obj(GuestAddress(TX_RING + u64::from(i) * 16 + 12))
        .unwrap();
    st & 1 != 0
}

/// The first `len` bytes of receive buffer `i`.
pub fn rx_buffer<M: DriverQueues>(d: &Function<M>, i: u32, len: usize) -> Vec<u8> {
    let mut got = vec![0u8; len];
    d.mem()
        .read_slice(&mut got, GuestAddress(RX_BUFS + u64::from(i) * BUF))
        .unwrap();
    got
}

/// Moves the clock to the end of the link negotiation under way and fires
/// the timer, as the transport does.
pub fn autoneg_done<M: DriverPart>(d: &Function<M>, t: &TestEnv) {
    let at = t.clock.now_ns() + crate::phy::AUTONEG_NS;
    t.clock.set(at);
    PciFunction::on_timer(d, at);
}

/// The loopback self-test's frame of `size` bytes
/// (`igb_create_lbtest_frame`, `ixgbe_create_lbtest_frame`): all 0xff, a
/// run of 0xaa from the middle on, 0xbe and 0xaf 10 and 12 bytes past the
/// middle.
pub fn lbtest_frame(size: usize) -> Vec<u8> {
    let half = size / 2;
    let mut f = vec![0xffu8; size];
    f[half..half + half / 2 - 1].fill(0xaa);
    f[half + 10] = 0xbe;
    f[half + 12] = 0xaf;
    f
}

/// A PTP v2 message of type `msg` with sequence id `seq` over Ethernet
/// (ptp4l -2) to 01:1b:19:00:00:00.
pub fn ptp_l2_frame(msg: u8, seq: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 44];
    f[..6].copy_from_slice(&[0x01, 0x1b, 0x19, 0, 0, 0]);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 2]);
    f[12..14].copy_from_slice(&0x88f7u16.to_be_bytes());
    f[14] = msg;
    f[15] = 2;
    f[14 + 30..14 + 32].copy_from_slice(&seq.to_be_bytes());
    f
}

/// An IEEE 802.3x PAUSE frame from the link partner, pause time `quanta`.
pub fn pause_frame(quanta: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x01, 0x80, 0xc2, 0, 0, 1]);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 9]);
    f[12..14].copy_from_slice(&0x8808u16.to_be_bytes());
    f[14..16].copy_from_slice(&1u16.to_be_bytes());
    f[16..18].copy_from_slice(&quanta.to_be_bytes());
    f
}

/// A 60-byte frame to `dst`.
pub fn frame_to(dst: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&dst);
    f
}

/// A statistics total by name, as `ctl stats` shows it.
pub fn total(d: &impl Introspect, name: &str) -> u64 {
    d.counters()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|c| c.1)
        .unwrap()
}

/// A nicemu counter by name (`ctl stats`' guest_errors list); 0 when absent.
pub fn error_counter(d: &impl Introspect, name: &str) -> u64 {
    d.error_counters()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |c| c.1)
}

/// Runs the loopback self-test's traffic (`igb_run_loopback_test`,
/// `ixgbe_run_loopback_test`) on rings of `n` set up and looped back:
/// `frames` frames, each sent, received into the slot it was sent from with
/// DD and EOP, its bytes intact, its transmit descriptor written back, and
/// the buffer re-posted. Checks that none reached the wire and that the
/// good, broadcast and octet counters and the size bucket counted them all.
pub fn loopback_round_trips<M: DriverPart>(d: &Function<M>, t: &TestEnv, n: u32, frames: u32) {
    let f = M::lbtest_frame();
    for i in 0..frames {
        let slot = i % n;
        send(d, slot, n, &f);
        let (st, len) = rx_written(d, slot);
        assert_eq!(st & 3, 3, "frame {i}: DD|EOP");
        assert_eq!(usize::from(len), f.len(), "frame {i} written back");
        assert_eq!(rx_buffer(d, slot, f.len()), f);
        assert!(tx_done(d, slot), "TX DD");
        post_rx(d, slot);
        wr(d, M::driver_rxq(0) + q::T, slot);
    }
    assert!(t.wire.take().is_empty(), "loopback frames stay inside");
    let wire_len = f.len() as u32 + 4;
    assert_eq!(rd(d, stat::GPRC), frames);
    assert_eq!(rd(d, stat::BPRC), frames);
    assert_eq!(rd(d, stat::GPTC), frames);
    assert_eq!(rd(d, stat::GORCL), frames * wire_len);
    assert_eq!(rd(d, stat::GORCL + 4), 0);
    let bucket = [64, 127, 255, 511, 1023, 1522]
        .iter()
        .position(|b| wire_len <= *b)
        .unwrap() as u32;
    assert_eq!(
        rd(d, stat::PRC64 + 4 * bucket),
        frames,
        "receive size bucket"
    );
    assert_eq!(
        rd(d, stat::PTC64 + 4 * bucket),
        frames,
        "transmit size bucket"
    );
}
