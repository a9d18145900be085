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
//! frames per case, `DATAPATH_CASE=igb:64` runs one case.
//!
//! `DATAPATH_COUNT=1` counts instructions instead of timing: each case runs
//! twice under callgrind (valgrind must be installed), once collecting only
//! inside the measured loop's register writes (`model_write`: a doorbell's
//! transmit pass, the switch, the receiver's placement, interrupts —
//! nicemu's own work) and once inside the whole measured loop; the bench's driver side is
//! the difference. It prints both per frame (50 000 frames unless
//! `DATAPATH_FRAMES` says otherwise) and keeps callgrind's files in
//! `DATAPATH_PROFILE_DIR` (default `target/datapath-callgrind`), so
//! `callgrind_annotate --inclusive=yes FILE` gives the per-function
//! inclusive counts behind the figure.
#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use common::{cpu_secs, frame, wait_received, with_checksums, Kind, Nic, QueueDriver, BATCH};
use nicemu::switch::Switch;

const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

/// A register write of the measured loop: the doorbells and interrupt
/// re-enables through which all of nicemu's per-frame work runs (a function
/// of its own, so that callgrind can collect inside it alone).
#[inline(never)]
fn model_write(nic: &Nic, off: u32, v: u32) {
    nic.wr(off, v);
}

/// Frames/s (wall) and frames per thread CPU-second of one case.
#[inline(never)]
fn measure(d: &mut QueueDriver<'_>, frames: u64) -> (f64, f64) {
    let c0 = cpu_secs(libc::CLOCK_THREAD_CPUTIME_ID);
    let t0 = Instant::now();
    let mut sent = 0;
    while sent < frames {
        d.batch_via(model_write);
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

/// What callgrind collects in a counting run: nicemu's own work, or the
/// measured loop with the bench's driver side.
const NICEMU_ENTRY: &str = "datapath::model_write";
const MEASURED_LOOP: &str = "datapath::measure";

/// Instructions callgrind collected inside functions matching `toggle` in
/// one run of `case` with `frames` frames; its file is kept in `dir`.
fn callgrind_count(case: &str, frames: u64, toggle: &str, dir: &Path, tag: &str) -> u64 {
    let out = dir.join(format!("{}.{tag}.out", case.replace(':', "-")));
    let exe = std::env::current_exe().unwrap();
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--toggle-collect={toggle}"))
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .env_remove("DATAPATH_COUNT")
        .env("DATAPATH_CASE", case)
        .env("DATAPATH_FRAMES", frames.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("DATAPATH_COUNT needs valgrind (Debian: apt-get install valgrind)");
    assert!(status.success(), "callgrind run of {case} failed: {status}");
    let text = std::fs::read_to_string(&out).unwrap();
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no instruction total in {}", out.display()))
}

/// `DATAPATH_COUNT=1`: instructions per frame of nicemu's side and of the
/// bench's driver side of `case`.
fn count(case: &str, frames: u64) {
    let dir = std::env::var_os("DATAPATH_PROFILE_DIR").map_or_else(
        || {
            let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
            repo.join("target/datapath-callgrind")
        },
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    let frames = frames.div_ceil(u64::from(BATCH)) * u64::from(BATCH);
    let own = callgrind_count(case, frames, NICEMU_ENTRY, &dir, "nicemu");
    let all = callgrind_count(case, frames, MEASURED_LOOP, &dir, "loop");
    let per = |n: u64| n as f64 / frames as f64;
    println!(
        "{case:<14} nicemu {:>7.1} instructions/frame, bench driver side {:>5.1} ({frames} frames, callgrind: {})",
        per(own),
        per(all.saturating_sub(own)),
        dir.display()
    );
}

fn main() {
    let frames: Option<u64> = std::env::var("DATAPATH_FRAMES")
        .ok()
        .and_then(|v| v.parse().ok());
    let only = std::env::var("DATAPATH_CASE").ok();
    let counting = std::env::var("DATAPATH_COUNT").is_ok_and(|v| v == "1");
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
            if counting {
                count(&case, frames.unwrap_or(50_000));
            } else {
                run(kind, size, udp, frames.unwrap_or(n));
            }
        }
    }
}
