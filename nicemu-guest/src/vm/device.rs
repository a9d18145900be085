// SPDX-License-Identifier: Apache-2.0
//! Devices under test and the QEMU arguments that attach them.

use std::fmt;

use crate::error::{Error, Result};

/// MAC given to the device under test (the guest finds its interface by it).
pub const TEST_MAC: &str = "52:54:00:12:34:56";
/// MAC given to the peer port.
pub const PEER_MAC: &str = "52:54:00:12:34:57";
/// MAC of QEMU's igb PF whose VFs are `qemu-igbvf`'s ports.
pub const SRIOV_PF_MAC: &str = "52:54:00:12:34:58";

/// nicemu's igb autonegotiation time without `autoneg=` (its `phy::AUTONEG_NS`), in ms.
pub const NICEMU_AUTONEG_MS: u64 = 1000;

/// Where the peer sits.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Topology {
    /// A second port of the same kind in the same guest, moved into netns `peer`.
    Netns,
    /// Only the device under test (scenarios needing a peer are skipped).
    Single,
    /// The device under test is nicemu's; the peer (in netns `peer`) is QEMU's built-in
    /// igb whose `-netdev stream` connects to nicemu's `--wire stream` on the same net.
    #[value(name = "interop-igb")]
    #[serde(rename = "interop-igb")]
    InteropIgb,
    /// As `interop-igb` with QEMU's built-in e1000e as the peer.
    #[value(name = "interop-e1000e")]
    #[serde(rename = "interop-e1000e")]
    InteropE1000e,
    /// nicemu only, device under test nicemu-igb: port `igb0` is the device under test, the
    /// peer is an ixgbe port `ixgbe1` of the same nicemu process on the same net (in netns
    /// `peer`).
    Mixed,
    /// nicemu's VFs only (nicemu-igbvf, nicemu-ixgbevf): the device under test is VF 0 of
    /// adapter `a0`, the peer (in netns `peer`) is that adapter's PF port (an igb port
    /// `igb1` next to an igbvf, an ixgbe port `ixgbe1` next to an ixgbevf) on the same net:
    /// a VF next to a PF port in one guest, their frames VEB loopback.
    #[value(name = "vf-pf")]
    #[serde(rename = "vf-pf")]
    VfPf,
}

impl Topology {
    /// All topologies, for help texts.
    pub const ALL: &'static [Topology] = &[
        Topology::Netns,
        Topology::Single,
        Topology::InteropIgb,
        Topology::InteropE1000e,
        Topology::Mixed,
        Topology::VfPf,
    ];

    /// MACs of the ports: the device under test first.
    pub fn macs(self) -> &'static [&'static str] {
        match self {
            Topology::Single => &[TEST_MAC],
            _ => &[TEST_MAC, PEER_MAC],
        }
    }

    /// Name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Topology::Netns => "netns",
            Topology::Single => "single",
            Topology::InteropIgb => "interop-igb",
            Topology::InteropE1000e => "interop-e1000e",
            Topology::Mixed => "mixed",
            Topology::VfPf => "vf-pf",
        }
    }

    /// The nicemu (`--device` kind, id prefix) of the peer port when it differs from the
    /// device under test `dev`'s (`mixed`: an ixgbe port next to the igb one; `vf-pf`: the
    /// VF's PF port, igb or ixgbe).
    pub fn nicemu_peer(self, dev: DeviceKind) -> Option<(&'static str, &'static str)> {
        match (self, dev) {
            (Topology::Mixed, _) => Some(("ixgbe", "ixgbe")),
            (Topology::VfPf, DeviceKind::NicemuIgbvf) => Some(("igb", "igb")),
            (Topology::VfPf, DeviceKind::NicemuIxgbevf) => Some(("ixgbe", "ixgbe")),
            _ => None,
        }
    }

    /// Extra nicemu `--device` options of the peer port of `nicemu_peer` (`vf-pf`: it is
    /// adapter `a0`'s PF port).
    pub fn nicemu_peer_opts(self) -> &'static str {
        match self {
            Topology::VfPf => ",adapter=a0",
            _ => "",
        }
    }

    /// QEMU's built-in model of the peer port in an interop topology.
    pub fn interop_peer(self) -> Option<&'static str> {
        match self {
            Topology::InteropIgb => Some("igb"),
            Topology::InteropE1000e => Some("e1000e"),
            _ => None,
        }
    }
}

/// A kind of NIC to test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// QEMU's built-in igb (the reference).
    QemuIgb,
    /// QEMU's built-in e1000e.
    QemuE1000e,
    /// nicemu's igb over vfio-user.
    NicemuIgb,
    /// nicemu's ixgbe over vfio-user.
    NicemuIxgbe,
    /// nicemu's virtio-net over vhost-user (`-netdev vhost-user`, `virtio-net-pci`).
    NicemuVirtio,
    /// QEMU's in-process virtio-net-pci (the paravirtual baseline), ports joined like
    /// QEMU's igb pair (`-netdev dgram`; one queue pair, no vnet header so no offloads).
    QemuVirtio,
    /// nicemu's 82576 SR-IOV VFs over vfio-user (the ports are VFs 0, 1… of one
    /// adapter, nicemu their PF).
    NicemuIgbvf,
    /// nicemu's 82599 SR-IOV VFs over vfio-user.
    NicemuIxgbevf,
    /// QEMU's built-in igb's SR-IOV VFs: the guest's igb PF driver enables two VFs
    /// (`sriov_numvfs`), gives them the ports' MACs (`ip link set PF vf N mac`) and igbvf
    /// binds them; QEMU's igb switches between them (the reference for nicemu-igbvf).
    QemuIgbvf,
}

/// Most queue pairs the harness gives a nicemu virtio-net port.
pub const MAX_VIRTIO_QUEUES: usize = 16;

impl DeviceKind {
    /// All kinds, for help texts.
    pub const ALL: &'static [DeviceKind] = &[
        DeviceKind::QemuIgb,
        DeviceKind::QemuE1000e,
        DeviceKind::NicemuIgb,
        DeviceKind::NicemuIxgbe,
        DeviceKind::NicemuVirtio,
        DeviceKind::QemuVirtio,
        DeviceKind::NicemuIgbvf,
        DeviceKind::NicemuIxgbevf,
        DeviceKind::QemuIgbvf,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::QemuIgb => "qemu-igb",
            DeviceKind::QemuE1000e => "qemu-e1000e",
            DeviceKind::NicemuIgb => "nicemu-igb",
            DeviceKind::NicemuIxgbe => "nicemu-ixgbe",
            DeviceKind::NicemuVirtio => "nicemu-virtio",
            DeviceKind::QemuVirtio => "qemu-virtio",
            DeviceKind::NicemuIgbvf => "nicemu-igbvf",
            DeviceKind::NicemuIxgbevf => "nicemu-ixgbevf",
            DeviceKind::QemuIgbvf => "qemu-igbvf",
        }
    }

    /// The Linux driver expected to bind.
    pub fn driver(self) -> &'static str {
        match self {
            DeviceKind::QemuIgb | DeviceKind::NicemuIgb => "igb",
            DeviceKind::QemuE1000e => "e1000e",
            DeviceKind::NicemuIxgbe => "ixgbe",
            DeviceKind::NicemuVirtio | DeviceKind::QemuVirtio => "virtio_net",
            DeviceKind::NicemuIgbvf | DeviceKind::QemuIgbvf => "igbvf",
            DeviceKind::NicemuIxgbevf => "ixgbevf",
        }
    }

    /// The nicemu `--device` kind, if served by nicemu.
    pub fn nicemu_kind(self) -> Option<&'static str> {
        match self {
            DeviceKind::NicemuIgb => Some("igb"),
            DeviceKind::NicemuIxgbe => Some("ixgbe"),
            DeviceKind::NicemuVirtio => Some("virtio-net"),
            DeviceKind::NicemuIgbvf => Some("igbvf"),
            DeviceKind::NicemuIxgbevf => Some("ixgbevf"),
            _ => None,
        }
    }

    /// Prefix of the nicemu port ids (`igb0`, `ixgbe1`, `vn0`, …).
    pub fn nicemu_id(self) -> Option<&'static str> {
        match self {
            DeviceKind::NicemuVirtio => Some("vn"),
            other => other.nicemu_kind(),
        }
    }

    /// Extra nicemu `--device` options of port `port` of the kind (virtio-net:
    /// `queues=N`, N the `virtio_queues` asked for: parameter `virtio.queues`, default 2;
    /// VFs: VF `port` of adapter `a0`).
    pub fn nicemu_opts(self, virtio_queues: usize, port: usize) -> String {
        match self {
            DeviceKind::NicemuVirtio => format!(",queues={virtio_queues}"),
            DeviceKind::NicemuIgbvf | DeviceKind::NicemuIxgbevf => {
                format!(",adapter=a0,vf={port}")
            }
            _ => String::new(),
        }
    }

    /// Why `scenario` does not apply to this device, if it does not (virtio-net has no
    /// ethtool self-test and no hardware counters the `stats` checks compare; `faults` runs
    /// only its `link` case there, see [`crate::scenario::faults::VIRTIO_CASES`]).
    pub fn unsupported(self, scenario: &str) -> Option<&'static str> {
        match (self, scenario) {
            (DeviceKind::NicemuVirtio | DeviceKind::QemuVirtio, "selftest") => {
                Some("virtio_net has no ethtool self-test (ethtool -t)")
            }
            (DeviceKind::NicemuVirtio | DeviceKind::QemuVirtio, "stats") => Some(
                "virtio_net has no hardware packet/byte/broadcast counters to check (ethtool -S)",
            ),
            (d, "vf-admin" | "vf-reset") if !d.is_nicemu_vf() => {
                Some("needs an SR-IOV VF whose PF is nicemu's agent (nicemu-igbvf, nicemu-ixgbevf)")
            }
            (d, "hostile") if d != DeviceKind::NicemuIgb => {
                Some("the hostile guest's register program is the 82576's (nicemu's igb only)")
            }
            _ => None,
        }
    }

    /// True for nicemu's SR-IOV VFs (nicemu plays their PF).
    pub fn is_nicemu_vf(self) -> bool {
        matches!(self, DeviceKind::NicemuIgbvf | DeviceKind::NicemuIxgbevf)
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|d| d.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|d| d.name()).collect();
                Error::Usage(format!(
                    "unknown device {s:?} (known: {})",
                    names.join(", ")
                ))
            })
    }

    /// QEMU arguments for an interop cell: the device under test over vfio-user at
    /// `socket` (MAC `TEST_MAC`, root port `rp1`) and QEMU's built-in `peer_model`
    /// (MAC `PEER_MAC`, root port `rp2`) whose `-netdev stream` connects to nicemu's
    /// stream wire at `wire` (paths as QEMU sees them).
    pub fn interop_args(socket: &str, peer_model: &str, wire: &str) -> Vec<String> {
        vec![
            "-device".into(),
            "pcie-root-port,id=rp1,chassis=1,slot=1".into(),
            "-device".into(),
            serde_json::json!({
                "driver": "vfio-user-pci",
                "bus": "rp1",
                "socket": {"type": "unix", "path": socket},
            })
            .to_string(),
            "-device".into(),
            "pcie-root-port,id=rp2,chassis=2,slot=2".into(),
            "-netdev".into(),
            format!("stream,id=n2,server=off,addr.type=unix,addr.path={wire}"),
            "-device".into(),
            format!("{peer_model},netdev=n2,bus=rp2,mac={PEER_MAC}"),
        ]
    }

    /// QEMU arguments attaching one port per MAC in `macs`, each behind its own PCIe
    /// root port (`rp1`, `rp2`, …). `dir` is the device's run directory as QEMU sees it;
    /// `sockets` the vfio-user sockets (nicemu kinds, one per port). QEMU's own devices
    /// with two ports are joined port to port by a pair of `-netdev dgram` unix sockets;
    /// a single port sends into an unbound socket (a sink). nicemu virtio-net ports get
    /// `virtio_queues` queue pairs.
    pub fn qemu_args(
        self,
        dir: &str,
        sockets: &[String],
        macs: &[&str],
        virtio_queues: usize,
    ) -> Vec<String> {
        let mut a = Vec::new();
        if self == DeviceKind::QemuIgbvf {
            // One igb PF (its VFs are the ports), its own traffic into a sink.
            a.extend([
                "-device".to_owned(),
                "pcie-root-port,id=rp1,chassis=1,slot=1".to_owned(),
                "-netdev".to_owned(),
                format!(
                    "dgram,id=n1,local.type=unix,local.path={dir}/n1.local,\
                     remote.type=unix,remote.path={dir}/n1.remote"
                ),
                "-device".to_owned(),
                format!("igb,netdev=n1,bus=rp1,mac={SRIOV_PF_MAC}"),
            ]);
            return a;
        }
        for (i, mac) in macs.iter().enumerate() {
            let n = i + 1;
            if let (DeviceKind::NicemuVirtio, Some(sock)) = (self, sockets.get(i)) {
                let q = virtio_queues;
                a.extend([
                    "-chardev".to_owned(),
                    format!("socket,id=c{n},path={sock},reconnect-ms=1000"),
                    "-netdev".to_owned(),
                    format!("vhost-user,id=n{n},chardev=c{n},queues={q}"),
                    "-device".to_owned(),
                    format!(
                        "virtio-net-pci,netdev=n{n},mq=on,vectors={},mac={mac}",
                        2 * q + 2
                    ),
                ]);
                continue;
            }
            a.push("-device".to_owned());
            a.push(format!("pcie-root-port,id=rp{n},chassis={n},slot={n}"));
            match (self.nicemu_kind(), sockets.get(i)) {
                (Some(_), Some(sock)) => {
                    a.push("-device".into());
                    a.push(
                        serde_json::json!({
                            "driver": "vfio-user-pci",
                            "bus": format!("rp{n}"),
                            "socket": {"type": "unix", "path": sock},
                        })
                        .to_string(),
                    );
                }
                _ => {
                    let model = match self {
                        DeviceKind::QemuE1000e => "e1000e",
                        DeviceKind::QemuVirtio => "virtio-net-pci",
                        _ => "igb",
                    };
                    let (local, remote) = if macs.len() == 2 {
                        (format!("{dir}/n{n}.sock"), format!("{dir}/n{}.sock", 3 - n))
                    } else {
                        (format!("{dir}/n{n}.local"), format!("{dir}/n{n}.remote"))
                    };
                    a.push("-netdev".into());
                    a.push(format!(
                        "dgram,id=n{n},local.type=unix,local.path={local},\
                         remote.type=unix,remote.path={remote}"
                    ));
                    a.push("-device".into());
                    a.push(format!("{model},netdev=n{n},bus=rp{n},mac={mac}"));
                }
            }
        }
        a
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_vfio_user_uses_json() {
        for d in DeviceKind::ALL {
            assert_eq!(DeviceKind::parse(d.name()).unwrap(), *d);
        }
        DeviceKind::parse("foo").unwrap_err();
        let a = DeviceKind::NicemuIgb.qemu_args("/r", &["/r/igb0.sock".into()], &[TEST_MAC], 2);
        assert!(a
            .iter()
            .any(|x| x.starts_with('{') && x.contains("\"/r/igb0.sock\"")));
        let a = DeviceKind::QemuIgb.qemu_args("/r", &[], &[TEST_MAC], 2);
        assert!(a.iter().any(|x| x.starts_with("igb,netdev=n1,bus=rp1")));
        let socks = ["/r/vn0.sock".to_owned(), "/r/vn1.sock".to_owned()];
        let a = DeviceKind::NicemuVirtio.qemu_args("/r", &socks, &[TEST_MAC, PEER_MAC], 2);
        let joined = a.join(" ");
        assert!(joined.contains(
            "-chardev socket,id=c2,path=/r/vn1.sock,reconnect-ms=1000 \
             -netdev vhost-user,id=n2,chardev=c2,queues=2 \
             -device virtio-net-pci,netdev=n2,mq=on,vectors=6,mac=52:54:00:12:34:57"
        ));
        let a = DeviceKind::NicemuVirtio.qemu_args("/r", &socks, &[TEST_MAC, PEER_MAC], 4);
        let joined = a.join(" ");
        assert!(joined.contains("-netdev vhost-user,id=n1,chardev=c1,queues=4 "));
        assert!(joined.contains("virtio-net-pci,netdev=n1,mq=on,vectors=10,mac="));
        assert_eq!(DeviceKind::NicemuVirtio.nicemu_opts(4, 0), ",queues=4");
        assert_eq!(DeviceKind::NicemuIgb.nicemu_opts(4, 0), "");
        assert_eq!(
            DeviceKind::NicemuIxgbevf.nicemu_opts(4, 1),
            ",adapter=a0,vf=1"
        );
        let a = DeviceKind::QemuVirtio.qemu_args("/r", &[], &[TEST_MAC, PEER_MAC], 4);
        let joined = a.join(" ");
        assert!(joined.contains("virtio-net-pci,netdev=n2,bus=rp2,mac=52:54:00:12:34:57"));
        assert!(joined.contains("local.path=/r/n1.sock,remote.type=unix,remote.path=/r/n2.sock"));
        assert!(!joined.contains("vhost-user"));
        let a = DeviceKind::QemuIgbvf.qemu_args("/r", &[], &[TEST_MAC, PEER_MAC], 2);
        let joined = a.join(" ");
        assert!(joined.contains("igb,netdev=n1,bus=rp1,mac=52:54:00:12:34:58"));
        assert_eq!(joined.matches("-device igb").count(), 1, "one PF: {joined}");
        assert!(DeviceKind::QemuIgbvf.unsupported("vf-admin").is_some());
        assert_eq!(DeviceKind::QemuIgbvf.driver(), "igbvf");
        assert_eq!(DeviceKind::NicemuVirtio.unsupported("ping"), None);
        assert_eq!(DeviceKind::NicemuVirtio.unsupported("faults"), None);
    }

    #[test]
    fn two_ports_get_own_root_ports_and_crossed_sockets() {
        let a = DeviceKind::QemuIgb.qemu_args("/r", &[], &[TEST_MAC, PEER_MAC], 2);
        let joined = a.join(" ");
        assert!(joined.contains("pcie-root-port,id=rp2,chassis=2"));
        assert!(joined.contains("local.path=/r/n1.sock,remote.type=unix,remote.path=/r/n2.sock"));
        assert!(joined.contains("local.path=/r/n2.sock,remote.type=unix,remote.path=/r/n1.sock"));
        assert!(joined.contains("igb,netdev=n2,bus=rp2,mac=52:54:00:12:34:57"));
        let socks = ["/r/igb0.sock".to_owned(), "/r/igb1.sock".to_owned()];
        let a = DeviceKind::NicemuIgb.qemu_args("/r", &socks, &[TEST_MAC, PEER_MAC], 2);
        assert!(a.join(" ").contains("\"bus\":\"rp2\""));
    }

    #[test]
    fn interop_peer_connects_to_the_stream_wire() {
        let a = DeviceKind::interop_args("/r/igb0.sock", "e1000e", "/r/wire.sock");
        let joined = a.join(" ");
        assert!(joined.contains("\"path\":\"/r/igb0.sock\""));
        assert!(joined
            .contains("-netdev stream,id=n2,server=off,addr.type=unix,addr.path=/r/wire.sock"));
        assert!(joined.contains("e1000e,netdev=n2,bus=rp2,mac=52:54:00:12:34:57"));
        for t in Topology::ALL {
            let v = serde_json::to_value(t).unwrap();
            assert_eq!(v, t.name());
            assert_eq!(
                <Topology as clap::ValueEnum>::from_str(t.name(), false).unwrap(),
                *t
            );
        }
    }
}
