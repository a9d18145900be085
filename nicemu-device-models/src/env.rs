// SPDX-License-Identifier: Apache-2.0
//! What a device gets from its environment (the crate's only way out):
//! where it signals interrupts, where its transmitted frames go, the clock,
//! and where it asks to be called back.

use std::sync::Arc;

use crate::batch::FrameBatch;

/// Where a device signals interrupts (MSI-X vectors, or the single MSI/INTx line).
pub trait InterruptSink: Send + Sync {
    /// Sends MSI-X message `vector` (PCI 3.0 §6.8.2).
    fn msix(&self, vector: u16);
    /// Signals the function's single interrupt: MSI if enabled, else INTx.
    fn legacy(&self);
}

/// Where a device puts frames it transmits onto the wire.
pub trait FrameSink: Send + Sync {
    /// Transmits one Ethernet frame (without FCS).
    fn transmit(&self, frame: &[u8]);
    /// Transmits a frame that left the MAC at `sent_ns` (on the shared
    /// [`Clock`]; the time its IEEE 1588 transmit stamp holds), so the
    /// receiver can stamp its arrival from the same instant. Default:
    /// [`Self::transmit`].
    fn transmit_at(&self, frame: &[u8], sent_ns: u64) {
        let _ = sent_ns;
        self.transmit(frame);
    }
    /// Transmits the frames of a batch, in order, all sent at
    /// [`FrameBatch::sent`]. Default: [`Self::transmit_at`] for each; a sink
    /// that does per-frame work once per batch overrides it.
    fn transmit_batch(&self, batch: &FrameBatch) {
        let sent = batch.sent();
        for f in batch.frames().iter() {
            self.transmit_at(f, sent);
        }
    }
}

/// Where a device asks to be called back at a time (interrupt moderation,
/// link timers). The transport calls [`PciFunction::on_timer`](crate::PciFunction::on_timer) at or after the
/// earliest armed deadline.
pub trait TimerSink: Send + Sync {
    /// Requests a call of `on_timer` at `deadline_ns` (on the device's [`Clock`]).
    fn arm(&self, deadline_ns: u64);
}

/// A monotonic time source in nanoseconds, shared by all devices of a process.
pub trait Clock: Send + Sync {
    /// Nanoseconds since an arbitrary fixed point.
    fn now_ns(&self) -> u64;
}

/// The host's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct MonotonicClock;

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        use std::sync::OnceLock;
        use std::time::Instant;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// What a device gets from its environment.
#[derive(Clone)]
pub struct DeviceEnv {
    /// Interrupt delivery.
    pub irq: Arc<dyn InterruptSink>,
    /// Transmit path.
    pub wire: Arc<dyn FrameSink>,
    /// Time base.
    pub clock: Arc<dyn Clock>,
    /// Deferred work.
    pub timer: Arc<dyn TimerSink>,
}

impl std::fmt::Debug for DeviceEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceEnv")
    }
}
