//! A PCI function served to QEMU over vfio-user (QEMU `vfio-user-pci`).
//!
//! One server thread per function accepts one client at a time; when the
//! client goes away (VM shut down, QEMU killed, malformed stream) the device is
//! reset and the socket accepts the next client. The protocol is nicemu's own
//! ([`server`], [`wire`]); a panic while serving is contained to the
//! connection.

pub mod irq;
pub mod memory;
pub mod server;
pub mod signaller;
pub mod wire;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use device_models::NicFunction;
use server::{ConnError, DeviceBackend, DeviceTables, Server};
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_INFO_EVENTFD, VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_INTX_IRQ_INDEX,
    VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_MSI_IRQ_INDEX, VFIO_PCI_NUM_IRQS, VFIO_PCI_NUM_REGIONS,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};
use wire::{DmaMapFlags, DmaUnmapFlags, IrqInfo, RegionInfo};

use crate::error::Error;
use crate::trace::{Dir, Tracer};
use irq::EventIrq;
use memory::{DmaError, DmaTable};

/// Shared handle to a device model. The model locks internally only what an
/// operation touches (per queue, see `device_models`), so the transport thread,
/// receive threads, timer and control socket call it without a device lock.
pub type SharedDevice = Arc<dyn NicFunction>;

/// The vfio-user side of one function.
pub struct VfioPort {
    id: String,
    dev: SharedDevice,
    irq: Arc<EventIrq>,
    dma: DmaTable,
    tracer: Arc<Tracer>,
}

impl std::fmt::Debug for VfioPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioPort").field("id", &self.id).finish()
    }
}

/// A DMA table error as the errno the client gets, logged.
fn dma_err(id: &str, e: DmaError) -> std::io::Error {
    log::warn!("{id}: {e}");
    std::io::Error::from_raw_os_error(e.errno())
}

fn io_err(e: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
}

impl VfioPort {
    /// Wraps a device; `irq` must be the sink the device was created with.
    pub fn new(id: String, dev: SharedDevice, irq: Arc<EventIrq>, tracer: Arc<Tracer>) -> Self {
        VfioPort {
            id,
            dev,
            irq,
            dma: DmaTable::default(),
            tracer,
        }
    }

    /// Region table advertised to the client: BARs and config space, no mmap
    /// (every access is trapped, so writes can be posted).
    fn regions(dev: &dyn NicFunction) -> Vec<RegionInfo> {
        (0..VFIO_PCI_NUM_REGIONS)
            .map(|index| {
                let mut info = RegionInfo {
                    index,
                    ..Default::default()
                };
                let rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
                if index == VFIO_PCI_CONFIG_REGION_INDEX {
                    info.size = device_models::pci::CONFIG_SPACE_SIZE as u64;
                    info.flags = rw;
                } else if let Some(b) = dev.bars().iter().find(|b| b.index as u32 == index) {
                    info.size = b.size;
                    info.flags = rw;
                }
                info
            })
            .collect()
    }

    fn irqs(dev: &dyn NicFunction) -> Vec<IrqInfo> {
        (0..VFIO_PCI_NUM_IRQS)
            .map(|index| {
                let count = match index {
                    VFIO_PCI_INTX_IRQ_INDEX | VFIO_PCI_MSI_IRQ_INDEX => 1,
                    VFIO_PCI_MSIX_IRQ_INDEX => u32::from(dev.msix_vectors()),
                    _ => 0,
                };
                IrqInfo {
                    index,
                    count,
                    flags: if count > 0 { VFIO_IRQ_INFO_EVENTFD } else { 0 },
                }
            })
            .collect()
    }

    fn region_name(index: u32) -> String {
        if index == VFIO_PCI_CONFIG_REGION_INDEX {
            "CFG".into()
        } else {
            format!("BAR{index}")
        }
    }

    fn trace(&self, dir: Dir, region: u32, offset: u64, data: &[u8]) {
        if !self.tracer.enabled() {
            return;
        }
        let name = if region == VFIO_PCI_CONFIG_REGION_INDEX {
            format!("CFG[{offset:#x}]")
        } else {
            self.dev.reg_name(region as usize, offset)
        };
        self.tracer.record(
            &self.id,
            dir,
            &Self::region_name(region),
            offset,
            &name,
            data,
        );
    }

    /// Forgets the client: DMA mappings, interrupts, and resets the device
    /// (after every connection).
    pub fn disconnect(&mut self) {
        self.dma.clear();
        self.irq.clear();
        self.dev.set_dma(self.dma.memory());
        self.dev.reset();
    }

    /// What the server advertises for this function: its regions and
    /// interrupts.
    pub fn tables(&self) -> DeviceTables {
        let d = self.dev.as_ref();
        DeviceTables {
            regions: Self::regions(d),
            irqs: Self::irqs(d),
            resettable: true,
        }
    }

    /// Creates the socket and serves clients until the process ends.
    pub fn serve(mut self, socket: &Path) -> Result<std::thread::JoinHandle<()>, Error> {
        let tables = self.tables();
        let server = Server::bind(&self.id, socket, tables)?;
        let path: PathBuf = socket.to_path_buf();
        let id = self.id.clone();
        let handle = std::thread::Builder::new()
            .name(format!("vfio-{id}"))
            .spawn(move || {
                crate::sched::enter_data_path();
                loop {
                    log::info!("{id}: waiting for a vfio-user client on {}", path.display());
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        server.serve_one(&mut self)
                    }));
                    match r {
                        Ok(Ok(())) => log::info!("{id}: client disconnected"),
                        Ok(Err(e @ ConnError::Accept(_))) => {
                            // No client was served; do not spin on e.g. EMFILE.
                            log::warn!("{id}: {e}");
                            std::thread::sleep(std::time::Duration::from_millis(100));
                            continue;
                        }
                        Ok(Err(e)) => log::warn!("{id}: client connection dropped: {e}"),
                        Err(_) => {
                            log::error!("{id}: panic while serving the client; connection dropped")
                        }
                    }
                    self.disconnect();
                }
            })
            .map_err(|e| Error::Listen {
                path: socket.to_path_buf(),
                source: e,
            })?;
        Ok(handle)
    }
}

impl VfioPort {
    /// A config-space or BAR read.
    fn read_region(&self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), std::io::Error> {
        let d = self.dev.as_ref();
        if region == VFIO_PCI_CONFIG_REGION_INDEX {
            d.config_read(offset, data);
        } else if d.bars().iter().any(|b| b.index as u32 == region) {
            if data.len() > 8 {
                // Large reads (e.g. of a whole region) are served dword by dword.
                for (i, chunk) in data.chunks_mut(4).enumerate() {
                    d.bar_read(region as usize, offset + 4 * i as u64, chunk);
                }
            } else {
                d.bar_read(region as usize, offset, data);
            }
        } else {
            return Err(io_err(format!(
                "read of region {region} that does not exist"
            )));
        }
        Ok(())
    }

    /// A config-space or BAR write.
    fn write_region(&self, region: u32, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        let d = self.dev.as_ref();
        if region == VFIO_PCI_CONFIG_REGION_INDEX {
            d.config_write(offset, data);
        } else if d.bars().iter().any(|b| b.index as u32 == region) {
            if data.len() > 8 {
                for (i, chunk) in data.chunks(4).enumerate() {
                    d.bar_write(region as usize, offset + 4 * i as u64, chunk);
                }
            } else {
                d.bar_write(region as usize, offset, data);
            }
        } else {
            return Err(io_err(format!(
                "write to region {region} that does not exist"
            )));
        }
        Ok(())
    }
}

/// Register accesses and SET_IRQS run inside [`EventIrq::serving`]: the
/// interrupts they raise (a doorbell's, an ICS write's) are written by this
/// thread before it serves the next message.
impl DeviceBackend for VfioPort {
    fn region_read(
        &mut self,
        region: u32,
        offset: u64,
        data: &mut [u8],
    ) -> Result<(), std::io::Error> {
        self.irq
            .serving(|| self.read_region(region, offset, data))?;
        self.trace(Dir::Read, region, offset, data);
        Ok(())
    }

    fn region_write(
        &mut self,
        region: u32,
        offset: u64,
        data: &[u8],
    ) -> Result<(), std::io::Error> {
        self.trace(Dir::Write, region, offset, data);
        self.irq.serving(|| self.write_region(region, offset, data))
    }

    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> Result<(), std::io::Error> {
        if fd.is_none() {
            // QEMU also announces ROM/firmware ranges that are not backed by a
            // shareable fd; the device cannot reach them, which is fine for a NIC.
            log::debug!(
                "{}: DMA region {address:#x}+{size:#x} has no fd; not reachable",
                self.id
            );
        }
        self.dma
            .map(address, size, offset, flags, fd)
            .map_err(|e| dma_err(&self.id, e))?;
        log::debug!(
            "{}: DMA map {address:#x}+{size:#x} flags {:#x}",
            self.id,
            flags.0
        );
        self.dev.set_dma(self.dma.memory());
        Ok(())
    }

    fn dma_unmap(
        &mut self,
        flags: DmaUnmapFlags,
        address: u64,
        size: u64,
    ) -> Result<(), std::io::Error> {
        if flags.contains(DmaUnmapFlags::ALL) {
            self.dma.clear();
        } else {
            self.dma
                .unmap(address, size)
                .map_err(|e| dma_err(&self.id, e))?;
        }
        log::debug!("{}: DMA unmap {address:#x}+{size:#x}", self.id);
        // Returns once no DMA uses the removed mapping: only then is the
        // reply sent.
        self.dev.set_dma(self.dma.memory());
        Ok(())
    }

    fn reset(&mut self) -> Result<(), std::io::Error> {
        log::info!("{}: device reset", self.id);
        self.dev.reset();
        Ok(())
    }

    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), std::io::Error> {
        log::debug!(
            "{}: SET_IRQS index {index} flags {flags:#x} {start}+{count} ({} fds)",
            self.id,
            fds.len()
        );
        self.irq
            .serving(|| self.irq.set_irqs(index, flags, start, count, fds))
            .map_err(|e| {
                log::warn!("{}: {e}", self.id);
                io_err(e)
            })
    }
}
