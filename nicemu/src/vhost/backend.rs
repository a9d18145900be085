// SPDX-License-Identifier: Apache-2.0
//! The vhost-user-net backend: the port's state (connection, link, counters,
//! call fds and their signaller), feature negotiation, configuration space
//! and the events of its queue workers (one epoll thread per queue pair).
//! The receive path out of the switch is [`super::rx`], the transmit path
//! into it [`super::tx`]; both read the port through [`QueuePort`].

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock, RwLockReadGuard, Weak};
use std::time::Duration;

pub use nicemu_device_models::Delivery;
use nicemu_device_models::{FrameSink, Frames};
use vhost::vhost_user::message::VhostUserProtocolFeatures;
use vhost_user_backend::{VhostUserBackend, VringT};
use vm_memory::GuestAddressSpace;
use vmm_sys_util::epoll::EventSet;
use vmm_sys_util::event::{
    new_event_consumer_and_notifier, EventConsumer, EventFlag, EventNotifier,
};

use super::calls::CallFds;
use super::config::{self, Negotiated};
use super::counters::{inc, PortCounters, QueueCounters};
use super::memory::check_memory;
use super::offload::{accept, process_token};
use super::port::{lock, Conn, Mem, QueuePort, Vring, MAX_QUEUE_SIZE};
use super::rx::Receiver;
use super::tx::{gso_pass_enabled, GsoPeers, Transmitter};
use crate::irq::eventfd::Signalled;
use crate::irq::signaller::{IrqTargets, Signaller, Target};
use crate::latency::{Doorbell, PortLatency, TimedWire};

/// One virtio-net port's backend state, shared by the vhost-user handler,
/// its queue workers, the switch (direct receive) and the receive thread.
pub struct NetBackend {
    pub(crate) id: String,
    mac: [u8; 6],
    pairs: u16,
    pub(crate) link_up: AtomicBool,
    pub(crate) connected: AtomicBool,
    /// The exit-event descriptors handed to the current daemon's workers:
    /// vhost-user-backend 0.24 registers them in its epoll with
    /// `into_raw_fd` and never closes them, so nicemu closes them once the
    /// daemon and its workers are gone ([`Self::close_exit_fds`]).
    exit_fds: Mutex<Vec<std::os::fd::RawFd>>,
    conn: RwLock<Conn>,
    /// The receive queues and the delivery into them.
    pub(super) rx: Receiver,
    /// The transmit queues and where their frames go.
    tx: Transmitter,
    /// Per queue pair counters.
    pub counters: Vec<QueueCounters>,
    /// Port counters.
    pub port_counters: PortCounters,
    /// Bumped on every receive kick and state change; the receive thread
    /// waits on it for buffers.
    wake: (Mutex<u64>, Condvar),
    /// GSO kinds this port's driver accepts now (`offload::accept`; the
    /// receive and transmit sides share it).
    accept: Arc<AtomicU8>,
    /// Writes the call eventfds ([`crate::irq::signaller`]): no thread that
    /// places a frame or takes a chain waits for the frontend.
    signaller: OnceLock<Signaller>,
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
        let lat = Arc::new(PortLatency::default());
        let sink = Box::new(TimedWire::new(Arc::from(sink), lat.clone()));
        let accept = Arc::new(AtomicU8::new(0));
        let token = process_token();
        NetBackend {
            id,
            mac,
            pairs,
            link_up: AtomicBool::new(true),
            connected: AtomicBool::new(false),
            exit_fds: Mutex::new(Vec::new()),
            conn: RwLock::new(Conn::default()),
            rx: Receiver::new(pairs, accept.clone(), token),
            tx: Transmitter::new(pairs, sink, peers, accept.clone(), token),
            counters: (0..pairs).map(|_| QueueCounters::default()).collect(),
            port_counters: PortCounters::default(),
            wake: (Mutex::new(0), Condvar::new()),
            accept,
            signaller: OnceLock::new(),
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
        self.rx.set_coalesce(on);
    }

    /// The port's latency stages.
    pub fn latency(&self) -> &Arc<PortLatency> {
        &self.lat
    }

    /// Queue pairs.
    pub fn pairs(&self) -> u16 {
        self.pairs
    }

    fn conn_mut(&self) -> std::sync::RwLockWriteGuard<'_, Conn> {
        self.conn.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The token marking GSO trailers of this process (tests build such
    /// frames).
    #[cfg(test)]
    pub(crate) fn token(&self) -> u64 {
        process_token()
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
        self.rx.forget();
        self.tx.queues.forget_vrings();
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
    /// instead of waiting for a receive queue lock ([`Receiver::deliver`]).
    pub fn deliver(&self, frame: &[u8], try_only: bool) -> Delivery {
        self.rx.deliver(self, frame, try_only)
    }

    /// Offers frames from the switch in order, coalescing what merges when
    /// that is on; returns how many were taken ([`Receiver::deliver_batch`]).
    pub fn deliver_batch(&self, frames: Frames<'_>, try_only: bool) -> usize {
        self.rx.deliver_batch(self, frames, try_only)
    }

    /// The queue pair a frame from the switch goes to now
    /// ([`Receiver::queue_for`]).
    pub fn queue_for(&self, frame: &[u8]) -> usize {
        self.rx.queue_for(frame)
    }

    /// Starts the thread that signals the port's call eventfds.
    pub fn start_signaller(self: &Arc<Self>) -> Result<(), crate::error::Error> {
        let weak = Arc::downgrade(self);
        let s = Signaller::spawn_timed(&self.id, weak as Weak<dyn IrqTargets>, self.lat.clone())?;
        let _ = self.signaller.set(s);
        Ok(())
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
        let (Some(rxv), Some(txv)) = (vrings.first(), vrings.get(1)) else {
            return;
        };
        self.rx.queues.stash(q, rxv);
        self.tx.queues.stash(q, txv);
    }
}

/// The call eventfds by virtqueue index (receive queue 2n, transmit 2n+1).
impl IrqTargets for NetBackend {
    fn target(&self, index: usize) -> Option<Target> {
        let side = if index.is_multiple_of(2) {
            self.rx.queues.vring(index / 2)
        } else {
            self.tx.queues.vring(index / 2)
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

/// What the receive and transmit sides read of the port.
impl QueuePort for NetBackend {
    fn link_up(&self) -> bool {
        self.link_up.load(Ordering::Acquire)
    }

    fn conn(&self) -> RwLockReadGuard<'_, Conn> {
        self.conn.read().unwrap_or_else(|e| e.into_inner())
    }

    fn counters(&self) -> &[QueueCounters] {
        &self.counters
    }

    fn port_counters(&self) -> &PortCounters {
        &self.port_counters
    }

    /// Raises virtqueue `index`'s call eventfd (used buffers) for the
    /// signaller ([`Signaller::raise`]).
    fn notify(&self, index: usize) {
        if let Some(s) = self.signaller.get() {
            s.raise(index);
        }
    }

    /// Runs `f` as one of the port's own threads ([`Self::serving`]).
    fn serving<R>(&self, f: impl FnOnce() -> R) -> R {
        NetBackend::serving(self, f)
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
                self.rx.activate(thread_id);
                self.wake();
            }
            1 => {
                if let Some(v) = vrings.get(1) {
                    let kick = Doorbell::start();
                    self.tx.serve_kick(self, thread_id, v);
                    kick.done(&self.lat);
                }
            }
            _ => {}
        }
        Ok(())
    }
}
