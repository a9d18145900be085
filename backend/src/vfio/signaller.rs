// SPDX-License-Identifier: Apache-2.0
//! Interrupt signalling that never makes a device thread wait for a client.
//!
//! An interrupt fd (a vfio-user SET_IRQS eventfd, a vhost-user call eventfd)
//! is a file description nicemu shares with its client, and the client may
//! clear `O_NONBLOCK` on it at any instant — also between nicemu's check of
//! the flag and its write, when a full eventfd then makes the write wait until
//! the client reads. An eventfd has no per-call non-blocking write (`pwritev2`
//! with `RWF_NOWAIT` answers `EOPNOTSUPP` on Linux 6.18) and cannot be reopened
//! as a private description (an anonymous inode). So the threads that raise
//! interrupts — the port's own, another port's thread delivering a frame
//! through the switch, the timer — never write: they set the slot's pending
//! bit and wake the port's signaller thread, which writes. A client that makes
//! that write wait stalls only its own port's interrupts, which stay pending
//! and merge as a masked MSI-X vector's do (PCI 3.0 §6.8.3.5). When the
//! port's fds are replaced or removed (SET_IRQS, reset, disconnect) a write
//! still waiting on an old one is interrupted ([`Signaller::release`]: a
//! signal to that thread, `EINTR`), so the next client is served.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::thread::JoinHandleExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::irq::{signal, Signalled};
use crate::latency::{self, PortLatency};

/// Slots (interrupt vectors, virtqueues) one signaller serves.
pub const MAX_SLOTS: usize = 128;

const WORDS: usize = MAX_SLOTS / 64;

/// The signal that interrupts a waiting write: its handler does nothing and
/// is installed without `SA_RESTART`, so the write returns `EINTR`. The
/// default action of SIGURG is to ignore it, so no stray one ends nicemu.
const WAKE_SIGNAL: libc::c_int = libc::SIGURG;

/// How long [`Signaller::release`] keeps interrupting a waiting write before
/// it gives up (it cannot take longer unless the thread never runs).
const RELEASE_LIMIT: Duration = Duration::from_secs(5);

/// The fd a slot is signalled through.
#[derive(Debug)]
pub enum Target {
    /// An fd the port keeps (vfio-user vectors).
    Shared(Arc<File>),
    /// A duplicate made for this one write (vhost-user call fds, which the
    /// vhost-user-backend crate keeps behind its vring lock).
    Owned(OwnedFd),
}

impl AsRawFd for Target {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Target::Shared(f) => f.as_raw_fd(),
            Target::Owned(f) => f.as_raw_fd(),
        }
    }
}

/// What a signaller signals: a port's interrupt fds by slot.
pub trait IrqTargets: Send + Sync {
    /// The fd slot `slot` is signalled through now, if any, made
    /// non-blocking ([`super::irq::make_non_blocking`]; the client may clear
    /// the flag again before the write, which then waits on this port's
    /// signaller thread alone).
    fn target(&self, slot: usize) -> Option<Target>;
    /// What signalling `slot` came to (for the port's counters).
    fn signalled(&self, slot: usize, outcome: Signalled);
}

/// State shared by the raising threads and the signaller thread.
#[derive(Debug)]
struct Shared {
    pending: [AtomicU64; WORDS],
    /// When each slot was raised and not yet taken (0: not known).
    raised: [AtomicU64; MAX_SLOTS],
    /// The port's latency stages `raise_to_irq` and `doorbell_to_irq`.
    lat: Arc<PortLatency>,
    /// Bumped by [`Signaller::release`] after fds were replaced or removed.
    epoch: AtomicU64,
    /// While writing: the epoch the target was taken in, plus one; else 0.
    writing: AtomicU64,
    /// The thread found nothing pending and sleeps (for [`Signaller::flush`]).
    idle: AtomicBool,
    stop: AtomicBool,
}

/// One port's signaller thread and the handle raising threads use.
#[derive(Debug)]
pub struct Signaller {
    shared: Arc<Shared>,
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
            pending: Default::default(),
            raised: std::array::from_fn(|_| AtomicU64::new(0)),
            lat,
            epoch: AtomicU64::new(0),
            writing: AtomicU64::new(0),
            idle: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = crate::threads::spawn(format!("irq-{name}"), move || run(&s, &targets))?;
        Ok(Signaller {
            shared,
            thread: Some(thread),
        })
    }

    /// Marks `slot` pending and wakes the thread; never waits. A slot still
    /// pending takes this interrupt with it.
    pub fn raise(&self, slot: usize) {
        let Some(word) = self.shared.pending.get(slot / 64) else {
            return;
        };
        let bit = 1u64 << (slot % 64);
        if word.load(Ordering::Relaxed) & bit == 0 {
            // The first raise since the slot was last taken: its time (a
            // raise racing the signaller may leave a stale or no time; the
            // histogram then has one value too large, or one fewer).
            if let Some(r) = self.shared.raised.get(slot) {
                let _ = r.compare_exchange(0, latency::now(), Ordering::Relaxed, Ordering::Relaxed);
            }
        }
        if word.fetch_or(bit, Ordering::AcqRel) & bit == 0 {
            if let Some(t) = &self.thread {
                t.thread().unpark();
            }
        }
    }

    /// Call after replacing or removing fds: a write still waiting on one
    /// taken before is interrupted (its interrupt is dropped with its fd).
    /// Returns once no write uses such an fd; bounded by `RELEASE_LIMIT`.
    pub fn release(&self) {
        let epoch = self.shared.epoch.fetch_add(1, Ordering::AcqRel) + 1;
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
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            // Dropped on the signaller thread itself (it held the last
            // reference for a moment): it ends on its own.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// The signaller thread: signals pending slots, sleeps when none are.
fn run(s: &Shared, targets: &Weak<dyn IrqTargets>) {
    unblock_wake_signal();
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

/// Writes one slot's fd. A write interrupted by [`Signaller::release`] is
/// dropped when its fd was replaced meanwhile, and retried otherwise.
fn fire(s: &Shared, t: &dyn IrqTargets, slot: usize) {
    let raised = s
        .raised
        .get(slot)
        .map_or(0, |r| r.swap(0, Ordering::Relaxed));
    for _ in 0..2 {
        let epoch = s.epoch.load(Ordering::Acquire);
        let Some(fd) = t.target(slot) else { return };
        s.writing.store(epoch + 1, Ordering::Release);
        let r = signal(&fd);
        s.writing.store(0, Ordering::Release);
        if r != Signalled::Interrupted {
            if r == Signalled::Sent {
                s.lat.irq_written(raised);
            }
            t.signalled(slot, r);
            return;
        }
        if s.epoch.load(Ordering::Acquire) != epoch {
            return;
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
            Some(Target::Shared(f))
        }
        fn signalled(&self, slot: usize, outcome: Signalled) {
            self.outcomes.lock().unwrap().push((slot, outcome));
        }
    }

    fn file_of(e: &EventFd) -> Arc<File> {
        // SAFETY: the fd belongs to `e`, alive for this borrow.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(e.as_raw_fd()) };
        Arc::new(File::from(fd.try_clone_to_owned().unwrap()))
    }

    #[test]
    fn a_write_that_waits_stalls_only_its_own_signaller_until_released() {
        let full = EventFd::new(0).unwrap();
        full.write(u64::MAX - 1).unwrap();
        let good = EventFd::new(libc::EFD_NONBLOCK).unwrap();
        let stuck_port = Arc::new(Port {
            fds: Mutex::new([Some(file_of(&full)), None]),
            outcomes: Mutex::default(),
            stuck_writes: AtomicU64::new(0),
        });
        let other_port = Arc::new(Port {
            fds: Mutex::new([None, Some(file_of(&good))]),
            outcomes: Mutex::default(),
            stuck_writes: AtomicU64::new(0),
        });
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
        let outcomes = stuck_port.outcomes.lock().unwrap();
        assert!(outcomes.iter().all(|(s, _)| *s == 1), "{outcomes:?}");
        assert_eq!(full.read().unwrap(), u64::MAX - 1, "nothing was added");
    }

    #[test]
    fn dropping_a_signaller_with_a_waiting_write_ends_its_thread() {
        let full = EventFd::new(0).unwrap();
        full.write(u64::MAX - 1).unwrap();
        let port = Arc::new(Port {
            fds: Mutex::new([Some(file_of(&full)), None]),
            outcomes: Mutex::default(),
            stuck_writes: AtomicU64::new(0),
        });
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
