// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! Reading a vCPU's registers and memory through the plugin API.

use std::ffi::CStr;

use crate::ffi::{Api, GByteArray, Register};

/// The registers the plugin reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reg {
    /// The stack pointer (named functions' activations).
    Rsp = 0,
    /// The configuration marker's text address.
    Rsi = 1,
    /// The configuration marker's text length.
    Rdx = 2,
}

const NAMES: [&[u8]; 3] = [b"rsp", b"rsi", b"rdx"];

/// One vCPU's register handles and a buffer to read into.
#[derive(Debug)]
pub struct Regs {
    handles: [*mut Register; 3],
    buf: *mut GByteArray,
}

// SAFETY: the handles are opaque tokens QEMU encodes register numbers in, and the buffer
// is a GLib array only this vCPU's callbacks use, under the vCPU's mutex.
unsafe impl Send for Regs {}

/// Offset of the name in `qemu_plugin_reg_descriptor` (after the handle).
const NAME_OFFSET: usize = std::mem::size_of::<*mut Register>();

impl Regs {
    /// Finds the registers among the vCPU's.
    ///
    /// # Safety
    /// Call from a callback registered with `QEMU_PLUGIN_CB_R_REGS`, on the vCPU's thread.
    pub unsafe fn find(api: &Api) -> Result<Regs, String> {
        // SAFETY: the caller runs in a vCPU context, which the API requires here.
        let arr = unsafe { (api.get_registers)() };
        if arr.is_null() {
            return Err("QEMU lists no registers for this vCPU".into());
        }
        let mut found: [Option<*mut Register>; 3] = [None; 3];
        // SAFETY: `arr` is the GArray QEMU returned: `len` descriptors of the element size
        // GLib records, each starting with the handle, then the name (a C string).
        unsafe {
            let stride = (api.g_array_get_element_size)(arr) as usize;
            let (data, len) = ((*arr).data, (*arr).len as usize);
            for i in 0..len {
                let el = data.add(i * stride);
                let name = el
                    .add(NAME_OFFSET)
                    .cast::<*const std::ffi::c_char>()
                    .read_unaligned();
                if name.is_null() {
                    continue;
                }
                let name = CStr::from_ptr(name).to_bytes();
                if let Some(k) = NAMES.iter().position(|n| *n == name) {
                    found[k] = Some(el.cast::<*mut Register>().read_unaligned());
                }
            }
            (api.g_array_free)(arr, 1);
        }
        let mut handles = [std::ptr::null_mut(); 3];
        for (k, f) in found.iter().enumerate() {
            handles[k] = f.ok_or_else(|| {
                format!(
                    "QEMU's x86_64 register list has no {}",
                    String::from_utf8_lossy(NAMES[k])
                )
            })?;
        }
        // SAFETY: allocates an empty GLib byte array.
        let buf = unsafe { (api.g_byte_array_new)() };
        if buf.is_null() {
            return Err("cannot allocate a register buffer".into());
        }
        Ok(Regs { handles, buf })
    }

    /// Register `r` now.
    ///
    /// # Safety
    /// As for [`Regs::find`], on the vCPU these handles were found on.
    pub unsafe fn read(&self, api: &Api, r: Reg) -> Option<u64> {
        // SAFETY: `buf` is our GLib array; QEMU appends the register's bytes to it.
        unsafe {
            (api.g_byte_array_set_size)(self.buf, 0);
            if !(api.read_register)(self.handles[r as usize], self.buf) {
                return None;
            }
            let b = &*self.buf;
            if b.len < 8 || b.data.is_null() {
                return None;
            }
            let bytes = std::slice::from_raw_parts(b.data, 8);
            Some(u64::from_le_bytes(bytes.try_into().ok()?))
        }
    }

    /// `len` bytes of guest virtual memory at `addr`, read in 1 MiB pieces.
    ///
    /// # Safety
    /// As for [`Regs::read`].
    pub unsafe fn memory(&self, api: &Api, addr: u64, len: usize) -> Option<Vec<u8>> {
        const PIECE: usize = 1 << 20;
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let n = PIECE.min(len - out.len());
            // SAFETY: QEMU copies `n` bytes of the vCPU's memory into our GLib array.
            unsafe {
                (api.g_byte_array_set_size)(self.buf, 0);
                if !(api.read_memory_vaddr)(addr + out.len() as u64, self.buf, n) {
                    return None;
                }
                let b = &*self.buf;
                if (b.len as usize) < n || b.data.is_null() {
                    return None;
                }
                out.extend_from_slice(std::slice::from_raw_parts(b.data, n));
            }
        }
        Some(out)
    }
}
