// SPDX-License-Identifier: Apache-2.0
//! Starting guests: run directories, acceleration choice, devices under test (and the
//! nicemu process behind them), QEMU launch with a timeout.

pub mod accel;
pub mod device;
pub mod host;
pub mod kernel_log;
pub mod launch;
pub mod nicemu_args;
pub mod nicemu_proc;
pub mod pin;
pub mod register_trace;
pub mod run_dir;
pub mod socket_alias;
