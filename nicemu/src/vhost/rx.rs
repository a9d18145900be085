// SPDX-License-Identifier: Apache-2.0
//! Receive side: writing a virtio-net header and a frame into the guest's
//! receive buffers, one descriptor chain or (with `VIRTIO_NET_F_MRG_RXBUF`)
//! as many as needed ([`write_frame`]; nothing is published to the used ring
//! until the whole frame fits, so a frame never arrives half written); the
//! header each kind of frame gets (plain, GSO passed whole, segmented here,
//! coalesced); and the delivery of frames from the switch into the queue of
//! their flow ([`Receiver::deliver`], [`Receiver::deliver_batch`]).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, MutexGuard};

use nicemu_device_models::{Delivery, Frames};
use nicemu_net_util::coalesce::{self, GroRun};
use nicemu_net_util::tso::segment;
use nicemu_net_util::{IPPROTO_TCP, IPPROTO_UDP};
use vhost_user_backend::{VringState, VringT};
use virtio_bindings::bindings::virtio_net::{
    VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_ECN, VIRTIO_NET_HDR_GSO_TCPV4,
    VIRTIO_NET_HDR_GSO_TCPV6,
};
use virtio_queue::{DescriptorChain, Queue, QueueOwnedT, QueueT};
use vm_memory::{Address, Bytes, GuestMemory, GuestMemoryMmap};

use super::config::Negotiated;
use super::counters::{add, inc, QueueCounters};
use super::offload::{self as voff, NetHdr, MAX_HDR_LEN};
use super::port::{lock, HasVring, Mem, QueuePort, Queues, Vring, MAX_QUEUE_SIZE};
use super::tx::MAX_TX_BYTES;

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

/// A receive queue taken for one frame: its ring, the guest memory, the
/// negotiated header layout and the queue's scratch buffers.
struct RxRing<'a> {
    vr: &'a mut VringState<Mem>,
    mem: &'a GuestMemoryMmap<()>,
    side: &'a mut RxQueue,
    neg: Negotiated,
    hdr: [u8; MAX_HDR_LEN],
    hdr_len: usize,
}

impl<'a> RxRing<'a> {
    fn new(
        vr: &'a mut VringState<Mem>,
        mem: &'a GuestMemoryMmap<()>,
        side: &'a mut RxQueue,
        neg: Negotiated,
    ) -> Self {
        RxRing {
            vr,
            mem,
            side,
            neg,
            hdr: [0; MAX_HDR_LEN],
            hdr_len: neg.hdr_len.min(MAX_HDR_LEN),
        }
    }

    /// Offers `frame` behind the header in `hdr` to the ring.
    fn write(&mut self, frame: &[u8]) -> RxOutcome {
        write_frame(
            self.vr.get_queue_mut(),
            self.mem,
            &mut self.hdr[..self.hdr_len],
            frame,
            self.neg.mrg_rxbuf,
            &mut self.side.used,
        )
    }

    /// A large segment whose GSO request the driver accepts, as it came.
    fn write_gso(&mut self, c: &QueueCounters, h: &NetHdr, frame: &[u8]) -> RxOutcome {
        h.write(&mut self.hdr[..self.hdr_len], 0);
        let o = self.write(frame);
        if matches!(o, RxOutcome::Delivered { .. }) {
            inc(&c.rx_gso);
            inc(&c.rx_frames);
            add(&c.rx_bytes, frame.len() as u64);
        }
        o
    }

    /// A large segment the driver stopped accepting GSO for since the sender
    /// looked: segmented here, each segment counted by `count`. Segments
    /// that find no buffer are dropped.
    fn write_segmented(
        &mut self,
        c: &QueueCounters,
        h: &NetHdr,
        frame: &[u8],
        count: impl Fn(&QueueCounters, RxOutcome, usize),
    ) -> RxOutcome {
        let guest_csum = self.neg.guest_csum;
        let mut seg = std::mem::take(&mut self.side.seg);
        let r = voff::tso_request(h, frame).and_then(|t| {
            segment(frame, &t.tso, &mut seg, |s| {
                voff::rx_hdr_plain(s, guest_csum).write(&mut self.hdr[..self.hdr_len], 0);
                let o = self.write(s);
                count(c, o, s.len());
            })
        });
        self.side.seg = seg;
        if r.is_err() {
            inc(&c.rx_bad_chain);
        }
        RxOutcome::Delivered { buffers: 0 }
    }

    /// A frame receive coalescing merged ([`coalesce::merge_run`]): the
    /// header asks for GSO at the run's segment size, its TCP checksum
    /// partial (the pseudo-header sum in the field, as Linux's GRO leaves
    /// it). Out of buffers, retried once like [`Self::write_plain`].
    fn write_merged(&mut self, c: &QueueCounters, run: &GroRun, frame: &[u8]) -> RxOutcome {
        merged_hdr(run).write(&mut self.hdr[..self.hdr_len], 0);
        let mut o = self.write(frame);
        if o == RxOutcome::NoBuffers && self.vr.enable_notification().unwrap_or(false) {
            o = self.write(frame);
        }
        if matches!(o, RxOutcome::Delivered { .. }) {
            inc(&c.rx_coalesced);
            add(&c.rx_coalesced_segs, run.count as u64);
            inc(&c.rx_frames);
            add(&c.rx_bytes, frame.len() as u64);
        }
        o
    }

    /// A frame without GSO request. Out of buffers, the kick is re-armed and
    /// the write retried once if the driver added some meanwhile.
    fn write_plain(&mut self, frame: &[u8]) -> RxOutcome {
        voff::rx_hdr_plain(frame, self.neg.guest_csum).write(&mut self.hdr[..self.hdr_len], 0);
        let mut outcome = self.write(frame);
        if outcome == RxOutcome::NoBuffers && self.vr.enable_notification().unwrap_or(false) {
            outcome = self.write(frame);
        }
        outcome
    }
}

/// Capacity the coalescing buffer keeps between frames (a 64 KiB frame
/// fits).
const MERGED_KEEP: usize = 66 * 1024;

/// The virtio-net header of a merged frame: `NEEDS_CSUM` from the TCP
/// header, GSO TCPv4/TCPv6 at the run's segment size, with the ECN bit when
/// its segments carry CWR (virtio 1.2 §5.1.6.4.1).
fn merged_hdr(run: &GroRun) -> NetHdr {
    let kind = if run.ipv6 {
        VIRTIO_NET_HDR_GSO_TCPV6
    } else {
        VIRTIO_NET_HDR_GSO_TCPV4
    };
    let ecn = if run.cwr { VIRTIO_NET_HDR_GSO_ECN } else { 0 };
    NetHdr {
        flags: VIRTIO_NET_HDR_F_NEEDS_CSUM as u8,
        gso_type: (kind | ecn) as u8,
        hdr_len: run.hdr_len as u16,
        gso_size: run.mss,
        csum_start: run.l4 as u16,
        csum_offset: 16,
    }
}

/// Index of the `k`-th set bit of `bits` (0-based; `k` < number of set bits).
fn nth_set_bit(bits: u64, k: u32) -> usize {
    let mut k = k;
    for i in 0..64 {
        if bits & (1u64 << i) != 0 {
            if k == 0 {
                return i;
            }
            k -= 1;
        }
    }
    0
}

/// True when the driver has the receive queue enabled and ready.
fn rx_ready(v: &Vring) -> bool {
    let g = v.get_ref();
    g.is_enabled() && g.get_queue().ready()
}

/// Chooses a queue pair for a frame by its addresses and, for TCP and UDP,
/// its ports, so one flow stays on one queue. Other protocols hash by the
/// addresses alone: the first bytes after their IP header are no ports
/// (an IP-in-IP packet has its inner header's length there, which put the
/// segments of one tunnelled connection on different queues, where GRO's
/// hold on one let the connection's FIN on the other overtake them).
pub fn flow_hash(f: &[u8]) -> u32 {
    let Some(p) = nicemu_net_util::parse(f) else {
        return 0;
    };
    let mut h: u32 = 0x811c_9dc5;
    let mut mix = |b: &[u8]| {
        for &x in b {
            h = (h ^ u32::from(x)).wrapping_mul(0x0100_0193);
        }
    };
    if p.ipv4 {
        mix(f.get(p.l3 + 12..p.l3 + 20).unwrap_or(&[]));
    } else {
        mix(f.get(p.l3 + 8..p.l3 + 40).unwrap_or(&[]));
    }
    if let Some(l4) =
        p.l4.filter(|_| matches!(p.proto, IPPROTO_TCP | IPPROTO_UDP))
    {
        mix(f.get(l4..l4 + 4).unwrap_or(&[]));
    }
    h ^ (h >> 16)
}

/// One receive queue: its vring (once the driver has kicked the pair) and
/// the buffers each frame reuses.
pub struct RxQueue {
    vring: Option<Vring>,
    used: Vec<(u16, u32)>,
    seg: Vec<u8>,
    /// The frame receive coalescing builds ([`Receiver::deliver_batch`]).
    merged: Vec<u8>,
}

impl HasVring for RxQueue {
    fn vring_slot(&mut self) -> &mut Option<Vring> {
        &mut self.vring
    }
}

impl RxQueue {
    fn new() -> Self {
        RxQueue {
            vring: None,
            used: Vec::with_capacity(MAX_QUEUE_SIZE),
            seg: Vec::with_capacity(MAX_TX_BYTES),
            merged: Vec::new(),
        }
    }
}

/// A port's receive side (what cloud-hypervisor's `RxVirtio` is to its
/// queue pair): its queues, which of them the driver uses, how many frames
/// of each wait in the port's backlog, and the delivery of frames from the
/// switch into them.
pub struct Receiver {
    /// The queues, each behind its own lock.
    pub queues: Queues<RxQueue>,
    /// Receive queues the driver has kicked while enabled (bit per pair).
    active: AtomicU64,
    /// Frames from the switch waiting in the port's backlog for each queue
    /// pair ([`super::backlog::Backlog`]); while non-zero, frames of that
    /// queue are not delivered directly (they would overtake).
    pub pending: Vec<AtomicUsize>,
    /// Receive coalescing is on (`coalesce=on`; [`Self::set_coalesce`]).
    coalesce: AtomicBool,
    /// GSO kinds this port's driver accepts now (`offload::accept`).
    accept: Arc<AtomicU8>,
    /// The token marking GSO trailers of this process.
    token: u64,
}

impl Receiver {
    /// The receive side of `pairs` queue pairs.
    pub fn new(pairs: u16, accept: Arc<AtomicU8>, token: u64) -> Self {
        Receiver {
            queues: Queues::new(pairs, RxQueue::new),
            active: AtomicU64::new(0),
            pending: (0..pairs).map(|_| AtomicUsize::new(0)).collect(),
            coalesce: AtomicBool::new(false),
            accept,
            token,
        }
    }

    /// Turns receive coalescing on or off ([`Self::deliver_batch`]).
    pub fn set_coalesce(&self, on: bool) {
        self.coalesce.store(on, Ordering::Relaxed);
    }

    /// The driver kicked pair `q`'s receive queue: frames may go to it.
    pub fn activate(&self, q: usize) {
        if q < 64 {
            self.active.fetch_or(1 << q, Ordering::AcqRel);
        }
    }

    /// Forgets which queues are in use and their vrings (the connection
    /// ended).
    pub fn forget(&self) {
        self.active.store(0, Ordering::Release);
        self.queues.forget_vrings();
    }

    /// Offers a frame from the switch to the guest: `Busy` while the guest
    /// has no receive buffers (try again after a kick), and with `try_only`
    /// instead of waiting for a receive queue lock.
    pub fn deliver(&self, port: &impl QueuePort, frame: &[u8], try_only: bool) -> Delivery {
        let (frame, meta) = voff::split_trailer(frame, self.token);
        let accept = self.accept.load(Ordering::Acquire);
        self.with_rx_ring(port, flow_hash(frame), try_only, |ring, c| match meta {
            Some(h) if voff::accept_bit(h.gso_kind()) & accept != 0 => ring.write_gso(c, &h, frame),
            Some(h) => ring.write_segmented(c, &h, frame, count),
            None => {
                let o = ring.write_plain(frame);
                if o != RxOutcome::NoBuffers {
                    count(c, o, frame.len());
                }
                o
            }
        })
    }

    /// Offers frames from the switch in order and returns how many were
    /// taken (the rest, from the first the guest had no buffers for, are
    /// left to the caller). Consecutive TCP segments of one connection that
    /// merge by GRO's rules ([`nicemu_net_util::coalesce::gro_run`]) go to the
    /// guest as one GSO frame when coalescing is on ([`Self::set_coalesce`])
    /// and its driver takes them (`VIRTIO_NET_F_GUEST_TSO4/6` with
    /// mergeable buffers, virtio 1.2 §5.1.6.4); only frames given together
    /// merge, none waits for more.
    pub fn deliver_batch(
        &self,
        port: &impl QueuePort,
        frames: Frames<'_>,
        try_only: bool,
    ) -> usize {
        if frames.len() < 2 {
            let busy =
                !frames.is_empty() && self.deliver(port, frames.get(0), try_only) == Delivery::Busy;
            return if busy { 0 } else { frames.len() };
        }
        let neg = port.conn().neg;
        let mut i = 0;
        while i < frames.len() {
            let rest = frames.from(i);
            let (d, n) = match self.coalescible(neg, rest) {
                Some(run) => (self.deliver_run(port, rest, &run, try_only), run.count),
                None => (self.deliver(port, rest.get(0), try_only), 1),
            };
            if d == Delivery::Busy {
                return i;
            }
            i += n;
        }
        frames.len()
    }

    /// The run the first of `frames` opens, when the driver takes the
    /// merged frame: GSO of its kind and mergeable receive buffers (a
    /// merged frame is up to 64 KiB). Frames that crossed the switch with
    /// a GSO trailer never join a run.
    fn coalescible(&self, neg: Negotiated, frames: Frames<'_>) -> Option<GroRun> {
        if frames.len() < 2
            || !self.coalesce.load(Ordering::Relaxed)
            || !neg.mrg_rxbuf
            || !(neg.guest_tso4 || neg.guest_tso6)
        {
            return None;
        }
        let token = self.token;
        let plain = frames
            .iter()
            .take_while(|f| voff::split_trailer(f, token).1.is_none());
        let run = coalesce::gro_run(plain)?;
        let takes = if run.ipv6 {
            neg.guest_tso6
        } else {
            neg.guest_tso4
        };
        (takes && (!run.cwr || neg.guest_ecn)).then_some(run)
    }

    /// Delivers the frames of `run` as one GSO frame.
    fn deliver_run(
        &self,
        port: &impl QueuePort,
        frames: Frames<'_>,
        run: &GroRun,
        try_only: bool,
    ) -> Delivery {
        let hash = flow_hash(frames.get(0));
        self.with_rx_ring(port, hash, try_only, |ring, c| {
            let mut buf = std::mem::take(&mut ring.side.merged);
            coalesce::merge_run(frames.iter(), run, &mut buf);
            let o = ring.write_merged(c, run, &buf);
            if !matches!(o, RxOutcome::Delivered { .. } | RxOutcome::NoBuffers) {
                count(c, o, buf.len());
            }
            if buf.capacity() > MERGED_KEEP {
                buf = Vec::new();
            }
            ring.side.merged = buf;
            o
        })
    }

    /// Runs `write` on the receive queue of flow `hash` (locked, enabled),
    /// then signals the used ring if the driver wants it. `Busy` when the
    /// guest had no buffers (notifications re-armed) or, with `try_only`,
    /// the queue was taken.
    fn with_rx_ring(
        &self,
        port: &impl QueuePort,
        hash: u32,
        try_only: bool,
        write: impl FnOnce(&mut RxRing<'_>, &QueueCounters) -> RxOutcome,
    ) -> Delivery {
        if !port.link_up() {
            inc(&port.port_counters().rx_link_drops);
            return Delivery::Done;
        }
        let Some((mem, neg, _)) = port.conn().ready() else {
            inc(&port.port_counters().rx_not_ready);
            return Delivery::Done;
        };
        let (q, mut side, vring) = match self.pick_rx_queue(port, hash, try_only) {
            Ok(picked) => picked,
            Err(d) => return d,
        };
        let mut vr = vring.get_mut();
        if !vr.is_enabled() || !vr.get_queue().ready() {
            // Disabled between the check and now.
            self.active.fetch_and(!(1u64 << q), Ordering::AcqRel);
            inc(&port.port_counters().rx_not_ready);
            return Delivery::Done;
        }
        let c = &port.counters()[q];
        let mut ring = RxRing::new(&mut vr, &mem, &mut side, neg);
        let outcome = write(&mut ring, c);
        if outcome == RxOutcome::NoBuffers {
            let _ = ring.vr.enable_notification();
            inc(&c.rx_no_buffers);
            return Delivery::Busy;
        }
        if ring.vr.needs_notification().unwrap_or(true) {
            port.notify(2 * q);
        }
        Delivery::Done
    }

    /// The receive queue for a frame of flow `hash`, locked, with its vring:
    /// the flow's queue among the receive queues in use. A queue the driver
    /// has disabled since it was kicked (fewer combined channels, vhost stop)
    /// is forgotten and the frame goes to the next choice among those left,
    /// instead of being dropped. Bounded: every retry clears one bit. `Err`
    /// is what delivery comes to without a queue (`Busy` with `try_only`
    /// when the queue is taken or has older frames waiting).
    fn pick_rx_queue(
        &self,
        port: &impl QueuePort,
        hash: u32,
        try_only: bool,
    ) -> Result<(usize, MutexGuard<'_, RxQueue>, Vring), Delivery> {
        for _ in 0..=64 {
            let active = self.active.load(Ordering::Acquire);
            let n = active.count_ones();
            if n == 0 {
                break;
            }
            let q = nth_set_bit(active, hash % n);
            let Some(queue) = self.queues.get(q) else {
                self.active.fetch_and(!(1u64 << q), Ordering::AcqRel);
                continue;
            };
            if try_only && self.pending[q].load(Ordering::Acquire) > 0 {
                // Older frames of this queue wait in the backlog.
                return Err(Delivery::Busy);
            }
            let side = if try_only {
                match queue.try_lock() {
                    Ok(g) => g,
                    Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) => return Err(Delivery::Busy),
                }
            } else {
                lock(queue)
            };
            match side.vring.clone() {
                Some(v) if rx_ready(&v) => return Ok((q, side, v)),
                _ => {
                    self.active.fetch_and(!(1u64 << q), Ordering::AcqRel);
                }
            }
        }
        inc(&port.port_counters().rx_not_ready);
        Err(Delivery::Done)
    }

    /// The queue pair a frame from the switch goes to now (its flow's pick
    /// among the receive queues in use; 0 when none is in use).
    pub fn queue_for(&self, frame: &[u8]) -> usize {
        let (frame, _) = voff::split_trailer(frame, self.token);
        let active = self.active.load(Ordering::Acquire);
        let n = active.count_ones();
        if n == 0 {
            return 0;
        }
        nth_set_bit(active, flow_hash(frame) % n).min(self.queues.len().saturating_sub(1))
    }
}

/// Counts what became of a frame of `len` bytes offered to a queue.
fn count(c: &QueueCounters, o: RxOutcome, len: usize) {
    match o {
        RxOutcome::Delivered { .. } => {
            inc(&c.rx_frames);
            add(&c.rx_bytes, len as u64);
        }
        RxOutcome::NoBuffers => inc(&c.rx_no_buffers),
        RxOutcome::TooBig => inc(&c.rx_too_big),
        RxOutcome::BadChain => inc(&c.rx_bad_chain),
    }
}
