// SPDX-License-Identifier: Apache-2.0
//! The test matrix: kernels × devices, each cell one guest running the scenarios.
//! Built from a TOML file (the shipped `matrix/default.toml` when nothing is given) with
//! command-line flags overriding it; `--shard K/N` keeps every N-th cell.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::image::guest_kernel::KernelSpec;
use crate::params::Params;
use crate::scenario;
use crate::vm::device::{DeviceKind, Topology};

/// The default matrix shipped with the harness.
pub const DEFAULT_TOML: &str = include_str!("../matrix/default.toml");

/// A matrix file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixFile {
    /// Kernel names ("sid", "trixie", "trixie-rt") or bzImage paths.
    pub kernels: Option<Vec<String>>,
    /// Modules directory for a bzImage path in `kernels`.
    pub modules: Option<PathBuf>,
    /// Device names.
    pub devices: Option<Vec<String>>,
    /// Scenario names.
    pub scenarios: Option<Vec<String>>,
    /// Where the peer sits.
    pub topology: Option<Topology>,
    /// Scenario parameters (`"ping.count" = 100`).
    pub params: Option<BTreeMap<String, toml::Value>>,
}

impl MatrixFile {
    /// Parses TOML text.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        toml::from_str(text).map_err(|e| Error::Usage(format!("{origin}: {e}")))
    }

    /// Reads a TOML file.
    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::parse(&text, &path.display().to_string())
    }
}

/// Command-line overrides of a matrix (empty = keep the file's value).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--kernel` values.
    pub kernels: Vec<String>,
    /// `--modules`.
    pub modules: Option<PathBuf>,
    /// `--device` values.
    pub devices: Vec<String>,
    /// `--scenario` values.
    pub scenarios: Vec<String>,
    /// `--topology`.
    pub topology: Option<Topology>,
    /// `--param KEY=VALUE` values.
    pub params: Vec<String>,
}

/// A validated matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// Kernels, in order.
    pub kernels: Vec<KernelSpec>,
    /// Devices, in order.
    pub devices: Vec<DeviceKind>,
    /// Scenario names, in order.
    pub scenarios: Vec<String>,
    /// Peer placement.
    pub topology: Topology,
    /// Scenario parameters.
    pub params: Params,
}

/// One cell: a kernel and a device (one guest boot).
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Position in the full matrix (0-based, kernel-major).
    pub index: usize,
    /// Index into `Matrix::kernels`.
    pub kernel: usize,
    /// The device.
    pub device: DeviceKind,
}

impl Matrix {
    /// Combines `file` (or the default matrix when `None`) with `o`.
    pub fn build(file: Option<MatrixFile>, o: &Overrides) -> Result<Self> {
        let f = match file {
            Some(f) => f,
            None => MatrixFile::parse(DEFAULT_TOML, "matrix/default.toml")?,
        };
        let kernels = kernels_of(o, f.kernels, f.modules)?;
        let devices = pick(&o.devices, f.devices, "devices")?
            .iter()
            .map(|d| DeviceKind::parse(d))
            .collect::<Result<Vec<_>>>()?;
        let scenarios = pick(&o.scenarios, f.scenarios, "scenarios")?;
        for s in &scenarios {
            if scenario::by_name(s).is_none() {
                return Err(Error::Usage(format!(
                    "unknown scenario {s:?} (known: {})",
                    scenario::NAMES.join(", ")
                )));
            }
        }
        let params = params_of(f.params.unwrap_or_default(), &o.params)?;
        let topology = o.topology.or(f.topology).unwrap_or(Topology::Netns);
        check_topology(topology, &devices)?;
        Ok(Matrix {
            kernels,
            devices,
            scenarios: dedup(scenarios),
            topology,
            params,
        })
    }

    /// All cells, kernel-major.
    pub fn cells(&self) -> Vec<Cell> {
        let mut v = Vec::new();
        for k in 0..self.kernels.len() {
            for d in &self.devices {
                v.push(Cell {
                    index: v.len(),
                    kernel: k,
                    device: *d,
                });
            }
        }
        v
    }
}

/// The command line's list if it has one, else the file's; blank entries
/// dropped, and none left is an error naming `what`.
fn pick(cli: &[String], file: Option<Vec<String>>, what: &str) -> Result<Vec<String>> {
    let v: Vec<String> = if cli.is_empty() {
        file.unwrap_or_default()
    } else {
        cli.to_vec()
    };
    let v: Vec<String> = v
        .iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if v.is_empty() {
        Err(Error::Usage(format!("the matrix has no {what}")))
    } else {
        Ok(v)
    }
}

/// The kernels (sid when neither the command line nor the file names one);
/// `--modules` only goes with a bzImage path.
fn kernels_of(
    o: &Overrides,
    file_kernels: Option<Vec<String>>,
    file_modules: Option<PathBuf>,
) -> Result<Vec<KernelSpec>> {
    let kernel_names = if o.kernels.is_empty() && file_kernels.is_none() {
        vec!["sid".to_owned()]
    } else {
        pick(&o.kernels, file_kernels, "kernels")?
    };
    let modules = o.modules.clone().or(file_modules);
    let kernels = kernel_names
        .iter()
        .map(|k| KernelSpec::from_args(k, modules.as_deref()))
        .collect::<Result<Vec<_>>>()?;
    if modules.is_some()
        && !kernels
            .iter()
            .any(|k| matches!(k, KernelSpec::Custom { .. }))
    {
        return Err(Error::Usage(
            "--modules is only used with a bzImage path as kernel".into(),
        ));
    }
    Ok(kernels)
}

/// The file's `[params]`, then the command line's `--param`s over them,
/// validated.
fn params_of(file: BTreeMap<String, toml::Value>, cli: &[String]) -> Result<Params> {
    let mut params = Params::default();
    for (k, v) in file {
        let v = match v {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => u8::from(b).to_string(),
            _ => {
                return Err(Error::Usage(format!(
                    "parameter {k}: use a string, number or boolean"
                )))
            }
        };
        params.set(&k, &v)?;
    }
    for p in cli {
        params.set_pair(p)?;
    }
    crate::param_ranges::validate(&params)?;
    Ok(params)
}

/// The peers a topology puts next to the device under test must fit it: an
/// interop peer needs a nicemu device, `mixed` is nicemu's igb only, `vf-pf` nicemu's VFs
/// only.
fn check_topology(topology: Topology, devices: &[DeviceKind]) -> Result<()> {
    if let Some(peer) = topology.interop_peer() {
        if let Some(d) = devices.iter().find(|d| d.nicemu_kind().is_none()) {
            return Err(Error::Usage(format!(
                "topology {} puts QEMU's {peer} next to a nicemu device under test; \
                 {d} is not a nicemu device (use nicemu-igb or nicemu-ixgbe)",
                topology.name()
            )));
        }
    }
    if topology == Topology::VfPf {
        if let Some(d) = devices.iter().find(|d| !d.is_nicemu_vf()) {
            return Err(Error::Usage(format!(
                "topology vf-pf is a nicemu VF (device under test) next to its adapter's PF \
                 port; use --device nicemu-igbvf or nicemu-ixgbevf, not {d}"
            )));
        }
    }
    if topology == Topology::Mixed {
        if let Some(d) = devices.iter().find(|d| **d != DeviceKind::NicemuIgb) {
            return Err(Error::Usage(format!(
                "topology mixed is nicemu's igb port (device under test) next to its ixgbe \
                 port; use --device nicemu-igb, not {d}"
            )));
        }
    }
    Ok(())
}

fn dedup(v: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in v {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

/// A `--shard K/N` selection (1 ≤ K ≤ N).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, 1-based.
    pub k: usize,
    /// Number of shards.
    pub n: usize,
}

impl Shard {
    /// Parses "K/N".
    pub fn parse(s: &str) -> Result<Self> {
        let bad = || Error::Usage(format!("--shard {s:?}: expected K/N with 1 <= K <= N"));
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let k: usize = k.trim().parse().map_err(|_| bad())?;
        let n: usize = n.trim().parse().map_err(|_| bad())?;
        if k == 0 || n == 0 || k > n {
            return Err(bad());
        }
        Ok(Shard { k, n })
    }

    /// The cells of this shard (round robin, so each shard mixes kernels and devices).
    pub fn select(&self, cells: &[Cell]) -> Vec<Cell> {
        cells
            .iter()
            .filter(|c| c.index % self.n == self.k - 1)
            .cloned()
            .collect()
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_matrix_is_nicemu_and_qemu_igb_on_sid() {
        let m = Matrix::build(None, &Overrides::default()).unwrap();
        assert_eq!(m.kernels, [KernelSpec::Sid]);
        assert_eq!(m.devices, [DeviceKind::NicemuIgb, DeviceKind::QemuIgb]);
        assert_eq!(
            m.scenarios,
            ["probe", "selftest", "ping", "netperf", "cyclictest"]
        );
        assert_eq!(m.topology, Topology::Netns);
        assert_eq!(m.params.get("netperf.duration"), "5");
        assert_eq!(m.cells().len(), 2);
    }

    #[test]
    fn flags_override_the_file_and_expand_kernel_major() {
        let f = MatrixFile::parse(
            "kernels = [\"sid\"]\ndevices = [\"qemu-igb\"]\nscenarios = [\"ping\"]\n[params]\n\"ping.count\" = 10\n",
            "t",
        )
        .unwrap();
        let o = Overrides {
            kernels: vec!["sid".into(), "trixie".into()],
            devices: vec!["qemu-igb".into(), "qemu-e1000e".into(), "nicemu-igb".into()],
            params: vec!["ping.size=1000".into()],
            ..Default::default()
        };
        let m = Matrix::build(Some(f), &o).unwrap();
        assert_eq!(m.params.get("ping.count"), "10");
        assert_eq!(m.params.get("ping.size"), "1000");
        let cells = m.cells();
        assert_eq!(cells.len(), 6);
        assert_eq!(
            (cells[2].kernel, cells[2].device),
            (0, DeviceKind::NicemuIgb)
        );
        assert_eq!((cells[3].kernel, cells[3].device), (1, DeviceKind::QemuIgb));
        assert!(cells.iter().enumerate().all(|(i, c)| c.index == i));
    }

    #[test]
    fn bad_files_and_values_are_clear_errors() {
        MatrixFile::parse("kernel = [\"sid\"]", "t").unwrap_err();
        let f = MatrixFile::parse("[params]\n\"ping.cnt\" = 1\n", "t").unwrap();
        Matrix::build(Some(f), &Overrides::default()).unwrap_err();
        let o = Overrides {
            scenarios: vec!["pong".into()],
            ..Default::default()
        };
        Matrix::build(None, &o).unwrap_err();
    }

    #[test]
    fn ci_matrix_is_valid() {
        let f = MatrixFile::parse(include_str!("../matrix/ci.toml"), "matrix/ci.toml").unwrap();
        let m = Matrix::build(Some(f), &Overrides::default()).unwrap();
        assert_eq!(
            m.devices,
            [
                DeviceKind::NicemuIgb,
                DeviceKind::NicemuIxgbe,
                DeviceKind::QemuIgb
            ]
        );
        for s in [
            "probe", "selftest", "ping", "stats", "netperf", "faults", "rss",
        ] {
            assert!(m.scenarios.iter().any(|x| x == s), "{s}");
        }
        assert_eq!(m.params.get("netperf.duration"), "3");
    }

    #[test]
    fn interop_needs_nicemu_devices() {
        let f = MatrixFile::parse(
            "devices = [\"nicemu-igb\"]\nscenarios = [\"ping\"]\ntopology = \"interop-e1000e\"\n",
            "t",
        )
        .unwrap();
        let m = Matrix::build(Some(f), &Overrides::default()).unwrap();
        assert_eq!(m.topology, Topology::InteropE1000e);
        let o = Overrides {
            devices: vec!["qemu-igb".into()],
            topology: Some(Topology::InteropIgb),
            ..Default::default()
        };
        Matrix::build(None, &o).unwrap_err();
    }

    #[test]
    fn mixed_is_for_nicemu_igb() {
        let f = MatrixFile::parse(
            "devices = [\"nicemu-igb\"]\nscenarios = [\"ptp\"]\ntopology = \"mixed\"\n",
            "t",
        )
        .unwrap();
        let m = Matrix::build(Some(f), &Overrides::default()).unwrap();
        assert_eq!(m.topology, Topology::Mixed);
        let o = Overrides {
            devices: vec!["nicemu-ixgbe".into()],
            topology: Some(Topology::Mixed),
            ..Default::default()
        };
        let e = Matrix::build(None, &o).unwrap_err().to_string();
        assert!(e.contains("not nicemu-ixgbe"), "{e}");
    }

    #[test]
    fn vf_pf_is_for_nicemus_vfs() {
        let o = |devices: &[&str]| Overrides {
            devices: devices.iter().map(|d| d.to_string()).collect(),
            topology: Some(Topology::VfPf),
            ..Default::default()
        };
        let m = Matrix::build(None, &o(&["nicemu-igbvf", "nicemu-ixgbevf"])).unwrap();
        assert_eq!(m.topology, Topology::VfPf);
        for bad in ["nicemu-igb", "qemu-igbvf"] {
            let e = Matrix::build(None, &o(&["nicemu-igbvf", bad]))
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("not {bad}")), "{e}");
        }
    }

    #[test]
    fn every_cell_in_exactly_one_shard() {
        for total in 0..20 {
            let cells: Vec<Cell> = (0..total)
                .map(|i| Cell {
                    index: i,
                    kernel: i / 3,
                    device: DeviceKind::QemuIgb,
                })
                .collect();
            for n in 1..7 {
                let mut seen = vec![0; total];
                for k in 1..=n {
                    let s = Shard { k, n };
                    for c in s.select(&cells) {
                        seen[c.index] += 1;
                    }
                }
                assert!(
                    seen.iter().all(|&x| x == 1),
                    "total {total} n {n}: {seen:?}"
                );
            }
        }
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { k: 2, n: 3 });
        for bad in ["0/3", "4/3", "1", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
