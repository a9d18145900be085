// SPDX-License-Identifier: Apache-2.0
//! Where each frame counts (82576 datasheet §8.19, 82599 §8.2.3.23): good
//! and total packets, good and total octets (split low/high counters, FCS
//! included), the 64..1522-byte size buckets and broadcast/multicast, in the
//! registers the part's [`super::Layout`] names, through the shared
//! [`crate::stats`] counters; per-queue counters are the part's own.

use super::{Dir, Function, Part};
use crate::regfile::RegDef;
use crate::stats::{classify, size_bucket, FCS};

/// The statistics registers both parts keep at the same offsets (82576
/// §8.19, 82599 §8.2.3.23), all clear on read.
pub mod stat {
    /// CRC errors.
    pub const CRCERRS: u32 = 0x4000;
    /// Receive length errors.
    pub const RLEC: u32 = 0x4040;
    /// Packets received, 64 bytes (the 127, 255, 511, 1023 and 1522-byte
    /// buckets follow, 4 bytes apart).
    pub const PRC64: u32 = 0x405c;
    /// Good packets received.
    pub const GPRC: u32 = 0x4074;
    /// Broadcast packets received.
    pub const BPRC: u32 = 0x4078;
    /// Multicast packets received.
    pub const MPRC: u32 = 0x407c;
    /// Good packets transmitted.
    pub const GPTC: u32 = 0x4080;
    /// Good octets received, low (high at +4).
    pub const GORCL: u32 = 0x4088;
    /// Good octets transmitted, low (high at +4).
    pub const GOTCL: u32 = 0x4090;
    /// Receive undersize.
    pub const RUC: u32 = 0x40a4;
    /// Receive fragments.
    pub const RFC: u32 = 0x40a8;
    /// Receive oversize.
    pub const ROC: u32 = 0x40ac;
    /// Receive jabber.
    pub const RJC: u32 = 0x40b0;
    /// Total octets received, low (high at +4).
    pub const TORL: u32 = 0x40c0;
    /// Total packets received.
    pub const TPR: u32 = 0x40d0;
    /// Total packets transmitted.
    pub const TPT: u32 = 0x40d4;
    /// Packets transmitted, 64 bytes (buckets follow as for PRC64).
    pub const PTC64: u32 = 0x40d8;
    /// Multicast packets transmitted.
    pub const MPTC: u32 = 0x40f0;
    /// Broadcast packets transmitted.
    pub const BPTC: u32 = 0x40f4;
}

/// Rows of [`shared_counter_rows`].
pub const SHARED_COUNTERS: usize = 32;

/// The register table rows of the counters in [`stat`].
pub const fn shared_counter_rows<H: Copy + 'static>() -> [RegDef<H>; SHARED_COUNTERS] {
    const fn rc<H: Copy + 'static>(name: &'static str, off: u32) -> RegDef<H> {
        RegDef::new(name, off).rc()
    }
    use stat::*;
    [
        rc("CRCERRS", CRCERRS),
        rc("RLEC", RLEC),
        rc("PRC64", PRC64),
        rc("PRC127", PRC64 + 4),
        rc("PRC255", PRC64 + 8),
        rc("PRC511", PRC64 + 12),
        rc("PRC1023", PRC64 + 16),
        rc("PRC1522", PRC64 + 20),
        rc("GPRC", GPRC),
        rc("BPRC", BPRC),
        rc("MPRC", MPRC),
        rc("GPTC", GPTC),
        rc("GORCL", GORCL),
        rc("GORCH", GORCL + 4),
        rc("GOTCL", GOTCL),
        rc("GOTCH", GOTCL + 4),
        rc("RUC", RUC),
        rc("RFC", RFC),
        rc("ROC", ROC),
        rc("RJC", RJC),
        rc("TORL", TORL),
        rc("TORH", TORL + 4),
        rc("TPR", TPR),
        rc("TPT", TPT),
        rc("PTC64", PTC64),
        rc("PTC127", PTC64 + 4),
        rc("PTC255", PTC64 + 8),
        rc("PTC511", PTC64 + 12),
        rc("PTC1023", PTC64 + 16),
        rc("PTC1522", PTC64 + 20),
        rc("MPTC", MPTC),
        rc("BPTC", BPTC),
    ]
}

/// The counters of received frames: octet counters with `hi_bits` in their
/// high registers.
pub const fn rx_counters(hi_bits: u32) -> FrameCounters {
    FrameCounters {
        good: stat::GPRC,
        total: stat::TPR,
        good_octets: Split::at(stat::GORCL, hi_bits),
        total_octets: Some(Split::at(stat::TORL, hi_bits)),
        size64: stat::PRC64,
        broadcast: stat::BPRC,
        multicast: stat::MPRC,
    }
}

/// The counters of transmitted frames: octet counters with `hi_bits` in
/// their high registers, and total octets where the part counts them.
pub const fn tx_counters(hi_bits: u32, total_octets: Option<Split>) -> FrameCounters {
    FrameCounters {
        good: stat::GPTC,
        total: stat::TPT,
        good_octets: Split::at(stat::GOTCL, hi_bits),
        total_octets,
        size64: stat::PTC64,
        broadcast: stat::BPTC,
        multicast: stat::MPTC,
    }
}

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

impl<M: Part> Function<M> {
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

    /// Adds the frames of `t` (counted on queue `qi`) to the statistics
    /// registers and their totals: each counter once, by the number of its
    /// frames (the same value as adding them one by one: 32-bit counters
    /// saturate, split ones wrap, at their width). Empties `t`.
    pub(crate) fn count_tally(&self, dir: Dir, qi: usize, t: &mut Tally) {
        if t.frames == 0 {
            return;
        }
        let k = match dir {
            Dir::Rx => M::LAYOUT.rx_counters,
            Dir::Tx => M::LAYOUT.tx_counters,
        };
        self.stat_add(k.good, t.frames);
        self.stat_add(k.total, t.frames);
        self.stat_add_split(k.good_octets, t.octets);
        if let Some(tot) = k.total_octets {
            self.stat_add_split(tot, t.octets);
        }
        for (b, &n) in (0u32..).zip(&t.buckets) {
            if n != 0 {
                self.stat_add(k.size64 + 4 * b, n);
            }
        }
        if t.broadcast != 0 {
            self.stat_add(k.broadcast, t.broadcast);
        }
        if t.multicast != 0 {
            self.stat_add(k.multicast, t.multicast);
        }
        match dir {
            Dir::Rx => M::count_rx_queue(self, qi, t.frames, t.octets),
            Dir::Tx => M::count_tx_queue(self, qi, t.frames, t.octets),
        }
        *t = Tally::default();
    }
}

/// Frames of one queue and direction counted locally, to be added to the
/// statistics registers at once ([`Function::count_tally`]) when a transmit
/// pass hands its frames on or a receive batch is placed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    frames: u32,
    octets: u64,
    buckets: [u32; 6],
    broadcast: u32,
    multicast: u32,
}

impl Tally {
    /// Counts a frame given without its FCS ([`classify`]'s counters; a
    /// frame to a group address is classified further out of line).
    #[inline]
    pub(crate) fn add(&mut self, frame: &[u8]) {
        let octets = frame.len() as u64 + FCS;
        self.frames += 1;
        self.octets += octets;
        self.buckets[size_bucket(octets) as usize] += 1;
        if frame.first().is_some_and(|b| b & 1 != 0) {
            self.add_group(frame);
        }
    }

    /// The broadcast or multicast count of a frame to a group address.
    #[inline(never)]
    fn add_group(&mut self, frame: &[u8]) {
        let c = classify(frame);
        self.broadcast += u32::from(c.broadcast);
        self.multicast += u32::from(c.multicast);
    }
}
