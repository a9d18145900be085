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

/// How the threads that take doorbells (vfio-user servers, vhost-user queue
/// workers) are scheduled (`--sched-doorbell`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DoorbellSched {
    /// By the gaps between the thread's doorbells ([`doorbell_arrived`]):
    /// `SCHED_OTHER` while they are sparse (a request/response exchange: the
    /// doorbell is latency-bound and the vCPU that rang it is about to idle),
    /// `SCHED_BATCH` while they come close together (bulk: one wake-up serves
    /// many).
    Adaptive,
    /// `SCHED_OTHER` always.
    Normal,
    /// `SCHED_BATCH` always.
    Batch,
    /// `SCHED_IDLE` always.
    Idle,
}

impl From<DataPathSched> for DoorbellSched {
    fn from(p: DataPathSched) -> Self {
        match p {
            DataPathSched::Normal => DoorbellSched::Normal,
            DataPathSched::Batch => DoorbellSched::Batch,
            DataPathSched::Idle => DoorbellSched::Idle,
        }
    }
}

/// The policy of the threads that take doorbells (vfio-user servers,
/// vhost-user queue workers) when it differs from the other data-path
/// threads' (`--sched-doorbell`).
static DOORBELL_POLICY: OnceLock<DoorbellSched> = OnceLock::new();

/// Sets the policy of doorbell threads started from now on (once per
/// process; a second call is ignored). Unset, they take
/// [`doorbell_policy`]'s default.
pub fn set_doorbell_policy(p: DoorbellSched) {
    if DOORBELL_POLICY.set(p).is_err() {
        log::debug!("doorbell scheduling policy already set; {p:?} ignored");
    }
}

/// The policy doorbell threads take: the `--sched-doorbell` policy; unset,
/// `Adaptive` when the data path runs batch (nicemu's default) and the data
/// path's policy otherwise (`--sched normal` or `idle` covers doorbells too).
pub fn doorbell_policy() -> DoorbellSched {
    DOORBELL_POLICY
        .get()
        .copied()
        .unwrap_or_else(|| match data_path_policy() {
            DataPathSched::Batch => DoorbellSched::Adaptive,
            p => p.into(),
        })
}

/// Called first thing by a thread that takes doorbells — a vfio-user
/// server, the vhost-user thread whose queue workers inherit its policy:
/// applies [`doorbell_policy`] (`Adaptive` starts as `SCHED_OTHER`: a quiet
/// queue's first doorbell is latency-bound). A doorbell on an idle queue is
/// latency-bound, while receive threads and wires move bulk, so the two
/// roles may be scheduled apart.
pub fn enter_doorbell_path() {
    let p = match doorbell_policy() {
        DoorbellSched::Adaptive | DoorbellSched::Normal => DataPathSched::Normal,
        DoorbellSched::Batch => DataPathSched::Batch,
        DoorbellSched::Idle => DataPathSched::Idle,
    };
    if let Err(e) = apply(p) {
        log::warn!("could not set {p:?} scheduling on a doorbell thread: {e}");
    }
}

/// The mean gap between doorbells above which an adaptive doorbell thread
/// sleeps under `SCHED_OTHER` (so the next doorbell's wake-up may preempt).
pub const SPARSE_GAP_NS: u64 = 120_000;

/// The mean gap below which it sleeps under `SCHED_BATCH` (between the two
/// it keeps its policy, so a rate near one bound does not flip it each time).
pub const DENSE_GAP_NS: u64 = 60_000;

/// A single gap counts as at most this much: after a long quiet spell the
/// first few doorbells of a burst already bring the mean down.
const GAP_CAP_NS: u64 = 1_000_000;

/// An adaptive doorbell thread's view of its doorbells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GapTracker {
    last_ns: u64,
    /// Exponentially weighted mean of the gaps (weight 1/8 per doorbell).
    mean_gap_ns: u64,
    /// The policy the thread sleeps under (None until the first decision).
    batch: Option<bool>,
}

impl GapTracker {
    /// A doorbell arrived at `now_ns`: the policy to switch to, if any.
    pub fn arrived(&mut self, now_ns: u64) -> Option<DataPathSched> {
        if self.last_ns == 0 {
            self.last_ns = now_ns;
            self.mean_gap_ns = GAP_CAP_NS;
            return None;
        }
        let gap = now_ns.saturating_sub(self.last_ns).min(GAP_CAP_NS);
        self.last_ns = now_ns;
        self.mean_gap_ns = self.mean_gap_ns - self.mean_gap_ns / 8 + gap / 8;
        let want_batch = if self.mean_gap_ns < DENSE_GAP_NS {
            true
        } else if self.mean_gap_ns > SPARSE_GAP_NS {
            false
        } else {
            return None;
        };
        if self.batch == Some(want_batch) {
            return None;
        }
        self.batch = Some(want_batch);
        Some(if want_batch {
            DataPathSched::Batch
        } else {
            DataPathSched::Normal
        })
    }
}

thread_local! {
    /// This doorbell thread's gaps, when its policy is adaptive.
    static GAPS: std::cell::Cell<GapTracker> = const {
        std::cell::Cell::new(GapTracker { last_ns: 0, mean_gap_ns: 0, batch: None })
    };
}

/// A doorbell (a BAR write, a kick) arrived at `now_ns` on the calling
/// thread: under the adaptive doorbell policy, the thread switches between
/// `SCHED_OTHER` and `SCHED_BATCH` by the mean gap between its doorbells
/// ([`SPARSE_GAP_NS`], [`DENSE_GAP_NS`]); the policy it then sleeps under
/// decides whether the next doorbell's wake-up preempts the vCPU that rang
/// it. A switch is one `sched_setscheduler` call; most doorbells make none.
pub fn doorbell_arrived(now_ns: u64) {
    if doorbell_policy() != DoorbellSched::Adaptive {
        return;
    }
    let mut g = GAPS.get();
    let change = g.arrived(now_ns);
    GAPS.set(g);
    if let Some(p) = change {
        if let Err(e) = apply(p) {
            log::debug!("adaptive doorbell policy: could not switch to {p:?}: {e}");
        }
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

    /// Feeds `n` doorbells `gap_us` apart; the last switch asked for.
    fn feed(g: &mut GapTracker, t: &mut u64, n: usize, gap_us: u64) -> Option<DataPathSched> {
        let mut last = None;
        for _ in 0..n {
            *t += gap_us * 1000;
            if let Some(p) = g.arrived(*t) {
                last = Some(p);
            }
        }
        last
    }

    #[test]
    fn sparse_doorbells_sleep_normal_dense_ones_batch() {
        let (mut g, mut t) = (GapTracker::default(), 1_000_000_000u64);
        // Request/response: a doorbell every 600 µs.
        assert_eq!(feed(&mut g, &mut t, 20, 600), Some(DataPathSched::Normal));
        assert_eq!(
            feed(&mut g, &mut t, 20, 600),
            None,
            "no switch while it stays so"
        );
        // A bulk stream: one every 30 µs; within a few dozen doorbells.
        assert_eq!(feed(&mut g, &mut t, 40, 30), Some(DataPathSched::Batch));
        assert_eq!(feed(&mut g, &mut t, 100, 30), None);
        // A few long gaps in a stream (the sender descheduled) do not flip it.
        assert_eq!(feed(&mut g, &mut t, 1, 500), None);
        assert_eq!(feed(&mut g, &mut t, 10, 30), None);
        // Between the bounds it keeps what it has.
        assert_eq!(feed(&mut g, &mut t, 200, 90), None);
        // Back to request/response.
        assert_eq!(feed(&mut g, &mut t, 30, 600), Some(DataPathSched::Normal));
    }

    #[test]
    fn a_gap_counts_at_most_the_cap_and_time_going_back_is_no_gap() {
        let (mut g, mut t) = (GapTracker::default(), 5_000u64);
        g.arrived(t);
        t += 3_600_000_000_000; // an hour idle
        g.arrived(t);
        assert_eq!(g.mean_gap_ns, GAP_CAP_NS);
        g.arrived(t - 10); // an earlier clock reading: gap 0
        assert!(g.mean_gap_ns < GAP_CAP_NS);
        // From the cap, a burst reaches batch within 25 doorbells.
        assert_eq!(feed(&mut g, &mut t, 25, 10), Some(DataPathSched::Batch));
    }

    #[test]
    fn an_adaptive_thread_switches_its_own_policy() {
        std::thread::spawn(|| {
            let mut g = GapTracker::default();
            let mut t = 1u64;
            for (gap_us, want) in [(600, libc::SCHED_OTHER), (20, libc::SCHED_BATCH)] {
                let p = feed(&mut g, &mut t, 60, gap_us).unwrap();
                apply(p).unwrap();
                assert_eq!(current_policy(), want);
            }
        })
        .join()
        .unwrap();
    }
}
