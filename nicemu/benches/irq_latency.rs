// SPDX-License-Identifier: Apache-2.0
//! Interrupt latency without a VM: from a device thread raising MSI-X
//! vector 0 to the client's eventfd becoming readable, through the
//! function's signaller thread (`nicemu::irq::signaller`), against the
//! write the raising thread made itself before (which a client could make
//! wait), and against a raise from a thread serving another function of the
//! same client process (the two ports of one VM), which writes it at the end
//! of its pass. The client waits in poll(2), as QEMU's event loop waits in
//! ppoll.
//!
//! Run: `cargo bench -p nicemu --bench irq_latency`.
#![allow(clippy::unwrap_used, reason = "a benchmark that cannot set up stops")]

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nicemu::irq::eventfd::signal_unprepared;
use nicemu::vfio::irq::EventIrq;
use nicemu_device_models::InterruptSink;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_PCI_MSIX_IRQ_INDEX,
};
use vmm_sys_util::eventfd::EventFd;

const ROUNDS: usize = 20_000;

/// Median and 99th percentile of `raise` → readable, in microseconds.
fn measure(efd: &Arc<EventFd>, raise: impl Fn()) -> (f64, f64) {
    let mut lat = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        raise();
        wait_readable(efd);
        efd.read().unwrap();
        lat.push(t.elapsed());
    }
    lat.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(lat[ROUNDS / 2]), us(lat[ROUNDS * 99 / 100]))
}

fn wait_readable(efd: &EventFd) {
    let mut p = libc::pollfd {
        fd: efd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd we own; waits without a timeout.
    while unsafe { libc::poll(&raw mut p, 1, -1) } != 1 {}
}

fn main() {
    let efd = Arc::new(EventFd::new(0).unwrap());
    // SAFETY: the fd belongs to `efd`, alive for this borrow.
    let dup = unsafe { BorrowedFd::borrow_raw(efd.as_raw_fd()) }
        .try_clone_to_owned()
        .unwrap();
    let irq = EventIrq::new("bench", 25).unwrap();
    irq.set_irqs(
        VFIO_PCI_MSIX_IRQ_INDEX,
        VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD,
        0,
        1,
        vec![dup.into()],
    )
    .unwrap();
    let (inline_p50, inline_p99) = measure(&efd, || {
        let _ = signal_unprepared(&*efd);
    });
    let (sig_p50, sig_p99) = measure(&efd, || irq.msix(0));
    // The same client process serves both functions.
    let other = EventIrq::new("bench-other", 25).unwrap();
    other.set_client(1);
    irq.set_client(1);
    let (same_p50, same_p99) = measure(&efd, || other.serving(|| irq.msix(0)));
    println!(
        "irq latency over {ROUNDS} raises: inline write p50 {inline_p50:.1} µs p99 {inline_p99:.1} µs; \
         through the signaller p50 {sig_p50:.1} µs p99 {sig_p99:.1} µs; \
         from the same client's other port p50 {same_p50:.1} µs p99 {same_p99:.1} µs"
    );
}
