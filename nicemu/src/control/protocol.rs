// SPDX-License-Identifier: Apache-2.0
//! Control requests and responses (one JSON object per line).

use serde::{Deserialize, Serialize};

/// A fault as the control protocol carries it; also the `nicemu ctl fault
/// DEV …` subcommands (clap) so the two cannot drift apart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Subcommand)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FaultSpec {
    /// The next N received frames arrive with a bad CRC (rx_crc_errors).
    CorruptRx {
        /// How many frames.
        n: u32,
    },
    /// The next N received frames find no buffer (rx_missed_errors).
    DropRx {
        /// How many frames.
        n: u32,
    },
    /// Transmit queue QUEUE stops until the driver resets the adapter.
    StallTx {
        /// Queue index.
        queue: u16,
    },
    /// The NVM checksum is wrong from the next reset on.
    NvmCorrupt,
    /// Set a counter (e.g. near its wrap point).
    CounterPreset {
        /// Counter name as `nicemu ctl stats` prints it (`GPRC`, `GORC`, `RQDPC[0]`…).
        name: String,
        /// Value.
        value: u64,
    },
    /// Step the PTP clock.
    ClockStep {
        /// Nanoseconds, may be negative.
        #[arg(allow_hyphen_values = true)]
        ns: i64,
    },
    /// A VF: the PF refuses (NACK) its next N mailbox messages.
    MbxNack {
        /// How many messages.
        n: u32,
    },
    /// A VF: the PF ignores its next N mailbox messages (no ACK, no reply).
    MbxDrop {
        /// How many messages.
        n: u32,
    },
    /// A VF: its PF resets (RSTI, then RSTD and a control message without CTS).
    PfReset,
    /// A VF: a function level reset from the host (VFLR).
    Vflr,
}

impl FaultSpec {
    /// The device model's fault, or `None` for a fault of a VF's PF side
    /// (served by the VF's control, [`nicemu_device_models::vf::VfControl`]).
    pub fn device_fault(self) -> Option<nicemu_device_models::Fault> {
        use nicemu_device_models::Fault as F;
        Some(match self {
            FaultSpec::CorruptRx { n } => F::CorruptRx(n),
            FaultSpec::DropRx { n } => F::DropRx(n),
            FaultSpec::StallTx { queue } => F::StallTx(queue),
            FaultSpec::NvmCorrupt => F::NvmCorrupt,
            FaultSpec::CounterPreset { name, value } => F::CounterPreset(name, value),
            FaultSpec::ClockStep { ns } => F::ClockStep(ns),
            FaultSpec::MbxNack { .. }
            | FaultSpec::MbxDrop { .. }
            | FaultSpec::PfReset
            | FaultSpec::Vflr => return None,
        })
    }
}

/// on / off of a VF setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

/// A VF's link setting (`ip link set … vf N state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum VfState {
    /// Follows the adapter's port.
    Auto,
    /// Up whatever the port.
    Enable,
    /// Down.
    Disable,
}

/// What `nicemu ctl vf DEV …` sets, as `ip link set PF vf N …` does;
/// nothing shows the VF.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, clap::Subcommand)]
#[serde(tag = "set", rename_all = "kebab-case")]
pub enum VfSet {
    /// The administrative MAC address (the VF may not change it unless
    /// trusted; its driver takes it at its next reset).
    Mac {
        /// A unicast MAC address, e.g. 52:54:00:12:34:56.
        mac: String,
    },
    /// The port VLAN (0 removes it): the PF tags what the VF sends and
    /// strips what it receives.
    Vlan {
        /// VLAN ID, 0 to 4094.
        vlan: u16,
        /// 802.1p priority of the tag, 0 to 7.
        #[arg(long, default_value_t = 0)]
        qos: u8,
    },
    /// Drop frames the VF sends from another MAC address (or VLAN).
    Spoofchk {
        /// on or off.
        state: Switch,
    },
    /// Trust: the VF may change an administrative MAC, go promiscuous.
    Trust {
        /// on or off.
        state: Switch,
    },
    /// The VF's link: auto (the port's), enable, disable.
    State {
        /// auto, enable or disable.
        state: VfState,
    },
    /// Whether the VF may read the RSS redirection table and key.
    QueryRss {
        /// on or off.
        state: Switch,
    },
}

/// A request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verb", rename_all = "kebab-case")]
pub enum Request {
    /// Devices, ports, links, queues, driver state.
    List,
    /// Hardware counters (totals, not clearing) and switch port counters.
    Stats {
        /// Device id.
        dev: String,
    },
    /// Register trace on or off.
    Trace {
        /// Device id.
        dev: String,
        /// On or off.
        on: bool,
        /// Register name prefix or offset range.
        filter: Option<String>,
        /// File to write to (standard error of nicemu if absent).
        file: Option<String>,
    },
    /// Start a packet capture.
    Capture {
        /// Device id.
        dev: String,
        /// pcap file.
        file: String,
        /// Stop after this many frames.
        count: Option<u64>,
    },
    /// Stop a packet capture.
    CaptureStop {
        /// Device id.
        dev: String,
    },
    /// Cable connected or not.
    Link {
        /// Device id.
        dev: String,
        /// Up or down.
        up: bool,
    },
    /// Latency histograms of a port's stages (read, then cleared with
    /// `reset`).
    Latency {
        /// Device id.
        dev: String,
        /// Clear the histograms after reading them.
        #[serde(default)]
        reset: bool,
    },
    /// Inject a fault.
    Fault {
        /// Device id.
        dev: String,
        /// The fault.
        fault: FaultSpec,
    },
    /// A VF's settings and the PF agent's view of it; with `set`, change
    /// one setting first.
    Vf {
        /// Device id of the VF.
        dev: String,
        /// The setting to change.
        #[serde(default)]
        set: Option<VfSet>,
    },
    /// A VF's mailbox: counters and the last messages.
    Mailbox {
        /// Device id of the VF.
        dev: String,
    },
}

impl Request {
    /// The device (or port, or wire) the request is about; `None` for `list`.
    pub fn dev(&self) -> Option<&str> {
        match self {
            Request::Stats { dev }
            | Request::Link { dev, .. }
            | Request::Trace { dev, .. }
            | Request::Capture { dev, .. }
            | Request::CaptureStop { dev }
            | Request::Latency { dev, .. }
            | Request::Fault { dev, .. }
            | Request::Vf { dev, .. }
            | Request::Mailbox { dev } => Some(dev),
            Request::List => None,
        }
    }
}

/// A response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// Success.
    pub ok: bool,
    /// What went wrong.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub error: Option<String>,
    /// Result data.
    #[serde(skip_serializing_if = "serde_json::Value::is_null", default)]
    pub data: serde_json::Value,
}

impl Response {
    /// A success carrying `data`.
    pub fn ok(data: serde_json::Value) -> Self {
        Response {
            ok: true,
            error: None,
            data,
        }
    }

    /// A failure.
    pub fn err(msg: impl Into<String>) -> Self {
        Response {
            ok: false,
            error: Some(msg.into()),
            data: serde_json::Value::Null,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_format() {
        let r = Request::Fault {
            dev: "igb0".into(),
            fault: FaultSpec::CorruptRx { n: 10 },
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(
            s,
            r#"{"verb":"fault","dev":"igb0","fault":{"kind":"corrupt-rx","n":10}}"#
        );
        assert_eq!(serde_json::from_str::<Request>(&s).unwrap(), r);
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"verb":"list"}"#).unwrap(),
            Request::List
        );
        serde_json::from_str::<Request>(r#"{"verb":"reboot"}"#).unwrap_err();
        let r = Request::Vf {
            dev: "vf0".into(),
            set: Some(VfSet::Vlan { vlan: 5, qos: 1 }),
        };
        let s = serde_json::to_string(&r).unwrap();
        assert_eq!(
            s,
            r#"{"verb":"vf","dev":"vf0","set":{"set":"vlan","vlan":5,"qos":1}}"#
        );
        assert_eq!(serde_json::from_str::<Request>(&s).unwrap(), r);
        assert_eq!(
            serde_json::from_str::<Request>(r#"{"verb":"vf","dev":"v"}"#).unwrap(),
            Request::Vf {
                dev: "v".into(),
                set: None
            }
        );
        let e = serde_json::to_string(&Response::err("no")).unwrap();
        assert_eq!(e, r#"{"ok":false,"error":"no"}"#);
    }
}
