// SPDX-License-Identifier: Apache-2.0
//! Fuzzes a virtio-net port's vhost-user socket as a hostile frontend would:
//! arbitrary message streams (any request, flags, sizes, payloads; no file
//! descriptors) through the relay into the vhost-user handler and the
//! port's backend. Every connection must end (the port then listens again),
//! never a panic or a hang.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let i = common::instance();
    common::exchange(&i.dir.join("vn0.sock"), data);
});
