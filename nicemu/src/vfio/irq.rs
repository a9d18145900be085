// SPDX-License-Identifier: Apache-2.0
//! Interrupt delivery to QEMU through the eventfds of vfio-user `SET_IRQS`
//! (vfio-user spec §"VFIO_USER_DEVICE_SET_IRQS"; kernel VFIO semantics of
//! `VFIO_IRQ_SET_*`): INTx, MSI and MSI-X, each vector replaceable or
//! de-assignable at any time.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};

use crate::irq::eventfd::{make_non_blocking, prepare_fd, Signalled};
use crate::irq::signaller::{IrqTargets, Signaller, Target, MAX_SLOTS};
use nicemu_device_models::InterruptSink;
pub use nicemu_vfio_user_server::IrqError;
use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_ACTION_TYPE_MASK,
    VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_IRQ_SET_DATA_TYPE_MASK, VFIO_PCI_INTX_IRQ_INDEX, VFIO_PCI_MSIX_IRQ_INDEX,
    VFIO_PCI_MSI_IRQ_INDEX,
};

#[derive(Default)]
struct Vectors {
    intx: Option<Arc<File>>,
    msi: Option<Arc<File>>,
    msix: Vec<Option<Arc<File>>>,
    intx_masked: bool,
}

/// The vectors' fds and signalling counters of one function: what its
/// signaller thread signals. Slots: MSI-X vector `i` is slot `i`, then MSI,
/// then INTx.
#[derive(Default)]
struct Table {
    v: RwLock<Vectors>,
    counters: IrqCounters,
}

impl Table {
    fn vectors(&self) -> std::sync::RwLockReadGuard<'_, Vectors> {
        self.v.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The fd of slot `slot` now, if it has one and is not masked.
    fn fd(&self, slot: usize) -> Option<Arc<File>> {
        let v = self.vectors();
        let msi = v.msix.len();
        match slot {
            s if s < msi => v.msix[s].clone(),
            s if s == msi => v.msi.clone(),
            s if s == msi + 1 && !v.intx_masked => v.intx.clone(),
            _ => None,
        }
    }
}

impl IrqTargets for Table {
    fn target(&self, slot: usize) -> Option<Target> {
        self.fd(slot)
    }

    fn signalled(&self, slot: usize, outcome: Signalled) {
        let c = match outcome {
            Signalled::Sent | Signalled::Interrupted => return,
            Signalled::Coalesced => &self.counters.coalesced,
            Signalled::Failed => &self.counters.failed,
        };
        c.fetch_add(1, Ordering::Relaxed);
        // The description is the client's too: it may have cleared
        // O_NONBLOCK since SET_IRQS (the write then waited for the
        // watchdog). Set again here, not before every write.
        if let Some(f) = self.fd(slot) {
            make_non_blocking(&*f);
        }
    }
}

/// Eventfd-backed interrupt sink of one PCI function. Raising an interrupt
/// marks its vector pending for the function's signaller thread
/// ([`Signaller`]), so no thread that raises one waits for the client.
pub struct EventIrq {
    table: Arc<Table>,
    signaller: Signaller,
    msix_count: u32,
}

impl std::fmt::Debug for EventIrq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventIrq")
            .field("msix_count", &self.msix_count)
            .finish()
    }
}

/// Interrupt signalling counters of one function.
#[derive(Debug, Default)]
pub struct IrqCounters {
    /// Interrupts merged into one still pending at the client (EAGAIN).
    pub coalesced: AtomicU64,
    /// Interrupt writes that failed otherwise (e.g. a pipe whose reader is
    /// gone).
    pub failed: AtomicU64,
    /// Interrupts the device raised (an MSI-X vector it has; the legacy cause when MSI-X,
    /// MSI or INTx is set up), whether or not the client has an eventfd there and before
    /// any merging: not an error, so not in [`Self::list`].
    pub raised: AtomicU64,
}

impl IrqCounters {
    /// The counters by name, for `ctl stats`.
    pub fn list(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("irq_coalesced", self.coalesced.load(Ordering::Relaxed)),
            ("irq_failed", self.failed.load(Ordering::Relaxed)),
        ]
    }
}

impl EventIrq {
    /// A sink for function `id` with `msix_count` MSI-X vectors (at most
    /// [`MAX_SLOTS`] − 2), nothing assigned; starts its signaller thread.
    pub fn new(id: &str, msix_count: u16) -> Result<Self, crate::error::Error> {
        Self::with_latency(id, msix_count, Arc::default())
    }

    /// [`Self::new`], recording each interrupt's latency into `lat`
    /// (`raise_to_irq`, `doorbell_to_irq`).
    pub fn with_latency(
        id: &str,
        msix_count: u16,
        lat: Arc<crate::latency::PortLatency>,
    ) -> Result<Self, crate::error::Error> {
        let msix_count = msix_count.min(MAX_SLOTS as u16 - 2);
        let table = Arc::new(Table {
            v: RwLock::new(Vectors {
                msix: (0..msix_count).map(|_| None).collect(),
                ..Default::default()
            }),
            counters: IrqCounters::default(),
        });
        let weak = Arc::downgrade(&table);
        let signaller = Signaller::spawn_timed(id, weak as Weak<dyn IrqTargets>, lat)?;
        Ok(EventIrq {
            table,
            signaller,
            msix_count: u32::from(msix_count),
        })
    }

    /// Number of MSI-X vectors.
    pub fn msix_vectors(&self) -> u32 {
        self.msix_count
    }

    /// Signalling counters.
    pub fn counters(&self) -> &IrqCounters {
        &self.table.counters
    }

    /// Waits until every interrupt raised so far was signalled, at most
    /// `limit`; false on timeout.
    pub fn flush(&self, limit: std::time::Duration) -> bool {
        self.signaller.flush(limit)
    }

    /// Runs `f` on the function's own server thread (one client message)
    /// and writes the interrupts it raised when it returns
    /// ([`Signaller::serving`]).
    pub fn serving<R>(&self, f: impl FnOnce() -> R) -> R {
        self.signaller.serving(f)
    }

    /// The function is served to client process `pid` (0: none)
    /// ([`Signaller::set_client`]).
    pub fn set_client(&self, pid: i32) {
        self.signaller.set_client(pid);
    }

    fn msi_slot(&self) -> usize {
        self.msix_count as usize
    }

    fn intx_slot(&self) -> usize {
        self.msix_count as usize + 1
    }

    fn vectors_mut(&self) -> std::sync::RwLockWriteGuard<'_, Vectors> {
        self.table.v.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops every eventfd (client gone, or device reset); returns once
    /// no interrupt write uses one of them.
    pub fn clear(&self) {
        {
            let mut v = self.vectors_mut();
            v.intx = None;
            v.msi = None;
            v.msix.iter_mut().for_each(|f| *f = None);
            v.intx_masked = false;
        }
        self.signaller.release();
    }

    /// Applies a SET_IRQS request. Fds it replaces or removes are no longer
    /// written once it returns.
    pub fn set_irqs(
        &self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
    ) -> Result<(), IrqError> {
        self.check_request(index, start, count, fds.len())?;
        fds.iter()
            .try_for_each(|f| prepare_fd(f).map_err(|e| IrqError::NotSignallable(e.0)))?;
        let data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        let action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        let slot = |i: u32| match index {
            VFIO_PCI_INTX_IRQ_INDEX => self.intx_slot(),
            VFIO_PCI_MSI_IRQ_INDEX => self.msi_slot(),
            _ => i as usize,
        };
        match (action, data) {
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD) => {
                // Vectors with an fd get it; the rest of the range is de-assigned.
                let mut fds = fds.into_iter().map(Arc::new);
                let mut v = self.vectors_mut();
                for i in start..start + count {
                    *Self::vector(&mut v, index, i) = fds.next();
                }
            }
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE) if count == 0 => {
                let mut v = self.vectors_mut();
                match index {
                    VFIO_PCI_MSIX_IRQ_INDEX => v.msix.iter_mut().for_each(|f| *f = None),
                    _ => *Self::vector(&mut v, index, 0) = None,
                }
            }
            // Loopback trigger of the given vectors.
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE) => {
                (start..start + count).for_each(|i| self.signaller.raise(slot(i)));
                return Ok(());
            }
            (VFIO_IRQ_SET_ACTION_MASK, _) if index == VFIO_PCI_INTX_IRQ_INDEX => {
                self.vectors_mut().intx_masked = true
            }
            (VFIO_IRQ_SET_ACTION_UNMASK, _) if index == VFIO_PCI_INTX_IRQ_INDEX => {
                self.vectors_mut().intx_masked = false
            }
            _ => log::debug!("SET_IRQS index {index} flags {flags:#x} ignored"),
        }
        self.signaller.release();
        Ok(())
    }

    /// Checks a SET_IRQS request's index, range and number of fds.
    fn check_request(
        &self,
        index: u32,
        start: u32,
        count: u32,
        fds: usize,
    ) -> Result<(), IrqError> {
        let max = match index {
            VFIO_PCI_INTX_IRQ_INDEX | VFIO_PCI_MSI_IRQ_INDEX => 1,
            VFIO_PCI_MSIX_IRQ_INDEX => self.msix_count,
            _ => return Err(IrqError::BadIndex(index)),
        };
        let end = u64::from(start) + u64::from(count);
        if end > u64::from(max) {
            return Err(IrqError::OutOfRange {
                index,
                start,
                end,
                max,
            });
        }
        if fds > count as usize {
            return Err(IrqError::TooManyFds { fds, count });
        }
        Ok(())
    }

    /// The fd of vector `i` of `index` (checked by [`Self::check_request`]).
    fn vector(v: &mut Vectors, index: u32, i: u32) -> &mut Option<Arc<File>> {
        match index {
            VFIO_PCI_INTX_IRQ_INDEX => &mut v.intx,
            VFIO_PCI_MSI_IRQ_INDEX => &mut v.msi,
            _ => &mut v.msix[i as usize],
        }
    }
}

impl InterruptSink for EventIrq {
    fn msix(&self, vector: u16) {
        if u32::from(vector) < self.msix_count {
            self.table.counters.raised.fetch_add(1, Ordering::Relaxed);
            self.signaller.raise(usize::from(vector));
        }
    }

    fn legacy(&self) {
        // MSI-X enabled by the guest (vectors assigned): vector 0; else MSI;
        // else INTx unless masked.
        let slot = {
            let v = self.table.vectors();
            if v.msix.iter().any(Option::is_some) {
                v.msix[0].is_some().then_some(0)
            } else if v.msi.is_some() {
                Some(self.msi_slot())
            } else {
                (v.intx.is_some() && !v.intx_masked).then(|| self.intx_slot())
            }
        };
        if let Some(s) = slot {
            self.table.counters.raised.fetch_add(1, Ordering::Relaxed);
            self.signaller.raise(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;
    use vmm_sys_util::eventfd::EventFd;

    fn efd() -> (File, EventFd) {
        let e = EventFd::new(libc::EFD_NONBLOCK).unwrap();
        use std::os::fd::{AsRawFd, BorrowedFd};
        // SAFETY: the fd belongs to `e`, which is alive for this borrow.
        let fd = unsafe { BorrowedFd::borrow_raw(e.as_raw_fd()) };
        let f = File::from(fd.try_clone_to_owned().unwrap());
        (f, e)
    }

    fn irq10() -> EventIrq {
        EventIrq::new("test", 10).unwrap()
    }

    /// The interrupts raised so far were signalled, and `e` got one.
    fn fired(irq: &EventIrq, e: &EventFd) -> bool {
        assert!(irq.flush(std::time::Duration::from_secs(5)));
        e.read().is_ok()
    }

    #[test]
    fn msix_assign_replace_deassign() {
        let irq = irq10();
        let (f0, e0) = efd();
        let (f1, e1) = efd();
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 0, 2, vec![f0, f1])
            .unwrap();
        irq.msix(1);
        assert!(fired(&irq, &e1) && !fired(&irq, &e0));
        irq.legacy();
        assert!(
            fired(&irq, &e0),
            "legacy cause goes to vector 0 under MSI-X"
        );
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 1, 1, vec![])
            .unwrap();
        irq.msix(1);
        assert!(!fired(&irq, &e1), "de-assigned");
        irq.msix(99);
        assert_eq!(
            irq.counters().raised.load(Ordering::Relaxed),
            3,
            "two MSI-X raises and the legacy cause; vector 99 does not exist"
        );
        irq.set_irqs(
            VFIO_PCI_MSIX_IRQ_INDEX,
            VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_NONE,
            0,
            0,
            vec![],
        )
        .unwrap();
        irq.msix(0);
        assert!(!fired(&irq, &e0));
    }

    #[test]
    fn bad_requests_are_errors() {
        let irq = irq10();
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        assert_eq!(
            irq.set_irqs(7, trig, 0, 1, vec![]),
            Err(IrqError::BadIndex(7))
        );
        assert!(irq
            .set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 8, 5, vec![])
            .is_err());
        assert!(irq
            .set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, u32::MAX, 2, vec![])
            .is_err());
        let (f, _e) = efd();
        let (g, _h) = efd();
        assert!(irq
            .set_irqs(VFIO_PCI_MSI_IRQ_INDEX, trig, 0, 1, vec![f, g])
            .is_err());
    }

    #[test]
    fn written_interrupts_are_timed_coalesced_ones_are_not() {
        let lat = Arc::new(crate::latency::PortLatency::default());
        let irq = EventIrq::with_latency("test", 10, lat.clone()).unwrap();
        let (f0, e0) = efd();
        let (_full, f1) = full_eventfd();
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 0, 2, vec![f0, f1])
            .unwrap();
        for _ in 0..3 {
            irq.msix(0);
            assert!(fired(&irq, &e0));
        }
        for _ in 0..2 {
            irq.msix(1);
            assert!(irq.flush(std::time::Duration::from_secs(5)));
        }
        assert_eq!(irq.counters().coalesced.load(Ordering::Relaxed), 2);
        let s = lat.raise_to_irq.summary();
        assert_eq!(s.count, 3, "the written ones only: {s:?}");
        assert!(s.p50 <= s.p99 && s.p99 <= s.max && s.max < 5_000_000_000);
        let w = lat.irq_write.summary();
        assert_eq!(w.count, 3, "each written one's write(2) alone: {w:?}");
        assert!(
            w.max <= s.max,
            "a write is part of its raise → written: {w:?} {s:?}"
        );
    }

    /// A blocking eventfd one below its maximum, and a second descriptor of the
    /// same file description (what a client hands over in SET_IRQS).
    fn full_eventfd() -> (EventFd, File) {
        let full = EventFd::new(0).unwrap();
        full.write(u64::MAX - 1).unwrap();
        // SAFETY: the fd belongs to `full`, alive for this borrow.
        let dup = unsafe { std::os::fd::BorrowedFd::borrow_raw(full.as_raw_fd()) }
            .try_clone_to_owned()
            .unwrap();
        (full, File::from(dup))
    }

    #[test]
    fn blocking_fds_never_block_a_signal() {
        let irq = irq10();
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        // A blocking eventfd one below its maximum, and a full blocking pipe.
        let (_full, f0) = full_eventfd();
        use std::os::fd::FromRawFd;
        let mut p = [0i32; 2];
        // SAFETY: pipe2 writes two new fds into `p`, which we then own.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_NONBLOCK) }, 0);
        // SAFETY: as above.
        let (rd, mut wr) = unsafe { (File::from_raw_fd(p[0]), File::from_raw_fd(p[1])) };
        while std::io::Write::write(&mut wr, &[0u8; 4096]).is_ok() {}
        // SAFETY: clears O_NONBLOCK on our own pipe.
        unsafe { libc::fcntl(p[1], libc::F_SETFL, 0) };
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 0, 2, vec![f0, wr])
            .unwrap();
        let (tx, done) = std::sync::mpsc::channel();
        let irq = std::sync::Arc::new(irq);
        let i2 = irq.clone();
        std::thread::spawn(move || {
            i2.msix(0);
            i2.msix(1);
            let _ = tx.send(());
        });
        done.recv_timeout(std::time::Duration::from_secs(5))
            .expect("signalling blocked");
        assert!(irq.flush(std::time::Duration::from_secs(5)));
        assert_eq!(irq.counters().coalesced.load(Ordering::Relaxed), 2);
        drop(rd);
        irq.msix(1);
        assert!(irq.flush(std::time::Duration::from_secs(5)));
        assert_eq!(irq.counters().failed.load(Ordering::Relaxed), 1, "EPIPE");
        // A regular file is refused.
        let file = File::open("/proc/self/exe").unwrap();
        assert!(matches!(
            irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 2, 1, vec![file]),
            Err(IrqError::NotSignallable(_))
        ));
    }

    /// The file description of an interrupt fd is the client's too: one that
    /// clears `O_NONBLOCK` after SET_IRQS and keeps its eventfd full must not
    /// make the next interrupt wait.
    #[test]
    fn a_client_clearing_o_nonblock_later_blocks_nothing() {
        let irq = std::sync::Arc::new(irq10());
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        let (full, f0) = full_eventfd();
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 0, 1, vec![f0])
            .unwrap();
        // SAFETY: clears the status flags of the description `full` shares.
        let cleared = unsafe { libc::fcntl(full.as_raw_fd(), libc::F_SETFL, 0) };
        assert_eq!(cleared, 0);
        let (tx, done) = std::sync::mpsc::channel();
        let i2 = irq.clone();
        std::thread::spawn(move || {
            i2.msix(0);
            let _ = tx.send(());
        });
        done.recv_timeout(std::time::Duration::from_secs(5))
            .expect("signalling blocked");
        assert!(irq.flush(std::time::Duration::from_secs(5)));
        assert_eq!(irq.counters().coalesced.load(Ordering::Relaxed), 1);
    }

    /// A client that flips `O_NONBLOCK` on its full eventfd as fast as it
    /// can will, sooner or later, clear it between nicemu's check of the flag
    /// and its write. Raising an interrupt must not wait even then: the
    /// thread that raises it may be another port's (the switch delivers
    /// directly) or hold the device's locks.
    #[test]
    fn a_client_racing_o_nonblock_blocks_no_raising_thread() {
        let irq = std::sync::Arc::new(irq10());
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        let (full, f0) = full_eventfd();
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 0, 1, vec![f0])
            .unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flipper = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: flips the status flags of the description
                    // `full` shares with nicemu, as a client can.
                    unsafe {
                        libc::fcntl(full.as_raw_fd(), libc::F_SETFL, 0);
                        libc::fcntl(full.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK);
                    }
                }
                full
            })
        };
        let (tx, done) = std::sync::mpsc::channel();
        let i2 = irq.clone();
        std::thread::spawn(move || {
            for _ in 0..200_000 {
                i2.msix(0);
            }
            let _ = tx.send(());
        });
        let r = done.recv_timeout(std::time::Duration::from_secs(20));
        stop.store(true, Ordering::Relaxed);
        let full = flipper.join().unwrap();
        // Unblock a waiting writer, if any, so the test process can end.
        // SAFETY: sets the flags of our own description.
        unsafe { libc::fcntl(full.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let _ = full.read();
        r.expect("raising an interrupt waited for the client");
    }

    #[test]
    fn msi_then_intx_fallback() {
        let irq = irq10();
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        let (f, e) = efd();
        irq.set_irqs(VFIO_PCI_INTX_IRQ_INDEX, trig, 0, 1, vec![f])
            .unwrap();
        irq.legacy();
        assert!(fired(&irq, &e));
        let (g, m) = efd();
        irq.set_irqs(VFIO_PCI_MSI_IRQ_INDEX, trig, 0, 1, vec![g])
            .unwrap();
        irq.legacy();
        assert!(fired(&irq, &m) && !fired(&irq, &e));
        irq.clear();
        irq.legacy();
        assert!(!fired(&irq, &m));
    }
}
