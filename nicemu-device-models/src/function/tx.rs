// SPDX-License-Identifier: Apache-2.0
//! The transmit engine both parts share (82576 datasheet §7.2, 82599 §7.2): on
//! a tail doorbell, one pass over the queue's ring ([`crate::txframe`]), each
//! gathered frame finished with the part's settings (VLAN ethertype,
//! padding), its IEEE 1588 stamp latched, counted and sent where the part
//! routes it (a loopback, or the wire in [`FrameBatch`]es of up to
//! [`crate::batch::BATCH_FRAMES`] frames), then the queue's interrupt.

use std::sync::atomic::Ordering;

use super::stats::Tally;
use super::{q, Dir, Function, Part, TxRoute, QUEUE_ENABLE};
use crate::batch::FrameBatch;
use crate::sync::lock;
use crate::txframe::{queue_pass, FinishSettings, Finished, FrameOpts, TxDrop, TxQueue};

/// Batches a function keeps for reuse between passes (passes of different
/// queues may run at once; more than this are freed).
const KEEP_BATCHES: usize = 2;

/// What a pass finished and has not handed on yet: frames for the wire,
/// and the count of every frame it sent (looped back ones too), added to
/// the statistics before the frames leave and at the end of the pass.
/// With them, what the part's registers say of every frame of the pass,
/// read once when the doorbell starts it (the pass runs at that instant):
/// how frames are finished and where they go.
struct PassOut {
    qi: usize,
    batch: FrameBatch,
    tally: Tally,
    settings: FinishSettings,
    route: TxRoute,
}

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
        let (len, h0) = (
            self.regs.peek(base + q::LEN) / 16,
            self.regs.peek(base + q::H),
        );
        let mut out = PassOut {
            qi,
            batch: self.take_batch(),
            tally: Tally::default(),
            settings: M::tx_settings(self),
            route: M::tx_route(self),
        };
        let pass = queue_pass(
            &self.regs,
            base,
            t,
            &self.mem,
            &self.errors,
            M::LAYOUT.context_dd,
            |t, first| self.tx_finish(t, first, &mut out),
        );
        self.tx_flush(&mut out);
        self.put_batch(out.batch);
        if len > 0 {
            let (h0, h1) = (h0 % len, self.regs.peek(base + q::H) % len);
            self.descs[0].fetch_add(u64::from((h1 + len - h0) % len), Ordering::Relaxed);
        }
        match pass {
            Ok(true) => M::queue_interrupt(self, qi, Dir::Tx),
            Ok(false) => {}
            Err(e) => log::debug!("{}: tx queue {qi}: {e}", M::NAME),
        }
    }

    /// Finishes a complete frame (VLAN, offloads, TSO, padding) and sends it:
    /// a frame for the wire that asks for no offload and no time stamp (the
    /// common case) in line, the others out of line ([`Self::tx_finish_any`]).
    #[inline]
    fn tx_finish(&self, txq: &mut TxQueue, first: FrameOpts, out: &mut PassOut) {
        if !(first.plain() && !first.tstamp && out.route == TxRoute::Wire) {
            self.tx_finish_any(txq, first, out);
            return;
        }
        // What `tx_finish_any` does with such a frame.
        if out.batch.is_full() {
            self.tx_flush(out);
        }
        out.batch.sent_ns(|| self.env.clock.now_ns());
        let ctx = txq.ctx[usize::from(first.idx & 1)];
        let res = txq.finish_plain(out.settings, |f| {
            if M::tx_security(self, (&first, &ctx), 0, f) {
                out.tally.add(f);
                out.batch.push(f);
            }
        });
        if let Err(e) = res {
            self.tx_dropped(out.qi, e);
        }
    }

    /// A frame the transmit pass dropped (counted where it belongs).
    #[cold]
    #[inline(never)]
    fn tx_dropped(&self, qi: usize, e: TxDrop) {
        e.count_in(&self.errors);
        log::debug!("{}: tx queue {qi}: frame dropped: {e}", M::NAME);
    }

    /// [`Self::tx_finish`] of any frame.
    #[inline(never)]
    fn tx_finish_any(&self, txq: &mut TxQueue, first: FrameOpts, out: &mut PassOut) {
        let s = out.settings;
        // The frame leaves the MAC with its batch: one instant for its 1588
        // stamp and its departure on the wire.
        if out.batch.is_full() {
            self.tx_flush(out);
        }
        let now = out.batch.sent_ns(|| self.env.clock.now_ns());
        if first.tstamp && self.ts().tx_stamp(now) {
            M::tx_stamped(self);
        }
        let ctx = txq.ctx[usize::from(first.idx & 1)];
        if first.plain() && out.route == TxRoute::Wire {
            // The batch has room (tested above) and its instant: the frame
            // joins it as `tx_out` would add it.
            let res = txq.finish_plain(s, |f| {
                if M::tx_security(self, (&first, &ctx), 0, f) {
                    out.tally.add(f);
                    out.batch.push(f);
                }
            });
            if let Err(e) = res {
                e.count_in(&self.errors);
                log::debug!("{}: tx queue {}: frame dropped: {e}", M::NAME, out.qi);
            }
            return;
        }
        let mut seg = 0;
        let sent = |f: &mut Vec<u8>| {
            seg += 1;
            if M::tx_security(self, (&first, &ctx), seg - 1, f) {
                self.tx_out(f, now, out);
            }
        };
        match txq.finish(first, s, sent) {
            Ok(Finished::Segments(_)) => {
                if let Some(tsctc) = M::LAYOUT.tsctc {
                    self.stat_add(tsctc, 1);
                }
            }
            Ok(Finished::Frame) => {}
            Err(e) => {
                e.count_in(&self.errors);
                log::debug!("{}: tx queue {}: frame dropped: {e}", M::NAME, out.qi);
            }
        }
    }

    /// Counts a finished frame and adds it to the batch for the wire (its
    /// buffer changes places with an empty one of the batch), or puts it back
    /// into the receiver when the part loops back.
    #[inline]
    fn tx_out(&self, frame: &mut Vec<u8>, sent: u64, out: &mut PassOut) {
        out.tally.add(frame);
        match out.route {
            TxRoute::Loopback => {
                self.rx_frame(frame, Some(sent), true);
            }
            TxRoute::Wire => {
                if out.batch.is_full() {
                    self.tx_flush(out);
                }
                out.batch.sent_ns(|| sent);
                out.batch.push(frame);
            }
        }
    }

    /// Counts the frames sent so far, then hands the batch's frames to the
    /// wire and empties it.
    fn tx_flush(&self, out: &mut PassOut) {
        self.count_tally(Dir::Tx, out.qi, &mut out.tally);
        if !out.batch.is_empty() {
            self.env.wire.transmit_batch(&out.batch);
            out.batch.clear();
        }
    }

    /// A batch for a pass (reused: its buffers are warm).
    fn take_batch(&self) -> FrameBatch {
        lock(&self.tx_batches).pop().unwrap_or_default()
    }

    /// Gives a pass's (empty) batch back for reuse.
    fn put_batch(&self, b: FrameBatch) {
        let mut kept = lock(&self.tx_batches);
        if kept.len() < KEEP_BATCHES {
            kept.push(b);
        }
    }
}
