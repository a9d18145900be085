// SPDX-License-Identifier: Apache-2.0
//! Pinning QEMU's vCPU threads and nicemu's threads to host cores (`--pin`), so the host
//! scheduler does not move a guest CPU between cores or stack both vCPUs on one while
//! another core idles: vCPU i runs on core i mod N, nicemu's threads on the core after the
//! last vCPU's (mod N). vCPU threads are found by name in /proc (QEMU names them
//! `CPU i/TCG` or `CPU i/KVM`).

use std::path::Path;

/// Which host cores the threads go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinPlan {
    /// Core of vCPU i.
    pub vcpus: Vec<usize>,
    /// Core of every nicemu thread.
    pub nicemu: usize,
}

impl PinPlan {
    /// The plan for `smp` vCPUs on `host_cores` cores.
    pub fn new(smp: u32, host_cores: usize) -> PinPlan {
        let n = host_cores.max(1);
        PinPlan {
            vcpus: (0..smp as usize).map(|i| i % n).collect(),
            nicemu: smp as usize % n,
        }
    }

    /// "vCPU0→0 vCPU1→1 nicemu→0".
    pub fn describe(&self) -> String {
        let mut s: Vec<String> = self
            .vcpus
            .iter()
            .enumerate()
            .map(|(i, c)| format!("vCPU{i}→{c}"))
            .collect();
        s.push(format!("nicemu→{}", self.nicemu));
        s.join(" ")
    }
}

/// The vCPU index of a QEMU thread name ("CPU 1/TCG" → 1).
pub fn vcpu_index(comm: &str) -> Option<usize> {
    let rest = comm.trim().strip_prefix("CPU ")?;
    let (i, kind) = rest.split_once('/')?;
    matches!(kind, "TCG" | "KVM").then(|| i.parse().ok())?
}

/// (thread id, name) of every thread of process `pid`.
fn threads(pid: u32) -> Vec<(i32, String)> {
    let dir = Path::new("/proc").join(pid.to_string()).join("task");
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let tid: i32 = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            Some((tid, comm.trim().to_owned()))
        })
        .collect()
}

/// Every process below `pid` (from `/proc/PID/task/TID/children`), depth first.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let tasks = Path::new("/proc").join(p.to_string()).join("task");
        for t in std::fs::read_dir(tasks).into_iter().flatten().flatten() {
            let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for k in kids.split_whitespace().filter_map(|k| k.parse().ok()) {
                out.push(k);
                todo.push(k);
            }
        }
    }
    out
}

/// Restricts thread `tid` to `core`; false if the kernel refused.
fn set_affinity(tid: i32, core: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set, CPU_SET writes inside it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `core` is below the host's core count, far under CPU_SETSIZE (1024).
    unsafe { libc::CPU_SET(core, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; tid names a thread we started.
    unsafe {
        libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &raw const set) == 0
    }
}

/// Pins QEMU `qemu`'s vCPU threads once all `plan.vcpus` exist, and nicemu `nicemu`'s
/// threads; returns true when the vCPUs were pinned (call again until then).
pub fn apply(plan: &PinPlan, qemu: u32, nicemu: Option<u32>) -> bool {
    // Rootless, `qemu` is bwrap's pid and QEMU a descendant: look through the tree.
    let vcpus: Vec<(usize, i32)> = std::iter::once(qemu)
        .chain(descendants(qemu))
        .flat_map(threads)
        .filter_map(|(tid, comm)| vcpu_index(&comm).map(|i| (i, tid)))
        .collect();
    if vcpus.len() < plan.vcpus.len() {
        return false;
    }
    for (i, tid) in vcpus {
        if let Some(core) = plan.vcpus.get(i) {
            if !set_affinity(tid, *core) {
                log::warn!("cannot pin vCPU {i} (thread {tid}) to core {core}");
            }
        }
    }
    if let Some(pid) = nicemu {
        for (tid, _) in threads(pid) {
            set_affinity(tid, plan.nicemu);
        }
    }
    true
}

/// Host CPUs available to this process.
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(0, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_process_is_found_below_its_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let me = std::process::id();
        assert!(descendants(me).contains(&child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    fn plans_for_small_and_large_hosts() {
        let p = PinPlan::new(2, 2);
        assert_eq!(p.vcpus, [0, 1]);
        assert_eq!(p.nicemu, 0);
        assert_eq!(p.describe(), "vCPU0→0 vCPU1→1 nicemu→0");
        let p = PinPlan::new(2, 8);
        assert_eq!((p.vcpus.clone(), p.nicemu), (vec![0, 1], 2));
    }

    #[test]
    fn vcpu_thread_names() {
        assert_eq!(vcpu_index("CPU 0/TCG"), Some(0));
        assert_eq!(vcpu_index("CPU 12/KVM\n"), Some(12));
        assert_eq!(vcpu_index("qemu-system-x86"), None);
        assert_eq!(vcpu_index("CPU x/TCG"), None);
    }

    #[test]
    fn pins_a_thread_of_this_process() {
        // Our own threads stand in for QEMU's: none is named like a vCPU, so the vCPUs are
        // not found yet and nothing is pinned.
        let plan = PinPlan::new(1, 1);
        assert!(!apply(&plan, std::process::id(), None));
        let empty = PinPlan {
            vcpus: Vec::new(),
            nicemu: 0,
        };
        let t = std::thread::spawn(|| {
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            set_affinity(tid, 0)
        });
        assert!(t.join().unwrap(), "pinning a thread to core 0 works");
        assert!(apply(&empty, std::process::id(), None));
    }
}
