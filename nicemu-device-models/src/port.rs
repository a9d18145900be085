// SPDX-License-Identifier: Apache-2.0
//! What the world sees of an emulated NIC function, in three roles:
//!
//! - [`PciFunction`]: the PCI function a transport (vfio-user) serves —
//!   config space, BARs, reset, the guest memory it reaches by DMA, timers;
//! - [`NetPort`]: a port on an emulated network — frames delivered to it,
//!   a link, a wire delay; a virtio-net port is one too;
//! - [`Introspect`]: what the control socket reads and does — names,
//!   counters, the driver's view, injected faults; a virtio-net port too.
//!
//! A [`Port`] is a network port that can be inspected; a [`NicFunction`]
//! is all three roles. Every method takes `&self`: an
//! implementation locks internally only what an operation touches, so
//! transports, receive threads, timers and the control socket call it from
//! any thread.

use crate::batch::Frames;
use crate::dma::{DmaView, GuestRam};
use crate::fault::{DriverView, Fault, FaultError};
use crate::pci::Bar;

/// One PCI function as a transport sees it (PCI 3.0 configuration space and
/// BARs; vfio-user's region accesses, DEVICE_RESET and DMA map).
pub trait PciFunction: Send + Sync {
    /// PCI config space read.
    fn config_read(&self, offset: u64, data: &mut [u8]);
    /// PCI config space write.
    fn config_write(&self, offset: u64, data: &[u8]);
    /// BAR read; offsets with nothing behind them read as 0.
    fn bar_read(&self, bar: usize, offset: u64, data: &mut [u8]);
    /// BAR write; offsets with nothing behind them are ignored.
    fn bar_write(&self, bar: usize, offset: u64, data: &[u8]);
    /// Whole-function reset (PCI FLR / vfio-user DEVICE_RESET).
    fn reset(&self);
    /// Replaces what the device can DMA to; returns once no DMA uses the
    /// memory it had before (see [`crate::DmaMemory::set_view`]).
    fn set_dma(&self, view: DmaView);
    /// Replaces the guest memory the device can DMA to (readable and
    /// writable throughout).
    fn set_memory(&self, mem: GuestRam) {
        self.set_dma(DmaView::read_write(mem));
    }
    /// The BARs of the function.
    fn bars(&self) -> &[Bar];
    /// Number of MSI-X vectors.
    fn msix_vectors(&self) -> u16;
    /// Decoded name of a BAR location, for register traces.
    fn reg_name(&self, bar: usize, offset: u64) -> String;
    /// Called by the transport when a deadline armed through
    /// [`crate::TimerSink`] passed.
    fn on_timer(&self, now_ns: u64) {
        let _ = now_ns;
    }
}

/// What became of a frame delivered to a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Placed, or dropped and counted: the frame is consumed.
    Done,
    /// Not taken, nothing changed: without `wait` another thread works on
    /// the queue the frame is for; a virtio-net port is also busy while its
    /// guest has posted no receive buffers. The caller may queue the frame.
    Busy,
}

/// A port on an emulated network: a NIC function or a virtio-net port.
pub trait NetPort: Send + Sync {
    /// Delivers a frame (without FCS) from the network. `sent_ns` is when it
    /// left its sender on the shared [`crate::Clock`], if known: the frame
    /// arrives, for IEEE 1588 receive stamps, when it was sent (plus the
    /// port's wire delay), not when the transport got round to delivering
    /// it. Without `wait`, a port that would have to wait for another
    /// thread returns [`Delivery::Busy`] and changes nothing.
    fn deliver(&self, frame: &[u8], sent_ns: Option<u64>, wait: bool) -> Delivery;
    /// Delivers frames in order, as [`Self::deliver`] does each, and returns
    /// how many were consumed: without `wait`, the frames from the first
    /// one the port is busy for on are left unchanged (the caller queues
    /// them). Default: [`Self::deliver`] for each; a port that can take a
    /// batch for the price of one frame overrides it.
    fn deliver_batch(&self, frames: Frames<'_>, sent_ns: Option<u64>, wait: bool) -> usize {
        for (i, f) in frames.iter().enumerate() {
            if self.deliver(f, sent_ns, wait) == Delivery::Busy {
                return i;
            }
        }
        frames.len()
    }
    /// Delivers a frame now, waiting for the port if it is busy.
    fn receive(&self, frame: &[u8]) {
        self.deliver(frame, None, true);
    }
    /// Connects or disconnects the emulated cable (the driver sees a link
    /// status change).
    fn set_link(&self, up: bool);
    /// The link as the port's driver sees it.
    fn link_up(&self) -> bool;
    /// Sets the wire delay of frames arriving at this port: their IEEE 1588
    /// receive time stamps are taken `ns` nanoseconds after arrival, so a
    /// path-delay measurement sees the delay (see [`crate::ptp`]). Default:
    /// ignored (a port without time stamps).
    fn set_wire_delay_ns(&self, ns: u64) {
        let _ = ns;
    }
    /// Sets how long the port's autonegotiation takes from a PHY reset,
    /// restart, power-up or cable connect until link (IEEE 802.3 clause 28;
    /// default [`crate::phy::AUTONEG_NS`]); a negotiation under way keeps its
    /// end. Default: ignored (a port whose medium negotiates nothing).
    fn set_autoneg_ns(&self, ns: u64) {
        let _ = ns;
    }
    /// Cables the port's PHY to another port's (IEEE 802.3 clause 28
    /// between the two, [`crate::cable`]) instead of the ideal partner;
    /// false when the port has no twisted-pair PHY (default).
    fn attach_cable(&self, end: crate::cable::CableEnd) -> bool {
        let _ = end;
        false
    }
}

/// What the control path reads of a port, and the faults it injects.
pub trait Introspect: Send + Sync {
    /// Short model name, e.g. `igb`, `virtio-net`.
    fn model(&self) -> &'static str;
    /// Counters totalled over the port's life, by name, read without
    /// clearing anything the guest reads.
    fn counters(&self) -> Vec<(String, u64)>;
    /// Guest (or client) errors the port tolerated: dropped and counted,
    /// never fatal.
    fn error_counters(&self) -> Vec<(&'static str, u64)>;
    /// What the driver has programmed.
    fn driver_view(&self) -> DriverView;
    /// Descriptors the port processed over its life: (transmit, receive) — the ring
    /// entries its head moved past (data and context descriptors). Default: none.
    fn descriptors(&self) -> (u64, u64) {
        (0, 0)
    }
    /// Injects a fault. Default: none is supported.
    fn inject(&self, fault: Fault) -> Result<(), FaultError> {
        let _ = fault;
        Err(FaultError::Unsupported("fault injection"))
    }
}

/// A port on an emulated network that the control path can inspect: what a
/// registry of ports holds, whatever the port's transport.
pub trait Port: NetPort + Introspect {}

impl<T: NetPort + Introspect + ?Sized> Port for T {}

/// An emulated NIC function: a PCI function that is a port on a network and
/// can be inspected.
pub trait NicFunction: PciFunction + Port {}

impl<T: PciFunction + Port + ?Sized> NicFunction for T {}
