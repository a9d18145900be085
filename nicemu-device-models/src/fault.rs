// SPDX-License-Identifier: Apache-2.0
//! Faults the control path injects, shared by igb and ixgbe, each shown to
//! the guest driver the way real hardware would show it: CRC-errored frames
//! (CRCERRS), receive starvation (MPC/RNBC), a stalled transmit queue (the
//! driver's TX hang detection fires and it resets the adapter), an NVM whose
//! checksum is wrong after the next reset, a counter preset near its wrap point,
//! a PTP clock step.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A fault to inject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The next N received frames arrive with a bad CRC.
    CorruptRx(u32),
    /// The next N received frames find no receive buffer (missed).
    DropRx(u32),
    /// Transmit queue stops fetching descriptors until the next device reset.
    StallTx(u16),
    /// The NVM checksum is wrong from the next reset on.
    NvmCorrupt,
    /// A statistics counter is set to a value (e.g. near its wrap point).
    CounterPreset(String, u64),
    /// The PTP clock steps by this many nanoseconds.
    ClockStep(i64),
}

/// Why a fault cannot be injected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// No statistics counter of that name.
    #[error("no counter named '{0}' (see `nicemu ctl stats DEV` for names)")]
    UnknownCounter(String),
    /// Queue beyond the device's queues.
    #[error("queue {0} does not exist on this device (0..{1})")]
    BadQueue(u16, u16),
    /// The device has no such facility.
    #[error("{0} is not supported by this device")]
    Unsupported(&'static str),
}

/// What happens to the next received frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxFault {
    /// Deliver as CRC-errored (dropped and counted in CRCERRS).
    Corrupt,
    /// Drop as missed (MPC/RNBC).
    Drop,
}

/// Pending faults of one device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    corrupt_rx: u32,
    drop_rx: u32,
    stalled_tx: u128,
    nvm_corrupt_on_reset: bool,
}

impl Faults {
    /// Records a receive or transmit fault; other kinds are the device's to apply.
    pub fn arm(&mut self, f: &Fault, queues: u16) -> Result<(), FaultError> {
        match f {
            Fault::CorruptRx(n) => self.corrupt_rx = self.corrupt_rx.saturating_add(*n),
            Fault::DropRx(n) => self.drop_rx = self.drop_rx.saturating_add(*n),
            Fault::StallTx(q) if *q < queues.min(128) => self.stalled_tx |= 1 << q,
            Fault::StallTx(q) => return Err(FaultError::BadQueue(*q, queues)),
            Fault::NvmCorrupt => self.nvm_corrupt_on_reset = true,
            Fault::CounterPreset(..) | Fault::ClockStep(_) => {}
        }
        Ok(())
    }

    /// Consumes the fault for the next received frame, if any.
    pub fn take_rx(&mut self) -> Option<RxFault> {
        if self.corrupt_rx > 0 {
            self.corrupt_rx -= 1;
            Some(RxFault::Corrupt)
        } else if self.drop_rx > 0 {
            self.drop_rx -= 1;
            Some(RxFault::Drop)
        } else {
            None
        }
    }

    /// True while transmit queue `q` is stalled.
    #[inline]
    pub fn tx_stalled(&self, q: usize) -> bool {
        q < 128 && self.stalled_tx & (1 << q) != 0
    }

    /// A device reset clears stalls; returns whether the NVM is to be
    /// corrupted now (once).
    pub fn on_reset(&mut self) -> bool {
        self.stalled_tx = 0;
        std::mem::take(&mut self.nvm_corrupt_on_reset)
    }
}

/// [`Faults`] shared by the control path (arming) and the data path of every
/// queue: the data path checks an atomic flag and takes the lock only while a
/// fault is armed, so normal traffic never contends here.
#[derive(Debug, Default)]
pub struct SharedFaults {
    armed: AtomicBool,
    inner: Mutex<Faults>,
}

impl SharedFaults {
    fn with<R>(&self, f: impl FnOnce(&mut Faults) -> R) -> R {
        let mut g = crate::sync::lock(&self.inner);
        let r = f(&mut g);
        self.armed.store(*g != Faults::default(), Ordering::Release);
        r
    }

    /// No fault is armed (one atomic load).
    #[inline]
    pub fn idle(&self) -> bool {
        !self.armed.load(Ordering::Acquire)
    }

    /// See [`Faults::arm`].
    pub fn arm(&self, f: &Fault, queues: u16) -> Result<(), FaultError> {
        self.with(|x| x.arm(f, queues))
    }

    /// See [`Faults::take_rx`].
    #[inline]
    pub fn take_rx(&self) -> Option<RxFault> {
        if self.idle() {
            return None;
        }
        self.with(Faults::take_rx)
    }

    /// See [`Faults::tx_stalled`].
    #[inline]
    pub fn tx_stalled(&self, q: usize) -> bool {
        !self.idle() && self.with(|x| x.tx_stalled(q))
    }

    /// See [`Faults::on_reset`].
    pub fn on_reset(&self) -> bool {
        !self.idle() && self.with(Faults::on_reset)
    }
}

/// What the guest driver has programmed, for `nicemu ctl list`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverView {
    /// Link reported to the driver.
    pub link_up: bool,
    /// Receiver enabled (RCTL.EN / RXCTRL.RXEN).
    pub rx_enabled: bool,
    /// Transmitter enabled (TCTL.EN / DMATXCTL.TE).
    pub tx_enabled: bool,
    /// Receive queues with their enable bit set.
    pub rx_queues: Vec<u16>,
    /// Transmit queues with their enable bit set.
    pub tx_queues: Vec<u16>,
    /// Interrupt mode and masks, e.g. `MSI-X EIMS=0x1f IMS=0x50000004`.
    pub interrupts: String,
    /// The driver has taken control (CTRL_EXT.DRV_LOAD).
    pub driver_loaded: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_faults_count_down_and_reset_clears_stalls() {
        let mut f = Faults::default();
        f.arm(&Fault::CorruptRx(2), 16).unwrap();
        f.arm(&Fault::DropRx(1), 16).unwrap();
        assert_eq!(f.take_rx(), Some(RxFault::Corrupt));
        assert_eq!(f.take_rx(), Some(RxFault::Corrupt));
        assert_eq!(f.take_rx(), Some(RxFault::Drop));
        assert_eq!(f.take_rx(), None);
        f.arm(&Fault::StallTx(3), 16).unwrap();
        assert!(f.tx_stalled(3) && !f.tx_stalled(2));
        assert_eq!(
            f.arm(&Fault::StallTx(16), 16),
            Err(FaultError::BadQueue(16, 16))
        );
        f.arm(&Fault::NvmCorrupt, 16).unwrap();
        assert!(f.on_reset());
        assert!(!f.tx_stalled(3));
        assert!(!f.on_reset(), "NVM corruption happens once");
        f.arm(&Fault::CorruptRx(u32::MAX), 16).unwrap();
        f.arm(&Fault::CorruptRx(5), 16).unwrap();
    }
}
