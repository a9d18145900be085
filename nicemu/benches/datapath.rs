// SPDX-License-Identifier: Apache-2.0
//! Model throughput without a VM: frames/s from one function's TX ring
//! through the switch into another's RX ring, igb and ixgbe, 64-byte and
//! 1500-byte frames, and 1500-byte UDP/IPv4 datagrams whose checksums the
//! receiver verifies (`:1500udp`; a TCP stream's frames pay that sum, the
//! other cases carry no IP), including the driver-side work of posting descriptors,
//! refilling buffers and re-enabling the interrupt vector after each batch
//! (see `common`). One thread does all of it: the figure is what one core
//! moves. `cpu` is frames per CPU-second of that thread, which a loaded
//! machine disturbs less than the wall-clock rate.
//!
//! Run: `cargo bench -p nicemu --bench datapath`. `DATAPATH_FRAMES=N` sets the
//! frames per case, `DATAPATH_CASE=igb:64` runs one case (for
//! `valgrind --tool=callgrind --toggle-collect='*measure*'`, which counts the
//! instructions of the measured loop only).
#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

mod common;

use std::sync::Arc;
use std::time::Instant;

use common::{cpu_secs, frame, wait_received, with_checksums, Kind, Nic, QueueDriver, BATCH};
use nicemu::switch::Switch;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

/// Frames/s (wall) and frames per thread CPU-second of one case.
#[inline(never)]
fn measure(d: &mut QueueDriver<'_>, frames: u64) -> (f64, f64) {
    let c0 = cpu_secs(libc::CLOCK_THREAD_CPUTIME_ID);
    let t0 = Instant::now();
    let mut sent = 0;
    while sent < frames {
        d.batch();
        sent += u64::from(BATCH);
    }
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_secs(libc::CLOCK_THREAD_CPUTIME_ID) - c0;
    (sent as f64 / wall, sent as f64 / cpu)
}

/// One case: `size`-byte frames, UDP/IPv4 with checksums the receiver
/// verifies when `udp`.
fn run(kind: Kind, size: usize, udp: bool, frames: u64) {
    let sw = Arc::new(Switch::default());
    let a = Nic::attach(&sw, kind, MAC_A, 1);
    let b = Nic::attach(&sw, kind, MAC_B, 1);
    b.announce();
    let f = if udp {
        b.enable_rx_checksums();
        with_checksums(frame(MAC_B, MAC_A, size, Some(1)))
    } else {
        frame(MAC_B, MAC_A, size, None)
    };
    let mut d = QueueDriver::new(&a, &b, 0, &f);
    d.batch();
    wait_received(&b, u64::from(BATCH));
    let frames = frames.div_ceil(u64::from(BATCH)) * u64::from(BATCH);
    let (fps, cpu) = measure(&mut d, frames);
    let got = wait_received(&b, frames);
    assert_eq!(got, frames, "every frame received");
    println!(
        "{:<5} TX ring -> switch -> {:<5} RX ring, {size:>4} B {}: {fps:>10.0} frames/s ({:>5.2} Gbit/s), cpu {cpu:>10.0} frames/s",
        kind.name(),
        kind.name(),
        if udp { "UDP, checksums verified" } else { "frames" },
        fps * size as f64 * 8.0 / 1e9
    );
}

fn main() {
    let frames: Option<u64> = std::env::var("DATAPATH_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok());
    let only = std::env::var("DATAPATH_CASE").ok();
    for kind in [Kind::Igb, Kind::Ixgbe] {
        for (size, udp, n) in [
            (64usize, false, 400_000u64),
            (1500, false, 200_000),
            (1500, true, 200_000),
        ] {
            let case = format!("{}:{size}{}", kind.name(), if udp { "udp" } else { "" });
            if only.as_ref().is_some_and(|o| *o != case) {
                continue;
            }
            run(kind, size, udp, frames.unwrap_or(n));
        }
    }
}
