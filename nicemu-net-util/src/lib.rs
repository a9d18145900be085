// SPDX-License-Identifier: Apache-2.0
//! Packet helpers shared by nicemu's emulated NICs (igb, ixgbe) and its
//! virtio-net ports: finding the IP and L4 headers of an Ethernet frame,
//! Internet checksums (RFC 1071) and their offloads, TCP and UDP segmentation and the
//! Toeplitz hash of receive side scaling.
//!
//! Nothing here knows a device: the NIC models translate their descriptors'
//! offload contexts and their registers (MRQC, RSSRK) into these types, and
//! virtio-net translates its `virtio_net_hdr`. Every function takes frames as
//! untrusted input: header offsets are checked against the frame and a
//! request that does not fit it is an [`OffloadError`], never a panic.
// The length rule is for non-test code (tests read best as one scenario).
#![cfg_attr(test, allow(clippy::too_many_lines))]
#![forbid(unsafe_code)]

pub mod coalesce;
pub mod csum;
pub mod esp;
pub mod frame;
pub mod rss;
pub mod tso;

pub use frame::{parse, Parsed, IPPROTO_TCP, IPPROTO_UDP};
pub use tso::Tso;

/// Why an offload could not be applied to a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OffloadError {
    /// Header lengths or offsets of the request exceed the frame (the bytes
    /// the request needs).
    #[error("offload headers ({0} bytes) exceed the frame")]
    Truncated(usize),
    /// Segmentation with an MSS below [`tso::MIN_TSO_MSS`], segments longer
    /// than the IP length field can describe, or headers that do not
    /// describe TCP or UDP.
    #[error("bad segmentation context")]
    BadTso,
}
