// SPDX-License-Identifier: Apache-2.0
//! Model throughput without a VM: frames/s from igb A's TX ring through the
//! switch into igb B's RX ring, for 64-byte and 1500-byte frames, including the
//! driver-side work of posting descriptors and refilling buffers.
//!
//! Run: `cargo bench -p nicemu --bench datapath`.
#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

use std::sync::Arc;
use std::time::Instant;

use device_models::igb::{Igb, IgbConfig};
use device_models::testutil::{ram, RecordingIrq};
use device_models::{DeviceEnv, GuestRam, MonotonicClock, NetPort, PciFunction, TimerSink};
use nicemu::switch::{DirectRx, Switch};
use vm_memory::{Bytes, GuestAddress};

const RING: u32 = 256;
const TX_RING: u64 = 0x10000;
const RX_RING: u64 = 0x20000;
const TX_BUF: u64 = 0x100000;
const RX_BUF: u64 = 0x400000;

struct NoTimer;
impl TimerSink for NoTimer {
    fn arm(&self, _: u64) {}
}

struct Direct(Arc<Igb>);
impl DirectRx for Direct {
    fn try_deliver(&self, frame: &[u8], _: u64) -> bool {
        self.0.receive(frame);
        true
    }
}

fn wr(d: &Igb, off: u64, v: u32) {
    d.bar_write(0, off, &v.to_le_bytes());
}

fn setup(d: &Igb, mem: &GuestRam) {
    wr(d, 0x3800, TX_RING as u32);
    wr(d, 0x3808, RING * 16);
    wr(d, 0x3828, 1 << 25);
    wr(d, 0x400, 0x2 | 0x8);
    wr(d, 0x2800, RX_RING as u32);
    wr(d, 0x2808, RING * 16);
    wr(d, 0x280c, 0x0200_0402);
    wr(d, 0x2828, 1 << 25);
    wr(d, 0x100, 0x2 | (1 << 15) | (1 << 26) | 0x8);
    for i in 0..u64::from(RING) {
        mem.write_obj(RX_BUF + i * 2048, GuestAddress(RX_RING + i * 16))
            .unwrap();
    }
    wr(d, 0x2818, RING - 1);
}

fn run(size: usize, frames: u32) -> f64 {
    let sw = Arc::new(Switch::default());
    let (port_a, _rx_a) = sw.attach();
    let mem_a = ram(8 << 20);
    let mem_b = ram(8 << 20);
    let env = |wire: Arc<dyn device_models::FrameSink>| DeviceEnv {
        irq: Arc::new(RecordingIrq::default()),
        wire,
        clock: Arc::new(MonotonicClock),
        timer: Arc::new(NoTimer),
    };
    let a = Igb::new(
        IgbConfig {
            mac: [2, 0, 0, 0, 0, 0xa],
        },
        env(Arc::new(port_a)),
    );
    let b = Arc::new(Igb::new(
        IgbConfig {
            mac: [2, 0, 0, 0, 0, 0xb],
        },
        env(Arc::new(device_models::testutil::RecordingWire::default())),
    ));
    let (_pb, _rxb) = sw.attach_direct(Some(Arc::new(Direct(b.clone()))));
    a.set_memory(mem_a.clone());
    b.set_memory(mem_b.clone());
    device_models::testutil::bus_master(&a);
    device_models::testutil::bus_master(&*b);
    setup(&a, &mem_a);
    setup(&b, &mem_b);
    let mut frame = vec![0u8; size];
    frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0xb]);
    frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0xa]);
    for i in 0..u64::from(RING) {
        mem_a
            .write_slice(&frame, GuestAddress(TX_BUF + i * 2048))
            .unwrap();
    }
    let cmd = 0x2b30_0000u32 | size as u32;
    let batch = 32u32;
    let t0 = Instant::now();
    let mut tail = 0u32;
    let mut rx_head = 0u32;
    let mut sent = 0;
    while sent < frames {
        for _ in 0..batch {
            let i = u64::from(tail);
            let desc = TX_RING + i * 16;
            mem_a
                .write_obj(TX_BUF + i * 2048, GuestAddress(desc))
                .unwrap();
            mem_a.write_obj(cmd, GuestAddress(desc + 8)).unwrap();
            mem_a
                .write_obj((size as u32) << 14, GuestAddress(desc + 12))
                .unwrap();
            tail = (tail + 1) % RING;
        }
        wr(&a, 0x3818, tail);
        sent += batch;
        // Driver side of B: refill the buffers the frames used.
        for _ in 0..batch {
            let i = u64::from(rx_head);
            mem_b
                .write_obj(RX_BUF + i * 2048, GuestAddress(RX_RING + i * 16))
                .unwrap();
            mem_b
                .write_obj(0u64, GuestAddress(RX_RING + i * 16 + 8))
                .unwrap();
            rx_head = (rx_head + 1) % RING;
        }
        wr(&b, 0x2818, (rx_head + RING - 1) % RING);
    }
    let secs = t0.elapsed().as_secs_f64();
    let mut g = [0u8; 4];
    b.bar_read(0, 0x4074, &mut g);
    let got = u32::from_le_bytes(g);
    assert_eq!(got, sent, "every frame received");
    f64::from(sent) / secs
}

fn main() {
    for (size, n) in [(64usize, 400_000u32), (1500, 200_000)] {
        let fps = run(size, n);
        println!(
            "igb TX ring -> switch -> igb RX ring, {size:>4} B frames: {:>10.0} frames/s ({:.2} Gbit/s)",
            fps,
            fps * size as f64 * 8.0 / 1e9
        );
    }
}
