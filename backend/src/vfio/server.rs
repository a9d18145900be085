//! nicemu's vfio-user server: accepts one client at a time on a unix socket
//! and serves its commands against a [`DeviceBackend`].
//!
//! The client (QEMU, or anything else that connects) is untrusted. Every
//! message gets defined behaviour:
//!
//! - a message whose payload is malformed or asks for something the device
//!   does not have gets an error reply carrying an errno (`EINVAL`, `E2BIG`,
//!   `ENOSYS` for unknown commands, `ENOTSUP` for unsupported features) and the
//!   connection goes on;
//! - a message that breaks framing (size below the header, size above
//!   [`MAX_MSG_SIZE`], connection closed mid-message, a client stalling for
//!   [`MSG_DEADLINE`] inside a message) or a failed VERSION negotiation ends
//!   the connection with one log line; the caller then resets the device and
//!   accepts the next client.
//!
//! Nothing is allocated per message: the receive and reply buffers are sized
//! once per connection for the largest message allowed, and file descriptors
//! arrive in a fixed array of [`MAX_MSG_FDS`]. Posted commands (header flag
//! `NO_REPLY`, which QEMU sets on BAR writes) get no reply, not even on error.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::time::{Duration, Instant};

use vfio_bindings::bindings::vfio::{
    VFIO_DEVICE_FLAGS_PCI, VFIO_DEVICE_FLAGS_RESET, VFIO_IRQ_SET_ACTION_TYPE_MASK,
    VFIO_IRQ_SET_DATA_BOOL, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_IRQ_SET_DATA_TYPE_MASK,
};

use super::wire::{
    self, Capabilities, Command, DeviceInfo, DmaMap, DmaMapFlags, DmaUnmap, DmaUnmapFlags, Header,
    IrqInfo, IrqInfoRequest, RegionAccess, RegionInfo, RegionInfoRequest, RegionIoFdsRequest,
    SetIrqs, Version, VersionData, WireError, HEADER_SIZE,
};
use crate::error::Error;

/// Most file descriptors accepted in one message, advertised as
/// `max_msg_fds` (QEMU's own maximum; it sends MSI-X eventfds in batches of
/// this size). A message carrying more is refused with `EINVAL` and every
/// descriptor it carried is closed.
pub const MAX_MSG_FDS: usize = 16;

/// Largest `count` of REGION_READ/REGION_WRITE, advertised as
/// `max_data_xfer_size`. QEMU reads the whole 4 KiB config space at start;
/// guest accesses are at most 8 bytes.
pub const MAX_DATA_XFER: u32 = 64 * 1024;

/// Largest message accepted: a REGION_WRITE of [`MAX_DATA_XFER`] bytes (every
/// other command is smaller). A header announcing more gets an `E2BIG` error
/// reply and the connection is closed, since the stream cannot be trusted to
/// resynchronise.
pub const MAX_MSG_SIZE: usize = HEADER_SIZE + RegionAccess::SIZE + MAX_DATA_XFER as usize;

/// How long a client may take to deliver the rest of a message once its first
/// byte arrived. Idle time between messages is not limited.
pub const MSG_DEADLINE: Duration = Duration::from_secs(10);

/// How long a reply may wait for room in the socket (a client that stops
/// reading its replies is dropped after this).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// Wake-up interval of a blocked receive, to check [`MSG_DEADLINE`].
const RECV_POLL: Duration = Duration::from_secs(1);

/// The device side of the server: what vfio-user commands do to the device.
/// Errors become error replies; their errno is the OS error code when there
/// is one, else derived from the error kind (`InvalidInput` → `EINVAL`, …).
pub trait DeviceBackend {
    /// REGION_READ: fill `data` from `offset` of `region` (bounds already
    /// checked against the region table).
    fn region_read(&mut self, region: u32, offset: u64, data: &mut [u8]) -> Result<(), io::Error>;
    /// REGION_WRITE: write `data` at `offset` of `region`.
    fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> Result<(), io::Error>;
    /// DMA_MAP: `size` bytes of `fd` at file `offset` become guest memory at
    /// `address` (no fd: memory the device cannot reach).
    fn dma_map(
        &mut self,
        flags: DmaMapFlags,
        offset: u64,
        address: u64,
        size: u64,
        fd: Option<File>,
    ) -> Result<(), io::Error>;
    /// DMA_UNMAP of `address..address+size` (the whole address space for
    /// [`DmaUnmapFlags::ALL`]).
    fn dma_unmap(&mut self, flags: DmaUnmapFlags, address: u64, size: u64)
        -> Result<(), io::Error>;
    /// DEVICE_RESET.
    fn reset(&mut self) -> Result<(), io::Error>;
    /// DEVICE_SET_IRQS with the eventfds that came with it (none, or one per
    /// vector of `start..start+count`).
    fn set_irqs(
        &mut self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), io::Error>;
}

/// What the server advertises: region and interrupt tables.
#[derive(Clone, Debug, Default)]
pub struct DeviceTables {
    /// Regions by index (`VFIO_PCI_*_REGION_INDEX`); absent BARs have size 0.
    pub regions: Vec<RegionInfo>,
    /// Interrupt types by index (`VFIO_PCI_*_IRQ_INDEX`).
    pub irqs: Vec<IrqInfo>,
    /// DEVICE_RESET is supported.
    pub resettable: bool,
}

/// Why a connection ended (other than the client closing it between
/// messages).
#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    /// `accept` failed.
    #[error("accepting a client failed: {0}")]
    Accept(#[source] io::Error),
    /// Receiving failed.
    #[error("receive failed: {0}")]
    Recv(#[source] io::Error),
    /// Sending a reply failed (or timed out after [`SEND_TIMEOUT`]).
    #[error("sending a reply failed: {0}")]
    Send(#[source] io::Error),
    /// The client closed the connection inside a message.
    #[error("client closed the connection after {got} of {want} bytes of a message")]
    Truncated {
        /// Bytes of the message received.
        got: usize,
        /// Bytes the message should have.
        want: usize,
    },
    /// The client did not finish a message within [`MSG_DEADLINE`].
    #[error("client stalled inside a message ({got} of {want} bytes after {MSG_DEADLINE:?})")]
    Stalled {
        /// Bytes of the message received.
        got: usize,
        /// Bytes the message should have.
        want: usize,
    },
    /// A header's message size is smaller than the header.
    #[error("message size {0} is smaller than the 16-byte header")]
    Undersized(u32),
    /// A header's message size is above [`MAX_MSG_SIZE`].
    #[error("message size {0} above the limit of {MAX_MSG_SIZE} bytes")]
    Oversized(u32),
    /// VERSION was malformed or proposed a version nicemu does not speak.
    #[error("version negotiation failed: {0}")]
    Version(#[source] WireError),
}

/// Why one command failed (answered with an error reply).
#[derive(Debug, thiserror::Error)]
enum CmdError {
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("{0}")]
    Backend(io::Error),
    #[error("unknown or unsupported command {0}")]
    UnknownCommand(u16),
    #[error("{0} is not supported")]
    NotSupported(&'static str),
    #[error("VERSION must be negotiated first")]
    NotNegotiated,
    #[error("VERSION was already negotiated")]
    Renegotiate,
    #[error("message type {0:#x} is not a command")]
    NotCommand(u32),
    #[error("region {0} does not exist")]
    NoRegion(u32),
    #[error("{count} bytes at offset {offset:#x} are outside region {region} ({size} bytes)")]
    OutOfRegion {
        region: u32,
        offset: u64,
        count: u32,
        size: u64,
    },
    #[error("interrupt index {0} does not exist")]
    NoIrq(u32),
    #[error("SET_IRQS flags {0:#x} name no single data type and action")]
    IrqFlags(u32),
    #[error("{got} file descriptors sent with a command that takes at most {max}")]
    UnexpectedFds { got: usize, max: usize },
    #[error("more than {MAX_MSG_FDS} file descriptors sent in one message")]
    TooManyFds,
    #[error("SET_IRQS for {count} vectors came with {fds} eventfds (0 or {count} expected)")]
    FdCount { count: u32, fds: usize },
}

impl CmdError {
    fn errno(&self) -> i32 {
        match self {
            CmdError::Wire(e) => e.errno(),
            CmdError::Backend(e) => errno_of(e),
            CmdError::UnknownCommand(_) => libc::ENOSYS,
            CmdError::NotSupported(_) => libc::ENOTSUP,
            _ => libc::EINVAL,
        }
    }
}

/// The errno reported for a backend error.
fn errno_of(e: &io::Error) -> i32 {
    if let Some(n) = e.raw_os_error() {
        return n;
    }
    match e.kind() {
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => libc::EINVAL,
        io::ErrorKind::NotFound => libc::ENOENT,
        io::ErrorKind::AlreadyExists => libc::EEXIST,
        io::ErrorKind::Unsupported => libc::ENOTSUP,
        io::ErrorKind::OutOfMemory => libc::ENOMEM,
        io::ErrorKind::PermissionDenied => libc::EPERM,
        _ => libc::EIO,
    }
}

/// The capabilities nicemu answers VERSION with. No `migration`: nicemu
/// implements none of the migration commands, so offering it would invite a
/// client to use them.
fn server_capabilities() -> VersionData {
    VersionData {
        capabilities: Capabilities {
            max_msg_fds: Some(MAX_MSG_FDS as u32),
            max_data_xfer_size: Some(MAX_DATA_XFER),
            pgsizes: Some(wire::PAGE_SIZE),
            max_dma_maps: Some(super::memory::MAX_DMA_MAPS as u32),
            ..Default::default()
        },
    }
}

/// A listening vfio-user socket of one PCI function.
#[derive(Debug)]
pub struct Server {
    id: String,
    listener: UnixListener,
    tables: DeviceTables,
}

impl Server {
    /// Creates the socket at `path`; `id` prefixes log lines.
    pub fn bind(id: &str, path: &Path, tables: DeviceTables) -> Result<Server, Error> {
        let listener = crate::socket::listen(path)?;
        Ok(Server {
            id: id.to_string(),
            listener,
            tables,
        })
    }

    /// Accepts one client and serves it until it goes away. `Ok` when the
    /// client closed the connection between messages.
    pub fn serve_one(&self, backend: &mut dyn DeviceBackend) -> Result<(), ConnError> {
        let (stream, _) = self.listener.accept().map_err(ConnError::Accept)?;
        log::info!("{}: vfio-user client connected", self.id);
        serve_stream(&self.id, stream, &self.tables, backend)
    }
}

/// Serves one connected client on `stream` until it goes away, as
/// [`Server::serve_one`] does after accepting (the fuzz target drives the
/// server through a socket pair with this).
pub fn serve_stream(
    id: &str,
    stream: UnixStream,
    tables: &DeviceTables,
    backend: &mut dyn DeviceBackend,
) -> Result<(), ConnError> {
    Conn::new(id, stream, tables)?.run(backend)
}

/// File descriptors received with one message.
struct Fds {
    fds: [Option<OwnedFd>; MAX_MSG_FDS],
    len: usize,
    /// More arrived than fit (the surplus was closed).
    overflow: bool,
}

impl Fds {
    fn new() -> Self {
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

    /// Closes every descriptor.
    fn clear(&mut self) {
        self.fds.iter_mut().for_each(|f| *f = None);
        self.len = 0;
        self.overflow = false;
    }

    fn take_files(&mut self) -> Vec<File> {
        let v = self.fds[..self.len]
            .iter_mut()
            .filter_map(Option::take)
            .map(File::from)
            .collect();
        self.len = 0;
        v
    }

    /// Moves the descriptors of `other` here (surplus closed, `overflow`).
    fn take_from(&mut self, other: &mut Fds) {
        self.overflow |= other.overflow;
        for f in other.fds.iter_mut().filter_map(Option::take) {
            self.push(f);
        }
        other.clear();
    }

    fn take_one(&mut self) -> Option<File> {
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
// QEMU reads all of config space (4 KiB) in one REGION_READ.
const _: () = assert!(MAX_DATA_XFER >= 4096);

/// Control-message buffer, aligned as `struct cmsghdr` requires.
#[repr(C, align(8))]
struct CmsgBuf([u8; CMSG_SPACE_FDS]);

/// `recvmsg` into `buf`, collecting SCM_RIGHTS descriptors into `fds`
/// (close-on-exec). Descriptors beyond [`MAX_MSG_FDS`] never reach the process
/// (the kernel truncates the control data and `fds.overflow` is set).
fn recv_with_fds(sock: &UnixStream, buf: &mut [u8], fds: &mut Fds) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cmsg = CmsgBuf([0; CMSG_SPACE_FDS]);
    // SAFETY: msghdr is plain data for which all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cmsg.0.as_mut_ptr().cast();
    msg.msg_controllen = CMSG_SPACE_FDS as _;
    // SAFETY: `msg` points at `iov`, which describes `buf` (mutably borrowed,
    // `buf.len()` bytes), and at `cmsg` (`msg_controllen` bytes); both outlive
    // the call. The kernel writes only within those lengths.
    let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR returns null or a
    // header inside `cmsg` within `msg_controllen`.
    let mut c = unsafe { libc::CMSG_FIRSTHDR(&msg) };
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
            let data = unsafe { libc::CMSG_DATA(c) }.cast::<RawFd>();
            for i in 0..count {
                // SAFETY: the kernel wrote `count` descriptors at `data`,
                // inside `cmsg`; read_unaligned needs no alignment.
                let fd = unsafe { data.add(i).read_unaligned() };
                // SAFETY: SCM_RIGHTS installed `fd` in this process for us;
                // nothing else owns it.
                fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
        // SAFETY: `msg` and `c` are valid as above.
        c = unsafe { libc::CMSG_NXTHDR(&msg, c) };
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        fds.overflow = true;
    }
    Ok(n as usize)
}

/// `max_data_xfer_size` of a peer that does not state one (§"VFIO_USER_VERSION").
const DEFAULT_MAX_XFER: u32 = 1 << 20;

/// Protocol state of a connection.
struct Session {
    /// Device id, for log lines.
    id: String,
    negotiated: bool,
    /// The client's `max_data_xfer_size` (bounds REGION_READ replies).
    client_max_xfer: u32,
}

/// One client connection.
///
/// Receiving reads ahead: one `recvmsg` takes whatever the socket holds (up to
/// the free part of `rx`), and every complete message in it is served before
/// the next call, so a burst of posted writes costs one system call. File
/// descriptors belong to the message holding the last byte a `recvmsg`
/// returned: Linux attaches them to the first byte of the sender's `sendmsg`
/// and ends a read right after the data that carried them (QEMU sends each
/// message with one `sendmsg`).
struct Conn<'a> {
    id: &'a str,
    stream: UnixStream,
    tables: &'a DeviceTables,
    /// Received bytes; `rx[head..tail]` is not served yet and starts at a
    /// message boundary. Large enough for the largest message.
    rx: Vec<u8>,
    head: usize,
    tail: usize,
    /// When the first byte of the message at `head` arrived (None when
    /// `head == tail`).
    msg_start: Option<Instant>,
    /// Descriptors of the message at `head`.
    fds: Fds,
    /// Descriptors of the last `recvmsg`, before they are attributed.
    new_fds: Fds,
    /// Reply being built (header, then payload).
    tx: Vec<u8>,
    session: Session,
}

impl<'a> Conn<'a> {
    fn new(id: &'a str, stream: UnixStream, tables: &'a DeviceTables) -> Result<Self, ConnError> {
        stream
            .set_read_timeout(Some(RECV_POLL))
            .map_err(ConnError::Recv)?;
        stream
            .set_write_timeout(Some(SEND_TIMEOUT))
            .map_err(ConnError::Send)?;
        Ok(Conn {
            id,
            stream,
            tables,
            rx: vec![0; MAX_MSG_SIZE],
            head: 0,
            tail: 0,
            msg_start: None,
            fds: Fds::new(),
            new_fds: Fds::new(),
            tx: Vec::with_capacity(MAX_MSG_SIZE),
            session: Session {
                id: id.to_string(),
                negotiated: false,
                client_max_xfer: 0,
            },
        })
    }

    fn run(mut self, backend: &mut dyn DeviceBackend) -> Result<(), ConnError> {
        loop {
            // The unserved rest is part of one message, smaller than `rx`
            // (complete messages were served, larger ones refused), so
            // there is always room to receive into.
            if self.head > 0 {
                self.rx.copy_within(self.head..self.tail, 0);
                self.tail -= self.head;
                self.head = 0;
            }
            let n = match recv_with_fds(&self.stream, &mut self.rx[self.tail..], &mut self.new_fds)
            {
                Ok(0) if self.tail == 0 => return Ok(()),
                Ok(0) => return Err(self.truncated()),
                Ok(n) => n,
                Err(e) => {
                    self.recv_wait(e)?;
                    continue;
                }
            };
            let last = self.tail + n - 1;
            self.tail += n;
            let started = *self.msg_start.get_or_insert_with(Instant::now);
            let mut new_fds_at = (self.new_fds.len > 0 || self.new_fds.overflow).then_some(last);
            let head_before = self.head;
            while let Some(end) = self.complete_message()? {
                if new_fds_at.is_some_and(|p| p < end) {
                    self.fds.take_from(&mut self.new_fds);
                    new_fds_at = None;
                }
                self.serve(end, backend)?;
                self.head = end;
            }
            if new_fds_at.is_some() {
                self.fds.take_from(&mut self.new_fds);
            }
            self.msg_start = if self.head == self.tail {
                None
            } else if self.head == head_before {
                Some(started)
            } else {
                Some(Instant::now())
            };
        }
    }

    /// The end of the message at `head` if all of it has arrived; refuses
    /// messages whose size field breaks framing.
    fn complete_message(&mut self) -> Result<Option<usize>, ConnError> {
        if self.tail - self.head < HEADER_SIZE {
            return Ok(None);
        }
        let mut b = [0u8; HEADER_SIZE];
        b.copy_from_slice(&self.rx[self.head..self.head + HEADER_SIZE]);
        let hdr = Header::parse(&b);
        let size = hdr.message_size as usize;
        if size < HEADER_SIZE {
            return Err(ConnError::Undersized(hdr.message_size));
        }
        if size > MAX_MSG_SIZE {
            // Best effort: the connection is dropped either way.
            let _ = self.send_error(&hdr, libc::E2BIG);
            return Err(ConnError::Oversized(hdr.message_size));
        }
        Ok((self.tail - self.head >= size).then_some(self.head + size))
    }

    /// Serves the complete message `rx[head..end]` with the descriptors in
    /// `fds`, and replies.
    fn serve(&mut self, end: usize, backend: &mut dyn DeviceBackend) -> Result<(), ConnError> {
        let mut b = [0u8; HEADER_SIZE];
        b.copy_from_slice(&self.rx[self.head..self.head + HEADER_SIZE]);
        let hdr = Header::parse(&b);
        self.tx.clear();
        self.tx.extend_from_slice(&[0; HEADER_SIZE]);
        let r = handle(
            &hdr,
            &self.rx[self.head + HEADER_SIZE..end],
            &mut self.tx,
            &mut self.fds,
            self.tables,
            &mut self.session,
            backend,
        );
        self.fds.clear();
        match r {
            Ok(()) if hdr.no_reply() => Ok(()),
            Ok(()) => {
                let reply = hdr.reply(self.tx.len() as u32).encode();
                self.tx[..HEADER_SIZE].copy_from_slice(&reply);
                (&self.stream).write_all(&self.tx).map_err(ConnError::Send)
            }
            Err(CmdError::Wire(e))
                if Command::from_u16(hdr.command) == Some(Command::Version)
                    && !self.session.negotiated =>
            {
                if !hdr.no_reply() {
                    let _ = self.send_error(&hdr, e.errno());
                }
                Err(ConnError::Version(e))
            }
            Err(e) => {
                log::warn!(
                    "{}: command {} (message {}) failed: {e}",
                    self.id,
                    hdr.command,
                    hdr.message_id
                );
                if hdr.no_reply() {
                    Ok(())
                } else {
                    self.send_error(&hdr, e.errno())
                }
            }
        }
    }

    fn send_error(&self, hdr: &Header, errno: i32) -> Result<(), ConnError> {
        (&self.stream)
            .write_all(&hdr.error_reply(errno).encode())
            .map_err(ConnError::Send)
    }

    /// Bytes of the partial message at `head`, and the size it announces
    /// (the header's size while the header itself is incomplete).
    fn partial(&self) -> (usize, usize) {
        let got = self.tail - self.head;
        let want = match self.rx.get(self.head + 4..self.head + 8) {
            Some(s) if got >= HEADER_SIZE => u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize,
            _ => HEADER_SIZE,
        };
        (got, want)
    }

    fn truncated(&self) -> ConnError {
        let (got, want) = self.partial();
        ConnError::Truncated { got, want }
    }

    /// Handles a receive error: a timeout between messages or within the
    /// deadline is waited out, anything else ends the connection.
    fn recv_wait(&self, e: io::Error) -> Result<(), ConnError> {
        match e.kind() {
            io::ErrorKind::Interrupted => Ok(()),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => match self.msg_start {
                Some(t) if t.elapsed() >= MSG_DEADLINE => {
                    let (got, want) = self.partial();
                    Err(ConnError::Stalled { got, want })
                }
                _ => Ok(()),
            },
            _ => Err(ConnError::Recv(e)),
        }
    }
}

/// Most descriptors each command may carry.
fn max_fds(cmd: Option<Command>) -> usize {
    match cmd {
        Some(Command::DmaMap) => 1,
        Some(Command::DeviceSetIrqs) => MAX_MSG_FDS,
        _ => 0,
    }
}

/// Executes one command; on success the reply payload has been appended to
/// `tx` (which starts with room for the header).
fn handle(
    hdr: &Header,
    payload: &[u8],
    tx: &mut Vec<u8>,
    fds: &mut Fds,
    tables: &DeviceTables,
    session: &mut Session,
    backend: &mut dyn DeviceBackend,
) -> Result<(), CmdError> {
    if hdr.msg_type() != wire::flags::COMMAND {
        return Err(CmdError::NotCommand(hdr.msg_type()));
    }
    let cmd = Command::from_u16(hdr.command);
    if fds.overflow {
        return Err(CmdError::TooManyFds);
    }
    if fds.len > max_fds(cmd) {
        return Err(CmdError::UnexpectedFds {
            got: fds.len,
            max: max_fds(cmd),
        });
    }
    let Some(cmd) = cmd else {
        return Err(CmdError::UnknownCommand(hdr.command));
    };
    match cmd {
        Command::Version => version(payload, tx, session),
        _ if !session.negotiated => Err(CmdError::NotNegotiated),
        Command::DmaMap => {
            let m = DmaMap::parse(payload)?;
            backend
                .dma_map(m.flags, m.offset, m.address, m.size, fds.take_one())
                .map_err(CmdError::Backend)
        }
        Command::DmaUnmap => {
            let u = DmaUnmap::parse(payload)?;
            let (address, size) = if u.flags.contains(DmaUnmapFlags::ALL) {
                (0, u64::MAX)
            } else {
                (u.address, u.size)
            };
            backend
                .dma_unmap(u.flags, address, size)
                .map_err(CmdError::Backend)?;
            u.encode(tx);
            Ok(())
        }
        Command::DeviceGetInfo => {
            // The request's fields are all zero but argsz, which a fixed
            // 16-byte reply does not need.
            if payload.len() < DeviceInfo::SIZE {
                return Err(WireError::Short {
                    what: "DEVICE_GET_INFO",
                    need: DeviceInfo::SIZE,
                    len: payload.len(),
                }
                .into());
            }
            DeviceInfo {
                flags: VFIO_DEVICE_FLAGS_PCI
                    | if tables.resettable {
                        VFIO_DEVICE_FLAGS_RESET
                    } else {
                        0
                    },
                num_regions: tables.regions.len() as u32,
                num_irqs: tables.irqs.len() as u32,
            }
            .encode(tx);
            Ok(())
        }
        Command::DeviceGetRegionInfo => {
            let r = RegionInfoRequest::parse(payload)?;
            let info = tables
                .regions
                .get(r.index as usize)
                .ok_or(CmdError::NoRegion(r.index))?;
            info.encode(tx);
            Ok(())
        }
        Command::DeviceGetRegionIoFds => {
            // Optional feature (§"VFIO_USER_DEVICE_GET_REGION_IO_FDS"): every
            // access goes through REGION_READ/WRITE.
            let r = RegionIoFdsRequest::parse(payload)?;
            if r.index as usize >= tables.regions.len() {
                return Err(CmdError::NoRegion(r.index));
            }
            Err(CmdError::NotSupported("DEVICE_GET_REGION_IO_FDS"))
        }
        Command::DeviceGetIrqInfo => {
            let r = IrqInfoRequest::parse(payload)?;
            let info = tables
                .irqs
                .get(r.index as usize)
                .ok_or(CmdError::NoIrq(r.index))?;
            info.encode(tx);
            Ok(())
        }
        Command::DeviceSetIrqs => {
            let s = SetIrqs::parse(payload)?;
            if s.index as usize >= tables.irqs.len() {
                return Err(CmdError::NoIrq(s.index));
            }
            let data = s.flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
            let action = s.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
            if data.count_ones() != 1
                || action.count_ones() != 1
                || s.flags & !(VFIO_IRQ_SET_DATA_TYPE_MASK | VFIO_IRQ_SET_ACTION_TYPE_MASK) != 0
            {
                return Err(CmdError::IrqFlags(s.flags));
            }
            match data {
                VFIO_IRQ_SET_DATA_BOOL => {
                    return Err(CmdError::NotSupported("VFIO_IRQ_SET_DATA_BOOL"))
                }
                // QEMU sends one eventfd per vector, or none to de-assign.
                VFIO_IRQ_SET_DATA_EVENTFD if fds.len != 0 && fds.len != s.count as usize => {
                    return Err(CmdError::FdCount {
                        count: s.count,
                        fds: fds.len,
                    })
                }
                VFIO_IRQ_SET_DATA_NONE if fds.len != 0 => {
                    return Err(CmdError::UnexpectedFds {
                        got: fds.len,
                        max: 0,
                    })
                }
                _ => {}
            }
            backend
                .set_irqs(s.index, s.flags, s.start, s.count, fds.take_files())
                .map_err(CmdError::Backend)
        }
        Command::RegionRead => {
            let max = session.client_max_xfer.min(MAX_DATA_XFER);
            let a = RegionAccess::parse_read(payload, max)?;
            check_region(tables, &a)?;
            a.encode(tx);
            let at = tx.len();
            tx.resize(at + a.count as usize, 0);
            if a.count > 0 {
                backend
                    .region_read(a.region, a.offset, &mut tx[at..])
                    .map_err(CmdError::Backend)?;
            }
            Ok(())
        }
        Command::RegionWrite => {
            let (a, data) = RegionAccess::parse_write(payload, MAX_DATA_XFER)?;
            check_region(tables, &a)?;
            if a.count > 0 {
                backend
                    .region_write(a.region, a.offset, data)
                    .map_err(CmdError::Backend)?;
            }
            a.encode(tx);
            Ok(())
        }
        Command::DeviceReset => {
            if !tables.resettable {
                return Err(CmdError::NotSupported("DEVICE_RESET"));
            }
            backend.reset().map_err(CmdError::Backend)
        }
    }
}

/// VERSION (§"VFIO_USER_VERSION"): the reply keeps the major, lowers the
/// minor to what nicemu speaks and lists nicemu's capabilities.
fn version(payload: &[u8], tx: &mut Vec<u8>, session: &mut Session) -> Result<(), CmdError> {
    if session.negotiated {
        return Err(CmdError::Renegotiate);
    }
    let v = Version::parse(payload)?;
    log::info!(
        "{}: client proposes vfio-user {}.{} with {:?}",
        session.id,
        v.major,
        v.minor,
        v.data.capabilities
    );
    session.client_max_xfer = v
        .data
        .capabilities
        .max_data_xfer_size
        .unwrap_or(DEFAULT_MAX_XFER)
        .min(MAX_DATA_XFER);
    Version {
        major: wire::MAJOR,
        // MINOR is 0, never above the client's proposal.
        minor: wire::MINOR,
        data: server_capabilities(),
    }
    .encode(tx);
    session.negotiated = true;
    Ok(())
}

/// The access lies inside an existing region.
fn check_region(tables: &DeviceTables, a: &RegionAccess) -> Result<(), CmdError> {
    let size = match tables.regions.get(a.region as usize) {
        Some(r) if r.size > 0 => r.size,
        _ => return Err(CmdError::NoRegion(a.region)),
    };
    match a.offset.checked_add(u64::from(a.count)) {
        Some(end) if end <= size => Ok(()),
        _ => Err(CmdError::OutOfRegion {
            region: a.region,
            offset: a.offset,
            count: a.count,
            size,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use vmm_sys_util::eventfd::EventFd;
    use vmm_sys_util::sock_ctrl_msg::ScmSocket;

    #[test]
    fn errnos_of_backend_errors() {
        assert_eq!(
            errno_of(&io::Error::new(io::ErrorKind::InvalidInput, "x")),
            libc::EINVAL
        );
        assert_eq!(
            errno_of(&io::Error::from_raw_os_error(libc::EEXIST)),
            libc::EEXIST
        );
        assert_eq!(errno_of(&io::Error::other("x")), libc::EIO);
        assert_eq!(CmdError::UnknownCommand(99).errno(), libc::ENOSYS);
        assert_eq!(CmdError::NotSupported("x").errno(), libc::ENOTSUP);
    }

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

    #[test]
    fn region_bounds() {
        let tables = DeviceTables {
            regions: vec![
                RegionInfo {
                    flags: 3,
                    index: 0,
                    size: 0x1000,
                },
                RegionInfo::default(),
            ],
            irqs: vec![],
            resettable: true,
        };
        let acc = |region, offset, count| RegionAccess {
            offset,
            region,
            count,
        };
        assert!(check_region(&tables, &acc(0, 0xffc, 4)).is_ok());
        assert!(check_region(&tables, &acc(0, 0xffd, 4)).is_err());
        assert!(check_region(&tables, &acc(0, u64::MAX, 4)).is_err());
        assert!(check_region(&tables, &acc(1, 0, 4)).is_err(), "absent BAR");
        assert!(check_region(&tables, &acc(9, 0, 4)).is_err());
    }

    /// Records what the server asks of the device; DMA_MAP fails with EEXIST.
    #[derive(Default)]
    struct Mock {
        writes: Vec<(u32, u64, Vec<u8>)>,
        resets: usize,
        /// (start, count, descriptors) of each SET_IRQS.
        irqs: Vec<(u32, u32, usize)>,
    }

    impl DeviceBackend for Mock {
        fn region_read(&mut self, _: u32, offset: u64, data: &mut [u8]) -> io::Result<()> {
            for (i, b) in data.iter_mut().enumerate() {
                *b = (offset as u8).wrapping_add(i as u8);
            }
            Ok(())
        }
        fn region_write(&mut self, region: u32, offset: u64, data: &[u8]) -> io::Result<()> {
            self.writes.push((region, offset, data.to_vec()));
            Ok(())
        }
        fn dma_map(
            &mut self,
            _: DmaMapFlags,
            _: u64,
            _: u64,
            _: u64,
            _: Option<File>,
        ) -> io::Result<()> {
            Err(io::Error::from_raw_os_error(libc::EEXIST))
        }
        fn dma_unmap(&mut self, _: DmaUnmapFlags, _: u64, _: u64) -> io::Result<()> {
            Ok(())
        }
        fn reset(&mut self) -> io::Result<()> {
            self.resets += 1;
            Ok(())
        }
        fn set_irqs(
            &mut self,
            _: u32,
            _: u32,
            start: u32,
            count: u32,
            fds: Vec<File>,
        ) -> io::Result<()> {
            self.irqs.push((start, count, fds.len()));
            Ok(())
        }
    }

    fn msg(id: u16, command: u16, flags: u32, payload: &[u8]) -> Vec<u8> {
        let mut m = Header {
            message_id: id,
            command,
            message_size: (HEADER_SIZE + payload.len()) as u32,
            flags,
            error: 0,
        }
        .encode()
        .to_vec();
        m.extend_from_slice(payload);
        m
    }

    fn reply(s: &mut UnixStream) -> (Header, Vec<u8>) {
        let mut h = [0u8; HEADER_SIZE];
        s.read_exact(&mut h).unwrap();
        let h = Header::parse(&h);
        let mut p = vec![0; h.message_size as usize - HEADER_SIZE];
        s.read_exact(&mut p).unwrap();
        (h, p)
    }

    #[test]
    fn serves_a_client_against_a_backend() {
        let dir = std::env::temp_dir().join(format!("nicemu-srv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let tables = DeviceTables {
            regions: vec![RegionInfo {
                flags: 3,
                index: 0,
                size: 0x100,
            }],
            irqs: vec![],
            resettable: true,
        };
        let server = Server::bind("t", &path, tables).unwrap();
        assert!(matches!(
            Server::bind("t", &path, DeviceTables::default()),
            Err(Error::SocketExists(_))
        ));
        let t = std::thread::spawn(move || {
            let mut m = Mock::default();
            let first = server.serve_one(&mut m);
            let second = server.serve_one(&mut m);
            (first, second, m)
        });
        let mut c = UnixStream::connect(&path).unwrap();
        c.write_all(&msg(1, 1, 0, b"\0\0\0\0")).unwrap();
        let (h, p) = reply(&mut c);
        assert_eq!((h.message_id, h.flags), (1, wire::flags::REPLY));
        assert!(p.ends_with(b"}\0"));
        // Posted writes, one of them failing, then a read that orders after them.
        let mut w = Vec::new();
        RegionAccess {
            offset: 8,
            region: 0,
            count: 2,
        }
        .encode(&mut w);
        w.extend_from_slice(&[0xaa, 0xbb]);
        c.write_all(&msg(2, 10, wire::flags::NO_REPLY, &w)).unwrap();
        let mut bad = Vec::new();
        RegionAccess {
            offset: 0xff,
            region: 0,
            count: 2,
        }
        .encode(&mut bad);
        bad.extend_from_slice(&[1, 2]);
        c.write_all(&msg(3, 10, wire::flags::NO_REPLY, &bad))
            .unwrap();
        let mut r = Vec::new();
        RegionAccess {
            offset: 0x10,
            region: 0,
            count: 3,
        }
        .encode(&mut r);
        c.write_all(&msg(4, 9, 0, &r)).unwrap();
        let (h, p) = reply(&mut c);
        assert_eq!(h.message_id, 4, "no reply to the posted writes");
        assert_eq!(&p[16..], &[0x10, 0x11, 0x12]);
        // The backend's errno reaches the client.
        let map = [0u8; 32];
        c.write_all(&msg(5, 2, 0, &map)).unwrap();
        let (h, p) = reply(&mut c);
        assert_eq!(
            (h.message_id, h.flags & wire::flags::ERROR, h.error),
            (5, wire::flags::ERROR, libc::EEXIST as u32)
        );
        assert!(p.is_empty());
        c.write_all(&msg(6, 13, 0, &[])).unwrap();
        assert_eq!(reply(&mut c).0.flags, wire::flags::REPLY);
        drop(c);
        // A second client leaves in the middle of a message.
        let mut c = UnixStream::connect(&path).unwrap();
        c.write_all(&msg(1, 1, 0, b"\0\0\0\0")[..18]).unwrap();
        drop(c);
        let (first, second, m) = t.join().unwrap();
        assert!(first.is_ok(), "{first:?}");
        assert!(
            matches!(second, Err(ConnError::Truncated { got: 18, want: 20 })),
            "{second:?}"
        );
        assert_eq!(m.writes, vec![(0, 8, vec![0xaa, 0xbb])]);
        assert_eq!(m.resets, 1);
        let _ = std::fs::remove_dir_all(dir);
    }

    fn write_msg(id: u16, offset: u64, v: u8) -> Vec<u8> {
        let mut w = Vec::new();
        RegionAccess {
            offset,
            region: 0,
            count: 1,
        }
        .encode(&mut w);
        w.push(v);
        msg(id, 10, wire::flags::NO_REPLY, &w)
    }

    #[test]
    fn bursts_are_served_and_descriptors_reach_their_message() {
        let dir = std::env::temp_dir().join(format!("nicemu-burst-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.sock");
        let tables = DeviceTables {
            regions: vec![RegionInfo {
                flags: 3,
                index: 0,
                size: 0x100,
            }],
            irqs: vec![IrqInfo {
                index: 0,
                count: 64,
                flags: 1,
            }],
            resettable: true,
        };
        let server = Server::bind("t", &path, tables).unwrap();
        let t = std::thread::spawn(move || {
            let mut m = Mock::default();
            let r = server.serve_one(&mut m);
            (r, m)
        });
        let mut c = UnixStream::connect(&path).unwrap();
        c.write_all(&msg(1, 1, 0, b"\0\0\0\0")).unwrap();
        reply(&mut c);
        let evs: Vec<EventFd> = (0..3).map(|_| EventFd::new(0).unwrap()).collect();
        let raw: Vec<RawFd> = evs.iter().map(|e| e.as_raw_fd()).collect();
        let set = |start: u32, count: u32| {
            let mut p = Vec::new();
            for v in [20, (1 << 5) | (1 << 2), 0, start, count] {
                p.extend_from_slice(&u32::to_le_bytes(v));
            }
            msg(2, 8, wire::flags::NO_REPLY, &p)
        };
        // Posted writes around SET_IRQS messages with and without
        // descriptors, sent without waiting, so that one receive may hold
        // several messages (and the descriptors of the last one).
        let rounds = 40u32;
        for i in 0..rounds {
            c.write_all(&write_msg(3, 1, i as u8)).unwrap();
            c.send_with_fds(&[&set(i, 3)[..]], &raw).unwrap();
            c.write_all(&write_msg(4, 2, i as u8)).unwrap();
            c.write_all(&set(i, 2)).unwrap();
        }
        // A burst larger than the receive buffer: messages straddle its end.
        let burst: Vec<u8> = (0..3000u32)
            .flat_map(|i| write_msg(5, 3, i as u8))
            .collect();
        c.write_all(&burst).unwrap();
        // A header alone, then its payload.
        let mut r = Vec::new();
        RegionAccess {
            offset: 0x10,
            region: 0,
            count: 1,
        }
        .encode(&mut r);
        let m = msg(6, 9, 0, &r);
        c.write_all(&m[..HEADER_SIZE]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        c.write_all(&m[HEADER_SIZE..]).unwrap();
        let (h, p) = reply(&mut c);
        assert_eq!(
            (h.message_id, p.len()),
            (6, 17),
            "only the read is answered"
        );
        drop(c);
        let (r, m) = t.join().unwrap();
        assert!(r.is_ok(), "{r:?}");
        let want: Vec<(u32, u32, usize)> =
            (0..rounds).flat_map(|i| [(i, 3, 3), (i, 2, 0)]).collect();
        assert_eq!(m.irqs, want, "each SET_IRQS got its own descriptors");
        assert_eq!(m.writes.len(), 2 * rounds as usize + 3000);
        assert!(m
            .writes
            .iter()
            .skip(2 * rounds as usize)
            .enumerate()
            .all(|(i, w)| *w == (0, 3, vec![i as u8])));
        let _ = std::fs::remove_dir_all(dir);
    }
}
