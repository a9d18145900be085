// SPDX-License-Identifier: Apache-2.0
//! How the model scales with cores: N queue pairs of one function pair, and
//! N function pairs on one switch (one network of one `nicemu`), each
//! driven by its own thread as in `datapath` (N = 1, 2, 4, 8), igb and
//! ixgbe, 64-byte IPv4/UDP frames. The queue pairs are fed by RSS: each
//! thread's flow hashes to its own receive queue. Prints the frames/s of all
//! threads together and per CPU-second of the process (what one core moves
//! when N share the machine: a lock or a cache line the threads fight over
//! shows as fewer frames per CPU-second), and that against N = 1.
//!
//! Run: `cargo bench -p nicemu --bench scaling`. `SCALING_FRAMES=N` sets the
//! frames per thread (default 200 000).

#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{cpu_secs, frame, wait_received, Kind, Nic, QueueDriver, BATCH};
use nicemu::switch::Switch;
use nicemu_net_util::rss::{hash, HashTypes};

const SIZE: usize = 64;
const KEY: [u8; 40] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

fn mac(side: u8, i: u32) -> [u8; 6] {
    [2, side, 0, 0, 0, i as u8]
}

/// One flow per queue whose RSS hash picks a redirection entry of its own:
/// the hosts (10.0.0.h) and the table sending each to its queue.
fn steer(queues: u32, dst: [u8; 6], src: [u8; 6]) -> (Vec<u8>, [u8; 128]) {
    let types = HashTypes {
        ipv4: true,
        ..Default::default()
    };
    let mut reta = [0u8; 128];
    let mut used = [false; 128];
    let mut hosts = Vec::new();
    for h in 1..=254u8 {
        if hosts.len() == queues as usize {
            break;
        }
        let (v, _) = hash(&KEY, types, &frame(dst, src, SIZE, Some(h)));
        let entry = (v & 0x7f) as usize;
        if !used[entry] {
            used[entry] = true;
            reta[entry] = hosts.len() as u8;
            hosts.push(h);
        }
    }
    assert_eq!(hosts.len(), queues as usize, "a flow per queue");
    (hosts, reta)
}

/// Runs one driver per thread for `frames` frames each; returns frames/s
/// and frames per process CPU-second.
fn drive(drivers: Vec<QueueDriver<'_>>, frames: u64) -> (f64, f64) {
    let batches = frames.div_ceil(u64::from(BATCH));
    let threads = drivers.len() as u64;
    let c0 = cpu_secs(libc::CLOCK_PROCESS_CPUTIME_ID);
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for mut d in drivers {
            s.spawn(move || {
                for _ in 0..batches {
                    d.batch();
                }
            });
        }
    });
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs(libc::CLOCK_PROCESS_CPUTIME_ID) - c0;
    let n = (batches * u64::from(BATCH) * threads) as f64;
    (n / wall, n / cpu)
}

/// N queue pairs of one function pair.
fn queues(kind: Kind, n: u32, frames: u64) -> (f64, f64, u64) {
    let sw = Arc::new(Switch::default());
    let a = Nic::attach(&sw, kind, mac(0xa, 0), n);
    let b = Nic::attach(&sw, kind, mac(0xb, 0), n);
    b.announce();
    let (hosts, reta) = steer(n, b.mac, a.mac);
    b.enable_rss(&KEY, &reta);
    let mut drivers = (0..n)
        .map(|q| {
            QueueDriver::new(
                &a,
                &b,
                q,
                &frame(b.mac, a.mac, SIZE, Some(hosts[q as usize])),
            )
        })
        .collect::<Vec<_>>();
    drivers[0].batch();
    wait_received(&b, u64::from(BATCH));
    let (fps, per_cpu) = drive(drivers, frames);
    let want = frames.div_ceil(u64::from(BATCH)) * u64::from(BATCH) * u64::from(n);
    (fps, per_cpu, want - wait_received(&b, want))
}

/// N function pairs on one switch.
fn pairs(kind: Kind, n: u32, frames: u64) -> (f64, f64, u64) {
    let sw = Arc::new(Switch::default());
    let nics: Vec<(Nic, Nic)> = (0..n)
        .map(|i| {
            (
                Nic::attach(&sw, kind, mac(0xa, i), 1),
                Nic::attach(&sw, kind, mac(0xb, i), 1),
            )
        })
        .collect();
    for (_, b) in &nics {
        b.announce();
    }
    let mut drivers = Vec::new();
    for (a, b) in &nics {
        let mut d = QueueDriver::new(a, b, 0, &frame(b.mac, a.mac, SIZE, Some(1)));
        d.batch();
        wait_received(b, u64::from(BATCH));
        drivers.push(d);
    }
    let (fps, per_cpu) = drive(drivers, frames);
    let want = frames.div_ceil(u64::from(BATCH)) * u64::from(BATCH);
    let lost = nics
        .iter()
        .map(|(_, b)| want - wait_received(b, want))
        .sum();
    (fps, per_cpu, lost)
}

fn main() {
    let frames: u64 = std::env::var("SCALING_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("{cores} cores; {SIZE} B IPv4/UDP frames, {frames} per thread");
    println!(
        "{:<6} {:<12} {:>2} {:>12} {:>16} {:>8}",
        "part", "what", "N", "frames/s", "per CPU-second", "vs N=1"
    );
    for kind in [Kind::Igb, Kind::Ixgbe] {
        for (what, f) in [
            (
                "queue pairs",
                queues as fn(Kind, u32, u64) -> (f64, f64, u64),
            ),
            ("fn pairs", pairs),
        ] {
            let mut one = 0.0;
            for n in [1u32, 2, 4, 8] {
                let (fps, per_cpu, lost) = f(kind, n, frames);
                assert_eq!(lost, 0, "every frame received");
                if n == 1 {
                    one = per_cpu;
                }
                println!(
                    "{:<6} {:<12} {n:>2} {fps:>12.0} {per_cpu:>16.0} {:>7.2}x",
                    kind.name(),
                    what,
                    per_cpu / one
                );
            }
        }
    }
}
