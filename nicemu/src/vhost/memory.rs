// SPDX-License-Identifier: Apache-2.0
//! The checks a vhost-user memory table passes before a port uses it
//! (`SET_MEM_TABLE`, `ADD_MEM_REGION`): bounded, and every region inside a
//! file that cannot shrink, as the vfio-user server holds DMA_MAP to.

use vm_memory::GuestMemoryMmap;

/// Most guest memory regions of a vhost-user connection (QEMU sends a
/// handful; the protocol's SET_MEM_TABLE carries at most 8).
pub const MAX_MEM_REGIONS: usize = 64;

/// Most bytes of guest memory per connection.
pub const MAX_MEM_TOTAL: u64 = 1 << 40;

/// Checks a vhost-user memory table (SET_MEM_TABLE or ADD_MEM_REGION, as
/// the vhost-user-backend crate mapped it): at most [`MAX_MEM_REGIONS`] and
/// [`MAX_MEM_TOTAL`] bytes, each region inside a file that cannot shrink
/// ([`nicemu_memfile`]), so no access is SIGBUS.
pub fn check_memory(mem: &GuestMemoryMmap<()>) -> Result<(), String> {
    use vm_memory::{GuestMemoryBackend, GuestMemoryRegion};
    if mem.num_regions() > MAX_MEM_REGIONS {
        return Err(format!(
            "{} regions, at most {MAX_MEM_REGIONS}",
            mem.num_regions()
        ));
    }
    let total: u64 = mem.iter().map(|r| r.len()).sum();
    if total > MAX_MEM_TOTAL {
        return Err(format!("{total:#x} bytes, at most {MAX_MEM_TOTAL:#x}"));
    }
    for r in mem.iter() {
        let Some(fo) = r.file_offset() else {
            return Err("a region without a file".into());
        };
        nicemu_memfile::pin_range(fo.file(), fo.start(), r.len())
            .map_err(|e| format!("region at {:#x}: {e}", r.start_addr().0))?;
    }
    Ok(())
}
