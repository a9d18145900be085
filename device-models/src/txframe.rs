//! Transmit frame assembly shared by igb and ixgbe (82576 datasheet §7.2.2,
//! 82599 §7.2.3): gathering a frame from the data descriptors up to EOP with the
//! options of its first descriptor, the queue's offload contexts, then VLAN
//! insertion, legacy or context-based checksum offload, TCP segmentation and
//! short-frame padding before the frame (or each segment) leaves the MAC.

use crate::desc::{TxContext, TXD_CMD_EOP, TXD_CMD_TSE, TXD_CMD_VLE};
use crate::offload::{self, OffloadError};
use crate::ring;
use crate::GuestRam;

/// Largest frame gathered by default (a 64 KiB TSO payload plus headers).
pub const MAX_TX_FRAME: usize = 64 * 1024 + 256;
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
    /// passes the frame (or each segment) to `out` and clears it.
    pub fn finish(
        &mut self,
        o: FrameOpts,
        s: FinishSettings,
        mut out: impl FnMut(&[u8]),
    ) -> Result<Finished, TxDrop> {
        let res = self.finish_inner(o, s, &mut out);
        self.frame.clear();
        res
    }

    fn finish_inner(
        &mut self,
        o: FrameOpts,
        s: FinishSettings,
        out: &mut impl FnMut(&[u8]),
    ) -> Result<Finished, TxDrop> {
        let ctx = self.ctx[usize::from(o.idx & 1)];
        let frame = &mut self.frame;
        if o.cmd & TXD_CMD_VLE != 0 && frame.len() >= 12 {
            let tag = o.legacy_vlan.unwrap_or(ctx.vlan);
            let mut hdr = [0u8; 4];
            hdr[0..2].copy_from_slice(&s.tpid.to_be_bytes());
            hdr[2..4].copy_from_slice(&tag.to_be_bytes());
            frame.splice(12..12, hdr);
        }
        if o.cmd & TXD_CMD_TSE != 0 {
            let n = offload::segment_tcp(frame, &ctx, &mut self.seg, |seg| out(seg))?;
            return Ok(Finished::Segments(n));
        }
        if let Some((cso, css)) = o.legacy_csum {
            let (cso, css) = (usize::from(cso), usize::from(css));
            if cso + 2 <= frame.len() && css < frame.len() {
                frame[cso..cso + 2].fill(0);
                let c = offload::csum_fold(offload::csum_add(0, &frame[css..]));
                frame[cso..cso + 2].copy_from_slice(&c.to_be_bytes());
            }
        } else if o.popts & 3 != 0 {
            offload::apply_checksums(frame, &ctx, o.popts & 1 != 0, o.popts & 2 != 0)?;
        }
        if s.pad && frame.len() < MIN_FRAME {
            frame.resize(MIN_FRAME, 0);
        }
        out(frame);
        Ok(Finished::Frame)
    }
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
}
