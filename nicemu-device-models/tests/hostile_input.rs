// SPDX-License-Identifier: Apache-2.0
//! Hostile guest input: random register programs, random descriptor rings
//! and random frames must leave the device responsive, never panicking, with
//! bounded work (each test finishes in well under a second).
#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a step that fails panics, and a scenario reads best in one piece"
)]

use nicemu_device_models::igb::{Igb, IgbConfig};
use nicemu_device_models::ixgbe::{Ixgbe, IxgbeConfig, SfpKind};
use nicemu_device_models::testutil::{ram, run_program, TestEnv, XorShift};
use nicemu_device_models::{Clock, PciFunction};
use vm_memory::{Bytes, GuestAddress};

fn igb(mem_seed: &mut XorShift) -> (Igb, TestEnv) {
    let t = TestEnv::new();
    let d = Igb::new(
        IgbConfig {
            mac: [0x52, 0x54, 0, 0, 0, 1],
        },
        t.env.clone(),
    );
    let mem = ram(256 * 1024);
    let mut junk = vec![0u8; 256 * 1024];
    mem_seed.fill(&mut junk);
    mem.write_slice(&junk, GuestAddress(0)).unwrap();
    d.set_memory(mem);
    nicemu_device_models::testutil::bus_master(&d);
    (d, t)
}

fn status(d: &mut Igb) -> u32 {
    let mut b = [0u8; 4];
    d.bar_read(0, 0x8, &mut b);
    u32::from_le_bytes(b)
}

/// A `run_program` program of `n` steps whose offsets `offset(r)` picks from a random
/// word (steering writes into queue blocks), mostly reads and writes, some frames, and
/// values that often carry a queue-enable bit.
fn steered_program(rng: &mut XorShift, n: usize, offset: impl Fn(u64) -> u32) -> Vec<u8> {
    let mut prog = Vec::with_capacity(7 * n);
    for _ in 0..n {
        let r = rng.next_u64();
        let off = offset(r);
        let op = if r >> 60 == 0 { 4 } else { (r >> 40) as u8 % 3 };
        let val = if r & 0x10 != 0 {
            0x0200_0000
        } else {
            (r >> 16) as u32
        };
        let mut step = [0u8; 7];
        step[0] = op;
        step[1..3].copy_from_slice(&(off as u16).to_le_bytes());
        step[3..7].copy_from_slice(&val.to_le_bytes());
        step[3] = (step[3] & !0x07) | (off >> 16) as u8;
        prog.extend_from_slice(&step);
    }
    prog
}

#[test]
fn random_register_programs_over_random_memory() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..16 {
        let (mut d, t) = igb(&mut rng);
        let mut prog = vec![0u8; 7 * 2000];
        rng.fill(&mut prog);
        run_program(&d, &prog);
        // Still a device: a function reset brings it back to a sane state, link
        // up as at power-on; a PHY reset in the program renegotiates, and the
        // timer ends that.
        d.reset();
        assert_ne!(status(&mut d) & 0x2, 0, "link up after reset");
        let at = t.clock.now_ns() + nicemu_device_models::phy::AUTONEG_NS;
        t.clock.set(at);
        d.on_timer(at);
        assert_ne!(status(&mut d) & 0x2, 0, "link up after the timer");
    }
}

#[test]
fn random_programs_focused_on_queue_registers() {
    // Steer offsets into the queue blocks (RX 0xC000.., TX 0xE000.., legacy
    // 0x2800/0x3800) and enable bits so the ring engines actually run on
    // garbage descriptors.
    let mut rng = XorShift(42);
    for _ in 0..16 {
        let (mut d, _t) = igb(&mut rng);
        d.bar_write(0, 0x400, &0x2u32.to_le_bytes()); // TCTL.EN
        d.bar_write(0, 0x100, &0x0400_801eu32.to_le_bytes()); // RCTL.EN|UPE|MPE|BAM
        let prog = steered_program(&mut rng, 2000, |r| {
            let base = [0x2800u32, 0x3800, 0xc000, 0xe000][(r & 3) as usize];
            (base + ((r >> 8) as u32 % 0x400)) & !3
        });
        run_program(&d, &prog);
        let e = d.guest_errors();
        assert!(e.dma_errors + e.ring_errors + e.tx_malformed + e.unknown_regs < u64::MAX);
        assert_ne!(status(&mut d) & 0x80, 0, "still answers");
    }
}

#[test]
fn ixgbe_random_programs_and_queue_registers() {
    let mut rng = XorShift(0x5eed);
    for round in 0..12 {
        let t = TestEnv::new();
        let d = Ixgbe::new(
            IxgbeConfig {
                mac: [0x52, 0x54, 0, 0, 0, 2],
                sfp: SfpKind::DirectAttach,
            },
            t.env.clone(),
        );
        let mem = ram(256 * 1024);
        let mut junk = vec![0u8; 256 * 1024];
        rng.fill(&mut junk);
        mem.write_slice(&junk, GuestAddress(0)).unwrap();
        d.set_memory(mem);
        nicemu_device_models::testutil::bus_master(&d);
        // Transmit and receive enabled, then hostile writes into the queue blocks
        // (RX 0x1000.., TX 0x6000..) and anywhere else.
        d.bar_write(0, 0x4a80, &1u32.to_le_bytes()); // DMATXCTL.TE
        d.bar_write(0, 0x3000, &1u32.to_le_bytes()); // RXCTRL.RXEN
        let prog = steered_program(&mut rng, 1500, |r| {
            if round % 2 == 0 {
                ([0x1000u32, 0x6000][(r & 1) as usize] + ((r >> 8) as u32 % 0x800)) & !3
            } else {
                (r >> 8) as u32 & 0x7fffc
            }
        });
        run_program(&d, &prog);
        d.reset();
        let mut b = [0u8; 4];
        d.bar_read(0, 0x8, &mut b);
        assert_ne!(
            u32::from_le_bytes(b) & (1 << 19),
            0,
            "still answers after a reset (GIO master enabled)"
        );
    }
}
