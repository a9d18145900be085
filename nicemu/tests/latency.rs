// SPDX-License-Identifier: Apache-2.0
//! `nicemu ctl latency`: traffic between an igb, an ixgbe and a virtio-net
//! port moves each port's latency histograms — doorbell or kick → frame
//! handed to the switch → pass done, a peer's frame → placed in the ring,
//! and for the virtio-net port (whose frontend assigned call eventfds) the
//! used-ring signal → call written — with counts that match the frames and
//! quantiles in order; `--reset` clears them.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::time::Duration;

use common::account::frame;
use common::nic::{Kind, Nic};
use common::virtio::VirtioNet;
use common::*;

const A: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0a];
const X: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0c];
const V: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0d];

/// `ctl --json latency DEV [--reset]`: the stages.
fn latency(n: &Nicemu, dev: &str, reset: bool) -> serde_json::Value {
    let mut args = vec!["--json", "latency", dev];
    if reset {
        args.push("--reset");
    }
    let out = n.ctl(&args);
    assert!(out.status.success(), "ctl latency {dev}: {out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    v["data"]["stages"].clone()
}

/// `ctl --json latency DEV`: the port's threads, by role, after checking
/// each one's accounting adds up.
fn threads(n: &Nicemu, dev: &str) -> std::collections::BTreeMap<String, Vec<serde_json::Value>> {
    let out = n.ctl(&["--json", "latency", dev]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut by_role = std::collections::BTreeMap::<String, Vec<serde_json::Value>>::new();
    for t in v["data"]["threads"].as_array().unwrap() {
        let q = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("{k}: {t}"));
        let slices = q("slices");
        assert_eq!(
            q("wait_per_slice_ns"),
            q("wait_ns").checked_div(slices).unwrap_or(0),
            "{t}"
        );
        assert_eq!(
            q("on_cpu_per_slice_ns"),
            q("on_cpu_ns").checked_div(slices).unwrap_or(0),
            "{t}"
        );
        assert!(q("on_cpu_ns") < 60_000_000_000, "longer than the test: {t}");
        by_role
            .entry(t["role"].as_str().unwrap().to_owned())
            .or_default()
            .push(t.clone());
    }
    by_role
}

/// Count of a stage, after checking its quantiles are in order and within
/// the test's lifetime.
fn checked(stages: &serde_json::Value, stage: &str) -> u64 {
    let s = &stages[stage];
    let q = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{stage}.{k}: {s}"));
    let (count, p50, p90, p99, max) = (q("count"), q("p50"), q("p90"), q("p99"), q("max"));
    assert!(p50 <= p90 && p90 <= p99 && p99 <= max, "{stage}: {s}");
    assert!(max < 60_000_000_000, "{stage}: longer than the test: {s}");
    if count > 0 {
        assert!(max > 0 && q("mean") <= max, "{stage}: {s}");
    } else {
        assert_eq!(max, 0, "{stage}: {s}");
    }
    count
}

#[test]
fn traffic_moves_each_ports_latency_histograms_and_reset_clears_them() {
    let n = Nicemu::start(
        "latency",
        &[
            "--device",
            "igb,id=igb0,socket={dir}/a.sock,mac=52:54:00:00:00:0a",
            "--device",
            "ixgbe,id=ix0,socket={dir}/x.sock,mac=52:54:00:00:00:0c",
            "--device",
            "virtio-net,id=vn0,socket={dir}/v.sock,mac=52:54:00:00:00:0d",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["a.sock", "x.sock", "v.sock", "ctl.sock"],
    );
    let mut a = Nic::open(&n, Kind::Igb, "a.sock");
    let mut x = Nic::open(&n, Kind::Ixgbe, "x.sock");
    let mut v = VirtioNet::connect_within(&n.path("v.sock"), Duration::from_secs(10));
    // Set-up register writes sent no frame: no doorbell stage moved.
    let idle = latency(&n, "igb0", false);
    assert_eq!(checked(&idle, "doorbell_to_wire"), 0, "{idle}");
    assert_eq!(checked(&idle, "doorbell_to_done"), 0, "{idle}");
    // Every MAC learned, then a clean start.
    a.send(&frame(X, A, 60, 1));
    x.send(&frame(V, X, 60, 1));
    assert!(v.send(&frame(A, V, 60, 1)));
    std::thread::sleep(Duration::from_millis(200));
    a.harvest();
    x.harvest();
    v.harvest_rx();
    v.harvest_tx();
    for dev in ["igb0", "ix0", "vn0"] {
        latency(&n, dev, true);
    }
    const ROUNDS: u64 = 30;
    for round in 0..ROUNDS as u8 {
        a.send(&frame(X, A, 60, round)); // one doorbell, one frame
        x.send(&frame(V, X, 60, round));
        assert!(v.send(&frame(A, V, 60, round)));
        std::thread::sleep(Duration::from_millis(2));
        a.harvest();
        x.harvest();
        v.harvest_rx();
        v.harvest_tx();
    }
    v.drain_tx(Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(200));
    let igb = latency(&n, "igb0", false);
    let ix = latency(&n, "ix0", false);
    let vn = latency(&n, "vn0", true);
    for (dev, s) in [("igb0", &igb), ("ix0", &ix)] {
        // One frame per doorbell: one value each.
        assert_eq!(checked(s, "doorbell_to_wire"), ROUNDS, "{dev}: {s}");
        assert_eq!(checked(s, "doorbell_to_done"), ROUNDS, "{dev}: {s}");
        assert!(
            s["doorbell_to_wire"]["p50"].as_u64() <= s["doorbell_to_done"]["max"].as_u64(),
            "{dev}: a frame leaves before its pass ends: {s}"
        );
        // A peer's frame per round placed here.
        assert_eq!(checked(s, "wire_to_ring"), ROUNDS, "{dev}: {s}");
        let raised = checked(s, "raise_to_irq");
        // Every write is timed; a raise racing a write may have no time.
        assert!(
            checked(s, "irq_write") >= raised,
            "{dev}: writes timed: {s}"
        );
        checked(s, "doorbell_to_irq");
    }
    // virtio-net: kicks may take several chains each; frames in from ix0;
    // every used-ring update signalled through its call eventfds.
    let sent = checked(&vn, "doorbell_to_wire");
    assert_eq!(sent, ROUNDS, "{vn}");
    let kicks = checked(&vn, "doorbell_to_done");
    assert!((1..=ROUNDS).contains(&kicks), "{vn}");
    assert_eq!(checked(&vn, "wire_to_ring"), ROUNDS, "{vn}");
    let calls = checked(&vn, "raise_to_irq");
    assert!(calls >= 1, "calls written: {vn}");
    assert!(
        checked(&vn, "irq_write") >= calls,
        "every call's write timed: {vn}"
    );
    assert!(checked(&vn, "doorbell_to_irq") >= 1, "kick → call: {vn}");
    // The ports' threads are listed by role; a doorbell taker ran once per
    // doorbell or kick at least (the stages were read with --reset, which
    // restarts the threads' accounting too, so this is since then).
    let igb = threads(&n, "igb0");
    let names = |role: &str| -> Vec<String> {
        igb.get(role)
            .into_iter()
            .flatten()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("doorbell"), ["vfio-igb0"], "{igb:?}");
    assert_eq!(names("receive"), ["rx-igb0"], "{igb:?}");
    assert_eq!(names("signaller"), ["irq-igb0"], "{igb:?}");
    assert_eq!(names("timer"), ["timer-igb0"], "{igb:?}");
    let vn_threads = threads(&n, "vn0");
    let workers = &vn_threads["doorbell"];
    assert_eq!(
        workers.len(),
        1,
        "one queue pair, one worker: {vn_threads:?}"
    );
    assert!(
        vn_threads["receive"].len() == 2,
        "rx and rxq: {vn_threads:?}"
    );
    // Read with --reset above: cleared.
    let cleared = latency(&n, "vn0", false);
    for stage in ["doorbell_to_wire", "wire_to_ring", "raise_to_irq"] {
        assert_eq!(checked(&cleared, stage), 0, "{cleared}");
    }
    // The human table names every stage; a wire or an unknown port is refused.
    let out = n.ctl(&["latency", "igb0"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for stage in [
        "doorbell_to_wire",
        "wire_to_ring",
        "irq_write",
        "doorbell_to_irq",
        "p99",
    ] {
        assert!(text.contains(stage), "{text}");
    }
    assert!(
        text.contains("wait/slice") && text.contains("vfio-igb0"),
        "{text}"
    );
    let bad = n.ctl(&["latency", "nope"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no device 'nope'"));
}
