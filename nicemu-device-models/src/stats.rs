// SPDX-License-Identifier: Apache-2.0
//! Statistics counters shared by igb and ixgbe (82576 datasheet §8.19, 82599
//! §8.2.3.23): frame classification (size buckets, broadcast/multicast, octets
//! including the FCS, as counted on the wire), clear-on-read registers that
//! saturate or wrap at their width, counters split in low/high registers, and
//! running totals a control path can read without disturbing the guest's
//! clear-on-read view.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::regfile::{Access, RegFile};

/// Length of the frame check sequence the counters include.
pub const FCS: u64 = 4;

/// How a frame counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameClass {
    /// Octets on the wire, FCS included.
    pub octets: u64,
    /// Size bucket: 0 = 64, 1 = 65–127, 2 = 128–255, 3 = 256–511,
    /// 4 = 512–1023, 5 = 1024 and more (PRC64..PRC1522 / PTC64..PTC1522).
    pub bucket: u32,
    /// Destination is the broadcast address.
    pub broadcast: bool,
    /// Destination is a multicast (not broadcast) address.
    pub multicast: bool,
}

/// The size bucket of a frame of `octets` octets (FCS included):
/// 0 = 64, 1 = 65–127, 2 = 128–255, 3 = 256–511, 4 = 512–1023, 5 = 1024
/// and more. Above 64 octets, the position of the highest bit set less 5
/// (a bit scan, not a chain of compares).
#[inline]
pub fn size_bucket(octets: u64) -> u32 {
    if octets <= 64 {
        0
    } else {
        (63 - octets.leading_zeros()).min(10) - 5
    }
}

/// Classifies a frame given without its FCS.
#[inline]
pub fn classify(frame: &[u8]) -> FrameClass {
    let octets = frame.len() as u64 + FCS;
    let bucket = size_bucket(octets);
    let group = frame.first().is_some_and(|b| b & 1 != 0);
    let broadcast = group && frame.len() >= 6 && frame[..6] == [0xff; 6];
    FrameClass {
        octets,
        bucket,
        broadcast,
        multicast: group && !broadcast,
    }
}

/// Running totals of the clear-on-read registers of a [`RegFile`], by table row
/// and element. Counting is lock-free (atomic adds), so the receive and
/// transmit paths of different queues count concurrently.
#[derive(Debug, Default)]
pub struct Totals {
    /// Per table row: start of its elements in `values` (u32::MAX: not a counter).
    base: Vec<u32>,
    values: Vec<AtomicU64>,
}

impl Totals {
    /// Totals for the clear-on-read rows of `rf`'s table.
    pub fn for_file<H: Copy + 'static>(rf: &RegFile<H>) -> Self {
        let mut base = Vec::with_capacity(rf.defs().len());
        let mut n = 0u32;
        for d in rf.defs() {
            if d.access == Access::ClearOnRead && d.alias.is_none() {
                base.push(n);
                n += d.count;
            } else {
                base.push(u32::MAX);
            }
        }
        Totals {
            base,
            values: (0..n).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn slot<H: Copy + 'static>(&self, rf: &RegFile<H>, off: u32) -> Option<usize> {
        let id = rf.decode(u64::from(off))?;
        let b = *self.base.get(usize::from(id.def))?;
        (b != u32::MAX).then(|| (b + u32::from(id.elem)) as usize)
    }

    /// Adds to a 32-bit clear-on-read counter at `off` (saturating at the
    /// register width) and to its total.
    pub fn count<H: Copy + 'static>(&self, rf: &RegFile<H>, off: u32, n: u64) {
        rf.update(off, |v| {
            u64::from(v).saturating_add(n).min(u64::from(u32::MAX)) as u32
        });
        self.add_total(rf, off, n);
    }

    fn add_total<H: Copy + 'static>(&self, rf: &RegFile<H>, off: u32, n: u64) {
        if let Some(s) = self.slot(rf, off) {
            self.values[s].fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Adds to a counter split in a low register and a high register holding
    /// `hi_bits` more bits (32 for 64-bit, 4 for 36-bit counters), wrapping at
    /// that width. The total is kept under the low register.
    ///
    /// The low half is added first and its carry then goes to the high half,
    /// each in one atomic step, so concurrent adders never lose a carry.
    pub fn count_split<H: Copy + 'static>(
        &self,
        rf: &RegFile<H>,
        lo: u32,
        hi: u32,
        hi_bits: u32,
        n: u64,
    ) {
        let hi_mask = if hi_bits >= 32 {
            u32::MAX
        } else {
            (1u32 << hi_bits) - 1
        };
        let n_lo = n as u32;
        let old_lo = rf.update(lo, |v| v.wrapping_add(n_lo));
        let carry = (u64::from(old_lo) + u64::from(n_lo)) >> 32;
        let add_hi = ((n >> 32) + carry) as u32;
        if add_hi != 0 {
            rf.update(hi, |v| (v & hi_mask).wrapping_add(add_hi) & hi_mask);
        }
        self.add_total(rf, lo, n);
    }

    /// The running total of the counter whose (low) register is at `off`,
    /// if that is a counter.
    pub fn total_at<H: Copy + 'static>(&self, rf: &RegFile<H>, off: u32) -> Option<u64> {
        self.slot(rf, off)
            .map(|s| self.values[s].load(Ordering::Relaxed))
    }

    /// Sets a counter register and its total (fault injection: a counter
    /// preset near its wrap point). Returns false if `name` is no counter.
    pub fn preset<H: Copy + 'static>(&self, rf: &RegFile<H>, name: &str, value: u64) -> bool {
        let Some((off, _)) = find_counter(rf, name) else {
            return false;
        };
        rf.poke(off, value as u32);
        if let Some(hi) = split_high(rf, off) {
            rf.poke(hi, (value >> 32) as u32);
        }
        if let Some(s) = self.slot(rf, off) {
            self.values[s].store(value, Ordering::Relaxed);
        }
        true
    }

    /// Every counter's total since the last function reset, by decoded name;
    /// split counters are listed once under their name without the L suffix.
    pub fn list<H: Copy + 'static>(&self, rf: &RegFile<H>) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for (i, d) in rf.defs().iter().enumerate() {
            let b = self.base[i];
            if b == u32::MAX {
                continue;
            }
            // The high half of a split counter has no total of its own.
            if d.name.ends_with('H') && is_high_half(rf, d.name) {
                continue;
            }
            let name = match d.name.strip_suffix('L') {
                Some(stem) if is_high_half(rf, &format!("{stem}H")) => stem.trim_end_matches('_'),
                _ => d.name,
            };
            for e in 0..d.count {
                let label = if d.count > 1 {
                    format!("{name}[{e}]")
                } else {
                    name.to_string()
                };
                out.push((label, self.values[(b + e) as usize].load(Ordering::Relaxed)));
            }
        }
        out
    }

    /// Clears every total (function reset).
    pub fn clear(&self) {
        self.values
            .iter()
            .for_each(|v| v.store(0, Ordering::Relaxed));
    }
}

fn is_high_half<H: Copy + 'static>(rf: &RegFile<H>, name: &str) -> bool {
    let Some(stem) = name.strip_suffix('H') else {
        return false;
    };
    let lo = format!("{stem}L");
    rf.defs()
        .iter()
        .any(|d| d.name == lo && d.access == Access::ClearOnRead)
        && rf
            .defs()
            .iter()
            .any(|d| d.name == name && d.access == Access::ClearOnRead)
}

/// Finds a counter by name (`GPRC`, `GORC` for a split pair, `RQDPC[3]`).
fn find_counter<H: Copy + 'static>(rf: &RegFile<H>, name: &str) -> Option<(u32, ())> {
    let (stem, idx) = match name.split_once('[') {
        Some((s, rest)) => (s, rest.trim_end_matches(']').parse::<u32>().ok()?),
        None => (name, 0),
    };
    let cands = [stem.to_string(), format!("{stem}L"), format!("{stem}_L")];
    rf.defs()
        .iter()
        .find(|d| {
            d.access == Access::ClearOnRead && cands.iter().any(|c| c == d.name) && idx < d.count
        })
        .map(|d| (d.offset + idx * d.stride, ()))
}

/// The high register of a split counter whose low register is at `lo`.
fn split_high<H: Copy + 'static>(rf: &RegFile<H>, lo: u32) -> Option<u32> {
    let id = rf.decode(u64::from(lo))?;
    let name = rf.def(id).name;
    let stem = name.strip_suffix('L')?;
    let hi = rf.decode(u64::from(lo) + 4)?;
    let hn = rf.def(hi).name;
    (hn == format!("{stem}H") || hn == format!("{}_H", stem.trim_end_matches('_')))
        .then_some(lo + 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::regfile::RegDef;

    static T: &[RegDef<()>] = &[
        RegDef::new("CTRL", 0x0),
        RegDef::new("GPRC", 0x10).rc(),
        RegDef::new("GORCL", 0x18).rc(),
        RegDef::new("GORCH", 0x1c).rc(),
        RegDef::new("QBRC_L", 0x20).rc().array(2, 8),
        RegDef::new("QBRC_H", 0x24).rc().array(2, 8),
    ];

    #[test]
    fn classify_frames() {
        let mut f = vec![0u8; 60];
        assert_eq!(classify(&f).octets, 64);
        assert_eq!(classify(&f).bucket, 0);
        f[0] = 0x01;
        assert!(classify(&f).multicast);
        f[..6].fill(0xff);
        let c = classify(&f);
        assert!(c.broadcast && !c.multicast);
        assert_eq!(classify(&[0u8; 1514]).bucket, 5);
        assert_eq!(classify(&[0u8; 1019]).bucket, 4);
        assert_eq!(classify(&[]).octets, 4);
    }

    #[test]
    fn size_buckets_are_the_datasheet_ranges() {
        for octets in 0..20_000u64 {
            let want = match octets {
                0..=64 => 0,
                65..=127 => 1,
                128..=255 => 2,
                256..=511 => 3,
                512..=1023 => 4,
                _ => 5,
            };
            assert_eq!(size_bucket(octets), want, "{octets}");
        }
        assert_eq!(size_bucket(u64::MAX), 5);
    }

    #[test]
    fn totals_survive_clear_on_read() {
        let rf = RegFile::new(T, 0x100);
        let t = Totals::for_file(&rf);
        t.count(&rf, 0x10, 5);
        t.count_split(&rf, 0x18, 0x1c, 32, 0x1_0000_0010);
        assert_eq!(rf.read(0x10).unwrap().1, 5);
        assert_eq!(rf.read(0x10).unwrap().1, 0, "guest read clears");
        assert_eq!(rf.read(0x18).unwrap().1, 0x10);
        assert_eq!(rf.read(0x1c).unwrap().1, 1);
        t.count(&rf, 0x10, 2);
        let l = t.list(&rf);
        assert!(l.contains(&("GPRC".to_string(), 7)), "{l:?}");
        assert!(l.contains(&("GORC".to_string(), 0x1_0000_0010)), "{l:?}");
        assert!(!l.iter().any(|(n, _)| n == "GORCH"));
        t.count_split(&rf, 0x28, 0x2c, 4, 0x12_3456_789a);
        assert_eq!(rf.peek(0x2c), 0x2, "36-bit counter keeps 4 high bits");
        assert!(t
            .list(&rf)
            .contains(&("QBRC[1]".to_string(), 0x12_3456_789a)));
        t.clear();
        assert!(t.list(&rf).iter().all(|(_, v)| *v == 0));
    }

    #[test]
    fn saturation_and_presets() {
        let rf = RegFile::new(T, 0x100);
        let t = Totals::for_file(&rf);
        assert!(t.preset(&rf, "GPRC", 0xffff_fffe));
        t.count(&rf, 0x10, 5);
        assert_eq!(rf.peek(0x10), u32::MAX, "32-bit counters saturate");
        assert!(t.preset(&rf, "GORC", 0xffff_ffff_ffff_fff0));
        t.count_split(&rf, 0x18, 0x1c, 32, 0x20);
        assert_eq!(
            (rf.peek(0x18), rf.peek(0x1c)),
            (0x10, 0),
            "64-bit counter wraps"
        );
        assert!(t.preset(&rf, "QBRC[1]", 7));
        assert_eq!(rf.peek(0x28), 7);
        assert!(!t.preset(&rf, "CTRL", 1), "not a counter");
        assert!(!t.preset(&rf, "NOPE", 1));
    }
}
