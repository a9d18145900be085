// SPDX-License-Identifier: Apache-2.0
//! `nicemu-provision`: the cache, the sid root and QEMU, as `nicemu-guest provision` without
//! kernels. Built before everything else on a first run so provisioning overlaps the
//! compile. No logger: provisioning reports its progress on stdout and its failures as
//! errors; its `log` records are info and debug only.

fn main() {
    nicemu_provision::signals::install();
    if let Some(arg) = std::env::args().nth(1) {
        eprintln!(
            "nicemu-provision: takes no arguments (got {arg:?}); for kernels use `nicemu-guest provision --kernel NAME`"
        );
        std::process::exit(2);
    }
    match nicemu_provision::provision() {
        Ok(p) => {
            println!("provision: cache {}", p.cache.display());
            println!("provision: sid root {}", p.sid_root.display());
            println!("provision: QEMU {}", p.qemu);
        }
        Err(e) => {
            eprintln!("nicemu-provision: error: {e}");
            let code = match e {
                nicemu_provision::error::Error::Interrupted => 130,
                _ => 2,
            };
            std::process::exit(code);
        }
    }
}
