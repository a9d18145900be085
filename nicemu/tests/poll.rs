// SPDX-License-Identifier: Apache-2.0
//! `--poll-us N`: a vhost-user queue worker keeps polling its transmit ring
//! for N µs after a kick, so a chain the guest posts meanwhile is taken
//! without a kick (without the option it waits for the next kick); the
//! window is bounded on the command line. (The vfio-user server's polling
//! has its tests in the nicemu-vfio-user-server crate.)
#![allow(clippy::unwrap_used, reason = "tests: a step that fails panics")]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::account::frame;
use common::virtio::VirtioNet;
use common::*;

const A: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0a];
const V: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x0d];

/// Of `tries` chains posted without a kick `after` a kicked one was used,
/// how many the port took by itself.
fn unkicked_taken(poll: &str, tries: u32, after: Duration) -> u32 {
    let n = Nicemu::start(
        &format!("poll{poll}"),
        &[
            "--poll-us",
            poll,
            "--device",
            "virtio-net,id=vn0,socket={dir}/v.sock,mac=52:54:00:00:00:0d",
        ],
        &["v.sock"],
    );
    let mut v = VirtioNet::connect_within(&n.path("v.sock"), Duration::from_secs(10));
    let mut taken = 0;
    for i in 0..tries {
        assert!(v.send(&frame(A, V, 60, i as u8)));
        let t = Instant::now();
        while v.tx_in_flight() > 0 && t.elapsed() < Duration::from_secs(5) {
            v.harvest_tx();
        }
        assert_eq!(v.tx_in_flight(), 0, "the kicked chain was taken");
        // Past the end of the worker's pass (which may still be looking
        // for chains right after it updated the used ring).
        let t = Instant::now();
        while t.elapsed() < after {
            std::hint::spin_loop();
        }
        assert!(v.post(&frame(A, V, 60, i as u8), false));
        std::thread::sleep(Duration::from_millis(30));
        v.harvest_tx();
        if v.tx_in_flight() == 0 {
            taken += 1;
        }
    }
    taken
}

#[test]
fn a_polling_worker_takes_chains_posted_without_a_kick() {
    // The test posts 200 µs after seeing the chain used, inside the 1 ms
    // window; a loaded host that deschedules it past the window misses
    // some.
    let polled = unkicked_taken("1000", 40, Duration::from_micros(200));
    assert!(
        polled >= 1,
        "none of 40 unkicked chains taken while polling"
    );
    assert_eq!(
        unkicked_taken("0", 5, Duration::from_millis(20)),
        0,
        "without polling a chain waits for a kick"
    );
}

#[test]
fn poll_us_beyond_its_bound_is_a_one_line_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_nicemu"))
        .args([
            "--poll-us",
            "5000",
            "--device",
            "igb,id=a,socket=/nonexistent/a.sock",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .next()
            .unwrap_or("")
            .contains("5000 µs is more than 1000 µs"),
        "{err}"
    );
}
