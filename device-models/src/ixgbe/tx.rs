//! The 82599 transmit engine (datasheet §7.2): descriptor fetch on a tail
//! doorbell while DMATXCTL.TE and TXDCTL.ENABLE are set, frame gathering across
//! data descriptors, checksum / TSO offloads and VLAN insertion from the
//! offload context, write-back (DD or head write-back), MAC loopback
//! (HLREG0.LPBK) and the TX interrupt cause. Descriptor layouts are the shared
//! advanced formats ([`crate::desc`]).

use super::intr::Dir;
use super::regs::*;
use super::{hlreg0, Ixgbe, DMATXCTL_TE, MAX_TX_FRAME};
use crate::desc::{
    parse_tx, TxDesc, TXD_CMD_EOP, TXD_CMD_RS, TXD_CMD_TSE, TXD_CMD_VLE, TXD_STAT_DD,
};
use crate::offload;
use crate::ring::{self, Ring};

/// Options of a frame, taken from its first data descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct FrameOpts {
    cmd: u32,
    popts: u8,
    idx: u8,
    /// VLAN tag of a legacy descriptor.
    legacy_vlan: Option<u16>,
    /// Legacy checksum offset/start, if the frame came from legacy descriptors.
    legacy_csum: Option<(u8, u8)>,
}

/// Minimum frame length on the wire without FCS (HLREG0.TXPADEN pads to it).
const MIN_FRAME: usize = 60;

impl Ixgbe {
    /// Processes transmit queue `qi` after its tail moved: at most one pass over
    /// the ring per doorbell.
    pub(super) fn tx_doorbell(&mut self, qi: usize) {
        if qi >= NUM_QUEUES
            || self.regs.peek(DMATXCTL) & DMATXCTL_TE == 0
            || self.faults.tx_stalled(qi)
        {
            return;
        }
        let base = txq_base(qi as u32);
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            return;
        }
        let mut r = match Ring::new(
            self.regs.peek(base + q::BAL),
            self.regs.peek(base + q::BAH),
            self.regs.peek(base + q::LEN),
            self.regs.peek(base + q::H),
            self.regs.peek(base + q::T),
        ) {
            Ok(r) => r,
            Err(e) => {
                self.errors.ring_errors += 1;
                log::debug!("ixgbe: tx queue {qi}: {e}");
                return;
            }
        };
        let head_wb = self.regs.peek(base + q::WBAL) & 1 != 0;
        let mut done = false;
        let mut budget = r.count;
        while r.head != r.tail && budget > 0 {
            budget -= 1;
            let idx = r.head;
            r.advance();
            let d = match ring::read_desc(&self.mem, r.desc_addr(idx)) {
                Ok(d) => d,
                Err(_) => {
                    self.errors.dma_errors += 1;
                    continue;
                }
            };
            let cmd = match parse_tx(&d) {
                TxDesc::Context(c) => {
                    self.txq[qi].ctx[usize::from(c.idx & 1)] = c;
                    // Context descriptors report DD too when RS is set.
                    u32::from_le_bytes([d[8], d[9], d[10], d[11]]) & TXD_CMD_RS
                }
                TxDesc::Data {
                    addr,
                    len,
                    cmd,
                    popts,
                    idx,
                    ..
                } => {
                    let opts = FrameOpts {
                        cmd,
                        popts,
                        idx: idx & 1,
                        ..Default::default()
                    };
                    self.tx_gather(qi, addr, usize::from(len), opts);
                    cmd
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
                    self.tx_gather(qi, addr, usize::from(len), opts);
                    cmd
                }
            };
            if cmd & TXD_CMD_RS != 0 && !head_wb {
                if ring::write_u32(&self.mem, r.desc_addr(idx) + 12, TXD_STAT_DD).is_err() {
                    self.errors.dma_errors += 1;
                }
                done = true;
            }
        }
        self.regs.poke(base + q::H, r.head);
        if head_wb {
            let wbal = self.regs.peek(base + q::WBAL);
            let addr = (u64::from(self.regs.peek(base + q::WBAH)) << 32) | u64::from(wbal & !3);
            if ring::write_u32(&self.mem, addr, r.head).is_err() {
                self.errors.dma_errors += 1;
            }
            done = true;
        }
        if done {
            self.queue_interrupt(qi, Dir::Tx);
        }
    }

    /// Appends one data buffer to the queue's frame and sends it at EOP.
    fn tx_gather(&mut self, qi: usize, addr: u64, len: usize, opts: FrameOpts) {
        let t = &mut self.txq[qi];
        if t.first.is_none() {
            t.first = Some(opts);
        }
        if t.frame.len() + len > MAX_TX_FRAME {
            t.bad = true;
        } else if !t.bad && ring::read_buf(&self.mem, addr, len, &mut t.frame).is_err() {
            t.bad = true;
            self.errors.dma_errors += 1;
        }
        if opts.cmd & TXD_CMD_EOP == 0 {
            return;
        }
        let t = &mut self.txq[qi];
        let first = t.first.take().unwrap_or(opts);
        let bad = std::mem::replace(&mut t.bad, false);
        let mut frame = std::mem::take(&mut t.frame);
        if bad {
            self.errors.tx_malformed += 1;
        } else {
            self.tx_frame(qi, &mut frame, first);
        }
        frame.clear();
        self.txq[qi].frame = frame;
    }

    /// Applies VLAN insertion and offloads to a gathered frame and sends it.
    fn tx_frame(&mut self, qi: usize, frame: &mut Vec<u8>, o: FrameOpts) {
        let ctx = self.txq[qi].ctx[usize::from(o.idx)];
        if o.cmd & TXD_CMD_VLE != 0 && frame.len() >= 12 {
            let tag = o.legacy_vlan.unwrap_or(ctx.vlan);
            let vt = (self.regs.peek(DMATXCTL) >> 16) as u16;
            let tpid = if vt == 0 { 0x8100 } else { vt };
            let mut hdr = [0u8; 4];
            hdr[0..2].copy_from_slice(&tpid.to_be_bytes());
            hdr[2..4].copy_from_slice(&tag.to_be_bytes());
            frame.splice(12..12, hdr);
        }
        if o.cmd & TXD_CMD_TSE != 0 {
            let mut seg = std::mem::take(&mut self.scratch);
            let res = offload::segment_tcp(frame, &ctx, &mut seg, |s| self.tx_out(qi, s));
            self.scratch = seg;
            if let Err(e) = res {
                self.errors.tx_malformed += 1;
                log::debug!("ixgbe: tx queue {qi}: TSO dropped: {e}");
            }
            return;
        }
        if let Some((cso, css)) = o.legacy_csum {
            let (cso, css) = (usize::from(cso), usize::from(css));
            if cso + 2 <= frame.len() && css < frame.len() {
                frame[cso..cso + 2].fill(0);
                let c = offload::csum_fold(offload::csum_add(0, &frame[css..]));
                frame[cso..cso + 2].copy_from_slice(&c.to_be_bytes());
            }
        } else if o.popts & 3 != 0 {
            if let Err(e) =
                offload::apply_checksums(frame, &ctx, o.popts & 1 != 0, o.popts & 2 != 0)
            {
                self.errors.tx_malformed += 1;
                log::debug!("ixgbe: tx queue {qi}: checksum offload dropped: {e}");
                return;
            }
        }
        if frame.len() < MIN_FRAME && self.regs.peek(HLREG0) & hlreg0::TXPADEN != 0 {
            frame.resize(MIN_FRAME, 0);
        }
        self.tx_out(qi, frame);
    }

    /// Puts a finished frame on the wire, or back into the receiver when the
    /// MAC loops back (HLREG0.LPBK).
    fn tx_out(&mut self, qi: usize, frame: &[u8]) {
        self.count_tx(qi, frame);
        if self.loopback() {
            self.rx_frame(frame);
        } else if self.link_up() {
            self.env.wire.transmit(frame);
        }
    }
}
