// SPDX-License-Identifier: Apache-2.0
//! Fuzzes descriptor parsing and the offload engines with arbitrary
//! descriptors, contexts and frames: checksums, TSO segmentation, RX checksum
//! verification and the RSS hash must never panic or read out of bounds.
#![no_main]

use nicemu_device_models::desc::{parse_tx, TxDesc};
use nicemu_device_models::{rss, txframe};
use nicemu_net_util::{csum, tso};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 32 {
        return;
    }
    let mut d = [0u8; 16];
    d.copy_from_slice(&data[..16]);
    let _ = parse_tx(&d);
    let mut c = [0u8; 16];
    c.copy_from_slice(&data[16..32]);
    // Force a context descriptor out of the second 16 bytes.
    c[11] = 0x20;
    c[10] = (c[10] & 0x0f) | 0x20;
    let ctx = match parse_tx(&c) {
        TxDesc::Context(ctx) => ctx,
        _ => return,
    };
    let mut frame = data[32..].to_vec();
    let _ = txframe::apply_checksums(&mut frame, &ctx, data[0] & 1 != 0, data[0] & 2 != 0);
    let mut seg = Vec::new();
    let mut n = 0usize;
    if let Ok(t) = ctx.tso() {
        let _ = tso::segment(&frame, &t, &mut seg, |s| n += s.len());
    }
    let _ = csum::verify_rx(&frame);
    let _ = rss::hash_with_regs(|i| 0x6d6d_6d6d ^ i, u32::MAX, &frame);
});
