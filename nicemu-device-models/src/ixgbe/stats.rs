// SPDX-License-Identifier: Apache-2.0
//! Statistics counters of the 82599 (datasheet §8.2.3.23) beyond the frame
//! counters both parts share ([`crate::function::stats`]; on the 82599 the
//! octet counters are 36 bits wide, split in a low register and a high one
//! holding bits 35:32): the per-queue counters (QPRC/QBRC, QPTC/QBTC),
//! indexed by the statistics mapping registers RQSMR / TQSM (4 queues per
//! register, one byte each), and what a missed frame counts.

use super::regs::*;
use super::Ixgbe;
use crate::function::Split;

impl Ixgbe {
    /// Statistics index (0..15) a queue is mapped to.
    fn stat_index(&self, map_base: u32, qi: usize) -> u32 {
        let q = qi as u32 & 0x7f;
        (self.regs.peek(map_base + 4 * (q >> 2)) >> (8 * (q & 3))) & 0xf
    }

    /// Counts frames received on queue `qi` in its statistics index.
    pub(super) fn count_rx_queue(&self, qi: usize, frames: u32, octets: u64) {
        let s = self.stat_index(RQSMR, qi);
        self.stat_add(stat::QPRC + 0x40 * s, frames);
        self.stat_add_split(Split::at(stat::QBRC_L + 0x40 * s, 4), octets);
    }

    /// Counts frames sent from queue `qi` in its statistics index.
    pub(super) fn count_tx_queue(&self, qi: usize, frames: u32, octets: u64) {
        let s = self.stat_index(TQSM, qi);
        self.stat_add(stat::QPTC + 0x40 * s, frames);
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
