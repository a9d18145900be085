// SPDX-License-Identifier: Apache-2.0
//! How often the guest reached a function's registers: BAR and config-space reads and
//! writes as the vfio-user client forwarded them (one guest access each, whatever its
//! width). On real hardware a BAR read is the expensive access — a non-posted PCIe read
//! the CPU waits for, about 1 µs — while a write is posted. `ctl stats` shows them
//! (`accesses`), and the guest harness divides them by a counting window's work.

use std::sync::atomic::{AtomicU64, Ordering};

/// Register access totals of one function (since nicemu started; never cleared).
#[derive(Debug, Default)]
pub struct Accesses {
    /// Memory BAR reads.
    pub bar_reads: AtomicU64,
    /// Memory BAR writes.
    pub bar_writes: AtomicU64,
    /// Config-space reads.
    pub config_reads: AtomicU64,
    /// Config-space writes.
    pub config_writes: AtomicU64,
}

impl Accesses {
    /// Counts one access.
    pub fn add(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// The totals by name, for `ctl stats`.
    pub fn list(&self) -> Vec<(&'static str, u64)> {
        let l = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("bar_reads", l(&self.bar_reads)),
            ("bar_writes", l(&self.bar_writes)),
            ("config_reads", l(&self.config_reads)),
            ("config_writes", l(&self.config_writes)),
        ]
    }
}
