// SPDX-License-Identifier: Apache-2.0
//! The guest memory a device reaches by DMA: bounds-checked by `vm-memory`,
//! split by what a mapping lets the device read and write, replaced when the
//! VM's memory map changes, and off while bus mastering is off.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// Guest physical memory as the device sees it through DMA.
pub type GuestRam = vm_memory::GuestMemoryMmap<()>;

/// A range of guest memory inside one of its regions: `vm-memory`'s
/// bounds-checked volatile view, reached with one region lookup. Accesses
/// through it cost a bounds check, where each access through [`GuestRam`]
/// walks the regions it spans again.
pub type GuestSlice<'a> = vm_memory::VolatileSlice<'a, ()>;

/// Regions up to which [`slice_of`] scans them in order instead of asking
/// `vm-memory`'s binary search.
const SCAN_REGIONS: usize = 4;

/// The `len` bytes of `mem` at `addr` as one slice, if they lie in one
/// region (else the caller goes through [`GuestRam`], which spans regions
/// and reports what is outside memory). A guest's RAM is one to a few
/// regions (below and above the PCI hole): up to `SCAN_REGIONS` of them
/// are scanned in address order, which costs less per access than the
/// binary search and second range check of `GuestMemoryBackend::get_slice`;
/// the region's own `get_slice` checks that all `len` bytes are inside it.
#[inline]
pub fn slice_of(mem: &GuestRam, addr: u64, len: usize) -> Option<GuestSlice<'_>> {
    use vm_memory::{
        Address, GuestAddress, GuestMemoryBackend, GuestMemoryRegion, MemoryRegionAddress,
    };
    if mem.num_regions() > SCAN_REGIONS {
        return mem.get_slice(GuestAddress(addr), len).ok();
    }
    for r in mem.iter() {
        let off = addr.checked_sub(r.start_addr().raw_value())?;
        if off < r.len() {
            return r.get_slice(MemoryRegionAddress(off), len).ok();
        }
    }
    None
}

/// The region of a memory that the last access fell into, as one slice: a
/// pass that reaches many buffers (a receive batch placing frames, a
/// transmit pass gathering them) looks their region up once while they lie
/// in it, not once per buffer ([`slice_of`] per access). A range that is
/// not inside that region is looked up again; one that is in no region, or
/// spans regions, is `None`, as with [`slice_of`] (the caller then goes
/// through [`GuestRam`]).
#[derive(Clone, Copy, Default)]
pub struct RegionCache<'a> {
    /// The region's first guest address and the region as a slice.
    at: Option<(u64, GuestSlice<'a>)>,
}

impl<'a> RegionCache<'a> {
    /// The `len` bytes of `mem` at `addr` as one slice, as [`slice_of`]
    /// gives them (`mem` is the memory of every call on this cache).
    #[inline]
    pub fn slice(&mut self, mem: &'a GuestRam, addr: u64, len: usize) -> Option<GuestSlice<'a>> {
        if let Some((start, region)) = self.at {
            let off = addr.wrapping_sub(start);
            if off < region.len() as u64 {
                return region.subslice(off as usize, len).ok();
            }
        }
        self.find(mem, addr, len)
    }

    /// [`Self::slice`] outside the region it holds: the region of `addr`.
    #[inline(never)]
    fn find(&mut self, mem: &'a GuestRam, addr: u64, len: usize) -> Option<GuestSlice<'a>> {
        use vm_memory::{Address, GuestAddress, GuestMemoryBackend, GuestMemoryRegion};
        let region = mem.find_region(GuestAddress(addr))?;
        let start = region.start_addr().raw_value();
        let whole = region.as_volatile_slice().ok()?;
        self.at = Some((start, whole));
        whole.subslice((addr - start) as usize, len).ok()
    }
}

/// What DMA reaches at one moment: the guest memory the device may read and
/// the part of it the device may write (a mapping's access flags, as an
/// IOMMU enforces them: a read-only mapping is in `read` only).
#[derive(Debug, Default)]
pub struct DmaView {
    /// Memory the device may read (descriptors, transmit buffers).
    pub read: GuestRam,
    /// Memory the device may write (write-backs, receive buffers).
    pub write: GuestRam,
}

impl DmaView {
    /// One memory, readable and writable throughout.
    pub fn read_write(mem: GuestRam) -> DmaView {
        DmaView {
            read: mem.clone(),
            write: mem,
        }
    }
}

/// The guest memory a device reaches by DMA, and whether it may reach it at
/// all (PCI COMMAND.BME, PCI 3.0 §6.2.2: with bus mastering off a function
/// issues no memory requests). The transport replaces the memory when the
/// VM's memory map changes; each doorbell or received frame takes the
/// current view once (a reference count, no copy) and works on it.
#[derive(Debug, Default)]
pub struct DmaMemory {
    view: RwLock<Arc<DmaView>>,
    bus_master: AtomicBool,
}

impl DmaMemory {
    /// The current view, or `None` while bus mastering is off.
    #[inline]
    pub fn get(&self) -> Option<Arc<DmaView>> {
        let v = self.view.read().unwrap_or_else(|e| e.into_inner());
        self.bus_master
            .load(Ordering::Acquire)
            .then(|| Arc::clone(&v))
    }

    /// The current view whether or not bus mastering is on (inspection and
    /// tests; DMA goes through [`Self::get`]).
    pub fn view(&self) -> Arc<DmaView> {
        Arc::clone(&self.view.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Replaces the guest memory with `mem`, readable and writable.
    pub fn set(&self, mem: GuestRam) {
        self.set_view(DmaView::read_write(mem));
    }

    /// Replaces the view, and returns once no DMA works on the old one: a
    /// removed mapping is not used after this returns (work per doorbell
    /// and per frame is bounded, so the wait is).
    pub fn set_view(&self, view: DmaView) {
        let old = std::mem::replace(
            &mut *self.view.write().unwrap_or_else(|e| e.into_inner()),
            Arc::new(view),
        );
        wait_unused(&old);
    }

    /// Turns bus mastering on or off; off returns once no DMA is in flight.
    pub fn set_bus_master(&self, on: bool) {
        let current = {
            let v = self.view.write().unwrap_or_else(|e| e.into_inner());
            self.bus_master.store(on, Ordering::Release);
            Arc::clone(&v)
        };
        if !on {
            // Ours and the table's reference.
            wait_unused_but(&current, 2);
        }
    }

    /// Bus mastering is on.
    #[inline]
    pub fn bus_master(&self) -> bool {
        self.bus_master.load(Ordering::Acquire)
    }
}

/// Waits until `view` is referenced by nobody but the caller.
fn wait_unused(view: &Arc<DmaView>) {
    wait_unused_but(view, 1);
}

/// Waits until `view` has `owners` references left (the snapshots of DMA in
/// flight on other threads are gone).
fn wait_unused_but(view: &Arc<DmaView>, owners: usize) {
    let mut spins = 0u32;
    while Arc::strong_count(view) > owners {
        if spins < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(std::time::Duration::from_micros(20));
        }
        spins = spins.saturating_add(1);
    }
    // Pairs with the release of each snapshot's drop: their accesses are done.
    std::sync::atomic::fence(Ordering::Acquire);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use vm_memory::{GuestAddress, GuestMemoryBackend};

    fn ram() -> GuestRam {
        GuestRam::from_ranges(&[(GuestAddress(0), 0x1000)]).unwrap()
    }

    #[test]
    fn a_slice_is_what_vm_memory_gives_at_every_edge() {
        let few = [
            (0x1000u64, 0x1000usize),
            (0x4000, 0x2000),
            (0x10000, 0x1000),
        ];
        let many: Vec<(u64, usize)> = (0..8u64).map(|i| (0x1000 + i * 0x2000, 0x1000)).collect();
        for ranges in [&few[..], &many[..]] {
            let ranges: Vec<_> = ranges.iter().map(|&(a, l)| (GuestAddress(a), l)).collect();
            let mem = GuestRam::from_ranges(&ranges).unwrap();
            for &(start, len) in &ranges {
                let start = start.0;
                for addr in [0, start - 1, start, start + 1, start + len as u64 - 1] {
                    for n in [0, 1, 16, len - 1, len, len + 1] {
                        let ours =
                            slice_of(&mem, addr, n).map(|s| (s.ptr_guard().as_ptr(), s.len()));
                        let theirs = mem
                            .get_slice(GuestAddress(addr), n)
                            .ok()
                            .map(|s| (s.ptr_guard().as_ptr(), s.len()));
                        assert_eq!(ours, theirs, "{addr:#x}+{n:#x}");
                    }
                }
            }
            assert!(slice_of(&mem, u64::MAX, 1).is_none());
        }
    }

    /// A cached region gives what a lookup per access gives, whichever
    /// region the access before fell into.
    #[test]
    fn a_region_cache_is_what_slice_of_gives() {
        let ranges = [
            (0x1000u64, 0x1000usize),
            (0x2000, 0x2000),
            (0x10000, 0x1000),
        ];
        let ranges: Vec<_> = ranges.iter().map(|&(a, l)| (GuestAddress(a), l)).collect();
        let mem = GuestRam::from_ranges(&ranges).unwrap();
        let ptr = |s: Option<GuestSlice<'_>>| s.map(|s| (s.ptr_guard().as_ptr(), s.len()));
        let mut probes = Vec::new();
        for &(start, len) in &ranges {
            let start = start.0;
            for addr in [
                start - 1,
                start,
                start + 1,
                start + len as u64 - 1,
                start + len as u64,
            ] {
                for n in [0, 1, 16, len - 1, len, len + 1] {
                    probes.push((addr, n));
                }
            }
        }
        probes.push((u64::MAX, 1));
        for &(before, m) in &probes {
            for &(addr, n) in &probes {
                let mut c = RegionCache::default();
                let _ = c.slice(&mem, before, m);
                assert_eq!(
                    ptr(c.slice(&mem, addr, n)),
                    ptr(slice_of(&mem, addr, n)),
                    "{addr:#x}+{n:#x} after {before:#x}+{m:#x}"
                );
            }
        }
    }

    #[test]
    fn a_replaced_view_is_not_used_after_set_returns() {
        let m = Arc::new(DmaMemory::default());
        m.set(ram());
        m.set_bus_master(true);
        // DMA in flight on another thread holds a snapshot.
        let snap = m.get().expect("bus master on");
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let setter = {
            let m = m.clone();
            std::thread::spawn(move || {
                m.set_view(DmaView::default());
                done_tx.send(()).unwrap();
            })
        };
        assert!(
            done_rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "set_view returned while DMA still used the old memory"
        );
        drop(snap);
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        setter.join().unwrap();
        assert!(m.get().unwrap().read.num_regions() == 0);
    }

    #[test]
    fn bus_master_off_means_no_view_and_waits_for_dma_in_flight() {
        let m = Arc::new(DmaMemory::default());
        m.set(ram());
        assert!(m.get().is_none(), "off after reset");
        m.set_bus_master(true);
        let snap = m.get().unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let t = {
            let m = m.clone();
            std::thread::spawn(move || {
                m.set_bus_master(false);
                done_tx.send(()).unwrap();
            })
        };
        assert!(done_rx.recv_timeout(Duration::from_millis(200)).is_err());
        drop(snap);
        done_rx.recv_timeout(Duration::from_secs(10)).unwrap();
        t.join().unwrap();
        assert!(m.get().is_none());
        assert_eq!(m.view().read.num_regions(), 1, "the memory is kept");
    }
}
