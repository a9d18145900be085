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
}

impl From<FaultSpec> for nicemu_device_models::Fault {
    fn from(f: FaultSpec) -> Self {
        use nicemu_device_models::Fault as F;
        match f {
            FaultSpec::CorruptRx { n } => F::CorruptRx(n),
            FaultSpec::DropRx { n } => F::DropRx(n),
            FaultSpec::StallTx { queue } => F::StallTx(queue),
            FaultSpec::NvmCorrupt => F::NvmCorrupt,
            FaultSpec::CounterPreset { name, value } => F::CounterPreset(name, value),
            FaultSpec::ClockStep { ns } => F::ClockStep(ns),
        }
    }
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
            | Request::Fault { dev, .. } => Some(dev),
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
        let e = serde_json::to_string(&Response::err("no")).unwrap();
        assert_eq!(e, r#"{"ok":false,"error":"no"}"#);
    }
}
