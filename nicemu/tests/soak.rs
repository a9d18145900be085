// SPDX-License-Identifier: Apache-2.0
//! Soak (`ci/soak`, or `SOAK_SECS=600 cargo test --release -p nicemu --test
//! soak -- --ignored --nocapture`): SOAK_SECS (default 600) of traffic among
//! two igb functions and an ixgbe function driven over vfio-user and a
//! virtio-net port driven over vhost-user (`tests/common`), each sending to
//! two ports of other kinds, with link flaps under traffic, function resets,
//! client reconnects, a receiver turned off under traffic and frames longer
//! than the receivers take. nicemu's RSS and open fds are sampled and must
//! stay flat. Frames are conserved, for every port: each frame the driver
//! handed the device was sent into the switch or dropped and counted by
//! name, each frame the switch handed the device is in the guest's ring or
//! counted by name, and the switch delivered every frame it was given.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::account::{frame, Account};
use common::nic::{Kind, Nic};
use common::virtio::VirtioNet;
use common::*;

const A: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0a];
const B: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0b];
const X: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0c];
const V: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0d];
const DEVS: [&str; 4] = ["igb0", "igb1", "ix0", "vn0"];

fn start() -> Nicemu {
    Nicemu::start(
        "soak",
        &[
            "--device",
            "igb,id=igb0,socket={dir}/a.sock,mac=52:54:00:00:00:0a",
            "--device",
            "igb,id=igb1,socket={dir}/b.sock,mac=52:54:00:00:00:0b",
            "--device",
            "ixgbe,id=ix0,socket={dir}/x.sock,mac=52:54:00:00:00:0c",
            "--device",
            "virtio-net,id=vn0,socket={dir}/v.sock,mac=52:54:00:00:00:0d,queues=2",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["a.sock", "b.sock", "x.sock", "v.sock", "ctl.sock"],
    )
}

/// VmRSS (KiB) and open descriptors of a process.
fn rss_fds(pid: u32) -> (u64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    (rss, fds)
}

/// Open descriptors of a process by kind (socket, eventfd, file…).
fn fd_kinds(pid: u32) -> String {
    let mut kinds = BTreeMap::<String, usize>::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let t = std::fs::read_link(e.path()).unwrap_or_default();
        let t = t.to_string_lossy();
        let k = t.split(':').next().unwrap_or("").to_string();
        *kinds.entry(k).or_default() += 1;
    }
    format!("{kinds:?}")
}

/// Events done, by name.
#[derive(Default, Debug)]
struct Events(BTreeMap<&'static str, u64>);

impl Events {
    fn add(&mut self, what: &'static str) {
        *self.0.entry(what).or_default() += 1;
    }
}

/// The four drivers and what the virtio-net one did (the NIC drivers count
/// their own).
struct Drivers {
    a: Nic,
    b: Nic,
    x: Nic,
    /// `None` only while reconnecting.
    v: Option<VirtioNet>,
    /// Transmit chains the virtio-net driver posted.
    v_posted: u64,
    /// Of those, taken by the device (returned used).
    v_taken: u64,
    /// Posted and never taken (the connection ended first).
    v_abandoned: u64,
    /// Frames the virtio-net driver could not post (its queue was full).
    v_queue_full: u64,
    /// Frames the virtio-net driver received.
    v_received: u64,
    /// The virtio-net port is cut off (link down): nothing is posted.
    v_down: bool,
}

impl Drivers {
    fn v_send(&mut self, f: &[u8]) {
        if self.v_down {
            return;
        }
        if self.v().send(f) {
            self.v_posted += 1;
        } else {
            self.v_queue_full += 1;
        }
    }

    /// One round: every port sends to two ports of other kinds; every
    /// driver takes what it received.
    fn round(&mut self, i: u64) {
        let fill = i as u8;
        self.a.send(&frame(X, A, 60, fill));
        self.a.send(&frame(B, A, 1514, fill));
        self.b.send(&frame(A, B, 60, fill));
        self.b.send(&frame(V, B, 1514, fill));
        self.x.send(&frame(V, X, 60, fill));
        self.x.send(&frame(A, X, 1514, fill));
        self.v_send(&frame(B, V, 60, fill));
        self.v_send(&frame(X, V, 1514, fill));
        if i.is_multiple_of(16) {
            // Longer than an igb takes without LPE: ROC.
            self.v_send(&frame(A, V, 1600, fill));
        }
        self.harvest();
    }

    fn harvest(&mut self) {
        self.a.harvest();
        self.b.harvest();
        self.x.harvest();
        self.v_received += self.v().harvest_rx().len() as u64;
        self.v_taken += self.v().harvest_tx();
    }

    fn v(&mut self) -> &mut VirtioNet {
        self.v.as_mut().expect("connected")
    }

    /// Ends the virtio-net driver's connection after its posted frames
    /// were taken (those never taken are counted as abandoned).
    fn v_quiesce(&mut self) {
        self.v_taken += self.v().drain_tx(Duration::from_secs(5));
        self.v_abandoned += u64::from(self.v().tx_in_flight());
        self.v_received += self.v().harvest_rx().len() as u64;
    }

    fn v_reconnect(&mut self, n: &Nicemu) {
        self.v = None;
        self.v = Some(VirtioNet::connect_within(
            &n.path("v.sock"),
            Duration::from_secs(20),
        ));
        self.v_down = false;
    }
}

/// A link flap of NIC `dev` under traffic: frames sent to it while down
/// are dropped (`rx_no_link`), frames it sends wait and leave at link up.
fn nic_flap(n: &Nicemu, dev: &str, nic: &mut Nic, peer: &mut Nic, to: [u8; 6], from: [u8; 6]) {
    assert!(n.ctl(&["link", dev, "down"]).status.success());
    for i in 0..4 {
        peer.send(&frame(to, from, 60, i));
        nic.send(&frame(from, to, 60, i));
    }
    std::thread::sleep(Duration::from_millis(20));
    assert!(n.ctl(&["link", dev, "up"]).status.success());
}

/// The events of second `s` (each runs when `s` is a multiple of its
/// period).
fn events(n: &Nicemu, d: &mut Drivers, s: u64, ev: &mut Events) {
    if s.is_multiple_of(5) {
        nic_flap(n, "igb1", &mut d.b, &mut d.a, B, A);
        ev.add("igb1 link flaps");
    }
    if s.is_multiple_of(9) {
        nic_flap(n, "ix0", &mut d.x, &mut d.a, X, A);
        ev.add("ix0 link flaps");
    }
    if s.is_multiple_of(7) {
        d.a.harvest();
        d.a.reconnect(n);
        ev.add("igb0 reconnects");
    }
    if s.is_multiple_of(11) {
        d.b.harvest();
        d.b.reset();
        ev.add("igb1 resets");
    }
    if s.is_multiple_of(17) {
        d.x.harvest();
        d.x.reset();
        d.x.reconnect(n);
        ev.add("ix0 reset+reconnects");
    }
    if s.is_multiple_of(23) {
        d.a.harvest();
        d.a.receiver(false);
        for i in 0..4 {
            d.x.send(&frame(A, X, 60, i));
        }
        std::thread::sleep(Duration::from_millis(10));
        d.a.receiver(true);
        ev.add("igb0 receiver off");
    }
    if s.is_multiple_of(13) {
        d.v_quiesce();
        assert!(n.ctl(&["link", "vn0", "down"]).status.success());
        d.v_down = true;
        for i in 0..4 {
            d.a.send(&frame(V, A, 60, i));
        }
        assert!(n.ctl(&["link", "vn0", "up"]).status.success());
        d.v_reconnect(n);
        ev.add("vn0 link flaps");
    } else if s.is_multiple_of(19) {
        d.v_quiesce();
        d.v_reconnect(n);
        ev.add("vn0 reconnects");
    }
}

/// Reads every port until each one's received frames balance (frames
/// still queued in the switch are on their way), at most 20 s.
fn settled(n: &Nicemu, base: &[Account; 4]) -> Vec<Account> {
    let t = Instant::now();
    loop {
        let d: Vec<Account> = DEVS
            .iter()
            .zip(base)
            .map(|(dev, b)| Account::read(n, dev).since(b))
            .collect();
        if d.iter().all(Account::rx_balanced) || t.elapsed() > Duration::from_secs(20) {
            return d;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// RSS and fds flat: the last third of the samples holds no more RSS
/// (+8 MiB) and no more fds (+4) than the first third did at most.
fn assert_flat(samples: &[(u64, (u64, usize))]) {
    let third = (samples.len() / 3).max(1);
    let peak = |v: &[(u64, (u64, usize))]| {
        v.iter()
            .fold((0, 0), |(r, f), (_, (rss, fds))| (r.max(*rss), f.max(*fds)))
    };
    let (early, late) = (
        peak(&samples[..third]),
        peak(&samples[samples.len() - third..]),
    );
    assert!(
        late.0 < early.0 + 8 * 1024,
        "RSS grew from {} to {} KiB",
        early.0,
        late.0
    );
    assert!(
        late.1 <= early.1 + 4,
        "fds grew from {} to {}",
        early.1,
        late.1
    );
}

/// Prints and checks the accounting of every port since the warm-up.
fn check_conservation(d: &Drivers, acc: &[Account], nic_base: [(u64, u64); 3]) {
    let [ga, gb, gx, gv] = [&acc[0], &acc[1], &acc[2], &acc[3]];
    let nics = [(&d.a, ga), (&d.b, gb), (&d.x, gx)];
    for ((dev, (nic, g)), (posted0, received0)) in DEVS.iter().zip(nics).zip(nic_base) {
        let (posted, received) = (nic.posted - posted0, nic.received - received0);
        println!(
            "soak: {dev}: sent {} (driver posted {posted}, flushed by resets {}, ring full {}); switch queue full {}; handed {} = in ring {} + dropped {} ({}); driver took {received}, {} lost to resets",
            g.switch_tx, nic.flushed, nic.ring_full, g.switch_rx_drops, g.switch_rx, g.delivered, g.rx_dropped(), g.drops_text(), g.delivered - received.min(g.delivered)
        );
        let taken = posted - nic.flushed;
        assert_eq!(
            (g.tx_taken, g.switch_tx),
            (taken, taken),
            "{dev} sent: {g:?}"
        );
        assert!(
            received <= g.delivered,
            "{dev}: driver took more than placed"
        );
    }
    let tx_dropped: u64 = gv.tx_drops.values().sum();
    println!(
        "soak: vn0: sent {} (driver posted {}, taken {}, dropped {tx_dropped}, abandoned at disconnect {}, driver's queue full {}); switch queue full {}; handed {} = in ring {} + dropped {} ({}); driver took {}",
        gv.switch_tx, d.v_posted, d.v_taken, d.v_abandoned, d.v_queue_full, gv.switch_rx_drops, gv.switch_rx, gv.delivered, gv.rx_dropped(), gv.drops_text(), d.v_received
    );
    assert_eq!(gv.tx_taken, d.v_taken, "vn0 chains taken: {gv:?}");
    assert_eq!(d.v_posted, d.v_taken + d.v_abandoned);
    assert_eq!(gv.switch_tx + tx_dropped, gv.tx_taken, "vn0 sent: {gv:?}");
    assert!(
        d.v_received <= gv.delivered,
        "vn0: driver took more than placed"
    );
    for (dev, g) in DEVS.iter().zip(acc) {
        assert!(
            g.rx_balanced(),
            "{dev}: frames handed to it unaccounted: {g:?}"
        );
    }
    let sent: u64 = acc.iter().map(|g| g.switch_tx).sum();
    let handed: u64 = acc.iter().map(|g| g.switch_rx + g.switch_rx_drops).sum();
    let queue_drops: u64 = acc.iter().map(|g| g.switch_rx_drops).sum();
    println!("soak: switch: {sent} frames in, {handed} handed to ports or dropped at full queues ({queue_drops})");
    assert_eq!(sent, handed, "every frame into the switch reached one port");
}

#[test]
#[ignore = "long: run by ci/soak"]
fn soak() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let n = start();
    let pid = n.child.id();
    let mut d = Drivers {
        a: Nic::open(&n, Kind::Igb, "a.sock"),
        b: Nic::open(&n, Kind::Igb, "b.sock"),
        x: Nic::open(&n, Kind::Ixgbe, "x.sock"),
        v: Some(VirtioNet::connect_within(
            &n.path("v.sock"),
            Duration::from_secs(20),
        )),
        v_posted: 0,
        v_taken: 0,
        v_abandoned: 0,
        v_queue_full: 0,
        v_received: 0,
        v_down: false,
    };
    // Warm-up: every MAC is learned (these frames flood), then counting starts.
    d.round(0);
    std::thread::sleep(Duration::from_millis(300));
    d.harvest();
    let base = DEVS.map(|dev| Account::read(&n, dev));
    let nic_base = [&d.a, &d.b, &d.x].map(|nic| (nic.posted, nic.received));
    let (v0_posted, v0_taken, v0_received) = (d.v_posted, d.v_taken, d.v_received);
    let t0 = Instant::now();
    let mut samples = vec![(0, rss_fds(pid))];
    let mut ev = Events::default();
    let (mut i, mut last) = (1u64, 0u64);
    while t0.elapsed().as_secs() < secs {
        d.round(i);
        i += 1;
        let s = t0.elapsed().as_secs();
        if s == last {
            continue;
        }
        last = s;
        if s.is_multiple_of(10) {
            // Sampled in a quiet moment.
            std::thread::sleep(Duration::from_millis(300));
            samples.push((s, rss_fds(pid)));
        }
        events(&n, &mut d, s, &mut ev);
    }
    d.v_quiesce();
    // An igb link that came back in the last second sends what it held
    // once autonegotiation completes (1 s).
    std::thread::sleep(Duration::from_secs(2));
    d.harvest();
    let acc = settled(&n, &base);
    d.harvest();
    samples.push((secs, rss_fds(pid)));
    d.v_posted -= v0_posted;
    d.v_taken -= v0_taken;
    d.v_received -= v0_received;
    println!("soak: {secs} s, {i} rounds; events: {:?}", ev.0);
    println!("soak: open fds at the end: {}", fd_kinds(pid));
    check_conservation(&d, &acc, nic_base);
    for (s, (rss, fds)) in &samples {
        println!("soak: t={s:>4} s  rss {rss} KiB  fds {fds}");
    }
    assert_flat(&samples);
    let (st, _) = n.stop();
    assert!(st.success());
}
