//! Test doubles for device unit tests: recording interrupt sink and wire,
//! in-memory guest RAM.

use std::sync::{Arc, Mutex};

use vm_memory::GuestAddress;

use crate::{Clock, DeviceEnv, FrameSink, GuestRam, InterruptSink, TimerSink};

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

/// Guest RAM of `size` bytes at address 0.
pub fn ram(size: usize) -> GuestRam {
    GuestRam::from_ranges(&[(GuestAddress(0), size)]).expect("test RAM")
}
