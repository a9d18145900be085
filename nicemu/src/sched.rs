// SPDX-License-Identifier: Apache-2.0
//! Scheduling policy of nicemu's data-path threads (`--sched`).
//!
//! A guest rings a doorbell (TDT, RDT, EIMS…) as a posted vfio-user write: the
//! vCPU thread writes a message to nicemu's socket and runs on. The kernel wakes
//! nicemu's thread for it with a *synchronous* wake-up hint (AF_UNIX stream
//! sockets do), so the scheduler places that thread on the vCPU's core, where it
//! preempts the vCPU — once per doorbell, i.e. once per packet for small frames.
//! On a host with as many busy vCPU threads as cores (TCG guests on a CI
//! machine) this costs the guest more than the device work itself.
//!
//! Under `SCHED_BATCH` (the default) a woken data-path thread does not preempt:
//! it runs when the running thread's slice ends or a core goes idle, and then
//! serves every message queued meanwhile in one pass (the vfio-user server reads
//! all complete messages a `recvmsg` returns). Timers (interrupt moderation,
//! link timers) and the control socket keep the normal policy, so deferred
//! interrupts still fire on time.
//!
//! Measured on a 2-core host, TCG guest with 2 vCPUs, netperf UDP_STREAM -m 64
//! igb → igb: see README "Threads and locks".

use std::sync::OnceLock;

/// How data-path threads are scheduled (Linux `sched(7)` policies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum DataPathSched {
    /// `SCHED_OTHER`: woken threads may preempt the vCPU that woke them.
    Normal,
    /// `SCHED_BATCH`: no wake-up preemption; doorbells are served in batches.
    #[default]
    Batch,
    /// `SCHED_IDLE`: data-path threads run only on otherwise idle cores; lowest
    /// guest overhead, but the data path starves while every core is busy.
    Idle,
    /// `SCHED_OTHER` with the shortest custom EEVDF slice (0.1 ms,
    /// `sched_attr.sched_runtime`, Linux ≥ 6.12; no privilege needed): a
    /// woken thread's deadline comes before that of a vCPU in its default
    /// slice, so it preempts at once — where `Normal` lets the vCPU finish
    /// its slice first — and gives the core back after a short pass. Older
    /// kernels ignore the slice (the thread runs as `Normal`).
    Short,
}

impl DataPathSched {
    fn policy(self) -> libc::c_int {
        match self {
            DataPathSched::Normal => libc::SCHED_OTHER,
            DataPathSched::Batch => libc::SCHED_BATCH,
            DataPathSched::Idle => libc::SCHED_IDLE,
            DataPathSched::Short => libc::SCHED_OTHER,
        }
    }
}

/// The policy data-path threads take when they start: set once from the CLI;
/// `Normal` for library users and tests that never set it.
static POLICY: OnceLock<DataPathSched> = OnceLock::new();

/// Sets the policy for data-path threads started from now on (once per
/// process; a second call is ignored).
pub fn set_data_path_policy(p: DataPathSched) {
    if POLICY.set(p).is_err() {
        log::debug!("data-path scheduling policy already set; {p:?} ignored");
    }
}

/// The policy data-path threads take.
pub fn data_path_policy() -> DataPathSched {
    POLICY.get().copied().unwrap_or(DataPathSched::Normal)
}

/// The policy of the threads that take doorbells (vfio-user servers,
/// vhost-user queue workers) when it differs from the other data-path
/// threads' (`--sched-doorbell`).
static DOORBELL_POLICY: OnceLock<DataPathSched> = OnceLock::new();

/// Sets the policy of doorbell threads started from now on (once per
/// process; a second call is ignored). Unset, they take
/// [`data_path_policy`].
pub fn set_doorbell_policy(p: DataPathSched) {
    if DOORBELL_POLICY.set(p).is_err() {
        log::debug!("doorbell scheduling policy already set; {p:?} ignored");
    }
}

/// The policy doorbell threads take: the `--sched-doorbell` policy, else
/// the data path's.
pub fn doorbell_policy() -> DataPathSched {
    DOORBELL_POLICY
        .get()
        .copied()
        .unwrap_or_else(data_path_policy)
}

/// Called first thing by a thread that takes doorbells — a vfio-user
/// server, the vhost-user thread whose queue workers inherit its policy:
/// applies [`doorbell_policy`]. A doorbell on an idle queue is
/// latency-bound, while receive threads and wires move bulk, so the two
/// roles may be scheduled apart.
pub fn enter_doorbell_path() {
    let p = doorbell_policy();
    if let Err(e) = apply(p) {
        log::warn!("could not set {p:?} scheduling on a doorbell thread: {e}");
    }
}

/// Called first thing by each data-path thread: applies the configured policy
/// to the calling thread. A refusal (seccomp, an odd kernel) is logged and the
/// thread runs on under its inherited policy.
pub fn enter_data_path() {
    let p = data_path_policy();
    if let Err(e) = apply(p) {
        log::warn!("could not set {p:?} scheduling on a data-path thread: {e}");
    }
}

/// The slice `Short` asks for: the kernel's lower bound for a custom slice.
const SHORT_SLICE_NS: u64 = 100_000;

/// Sets policy `p` on the calling thread with `sched_setattr(2)`, keeping
/// its nice value: a custom slice for `Short`, the default slice for the
/// others (`sched_setscheduler` would keep a custom slice set before).
fn apply(p: DataPathSched) -> std::io::Result<()> {
    let size = std::mem::size_of::<libc::sched_attr>() as u32;
    // SAFETY: sched_attr is plain data; all-zero is a valid value of it.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    // SAFETY: `attr` is writable for `size` bytes; pid 0 is the calling
    // thread.
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &raw mut attr, size, 0) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    attr.size = size;
    attr.sched_policy = p.policy() as u32;
    attr.sched_flags = 0;
    attr.sched_priority = 0;
    attr.sched_runtime = if p == DataPathSched::Short {
        SHORT_SLICE_NS
    } else {
        0
    };
    // SAFETY: `attr` is a valid sched_attr whose size field is its size; pid
    // 0 is the calling thread; these policies at the thread's own nice
    // value need no privilege.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &raw const attr, 0) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current_policy() -> libc::c_int {
        // SAFETY: querying the calling thread's policy has no preconditions.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn each_policy_applies_to_the_calling_thread_only() {
        for p in [
            DataPathSched::Batch,
            DataPathSched::Idle,
            DataPathSched::Short,
            DataPathSched::Normal,
        ] {
            let (inner, outer) = std::thread::spawn(move || {
                apply(p).unwrap();
                let inner = current_policy();
                let outer = std::thread::spawn(current_policy).join().unwrap();
                (inner, outer)
            })
            .join()
            .unwrap();
            assert_eq!(inner, p.policy(), "{p:?} on the thread that asked");
            // Threads inherit the policy of their creator, as data-path threads
            // spawned by a data-path thread should.
            assert_eq!(outer, p.policy(), "{p:?} inherited");
        }
        assert_eq!(current_policy(), libc::SCHED_OTHER, "test thread untouched");
    }

    /// The calling thread's EEVDF slice in ns (`se.slice`), where the kernel
    /// shows one.
    fn current_slice() -> Option<u64> {
        let sched = std::fs::read_to_string("/proc/thread-self/sched").ok()?;
        let line = sched.lines().find(|l| l.starts_with("se.slice"))?;
        line.split(':').nth(1)?.trim().parse().ok()
    }

    #[test]
    fn short_sets_a_short_slice_and_normal_clears_it() {
        let (before, short, normal) = std::thread::spawn(|| {
            let before = current_slice();
            apply(DataPathSched::Short).unwrap();
            let short = current_slice();
            apply(DataPathSched::Normal).unwrap();
            (before, short, current_slice())
        })
        .join()
        .unwrap();
        // Kernels before 6.6 show no slice; before 6.12 it cannot be set.
        if short.is_some() && short != before {
            assert_eq!(short, Some(SHORT_SLICE_NS));
            assert_ne!(
                normal,
                Some(SHORT_SLICE_NS),
                "normal takes the default slice"
            );
        }
    }

    #[test]
    fn a_policy_keeps_the_threads_nice_value() {
        let nice = std::thread::spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() } as libc::id_t;
            // SAFETY: raising the calling thread's own nice value is always
            // allowed.
            assert_eq!(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, 5) }, 0);
            apply(DataPathSched::Short).unwrap();
            apply(DataPathSched::Batch).unwrap();
            // SAFETY: reading the calling thread's nice value.
            unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) }
        })
        .join()
        .unwrap();
        // Setting nice 0 again would need CAP_SYS_NICE from a user nicemu.
        assert_eq!(nice, 5);
    }
}
