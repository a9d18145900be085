// SPDX-License-Identifier: Apache-2.0
//! The guest kernel's own console, apart from `/init`'s: the kernel prints on the second
//! serial port (`console=ttyS1`, QEMU `-serial file:CELLDIR/kernel.log`) at `loglevel=7`
//! (everything but debug messages, so WARN's `cut here` and call traces are there), while
//! `/init` and the scenarios talk on the first (`serial.log`): kernel lines never split a
//! scenario's marked output line, and splats are read whole. The harness reads the file as
//! QEMU writes it, scanning for splats while the guest runs ([`crate::splat::Scanner`]), so
//! a kernel panic ends the boot at once.
//! `kmemleak.verbose=1` puts what `/init`'s kmemleak scan finds there too.
//! `printk.devkmsg=on` lets `/init` write its section markers to `/dev/kmsg` without the
//! default rate limit (so each splat is known to have happened during which scenario).

use std::collections::VecDeque;
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::splat::{Scanner, Splat};

/// Kernel command-line words that put the kernel's console on the second serial port.
/// `kmemleak.verbose=1` makes a kmemleak scan print each unreferenced object there (kernels
/// without kmemleak ignore the word).
pub const CMDLINE: &str = "console=ttyS1 loglevel=7 printk.devkmsg=on kmemleak.verbose=1";
/// The kernel console's file in a cell directory.
pub const FILE: &str = "kernel.log";
/// Console lines kept for a broken boot's report.
const TAIL: usize = 40;
/// Bytes read per poll (a flooding guest cannot stall the boot loop).
const READ_MAX: usize = 4 << 20;
/// After a panic's first line, how long its last line may take before QEMU is stopped.
const PANIC_GRACE: Duration = Duration::from_secs(5);

/// QEMU's arguments for the kernel's serial port, writing to `guest_path` (the path as
/// QEMU sees it); after the `-serial` of `/init`'s console.
pub fn qemu_args(guest_path: &str) -> [String; 2] {
    ["-serial".to_owned(), format!("file:{guest_path}")]
}

/// What the kernel's console showed in one boot.
#[derive(Debug, Clone, Default)]
pub struct KernelConsole {
    /// The splats found (the same fingerprint once, counted).
    pub splats: Vec<Splat>,
    /// Reports beyond the per-console limit, not kept.
    pub splats_dropped: u32,
    /// The console's last lines.
    pub tail: Vec<String>,
    /// The kernel panicked.
    pub panicked: bool,
}

/// The kernel console file being followed.
#[derive(Debug)]
pub struct KernelLog {
    path: PathBuf,
    file: Option<std::fs::File>,
    partial: String,
    scanner: Scanner,
    tail: VecDeque<String>,
    panic_seen: Option<Instant>,
}

impl KernelLog {
    /// Follows `path` (host path; QEMU creates the file).
    pub fn new(path: PathBuf) -> Self {
        KernelLog {
            path,
            file: None,
            partial: String::new(),
            scanner: Scanner::new(),
            tail: VecDeque::new(),
            panic_seen: None,
        }
    }

    /// Reads what QEMU appended since the last call.
    pub fn poll(&mut self) {
        if self.file.is_none() {
            self.file = std::fs::File::open(&self.path).ok();
        }
        let Some(f) = self.file.as_mut() else { return };
        let mut buf = Vec::new();
        if f.take(READ_MAX as u64).read_to_end(&mut buf).is_err() || buf.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&buf);
        let tail = &mut self.tail;
        self.scanner.feed_chunk(&mut self.partial, &text, |l| {
            let l = l.trim_end_matches(['\r', '\n']);
            if l.trim().is_empty() {
                return;
            }
            if tail.len() == TAIL {
                tail.pop_front();
            }
            tail.push_back(crate::splat::line::clip(l, 240).to_owned());
        });
        if self.scanner.panicked() && self.panic_seen.is_none() {
            self.panic_seen = Some(Instant::now());
        }
    }

    /// True once the kernel panicked and its report is complete (or had its grace time):
    /// the guest will print nothing more worth waiting for.
    pub fn panic_done(&self) -> bool {
        self.scanner.panic_ended() || self.panic_seen.is_some_and(|t| t.elapsed() > PANIC_GRACE)
    }

    /// Reads the rest and ends the console.
    pub fn finish(mut self) -> KernelConsole {
        self.poll();
        if !self.partial.is_empty() {
            let last = std::mem::take(&mut self.partial);
            self.scanner.feed(&last);
        }
        let panicked = self.scanner.panicked();
        let dropped = self.scanner.dropped;
        KernelConsole {
            splats: self.scanner.finish(),
            splats_dropped: dropped,
            tail: self.tail.into_iter().collect(),
            panicked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::splat::samples::read;

    #[test]
    fn the_file_is_followed_as_it_grows_and_a_panic_is_seen_live() {
        let d = std::env::temp_dir().join(format!("nicemu-klog-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(FILE);
        let mut k = KernelLog::new(p.clone());
        k.poll(); // QEMU has not created it yet
        let text = read("null-deref-panic.log");
        let (a, b) = text.split_at(text.len() / 2);
        std::fs::write(&p, a).unwrap();
        k.poll();
        assert!(!k.panic_done());
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, b.as_bytes()).unwrap();
        k.poll();
        assert!(k.panic_done());
        let c = k.finish();
        assert!(c.panicked);
        assert_eq!(c.splats.len(), 2);
        assert!(c
            .tail
            .last()
            .unwrap()
            .contains("---[ end Kernel panic - not syncing"));
        assert!(c.tail.len() <= TAIL);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
