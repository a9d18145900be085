// SPDX-License-Identifier: Apache-2.0
//! Transmit side: reading a guest's transmit descriptor chain into one
//! contiguous buffer (virtio-net header + frame), with every guest mistake
//! mapped to a drop reason instead of a panic.

use std::ops::Deref;

use virtio_queue::DescriptorChain;
use vm_memory::{Bytes, GuestMemory};

/// Most descriptors one transmit chain may have (Linux uses at most
/// MAX_SKB_FRAGS + 2, far below this).
pub const MAX_TX_DESCS: usize = 128;

/// Most bytes one transmit chain may carry: a 64 KiB GSO frame, its
/// Ethernet/VLAN header and the virtio-net header, with slack.
pub const MAX_TX_BYTES: usize = 65_536 + 256;

/// Why a transmit chain was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxChainError {
    /// A device-writable descriptor in a driver-to-device chain.
    #[error("write-only descriptor in a transmit chain")]
    WriteOnly,
    /// More than [`MAX_TX_DESCS`] descriptors.
    #[error("transmit chain longer than {MAX_TX_DESCS} descriptors")]
    TooLong,
    /// More than [`MAX_TX_BYTES`] bytes.
    #[error("transmit chain larger than {MAX_TX_BYTES} bytes")]
    TooBig,
    /// A buffer outside guest memory.
    #[error("transmit buffer outside guest memory")]
    BadAddress,
    /// Shorter than the virtio-net header plus an Ethernet header.
    #[error("transmit chain shorter than header + 14 bytes")]
    Runt,
}

/// Reads the readable descriptors of `chain` into `buf` (cleared first;
/// reuses its capacity). Zero-length descriptors are skipped. On success,
/// `buf` holds at least `hdr_len + 14` bytes.
pub fn read_chain<M>(
    chain: DescriptorChain<M>,
    buf: &mut Vec<u8>,
    hdr_len: usize,
) -> Result<(), TxChainError>
where
    M: Deref,
    M::Target: GuestMemory,
{
    buf.clear();
    let mut n = 0usize;
    let mut chain = chain;
    while let Some(d) = chain.next() {
        n += 1;
        if n > MAX_TX_DESCS {
            return Err(TxChainError::TooLong);
        }
        if d.is_write_only() {
            return Err(TxChainError::WriteOnly);
        }
        let len = d.len() as usize;
        if len == 0 {
            continue;
        }
        let start = buf.len();
        if start + len > MAX_TX_BYTES {
            return Err(TxChainError::TooBig);
        }
        buf.resize(start + len, 0);
        chain
            .memory()
            .read_slice(&mut buf[start..], d.addr())
            .map_err(|_| TxChainError::BadAddress)?;
    }
    if buf.len() < hdr_len + 14 {
        return Err(TxChainError::Runt);
    }
    Ok(())
}
