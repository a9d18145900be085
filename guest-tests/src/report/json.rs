//! JSON output.

use std::path::Path;

use super::RunReport;
use crate::error::{Error, Result};

/// Writes `report` as pretty JSON to `path`.
pub fn write(report: &RunReport, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
}
