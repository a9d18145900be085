// SPDX-License-Identifier: Apache-2.0
//! Frame accounting of a port from `nicemu ctl --json stats`: what the
//! switch handed it and what became of each frame (placed in the guest's
//! ring, or dropped and counted by name), and what it transmitted. Frames
//! are conserved when every frame a port was handed is placed or counted
//! once, and every frame a port sent reached another port's queue or was
//! dropped there, counted.

use std::collections::BTreeMap;

use super::Nicemu;

/// Receive-side drops of an igb or ixgbe function: the statistics registers
/// that count dropped frames, then nicemu's own counters.
const NIC_RX_DROPS: &[&str] = &[
    "MPC",
    "ROC",
    "RUC",
    "CRCERRS",
    "rx_no_link",
    "rx_disabled",
    "rx_filtered",
    "dma_blocked",
    "dma_errors",
];

/// Receive-side drops of a virtio-net port (per queue pair, then port).
const VIRTIO_RX_DROPS: &[&str] = &[
    "rx_too_big",
    "rx_bad_chain",
    "rx_not_ready",
    "rx_backlog_drops",
    "rx_link_drops",
];

/// Transmit-side drops of a virtio-net port.
const VIRTIO_TX_DROPS: &[&str] = &[
    "tx_bad_write_only",
    "tx_bad_too_long",
    "tx_bad_too_big",
    "tx_bad_address",
    "tx_bad_runt",
    "tx_bad_offload",
    "tx_link_drops",
];

/// Transmit-side drops of an igb or ixgbe function.
const NIC_TX_DROPS: &[&str] = &["tx_malformed", "tx_oversize"];

/// One port's frame counters (totals, or a difference of two readings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// Frames the port sent into the switch.
    pub switch_tx: u64,
    /// Frames the switch handed the port (directly or through its queue).
    pub switch_rx: u64,
    /// Frames the switch dropped at the port's full queue.
    pub switch_rx_drops: u64,
    /// Frames placed into the guest's receive ring.
    pub delivered: u64,
    /// Frames handed to the device and dropped there, by counter.
    pub rx_drops: BTreeMap<String, u64>,
    /// Frames the device took from the guest's transmit ring (GPTC; the
    /// transmit chains of a virtio-net port).
    pub tx_taken: u64,
    /// Frames taken and dropped, by counter.
    pub tx_drops: BTreeMap<String, u64>,
}

impl Account {
    /// Reads the counters of port `dev`.
    pub fn read(n: &Nicemu, dev: &str) -> Account {
        let out = n.ctl(&["--json", "stats", dev]);
        assert!(out.status.success(), "ctl stats {dev}: {out:?}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let d = v.get("data").cloned().unwrap_or(v);
        if d.get("port").is_some() {
            Self::of_virtio(&d)
        } else {
            Self::of_nic(&d)
        }
    }

    fn of_nic(d: &serde_json::Value) -> Account {
        // Named values of a list of [name, value]; arrays (MPC[0..8]) summed.
        let mut named = BTreeMap::<String, u64>::new();
        for list in ["counters", "guest_errors"] {
            for kv in d[list].as_array().into_iter().flatten() {
                let name = kv[0].as_str().unwrap_or("");
                let stem = name.split('[').next().unwrap_or(name);
                *named.entry(stem.to_string()).or_default() += kv[1].as_u64().unwrap_or(0);
            }
        }
        let get = |k: &str| named.get(k).copied().unwrap_or(0);
        let pick = |ks: &[&str]| ks.iter().map(|k| (k.to_string(), get(k))).collect();
        // The 82599 counts missed frames in GPRC as well (`ixgbe_update_stats`
        // subtracts MPC); the model does the same.
        let ixgbe = named.contains_key("QPRDC");
        let sw = &d["switch"];
        Account {
            switch_tx: sw["tx_frames"].as_u64().unwrap_or(0),
            switch_rx: sw["rx_frames"].as_u64().unwrap_or(0),
            switch_rx_drops: sw["rx_drops"].as_u64().unwrap_or(0),
            delivered: if ixgbe {
                get("GPRC") - get("MPC")
            } else {
                get("GPRC")
            },
            rx_drops: pick(NIC_RX_DROPS),
            tx_taken: get("GPTC"),
            tx_drops: pick(NIC_TX_DROPS),
        }
    }

    fn of_virtio(d: &serde_json::Value) -> Account {
        let p = &d["port"];
        let queues = d["queues"].as_array().cloned().unwrap_or_default();
        let sum = |k: &str| {
            p[k].as_u64().unwrap_or(0)
                + queues
                    .iter()
                    .map(|q| q[k].as_u64().unwrap_or(0))
                    .sum::<u64>()
        };
        let pick = |ks: &[&str]| ks.iter().map(|k| (k.to_string(), sum(k))).collect();
        Account {
            switch_tx: p["switch_tx_frames"].as_u64().unwrap_or(0),
            switch_rx: p["switch_rx_frames"].as_u64().unwrap_or(0),
            switch_rx_drops: p["switch_rx_drops"].as_u64().unwrap_or(0),
            delivered: sum("rx_frames"),
            rx_drops: pick(VIRTIO_RX_DROPS),
            tx_taken: sum("tx_chains"),
            tx_drops: pick(VIRTIO_TX_DROPS),
        }
    }

    /// The counters since `base` was read.
    pub fn since(&self, base: &Account) -> Account {
        let sub = |a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>| {
            a.iter()
                .map(|(k, v)| (k.clone(), v - b.get(k).copied().unwrap_or(0)))
                .collect()
        };
        Account {
            switch_tx: self.switch_tx - base.switch_tx,
            switch_rx: self.switch_rx - base.switch_rx,
            switch_rx_drops: self.switch_rx_drops - base.switch_rx_drops,
            delivered: self.delivered - base.delivered,
            rx_drops: sub(&self.rx_drops, &base.rx_drops),
            tx_taken: self.tx_taken - base.tx_taken,
            tx_drops: sub(&self.tx_drops, &base.tx_drops),
        }
    }

    /// Frames handed to the device and dropped there, all counters.
    pub fn rx_dropped(&self) -> u64 {
        self.rx_drops.values().sum()
    }

    /// Every frame the switch handed the port is placed or counted once.
    pub fn rx_balanced(&self) -> bool {
        self.switch_rx == self.delivered + self.rx_dropped()
    }

    /// The non-zero drop counters, `name n, …`.
    pub fn drops_text(&self) -> String {
        let nz: Vec<String> = self
            .rx_drops
            .iter()
            .chain(self.tx_drops.iter())
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if nz.is_empty() {
            "none".into()
        } else {
            nz.join(", ")
        }
    }
}

/// A frame of `len` bytes from `src` to `dst` (an experimental EtherType;
/// the rest filled with `fill`).
pub fn frame(dst: [u8; 6], src: [u8; 6], len: usize, fill: u8) -> Vec<u8> {
    let mut f = vec![fill; len];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x88b5u16.to_be_bytes());
    f
}
