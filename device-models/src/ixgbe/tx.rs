//! The 82599 transmit engine (datasheet §7.2): descriptor fetch on a tail
//! doorbell while DMATXCTL.TE and TXDCTL.ENABLE are set, frame gathering across
//! data descriptors, checksum / TSO offloads and VLAN insertion from the
//! offload context, write-back (DD or head write-back), MAC loopback
//! (HLREG0.LPBK) and the TX interrupt cause. Descriptor layouts are the shared
//! advanced formats ([`crate::desc`]).

use super::intr::Dir;
use super::regs::*;
use super::{hlreg0, Ixgbe, DMATXCTL_TE};
use crate::desc::{parse_tx, TxDesc, TXD_CMD_RS, TXD_STAT_DD};
use crate::ring::{self, Ring};
use crate::sync::lock;
use crate::txframe::{FinishSettings, Finished, FrameOpts, Gathered, TxQueue};
use crate::GuestRam;

impl Ixgbe {
    /// Processes transmit queue `qi` after its tail moved: at most one pass over
    /// the ring per doorbell, under that queue's lock only.
    pub(super) fn tx_doorbell(&self, qi: usize) {
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
        let mut txq = lock(&self.txq[qi]);
        let mut r = match Ring::from_block(|o| self.regs.peek(o), base) {
            Ok(r) => r,
            Err(e) => {
                self.errors.ring();
                log::debug!("ixgbe: tx queue {qi}: {e}");
                return;
            }
        };
        let mem = self.mem.get();
        let head_wb = self.regs.peek(base + q::WBAL) & 1 != 0;
        let mut done = false;
        let mut budget = r.count;
        while r.head != r.tail && budget > 0 {
            budget -= 1;
            let idx = r.head;
            r.advance();
            let d = match ring::read_desc(&mem, r.desc_addr(idx)) {
                Ok(d) => d,
                Err(_) => {
                    self.errors.dma();
                    continue;
                }
            };
            let cmd = match parse_tx(&d) {
                TxDesc::Context(c) => {
                    txq.ctx[usize::from(c.idx & 1)] = c;
                    // Context descriptors report DD too when RS is set.
                    u32::from_le_bytes([d[8], d[9], d[10], d[11]]) & TXD_CMD_RS
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
                    self.tx_gather(&mut txq, &mem, qi, addr, usize::from(len), opts);
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
                    self.tx_gather(&mut txq, &mem, qi, addr, usize::from(len), opts);
                    cmd
                }
            };
            if cmd & TXD_CMD_RS != 0 && !head_wb {
                if ring::write_u32(&mem, r.desc_addr(idx) + 12, TXD_STAT_DD).is_err() {
                    self.errors.dma();
                }
                done = true;
            }
        }
        self.regs.poke(base + q::H, r.head);
        if head_wb {
            let wbal = self.regs.peek(base + q::WBAL);
            let addr = (u64::from(self.regs.peek(base + q::WBAH)) << 32) | u64::from(wbal & !3);
            if ring::write_u32(&mem, addr, r.head).is_err() {
                self.errors.dma();
            }
            done = true;
        }
        drop(txq);
        if done {
            self.queue_interrupt(qi, Dir::Tx);
        }
    }

    /// Appends one data buffer to the queue's frame and sends it at EOP.
    fn tx_gather(
        &self,
        txq: &mut TxQueue,
        mem: &GuestRam,
        qi: usize,
        addr: u64,
        len: usize,
        opts: FrameOpts,
    ) {
        let (g, dma_error) = txq.gather(mem, addr, len, opts);
        if dma_error {
            self.errors.dma();
        }
        match g {
            Gathered::More => {}
            Gathered::Dropped => self.errors.tx_malformed(),
            Gathered::Done(first) => self.tx_finish(txq, qi, first),
        }
    }

    /// Finishes a complete frame (VLAN, offloads, TSO, padding) and sends it.
    fn tx_finish(&self, txq: &mut TxQueue, qi: usize, first: FrameOpts) {
        let s = FinishSettings {
            tpid: match (self.regs.peek(DMATXCTL) >> 16) as u16 {
                0 => 0x8100,
                vt => vt,
            },
            pad: self.regs.peek(HLREG0) & hlreg0::TXPADEN != 0,
        };
        // The frame leaves the MAC now: one instant for its 1588 stamp and
        // its departure on the wire.
        let now = self.env.clock.now_ns();
        if first.tstamp {
            self.tx_timestamp(now);
        }
        let res = txq.finish(first, s, |f| self.tx_out(qi, f, now));
        match res {
            Ok(Finished::Segments(_)) => {}
            Ok(Finished::Frame) => {}
            Err(e) => {
                self.errors.tx_malformed();
                log::debug!("ixgbe: tx queue {qi}: frame dropped: {e}");
            }
        }
    }

    /// Puts a finished frame on the wire, or back into the receiver when the
    /// MAC loops back (HLREG0.LPBK).
    fn tx_out(&self, qi: usize, frame: &[u8], sent: u64) {
        self.count_tx(qi, frame);
        if self.loopback() {
            self.rx_frame(frame, Some(sent), true);
        } else if self.link_up() {
            self.env.wire.transmit_at(frame, sent);
        }
    }

    /// The frame leaves the MAC now: latch TXSTMPL/H (§7.9.1.2). The driver
    /// polls TSYNCTXCTL.VALID (`ixgbe_ptp_tx_hwtstamp_work`); the 82599 has no
    /// interrupt for it.
    fn tx_timestamp(&self, now: u64) {
        self.ts().tx_stamp(now);
    }
}
