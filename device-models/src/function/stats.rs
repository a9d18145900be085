//! Where each frame counts (82576 datasheet §8.19, 82599 §8.2.3.23): good
//! and total packets, good and total octets (split low/high counters, FCS
//! included), the 64..1522-byte size buckets and broadcast/multicast, in the
//! registers the part's [`super::Layout`] names, through the shared
//! [`crate::stats`] counters; per-queue counters are the part's own.

use super::{Dir, Function, Model};
use crate::stats::classify;

/// A counter split in a low and a high register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// The low register.
    pub lo: u32,
    /// The high register.
    pub hi: u32,
    /// Width of the high part: 32 for 64-bit counters, 4 for 36-bit ones.
    pub hi_bits: u32,
}

impl Split {
    /// A counter whose high register follows its low one.
    pub const fn at(lo: u32, hi_bits: u32) -> Split {
        Split {
            lo,
            hi: lo + 4,
            hi_bits,
        }
    }
}

/// The counters one direction's frames go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameCounters {
    /// Good packets (GPRC / GPTC).
    pub good: u32,
    /// Total packets (TPR / TPT).
    pub total: u32,
    /// Good octets (GORC / GOTC).
    pub good_octets: Split,
    /// Total octets (TOR / TOT), where the part counts them.
    pub total_octets: Option<Split>,
    /// The 64-byte size bucket; the others follow 4 bytes apart.
    pub size64: u32,
    /// Broadcast packets.
    pub broadcast: u32,
    /// Multicast packets.
    pub multicast: u32,
}

impl<M: Model> Function<M> {
    /// Adds to a 32-bit counter (saturating; the 82599's counters wrap, which
    /// a driver polling every 2 s cannot tell apart).
    pub(crate) fn stat_add(&self, off: u32, n: u32) {
        self.totals.count(&self.regs, off, u64::from(n));
    }

    /// Adds to a split counter, wrapping at its width.
    pub(crate) fn stat_add_split(&self, s: Split, n: u64) {
        self.totals
            .count_split(&self.regs, s.lo, s.hi, s.hi_bits, n);
    }

    /// Counts a frame (without FCS) received on or sent from queue `qi`.
    pub(crate) fn count_frame(&self, dir: Dir, qi: usize, frame: &[u8]) {
        let l = M::LAYOUT;
        let k = match dir {
            Dir::Rx => l.rx_counters,
            Dir::Tx => l.tx_counters,
        };
        let c = classify(frame);
        self.stat_add(k.good, 1);
        self.stat_add(k.total, 1);
        self.stat_add_split(k.good_octets, c.octets);
        if let Some(t) = k.total_octets {
            self.stat_add_split(t, c.octets);
        }
        self.stat_add(k.size64 + 4 * c.bucket, 1);
        if c.broadcast {
            self.stat_add(k.broadcast, 1);
        } else if c.multicast {
            self.stat_add(k.multicast, 1);
        }
        match dir {
            Dir::Rx => M::count_rx_queue(self, qi, c.octets),
            Dir::Tx => M::count_tx_queue(self, qi, c.octets),
        }
    }
}
