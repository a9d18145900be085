// SPDX-License-Identifier: Apache-2.0
//! The receive engine both parts share (82576 datasheet §7.1, 82599 §7.1):
//! queue selection by RSS, injected receive faults, size checks, the part's
//! address and VLAN filters, the IEEE 1588 receive stamp, then placing the
//! frame into the chosen queue's ring in the advanced one-buffer write-back
//! format (VLAN stripping, packet type, RSS hash, checksum status), counting
//! it and signalling the queue.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use nicemu_net_util::rss::HashType;

use super::stats::Tally;
use super::{q, Dir, Function, MaxFrame, Part, RxHooks, RxSecurity, QUEUE_ENABLE};
use crate::batch::Frames;
use crate::desc::{rx_status, rx_writeback, RXD_STAT_VP};
use crate::dma::{DmaView, RegionCache};
use crate::fault::RxFault;
use crate::ptp::{self, RxFilter};
use crate::ring::{self, Ring, RxRingMem};
use crate::rss;
use crate::sync::lock_or_try;

/// ETQF: time stamp frames of this ethertype (IEEE 1588; bit 30 on both parts).
const ETQF_1588: u32 = 1 << 30;
/// Shortest frame the receiver looks at: an Ethernet header.
const ETH_HLEN: usize = 14;

/// SRRCTL.DESCTYPE (bits 27:25) "header split, always use the header
/// buffer" (101b; 82576 SRRCTL, the igb drivers'
/// `E1000_SRRCTL_DESCTYPE_HDR_SPLIT_ALWAYS`).
const DESCTYPE_HDR_SPLIT_ALWAYS: u32 = 5;

/// The header buffer's size in bytes a receive queue with SRRCTL `srrctl`
/// places frames with (BSIZEHEADER in the field `bsizehdr`, 64-byte units
/// from bit 8), or 0 when it places them in packet buffers only.
///
/// The 82576 datasheet's "Header Splitting and Replication" and its table:
/// with DESCTYPE 101b the header buffer is always used. A header the parser
/// splits off (a packet type PSRTYPE enables) goes there alone; a packet it
/// does not split goes there from its first byte: all of it when it fits
/// (HDR_LEN its length, PKT_LEN 0), else BSIZEHEADER bytes (HDR_LEN
/// BSIZEHEADER) with the rest in the packet buffer and on in the next
/// descriptors' packet buffers (only the first header buffer is used); SPH
/// clear. The model does not parse headers for PSRTYPE: it places every
/// frame the second way, as the part does with no packet type enabled.
/// igbvf (`igbvf_setup_srrctl`, buffers of 2 KiB and more) and the igb
/// drivers of 2.6.3x kernels (jumbo frames) program this mode and take
/// HDR_LEN bytes from the header buffer either way (`igbvf_clean_rx_irq`).
/// Header split without "always" (010b) places an unsplit packet in the
/// packet buffer only, as one buffer does; BSIZEHEADER 0, which header
/// split forbids, is taken as one buffer.
pub(crate) fn header_buffer(srrctl: u32, bsizehdr: u32) -> usize {
    if bsizehdr == 0 || (srrctl >> 25) & 7 != DESCTYPE_HDR_SPLIT_ALWAYS {
        return 0;
    }
    ((srrctl & bsizehdr) >> 8) as usize * 64
}

/// MAC control frames (IEEE 802.3 Annex 31B) carry this ethertype.
const ETH_P_MAC_CONTROL: u16 = 0x8808;
/// The MAC control opcode of a PAUSE frame.
const PAUSE_OPCODE: u16 = 0x0001;

/// Whether `frame` is an IEEE 802.3x PAUSE frame, and then whether it is an
/// XON (pause time 0). The MAC takes such a frame itself and counts it (the
/// flow-control sections of the 82576 and 82599 datasheets): it is not posted to a receive queue
/// and not counted as a good packet received. What its pause time does to
/// the transmitter is not modelled.
fn pause_frame(frame: &[u8]) -> Option<bool> {
    let word = |at: usize| Some(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]));
    if word(12)? != ETH_P_MAC_CONTROL || word(14)? != PAUSE_OPCODE {
        return None;
    }
    Some(word(16)? == 0)
}

/// What a receive batch placed and has not counted or signalled yet: the
/// frames placed on one queue since the last change of queue, and the
/// queues whose interrupt is due (one bit per queue; both parts have at most
/// 128). Counted, then signalled, once per batch ([`Function::rx_done`]).
/// With them, what the batch places frames through: the DMA view, taken
/// once for the batch as a transmit doorbell takes it once for its pass, the
/// descriptors of the ring it last placed a frame into, and the lock of the
/// queue it places frames into, held from frame to frame while they go to
/// that queue (released when the batch moves to another queue, and before
/// its interrupts are signalled).
pub(crate) struct RxDone<'v> {
    qi: usize,
    tally: Tally,
    signal: u128,
    /// `None` while bus mastering is off.
    dma: Option<&'v DmaView>,
    held: Option<(usize, MutexGuard<'v, ()>)>,
    /// The set-up of the queue the batch last placed a frame into.
    setup: Option<RxQueueSetup<'v>>,
    /// The address and VLAN filters' verdict on the batch's last frame
    /// that reached them, by what they read of it ([`FilterKey`]).
    accepted: Option<(FilterKey, bool)>,
    /// Descriptors the batch used, added to the function's count once.
    used: u64,
    /// The queue whose bit in `signal` the batch set last (`usize::MAX`:
    /// none yet).
    signalled: usize,
    /// What the receiver's registers say of every frame of the batch, read
    /// at its first frame ([`RxGate`]).
    gate: Option<RxGate>,
    /// Whether the part may place frames its own way
    /// ([`super::Receive::rx_place_on`]) into the queue whose lock the batch
    /// holds, asked at the first frame for it.
    place: Option<bool>,
}

/// What the function's receive registers and state say of every frame of a
/// batch, read once when its first frame arrives (the batch reaches the
/// receiver at one instant, as its queue's set-up is read once,
/// [`RxQueueSetup`]): whether frames are taken (link, receiver enabled),
/// the MRQC word of RSS, the longest frame taken, whether receive time
/// stamping is on, and which of the part's own steps may act.
#[derive(Clone, Copy)]
struct RxGate {
    refused: Refused,
    hooks: RxHooks,
    /// MRQC when it enables RSS, else `None`.
    mrqc: Option<u32>,
    max: MaxFrame,
    stamping: bool,
}

/// Why frames are not taken, or that they are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refused {
    No,
    /// No link (`rx_no_link`).
    Link,
    /// The receiver is disabled (`rx_disabled`).
    Disabled,
}

/// What the parts' address and VLAN filters ([`super::Receive::rx_accept`])
/// read of a frame: its destination address, the ethertype or tag after the
/// source address, the VLAN ID, and whether it is long enough to carry a
/// tag (16 bytes, or 18 with the 82599's tag test). Frames of a batch with
/// the same key get the same verdict, so the filters run once for them
/// (they read the filter registers once per batch, as the queue set-up is).
#[derive(Clone, Copy, PartialEq, Eq)]
struct FilterKey {
    /// The first 16 bytes, as one word: a compare of two words per frame.
    head: u128,
    len: u8,
}

impl FilterKey {
    #[inline]
    fn of(frame: &[u8]) -> Option<FilterKey> {
        let head = u128::from_ne_bytes(frame.get(..16)?.try_into().ok()?);
        Some(FilterKey {
            head,
            len: frame.len().min(18) as u8,
        })
    }
}

/// What placing a frame into a receive queue reads from the queue's
/// registers, read once for the frames of a batch that go to that queue
/// while the batch holds the queue's lock (the batch reaches the queue at one
/// instant; a driver's RDH and RXDCTL writes wait for the lock, and
/// [`RxDone::hold`] forgets the set-up when it lets the lock go): an enabled
/// queue's ring (base and length), buffer sizes, VLAN ethertype and
/// stripping, its descriptors in the batch's DMA view, and the ring's head
/// and tail. The head is the batch's own while it holds the lock (it writes
/// RDH as it moves it); the tail is the driver's, which moves it while the
/// batch runs: it is read again when the tail the batch has leaves too few
/// descriptors for a frame, so a frame is missed only if the tail register
/// says so.
#[derive(Clone, Copy)]
struct RxQueueSetup<'v> {
    qi: usize,
    base: u64,
    count: u32,
    bufsize: usize,
    /// The header buffer's size when the queue places the first bytes of a
    /// frame there ([`header_buffer`]); 0: one buffer per descriptor.
    hdrsize: usize,
    vet: u16,
    strip: bool,
    descs: Option<RxRingMem<'v>>,
    head: u32,
    tail: u32,
}

impl RxQueueSetup<'_> {
    /// Descriptors a frame of `total` bytes takes with the header buffer:
    /// the first takes `hdrsize` bytes more.
    #[inline]
    fn descriptors_for(&self, total: usize) -> u32 {
        ring::buffers_for(total.saturating_sub(self.hdrsize), self.bufsize).max(1)
    }
}

impl<'v> RxDone<'v> {
    /// A batch placing frames through `dma` ([`crate::dma::DmaMemory::get`]).
    pub(crate) fn new(dma: Option<&'v DmaView>) -> Self {
        RxDone {
            qi: 0,
            tally: Tally::default(),
            signal: 0,
            dma,
            held: None,
            setup: None,
            accepted: None,
            used: 0,
            signalled: usize::MAX,
            gate: None,
            place: None,
        }
    }

    /// Holds the lock of queue `qi` of `queues` for the batch (the lock of
    /// another queue it held is released first). Without `wait`, false when
    /// the queue is busy.
    ///
    /// The queue set-up the batch read is only good while it holds that
    /// queue's lock: once the lock is let go, the driver may disable the
    /// queue or move its ring (RXDCTL, then RDBA/RDLEN/SRRCTL), so the
    /// set-up is forgotten with the lock and read again under the next one.
    #[inline]
    fn hold(&mut self, queues: &'v [Mutex<()>], qi: usize, wait: bool) -> bool {
        if self.held.as_ref().is_some_and(|(q, _)| *q == qi) {
            return true;
        }
        self.held = None;
        self.setup = None;
        self.place = None;
        self.held = lock_or_try(&queues[qi], wait).map(|g| (qi, g));
        self.held.is_some()
    }
}

impl<M: Part> Function<M> {
    /// A frame from the wire: dropped (consumed, counted as `rx_no_link`)
    /// where the part does not take frames from the wire now, else
    /// [`Self::rx_frame`].
    pub(crate) fn receive_from_wire(&self, frame: &[u8], sent: Option<u64>, wait: bool) -> bool {
        self.receive_batch_from_wire(Frames::One(frame), sent, wait) == 1
    }

    /// [`Self::receive_from_wire`] for frames in order, as one batch: the
    /// frames placed are counted and their queues signalled once, at the
    /// end. Returns how many frames were consumed (without `wait`, the frames
    /// from the first one whose queue was busy on are left unchanged).
    pub(crate) fn receive_batch_from_wire(
        &self,
        frames: Frames<'_>,
        sent: Option<u64>,
        wait: bool,
    ) -> usize {
        let view = self.mem.get();
        let mut done = RxDone::new(view.as_deref());
        // Read once: the batch reaches the MAC at one instant.
        if !M::wire_rx(self) {
            for _ in frames.iter() {
                self.errors.rx_no_link();
            }
            return frames.len();
        }
        let taken = match frames {
            Frames::One(f) => usize::from(self.rx_one(f, sent, wait, &mut done)),
            Frames::Many(v) => {
                let mut i = 0;
                while i < v.len() {
                    // From the second frame on, a run of frames the first
                    // ones set the batch up for is placed in a loop of its
                    // own; the frame it stops at goes the whole way.
                    if i > 0 {
                        i += self.rx_run(&v[i..], &mut done);
                        if i == v.len() {
                            break;
                        }
                    }
                    if !self.rx_one(&v[i], sent, wait, &mut done) {
                        break;
                    }
                    i += 1;
                }
                i
            }
        };
        self.rx_done(&mut done);
        taken
    }

    /// Places the frames of a batch from the first of `frames` on, while
    /// each is one whose way through the receiver the batch has already
    /// read: the receiver takes frames and none of the part's own steps
    /// (Flow Director, IPsec, RSC, time stamps) may act; no fault is armed;
    /// it has the filter key of the last frame the filters passed and is not
    /// too long; it goes (by RSS where MRQC enables it) to the queue whose
    /// lock and set-up the batch holds, which places it whole in one buffer
    /// (no header buffer, no VLAN tag to strip) and has a descriptor for it
    /// below the tail the batch read. That is what [`Self::rx_one`] would do
    /// with each of them, done with the queue's ring, buffer region and
    /// counters held in one loop: the head is written to RDH once, at the
    /// end (the batch holds the queue's lock meanwhile), and the queue
    /// signalled once. Returns how many frames it consumed; a frame it does
    /// not take (a descriptor or buffer it cannot reach included) goes
    /// through [`Self::rx_one`], which reads what it needs again and counts
    /// what it must.
    #[inline(never)]
    fn rx_run<'v>(&'v self, frames: &[Vec<u8>], done: &mut RxDone<'v>) -> usize {
        let Some((gate, key)) = Self::rx_run_ready(done) else {
            return 0;
        };
        let (Some(mem), Some(setup)) = (done.dma, done.setup.as_mut()) else {
            return 0;
        };
        let (qi, Some(descs)) = (setup.qi, setup.descs) else {
            return 0;
        };
        if setup.hdrsize != 0 || done.held.as_ref().is_none_or(|(h, _)| *h != qi) {
            return 0;
        }
        let mut bufs = RegionCache::default();
        // The set-up in locals for the loop (the head is written back).
        let run = *setup;
        let mut head = run.head;
        let (mut taken, mut placed) = (0, 0u32);
        for f in frames {
            let Some((hash, ty)) = self.rx_run_takes(f, key, &gate, &run, head) else {
                break;
            };
            let Ok(d) = descs.read.read(head) else {
                break;
            };
            let pkt = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
            let Some(buf) = bufs.slice(&mem.write, pkt, f.len()) else {
                break;
            };
            buf.copy_from(f);
            let ptype = rss::packet_type(f);
            let st = M::rx_status(self, f, ptype, hash);
            let pkt_info = ptype | rss::descriptor_type(ty);
            let status = rx_status(true, 0, st.csum);
            let wb = rx_writeback(pkt_info, st.hash, status, f.len() as u16, 0);
            taken += 1;
            if descs.write.write_back(head, &wb).is_err() {
                // As `rx_place`: the frame is lost, the head stays.
                self.errors.dma();
                continue;
            }
            head = if head + 1 < run.count { head + 1 } else { 0 };
            placed += 1;
            if done.qi != qi {
                self.count_tally(Dir::Rx, done.qi, &mut done.tally);
                done.qi = qi;
            }
            done.tally.add(f);
        }
        if placed != 0 {
            setup.head = head;
            self.regs.poke(M::rxq_base(qi) + q::H, head);
            done.used += u64::from(placed);
        }
        if taken != 0 && done.signalled != qi {
            done.signalled = qi;
            done.signal |= 1 << (qi % 128);
        }
        taken
    }

    /// What [`Self::rx_run`] needs of the batch so far: its gate, when
    /// the receiver takes frames and none of the part's own steps may act on
    /// them, and the filter key the filters last passed.
    #[inline(always)]
    fn rx_run_ready(done: &RxDone) -> Option<(RxGate, FilterKey)> {
        let gate = done.gate?;
        let off = gate.refused != Refused::No
            || gate.hooks.steer
            || gate.hooks.security
            || gate.stamping
            || (M::RX_PLACE && done.place != Some(false));
        match done.accepted {
            Some((key, true)) if !off => Some((gate, key)),
            _ => None,
        }
    }

    /// Whether [`Self::rx_run`] takes frame `f` into the queue of `setup`
    /// (its head at `head`), and then the frame's RSS hash and type.
    #[inline(always)]
    fn rx_run_takes(
        &self,
        f: &[u8],
        key: FilterKey,
        gate: &RxGate,
        setup: &RxQueueSetup,
        head: u32,
    ) -> Option<(u32, HashType)> {
        if FilterKey::of(f) != Some(key) || gate.max.exceeded_by(f) || !self.faults.idle() {
            return None;
        }
        // Without RSS every frame goes to queue 0 (`rx_queue_for`).
        let (hash, ty, qi) = match gate.mrqc {
            Some(mrqc) => {
                let (hash, ty) = self.rss_hash_with(mrqc, f);
                (hash, ty, self.rx_queue_for(hash, ty) % self.rxq.len())
            }
            None => (0, HashType::None, 0),
        };
        // The key's 16 bytes are there.
        let strip = setup.strip && u16::from_be_bytes([f[12], f[13]]) == setup.vet && f.len() >= 18;
        let takes = qi == setup.qi && f.len() <= setup.bufsize && !strip && head != setup.tail;
        takes.then_some((hash, ty))
    }

    /// Delivers a frame (without FCS) from the wire or a loopback to the
    /// host; `sent` is when it left its sender, if known (for its IEEE 1588
    /// stamp).
    ///
    /// The receive queue is chosen first (RSS) and only that queue's lock is
    /// taken, so frames for different queues are placed concurrently. Without
    /// `wait`, a busy queue makes this return false before anything changed;
    /// otherwise the frame is consumed (placed, or dropped and counted) and
    /// this returns true.
    pub(crate) fn rx_frame(&self, frame: &[u8], sent: Option<u64>, wait: bool) -> bool {
        let view = self.mem.get();
        let mut done = RxDone::new(view.as_deref());
        let consumed = self.rx_one(frame, sent, wait, &mut done);
        self.rx_done(&mut done);
        consumed
    }

    /// [`Self::rx_frame`] of a batch: what was placed is left in `done`.
    /// Always inline: in a batch's loop it saves a call per frame (igb 64 B
    /// 16 instructions per frame).
    #[inline(always)]
    pub(super) fn rx_one<'v>(
        &'v self,
        frame: &[u8],
        sent: Option<u64>,
        wait: bool,
        done: &mut RxDone<'v>,
    ) -> bool {
        let gate = match done.gate {
            Some(g) => g,
            None => *done.gate.insert(self.rx_gate()),
        };
        match gate.refused {
            Refused::No => {}
            Refused::Link => {
                self.errors.rx_no_link();
                return true;
            }
            Refused::Disabled => {
                self.errors.rx_disabled();
                return true;
            }
        }
        // A frame whose filter key the batch's last filtered frame had is no
        // PAUSE frame: the key holds the ethertype and opcode, and its length
        // up to the pause time (see `pause_frame`).
        let key = FilterKey::of(frame);
        let seen = key.is_some() && done.accepted.is_some_and(|(k, _)| Some(k) == key);
        if !seen {
            if let Some(xon) = pause_frame(frame) {
                let c = M::PAUSE_RX;
                self.stat_add(if xon { c.xon } else { c.xoff }, 1);
                return true;
            }
        }
        let (hash, ty) = match gate.mrqc {
            Some(mrqc) if frame.len() >= ETH_HLEN => self.rss_hash_with(mrqc, frame),
            _ => (0, HashType::None),
        };
        let steered = if gate.hooks.steer {
            M::steer(self, frame)
        } else {
            None
        };
        let qi = steered.unwrap_or_else(|| self.rx_queue_for(hash, ty)) % self.rxq.len();
        if !done.hold(&self.rxq, qi, wait) {
            return false;
        }
        if !self.rx_passes(qi, frame, key, &gate, done) {
            return true;
        }
        let ts = gate.stamping && self.rx_timestamp(frame, sent);
        // What the security engine decrypted is placed instead of the frame;
        // a frame the part places its own way (RSC) is done.
        let security = if gate.hooks.security {
            M::rx_security(self, frame)
        } else {
            None
        };
        let place = M::RX_PLACE && *done.place.get_or_insert_with(|| M::rx_place_on(self, qi));
        let (placed, sec) = match &security {
            Some((sec, clear)) => (clear.as_deref().unwrap_or(frame), *sec),
            None if place && M::rx_place(self, qi, frame, hash, ty, ts) => {
                // The part moved the ring's head its own way.
                done.setup = None;
                return true;
            }
            None => (frame, RxSecurity::default()),
        };
        self.rx_to_queue(qi, placed, (hash, ty), ts, sec, done);
        true
    }

    /// Counts a frame placed into queue `qi` (the frames counted so far on
    /// another queue are added to the statistics first).
    fn rx_count(&self, done: &mut RxDone, qi: usize, frame: &[u8]) {
        if done.qi != qi {
            self.count_tally(Dir::Rx, done.qi, &mut done.tally);
            done.qi = qi;
        }
        done.tally.add(frame);
    }

    /// Ends a receive batch: the queue lock it held is released, its frames
    /// are counted, then every queue it placed frames into is signalled once.
    pub(crate) fn rx_done(&self, done: &mut RxDone) {
        done.held = None;
        done.setup = None;
        done.place = None;
        done.signalled = usize::MAX;
        self.count_tally(Dir::Rx, done.qi, &mut done.tally);
        if done.used != 0 {
            self.descs[1].fetch_add(std::mem::take(&mut done.used), Ordering::Relaxed);
        }
        while done.signal != 0 {
            let qi = done.signal.trailing_zeros() as usize;
            done.signal &= done.signal - 1;
            M::queue_interrupt(self, qi, Dir::Rx);
        }
    }

    /// What the receive registers say of every frame of a batch
    /// ([`RxGate`]), read at its first frame.
    #[inline(never)]
    fn rx_gate(&self) -> RxGate {
        let refused = if !M::rx_link(self) {
            Refused::Link
        } else if !M::rx_enabled(self) {
            Refused::Disabled
        } else {
            Refused::No
        };
        let mrqc = self.regs.peek(M::LAYOUT.mrqc);
        RxGate {
            refused,
            hooks: M::rx_hooks(self),
            mrqc: M::rss_enabled(mrqc).then_some(mrqc),
            max: M::max_frame(self),
            stamping: self.rx_stamping(),
        }
    }

    /// RSS hash of a frame when MRQC enables it (§7.1.2.8 of both parts).
    #[cfg(test)]
    pub(crate) fn rss_hash(&self, frame: &[u8]) -> (u32, HashType) {
        // The layout's fields one by one: a copy of the whole (`let l =
        // M::LAYOUT`) costs a memcpy per frame.
        let mrqc = self.regs.peek(M::LAYOUT.mrqc);
        if frame.len() < ETH_HLEN || !M::rss_enabled(mrqc) {
            return (0, HashType::None);
        }
        self.rss_hash_with(mrqc, frame)
    }

    /// RSS hash of a frame (at least an Ethernet header) with `mrqc`, which
    /// enables RSS.
    fn rss_hash_with(&self, mrqc: u32, frame: &[u8]) -> (u32, HashType) {
        let rssrk = M::LAYOUT.rssrk;
        rss::hash_with_regs(|i| self.regs.peek(rssrk + 4 * i), mrqc, frame)
    }

    /// Queue for a frame: RETA entry `hash[6:0]` when RSS hashed it, else
    /// queue 0.
    pub(crate) fn rx_queue_for(&self, hash: u32, ty: HashType) -> usize {
        rss::reta_queue(|i| self.regs.peek(M::LAYOUT.reta + 4 * i), hash, ty)
    }

    /// Injected faults, size checks and the part's filters (queue `qi`'s
    /// lock held): whether the frame goes on to its queue. A frame that does
    /// not is counted where the part counts it. Always inline: called once
    /// per frame, from the batch's loop.
    #[inline(always)]
    fn rx_passes(
        &self,
        qi: usize,
        frame: &[u8],
        key: Option<FilterKey>,
        gate: &RxGate,
        done: &mut RxDone,
    ) -> bool {
        match self.faults.take_rx() {
            Some(RxFault::Corrupt) => {
                // A frame with a bad FCS: counted, not delivered.
                self.stat_add(M::LAYOUT.crcerrs, 1);
                return false;
            }
            Some(RxFault::Drop) => {
                // The frame finds no receive buffer.
                M::count_rx_miss(self, qi);
                return false;
            }
            None => {}
        }
        if frame.len() < ETH_HLEN {
            self.stat_add(M::LAYOUT.ruc, 1);
            return false;
        }
        if gate.max.exceeded_by(frame) {
            self.stat_add(M::LAYOUT.roc, 1);
            return false;
        }
        if !self.rx_accepts(frame, key, done) {
            self.errors.rx_filtered();
            return false;
        }
        true
    }

    /// [`super::Receive::rx_accept`], run once per [`FilterKey`] in a row.
    #[inline]
    fn rx_accepts(&self, frame: &[u8], key: Option<FilterKey>, done: &mut RxDone) -> bool {
        match (key, done.accepted) {
            (Some(k), Some((last, verdict))) if k == last => verdict,
            _ => {
                let verdict = M::rx_accept(self, frame);
                done.accepted = key.map(|k| (k, verdict));
                verdict
            }
        }
    }

    /// IEEE 1588 receive stamp (82576 §7.9.2.3, 82599 §7.9.1.1): TSYNCRXCTL's
    /// type, the part's message selection ([`Model::ptp_match`]) and the
    /// ETQF filters with the 1588 bit for L2 messages. The latch is taken when
    /// the frame passed the address filters, before a receive buffer is known
    /// (a frame then dropped for lack of descriptors leaves the latch locked,
    /// as the drivers' `*_ptp_rx_hang` expect). Asked while receive stamping
    /// is on ([`Self::rx_stamping`], read once per batch).
    #[inline(never)]
    fn rx_timestamp(&self, frame: &[u8], sent: Option<u64>) -> bool {
        let mut ts = self.ts();
        if !ts.rx_enabled() {
            return false;
        }
        let (etqf, etqf_enable) = (M::LAYOUT.etqf, M::LAYOUT.etqf_enable);
        let m = M::ptp_match(self);
        let regs = &self.regs;
        let filter = RxFilter {
            kind: ts.rxctl() & ptp::TSYNCRXCTL_TYPE_MASK,
            v1_ctrl: m.v1_ctrl,
            v2_msg: m.v2_msg,
            udp_port: m.udp_port,
            l2_1588: |et: u16| {
                (0..8).any(|i| {
                    let q = regs.peek(etqf + 4 * i);
                    q & etqf_enable != 0 && q & ETQF_1588 != 0 && q as u16 == et
                })
            },
        };
        ts.rx_stamp(self.env.clock.now_ns(), sent, frame, &filter)
    }

    /// The VLAN filter table has the VLAN ID of a tagged frame (§7.1.1.3 of
    /// the 82576, §7.1.2.2 of the 82599).
    pub(crate) fn vfta_has(&self, f: &[u8]) -> bool {
        let vid = u32::from(u16::from_be_bytes([f[14], f[15]]) & 0xfff);
        self.regs.peek(M::LAYOUT.vfta + 4 * (vid >> 5)) & (1 << (vid & 31)) != 0
    }

    /// The receive address entry whose low register is at `ral` (the high
    /// one follows) is valid, holds `dst` and has none of `asel` set (the
    /// address select bits that make it match something else).
    pub(crate) fn rar_holds(&self, ral: u32, dst: &[u8], asel: u32) -> bool {
        let rah = self.regs.peek(ral + 4);
        if rah & (1 << 31) == 0 || rah & asel != 0 {
            return false;
        }
        let lo = self.regs.peek(ral).to_le_bytes();
        let hi = (rah as u16).to_le_bytes();
        dst == [lo[0], lo[1], lo[2], lo[3], hi[0], hi[1]]
    }

    /// The multicast table has `dst`: 12 of its bits, chosen by the
    /// multicast offset `mo` (RCTL.MO, MCSTCTRL.MO), index the table.
    pub(crate) fn mta_has(&self, dst: &[u8], mo: u32) -> bool {
        let (b4, b5) = (u32::from(dst[4]), u32::from(dst[5]));
        let hash = match mo & 3 {
            0 => (b4 >> 4) | (b5 << 4),
            1 => (b4 >> 3) | (b5 << 5),
            2 => (b4 >> 2) | (b5 << 6),
            _ => b4 | (b5 << 8),
        } & 0xfff;
        self.regs.peek(M::LAYOUT.mta + 4 * (hash >> 5)) & (1 << (hash & 31)) != 0
    }

    /// The set-up of receive queue `qi` read from its registers for a batch
    /// (placing through `dma`): `None` (the miss counted) while the queue is
    /// disabled or its ring misprogrammed (a tail beyond the ring too: the
    /// next frame reads the registers again).
    #[inline(never)]
    fn rx_read_setup<'v>(&self, qi: usize, dma: Option<&'v DmaView>) -> Option<RxQueueSetup<'v>> {
        let base = M::rxq_base(qi);
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            M::count_rx_miss(self, qi);
            return None;
        }
        let r = match Ring::from_block(|o| self.regs.peek(o), base) {
            Ok(r) => r,
            Err(e) => {
                self.errors.ring();
                log::debug!("{}: rx queue {qi}: {e}", M::NAME);
                M::count_rx_miss(self, qi);
                return None;
            }
        };
        let srrctl = self.regs.peek(base + M::LAYOUT.srrctl);
        let bufsize = match (srrctl & M::LAYOUT.srrctl_bsize) as usize * 1024 {
            0 => 2048,
            n => n,
        };
        Some(RxQueueSetup {
            qi,
            base: r.base,
            count: r.count,
            bufsize,
            hdrsize: header_buffer(srrctl, M::LAYOUT.srrctl_bsizehdr),
            vet: self.regs.peek(M::LAYOUT.vet) as u16,
            strip: M::vlan_strip(self, qi),
            descs: dma.map(|d| RxRingMem::new(d, &r)),
            head: r.head,
            tail: r.tail,
        })
    }

    /// Places a frame into receive queue `qi` (its lock held), spanning
    /// descriptors if needed: [`Self::rx_place`], a queue with a header
    /// buffer ([`header_buffer`]) through [`Self::rx_to_split_queue`].
    #[inline]
    pub(crate) fn rx_to_queue(
        &self,
        qi: usize,
        frame: &[u8],
        hash: (u32, HashType),
        ts: bool,
        sec: RxSecurity,
        done: &mut RxDone,
    ) {
        if done.setup.as_ref().is_none_or(|s| s.qi != qi) {
            done.setup = self.rx_read_setup(qi, done.dma);
        }
        match done.setup.as_ref() {
            None => {}
            Some(s) if s.hdrsize != 0 => self.rx_to_split_queue(qi, frame, hash, ts, sec, done),
            Some(_) => self.rx_place::<false>(qi, frame, hash, ts, sec, done),
        }
    }

    /// [`Self::rx_place`] with a header buffer, out of the one-buffer path
    /// (only igbvf above an MTU of 1504 and old igb drivers ask for it).
    #[cold]
    #[inline(never)]
    fn rx_to_split_queue(
        &self,
        qi: usize,
        frame: &[u8],
        hash: (u32, HashType),
        ts: bool,
        sec: RxSecurity,
        done: &mut RxDone,
    ) {
        self.rx_place::<true>(qi, frame, hash, ts, sec, done);
    }

    /// Places a frame into receive queue `qi` whose set-up `done` holds:
    /// with `SPLIT`, its first bytes in the header buffer
    /// ([`ring::place_frame_with_header`]), else one buffer per descriptor.
    #[inline(always)]
    fn rx_place<const SPLIT: bool>(
        &self,
        qi: usize,
        frame: &[u8],
        (hash, ty): (u32, HashType),
        ts: bool,
        sec: RxSecurity,
        done: &mut RxDone,
    ) {
        let Some(setup) = done.setup.as_mut() else {
            return;
        };
        let base = M::rxq_base(qi);
        let mut r = Ring {
            base: setup.base,
            count: setup.count,
            head: setup.head,
            tail: setup.tail,
        };
        // VLAN strip: the tag goes to the descriptor.
        let tagged = frame.len() >= 18 && u16::from_be_bytes([frame[12], frame[13]]) == setup.vet;
        let (vlan, status_vp) = if tagged && setup.strip {
            (u16::from_be_bytes([frame[14], frame[15]]), RXD_STAT_VP)
        } else {
            (0, 0)
        };
        let parts: [&[u8]; 2] = if status_vp != 0 {
            [&frame[..12], &frame[16..]]
        } else {
            [frame, &[]]
        };
        let total = parts[0].len() + parts[1].len();
        let need = if SPLIT {
            setup.descriptors_for(total)
        } else {
            ring::buffers_for(total, setup.bufsize)
        };
        if r.pending() < need {
            // The tail as the driver has moved it since.
            let tail = self.regs.peek(base + q::T);
            if tail >= r.count {
                self.rx_bad_tail(qi, tail, r.count);
                return;
            }
            setup.tail = tail;
            r.tail = tail;
            if r.pending() < need {
                M::count_rx_miss(self, qi);
                return;
            }
        }
        let (Some(mem), Some(descs)) = (done.dma, setup.descs.as_ref()) else {
            // Bus mastering off (PCI COMMAND.BME): the frame cannot be placed.
            self.errors.dma_blocked();
            return;
        };
        let ptype = rss::packet_type(frame);
        let st = M::rx_status(self, frame, ptype, hash);
        let pkt_info = ptype | sec.ptype | rss::descriptor_type(ty);
        let eop_bits = st.csum | sec.status | if ts { ptp::RXD_STAT_TS } else { 0 };
        let st_hash = st.hash;
        let frame_parts = (&parts, total);
        let h0 = r.head;
        let wb = move |last, len| {
            let st = rx_status(last, status_vp, eop_bits);
            rx_writeback(pkt_info, st_hash, st, len, vlan)
        };
        let placed = if SPLIT {
            let sizes = (setup.hdrsize, setup.bufsize);
            ring::place_frame_with_header(mem, descs, &mut r, frame_parts, sizes, wb)
        } else {
            ring::place_frame(mem, descs, &mut r, frame_parts, setup.bufsize, wb)
        };
        let ok = placed.is_ok();
        if !ok {
            self.errors.dma();
        }
        setup.head = r.head;
        self.regs.poke(base + q::H, r.head);
        let used = if r.head >= h0 {
            r.head - h0
        } else {
            r.head + r.count - h0
        };
        done.used += u64::from(used);
        if ok {
            self.rx_count(done, qi, frame);
        }
        if done.signalled != qi {
            done.signalled = qi;
            done.signal |= 1 << (qi % 128);
        }
    }

    /// A receive ring whose tail is beyond it: counted as a ring error and
    /// a missed frame.
    #[cold]
    fn rx_bad_tail(&self, qi: usize, tail: u32, count: u32) {
        self.errors.ring();
        let e = ring::RingError::TailOutOfRange { tail, count };
        log::debug!("{}: rx queue {qi}: {e}", M::NAME);
        M::count_rx_miss(self, qi);
    }
}
