// SPDX-License-Identifier: Apache-2.0
//! `--sched` and `--sched-doorbell`: the threads that take doorbells (the
//! vfio-user server, the vhost-user thread whose queue workers inherit its
//! policy) run under the doorbell policy, receive threads under the data
//! path's; without `--sched-doorbell` both take `--sched`.
#![allow(clippy::unwrap_used, reason = "tests: a step that fails panics")]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::account::frame;
use common::virtio::VirtioNet;
use common::Nicemu;

/// Each thread of `n`: its name and its `/proc/PID/task/TID` directory.
fn threads(n: &Nicemu) -> Vec<(String, std::path::PathBuf)> {
    let pid = n.child.id();
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|t| {
            let dir = t.unwrap().path();
            let comm = std::fs::read_to_string(dir.join("comm")).unwrap();
            (comm.trim_end().to_owned(), dir)
        })
        .collect()
}

/// Scheduling policy (`/proc/PID/task/TID/stat` field 41) of each named
/// thread of `n`.
fn policies(n: &Nicemu) -> BTreeMap<String, u32> {
    let mut m = BTreeMap::new();
    for (name, dir) in threads(n) {
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap();
        // Fields after the name start at field 3 (state).
        let policy = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .nth(41 - 3)
            .unwrap()
            .parse()
            .unwrap();
        m.insert(name, policy);
    }
    m
}

fn start(name: &str, sched: &[&str]) -> Nicemu {
    let mut args = sched.to_vec();
    args.extend([
        "--device",
        "igb,id=igb0,socket={dir}/a.sock",
        "--device",
        "virtio-net,id=vn0,socket={dir}/v.sock",
    ]);
    Nicemu::start(name, &args, &["a.sock", "v.sock"])
}

const OTHER: u32 = libc::SCHED_OTHER as u32;
const BATCH: u32 = libc::SCHED_BATCH as u32;

#[test]
fn doorbell_threads_take_their_own_policy() {
    let n = start(
        "sched-roles",
        &["--sched", "batch", "--sched-doorbell", "normal"],
    );
    std::thread::sleep(std::time::Duration::from_millis(200));
    let p = policies(&n);
    assert_eq!(p.get("vfio-igb0"), Some(&OTHER), "{p:?}");
    assert_eq!(p.get("vhost-vn0"), Some(&OTHER), "{p:?}");
    assert_eq!(p.get("rx-igb0"), Some(&BATCH), "{p:?}");
    assert_eq!(p.get("rx-vn0"), Some(&BATCH), "{p:?}");
    assert_eq!(
        p.get("irq-igb0"),
        Some(&OTHER),
        "signallers stay normal: {p:?}"
    );
    let n = start("sched-default", &["--sched", "batch"]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let p = policies(&n);
    assert_eq!(p.get("vfio-igb0"), Some(&BATCH), "{p:?}");
    assert_eq!(p.get("vhost-vn0"), Some(&BATCH), "{p:?}");
    assert_eq!(p.get("rx-igb0"), Some(&BATCH), "{p:?}");
}

/// EEVDF slice (`se.slice` in `/proc/PID/task/TID/sched`, ns) of the thread
/// of `n` named `name`, where the kernel shows one.
fn slice(n: &Nicemu, name: &str) -> Option<u64> {
    let (_, dir) = threads(n).into_iter().find(|(t, _)| t == name)?;
    let sched = std::fs::read_to_string(dir.join("sched")).unwrap();
    let line = sched.lines().find(|l| l.starts_with("se.slice"))?;
    line.split(':').nth(1)?.trim().parse().ok()
}

#[test]
fn short_doorbell_threads_run_a_short_slice() {
    let n = start("sched-short", &["--sched-doorbell", "short"]);
    std::thread::sleep(Duration::from_millis(200));
    let p = policies(&n);
    assert_eq!(p.get("vfio-igb0"), Some(&OTHER), "{p:?}");
    assert_eq!(p.get("vhost-vn0"), Some(&OTHER), "{p:?}");
    assert_eq!(p.get("rx-igb0"), Some(&BATCH), "{p:?}");
    // Kernels before 6.12 have no custom slice: there the policy is all.
    let (doorbell, receive) = (slice(&n, "vfio-igb0"), slice(&n, "rx-igb0"));
    if doorbell.is_some() && doorbell != receive {
        assert_eq!(doorbell, Some(100_000), "a 0.1 ms slice");
        assert_eq!(slice(&n, "vhost-vn0"), Some(100_000));
        // The queue workers a vhost-user client's connection starts inherit
        // it from the vhost-user thread.
        let mut v = VirtioNet::connect_within(&n.path("v.sock"), Duration::from_secs(10));
        let (a, b) = ([0x52, 0x54, 0, 0, 0, 0x0a], [0x52, 0x54, 0, 0, 0, 0x0b]);
        assert!(v.send(&frame(a, b, 60, 1)));
        assert_eq!(
            v.drain_tx(Duration::from_secs(5)),
            1,
            "the worker took the frame"
        );
        assert_eq!(slice(&n, "vring_worker"), Some(100_000));
    }
}
