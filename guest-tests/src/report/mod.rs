//! Run results and their renderings (Markdown table, JSON).

pub mod json;
pub mod markdown;

use serde::Serialize;

use crate::scenario::{ScenarioResult, Status};

/// Results of one `run` invocation.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    /// Run id (also the run directory name).
    pub run_id: String,
    /// Host path of the run directory.
    pub run_dir: String,
    /// Guest kernel label.
    pub kernel: String,
    /// Guest kernel release (KVER).
    pub kernel_release: String,
    /// Acceleration actually used.
    pub accel: String,
    /// One entry per device booted.
    pub devices: Vec<DeviceRun>,
}

/// Results of booting one guest with one device under test.
#[derive(Debug, Clone, Serialize)]
pub struct DeviceRun {
    /// Device kind name ("qemu-igb").
    pub device: String,
    /// How the boot went: "ok", "timeout after N s", "qemu exited with N", or an error.
    pub boot: String,
    /// Host seconds from QEMU start to `/init` running.
    pub secs_to_userspace: Option<f64>,
    /// Host seconds from QEMU start to the end marker (all results printed).
    pub secs_to_result: Option<f64>,
    /// Why the guest could not be booted at all (e.g. nicemu did not start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per-scenario results.
    pub scenarios: Vec<ScenarioResult>,
    /// Last console lines when something went wrong.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub console_tail: Vec<String>,
    /// Host path of this device's run directory (serial.log, qemu.log, nicemu.log).
    pub dir: String,
}

impl RunReport {
    /// True if no scenario failed (skips are fine).
    pub fn passed(&self) -> bool {
        self.devices
            .iter()
            .flat_map(|d| &d.scenarios)
            .all(|s| s.status != Status::Fail)
    }
}
