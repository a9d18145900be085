// SPDX-License-Identifier: Apache-2.0
//! Fuzzes the stream wire as a `-netdev stream` peer would: arbitrary bytes
//! (length prefixes of any value, truncated frames, runts) into the wire's
//! socket, forwarded through the switch to an igb function and a virtio-net
//! port. Must never panic or hang; bad framing drops the peer.
#![no_main]

mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let i = common::instance();
    common::exchange(&i.dir.join("w.sock"), data);
});
