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
}

impl DataPathSched {
    fn policy(self) -> libc::c_int {
        match self {
            DataPathSched::Normal => libc::SCHED_OTHER,
            DataPathSched::Batch => libc::SCHED_BATCH,
            DataPathSched::Idle => libc::SCHED_IDLE,
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

fn apply(p: DataPathSched) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param for the call's duration; pid 0 is
    // the calling thread, and these three policies need no privilege.
    let r = unsafe { libc::sched_setscheduler(0, p.policy(), &raw const param) };
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
}
