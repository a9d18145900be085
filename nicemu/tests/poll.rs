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

/// What happened to chains posted without a kick `after` a kicked one was
/// seen used.
#[derive(Default)]
struct Unkicked {
    /// Posted within `window` of seeing the kicked chain used.
    in_window: u32,
    /// Taken by the port without a kick.
    taken: u32,
    /// Posted later than that (the test thread was descheduled).
    late: u32,
}

/// Posts up to `tries` chains without a kick, each `after` a kicked one
/// was used, until `enough` were taken; a post that lands later than
/// `window` after the used chain was seen is counted as late (a loaded
/// host may deschedule this thread past the polling window).
fn unkicked(poll: &str, tries: u32, after: Duration, window: Duration, enough: u32) -> Unkicked {
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
    let mut seen = Unkicked::default();
    for i in 0..tries {
        // The kick also takes a chain an earlier try left in the ring.
        assert!(v.send(&frame(A, V, 60, i as u8)));
        let t = Instant::now();
        while v.tx_in_flight() > 0 && t.elapsed() < Duration::from_secs(5) {
            v.harvest_tx();
        }
        assert_eq!(v.tx_in_flight(), 0, "the kicked chain was taken");
        // Past the end of the worker's pass (which may still be looking
        // for chains right after it updated the used ring).
        let used = Instant::now();
        while used.elapsed() < after {
            std::hint::spin_loop();
        }
        assert!(v.post(&frame(A, V, 60, i as u8), false));
        let in_window = used.elapsed() <= window;
        std::thread::sleep(Duration::from_millis(30));
        v.harvest_tx();
        if in_window {
            seen.in_window += 1;
        } else {
            seen.late += 1;
        }
        // Nothing but the worker's polling takes a chain without a kick.
        if v.tx_in_flight() == 0 {
            seen.taken += 1;
            if seen.taken >= enough {
                break;
            }
        }
    }
    seen
}

#[test]
fn a_polling_worker_takes_chains_posted_without_a_kick() {
    // The test posts 200 µs after seeing the chain used, inside the 1 ms
    // window, up to 200 times until 3 were taken: a loaded host that
    // deschedules it past the window misses some (was: 40 tries, and one
    // CI run under load 8 missed all 40).
    let polled = unkicked(
        "1000",
        200,
        Duration::from_micros(200),
        Duration::from_micros(700),
        3,
    );
    assert!(
        polled.taken >= 1,
        "none of {} unkicked chains posted within 700 µs taken while polling ({} posted later{})",
        polled.in_window,
        polled.late,
        if polled.in_window == 0 {
            ": the host is too loaded to test this"
        } else {
            ""
        }
    );
    let unpolled = unkicked(
        "0",
        5,
        Duration::from_millis(20),
        Duration::from_secs(3600),
        u32::MAX,
    );
    assert_eq!(
        unpolled.taken, 0,
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
