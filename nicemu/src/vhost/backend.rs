// SPDX-License-Identifier: Apache-2.0
//! The vhost-user-net backend: feature negotiation, configuration space,
//! queue workers (one epoll thread per queue pair), the transmit path into
//! the switch and the receive path out of it.

use std::collections::HashMap;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, RwLock, Weak};
use std::time::{Duration, Instant};

pub use nicemu_device_models::Delivery;
use nicemu_device_models::{Clock, FrameBatch, FrameSink, Frames, MonotonicClock};
use nicemu_net_util::coalesce::{self, GroRun};
use nicemu_net_util::tso::segment;
use nicemu_net_util::{OffloadError, IPPROTO_TCP, IPPROTO_UDP};
use vhost::vhost_user::message::VhostUserProtocolFeatures;
use vhost_user_backend::{VhostUserBackend, VringRwLock, VringState, VringT};
use virtio_bindings::bindings::virtio_net::{
    VIRTIO_NET_HDR_F_NEEDS_CSUM, VIRTIO_NET_HDR_GSO_ECN, VIRTIO_NET_HDR_GSO_TCPV4,
    VIRTIO_NET_HDR_GSO_TCPV6,
};
use virtio_queue::QueueT;
use vm_memory::{GuestAddressSpace, GuestMemoryAtomic, GuestMemoryMmap};
use vmm_sys_util::epoll::EventSet;
use vmm_sys_util::event::{
    new_event_consumer_and_notifier, EventConsumer, EventFlag, EventNotifier,
};

use super::calls::CallFds;
use super::config::{self, Negotiated};
use super::counters::{add, inc, PortCounters, QueueCounters};
use super::offload::{self as voff, accept, NetHdr, MAX_HDR_LEN};
use super::rx::{self, RxOutcome};
use super::tx::{self, TxChainError, MAX_TX_BYTES};
use crate::irq::eventfd::Signalled;
use crate::irq::signaller::{IrqTargets, Signaller, Target};
use crate::latency::{Doorbell, PortLatency, TimedWire};
use crate::switch::Switch;

/// Most guest memory regions of a vhost-user connection (QEMU sends a
/// handful; the protocol's SET_MEM_TABLE carries at most 8).
pub const MAX_MEM_REGIONS: usize = 64;

/// Most bytes of guest memory per connection.
pub const MAX_MEM_TOTAL: u64 = 1 << 40;

/// Checks a vhost-user memory table (SET_MEM_TABLE or ADD_MEM_REGION, as
/// the vhost-user-backend crate mapped it): at most [`MAX_MEM_REGIONS`] and
/// [`MAX_MEM_TOTAL`] bytes, each region inside a file that cannot shrink
/// ([`nicemu_memfile`]), so no access is SIGBUS.
pub fn check_memory(mem: &GuestMemoryMmap<()>) -> Result<(), String> {
    use vm_memory::{GuestMemoryBackend, GuestMemoryRegion};
    if mem.num_regions() > MAX_MEM_REGIONS {
        return Err(format!(
            "{} regions, at most {MAX_MEM_REGIONS}",
            mem.num_regions()
        ));
    }
    let total: u64 = mem.iter().map(|r| r.len()).sum();
    if total > MAX_MEM_TOTAL {
        return Err(format!("{total:#x} bytes, at most {MAX_MEM_TOTAL:#x}"));
    }
    for r in mem.iter() {
        let Some(fo) = r.file_offset() else {
            return Err("a region without a file".into());
        };
        nicemu_memfile::pin_range(fo.file(), fo.start(), r.len())
            .map_err(|e| format!("region at {:#x}: {e}", r.start_addr().0))?;
    }
    Ok(())
}

/// Guest memory as the backend sees it.
pub type Mem = GuestMemoryAtomic<GuestMemoryMmap<()>>;
/// A virtqueue with its kick/call eventfds.
pub type Vring = VringRwLock<Mem>;

/// Largest queue size offered.
pub const MAX_QUEUE_SIZE: usize = 1024;

/// Largest number of MAC addresses remembered as GSO-capable per network.
const MAX_GSO_PEERS: usize = 4096;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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

/// What the current connection negotiated.
#[derive(Default)]
struct Conn {
    mem: Option<Mem>,
    neg: Negotiated,
    event_idx: bool,
}

struct TxSide {
    vring: Option<Vring>,
    buf: Vec<u8>,
    seg: Vec<u8>,
    last_src: [u8; 6],
    /// The frames of the current transmit pass, handed to the switch
    /// together (so a receiving port sees what left together:
    /// [`NetBackend::deliver_batch`]).
    batch: FrameBatch,
}

struct RxSide {
    vring: Option<Vring>,
    used: Vec<(u16, u32)>,
    seg: Vec<u8>,
    /// The frame receive coalescing builds ([`NetBackend::deliver_batch`]).
    merged: Vec<u8>,
}

/// A receive queue taken for one frame: its ring, the guest memory, the
/// negotiated header layout and the queue's scratch buffers.
struct RxRing<'a> {
    vr: &'a mut VringState<Mem>,
    mem: &'a GuestMemoryMmap<()>,
    side: &'a mut RxSide,
    neg: Negotiated,
    hdr: [u8; MAX_HDR_LEN],
    hdr_len: usize,
}

impl<'a> RxRing<'a> {
    fn new(
        vr: &'a mut VringState<Mem>,
        mem: &'a GuestMemoryMmap<()>,
        side: &'a mut RxSide,
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
        rx::write_frame(
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

struct Pair {
    tx: Mutex<TxSide>,
    rx: Mutex<RxSide>,
}

/// One virtio-net port's backend state, shared by the vhost-user handler,
/// its queue workers, the switch (direct receive) and the receive thread.
pub struct NetBackend {
    pub(crate) id: String,
    mac: [u8; 6],
    pairs: u16,
    sink: Box<dyn FrameSink>,
    pub(crate) link_up: AtomicBool,
    pub(crate) connected: AtomicBool,
    /// The exit-event descriptors handed to the current daemon's workers:
    /// vhost-user-backend 0.24 registers them in its epoll with
    /// `into_raw_fd` and never closes them, so nicemu closes them once the
    /// daemon and its workers are gone ([`Self::close_exit_fds`]).
    exit_fds: Mutex<Vec<std::os::fd::RawFd>>,
    conn: RwLock<Conn>,
    queues: Vec<Pair>,
    /// Receive queues the driver has kicked while enabled (bit per pair).
    active: AtomicU64,
    /// Frames from the switch waiting in the port's backlog for each queue
    /// pair ([`super::backlog::Backlog`]); while non-zero, frames of that
    /// queue are not delivered directly (they would overtake).
    pub(crate) pending: Vec<std::sync::atomic::AtomicUsize>,
    /// Per queue pair counters.
    pub counters: Vec<QueueCounters>,
    /// Port counters.
    pub port_counters: PortCounters,
    /// Bumped on every receive kick and state change; the receive thread
    /// waits on it for buffers.
    wake: (Mutex<u64>, Condvar),
    peers: Arc<GsoPeers>,
    /// GSO kinds this port's driver accepts now (`offload::accept`).
    accept: Arc<AtomicU8>,
    token: u64,
    /// Writes the call eventfds ([`crate::irq::signaller`]): no thread that
    /// places a frame or takes a chain waits for the frontend.
    signaller: OnceLock<Signaller>,
    /// Receive coalescing is on (`coalesce=on`; [`Self::set_coalesce`]).
    coalesce: AtomicBool,
    /// Where a kick's time goes (`ctl latency`).
    lat: Arc<PortLatency>,
    /// nicemu's duplicates of the vrings' call eventfds ([`CallFds`]).
    calls: CallFds,
}

impl std::fmt::Debug for NetBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetBackend")
            .field("id", &self.id)
            .field("pairs", &self.pairs)
            .finish()
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

/// A token no guest can guess, marking frames that carry a GSO trailer.
fn process_token() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static TOKEN: OnceLock<u64> = OnceLock::new();
    *TOKEN.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(std::process::id().into());
        h.finish() | 1
    })
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
pub(crate) fn flow_hash(f: &[u8]) -> u32 {
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

impl NetBackend {
    /// A backend with `pairs` queue pairs transmitting into `sink`.
    pub fn new(
        id: String,
        mac: [u8; 6],
        pairs: u16,
        sink: Box<dyn FrameSink>,
        peers: Arc<GsoPeers>,
    ) -> Self {
        let pairs = pairs.clamp(1, 32);
        let queues = (0..pairs)
            .map(|_| Pair {
                tx: Mutex::new(TxSide {
                    vring: None,
                    buf: Vec::with_capacity(MAX_TX_BYTES + voff::TRAILER_LEN),
                    seg: Vec::with_capacity(MAX_TX_BYTES),
                    last_src: [0; 6],
                    batch: FrameBatch::default(),
                }),
                rx: Mutex::new(RxSide {
                    vring: None,
                    used: Vec::with_capacity(MAX_QUEUE_SIZE),
                    seg: Vec::with_capacity(MAX_TX_BYTES),
                    merged: Vec::new(),
                }),
            })
            .collect();
        let lat = Arc::new(PortLatency::default());
        let sink = Box::new(TimedWire::new(Arc::from(sink), lat.clone()));
        NetBackend {
            id,
            mac,
            pairs,
            sink,
            link_up: AtomicBool::new(true),
            connected: AtomicBool::new(false),
            exit_fds: Mutex::new(Vec::new()),
            conn: RwLock::new(Conn::default()),
            queues,
            active: AtomicU64::new(0),
            pending: (0..pairs)
                .map(|_| std::sync::atomic::AtomicUsize::new(0))
                .collect(),
            counters: (0..pairs).map(|_| QueueCounters::default()).collect(),
            port_counters: PortCounters::default(),
            wake: (Mutex::new(0), Condvar::new()),
            peers,
            accept: Arc::new(AtomicU8::new(0)),
            token: process_token(),
            signaller: OnceLock::new(),
            coalesce: AtomicBool::new(false),
            lat,
            calls: CallFds::new(2 * usize::from(pairs)),
        }
    }

    /// Turns receive coalescing on or off ([`Self::deliver_batch`]; off
    /// when the port starts). Off unless asked for, because the guest
    /// cannot turn it off: virtio_net clears `GUEST_TSO4/6` at run time
    /// with `VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET` (for software GRO, and
    /// whenever an XDP program is attached, since virtio_net drops a GSO or
    /// partially checksummed frame under XDP: `mergeable_xdp_get_buf`), and
    /// QEMU's virtio-net answers that command itself without telling a
    /// vhost-user backend (its vhost-user net client has no `set_offload`).
    pub fn set_coalesce(&self, on: bool) {
        self.coalesce.store(on, Ordering::Relaxed);
    }

    /// The port's latency stages.
    pub fn latency(&self) -> &Arc<PortLatency> {
        &self.lat
    }

    /// Queue pairs.
    pub fn pairs(&self) -> u16 {
        self.pairs
    }

    fn conn(&self) -> std::sync::RwLockReadGuard<'_, Conn> {
        self.conn.read().unwrap_or_else(|e| e.into_inner())
    }

    fn conn_mut(&self) -> std::sync::RwLockWriteGuard<'_, Conn> {
        self.conn.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The token marking GSO trailers of this process (tests build such
    /// frames).
    #[cfg(test)]
    pub(crate) fn token(&self) -> u64 {
        self.token
    }

    /// Sets the GSO kinds passed to this port as they are (tests; nicemu
    /// passes none unless `NICEMU_VHOST_GSO_PASS=1`).
    #[cfg(test)]
    pub(crate) fn set_accept(&self, bits: u8) {
        self.accept.store(bits, Ordering::Release);
    }

    /// Recomputes which GSO kinds other ports may pass to this one.
    pub(crate) fn update_accept(&self) {
        let neg = self.conn().neg;
        let ok = self.link_up.load(Ordering::Acquire) && self.connected.load(Ordering::Acquire);
        let mut bits = 0;
        if ok && neg.guest_tso4 {
            bits |= accept::TCP4;
        }
        if ok && neg.guest_tso6 {
            bits |= accept::TCP6;
        }
        if !gso_pass_enabled() {
            bits = 0;
        }
        self.accept.store(bits, Ordering::Release);
    }

    /// Wakes the receive thread (buffers may have arrived, or state changed).
    pub(crate) fn wake(&self) {
        let mut g = lock(&self.wake.0);
        *g = g.wrapping_add(1);
        self.wake.1.notify_all();
    }

    /// The wake generation, to pass to [`Self::wait`].
    pub(crate) fn generation(&self) -> u64 {
        *lock(&self.wake.0)
    }

    /// Waits until the generation moves past `seen` or `timeout` passes.
    pub(crate) fn wait(&self, seen: u64, timeout: Duration) {
        let g = lock(&self.wake.0);
        if *g != seen {
            return;
        }
        let _ = self.wake.1.wait_timeout(g, timeout);
    }

    /// Closes the exit-event descriptors the last daemon's workers were given.
    ///
    /// # Safety
    /// The daemon they were given to must be dropped (its workers joined,
    /// `VhostUserHandler`'s drop), so that nothing uses them any more.
    pub(crate) unsafe fn close_exit_fds(&self) {
        for fd in lock(&self.exit_fds).drain(..) {
            // SAFETY: `fd` is an eventfd this backend created in
            // `exit_event`; vhost-user-backend took it over with
            // `into_raw_fd` and never closes it; its only user, a worker
            // epoll of a dropped daemon, is gone (the caller's contract).
            unsafe { libc::close(fd) };
        }
    }

    /// The port is served to frontend process `pid` (its connection's
    /// SO_PEERCRED pid; 0 when it goes away): a thread serving another port
    /// of the same process writes this port's call eventfds itself
    /// ([`Signaller::set_client`]).
    pub(crate) fn set_client(&self, pid: i32) {
        if let Some(s) = self.signaller.get() {
            s.set_client(pid);
        }
    }

    /// A `SET_VRING_CALL` is on its way to the handler: the call fds
    /// duplicated so far are not used again ([`CallFds::changed`]).
    pub(crate) fn call_fds_changed(&self) {
        self.calls.changed();
    }

    /// Forgets everything about the connection that ended.
    pub(crate) fn disconnected(&self) {
        self.set_client(0);
        self.connected.store(false, Ordering::Release);
        *self.conn_mut() = Conn::default();
        self.active.store(0, Ordering::Release);
        for p in &self.queues {
            lock(&p.tx).vring = None;
            lock(&p.rx).vring = None;
        }
        // After the vrings are gone, so no duplicate is taken again.
        self.calls.changed();
        self.update_accept();
        self.wake();
        // A call write still waiting on the departed frontend's eventfd ends.
        if let Some(sig) = self.signaller.get() {
            sig.release();
        }
    }

    /// Offers a frame from the switch to the guest: `Busy` while the guest
    /// has no receive buffers (try again after a kick), and with `try_only`
    /// instead of waiting for a receive queue lock.
    pub fn deliver(&self, frame: &[u8], try_only: bool) -> Delivery {
        let (frame, meta) = voff::split_trailer(frame, self.token);
        let accept = self.accept.load(Ordering::Acquire);
        self.with_rx_ring(flow_hash(frame), try_only, |ring, c| match meta {
            Some(h) if voff::accept_bit(h.gso_kind()) & accept != 0 => ring.write_gso(c, &h, frame),
            Some(h) => ring.write_segmented(c, &h, frame, |c, o, len| self.count_rx(c, o, len)),
            None => {
                let o = ring.write_plain(frame);
                if o != RxOutcome::NoBuffers {
                    self.count_rx(c, o, frame.len());
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
    pub fn deliver_batch(&self, frames: Frames<'_>, try_only: bool) -> usize {
        if frames.len() < 2 {
            let busy =
                !frames.is_empty() && self.deliver(frames.get(0), try_only) == Delivery::Busy;
            return if busy { 0 } else { frames.len() };
        }
        let neg = self.conn().neg;
        let mut i = 0;
        while i < frames.len() {
            let rest = frames.from(i);
            let (d, n) = match self.coalescible(neg, rest) {
                Some(run) => (self.deliver_run(rest, &run, try_only), run.count),
                None => (self.deliver(rest.get(0), try_only), 1),
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
    fn deliver_run(&self, frames: Frames<'_>, run: &GroRun, try_only: bool) -> Delivery {
        let hash = flow_hash(frames.get(0));
        self.with_rx_ring(hash, try_only, |ring, c| {
            let mut buf = std::mem::take(&mut ring.side.merged);
            coalesce::merge_run(frames.iter(), run, &mut buf);
            let o = ring.write_merged(c, run, &buf);
            if !matches!(o, RxOutcome::Delivered { .. } | RxOutcome::NoBuffers) {
                self.count_rx(c, o, buf.len());
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
        hash: u32,
        try_only: bool,
        write: impl FnOnce(&mut RxRing<'_>, &QueueCounters) -> RxOutcome,
    ) -> Delivery {
        if !self.link_up.load(Ordering::Acquire) {
            inc(&self.port_counters.rx_link_drops);
            return Delivery::Done;
        }
        let Some((mem, neg)) = self.rx_memory() else {
            inc(&self.port_counters.rx_not_ready);
            return Delivery::Done;
        };
        let (q, mut side, vring) = match self.pick_rx_queue(hash, try_only) {
            Ok(picked) => picked,
            Err(d) => return d,
        };
        let mut vr = vring.get_mut();
        if !vr.is_enabled() || !vr.get_queue().ready() {
            // Disabled between the check and now.
            self.active.fetch_and(!(1u64 << q), Ordering::AcqRel);
            inc(&self.port_counters.rx_not_ready);
            return Delivery::Done;
        }
        let c = &self.counters[q];
        let mut ring = RxRing::new(&mut vr, &mem, &mut side, neg);
        let outcome = write(&mut ring, c);
        if outcome == RxOutcome::NoBuffers {
            let _ = ring.vr.enable_notification();
            inc(&c.rx_no_buffers);
            return Delivery::Busy;
        }
        if ring.vr.needs_notification().unwrap_or(true) {
            self.notify(2 * q);
        }
        Delivery::Done
    }

    /// The guest memory and negotiated features of the connection, when a
    /// frontend has set both up.
    fn rx_memory(&self) -> Option<(<Mem as GuestAddressSpace>::T, Negotiated)> {
        let c = self.conn();
        match &c.mem {
            Some(m) if c.neg.hdr_len != 0 => Some((m.memory(), c.neg)),
            _ => None,
        }
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
        hash: u32,
        try_only: bool,
    ) -> Result<(usize, MutexGuard<'_, RxSide>, Vring), Delivery> {
        for _ in 0..=64 {
            let active = self.active.load(Ordering::Acquire);
            let n = active.count_ones();
            if n == 0 {
                break;
            }
            let q = nth_set_bit(active, hash % n);
            let Some(pair) = self.queues.get(q) else {
                self.active.fetch_and(!(1u64 << q), Ordering::AcqRel);
                continue;
            };
            if try_only && self.pending[q].load(Ordering::Acquire) > 0 {
                // Older frames of this queue wait in the backlog.
                return Err(Delivery::Busy);
            }
            let side = if try_only {
                match pair.rx.try_lock() {
                    Ok(g) => g,
                    Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                    Err(std::sync::TryLockError::WouldBlock) => return Err(Delivery::Busy),
                }
            } else {
                lock(&pair.rx)
            };
            match side.vring.clone() {
                Some(v) if rx_ready(&v) => return Ok((q, side, v)),
                _ => {
                    self.active.fetch_and(!(1u64 << q), Ordering::AcqRel);
                }
            }
        }
        inc(&self.port_counters.rx_not_ready);
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

    fn count_rx(&self, c: &QueueCounters, o: RxOutcome, len: usize) {
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

    /// Signals the used ring of `vr` to the guest without ever blocking
    /// (a full call eventfd coalesces; see [`crate::irq::eventfd`]).
    /// Starts the thread that signals the port's call eventfds.
    pub fn start_signaller(self: &Arc<Self>) -> Result<(), crate::error::Error> {
        let weak = Arc::downgrade(self);
        let s = Signaller::spawn_timed(&self.id, weak as Weak<dyn IrqTargets>, self.lat.clone())?;
        let _ = self.signaller.set(s);
        Ok(())
    }

    /// Signals virtqueue `index`'s call eventfd (used buffers), from the
    /// signaller thread.
    fn notify(&self, index: usize) {
        if let Some(s) = self.signaller.get() {
            s.raise(index);
        }
    }

    /// Runs `f` on one of the port's own threads (a queue worker, the
    /// receive deliverer) and writes the used-ring signals it raised when it
    /// returns, no vring lock held ([`Signaller::serving`]).
    pub fn serving<R>(&self, f: impl FnOnce() -> R) -> R {
        match self.signaller.get() {
            Some(s) => s.serving(f),
            None => f(),
        }
    }

    /// Waits until every used-ring signal raised so far was written, at most
    /// `limit`; false on timeout or without a signaller.
    pub fn flush_signals(&self, limit: Duration) -> bool {
        self.signaller.get().is_some_and(|s| s.flush(limit))
    }

    /// Serves a transmit kick of pair `q`; with `--poll-us`, then polls the
    /// ring for chains the guest adds within the window (notifications off
    /// meanwhile when EVENT_IDX is negotiated, so the guest need not kick)
    /// and serves them, for at most the window in all. Each pass writes the
    /// used-ring signal it raised on this thread when it ends
    /// ([`Self::serving`]), not after the window.
    fn process_tx(&self, q: usize, vring: &Vring) {
        self.serving(|| self.tx_pass(q, vring));
        let window = crate::poll::window();
        if window.is_zero() {
            return;
        }
        let start = Instant::now();
        let mut quiet = true;
        if self.conn().event_idx {
            let _ = vring.get_mut().disable_notification();
            quiet = false;
        }
        while start.elapsed() < window {
            if self.tx_waiting(vring) {
                self.serving(|| self.tx_pass(q, vring));
                quiet = true;
                if self.conn().event_idx {
                    let _ = vring.get_mut().disable_notification();
                    quiet = false;
                }
            } else {
                std::hint::spin_loop();
            }
        }
        if !quiet {
            // Notifications back on, and what came meanwhile served.
            self.serving(|| self.tx_pass(q, vring));
        }
    }

    /// Whether the guest has made transmit chains available on `vring`.
    fn tx_waiting(&self, vring: &Vring) -> bool {
        let Some(mem) = self.conn().mem.as_ref().map(GuestAddressSpace::memory) else {
            return false;
        };
        let vr = vring.get_ref();
        let queue = vr.get_queue();
        queue.ready()
            && queue
                .avail_idx(&*mem, Ordering::Acquire)
                .is_ok_and(|idx| idx.0 != queue.next_avail())
    }

    /// Takes every chain of pair `q`'s transmit ring into the switch and
    /// signals the used ring.
    fn tx_pass(&self, q: usize, vring: &Vring) {
        let (mem, neg, event_idx) = {
            let c = self.conn();
            match &c.mem {
                Some(m) if c.neg.hdr_len != 0 => (m.memory(), c.neg, c.event_idx),
                _ => return,
            }
        };
        let (Some(pair), Some(c)) = (self.queues.get(q), self.counters.get(q)) else {
            return;
        };
        let mut side = lock(&pair.tx);
        let side = &mut *side;
        let mut vr = vring.get_mut();
        loop {
            if event_idx {
                let _ = vr.disable_notification();
            }
            while let Some(chain) = vr.get_queue_mut().pop_descriptor_chain(&*mem) {
                let head = chain.head_index();
                let r = tx::read_chain(chain, &mut side.buf, neg.hdr_len);
                let _ = vr.add_used(head, 0);
                inc(&c.tx_chains);
                match r {
                    Ok(()) => self.send(c, side, neg.hdr_len),
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
            self.notify(2 * q + 1);
        }
    }

    /// Sends the frame in `side.buf` (after the virtio-net header) into the
    /// switch, applying the offloads its header asks for.
    fn send(&self, c: &QueueCounters, side: &mut TxSide, hdr_len: usize) {
        if !self.link_up.load(Ordering::Acquire) {
            inc(&self.port_counters.tx_link_drops);
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

    /// Lists the calling queue worker (vhost-user-backend's thread) among
    /// the port's threads the first time it serves this port.
    fn list_worker(&self) {
        thread_local! {
            static LISTED_FOR: std::cell::Cell<*const PortLatency> =
                const { std::cell::Cell::new(std::ptr::null()) };
        }
        let me = Arc::as_ptr(&self.lat);
        if LISTED_FOR.get() != me {
            LISTED_FOR.set(me);
            self.lat.threads.enter("doorbell");
        }
    }

    /// Remembers the vrings of pair `q` (the handler owns them; the receive
    /// path needs them outside its events).
    fn stash(&self, q: usize, vrings: &[Vring]) {
        let (Some(pair), Some(rxv), Some(txv)) =
            (self.queues.get(q), vrings.first(), vrings.get(1))
        else {
            return;
        };
        {
            let mut rx = lock(&pair.rx);
            if rx.vring.is_none() {
                rx.vring = Some(rxv.clone());
            }
        }
        let mut tx = lock(&pair.tx);
        if tx.vring.is_none() {
            tx.vring = Some(txv.clone());
        }
    }
}

/// The call eventfds by virtqueue index (receive queue 2n, transmit 2n+1).
impl IrqTargets for NetBackend {
    fn target(&self, index: usize) -> Option<Target> {
        let pair = self.queues.get(index / 2)?;
        let side = if index.is_multiple_of(2) {
            lock(&pair.rx).vring.clone()
        } else {
            lock(&pair.tx).vring.clone()
        }?;
        // nicemu's duplicate, so no vring lock is held while writing.
        let fd = {
            let state = side.get_ref();
            let call = state.get_call().as_ref()?;
            // SAFETY: the fd belongs to `call`, alive while `state` is held,
            // and the borrow does not outlive this block.
            let b = unsafe { std::os::fd::BorrowedFd::borrow_raw(call.as_raw_fd()) };
            self.calls.get(index, b)
        };
        match fd {
            Ok(fd) => Some(fd),
            Err(_) => {
                self.signalled(index, Signalled::Failed);
                None
            }
        }
    }

    fn signalled(&self, index: usize, outcome: Signalled) {
        match outcome {
            Signalled::Sent | Signalled::Interrupted => return,
            Signalled::Coalesced => inc(&self.port_counters.irq_coalesced),
            Signalled::Failed => inc(&self.port_counters.irq_failed),
        }
        // Checked afresh next time: the frontend may have made it blocking.
        self.calls.forget(index);
    }
}

impl VhostUserBackend for NetBackend {
    type Bitmap = ();
    type Vring = Vring;

    fn num_queues(&self) -> usize {
        usize::from(self.pairs) * 2
    }

    fn max_queue_size(&self) -> usize {
        MAX_QUEUE_SIZE
    }

    fn features(&self) -> u64 {
        config::device_features(self.pairs)
    }

    fn acked_features(&self, features: u64) {
        self.conn_mut().neg = Negotiated::from_features(features);
        log::debug!("{}: features acked {features:#x}", self.id);
        self.update_accept();
    }

    fn protocol_features(&self) -> VhostUserProtocolFeatures {
        VhostUserProtocolFeatures::MQ | VhostUserProtocolFeatures::CONFIGURE_MEM_SLOTS
    }

    fn set_event_idx(&self, enabled: bool) {
        self.conn_mut().event_idx = enabled;
    }

    fn get_config(&self, offset: u32, size: u32) -> Vec<u8> {
        let space =
            config::config_space(self.mac, self.link_up.load(Ordering::Acquire), self.pairs);
        config::config_window(&space, offset, size)
    }

    fn update_memory(&self, mem: Mem) -> std::io::Result<()> {
        // A table that fails the checks leaves the port without memory (no
        // frame is placed or taken) until a good one arrives.
        let checked = check_memory(&mem.memory());
        if checked.is_err() {
            inc(&self.port_counters.mem_refused);
        }
        self.conn_mut().mem = checked.as_ref().ok().map(|_| mem);
        checked.map_err(|e| {
            log::warn!("vhost-user memory table refused: {e}");
            std::io::Error::new(std::io::ErrorKind::InvalidInput, e)
        })
    }

    fn queues_per_thread(&self) -> Vec<u64> {
        (0..self.pairs).map(|p| 0b11u64 << (2 * p)).collect()
    }

    fn exit_event(&self, _thread_index: usize) -> Option<(EventConsumer, EventNotifier)> {
        let (consumer, notifier) = new_event_consumer_and_notifier(EventFlag::NONBLOCK).ok()?;
        lock(&self.exit_fds).push(std::os::fd::AsRawFd::as_raw_fd(&consumer));
        Some((consumer, notifier))
    }

    fn handle_event(
        &self,
        device_event: u16,
        _evset: EventSet,
        vrings: &[Vring],
        thread_id: usize,
    ) -> std::io::Result<()> {
        // Thread `thread_id` serves pair `thread_id`: event 0 is its receive
        // queue, 1 its transmit queue. Errors are never returned: an error
        // would stop this worker for good.
        log::trace!("{}: event {device_event} on worker {thread_id}", self.id);
        self.list_worker();
        self.stash(thread_id, vrings);
        match device_event {
            0 => {
                if thread_id < 64 {
                    self.active.fetch_or(1 << thread_id, Ordering::AcqRel);
                }
                self.wake();
            }
            1 => {
                if let Some(v) = vrings.get(1) {
                    let kick = Doorbell::start();
                    self.process_tx(thread_id, v);
                    kick.done(&self.lat);
                }
            }
            _ => {}
        }
        Ok(())
    }
}
