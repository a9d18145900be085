// SPDX-License-Identifier: Apache-2.0
//! JSON output and input.

use std::path::Path;

use super::RunReport;
use crate::error::{Error, Result};

/// Writes `report` as pretty JSON to `path`.
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
}

/// Reads a results JSON written by `run` or `merge`.
pub fn read(path: &Path) -> Result<RunReport> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| {
        Error::Usage(format!(
            "{}: not a nicemu-guest results file: {e}",
            path.display()
        ))
    })
}
