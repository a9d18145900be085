//! The 82599 transmit engine (datasheet §7.2): descriptor fetch on a tail
//! doorbell while DMATXCTL.TE and TXDCTL.ENABLE are set, frame gathering across
//! data descriptors, checksum / TSO offloads and VLAN insertion from the
//! offload context, write-back (DD or head write-back), MAC loopback
//! (HLREG0.LPBK) and the TX interrupt cause. Descriptor layouts are the shared
//! advanced formats ([`crate::desc`]).

use super::intr::Dir;
use super::regs::*;
use super::{hlreg0, Ixgbe, DMATXCTL_TE};
use crate::txframe::{queue_pass, FinishSettings, Finished, FrameOpts, TxQueue};

impl Ixgbe {
    /// Processes transmit queue `qi` after its tail moved: at most one pass over
    /// the ring per doorbell, under that queue's lock only.
    pub(super) fn tx_doorbell(&self, qi: usize) {
        if qi >= NUM_QUEUES
            || self.regs.peek(DMATXCTL) & DMATXCTL_TE == 0
            || !(self.link_up() || self.loopback())
            || self.faults.tx_stalled(qi)
        {
            return;
        }
        let base = txq_base(qi as u32);
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            return;
        }
        let pass = queue_pass(
            &self.regs,
            base,
            &self.txq[qi],
            &self.mem,
            &self.errors,
            true,
            |t, first| self.tx_finish(t, qi, first),
        );
        match pass {
            Ok(true) => self.queue_interrupt(qi, Dir::Tx),
            Ok(false) => {}
            Err(e) => log::debug!("ixgbe: tx queue {qi}: {e}"),
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
                self.errors.tx_drop(&e);
                log::debug!("ixgbe: tx queue {qi}: frame dropped: {e}");
            }
        }
    }

    /// Puts a finished frame on the wire, or back into the receiver when the
    /// MAC loops back (HLREG0.LPBK). The doorbell found the link up or the
    /// MAC looped back: without either the 82599 stops transmit DMA ("We've
    /// lost link, so the controller stops DMA", `ixgbe_watchdog_flush_tx`)
    /// and held frames go out when the link returns ([`Ixgbe::set_cable`]).
    fn tx_out(&self, qi: usize, frame: &[u8], sent: u64) {
        self.count_tx(qi, frame);
        if self.loopback() {
            self.rx_frame(frame, Some(sent), true);
        } else {
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
