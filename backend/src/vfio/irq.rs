//! Interrupt delivery to QEMU through the eventfds of vfio-user `SET_IRQS`
//! (vfio-user spec §"VFIO_USER_DEVICE_SET_IRQS"; kernel VFIO semantics of
//! `VFIO_IRQ_SET_*`): INTx, MSI and MSI-X, each vector replaceable or
//! de-assignable at any time.

use std::fs::File;
use std::io::Write;
use std::sync::RwLock;

use device_models::InterruptSink;
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
}

#[derive(Default)]
struct Vectors {
    intx: Option<File>,
    msi: Option<File>,
    msix: Vec<Option<File>>,
    intx_masked: bool,
}

/// Eventfd-backed interrupt sink of one PCI function.
pub struct EventIrq {
    v: RwLock<Vectors>,
    msix_count: u32,
}

impl std::fmt::Debug for EventIrq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventIrq")
            .field("msix_count", &self.msix_count)
            .finish()
    }
}

fn signal(f: &File) {
    let mut f = f;
    if let Err(e) = f.write_all(&1u64.to_le_bytes()) {
        log::debug!("eventfd write failed: {e}");
    }
}

impl EventIrq {
    /// A sink for a function with `msix_count` MSI-X vectors, nothing assigned.
    pub fn new(msix_count: u16) -> Self {
        EventIrq {
            v: RwLock::new(Vectors {
                msix: (0..msix_count).map(|_| None).collect(),
                ..Default::default()
            }),
            msix_count: u32::from(msix_count),
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
                        signal(f);
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
}

impl InterruptSink for EventIrq {
    fn msix(&self, vector: u16) {
        let v = self.v.read().unwrap_or_else(|e| e.into_inner());
        if let Some(Some(f)) = v.msix.get(usize::from(vector)) {
            signal(f);
        }
    }

    fn legacy(&self) {
        let v = self.v.read().unwrap_or_else(|e| e.into_inner());
        if Self::msix_enabled(&v) {
            if let Some(Some(f)) = v.msix.first() {
                signal(f);
            }
        } else if let Some(f) = &v.msi {
            signal(f);
        } else if let (Some(f), false) = (&v.intx, v.intx_masked) {
            signal(f);
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
        let irq = EventIrq::new(10);
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
        let irq = EventIrq::new(10);
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
    fn msi_then_intx_fallback() {
        let irq = EventIrq::new(10);
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
