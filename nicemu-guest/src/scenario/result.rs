// SPDX-License-Identifier: Apache-2.0
//! A scenario's structured result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The harness's checks of every scenario's section: the guest started it, and it ran to
/// its end marker (`@@NICEMU-DONE`).
pub const STARTED: &str = "guest started it";
/// See [`STARTED`].
pub const FINISHED: &str = "ran to the end";

/// Outcome of one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Everything checked held.
    Pass,
    /// Something checked did not hold (see `reason`).
    Fail,
    /// Not applicable (e.g. the driver does not support the operation).
    Skip,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
        })
    }
}

/// One named check a scenario made: a value the guest printed compared with what the
/// device, the parameters or the expectations say it must be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// What was checked, the same for every run ("driver bound", "carrier up").
    pub name: String,
    /// Whether it held.
    pub ok: bool,
    /// When it did not: what was seen instead (also in the result's `failures`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// Result of one scenario on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    /// Scenario name.
    pub scenario: String,
    /// Outcome.
    pub status: Status,
    /// Why it failed or was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A short headline for tables ("0% loss, 0.5 ms", "662 Mbit/s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Measured values and facts (driver name, sub-test values, timings).
    pub metrics: BTreeMap<String, serde_json::Value>,
    /// Each check that failed, in the order found (`reason` joins them with "; "); the
    /// KTAP and JUnit files list them one by one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Each named check made, passed or failed, in the order made (the KTAP file's test
    /// points). A failure recorded with [`add_failure`](Self::add_failure) has no name and
    /// is in `failures` only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<Check>,
}

impl ScenarioResult {
    /// A passing result with no metrics yet.
    pub fn pass(scenario: &str) -> Self {
        ScenarioResult {
            scenario: scenario.into(),
            status: Status::Pass,
            reason: None,
            summary: None,
            metrics: BTreeMap::new(),
            failures: Vec::new(),
            checks: Vec::new(),
        }
    }

    /// A skipped result (the device or kernel lacks what the scenario needs).
    pub fn skip(scenario: &str, reason: impl Into<String>) -> Self {
        let mut r = Self::pass(scenario);
        r.status = Status::Skip;
        r.reason = Some(reason.into());
        r
    }

    /// Marks the result skipped (unless it already failed).
    pub fn set_skip(&mut self, reason: impl Into<String>) {
        if self.status != Status::Fail {
            self.status = Status::Skip;
            self.reason = Some(reason.into());
        }
    }

    /// Records a metric.
    pub fn metric(&mut self, key: &str, value: serde_json::Value) {
        self.metrics.insert(key.into(), value);
    }

    /// Marks the result failed, appending `reason` to earlier reasons.
    pub fn add_failure(&mut self, reason: impl Into<String>) {
        self.status = Status::Fail;
        let reason = reason.into();
        self.reason = Some(match self.reason.take() {
            Some(r) => format!("{r}; {reason}"),
            None => reason.clone(),
        });
        self.failures.push(reason);
    }

    /// Records the check `name`: passed when `ok`, else failed with what `failure` says was
    /// seen (as [`add_failure`](Self::add_failure) does). Returns `ok`.
    pub fn check(&mut self, name: &str, ok: bool, failure: impl FnOnce() -> String) -> bool {
        if ok {
            self.check_passed(name);
        } else {
            self.check_failed(name, failure());
        }
        ok
    }

    /// Records the check `name` as passed.
    pub fn check_passed(&mut self, name: &str) {
        self.checks.push(Check {
            name: name.into(),
            ok: true,
            failure: None,
        });
    }

    /// Records the check `name` as failed with what was seen.
    pub fn check_failed(&mut self, name: &str, failure: impl Into<String>) {
        let failure = failure.into();
        self.add_failure(failure.clone());
        self.checks.push(Check {
            name: name.into(),
            ok: false,
            failure: Some(failure),
        });
    }

    /// The test points of this result: each named check, then each failure recorded
    /// without a name (named by what it says), as `(name, failure)`.
    pub fn points(&self) -> Vec<(String, Option<String>)> {
        let mut named: Vec<&str> = self
            .checks
            .iter()
            .filter_map(|c| c.failure.as_deref())
            .collect();
        let mut out: Vec<(String, Option<String>)> = self
            .checks
            .iter()
            .map(|c| (c.name.clone(), c.failure.clone()))
            .collect();
        for f in self.failed_checks() {
            match named.iter().position(|n| *n == f) {
                Some(i) => {
                    named.remove(i);
                }
                None => out.push((f.clone(), Some(f))),
            }
        }
        out
    }

    /// Marks the result failed with the check `name` as its first failure (what made the
    /// rest moot, e.g. the scenario not finishing).
    pub fn fail_first(&mut self, name: &str, reason: impl Into<String>) {
        let reason = reason.into();
        self.status = Status::Fail;
        self.reason = Some(match self.reason.take() {
            Some(r) => format!("{reason}; {r}"),
            None => reason.clone(),
        });
        self.failures.insert(0, reason.clone());
        self.checks.insert(
            0,
            Check {
                name: name.into(),
                ok: false,
                failure: Some(reason),
            },
        );
    }

    /// Records the check `name` as passed, before the checks made so far (a check of the
    /// harness on what the scenario's checks depend on, e.g. that it ran to the end).
    pub fn passed_first(&mut self, name: &str) {
        self.checks.insert(
            0,
            Check {
                name: name.into(),
                ok: true,
                failure: None,
            },
        );
    }

    /// The failed checks one by one: `failures`, or for a result written before they were
    /// recorded (schema 2) its `reason`.
    pub fn failed_checks(&self) -> Vec<String> {
        match (&self.status, self.failures.is_empty(), &self.reason) {
            (Status::Fail, true, Some(r)) => vec![r.clone()],
            _ => self.failures.clone(),
        }
    }
}
