// SPDX-License-Identifier: Apache-2.0
//! Register access tracing (`--trace-regs[=FILE]`): one line per access with
//! time, device, direction, location, decoded register name and value.

use std::io::{LineWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use crate::error::Error;

/// Where trace lines go; shared by the devices traced into one file.
pub type TraceSink = Arc<Mutex<Box<dyn Write + Send>>>;

/// Opens a trace sink: a new file (an existing file or a symlink is
/// refused, see [`crate::outfile`]), or standard error when `path` is `None`.
pub fn open_sink(path: Option<&Path>) -> Result<TraceSink, Error> {
    Ok(match path {
        Some(p) => sink_of(crate::outfile::create_new(p)?),
        None => Arc::new(Mutex::new(Box::new(std::io::stderr()))),
    })
}

/// A trace sink writing lines into `f`.
pub fn sink_of(f: std::fs::File) -> TraceSink {
    Arc::new(Mutex::new(Box::new(LineWriter::new(f))))
}

/// Which accesses a trace keeps (`nicemu ctl trace DEV on --filter …`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceFilter {
    /// Registers whose decoded name starts with this (e.g. `RDT` keeps `RDT[3]`).
    Name(String),
    /// Offsets in `start..=end`.
    Range(u64, u64),
}

impl TraceFilter {
    /// Parses `NAME`, `0xSTART-0xEND` or a single `0xOFFSET`.
    pub fn parse(s: &str) -> Result<TraceFilter, String> {
        let num = |t: &str| {
            let t = t.trim();
            t.strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16))
                .unwrap_or_else(|| t.parse())
                .map_err(|_| format!("'{t}' is not an offset (use e.g. 0x2800)"))
        };
        if s.starts_with("0x") || s.starts_with(|c: char| c.is_ascii_digit()) {
            let (a, b) = s.split_once('-').unwrap_or((s, s));
            let (a, b) = (num(a)?, num(b)?);
            if a > b {
                return Err(format!("range {s} is empty: start is above end"));
            }
            return Ok(TraceFilter::Range(a, b));
        }
        if s.is_empty() {
            return Err("empty filter".into());
        }
        Ok(TraceFilter::Name(s.to_ascii_uppercase()))
    }

    fn keeps(&self, offset: u64, name: &str) -> bool {
        match self {
            TraceFilter::Name(n) => name.starts_with(n.as_str()),
            TraceFilter::Range(a, b) => (*a..=*b).contains(&offset),
        }
    }
}

/// One device's register trace: switchable at run time, with a filter.
pub struct Tracer {
    enabled: AtomicBool,
    filter: RwLock<Option<TraceFilter>>,
    out: RwLock<TraceSink>,
    start: Instant,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("enabled", &self.enabled.load(Ordering::Relaxed))
            .finish()
    }
}

/// Direction of a traced access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Guest read.
    Read,
    /// Guest write.
    Write,
}

impl Tracer {
    /// A tracer writing to `sink`, on or off.
    pub fn new(enabled: bool, sink: TraceSink) -> Self {
        Tracer {
            enabled: AtomicBool::new(enabled),
            filter: RwLock::new(None),
            out: RwLock::new(sink),
            start: Instant::now(),
        }
    }

    /// A tracer that writes nothing until enabled (then to standard error).
    pub fn disabled() -> Self {
        Self::new(false, Arc::new(Mutex::new(Box::new(std::io::stderr()))))
    }

    /// A tracer writing to `path`, or to standard error when `path` is `None`.
    pub fn to(path: Option<&Path>) -> Result<Self, Error> {
        Ok(Self::new(true, open_sink(path)?))
    }

    /// True while tracing.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns tracing on or off, replacing the filter and, if given, the sink.
    pub fn set(&self, on: bool, filter: Option<TraceFilter>, sink: Option<TraceSink>) {
        *self.filter.write().unwrap_or_else(|e| e.into_inner()) = filter;
        if let Some(s) = sink {
            *self.out.write().unwrap_or_else(|e| e.into_inner()) = s;
        }
        self.enabled.store(on, Ordering::Relaxed);
    }

    /// Records one access. `region` is e.g. `BAR0` or `CFG`.
    pub fn record(&self, dev: &str, dir: Dir, region: &str, offset: u64, name: &str, data: &[u8]) {
        if !self.enabled() {
            return;
        }
        if let Some(f) = self
            .filter
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            if !f.keeps(offset, name) {
                return;
            }
        }
        let mut v = 0u64;
        for (i, b) in data.iter().take(8).enumerate() {
            v |= u64::from(*b) << (8 * i);
        }
        let t = self.start.elapsed();
        let d = match dir {
            Dir::Read => 'R',
            Dir::Write => 'W',
        };
        let width = data.len().min(8) * 2;
        let line = format!(
            "{:>6}.{:06} {dev} {d} {region}+{offset:#07x} {name:<14} {v:#0w$x}\n",
            t.as_secs(),
            t.subsec_micros(),
            w = width + 2
        );
        let out = self.out.read().unwrap_or_else(|e| e.into_inner()).clone();
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = o.write_all(line.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_one_decoded_line_per_access() {
        let p = std::env::temp_dir().join(format!("nicemu-trace-{}", std::process::id()));
        let t = Tracer::to(Some(&p)).unwrap();
        t.record(
            "igb0",
            Dir::Read,
            "BAR0",
            0x8,
            "STATUS",
            &0x8008_0783u32.to_le_bytes(),
        );
        t.record(
            "igb0",
            Dir::Write,
            "BAR0",
            0x2818,
            "RDT[0]",
            &[0xff, 0, 0, 0],
        );
        drop(t);
        let s = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].contains("igb0 R BAR0+0x00008 STATUS"),
            "{}",
            lines[0]
        );
        assert!(lines[0].ends_with("0x80080783"));
        assert!(lines[1].contains("W BAR0+0x02818 RDT[0]"));
        assert!(lines[1].ends_with("0x000000ff"));
        std::fs::remove_file(p).unwrap();
    }

    #[test]
    fn filters_by_name_and_range() {
        let p = std::env::temp_dir().join(format!("nicemu-trace-f-{}", std::process::id()));
        let t = Tracer::to(Some(&p)).unwrap();
        t.set(true, Some(TraceFilter::parse("rdt").unwrap()), None);
        t.record("d", Dir::Write, "BAR0", 0x2818, "RDT[0]", &[1, 0, 0, 0]);
        t.record("d", Dir::Write, "BAR0", 0x3818, "TDT[0]", &[1, 0, 0, 0]);
        t.set(
            true,
            Some(TraceFilter::parse("0x3800-0x38ff").unwrap()),
            None,
        );
        t.record("d", Dir::Write, "BAR0", 0x3818, "TDT[0]", &[2, 0, 0, 0]);
        t.record("d", Dir::Read, "BAR0", 0x8, "STATUS", &[2, 0, 0, 0]);
        t.set(false, None, None);
        t.record("d", Dir::Read, "BAR0", 0x8, "STATUS", &[2, 0, 0, 0]);
        drop(t);
        let s = std::fs::read_to_string(&p).unwrap();
        let names: Vec<&str> = s
            .lines()
            .map(|l| l.split_whitespace().nth(4).unwrap())
            .collect();
        assert_eq!(names, vec!["RDT[0]", "TDT[0]"]);
        TraceFilter::parse("0x20-0x10").unwrap_err();
        TraceFilter::parse("0xzz").unwrap_err();
        assert_eq!(TraceFilter::parse("0x8").unwrap(), TraceFilter::Range(8, 8));
        std::fs::remove_file(p).unwrap();
    }
}
