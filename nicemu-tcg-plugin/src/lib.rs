// SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-or-later
//! nicemu's QEMU TCG plugin: counts the guest instructions QEMU executes between marker
//! instructions the guest runs (a *window* around one measured piece of work), per vCPU,
//! user and kernel, per kernel translation block, and inclusive counts of named kernel
//! functions (the function and everything it calls).
//!
//! Load it into QEMU 11.1 (plugin API 7) under TCG:
//! `-plugin libnicemu_tcg_plugin.so,out=PATH[,cfg=PATH]`. The harness (`nicemu-guest`)
//! does this and reads the output; [`mod@format`] holds the marker encoding, the symbol
//! reader and the output format, shared by the two.
//!
//! How it counts (README.md has the measured costs):
//! - every kernel translation block gets a per-vCPU counter of its executions (an inline
//!   add QEMU emits into the block; no call), user blocks add their size to one per-vCPU
//!   counter;
//! - a user-space block holding a marker calls the plugin before the marker: the plugin
//!   snapshots all counters (window start) or writes the differences (window end);
//! - once configured, the block at each named function's entry calls the plugin, which
//!   reads the stack pointer; while an activation is open on a vCPU every kernel block
//!   there calls it too ([`frames`]), and nothing else does.

pub mod ffi;
pub mod format;
pub mod frames;
mod plugin;
mod regs;
pub mod timed;
pub mod window;

pub use plugin::{qemu_plugin_install, qemu_plugin_version};
