// SPDX-License-Identifier: Apache-2.0
//! `nicemu-guest vng -- VNG_ARGS…`: a developer's virtme-ng run on nicemu's emulated NICs.
//! Starts nicemu for a device set (sockets in a run directory inside the sid root), runs
//! `vng VNG_ARGS…` inside the sid root (virtme-ng and virtiofsd are installed there on first
//! use) with the QEMU options the ports need, and stops nicemu when vng exits (its exit code
//! is the command's).
//!
//! vng's default root is virtio-fs, for which vng itself puts guest RAM in a shared memfd
//! backend (`-numa node,memdev=mem`), which is what vfio-user needs too; with `--force-9p`, or
//! when vng falls back to 9p, it makes none, so the backend is added (`-machine
//! memory-backend=…`) at vng's `--memory`. Which of the two vng will do is read from
//! `vng --dry-run` with the same arguments. `--disable-microvm` is always added (microvm has no
//! PCIe), and `--disable-kvm` when KVM cannot run the guest (TCG: no KVM, or PVM's).

use std::path::Path;
use std::process::Stdio;

use crate::cli::VngArgs;
use crate::error::{Error, Result};
use crate::vm::accel::{self, Accel, KvmKind};
use crate::vm::device::DeviceKind;
use crate::vm::nicemu_args::{nicemu_cell, PortOpts};
use crate::vm::nicemu_proc::{find_binary, NicemuProcess};
use crate::vm::run_dir::{self, RunDir};
use nicemu_provision::{self as provision, enter};

/// Packages vng needs in the sid root.
const PACKAGES: &[&str] = &["virtme-ng", "virtiofsd"];

/// Runs `vng` with nicemu's ports; returns vng's exit code.
pub fn run(args: &VngArgs) -> Result<i32> {
    let dev = DeviceKind::ALL
        .iter()
        .copied()
        .find(|d| d.name() == args.device)
        .filter(|d| d.nicemu_kind().is_some())
        .ok_or_else(|| {
            Error::Usage(format!(
                "--device {}: vng runs on a nicemu device (nicemu-igb, nicemu-ixgbe, nicemu-virtio)",
                args.device
            ))
        })?;
    let memory = memory_mib(&args.vng_args)?.unwrap_or(args.mem);
    let bin = find_binary(args.nicemu.as_deref())?;
    let prov = provision::provision()?;
    let root = prov.sid_root.clone();
    let pkgs: Vec<String> = PACKAGES.iter().map(|s| s.to_string()).collect();
    crate::build::make::ensure_packages(&root, &pkgs)?;
    let _mounts = provision::mounts::BindMounts::new(&root)?;
    let id = run_dir::new_id();
    let dir = RunDir::create(&prov.cache, Some(&root), &format!("vng-{id}"))?;
    let kind = dev.nicemu_kind().unwrap_or("igb");
    let cell = nicemu_cell(&bin, kind, args.topology, dev, &dir, PortOpts::default(), 2);
    let log = dir.host.join("nicemu.log");
    println!(
        "vng: nicemu {} (log {})",
        cell.args.join(" "),
        log.display()
    );
    let mut nicemu = NicemuProcess::start(&bin, &cell.args, &cell.sockets, &log)?;
    let tcg = !kvm_runs_guests(args.accel)?;
    let mut base = args.vng_args.clone();
    base.push("--disable-microvm".into());
    if tcg && !base.iter().any(|a| a == "--disable-kvm") {
        base.push("--disable-kvm".into());
    }
    if memory_mib(&args.vng_args)?.is_none() {
        base.extend(["--memory".into(), format!("{memory}M")]);
    }
    let shared = vng_shares_memory(&root, &base)?;
    let opts = qemu_opts(&cell.qemu, memory, shared);
    let mut vng = enter::command(&root, "vng");
    vng.args(&base).arg(format!("--qemu-opts={opts}"));
    println!(
        "vng: vng {} --qemu-opts='{opts}'{}",
        base.join(" "),
        if shared {
            " (vng's virtio-fs root shares guest RAM)"
        } else {
            " (9p root: nicemu's shared memory backend added)"
        }
    );
    let status = vng
        .stdin(Stdio::inherit())
        .status()
        .map_err(|e| Error::io("vng", e))?;
    nicemu.stop();
    println!(
        "vng: exited {}; nicemu stopped (log {})",
        status.code().unwrap_or(-1),
        log.display()
    );
    Ok(status.code().unwrap_or(1))
}

/// Whether KVM can run a stock guest: asked (`kvm`), refused (`tcg`), or for `auto` only a
/// hardware KVM (a PVM host's cannot; an unknown one is not probed here: TCG).
fn kvm_runs_guests(requested: Accel) -> Result<bool> {
    Ok(match requested {
        Accel::Tcg => false,
        Accel::Kvm => accel::resolve(Accel::Kvm, || Ok(true))? == Accel::Kvm,
        Accel::Auto => {
            accel::kvm_device_usable() && accel::kvm_kind(Path::new("/sys")) == KvmKind::Hardware
        }
    })
}

/// vng's `--memory`/`-m` value in MiB, if given (`1G`, `1024M`, `512`).
fn memory_mib(vng_args: &[String]) -> Result<Option<u32>> {
    let mut it = vng_args.iter();
    while let Some(a) = it.next() {
        let v = if a == "--memory" || a == "-m" {
            it.next().cloned()
        } else {
            a.strip_prefix("--memory=").map(str::to_owned)
        };
        if let Some(v) = v {
            return parse_size(&v)
                .map(Some)
                .ok_or_else(|| Error::Usage(format!("vng --memory {v}: give MiB or NNNM / NG")));
        }
    }
    Ok(None)
}

fn parse_size(v: &str) -> Option<u32> {
    let v = v.trim();
    if let Some(g) = v.strip_suffix(['G', 'g']) {
        return g.parse::<u32>().ok().and_then(|g| g.checked_mul(1024));
    }
    v.strip_suffix(['M', 'm']).unwrap_or(v).parse().ok()
}

/// True if vng, given `base`, puts guest RAM in a shared memfd backend itself (its virtio-fs
/// root): read from its `--dry-run` QEMU command line.
fn vng_shares_memory(root: &Path, base: &[String]) -> Result<bool> {
    let out = enter::command(root, "vng")
        .arg("--dry-run")
        .args(base)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("vng --dry-run", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("qemu-system") {
        return Err(Error::Command {
            cmd: format!("vng --dry-run {}", base.join(" ")),
            detail: String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("no QEMU command line")
                .to_owned(),
        });
    }
    Ok(text.contains("memory-backend-memfd") && text.contains("share=on"))
}

/// The `--qemu-opts` value: the ports' devices (the machine and `-m` are vng's), with a shared
/// memory backend unless vng makes one.
fn qemu_opts(cell_qemu: &[String], memory_mib: u32, vng_shares: bool) -> String {
    let mut v: Vec<String> = Vec::new();
    if !vng_shares {
        v.extend([
            "-object".into(),
            format!("memory-backend-memfd,id=nicemu-mem,size={memory_mib}M,share=on"),
            "-machine".into(),
            "memory-backend=nicemu-mem".into(),
        ]);
    }
    v.extend(cell_qemu.iter().cloned());
    v.iter()
        .map(|a| crate::qemu_args::quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn vng_s_memory_is_read_in_each_form() {
        assert_eq!(memory_mib(&s(&["-r", "/boot/vmlinuz"])).unwrap(), None);
        assert_eq!(memory_mib(&s(&["--memory", "1G"])).unwrap(), Some(1024));
        assert_eq!(memory_mib(&s(&["-m", "512M"])).unwrap(), Some(512));
        assert_eq!(memory_mib(&s(&["--memory=2048"])).unwrap(), Some(2048));
        memory_mib(&s(&["-m", "lots"])).unwrap_err();
    }

    #[test]
    fn the_backend_is_added_only_where_vng_makes_none() {
        let devs = s(&["-device", "{\"driver\":\"vfio-user-pci\"}"]);
        let virtiofs = qemu_opts(&devs, 1024, true);
        assert!(!virtiofs.contains("memory-backend"), "{virtiofs}");
        assert!(virtiofs.contains("'{\"driver\":\"vfio-user-pci\"}'"));
        let ninep = qemu_opts(&devs, 1024, false);
        assert!(ninep.starts_with(
            "-object memory-backend-memfd,id=nicemu-mem,size=1024M,share=on -machine memory-backend=nicemu-mem -device"
        ), "{ninep}");
    }
}
