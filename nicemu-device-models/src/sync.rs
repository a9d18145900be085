// SPDX-License-Identifier: Apache-2.0
//! Lock helpers of the device models: a panic on one thread (a bug, never a
//! guest's doing) must not take the device down with it, so poisoned locks are
//! recovered; the receive path can try a queue's lock instead of waiting.

use std::sync::{Mutex, MutexGuard, TryLockError};

/// Locks `m`, recovering from poisoning.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks `m` if `wait`, else only if it is free right now.
pub fn lock_or_try<T>(m: &Mutex<T>, wait: bool) -> Option<MutexGuard<'_, T>> {
    if wait {
        return Some(lock(m));
    }
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_fails_while_held_and_poison_is_recovered() {
        let m = Mutex::new(1);
        {
            let _g = lock(&m);
            assert!(lock_or_try(&m, false).is_none());
        }
        assert_eq!(*lock_or_try(&m, false).unwrap(), 1);
        let _ = std::thread::scope(|s| {
            s.spawn(|| {
                let _g = m.lock().unwrap();
                panic!("poison");
            })
            .join()
        });
        assert!(m.is_poisoned());
        assert_eq!(*lock(&m), 1);
        assert_eq!(*lock_or_try(&m, true).unwrap(), 1);
    }
}
