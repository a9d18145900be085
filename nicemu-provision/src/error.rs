// SPDX-License-Identifier: Apache-2.0
//! Provisioning's error type: every failure is one clear line telling what to do (the
//! harness's own error wraps it variant for variant).

use std::path::PathBuf;

/// Everything that can go wrong while provisioning.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A prerequisite (root, a tool, a file) is missing; the message says how to fix it.
    #[error("missing prerequisite: {0}")]
    Prerequisite(String),
    /// An I/O error on a known path.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An external command could not be started or failed.
    #[error("command `{cmd}` failed: {detail}")]
    Command {
        /// The command line, shortened for display.
        cmd: String,
        /// What went wrong (exit status, stderr tail).
        detail: String,
    },
    /// The guest kernel or its modules could not be found or used.
    #[error("guest kernel: {0}")]
    Kernel(String),
    /// A bad command-line value.
    #[error("invalid argument: {0}")]
    Usage(String),
    /// The run was interrupted by SIGINT/SIGTERM.
    #[error("interrupted")]
    Interrupted,
}

/// Result alias for provisioning.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
