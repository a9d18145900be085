// SPDX-License-Identifier: Apache-2.0
//! Concurrency of one function: frames for several receive queues arrive from
//! several threads while a transmit queue runs and the driver reads (and so
//! clears) the statistics. Nothing deadlocks, and every frame is counted
//! exactly once: received (GPRC) or missed (MPC), and the counts the driver
//! read plus what is left equal the frames sent.
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

use std::sync::atomic::{AtomicU64, Ordering};

use nicemu_device_models::igb::{Igb, IgbConfig};
use nicemu_device_models::testutil::{ram, TestEnv};
use nicemu_device_models::{Delivery, Introspect, NetPort, PciFunction};
use vm_memory::{Bytes, GuestAddress};

const MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 1];
const QUEUES: u32 = 4;
const RING: u32 = 64;
const GPRC: u64 = 0x4074;
const MPC: u64 = 0x4010;

fn rd(d: &Igb, off: u64) -> u32 {
    let mut b = [0u8; 4];
    d.bar_read(0, off, &mut b);
    u32::from_le_bytes(b)
}

fn wr(d: &Igb, off: u64, v: u32) {
    d.bar_write(0, off, &v.to_le_bytes());
}

/// A TCP/IPv4 frame to our MAC from source port `sport` (RSS spreads ports).
fn frame(sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x52, 0x54, 0, 0, 0, 2]);
    f[12] = 0x08;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[23] = 6;
    f[26..30].copy_from_slice(&[10, 0, 0, 2]);
    f[30..34].copy_from_slice(&[10, 0, 0, 1]);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&80u16.to_be_bytes());
    f[46] = 5 << 4;
    f
}

fn setup() -> (Igb, TestEnv) {
    let t = TestEnv::new();
    let d = Igb::new(IgbConfig { mac: MAC }, t.env.clone());
    let mem = ram(8 << 20);
    d.set_memory(mem.clone());
    nicemu_device_models::testutil::bus_master(&d);
    for q in 0..QUEUES {
        let base = 0xc000 + u64::from(q) * 0x40;
        let ring = 0x10_0000 + u64::from(q) * 0x1000;
        wr(&d, base, ring as u32);
        wr(&d, base + 8, RING * 16);
        wr(&d, base + 0xc, 0x0200_0402);
        wr(&d, base + 0x28, 1 << 25);
        for i in 0..u64::from(RING) {
            let buf = 0x20_0000 + u64::from(q) * 0x4_0000 + i * 2048;
            mem.write_obj(buf, GuestAddress(ring + i * 16)).unwrap();
        }
        wr(&d, base + 0x18, RING - 1);
    }
    for i in 0..10 {
        wr(&d, 0x5c80 + 4 * i, 0x6d5a_56da ^ (i as u32 * 0x0101_0101));
    }
    for i in 0..32 {
        wr(&d, 0x5c00 + 4 * i, 0x0302_0100);
    }
    wr(&d, 0x5818, 0x0033_0002); // MRQC: RSS over IPv4/TCP
    wr(&d, 0x100, (1 << 1) | (1 << 26)); // RCTL: EN | SECRC
                                         // One transmit queue looping frames out onto the (recording) wire.
    wr(&d, 0xe000, 0x30_0000);
    wr(&d, 0xe008, 256 * 16);
    wr(&d, 0xe028, 1 << 25);
    wr(&d, 0x400, 0x2 | 0x8); // TCTL: EN | PSP
    wr(&d, 0, rd(&d, 0) | (1 << 6)); // CTRL.SLU
    (d, t)
}

#[test]
fn queues_run_concurrently_and_every_frame_counts_once() {
    let (d, t) = setup();
    let senders = 3u16;
    let per_sender = 3000u16;
    let read_gprc = AtomicU64::new(0);
    let read_mpc = AtomicU64::new(0);
    std::thread::scope(|s| {
        for k in 0..senders {
            let d = &d;
            s.spawn(move || {
                for i in 0..per_sender {
                    let f = frame(1000 + k * per_sender + i);
                    // Half through the non-blocking path, retried like the switch's
                    // receive thread would deliver it.
                    if i % 2 == 0 || d.deliver(&f, Some(0), false) == Delivery::Busy {
                        d.receive(&f);
                    }
                }
            });
        }
        // The driver: reads the clear-on-read counters meanwhile.
        s.spawn(|| {
            for _ in 0..500 {
                read_gprc.fetch_add(u64::from(rd(&d, GPRC)), Ordering::Relaxed);
                read_mpc.fetch_add(u64::from(rd(&d, MPC)), Ordering::Relaxed);
            }
        });
        // Transmit doorbells on another queue.
        s.spawn(|| {
            let mem = d.mem();
            let f = frame(7);
            for i in 0..200u64 {
                let idx = i % 256;
                mem.write_slice(&f, GuestAddress(0x40_0000 + idx * 2048))
                    .unwrap();
                let desc = 0x30_0000 + idx * 16;
                mem.write_obj(0x40_0000 + idx * 2048, GuestAddress(desc))
                    .unwrap();
                mem.write_obj(0x2b30_0000u32 | 60, GuestAddress(desc + 8))
                    .unwrap();
                mem.write_obj(60u32 << 14, GuestAddress(desc + 12)).unwrap();
                wr(&d, 0xe018, ((idx + 1) % 256) as u32);
            }
        });
    });
    let total = u64::from(senders) * u64::from(per_sender);
    let gprc = read_gprc.load(Ordering::Relaxed) + u64::from(rd(&d, GPRC));
    let mpc = read_mpc.load(Ordering::Relaxed) + u64::from(rd(&d, MPC));
    let placed: u64 = (0..QUEUES)
        .map(|q| u64::from(rd(&d, 0xc010 + u64::from(q) * 0x40)))
        .sum();
    assert_eq!(gprc, placed, "every placed frame counted once");
    assert_eq!(gprc + mpc, total, "every frame received or missed");
    assert_eq!(
        gprc,
        u64::from(QUEUES * (RING - 1)),
        "each ring filled exactly"
    );
    let totals = d.counters();
    let get = |n: &str| totals.iter().find(|(k, _)| k == n).map(|c| c.1).unwrap();
    assert_eq!(
        (get("GPRC"), get("MPC")),
        (gprc, mpc),
        "control-path totals agree"
    );
    assert_eq!(t.wire.take().len(), 200, "every transmitted frame left");
}
