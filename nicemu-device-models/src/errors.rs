// SPDX-License-Identifier: Apache-2.0
//! Counters of guest programming errors a device tolerated: bad input is
//! dropped and counted, never fatal.

use std::sync::atomic::{AtomicU64, Ordering};

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
    /// A non-TSO transmit frame longer than a jumbo frame dropped.
    pub fn tx_oversize(&self) {
        self.tx_oversize.fetch_add(1, Ordering::Relaxed);
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
