// SPDX-License-Identifier: Apache-2.0
//! Listening sockets of nicemu (vfio-user, vhost-user, control, stream wire).
//!
//! Every socket is created with mode 0600 whatever the umask: the socket is
//! bound, its mode set, and only then listened on, so no other user can
//! connect in between. Peers of the control socket are also checked by
//! their credentials ([`peer_allowed`]).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use crate::error::Error;

/// Mode of every socket nicemu listens on.
pub const SOCKET_MODE: libc::mode_t = 0o600;
/// Connections waiting to be accepted.
const BACKLOG: libc::c_int = 128;

/// Listens on a new unix socket at `path`. A path that is already taken (a
/// file, a stale socket, even a dangling symlink) is refused rather than
/// removed: it may belong to another running nicemu or QEMU.
pub fn listen(path: &Path) -> Result<UnixListener, Error> {
    if path.symlink_metadata().is_ok() {
        return Err(Error::SocketExists(path.to_path_buf()));
    }
    bind_private(path).map_err(|source| Error::Listen {
        path: path.to_path_buf(),
        source,
    })
}

fn cvt(r: libc::c_int) -> std::io::Result<libc::c_int> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Listens on a new unix socket at `path` (which must be free): socket,
/// bind, chmod 0600, listen.
pub fn bind_private(path: &Path) -> std::io::Result<UnixListener> {
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() {
        return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = libc::c_char::from_ne_bytes([*s]);
    }
    // SAFETY: plain socket(2) call; the result is checked.
    let fd =
        cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: socket() just returned this descriptor; nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: `addr` is a valid sockaddr_un of `len` bytes for the call.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), len) })?;
    let c = CString::new(bytes).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is a NUL-terminated path; chmod only reads it.
    let chmod = cvt(unsafe { libc::chmod(c.as_ptr(), SOCKET_MODE) });
    // SAFETY: `fd` is our bound socket.
    let listened = chmod.and_then(|_| cvt(unsafe { libc::listen(fd.as_raw_fd(), BACKLOG) }));
    if let Err(e) = listened {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(UnixListener::from(fd))
}

/// The peer's user and group ids (SO_PEERCRED).
pub fn peer_ids(s: &UnixStream) -> std::io::Result<(libc::uid_t, libc::gid_t)> {
    peer_cred(s).map(|c| (c.uid, c.gid))
}

/// The peer's process id (SO_PEERCRED).
pub fn peer_pid(s: &UnixStream) -> std::io::Result<libc::pid_t> {
    peer_cred(s).map(|c| c.pid)
}

fn peer_cred(s: &UnixStream) -> std::io::Result<libc::ucred> {
    // SAFETY: ucred is plain data; all zeroes is a valid value.
    let mut cred: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are valid for writes of the sizes given.
    cvt(unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    })?;
    Ok(cred)
}

/// A peer may use nicemu's sockets when it runs as nicemu's own user or as
/// root (whatever the socket's mode was changed to).
pub fn peer_allowed(s: &UnixStream) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    matches!(peer_ids(s), Ok((uid, _)) if uid == me || uid == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_path_is_refused_and_a_free_one_listens() {
        let dir = std::env::temp_dir().join(format!("nicemu-socket-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let taken = dir.join("taken");
        std::fs::write(&taken, b"").unwrap();
        assert!(matches!(listen(&taken), Err(Error::SocketExists(_))));
        let dangling = dir.join("dangling");
        let _ = std::fs::remove_file(&dangling);
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        assert!(matches!(listen(&dangling), Err(Error::SocketExists(_))));
        let free = dir.join("free.sock");
        let _ = std::fs::remove_file(&free);
        let l = listen(&free).unwrap();
        let c = UnixStream::connect(&free).unwrap();
        let (s, _) = l.accept().unwrap();
        assert!(peer_allowed(&s), "our own user is allowed");
        drop(c);
        assert!(matches!(
            listen(&dir.join("no-such-dir/x.sock")),
            Err(Error::Listen { .. })
        ));
        let _ = std::fs::remove_dir_all(dir);
    }
}
