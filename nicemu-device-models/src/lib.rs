// SPDX-License-Identifier: Apache-2.0
//! Transport-free models of Intel NICs: igb (82576) and ixgbe (82599).
//!
//! A device is a state machine behind [`NicFunction`]: a [`PciFunction`]
//! (config space and BAR accesses, reset, DMA memory) that is a [`NetPort`]
//! (frames delivered to it, a link) and can be inspected ([`Introspect`]:
//! counters, the driver's view). It talks to the world only through the
//! traits it is given: guest memory
//! ([`GuestRam`], bounds-checked by `vm-memory`), an [`InterruptSink`], a
//! [`FrameSink`] for transmitted frames and a [`Clock`]. No I/O, no threads, no
//! sockets live here, so unit tests drive a device with in-memory guest RAM and a
//! recording interrupt sink.
//!
//! Shape: one Intel NIC function, two register maps. [`function::Function`]
//! is what every function has and does the same way on both parts (register
//! file and the locks its hooks need, queues, DMA, reset, the receive and
//! transmit pipelines, counters, faults, IEEE 1588); a part is a
//! [`function::Model`] (register table and [`function::Layout`], BARs, NVM,
//! link medium, reset) with its [`function::Interrupts`],
//! [`function::Control`], [`function::Receive`] and [`function::Transmit`],
//! one module each: [`igb::I82576`] (`Igb = Function<I82576>`) and
//! [`ixgbe::I82599`] (`Ixgbe = Function<I82599>`). A third part (an i210, an
//! X550) is a directory like `igb/` of what differs. The packet helpers the
//! models share with virtio-net (checksums, TSO, the Toeplitz hash) are the
//! `nicemu_net_util` crate.
//!
//! Concurrency: a function is shared (`Arc<dyn NicFunction>`) by the transport
//! thread that carries its register accesses, the threads that deliver received
//! frames and the timer. There is no lock of the whole device: registers and
//! counters are atomics, each transmit and each receive queue has its own lock,
//! and the small shared pieces (interrupt causes, time stamp latches, control
//! state such as the PHY and NVM) have short locks of their own. A frame for
//! receive queue 1 never waits for queue 0's work, nor for a transmit queue.
//!
//! The crate has no `unsafe` code: guest memory is reached only through
//! `vm-memory`'s bounds-checked accessors. Test doubles (`testutil`) are
//! built for this crate's tests and behind the `test-utils` feature.
// The length rule is for non-test code (tests read best as one scenario).
#![cfg_attr(test, allow(clippy::too_many_lines))]
#![forbid(unsafe_code)]

pub mod autoneg;
pub mod bar;
pub mod batch;
pub mod cable;
pub mod desc;
pub mod dma;
pub mod env;
pub mod errors;
pub mod fault;
pub mod function;
pub mod igb;
pub mod ixgbe;
pub mod moderation;
pub mod nvm;
pub mod pci;
pub mod phy;
pub mod port;
pub mod ptp;
pub mod regfile;
pub mod ring;
pub mod rss;
pub mod stats;
pub mod sync;
#[cfg(any(test, feature = "test-utils"))]
pub mod testutil;
pub mod txframe;
pub mod vf;

pub use batch::{FrameBatch, Frames};
pub use dma::{DmaMemory, DmaView, GuestRam, GuestSlice};
pub use env::{Clock, DeviceEnv, FrameSink, InterruptSink, MonotonicClock, TimerSink};
pub use errors::{ErrorCounters, GuestErrors};
pub use fault::{DriverView, Fault, FaultError};
pub use pci::{Bar, BarKind};
pub use port::{Delivery, Introspect, NetPort, NicFunction, PciFunction, Port};
