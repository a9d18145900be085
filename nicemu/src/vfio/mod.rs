// SPDX-License-Identifier: Apache-2.0
//! An igb/ixgbe function served to QEMU over vfio-user (QEMU
//! `vfio-user-pci`) by the [`nicemu_vfio_user_server`] crate.
//!
//! [`NicPort`] adapts a device model ([`NicFunction`]) and its interrupts
//! ([`EventIrq`], written by the function's own threads or its [`signaller`](crate::irq::signaller)) to the
//! server's [`PciDevice`], and traces register accesses on the way;
//! [`VfioPort`] runs the server on its own thread. The server accepts one client at a time;
//! when the client goes away (VM shut down, QEMU killed, malformed stream)
//! the device is reset and the socket accepts the next client. A panic
//! while serving is contained to the connection.

pub mod accesses;
pub mod irq;

use std::fs::File;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::Arc;

use nicemu_device_models::{DmaView, NicFunction};
use nicemu_vfio_user_server::{ConnError, DmaMaps, Endpoint, IrqError, PciDevice, Server};

use crate::error::Error;
use crate::latency::{Doorbell, PortLatency};
use crate::trace::{Dir, Tracer};
use accesses::Accesses;
use irq::EventIrq;

/// Shared handle to a device model. The model locks internally only what an
/// operation touches (per queue, see `nicemu_device_models`), so the transport thread,
/// receive threads, timer and control socket call it without a device lock.
pub type SharedDevice = Arc<dyn NicFunction>;

/// A device model as the vfio-user server's [`PciDevice`], with register
/// tracing.
pub struct NicPort {
    id: String,
    dev: SharedDevice,
    irq: Arc<EventIrq>,
    tracer: Arc<Tracer>,
    /// Latency stages; a BAR write is timed as a doorbell.
    lat: Arc<PortLatency>,
    /// Register accesses counted.
    acc: Arc<Accesses>,
}

impl std::fmt::Debug for NicPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NicPort").field("id", &self.id).finish()
    }
}

impl NicPort {
    /// Records an access in the register trace, when tracing is on.
    fn trace(&self, dir: Dir, region: Region, offset: u64, data: &[u8]) {
        if !self.tracer.enabled() {
            return;
        }
        let (region, name) = match region {
            Region::Config => ("CFG".to_string(), format!("CFG[{offset:#x}]")),
            Region::Bar(bar) => (format!("BAR{bar}"), self.dev.reg_name(bar as usize, offset)),
        };
        self.tracer
            .record(&self.id, dir, &region, offset, &name, data);
    }

    /// A BAR write to the model (large writes dword by dword).
    fn write_bar(&self, bar: u32, offset: u64, data: &[u8]) {
        if data.len() > 8 {
            for (i, chunk) in data.chunks(4).enumerate() {
                self.dev
                    .bar_write(bar as usize, offset + 4 * i as u64, chunk);
            }
        } else {
            self.dev.bar_write(bar as usize, offset, data);
        }
    }
}

/// Where a traced access went.
#[derive(Clone, Copy)]
enum Region {
    Config,
    Bar(u32),
}

/// Register accesses and SET_IRQS run on the function's own server thread
/// inside [`EventIrq::serving`]: the interrupts they raise (a doorbell's, an
/// ICS write's) are written by this thread, with no device lock held, before
/// the reply.
impl PciDevice for NicPort {
    fn config_size(&self) -> u64 {
        nicemu_device_models::pci::CONFIG_SPACE_SIZE as u64
    }

    fn bar_size(&self, bar: u32) -> u64 {
        self.dev
            .bars()
            .iter()
            .find(|b| b.index as u64 == u64::from(bar))
            .map_or(0, |b| b.size)
    }

    fn config_read(&mut self, offset: u64, data: &mut [u8]) {
        Accesses::add(&self.acc.config_reads);
        self.irq.serving(|| self.dev.config_read(offset, data));
        self.trace(Dir::Read, Region::Config, offset, data);
    }

    fn config_write(&mut self, offset: u64, data: &[u8]) {
        Accesses::add(&self.acc.config_writes);
        self.trace(Dir::Write, Region::Config, offset, data);
        self.irq.serving(|| self.dev.config_write(offset, data));
    }

    fn bar_read(&mut self, bar: u32, offset: u64, data: &mut [u8]) {
        Accesses::add(&self.acc.bar_reads);
        let dev = &self.dev;
        self.irq.serving(|| {
            if data.len() > 8 {
                // Large reads (e.g. of a whole region) are served dword by dword.
                for (i, chunk) in data.chunks_mut(4).enumerate() {
                    dev.bar_read(bar as usize, offset + 4 * i as u64, chunk);
                }
            } else {
                dev.bar_read(bar as usize, offset, data);
            }
        });
        self.trace(Dir::Read, Region::Bar(bar), offset, data);
    }

    fn bar_write(&mut self, bar: u32, offset: u64, data: &[u8]) {
        // Any BAR write may be a doorbell (TDT): the frames its transmit
        // pass sends on this thread are timed from here.
        let doorbell = Doorbell::start();
        Accesses::add(&self.acc.bar_writes);
        self.trace(Dir::Write, Region::Bar(bar), offset, data);
        // The interrupts the write raised are written on this thread
        // (EventIrq::serving) before the doorbell's pass counts as done.
        self.irq.serving(|| self.write_bar(bar, offset, data));
        doorbell.done(&self.lat);
    }

    fn reset(&mut self) {
        self.dev.reset();
    }

    fn set_dma(&mut self, dma: DmaMaps) {
        self.dev.set_dma(DmaView {
            read: dma.read,
            write: dma.write,
        });
    }

    fn msix_vectors(&self) -> u32 {
        self.irq.msix_vectors()
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), IrqError> {
        self.irq
            .serving(|| self.irq.set_irqs(index, flags, start, count, fds))
    }

    fn clear_irqs(&mut self) {
        self.irq.set_client(0);
        self.irq.clear();
    }

    /// Notes the client's process (SO_PEERCRED): another port the same
    /// process is served writes this one's interrupts itself
    /// ([`signaller`](crate::irq::signaller)).
    fn client_connected(&mut self, client: &UnixStream) {
        match crate::socket::peer_pid(client) {
            Ok(pid) => self.irq.set_client(pid),
            Err(e) => log::warn!("{}: cannot read the client's credentials: {e}", self.id),
        }
    }
}

/// The vfio-user side of one function.
#[derive(Debug)]
pub struct VfioPort {
    endpoint: Endpoint<NicPort>,
    /// The port's latency stages and threads (its server thread is listed).
    lat: Arc<PortLatency>,
}

impl VfioPort {
    /// Wraps a device; `irq` must be the sink the device was created with.
    pub fn new(id: String, dev: SharedDevice, irq: Arc<EventIrq>, tracer: Arc<Tracer>) -> Self {
        Self::timed(id, dev, irq, tracer, Arc::default(), Arc::default())
    }

    /// [`Self::new`], timing BAR writes as doorbells into `lat` (the
    /// function's wire and interrupts record into it too) and counting register
    /// accesses into `acc`.
    pub fn timed(
        id: String,
        dev: SharedDevice,
        irq: Arc<EventIrq>,
        tracer: Arc<Tracer>,
        lat: Arc<PortLatency>,
        acc: Arc<Accesses>,
    ) -> Self {
        let port = NicPort {
            id: id.clone(),
            dev,
            irq,
            tracer,
            lat: lat.clone(),
            acc,
        };
        VfioPort {
            endpoint: Endpoint::new(id, port),
            lat,
        }
    }

    /// Serves one connected client on `stream` until it goes away (the
    /// fuzz target drives the server through a socket pair with this).
    pub fn serve_stream(&mut self, stream: UnixStream) -> Result<(), ConnError> {
        self.endpoint.serve(stream)
    }

    /// Forgets the client: DMA mappings, interrupts, and resets the device
    /// (after every connection).
    pub fn disconnect(&mut self) {
        self.endpoint.disconnect();
    }

    /// Creates the socket and serves clients on a thread of their own until
    /// the process ends.
    pub fn serve(self, socket: &Path) -> Result<std::thread::JoinHandle<()>, Error> {
        let mut endpoint = self.endpoint;
        endpoint.set_poll(crate::poll::window());
        let server = Server::new(crate::socket::listen(socket)?, endpoint);
        let lat = self.lat;
        crate::threads::spawn(format!("vfio-{}", server.endpoint().id()), move || {
            crate::sched::enter_doorbell_path();
            lat.threads.enter("doorbell");
            server.run()
        })
    }
}
