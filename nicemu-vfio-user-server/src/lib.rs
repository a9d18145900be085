// SPDX-License-Identifier: Apache-2.0
//! A vfio-user server for one PCI device, bounded and safe against a hostile
//! client. Written from QEMU's `docs/interop/vfio-user.rst` (section names
//! in the docs refer to it).
//!
//! The device implements [`PciDevice`]: config space and BAR accesses,
//! reset, the guest memory it reaches by DMA ([`DmaMaps`]) and the eventfds
//! the client assigns to its interrupts (SET_IRQS). The server owns the
//! rest: the socket's framing and descriptors, the codec ([`codec`]), typed
//! requests, a dispatcher with one method per command, and the client's DMA
//! mappings ([`dma`], checked by [`nicemu_memfile`]).
//!
//! ```no_run
//! # use std::fs::File;
//! # use nicemu_vfio_user_server::{DmaMaps, Endpoint, IrqError, PciDevice, Server};
//! struct Nothing;
//! impl PciDevice for Nothing {
//!     fn config_size(&self) -> u64 { 4096 }
//!     fn bar_size(&self, bar: u32) -> u64 { if bar == 0 { 0x1000 } else { 0 } }
//!     fn config_read(&mut self, _: u64, data: &mut [u8]) { data.fill(0) }
//!     fn config_write(&mut self, _: u64, _: &[u8]) {}
//!     fn bar_read(&mut self, _: u32, _: u64, data: &mut [u8]) { data.fill(0) }
//!     fn bar_write(&mut self, _: u32, _: u64, _: &[u8]) {}
//!     fn reset(&mut self) {}
//!     fn set_dma(&mut self, _: DmaMaps) {}
//!     fn msix_vectors(&self) -> u32 { 4 }
//!     fn set_irqs(&mut self, _: u32, _: u32, _: u32, _: u32, _: Vec<File>) -> Result<(), IrqError> {
//!         Ok(())
//!     }
//!     fn clear_irqs(&mut self) {}
//! }
//! let listener = std::os::unix::net::UnixListener::bind("/tmp/dev.sock")?;
//! let endpoint = Endpoint::new("dev0", Nothing);
//! Server::new(listener, endpoint).run();
//! # Ok::<(), std::io::Error>(())
//! ```
// The length rule is for non-test code (tests read best as one scenario).
#![cfg_attr(test, allow(clippy::too_many_lines))]

pub mod codec;
mod conn;
mod device;
mod dispatch;
pub mod dma;
mod endpoint;
mod error;
mod fds;
pub mod limits;
mod request;
mod server;

pub use device::{DeviceTables, PciDevice};
pub use dma::DmaMaps;
pub use endpoint::Endpoint;
pub use error::{CommandError, ConnError, IrqError, RequestError};
pub use server::Server;
