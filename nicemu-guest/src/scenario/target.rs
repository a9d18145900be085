// SPDX-License-Identifier: Apache-2.0
//! What a scenario runs against: the NIC under test in the guest (its MAC, driver, peer,
//! the host actions it has), and the guest's addresses on the emulated network.

/// Address of the device under test inside the guest's emulated network.
pub const DUT_IP: &str = "192.168.100.1";
/// Address of the peer (in netns `peer`).
pub const PEER_IP: &str = "192.168.100.2";

/// What a scenario runs against: one NIC in the guest, maybe with a peer.
#[derive(Debug, Clone)]
pub struct Target {
    /// The MAC the device was given (lower case); the guest finds its interface by it.
    pub mac: String,
    /// The Linux driver expected to bind ("igb", "e1000e", "ixgbe").
    pub driver: String,
    /// MAC of the peer port, if the topology has one.
    pub peer_mac: Option<String>,
    /// True when the harness serves host-side actions (`nicemu_host`, a nicemu device
    /// under test with a control socket).
    pub host_actions: bool,
    /// Scenarios that do not apply to the device, with the reason (SKIPped, not run).
    pub unsupported: Vec<(String, String)>,
    /// The `MODULE_VERSION` the harness stamped into the driver it built (`--patch`,
    /// `--driver-dir`); `probe` checks `/sys/module/DRIVER/version` against it.
    pub module_version: Option<String>,
    /// The device kind's name ("nicemu-igb"; empty in parser tests that do not need it).
    pub device: String,
}

#[cfg(test)]
impl Target {
    /// A parser-test target: `driver` with host actions, MAC "x", the peer's "y" if any.
    pub fn for_test(driver: &str, peer_mac: Option<&str>) -> Target {
        Target {
            mac: "x".into(),
            driver: driver.into(),
            peer_mac: peer_mac.map(str::to_owned),
            host_actions: true,
            unsupported: Vec::new(),
            module_version: None,
            device: String::new(),
        }
    }
}

impl Target {
    /// Why `scenario` does not apply to this device, if so.
    pub fn unsupported(&self, scenario: &str) -> Option<&str> {
        self.unsupported
            .iter()
            .find(|(s, _)| s == scenario)
            .map(|(_, why)| why.as_str())
    }
}
