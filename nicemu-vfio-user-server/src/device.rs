// SPDX-License-Identifier: Apache-2.0
//! The device behind the server: what vfio-user commands reach of a PCI
//! function, and the region and interrupt tables advertised for it.

use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_INFO_EVENTFD, VFIO_PCI_BAR5_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_INTX_IRQ_INDEX, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_PCI_MSI_IRQ_INDEX, VFIO_PCI_NUM_IRQS,
    VFIO_PCI_NUM_REGIONS, VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};

use std::fs::File;
use std::os::unix::net::UnixStream;

use crate::codec::{IrqInfo, RegionInfo};
use crate::dma::DmaMaps;
use crate::error::IrqError;

/// A PCI function served over vfio-user.
///
/// The server checks every access against the region table before it
/// reaches the device: an access lies inside config space or inside a BAR
/// the function has, and is at most
/// [`MAX_DATA_XFER`](crate::limits::MAX_DATA_XFER) bytes long. Config space
/// and BAR accesses cannot fail, as on a PCI bus: a device ignores writes to
/// offsets with nothing behind them and reads them as 0.
pub trait PciDevice {
    /// Bytes of config space (256 for PCI, 4096 for PCI Express).
    fn config_size(&self) -> u64;
    /// Bytes of BAR `bar` (0 to 5); 0 when the function has no such BAR.
    fn bar_size(&self, bar: u32) -> u64;
    /// Reads config space at `offset` (REGION_READ of the config region).
    fn config_read(&mut self, offset: u64, data: &mut [u8]);
    /// Writes config space at `offset`.
    fn config_write(&mut self, offset: u64, data: &[u8]);
    /// Reads BAR `bar` at `offset` (REGION_READ of region `bar`).
    fn bar_read(&mut self, bar: u32, offset: u64, data: &mut [u8]);
    /// Writes BAR `bar` at `offset` (REGION_WRITE, posted or not).
    fn bar_write(&mut self, bar: u32, offset: u64, data: &[u8]);
    /// Function-level reset: DEVICE_RESET, and after every client.
    fn reset(&mut self);
    /// The guest memory the device reaches by DMA changed (DMA_MAP,
    /// DMA_UNMAP, the client went away). Returns only once no DMA in flight
    /// uses the memory it had before: the server replies to DMA_UNMAP after
    /// this returns, and the client may then reuse the memory.
    fn set_dma(&mut self, dma: DmaMaps);
    /// Number of MSI-X vectors (DEVICE_GET_IRQ_INFO; INTx and MSI have one
    /// each).
    fn msix_vectors(&self) -> u32;
    /// DEVICE_SET_IRQS, with kernel VFIO's `VFIO_DEVICE_SET_IRQS` semantics:
    /// `flags` holds one `VFIO_IRQ_SET_DATA_*` (NONE or EVENTFD; BOOL is
    /// refused before) and one `VFIO_IRQ_SET_ACTION_*`. With
    /// `VFIO_IRQ_SET_DATA_EVENTFD`, `fds` is empty (de-assign vectors
    /// `start..start + count`) or holds one fd per vector. The fds are the
    /// client's: the device must not let a write to one wait for the client.
    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), IrqError>;
    /// The client went away: drop every interrupt fd it assigned, and return
    /// only once none of them is written any more.
    fn clear_irqs(&mut self);
    /// A client connected on `client` and is about to be served (its
    /// credentials can be read from the socket). Nothing by default.
    fn client_connected(&mut self, client: &UnixStream) {
        let _ = client;
    }
}

/// Flags of a readable and writable region.
pub(crate) const RW: u32 = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;

/// What the server advertises: region and interrupt tables.
#[derive(Clone, Debug, Default)]
pub struct DeviceTables {
    /// Regions by index (`VFIO_PCI_*_REGION_INDEX`); absent ones have size 0.
    pub regions: Vec<RegionInfo>,
    /// Interrupt types by index (`VFIO_PCI_*_IRQ_INDEX`).
    pub irqs: Vec<IrqInfo>,
}

impl DeviceTables {
    /// The tables of `device`: config space and its BARs, read/write, never
    /// mmap (every access is trapped, so writes can be posted); INTx, MSI
    /// and its MSI-X vectors, signalled by eventfd.
    pub fn of(device: &impl PciDevice) -> DeviceTables {
        let regions = (0..VFIO_PCI_NUM_REGIONS)
            .map(|index| {
                let size = match index {
                    VFIO_PCI_CONFIG_REGION_INDEX => device.config_size(),
                    0..=VFIO_PCI_BAR5_REGION_INDEX => device.bar_size(index),
                    _ => 0,
                };
                RegionInfo {
                    index,
                    size,
                    flags: if size > 0 { RW } else { 0 },
                }
            })
            .collect();
        let irqs = (0..VFIO_PCI_NUM_IRQS)
            .map(|index| {
                let count = match index {
                    VFIO_PCI_INTX_IRQ_INDEX | VFIO_PCI_MSI_IRQ_INDEX => 1,
                    VFIO_PCI_MSIX_IRQ_INDEX => device.msix_vectors(),
                    _ => 0,
                };
                IrqInfo {
                    index,
                    count,
                    flags: if count > 0 { VFIO_IRQ_INFO_EVENTFD } else { 0 },
                }
            })
            .collect();
        DeviceTables { regions, irqs }
    }
}
