// SPDX-License-Identifier: Apache-2.0
//! The device side of a counting window, from nicemu's own counters: at each edge of a
//! window (outside it, so the guest's request is not counted) the guest asks the harness
//! for `nicemu ctl --json stats` of the device under test and of the peer port
//! (`nicemu_host devNa …` before the window opens, `devNb` after it closes); the
//! differences are the register reads and writes (a BAR read is the expensive access on
//! real hardware, about 1 µs over PCIe), interrupts raised, descriptors processed and
//! frames through the port in the window.
//!
//! Both ports run in the guest, as the instructions counted do, so a window's figures
//! cover both ends of the traffic. Periodic driver work (igb's watchdog reads the
//! statistics registers every 2 s) falls into long windows: register reads per unit are
//! exact for short windows and carry that share otherwise.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::scenario::Section;

/// nicemu's counters of one port at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DevCounts {
    /// BAR reads the guest made.
    pub bar_reads: u64,
    /// BAR writes the guest made.
    pub bar_writes: u64,
    /// Interrupts the device raised.
    pub irqs: u64,
    /// Frames the port sent into nicemu's switch.
    pub tx_frames: u64,
    /// Frames the switch delivered to the port.
    pub rx_frames: u64,
    /// Transmit descriptors the device processed.
    pub tx_descs: u64,
    /// Receive descriptors the device filled.
    pub rx_descs: u64,
}

impl DevCounts {
    /// From a `nicemu ctl --json stats` answer; `None` without register counters (a
    /// virtio-net port, an older nicemu).
    pub fn from_ctl(v: &Value) -> Option<DevCounts> {
        let d = v.get("data")?;
        let a = d.get("accesses")?;
        let n = |o: &Value, k: &str| o.get(k).and_then(Value::as_u64);
        Some(DevCounts {
            bar_reads: n(a, "bar_reads")?,
            bar_writes: n(a, "bar_writes")?,
            irqs: n(a, "irqs_raised")?,
            tx_frames: d.get("switch").and_then(|s| n(s, "tx_frames")).unwrap_or(0),
            rx_frames: d.get("switch").and_then(|s| n(s, "rx_frames")).unwrap_or(0),
            tx_descs: n(a, "tx_descriptors").unwrap_or(0),
            rx_descs: n(a, "rx_descriptors").unwrap_or(0),
        })
    }

    /// What happened between `self` (the window's start) and `end`.
    pub fn delta(&self, end: &DevCounts) -> DevCounts {
        DevCounts {
            bar_reads: end.bar_reads.saturating_sub(self.bar_reads),
            bar_writes: end.bar_writes.saturating_sub(self.bar_writes),
            irqs: end.irqs.saturating_sub(self.irqs),
            tx_frames: end.tx_frames.saturating_sub(self.tx_frames),
            rx_frames: end.rx_frames.saturating_sub(self.rx_frames),
            tx_descs: end.tx_descs.saturating_sub(self.tx_descs),
            rx_descs: end.rx_descs.saturating_sub(self.rx_descs),
        }
    }
}

/// The `nicemu ctl --json stats` answer the harness gave for `tag` in section `s`.
fn ctl_json(s: &Section, tag: &str) -> Option<Value> {
    if s.get(&format!("host_{tag}_rc")) != Some("0") {
        return None;
    }
    let text = s
        .lines(&format!("host_{tag}"))
        .collect::<Vec<_>>()
        .join("\n");
    serde_json::from_str(&text).ok()
}

/// Per port (`dut`, `peer`): what window `id` of section `s` did on the device side.
pub fn window(s: &Section, id: u8) -> BTreeMap<&'static str, DevCounts> {
    let mut out = BTreeMap::new();
    for (port, suffix) in [("dut", ""), ("peer", "p")] {
        let at = |edge: &str| {
            ctl_json(s, &format!("dev{id}{edge}{suffix}")).and_then(|v| DevCounts::from_ctl(&v))
        };
        if let (Some(a), Some(b)) = (at("a"), at("b")) {
            out.insert(port, a.delta(&b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Console;

    fn stats(reads: u64, writes: u64, irqs: u64, tx: u64) -> String {
        format!(
            "{{\"ok\":true,\"data\":{{\"accesses\":{{\"bar_reads\":{reads},\"bar_writes\":{writes},\
             \"config_reads\":0,\"config_writes\":0,\"irqs_raised\":{irqs},\
             \"tx_descriptors\":{tx},\"rx_descriptors\":3}},\
             \"switch\":{{\"tx_frames\":{tx},\"rx_frames\":7}}}}}}"
        )
    }

    #[test]
    fn a_window_s_device_side_is_the_difference_of_its_edges_per_port() {
        let text = format!(
            "@@NICEMU-BEGIN netperf\n\
             @@NICEMU-OUT netperf host_dev3a {}\n@@NICEMU netperf host_dev3a_rc=0\n\
             @@NICEMU-OUT netperf host_dev3ap {}\n@@NICEMU netperf host_dev3ap_rc=0\n\
             @@NICEMU netperf window_UDP_STREAM:1=3\n\
             @@NICEMU-OUT netperf host_dev3b {}\n@@NICEMU netperf host_dev3b_rc=0\n\
             @@NICEMU netperf host_dev3bp_rc=1\n\
             @@NICEMU-DONE netperf rc=0\n",
            stats(100, 50, 10, 1000),
            stats(5, 5, 5, 5),
            stats(160, 2050, 30, 3000)
        );
        let c = Console::parse(&text);
        let w = window(&c.sections["netperf"], 3);
        assert_eq!(
            w["dut"],
            DevCounts {
                bar_reads: 60,
                bar_writes: 2000,
                irqs: 20,
                tx_frames: 2000,
                rx_frames: 0,
                tx_descs: 2000,
                rx_descs: 0
            }
        );
        assert!(!w.contains_key("peer"), "the peer's end edge failed");
        assert!(window(&c.sections["netperf"], 4).is_empty());
    }

    #[test]
    fn a_port_without_register_counters_gives_nothing() {
        let v: Value =
            serde_json::from_str(r#"{"ok":true,"data":{"switch":{"tx_frames":1}}}"#).unwrap();
        assert_eq!(DevCounts::from_ctl(&v), None);
    }
}
