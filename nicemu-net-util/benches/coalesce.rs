// SPDX-License-Identifier: Apache-2.0
//! What receive coalescing costs per frame (virtio-net's receive path runs
//! `gro_run` at each frame of a batch it is given, issue 17):
//! - `merge`: 45 in-sequence 1448-byte segments of one connection, found
//!   and merged into one 64 KiB frame (`gro_run` + `merge_run`);
//! - `two flows`: 64 segments of two connections alternating, where every
//!   run ends at its second frame (the cheap rejection, before any
//!   checksum is summed);
//! - `pure acks`: 64 ACKs without data of one connection;
//! - for scale, `verify_rx` of one 1448-byte segment, which the plain
//!   receive path already does for every frame (`DATA_VALID`).
//!
//! Run: `cargo bench -p nicemu-net-util --bench coalesce`.
#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

use std::hint::black_box;
use std::time::Instant;

use nicemu_net_util::coalesce::{gro_run, merge_run};
use nicemu_net_util::csum::verify_rx;
use nicemu_net_util::tso::segment;
use nicemu_net_util::Tso;

/// A TCP/IPv4 frame (DF) of source port `port` with `payload` bytes.
fn big(port: u16, payload: usize) -> Vec<u8> {
    let mut f = vec![0u8; 54 + payload];
    f[..14].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
    f[20] = 0x40;
    f[22] = 64;
    f[23] = 6;
    f[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
    f[34..36].copy_from_slice(&port.to_be_bytes());
    f[36..38].copy_from_slice(&8000u16.to_be_bytes());
    f[46] = 5 << 4;
    f[47] = 0x10;
    for (i, b) in f[54..].iter_mut().enumerate() {
        *b = i as u8;
    }
    f
}

/// The segments TSO makes of `big(port, payload)` at MSS 1448.
fn segments(port: u16, payload: usize) -> Vec<Vec<u8>> {
    let f = big(port, payload);
    let (tso, _) = Tso::for_frame(&f, 1448).unwrap();
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    segment(&f, &tso, &mut scratch, |s| out.push(s.clone())).unwrap();
    out
}

/// Nanoseconds per frame of `f` run `iters` times over `frames` frames.
fn time(name: &str, frames: usize, iters: u32, mut f: impl FnMut()) {
    let t0 = Instant::now();
    for _ in 0..iters {
        f();
    }
    let ns = t0.elapsed().as_nanos() as f64 / f64::from(iters) / frames as f64;
    println!("{name:<28} {ns:>8.1} ns/frame");
}

/// `gro_run` at every frame of a batch, as `deliver_batch` does.
fn scan(frames: &[Vec<u8>]) -> usize {
    let mut i = 0;
    let mut runs = 0;
    while i < frames.len() {
        match gro_run(frames[i..].iter().map(Vec::as_slice)) {
            Some(r) => {
                runs += 1;
                i += r.count;
            }
            None => i += 1,
        }
    }
    runs
}

fn main() {
    let one = segments(4000, 45 * 1448);
    assert_eq!(one.len(), 45);
    let mut out = Vec::with_capacity(66 * 1024);
    time("merge (45 x 1448 B)", one.len(), 2000, || {
        let run = gro_run(one.iter().map(Vec::as_slice)).unwrap();
        assert_eq!(run.count, 45);
        merge_run(one.iter().map(Vec::as_slice), &run, &mut out);
        black_box(&out);
    });
    let a = segments(4000, 32 * 1448);
    let b = segments(4001, 32 * 1448);
    let mixed: Vec<Vec<u8>> = a.into_iter().zip(b).flat_map(|(x, y)| [x, y]).collect();
    time("two flows (64 x 1448 B)", mixed.len(), 20000, || {
        assert_eq!(black_box(scan(&mixed)), 0);
    });
    let mut ack = big(4000, 0);
    nicemu_net_util::csum::ipv4_header_csum(&mut ack, 14).unwrap();
    let acks = vec![ack; 64];
    time("pure acks (64 x 54 B)", acks.len(), 20000, || {
        assert_eq!(black_box(scan(&acks)), 0);
    });
    time("verify_rx (1448 B)", 1, 200_000, || {
        black_box(verify_rx(black_box(&one[0])));
    });
}
