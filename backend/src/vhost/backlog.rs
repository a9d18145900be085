//! Frames from the switch that found their receive queue without buffers
//! wait here, one FIFO per queue pair, so a queue the guest has not refilled
//! holds up only its own flows: frames for other queues are still delivered
//! as soon as those queues have buffers.
//!
//! Two threads per port use it: the dispatcher takes frames from the
//! switch's port queue ([`Backlog::push`]), the deliverer writes them into
//! the guest's queues ([`Backlog::pump`]) and waits for receive kicks when
//! none can move. While a queue's FIFO holds frames the switch's direct path
//! refuses frames for that queue (`NetBackend::pending`), so no frame
//! overtakes an older one of its flow.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::backend::{Delivery, NetBackend};
use super::counters::inc;

/// Frames each queue pair's FIFO holds before new ones are dropped.
pub const PER_QUEUE: usize = 512;

/// Buffers kept for reuse.
const POOL_KEEP: usize = 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Per-queue FIFOs of frames waiting for receive buffers.
#[derive(Debug)]
pub struct Backlog {
    fifos: Vec<Mutex<VecDeque<Vec<u8>>>>,
    pool: Mutex<Vec<Vec<u8>>>,
    closed: AtomicBool,
}

impl Backlog {
    /// A backlog for `pairs` queue pairs.
    pub fn new(pairs: usize) -> Self {
        Backlog {
            fifos: (0..pairs.max(1))
                .map(|_| Mutex::new(VecDeque::with_capacity(PER_QUEUE)))
                .collect(),
            pool: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        }
    }

    /// Queues a copy of `frame` behind the frames of its queue pair; drops
    /// (and counts) it when that FIFO is full. Wakes the deliverer.
    pub fn push(&self, b: &NetBackend, frame: &[u8]) {
        let q = b.queue_for(frame).min(self.fifos.len() - 1);
        let mut fifo = lock(&self.fifos[q]);
        if fifo.len() >= PER_QUEUE {
            drop(fifo);
            inc(&b.port_counters.rx_backlog_drops);
            return;
        }
        let mut buf = lock(&self.pool).pop().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        fifo.push_back(buf);
        // Counted before the caller hands the switch's buffer back, so the
        // direct path sees the frame waiting before it could overtake it.
        if let Some(p) = b.pending.get(q) {
            p.fetch_add(1, Ordering::AcqRel);
        }
        drop(fifo);
        b.wake();
    }

    /// Delivers waiting frames, each queue's in order, until every FIFO is
    /// empty or waits for buffers. Returns true if a frame moved. Bounded:
    /// at most every frame waiting when called is tried once.
    pub fn pump(&self, b: &NetBackend) -> bool {
        let mut moved = false;
        for (q, fifo) in self.fifos.iter().enumerate() {
            let mut budget = PER_QUEUE;
            while budget > 0 {
                budget -= 1;
                let Some(frame) = lock(fifo).pop_front() else {
                    break;
                };
                if b.deliver(&frame, false) == Delivery::Busy {
                    lock(fifo).push_front(frame);
                    break;
                }
                if let Some(p) = b.pending.get(q) {
                    p.fetch_sub(1, Ordering::AcqRel);
                }
                moved = true;
                let mut pool = lock(&self.pool);
                if pool.len() < POOL_KEEP {
                    pool.push(frame);
                }
            }
        }
        moved
    }

    /// No more frames will come (the switch is gone).
    pub fn close(&self, b: &NetBackend) {
        self.closed.store(true, Ordering::Release);
        b.wake();
    }

    /// True once [`Self::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Frames waiting in all FIFOs.
    pub fn len(&self) -> usize {
        self.fifos.iter().map(|f| lock(f).len()).sum()
    }

    /// True when no frame waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
