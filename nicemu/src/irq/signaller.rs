// SPDX-License-Identifier: Apache-2.0
//! Interrupt signalling that never makes a thread of another port wait for
//! a client, which may clear `O_NONBLOCK` on the fd it shares with nicemu at
//! any instant. Raising marks a slot pending ([`Signaller::raise`]); the
//! port's own threads write what they raised at the end of their pass
//! ([`Signaller::serving`]), as does a thread serving another port of the
//! same client process ([`Signaller::set_client`]); the port's signaller
//! thread writes the rest. A write that waits longer than [`WRITE_LIMIT`] is
//! interrupted by the process's watchdog thread; [`Signaller::release`]
//! interrupts one on an fd that was replaced. Why, and each case: the nicemu
//! README, "Interrupt fds" (`nicemu/README.md`).

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::eventfd::{signal, Signalled};
use crate::latency::{self, PortLatency};

/// Slots (interrupt vectors, virtqueues) one signaller serves.
pub const MAX_SLOTS: usize = 128;

const WORDS: usize = MAX_SLOTS / 64;

/// The signal that interrupts a waiting write: its handler does nothing and
/// is installed without `SA_RESTART`, so the write returns `EINTR` (the
/// other calls nicemu's threads wait in retry on `EINTR`). The default
/// action of SIGURG is to ignore it, so no stray one ends nicemu.
const WAKE_SIGNAL: libc::c_int = libc::SIGURG;

/// How long [`Signaller::release`] keeps interrupting a waiting write before
/// it gives up (it cannot take longer unless the thread never runs).
const RELEASE_LIMIT: Duration = Duration::from_secs(5);

/// Longest an interrupt write may wait before the watchdog interrupts it.
pub const WRITE_LIMIT: Duration = Duration::from_millis(100);

/// Writes of one port watched at once: its signaller thread and its own
/// threads (server, receive, timer; a vhost-user port's workers and
/// deliverer), and threads of its client's other ports.
const WRITERS: usize = 8;

/// Ports of the serving port's client one pass may write for at the end
/// (more wake their signaller threads).
const DEFERRED_PORTS: usize = 8;

thread_local! {
    /// The signaller whose port this thread is serving, if any.
    static SERVING: Cell<*const Shared> = const { Cell::new(std::ptr::null()) };
    /// The client process of the port this thread is serving (0: none).
    static SERVING_CLIENT: Cell<i32> = const { Cell::new(0) };
    /// Other ports of that client whose interrupts this thread raised in
    /// its pass and writes at the end of it.
    static DEFERRED: RefCell<Vec<Deferred>> = const { RefCell::new(Vec::new()) };
    /// [`WAKE_SIGNAL`] is unblocked in this thread.
    static UNBLOCKED: Cell<bool> = const { Cell::new(false) };
}

/// A port whose pending interrupts a thread serving another port of the
/// same client writes at the end of its pass.
struct Deferred {
    shared: Arc<Shared>,
    targets: Weak<dyn IrqTargets>,
    /// Its signaller thread, woken when the write cannot be watched.
    thread: Option<std::thread::Thread>,
}

/// Nanoseconds on a process-wide monotonic clock (never 0).
fn now_ns() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

/// The fd a slot is signalled through: one the port keeps (a vfio-user
/// vector's, or nicemu's duplicate of a vhost-user call fd, which the
/// vhost-user-backend crate keeps behind its vring lock).
pub type Target = Arc<File>;

/// What a signaller signals: a port's interrupt fds by slot.
pub trait IrqTargets: Send + Sync {
    /// The fd slot `slot` is signalled through now, if any, made
    /// non-blocking when the port took it ([`super::eventfd::make_non_blocking`];
    /// the client may clear the flag at any time, and a write then waits on
    /// this port's thread alone, at most [`WRITE_LIMIT`]).
    fn target(&self, slot: usize) -> Option<Target>;
    /// What signalling `slot` came to (for the port's counters). A write
    /// that did not go through (`Coalesced`, `Failed`) makes the port check
    /// the fd's `O_NONBLOCK` again, so a client that cleared it costs one
    /// wait of [`WRITE_LIMIT`], not one per interrupt.
    fn signalled(&self, slot: usize, outcome: Signalled);
}

/// State shared by the raising threads, the port's writers and the
/// watchdog.
#[derive(Debug, Default)]
struct Shared {
    pending: [AtomicU64; WORDS],
    /// Bumped by [`Signaller::release`] after fds were replaced or removed.
    epoch: AtomicU64,
    /// While the signaller thread writes: the epoch its target was taken
    /// in, plus one; else 0.
    writing: AtomicU64,
    /// Process id of the port's client (its connection's SO_PEERCRED pid);
    /// 0 while none is connected or it is not known.
    client: AtomicI32,
    /// A write by a thread of another port of the client waited out
    /// [`WRITE_LIMIT`]: from then on (until the client or the fds change)
    /// the port's interrupts go through its signaller thread, so a client
    /// that holds its eventfds up stalls that other port's thread once, not
    /// on every doorbell.
    held_up: AtomicBool,
    /// The signaller thread found nothing pending and sleeps.
    idle: AtomicBool,
    stop: AtomicBool,
    /// Writes in progress: the writer's kernel thread id (0: free) and when
    /// the write started.
    writes: [(AtomicI32, AtomicU64); WRITERS],
    /// Raise times, for the port's latency stages.
    stamps: Stamps,
}

/// When each slot was raised, and where its write's latency goes
/// (`raise_to_irq`, `doorbell_to_irq`).
#[derive(Debug)]
struct Stamps {
    /// When each slot was raised and not yet taken (0: not known).
    raised: [AtomicU64; MAX_SLOTS],
    lat: Arc<PortLatency>,
}

impl Default for Stamps {
    fn default() -> Self {
        Stamps {
            raised: std::array::from_fn(|_| AtomicU64::new(0)),
            lat: Arc::default(),
        }
    }
}

impl Stamps {
    /// Notes the raise of `slot` if it was not pending (a raise racing a
    /// writer may leave a stale or no time: the histogram then has one
    /// value too large, or one fewer).
    fn raise(&self, slot: usize, word: &AtomicU64, bit: u64) {
        if word.load(Ordering::Relaxed) & bit == 0 {
            if let Some(r) = self.raised.get(slot) {
                let _ = r.compare_exchange(0, latency::now(), Ordering::Relaxed, Ordering::Relaxed);
            }
        }
    }

    /// The raise time of `slot`, taken as its write starts.
    fn take(&self, slot: usize) -> u64 {
        self.raised
            .get(slot)
            .map_or(0, |r| r.swap(0, Ordering::Relaxed))
    }

    /// A write of an interrupt raised at `raised`, started at `started`,
    /// came to `r`.
    fn written(&self, raised: u64, started: u64, r: &Signalled) {
        if *r == Signalled::Sent {
            self.lat.irq_written(raised, started);
        }
    }
}

impl Shared {
    /// One write of `fd` by the calling thread, watched: the watchdog
    /// interrupts it after [`WRITE_LIMIT`].
    fn write_watched(&self, fd: &Target) -> Signalled {
        let slot = self.watch_slot();
        let r = signal(fd);
        if let Some(i) = slot {
            self.unwatch(i);
        }
        r
    }

    /// Takes a writer slot for the calling thread, if one is free.
    fn watch_slot(&self) -> Option<usize> {
        if !UNBLOCKED.get() {
            unblock_wake_signal();
            UNBLOCKED.set(true);
        }
        let tid = crate::threads::current_tid();
        let slot = self.writes.iter().position(|(t, _)| {
            t.compare_exchange(0, tid, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })?;
        self.writes[slot].1.store(now_ns(), Ordering::Release);
        Some(slot)
    }

    /// Frees writer slot `i`.
    fn unwatch(&self, i: usize) {
        self.writes[i].1.store(0, Ordering::Release);
        self.writes[i].0.store(0, Ordering::Release);
    }

    /// The port is served to client process `pid` (not 0) now.
    fn served_to(&self, pid: i32) -> bool {
        pid != 0 && self.client.load(Ordering::Acquire) == pid
    }

    /// Interrupts the writes that have waited longer than [`WRITE_LIMIT`].
    fn interrupt_stuck_writes(&self) {
        let limit = WRITE_LIMIT.as_nanos() as u64;
        for (tid, since) in &self.writes {
            let (tid, since) = (tid.load(Ordering::Acquire), since.load(Ordering::Acquire));
            if tid != 0 && since != 0 && now_ns().saturating_sub(since) >= limit {
                // SAFETY: tgkill to a thread of this process (if it has
                // ended, the call fails with ESRCH); the handler does nothing.
                unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, WAKE_SIGNAL) };
            }
        }
    }
}

/// One port's signaller thread and the handle raising threads use.
#[derive(Debug)]
pub struct Signaller {
    shared: Arc<Shared>,
    targets: Weak<dyn IrqTargets>,
    thread: Option<JoinHandle<()>>,
}

impl Signaller {
    /// Starts the signaller thread `irq-NAME` for `targets` (held weakly:
    /// the thread ends when they are gone or the signaller is dropped).
    pub fn spawn(
        name: &str,
        targets: Weak<dyn IrqTargets>,
    ) -> Result<Signaller, crate::error::Error> {
        Self::spawn_timed(name, targets, Arc::default())
    }

    /// [`Self::spawn`], recording each write's latency into `lat`.
    pub fn spawn_timed(
        name: &str,
        targets: Weak<dyn IrqTargets>,
        lat: Arc<PortLatency>,
    ) -> Result<Signaller, crate::error::Error> {
        install_wake_handler();
        let shared = Arc::new(Shared {
            stamps: Stamps {
                lat,
                ..Stamps::default()
            },
            ..Shared::default()
        });
        watch(&shared).map_err(|source| crate::error::Error::Spawn {
            thread: "irq-watchdog".into(),
            source,
        })?;
        let (s, t) = (shared.clone(), targets.clone());
        let thread = crate::threads::spawn(format!("irq-{name}"), move || {
            s.stamps.lat.threads.enter("signaller");
            run(&s, &t)
        })?;
        Ok(Signaller {
            shared,
            targets,
            thread: Some(thread),
        })
    }

    /// Marks `slot` pending; never waits. From a thread that is not serving
    /// the port ([`Self::serving`]) it also wakes the signaller thread. A
    /// slot still pending takes this interrupt with it.
    pub fn raise(&self, slot: usize) {
        let Some(word) = self.shared.pending.get(slot / 64) else {
            return;
        };
        let bit = 1u64 << (slot % 64);
        self.shared.stamps.raise(slot, word, bit);
        let newly = word.fetch_or(bit, Ordering::AcqRel) & bit == 0;
        if newly && SERVING.get() != Arc::as_ptr(&self.shared) && !self.defer_here() {
            self.wake();
        }
    }

    /// Wakes the signaller thread.
    fn wake(&self) {
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// From a thread serving another port of this port's client: notes the
    /// port for a write at the end of the pass (true), unless the pass has
    /// as many noted as it may take.
    fn defer_here(&self) -> bool {
        if !self.shared.served_to(SERVING_CLIENT.get())
            || self.shared.held_up.load(Ordering::Acquire)
        {
            return false;
        }
        DEFERRED.with_borrow_mut(|d| {
            if d.iter().any(|p| Arc::ptr_eq(&p.shared, &self.shared)) {
                return true;
            }
            if d.len() >= DEFERRED_PORTS {
                return false;
            }
            d.push(Deferred {
                shared: self.shared.clone(),
                targets: self.targets.clone(),
                thread: self.thread.as_ref().map(|t| t.thread().clone()),
            });
            true
        })
    }

    /// The port is served to client process `pid` from now on (its
    /// connection's SO_PEERCRED pid; 0 when it goes away): threads serving
    /// another port of the same client write this port's interrupts
    /// themselves.
    pub fn set_client(&self, pid: i32) {
        self.shared.held_up.store(false, Ordering::Release);
        self.shared.client.store(pid.max(0), Ordering::Release);
    }

    /// Runs `f` on one of the port's own threads (serving a message, a
    /// frame, a deadline) and then writes, on this thread, the interrupts
    /// pending for the port — those `f` raised first of all — and those `f`
    /// raised for other ports of the same client, with no device lock held.
    pub fn serving<R>(&self, f: impl FnOnce() -> R) -> R {
        let prev = SERVING.replace(Arc::as_ptr(&self.shared));
        let client = self.shared.client.load(Ordering::Acquire);
        let prev_client = SERVING_CLIENT.replace(client);
        let first_deferred = DEFERRED.with_borrow(Vec::len);
        let r = f();
        SERVING.set(prev);
        SERVING_CLIENT.set(prev_client);
        self.write_pending_here();
        write_deferred(first_deferred, client);
        r
    }

    /// Writes every pending slot on the calling thread.
    fn write_pending_here(&self) {
        if self
            .shared
            .pending
            .iter()
            .any(|w| w.load(Ordering::Relaxed) != 0)
        {
            write_pending(&self.shared, &self.targets, Watch::IfFree);
        }
    }

    /// Call after replacing or removing fds: a signaller write still
    /// waiting on one taken before is interrupted (its interrupt is dropped
    /// with its fd). Returns once no such write is left, within
    /// `RELEASE_LIMIT`.
    pub fn release(&self) {
        let epoch = self.shared.epoch.fetch_add(1, Ordering::AcqRel) + 1;
        self.shared.held_up.store(false, Ordering::Release);
        let Some(t) = &self.thread else { return };
        if t.thread().id() == std::thread::current().id() {
            return;
        }
        let start = Instant::now();
        let mut spins = 0u32;
        loop {
            let w = self.shared.writing.load(Ordering::Acquire);
            if w == 0 || w > epoch || t.is_finished() {
                return;
            }
            if start.elapsed() > RELEASE_LIMIT {
                log::warn!("interrupt signaller did not leave a write in {RELEASE_LIMIT:?}");
                return;
            }
            spins += 1;
            if spins > 16 {
                // SAFETY: the thread is joinable and not joined (we own its
                // JoinHandle), so its pthread_t stays valid; the signal's
                // handler does nothing.
                unsafe { libc::pthread_kill(t.as_pthread_t(), WAKE_SIGNAL) };
                std::thread::sleep(Duration::from_micros(200));
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Waits until every interrupt raised before the call was signalled, at
    /// most `limit`; false on timeout (a client holding a write up).
    pub fn flush(&self, limit: Duration) -> bool {
        let start = Instant::now();
        loop {
            let none_pending = self
                .shared
                .pending
                .iter()
                .all(|w| w.load(Ordering::SeqCst) == 0);
            if none_pending && self.shared.idle.load(Ordering::SeqCst) {
                return true;
            }
            if start.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
}

impl Drop for Signaller {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.release();
        let Some(t) = self.thread.take() else { return };
        t.thread().unpark();
        // Dropped on the signaller thread itself (it held the last
        // reference for a moment): it ends on its own.
        if t.thread().id() == std::thread::current().id() {
            return;
        }
        let start = Instant::now();
        while !t.is_finished() && start.elapsed() < RELEASE_LIMIT {
            std::thread::sleep(Duration::from_millis(1));
        }
        if t.is_finished() {
            let _ = t.join();
        } else {
            log::warn!("interrupt signaller thread did not end; left running");
        }
    }
}

/// Writes, on the calling thread, the interrupts its pass raised for other
/// ports of client `client` (entries from `first` on). A port whose client
/// changed meanwhile, or whose write cannot be watched, is left to its
/// signaller thread.
fn write_deferred(first: usize, client: i32) {
    loop {
        let Some(p) = DEFERRED.with_borrow_mut(|d| (d.len() > first).then(|| d.swap_remove(first)))
        else {
            return;
        };
        if !p.shared.served_to(client) || !write_pending(&p.shared, &p.targets, Watch::Required) {
            if let Some(t) = &p.thread {
                t.unpark();
            }
        }
    }
}

/// Whether a write on a raising thread must be watched by the watchdog.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// The port's own thread: watched when a writer slot is free.
    IfFree,
    /// A thread serving another port of the client: only when watched.
    Required,
}

/// Writes every pending slot of the port on the calling thread; false when
/// some were left pending for its signaller thread (`Watch::Required` and
/// no free writer slot).
fn write_pending(s: &Shared, targets: &Weak<dyn IrqTargets>, watch: Watch) -> bool {
    let Some(t) = targets.upgrade() else {
        return true;
    };
    for (w, word) in s.pending.iter().enumerate() {
        let mut bits = word.swap(0, Ordering::AcqRel);
        while bits != 0 {
            let slot = w * 64 + bits.trailing_zeros() as usize;
            let Some(fd) = t.target(slot) else {
                s.stamps.take(slot);
                bits &= bits - 1;
                continue;
            };
            let watched = s.watch_slot();
            if watched.is_none() && watch == Watch::Required {
                word.fetch_or(bits, Ordering::AcqRel);
                return false;
            }
            let raised = s.stamps.take(slot);
            let started = latency::now();
            let r = signal(&fd);
            if let Some(i) = watched {
                s.unwatch(i);
            }
            s.stamps.written(raised, started, &r);
            if r == Signalled::Interrupted && watch == Watch::Required {
                s.held_up.store(true, Ordering::Release);
            }
            t.signalled(slot, coalesced_if_interrupted(r));
            bits &= bits - 1;
        }
    }
    true
}

/// A write the watchdog interrupted counts as coalesced: the client has not
/// consumed what its eventfd holds.
fn coalesced_if_interrupted(r: Signalled) -> Signalled {
    match r {
        Signalled::Interrupted => Signalled::Coalesced,
        r => r,
    }
}

/// The signaller thread: signals pending slots, sleeps when none are.
fn run(s: &Shared, targets: &Weak<dyn IrqTargets>) {
    while !s.stop.load(Ordering::Acquire) {
        let mut any = false;
        for (w, word) in s.pending.iter().enumerate() {
            let mut bits = word.swap(0, Ordering::AcqRel);
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                any = true;
                let Some(t) = targets.upgrade() else { return };
                fire(s, &*t, w * 64 + b);
            }
        }
        if !any {
            s.idle.store(true, Ordering::SeqCst);
            if s.pending.iter().all(|w| w.load(Ordering::SeqCst) == 0) {
                std::thread::park();
            }
            s.idle.store(false, Ordering::SeqCst);
        }
    }
}

/// Writes one slot's fd from the signaller thread. A write interrupted
/// because its fd was replaced meanwhile ([`Signaller::release`]) is
/// dropped; one the watchdog interrupted counts as coalesced.
fn fire(s: &Shared, t: &dyn IrqTargets, slot: usize) {
    let raised = s.stamps.take(slot);
    let epoch = s.epoch.load(Ordering::Acquire);
    let Some(fd) = t.target(slot) else { return };
    s.writing.store(epoch + 1, Ordering::Release);
    let started = latency::now();
    let r = s.write_watched(&fd);
    s.writing.store(0, Ordering::Release);
    s.stamps.written(raised, started, &r);
    if r == Signalled::Interrupted && s.epoch.load(Ordering::Acquire) != epoch {
        return;
    }
    t.signalled(slot, coalesced_if_interrupted(r));
}

/// The signallers the watchdog looks after.
fn watched() -> &'static Mutex<Vec<Weak<Shared>>> {
    static LIST: OnceLock<Mutex<Vec<Weak<Shared>>>> = OnceLock::new();
    LIST.get_or_init(Mutex::default)
}

/// Puts `s` under the process's watchdog thread (started with the first).
fn watch(s: &Arc<Shared>) -> std::io::Result<()> {
    static STARTED: OnceLock<std::io::Result<()>> = OnceLock::new();
    let started = STARTED.get_or_init(|| {
        std::thread::Builder::new()
            .name("irq-watchdog".into())
            .spawn(watchdog)
            .map(|_| ())
    });
    if let Err(e) = started {
        return Err(std::io::Error::new(e.kind(), e.to_string()));
    }
    let mut l = watched().lock().unwrap_or_else(|e| e.into_inner());
    l.retain(|w| w.strong_count() > 0);
    l.push(Arc::downgrade(s));
    Ok(())
}

/// Every half [`WRITE_LIMIT`], interrupts writes that waited longer.
fn watchdog() {
    loop {
        std::thread::sleep(WRITE_LIMIT / 2);
        let l = watched().lock().unwrap_or_else(|e| e.into_inner());
        for s in l.iter().filter_map(Weak::upgrade) {
            s.interrupt_stuck_writes();
        }
    }
}

extern "C" fn on_wake_signal(_: libc::c_int) {}

/// Installs the do-nothing handler of [`WAKE_SIGNAL`] (once per process).
fn install_wake_handler() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        // SAFETY: a zeroed sigaction is valid; the handler is an extern "C"
        // fn that touches nothing (async-signal-safe); no SA_RESTART, so a
        // waiting write returns EINTR.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_wake_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&raw mut sa.sa_mask);
            if libc::sigaction(WAKE_SIGNAL, &raw const sa, std::ptr::null_mut()) != 0 {
                log::warn!(
                    "cannot install the interrupt signaller's wake handler: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    });
}

/// Lets [`WAKE_SIGNAL`] reach the calling thread whatever mask it inherited.
fn unblock_wake_signal() {
    // SAFETY: a sigset_t we own, initialised by sigemptyset; pthread_sigmask
    // only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, WAKE_SIGNAL);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use std::sync::Mutex;
    use vmm_sys_util::eventfd::EventFd;

    /// Slot 0: a blocking eventfd one below its maximum, handed out as a
    /// client that cleared `O_NONBLOCK` just after the check leaves it (the
    /// write waits); slot 1: a good eventfd.
    struct Port {
        fds: Mutex<[Option<Arc<File>>; 2]>,
        outcomes: Mutex<Vec<(usize, Signalled)>>,
        stuck_writes: AtomicU64,
    }

    impl IrqTargets for Port {
        fn target(&self, slot: usize) -> Option<Target> {
            let f = self.fds.lock().unwrap().get(slot)?.clone()?;
            if slot == 0 {
                self.stuck_writes.fetch_add(1, Ordering::SeqCst);
                // SAFETY: clears O_NONBLOCK of our own test eventfd, so the
                // write below waits deterministically.
                unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, 0) };
            }
            Some(f)
        }
        fn signalled(&self, slot: usize, outcome: Signalled) {
            self.outcomes.lock().unwrap().push((slot, outcome));
        }
    }

    /// A blocking eventfd one below its maximum: a write to it waits.
    fn full_eventfd() -> EventFd {
        let full = EventFd::new(0).unwrap();
        full.write(u64::MAX - 1).unwrap();
        full
    }

    fn port(slot0: Option<&EventFd>, slot1: Option<&EventFd>) -> Arc<Port> {
        Arc::new(Port {
            fds: Mutex::new([slot0.map(file_of), slot1.map(file_of)]),
            outcomes: Mutex::default(),
            stuck_writes: AtomicU64::new(0),
        })
    }

    fn file_of(e: &EventFd) -> Arc<File> {
        // SAFETY: the fd belongs to `e`, alive for this borrow.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(e.as_raw_fd()) };
        Arc::new(File::from(fd.try_clone_to_owned().unwrap()))
    }

    #[test]
    fn a_write_that_waits_stalls_only_its_own_signaller_until_released() {
        let full = full_eventfd();
        let good = EventFd::new(libc::EFD_NONBLOCK).unwrap();
        let stuck_port = port(Some(&full), None);
        let other_port = port(None, Some(&good));
        let weak = |p: &Arc<Port>| Arc::downgrade(p) as Weak<dyn IrqTargets>;
        let a = Signaller::spawn("stuck", weak(&stuck_port)).unwrap();
        let b = Signaller::spawn("other", weak(&other_port)).unwrap();
        a.raise(0);
        let t = Instant::now();
        while stuck_port.stuck_writes.load(Ordering::SeqCst) == 0 {
            assert!(t.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
        // The signaller of the stuck port waits in write(); raising more
        // returns at once, and the other port's interrupts are delivered.
        let t = Instant::now();
        for _ in 0..1000 {
            a.raise(0);
            a.raise(1);
            b.raise(1);
        }
        assert!(t.elapsed() < Duration::from_secs(1), "raising waited");
        assert!(b.flush(Duration::from_secs(5)), "the other port is served");
        assert!(good.read().unwrap() >= 1);
        assert!(!a.flush(Duration::from_millis(100)), "held by its client");
        // The client's fd is removed (reset, disconnect): the write is
        // interrupted and the port's signaller works again.
        stuck_port.fds.lock().unwrap()[0] = None;
        stuck_port.fds.lock().unwrap()[1] = Some(file_of(&good));
        let t = Instant::now();
        a.release();
        assert!(t.elapsed() < Duration::from_secs(2), "release was bounded");
        a.raise(1);
        assert!(a.flush(Duration::from_secs(5)));
        assert!(good.read().unwrap() >= 1);
        // Writes the watchdog cut short count as coalesced.
        let outcomes = stuck_port.outcomes.lock().unwrap();
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, (1, Signalled::Sent) | (0, Signalled::Coalesced))),
            "{outcomes:?}"
        );
        assert!(outcomes.contains(&(1, Signalled::Sent)));
        assert_eq!(full.read().unwrap(), u64::MAX - 1, "nothing was added");
    }

    /// The port's own server thread writes what it raised before `serving`
    /// returns (no hop to the signaller thread), and a write of its that
    /// waits is interrupted after about [`WRITE_LIMIT`] and counted.
    #[test]
    fn the_own_thread_writes_its_interrupts_and_is_not_held_for_long() {
        let full = full_eventfd();
        let good = EventFd::new(libc::EFD_NONBLOCK).unwrap();
        let port = port(Some(&full), Some(&good));
        let s = Signaller::spawn("own", Arc::downgrade(&port) as Weak<dyn IrqTargets>).unwrap();
        s.serving(|| s.raise(1));
        assert_eq!(good.read().unwrap(), 1, "written before serving returned");
        let t = Instant::now();
        s.serving(|| s.raise(0));
        let waited = t.elapsed();
        assert!(
            waited >= WRITE_LIMIT / 2 && waited < WRITE_LIMIT * 20,
            "the own thread waited {waited:?}"
        );
        assert_eq!(
            *port.outcomes.lock().unwrap(),
            [(1, Signalled::Sent), (0, Signalled::Coalesced)]
        );
        assert_eq!(full.read().unwrap(), u64::MAX - 1, "nothing was added");
    }

    /// Slot 0 of a port: an eventfd; notes which thread wrote it.
    struct OneFd {
        fd: Arc<File>,
        writers: Mutex<Vec<std::thread::ThreadId>>,
    }

    impl IrqTargets for OneFd {
        fn target(&self, slot: usize) -> Option<Target> {
            (slot == 0).then(|| self.fd.clone())
        }
        fn signalled(&self, _slot: usize, _outcome: Signalled) {
            self.writers
                .lock()
                .unwrap()
                .push(std::thread::current().id());
        }
    }

    fn one_fd(e: &EventFd) -> Arc<OneFd> {
        Arc::new(OneFd {
            fd: file_of(e),
            writers: Mutex::default(),
        })
    }

    /// A thread serving port A writes what it raised for port B itself, at
    /// the end of its pass, when both are served to the same client process
    /// (the two ports of one VM); for a port of another client, or one with
    /// none, it leaves the write to that port's signaller thread.
    #[test]
    fn the_same_clients_other_port_is_written_by_the_serving_thread() {
        let (ea, eb) = (
            EventFd::new(libc::EFD_NONBLOCK).unwrap(),
            EventFd::new(libc::EFD_NONBLOCK).unwrap(),
        );
        let (pa, pb) = (one_fd(&ea), one_fd(&eb));
        let weak = |p: &Arc<OneFd>| Arc::downgrade(p) as Weak<dyn IrqTargets>;
        let a = Signaller::spawn("a", weak(&pa)).unwrap();
        let b = Signaller::spawn("b", weak(&pb)).unwrap();
        let me = std::thread::current().id();
        a.set_client(4242);
        b.set_client(4242);
        a.serving(|| b.raise(0));
        assert_eq!(eb.read().unwrap(), 1, "written before serving returned");
        assert_eq!(*pb.writers.lock().unwrap(), [me]);
        for other in [4243, 0] {
            pb.writers.lock().unwrap().clear();
            b.set_client(other);
            a.serving(|| b.raise(0));
            assert!(b.flush(Duration::from_secs(5)));
            assert_eq!(eb.read().unwrap(), 1);
            let w = pb.writers.lock().unwrap();
            assert_eq!(w.len(), 1);
            assert_ne!(w[0], me, "client {other}: left to b's signaller thread");
        }
    }

    /// Port a (client 100) signalling `good`, port b (client `b_client`)
    /// whose slot 0 is the full, blocking `full`, with their signallers.
    fn good_and_stuck(
        full: &EventFd,
        good: &EventFd,
        b_client: i32,
    ) -> (Arc<Port>, Arc<OneFd>, Signaller, Signaller) {
        let stuck = port(Some(full), None);
        let own = one_fd(good);
        let a = Signaller::spawn("a", Arc::downgrade(&own) as Weak<dyn IrqTargets>).unwrap();
        let b = Signaller::spawn("b", Arc::downgrade(&stuck) as Weak<dyn IrqTargets>).unwrap();
        a.set_client(100);
        b.set_client(b_client);
        (stuck, own, a, b)
    }

    /// A client that keeps its eventfd full and blocking holds up no thread
    /// serving another client's port: the write stays with its own port's
    /// signaller.
    #[test]
    fn another_clients_stuck_fd_does_not_hold_the_serving_thread() {
        let (full, good) = (full_eventfd(), EventFd::new(libc::EFD_NONBLOCK).unwrap());
        let (stuck, _own, a, b) = good_and_stuck(&full, &good, 200);
        let t = Instant::now();
        for _ in 0..20 {
            a.serving(|| {
                b.raise(0);
                a.raise(0);
            });
        }
        assert!(
            t.elapsed() < WRITE_LIMIT,
            "a's thread waited {:?}",
            t.elapsed()
        );
        assert!(good.read().unwrap() >= 1);
        stuck.fds.lock().unwrap()[0] = None;
        b.release();
        assert_eq!(full.read().unwrap(), u64::MAX - 1, "nothing was added");
    }

    /// The same client's other port holding a write up stalls the serving
    /// thread once (until the watchdog), then its interrupts go through its
    /// own signaller thread: not once per doorbell. A new connection of
    /// that port gives it the shortcut back.
    #[test]
    fn the_same_clients_stuck_fd_holds_the_serving_thread_once() {
        let (full, good) = (full_eventfd(), EventFd::new(libc::EFD_NONBLOCK).unwrap());
        let (stuck, _own, a, b) = good_and_stuck(&full, &good, 100);
        let pass = || {
            let t = Instant::now();
            a.serving(|| {
                b.raise(0);
                a.raise(0);
            });
            t.elapsed()
        };
        let first = pass();
        assert!(
            first >= WRITE_LIMIT / 2,
            "the first write waited: {first:?}"
        );
        let t = Instant::now();
        for _ in 0..20 {
            pass();
        }
        assert!(
            t.elapsed() < WRITE_LIMIT,
            "later passes waited {:?}",
            t.elapsed()
        );
        // The stuck write now waits on b's signaller; a reconnect (or new
        // fds) gives the shortcut back.
        assert!(b.shared.held_up.load(Ordering::Acquire));
        b.set_client(100);
        assert!(!b.shared.held_up.load(Ordering::Acquire));
        stuck.fds.lock().unwrap()[0] = None;
        b.release();
        assert!(good.read().unwrap() >= 1);
    }

    #[test]
    fn dropping_a_signaller_with_a_waiting_write_ends_its_thread() {
        let full = full_eventfd();
        let port = port(Some(&full), None);
        let s = Signaller::spawn("drop", Arc::downgrade(&port) as Weak<dyn IrqTargets>).unwrap();
        s.raise(0);
        let t = Instant::now();
        while port.stuck_writes.load(Ordering::SeqCst) == 0 {
            assert!(t.elapsed() < Duration::from_secs(5));
            std::thread::sleep(Duration::from_millis(1));
        }
        port.fds.lock().unwrap()[0] = None;
        let t = Instant::now();
        drop(s);
        assert!(t.elapsed() < Duration::from_secs(2));
    }
}
