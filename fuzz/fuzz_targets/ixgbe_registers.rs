// SPDX-License-Identifier: Apache-2.0
//! Fuzzes the ixgbe register file and data path the same way as
//! `igb_registers`: guest memory seeded from the input, then a program of
//! register accesses, frames and timer ticks. The device must never panic.
#![no_main]

use nicemu_device_models::ixgbe::{Ixgbe, IxgbeConfig, SfpKind};
use nicemu_device_models::testutil::{ram, run_program, TestEnv};
use nicemu_device_models::PciFunction;
use libfuzzer_sys::fuzz_target;
use vm_memory::{Bytes, GuestAddress};

fuzz_target!(|data: &[u8]| {
    let t = TestEnv::new();
    let cfg = IxgbeConfig {
        mac: [0x52, 0x54, 0, 0, 0, 2],
        sfp: SfpKind::DirectAttach,
    };
    let d = Ixgbe::new(cfg, t.env.clone());
    let mem = ram(256 * 1024);
    let (seed, prog) = data.split_at(data.len().min(4096));
    let _ = mem.write_slice(seed, GuestAddress(0));
    d.set_memory(mem);
    nicemu_device_models::testutil::bus_master(&d);
    run_program(&d, prog);
});
