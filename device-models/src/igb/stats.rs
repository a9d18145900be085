//! Statistics counters of the 82576 (datasheet §8.19): which frames count
//! where, through the shared [`crate::stats`] counters (octets and size buckets
//! include the FCS; GORC/GOTC/TOR/TOT are 64-bit low/high pairs).

use super::regs::stat;
use super::Igb;
use crate::stats::classify;

impl Igb {
    /// Adds to a 32-bit counter (saturating, as the 82576 counters do).
    pub(super) fn stat_add(&self, off: u32, n: u32) {
        self.totals.count(&self.regs, off, u64::from(n));
    }

    /// Adds to a 64-bit counter split in low/high registers.
    fn stat_add64(&self, lo: u32, n: u64) {
        self.totals.count_split(&self.regs, lo, lo + 4, 32, n);
    }

    /// Counts a transmitted frame (without FCS).
    pub(super) fn count_tx(&self, f: &[u8]) {
        let c = classify(f);
        self.stat_add(stat::GPTC, 1);
        self.stat_add(stat::TPT, 1);
        self.stat_add64(stat::GOTCL, c.octets);
        self.stat_add64(stat::TOTL, c.octets);
        self.stat_add(stat::PTC64 + 4 * c.bucket, 1);
        if c.broadcast {
            self.stat_add(stat::BPTC, 1);
        } else if c.multicast {
            self.stat_add(stat::MPTC, 1);
        }
    }

    /// Counts a received frame (without FCS) delivered to the host.
    pub(super) fn count_rx(&self, f: &[u8]) {
        let c = classify(f);
        self.stat_add(stat::GPRC, 1);
        self.stat_add(stat::TPR, 1);
        self.stat_add64(stat::GORCL, c.octets);
        self.stat_add64(stat::TORL, c.octets);
        self.stat_add(stat::PRC64 + 4 * c.bucket, 1);
        if c.broadcast {
            self.stat_add(stat::BPRC, 1);
        } else if c.multicast {
            self.stat_add(stat::MPRC, 1);
        }
    }
}
