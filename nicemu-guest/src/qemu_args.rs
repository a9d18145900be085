// SPDX-License-Identifier: Apache-2.0
//! `qemu-args`: the nicemu command and the QEMU arguments for a device set, the same ones
//! `run` uses (`vm::nicemu_args`), for launchers other than the harness (virtme-ng's
//! `--qemu-opts`, libvirt's `<qemu:commandline>`, a script). vfio-user and vhost-user need
//! guest RAM QEMU can share: `-object memory-backend-memfd,…,share=on` as the machine's memory.

use std::path::Path;

use crate::cli::{QemuArgsArgs, QemuArgsFormat};
use crate::error::{Error, Result};
use crate::vm::device::DeviceKind;
use crate::vm::run_dir::RunDir;

/// The two argument vectors: nicemu's (without the program) and QEMU's.
pub fn vectors(args: &QemuArgsArgs, nicemu: &Path) -> Result<(Vec<String>, Vec<String>)> {
    let dev = DeviceKind::ALL
        .iter()
        .copied()
        .find(|d| d.name() == args.device)
        .ok_or_else(|| {
            let names: Vec<&str> = DeviceKind::ALL.iter().map(|d| d.name()).collect();
            Error::Usage(format!(
                "unknown device {:?} (devices: {})",
                args.device,
                names.join(", ")
            ))
        })?;
    let dir = RunDir::at(&args.dir, &args.dir);
    let mut qemu = vec![
        "-machine".to_owned(),
        "q35,memory-backend=mem".to_owned(),
        "-object".to_owned(),
        format!("memory-backend-memfd,id=mem,size={}M,share=on", args.mem),
        "-m".to_owned(),
        format!("{}M", args.mem),
    ];
    let nicemu_args = match dev.nicemu_kind() {
        Some(kind) => {
            let c = crate::vm::nicemu_args::nicemu_cell(
                nicemu,
                kind,
                args.topology,
                dev,
                &dir,
                crate::vm::nicemu_args::PortOpts::default(),
                2,
            );
            qemu.extend(c.qemu);
            c.args
        }
        None => {
            let d = dir.guest.to_string_lossy();
            qemu.extend(dev.qemu_args(&d, &[], args.topology.macs(), 2));
            Vec::new()
        }
    };
    Ok((nicemu_args, qemu))
}

/// Renders the vectors in `format`.
pub fn render(format: QemuArgsFormat, nicemu: &Path, n: &[String], q: &[String]) -> String {
    let quoted = |v: &[String]| v.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ");
    match format {
        QemuArgsFormat::Shell => {
            let mut s = String::new();
            if !n.is_empty() {
                s.push_str("# 1. start nicemu (it creates the sockets QEMU connects to):\n");
                s.push_str(&format!(
                    "{} {}\n",
                    quote(&nicemu.to_string_lossy()),
                    quoted(n)
                ));
            }
            s.push_str("# 2. add to QEMU's command line (with your -kernel/-initrd/-drive):\n");
            s.push_str(&quoted(q));
            s.push('\n');
            s
        }
        QemuArgsFormat::Nicemu => n.iter().map(|a| format!("{a}\n")).collect(),
        QemuArgsFormat::Qemu => q.iter().map(|a| format!("{a}\n")).collect(),
        QemuArgsFormat::Vng => {
            // vng makes the q35 machine and -m itself (--memory must equal the backend size);
            // it only lacks the shared memory backend, when it falls back to 9p.
            let mut v: Vec<String> = q[2..4].to_vec();
            v.extend(["-machine".to_owned(), "memory-backend=mem".to_owned()]);
            v.extend(q.iter().skip(6).cloned());
            format!("--qemu-opts={}\n", quote(&quoted(&v)))
        }
    }
}

/// Single-quotes `a` for sh when it holds anything but safe characters.
pub fn quote(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        a.to_owned()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vm::device::Topology;

    fn args(device: &str, topology: Topology) -> QemuArgsArgs {
        QemuArgsArgs {
            device: device.into(),
            topology,
            dir: "/tmp/n".into(),
            mem: 512,
            nicemu: None,
            format: QemuArgsFormat::Shell,
        }
    }

    #[test]
    fn igb_gets_a_vfio_user_port_and_shared_memory() {
        let (n, q) = vectors(
            &args("nicemu-igb", Topology::Single),
            Path::new("/b/nicemu"),
        )
        .unwrap();
        assert!(n
            .iter()
            .any(|a| a.starts_with("igb,id=igb0,socket=/tmp/n/igb0.sock,")));
        assert!(n.windows(2).any(|w| w[0] == "--control"));
        assert!(q
            .iter()
            .any(|a| a.contains("\"driver\":\"vfio-user-pci\"") && a.contains("/tmp/n/igb0.sock")));
        assert!(q
            .iter()
            .any(|a| a == "memory-backend-memfd,id=mem,size=512M,share=on"));
        let s = render(QemuArgsFormat::Shell, Path::new("/b/nicemu"), &n, &q);
        assert!(s.contains("/b/nicemu --device igb,id=igb0"));
        assert!(s.contains("'{\"bus\":\"rp1\""), "{s}");
    }

    #[test]
    fn vng_gets_one_qemu_opts_word() {
        let (n, q) = vectors(&args("nicemu-igb", Topology::Single), Path::new("nicemu")).unwrap();
        let s = render(QemuArgsFormat::Vng, Path::new("nicemu"), &n, &q);
        assert!(s.starts_with("--qemu-opts='-object memory-backend-memfd,id=mem,size=512M,share=on -machine memory-backend=mem -device pcie-root-port"), "{s}");
        assert!(!s.contains("q35"));
    }

    #[test]
    fn unknown_devices_and_quoting() {
        vectors(&args("e1000", Topology::Single), Path::new("x")).unwrap_err();
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), "'it'\\''s'");
        assert_eq!(quote("q35,memory-backend=mem"), "q35,memory-backend=mem");
    }
}
