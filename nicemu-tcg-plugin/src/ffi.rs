// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! The part of QEMU's plugin API (version 7, QEMU 11.1) and of GLib this plugin calls.
//!
//! Declared here from the API's documented signatures (no header is included: none is
//! packaged, and the plugin stays free of build dependencies). Every function is looked
//! up with `dlsym` in the running QEMU when the plugin loads, so a QEMU that lacks one
//! is refused with the function's name instead of failing at the first call.
//!
//! What version 7 changed and this module follows: every callback receives the userdata
//! pointer given when it was registered (the translation callback is `cb(tb, userdata)`,
//! the exit callback `cb(userdata)`). Callbacks whose arguments this plugin does not need
//! ignore them, so their exact argument list does not matter.

use std::ffi::{c_char, c_int, c_void, CStr};

/// The plugin API version this plugin is written for.
pub const API_VERSION: c_int = 7;

/// `qemu_plugin_id_t`.
pub type PluginId = u64;

/// `qemu_info_t`: what QEMU tells the plugin at install.
#[repr(C)]
#[derive(Debug)]
pub struct QemuInfo {
    /// Guest architecture ("x86_64").
    pub target_name: *const c_char,
    /// Oldest plugin API version QEMU accepts.
    pub version_min: c_int,
    /// Newest plugin API version QEMU offers.
    pub version_cur: c_int,
    /// Full-system emulation (not user mode).
    pub system_emulation: bool,
    /// vCPUs at start.
    pub smp_vcpus: c_int,
    /// Most vCPUs the machine can have.
    pub max_vcpus: c_int,
}

/// `struct qemu_plugin_tb` (opaque).
#[repr(C)]
pub struct Tb {
    _private: [u8; 0],
}

/// `struct qemu_plugin_insn` (opaque).
#[repr(C)]
pub struct Insn {
    _private: [u8; 0],
}

/// `struct qemu_plugin_scoreboard` (opaque): one entry per vCPU.
#[repr(C)]
pub struct Scoreboard {
    _private: [u8; 0],
}

/// `struct qemu_plugin_register` (opaque handle).
#[repr(C)]
pub struct Register {
    _private: [u8; 0],
}

/// `qemu_plugin_u64`: a u64 member of a scoreboard's entries.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct U64Entry {
    /// The scoreboard.
    pub score: *mut Scoreboard,
    /// Byte offset of the member in an entry.
    pub offset: usize,
}

impl U64Entry {
    /// The scoreboard's entry itself as a u64 (what the header's
    /// `qemu_plugin_scoreboard_u64` macro makes).
    pub fn whole(score: *mut Scoreboard) -> U64Entry {
        U64Entry { score, offset: 0 }
    }
}

/// GLib's `GArray` (public fields only).
#[repr(C)]
pub struct GArray {
    /// Elements.
    pub data: *mut c_char,
    /// Number of elements.
    pub len: u32,
}

/// GLib's `GByteArray`.
#[repr(C)]
pub struct GByteArray {
    /// Bytes.
    pub data: *mut u8,
    /// Number of bytes.
    pub len: u32,
}

/// `QEMU_PLUGIN_INLINE_ADD_U64`.
pub const INLINE_ADD_U64: c_int = 0;
/// `QEMU_PLUGIN_CB_NO_REGS`.
pub const CB_NO_REGS: c_int = 0;
/// `QEMU_PLUGIN_CB_R_REGS`.
pub const CB_R_REGS: c_int = 1;
/// `QEMU_PLUGIN_COND_NE`.
pub const COND_NE: c_int = 3;

/// A translation callback (`qemu_plugin_vcpu_tb_trans_cb_t`, version 7).
pub type TbTransCb = unsafe extern "C" fn(tb: *mut Tb, userdata: *mut c_void);
/// An execution callback (`qemu_plugin_vcpu_udata_cb_t`).
pub type VcpuUdataCb = unsafe extern "C" fn(vcpu_index: u32, userdata: *mut c_void);
/// A callback whose arguments are not used (exit, reset done).
pub type AnyCb = unsafe extern "C" fn();

/// The API functions, resolved in the running QEMU.
#[derive(Debug, Clone, Copy)]
#[allow(missing_docs)]
pub struct Api {
    pub register_vcpu_tb_trans_cb: unsafe extern "C" fn(PluginId, TbTransCb, *mut c_void),
    pub register_atexit_cb: unsafe extern "C" fn(PluginId, AnyCb, *mut c_void),
    pub reset: unsafe extern "C" fn(PluginId, AnyCb, *mut c_void),
    pub tb_n_insns: unsafe extern "C" fn(*const Tb) -> usize,
    pub tb_vaddr: unsafe extern "C" fn(*const Tb) -> u64,
    pub tb_get_insn: unsafe extern "C" fn(*const Tb, usize) -> *mut Insn,
    pub insn_size: unsafe extern "C" fn(*const Insn) -> usize,
    pub insn_data: unsafe extern "C" fn(*const Insn, *mut c_void, usize) -> usize,
    pub scoreboard_new: unsafe extern "C" fn(usize) -> *mut Scoreboard,
    pub u64_get: unsafe extern "C" fn(U64Entry, u32) -> u64,
    pub u64_set: unsafe extern "C" fn(U64Entry, u32, u64),
    pub register_vcpu_tb_exec_inline_per_vcpu: unsafe extern "C" fn(*mut Tb, c_int, U64Entry, u64),
    pub register_vcpu_tb_exec_cb: unsafe extern "C" fn(*mut Tb, VcpuUdataCb, c_int, *mut c_void),
    pub register_vcpu_tb_exec_cond_cb:
        unsafe extern "C" fn(*mut Tb, VcpuUdataCb, c_int, c_int, U64Entry, u64, *mut c_void),
    pub register_vcpu_insn_exec_cb:
        unsafe extern "C" fn(*mut Insn, VcpuUdataCb, c_int, *mut c_void),
    pub outs: unsafe extern "C" fn(*const c_char),
    pub num_vcpus: unsafe extern "C" fn() -> c_int,
    pub get_registers: unsafe extern "C" fn() -> *mut GArray,
    pub read_register: unsafe extern "C" fn(*mut Register, *mut GByteArray) -> bool,
    pub read_memory_vaddr: unsafe extern "C" fn(u64, *mut GByteArray, usize) -> bool,
    pub g_byte_array_new: unsafe extern "C" fn() -> *mut GByteArray,
    pub g_byte_array_set_size: unsafe extern "C" fn(*mut GByteArray, u32) -> *mut GByteArray,
    pub g_array_free: unsafe extern "C" fn(*mut GArray, c_int) -> *mut c_char,
    pub g_array_get_element_size: unsafe extern "C" fn(*mut GArray) -> u32,
}

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// `RTLD_DEFAULT` (glibc): search the global scope, where QEMU's symbols are.
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

/// Looks `name` up in the running process.
fn lookup(name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads the loaded
    // objects' symbol tables.
    let p = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    if p.is_null() {
        Err(format!(
            "this QEMU has no {} (nicemu-tcg-plugin needs plugin API {API_VERSION}, QEMU 11.1)",
            name.to_string_lossy()
        ))
    } else {
        Ok(p)
    }
}

/// Reinterprets a symbol's address as the function pointer type `F`.
///
/// # Safety
/// `p` is the address of a function whose signature `F` declares.
unsafe fn function<F: Copy>(p: *mut c_void) -> F {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    // SAFETY: same size (checked above); the caller vouches for the signature.
    unsafe { std::mem::transmute_copy(&p) }
}

macro_rules! resolve {
    ($($field:ident = $sym:literal),* $(,)?) => {
        Api {
            $(
                // SAFETY: the symbol is the QEMU API (or GLib) function of that name, whose
                // signature the field's type declares (API version 7).
                $field: unsafe { function(lookup($sym)?) },
            )*
        }
    };
}

impl Api {
    /// Resolves every function, or names the first one QEMU does not have.
    pub fn resolve() -> Result<Api, String> {
        Ok(resolve! {
            register_vcpu_tb_trans_cb = c"qemu_plugin_register_vcpu_tb_trans_cb",
            register_atexit_cb = c"qemu_plugin_register_atexit_cb",
            reset = c"qemu_plugin_reset",
            tb_n_insns = c"qemu_plugin_tb_n_insns",
            tb_vaddr = c"qemu_plugin_tb_vaddr",
            tb_get_insn = c"qemu_plugin_tb_get_insn",
            insn_size = c"qemu_plugin_insn_size",
            insn_data = c"qemu_plugin_insn_data",
            scoreboard_new = c"qemu_plugin_scoreboard_new",
            u64_get = c"qemu_plugin_u64_get",
            u64_set = c"qemu_plugin_u64_set",
            register_vcpu_tb_exec_inline_per_vcpu =
                c"qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu",
            register_vcpu_tb_exec_cb = c"qemu_plugin_register_vcpu_tb_exec_cb",
            register_vcpu_tb_exec_cond_cb = c"qemu_plugin_register_vcpu_tb_exec_cond_cb",
            register_vcpu_insn_exec_cb = c"qemu_plugin_register_vcpu_insn_exec_cb",
            outs = c"qemu_plugin_outs",
            num_vcpus = c"qemu_plugin_num_vcpus",
            get_registers = c"qemu_plugin_get_registers",
            read_register = c"qemu_plugin_read_register",
            read_memory_vaddr = c"qemu_plugin_read_memory_vaddr",
            g_byte_array_new = c"g_byte_array_new",
            g_byte_array_set_size = c"g_byte_array_set_size",
            g_array_free = c"g_array_free",
            g_array_get_element_size = c"g_array_get_element_size",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_qemu_the_first_missing_function_is_named() {
        let err = Api::resolve().unwrap_err();
        assert!(
            err.starts_with("this QEMU has no qemu_plugin_register_vcpu_tb_trans_cb"),
            "{err}"
        );
    }

    #[test]
    fn qemu_info_has_the_c_layout() {
        // target_name, version {min, cur}, system_emulation, system {smp, max}.
        assert_eq!(std::mem::offset_of!(QemuInfo, version_min), 8);
        assert_eq!(std::mem::offset_of!(QemuInfo, version_cur), 12);
        assert_eq!(std::mem::offset_of!(QemuInfo, system_emulation), 16);
        assert_eq!(std::mem::offset_of!(QemuInfo, smp_vcpus), 20);
        assert_eq!(std::mem::offset_of!(QemuInfo, max_vcpus), 24);
        assert_eq!(std::mem::size_of::<U64Entry>(), 16);
    }
}
