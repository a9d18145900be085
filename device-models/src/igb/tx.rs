//! The 82576 transmit engine (datasheet §7.2): descriptor fetch on a tail
//! doorbell, frame gathering across data descriptors, offloads, VLAN insertion,
//! write-back (DD or head write-back) and the TX interrupt cause.

use super::intr::Dir;
use super::regs::*;
use super::{rctl, tctl, Igb};
use crate::txframe::{queue_pass, FinishSettings, Finished, FrameOpts, TxQueue};

/// TSICR / TSIM: transmit time stamp taken.
const TSICR_TXTS: u32 = 1 << 1;

impl Igb {
    /// Processes transmit queue `qi` after its tail moved: at most one pass over
    /// the ring per doorbell, under that queue's lock only.
    pub(super) fn tx_doorbell(&self, qi: usize) {
        if qi >= NUM_QUEUES
            || self.regs.peek(TCTL) & tctl::EN == 0
            || !self.tx_link()
            || self.faults.tx_stalled(qi)
        {
            return;
        }
        let base = TXQ_BASE + qi as u32 * QUEUE_STRIDE;
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            return;
        }
        let pass = queue_pass(
            &self.regs,
            base,
            &self.txq[qi],
            &self.mem,
            &self.errors,
            false,
            |t, first| self.tx_finish(t, qi, first),
        );
        match pass {
            Ok(true) => self.queue_interrupt(qi, Dir::Tx),
            Ok(false) => {}
            Err(e) => log::debug!("igb: tx queue {qi}: {e}"),
        }
    }

    /// Finishes a complete frame (VLAN, offloads, TSO, padding) and sends it.
    fn tx_finish(&self, txq: &mut TxQueue, qi: usize, first: FrameOpts) {
        let s = FinishSettings {
            tpid: self.regs.peek(0x0038) as u16,
            pad: self.regs.peek(TCTL) & tctl::PSP != 0,
        };
        // The frame leaves the MAC now: one instant for its 1588 stamp and
        // its departure on the wire.
        let now = self.env.clock.now_ns();
        if first.tstamp {
            self.tx_timestamp(now);
        }
        let res = txq.finish(first, s, |f| self.tx_out(f, now));
        match res {
            Ok(Finished::Segments(_)) => self.stat_add(stat::TSCTC, 1),
            Ok(Finished::Frame) => {}
            Err(e) => {
                self.errors.tx_drop(&e);
                log::debug!("igb: tx queue {qi}: frame dropped: {e}");
            }
        }
    }

    /// The MAC can send: the PHY has link or loops back, or the MAC loops
    /// back. Without link the 82576 stops transmit DMA — "We've lost link,
    /// so the controller stops DMA" (`igb_watchdog_task`, which then resets
    /// the function to flush what is queued): a doorbell fetches nothing
    /// and queued frames go out when the link returns ([`Igb::set_cable`]).
    pub(super) fn tx_link(&self) -> bool {
        self.link_up() || self.regs.peek(RCTL) & rctl::LBM_MASK == rctl::LBM_MAC
    }

    /// Puts a finished frame on the wire, or back into the receiver when the
    /// PHY or MAC loops back (the pass that fetched it found the link up).
    fn tx_out(&self, frame: &[u8], sent: u64) {
        self.count_tx(frame);
        let mac_loop = self.regs.peek(RCTL) & rctl::LBM_MASK == rctl::LBM_MAC;
        if self.phy_loopback() || mac_loop {
            self.rx_frame(frame, Some(sent), true);
        } else {
            self.env.wire.transmit_at(frame, sent);
        }
    }

    /// The frame leaves the MAC now: latch TXSTMPL/H (§7.9.2.2) and report
    /// TSICR.TXTS, which reaches ICR.TS when TSIM enables it. (The igb driver
    /// polls TSYNCTXCTL.VALID on the 82576, `igb_ptp_tx_work`.)
    fn tx_timestamp(&self, now: u64) {
        let stamped = self.ts().tx_stamp(now);
        if stamped {
            self.regs.set_bits(TSICR, TSICR_TXTS);
            if self.regs.peek(TSIM) & TSICR_TXTS != 0 {
                self.raise_icr(super::intr::ICR_TS);
            }
        }
    }
}
