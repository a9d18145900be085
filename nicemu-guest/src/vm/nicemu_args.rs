// SPDX-License-Identifier: Apache-2.0
//! nicemu's command line for a device set: one `--device` per nicemu port of the topology
//! (with the per-port options the parameters choose), the `--wire` to an interop peer, the
//! control socket; and QEMU's device arguments for those ports. `run` starts nicemu with
//! it; `qemu-args` prints it for other launchers.

use std::path::{Path, PathBuf};

use crate::params::Params;
use crate::vm::device::{DeviceKind, Topology};
use crate::vm::host::{HostActions, CONTROL_SOCKET};
use crate::vm::run_dir::RunDir;

/// The nicemu command line, the sockets to wait for, the QEMU device arguments and the
/// host actions of one cell served by nicemu (`kind` igb or ixgbe).
pub(crate) struct NicemuCell {
    pub(crate) args: Vec<String>,
    pub(crate) sockets: Vec<PathBuf>,
    pub(crate) qemu: Vec<String>,
    pub(crate) host: HostActions,
}

/// Per-port nicemu options the parameters choose, on every nicemu port of a cell.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PortOpts {
    /// `ptp.delay_ns`: `delay=NS` on igb and ixgbe ports (0 = none).
    pub delay_ns: u64,
    /// `kselftest.igb_autoneg_ms` in runs with kselftest: `autoneg=MS` on igb ports
    /// (0 = nicemu's default).
    pub igb_autoneg_ms: u64,
    /// `kselftest.igb_cable` in runs with kselftest: two nicemu igb ports are cabled to
    /// each other (`cable=` on the first).
    pub igb_cable: bool,
    /// `virtio.coalesce`: `coalesce=on` on virtio-net ports (receive coalescing).
    pub virtio_coalesce: bool,
}

impl PortOpts {
    /// The options of a run with parameters `p` and scenarios `scenarios`.
    pub(crate) fn of(p: &Params, scenarios: &[String]) -> Self {
        let ksft = scenarios.iter().any(|s| s == "kselftest");
        PortOpts {
            delay_ns: p.num("ptp.delay_ns").max(0.0) as u64,
            igb_autoneg_ms: if ksft {
                p.num("kselftest.igb_autoneg_ms").clamp(0.0, 10_000.0) as u64
            } else {
                0
            },
            igb_cable: ksft && p.num("kselftest.igb_cable") != 0.0,
            virtio_coalesce: p.num("virtio.coalesce") != 0.0,
        }
    }

    /// The `,key=value` items for a port of nicemu kind `kind`.
    fn items(&self, kind: &str) -> String {
        let mut s = String::new();
        if self.delay_ns > 0 {
            s.push_str(&format!(",delay={}", self.delay_ns));
        }
        if self.igb_autoneg_ms > 0 && kind == "igb" {
            s.push_str(&format!(",autoneg={}", self.igb_autoneg_ms));
        }
        if self.virtio_coalesce && kind == "virtio-net" {
            s.push_str(",coalesce=on");
        }
        s
    }
}

/// The nicemu command line of one cell: a port of nicemu kind `kind` per MAC of `topo`
/// (only the device under test with an interop peer, which is QEMU's), sockets in `d`.
pub(crate) fn nicemu_cell(
    bin: &Path,
    kind: &str,
    topo: Topology,
    dev: DeviceKind,
    d: &RunDir,
    opts: PortOpts,
    virtio_queues: usize,
) -> NicemuCell {
    let mut args = Vec::new();
    let mut sockets = Vec::new();
    let mut guest_socks = Vec::new();
    // The interop peer is QEMU's; only the device under test is nicemu's then.
    let ports = if topo.interop_peer().is_some() {
        &topo.macs()[..1]
    } else {
        topo.macs()
    };
    let port_kind = |i: usize| match topo.nicemu_peer(dev) {
        Some(peer) if i == 1 => peer,
        _ => (kind, dev.nicemu_id().unwrap_or(kind)),
    };
    let port_opts = |i: usize| match topo.nicemu_peer(dev) {
        Some(_) if i == 1 => topo.nicemu_peer_opts().to_owned(),
        _ => dev.nicemu_opts(virtio_queues, i),
    };
    // Two igb ports: the first one's `cable=` names the second.
    let cable = match (ports.len(), port_kind(0).0, port_kind(1)) {
        (2, "igb", ("igb", idp)) if opts.igb_cable => format!(",cable={idp}1"),
        _ => String::new(),
    };
    for (i, mac) in ports.iter().enumerate() {
        let (kind, idp) = port_kind(i);
        let id = format!("{idp}{i}");
        let (host, guest) = d.socket(&format!("{id}.sock"));
        args.push("--device".to_owned());
        args.push(format!(
            "{kind},id={id},socket={}{},mac={mac},net=lan0{}{}",
            host.display(),
            port_opts(i),
            opts.items(kind),
            if i == 0 { cable.as_str() } else { "" }
        ));
        sockets.push(host);
        guest_socks.push(guest);
    }
    let qemu = match topo.interop_peer() {
        Some(model) => {
            let (host, guest) = d.socket("wire.sock");
            args.push("--wire".to_owned());
            args.push(format!("stream,path={},net=lan0", host.display()));
            sockets.push(host);
            DeviceKind::interop_args(&guest_socks[0], model, &guest)
        }
        None => dev.qemu_args(
            &d.guest.to_string_lossy(),
            &guest_socks,
            topo.macs(),
            virtio_queues,
        ),
    };
    let (control, _) = d.socket(CONTROL_SOCKET);
    args.push("--control".to_owned());
    args.push(control.display().to_string());
    sockets.push(control.clone());
    let idp = dev.nicemu_id().unwrap_or(kind);
    let peer = (ports.len() > 1).then(|| {
        let p = topo.nicemu_peer(dev).map_or(idp, |(_, id)| id);
        format!("{p}1")
    });
    let host = HostActions::new(bin, &control, &d.host, &format!("{idp}0"), peer.as_deref());
    NicemuCell {
        args,
        sockets,
        qemu,
        host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_cell_is_igb0_and_ixgbe1_with_the_delay() {
        let d = RunDir::at("/h", "/g");
        let c = nicemu_cell(
            Path::new("/bin/nicemu"),
            "igb",
            Topology::Mixed,
            DeviceKind::NicemuIgb,
            &d,
            PortOpts {
                delay_ns: 50000,
                igb_autoneg_ms: 500,
                igb_cable: true,
                virtio_coalesce: true,
            },
            2,
        );
        let devices: Vec<&str> = c
            .args
            .windows(2)
            .filter(|w| w[0] == "--device")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(
            devices,
            [
                "igb,id=igb0,socket=/h/igb0.sock,mac=52:54:00:12:34:56,net=lan0,delay=50000,autoneg=500",
                "ixgbe,id=ixgbe1,socket=/h/ixgbe1.sock,mac=52:54:00:12:34:57,net=lan0,delay=50000",
            ]
        );
        assert_eq!(
            c.qemu
                .iter()
                .filter(|a| a.contains("vfio-user-pci"))
                .count(),
            2
        );
        let netns = nicemu_cell(
            Path::new("/bin/nicemu"),
            "igb",
            Topology::Netns,
            DeviceKind::NicemuIgb,
            &d,
            PortOpts::default(),
            2,
        );
        assert!(netns
            .args
            .iter()
            .all(|a| !a.contains("delay=") && !a.contains("autoneg=")));
        assert!(netns.args.iter().any(|a| a.starts_with("igb,id=igb1,")));
        let cabled = nicemu_cell(
            Path::new("/bin/nicemu"),
            "igb",
            Topology::Netns,
            DeviceKind::NicemuIgb,
            &d,
            PortOpts {
                igb_cable: true,
                ..PortOpts::default()
            },
            2,
        );
        assert!(cabled
            .args
            .iter()
            .any(|a| a.starts_with("igb,id=igb0,") && a.ends_with(",cable=igb1")));
        let virtio = |virtio_coalesce| {
            let opts = PortOpts {
                virtio_coalesce,
                ..PortOpts::default()
            };
            let c = nicemu_cell(
                Path::new("/bin/nicemu"),
                "virtio-net",
                Topology::Netns,
                DeviceKind::NicemuVirtio,
                &d,
                opts,
                2,
            );
            c.args.iter().filter(|a| a.contains(",coalesce=on")).count()
        };
        assert_eq!((virtio(false), virtio(true)), (0, 2));
    }

    #[test]
    fn vf_pf_cell_is_vf_0_next_to_its_adapters_pf_port() {
        let d = RunDir::at("/h", "/g");
        for (dev, kind, pf) in [
            (DeviceKind::NicemuIgbvf, "igbvf", "igb"),
            (DeviceKind::NicemuIxgbevf, "ixgbevf", "ixgbe"),
        ] {
            let c = nicemu_cell(
                Path::new("/bin/nicemu"),
                kind,
                Topology::VfPf,
                dev,
                &d,
                PortOpts::default(),
                2,
            );
            let devices: Vec<&str> = c
                .args
                .windows(2)
                .filter(|w| w[0] == "--device")
                .map(|w| w[1].as_str())
                .collect();
            assert_eq!(
                devices,
                [
                    format!("{kind},id={kind}0,socket=/h/{kind}0.sock,adapter=a0,vf=0,mac=52:54:00:12:34:56,net=lan0"),
                    format!("{pf},id={pf}1,socket=/h/{pf}1.sock,adapter=a0,mac=52:54:00:12:34:57,net=lan0"),
                ]
            );
            assert_eq!(
                c.qemu
                    .iter()
                    .filter(|a| a.contains("vfio-user-pci"))
                    .count(),
                2
            );
        }
    }

    /// A cache in a deep directory (a CI job's HOME, a deep NICEMU_CACHE): the run directory
    /// alone is longer than a unix socket path may be (108 bytes), yet nicemu gets socket
    /// paths it can bind, and they are the files in the cell directory QEMU connects to.
    #[test]
    fn sockets_of_a_run_directory_deeper_than_the_socket_path_limit_can_be_bound() {
        let deep = std::env::temp_dir()
            .join(format!("nicemu-deep-{}", std::process::id()))
            .join("a-ci-job-with-a-long-name/home/.cache/nicemu/sid-root/var/lib");
        let run = RunDir::create(&deep, None, "1796161598-16192").unwrap();
        let d = run.sub("1-tree_linux+p-nicemu-igb").unwrap();
        assert!(d.host.join("igb0.sock").as_os_str().len() > 108);
        let c = nicemu_cell(
            Path::new("/bin/nicemu"),
            "igb",
            Topology::Netns,
            DeviceKind::NicemuIgb,
            &d,
            PortOpts::default(),
            2,
        );
        for s in &c.sockets {
            assert!(
                s.as_os_str().len() < 108,
                "{} bytes: {}",
                s.as_os_str().len(),
                s.display()
            );
            assert!(
                c.args.iter().any(|a| a.contains(&*s.to_string_lossy())),
                "{}",
                s.display()
            );
        }
        // Bound at the short path, the socket is the cell directory's file.
        let l = std::os::unix::net::UnixListener::bind(&c.sockets[0]).unwrap();
        let real = d.host.join("igb0.sock");
        assert!(std::os::unix::fs::FileTypeExt::is_socket(
            &std::fs::symlink_metadata(&real).unwrap().file_type()
        ));
        // QEMU on the host (no chroot) connects at a path that fits too.
        let guest = c.qemu.iter().find(|a| a.contains("vfio-user-pci")).unwrap();
        let path = guest
            .split("\"path\":\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap();
        assert!(path.len() < 108, "{path}");
        std::os::unix::net::UnixStream::connect(path).unwrap();
        drop(l);
        drop((c, d, run));
        let _ = std::fs::remove_dir_all(
            std::env::temp_dir().join(format!("nicemu-deep-{}", std::process::id())),
        );
    }
}
