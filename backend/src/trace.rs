//! Register access tracing (`--trace-regs[=FILE]`): one line per access with
//! time, device, direction, location, decoded register name and value.

use std::io::{LineWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::error::Error;

/// A shared trace sink; cheap to check when disabled.
pub struct Tracer {
    enabled: AtomicBool,
    out: Mutex<Box<dyn Write + Send>>,
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
    /// A tracer that writes nothing until enabled.
    pub fn disabled() -> Self {
        Tracer {
            enabled: AtomicBool::new(false),
            out: Mutex::new(Box::new(std::io::sink())),
            start: Instant::now(),
        }
    }

    /// A tracer writing to `path`, or to standard error when `path` is `None`.
    pub fn to(path: Option<&Path>) -> Result<Self, Error> {
        let out: Box<dyn Write + Send> = match path {
            Some(p) => Box::new(LineWriter::new(std::fs::File::create(p).map_err(
                |source| Error::TraceFile {
                    path: p.to_path_buf(),
                    source,
                },
            )?)),
            None => Box::new(std::io::stderr()),
        };
        Ok(Tracer {
            enabled: AtomicBool::new(true),
            out: Mutex::new(out),
            start: Instant::now(),
        })
    }

    /// True while tracing.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Records one access. `region` is e.g. `BAR0` or `CFG`.
    pub fn record(&self, dev: &str, dir: Dir, region: &str, offset: u64, name: &str, data: &[u8]) {
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
        if let Ok(mut o) = self.out.lock() {
            let _ = o.write_all(line.as_bytes());
        }
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
}
