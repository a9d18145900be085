// SPDX-License-Identifier: Apache-2.0
//! The server side of one device: the device, the DMA table its client
//! built and the tables advertised for it, served one connection at a time.

use std::os::unix::net::UnixStream;

use crate::conn::Conn;
use crate::device::{DeviceTables, PciDevice};
use crate::dispatch::Dispatcher;
use crate::dma::DmaTable;
use crate::error::ConnError;

/// A device with the state a client gives it (DMA mappings, interrupt
/// eventfds), served to one client at a time.
#[derive(Debug)]
pub struct Endpoint<D> {
    id: String,
    device: D,
    dma: DmaTable,
    tables: DeviceTables,
}

impl<D: PciDevice> Endpoint<D> {
    /// Serves `device`; `id` prefixes log lines.
    pub fn new(id: impl Into<String>, device: D) -> Self {
        let tables = DeviceTables::of(&device);
        Endpoint {
            id: id.into(),
            device,
            dma: DmaTable::default(),
            tables,
        }
    }

    /// The id log lines carry.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// The region and interrupt tables advertised.
    pub fn tables(&self) -> &DeviceTables {
        &self.tables
    }

    /// Serves one connected client on `stream` until it goes away; `Ok`
    /// when it closed the connection between messages. What the client set
    /// up stays until [`Self::disconnect`].
    pub fn serve(&mut self, stream: UnixStream) -> Result<(), ConnError> {
        let dispatcher = Dispatcher::new(&self.id, &mut self.device, &mut self.dma, &self.tables);
        Conn::new(stream, dispatcher)?.run()
    }

    /// Forgets the client: drops its DMA mappings and interrupt eventfds and
    /// resets the device (after every connection).
    pub fn disconnect(&mut self) {
        self.dma.clear();
        self.device.clear_irqs();
        self.device.set_dma(self.dma.memory());
        self.device.reset();
    }
}
