// SPDX-License-Identifier: Apache-2.0
//! Fuzzes the igb register file and data path: the input seeds guest memory
//! (descriptors and buffers) and then is a program of register reads/writes at
//! any offset with any value and width, received frames and timer ticks
//! (`testutil::run_program`). The device must never panic.
#![no_main]

use nicemu_device_models::igb::{Igb, IgbConfig};
use nicemu_device_models::testutil::{ram, run_program, TestEnv};
use nicemu_device_models::PciFunction;
use libfuzzer_sys::fuzz_target;
use vm_memory::{Bytes, GuestAddress};

fuzz_target!(|data: &[u8]| {
    let t = TestEnv::new();
    let d = Igb::new(
        IgbConfig {
            mac: [0x52, 0x54, 0, 0, 0, 1],
        },
        t.env.clone(),
    );
    let mem = ram(256 * 1024);
    let (seed, prog) = data.split_at(data.len().min(4096));
    let _ = mem.write_slice(seed, GuestAddress(0));
    d.set_memory(mem);
    nicemu_device_models::testutil::bus_master(&d);
    run_program(&d, prog);
});
