// SPDX-License-Identifier: Apache-2.0
//! Transmit side: reading a guest's transmit descriptor chain into one
//! contiguous buffer (virtio-net header + frame), with every guest mistake
//! mapped to a drop reason instead of a panic; the transmit pass over a
//! ring ([`Transmitter::pass`]), which applies the offloads each header
//! asks for and hands the pass's frames to the switch as one batch; and the
//! network's table of ports that take GSO frames whole ([`GsoPeers`]).

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use nicemu_device_models::{Clock, FrameBatch, FrameSink, MonotonicClock};
use nicemu_net_util::tso::segment;
use nicemu_net_util::OffloadError;
use vhost_user_backend::VringT;
use virtio_queue::{DescriptorChain, QueueT};
use vm_memory::{Bytes, GuestAddressSpace, GuestMemory};

use super::counters::{add, inc, QueueCounters};
use super::offload::{self as voff, NetHdr};
use super::port::{lock, HasVring, QueuePort, Queues, Vring};
use crate::switch::Switch;

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

/// Largest number of MAC addresses remembered as GSO-capable per network.
const MAX_GSO_PEERS: usize = 4096;

/// MAC addresses behind virtio-net ports of one network and which GSO kinds
/// their drivers accept, so a transmitting port can pass a large segment on
/// whole instead of segmenting it.
#[derive(Debug, Default)]
pub struct GsoPeers {
    map: Mutex<HashMap<[u8; 6], Arc<AtomicU8>>>,
}

impl GsoPeers {
    /// The registry of the network `switch` serves.
    pub fn for_switch(switch: &Arc<Switch>) -> Arc<GsoPeers> {
        static ALL: OnceLock<Mutex<HashMap<usize, Arc<GsoPeers>>>> = OnceLock::new();
        let key = Arc::as_ptr(switch) as usize;
        lock(ALL.get_or_init(Default::default))
            .entry(key)
            .or_default()
            .clone()
    }

    fn learn(&self, mac: [u8; 6], flags: &Arc<AtomicU8>) {
        if mac[0] & 1 != 0 {
            return;
        }
        let mut m = lock(&self.map);
        match m.get(&mac) {
            Some(a) if Arc::ptr_eq(a, flags) => {}
            _ if m.len() >= MAX_GSO_PEERS && !m.contains_key(&mac) => {}
            _ => {
                m.insert(mac, flags.clone());
            }
        }
    }

    fn accepts(&self, mac: &[u8], bit: u8) -> bool {
        let Ok(mac) = <[u8; 6]>::try_from(mac) else {
            return false;
        };
        bit != 0
            && mac[0] & 1 == 0
            && lock(&self.map)
                .get(&mac)
                .is_some_and(|a| a.load(Ordering::Acquire) & bit != 0)
    }
}

/// Whether GSO frames may cross the switch whole (`NICEMU_VHOST_GSO_PASS=1`).
///
/// Off by default: measured here (TCG guest, two virtio-net ports in one
/// guest), passing 64 KiB segments whole gave 124 Mbit/s on TCP_STREAM
/// against 527 Mbit/s when the sender's port segments them, because the
/// receiving driver runs out of mergeable buffers mid-frame and the frame
/// waits for a refill. Until that is tuned, every port segments.
pub fn gso_pass_enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("NICEMU_VHOST_GSO_PASS").is_some_and(|v| v == "1"))
}

/// One transmit queue: its vring (once the driver has kicked the pair) and
/// the buffers each pass reuses.
pub struct TxQueue {
    vring: Option<Vring>,
    buf: Vec<u8>,
    seg: Vec<u8>,
    last_src: [u8; 6],
    /// The frames of the current transmit pass, handed to the switch
    /// together (so a receiving port sees what left together).
    batch: FrameBatch,
}

impl HasVring for TxQueue {
    fn vring_slot(&mut self) -> &mut Option<Vring> {
        &mut self.vring
    }
}

impl TxQueue {
    fn new() -> Self {
        TxQueue {
            vring: None,
            buf: Vec::with_capacity(MAX_TX_BYTES + voff::TRAILER_LEN),
            seg: Vec::with_capacity(MAX_TX_BYTES),
            last_src: [0; 6],
            batch: FrameBatch::default(),
        }
    }
}

/// A port's transmit side (what cloud-hypervisor's `TxVirtio` is to its
/// queue pair): its queues, where their frames go (`sink`, the switch), the
/// network's [`GsoPeers`] and what this port's driver accepts of them.
pub struct Transmitter {
    /// The queues, each behind its own lock.
    pub queues: Queues<TxQueue>,
    sink: Box<dyn FrameSink>,
    peers: Arc<GsoPeers>,
    /// GSO kinds this port's driver accepts now (`offload::accept`),
    /// learnt under the source MACs it sends from.
    accept: Arc<AtomicU8>,
    /// The token marking GSO trailers of this process.
    token: u64,
}

impl Transmitter {
    /// The transmit side of `pairs` queue pairs sending into `sink`.
    pub fn new(
        pairs: u16,
        sink: Box<dyn FrameSink>,
        peers: Arc<GsoPeers>,
        accept: Arc<AtomicU8>,
        token: u64,
    ) -> Self {
        Transmitter {
            queues: Queues::new(pairs, TxQueue::new),
            sink,
            peers,
            accept,
            token,
        }
    }

    /// Serves a transmit kick of pair `q`; with `--poll-us`, then polls the
    /// ring for chains the guest adds within the window (notifications off
    /// meanwhile when EVENT_IDX is negotiated, so the guest need not kick)
    /// and serves them, for at most the window in all. Each pass writes the
    /// used-ring signal it raised on this thread when it ends
    /// ([`QueuePort::serving`]), not after the window.
    pub fn serve_kick(&self, port: &impl QueuePort, q: usize, vring: &Vring) {
        port.serving(|| self.pass(port, q, vring));
        let window = crate::poll::window();
        if window.is_zero() {
            return;
        }
        let start = Instant::now();
        let mut quiet = true;
        if port.conn().event_idx {
            let _ = vring.get_mut().disable_notification();
            quiet = false;
        }
        while start.elapsed() < window {
            if waiting(port, vring) {
                port.serving(|| self.pass(port, q, vring));
                quiet = true;
                if port.conn().event_idx {
                    let _ = vring.get_mut().disable_notification();
                    quiet = false;
                }
            } else {
                std::hint::spin_loop();
            }
        }
        if !quiet {
            // Notifications back on, and what came meanwhile served.
            port.serving(|| self.pass(port, q, vring));
        }
    }

    /// Takes every chain of pair `q`'s transmit ring into the switch and
    /// signals the used ring.
    pub fn pass(&self, port: &impl QueuePort, q: usize, vring: &Vring) {
        let Some((mem, neg, event_idx)) = port.conn().ready() else {
            return;
        };
        let (Some(queue), Some(c)) = (self.queues.get(q), port.counters().get(q)) else {
            return;
        };
        let mut side = lock(queue);
        let side = &mut *side;
        let mut vr = vring.get_mut();
        loop {
            if event_idx {
                let _ = vr.disable_notification();
            }
            while let Some(chain) = vr.get_queue_mut().pop_descriptor_chain(&*mem) {
                let head = chain.head_index();
                let r = read_chain(chain, &mut side.buf, neg.hdr_len);
                let _ = vr.add_used(head, 0);
                inc(&c.tx_chains);
                match r {
                    Ok(()) => self.send(port, c, side, neg.hdr_len),
                    Err(e) => inc(match e {
                        TxChainError::WriteOnly => &c.tx_bad_write_only,
                        TxChainError::TooLong => &c.tx_bad_too_long,
                        TxChainError::TooBig => &c.tx_bad_too_big,
                        TxChainError::BadAddress => &c.tx_bad_address,
                        TxChainError::Runt => &c.tx_bad_runt,
                    }),
                }
            }
            if !event_idx || !vr.enable_notification().unwrap_or(false) {
                break;
            }
        }
        self.flush_tx(&mut side.batch);
        if vr.needs_notification().unwrap_or(true) {
            port.notify(2 * q + 1);
        }
    }

    /// Sends the frame in `side.buf` (after the virtio-net header) into the
    /// switch, applying the offloads its header asks for.
    fn send(&self, port: &impl QueuePort, c: &QueueCounters, side: &mut TxQueue, hdr_len: usize) {
        if !port.link_up() {
            inc(&port.port_counters().tx_link_drops);
            return;
        }
        let Some(hdr) = NetHdr::parse(&side.buf) else {
            inc(&c.tx_bad_runt);
            return;
        };
        let src: [u8; 6] = side.buf[hdr_len + 6..hdr_len + 12]
            .try_into()
            .unwrap_or([0; 6]);
        if src != side.last_src {
            side.last_src = src;
            self.peers.learn(src, &self.accept);
        }
        if voff::is_plain(&hdr) {
            if voff::needs_csum(&hdr)
                && voff::complete_csum(&hdr, &mut side.buf[hdr_len..]).is_err()
            {
                inc(&c.tx_bad_offload);
                return;
            }
            let f = &side.buf[hdr_len..];
            self.queue_tx(&mut side.batch, f);
            inc(&c.tx_frames);
            add(&c.tx_bytes, f.len() as u64);
            return;
        }
        let tso = match voff::tso_request(&hdr, &side.buf[hdr_len..]) {
            Ok(t) => t,
            Err(_) => {
                inc(&c.tx_bad_offload);
                return;
            }
        };
        let bit = voff::accept_bit(hdr.gso_kind());
        if self.peers.accepts(&side.buf[hdr_len..hdr_len + 6], bit) {
            let len = side.buf.len() - hdr_len;
            voff::push_trailer(&mut side.buf, &tso, self.token);
            self.queue_tx(&mut side.batch, &side.buf[hdr_len..]);
            inc(&c.tx_gso_passed);
            inc(&c.tx_frames);
            add(&c.tx_bytes, len as u64);
            return;
        }
        let batch = &mut side.batch;
        let r: Result<usize, OffloadError> =
            segment(&side.buf[hdr_len..], &tso.tso, &mut side.seg, |s| {
                self.queue_tx(batch, s);
                add(&c.tx_bytes, s.len() as u64);
            });
        match r {
            Ok(n) => {
                inc(&c.tx_gso_segmented);
                add(&c.tx_frames, n as u64);
            }
            Err(_) => inc(&c.tx_bad_offload),
        }
    }

    /// Adds a frame to the transmit pass's batch, handing the batch on first
    /// when it is full.
    fn queue_tx(&self, batch: &mut FrameBatch, frame: &[u8]) {
        if batch.is_full() {
            self.flush_tx(batch);
        }
        batch.sent_ns(|| MonotonicClock.now_ns());
        batch.push_copy(frame);
    }

    /// Hands the batch's frames to the switch, in order.
    fn flush_tx(&self, batch: &mut FrameBatch) {
        if !batch.is_empty() {
            self.sink.transmit_batch(batch);
            batch.clear();
        }
    }
}

/// Whether the guest has made transmit chains available on `vring`.
fn waiting(port: &impl QueuePort, vring: &Vring) -> bool {
    let Some(mem) = port.conn().mem.as_ref().map(GuestAddressSpace::memory) else {
        return false;
    };
    let vr = vring.get_ref();
    let queue = vr.get_queue();
    queue.ready()
        && queue
            .avail_idx(&*mem, Ordering::Acquire)
            .is_ok_and(|idx| idx.0 != queue.next_avail())
}
