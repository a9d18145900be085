// SPDX-License-Identifier: Apache-2.0
//! The dispatcher: one method per command, each doing what the command asks
//! of the device, its DMA table or its interrupts, and appending the reply
//! payload.

use std::fs::File;

use vfio_bindings::bindings::vfio::{
    VFIO_DEVICE_FLAGS_PCI, VFIO_DEVICE_FLAGS_RESET, VFIO_PCI_CONFIG_REGION_INDEX,
};

use crate::codec::{
    self, Capabilities, Command, DeviceInfo, DmaMap, DmaUnmap, DmaUnmapFlags, Header, RegionAccess,
    Version, VersionData,
};
use crate::device::{DeviceTables, PciDevice};
use crate::dma::DmaTable;
use crate::error::CommandError;
use crate::fds::Fds;
use crate::limits::{DEFAULT_MAX_XFER, MAX_DATA_XFER, MAX_DMA_MAPS, MAX_MSG_FDS};
use crate::request::{self, IrqData, IrqSet, Request};

/// The capabilities the server answers VERSION with. No `migration`: none
/// of the migration commands is implemented, so offering it would invite a
/// client to use them.
fn server_capabilities() -> VersionData {
    VersionData {
        capabilities: Capabilities {
            max_msg_fds: Some(MAX_MSG_FDS as u32),
            max_data_xfer_size: Some(MAX_DATA_XFER),
            pgsizes: Some(codec::PAGE_SIZE),
            max_dma_maps: Some(MAX_DMA_MAPS as u32),
            ..Default::default()
        },
    }
}

/// Serves the commands of one connection against one device.
pub(crate) struct Dispatcher<'a, D> {
    /// Device id, for log lines.
    id: &'a str,
    device: &'a mut D,
    dma: &'a mut DmaTable,
    tables: &'a DeviceTables,
    /// VERSION was negotiated.
    negotiated: bool,
    /// The client's `max_data_xfer_size` (bounds REGION_READ replies).
    client_max_xfer: u32,
}

impl<'a, D: PciDevice> Dispatcher<'a, D> {
    /// A dispatcher for a new connection (nothing negotiated yet).
    pub(crate) fn new(
        id: &'a str,
        device: &'a mut D,
        dma: &'a mut DmaTable,
        tables: &'a DeviceTables,
    ) -> Self {
        Dispatcher {
            id,
            device,
            dma,
            tables,
            negotiated: false,
            client_max_xfer: 0,
        }
    }

    /// VERSION was negotiated.
    pub(crate) fn negotiated(&self) -> bool {
        self.negotiated
    }

    /// Device id, for log lines.
    pub(crate) fn id(&self) -> &'a str {
        self.id
    }

    /// Executes the command in `hdr` + `payload` with the descriptors in
    /// `fds`; on success the reply payload has been appended to `tx` (which
    /// starts with room for the header).
    pub(crate) fn handle(
        &mut self,
        hdr: &Header,
        payload: &[u8],
        fds: &mut Fds,
        tx: &mut Vec<u8>,
    ) -> Result<(), CommandError> {
        let cmd = request::command_of(hdr, fds)?;
        match cmd {
            Command::Version if self.negotiated => return Err(CommandError::Renegotiate),
            Command::Version => {}
            _ if !self.negotiated => return Err(CommandError::NotNegotiated),
            _ => {}
        }
        let max_read = self.client_max_xfer.min(MAX_DATA_XFER);
        match Request::parse(cmd, payload, fds, max_read)? {
            Request::Version(v) => self.version(&v, tx),
            Request::DmaMap { map, fd } => self.dma_map(&map, fd),
            Request::DmaUnmap(u) => self.dma_unmap(&u, tx),
            Request::DeviceGetInfo => self.device_get_info(tx),
            Request::DeviceGetRegionInfo { index } => self.device_get_region_info(index, tx),
            Request::DeviceGetRegionIoFds { index } => self.device_get_region_io_fds(index),
            Request::DeviceGetIrqInfo { index } => self.device_get_irq_info(index, tx),
            Request::DeviceSetIrqs(s) => self.device_set_irqs(s),
            Request::RegionRead(a) => self.region_read(&a, tx),
            Request::RegionWrite { access, data } => self.region_write(&access, data, tx),
            Request::DeviceReset => self.device_reset(),
        }
    }

    /// VERSION (§"VFIO_USER_VERSION"): the reply keeps the major, lowers the
    /// minor to what the server speaks and lists the server's capabilities.
    fn version(&mut self, v: &Version, tx: &mut Vec<u8>) -> Result<(), CommandError> {
        log::info!(
            "{}: client proposes vfio-user {}.{} with {:?}",
            self.id,
            v.major,
            v.minor,
            v.data.capabilities
        );
        self.client_max_xfer = v
            .data
            .capabilities
            .max_data_xfer_size
            .unwrap_or(DEFAULT_MAX_XFER)
            .min(MAX_DATA_XFER);
        Version {
            major: codec::MAJOR,
            // MINOR is 0, never above the client's proposal.
            minor: codec::MINOR,
            data: server_capabilities(),
        }
        .encode(tx);
        self.negotiated = true;
        Ok(())
    }

    /// DMA_MAP (§"VFIO_USER_DMA_MAP"): the range joins the device's memory.
    fn dma_map(&mut self, m: &DmaMap, fd: Option<File>) -> Result<(), CommandError> {
        if fd.is_none() {
            // QEMU also announces ROM/firmware ranges that are not backed by a
            // shareable fd; the device cannot reach them, which is fine for a NIC.
            log::debug!(
                "{}: DMA region {:#x}+{:#x} has no fd; not reachable",
                self.id,
                m.address,
                m.size
            );
        }
        self.dma.map(m.address, m.size, m.offset, m.flags, fd)?;
        log::debug!(
            "{}: DMA map {:#x}+{:#x} flags {:#x}",
            self.id,
            m.address,
            m.size,
            m.flags.0
        );
        self.device.set_dma(self.dma.memory());
        Ok(())
    }

    /// DMA_UNMAP (§"VFIO_USER_DMA_UNMAP"): one mapping exactly, or all of
    /// them; the reply echoes the request once no DMA uses the mapping.
    fn dma_unmap(&mut self, u: &DmaUnmap, tx: &mut Vec<u8>) -> Result<(), CommandError> {
        if u.flags.contains(DmaUnmapFlags::ALL) {
            self.dma.clear();
            log::debug!("{}: DMA unmap all", self.id);
        } else {
            self.dma.unmap(u.address, u.size)?;
            log::debug!("{}: DMA unmap {:#x}+{:#x}", self.id, u.address, u.size);
        }
        // Returns once no DMA uses the removed mapping: only then is the
        // reply sent.
        self.device.set_dma(self.dma.memory());
        u.encode(tx);
        Ok(())
    }

    /// DEVICE_GET_INFO (§"VFIO_USER_DEVICE_GET_INFO"): a resettable PCI
    /// device with the table's regions and interrupt types.
    fn device_get_info(&mut self, tx: &mut Vec<u8>) -> Result<(), CommandError> {
        DeviceInfo {
            flags: VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET,
            num_regions: self.tables.regions.len() as u32,
            num_irqs: self.tables.irqs.len() as u32,
        }
        .encode(tx);
        Ok(())
    }

    /// DEVICE_GET_REGION_INFO (§"VFIO_USER_DEVICE_GET_REGION_INFO").
    fn device_get_region_info(&mut self, index: u32, tx: &mut Vec<u8>) -> Result<(), CommandError> {
        let info = self
            .tables
            .regions
            .get(index as usize)
            .ok_or(CommandError::NoRegion(index))?;
        info.encode(tx);
        Ok(())
    }

    /// DEVICE_GET_REGION_IO_FDS (§"VFIO_USER_DEVICE_GET_REGION_IO_FDS"): an
    /// optional feature the server does not offer; every access goes
    /// through REGION_READ/WRITE.
    fn device_get_region_io_fds(&mut self, index: u32) -> Result<(), CommandError> {
        if index as usize >= self.tables.regions.len() {
            return Err(CommandError::NoRegion(index));
        }
        Err(CommandError::NotSupported("DEVICE_GET_REGION_IO_FDS"))
    }

    /// DEVICE_GET_IRQ_INFO (§"VFIO_USER_DEVICE_GET_IRQ_INFO").
    fn device_get_irq_info(&mut self, index: u32, tx: &mut Vec<u8>) -> Result<(), CommandError> {
        let info = self
            .tables
            .irqs
            .get(index as usize)
            .ok_or(CommandError::NoIrq(index))?;
        info.encode(tx);
        Ok(())
    }

    /// DEVICE_SET_IRQS (§"VFIO_USER_DEVICE_SET_IRQS"): eventfds assigned,
    /// replaced or de-assigned, or vectors triggered or masked.
    fn device_set_irqs(&mut self, s: IrqSet) -> Result<(), CommandError> {
        if s.index as usize >= self.tables.irqs.len() {
            return Err(CommandError::NoIrq(s.index));
        }
        let fds = match s.data {
            IrqData::Bool => return Err(CommandError::NotSupported("VFIO_IRQ_SET_DATA_BOOL")),
            IrqData::None => Vec::new(),
            IrqData::Eventfds(fds) => fds,
        };
        log::debug!(
            "{}: SET_IRQS index {} flags {:#x} {}+{} ({} fds)",
            self.id,
            s.index,
            s.flags,
            s.start,
            s.count,
            fds.len()
        );
        self.device
            .set_irqs(s.index, s.flags, s.start, s.count, fds)?;
        Ok(())
    }

    /// REGION_READ (§"VFIO_USER_REGION_READ"): the reply carries the access
    /// and the bytes read.
    fn region_read(&mut self, a: &RegionAccess, tx: &mut Vec<u8>) -> Result<(), CommandError> {
        check_region(self.tables, a)?;
        a.encode(tx);
        let at = tx.len();
        tx.resize(at + a.count as usize, 0);
        let data = &mut tx[at..];
        if data.is_empty() {
            return Ok(());
        }
        if a.region == VFIO_PCI_CONFIG_REGION_INDEX {
            self.device.config_read(a.offset, data);
        } else {
            self.device.bar_read(a.region, a.offset, data);
        }
        Ok(())
    }

    /// REGION_WRITE (§"VFIO_USER_REGION_WRITE"): the reply carries the
    /// access alone.
    fn region_write(
        &mut self,
        a: &RegionAccess,
        data: &[u8],
        tx: &mut Vec<u8>,
    ) -> Result<(), CommandError> {
        check_region(self.tables, a)?;
        if !data.is_empty() {
            if a.region == VFIO_PCI_CONFIG_REGION_INDEX {
                self.device.config_write(a.offset, data);
            } else {
                self.device.bar_write(a.region, a.offset, data);
            }
        }
        a.encode(tx);
        Ok(())
    }

    /// DEVICE_RESET (§"VFIO_USER_DEVICE_RESET").
    fn device_reset(&mut self) -> Result<(), CommandError> {
        log::info!("{}: device reset", self.id);
        self.device.reset();
        Ok(())
    }
}

/// The access lies inside an existing region.
#[inline]
fn check_region(tables: &DeviceTables, a: &RegionAccess) -> Result<(), CommandError> {
    let size = match tables.regions.get(a.region as usize) {
        Some(r) if r.size > 0 => r.size,
        _ => return Err(CommandError::NoRegion(a.region)),
    };
    match a.offset.checked_add(u64::from(a.count)) {
        Some(end) if end <= size => Ok(()),
        _ => Err(CommandError::OutOfRegion {
            region: a.region,
            offset: a.offset,
            count: a.count,
            size,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::RegionInfo;
    use crate::device::RW;

    #[test]
    fn region_bounds() {
        let tables = DeviceTables {
            regions: vec![
                RegionInfo {
                    flags: RW,
                    index: 0,
                    size: 0x1000,
                },
                RegionInfo::default(),
            ],
            irqs: vec![],
        };
        let acc = |region, offset, count| RegionAccess {
            offset,
            region,
            count,
        };
        check_region(&tables, &acc(0, 0xffc, 4)).unwrap();
        assert!(check_region(&tables, &acc(0, 0xffd, 4)).is_err());
        assert!(check_region(&tables, &acc(0, u64::MAX, 4)).is_err());
        assert!(check_region(&tables, &acc(1, 0, 4)).is_err(), "absent BAR");
        assert!(check_region(&tables, &acc(9, 0, 4)).is_err());
    }

    #[test]
    fn capabilities_offer_no_migration() {
        let caps = server_capabilities().capabilities;
        assert_eq!(caps.migration, None);
        assert_eq!(caps.write_multiple, None);
        assert_eq!(caps.max_dma_maps, Some(256));
    }
}
