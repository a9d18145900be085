// SPDX-License-Identifier: Apache-2.0
//! Transmit frame assembly shared by igb and ixgbe (82576 datasheet §7.2.2,
//! 82599 §7.2.3): gathering a frame from the data descriptors up to EOP with the
//! options of its first descriptor, the queue's offload contexts, then VLAN
//! insertion, legacy or context-based checksum offload, TCP segmentation and
//! short-frame padding before the frame (or each segment) leaves the MAC.

use crate::desc::{
    parse_tx, TxContext, TxDesc, TXD_CMD_DEXT, TXD_CMD_EOP, TXD_CMD_RS, TXD_CMD_TSE, TXD_CMD_VLE,
    TXD_DTYP_CTXT, TXD_STAT_DD,
};
use crate::ring::{self, DescCache, Ring, RingMem};
use nicemu_net_util::csum::{csum_add, csum_fold, ipv4_header_csum, l4_csum_seeded};
use nicemu_net_util::tso::segment;
use nicemu_net_util::OffloadError;
use vm_memory::WriteVolatile;

use crate::dma::{DmaMemory, DmaView, GuestRam, RegionCache};
use crate::errors::ErrorCounters;
use crate::regfile::RegFile;

/// Largest frame gathered by default (a 64 KiB TSO payload plus headers).
pub const MAX_TX_FRAME: usize = 64 * 1024 + 256;
/// Frames (a TSO frame counts its segments) one ring pass emits at most: the
/// work one doorbell can cause is bounded, and what is left of the ring
/// waits for the next doorbell (TDH shows how far the pass got). A Linux
/// driver never has this much in flight (BQL), so it never reaches it.
pub const TX_PASS_SEGMENTS: usize = 16384;
/// Longest frame either part transmits without TSO, FCS excluded: 9.5 KB
/// (`IXGBE_MAX_JUMBO_FRAME_SIZE`; igb's `MAX_JUMBO_FRAME_SIZE` 0x2600, the
/// RLPML reset value). Longer non-TSO frames are dropped and counted
/// (`tx_oversize`), so no frame bigger than a jumbo frame leaves a port.
pub const MAX_JUMBO_FRAME: usize = 9728;
/// Minimum frame length on the wire without FCS (padding target).
pub const MIN_FRAME: usize = 60;

/// Options of a frame, from its first data descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameOpts {
    /// Command bits (EOP, IFCS, RS, VLE, TSE…).
    pub cmd: u32,
    /// POPTS: IXSM (bit 0), TXSM (bit 1).
    pub popts: u8,
    /// Offload context slot.
    pub idx: u8,
    /// VLAN tag of a legacy descriptor (advanced ones take the context's).
    pub legacy_vlan: Option<u16>,
    /// Legacy checksum offset/start (legacy IC).
    pub legacy_csum: Option<(u8, u8)>,
    /// IEEE 1588: latch the transmit time stamp (`ADVTXD_MAC_TSTAMP`).
    pub tstamp: bool,
}

impl FrameOpts {
    /// The frame asks for no VLAN insertion, segmentation or checksum
    /// offload: it leaves as gathered, padded ([`TxQueue::finish_plain`]).
    #[inline]
    pub fn plain(&self) -> bool {
        self.cmd & (TXD_CMD_VLE | TXD_CMD_TSE) == 0
            && self.legacy_csum.is_none()
            && self.popts & 3 == 0
    }
}

/// How a gathered frame must be finished, per device settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinishSettings {
    /// Tag protocol identifier for VLAN insertion (VET / DMATXCTL.VT).
    pub tpid: u16,
    /// Pad short frames to 60 bytes (TCTL.PSP / HLREG0.TXPADEN).
    pub pad: bool,
}

/// What became of a gathered frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Sent as one frame.
    Frame,
    /// Segmented into this many TCP segments.
    Segments(usize),
}

/// Why a gathered frame was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxDrop {
    /// Longer than the queue's maximum or a buffer outside guest memory.
    #[error("malformed frame (too long or unreadable buffer)")]
    Malformed,
    /// The offload context does not fit the frame.
    #[error("offload: {0}")]
    Offload(#[from] OffloadError),
    /// A non-TSO frame longer than [`MAX_JUMBO_FRAME`] (its length).
    #[error("non-TSO frame of {0} bytes exceeds the largest jumbo frame")]
    Oversize(usize),
}

impl TxDrop {
    /// Counts the drop where it belongs: `tx_oversize` or `tx_malformed`.
    pub fn count_in(&self, errors: &ErrorCounters) {
        match self {
            TxDrop::Oversize(_) => errors.tx_oversize(),
            _ => errors.tx_malformed(),
        }
    }
}

/// A transmit queue's frame under assembly and its offload contexts.
#[derive(Debug)]
pub struct TxQueue {
    frame: Vec<u8>,
    max: usize,
    first: Option<FrameOpts>,
    bad: bool,
    dma_error: bool,
    /// Offload contexts (two per queue, selected by the IDX field).
    pub ctx: [TxContext; 2],
    /// Segment buffer for TSO (reused).
    seg: Vec<u8>,
    /// Frames and segments emitted in the current ring pass.
    pass_emitted: usize,
}

impl Default for TxQueue {
    fn default() -> Self {
        TxQueue::with_max(MAX_TX_FRAME)
    }
}

impl TxQueue {
    /// A queue gathering frames of up to `max` bytes (the part's TSO limit);
    /// its buffers grow on first use and are then reused.
    pub fn with_max(max: usize) -> Self {
        TxQueue {
            frame: Vec::with_capacity(2048),
            max,
            first: None,
            bad: false,
            dma_error: false,
            ctx: Default::default(),
            seg: Vec::with_capacity(2048),
            pass_emitted: 0,
        }
    }
}

/// Outcome of adding one data buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Gathered {
    /// More buffers follow.
    More,
    /// EOP reached; the frame is complete.
    Done(FrameOpts),
    /// EOP reached but the frame was malformed and is dropped.
    Dropped,
}

impl TxQueue {
    /// Forgets a partial frame and the contexts (queue disabled or reset).
    pub fn clear(&mut self) {
        self.frame.clear();
        self.first = None;
        self.bad = false;
        self.dma_error = false;
        self.ctx = Default::default();
    }

    /// Appends the buffer of one data descriptor. Returns whether a buffer
    /// read failed (a DMA error to count) alongside the gather state.
    #[inline]
    pub fn gather(
        &mut self,
        mem: &GuestRam,
        addr: u64,
        len: usize,
        opts: FrameOpts,
    ) -> (Gathered, bool) {
        if self.first.is_none() {
            self.first = Some(opts);
        }
        let mut dma_error = false;
        if self.frame.len() + len > self.max {
            self.bad = true;
        } else if !self.bad && ring::read_buf(mem, addr, len, &mut self.frame).is_err() {
            self.bad = true;
            dma_error = true;
        }
        if opts.cmd & TXD_CMD_EOP == 0 {
            return (Gathered::More, dma_error);
        }
        let first = self.first.take().unwrap_or(opts);
        if std::mem::replace(&mut self.bad, false) {
            self.frame.clear();
            return (Gathered::Dropped, dma_error);
        }
        (Gathered::Done(first), dma_error)
    }

    /// Finishes the complete frame: VLAN insertion, checksums or TSO, padding;
    /// passes the frame (or each segment) to `out` and clears it. `out` gets
    /// the buffer the frame is in and may take it by swapping it for an
    /// empty one (the queue then assembles its next frame in that one).
    #[inline]
    pub fn finish(
        &mut self,
        o: FrameOpts,
        s: FinishSettings,
        mut out: impl FnMut(&mut Vec<u8>),
    ) -> Result<Finished, TxDrop> {
        let res = self.finish_inner(o, s, &mut out);
        self.frame.clear();
        self.pass_emitted += match res {
            Ok(Finished::Segments(n)) => n,
            _ => 1,
        };
        res
    }

    /// [`Self::finish`] of a [`FrameOpts::plain`] frame: padded and passed
    /// to `out` as it is (one frame, no segments), then cleared.
    #[inline]
    pub fn finish_plain(
        &mut self,
        s: FinishSettings,
        out: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), TxDrop> {
        let frame = &mut self.frame;
        let res = if frame.len() > MAX_JUMBO_FRAME {
            Err(TxDrop::Oversize(frame.len()))
        } else {
            if s.pad && frame.len() < MIN_FRAME {
                frame.resize(MIN_FRAME, 0);
            }
            out(frame);
            Ok(())
        };
        self.frame.clear();
        self.pass_emitted += 1;
        res
    }

    fn finish_inner(
        &mut self,
        o: FrameOpts,
        s: FinishSettings,
        out: &mut impl FnMut(&mut Vec<u8>),
    ) -> Result<Finished, TxDrop> {
        let ctx = &self.ctx[usize::from(o.idx & 1)];
        let frame = &mut self.frame;
        if o.cmd & TXD_CMD_VLE != 0 && frame.len() >= 12 {
            let tag = o.legacy_vlan.unwrap_or(ctx.vlan);
            let mut hdr = [0u8; 4];
            hdr[0..2].copy_from_slice(&s.tpid.to_be_bytes());
            hdr[2..4].copy_from_slice(&tag.to_be_bytes());
            frame.splice(12..12, hdr);
        }
        if o.cmd & TXD_CMD_TSE != 0 {
            let n = segment(frame, &ctx.tso()?, &mut self.seg, |seg| out(seg))?;
            return Ok(Finished::Segments(n));
        }
        if frame.len() > MAX_JUMBO_FRAME {
            return Err(TxDrop::Oversize(frame.len()));
        }
        if let Some((cso, css)) = o.legacy_csum {
            let (cso, css) = (usize::from(cso), usize::from(css));
            if cso + 2 <= frame.len() && css < frame.len() {
                frame[cso..cso + 2].fill(0);
                let c = csum_fold(csum_add(0, &frame[css..]));
                frame[cso..cso + 2].copy_from_slice(&c.to_be_bytes());
            }
        } else if o.popts & 3 != 0 {
            // An ESP frame's L4 checksum ends where its trailer starts.
            let end = frame.len().saturating_sub(ctx.esp_trailer(o.popts));
            let f = &mut frame[..end];
            apply_checksums(f, ctx, o.popts & 1 != 0, o.popts & 2 != 0)?;
        }
        if s.pad && frame.len() < MIN_FRAME {
            frame.resize(MIN_FRAME, 0);
        }
        out(frame);
        Ok(Finished::Frame)
    }
}

/// Applies the checksum offloads a data descriptor's POPTS asks for (IXSM:
/// the IPv4 header, TXSM: the L4 checksum; 82576 §7.2.5, 82599 §7.2.5) to a
/// whole frame, with the header lengths and L4 type of its context. The L4
/// checksum completes the pseudo-header sum the driver left in the field
/// (the stack's `CHECKSUM_PARTIAL` seed; "for non-TSO, software still needs
/// to calculate a full checksum for the TCP/UDP pseudo-header", 82598/82599
/// §7.2.5), so a tunnel's inner TCP or UDP (`ixgbe_tx_csum` with IPLEN up to
/// `skb_checksum_start`) gets its own pseudo header, not the outer one.
pub fn apply_checksums(
    f: &mut [u8],
    ctx: &TxContext,
    ixsm: bool,
    txsm: bool,
) -> Result<(), OffloadError> {
    let ip = usize::from(ctx.maclen);
    let l4 = ip + usize::from(ctx.iplen);
    if f.len() < l4 {
        return Err(OffloadError::Truncated(l4));
    }
    // The IP version comes from the header itself: drivers set TUCMD.IPV4 for
    // TSO but not always for plain checksum offload (igb_tx_csum).
    let ipv4 = f.get(ip).ok_or(OffloadError::Truncated(ip + 1))? >> 4 == 4;
    if ixsm && ipv4 {
        ipv4_header_csum(f, ip)?;
    }
    if txsm {
        l4_csum_seeded(f, l4, ctx.l4_proto(), None)?;
    }
    Ok(())
}

/// What one pass over a transmit ring needs beyond the ring and the queue.
#[derive(Clone, Copy)]
pub struct RingPass<'a> {
    /// Guest memory: descriptors and buffers are read from `mem.read`, DD
    /// and head write-backs go to `mem.write`.
    pub mem: &'a DmaView,
    /// Where bad addresses and malformed frames are counted.
    pub errors: &'a ErrorCounters,
    /// Context descriptors with RS report DD too (82599 §7.2.3.2.3; the
    /// 82576 writes back data descriptors only).
    pub context_dd: bool,
    /// Head write-back address (TDWBAL/TDWBAH with its enable bit set): the
    /// head is written there instead of DD bits (82576 §7.2.3.5.2, 82599
    /// §7.2.3.5.2).
    pub head_wb: Option<u64>,
}

/// A data buffer to gather: its address, length and the options of its
/// descriptor.
type Buffer = (u64, u16, FrameOpts);

/// Decodes one transmit descriptor: a context descriptor is stored in `q`
/// (it reports DD only with `context_dd`); a data or legacy descriptor names
/// a buffer. Returns the command bits that decide its write-back, and the
/// buffer.
fn decode(d: &[u8; 16], q: &mut TxQueue, context_dd: bool) -> (u32, Option<Buffer>) {
    match parse_tx(d) {
        TxDesc::Context(c) => {
            q.ctx[usize::from(c.idx & 1)] = c;
            let rs = u32::from_le_bytes([d[8], d[9], d[10], d[11]]) & TXD_CMD_RS;
            (if context_dd { rs } else { 0 }, None)
        }
        TxDesc::Data {
            addr,
            len,
            cmd,
            popts,
            idx,
            tstamp,
            ..
        } => {
            let opts = FrameOpts {
                cmd,
                popts,
                idx: idx & 1,
                tstamp,
                ..Default::default()
            };
            (cmd, Some((addr, len, opts)))
        }
        TxDesc::Legacy {
            addr,
            len,
            cmd,
            cso,
            css,
            vlan,
        } => {
            // Legacy IC (insert checksum) is command bit 2.
            let ic = cmd & (1 << 26) != 0;
            let opts = FrameOpts {
                cmd,
                legacy_vlan: Some(vlan),
                legacy_csum: ic.then_some((cso, css)),
                ..Default::default()
            };
            (cmd, Some((addr, len, opts)))
        }
    }
}

/// A data descriptor that holds a whole frame (EOP) and asks for no VLAN
/// insertion, segmentation, checksum offload or time stamp: its command
/// dword (DTYP, DCMD, length) and the frame's options, as [`decode`] gives
/// them.
#[inline]
fn plain_one(d: &[u8; 16]) -> Option<(u32, FrameOpts)> {
    let w2 = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
    let w3 = u32::from_le_bytes([d[12], d[13], d[14], d[15]]);
    const MUST: u32 = TXD_CMD_DEXT | TXD_CMD_EOP;
    const NOT: u32 = TXD_CMD_VLE | TXD_CMD_TSE | crate::ptp::ADVTXD_MAC_TSTAMP;
    let plain =
        w2 & (MUST | NOT) == MUST && (w2 >> 20) & 0xf != TXD_DTYP_CTXT && (w3 >> 8) & 3 == 0;
    plain.then(|| {
        let opts = FrameOpts {
            cmd: w2 & 0xff00_0000,
            popts: ((w3 >> 8) & 0x3f) as u8,
            idx: ((w3 >> 4) & 1) as u8,
            ..Default::default()
        };
        (w2, opts)
    })
}

/// Processes a transmit ring from its head to its tail, at most one pass
/// (`r.count` descriptors, so a ring the guest keeps refilling cannot hold
/// the device) and at most [`TX_PASS_SEGMENTS`] frames out, reading the
/// descriptors in bursts ([`DescCache`]): context
/// descriptors are stored in `q`, data and legacy descriptors gathered, each
/// complete frame handed to `frame_done`, and descriptors with RS written
/// back. `r.head` is left at the new head.
/// Returns whether anything was written back (the queue's interrupt is due).
pub fn run_ring(
    r: &mut Ring,
    q: &mut TxQueue,
    p: RingPass<'_>,
    mut frame_done: impl FnMut(&mut TxQueue, FrameOpts),
) -> bool {
    let mut done = false;
    let mut budget = r.count;
    let mut descs = DescCache::default();
    let ring = *r;
    let status = RingMem::new(&p.mem.write, &ring);
    let mut bufs = RegionCache::default();
    q.pass_emitted = 0;
    while r.head != r.tail && budget > 0 && q.pass_emitted < TX_PASS_SEGMENTS {
        budget -= 1;
        let idx = r.head;
        r.advance();
        let Ok(d) = descs.get(&p.mem.read, &ring, idx) else {
            p.errors.dma();
            continue;
        };
        if let Some((cmd, opts)) = plain_one(&d).filter(|_| q.first.is_none()) {
            // A whole frame in one buffer, no offload (the common case):
            // gathered as `gather` would, without its state across
            // descriptors.
            let addr = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
            let (len, before) = (usize::from(cmd as u16), q.frame.len());
            let read = bufs
                .slice(&p.mem.read, addr, len)
                .filter(|_| before + len <= q.max)
                .is_some_and(|s| matches!(q.frame.write_volatile(&s), Ok(n) if n == len));
            if read {
                frame_done(q, opts);
                if cmd & TXD_CMD_RS != 0 && p.head_wb.is_none() {
                    if status.write_u32(idx, 12, TXD_STAT_DD).is_err() {
                        p.errors.dma();
                    }
                    done = true;
                }
                continue;
            }
            // Not in one region (or too long): gathered the general way.
            q.frame.truncate(before);
        }
        let (cmd, buf) = decode(&d, q, p.context_dd);
        if let Some((addr, len, opts)) = buf {
            let (g, dma_error) = q.gather(&p.mem.read, addr, usize::from(len), opts);
            if dma_error {
                p.errors.dma();
            }
            match g {
                Gathered::More => {}
                Gathered::Dropped => p.errors.tx_malformed(),
                Gathered::Done(first) => frame_done(q, first),
            }
        }
        if cmd & TXD_CMD_RS != 0 && p.head_wb.is_none() {
            if status.write_u32(idx, 12, TXD_STAT_DD).is_err() {
                p.errors.dma();
            }
            done = true;
        }
    }
    if let Some(addr) = p.head_wb {
        if ring::write_u32(&p.mem.write, addr, r.head).is_err() {
            p.errors.dma();
        }
        done = true;
    }
    done
}

/// Offsets in a transmit queue's register block shared by the 82576 and the
/// 82599 (TDBAL..TDT as [`Ring::from_block`] reads them, then TDWBAL/TDWBAH).
const TDH: u32 = 0x10;
const TDWBAL: u32 = 0x38;
const TDWBAH: u32 = 0x3c;

/// One doorbell of the transmit queue whose registers start at `base` (the
/// caller holds the queue's lock, as `q`): a [`run_ring`] pass over the ring
/// the registers describe, then TDH updated. Returns whether the queue's interrupt is due, or the
/// ring error (counted) of a ring the guest misprogrammed. With bus
/// mastering off nothing is fetched (counted as `dma_blocked`; the head
/// stays, so the ring is served once the driver turns it back on).
pub fn queue_pass<H: Copy + 'static>(
    regs: &RegFile<H>,
    base: u32,
    q: &mut TxQueue,
    mem: &DmaMemory,
    errors: &ErrorCounters,
    context_dd: bool,
    frame_done: impl FnMut(&mut TxQueue, FrameOpts),
) -> Result<bool, ring::RingError> {
    let mut r = Ring::from_block(|o| regs.peek(o), base).inspect_err(|_| errors.ring())?;
    let Some(mem) = mem.get() else {
        errors.dma_blocked();
        return Ok(false);
    };
    let pass = RingPass {
        mem: &mem,
        errors,
        context_dd,
        head_wb: head_writeback(regs.peek(base + TDWBAL), regs.peek(base + TDWBAH)),
    };
    let done = run_ring(&mut r, q, pass, frame_done);
    regs.poke(base + TDH, r.head);
    Ok(done)
}

/// The head write-back address from TDWBAL/TDWBAH, if its enable bit is set.
pub fn head_writeback(wbal: u32, wbah: u32) -> Option<u64> {
    (wbal & 1 != 0).then(|| (u64::from(wbah) << 32) | u64::from(wbal & !3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::ram;
    use vm_memory::{Bytes, GuestAddress};

    const S: FinishSettings = FinishSettings {
        tpid: 0x8100,
        pad: true,
    };

    /// A TCP/IPv4 frame (14 MAC + 20 IP + 20 TCP + payload), checksums zero.
    fn tcp4(payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12] = 0x08;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&(40 + payload.len() as u16).to_be_bytes());
        f[23] = nicemu_net_util::IPPROTO_TCP;
        f[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[46] = 5 << 4;
        f.extend_from_slice(payload);
        f
    }

    fn ctx_tcp4() -> TxContext {
        TxContext {
            iplen: 20,
            maclen: 14,
            tucmd: 0x2 | 0x4,
            l4len: 20,
            ..Default::default()
        }
    }

    /// `tcp4` with the pseudo-header seed the stack leaves for a checksum
    /// offload (`CHECKSUM_PARTIAL`).
    fn tcp4_seeded(payload: &[u8]) -> Vec<u8> {
        let mut f = tcp4(payload);
        let len = Some(f.len() - 34);
        let seed =
            nicemu_net_util::csum::pseudo_seed(&f, 14, true, nicemu_net_util::IPPROTO_TCP, len);
        f[50..52].copy_from_slice(&seed.to_be_bytes());
        f
    }

    #[test]
    fn context_checksums_verify_with_or_without_tucmd_ipv4() {
        let mut f = tcp4_seeded(b"hello, world!");
        apply_checksums(&mut f, &ctx_tcp4(), true, true).unwrap();
        let r = nicemu_net_util::csum::verify_rx(&f);
        assert!(r.ip_ok && r.l4_checked && r.l4_ok);
        // igb_tx_csum does not set TUCMD.IPV4 for plain checksum offload.
        let mut g = tcp4_seeded(b"hello, world!");
        let c = TxContext {
            tucmd: 0x4,
            ..ctx_tcp4()
        };
        apply_checksums(&mut g, &c, true, true).unwrap();
        assert_eq!(f, g);
    }

    /// `ixgbe_tx_csum` for a tunnel's TCP segment (VXLAN, `CHECKSUM_PARTIAL`
    /// on the inner TCP): IPLEN runs from the outer IP header to the inner
    /// TCP header, whose seed is the inner pseudo header. The checksum is
    /// completed from that seed, not from the outer addresses.
    #[test]
    fn a_tunnel_checksum_offload_completes_the_inner_seed() {
        let inner = tcp4_seeded(b"syn-ack through vxlan");
        let mut outer = tcp4(&[]);
        outer.truncate(34);
        outer[23] = nicemu_net_util::IPPROTO_UDP;
        outer[26..34].copy_from_slice(&[192, 168, 100, 1, 192, 168, 100, 2]);
        let udp = [0xc3, 0x50, 0x12, 0xb5, 0, 0, 0, 0];
        let vxlan = [8u8, 0, 0, 0, 0, 0, 100, 0];
        let mut f = [outer, udp.to_vec(), vxlan.to_vec(), inner.clone()].concat();
        let tcp = 34 + 16 + 34;
        let c = TxContext {
            iplen: (tcp - 14) as u16,
            ..ctx_tcp4()
        };
        apply_checksums(&mut f, &c, false, true).unwrap();
        let mut want = inner;
        apply_checksums(&mut want, &ctx_tcp4(), false, true).unwrap();
        assert!(nicemu_net_util::csum::verify_rx(&want).l4_ok);
        assert_eq!(&f[tcp..], &want[34..], "the inner frame's own checksum");
    }

    #[test]
    fn hostile_contexts_are_errors() {
        let mut short = vec![0u8; 20];
        assert!(apply_checksums(&mut short, &ctx_tcp4(), true, true).is_err());
        // Found by cargo fuzz: MACLEN at the end of the frame, IPLEN 0.
        let c0 = TxContext {
            maclen: 20,
            iplen: 0,
            ..ctx_tcp4()
        };
        assert!(apply_checksums(&mut short, &c0, true, true).is_err());
        let c = TxContext {
            iplen: 511,
            ..ctx_tcp4()
        };
        assert!(apply_checksums(&mut short, &c, true, true).is_err());
    }

    #[test]
    fn gathers_across_descriptors_inserts_vlan_and_pads() {
        let mem = ram(0x10000);
        mem.write_slice(&[1u8; 20], GuestAddress(0x100)).unwrap();
        mem.write_slice(&[2u8; 10], GuestAddress(0x200)).unwrap();
        let mut q = TxQueue::default();
        let first = FrameOpts {
            cmd: TXD_CMD_VLE,
            legacy_vlan: Some(0x0123),
            ..Default::default()
        };
        assert_eq!(q.gather(&mem, 0x100, 20, first), (Gathered::More, false));
        let last = FrameOpts {
            cmd: TXD_CMD_EOP,
            ..Default::default()
        };
        let (g, _) = q.gather(&mem, 0x200, 10, last);
        assert_eq!(g, Gathered::Done(first), "options of the first descriptor");
        let mut sent = Vec::new();
        assert_eq!(
            q.finish(first, S, |f| sent.push(f.to_vec())),
            Ok(Finished::Frame)
        );
        let f = &sent[0];
        assert_eq!(f.len(), 60, "34 bytes padded to 60");
        assert_eq!(&f[12..16], &[0x81, 0x00, 0x01, 0x23]);
        assert_eq!(&f[16..18], &[1, 1]);
    }

    /// Writes an advanced data descriptor (DEXT | DTYP data | IFCS | cmd).
    fn data_desc(mem: &GuestRam, at: u64, buf: u64, len: u16, cmd: u32) {
        mem.write_obj(buf, GuestAddress(at)).unwrap();
        let w2 = 0x2030_0000u32 | cmd | u32::from(len);
        mem.write_obj(w2, GuestAddress(at + 8)).unwrap();
        mem.write_obj(u32::from(len) << 14, GuestAddress(at + 12))
            .unwrap();
    }

    /// Writes an advanced context descriptor with `cmd` (RS or not).
    fn context_desc(mem: &GuestRam, at: u64, cmd: u32) {
        mem.write_obj(0u64, GuestAddress(at)).unwrap();
        mem.write_obj(0x2020_0000u32 | cmd, GuestAddress(at + 8))
            .unwrap();
        mem.write_obj(0u32, GuestAddress(at + 12)).unwrap();
    }

    #[test]
    fn ring_pass_writes_back_dd_or_the_head() {
        const RS: u32 = TXD_CMD_RS;
        let mem = ram(0x20000);
        mem.write_slice(&[7u8; 60], GuestAddress(0x8000)).unwrap();
        let errors = ErrorCounters::default();
        for (context_dd, head_wb) in [(false, None), (true, None), (false, Some(0x9000u64))] {
            // Context (RS), data without EOP, data with EOP|RS, data EOP|RS.
            context_desc(&mem, 0x1000, RS);
            data_desc(&mem, 0x1010, 0x8000, 30, 0);
            data_desc(&mem, 0x1020, 0x8000, 30, TXD_CMD_EOP | RS);
            data_desc(&mem, 0x1030, 0x8000, 60, TXD_CMD_EOP | RS);
            let mut r = Ring::new(0x1000, 0, 8 * 16, 0, 4).unwrap();
            let mut q = TxQueue::default();
            let view = DmaView::read_write(mem.clone());
            let pass = RingPass {
                mem: &view,
                errors: &errors,
                context_dd,
                head_wb,
            };
            let mut frames = Vec::new();
            let done = run_ring(&mut r, &mut q, pass, |q, first| {
                q.finish(first, S, |f| frames.push(f.len())).unwrap();
            });
            assert!(done);
            assert_eq!(r.head, 4);
            assert_eq!(
                frames,
                vec![60, 60],
                "two frames, the first from two buffers"
            );
            let st = |i: u64| mem.read_obj::<u32>(GuestAddress(0x100c + 16 * i)).unwrap();
            match head_wb {
                Some(a) => {
                    assert_eq!(mem.read_obj::<u32>(GuestAddress(a)).unwrap(), 4);
                    assert_eq!(st(2) & 1, 0, "no DD with head write-back");
                }
                None => {
                    assert_eq!(st(0) & 1, u32::from(context_dd), "context DD (82599 only)");
                    assert_eq!(st(1) & 1, 0, "no RS, no DD");
                    assert_eq!((st(2) & 1, st(3) & 1), (1, 1));
                }
            }
        }
        assert_eq!(errors.snapshot(), crate::GuestErrors::default());
        assert_eq!(head_writeback(0x9001, 1), Some(0x1_0000_9000));
        assert_eq!(head_writeback(0x9000, 1), None);
    }

    /// A one-buffer frame without offloads, which `run_ring` gathers
    /// apart, comes out as `decode` and `gather` make it, with the same
    /// errors, whatever the descriptors around it and wherever its buffer
    /// is: in memory, across two regions, outside memory, longer than the
    /// queue takes, or after a descriptor without EOP.
    #[test]
    fn a_plain_frame_is_gathered_as_gather_gathers_it() {
        let regions = [(GuestAddress(0), 0x9000), (GuestAddress(0x9000), 0x7000)];
        let mem = GuestRam::from_ranges(&regions).unwrap();
        let data: Vec<u8> = (0..=255u8).cycle().take(0x1000).collect();
        mem.write_slice(&data, GuestAddress(0x8800)).unwrap();
        mem.write_slice(&data, GuestAddress(0xa000)).unwrap();
        const EOP: u32 = TXD_CMD_EOP | TXD_CMD_RS;
        let descs: [(u64, u16, u32); 11] = [
            (0xa000, 60, EOP),
            (0x8f00, 0x200, EOP),
            (0xdead_0000_0000, 60, EOP),
            (0xa100, 2000, EOP),
            (0xa000, 40, 0),
            (0xa200, 30, EOP),
            (0xa300, 64, EOP | TXD_CMD_VLE),
            (0xa400, 70, EOP),
            (0xa000, 14, EOP),
            (0xa500, 90, EOP | (1 << 19)),
            (0xa600, 100, EOP),
        ];
        for (i, &(buf, len, cmd)) in descs.iter().enumerate() {
            data_desc(&mem, 0x1000 + 16 * i as u64, buf, len, cmd);
        }
        let n = descs.len() as u32;
        let view = DmaView::read_write(mem.clone());
        let errors = ErrorCounters::default();
        let pass = RingPass {
            mem: &view,
            errors: &errors,
            context_dd: false,
            head_wb: None,
        };
        let mut r = Ring::new(0x1000, 0, 16 * 16, 0, n).unwrap();
        let mut q = TxQueue::with_max(1024);
        let mut got = Vec::new();
        run_ring(&mut r, &mut q, pass, |q, first| {
            got.push((q.frame.clone(), first));
            q.frame.clear();
        });
        assert_eq!(r.head, n);
        // The same descriptors through decode and gather, one by one.
        let theirs = ErrorCounters::default();
        let mut q = TxQueue::with_max(1024);
        let mut want = Vec::new();
        for i in 0..u64::from(n) {
            let d = ring::read_desc(&mem, 0x1000 + 16 * i).unwrap();
            let (_, buf) = decode(&d, &mut q, false);
            let (addr, len, opts) = buf.unwrap();
            let (g, dma_error) = q.gather(&mem, addr, usize::from(len), opts);
            if dma_error {
                theirs.dma();
            }
            match g {
                Gathered::More => {}
                Gathered::Dropped => theirs.tx_malformed(),
                Gathered::Done(first) => {
                    want.push((q.frame.clone(), first));
                    q.frame.clear();
                }
            }
        }
        assert_eq!(got, want);
        assert_eq!(errors.snapshot(), theirs.snapshot());
        let e = errors.snapshot();
        assert_eq!(
            (e.dma_errors, e.tx_malformed),
            (1, 2),
            "outside memory, too long"
        );
        assert_eq!(got.len(), 8);
        assert_eq!(got[1].0, data[0x700..0x900], "across two regions");
        for (i, &(_, _, cmd)) in descs.iter().enumerate() {
            let dd: u32 = mem.read_obj(GuestAddress(0x100c + 16 * i as u64)).unwrap();
            let rs = cmd & TXD_CMD_RS != 0;
            assert_eq!(dd & 1 == 1, rs, "descriptor {i} written back with RS");
        }
    }

    #[test]
    fn ring_pass_is_one_pass_and_counts_bad_addresses() {
        let mem = ram(0x20000);
        let errors = ErrorCounters::default();
        // Every descriptor points outside guest memory and never ends a frame.
        for i in 0..16u64 {
            data_desc(&mem, 0x1000 + 16 * i, 0xdead_0000_0000, 64, 0);
        }
        let mut r = Ring::new(0x1000, 0, 16 * 16, 5, 4).unwrap();
        let mut q = TxQueue::default();
        let view = DmaView::read_write(mem.clone());
        let pass = RingPass {
            mem: &view,
            errors: &errors,
            context_dd: false,
            head_wb: None,
        };
        assert!(!run_ring(&mut r, &mut q, pass, |_, _| panic!("no frame")));
        assert_eq!(r.head, 4, "stops at the tail after at most one lap");
        assert_eq!(
            errors.snapshot().dma_errors,
            1,
            "the frame is bad after its first unreadable buffer; the rest are skipped"
        );
        // A ring whose descriptors live outside guest memory.
        let mut r = Ring::new(0xdead_0000, 0, 16 * 16, 0, 3).unwrap();
        run_ring(&mut r, &mut q, pass, |_, _| {});
        assert_eq!(
            errors.snapshot().dma_errors,
            4,
            "one per unreadable descriptor"
        );
    }

    #[test]
    fn oversized_or_unreadable_frames_are_dropped() {
        let mem = ram(0x10000);
        let mut q = TxQueue::default();
        let more = FrameOpts::default();
        for _ in 0..3 {
            q.gather(&mem, 0, 30_000, more);
        }
        let eop = FrameOpts {
            cmd: TXD_CMD_EOP,
            ..Default::default()
        };
        assert_eq!(q.gather(&mem, 0, 10, eop).0, Gathered::Dropped);
        assert_eq!(q.gather(&mem, 1 << 40, 10, eop), (Gathered::Dropped, true));
        assert_eq!(
            q.gather(&mem, 0, 10, eop).0,
            Gathered::Done(eop),
            "next frame is fine"
        );
    }

    #[test]
    fn one_doorbell_emits_a_bounded_number_of_segments() {
        let mem = ram(0x40000);
        let mut hdr = [0u8; 54];
        hdr[14] = 0x45;
        hdr[23] = nicemu_net_util::IPPROTO_TCP;
        hdr[46] = 5 << 4;
        mem.write_slice(&hdr, GuestAddress(0x10000)).unwrap();
        let len = 60_000u16;
        for i in 0..32u64 {
            data_desc(
                &mem,
                0x1000 + 16 * i,
                0x10000,
                len,
                TXD_CMD_EOP | TXD_CMD_TSE,
            );
        }
        let mut r = Ring::new(0x1000, 0, 32 * 16, 0, 31).unwrap();
        let mut q = TxQueue::default();
        q.ctx[0] = TxContext {
            maclen: 14,
            iplen: 20,
            l4len: 20,
            tucmd: 0x2 | 0x4,
            mss: nicemu_net_util::tso::MIN_TSO_MSS,
            ..Default::default()
        };
        let errors = ErrorCounters::default();
        let view = DmaView::read_write(mem.clone());
        let pass = RingPass {
            mem: &view,
            errors: &errors,
            context_dd: false,
            head_wb: None,
        };
        let mut segments = 0usize;
        run_ring(&mut r, &mut q, pass, |q, first| {
            if let Ok(Finished::Segments(n)) = q.finish(first, S, |_| {}) {
                segments += n;
            }
        });
        let per_frame =
            (usize::from(len) - 54).div_ceil(usize::from(nicemu_net_util::tso::MIN_TSO_MSS));
        assert!(
            segments < TX_PASS_SEGMENTS + per_frame,
            "{segments} segments from one doorbell"
        );
        assert!(r.head < 31, "the rest waits for the next doorbell");
        let first_head = r.head;
        run_ring(&mut r, &mut q, pass, |q, first| {
            let _ = q.finish(first, S, |_| {});
        });
        assert!(r.head > first_head, "the next doorbell goes on");
        assert_eq!(errors.snapshot(), crate::GuestErrors::default());
    }

    /// `igb_tso` / `ixgbe_tso` for a `UDP_SEGMENT` send: a context with L4T UDP
    /// and L4LEN 8, one TSE frame. It leaves as UDP datagrams (it was dropped as
    /// a bad TSO context before, and uso.py's peer received nothing).
    #[test]
    fn a_tse_frame_with_a_udp_context_leaves_as_datagrams() {
        let mem = ram(0x10000);
        let mut f = vec![0u8; 42];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = nicemu_net_util::IPPROTO_UDP;
        f.extend_from_slice(&[9u8; 1400 * 5]);
        mem.write_slice(&f, GuestAddress(0x1000)).unwrap();
        let mut q = TxQueue::default();
        q.ctx[0] = TxContext {
            maclen: 14,
            iplen: 20,
            l4len: 8,
            tucmd: 0x2, // IPV4, L4T UDP
            mss: 1400,
            ..Default::default()
        };
        let o = FrameOpts {
            cmd: TXD_CMD_EOP | TXD_CMD_TSE,
            ..Default::default()
        };
        let (g, _) = q.gather(&mem, 0x1000, f.len(), o);
        assert_eq!(g, Gathered::Done(o));
        let mut sent = Vec::new();
        assert_eq!(
            q.finish(o, S, |s| sent.push(s.to_vec())),
            Ok(Finished::Segments(5))
        );
        assert!(sent.iter().all(|s| s.len() == 42 + 1400));
        assert!(sent
            .iter()
            .all(|s| u16::from_be_bytes([s[38], s[39]]) == 1408));
    }

    #[test]
    fn a_non_tso_frame_longer_than_a_jumbo_frame_is_dropped() {
        let mem = ram(0x10000);
        let eop = FrameOpts {
            cmd: TXD_CMD_EOP,
            ..Default::default()
        };
        let mut q = TxQueue::default();
        let mut sent = 0usize;
        q.gather(&mem, 0, MAX_JUMBO_FRAME, eop);
        assert_eq!(q.finish(eop, S, |_| sent += 1), Ok(Finished::Frame));
        q.gather(&mem, 0, MAX_JUMBO_FRAME + 1, eop);
        assert_eq!(
            q.finish(eop, S, |_| sent += 1),
            Err(TxDrop::Oversize(MAX_JUMBO_FRAME + 1))
        );
        assert_eq!(sent, 1, "the oversized frame never left");
        let errors = ErrorCounters::default();
        TxDrop::Oversize(MAX_JUMBO_FRAME + 1).count_in(&errors);
        TxDrop::Malformed.count_in(&errors);
        let e = errors.snapshot();
        assert_eq!((e.tx_oversize, e.tx_malformed), (1, 1));
    }
}
