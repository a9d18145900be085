// SPDX-License-Identifier: Apache-2.0
//! virtio-net ports served over vhost-user.
//!
//! Each `--device virtio-net` port is one [`VirtioNetPort`]: a vhost-user-net
//! backend ([`backend::NetBackend`]) with one worker thread per queue pair,
//! attached to its network's switch. Frames the guest transmits go into the
//! switch from the worker of the queue they came on; frames for the guest
//! are written into a receive queue chosen by a flow hash, directly from the
//! sender's thread when the queue is idle, else from the port's receive
//! backlog (one FIFO per queue pair, so a queue without buffers holds up only
//! its own flows).
//!
//! Offloads: the guest may hand over partially checksummed frames and TCP
//! segments up to 64 KiB (`CSUM`, `HOST_TSO4/6`). The transmitting port
//! segments and checksums them (`nicemu_net_util::tso::segment`), so
//! every destination — igb/ixgbe functions, wires, floods — receives
//! MTU-sized frames with valid checksums, and received plain frames whose
//! checksums verify are marked `DATA_VALID` (the guest skips checksumming).
//! With `NICEMU_VHOST_GSO_PASS=1` a segment instead crosses the switch whole
//! (a trailer only this process recognises carries its GSO fields) when its
//! destination MAC is behind a virtio-net port of the same network whose
//! driver accepts GSO (`GUEST_TSO4/6`); see [`tx::gso_pass_enabled`]
//! for why that is not the default yet.
//!
//! Receive coalescing (`coalesce=on`; off by default, see below): a
//! transmit pass hands the switch its frames as one
//! batch, and frames reach a port together from such a batch or from its
//! backlog. Consecutive TCP segments of one connection among them that
//! Linux's GRO would merge (`nicemu_net_util::coalesce::gro_run`) go to a driver
//! that negotiated `GUEST_TSO4/6` (with mergeable buffers) as one GSO frame
//! of up to 64 KiB: `NEEDS_CSUM` from the TCP header, `gso_size` the
//! segments' size (counters `rx_coalesced`, `rx_coalesced_segs`). Nothing
//! is held back for frames still to come. virtio_net shows the offload as
//! `rx-gro-hw`; turning it off (`VIRTIO_NET_CTRL_GUEST_OFFLOADS_SET`) does
//! not reach a vhost-user backend: QEMU's virtio-net handles the control
//! queue and applies guest offloads through the peer's `set_offload`,
//! which its vhost-user net client does not have (QEMU `net/vhost-user.c`),
//! so a port with `coalesce=on` coalesces for as long as the features
//! negotiated allow. That is why it is off by default: virtio_net also
//! clears those offloads when an XDP program is attached and then drops
//! every GSO or partially checksummed frame it receives
//! (`mergeable_xdp_get_buf`), so a TCP stream into an XDP guest would stall.
//!
//! Connections: when the frontend disconnects (VM shutdown or restart) the
//! port forgets the connection and listens again on the same socket; other
//! ports are not affected. [`VirtioNetPort::set_link`] takes the link down
//! by closing the connection and not listening until the link comes back:
//! QEMU's virtio-net reports the vhost-user disconnect to the guest as link
//! down through a configuration-change interrupt, and link up when its
//! chardev (`reconnect-ms=`) connects again. This is the only way a
//! vhost-user-net backend can move the guest's carrier: QEMU's virtio-net
//! serves the config space's status from its own state (it reads a backend's
//! config only for vhost-vdpa), registers no config notifier for vhost-user,
//! and therefore masks `VHOST_USER_PROTOCOL_F_CONFIG` off (QEMU 11.1.3 warns
//! "vhost-user backend supports VHOST_USER_PROTOCOL_F_CONFIG but QEMU does
//! not." when offered it), so `BACKEND_CONFIG_CHANGE_MSG` is not available.
//! The backend's `get_config` still reports the link state for
//! frontends that do read it.

pub mod backend;
pub mod backlog;
mod calls;
pub mod config;
pub mod counters;
pub mod memory;
pub mod offload;
pub mod port;
mod proxy;
pub mod rx;
pub mod tx;

#[cfg(test)]
mod tests;

use std::os::unix::ffi::OsStringExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use vhost_user_backend::VhostUserDaemon;
use vm_memory::{GuestMemoryAtomic, GuestMemoryMmap};

use crate::config::DeviceSpec;
use crate::error::Error;
use crate::latency::TimedRx;
use crate::switch::{PortCounters, PortSlot, Switch};
use backend::NetBackend;
use backlog::Backlog;
use counters::{PortStats, QueueStats};
use nicemu_device_models::{Delivery, DriverView, Frames, Introspect, NetPort};
use tx::GsoPeers;

/// A port's counters as `nicemu ctl stats` shows them: the backend's and the switch's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PortView {
    /// The backend's port counters.
    #[serde(flatten)]
    pub port: PortStats,
    /// Frames the port sent into the switch.
    pub switch_tx_frames: u64,
    /// Frames the switch handed or queued to the port.
    pub switch_rx_frames: u64,
    /// Frames the switch dropped because the port's receive queue was full
    /// (the guest did not take frames as fast as they came).
    pub switch_rx_drops: u64,
    /// Frames the guest sent shorter than an Ethernet header, dropped.
    pub switch_runt_drops: u64,
}

/// A running virtio-net port; cheap to clone (the control socket keeps one).
#[derive(Clone, Debug)]
pub struct VirtioNetPort {
    inner: Arc<Shared>,
}

struct Shared {
    backend: Arc<NetBackend>,
    /// The switch's counters of this port (its receive-queue drops).
    switch_counters: Arc<crate::switch::PortCounters>,
    socket: PathBuf,
    /// The frontend's connection while one is up.
    conn: Mutex<Option<UnixStream>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("socket", &self.socket)
            .finish()
    }
}

impl VirtioNetPort {
    /// Attaches the port to `switch` and listens on its socket.
    pub fn start(spec: &DeviceSpec, switch: &Arc<Switch>) -> Result<Self, Error> {
        let listener = crate::socket::listen(&spec.socket)?;
        let direct = Arc::new(PortSlot::default());
        let (port, rx) = switch.attach_direct(Some(direct.clone()));
        let switch_counters = port.counters.clone();
        let backend = Arc::new(NetBackend::new(
            spec.id.clone(),
            spec.mac,
            spec.queues.max(1),
            Box::new(port),
            GsoPeers::for_switch(switch),
        ));
        backend.set_coalesce(spec.coalesce);
        backend.start_signaller()?;
        let inner = Arc::new(Shared {
            backend: backend.clone(),
            switch_counters,
            socket: spec.socket.clone(),
            conn: Mutex::new(None),
        });
        // Frames the switch queued while the guest was busy: the dispatcher
        // moves them into per-queue FIFOs, the deliverer writes them into
        // the guest's queues as buffers arrive (see [`backlog`]).
        let backlog = Arc::new(Backlog::new(usize::from(backend.pairs())));
        let (rb, bl) = (backend.clone(), backlog.clone());
        crate::threads::spawn(format!("rx-{}", spec.id), move || {
            crate::sched::enter_data_path();
            rb.latency().threads.enter("receive");
            while let Some(frame) = rx.recv() {
                bl.push(&rb, &frame);
                rx.recycle(frame);
            }
            bl.close(&rb);
        })?;
        let (rb, bl) = (backend.clone(), backlog);
        crate::threads::spawn(format!("rxq-{}", spec.id), move || {
            crate::sched::enter_data_path();
            rb.latency().threads.enter("receive");
            loop {
                let seen = rb.generation();
                if rb.serving(|| bl.pump(&rb)) {
                    continue;
                }
                if bl.is_empty() {
                    if bl.is_closed() {
                        break;
                    }
                    // Idle: a pushed frame bumps the generation.
                    rb.wait(seen, Duration::from_secs(1));
                } else {
                    // Waiting for buffers: a receive kick bumps it; the
                    // timeout only bounds a missed one.
                    rb.wait(seen, Duration::from_millis(100));
                }
            }
        })?;
        let s = inner.clone();
        crate::threads::spawn(format!("vhost-{}", spec.id), move || {
            // The vhost-user daemon's queue workers are spawned from here
            // and inherit the policy.
            crate::sched::enter_doorbell_path();
            serve(&s, Some(listener))
        })?;
        let port = VirtioNetPort { inner };
        direct.set(Arc::new(TimedRx::new(
            Arc::new(port.clone()),
            backend.latency().clone(),
        )));
        Ok(port)
    }

    /// The port's latency stages (`ctl latency`).
    pub fn latency(&self) -> &Arc<crate::latency::PortLatency> {
        self.inner.backend.latency()
    }

    /// Sets the link state. Down: traffic is dropped (counted), the
    /// connection is closed and the socket is not listened on, so the
    /// frontend reports link down to the guest; up: listening again.
    pub fn set_link(&self, up: bool) {
        let b = &self.inner.backend;
        if b.link_up.swap(up, Ordering::AcqRel) == up {
            return;
        }
        log::info!("{}: link {}", b.id, if up { "up" } else { "down" });
        b.update_accept();
        b.wake();
        if !up {
            match lock(&self.inner.conn).as_ref() {
                Some(c) => {
                    let _ = c.shutdown(std::net::Shutdown::Both);
                }
                // Idle in accept(): a connection of our own wakes it.
                None => drop(UnixStream::connect(&self.inner.socket)),
            }
        }
    }

    /// The link state.
    pub fn link_up(&self) -> bool {
        self.inner.backend.link_up.load(Ordering::Acquire)
    }

    /// True while a frontend is connected.
    pub fn connected(&self) -> bool {
        self.inner.backend.connected.load(Ordering::Acquire)
    }

    /// Counters of each queue pair.
    pub fn queue_stats(&self) -> Vec<QueueStats> {
        self.inner
            .backend
            .counters
            .iter()
            .map(|c| c.snapshot())
            .collect()
    }

    /// Counters of the port, with the switch's counters of it.
    pub fn port_stats(&self) -> PortView {
        let sw = &self.inner.switch_counters;
        PortView {
            port: self.inner.backend.port_counters.snapshot(),
            switch_tx_frames: sw.tx_frames.load(Ordering::Relaxed),
            switch_rx_frames: sw.rx_frames.load(Ordering::Relaxed),
            switch_rx_drops: sw.rx_drops.load(Ordering::Relaxed),
            switch_runt_drops: sw.runt_drops.load(Ordering::Relaxed),
        }
    }

    /// The counters of the port's network.
    pub fn net_counters(&self) -> &crate::switch::NetCounters {
        &self.inner.switch_counters.net
    }

    /// The switch's counters of the port (and its capture slot).
    pub fn switch_counters(&self) -> &Arc<PortCounters> {
        &self.inner.switch_counters
    }

    /// The socket the port listens on.
    pub fn socket(&self) -> &Path {
        &self.inner.socket
    }
}

/// Per-queue counters of guest mistakes: descriptor chains and offload
/// requests the port dropped (and counted).
const QUEUE_ERRORS: [&str; 8] = [
    "rx_too_big",
    "rx_bad_chain",
    "tx_bad_write_only",
    "tx_bad_too_long",
    "tx_bad_too_big",
    "tx_bad_address",
    "tx_bad_runt",
    "tx_bad_offload",
];

impl NetPort for VirtioNetPort {
    /// The port takes a frame or is busy while its guest has no receive
    /// buffers; it keeps no IEEE 1588 stamps, so `sent_ns` is not used.
    fn deliver(&self, frame: &[u8], _sent_ns: Option<u64>, wait: bool) -> Delivery {
        self.inner.backend.deliver(frame, !wait)
    }

    /// Frames that arrive together may be coalesced
    /// ([`NetBackend::deliver_batch`]).
    fn deliver_batch(&self, frames: Frames<'_>, _sent_ns: Option<u64>, wait: bool) -> usize {
        self.inner.backend.deliver_batch(frames, !wait)
    }

    fn set_link(&self, up: bool) {
        VirtioNetPort::set_link(self, up);
    }

    fn link_up(&self) -> bool {
        VirtioNetPort::link_up(self)
    }
}

impl Introspect for VirtioNetPort {
    fn model(&self) -> &'static str {
        "virtio-net"
    }

    /// The port's counters, then each queue pair's as `name[pair]`.
    fn counters(&self) -> Vec<(String, u64)> {
        let port = self.inner.backend.port_counters.snapshot();
        let mut out: Vec<(String, u64)> = port
            .list()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        for (i, q) in self.queue_stats().iter().enumerate() {
            out.extend(q.list().into_iter().map(|(k, v)| (format!("{k}[{i}]"), v)));
        }
        out
    }

    /// Chains and offload requests dropped on every queue pair, memory
    /// tables refused, and used-ring interrupts the client's fds did not
    /// take.
    fn error_counters(&self) -> Vec<(&'static str, u64)> {
        let queues: Vec<_> = self.queue_stats().iter().map(|q| q.list()).collect();
        let mut out: Vec<(&'static str, u64)> = QUEUE_ERRORS
            .iter()
            .map(|name| {
                let sum = queues
                    .iter()
                    .flatten()
                    .filter(|(k, _)| k == name)
                    .map(|(_, v)| v)
                    .sum();
                (*name, sum)
            })
            .collect();
        let p = self.inner.backend.port_counters.snapshot();
        out.extend([
            ("mem_refused", p.mem_refused),
            ("irq_coalesced", p.irq_coalesced),
            ("irq_failed", p.irq_failed),
        ]);
        out
    }

    /// A connected frontend is the driver; every queue pair it may use is
    /// listed.
    fn driver_view(&self) -> DriverView {
        let connected = self.connected();
        let pairs: Vec<u16> = (0..self.inner.backend.pairs()).collect();
        DriverView {
            link_up: self.link_up(),
            rx_enabled: connected,
            tx_enabled: connected,
            rx_queues: pairs.clone(),
            tx_queues: pairs,
            interrupts: "vhost-user".into(),
            driver_loaded: connected,
        }
    }
}

/// Listens on the port's socket, creating it (again) when needed.
fn bind(path: &Path) -> std::io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    crate::socket::bind_private(path)
}

/// Accepts frontends one after another for as long as the process runs.
/// Each connection is relayed ([`proxy`]) to the vhost-user daemon over a
/// private connection ([`connect_daemon`]).
fn serve(s: &Shared, mut listener: Option<UnixListener>) {
    let b = &s.backend;
    let backoff = || std::thread::sleep(Duration::from_secs(1));
    loop {
        if !b.link_up.load(Ordering::Acquire) {
            // Link down: not listening, so the frontend cannot attach.
            if listener.take().is_some() {
                let _ = std::fs::remove_file(&s.socket);
            }
            let seen = b.generation();
            b.wait(seen, Duration::from_millis(200));
            continue;
        }
        let l = match listener.as_mut() {
            Some(l) => l,
            None => match bind(&s.socket) {
                Ok(l) => listener.insert(l),
                Err(e) => {
                    log::error!("{}: cannot listen on {}: {e}", b.id, s.socket.display());
                    backoff();
                    continue;
                }
            },
        };
        let frontend = match l.accept() {
            Ok((c, _)) => c,
            Err(e) => {
                log::warn!("{}: accept on {}: {e}", b.id, s.socket.display());
                backoff();
                continue;
            }
        };
        if !b.link_up.load(Ordering::Acquire) {
            continue;
        }
        match crate::socket::peer_pid(&frontend) {
            Ok(pid) => b.set_client(pid),
            Err(e) => log::warn!("{}: cannot read the frontend's credentials: {e}", b.id),
        }
        if let Err(e) = run_connection(s, frontend) {
            log::warn!("{}: connection failed: {e}", b.id);
            backoff();
        }
        b.disconnected();
        log::info!(
            "{}: frontend disconnected; listening again ({:?}; queues {:?})",
            b.id,
            b.port_counters.snapshot(),
            b.counters.iter().map(|c| c.snapshot()).collect::<Vec<_>>()
        );
    }
}

/// Connects a new vhost-user daemon to the relay. No other process can
/// reach the daemon: the daemon connects (as a client) to a socket of mode
/// 0600 in a fresh mode-0700 directory (`mkdtemp`), the relay accepts only a
/// connection from this very process (SO_PEERCRED pid), and socket and
/// directory are removed as soon as it is accepted.
fn connect_daemon(b: &Arc<NetBackend>) -> std::io::Result<(DaemonGuard, UnixStream)> {
    let dir = PrivateDir::new(&b.id)?;
    let path = dir.0.join("handler.sock");
    let l = crate::socket::bind_private(&path)?;
    let mem = GuestMemoryAtomic::new(GuestMemoryMmap::<()>::default());
    let daemon = VhostUserDaemon::new(format!("vhost-{}", b.id), b.clone(), mem);
    let mut daemon = DaemonGuard {
        daemon: Some(daemon.map_err(|e| std::io::Error::other(e.to_string()))?),
        backend: b.clone(),
    };
    let path_str = path
        .to_str()
        .ok_or_else(|| std::io::Error::other("temporary directory path is not UTF-8"))?;
    daemon
        .get()
        .start_client(path_str)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    // The daemon's connect() has completed: its connection is queued.
    l.set_nonblocking(true)?;
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    loop {
        let (c, _) = l.accept()?;
        if crate::socket::peer_pid(&c)? == me {
            c.set_nonblocking(false)?;
            return Ok((daemon, c));
        }
        log::warn!(
            "{}: refused a foreign connection to the handler socket",
            b.id
        );
    }
}

type Daemon = VhostUserDaemon<Arc<NetBackend>>;

/// A daemon that, when dropped, is dropped first (its workers joined) and
/// then has the exit-event descriptors it leaks closed.
struct DaemonGuard {
    daemon: Option<Daemon>,
    backend: Arc<NetBackend>,
}

impl DaemonGuard {
    fn get(&mut self) -> &mut Daemon {
        self.daemon.as_mut().expect("present until dropped")
    }
}

impl Drop for DaemonGuard {
    fn drop(&mut self) {
        drop(self.daemon.take());
        // SAFETY: the daemon was just dropped: VhostUserHandler's drop
        // joined its workers, the only users of those descriptors.
        unsafe { self.backend.close_exit_fds() };
    }
}

/// A fresh directory of mode 0700, removed (with its contents) when dropped.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new(id: &str) -> std::io::Result<PrivateDir> {
        let t =
            std::env::temp_dir().join(format!("nicemu-vhost-{}-{id}-XXXXXX", std::process::id()));
        let mut t = std::ffi::CString::new(t.into_os_string().into_encoded_bytes())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?
            .into_bytes_with_nul();
        // SAFETY: `t` is a writable NUL-terminated template ending in XXXXXX;
        // mkdtemp rewrites those six bytes in place.
        if unsafe { libc::mkdtemp(t.as_mut_ptr().cast()) }.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        t.pop();
        Ok(PrivateDir(PathBuf::from(std::ffi::OsString::from_vec(t))))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serves one frontend connection until it ends.
fn run_connection(s: &Shared, frontend: UnixStream) -> std::io::Result<()> {
    let b = &s.backend;
    let (mut daemon, to_handler) = connect_daemon(b)?;
    counters::inc(&b.port_counters.connections);
    b.connected.store(true, Ordering::Release);
    b.update_accept();
    log::info!("{}: frontend connected on {}", b.id, s.socket.display());
    let reply = Arc::new(Mutex::new(frontend.try_clone()?));
    *lock(&s.conn) = Some(frontend.try_clone()?);
    let (h1, f1, r1, b1) = (to_handler.try_clone()?, frontend, reply.clone(), b.clone());
    let up = std::thread::Builder::new()
        .name(format!("vhost-up-{}", b.id))
        .spawn(move || {
            proxy::frontend_to_handler(&f1, &h1, &r1, &b1.id, &|| b1.call_fds_changed())
        })?;
    let h2 = to_handler.try_clone()?;
    let down = std::thread::Builder::new()
        .name(format!("vhost-down-{}", b.id))
        .spawn(move || proxy::handler_to_frontend(&h2, &reply))?;
    if let Err(e) = daemon.get().wait() {
        log::info!("{}: connection ended: {e}", b.id);
    }
    if let Some(c) = lock(&s.conn).take() {
        let _ = c.shutdown(std::net::Shutdown::Both);
    }
    let _ = to_handler.shutdown(std::net::Shutdown::Both);
    let _ = up.join();
    let _ = down.join();
    for h in daemon.get().get_epoll_handlers() {
        h.send_exit_event();
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
