// SPDX-License-Identifier: Apache-2.0
//! The threads nicemu starts with its ports (servers, receive threads,
//! timers, the control socket): named, and a thread that cannot start is a
//! typed error that names it.

use std::thread::JoinHandle;

use crate::error::Error;

/// Starts `f` on a new thread called `name`.
pub fn spawn<T, F>(name: String, f: F) -> Result<JoinHandle<T>, Error>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(f)
        .map_err(|source| Error::Spawn {
            thread: name,
            source,
        })
}
