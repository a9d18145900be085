// SPDX-License-Identifier: Apache-2.0
//! Test doubles for device unit tests: recording interrupt sink and wire,
//! in-memory guest RAM, and a driver double that drives any function
//! ([`driver`]), and the ixgbe driver's bit-banged I2C master ([`i2c_master`]).
#![allow(
    clippy::unwrap_used,
    reason = "test doubles: a set-up that fails panics"
)]

pub mod driver;
pub mod i2c_master;

use std::sync::{Arc, Mutex};

use vm_memory::GuestAddress;

use crate::dma::GuestRam;
use crate::env::{Clock, DeviceEnv, FrameSink, InterruptSink, TimerSink};

/// An interrupt the device signalled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Irq {
    /// MSI-X vector.
    Msix(u16),
    /// MSI / INTx.
    Legacy,
}

/// Records interrupts.
#[derive(Debug, Default)]
pub struct RecordingIrq(pub Mutex<Vec<Irq>>);

impl RecordingIrq {
    /// Takes the recorded interrupts.
    pub fn take(&self) -> Vec<Irq> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl InterruptSink for RecordingIrq {
    fn msix(&self, vector: u16) {
        self.0.lock().unwrap().push(Irq::Msix(vector));
    }
    fn legacy(&self) {
        self.0.lock().unwrap().push(Irq::Legacy);
    }
}

/// Records transmitted frames.
#[derive(Debug, Default)]
pub struct RecordingWire(pub Mutex<Vec<Vec<u8>>>);

impl RecordingWire {
    /// Takes the recorded frames.
    pub fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl FrameSink for RecordingWire {
    fn transmit(&self, frame: &[u8]) {
        self.0.lock().unwrap().push(frame.to_vec());
    }
}

/// A clock that stands still unless moved.
#[derive(Debug, Default)]
pub struct FakeClock(pub Mutex<u64>);

impl FakeClock {
    /// Sets the time.
    pub fn set(&self, ns: u64) {
        *self.0.lock().unwrap() = ns;
    }
}

impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        *self.0.lock().unwrap()
    }
}

/// Records armed deadlines.
#[derive(Debug, Default)]
pub struct RecordingTimer(pub Mutex<Vec<u64>>);

impl RecordingTimer {
    /// Takes the armed deadlines.
    pub fn take(&self) -> Vec<u64> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

impl TimerSink for RecordingTimer {
    fn arm(&self, deadline_ns: u64) {
        self.0.lock().unwrap().push(deadline_ns);
    }
}

/// A device environment with recording sinks.
pub struct TestEnv {
    /// Interrupts.
    pub irq: Arc<RecordingIrq>,
    /// Transmitted frames.
    pub wire: Arc<RecordingWire>,
    /// The clock (set it to move time).
    pub clock: Arc<FakeClock>,
    /// Armed timer deadlines.
    pub timer: Arc<RecordingTimer>,
    /// The environment to hand to a device.
    pub env: DeviceEnv,
}

impl TestEnv {
    /// Builds a fresh environment.
    pub fn new() -> Self {
        let irq = Arc::new(RecordingIrq::default());
        let wire = Arc::new(RecordingWire::default());
        let clock = Arc::new(FakeClock::default());
        let timer = Arc::new(RecordingTimer::default());
        let env = DeviceEnv {
            irq: irq.clone(),
            wire: wire.clone(),
            clock: clock.clone(),
            timer: timer.clone(),
        };
        TestEnv {
            irq,
            wire,
            clock,
            timer,
            env,
        }
    }
}

impl Default for TestEnv {
    fn default() -> Self {
        Self::new()
    }
}

/// Turns on memory space and bus mastering in PCI COMMAND, as the drivers'
/// probe does (`pci_enable_device_mem`, `pci_set_master`): without it the
/// function does no DMA.
pub fn bus_master(d: &dyn crate::PciFunction) {
    d.config_write(4, &0x0006u16.to_le_bytes());
}

/// Guest RAM of `size` bytes at address 0.
pub fn ram(size: usize) -> GuestRam {
    GuestRam::from_ranges(&[(GuestAddress(0), size)]).expect("test RAM")
}

/// Runs a byte program against a device, as the fuzz targets and the hostile
/// input tests do: each 7-byte step is an operation (BAR0 write or read at any
/// offset, a write to any BAR at any offset with any width, a received frame,
/// a timer tick) with its offset and value. Exercises every guest-reachable
/// entry point with arbitrary values.
pub fn run_program(d: &dyn crate::NicFunction, prog: &[u8]) {
    let mut p = prog;
    while p.len() >= 7 {
        let op = p[0];
        let off = u64::from(u32::from_le_bytes([p[1], p[2], p[3] & 0x07, 0])) & !3;
        let val = u32::from_le_bytes([p[3], p[4], p[5], p[6]]);
        p = &p[7..];
        match op % 7 {
            0 | 1 => d.bar_write(0, off, &val.to_le_bytes()),
            2 => {
                let mut b = [0u8; 4];
                d.bar_read(0, off, &mut b);
            }
            3 => {
                let n = p.len().min(usize::from(op >> 5) + 1);
                d.bar_write(usize::from(op >> 3) % 6, u64::from(val), &p[..n]);
            }
            4 => {
                let n = (val as usize % 1600).min(p.len());
                d.receive(&p[..n]);
            }
            5 => {
                let mut b = [0u8; 4];
                d.config_read(u64::from(val % 4200), &mut b);
                d.config_write(u64::from(val % 4200), &p[..p.len().min(2)]);
            }
            _ => d.on_timer(u64::from(val)),
        }
    }
}

/// A small deterministic pseudo-random generator (xorshift64*) for tests.
#[derive(Debug, Clone)]
pub struct XorShift(pub u64);

impl XorShift {
    /// Next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Fills a buffer.
    pub fn fill(&mut self, b: &mut [u8]) {
        for c in b.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            c.copy_from_slice(&v[..c.len()]);
        }
    }
}
