// SPDX-License-Identifier: Apache-2.0
//! The files of a cell's directory that reports point to: the logs (serial, kernel, QEMU,
//! nicemu, host actions) and the KTAP files.

use std::path::Path;

use super::{ktap, CellRun};

/// The files a cell's directory holds, in the order reports list them (by what the cell
/// ran, without looking at the disk).
pub fn names(c: &CellRun) -> Vec<&'static str> {
    let mut v = vec!["serial.log", "kernel.log", "qemu.log", "qemu.cmd"];
    if c.device.starts_with("nicemu") {
        v.extend(["nicemu.log", "host-actions.log"]);
    }
    v.push(ktap::SCENARIOS_FILE);
    if c.result("kselftest").is_some() {
        v.push(ktap::KSELFTEST_FILE);
    }
    v
}

/// [`names`], less those missing from the cell's directory when that directory is here
/// (a report rendered where the run ran); all of them otherwise.
pub fn existing(c: &CellRun) -> Vec<&'static str> {
    let dir = Path::new(&c.dir);
    let mut v = names(c);
    if dir.is_dir() {
        v.retain(|f| dir.join(f).exists());
    }
    v
}
