// SPDX-License-Identifier: Apache-2.0
//! Kernel splats: the reports the guest kernel prints on its console when something is wrong
//! (WARN, BUG, Oops, panic, lockdep, KASAN, UBSAN, KFENCE, kmemleak, hung task, soft lockup,
//! NETDEV WATCHDOG, refcount_t, list corruption, RCU stalls), found in the console text,
//! fingerprinted by kind and culprit function (the first call-trace function that is not a
//! generic helper, as the netdev CI fingerprints crashes), decoded to file:line where the
//! harness has the objects' debug info, and judged against an ignore list kept in the repo.
//!
//! The formats recognised are the ones Linux 7.2 prints (`kernel/panic.c` `__warn()`,
//! `lib/bug.c`, `kernel/sched/core.c` `__might_resched()` / `__schedule_bug()`,
//! `kernel/locking/lockdep.c`, `mm/kasan/report.c`, `mm/kfence/report.c`, `lib/ubsan.c`,
//! `mm/kmemleak.c`, `kernel/hung_task.c`, `kernel/watchdog.c`, `arch/x86/mm/fault.c`,
//! `arch/x86/kernel/dumpstack.c`, `net/sched/sch_generic.c`, `lib/refcount.c`,
//! `lib/list_debug.c`, `kernel/rcu/tree_stall.h`), plus the older `WARNING: CPU: N PID: N at`
//! line of the 6.x kernels (trixie).

pub mod ab;
pub mod culprit;
pub mod decode;
pub mod header;
pub mod ignore;
pub mod line;
pub mod model;
pub mod open;
pub mod scanner;

pub use model::{Kind, Splat};
pub use scanner::Scanner;

/// Every splat in `text` (a whole console log), fingerprinted, the same fingerprint once
/// with its count.
pub fn scan(text: &str) -> Vec<Splat> {
    let mut s = Scanner::new();
    for l in text.lines() {
        s.feed(l);
    }
    s.finish()
}

#[cfg(test)]
pub(crate) mod samples {
    //! The report samples in `tests/fixtures/splats/`, written from the printk formats of
    //! Linux 7.2 (and 6.12 for the old WARNING line).

    /// The text of sample `name`.
    pub fn read(name: &str) -> String {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/splats")
            .join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }
}
