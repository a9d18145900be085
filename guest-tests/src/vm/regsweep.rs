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

/// A gap longer than this (µs) ends a sweep.
pub const SPLIT_US: f64 = 2000.0;
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

/// Time (µs) of a trace line that is a BAR0 read, else `None`.
pub fn read_time_us(line: &str) -> Option<f64> {
    let mut w = line.split_whitespace();
    let t: f64 = w.next()?.parse().ok()?;
    let _dev = w.next()?;
    (w.next()? == "R" && w.next()?.starts_with("BAR0+")).then_some(t * 1e6)
}

/// Finds the sweeps among read times (µs, ascending).
pub fn sweeps(times: &[f64]) -> Option<Sweeps> {
    let mut runs: Vec<&[f64]> = Vec::new();
    let mut start = 0;
    for i in 1..=times.len() {
        if i == times.len() || times[i] - times[i - 1] > SPLIT_US {
            if i - start >= MIN_READS {
                runs.push(&times[start..i]);
            }
            start = i;
        }
    }
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
    let times: Vec<f64> = BufReader::new(f)
        .lines()
        .take(MAX_LINES)
        .map_while(|l| l.ok())
        .filter_map(|l| read_time_us(&l))
        .collect();
    let s = sweeps(&times).ok_or_else(|| {
        format!(
            "no statistics sweep (≥ {MIN_READS} reads) among {} reads",
            times.len()
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

    #[test]
    fn two_sweeps_split_by_a_long_gap() {
        // 30 reads 50 µs apart, a 0.5 s pause, 30 reads 60 µs apart, then a lone read.
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
        assert!(report(Path::new("/nonexistent/x")).is_err());
        std::fs::write(&p, "     1.000000 igb0 R BAR0+0x0b628 RXSTMPH 0x0\n     1.500000 igb0 R BAR0+0x0b628 RXSTMPH 0x0\n").unwrap();
        let c = count_report(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!(c, "reads=2\nsecs=0.500\n");
    }
}
