// SPDX-License-Identifier: Apache-2.0
//! The report's files: results.json, report.html and junit.xml in the run directory, and
//! wherever `--json`, `--html`, `--junit` ask; each cell's KTAP files in its directory.

use std::path::Path;

use super::{html, json, junit, RunReport};
use crate::cli::Outputs;
use crate::error::Result;

/// Writes results.json / report.html / junit.xml into `dir` (if given) and wherever
/// `out` asks.
pub fn write(report: &RunReport, dir: Option<&Path>, out: &Outputs) -> Result<()> {
    if let Some(d) = dir {
        // The KTAP files first: junit.xml and report.html point to the files that exist.
        super::ktap::write_cells(report)?;
        json::write(report, &d.join("results.json"))?;
        html::write(report, &d.join("report.html"))?;
        junit::write(report, &d.join("junit.xml"))?;
    }
    if let Some(p) = &out.json {
        json::write(report, p)?;
    }
    if let Some(p) = &out.html {
        html::write(report, p)?;
    }
    if let Some(p) = &out.junit {
        junit::write(report, p)?;
    }
    Ok(())
}
