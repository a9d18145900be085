// SPDX-License-Identifier: Apache-2.0
//! File descriptors that arrive with a message (SCM_RIGHTS): received into a
//! fixed array of [`MAX_MSG_FDS`], never more, and closed unless a command
//! takes them.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use crate::limits::MAX_MSG_FDS;

/// File descriptors received with one message.
pub(crate) struct Fds {
    /// `fds[..len]` may hold descriptors; the slots after them are empty.
    fds: [Option<OwnedFd>; MAX_MSG_FDS],
    /// Descriptors held.
    pub(crate) len: usize,
    /// More arrived than fit (the surplus was closed).
    pub(crate) overflow: bool,
}

impl Fds {
    /// No descriptors.
    pub(crate) fn new() -> Self {
        Fds {
            fds: Default::default(),
            len: 0,
            overflow: false,
        }
    }

    fn push(&mut self, fd: OwnedFd) {
        match self.fds.get_mut(self.len) {
            Some(slot) => {
                *slot = Some(fd);
                self.len += 1;
            }
            None => self.overflow = true,
        }
    }

    /// Closes every descriptor (slots from `len` on are always empty).
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.fds[..self.len].iter_mut().for_each(|f| *f = None);
        self.len = 0;
        self.overflow = false;
    }

    /// Every descriptor, as files.
    pub(crate) fn take_files(&mut self) -> Vec<File> {
        let v = self.fds[..self.len]
            .iter_mut()
            .filter_map(Option::take)
            .map(File::from)
            .collect();
        self.len = 0;
        v
    }

    /// Moves the descriptors of `other` here (surplus closed, `overflow`).
    pub(crate) fn take_from(&mut self, other: &mut Fds) {
        self.overflow |= other.overflow;
        for f in other.fds.iter_mut().filter_map(Option::take) {
            self.push(f);
        }
        other.clear();
    }

    /// The first descriptor; the others are closed.
    pub(crate) fn take_one(&mut self) -> Option<File> {
        let f = self.fds.first_mut().and_then(Option::take).map(File::from);
        self.clear();
        f
    }
}

/// Bytes of control data for [`MAX_MSG_FDS`] descriptors.
// SAFETY: CMSG_SPACE only does arithmetic on its argument.
const CMSG_SPACE_FDS: usize =
    unsafe { libc::CMSG_SPACE((MAX_MSG_FDS * std::mem::size_of::<RawFd>()) as u32) } as usize;

const _: () = assert!(CMSG_SPACE_FDS >= MAX_MSG_FDS * std::mem::size_of::<RawFd>());
const _: () = assert!(CMSG_SPACE_FDS <= u32::MAX as usize);
const _: () = assert!(std::mem::size_of::<RawFd>() == 4);

/// Control-message buffer, aligned as `struct cmsghdr` requires.
#[repr(C, align(8))]
struct CmsgBuf([u8; CMSG_SPACE_FDS]);

/// `recvmsg` into `buf`, collecting SCM_RIGHTS descriptors into `fds`
/// (close-on-exec). Descriptors beyond [`MAX_MSG_FDS`] never reach the process
/// (the kernel truncates the control data and `fds.overflow` is set).
pub(crate) fn recv_with_fds(sock: &UnixStream, buf: &mut [u8], fds: &mut Fds) -> io::Result<usize> {
    recv_with_fds_flags(sock, buf, fds, 0)
}

/// [`recv_with_fds`] with extra `recvmsg` flags (`MSG_DONTWAIT`: return
/// `WouldBlock` at once when nothing is there).
pub(crate) fn recv_with_fds_flags(
    sock: &UnixStream,
    buf: &mut [u8],
    fds: &mut Fds,
    flags: libc::c_int,
) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cmsg = CmsgBuf([0; CMSG_SPACE_FDS]);
    // SAFETY: msghdr is plain data for which all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.0.as_mut_ptr().cast();
    // usize on glibc, u32 on musl; the size fits either (checked above).
    #[allow(clippy::useless_conversion)]
    let controllen = CMSG_SPACE_FDS.try_into().unwrap_or(0);
    msg.msg_controllen = controllen;
    // SAFETY: `msg` points at `iov`, which describes `buf` (mutably borrowed,
    // `buf.len()` bytes), and at `cmsg` (`msg_controllen` bytes); both outlive
    // the call. The kernel writes only within those lengths.
    let n = unsafe {
        libc::recvmsg(
            sock.as_raw_fd(),
            &raw mut msg,
            libc::MSG_CMSG_CLOEXEC | flags,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR returns null or a
    // header inside `cmsg` within `msg_controllen`.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(&raw const msg) };
    while !c.is_null() {
        // SAFETY: `c` is non-null and points at a complete, aligned cmsghdr
        // inside `cmsg` (CMSG_FIRSTHDR/CMSG_NXTHDR check the bounds).
        let (level, kind, len) = unsafe { ((*c).cmsg_level, (*c).cmsg_type, (*c).cmsg_len) };
        if level == libc::SOL_SOCKET && kind == libc::SCM_RIGHTS {
            // SAFETY: CMSG_LEN only does arithmetic.
            let head = unsafe { libc::CMSG_LEN(0) } as usize;
            #[allow(clippy::unnecessary_cast)] // cmsg_len is u32 on some libcs
            let len = len as usize;
            let count = len.saturating_sub(head) / std::mem::size_of::<RawFd>();
            // SAFETY: `c` is a valid header; its data follows it in `cmsg`.
            let data = unsafe { libc::CMSG_DATA(c) };
            for i in 0..count {
                let at = i * std::mem::size_of::<RawFd>();
                // SAFETY: the kernel wrote `count` descriptors at `data`,
                // inside `cmsg`; read_unaligned needs no alignment.
                let fd = unsafe { data.add(at).cast::<[u8; 4]>().read_unaligned() };
                let fd = RawFd::from_ne_bytes(fd);
                // SAFETY: SCM_RIGHTS installed `fd` in this process for us;
                // nothing else owns it.
                fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
        // SAFETY: `msg` and `c` are valid as above.
        c = unsafe { libc::CMSG_NXTHDR(&raw const msg, c) };
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        fds.overflow = true;
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmm_sys_util::eventfd::EventFd;
    use vmm_sys_util::sock_ctrl_msg::ScmSocket;

    #[test]
    fn descriptors_are_collected_and_surplus_refused() {
        let (a, b) = UnixStream::pair().unwrap();
        let evs: Vec<EventFd> = (0..MAX_MSG_FDS + 1)
            .map(|_| EventFd::new(0).unwrap())
            .collect();
        let raw: Vec<RawFd> = evs.iter().map(|e| e.as_raw_fd()).collect();
        let mut fds = Fds::new();
        let mut buf = [0u8; 4];
        a.send_with_fds(&[&[1u8, 2, 3, 4][..]], &raw[..2]).unwrap();
        assert_eq!(recv_with_fds(&b, &mut buf, &mut fds).unwrap(), 4);
        assert_eq!((fds.len, fds.overflow), (2, false));
        let files = fds.take_files();
        assert_eq!(files.len(), 2);
        fds.clear();
        a.send_with_fds(&[&[5u8][..]], &raw).unwrap();
        assert_eq!(recv_with_fds(&b, &mut buf, &mut fds).unwrap(), 1);
        assert!(fds.overflow, "17 descriptors overflow the control buffer");
        assert!(fds.len <= MAX_MSG_FDS);
        fds.clear();
        a.send_with_fds(&[&[6u8][..]], &raw[..MAX_MSG_FDS]).unwrap();
        recv_with_fds(&b, &mut buf, &mut fds).unwrap();
        assert_eq!((fds.len, fds.overflow), (MAX_MSG_FDS, false));
    }
}
