// SPDX-License-Identifier: Apache-2.0
//! What a virtio-net port's receive path ([`super::rx`]) and transmit path
//! ([`super::tx`]) share: the guest memory and vring types, and what they
//! read of the port they serve ([`QueuePort`]: its link, its connection,
//! its counters, its used-ring signals), which the backend implements. The
//! paths take the port as a parameter and know no backend.

use std::sync::{Mutex, MutexGuard, RwLockReadGuard};

use vhost_user_backend::VringRwLock;
use vm_memory::{GuestAddressSpace, GuestMemoryAtomic, GuestMemoryMmap};

use super::config::Negotiated;
use super::counters::{PortCounters, QueueCounters};

/// Guest memory as the backend sees it.
pub type Mem = GuestMemoryAtomic<GuestMemoryMmap<()>>;
/// A virtqueue with its kick/call eventfds.
pub type Vring = VringRwLock<Mem>;
/// The guest memory of a connection, held for one pass over a ring.
pub type MemGuard = <Mem as GuestAddressSpace>::T;

/// Largest queue size offered.
pub const MAX_QUEUE_SIZE: usize = 1024;

/// Locks `m`, also after a thread panicked holding it.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A queue whose vring the handler hands over when the driver first kicks
/// its pair.
pub trait HasVring {
    /// The queue's vring (`None` until handed over, and after a
    /// disconnect).
    fn vring_slot(&mut self) -> &mut Option<Vring>;
}

/// The queues of one direction of a port's pairs, each behind its own lock.
pub struct Queues<Q>(Vec<Mutex<Q>>);

impl<Q: HasVring> Queues<Q> {
    /// `pairs` queues made by `make`.
    pub fn new(pairs: u16, make: impl Fn() -> Q) -> Self {
        Queues((0..pairs).map(|_| Mutex::new(make())).collect())
    }

    /// Queue `q`, if the port has it.
    pub fn get(&self, q: usize) -> Option<&Mutex<Q>> {
        self.0.get(q)
    }

    /// Number of queues.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// There are no queues (never: a port has at least one pair).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Queue `q`'s vring, once known.
    pub fn vring(&self, q: usize) -> Option<Vring> {
        lock(self.0.get(q)?).vring_slot().clone()
    }

    /// Remembers `v` as queue `q`'s vring, unless one is known (the handler
    /// owns the vrings; the data paths need them outside its events).
    pub fn stash(&self, q: usize, v: &Vring) {
        if let Some(m) = self.0.get(q) {
            let mut queue = lock(m);
            let slot = queue.vring_slot();
            if slot.is_none() {
                *slot = Some(v.clone());
            }
        }
    }

    /// Forgets every queue's vring (the connection ended).
    pub fn forget_vrings(&self) {
        for m in &self.0 {
            *lock(m).vring_slot() = None;
        }
    }
}

/// What the current connection set up.
#[derive(Default)]
pub struct Conn {
    /// Guest memory, once a table passed the checks.
    pub mem: Option<Mem>,
    /// Negotiated features (all off before the frontend acked any).
    pub neg: Negotiated,
    /// `VIRTIO_RING_F_EVENT_IDX` is on.
    pub event_idx: bool,
}

impl Conn {
    /// The guest memory, negotiated features and EVENT_IDX, once the
    /// frontend has set up both memory and features.
    pub fn ready(&self) -> Option<(MemGuard, Negotiated, bool)> {
        match &self.mem {
            Some(m) if self.neg.hdr_len != 0 => Some((m.memory(), self.neg, self.event_idx)),
            _ => None,
        }
    }
}

/// What the receive and transmit paths read of the port they serve.
pub trait QueuePort {
    /// The port's link is up (frames are dropped while it is down).
    fn link_up(&self) -> bool;
    /// The current connection, read-locked.
    fn conn(&self) -> RwLockReadGuard<'_, Conn>;
    /// Counters of each queue pair.
    fn counters(&self) -> &[QueueCounters];
    /// Counters of the port.
    fn port_counters(&self) -> &PortCounters;
    /// Signals the used ring of virtqueue `index` (receive queue 2n,
    /// transmit queue 2n+1) to the guest; never waits.
    fn notify(&self, index: usize);
    /// Runs `f` as one of the port's own threads (a queue worker, the
    /// receive deliverer): the used-ring signals it raised are written on
    /// this thread when it returns.
    fn serving<R>(&self, f: impl FnOnce() -> R) -> R;
}
