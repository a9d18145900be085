// SPDX-License-Identifier: Apache-2.0
//! The call eventfds a port signals, duplicated once per fd rather than
//! once per interrupt.
//!
//! vhost-user-backend keeps each vring's call eventfd behind the vring's
//! lock and replaces it whenever the frontend sends `SET_VRING_CALL` (QEMU
//! does on every MSI-X mask and unmask of the queue's vector), closing the
//! old one. nicemu writes a duplicate of its own, so no vring lock is held
//! while a write may wait ([`crate::irq::signaller`]). Duplicating,
//! checking `O_NONBLOCK` and closing on every interrupt cost three system
//! calls per write; this cache keeps the duplicate while the vring holds
//! the same fd.
//!
//! "The same fd" is the fd number within one generation. The relay bumps
//! the generation for every `SET_VRING_CALL` before the handler sees it, and
//! the connection's end bumps it too. Within one generation a vring's fd
//! number cannot come to name another eventfd: the handler receives a new
//! call fd while the old one is still installed (so the two numbers
//! differ), and a second replacement would be a second message, bumping
//! the generation.

use std::fs::File;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::irq::eventfd::make_non_blocking;

/// One vring's call fd as last duplicated.
#[derive(Debug)]
struct Cached {
    /// The generation it was duplicated in.
    gen: u64,
    /// The vring's fd number it was duplicated from.
    raw: RawFd,
    /// nicemu's duplicate, made non-blocking.
    fd: Arc<File>,
}

/// The duplicated call fds of one port, by vring index.
#[derive(Debug)]
pub struct CallFds {
    gen: AtomicU64,
    slots: Vec<Mutex<Option<Cached>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a call fd cannot be signalled.
#[derive(Debug, PartialEq, Eq)]
pub enum CallFdError {
    /// The vring index is beyond the port's queues.
    NoSuchVring,
    /// Duplicating it failed, or it cannot be made non-blocking (not an
    /// eventfd, pipe or socket).
    NotSignallable,
}

impl CallFds {
    /// Room for `vrings` vrings.
    pub fn new(vrings: usize) -> Self {
        CallFds {
            gen: AtomicU64::new(0),
            slots: (0..vrings).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Call fds may have been replaced or closed (a `SET_VRING_CALL` is on
    /// its way to the handler, or the connection ended): no duplicate taken
    /// before is used again, and all are closed.
    pub fn changed(&self) {
        self.gen.fetch_add(1, Ordering::AcqRel);
        for s in &self.slots {
            lock(s).take();
        }
    }

    /// Forgets vring `index`'s duplicate (its write did not go through, so
    /// the next one checks the fd afresh).
    pub fn forget(&self, index: usize) {
        if let Some(s) = self.slots.get(index) {
            lock(s).take();
        }
    }

    /// nicemu's duplicate of `call`, vring `index`'s call fd now. The caller
    /// holds the vring's lock, so `call` stays open and installed during the
    /// call.
    pub fn get(&self, index: usize, call: BorrowedFd<'_>) -> Result<Arc<File>, CallFdError> {
        let slot = self.slots.get(index).ok_or(CallFdError::NoSuchVring)?;
        let gen = self.gen.load(Ordering::Acquire);
        let raw = call.as_raw_fd();
        let mut s = lock(slot);
        if let Some(c) = s.as_ref().filter(|c| c.gen == gen && c.raw == raw) {
            return Ok(c.fd.clone());
        }
        let dup = call
            .try_clone_to_owned()
            .map_err(|_| CallFdError::NotSignallable)?;
        if !make_non_blocking(&dup) {
            return Err(CallFdError::NotSignallable);
        }
        let fd = Arc::new(File::from(dup));
        *s = Some(Cached {
            gen,
            raw,
            fd: fd.clone(),
        });
        Ok(fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use vmm_sys_util::eventfd::EventFd;

    /// `e`'s fd, borrowed.
    fn fd_of(e: &EventFd) -> BorrowedFd<'_> {
        // SAFETY: the fd belongs to `e`, which the borrow cannot outlive.
        unsafe { BorrowedFd::borrow_raw(e.as_raw_fd()) }
    }

    fn efd() -> EventFd {
        EventFd::new(libc::EFD_NONBLOCK).unwrap()
    }

    /// Whether `a` and `b` are one file description: a write through one is
    /// read through the other.
    fn same(a: &File, b: &EventFd) -> bool {
        let one = 1u64.to_le_bytes();
        std::io::Write::write_all(&mut &*a, &one).unwrap();
        b.read().is_ok()
    }

    #[test]
    fn one_duplicate_serves_every_interrupt_of_one_fd() {
        let calls = CallFds::new(2);
        let call = efd();
        let a = calls.get(1, fd_of(&call)).unwrap();
        let b = calls.get(1, fd_of(&call)).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(same(&a, &call));
        assert!(matches!(
            calls.get(2, fd_of(&call)),
            Err(CallFdError::NoSuchVring)
        ));
    }

    /// The frontend's second replacement may reuse the first fd's number:
    /// the number alone would then name the old eventfd's duplicate, the
    /// relay's generation does not.
    #[test]
    fn a_replaced_call_fd_with_a_reused_number_is_duplicated_afresh() {
        let calls = CallFds::new(1);
        let call = efd();
        let old = calls.get(0, fd_of(&call)).unwrap();
        let fresh = efd();
        // SAFETY: points our own fd number `call` holds at `fresh`'s
        // description (what closing it and receiving a new one may do).
        let n = unsafe { libc::dup2(fresh.as_raw_fd(), call.as_raw_fd()) };
        assert_eq!(n, call.as_raw_fd());
        let stale = calls.get(0, fd_of(&call)).unwrap();
        assert!(Arc::ptr_eq(&old, &stale), "same number, same generation");
        calls.changed();
        let new = calls.get(0, fd_of(&call)).unwrap();
        assert!(!Arc::ptr_eq(&old, &new));
        assert!(same(&new, &fresh));
    }

    #[test]
    fn a_forgotten_or_renumbered_fd_is_duplicated_afresh() {
        let calls = CallFds::new(1);
        let (a, b) = (efd(), efd());
        let first = calls.get(0, fd_of(&a)).unwrap();
        calls.forget(0);
        assert!(!Arc::ptr_eq(&first, &calls.get(0, fd_of(&a)).unwrap()));
        let other = calls.get(0, fd_of(&b)).unwrap();
        assert!(same(&other, &b));
    }

    /// A call fd the frontend passed blocking is made non-blocking once,
    /// when duplicated; a regular file is refused.
    #[test]
    fn duplicates_are_non_blocking_and_only_of_signallable_fds() {
        let calls = CallFds::new(1);
        let blocking = EventFd::new(0).unwrap();
        let fd = calls.get(0, fd_of(&blocking)).unwrap();
        // SAFETY: F_GETFL reads the status flags of an fd we hold.
        let fl = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        assert_ne!(fl & libc::O_NONBLOCK, 0);
        let file = File::open("/proc/self/exe").unwrap();
        assert!(matches!(
            calls.get(0, file.as_fd()),
            Err(CallFdError::NotSignallable)
        ));
    }
}
