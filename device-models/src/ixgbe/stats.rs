//! Statistics counters of the 82599 (datasheet §8.2.3.23): where frames
//! count. Octet counts and size buckets include the 4-byte FCS, as on the
//! wire; the per-queue counters (QPRC/QBRC, QPTC/QBTC) are indexed by the
//! statistics mapping registers RQSMR / TQSM (4 queues per register, one byte
//! each). Every counter is clear-on-read; the 36-bit octet counters are split
//! in a low register and a high register (bits 35:32).

use super::regs::*;
use super::Ixgbe;
use crate::function::{FrameCounters, Split};

/// Counters of received frames.
pub(super) const RX: FrameCounters = FrameCounters {
    good: stat::GPRC,
    total: stat::TPR,
    good_octets: Split::at(stat::GORCL, 4),
    total_octets: Some(Split::at(stat::TORL, 4)),
    size64: stat::PRC64,
    broadcast: stat::BPRC,
    multicast: stat::MPRC,
};

/// Counters of transmitted frames.
pub(super) const TX: FrameCounters = FrameCounters {
    good: stat::GPTC,
    total: stat::TPT,
    good_octets: Split::at(stat::GOTCL, 4),
    total_octets: None,
    size64: stat::PTC64,
    broadcast: stat::BPTC,
    multicast: stat::MPTC,
};

impl Ixgbe {
    /// Statistics index (0..15) a queue is mapped to.
    fn stat_index(&self, map_base: u32, qi: usize) -> u32 {
        let q = qi as u32 & 0x7f;
        (self.regs.peek(map_base + 4 * (q >> 2)) >> (8 * (q & 3))) & 0xf
    }

    /// Counts a frame received on queue `qi` in its statistics index.
    pub(super) fn count_rx_queue(&self, qi: usize, octets: u64) {
        let s = self.stat_index(RQSMR, qi);
        self.stat_add(stat::QPRC + 0x40 * s, 1);
        self.stat_add_split(Split::at(stat::QBRC_L + 0x40 * s, 4), octets);
    }

    /// Counts a frame sent from queue `qi` in its statistics index.
    pub(super) fn count_tx_queue(&self, qi: usize, octets: u64) {
        let s = self.stat_index(TQSM, qi);
        self.stat_add(stat::QPTC + 0x40 * s, 1);
        self.stat_add_split(Split::at(stat::QBTC_L + 8 * s, 4), octets);
    }

    /// Counts a frame dropped for lack of receive descriptors on queue `qi`:
    /// RNBC and MPC of packet buffer 0, QPRDC of the queue's statistics index,
    /// and GPRC (the 82599 counts missed packets in GPRC; `ixgbe_update_stats`
    /// subtracts MPC from it).
    pub(super) fn count_rx_miss(&self, qi: usize) {
        self.stat_add(stat::MPC, 1);
        self.stat_add(stat::RNBC, 1);
        self.stat_add(stat::GPRC, 1);
        self.stat_add(stat::TPR, 1);
        let s = self.stat_index(RQSMR, qi);
        self.stat_add(stat::QPRDC + 0x40 * s, 1);
    }
}
