//! Transport-free models of Intel NICs: igb (82576) and ixgbe (82599).
//!
//! A device is a state machine behind [`NicFunction`]: PCI config space reads and
//! writes, BAR reads and writes, reset, and a hook to push a received frame. It
//! talks to the world only through the traits it is given: guest memory
//! ([`GuestRam`], bounds-checked by `vm-memory`), an [`InterruptSink`], a
//! [`FrameSink`] for transmitted frames and a [`Clock`]. No I/O, no threads, no
//! sockets live here, so unit tests drive a device with in-memory guest RAM and a
//! recording interrupt sink.
//!
//! Concurrency: a function is shared (`Arc<dyn NicFunction>`) by the transport
//! thread that carries its register accesses, the threads that deliver received
//! frames and the timer. There is no lock of the whole device: registers and
//! counters are atomics, each transmit and each receive queue has its own lock,
//! and the small shared pieces (interrupt causes, time stamp latches, control
//! state such as the PHY and NVM) have short locks of their own. A frame for
//! receive queue 1 never waits for queue 0's work, nor for a transmit queue.

pub mod bar;
pub mod desc;
pub mod fault;
pub mod igb;
pub mod ixgbe;
pub mod moderation;
pub mod nvm;
pub mod offload;
pub mod pci;
pub mod phy;
pub mod ptp;
pub mod regfile;
pub mod ring;
pub mod rss;
pub mod stats;
pub mod sync;
#[doc(hidden)]
pub mod testutil;
pub mod txframe;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

pub use fault::{DriverView, Fault, FaultError};
pub use pci::{Bar, BarKind};

/// Guest physical memory as the device sees it through DMA.
pub type GuestRam = vm_memory::GuestMemoryMmap<()>;

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
}

/// Where a device asks to be called back at a time (interrupt moderation,
/// link timers). The transport calls [`NicFunction::on_timer`] at or after the
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

/// nicemu's own counters of a device: guest programming errors it tolerated
/// (bad input is dropped and counted, never fatal) and frames it dropped
/// where the hardware counts nothing, so every frame the switch hands a
/// device is accounted for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuestErrors {
    /// Descriptor or buffer addresses outside guest memory.
    pub dma_errors: u64,
    /// Tail values beyond the ring or rings with no descriptors.
    pub ring_errors: u64,
    /// Transmit frames dropped as malformed (too long, bad context, no EOP).
    pub tx_malformed: u64,
    /// Non-TSO transmit frames dropped as longer than a jumbo frame.
    pub tx_oversize: u64,
    /// Register accesses to offsets with no register.
    pub unknown_regs: u64,
    /// Transmit doorbells and received frames that found bus mastering off
    /// (PCI COMMAND.BME clear): nothing fetched, the frame dropped.
    pub dma_blocked: u64,
    /// Frames from the wire dropped because the function had no link (or
    /// its MAC looped back and did not listen to the wire). The hardware
    /// never sees such a frame, so no statistics register counts it.
    pub rx_no_link: u64,
    /// Frames dropped because the receiver was disabled (RCTL.EN /
    /// RXCTRL.RXEN clear). The statistics registers "only increment if
    /// receives are enabled" (82576 §8.19, 82599 §8.2.3.23), so only nicemu
    /// counts these.
    pub rx_disabled: u64,
    /// Frames the destination address or VLAN filters rejected (§7.1.1;
    /// counted by no statistics register).
    pub rx_filtered: u64,
}

impl GuestErrors {
    /// The counters by name, for the control path.
    pub fn list(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("dma_errors", self.dma_errors),
            ("ring_errors", self.ring_errors),
            ("tx_malformed", self.tx_malformed),
            ("tx_oversize", self.tx_oversize),
            ("unknown_regs", self.unknown_regs),
            ("dma_blocked", self.dma_blocked),
            ("rx_no_link", self.rx_no_link),
            ("rx_disabled", self.rx_disabled),
            ("rx_filtered", self.rx_filtered),
        ]
    }
}

/// Guest error counters of one device, counted by every queue without a lock.
#[derive(Debug, Default)]
pub struct ErrorCounters {
    dma: AtomicU64,
    ring: AtomicU64,
    tx_malformed: AtomicU64,
    tx_oversize: AtomicU64,
    unknown_regs: AtomicU64,
    dma_blocked: AtomicU64,
    rx_no_link: AtomicU64,
    rx_disabled: AtomicU64,
    rx_filtered: AtomicU64,
}

impl ErrorCounters {
    /// A descriptor or buffer address outside guest memory.
    pub fn dma(&self) {
        self.dma.fetch_add(1, Ordering::Relaxed);
    }
    /// A tail beyond the ring or a ring with no descriptors.
    pub fn ring(&self) {
        self.ring.fetch_add(1, Ordering::Relaxed);
    }
    /// A malformed transmit frame dropped.
    pub fn tx_malformed(&self) {
        self.tx_malformed.fetch_add(1, Ordering::Relaxed);
    }
    /// A finished transmit frame dropped, counted by why.
    pub fn tx_drop(&self, why: &txframe::TxDrop) {
        match why {
            txframe::TxDrop::Oversize(_) => &self.tx_oversize,
            _ => &self.tx_malformed,
        }
        .fetch_add(1, Ordering::Relaxed);
    }
    /// An access to an offset with no register.
    pub fn unknown_reg(&self) {
        self.unknown_regs.fetch_add(1, Ordering::Relaxed);
    }
    /// A doorbell or frame that found bus mastering off.
    pub fn dma_blocked(&self) {
        self.dma_blocked.fetch_add(1, Ordering::Relaxed);
    }
    /// A frame from the wire dropped for want of link.
    pub fn rx_no_link(&self) {
        self.rx_no_link.fetch_add(1, Ordering::Relaxed);
    }
    /// A frame dropped at a disabled receiver.
    pub fn rx_disabled(&self) {
        self.rx_disabled.fetch_add(1, Ordering::Relaxed);
    }
    /// A frame the address or VLAN filters rejected.
    pub fn rx_filtered(&self) {
        self.rx_filtered.fetch_add(1, Ordering::Relaxed);
    }
    /// The counters now.
    pub fn snapshot(&self) -> GuestErrors {
        GuestErrors {
            dma_errors: self.dma.load(Ordering::Relaxed),
            ring_errors: self.ring.load(Ordering::Relaxed),
            tx_malformed: self.tx_malformed.load(Ordering::Relaxed),
            tx_oversize: self.tx_oversize.load(Ordering::Relaxed),
            unknown_regs: self.unknown_regs.load(Ordering::Relaxed),
            dma_blocked: self.dma_blocked.load(Ordering::Relaxed),
            rx_no_link: self.rx_no_link.load(Ordering::Relaxed),
            rx_disabled: self.rx_disabled.load(Ordering::Relaxed),
            rx_filtered: self.rx_filtered.load(Ordering::Relaxed),
        }
    }
}

/// What DMA reaches at one moment: the guest memory the device may read and
/// the part of it the device may write (a mapping's access flags, as an
/// IOMMU enforces them: a read-only mapping is in `read` only).
#[derive(Debug, Default)]
pub struct DmaView {
    /// Memory the device may read (descriptors, transmit buffers).
    pub read: GuestRam,
    /// Memory the device may write (write-backs, receive buffers).
    pub write: GuestRam,
}

impl DmaView {
    /// One memory, readable and writable throughout.
    pub fn read_write(mem: GuestRam) -> DmaView {
        DmaView {
            read: mem.clone(),
            write: mem,
        }
    }
}

/// The guest memory a device reaches by DMA, and whether it may reach it at
/// all (PCI COMMAND.BME, PCI 3.0 §6.2.2: with bus mastering off a function
/// issues no memory requests). The transport replaces the memory when the
/// VM's memory map changes; each doorbell or received frame takes the
/// current view once (a reference count, no copy) and works on it.
#[derive(Debug, Default)]
pub struct DmaMemory {
    view: RwLock<Arc<DmaView>>,
    bus_master: AtomicBool,
}

impl DmaMemory {
    /// The current view, or `None` while bus mastering is off.
    pub fn get(&self) -> Option<Arc<DmaView>> {
        let v = self.view.read().unwrap_or_else(|e| e.into_inner());
        self.bus_master
            .load(Ordering::Acquire)
            .then(|| Arc::clone(&v))
    }

    /// The current view whether or not bus mastering is on (inspection and
    /// tests; DMA goes through [`Self::get`]).
    pub fn view(&self) -> Arc<DmaView> {
        Arc::clone(&self.view.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Replaces the guest memory with `mem`, readable and writable.
    pub fn set(&self, mem: GuestRam) {
        self.set_view(DmaView::read_write(mem));
    }

    /// Replaces the view, and returns once no DMA works on the old one: a
    /// removed mapping is not used after this returns (work per doorbell
    /// and per frame is bounded, so the wait is).
    pub fn set_view(&self, view: DmaView) {
        let old = std::mem::replace(
            &mut *self.view.write().unwrap_or_else(|e| e.into_inner()),
            Arc::new(view),
        );
        wait_unused(&old);
    }

    /// Turns bus mastering on or off; off returns once no DMA is in flight.
    pub fn set_bus_master(&self, on: bool) {
        let current = {
            let v = self.view.write().unwrap_or_else(|e| e.into_inner());
            self.bus_master.store(on, Ordering::Release);
            Arc::clone(&v)
        };
        if !on {
            // Ours and the table's reference.
            wait_unused_but(&current, 2);
        }
    }

    /// Bus mastering is on.
    pub fn bus_master(&self) -> bool {
        self.bus_master.load(Ordering::Acquire)
    }
}

/// Waits until `view` is referenced by nobody but the caller.
fn wait_unused(view: &Arc<DmaView>) {
    wait_unused_but(view, 1);
}

/// Waits until `view` has `owners` references left (the snapshots of DMA in
/// flight on other threads are gone).
fn wait_unused_but(view: &Arc<DmaView>, owners: usize) {
    let mut spins = 0u32;
    while Arc::strong_count(view) > owners {
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
        spins = spins.saturating_add(1);
    }
    // Pairs with the release of each snapshot's drop: their accesses are done.
    std::sync::atomic::fence(Ordering::Acquire);
}

/// One PCI network function, as a transport sees it. Every method takes
/// `&self`: the function locks internally only what an operation touches (see
/// the crate documentation), so transports call it from any thread.
pub trait NicFunction: Send + Sync {
    /// Short model name, e.g. `igb`.
    fn model(&self) -> &'static str;
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
    /// Replaces the guest memory the device can DMA to (readable and
    /// writable throughout).
    fn set_memory(&self, mem: GuestRam) {
        self.set_dma(DmaView::read_write(mem));
    }
    /// Replaces what the device can DMA to; returns once no DMA uses the
    /// memory it had before (see [`DmaMemory::set_view`]).
    fn set_dma(&self, view: DmaView);
    /// Delivers a frame from the wire to the receive path.
    fn receive(&self, frame: &[u8]);
    /// Delivers a frame that left its sender at `sent_ns` (on the shared
    /// [`Clock`]) and was queued on the way: the frame arrives, for IEEE 1588
    /// receive time stamps, when it was sent (plus the port's wire delay), not
    /// when the transport got round to delivering it. Default: [`Self::receive`].
    fn receive_at(&self, frame: &[u8], sent_ns: u64) {
        let _ = sent_ns;
        self.receive(frame);
    }
    /// As [`Self::receive_at`], but only if the frame can be placed without
    /// waiting for another thread working on the same receive queue; returns
    /// false (and changes nothing) otherwise, so the caller can queue the
    /// frame instead of blocking. Default: always delivers.
    fn try_receive_at(&self, frame: &[u8], sent_ns: u64) -> bool {
        self.receive_at(frame, sent_ns);
        true
    }
    /// The BARs of the function.
    fn bars(&self) -> &[Bar];
    /// Number of MSI-X vectors.
    fn msix_vectors(&self) -> u16;
    /// Decoded name of a BAR location, for register traces.
    fn reg_name(&self, bar: usize, offset: u64) -> String;
    /// Device-wide counters of guest errors (bad DMA addresses, bad rings…).
    fn error_counters(&self) -> Vec<(&'static str, u64)>;
    /// Statistics counters totalled since the last function reset, read
    /// without clearing anything the guest reads.
    fn counters(&self) -> Vec<(String, u64)>;
    /// Connects or disconnects the emulated cable (the driver sees a link
    /// status change interrupt).
    fn set_link(&self, up: bool);
    /// Injects a fault.
    fn inject(&self, fault: Fault) -> Result<(), FaultError>;
    /// What the driver has programmed.
    fn driver_view(&self) -> DriverView;
    /// Sets the wire delay of frames arriving at this function: their IEEE 1588
    /// receive time stamps are taken `ns` nanoseconds after arrival, so a
    /// path-delay measurement sees the delay (see [`ptp`]). Default: ignored.
    fn set_wire_delay_ns(&self, ns: u64) {
        let _ = ns;
    }
    /// Called by the transport when a deadline armed through [`TimerSink`] passed.
    fn on_timer(&self, now_ns: u64) {
        let _ = now_ns;
    }
}

/// Reads a little-endian value of 1, 2, 4 or 8 bytes.
pub fn le_value(data: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = data.len().min(8);
    b[..n].copy_from_slice(&data[..n]);
    u64::from_le_bytes(b)
}

/// Writes a little-endian value into 1..=8 bytes.
pub fn put_le_value(data: &mut [u8], v: u64) {
    let b = v.to_le_bytes();
    let n = data.len().min(8);
    data[..n].copy_from_slice(&b[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use vm_memory::{GuestAddress, GuestMemoryBackend};

    fn ram() -> GuestRam {
        GuestRam::from_ranges(&[(GuestAddress(0), 0x1000)]).unwrap()
    }

    #[test]
    fn a_replaced_view_is_not_used_after_set_returns() {
        let m = Arc::new(DmaMemory::default());
        m.set(ram());
        m.set_bus_master(true);
        // DMA in flight on another thread holds a snapshot.
        let snap = m.get().expect("bus master on");
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let setter = {
            let m = m.clone();
            std::thread::spawn(move || {
                m.set_view(DmaView::default());
                done_tx.send(()).unwrap();
            })
        };
        assert!(
            done_rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "set_view returned while DMA still used the old memory"
        );
        drop(snap);
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        setter.join().unwrap();
        assert!(m.get().unwrap().read.num_regions() == 0);
    }

    #[test]
    fn bus_master_off_means_no_view_and_waits_for_dma_in_flight() {
        let m = Arc::new(DmaMemory::default());
        m.set(ram());
        assert!(m.get().is_none(), "off after reset");
        m.set_bus_master(true);
        let snap = m.get().unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let t = {
            let m = m.clone();
            std::thread::spawn(move || {
                m.set_bus_master(false);
                done_tx.send(()).unwrap();
            })
        };
        assert!(done_rx.recv_timeout(Duration::from_millis(200)).is_err());
        drop(snap);
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        t.join().unwrap();
        assert!(m.get().is_none());
        assert_eq!(m.view().read.num_regions(), 1, "the memory is kept");
    }
}
