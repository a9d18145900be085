// SPDX-License-Identifier: Apache-2.0
//! The guest image: kernel, modules, tools and the generated `/init`, packed as a newc cpio.

pub mod cpio;
pub mod guest_kernel;
pub mod init_script;
pub mod kselftest_archive;
pub mod marker;
pub mod modules;
pub mod rootfs_path;
pub mod tools;

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::error::{Error, Result};

/// Builds the shared part of every initramfs: busybox, tools with their libraries and
/// `modules`, as one newc archive in memory.
pub fn base_archive(sid_root: &Path, modules: &[modules::Module]) -> Result<Vec<u8>> {
    let mut w = cpio::CpioWriter::new(Vec::new());
    let io = |e| Error::io("<initramfs>", e);
    for d in [
        "dev", "proc", "sys", "run", "tmp", "bin", "sbin", "usr/bin", "usr/sbin",
    ] {
        w.dir(d, 0o755).map_err(io)?;
    }
    w.char_dev("dev/console", 0o600, 5, 1).map_err(io)?;
    // /init's console (the kernel's is ttyS1), opened before devtmpfs is mounted.
    w.char_dev("dev/ttyS0", 0o600, 4, 64).map_err(io)?;
    w.char_dev("dev/null", 0o666, 1, 3).map_err(io)?;
    let busybox = read_in_root(sid_root, tools::BUSYBOX)?;
    w.file("bin/busybox", 0o755, &busybox).map_err(io)?;
    w.symlink("bin/sh", "busybox").map_err(io)?;
    w.file(&marker::GUEST_PATH[1..], 0o755, &marker::elf())
        .map_err(io)?;
    for path in tools::closure(sid_root)? {
        let data = read_in_root(sid_root, &path)?;
        w.file(&path, 0o755, &data).map_err(io)?;
    }
    for m in modules {
        w.file(&format!("lib/modules/nicemu/{}.ko", m.name), 0o644, &m.data)
            .map_err(io)?;
    }
    w.finish().map_err(io)
}

/// Writes `base` followed by a second archive holding `/init` (the kernel unpacks
/// concatenated archives in order).
pub fn write_initrd(base: &[u8], init: &str, out: &Path) -> Result<()> {
    let mut w = cpio::CpioWriter::new(Vec::new());
    w.file("init", 0o755, init.as_bytes())
        .map_err(|e| Error::io(out, e))?;
    let tail = w.finish().map_err(|e| Error::io(out, e))?;
    let mut f = BufWriter::new(std::fs::File::create(out).map_err(|e| Error::io(out, e))?);
    f.write_all(base)
        .and_then(|_| f.write_all(&tail))
        .and_then(|_| f.flush())
        .map_err(|e| Error::io(out, e))
}

fn read_in_root(root: &Path, path: &str) -> Result<Vec<u8>> {
    let host = rootfs_path::resolve(root, path)?;
    std::fs::read(&host).map_err(|e| Error::io(&host, e))
}
