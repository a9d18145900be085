// SPDX-License-Identifier: Apache-2.0
//! Receive side: writing a virtio-net header and a frame into the guest's
//! receive buffers, one descriptor chain or (with `VIRTIO_NET_F_MRG_RXBUF`)
//! as many as needed. Nothing is published to the used ring until the whole
//! frame fits, so a frame never arrives half written.

use std::ops::Deref;

use virtio_queue::{DescriptorChain, Queue, QueueOwnedT, QueueT};
use vm_memory::{Address, Bytes, GuestMemory};

/// Most descriptors one receive chain may have.
pub const MAX_RX_DESCS: usize = 128;

/// What happened to a frame offered to a receive queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxOutcome {
    /// Written; `buffers` chains were used.
    Delivered {
        /// Chains used (the header's `num_buffers`).
        buffers: u16,
    },
    /// Not enough buffers now; nothing was consumed. Try again after a kick.
    NoBuffers,
    /// Dropped: it does not fit a single buffer without mergeable buffers.
    TooBig,
    /// Dropped: a chain the guest offered is malformed (read-only or
    /// zero-capacity, too long, outside guest memory); the chains taken for
    /// this frame are returned used with length 0.
    BadChain,
}

/// Writes `src` (the concatenation of `hdr` and `frame` from byte `pos` on)
/// into the writable descriptors of `chain`; returns the bytes written.
fn fill_chain<M>(
    chain: DescriptorChain<M>,
    hdr: &[u8],
    frame: &[u8],
    mut pos: usize,
) -> Result<usize, ()>
where
    M: Deref,
    M::Target: GuestMemory,
{
    let total = hdr.len() + frame.len();
    let mut written = 0usize;
    let mut capacity = 0usize;
    let mut n = 0usize;
    let mut chain = chain;
    while let Some(d) = chain.next() {
        n += 1;
        if n > MAX_RX_DESCS || !d.is_write_only() {
            return Err(());
        }
        let mut len = d.len() as usize;
        capacity += len;
        let mut addr = d.addr();
        while len > 0 && pos < total {
            let src = if pos < hdr.len() {
                &hdr[pos..]
            } else {
                &frame[pos - hdr.len()..]
            };
            let k = src.len().min(len);
            chain
                .memory()
                .write_slice(&src[..k], addr)
                .map_err(|_| ())?;
            pos += k;
            written += k;
            len -= k;
            addr = addr.unchecked_add(k as u64);
        }
    }
    if capacity == 0 {
        return Err(());
    }
    Ok(written)
}

/// Offers `hdr` (10 or 12 bytes, `num_buffers` filled in here) and `frame` to
/// `queue`. `used` is scratch for (head, length) pairs; its capacity is reused.
pub fn write_frame<M>(
    queue: &mut Queue,
    mem: &M,
    hdr: &mut [u8],
    frame: &[u8],
    mergeable: bool,
    used: &mut Vec<(u16, u32)>,
) -> RxOutcome
where
    M: GuestMemory,
{
    used.clear();
    let total = hdr.len() + frame.len();
    let mut pos = 0usize;
    let mut first: Option<DescriptorChain<&M>> = None;
    while pos < total {
        let Some(chain) = queue.pop_descriptor_chain(mem) else {
            for _ in 0..used.len() {
                queue.go_to_previous_position();
            }
            return RxOutcome::NoBuffers;
        };
        let head = chain.head_index();
        if first.is_none() {
            first = Some(chain.clone());
        }
        match fill_chain(chain, hdr, frame, pos) {
            Ok(n) => {
                used.push((head, n as u32));
                pos += n;
                if pos < total && !mergeable {
                    queue.go_to_previous_position();
                    return RxOutcome::TooBig;
                }
            }
            Err(()) => {
                used.push((head, 0));
                return give_back(queue, mem, used);
            }
        }
    }
    let buffers = used.len() as u16;
    if hdr.len() >= 12 {
        hdr[10..12].copy_from_slice(&buffers.to_le_bytes());
        if let Some(c) = first {
            // Rewrite the header in the first chain with the final count.
            if fill_chain(c, hdr, &[], 0).is_err() {
                return give_back(queue, mem, used);
            }
        }
    }
    for &(head, len) in used.iter() {
        let _ = queue.add_used(mem, head, len);
    }
    RxOutcome::Delivered { buffers }
}

/// Returns every chain taken for a dropped frame as used with length 0.
fn give_back<M: GuestMemory>(queue: &mut Queue, mem: &M, used: &[(u16, u32)]) -> RxOutcome {
    let mut last = None;
    for &(head, _) in used {
        if last == Some(head) {
            continue;
        }
        last = Some(head);
        let _ = queue.add_used(mem, head, 0);
    }
    RxOutcome::BadChain
}
