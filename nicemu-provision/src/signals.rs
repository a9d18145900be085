// SPDX-License-Identifier: Apache-2.0
//! SIGINT/SIGTERM handling, for every stage (provisioning, builds, guests): the handler
//! only sets a flag; loops poll it, kill their children and unwind so bind mounts are
//! released.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the handlers for SIGINT and SIGTERM, and the default SIGPIPE action (so
/// `nicemu-guest compare … | head` ends quietly instead of panicking on a closed pipe).
pub fn install() {
    // SAFETY: restoring the default disposition of SIGPIPE has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `on_signal` is async-signal-safe (it only stores to an atomic) and has
        // the signature `signal` expects; replacing the default disposition is harmless.
        unsafe {
            libc::signal(sig, handler as libc::sighandler_t);
        }
    }
}

/// True once SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}
