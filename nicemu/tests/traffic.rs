// SPDX-License-Identifier: Apache-2.0
//! Frames between the three kinds of port — an igb and an ixgbe function
//! driven over vfio-user, a virtio-net port driven over vhost-user by the
//! `vhost` crate's frontend — each way, with frames too long for the
//! receiver and a receive ring left full: every frame a port sent reached
//! another port and every frame a port was handed is in its guest's ring or
//! counted by a named drop counter, and the drivers found exactly the
//! frames the devices say they placed.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::time::{Duration, Instant};

use common::account::{frame, Account};
use common::nic::{Kind, Nic};
use common::virtio::VirtioNet;
use common::*;

const A: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0a];
const X: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0c];
const V: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0d];
const DEVS: [&str; 3] = ["igb0", "ix0", "vn0"];

fn start(name: &str) -> Nicemu {
    Nicemu::start(
        name,
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
    )
}

/// Reads every port until each one's received frames balance (frames
/// queued in the switch are still on their way), at most 10 s.
fn settled(n: &Nicemu, base: &[Account; 3]) -> [Account; 3] {
    let t = Instant::now();
    loop {
        let now = DEVS.map(|d| Account::read(n, d));
        let d: Vec<Account> = now.iter().zip(base).map(|(a, b)| a.since(b)).collect();
        if d.iter().all(Account::rx_balanced) || t.elapsed() > Duration::from_secs(10) {
            return [d[0].clone(), d[1].clone(), d[2].clone()];
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn frames_between_igb_ixgbe_and_virtio_net_are_conserved_and_counted() {
    let n = start("traffic");
    let mut a = Nic::open(&n, Kind::Igb, "a.sock");
    let mut x = Nic::open(&n, Kind::Ixgbe, "x.sock");
    let mut v = VirtioNet::connect_within(&n.path("v.sock"), Duration::from_secs(10));
    // Every MAC learned (these frames flood), then counting starts.
    assert!(a.send(&frame(X, A, 60, 1)));
    assert!(x.send(&frame(V, X, 60, 1)));
    assert!(v.send(&frame(A, V, 60, 1)));
    std::thread::sleep(Duration::from_millis(200));
    let (_, _) = (a.harvest(), x.harvest());
    v.harvest_rx();
    v.harvest_tx();
    let base = DEVS.map(|d| Account::read(&n, d));
    let (a0, x0) = (a.received, x.received);
    let mut v_received = 0u64;
    let mut v_sent = 0u64;
    for round in 0..40u8 {
        assert!(a.send(&frame(X, A, 60, round)));
        assert!(a.send(&frame(V, A, 1514, round)));
        assert!(x.send(&frame(A, X, 1514, round)));
        assert!(x.send(&frame(V, X, 60, round)));
        for f in [frame(A, V, 60, round), frame(X, V, 1514, round)] {
            v_sent += u64::from(v.send(&f));
        }
        // Longer than either receiver takes without jumbo frames: ROC.
        v_sent += u64::from(v.send(&frame(A, V, 1600, round)));
        v_sent += u64::from(v.send(&frame(X, V, 1600, round)));
        std::thread::sleep(Duration::from_millis(2));
        // igb0's ring is left full for the last rounds: MPC.
        if round < 20 {
            a.harvest();
        }
        x.harvest();
        v_received += v.harvest_rx().len() as u64;
        v.harvest_tx();
    }
    v.drain_tx(Duration::from_secs(5));
    let [da, dx, dv] = settled(&n, &base);
    x.harvest();
    v_received += v.harvest_rx().len() as u64;
    for (dev, d) in DEVS.iter().zip([&da, &dx, &dv]) {
        assert!(
            d.rx_balanced(),
            "{dev}: frames handed to it unaccounted: {d:?}"
        );
        assert_eq!(d.switch_rx_drops, 0, "{dev}: {d:?}");
    }
    // Every frame sent reached the port it was addressed to.
    assert_eq!((da.tx_taken, da.switch_tx), (80, 80), "igb0 sent: {da:?}");
    assert_eq!((dx.tx_taken, dx.switch_tx), (80, 80), "ixgbe sent: {dx:?}");
    assert_eq!(v_sent, 160, "the transmit queue never filled");
    assert_eq!(
        (dv.tx_taken, dv.switch_tx),
        (v_sent, v_sent),
        "virtio sent: {dv:?}"
    );
    assert_eq!(da.switch_rx, 40 + 80, "to igb0: {da:?}");
    assert_eq!(dx.switch_rx, 40 + 80, "to ixgbe: {dx:?}");
    assert_eq!(dv.switch_rx, 80, "to virtio: {dv:?}");
    // What was dropped, by name; what was placed, the drivers found.
    assert_eq!(da.rx_drops["ROC"], 40, "{da:?}");
    assert_eq!(dx.rx_drops["ROC"], 40, "{dx:?}");
    assert!(da.rx_drops["MPC"] > 0, "igb0's full ring: {da:?}");
    assert_eq!(
        da.rx_dropped(),
        da.rx_drops["ROC"] + da.rx_drops["MPC"],
        "{da:?}"
    );
    assert_eq!(dx.rx_dropped(), 40, "{dx:?}");
    assert_eq!(dv.rx_dropped(), 0, "{dv:?}");
    assert!(
        a.received - a0 <= da.delivered,
        "igb0 found more than placed"
    );
    assert_eq!(x.received - x0, dx.delivered, "ixgbe");
    assert_eq!(v_received, dv.delivered, "virtio");
    assert_eq!(dv.delivered, 80);
}

/// Frames to a port without link, to a disabled receiver and from a port
/// without link: the first two are counted where the hardware counts none
/// (`rx_no_link`, `rx_disabled`, a virtio-net port's `rx_link_drops`), the
/// last wait in the ring, as on the 82599, and leave when the link is back.
#[test]
fn frames_around_link_flaps_and_a_disabled_receiver_are_counted() {
    let n = start("traffic-flaps");
    let mut a = Nic::open(&n, Kind::Igb, "a.sock");
    let mut x = Nic::open(&n, Kind::Ixgbe, "x.sock");
    let mut v = VirtioNet::connect_within(&n.path("v.sock"), Duration::from_secs(10));
    assert!(a.send(&frame(X, A, 60, 1)));
    assert!(x.send(&frame(V, X, 60, 1)));
    assert!(v.send(&frame(A, V, 60, 1)));
    std::thread::sleep(Duration::from_millis(200));
    a.harvest();
    x.harvest();
    v.harvest_rx();
    v.harvest_tx();
    let base = DEVS.map(|d| Account::read(&n, d));
    let a0 = a.received;
    let ctl = |args: &[&str]| assert!(n.ctl(args).status.success(), "ctl {args:?}");
    // ixgbe without link: frames to it are dropped, its own wait.
    ctl(&["link", "ix0", "down"]);
    let head = x.tx_head();
    for i in 0..5 {
        assert!(a.send(&frame(X, A, 60, i)));
    }
    for i in 0..3 {
        assert!(x.send(&frame(A, X, 60, i)));
    }
    assert_eq!(x.tx_head(), head, "held without link");
    ctl(&["link", "ix0", "up"]);
    assert_eq!(x.tx_head(), head + 3, "sent at link up");
    // igb0's receiver off: frames to it are dropped.
    a.harvest();
    a.receiver(false);
    for i in 0..4 {
        assert!(x.send(&frame(A, X, 60, i)));
    }
    a.receiver(true);
    // virtio-net without link: its frontend is cut off, frames dropped.
    ctl(&["link", "vn0", "down"]);
    for i in 0..6 {
        assert!(a.send(&frame(V, A, 60, i)));
    }
    ctl(&["link", "vn0", "up"]);
    drop(v);
    let mut v = VirtioNet::connect_within(&n.path("v.sock"), Duration::from_secs(10));
    let [da, dx, dv] = settled(&n, &base);
    for (dev, d) in DEVS.iter().zip([&da, &dx, &dv]) {
        assert!(
            d.rx_balanced(),
            "{dev}: frames handed to it unaccounted: {d:?}"
        );
    }
    assert_eq!(dx.rx_drops["rx_no_link"], 5, "{dx:?}");
    assert_eq!((dx.tx_taken, dx.switch_tx), (7, 7), "{dx:?}");
    assert_eq!(da.rx_drops["rx_disabled"], 4, "{da:?}");
    assert_eq!(da.delivered, 3, "{da:?}");
    a.harvest();
    assert_eq!(a.received - a0, 3, "the frames held at ix0 arrived");
    assert_eq!(dv.rx_drops["rx_link_drops"], 6, "{dv:?}");
    assert!(v.harvest_rx().is_empty());
}
