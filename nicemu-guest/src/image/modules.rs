// SPDX-License-Identifier: Apache-2.0
//! Kernel modules for the guest: dependency order from `modules.dep`, and decompression
//! (busybox `insmod` only loads plain `.ko` files).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::error::{Error, Result};

/// Modules every guest loads (drivers for the devices under test and their deps).
/// Also the qdiscs of the `qdisc` scenario (built in on some kernels: then skipped), and
/// the VLAN and macvlan devices of the `vf-admin` scenario (a port VLAN seen from a VLAN
/// interface of the peer, spoofed frames from a macvlan on the VF).
pub const DRIVERS: &[&str] = &[
    "igb",
    "ixgbe",
    "igbvf",
    "ixgbevf",
    "e1000e",
    "virtio_net",
    "sch_prio",
    "sch_tbf",
    "sch_fq_codel",
    "8021q",
    "macvlan",
];

/// A module ready to put in the initramfs.
#[derive(Debug, Clone)]
pub struct Module {
    /// Module name with `-` normalized to `_` ("i2c_algo_bit").
    pub name: String,
    /// The uncompressed `.ko` bytes.
    pub data: Vec<u8>,
}

/// Parsed `modules.dep`: module name → (relative path, dependency names).
#[derive(Debug, Default)]
pub struct ModulesDep {
    entries: BTreeMap<String, (String, Vec<String>)>,
}

impl ModulesDep {
    /// Parses the text of a `modules.dep` file.
    pub fn parse(text: &str) -> Self {
        let mut entries = BTreeMap::new();
        for line in text.lines() {
            let Some((path, deps)) = line.split_once(':') else {
                continue;
            };
            let deps = deps.split_whitespace().map(name_of).collect();
            entries.insert(name_of(path), (path.trim().to_owned(), deps));
        }
        ModulesDep { entries }
    }

    /// Module names (and relative paths) to load for `wanted`, dependencies first.
    /// Names not in the file are assumed built in and skipped.
    pub fn load_order(&self, wanted: &[&str]) -> Vec<(String, String)> {
        let mut order: Vec<(String, String)> = Vec::new();
        for w in wanted {
            self.visit(&normalize(w), &mut order, 0);
        }
        order
    }

    fn visit(&self, name: &str, order: &mut Vec<(String, String)>, depth: usize) {
        if depth > 64 || order.iter().any(|(n, _)| n == name) {
            return;
        }
        let Some((path, deps)) = self.entries.get(name) else {
            log::debug!("module {name} not in modules.dep (built in?)");
            return;
        };
        for d in deps {
            self.visit(d, order, depth + 1);
        }
        if !order.iter().any(|(n, _)| n == name) {
            order.push((name.to_owned(), path.clone()));
        }
    }
}

/// Loads `wanted` and their dependencies from `modules_dir`, decompressed, in load order.
pub fn collect(modules_dir: &Path, wanted: &[&str]) -> Result<Vec<Module>> {
    let dep_path = modules_dir.join("modules.dep");
    let text = std::fs::read_to_string(&dep_path).map_err(|e| Error::io(&dep_path, e))?;
    let dep = ModulesDep::parse(&text);
    let mut out = Vec::new();
    for (name, rel) in dep.load_order(wanted) {
        let file = modules_dir.join(&rel);
        let data = decompress(&file)?;
        out.push(Module { name, data });
    }
    Ok(out)
}

/// Reads a module file, decompressing `.xz`, `.zst` and `.gz` with the host's tools.
pub fn decompress(file: &Path) -> Result<Vec<u8>> {
    let name = file.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        "xz"
    } else if name.ends_with(".zst") {
        "zstd"
    } else if name.ends_with(".gz") {
        "gzip"
    } else {
        return std::fs::read(file).map_err(|e| Error::io(file, e));
    };
    if nicemu_provision::cmd::on_path(tool).is_none() {
        return Err(Error::Prerequisite(format!(
            "`{tool}` is needed to decompress {name} (apt-get install {})",
            if tool == "xz" { "xz-utils" } else { tool }
        )));
    }
    let out = nicemu_provision::cmd::output_ok(Command::new(tool).arg("-dc").arg(file))?;
    Ok(out.stdout)
}

fn name_of(path: &str) -> String {
    let base = path.trim().rsplit('/').next().unwrap_or_default();
    let stem = base.split(".ko").next().unwrap_or(base);
    normalize(stem)
}

fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sid 7.2's modules.dep lines for virtio_net: failover, net_failover, virtio_net.
    #[test]
    fn virtio_net_loads_after_failover() {
        let dep = ModulesDep::parse(
            "kernel/drivers/net/virtio_net.ko.xz: kernel/drivers/net/net_failover.ko.xz kernel/net/core/failover.ko.xz\n\
             kernel/drivers/net/net_failover.ko.xz: kernel/net/core/failover.ko.xz\n\
             kernel/net/core/failover.ko.xz:\n",
        );
        let names: Vec<String> = dep
            .load_order(&["virtio_net"])
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["failover", "net_failover", "virtio_net"]);
    }

    const DEP: &str = "\
kernel/drivers/net/ethernet/intel/e1000e/e1000e.ko.xz:
kernel/drivers/net/ethernet/intel/igb/igb.ko.xz: kernel/drivers/dca/dca.ko.xz kernel/drivers/i2c/algos/i2c-algo-bit.ko.xz
kernel/drivers/net/ethernet/intel/ixgbe/ixgbe.ko.xz: kernel/drivers/net/ethernet/intel/libie/libie_fwlog.ko.xz kernel/net/xfrm/xfrm_algo.ko.xz kernel/drivers/net/mdio.ko.xz kernel/drivers/dca/dca.ko.xz
kernel/drivers/dca/dca.ko.xz:
kernel/drivers/i2c/algos/i2c-algo-bit.ko.xz:
kernel/drivers/net/ethernet/intel/libie/libie_fwlog.ko.xz:
kernel/net/xfrm/xfrm_algo.ko.xz:
kernel/drivers/net/mdio.ko.xz:
";

    #[test]
    fn dependencies_come_first_and_once() {
        let dep = ModulesDep::parse(DEP);
        let names: Vec<String> = dep
            .load_order(&["igb", "ixgbe", "e1000e"])
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                "dca",
                "i2c_algo_bit",
                "igb",
                "libie_fwlog",
                "xfrm_algo",
                "mdio",
                "ixgbe",
                "e1000e"
            ]
        );
    }

    #[test]
    fn unknown_modules_are_skipped() {
        let dep = ModulesDep::parse(DEP);
        assert!(dep.load_order(&["ptp"]).is_empty());
    }
}
