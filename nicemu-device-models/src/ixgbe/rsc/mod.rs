// SPDX-License-Identifier: Apache-2.0
//! Receive side coalescing of the 82599 (datasheet §7.11): TCP segments of
//! one connection that arrive in order are merged into one receive
//! descriptor chain behind the first segment's header, which `ixgbe` turns
//! into one large skb (LRO; `ixgbe_configure_rscctl`, `ixgbe_is_non_eop`,
//! `ixgbe_update_rsc_stats`).
//!
//! On: RSCCTL\[n\].RSCEN for the queue and RFCTL.RSC_DIS clear (the
//! `ixgbe_configure_rx` setup). A segment is a candidate when it is TCP
//! straight over IPv4 (no options, not a fragment) or IPv6 (no extension
//! header), carries data, has no TCP flag but ACK and PSH, good IP and TCP
//! checksums, and no VLAN tag the queue strips (`nicemu_net_util::coalesce`). A candidate
//! of a connection with an open context whose next sequence number it
//! carries and whose kept header it repeats (every field but the lengths,
//! IP ID and checksums, the TCP sequence and acknowledgement numbers, PSH,
//! window, checksum and urgent pointer) has its payload appended after the
//! context's data; one that opens no context is placed alone. A segment of
//! a connection with an open context that does not continue it closes the
//! context first, then is handled as new.
//!
//! Descriptors: payloads are packed into the context's receive buffers in
//! arrival order. When a buffer is full the context takes the ring's next
//! free descriptor, and the full one is written back with DD, without EOP,
//! its length, RSCCNT (the segments starting in it, at least 1) and NEXTP
//! (the next descriptor's index): the driver follows NEXTP, since other
//! connections' frames may sit between. Closing writes the last descriptor
//! back with EOP and updates the header in the first buffer: IPv4 total
//! length and header checksum (IPv6 payload length), and the last segment's
//! TCP acknowledgement number, window and PSH; the TCP checksum stays the
//! first segment's (the descriptor reports the L4 checksum as verified:
//! every segment's was). The queue's interrupt cause is raised then.
//!
//! A context closes when: a PSH segment was appended; the next segment would
//! need more descriptors than RSCCTL.MAXDESC (1, 4, 8, 16) allows or make
//! the IP datagram longer than 65535 bytes; the ring has no descriptor for
//! it; a segment of its connection does not continue it; and at the latest
//! when the interrupt throttling interval (EITR) of the queue's vector
//! passes after it opened — the EITR expiry completes the queue's RSCs
//! before the interrupt is asserted (RDRXCTL.RSCLLIDIS names the same
//! completion for low-latency interrupts). The device timer ends contexts
//! whose interval passed with no frame arriving. At most 32 contexts are
//! open per function; a candidate that finds none free is placed alone.
//!
//! Where the model chooses (the datasheet's per-field rules were not at
//! hand when it was written): the header fields compared above, the IP ID
//! not checked, a segment of any size appended, the interval taken in
//! full from the context's opening, and an IPv6 packet with extension
//! headers taken as not TCP (`nicemu_net_util::coalesce::classify`): it is placed
//! alone and leaves an open context of its connection open. Linux's GRO
//! merges such packets; virtio-net's coalescing does, RSC does not.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use nicemu_net_util::rss::HashType;
use vm_memory::Bytes;

use super::intr::{eitr_interval_ns, ivar_slot};
use super::regs::*;
use super::{Ixgbe, I82599};
use crate::desc::{rx_status, rx_writeback, RXD_STAT_IPCS};
use crate::dma::DmaView;
use crate::function::rx::RxDone;
use crate::function::stats::Tally;
use crate::function::{Dir, Interrupts, Receive, RxSecurity};
use crate::ring::{read_desc, write_buf, write_desc, Ring, RingError};
use crate::rss;
use crate::sync::lock;
use nicemu_net_util::coalesce::{classify, shape, FlowKey, Segment, MAX_HDR, PSH};

/// RSCCTL: coalescing enabled on the queue.
pub const RSCCTL_RSCEN: u32 = 1 << 0;
/// RFCTL: coalescing disabled on every queue.
pub const RFCTL_RSC_DIS: u32 = 1 << 5;
/// RX descriptor: RSCCNT, bits 20:17 of the first dword.
const RSCCNT_SHIFT: u32 = 17;
/// RX descriptor: NEXTP, bits 19:4 of the status dword.
const NEXTP_SHIFT: u32 = 4;
/// RX status: L4 checksum computed.
const RXD_STAT_L4CS: u32 = 1 << 5;
/// Contexts open at once per function.
pub const MAX_CONTEXTS: usize = 32;

/// One open coalescing context.
#[derive(Debug)]
struct Context {
    key: FlowKey,
    /// The kept header with the per-segment fields zeroed ([`shape`]).
    shape: [u8; MAX_HDR],
    next_seq: u32,
    /// Offset of the IP header in the placed frame, and the IP header length.
    l3: usize,
    ip_len: usize,
    /// Bytes placed (frame headers and every payload).
    total: usize,
    /// The first buffer (it holds the header).
    first_buf: u64,
    /// The descriptor and buffer being filled, the bytes in it, the
    /// segments that start in it.
    cur: u32,
    cur_buf: u64,
    cur_used: usize,
    cur_starts: u32,
    /// Descriptors used.
    ndesc: u32,
    /// The last segment's acknowledgement number, window, PSH.
    ack: [u8; 4],
    window: [u8; 2],
    psh: bool,
    /// What the descriptors report.
    pkt_info: u16,
    hash: u32,
    csum: u32,
    /// When the queue's interval passes (device clock).
    deadline: u64,
}

/// The contexts of the receive queues (part of the function's
/// [`super::State`]); each queue's behind its own lock, taken after the
/// queue's receive lock.
#[derive(Debug)]
pub struct Rsc {
    queues: Box<[Mutex<Vec<Context>>]>,
    open: AtomicUsize,
}

impl Default for Rsc {
    fn default() -> Self {
        Rsc {
            queues: (0..NUM_QUEUES).map(|_| Mutex::new(Vec::new())).collect(),
            open: AtomicUsize::new(0),
        }
    }
}

impl Rsc {
    /// Device reset: every context gone (the caller holds every receive
    /// queue's lock).
    pub fn reset(&self) {
        for q in self.queues.iter() {
            lock(q).clear();
        }
        self.open.store(0, Ordering::Relaxed);
    }
}

/// Where a segment's bytes go in the ring.
struct Ctx<'a> {
    f: &'a Ixgbe,
    qi: usize,
    mem: Arc<DmaView>,
    ring: Ring,
    bufsize: usize,
}

impl Ctx<'_> {
    /// Takes the descriptor at the head: its index and buffer address.
    fn take(&mut self) -> Result<(u32, u64), RingError> {
        let idx = self.ring.head;
        let d = read_desc(&self.mem.read, self.ring.desc_addr(idx))?;
        self.ring.advance();
        Ok((idx, u64::from_le_bytes(d[..8].try_into().unwrap_or([0; 8]))))
    }

    fn write_back(&self, idx: u32, desc: &[u8; 16]) -> Result<(), RingError> {
        write_desc(&self.mem.write, self.ring.desc_addr(idx), desc)
    }

    /// Appends a segment's bytes to the context's buffers, taking
    /// descriptors as they fill and writing the full ones back with NEXTP;
    /// the segment counts as starting in the buffer its first byte goes to.
    fn append(&mut self, c: &mut Context, mut data: &[u8]) -> Result<(), RingError> {
        let mut first = true;
        while !data.is_empty() {
            if c.cur_used == self.bufsize {
                let (idx, buf) = self.take()?;
                let st = rx_status(false, 0, 0) | (idx << NEXTP_SHIFT);
                let info = u32::from(c.pkt_info) | c.cur_starts.max(1) << RSCCNT_SHIFT;
                let d = rsc_writeback(info, c.hash, st, c.cur_used as u16);
                self.write_back(c.cur, &d)?;
                c.cur = idx;
                c.cur_buf = buf;
                c.cur_used = 0;
                c.cur_starts = 0;
                c.ndesc += 1;
            }
            if first {
                c.cur_starts += 1;
                first = false;
            }
            let n = data.len().min(self.bufsize - c.cur_used);
            write_buf(&self.mem.write, c.cur_buf + c.cur_used as u64, &data[..n])?;
            c.cur_used += n;
            c.total += n;
            data = &data[n..];
        }
        Ok(())
    }

    /// Closes a context: the header update in the first buffer, the last
    /// descriptor written back with EOP, the queue's cause raised.
    fn close(&mut self, c: &Context) -> Result<(), RingError> {
        let mut hdr = [0u8; MAX_HDR];
        let n = (c.ip_len + 20).min(MAX_HDR);
        let at = c.first_buf + c.l3 as u64;
        self.mem
            .read
            .read_slice(&mut hdr[..n], vm_memory::GuestAddress(at))
            .map_err(|_| RingError::BadAddress(at))?;
        let ip_total = (c.total - c.l3) as u16;
        if c.ip_len == 40 {
            hdr[4..6].copy_from_slice(&(ip_total - 40).to_be_bytes());
        } else {
            hdr[2..4].copy_from_slice(&ip_total.to_be_bytes());
            // The header was a candidate's: IHL 5, whole.
            let _ = nicemu_net_util::csum::ipv4_header_csum(&mut hdr[..n], 0);
        }
        let t = c.ip_len;
        hdr[t + 8..t + 12].copy_from_slice(&c.ack);
        hdr[t + 14..t + 16].copy_from_slice(&c.window);
        if c.psh {
            hdr[t + 13] |= PSH;
        }
        write_buf(&self.mem.write, at, &hdr[..n])?;
        let st = rx_status(true, 0, c.csum);
        let info = u32::from(c.pkt_info) | c.cur_starts.max(1) << RSCCNT_SHIFT;
        self.write_back(c.cur, &rsc_writeback(info, c.hash, st, c.cur_used as u16))?;
        Ok(())
    }
}

/// An RSC write-back descriptor: the first dword carries RSCCNT beside the
/// packet type and RSS type.
fn rsc_writeback(info: u32, hash: u32, status: u32, len: u16) -> [u8; 16] {
    let mut d = rx_writeback(0, hash, status, len, 0);
    d[0..4].copy_from_slice(&info.to_le_bytes());
    d
}

impl Ixgbe {
    /// Coalescing is on for queue `qi`.
    #[inline]
    pub(crate) fn rsc_enabled(&self, qi: usize) -> bool {
        self.regs.peek(rxq_base(qi as u32) + q::RSCCTL) & RSCCTL_RSCEN != 0
            && self.regs.peek(RFCTL) & RFCTL_RSC_DIS == 0
    }

    /// Most descriptors one context may use (RSCCTL.MAXDESC).
    fn rsc_max_desc(&self, qi: usize) -> u32 {
        match (self.regs.peek(rxq_base(qi as u32) + q::RSCCTL) >> 2) & 3 {
            0 => 1,
            1 => 4,
            2 => 8,
            _ => 16,
        }
    }

    /// The EITR interval of the vector queue `qi` receives on.
    fn rsc_interval_ns(&self, qi: usize) -> u64 {
        let (reg, shift) = ivar_slot(qi, Dir::Rx);
        let entry = (self.regs.peek(IVAR0 + 4 * reg) >> shift) & 0xff;
        let v = if self.msix_mode() { entry & 0x3f } else { 0 };
        eitr_interval_ns(&self.regs, v as usize)
    }

    /// A frame for queue `qi` (its receive lock held) with coalescing on:
    /// appended to its connection's context, or placed alone after closing
    /// what it ends.
    #[inline(never)]
    pub(super) fn rsc_receive(&self, qi: usize, frame: &[u8], hash: u32, ty: HashType, ts: bool) {
        let now = self.env.clock.now_ns();
        let mut ctxs = lock(&self.part.rsc.queues[qi]);
        self.rsc_close_due(qi, &mut ctxs, now);
        let vet = self.regs.peek(VLNCTRL) as u16;
        let Some(seg) = classify(frame, vet) else {
            drop(ctxs);
            return self.rsc_place_alone(qi, frame, hash, ty, ts);
        };
        let stripped = seg.key.vlan != 0 && I82599::vlan_strip(self, qi);
        let pos = ctxs.iter().position(|c| c.key == seg.key);
        if let Some(i) = pos {
            let cont = seg.candidate
                && !stripped
                && ctxs[i].next_seq == seg.seq
                && ctxs[i].shape == shape(frame, &seg);
            if cont && self.rsc_append(qi, &mut ctxs, i, frame, &seg) {
                return;
            }
            let c = ctxs.swap_remove(i);
            self.rsc_finish(qi, &c);
        }
        if seg.candidate
            && !stripped
            && !ts
            && self.rsc_open(qi, &mut ctxs, frame, &seg, hash, ty, now)
        {
            return;
        }
        drop(ctxs);
        self.rsc_place_alone(qi, frame, hash, ty, ts);
    }

    /// Counts a segment the context took (its statistics as a frame of its own).
    fn rsc_count(&self, qi: usize, frame: &[u8]) {
        let mut t = Tally::default();
        t.add(frame);
        self.count_tally(Dir::Rx, qi, &mut t);
    }

    /// A frame that is not coalesced: placed as without RSC, counted and
    /// its queue signalled at once (a batch of its own).
    fn rsc_place_alone(&self, qi: usize, frame: &[u8], hash: u32, ty: HashType, ts: bool) {
        let view = self.mem.get();
        let mut done = RxDone::new(view.as_deref());
        self.rx_to_queue(qi, frame, (hash, ty), ts, RxSecurity::default(), &mut done);
        self.rx_done(&mut done);
    }

    /// The ring and buffer size of queue `qi`, if it can take descriptors.
    fn rsc_ring(&self, qi: usize) -> Option<Ctx<'_>> {
        let base = rxq_base(qi as u32);
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            return None;
        }
        let ring = Ring::from_block(|o| self.regs.peek(o), base).ok()?;
        let mem = self.mem.get()?;
        let bufsize = match (self.regs.peek(base + q::SRRCTL) & 0x1f) as usize * 1024 {
            0 => 2048,
            n => n,
        };
        Some(Ctx {
            f: self,
            qi,
            mem,
            ring,
            bufsize,
        })
    }

    /// Opens a context for a candidate segment: its frame goes into fresh
    /// buffers, nothing is written back yet. False when no context or
    /// descriptors are free (the caller places the frame alone).
    #[allow(clippy::too_many_arguments)]
    fn rsc_open(
        &self,
        qi: usize,
        ctxs: &mut Vec<Context>,
        frame: &[u8],
        seg: &Segment,
        hash: u32,
        ty: HashType,
        now: u64,
    ) -> bool {
        let Some(mut r) = self.rsc_ring(qi) else {
            return false;
        };
        let end = seg.payload.0 + seg.payload.1;
        if r.ring.pending() < end.div_ceil(r.bufsize) as u32 || seg.l3 + seg.hdr_len > r.bufsize {
            return false;
        }
        if self.part.rsc.open.fetch_add(1, Ordering::Relaxed) >= MAX_CONTEXTS {
            self.part.rsc.open.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        let Ok((idx, buf)) = r.take() else {
            self.part.rsc.open.fetch_sub(1, Ordering::Relaxed);
            self.errors.dma();
            return false;
        };
        let ptype = rss::packet_type(frame);
        let st = I82599::rx_status(self, frame, ptype, hash);
        let l4 = seg.l3 + seg.ip_len;
        let mut c = Context {
            key: seg.key,
            shape: shape(frame, seg),
            next_seq: seg.seq.wrapping_add(seg.payload.1 as u32),
            l3: seg.l3,
            ip_len: seg.ip_len,
            total: 0,
            first_buf: buf,
            cur: idx,
            cur_buf: buf,
            cur_used: 0,
            cur_starts: 0,
            ndesc: 1,
            ack: frame[l4 + 8..l4 + 12].try_into().unwrap_or_default(),
            window: frame[l4 + 14..l4 + 16].try_into().unwrap_or_default(),
            psh: seg.flags & PSH != 0,
            pkt_info: ptype | rss::descriptor_type(ty),
            hash: st.hash,
            csum: st.csum & (RXD_STAT_IPCS | RXD_STAT_L4CS),
            deadline: now.saturating_add(self.rsc_interval_ns(qi)),
        };
        let placed = r.append(&mut c, &frame[..end]);
        self.regs.poke(rxq_base(qi as u32) + q::H, r.ring.head);
        if placed.is_err() {
            self.part.rsc.open.fetch_sub(1, Ordering::Relaxed);
            self.errors.dma();
            return true;
        }
        self.rsc_count(qi, frame);
        if c.psh || c.deadline <= now {
            self.rsc_finish(qi, &c);
        } else {
            self.env.timer.arm(c.deadline);
            ctxs.push(c);
        }
        true
    }

    /// Appends a segment that continues context `i`; false (nothing done)
    /// when the context cannot take it.
    fn rsc_append(
        &self,
        qi: usize,
        ctxs: &mut Vec<Context>,
        i: usize,
        frame: &[u8],
        seg: &Segment,
    ) -> bool {
        let Some(mut r) = self.rsc_ring(qi) else {
            return false;
        };
        let c = &mut ctxs[i];
        let (off, len) = seg.payload;
        let more = (c.cur_used + len)
            .saturating_sub(r.bufsize)
            .div_ceil(r.bufsize) as u32;
        if c.ndesc + more > self.rsc_max_desc(qi)
            || r.ring.pending() < more
            || c.total - c.l3 + len > 65535
        {
            return false;
        }
        let placed = r.append(c, &frame[off..off + len]);
        self.regs.poke(rxq_base(qi as u32) + q::H, r.ring.head);
        if placed.is_err() {
            self.errors.dma();
        }
        self.rsc_count(qi, frame);
        let l4 = seg.l3 + seg.ip_len;
        c.next_seq = seg.seq.wrapping_add(len as u32);
        c.ack.copy_from_slice(&frame[l4 + 8..l4 + 12]);
        c.window.copy_from_slice(&frame[l4 + 14..l4 + 16]);
        c.psh = seg.flags & PSH != 0;
        if c.psh {
            let c = ctxs.swap_remove(i);
            self.rsc_finish(qi, &c);
        }
        true
    }

    /// Closes a context that left the list: written back, the cause raised.
    fn rsc_finish(&self, qi: usize, c: &Context) {
        self.part.rsc.open.fetch_sub(1, Ordering::Relaxed);
        let Some(mut r) = self.rsc_ring(qi) else {
            return;
        };
        if r.close(c).is_err() {
            self.errors.dma();
        }
        I82599::queue_interrupt(r.f, r.qi, Dir::Rx);
    }

    /// Closes the contexts of queue `qi` whose interval passed.
    fn rsc_close_due(&self, qi: usize, ctxs: &mut Vec<Context>, now: u64) {
        let mut i = 0;
        while i < ctxs.len() {
            if ctxs[i].deadline <= now {
                let c = ctxs.swap_remove(i);
                self.rsc_finish(qi, &c);
            } else {
                i += 1;
            }
        }
    }

    /// Device timer: closes every context whose interval passed and arms
    /// the timer for the earliest one left.
    pub(super) fn rsc_timer(&self, now: u64) {
        if self.part.rsc.open.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut next = u64::MAX;
        for qi in 0..NUM_QUEUES {
            let _queue = lock(&self.rxq[qi]);
            let mut ctxs = lock(&self.part.rsc.queues[qi]);
            if ctxs.is_empty() {
                continue;
            }
            self.rsc_close_due(qi, &mut ctxs, now);
            next = ctxs.iter().map(|c| c.deadline).fold(next, u64::min);
        }
        if next != u64::MAX {
            self.env.timer.arm(next);
        }
    }
}
