// SPDX-License-Identifier: Apache-2.0
//! Fuzzes the SR-IOV virtual functions (an 82576 VF, an 82599 VF) and
//! nicemu's PF agent behind their mailbox: the first byte picks the part and
//! whether the host set a MAC, spoof checking and trust; the rest is guest
//! memory and then chunks that are either register programs
//! (`testutil::run_program`) or mailbox messages of any words (taken with
//! VFU, sent with REQ, the reply acknowledged). The device must never panic,
//! and the agent's state stays bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nicemu_device_models::testutil::{bus_master, ram, run_program, TestEnv};
use nicemu_device_models::vf::agent::{Admin, MAX_MC_HASHES, MAX_UC_FILTERS, MAX_VLANS};
use nicemu_device_models::vf::igbvf::I82576Vf;
use nicemu_device_models::vf::ixgbevf::I82599Vf;
use nicemu_device_models::vf::mailbox::bits;
use nicemu_device_models::vf::{Vf, VfConfig, VfControl, VfPart};
use nicemu_device_models::function::Function;
use nicemu_device_models::PciFunction;
use vm_memory::{Bytes, GuestAddress};

fn wr(d: &impl PciFunction, off: u32, v: u32) {
    d.bar_write(0, u64::from(off), &v.to_le_bytes());
}

fn run<P: VfPart>(flags: u8, data: &[u8]) {
    let t = TestEnv::new();
    let admin = Admin {
        mac: (flags & 2 != 0).then_some([0x52, 0x54, 0, 0, 0, 1]),
        spoofchk: flags & 4 != 0,
        trust: flags & 8 != 0,
        rss_query: flags & 16 != 0,
        ..Admin::default()
    };
    let d = Function::<Vf<P>>::new(VfConfig { vf: 0, admin }, t.env.clone());
    let mem = ram(256 * 1024);
    let (seed, mut prog) = data.split_at(data.len().min(4096));
    let _ = mem.write_slice(seed, GuestAddress(0));
    d.set_memory(mem);
    bus_master(&d);
    let m = P::MAP;
    while prog.len() >= 2 {
        let (kind, len) = (prog[0], usize::from(prog[1]));
        let chunk = &prog[2..(2 + len).min(prog.len())];
        prog = &prog[(2 + len).min(prog.len())..];
        if kind % 3 == 0 {
            wr(&d, m.mailbox, bits::VFU);
            for (i, w) in chunk.chunks(4).take(16).enumerate() {
                let mut b = [0u8; 4];
                b[..w.len()].copy_from_slice(w);
                wr(&d, m.mbmem + 4 * i as u32, u32::from_le_bytes(b));
            }
            wr(&d, m.mailbox, bits::REQ | u32::from(kind >> 7) * bits::VFU);
            wr(&d, m.mailbox, bits::ACK);
        } else {
            run_program(&d, chunk);
        }
    }
    let a = d.agent();
    assert!(a.mc.len() <= MAX_MC_HASHES);
    assert!(a.vlans.len() <= MAX_VLANS);
    assert!(a.uc.len() <= MAX_UC_FILTERS);
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    if flags & 1 == 0 {
        run::<I82576Vf>(flags, rest);
    } else {
        run::<I82599Vf>(flags, rest);
    }
});
