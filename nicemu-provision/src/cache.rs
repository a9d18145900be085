// SPDX-License-Identifier: Apache-2.0
//! The cache directory: `$NICEMU_CACHE`, else `~/.cache/nicemu`.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// Returns (and creates) the cache directory.
pub fn cache_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os("NICEMU_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => {
            let home = std::env::var_os("HOME").ok_or_else(|| {
                Error::Prerequisite("neither NICEMU_CACHE nor HOME is set".into())
            })?;
            PathBuf::from(home).join(".cache").join("nicemu")
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}
