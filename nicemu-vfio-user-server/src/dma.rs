// SPDX-License-Identifier: Apache-2.0
//! Guest memory from vfio-user DMA map/unmap requests: each mapping is an fd
//! region QEMU shares (memory-backend-memfd, share=on), mmapped here and
//! assembled into the bounds-checked [`DmaMaps`] the device uses.
//!
//! Limits (vfio-user §"VFIO_USER_DMA_MAP"; kernel VFIO type1 answers the same
//! errnos): at most [`MAX_DMA_MAPS`] mappings (advertised as `max_dma_maps`)
//! and [`MAX_DMA_TOTAL`] bytes mapped; a mapping must lie inside its file,
//! which must not be able to shrink ([`nicemu_memfile`]); an UNMAP names one
//! mapping exactly. Mappings of the same file share one descriptor.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

use vm_memory::mmap::MmapRegion;
use vm_memory::{FileOffset, GuestAddress, GuestMemoryMmap, GuestRegionMmap};

use crate::codec::DmaMapFlags;
use crate::limits::{MAX_DMA_MAPS, MAX_DMA_TOTAL};
use nicemu_memfile::MemFileError;

/// Guest memory made of the client's mappings, bounds-checked on every access.
pub type GuestRam = GuestMemoryMmap<()>;

/// What the device reaches by DMA: the guest memory it may read and the part
/// of it it may write (a mapping's access flags, as an IOMMU enforces them: a
/// read-only mapping is in `read` only).
#[derive(Clone, Debug, Default)]
pub struct DmaMaps {
    /// Memory the device may read.
    pub read: GuestRam,
    /// Memory the device may write.
    pub write: GuestRam,
}

/// Why a DMA map or unmap request failed.
#[derive(Debug, thiserror::Error)]
pub enum DmaError {
    /// Zero size, or a range that wraps past the end of the address space.
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
    /// [`MAX_DMA_MAPS`] or [`MAX_DMA_TOTAL`] reached.
    #[error("DMA region {addr:#x}+{size:#x} refused: at most {MAX_DMA_MAPS} mappings and {MAX_DMA_TOTAL:#x} bytes")]
    Limit {
        /// Guest address.
        addr: u64,
        /// Size.
        size: u64,
    },
    /// The file cannot back the mapping.
    #[error("DMA region at {addr:#x}: {source}")]
    File {
        /// Guest address.
        addr: u64,
        /// Why.
        source: MemFileError,
    },
    /// mmap failed.
    #[error("cannot map DMA region at {addr:#x}: {reason}")]
    Map {
        /// Guest address.
        addr: u64,
        /// Why.
        reason: String,
    },
    /// UNMAP of a range that is not exactly one mapping.
    #[error("no DMA mapping is exactly {addr:#x}+{size:#x}")]
    NotMapped {
        /// Guest address.
        addr: u64,
        /// Size.
        size: u64,
    },
}

impl DmaError {
    /// The errno of the error reply.
    pub fn errno(&self) -> i32 {
        match self {
            DmaError::Overlap { .. } => libc::EEXIST,
            DmaError::Limit { .. } => libc::ENOSPC,
            DmaError::File { source, .. } => source.errno(),
            DmaError::Map { .. } => libc::ENOMEM,
            _ => libc::EINVAL,
        }
    }
}

/// One DMA_MAP.
struct Mapping {
    addr: u64,
    size: u64,
    flags: DmaMapFlags,
    /// The mmapped file range; `None` for memory the device cannot reach
    /// (no fd, or neither readable nor writable).
    region: Option<Arc<GuestRegionMmap>>,
}

/// The current set of DMA mappings.
#[derive(Default)]
pub struct DmaTable {
    maps: Vec<Mapping>,
    /// Open files by (device, inode): one descriptor per file however many
    /// mappings use it.
    files: Vec<((u64, u64), Arc<File>)>,
}

impl std::fmt::Debug for DmaTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaTable")
            .field("maps", &self.maps.len())
            .field("files", &self.files.len())
            .finish()
    }
}

impl DmaTable {
    /// Maps `size` bytes of `fd` at file `offset` to guest address `addr`
    /// with access `flags`; without fd, records memory the device cannot
    /// reach (so that its UNMAP matches).
    pub fn map(
        &mut self,
        addr: u64,
        size: u64,
        offset: u64,
        flags: DmaMapFlags,
        fd: Option<File>,
    ) -> Result<(), DmaError> {
        let end = addr
            .checked_add(size)
            .filter(|_| size > 0)
            .ok_or(DmaError::BadSize { addr, size })?;
        if self
            .maps
            .iter()
            .any(|m| addr < m.addr + m.size && m.addr < end)
        {
            return Err(DmaError::Overlap { addr, size });
        }
        let reachable = flags.contains(DmaMapFlags::READ) || flags.contains(DmaMapFlags::WRITE);
        let fd = fd.filter(|_| reachable);
        let mapped = if fd.is_some() { size } else { 0 };
        if self.maps.len() >= MAX_DMA_MAPS || self.total().saturating_add(mapped) > MAX_DMA_TOTAL {
            return Err(DmaError::Limit { addr, size });
        }
        let region = match fd {
            Some(f) => Some(self.mmap(addr, size, offset, f)?),
            None => None,
        };
        self.maps.push(Mapping {
            addr,
            size,
            flags,
            region,
        });
        self.maps.sort_by_key(|m| m.addr);
        Ok(())
    }

    /// Bytes of file mapped.
    fn total(&self) -> u64 {
        self.maps
            .iter()
            .filter(|m| m.region.is_some())
            .map(|m| m.size)
            .sum()
    }

    fn mmap(
        &mut self,
        addr: u64,
        size: u64,
        offset: u64,
        f: File,
    ) -> Result<Arc<GuestRegionMmap>, DmaError> {
        nicemu_memfile::pin_range(&f, offset, size)
            .map_err(|source| DmaError::File { addr, source })?;
        let file = self.shared_file(f).map_err(|e| DmaError::Map {
            addr,
            reason: e.to_string(),
        })?;
        let len = usize::try_from(size).map_err(|_| DmaError::BadSize { addr, size })?;
        let mmap = MmapRegion::from_file(FileOffset::from_arc(file, offset), len).map_err(|e| {
            DmaError::Map {
                addr,
                reason: e.to_string(),
            }
        })?;
        let region = GuestRegionMmap::new(mmap, GuestAddress(addr)).ok_or(DmaError::Map {
            addr,
            reason: "region does not fit the guest address space".into(),
        })?;
        Ok(Arc::new(region))
    }

    /// The open file for `f`'s inode: `f` itself the first time, else the
    /// one already held (and `f` is closed).
    fn shared_file(&mut self, f: File) -> std::io::Result<Arc<File>> {
        let md = f.metadata()?;
        let key = (md.dev(), md.ino());
        // Files no mapping uses any more are closed.
        self.files.retain(|(_, f)| Arc::strong_count(f) > 1);
        if let Some((_, held)) = self.files.iter().find(|(k, _)| *k == key) {
            return Ok(held.clone());
        }
        let f = Arc::new(f);
        self.files.push((key, f.clone()));
        Ok(f)
    }

    /// Removes the mapping that is exactly `addr..addr+size`.
    pub fn unmap(&mut self, addr: u64, size: u64) -> Result<(), DmaError> {
        let i = self
            .maps
            .iter()
            .position(|m| m.addr == addr && m.size == size)
            .ok_or(DmaError::NotMapped { addr, size })?;
        self.maps.remove(i);
        self.files.retain(|(_, f)| Arc::strong_count(f) > 1);
        Ok(())
    }

    /// Drops every mapping.
    pub fn clear(&mut self) {
        self.maps.clear();
        self.files.clear();
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// No mappings.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// The guest memory these mappings form: readable mappings in `read`,
    /// writable ones in `write`.
    pub fn memory(&self) -> DmaMaps {
        DmaMaps {
            read: self.collect(DmaMapFlags::READ),
            write: self.collect(DmaMapFlags::WRITE),
        }
    }

    fn collect(&self, access: DmaMapFlags) -> GuestRam {
        let regions: Vec<_> = self
            .maps
            .iter()
            .filter(|m| m.flags.contains(access))
            .filter_map(|m| m.region.clone())
            .collect();
        if regions.is_empty() {
            return GuestRam::new();
        }
        GuestRam::from_arc_regions(regions).unwrap_or_else(|e| {
            log::error!("DMA table inconsistent ({e}); device loses DMA access");
            GuestRam::new()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nicemu_memfile::testutil::memfd;
    use vm_memory::Bytes;

    const RW: DmaMapFlags = DmaMapFlags(3);

    #[test]
    fn map_access_unmap() {
        let mut t = DmaTable::default();
        t.map(0x10_0000, 0x1_0000, 0, RW, Some(memfd(0x1_0000, true)))
            .unwrap();
        let m = t.memory();
        m.write
            .write_obj(0xdead_beefu32, GuestAddress(0x10_0010))
            .unwrap();
        assert_eq!(
            m.read.read_obj::<u32>(GuestAddress(0x10_0010)).unwrap(),
            0xdead_beef
        );
        m.read.read_obj::<u32>(GuestAddress(0x20_0000)).unwrap_err();
        let e = t
            .map(0x10_8000, 0x1_0000, 0, RW, Some(memfd(0x1_0000, true)))
            .unwrap_err();
        assert_eq!(e.errno(), libc::EEXIST);
        let e = t.map(0, 0, 0, RW, Some(memfd(1, true))).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL);
        let e = t
            .map(u64::MAX - 10, 100, 0, RW, Some(memfd(100, true)))
            .unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL);
        assert_eq!(
            t.unmap(0x10_0000, 0x1000).unwrap_err().errno(),
            libc::EINVAL,
            "part of a mapping"
        );
        t.unmap(0x10_0000, 0x1_0000).unwrap();
        t.memory()
            .read
            .read_obj::<u32>(GuestAddress(0x10_0010))
            .unwrap_err();
        assert!(t.is_empty());
    }

    #[test]
    fn access_flags_shape_the_views() {
        let mut t = DmaTable::default();
        let f = memfd(0x3000, true);
        let g = || Some(f.try_clone().unwrap());
        t.map(0, 0x1000, 0, DmaMapFlags::READ, g()).unwrap();
        t.map(0x1000, 0x1000, 0x1000, DmaMapFlags::WRITE, g())
            .unwrap();
        t.map(0x2000, 0x1000, 0x2000, DmaMapFlags(0), g()).unwrap();
        let v = t.memory();
        v.read.read_obj::<u32>(GuestAddress(0)).unwrap();
        assert!(
            v.write.write_obj(1u32, GuestAddress(0)).is_err(),
            "read-only"
        );
        v.write.write_obj(1u32, GuestAddress(0x1000)).unwrap();
        assert!(
            v.read.read_obj::<u32>(GuestAddress(0x1000)).is_err(),
            "write-only"
        );
        v.read.read_obj::<u32>(GuestAddress(0x2000)).unwrap_err();
        assert_eq!(t.files.len(), 1, "one descriptor for one file");
    }

    #[test]
    fn limits_on_number_and_size() {
        let mut t = DmaTable::default();
        let f = memfd(0x1000, true);
        for i in 0..MAX_DMA_MAPS as u64 {
            t.map(i << 12, 0x1000, 0, RW, Some(f.try_clone().unwrap()))
                .unwrap();
        }
        let e = t.map(1 << 40, 0x1000, 0, RW, None).unwrap_err();
        assert_eq!(e.errno(), libc::ENOSPC);
        t.clear();
        let big = memfd(MAX_DMA_TOTAL, true);
        t.map(0, MAX_DMA_TOTAL, 0, RW, Some(big.try_clone().unwrap()))
            .unwrap();
        let e = t.map(MAX_DMA_TOTAL, 0x1000, 0, RW, Some(big)).unwrap_err();
        assert_eq!(e.errno(), libc::ENOSPC);
        t.map(MAX_DMA_TOTAL, 0x1000, 0, RW, None).unwrap();
    }
}
