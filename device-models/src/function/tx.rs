// SPDX-License-Identifier: Apache-2.0
//! The transmit engine both parts share (82576 datasheet §7.2, 82599 §7.2): on
//! a tail doorbell, one pass over the queue's ring ([`crate::txframe`]), each
//! gathered frame finished with the part's settings (VLAN ethertype,
//! padding), its IEEE 1588 stamp latched, counted and sent where the part
//! routes it (the wire or a loopback), then the queue's interrupt.

use super::{q, Dir, Function, Part, TxRoute, QUEUE_ENABLE};
use crate::sync::lock;
use crate::txframe::{queue_pass, Finished, FrameOpts, TxQueue};

impl<M: Part> Function<M> {
    /// Rings every transmit queue (the transmitter was just enabled).
    pub(crate) fn tx_doorbell_all(&self) {
        for (qi, t) in self.txq.iter().enumerate() {
            self.tx_pass(&mut lock(t), qi);
        }
    }

    /// Processes transmit queue `qi` (its lock held, as `t`) after its tail
    /// moved: at most one pass over the ring per doorbell.
    pub(crate) fn tx_pass(&self, t: &mut TxQueue, qi: usize) {
        if qi >= self.txq.len()
            || !M::tx_enabled(self)
            || !M::tx_link(self)
            || self.faults.tx_stalled(qi)
        {
            return;
        }
        let base = M::txq_base(qi);
        if self.regs.peek(base + q::DCTL) & QUEUE_ENABLE == 0 {
            return;
        }
        let pass = queue_pass(
            &self.regs,
            base,
            t,
            &self.mem,
            &self.errors,
            M::LAYOUT.context_dd,
            |t, first| self.tx_finish(t, qi, first),
        );
        match pass {
            Ok(true) => M::queue_interrupt(self, qi, Dir::Tx),
            Ok(false) => {}
            Err(e) => log::debug!("{}: tx queue {qi}: {e}", M::NAME),
        }
    }

    /// Finishes a complete frame (VLAN, offloads, TSO, padding) and sends it.
    fn tx_finish(&self, txq: &mut TxQueue, qi: usize, first: FrameOpts) {
        let s = M::tx_settings(self);
        // The frame leaves the MAC now: one instant for its 1588 stamp and
        // its departure on the wire.
        let now = self.env.clock.now_ns();
        if first.tstamp && self.ts().tx_stamp(now) {
            M::tx_stamped(self);
        }
        match txq.finish(first, s, |f| self.tx_out(qi, f, now)) {
            Ok(Finished::Segments(_)) => {
                if let Some(tsctc) = M::LAYOUT.tsctc {
                    self.stat_add(tsctc, 1);
                }
            }
            Ok(Finished::Frame) => {}
            Err(e) => {
                e.count_in(&self.errors);
                log::debug!("{}: tx queue {qi}: frame dropped: {e}", M::NAME);
            }
        }
    }

    /// Counts a finished frame and puts it on the wire, or back into the
    /// receiver when the part loops back.
    fn tx_out(&self, qi: usize, frame: &[u8], sent: u64) {
        self.count_frame(Dir::Tx, qi, frame);
        match M::tx_route(self) {
            TxRoute::Loopback => {
                self.rx_frame(frame, Some(sent), true);
            }
            TxRoute::Wire => self.env.wire.transmit_at(frame, sent),
        }
    }
}
