// SPDX-License-Identifier: Apache-2.0
//! The server side of one device: the device, the DMA table its client
//! built and the tables advertised for it, served one connection at a time.

use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::conn::Conn;
use crate::device::{DeviceTables, PciDevice};
use crate::dispatch::Dispatcher;
use crate::dma::DmaTable;
use crate::error::ConnError;
use crate::limits::MAX_POLL;

/// A device with the state a client gives it (DMA mappings, interrupt
/// eventfds), served to one client at a time.
#[derive(Debug)]
pub struct Endpoint<D> {
    id: String,
    device: D,
    dma: DmaTable,
    tables: DeviceTables,
    /// How long the server polls for the next message (0: it blocks).
    poll: Duration,
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
            poll: Duration::ZERO,
        }
    }

    /// After serving a message, the server thread polls the socket
    /// (non-blocking `recvmsg`, spinning) for up to `poll` before it blocks
    /// again, so a client's next message is taken without a wake-up; at
    /// most [`MAX_POLL`] (a longer `poll` is cut to it). The thread is the
    /// device's own: polling costs CPU time, not another device's service.
    pub fn set_poll(&mut self, poll: Duration) {
        self.poll = poll.min(MAX_POLL);
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
        self.device.client_connected(&stream);
        let dispatcher = Dispatcher::new(&self.id, &mut self.device, &mut self.dma, &self.tables);
        Conn::new(stream, dispatcher, self.poll)?.run()
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
