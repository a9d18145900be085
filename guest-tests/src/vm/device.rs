//! Devices under test and the QEMU arguments that attach them.

use std::fmt;

use crate::error::{Error, Result};

/// MAC given to the device under test (the guest finds its interface by it).
pub const TEST_MAC: &str = "52:54:00:12:34:56";

/// A kind of NIC to test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
}

impl DeviceKind {
    /// All kinds, for help texts.
    pub const ALL: &'static [DeviceKind] = &[
        DeviceKind::QemuIgb,
        DeviceKind::QemuE1000e,
        DeviceKind::NicemuIgb,
        DeviceKind::NicemuIxgbe,
    ];

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::QemuIgb => "qemu-igb",
            DeviceKind::QemuE1000e => "qemu-e1000e",
            DeviceKind::NicemuIgb => "nicemu-igb",
            DeviceKind::NicemuIxgbe => "nicemu-ixgbe",
        }
    }

    /// The Linux driver expected to bind.
    pub fn driver(self) -> &'static str {
        match self {
            DeviceKind::QemuIgb | DeviceKind::NicemuIgb => "igb",
            DeviceKind::QemuE1000e => "e1000e",
            DeviceKind::NicemuIxgbe => "ixgbe",
        }
    }

    /// The nicemu `--device` kind, if served by nicemu.
    pub fn nicemu_kind(self) -> Option<&'static str> {
        match self {
            DeviceKind::NicemuIgb => Some("igb"),
            DeviceKind::NicemuIxgbe => Some("ixgbe"),
            _ => None,
        }
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

    /// QEMU arguments attaching this device behind root port `rp1`.
    /// `dir` is the device's run directory as QEMU sees it; `socket` the vfio-user socket.
    pub fn qemu_args(self, dir: &str, socket: Option<&str>) -> Vec<String> {
        let mut a = vec![
            "-device".to_owned(),
            "pcie-root-port,id=rp1,chassis=1,slot=1".to_owned(),
        ];
        match (self.nicemu_kind(), socket) {
            (Some(_), Some(sock)) => {
                a.push("-device".into());
                a.push(
                    serde_json::json!({
                        "driver": "vfio-user-pci",
                        "bus": "rp1",
                        "socket": {"type": "unix", "path": sock},
                    })
                    .to_string(),
                );
            }
            _ => {
                let model = match self {
                    DeviceKind::QemuE1000e => "e1000e",
                    _ => "igb",
                };
                a.push("-netdev".into());
                a.push(format!(
                    "dgram,id=n1,local.type=unix,local.path={dir}/n1.local,\
                     remote.type=unix,remote.path={dir}/n1.remote"
                ));
                a.push("-device".into());
                a.push(format!("{model},netdev=n1,bus=rp1,mac={TEST_MAC}"));
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
        assert!(DeviceKind::parse("foo").is_err());
        let a = DeviceKind::NicemuIgb.qemu_args("/r", Some("/r/igb0.sock"));
        assert!(a
            .iter()
            .any(|x| x.starts_with('{') && x.contains("\"/r/igb0.sock\"")));
        let a = DeviceKind::QemuIgb.qemu_args("/r", None);
        assert!(a.iter().any(|x| x.starts_with("igb,netdev=n1,bus=rp1")));
    }
}
