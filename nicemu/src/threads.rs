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

thread_local! {
    /// The calling thread's kernel thread id, once asked for (0: not yet).
    static TID: std::cell::Cell<i32> = const { std::cell::Cell::new(0) };
}

/// The calling thread's kernel thread id (`gettid`, asked once per thread:
/// interrupt writes note it for the watchdog on every write).
pub fn current_tid() -> i32 {
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid has no preconditions.
            t.set(unsafe { libc::gettid() });
        }
        t.get()
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_thread_has_its_own_kernel_thread_id() {
        let here = super::current_tid();
        // SAFETY: gettid has no preconditions.
        assert_eq!(here, unsafe { libc::gettid() });
        assert_eq!(super::current_tid(), here);
        let there = std::thread::spawn(super::current_tid).join().unwrap();
        assert_ne!(there, here);
    }
}
