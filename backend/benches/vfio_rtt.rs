// SPDX-License-Identifier: Apache-2.0
//! vfio-user register access cost through nicemu's server, without QEMU: a
//! client on the same machine reads STATUS and posts RDT writes in a loop.
//! (In a TCG guest add QEMU's share; see README.)
//!
//! Run: `cargo bench -p nicemu --bench vfio_rtt`.
#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

use std::sync::Arc;
use std::time::Instant;

use device_models::igb::{self, IgbConfig};
use device_models::testutil::RecordingWire;
use device_models::{DeviceEnv, MonotonicClock, TimerSink};
use nicemu::trace::Tracer;
use nicemu::vfio::{irq::EventIrq, SharedDevice, VfioPort};
use vfio_bindings::bindings::vfio::VFIO_PCI_BAR0_REGION_INDEX;
use vfio_user::Client;

struct NoTimer;
impl TimerSink for NoTimer {
    fn arm(&self, _: u64) {}
}

fn main() {
    let dir = std::env::temp_dir().join(format!("nicemu-rtt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("igb.sock");
    let irq = Arc::new(EventIrq::new("igb0", igb::MSIX_VECTORS).unwrap());
    let env = DeviceEnv {
        irq: irq.clone(),
        wire: Arc::new(RecordingWire::default()),
        clock: Arc::new(MonotonicClock),
        timer: Arc::new(NoTimer),
    };
    let dev: SharedDevice = igb::new_function(
        IgbConfig {
            mac: [2, 0, 0, 0, 0, 1],
        },
        env,
    );
    VfioPort::new("igb0".into(), dev, irq, Arc::new(Tracer::disabled()))
        .serve(&sock)
        .unwrap();
    let mut c = Client::new(&sock).unwrap();
    let n = 20_000;
    let mut b = [0u8; 4];
    let t = Instant::now();
    for _ in 0..n {
        c.region_read(VFIO_PCI_BAR0_REGION_INDEX, 0x8, &mut b)
            .unwrap();
    }
    let read = t.elapsed().as_secs_f64() / f64::from(n);
    let t = Instant::now();
    for i in 0..n {
        // The crate's client waits for a reply to writes, so this is a
        // round trip too (QEMU posts them and does not wait).
        c.region_write(
            VFIO_PCI_BAR0_REGION_INDEX,
            0x2818,
            &(i as u32 & 0xf).to_le_bytes(),
        )
        .unwrap();
    }
    let write = t.elapsed().as_secs_f64() / f64::from(n);
    println!(
        "vfio-user BAR0 read round trip (STATUS), client to nicemu: {:.1} µs",
        read * 1e6
    );
    println!(
        "vfio-user BAR0 write round trip (RDT), client to nicemu:   {:.1} µs",
        write * 1e6
    );
    let _ = std::fs::remove_dir_all(dir);
}
