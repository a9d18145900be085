// SPDX-License-Identifier: Apache-2.0
//! Why a command failed (answered with an error reply carrying an errno) and
//! why a connection ended. Every error is typed down to its errno: nothing
//! goes through `std::io::Error` to pick one.

use std::io;

use crate::codec::CodecError;
use crate::dma::DmaError;
use crate::limits::{MAX_MSG_FDS, MAX_MSG_SIZE, MSG_DEADLINE};

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
    /// Sending a reply failed (or timed out after
    /// [`SEND_TIMEOUT`](crate::limits::SEND_TIMEOUT)).
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
    /// VERSION was malformed or proposed a version the server does not
    /// speak.
    #[error("version negotiation failed: {0}")]
    Version(#[source] CodecError),
}

/// Why the device refused a SET_IRQS request.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IrqError {
    /// Index not INTx/MSI/MSI-X.
    #[error("interrupt index {0} not supported")]
    BadIndex(u32),
    /// start + count beyond the vectors of the index.
    #[error("vectors {start}..{end} beyond the {max} of index {index}")]
    OutOfRange {
        /// Index.
        index: u32,
        /// First vector.
        start: u32,
        /// One past the last.
        end: u64,
        /// Vectors available.
        max: u32,
    },
    /// More fds than vectors.
    #[error("{fds} eventfds for {count} vectors")]
    TooManyFds {
        /// Fds sent.
        fds: usize,
        /// Vectors addressed.
        count: u32,
    },
    /// An fd whose writes could block whatever its flags (a regular file,
    /// a device), or that cannot be made non-blocking.
    #[error("interrupt fd is not an eventfd, pipe or socket ({0})")]
    NotSignallable(String),
}

impl IrqError {
    /// The errno of the error reply (kernel VFIO answers malformed
    /// `VFIO_DEVICE_SET_IRQS` with the same).
    pub fn errno(&self) -> i32 {
        libc::EINVAL
    }
}

/// A message that is not a well-formed command: what the message alone
/// shows, before any device or session state is looked at.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// A payload too short or with a bad field.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A reply, or another message type, sent to the server.
    #[error("message type {0:#x} is not a command")]
    NotCommand(u32),
    /// A command number the server does not serve.
    #[error("unknown or unsupported command {0}")]
    UnknownCommand(u16),
    /// More descriptors than [`MAX_MSG_FDS`] (the surplus never reached the
    /// process; the rest were closed).
    #[error("more than {MAX_MSG_FDS} file descriptors sent in one message")]
    TooManyFds,
    /// Descriptors a command does not take.
    #[error("{got} file descriptors sent with a command that takes at most {max}")]
    UnexpectedFds {
        /// Descriptors sent.
        got: usize,
        /// Descriptors the command takes.
        max: usize,
    },
    /// SET_IRQS flags that are not one data type and one action.
    #[error("SET_IRQS flags {0:#x} name no single data type and action")]
    IrqFlags(u32),
    /// SET_IRQS with eventfds for some but not all of its vectors.
    #[error("SET_IRQS for {count} vectors came with {fds} eventfds (0 or {count} expected)")]
    FdCount {
        /// Vectors addressed.
        count: u32,
        /// Eventfds sent.
        fds: usize,
    },
}

impl RequestError {
    /// The errno of the error reply.
    pub fn errno(&self) -> i32 {
        match self {
            RequestError::Codec(e) => e.errno(),
            RequestError::UnknownCommand(_) => libc::ENOSYS,
            _ => libc::EINVAL,
        }
    }
}

/// Why one command failed; answered with an error reply carrying
/// [`CommandError::errno`], and the connection goes on.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The message is not a well-formed command.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// A command before VERSION.
    #[error("VERSION must be negotiated first")]
    NotNegotiated,
    /// A second VERSION.
    #[error("VERSION was already negotiated")]
    Renegotiate,
    /// A region the device does not have.
    #[error("region {0} does not exist")]
    NoRegion(u32),
    /// An access reaching outside its region.
    #[error("{count} bytes at offset {offset:#x} are outside region {region} ({size} bytes)")]
    OutOfRegion {
        /// Region index.
        region: u32,
        /// Offset asked for.
        offset: u64,
        /// Bytes asked for.
        count: u32,
        /// Size of the region.
        size: u64,
    },
    /// An interrupt type the device does not have.
    #[error("interrupt index {0} does not exist")]
    NoIrq(u32),
    /// An optional feature the server does not offer.
    #[error("{0} is not supported")]
    NotSupported(&'static str),
    /// DMA_MAP or DMA_UNMAP refused.
    #[error(transparent)]
    Dma(#[from] DmaError),
    /// SET_IRQS refused.
    #[error(transparent)]
    Irq(#[from] IrqError),
}

impl CommandError {
    /// The errno of the error reply.
    pub fn errno(&self) -> i32 {
        match self {
            CommandError::Request(e) => e.errno(),
            CommandError::NotSupported(_) => libc::ENOTSUP,
            CommandError::Dma(e) => e.errno(),
            CommandError::Irq(e) => e.errno(),
            CommandError::NotNegotiated
            | CommandError::Renegotiate
            | CommandError::NoRegion(_)
            | CommandError::OutOfRegion { .. }
            | CommandError::NoIrq(_) => libc::EINVAL,
        }
    }
}

impl From<CodecError> for CommandError {
    fn from(e: CodecError) -> Self {
        CommandError::Request(RequestError::Codec(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_of_typed_errors() {
        let codec = CodecError::TooLarge { count: 9, max: 8 };
        assert_eq!(CommandError::from(codec).errno(), libc::E2BIG);
        assert_eq!(
            CommandError::from(RequestError::UnknownCommand(99)).errno(),
            libc::ENOSYS
        );
        assert_eq!(CommandError::NotSupported("x").errno(), libc::ENOTSUP);
        assert_eq!(
            CommandError::from(DmaError::Overlap { addr: 0, size: 1 }).errno(),
            libc::EEXIST
        );
        assert_eq!(
            CommandError::from(IrqError::BadIndex(7)).errno(),
            libc::EINVAL
        );
        assert_eq!(CommandError::NotNegotiated.errno(), libc::EINVAL);
    }
}
