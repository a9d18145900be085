//! Statistics counters of the 82576 (datasheet §8.19): which frames count where.
//! Octet counts and size buckets include the 4-byte FCS, as on the wire.

use super::regs::stat;
use super::Igb;

const FCS: u64 = 4;

/// Index of the size bucket (64, 65–127, 128–255, 256–511, 512–1023, 1024+).
fn bucket(wire_len: u64) -> u32 {
    match wire_len {
        0..=64 => 0,
        65..=127 => 1,
        128..=255 => 2,
        256..=511 => 3,
        512..=1023 => 4,
        _ => 5,
    }
}

impl Igb {
    /// Adds to a 32-bit counter, saturating as the 82576 counters do.
    pub(super) fn stat_add(&mut self, off: u32, n: u32) {
        let v = self.regs.peek(off).saturating_add(n);
        self.regs.poke(off, v);
    }

    /// Adds to a 64-bit counter split in low/high registers.
    fn stat_add64(&mut self, lo: u32, n: u64) {
        let v = (u64::from(self.regs.peek(lo + 4)) << 32 | u64::from(self.regs.peek(lo)))
            .wrapping_add(n);
        self.regs.poke(lo, v as u32);
        self.regs.poke(lo + 4, (v >> 32) as u32);
    }

    /// Counts a transmitted frame (without FCS).
    pub(super) fn count_tx(&mut self, f: &[u8]) {
        let len = f.len() as u64 + FCS;
        self.stat_add(stat::GPTC, 1);
        self.stat_add(stat::TPT, 1);
        self.stat_add64(stat::GOTCL, len);
        self.stat_add64(stat::TOTL, len);
        self.stat_add(stat::PTC64 + 4 * bucket(len), 1);
        if f[0] & 1 != 0 {
            if f[..6] == [0xff; 6] {
                self.stat_add(stat::BPTC, 1);
            } else {
                self.stat_add(stat::MPTC, 1);
            }
        }
    }

    /// Counts a received frame (without FCS) delivered to the host.
    pub(super) fn count_rx(&mut self, f: &[u8]) {
        let len = f.len() as u64 + FCS;
        self.stat_add(stat::GPRC, 1);
        self.stat_add(stat::TPR, 1);
        self.stat_add64(stat::GORCL, len);
        self.stat_add64(stat::TORL, len);
        self.stat_add(stat::PRC64 + 4 * bucket(len), 1);
        if f[0] & 1 != 0 {
            if f[..6] == [0xff; 6] {
                self.stat_add(stat::BPRC, 1);
            } else {
                self.stat_add(stat::MPRC, 1);
            }
        }
    }
}
