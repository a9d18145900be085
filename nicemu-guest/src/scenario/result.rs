// SPDX-License-Identifier: Apache-2.0
//! A scenario's structured result.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

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
        }
    }

    /// A failing result.
    pub fn fail(scenario: &str, reason: impl Into<String>) -> Self {
        let mut r = Self::pass(scenario);
        r.add_failure(reason);
        r
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

    /// Marks the result failed with `reason` as its first failure (what made the rest moot,
    /// e.g. the scenario not finishing).
    pub fn fail_first(&mut self, reason: impl Into<String>) {
        let reason = reason.into();
        self.status = Status::Fail;
        self.reason = Some(match self.reason.take() {
            Some(r) => format!("{reason}; {r}"),
            None => reason.clone(),
        });
        self.failures.insert(0, reason);
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
