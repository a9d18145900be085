// SPDX-License-Identifier: Apache-2.0
//! One client connection: framing, receiving (with descriptors) and replying.
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
//! arrive in a fixed array of [`MAX_MSG_FDS`](crate::limits::MAX_MSG_FDS).
//! Posted commands (header flag `NO_REPLY`, which QEMU sets on BAR writes)
//! get no reply, not even on error.

use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::codec::{Command, Header, HEADER_SIZE};
use crate::device::PciDevice;
use crate::dispatch::Dispatcher;
use crate::error::{CommandError, ConnError, RequestError};
use crate::fds::{recv_with_fds, recv_with_fds_flags, Fds};
use crate::limits::{MAX_MSG_SIZE, MSG_DEADLINE, SEND_TIMEOUT};

/// Wake-up interval of a blocked receive, to check [`MSG_DEADLINE`].
const RECV_POLL: Duration = Duration::from_secs(1);

/// One client connection.
///
/// Receiving reads ahead: one `recvmsg` takes whatever the socket holds (up to
/// the free part of `rx`), and every complete message in it is served before
/// the next call, so a burst of posted writes costs one system call. File
/// descriptors belong to the message holding the last byte a `recvmsg`
/// returned: Linux attaches them to the first byte of the sender's `sendmsg`
/// and ends a read right after the data that carried them (QEMU sends each
/// message with one `sendmsg`).
pub(crate) struct Conn<'a, D> {
    stream: UnixStream,
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
    /// Serves each message.
    dispatcher: Dispatcher<'a, D>,
    /// How long to poll for the next message before blocking (0: never).
    poll: Duration,
    /// The last receive brought data: poll before the next blocks.
    poll_next: bool,
}

impl<'a, D: PciDevice> Conn<'a, D> {
    /// A connection on `stream` served by `dispatcher`.
    pub(crate) fn new(
        stream: UnixStream,
        dispatcher: Dispatcher<'a, D>,
        poll: Duration,
    ) -> Result<Self, ConnError> {
        stream
            .set_read_timeout(Some(RECV_POLL))
            .map_err(ConnError::Recv)?;
        stream
            .set_write_timeout(Some(SEND_TIMEOUT))
            .map_err(ConnError::Send)?;
        Ok(Conn {
            stream,
            rx: vec![0; MAX_MSG_SIZE],
            head: 0,
            tail: 0,
            msg_start: None,
            fds: Fds::new(),
            new_fds: Fds::new(),
            tx: Vec::with_capacity(MAX_MSG_SIZE),
            dispatcher,
            poll,
            poll_next: false,
        })
    }

    /// Serves the client until it goes away: `Ok` when it closed the
    /// connection between messages.
    pub(crate) fn run(mut self) -> Result<(), ConnError> {
        loop {
            // The unserved rest is part of one message, smaller than `rx`
            // (complete messages were served, larger ones refused), so
            // there is always room to receive into.
            if self.head > 0 {
                self.rx.copy_within(self.head..self.tail, 0);
                self.tail -= self.head;
                self.head = 0;
            }
            let n = match self.recv() {
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
                self.serve(end)?;
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

    /// Receives into `rx[tail..]`. After a receive that brought data (now
    /// served), first polls (non-blocking, spinning) for up to `poll`, then
    /// blocks.
    fn recv(&mut self) -> io::Result<usize> {
        let buf = &mut self.rx[self.tail..];
        if std::mem::take(&mut self.poll_next) {
            let from = Instant::now();
            while from.elapsed() < self.poll {
                match recv_with_fds_flags(&self.stream, buf, &mut self.new_fds, libc::MSG_DONTWAIT)
                {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    r => return self.polled(r),
                }
            }
        }
        let r = recv_with_fds(&self.stream, buf, &mut self.new_fds);
        self.polled(r)
    }

    /// Polls before the next receive when `r` brought data.
    fn polled(&mut self, r: io::Result<usize>) -> io::Result<usize> {
        self.poll_next = !self.poll.is_zero() && matches!(r, Ok(n) if n > 0);
        r
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
    fn serve(&mut self, end: usize) -> Result<(), ConnError> {
        let mut b = [0u8; HEADER_SIZE];
        b.copy_from_slice(&self.rx[self.head..self.head + HEADER_SIZE]);
        let hdr = Header::parse(&b);
        self.tx.clear();
        self.tx.extend_from_slice(&[0; HEADER_SIZE]);
        let r = self.dispatcher.handle(
            &hdr,
            &self.rx[self.head + HEADER_SIZE..end],
            &mut self.fds,
            &mut self.tx,
        );
        self.fds.clear();
        match r {
            Ok(()) if hdr.no_reply() => Ok(()),
            Ok(()) => {
                let reply = hdr.reply(self.tx.len() as u32).encode();
                self.tx[..HEADER_SIZE].copy_from_slice(&reply);
                (&self.stream).write_all(&self.tx).map_err(ConnError::Send)
            }
            Err(CommandError::Request(RequestError::Codec(e)))
                if Command::from_u16(hdr.command) == Some(Command::Version)
                    && !self.dispatcher.negotiated() =>
            {
                if !hdr.no_reply() {
                    let _ = self.send_error(&hdr, e.errno());
                }
                Err(ConnError::Version(e))
            }
            Err(e) => {
                log::warn!(
                    "{}: command {} (message {}) failed: {e}",
                    self.dispatcher.id(),
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
