// SPDX-License-Identifier: Apache-2.0
//! The harness's error type: every failure is one clear line telling what to do.

use std::path::PathBuf;

/// Everything that can go wrong while provisioning, building an image, booting or reporting.
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
    /// A patch that does not apply, or a driver/kernel build that failed (the message names
    /// the patch and hunk, or the compiler's first errors and the log).
    #[error("{0}")]
    Build(String),
    /// A bad command-line value.
    #[error("invalid argument: {0}")]
    Usage(String),
    /// The run was interrupted by SIGINT/SIGTERM.
    #[error("interrupted")]
    Interrupted,
    /// JSON serialization failed.
    #[error("json: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result alias for the harness.
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

/// Provisioning's errors are the harness's, variant for variant (same messages).
impl From<nicemu_provision::error::Error> for Error {
    fn from(e: nicemu_provision::error::Error) -> Self {
        use nicemu_provision::error::Error as P;
        match e {
            P::Prerequisite(m) => Error::Prerequisite(m),
            P::Io { path, source } => Error::Io { path, source },
            P::Command { cmd, detail } => Error::Command { cmd, detail },
            P::Kernel(m) => Error::Kernel(m),
            P::Usage(m) => Error::Usage(m),
            P::Interrupted => Error::Interrupted,
        }
    }
}
