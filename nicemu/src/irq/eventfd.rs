// SPDX-License-Identifier: Apache-2.0
//! Writing an interrupt fd (an eventfd, a pipe or a socket a client handed
//! nicemu: a vfio-user SET_IRQS vector's, a vhost-user vring's call fd):
//! checking and preparing it ([`prepare_fd`], [`make_non_blocking`]), and one
//! write of it ([`signal`]) with what that came to ([`Signalled`]).

use std::os::fd::AsRawFd;

/// Why an fd cannot carry interrupts (its file type, or a failed
/// fstat/fcntl).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotSignallable(pub String);

/// Makes `f` fit for [`signal`]: an eventfd (QEMU's, as on every Linux
/// host), a pipe/FIFO or a socket, switched to `O_NONBLOCK` (the file
/// description is shared with the client; QEMU creates its eventfds
/// non-blocking anyway). Anything else is refused: a write to a regular file
/// or a device may block however the fd is flagged.
pub fn prepare_fd(f: &impl AsRawFd) -> Result<(), NotSignallable> {
    let fd = f.as_raw_fd();
    // SAFETY: fstat writes into a zeroed stat buffer we own.
    let mode = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &raw mut st) != 0 {
            return Err(NotSignallable(std::io::Error::last_os_error().to_string()));
        }
        st.st_mode & libc::S_IFMT
    };
    // Anonymous inodes (eventfd) have no file type bits.
    if !matches!(mode, 0 | libc::S_IFIFO | libc::S_IFSOCK) {
        return Err(NotSignallable(format!("file type {mode:#o}")));
    }
    // SAFETY: F_GETFL/F_SETFL on an fd we hold read and set its status flags.
    let ok = unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        fl >= 0 && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(NotSignallable(std::io::Error::last_os_error().to_string()))
    }
}

/// What a signal came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Signalled {
    /// Written.
    Sent,
    /// The fd was full (EAGAIN): the client has not consumed the previous
    /// interrupt yet, so this one merges with it, as a pending MSI-X
    /// message does (PCI 3.0 §6.8.3.5).
    Coalesced,
    /// Any other failure (a pipe whose reader is gone, an fd of the wrong
    /// kind).
    Failed,
    /// A write that waited was interrupted (by the signaller's watchdog, or
    /// because the port's fds changed: `Signaller::release`).
    Interrupted,
}

/// Makes an interrupt fd non-blocking again if its client cleared the flag
/// (after a write that did not go through; the description is the client's
/// too), or checks and prepares one nicemu did not take through SET_IRQS
/// (vhost-user's call eventfds). False when it cannot be signalled.
pub fn make_non_blocking(f: &impl AsRawFd) -> bool {
    // SAFETY: F_GETFL only reads the status flags of an fd we hold.
    let fl = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    fl >= 0 && (fl & libc::O_NONBLOCK != 0 || prepare_fd(f).is_ok())
}

/// [`make_non_blocking`], then [`signal`].
pub fn signal_unprepared(f: &impl AsRawFd) -> Signalled {
    if !make_non_blocking(f) {
        return Signalled::Failed;
    }
    signal(f)
}

/// One 8-byte write of 1 (an eventfd increment; a pipe or socket gets the
/// same bytes). Non-blocking unless the client cleared `O_NONBLOCK` after
/// [`make_non_blocking`], so only the threads a port's signaller lets write
/// call it (its own, watched by the signaller's watchdog).
pub fn signal(f: &impl AsRawFd) -> Signalled {
    let one = 1u64.to_le_bytes();
    // SAFETY: writes 8 bytes from a live stack buffer to an fd we hold.
    let n = unsafe { libc::write(f.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    if n >= 0 {
        return Signalled::Sent;
    }
    let e = std::io::Error::last_os_error();
    match e.kind() {
        std::io::ErrorKind::WouldBlock => Signalled::Coalesced,
        std::io::ErrorKind::Interrupted => Signalled::Interrupted,
        _ => {
            log::debug!("interrupt fd write failed: {e}");
            Signalled::Failed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use vmm_sys_util::eventfd::EventFd;

    #[test]
    fn unprepared_fds_are_made_non_blocking_when_signalled() {
        // A vhost-user call eventfd as a hostile client may pass it:
        // blocking and one below its maximum.
        let full = EventFd::new(0).unwrap();
        full.write(u64::MAX - 1).unwrap();
        let (tx, done) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let r = signal_unprepared(&full);
            let _ = tx.send(());
            (r, full)
        });
        done.recv_timeout(std::time::Duration::from_secs(5))
            .expect("signalling blocked");
        let (r, full) = t.join().unwrap();
        assert_eq!(r, Signalled::Coalesced);
        assert_eq!(full.read().unwrap(), u64::MAX - 1);
        assert_eq!(signal_unprepared(&full), Signalled::Sent);
        let file = File::open("/proc/self/exe").unwrap();
        assert_eq!(signal_unprepared(&file), Signalled::Failed);
    }
}
