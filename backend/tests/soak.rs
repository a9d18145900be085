// SPDX-License-Identifier: Apache-2.0
//! Soak (`ci/soak`, or `cargo test --release -p nicemu --test soak -- --ignored
//! --nocapture`): SOAK_SECS (default 600) of traffic between two igb functions
//! driven over vfio-user, with link flaps, function resets and client
//! reconnects, next to an ixgbe function that is reset and reconnected and a
//! virtio-net port whose vhost-user frontend connects, negotiates and leaves
//! again and whose link flaps. nicemu's RSS and open fds are sampled and must
//! stay flat; frames are conserved at the switch (every frame a port sent is
//! delivered to or dropped at its peer's queue, counted), and the devices'
//! own counters are compared with what the switch handed them.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use common::*;
use vfio_user::Client;

const MAC: [[u8; 6]; 2] = [[0x52, 0x54, 0, 0, 0, 0xa], [0x52, 0x54, 0, 0, 0, 0xb]];

fn frame(dst: [u8; 6], src: [u8; 6], len: usize) -> Vec<u8> {
    let mut f = vec![0x5a; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}

/// One igb function as a driver holds it: client, RAM, ring positions.
struct Igb {
    sock: &'static str,
    c: Option<Client>,
    ram: Ram,
    tx: u32,
    posted: u64,
}

impl Igb {
    fn open(n: &Nicemu, sock: &'static str, ram: &str) -> Igb {
        let mut c = n.client(sock);
        let mut ram = Ram::new(&n.dir, ram, 1 << 20);
        ram.map(&mut c);
        setup_queue0(&mut c, &mut ram);
        Igb {
            sock,
            c: Some(c),
            ram,
            tx: 0,
            posted: 0,
        }
    }

    fn c(&mut self) -> &mut Client {
        self.c.as_mut().unwrap()
    }

    /// A new client (the old one's connection ends first: nicemu serves one
    /// client at a time, and resets the function in between), set up again.
    fn reconnect(&mut self, n: &Nicemu) {
        self.c = None;
        let mut c = n.client(self.sock);
        self.ram.map(&mut c);
        self.c = Some(c);
        self.restart();
    }

    fn restart(&mut self) {
        let c = self.c.as_mut().unwrap();
        setup_queue0(c, &mut self.ram);
        self.tx = 0;
    }

    fn send(&mut self, f: &[u8]) {
        // The queue is processed during the tail write: the ring never fills.
        let c = self.c.as_mut().unwrap();
        send(c, &mut self.ram, self.tx, f);
        self.tx = (self.tx + 1) % 8;
        self.posted += 1;
    }

    /// Gives every used receive descriptor back (the driver's refill).
    fn refill(&mut self) {
        let head = rd(self.c(), 0x2810);
        for i in 0..8u64 {
            self.ram
                .put(RX_RING + i * 16, &(RX_BUF + i * 2048).to_le_bytes());
            self.ram.put(RX_RING + i * 16 + 8, &0u64.to_le_bytes());
        }
        let c = self.c.as_mut().unwrap();
        wr(c, 0x2818, (head + 7) % 8);
    }
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
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
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

fn stats(n: &Nicemu, dev: &str) -> serde_json::Value {
    let out = n.ctl(&["--json", "stats", dev]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["data"].clone()
}

fn counter(s: &serde_json::Value, name: &str) -> u64 {
    s["counters"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|kv| kv[0] == name)
        .and_then(|kv| kv[1].as_u64())
        .unwrap_or(0)
}

/// A vhost-user frontend that connects, asks for the features and leaves.
fn vhost_visit(n: &Nicemu) -> bool {
    let Ok(mut f) = UnixStream::connect(n.path("vn.sock")) else {
        return false;
    };
    let _ = f.set_read_timeout(Some(Duration::from_secs(5)));
    let mut m = Vec::new();
    for v in [1u32, 1, 0] {
        m.extend_from_slice(&v.to_le_bytes());
    }
    let mut reply = [0u8; 20];
    f.write_all(&m).is_ok() && f.read_exact(&mut reply).is_ok()
}

#[test]
#[ignore = "long: run by ci/soak"]
fn soak() {
    let secs: u64 = std::env::var("SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    let n = Nicemu::start(
        "soak",
        &[
            "--device",
            "igb,id=igb0,socket={dir}/a.sock,mac=52:54:00:00:00:0a",
            "--device",
            "igb,id=igb1,socket={dir}/b.sock,mac=52:54:00:00:00:0b",
            "--device",
            "ixgbe,id=ix0,socket={dir}/x.sock",
            "--device",
            "virtio-net,id=vn0,socket={dir}/vn.sock,queues=2",
            "--control",
            "{dir}/ctl.sock",
        ],
        &["a.sock", "b.sock", "x.sock", "vn.sock", "ctl.sock"],
    );
    let pid = n.child.id();
    let mut a = Igb::open(&n, "a.sock", "ram-a");
    let mut b = Igb::open(&n, "b.sock", "ram-b");
    let mut ix = n.client("x.sock");
    let (fa, fb) = (frame(MAC[1], MAC[0], 60), frame(MAC[0], MAC[1], 1514));
    let t0 = Instant::now();
    let mut samples = Vec::new();
    let mut events = [0u64; 5];
    let mut vhost_ok = 0u64;
    let mut last_event = 0u64;
    while t0.elapsed().as_secs() < secs {
        for _ in 0..8 {
            a.send(&fa);
            b.send(&fb);
        }
        a.refill();
        b.refill();
        let s = t0.elapsed().as_secs();
        if s == last_event {
            continue;
        }
        last_event = s;
        if s.is_multiple_of(10) {
            // Sampled in a quiet moment: the last event was a second ago.
            std::thread::sleep(Duration::from_millis(500));
            samples.push((s, rss_fds(pid)));
        }
        if s.is_multiple_of(5) {
            let down = n.ctl(&["link", "igb1", "down"]).status.success();
            std::thread::sleep(Duration::from_millis(50));
            let up = n.ctl(&["link", "igb1", "up"]).status.success();
            assert!(down && up);
            events[0] += 1;
        }
        if s.is_multiple_of(7) {
            a.reconnect(&n);
            events[1] += 1;
        }
        if s.is_multiple_of(11) {
            b.c().reset().unwrap();
            b.restart();
            events[2] += 1;
        }
        if s.is_multiple_of(3) {
            vhost_ok += u64::from(vhost_visit(&n));
            if s.is_multiple_of(13) {
                assert!(n.ctl(&["link", "vn0", "down"]).status.success());
                assert!(n.ctl(&["link", "vn0", "up"]).status.success());
                events[3] += 1;
            }
        }
        if s.is_multiple_of(17) {
            ix.reset().unwrap();
            let _ = rd(&mut ix, 0x8);
            drop(ix);
            ix = n.client("x.sock");
            events[4] += 1;
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    samples.push((secs, rss_fds(pid)));
    println!("soak: open fds at the end: {}", fd_kinds(pid));
    // Conservation at the switch: every frame a port sent reached its
    // peer's queue or was dropped there, counted.
    let (sa, sb) = (stats(&n, "igb0"), stats(&n, "igb1"));
    let sw = |s: &serde_json::Value, k: &str| s["switch"][k].as_u64().unwrap_or(0);
    let (sent_a, sent_b) = (sw(&sa, "tx_frames"), sw(&sb, "tx_frames"));
    let to_b = sw(&sb, "rx_frames") + sw(&sb, "rx_drops");
    let to_a = sw(&sa, "rx_frames") + sw(&sa, "rx_drops");
    let received = |s: &serde_json::Value| {
        ["GPRC", "MPC", "ROC", "RUC", "CRCERRS"]
            .iter()
            .map(|k| counter(s, k))
            .sum::<u64>()
    };
    println!("soak: {secs} s; link flaps {}, igb0 reconnects {}, igb1 resets {}, vn0 link flaps {}, ixgbe reset+reconnects {}, vhost-user sessions {vhost_ok}",
        events[0], events[1], events[2], events[3], events[4]);
    println!("soak: igb0 posted {} GPTC {} switch tx {sent_a}; igb1 posted {} GPTC {} switch tx {sent_b}",
        a.posted, counter(&sa, "GPTC"), b.posted, counter(&sb, "GPTC"));
    println!("soak: to igb1: switch delivered {} + dropped {} = {to_b} (sent {sent_a}); device received/counted {} (uncounted {})",
        sw(&sb, "rx_frames"), sw(&sb, "rx_drops"), received(&sb), sw(&sb, "rx_frames").saturating_sub(received(&sb)));
    println!("soak: to igb0: switch delivered {} + dropped {} = {to_a} (sent {sent_b}); device received/counted {} (uncounted {})",
        sw(&sa, "rx_frames"), sw(&sa, "rx_drops"), received(&sa), sw(&sa, "rx_frames").saturating_sub(received(&sa)));
    for (s, (rss, fds)) in &samples {
        println!("soak: t={s:>4} s  rss {rss} KiB  fds {fds}");
    }
    assert_eq!(
        to_b, sent_a,
        "frames igb0 sent are conserved at igb1's port"
    );
    assert_eq!(
        to_a, sent_b,
        "frames igb1 sent are conserved at igb0's port"
    );
    assert_eq!(
        a.posted,
        counter(&sa, "GPTC"),
        "every frame posted on igb0 was transmitted"
    );
    // Flat: the last third of the run holds no more RSS (+8 MiB) and no
    // more fds (+4) than the first third after warm-up did at most.
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
    let (st, _) = n.stop();
    assert!(st.success());
}
