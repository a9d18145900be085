//! Guest memory from vfio-user DMA map/unmap requests: each mapping is an fd
//! region QEMU shares (memory-backend-memfd, share=on), mmapped here and
//! assembled into the bounds-checked [`GuestRam`] the device uses.

use std::fs::File;
use std::sync::Arc;

use device_models::GuestRam;
use vm_memory::mmap::MmapRegion;
use vm_memory::{FileOffset, GuestAddress, GuestRegionMmap};

/// Why a DMA map request failed.
#[derive(Debug, thiserror::Error)]
pub enum DmaError {
    /// No fd: this crate cannot serve DMA through messages.
    #[error("DMA region at {0:#x} has no file descriptor (message-based DMA is not supported)")]
    NoFd(u64),
    /// Zero or absurd size, or a range that wraps past the end of the address space.
    #[error("DMA region at {addr:#x} has invalid size {size:#x}")]
    BadSize {
        /// Guest address.
        addr: u64,
        /// Size.
        size: u64,
    },
    /// The range overlaps an existing mapping.
    #[error("DMA region {addr:#x}+{size:#x} overlaps a mapped region")]
    Overlap {
        /// Guest address.
        addr: u64,
        /// Size.
        size: u64,
    },
    /// mmap failed.
    #[error("cannot map DMA region at {addr:#x}: {reason}")]
    Map {
        /// Guest address.
        addr: u64,
        /// Why.
        reason: String,
    },
}

/// The current set of DMA mappings.
#[derive(Default)]
pub struct DmaTable {
    regions: Vec<Arc<GuestRegionMmap>>,
}

impl std::fmt::Debug for DmaTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaTable")
            .field("regions", &self.regions.len())
            .finish()
    }
}

/// Largest single mapping accepted (1 TiB).
const MAX_REGION: u64 = 1 << 40;

impl DmaTable {
    /// Maps `size` bytes of `fd` at file `offset` to guest address `addr`.
    pub fn map(
        &mut self,
        addr: u64,
        size: u64,
        offset: u64,
        fd: Option<File>,
    ) -> Result<(), DmaError> {
        let fd = fd.ok_or(DmaError::NoFd(addr))?;
        if size == 0 || size > MAX_REGION {
            return Err(DmaError::BadSize { addr, size });
        }
        let end = addr
            .checked_add(size)
            .ok_or(DmaError::BadSize { addr, size })?;
        if self.regions.iter().any(|r| {
            let (s, e) = (r.start_addr().0, r.start_addr().0 + r.len());
            addr < e && s < end
        }) {
            return Err(DmaError::Overlap { addr, size });
        }
        let mmap =
            MmapRegion::from_file(FileOffset::new(fd, offset), size as usize).map_err(|e| {
                DmaError::Map {
                    addr,
                    reason: e.to_string(),
                }
            })?;
        let region = GuestRegionMmap::new(mmap, GuestAddress(addr)).ok_or(DmaError::Map {
            addr,
            reason: "region does not fit the guest address space".into(),
        })?;
        self.regions.push(Arc::new(region));
        self.regions.sort_by_key(|r| r.start_addr());
        Ok(())
    }

    /// Removes mappings inside `addr..addr+size`; returns how many.
    pub fn unmap(&mut self, addr: u64, size: u64) -> usize {
        let end = addr.saturating_add(size);
        let before = self.regions.len();
        self.regions.retain(|r| {
            let s = r.start_addr().0;
            !(s >= addr && s + r.len() <= end)
        });
        before - self.regions.len()
    }

    /// Drops every mapping.
    pub fn clear(&mut self) {
        self.regions.clear();
    }

    /// The guest memory these mappings form.
    pub fn memory(&self) -> GuestRam {
        if self.regions.is_empty() {
            return GuestRam::new();
        }
        GuestRam::from_arc_regions(self.regions.clone()).unwrap_or_else(|e| {
            log::error!("DMA table inconsistent ({e}); device loses DMA access");
            GuestRam::new()
        })
    }
}

trait RegionExt {
    fn start_addr(&self) -> GuestAddress;
    fn len(&self) -> u64;
}

impl RegionExt for GuestRegionMmap {
    fn start_addr(&self) -> GuestAddress {
        vm_memory::GuestMemoryRegion::start_addr(self)
    }
    fn len(&self) -> u64 {
        vm_memory::GuestMemoryRegion::len(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use vm_memory::Bytes;

    fn memfd(size: u64) -> File {
        let mut f = tempfile();
        f.write_all(&vec![0u8; size as usize]).unwrap();
        f
    }

    fn tempfile() -> File {
        let p = std::env::temp_dir().join(format!(
            "nicemu-dma-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&p)
            .unwrap();
        std::fs::remove_file(&p).unwrap();
        f
    }

    #[test]
    fn map_access_unmap() {
        let mut t = DmaTable::default();
        t.map(0x10_0000, 0x1_0000, 0, Some(memfd(0x1_0000)))
            .unwrap();
        let m = t.memory();
        m.write_obj(0xdead_beefu32, GuestAddress(0x10_0010))
            .unwrap();
        assert_eq!(
            m.read_obj::<u32>(GuestAddress(0x10_0010)).unwrap(),
            0xdead_beef
        );
        assert!(m.read_obj::<u32>(GuestAddress(0x20_0000)).is_err());
        assert!(matches!(
            t.map(0x10_8000, 0x1_0000, 0, Some(memfd(0x1_0000))),
            Err(DmaError::Overlap { .. })
        ));
        assert!(matches!(
            t.map(0, 0, 0, Some(memfd(1))),
            Err(DmaError::BadSize { .. })
        ));
        assert!(matches!(
            t.map(u64::MAX - 10, 100, 0, Some(memfd(100))),
            Err(DmaError::BadSize { .. })
        ));
        assert!(matches!(t.map(0, 0x1000, 0, None), Err(DmaError::NoFd(0))));
        assert_eq!(t.unmap(0x10_0000, 0x1_0000), 1);
        assert!(t.memory().read_obj::<u32>(GuestAddress(0x10_0010)).is_err());
    }
}
