// SPDX-License-Identifier: Apache-2.0
//! Fuzzes the control socket as a local user would use it: arbitrary bytes
//! (request lines, JSON of any shape, over-long lines, file names) sent to a
//! running control server with an igb, a virtio-net port and a wire. Every
//! input must get answers and a closed connection, never a panic or a hang,
//! and files only inside the output directory.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let i = common::instance();
    common::exchange(&i.dir.join("ctl.sock"), data);
    common::clean_out(i);
});
