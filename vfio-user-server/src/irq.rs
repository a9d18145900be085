//! Interrupt delivery to QEMU through the eventfds of vfio-user `SET_IRQS`
//! (vfio-user spec §"VFIO_USER_DEVICE_SET_IRQS"; kernel VFIO semantics of
//! `VFIO_IRQ_SET_*`): INTx, MSI and MSI-X, each vector replaceable or
//! de-assignable at any time.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use vfio_bindings::bindings::vfio::{
    VFIO_IRQ_SET_ACTION_MASK, VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_ACTION_TYPE_MASK,
    VFIO_IRQ_SET_ACTION_UNMASK, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE,
    VFIO_IRQ_SET_DATA_TYPE_MASK, VFIO_PCI_INTX_IRQ_INDEX, VFIO_PCI_MSIX_IRQ_INDEX,
    VFIO_PCI_MSI_IRQ_INDEX,
};

/// Error for malformed SET_IRQS requests.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum IrqError {
    /// Index not INTx/MSI/MSI-X.
    #[error("interrupt index {0} not supported")]
    BadIndex(u32),
    /// start + count beyond the vectors of the index.
    #[error("vectors {start}..{end} beyond the {max} of index {index}")]
    OutOfRange {
        /// Index.
        index: u32,
        /// First vector.
        start: u32,
        /// One past the last.
        end: u64,
        /// Vectors available.
        max: u32,
    },
    /// More fds than vectors.
    #[error("{fds} eventfds for {count} vectors")]
    TooManyFds {
        /// Fds sent.
        fds: usize,
        /// Vectors addressed.
        count: u32,
    },
    /// An fd whose writes could block whatever its flags (a regular file,
    /// a device), or that cannot be made non-blocking.
    #[error("interrupt fd is not an eventfd, pipe or socket ({0})")]
    NotSignallable(String),
}

impl IrqError {
    /// The errno of the error reply (kernel VFIO answers malformed
    /// `VFIO_DEVICE_SET_IRQS` with the same).
    pub fn errno(&self) -> i32 {
        libc::EINVAL
    }
}

#[derive(Default)]
struct Vectors {
    intx: Option<File>,
    msi: Option<File>,
    msix: Vec<Option<File>>,
    intx_masked: bool,
}

/// The interrupts of one PCI function, signalled through the eventfds the
/// client assigned with SET_IRQS. The device signals them ([`Self::msix`],
/// [`Self::legacy`]) from any thread.
pub struct Interrupts {
    v: RwLock<Vectors>,
    msix_count: u32,
    counters: IrqCounters,
}

impl std::fmt::Debug for Interrupts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupts")
            .field("msix_count", &self.msix_count)
            .finish()
    }
}

/// Makes `f` fit for signalling: an eventfd (QEMU's, as on every Linux
/// host), a pipe/FIFO or a socket, switched to `O_NONBLOCK` (the file
/// description is shared with the client; QEMU creates its eventfds
/// non-blocking anyway). Anything else is refused: a write to a regular file
/// or a device may block however the fd is flagged.
pub fn prepare_fd(f: &impl AsRawFd) -> Result<(), IrqError> {
    let fd = f.as_raw_fd();
    // SAFETY: fstat writes into a zeroed stat buffer we own.
    let mode = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &raw mut st) != 0 {
            return Err(IrqError::NotSignallable(
                std::io::Error::last_os_error().to_string(),
            ));
        }
        st.st_mode & libc::S_IFMT
    };
    // Anonymous inodes (eventfd) have no file type bits.
    if !matches!(mode, 0 | libc::S_IFIFO | libc::S_IFSOCK) {
        return Err(IrqError::NotSignallable(format!("file type {mode:#o}")));
    }
    // SAFETY: F_GETFL/F_SETFL on an fd we hold read and set its status flags.
    let ok = unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        fl >= 0 && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(IrqError::NotSignallable(
            std::io::Error::last_os_error().to_string(),
        ))
    }
}

/// What a signal came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Signalled {
    /// Written.
    Sent,
    /// The fd was full (EAGAIN): the client has not consumed the previous
    /// interrupt yet, so this one merges with it, as a pending MSI-X
    /// message does (PCI 3.0 §6.8.3.5).
    Coalesced,
    /// Any other failure (a pipe whose reader is gone, an fd of the wrong
    /// kind).
    Failed,
}

/// Signals an fd the caller did not prepare (vhost-user's call eventfds,
/// which the vhost-user-backend crate receives and may replace at any
/// time): makes it non-blocking first if it is not (one F_GETFL per
/// signal), then writes 1 to it without blocking.
pub fn signal_unprepared(f: &impl AsRawFd) -> Signalled {
    // SAFETY: F_GETFL only reads the status flags of an fd we hold.
    let fl = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    if fl < 0 || (fl & libc::O_NONBLOCK == 0 && prepare_fd(f).is_err()) {
        return Signalled::Failed;
    }
    signal(f)
}

/// One non-blocking 8-byte write of 1 (an eventfd increment; a pipe or
/// socket gets the same bytes).
fn signal(f: &impl AsRawFd) -> Signalled {
    let one = 1u64.to_le_bytes();
    // SAFETY: writes 8 bytes from a live stack buffer to an fd we own; with
    // O_NONBLOCK set by `prepare_fd` the call does not wait.
    let n = unsafe { libc::write(f.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    if n >= 0 {
        return Signalled::Sent;
    }
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::WouldBlock {
        Signalled::Coalesced
    } else {
        log::debug!("interrupt fd write failed: {e}");
        Signalled::Failed
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

impl Interrupts {
    /// The interrupts of a function with `msix_count` MSI-X vectors, none
    /// assigned.
    pub fn new(msix_count: u16) -> Self {
        Interrupts {
            v: RwLock::new(Vectors {
                msix: (0..msix_count).map(|_| None).collect(),
                ..Default::default()
            }),
            msix_count: u32::from(msix_count),
            counters: IrqCounters::default(),
        }
    }

    /// Number of MSI-X vectors.
    pub fn msix_vectors(&self) -> u32 {
        self.msix_count
    }

    /// Signalling counters.
    pub fn counters(&self) -> &IrqCounters {
        &self.counters
    }

    fn fire(&self, f: &File) {
        // The description is the client's too: it may have cleared O_NONBLOCK since
        // SET_IRQS, so the flag is checked at every signal (one F_GETFL).
        match signal_unprepared(f) {
            Signalled::Sent => {}
            Signalled::Coalesced => {
                self.counters.coalesced.fetch_add(1, Ordering::Relaxed);
            }
            Signalled::Failed => {
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Drops every eventfd (client gone, or device reset).
    pub fn clear(&self) {
        let mut v = self.v.write().unwrap_or_else(|e| e.into_inner());
        v.intx = None;
        v.msi = None;
        v.msix.iter_mut().for_each(|f| *f = None);
        v.intx_masked = false;
    }

    /// Applies a SET_IRQS request.
    pub fn set_irqs(
        &self,
        index: u32,
        flags: u32,
        start: u32,
        count: u32,
        fds: Vec<File>,
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
        if fds.len() > count as usize {
            return Err(IrqError::TooManyFds {
                fds: fds.len(),
                count,
            });
        }
        fds.iter().try_for_each(prepare_fd)?;
        let data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
        let action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
        let mut v = self.v.write().unwrap_or_else(|e| e.into_inner());
        match (action, data) {
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD) => {
                // Vectors with an fd get it; the rest of the range is de-assigned.
                let mut fds = fds.into_iter();
                for i in start..start + count {
                    let f = fds.next();
                    match index {
                        VFIO_PCI_INTX_IRQ_INDEX => v.intx = f,
                        VFIO_PCI_MSI_IRQ_INDEX => v.msi = f,
                        _ => v.msix[i as usize] = f,
                    }
                }
            }
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE) if count == 0 => match index {
                VFIO_PCI_INTX_IRQ_INDEX => v.intx = None,
                VFIO_PCI_MSI_IRQ_INDEX => v.msi = None,
                _ => v.msix.iter_mut().for_each(|f| *f = None),
            },
            (VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_NONE) => {
                // Loopback trigger of the given vectors.
                for i in start..start + count {
                    let f = match index {
                        VFIO_PCI_INTX_IRQ_INDEX => v.intx.as_ref(),
                        VFIO_PCI_MSI_IRQ_INDEX => v.msi.as_ref(),
                        _ => v.msix[i as usize].as_ref(),
                    };
                    if let Some(f) = f {
                        self.fire(f);
                    }
                }
            }
            (VFIO_IRQ_SET_ACTION_MASK, _) if index == VFIO_PCI_INTX_IRQ_INDEX => {
                v.intx_masked = true
            }
            (VFIO_IRQ_SET_ACTION_UNMASK, _) if index == VFIO_PCI_INTX_IRQ_INDEX => {
                v.intx_masked = false
            }
            _ => log::debug!("SET_IRQS index {index} flags {flags:#x} ignored"),
        }
        Ok(())
    }

    /// True when MSI-X vectors are assigned (MSI-X enabled by the guest).
    fn msix_enabled(v: &Vectors) -> bool {
        v.msix.iter().any(Option::is_some)
    }

    /// Signals MSI-X vector `vector` (PCI 3.0 §6.8.2), if the client assigned
    /// it an fd.
    pub fn msix(&self, vector: u16) {
        let v = self.v.read().unwrap_or_else(|e| e.into_inner());
        if let Some(Some(f)) = v.msix.get(usize::from(vector)) {
            self.fire(f);
        }
    }

    /// Signals the function's single interrupt: vector 0 while MSI-X is
    /// enabled, else MSI, else INTx unless the client masked it.
    pub fn legacy(&self) {
        let v = self.v.read().unwrap_or_else(|e| e.into_inner());
        if Self::msix_enabled(&v) {
            if let Some(Some(f)) = v.msix.first() {
                self.fire(f);
            }
        } else if let Some(f) = &v.msi {
            self.fire(f);
        } else if let (Some(f), false) = (&v.intx, v.intx_masked) {
            self.fire(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vmm_sys_util::eventfd::EventFd;

    fn efd() -> (File, EventFd) {
        let e = EventFd::new(libc::EFD_NONBLOCK).unwrap();
        use std::os::fd::{AsRawFd, BorrowedFd};
        // SAFETY: the fd belongs to `e`, which is alive for this borrow.
        let fd = unsafe { BorrowedFd::borrow_raw(e.as_raw_fd()) };
        let f = File::from(fd.try_clone_to_owned().unwrap());
        (f, e)
    }

    fn fired(e: &EventFd) -> bool {
        e.read().is_ok()
    }

    #[test]
    fn msix_assign_replace_deassign() {
        let irq = Interrupts::new(10);
        let (f0, e0) = efd();
        let (f1, e1) = efd();
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 0, 2, vec![f0, f1])
            .unwrap();
        irq.msix(1);
        assert!(fired(&e1) && !fired(&e0));
        irq.legacy();
        assert!(fired(&e0), "legacy cause goes to vector 0 under MSI-X");
        irq.set_irqs(VFIO_PCI_MSIX_IRQ_INDEX, trig, 1, 1, vec![])
            .unwrap();
        irq.msix(1);
        assert!(!fired(&e1), "de-assigned");
        irq.msix(99);
        irq.set_irqs(
            VFIO_PCI_MSIX_IRQ_INDEX,
            VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_NONE,
            0,
            0,
            vec![],
        )
        .unwrap();
        irq.msix(0);
        assert!(!fired(&e0));
    }

    #[test]
    fn bad_requests_are_errors() {
        let irq = Interrupts::new(10);
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
        let irq = Interrupts::new(10);
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
        assert_eq!(irq.counters().coalesced.load(Ordering::Relaxed), 2);
        drop(rd);
        irq.msix(1);
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
        let irq = std::sync::Arc::new(Interrupts::new(10));
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
        assert_eq!(irq.counters().coalesced.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn unprepared_fds_are_made_non_blocking_when_signalled() {
        // A vhost-user call eventfd as a hostile client may pass it:
        // blocking and one below its maximum.
        let full = EventFd::new(0).unwrap();
        full.write(u64::MAX - 1).unwrap();
        let (tx, done) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let r = signal_unprepared(&full);
            let _ = tx.send(());
            (r, full)
        });
        done.recv_timeout(std::time::Duration::from_secs(5))
            .expect("signalling blocked");
        let (r, full) = t.join().unwrap();
        assert_eq!(r, Signalled::Coalesced);
        assert_eq!(full.read().unwrap(), u64::MAX - 1);
        assert_eq!(signal_unprepared(&full), Signalled::Sent);
        let file = File::open("/proc/self/exe").unwrap();
        assert_eq!(signal_unprepared(&file), Signalled::Failed);
    }

    #[test]
    fn msi_then_intx_fallback() {
        let irq = Interrupts::new(10);
        let trig = VFIO_IRQ_SET_ACTION_TRIGGER | VFIO_IRQ_SET_DATA_EVENTFD;
        let (f, e) = efd();
        irq.set_irqs(VFIO_PCI_INTX_IRQ_INDEX, trig, 0, 1, vec![f])
            .unwrap();
        irq.legacy();
        assert!(fired(&e));
        let (g, m) = efd();
        irq.set_irqs(VFIO_PCI_MSI_IRQ_INDEX, trig, 0, 1, vec![g])
            .unwrap();
        irq.legacy();
        assert!(fired(&m) && !fired(&e));
        irq.clear();
        irq.legacy();
        assert!(!fired(&m));
    }
}
