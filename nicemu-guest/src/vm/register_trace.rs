// SPDX-License-Identifier: Apache-2.0
//! Statistics sweeps seen from nicemu: from a register trace (`nicemu ctl trace DEV on
//! --filter 0x4000-0x4fff --file F`, lines `SECS.USEC DEV R BAR0+0xOFFSET NAME VALUE`) the
//! runs of statistics-register reads — igb_update_stats() reads the 82576's statistics
//! block (datasheet §8.19, 0x04000…) one register after the other — with their duration
//! (first to last read of a sweep) and the gap between consecutive reads inside a sweep,
//! which is the guest's register-read round trip through QEMU and vfio-user as nicemu
//! sees it (the vCPU waits for each read before issuing the next).

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::stats::describe::median;

/// A gap longer than this (µs) ends a sweep. Long: on a loaded host the vCPU can be
/// descheduled for milliseconds in the middle of a sweep.
pub const SPLIT_US: f64 = 100_000.0;
/// igb_update_stats() reads CRCERRS (0x4000) first: a read of it starts a sweep.
pub const SWEEP_START: u64 = 0x4000;
/// Runs with fewer reads are not sweeps (single reads by other paths).
pub const MIN_READS: usize = 20;
/// Trace lines read at most (the guest decides how long the trace runs).
pub const MAX_LINES: usize = 2_000_000;

/// What the sweeps of one trace looked like.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweeps {
    /// Sweeps found.
    pub count: usize,
    /// Median reads per sweep.
    pub reads: f64,
    /// Median sweep duration, first to last read (µs).
    pub median_us: f64,
    /// Longest sweep (µs).
    pub max_us: f64,
    /// Median gap between consecutive reads inside sweeps (µs).
    pub read_gap_us: f64,
}

/// (time µs, BAR0 offset) of a trace line that is a BAR0 read, else `None`.
pub fn read_at(line: &str) -> Option<(f64, u64)> {
    let mut w = line.split_whitespace();
    let t: f64 = w.next()?.parse().ok()?;
    let _dev = w.next()?;
    if w.next()? != "R" {
        return None;
    }
    let off = w.next()?.strip_prefix("BAR0+0x")?;
    Some((t * 1e6, u64::from_str_radix(off, 16).ok()?))
}

/// Time (µs) of a trace line that is a BAR0 read, else `None`.
pub fn read_time_us(line: &str) -> Option<f64> {
    read_at(line).map(|(t, _)| t)
}

/// Finds the sweeps among reads (µs ascending, offset): a sweep starts at a read of
/// [`SWEEP_START`] or after a gap over [`SPLIT_US`].
pub fn sweeps_at(reads: &[(f64, u64)]) -> Option<Sweeps> {
    let times: Vec<f64> = reads.iter().map(|r| r.0).collect();
    let mut runs: Vec<&[f64]> = Vec::new();
    let mut start = 0;
    for i in 1..=times.len() {
        let split =
            i == times.len() || reads[i].1 == SWEEP_START || times[i] - times[i - 1] > SPLIT_US;
        if split {
            if i - start >= MIN_READS {
                runs.push(&times[start..i]);
            }
            start = i;
        }
    }
    summarise(&runs)
}

fn summarise(runs: &[&[f64]]) -> Option<Sweeps> {
    if runs.is_empty() {
        return None;
    }
    let durations: Vec<f64> = runs.iter().map(|r| r[r.len() - 1] - r[0]).collect();
    let reads: Vec<f64> = runs.iter().map(|r| r.len() as f64).collect();
    let gaps: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.windows(2).map(|w| w[1] - w[0]))
        .collect();
    Some(Sweeps {
        count: runs.len(),
        reads: median(&reads)?,
        median_us: median(&durations)?,
        max_us: durations.iter().copied().fold(0.0, f64::max),
        read_gap_us: median(&gaps)?,
    })
}

/// Reads a trace file (at most [`MAX_LINES`] lines) and reports its sweeps as
/// `key=value` lines for the console.
pub fn report(path: &Path) -> Result<String, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let reads: Vec<(f64, u64)> = BufReader::new(f)
        .lines()
        .take(MAX_LINES)
        .map_while(|l| l.ok())
        .filter_map(|l| read_at(&l))
        .collect();
    let s = sweeps_at(&reads).ok_or_else(|| {
        format!(
            "no statistics sweep (≥ {MIN_READS} reads) among {} reads",
            reads.len()
        )
    })?;
    Ok(format!(
        "sweeps={}\nreads_per_sweep={}\nsweep_us={:.1}\nsweep_max_us={:.1}\nread_us={:.2}\n",
        s.count, s.reads, s.median_us, s.max_us, s.read_gap_us
    ))
}

/// Counts the BAR0 reads of a trace file (at most [`MAX_LINES`] lines): `reads=N`,
/// `secs=S` (first to last read) as `key=value` lines for the console.
pub fn count_report(path: &Path) -> Result<String, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let times: Vec<f64> = BufReader::new(f)
        .lines()
        .take(MAX_LINES)
        .map_while(|l| l.ok())
        .filter_map(|l| read_time_us(&l))
        .collect();
    let secs = match (times.first(), times.last()) {
        (Some(a), Some(b)) => (b - a) / 1e6,
        _ => 0.0,
    };
    Ok(format!("reads={}\nsecs={secs:.3}\n", times.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sweeps of reads without a CRCERRS read (split by gaps only).
    fn sweeps(times: &[f64]) -> Option<Sweeps> {
        let reads: Vec<(f64, u64)> = times.iter().map(|t| (*t, 0x4004)).collect();
        sweeps_at(&reads)
    }

    #[test]
    fn two_sweeps_split_by_a_long_gap() {
        // 30 reads 50 µs apart, a 0.5 s pause, 30 reads 60 µs apart, then a lone read
        // (no offsets: split by the gap).
        let mut t: Vec<f64> = (0..30).map(|i| 1000.0 + 50.0 * f64::from(i)).collect();
        t.extend((0..30).map(|i| 501_000.0 + 60.0 * f64::from(i)));
        t.push(900_000.0);
        let s = sweeps(&t).unwrap();
        assert_eq!(s.count, 2);
        assert_eq!(s.reads, 30.0);
        assert_eq!(s.max_us, 29.0 * 60.0);
        assert_eq!(s.median_us, (29.0 * 50.0 + 29.0 * 60.0) / 2.0);
        assert_eq!(s.read_gap_us, 55.0); // 29 gaps of 50 and 29 of 60
        assert!(sweeps(&t[..10]).is_none());
    }

    #[test]
    fn a_descheduled_vcpu_does_not_split_a_sweep_but_crcerrs_starts_one() {
        // Two sweeps of 30 reads back to back 40 µs apart, the first with a 20 ms hole.
        let mut reads = Vec::new();
        let mut t = 0.0;
        for sweep in 0..2 {
            for i in 0..30u64 {
                t += if sweep == 0 && i == 10 {
                    20_000.0
                } else {
                    40.0
                };
                reads.push((t, 0x4000 + 4 * i));
            }
        }
        let s = sweeps_at(&reads).unwrap();
        assert_eq!((s.count, s.reads), (2, 30.0));
        assert_eq!(s.read_gap_us, 40.0);
        assert_eq!(s.max_us, 28.0 * 40.0 + 20_000.0);
    }

    #[test]
    fn trace_lines_of_bar0_reads_only() {
        assert_eq!(
            read_time_us("     3.000125 igb0 R BAR0+0x04000 CRCERRS        0x00000000"),
            Some(3_000_125.0)
        );
        assert_eq!(
            read_time_us("     3.000125 igb0 W BAR0+0x04000 CRCERRS 0x0"),
            None
        );
        assert_eq!(read_time_us("garbage"), None);
    }

    #[test]
    fn report_reads_a_trace_file() {
        let p = std::env::temp_dir().join(format!("nicemu-sweep-{}.log", std::process::id()));
        let mut text = String::new();
        for i in 0..25 {
            text.push_str(&format!(
                "{:>6}.{:06} igb0 R BAR0+{:#07x} STAT 0x0\n",
                2,
                100 + 57 * i,
                0x4000 + 4 * i
            ));
        }
        std::fs::write(&p, text).unwrap();
        let r = report(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert!(r.contains("sweeps=1\n"), "{r}");
        assert!(
            r.contains("sweep_us=1368.0\n") && r.contains("read_us=57.00\n"),
            "{r}"
        );
        report(Path::new("/nonexistent/x")).unwrap_err();
        std::fs::write(&p, "     1.000000 igb0 R BAR0+0x0b628 RXSTMPH 0x0\n     1.500000 igb0 R BAR0+0x0b628 RXSTMPH 0x0\n").unwrap();
        let c = count_report(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(c, "reads=2\nsecs=0.500\n");
    }
}
