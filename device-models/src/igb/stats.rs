//! Statistics counters of the 82576 (datasheet §8.19): where frames count
//! (octets and size buckets include the FCS; GORC/GOTC/TOR/TOT are 64-bit
//! low/high pairs) and what a missed frame counts.

use super::regs::*;
use super::Igb;
use crate::function::{FrameCounters, Split};

/// Counters of received frames.
pub(super) const RX: FrameCounters = FrameCounters {
    good: stat::GPRC,
    total: stat::TPR,
    good_octets: Split::at(stat::GORCL, 32),
    total_octets: Some(Split::at(stat::TORL, 32)),
    size64: stat::PRC64,
    broadcast: stat::BPRC,
    multicast: stat::MPRC,
};

/// Counters of transmitted frames.
pub(super) const TX: FrameCounters = FrameCounters {
    good: stat::GPTC,
    total: stat::TPT,
    good_octets: Split::at(stat::GOTCL, 32),
    total_octets: Some(Split::at(stat::TOTL, 32)),
    size64: stat::PTC64,
    broadcast: stat::BPTC,
    multicast: stat::MPTC,
};

impl Igb {
    /// A frame queue `qi` had no buffer for: MPC, RNBC and the queue's RQDPC.
    pub(super) fn count_rx_miss(&self, qi: usize) {
        self.stat_add(stat::MPC, 1);
        self.stat_add(stat::RNBC, 1);
        self.stat_add(RXQ_BASE + qi as u32 * QUEUE_STRIDE + q::RQDPC, 1);
    }
}
