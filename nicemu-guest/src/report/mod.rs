// SPDX-License-Identifier: Apache-2.0
//! Run results and their renderings: JSON (the record), Markdown table, self-contained
//! HTML with SVG plots, JUnit XML; merging shard results and comparing two runs.

pub mod ab;
pub mod ab_record;
pub mod cases;
pub mod cell_files;
pub mod compare;
pub mod cost_table;
pub mod escape;
pub mod html;
pub mod json;
pub mod junit;
pub mod ktap;
pub mod markdown;
pub mod merge;
pub mod metric_select;
pub mod outputs;
pub mod run_env;
pub mod splats;
pub mod svg;
pub mod terminal;
pub mod text;

use serde::{Deserialize, Serialize};

use crate::params::Params;
use crate::scenario::{ScenarioResult, Status};
use crate::splat::Splat;

/// Version of the JSON layout (docs/src/guest/results-schema.md): raised when a field is
/// renamed, removed or changes meaning; 3 added `failures`, `env.started`, `env.command`.
pub const SCHEMA: u32 = 3;

/// Results of one `run` invocation (or several merged).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// JSON layout version.
    pub schema: u32,
    /// Run id (also the run directory name); merged ids are joined with `+`.
    pub run_id: String,
    /// Host path of the run directory.
    pub run_dir: String,
    /// Acceleration actually used.
    pub accel: String,
    /// Peer placement.
    pub topology: String,
    /// Guest vCPUs.
    pub smp: u32,
    /// Guest RAM (MiB).
    pub mem_mb: u32,
    /// Scenario names in matrix order.
    pub scenarios: Vec<String>,
    /// Scenario parameters (overrides of the defaults).
    pub params: Params,
    /// `K/N` when only one shard ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// Host wall time of the whole run (s).
    pub wall_secs: f64,
    /// One entry per (kernel, device) cell booted (per round with `--rounds`).
    pub runs: Vec<CellRun>,
    /// What the numbers depend on: host cores, nicemu and QEMU versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<run_env::RunEnv>,
    /// A/B runs: per metric the samples of both sides and the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<ab_record::AbSummary>,
    /// A/B runs: the kernel splats of each side and what B introduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub splat_ab: Option<crate::splat::ab::SplatAb>,
    /// The splat ignore list the run used and its unused entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub splat_ignore: Option<IgnoreUse>,
}

/// The ignore list a run judged splats with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoreUse {
    /// Its file.
    pub file: String,
    /// Entries that applied to a cell of the run but matched none of its splats:
    /// "FILE:LINE (reason)".
    pub unused: Vec<String>,
}

/// Results of booting one guest: one kernel, one device under test (plus its peer).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellRun {
    /// Kernel short name ("sid", "trixie-rt").
    pub kernel: String,
    /// Kernel label ("sid 7.2.13+deb14-amd64").
    pub kernel_label: String,
    /// Kernel release (KVER).
    pub kernel_release: String,
    /// Device kind name ("qemu-igb").
    pub device: String,
    /// Position in the full matrix.
    pub cell: usize,
    /// Kernel splats the guest's console showed (a splat not ignored fails the cell).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub splats: Vec<Splat>,
    /// Splats beyond the per-console limit, not kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub splats_dropped: u32,
    /// How the boot went: "ok", "timeout after N s", "qemu exited …", "not booted".
    pub boot: String,
    /// Host seconds from QEMU start to `/init` running.
    pub secs_to_userspace: Option<f64>,
    /// Host seconds from QEMU start to the end marker (all results printed).
    pub secs_to_result: Option<f64>,
    /// Host wall seconds for this cell (image, nicemu, QEMU).
    pub wall_secs: f64,
    /// Why the guest could not be booted at all, or nicemu's early exit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The cell's first boot crashed before userspace on a kernel as provisioned and the
    /// cell was booted once more ([`crate::run`]'s retry): that crash and where its logs
    /// are. Shown, not judged: nothing under test had loaded yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retried: Option<String>,
    /// The network setup before the scenarios (peer namespace, addresses, netserver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<ScenarioResult>,
    /// Per-scenario results.
    pub scenarios: Vec<ScenarioResult>,
    /// Last console lines when something went wrong.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub console_tail: Vec<String>,
    /// Host path of this cell's run directory (serial.log, qemu.log, nicemu.log).
    pub dir: String,
    /// A/B runs: which side this cell belongs to ("A" or "B").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// Repeated runs (`--rounds`): the round this boot belongs to (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CellRun {
    /// The splats that fail this cell (not ignored).
    pub fn failing_splats(&self) -> impl Iterator<Item = &Splat> {
        self.splats.iter().filter(|s| s.fails())
    }

    /// The result of `scenario`, if it was part of this run.
    pub fn result(&self, scenario: &str) -> Option<&ScenarioResult> {
        self.scenarios.iter().find(|r| r.scenario == scenario)
    }
}

impl RunReport {
    /// True if no scenario failed (skips are fine) and no kernel splat fails a cell.
    pub fn passed(&self) -> bool {
        self.runs
            .iter()
            .flat_map(|d| &d.scenarios)
            .all(|s| s.status != Status::Fail)
            && self
                .runs
                .iter()
                .all(|d| d.failing_splats().next().is_none())
    }

    /// Counts of (pass, fail, skip); each failing splat is a failed case.
    pub fn counts(&self) -> (usize, usize, usize) {
        let all = self.runs.iter().flat_map(|d| &d.scenarios);
        let splats = self.runs.iter().map(|d| d.failing_splats().count()).sum();
        let mut c = (0, splats, 0);
        for s in all {
            match s.status {
                Status::Pass => c.0 += 1,
                Status::Fail => c.1 += 1,
                Status::Skip => c.2 += 1,
            }
        }
        c
    }

    /// Distinct kernel names in order of appearance.
    pub fn kernels(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in &self.runs {
            if !v.contains(&r.kernel) {
                v.push(r.kernel.clone());
            }
        }
        v
    }

    /// The runs of one kernel, as a report of their own (for A/B comparisons).
    pub fn only_kernel(&self, kernel: &str) -> RunReport {
        let mut r = self.clone();
        r.runs.retain(|c| c.kernel == kernel);
        r
    }
}

/// An empty report (schema set, no runs) to build partial reports from.
pub fn empty_report() -> RunReport {
    RunReport {
        schema: SCHEMA,
        run_id: String::new(),
        run_dir: String::new(),
        accel: String::new(),
        topology: String::new(),
        smp: 0,
        mem_mb: 0,
        scenarios: Vec::new(),
        params: Params::default(),
        shard: None,
        wall_secs: 0.0,
        runs: Vec::new(),
        env: None,
        ab: None,
        splat_ab: None,
        splat_ignore: None,
    }
}

#[cfg(test)]
pub mod testdata {
    //! Small reports for tests of the renderers.
    use super::*;
    use serde_json::json;

    /// A cell with ping and netperf results.
    pub fn cell(kernel: &str, device: &str, rtt: f64, mbps: f64, fail: bool) -> CellRun {
        let mut ping = ScenarioResult::pass("ping");
        ping.metric("loss_pct", json!(0.0));
        ping.metric("rtt_avg_ms", json!(rtt));
        ping.summary = Some(format!("0% loss, {rtt} ms"));
        let mut np = ScenarioResult::pass("netperf");
        np.metric(
            "tests",
            json!({"TCP_STREAM": {"throughput": mbps, "units": "10^6bits/s"}}),
        );
        if fail {
            np.add_failure("TCP_RR: no result");
        }
        let mut cyc = ScenarioResult::pass("cyclictest");
        cyc.metric(
            "threads",
            json!([{"thread": 0, "min": 5, "avg": 20, "max": 300}, {"thread": 1, "min": 6, "avg": 25, "max": 400}]),
        );
        cyc.metric(
            "histogram",
            json!({"0": [[5, 10], [20, 100]], "1": [[6, 3], [400, 1]]}),
        );
        cyc.metric("max_us", json!(400));
        CellRun {
            kernel: kernel.into(),
            kernel_label: format!("{kernel} 1.0"),
            kernel_release: "1.0".into(),
            device: device.into(),
            cell: 0,
            splats: Vec::new(),
            splats_dropped: 0,
            retried: None,
            boot: "ok".into(),
            secs_to_userspace: Some(5.0),
            secs_to_result: Some(60.0),
            wall_secs: 62.0,
            error: None,
            setup: None,
            scenarios: vec![ping, np, cyc],
            console_tail: Vec::new(),
            dir: "/tmp/x".into(),
            side: None,
            round: None,
        }
    }

    /// A report holding `runs`.
    pub fn report(id: &str, runs: Vec<CellRun>) -> RunReport {
        RunReport {
            schema: SCHEMA,
            run_id: id.into(),
            run_dir: "/tmp".into(),
            accel: "tcg".into(),
            topology: "netns".into(),
            smp: 2,
            mem_mb: 1024,
            scenarios: vec!["ping".into(), "netperf".into(), "cyclictest".into()],
            params: Params::default(),
            shard: None,
            wall_secs: 100.0,
            runs,
            env: None,
            ab: None,
            splat_ab: None,
            splat_ignore: None,
        }
    }
}
