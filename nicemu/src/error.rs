// SPDX-License-Identifier: Apache-2.0
//! Errors of the nicemu process, each with a message that says what to fix.

use std::path::PathBuf;

/// Everything that stops nicemu from starting or serving.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A `--device` value could not be parsed.
    #[error("bad --device '{spec}': {reason}")]
    BadDevice {
        /// The value given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `--wire` value could not be parsed.
    #[error("bad --wire '{spec}': {reason}")]
    BadWire {
        /// The value given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A wire could not be opened.
    #[error("cannot open wire {what}: {source}")]
    Wire {
        /// Which wire.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// A socket path is already taken.
    #[error("socket path {0} already exists: remove it or choose another path")]
    SocketExists(PathBuf),
    /// A socket could not be created.
    #[error("cannot listen on {path}: {source}")]
    Listen {
        /// The socket path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A thread could not be started (out of memory or of the process's
    /// thread limit).
    #[error("cannot start thread {thread}: {source} (raise the thread or memory limit, or run fewer ports)")]
    Spawn {
        /// The thread's name.
        thread: String,
        /// Why.
        source: std::io::Error,
    },
    /// SIGINT/SIGTERM/SIGHUP could not be blocked for the signal thread.
    #[error("cannot set up signal handling: {0}")]
    Signals(#[source] std::io::Error),
    /// Two devices use the same id or socket.
    #[error("duplicate {what} '{value}': each --device needs its own id and socket")]
    Duplicate {
        /// `id` or `socket`.
        what: &'static str,
        /// The repeated value.
        value: String,
    },
    /// An output file (--trace-regs) could not be created.
    #[error(transparent)]
    Output(#[from] crate::outfile::OutputError),
    /// The output directory could not be opened.
    #[error("--output-dir {path}: {source}")]
    OutputDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No device was given.
    #[error(
        "no --device given: add at least one, e.g. --device igb,id=igb0,socket=/tmp/igb0.sock"
    )]
    NoDevice,
}
