// SPDX-License-Identifier: Apache-2.0
//! Shipped experiments (`nicemu-guest experiment NAME`): the four seed measurements as A/B
//! runs over interleaved rounds. Each is data — `experiments/NAME/experiment.toml` (device,
//! kernel, scenarios, parameters, headline metrics, the B side's patch) and a README (what
//! the seed measured, what runs here, what an emulated result does and does not show) —
//! compiled into the binary, plus its patch under `nicemu-guest/patches/`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::cli::{ExperimentArgs, RunArgs};
use crate::error::{Error, Result};

/// One experiment's data.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Name (`igb-stats-lock`).
    pub name: String,
    /// The seed post it repeats ("000").
    pub seed: String,
    /// One line: what changes between A and B.
    pub summary: String,
    /// Device under test.
    pub device: String,
    /// Base kernel of both sides (`sid`, or `sid-built` for a whole-kernel build).
    pub kernel: String,
    /// The B side's patch: a file name in `nicemu-guest/patches/`.
    pub patch: String,
    /// Scenarios run in every round.
    pub scenarios: Vec<String>,
    /// Rounds per side by default.
    pub rounds: u32,
    /// Headline metrics (`scenario.key` patterns).
    pub main: Vec<String>,
    /// Scenario parameters.
    #[serde(default)]
    pub params: BTreeMap<String, String>,
    /// Fewest vCPUs the experiment needs (`--smp` may give more).
    #[serde(default)]
    pub smp: Option<u32>,
}

/// (name, experiment.toml, README.md) of every shipped experiment.
const SHIPPED: &[(&str, &str, &str)] = &[
    (
        "igb-stats-lock",
        include_str!("../experiments/igb-stats-lock/experiment.toml"),
        include_str!("../experiments/igb-stats-lock/README.md"),
    ),
    (
        "ixgbe-xps",
        include_str!("../experiments/ixgbe-xps/experiment.toml"),
        include_str!("../experiments/ixgbe-xps/README.md"),
    ),
    (
        "qdisc-trylock",
        include_str!("../experiments/qdisc-trylock/experiment.toml"),
        include_str!("../experiments/qdisc-trylock/README.md"),
    ),
    (
        "hwstamp-lock",
        include_str!("../experiments/hwstamp-lock/experiment.toml"),
        include_str!("../experiments/hwstamp-lock/README.md"),
    ),
];

/// Names of the shipped experiments.
pub fn names() -> Vec<&'static str> {
    SHIPPED.iter().map(|(n, _, _)| *n).collect()
}

/// Parses a shipped experiment.
pub fn by_name(name: &str) -> Result<Experiment> {
    let (_, toml_text, _) = SHIPPED.iter().find(|(n, _, _)| *n == name).ok_or_else(|| {
        Error::Usage(format!(
            "unknown experiment {name:?} (shipped: {})",
            names().join(", ")
        ))
    })?;
    toml::from_str(toml_text).map_err(|e| Error::Usage(format!("experiment {name}: {e}")))
}

/// The README of a shipped experiment.
pub fn readme(name: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, r)| *r)
}

/// The shipped patches (`nicemu-guest/patches/`), compiled in: (file name, text).
const PATCHES: &[(&str, &str)] = &[
    (
        "igb-stats-mutex.patch",
        include_str!("../patches/igb-stats-mutex.patch"),
    ),
    (
        "ixgbe-xps.patch",
        include_str!("../patches/ixgbe-xps.patch"),
    ),
    (
        "qdisc-trylock.patch",
        include_str!("../patches/qdisc-trylock.patch"),
    ),
    (
        "hwstamp-lock.patch",
        include_str!("../patches/hwstamp-lock.patch"),
    ),
];

/// The text of a shipped patch.
pub fn shipped_patch(name: &str) -> Option<&'static str> {
    PATCHES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Writes shipped patch `name` to `CACHE/experiments/NAME` (rewritten when it differs)
/// and returns the path, for the build to read like a user's patch.
fn materialise(name: &str) -> Result<PathBuf> {
    let text =
        shipped_patch(name).ok_or_else(|| Error::Usage(format!("no shipped patch {name:?}")))?;
    let dir = nicemu_provision::cache::cache_dir()?.join("experiments");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join(name);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
        let tmp = dir.join(format!(".{name}.{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| Error::io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    }
    Ok(path)
}

impl Experiment {
    /// The `run` arguments of this experiment with the user's overrides, and the patch of
    /// side B: A = the base kernel, B = the base kernel with the patch (`None` with `--aa`:
    /// both sides unpatched, the A/A check of the statistics).
    pub fn run_args(&self, x: &ExperimentArgs) -> Result<(RunArgs, Option<PathBuf>)> {
        let mut params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        params.extend(x.params.iter().cloned());
        let kernel = x.kernel.clone().unwrap_or_else(|| self.kernel.clone());
        let patch = match (&x.patch, x.aa) {
            (_, true) => None,
            (Some(p), false) => Some(p.clone()),
            (None, false) => Some(materialise(&self.patch)?),
        };
        if let Some(p) = patch.as_ref().filter(|p| !p.exists()) {
            return Err(Error::Usage(format!(
                "patch {} not found (give --patch FILE, or --aa for an A/A run)",
                p.display()
            )));
        }
        let rounds = x.rounds.unwrap_or(self.rounds);
        let args = RunArgs {
            matrix: None,
            devices: vec![x.device.clone().unwrap_or_else(|| self.device.clone())],
            scenarios: self.scenarios.clone(),
            kernels: Vec::new(),
            modules: None,
            kernel_a: Some(kernel.clone()),
            kernel_b: Some(kernel),
            patches: Vec::new(),
            patches_a: Vec::new(),
            patches_b: patch.iter().cloned().collect(),
            driver_dirs: Vec::new(),
            driver_dirs_a: Vec::new(),
            driver_dirs_b: Vec::new(),
            kernel_tree: None,
            config: None,
            config_fragments: Vec::new(),
            build_kernel: false,
            params,
            rounds,
            main_metrics: self.main.clone(),
            cost_limits: x.cost_limits.clone(),
            topology: None,
            shard: None,
            guest: {
                let mut g = x.guest.clone();
                g.smp = g.smp.max(self.smp.unwrap_or(0));
                g
            },
            out: x.out.clone(),
            keep_images: false,
        };
        Ok((args, patch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Params;

    #[test]
    fn every_shipped_experiment_is_valid() {
        for name in names() {
            let e = by_name(name).unwrap();
            assert_eq!(e.name, name);
            let patch = shipped_patch(&e.patch).unwrap_or_else(|| panic!("{name}: no patch"));
            assert!(
                patch.contains("\n--- a/") && patch.contains("\n+++ b/"),
                "{name}"
            );
            assert!(
                readme(name).unwrap().contains("## What the seed measured"),
                "{name}"
            );
            for s in &e.scenarios {
                assert!(
                    crate::scenario::by_name(s).is_some(),
                    "{name}: scenario {s}"
                );
            }
            let mut p = Params::default();
            for (k, v) in &e.params {
                p.set(k, v).unwrap_or_else(|err| panic!("{name}: {err}"));
            }
            crate::param_ranges::validate(&p).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert!(
                e.rounds >= 4,
                "{name}: fewer than 4 rounds can never reach 5 %"
            );
            assert!(!e.main.is_empty());
            for m in &e.main {
                let scen = m.split('.').next().unwrap();
                assert!(
                    e.scenarios.iter().any(|s| s == scen),
                    "{name}: main metric {m}"
                );
            }
        }
        by_name("nope").unwrap_err();
    }

    fn args(argv: &[&str]) -> ExperimentArgs {
        use clap::Parser;
        let mut v = vec!["nicemu-guest", "experiment"];
        v.extend(argv);
        match crate::cli::Cli::try_parse_from(v).unwrap().command {
            crate::cli::Command::Experiment(x) => *x,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn run_args_aa_and_overrides() {
        let e = by_name("qdisc-trylock").unwrap();
        let (a, patch) = e
            .run_args(&args(&["qdisc-trylock", "--aa", "--rounds", "7"]))
            .unwrap();
        assert_eq!(patch, None);
        assert_eq!(
            (a.kernel_a.as_deref(), a.kernel_b.as_deref()),
            (Some("sid-built"), Some("sid-built"))
        );
        assert_eq!(a.rounds, 7);
        assert!(a.params.contains(&"qdisc.rate=1mbit".to_owned()));
        assert!(a.params.contains(&"qdisc.senders=4".to_owned()));
        assert_eq!(a.main_metrics, e.main);
        let (a, patch) = e.run_args(&args(&["qdisc-trylock"])).unwrap();
        let patch = patch.unwrap();
        assert_eq!(a.patches_b, std::slice::from_ref(&patch));
        assert_eq!(
            std::fs::read_to_string(&patch).unwrap(),
            shipped_patch("qdisc-trylock.patch").unwrap()
        );
        let (a, _) = e
            .run_args(&args(&[
                "qdisc-trylock",
                "--aa",
                "--device",
                "nicemu-ixgbe",
                "--param",
                "qdisc.size=128",
            ]))
            .unwrap();
        assert_eq!(a.devices, ["nicemu-ixgbe"]);
        assert_eq!(a.params.last().map(String::as_str), Some("qdisc.size=128"));
        let (a, _) = e
            .run_args(&args(&[
                "qdisc-trylock",
                "--aa",
                "--accel",
                "tcg",
                "--smp",
                "4",
                "--pin",
                "--mem",
                "2048",
                "--timeout",
                "900",
                "--nicemu",
                "/opt/nicemu",
            ]))
            .unwrap();
        let g = &a.guest;
        assert_eq!(
            (g.accel, g.smp, g.pin, g.mem, g.timeout),
            (crate::vm::accel::Accel::Tcg, 4, true, 2048, Some(900))
        );
        assert_eq!(
            g.nicemu.as_deref(),
            Some(std::path::Path::new("/opt/nicemu"))
        );
        let err = e.run_args(&args(&["qdisc-trylock", "--patch", "/nonexistent.patch"]));
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("/nonexistent.patch not found"));
    }
}
