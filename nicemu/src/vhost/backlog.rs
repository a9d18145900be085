// SPDX-License-Identifier: Apache-2.0
//! Frames from the switch that found their receive queue without buffers
//! wait here, one FIFO per queue pair, so a queue the guest has not refilled
//! holds up only its own flows: frames for other queues are still delivered
//! as soon as those queues have buffers.
//!
//! Two threads per port use it: the dispatcher takes frames from the
//! switch's port queue ([`Backlog::push`]), the deliverer writes them into
//! the guest's queues ([`Backlog::pump`]) and waits for receive kicks when
//! none can move. While a queue's FIFO holds frames the switch's direct path
//! refuses frames for that queue (`Receiver::pending`), so no frame
//! overtakes an older one of its flow.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::backend::NetBackend;
use super::counters::inc;
use nicemu_device_models::batch::BATCH_FRAMES;
use nicemu_device_models::Frames;

/// Frames each queue pair's FIFO holds before new ones are dropped.
pub const PER_QUEUE: usize = 512;

/// Bytes of frames each queue pair's FIFO holds before new ones are dropped
/// (512 full-size frames fit; 64 KiB GSO frames are held to 32).
pub const PER_QUEUE_BYTES: usize = 2 << 20;

/// Buffers kept for reuse.
const POOL_KEEP: usize = 1024;
/// Bytes of buffer capacity kept for reuse.
const POOL_BYTES: usize = 4 << 20;

/// Frames of one queue pair waiting, and their bytes.
#[derive(Debug, Default)]
struct Fifo {
    frames: VecDeque<Vec<u8>>,
    bytes: usize,
}

/// Buffers kept for reuse, and their capacity.
#[derive(Debug, Default)]
struct Pool {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

impl Pool {
    fn take(&mut self) -> Vec<u8> {
        let b = self.bufs.pop().unwrap_or_default();
        self.bytes -= b.capacity();
        b
    }

    fn give(&mut self, b: Vec<u8>) {
        if self.bufs.len() < POOL_KEEP && self.bytes + b.capacity() <= POOL_BYTES {
            self.bytes += b.capacity();
            self.bufs.push(b);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Fifo {
    fn pop_front(&mut self) -> Option<Vec<u8>> {
        let f = self.frames.pop_front()?;
        self.bytes -= f.len();
        Some(f)
    }

    fn push_front(&mut self, f: Vec<u8>) {
        self.bytes += f.len();
        self.frames.push_front(f);
    }
}

/// Per-queue FIFOs of frames waiting for receive buffers.
#[derive(Debug)]
pub struct Backlog {
    fifos: Vec<Mutex<Fifo>>,
    pool: Mutex<Pool>,
    /// The frames [`Self::pump`] has taken out of a FIFO (kept for its
    /// capacity).
    run: Mutex<Vec<Vec<u8>>>,
    closed: AtomicBool,
}

impl Backlog {
    /// A backlog for `pairs` queue pairs.
    pub fn new(pairs: usize) -> Self {
        Backlog {
            fifos: (0..pairs.max(1))
                .map(|_| Mutex::new(Fifo::default()))
                .collect(),
            pool: Mutex::new(Pool::default()),
            run: Mutex::new(Vec::with_capacity(BATCH_FRAMES)),
            closed: AtomicBool::new(false),
        }
    }

    /// Queues a copy of `frame` behind the frames of its queue pair; drops
    /// (and counts) it when that FIFO is full ([`PER_QUEUE`] frames or
    /// [`PER_QUEUE_BYTES`]). Wakes the deliverer.
    pub fn push(&self, b: &NetBackend, frame: &[u8]) {
        let q = b.queue_for(frame).min(self.fifos.len() - 1);
        let mut fifo = lock(&self.fifos[q]);
        if fifo.frames.len() >= PER_QUEUE || fifo.bytes + frame.len() > PER_QUEUE_BYTES {
            drop(fifo);
            inc(&b.port_counters.rx_backlog_drops);
            return;
        }
        let mut buf = lock(&self.pool).take();
        buf.clear();
        buf.extend_from_slice(frame);
        fifo.bytes += buf.len();
        fifo.frames.push_back(buf);
        // Counted before the caller hands the switch's buffer back, so the
        // direct path sees the frame waiting before it could overtake it.
        if let Some(p) = b.rx.pending.get(q) {
            p.fetch_add(1, Ordering::AcqRel);
        }
        drop(fifo);
        b.wake();
    }

    /// Delivers waiting frames, each queue's in order, until every FIFO is
    /// empty or waits for buffers. Returns true if a frame moved. Bounded:
    /// at most every frame waiting when called is tried once. Frames are
    /// taken up to [`BATCH_FRAMES`] at a time, so segments that waited
    /// together may be coalesced ([`NetBackend::deliver_batch`]); those the
    /// guest had no buffers for go back to the front of their FIFO.
    pub fn pump(&self, b: &NetBackend) -> bool {
        let mut moved = false;
        let mut run = std::mem::take(&mut *lock(&self.run));
        for (q, fifo) in self.fifos.iter().enumerate() {
            let mut budget = PER_QUEUE;
            while budget > 0 {
                {
                    let mut f = lock(fifo);
                    while run.len() < BATCH_FRAMES.min(budget) {
                        let Some(frame) = f.pop_front() else {
                            break;
                        };
                        run.push(frame);
                    }
                }
                if run.is_empty() {
                    break;
                }
                budget -= run.len();
                let taken = b.deliver_batch(Frames::Many(&run), false);
                let busy = taken < run.len();
                if busy {
                    let mut f = lock(fifo);
                    for frame in run.drain(taken..).rev() {
                        f.push_front(frame);
                    }
                }
                if let Some(p) = b.rx.pending.get(q) {
                    p.fetch_sub(taken, Ordering::AcqRel);
                }
                moved |= taken > 0;
                let mut pool = lock(&self.pool);
                for frame in run.drain(..) {
                    pool.give(frame);
                }
                drop(pool);
                if busy {
                    break;
                }
            }
        }
        *lock(&self.run) = run;
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
        self.fifos.iter().map(|f| lock(f).frames.len()).sum()
    }

    /// True when no frame waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
