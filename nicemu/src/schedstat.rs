// SPDX-License-Identifier: Apache-2.0
//! How long a port's threads wait for a core: the time between a doorbell,
//! a kick or a frame waking a thread and the thread running is spent in the
//! host's scheduler, outside every stage nicemu can time itself (a
//! vfio-user message or an ioeventfd kick carries no send time). The
//! kernel's per-thread scheduler accounting does see it:
//! `/proc/thread-self/schedstat` holds the time the thread ran, the time it
//! was runnable but waited for a CPU (`run_delay`) and the slices it ran
//! (Linux `Documentation/scheduler/sched-stats.rst`, `/proc/PID/schedstat`).
//! For a thread that sleeps between doorbells, the wait per slice is the
//! mean wake-up → running delay.
//!
//! Each port keeps a short list of its threads by role ([`PortThreads`]);
//! `ctl latency` reads their accounting and reports the differences since
//! the last reset. Nothing is recorded on the data path: a thread registers
//! once when it starts, and a read costs one small file read per thread.

use std::sync::Mutex;

/// Threads one port lists at most (a port has a server or a worker per
/// queue pair, a receive thread or two, a signaller and a timer; more are
/// not listed).
pub const MAX_THREADS: usize = 16;

/// One thread's scheduler accounting, in nanoseconds and slices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedStat {
    /// Time spent on a CPU.
    pub on_cpu_ns: u64,
    /// Time spent runnable, waiting for a CPU.
    pub wait_ns: u64,
    /// Slices run (times the thread was switched to).
    pub slices: u64,
}

impl SchedStat {
    /// Parses the three numbers of a `schedstat` file.
    pub fn parse(text: &str) -> Option<SchedStat> {
        let mut it = text.split_ascii_whitespace().map(str::parse::<u64>);
        let (Some(Ok(on_cpu_ns)), Some(Ok(wait_ns)), Some(Ok(slices))) =
            (it.next(), it.next(), it.next())
        else {
            return None;
        };
        Some(SchedStat {
            on_cpu_ns,
            wait_ns,
            slices,
        })
    }

    /// The accounting of thread `tid` of this process, if it still runs.
    pub fn of_thread(tid: i32) -> Option<SchedStat> {
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
        Self::parse(&text)
    }

    /// What accrued between `base` and `self` (a counter that went back,
    /// as after a thread id was reused, counts from zero).
    fn since(self, base: SchedStat) -> SchedStat {
        let d = |now: u64, then: u64| if now >= then { now - then } else { now };
        SchedStat {
            on_cpu_ns: d(self.on_cpu_ns, base.on_cpu_ns),
            wait_ns: d(self.wait_ns, base.wait_ns),
            slices: d(self.slices, base.slices),
        }
    }
}

/// A listed thread and its accounting at the last reset.
#[derive(Debug, Clone)]
struct Listed {
    role: &'static str,
    tid: i32,
    base: SchedStat,
}

/// The threads serving one port, by role: `doorbell` (the vfio-user server
/// thread, a vhost-user queue worker), `receive`, `signaller`, `timer`.
#[derive(Debug, Default)]
pub struct PortThreads {
    listed: Mutex<Vec<Listed>>,
}

impl PortThreads {
    /// Lists the calling thread under `role` (once; beyond [`MAX_THREADS`]
    /// it is not listed). Threads that ended leave the list when it is read.
    pub fn enter(&self, role: &'static str) {
        let tid = crate::threads::current_tid();
        let base = SchedStat::of_thread(tid).unwrap_or_default();
        let mut l = self.listed.lock().unwrap_or_else(|e| e.into_inner());
        if l.iter().any(|t| t.tid == tid) || l.len() >= MAX_THREADS {
            return;
        }
        l.push(Listed { role, tid, base });
    }

    /// Each listed thread's accounting since the last reset: role, thread
    /// name, slices, and the time waiting for a CPU and running, in total
    /// and per slice (ns).
    pub fn to_json(&self) -> serde_json::Value {
        self.report(false)
    }

    /// [`Self::to_json`]; with `reset`, also starts each thread's
    /// accounting afresh from the very figures reported (one read each).
    pub fn report(&self, reset: bool) -> serde_json::Value {
        let mut l = self.listed.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::with_capacity(l.len());
        l.retain_mut(|t| {
            let Some(now) = SchedStat::of_thread(t.tid) else {
                return false;
            };
            let d = now.since(t.base);
            if reset {
                t.base = now;
            }
            let per = |ns: u64| ns.checked_div(d.slices).unwrap_or(0);
            let name = std::fs::read_to_string(format!("/proc/self/task/{}/comm", t.tid))
                .map(|s| s.trim_end().to_owned())
                .unwrap_or_default();
            out.push(serde_json::json!({
                "role": t.role,
                "tid": t.tid,
                "name": name,
                "slices": d.slices,
                "wait_ns": d.wait_ns,
                "on_cpu_ns": d.on_cpu_ns,
                "wait_per_slice_ns": per(d.wait_ns),
                "on_cpu_per_slice_ns": per(d.on_cpu_ns),
            }));
            true
        });
        serde_json::Value::Array(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn schedstat_lines_parse_and_bad_ones_do_not() {
        let s = SchedStat::parse("243292 182757 2\n").unwrap();
        assert_eq!((s.on_cpu_ns, s.wait_ns, s.slices), (243292, 182757, 2));
        assert_eq!(SchedStat::parse("1 2"), None);
        assert_eq!(SchedStat::parse("a b c"), None);
        assert_eq!(SchedStat::parse(""), None);
    }

    #[test]
    fn a_reused_counter_counts_from_zero() {
        let base = SchedStat {
            on_cpu_ns: 100,
            wait_ns: 50,
            slices: 10,
        };
        let now = SchedStat {
            on_cpu_ns: 30,
            wait_ns: 60,
            slices: 3,
        };
        let d = now.since(base);
        assert_eq!((d.on_cpu_ns, d.wait_ns, d.slices), (30, 10, 3));
    }

    /// The calling thread's own CPU time (`CLOCK_THREAD_CPUTIME_ID`, the
    /// scheduler's `sum_exec_runtime`: the counter schedstat's first field
    /// reports).
    fn thread_cpu() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut ts) };
        assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// Burns `d` of CPU time on the calling thread. Counted on the
    /// thread's CPU clock, not the wall clock: on a virtual machine the
    /// host may steal the vCPU mid-spin, time neither schedstat field
    /// sees (CI failed once at 8.9 of 10 wall-clock ms).
    fn spin(d: Duration) {
        let t = thread_cpu();
        while thread_cpu() - t < d {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn a_listed_thread_reports_its_slices_and_leaves_when_it_ends() {
        let threads = Arc::new(PortThreads::default());
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (ran, has_run) = std::sync::mpsc::channel::<()>();
        let t = threads.clone();
        let h = std::thread::Builder::new()
            .name("sched-test".into())
            .spawn(move || {
                t.enter("doorbell");
                t.enter("doorbell"); // listed once
                for _ in 0..5 {
                    spin(Duration::from_millis(2));
                    std::thread::sleep(Duration::from_millis(1));
                }
                ran.send(()).unwrap();
                let _ = wait.recv();
            })
            .unwrap();
        has_run.recv().unwrap();
        let v = threads.to_json();
        let l = v.as_array().unwrap();
        assert_eq!(l.len(), 1, "{v}");
        assert_eq!(l[0]["role"], "doorbell");
        assert_eq!(l[0]["name"], "sched-test");
        assert!(
            l[0]["slices"].as_u64().unwrap() >= 5,
            "it slept 5 times: {v}"
        );
        // It spun 10 ms of its own CPU time: all of it is on-CPU time.
        let on = l[0]["on_cpu_ns"].as_u64().unwrap();
        assert!(on >= 10_000_000, "it ran 10 ms: {v}");
        let per = l[0]["on_cpu_per_slice_ns"].as_u64().unwrap();
        assert!(per > 0 && per <= l[0]["on_cpu_ns"].as_u64().unwrap(), "{v}");
        // A read with a reset reports the accounting so far and starts it
        // afresh: after it only what follows counts (it sleeps in recv).
        let r = threads.report(true);
        assert!(r[0]["on_cpu_ns"].as_u64().unwrap() >= on, "{r}");
        let v = threads.to_json();
        assert!(v[0]["on_cpu_ns"].as_u64().unwrap() < on, "{v}");
        go.send(()).unwrap();
        h.join().unwrap();
        assert_eq!(threads.to_json(), serde_json::json!([]), "ended: gone");
    }

    #[test]
    fn the_list_is_bounded() {
        let threads = Arc::new(PortThreads::default());
        let (entered, all_in) = std::sync::mpsc::channel::<()>();
        let hs: Vec<_> = (0..MAX_THREADS + 4)
            .map(|_| {
                let (t, entered) = (threads.clone(), entered.clone());
                let (tx, rx) = std::sync::mpsc::channel::<()>();
                let h = std::thread::spawn(move || {
                    t.enter("receive");
                    entered.send(()).unwrap();
                    let _ = rx.recv();
                });
                (h, tx)
            })
            .collect();
        for _ in 0..MAX_THREADS + 4 {
            all_in.recv().unwrap();
        }
        assert_eq!(threads.to_json().as_array().unwrap().len(), MAX_THREADS);
        for (h, tx) in hs {
            tx.send(()).unwrap();
            h.join().unwrap();
        }
    }
}
