//! Statistics counters of the 82599 (datasheet §8.2.3.23): which frames count
//! where. Octet counts and size buckets include the 4-byte FCS, as on the wire;
//! the per-queue counters (QPRC/QBRC, QPTC/QBTC) are indexed by the statistics
//! mapping registers RQSMR / TQSM (4 queues per register, one byte each).
//! Every counter is clear-on-read; the 36-bit octet counters are split in a
//! low register and a high register (bits 35:32).

use super::regs::*;
use super::Ixgbe;

use crate::stats::classify;

impl Ixgbe {
    /// Adds to a 32-bit counter (the 82599 counters wrap; we saturate, which
    /// a driver polling every 2 s cannot tell apart).
    pub(super) fn stat_add(&self, off: u32, n: u32) {
        self.totals.count(&self.regs, off, u64::from(n));
    }

    /// Adds to a 36-bit counter split in low / high (bits 3:0) registers.
    fn stat_add36(&self, lo: u32, hi: u32, n: u64) {
        self.totals.count_split(&self.regs, lo, hi, 4, n);
    }

    /// Statistics index (0..15) a queue is mapped to.
    fn stat_index(&self, map_base: u32, qi: usize) -> u32 {
        let q = qi as u32 & 0x7f;
        (self.regs.peek(map_base + 4 * (q >> 2)) >> (8 * (q & 3))) & 0xf
    }

    /// Counts a transmitted frame (without FCS) on queue `qi`.
    pub(super) fn count_tx(&self, qi: usize, f: &[u8]) {
        let c = classify(f);
        let len = c.octets;
        self.stat_add(stat::GPTC, 1);
        self.stat_add(stat::TPT, 1);
        self.stat_add36(stat::GOTCL, stat::GOTCL + 4, len);
        self.stat_add(stat::PTC64 + 4 * c.bucket, 1);
        if c.broadcast {
            self.stat_add(stat::BPTC, 1);
        } else if c.multicast {
            self.stat_add(stat::MPTC, 1);
        }
        let s = self.stat_index(TQSM, qi);
        self.stat_add(stat::QPTC + 0x40 * s, 1);
        self.stat_add36(stat::QBTC_L + 8 * s, stat::QBTC_L + 8 * s + 4, len);
    }

    /// Counts a received frame (without FCS) delivered to queue `qi`.
    pub(super) fn count_rx(&self, qi: usize, f: &[u8]) {
        let c = classify(f);
        let len = c.octets;
        self.stat_add(stat::GPRC, 1);
        self.stat_add(stat::TPR, 1);
        self.stat_add36(stat::GORCL, stat::GORCL + 4, len);
        self.stat_add36(stat::TORL, stat::TORL + 4, len);
        self.stat_add(stat::PRC64 + 4 * c.bucket, 1);
        if c.broadcast {
            self.stat_add(stat::BPRC, 1);
        } else if c.multicast {
            self.stat_add(stat::MPRC, 1);
        }
        let s = self.stat_index(RQSMR, qi);
        self.stat_add(stat::QPRC + 0x40 * s, 1);
        self.stat_add36(stat::QBRC_L + 0x40 * s, stat::QBRC_L + 0x40 * s + 4, len);
    }

    /// Counts a frame dropped for lack of receive descriptors on queue `qi`:
    /// RNBC and MPC of packet buffer 0, QPRDC of the queue's statistics index,
    /// and GPRC (the 82599 counts missed packets in GPRC; `ixgbe_update_stats`
    /// subtracts MPC from it).
    pub(super) fn count_rx_drop(&self, qi: usize) {
        self.stat_add(stat::MPC, 1);
        self.stat_add(stat::RNBC, 1);
        self.stat_add(stat::GPRC, 1);
        self.stat_add(stat::TPR, 1);
        let s = self.stat_index(RQSMR, qi);
        self.stat_add(stat::QPRDC + 0x40 * s, 1);
    }
}
