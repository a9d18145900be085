// SPDX-License-Identifier: Apache-2.0
//! The A/B part of the record (results.json): per metric of each device and scenario the
//! samples of both sides and the verdict. [`super::ab`] computes and renders it.

use serde::{Deserialize, Serialize};

use crate::stats::verdict::Verdict;

/// One metric of one device and scenario across the rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbMetric {
    /// Device kind.
    pub device: String,
    /// Scenario.
    pub scenario: String,
    /// Flattened metric key ("tests.UDP_STREAM.messages_per_s").
    pub metric: String,
    /// One of the experiment's main metrics (printed in the headline table).
    pub main: bool,
    /// A deterministic instruction count per unit of work ([`crate::cost`]): judged by
    /// Welch's t test, listed first.
    #[serde(default)]
    pub count: bool,
    /// A function's own count (`cost.self.F`) that some rounds of a side did not list
    /// because their table was cut: the cut it ran below there, on A and on B (the rounds
    /// count 0 in `a`/`b`). Such a metric is not judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_cut: Option<(Option<f64>, Option<f64>)>,
    /// A's values in round order.
    pub a: Vec<f64>,
    /// B's values in round order.
    pub b: Vec<f64>,
    /// The verdict (absent when a side has no finite values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

/// All metrics of an A/B run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbSummary {
    /// Kernel label of side A.
    pub a_label: String,
    /// Kernel label of side B.
    pub b_label: String,
    /// Rounds asked for (boots per side).
    pub rounds: u32,
    /// How the verdicts are reached ([`super::ab::METHOD`]).
    pub method: String,
    /// Per metric.
    pub metrics: Vec<AbMetric>,
}
