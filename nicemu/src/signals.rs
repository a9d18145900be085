// SPDX-License-Identifier: Apache-2.0
//! SIGINT/SIGTERM handling: the signals are blocked in every thread and
//! collected synchronously by the main thread with `sigwait`.

use crate::error::Error;

/// Blocked termination signals.
#[derive(Debug)]
pub struct Signals {
    set: libc::sigset_t,
}

impl Signals {
    /// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and every thread
    /// it spawns afterwards. Call before starting threads.
    pub fn block() -> Result<Signals, Error> {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it fully.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid, exclusively borrowed sigset_t; the signal
        // numbers are valid; pthread_sigmask only reads `set`.
        let rc = unsafe {
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, libc::SIGINT);
            libc::sigaddset(&raw mut set, libc::SIGTERM);
            libc::sigaddset(&raw mut set, libc::SIGHUP);
            libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(Error::Signals(std::io::Error::from_raw_os_error(rc)));
        }
        Ok(Signals { set })
    }

    /// Waits for one of the blocked signals and returns its number.
    pub fn wait(&self) -> i32 {
        let mut sig = 0;
        loop {
            // SAFETY: `self.set` was initialised in `block`; `sig` is a valid out pointer.
            let rc = unsafe { libc::sigwait(&raw const self.set, &raw mut sig) };
            if rc == 0 {
                return sig;
            }
        }
    }
}
