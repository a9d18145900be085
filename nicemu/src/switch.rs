// SPDX-License-Identifier: Apache-2.0
//! The L2 learning switch joining the ports of one network, and per-port
//! bounded receive queues: a full queue drops (and counts) the frame instead
//! of blocking the sending guest. Everything a guest can fill is bounded in
//! bytes as well as entries: the queues ([`PORT_QUEUE`] frames,
//! [`PORT_QUEUE_BYTES`]), the frame pool (`POOL_BYTES`) and the MAC table
//! ([`crate::fdb`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use nicemu_device_models::batch::BATCH_FRAMES;
use nicemu_device_models::{
    Clock, Delivery, FrameBatch, FrameSink, Frames, MonotonicClock, NetPort,
};

use crate::fdb::{Fdb, Made};

/// Frames a port's receive queue holds before it drops.
pub const PORT_QUEUE: usize = 1024;
/// Bytes of frames a port's receive queue holds before it drops (1024
/// full-size 1514-byte frames fit; 64 KiB GSO frames are held to 32).
pub const PORT_QUEUE_BYTES: usize = 2 << 20;
/// Shortest frame the switch forwards: an Ethernet header.
pub const MIN_SWITCH_FRAME: usize = 14;

/// Buffers the pool keeps for reuse.
const POOL_KEEP: usize = 4096;
/// Bytes of buffer capacity the pool keeps for reuse.
const POOL_BYTES: usize = 8 << 20;

#[derive(Debug, Default)]
struct Pooled {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

/// Recycled frame buffers, so forwarding does not allocate per frame once
/// warm; at most `POOL_KEEP` buffers of `POOL_BYTES` in all.
#[derive(Debug, Default)]
pub struct FramePool {
    free: Mutex<Pooled>,
}

impl FramePool {
    /// A buffer holding a copy of `frame`.
    pub fn copy_of(&self, frame: &[u8]) -> Vec<u8> {
        let mut b = {
            let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
            let b = f.bufs.pop().unwrap_or_default();
            f.bytes -= b.capacity();
            b
        };
        b.clear();
        b.extend_from_slice(frame);
        b
    }

    /// Returns a buffer for reuse (freed when the pool is full).
    pub fn recycle(&self, buf: Vec<u8>) {
        let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if f.bufs.len() < POOL_KEEP && f.bytes + buf.capacity() <= POOL_BYTES {
            f.bytes += buf.capacity();
            f.bufs.push(buf);
        }
    }

    /// Bytes of buffer capacity held for reuse.
    pub fn held_bytes(&self) -> usize {
        self.free.lock().unwrap_or_else(|e| e.into_inner()).bytes
    }
}

/// The receiving end of a port: frames the switch delivered to it, each with
/// the time it entered the switch (host monotonic ns, the devices' clock).
#[derive(Debug)]
pub struct PortRx {
    rx: Receiver<(Vec<u8>, u64)>,
    pool: Arc<FramePool>,
    queued: Arc<Queued>,
}

impl PortRx {
    /// Waits for the next frame; `None` when the switch is gone.
    pub fn recv(&self) -> Option<Vec<u8>> {
        self.recv_timed().map(|(f, _)| f)
    }

    /// Waits for the next frame and the time it was sent (so a device can
    /// time-stamp it as arriving then, not after the queue).
    pub fn recv_timed(&self) -> Option<(Vec<u8>, u64)> {
        let (f, t) = self.rx.recv().ok()?;
        self.queued.bytes.fetch_sub(f.len(), Ordering::AcqRel);
        Some((f, t))
    }

    /// Returns a frame's buffer after use (the frame is consumed).
    pub fn recycle(&self, buf: Vec<u8>) {
        self.queued.frames.fetch_sub(1, Ordering::AcqRel);
        self.pool.recycle(buf);
    }
}

/// What a port's queue holds: frames not yet consumed (direct delivery only
/// when 0, so frames are never reordered) and bytes not yet received.
#[derive(Debug, Default)]
struct Queued {
    frames: AtomicUsize,
    bytes: AtomicUsize,
}

/// Counters of one network's switch, shared by its ports' `ctl stats`.
#[derive(Debug, Default)]
pub struct NetCounters {
    /// MACs in the table now.
    pub fdb_entries: AtomicU64,
    /// Entries forgotten because they were not refreshed in time.
    pub fdb_aged: AtomicU64,
    /// Live entries forgotten because the table was full.
    pub fdb_evictions: AtomicU64,
}

/// Per-port counters kept by the switch.
#[derive(Debug, Default)]
pub struct PortCounters {
    /// Packet capture attached to the port, if any.
    pub capture: crate::capture::CaptureSlot,
    /// Frames the port sent into the switch.
    pub tx_frames: AtomicU64,
    /// Frames delivered to the port's queue.
    pub rx_frames: AtomicU64,
    /// Frames dropped because the port's queue was full (frames or bytes).
    pub rx_drops: AtomicU64,
    /// Frames delivered to a wire that it could not send on (a stream wire
    /// with no peer connected, a failed write to the peer or the tap).
    pub egress_drops: AtomicU64,
    /// Frames the port sent that were shorter than an Ethernet header,
    /// dropped by the switch.
    pub runt_drops: AtomicU64,
    /// Frames the port sent from another source address than its own,
    /// dropped (`port-security=on`).
    pub spoof_drops: AtomicU64,
    /// The counters of the port's network.
    pub net: Arc<NetCounters>,
}

/// A receiver that can take a frame synchronously when it is not busy (the
/// device's lock is free), saving the hop through its receive thread.
pub trait DirectRx: Send + Sync {
    /// Delivers `frame`, sent at `sent_ns` (device clock), now and returns
    /// true, or returns false when busy.
    fn try_deliver(&self, frame: &[u8], sent_ns: u64) -> bool;
    /// Delivers frames in order now and returns how many it took; the rest
    /// (from the first it was busy for) are left to the caller. Default:
    /// [`Self::try_deliver`] for each.
    fn try_deliver_batch(&self, frames: Frames<'_>, sent_ns: u64) -> usize {
        for (i, f) in frames.iter().enumerate() {
            if !self.try_deliver(f, sent_ns) {
                return i;
            }
        }
        frames.len()
    }
}

/// The [`NetPort`] of a switch port, for direct delivery: set once the port
/// exists (the switch port is attached first, the device needs it as its
/// wire); until then every frame goes through the port's queue.
#[derive(Default)]
pub struct PortSlot(OnceLock<Arc<dyn NetPort>>);

impl PortSlot {
    /// Sets the port; a second call changes nothing.
    pub fn set(&self, port: Arc<dyn NetPort>) {
        let _ = self.0.set(port);
    }
}

impl DirectRx for PortSlot {
    fn try_deliver(&self, frame: &[u8], sent_ns: u64) -> bool {
        self.0
            .get()
            .is_some_and(|p| p.deliver(frame, Some(sent_ns), false) == Delivery::Done)
    }

    fn try_deliver_batch(&self, frames: Frames<'_>, sent_ns: u64) -> usize {
        self.0
            .get()
            .map_or(0, |p| p.deliver_batch(frames, Some(sent_ns), false))
    }
}

/// Where the switch sends a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dest {
    /// Nowhere: a runt, or a frame for the port it came from.
    Drop,
    /// The port that owns the destination MAC.
    Port(usize),
    /// Every port but the sender's.
    Flood,
}

struct Port {
    queue: SyncSender<(Vec<u8>, u64)>,
    counters: Arc<PortCounters>,
    queued: Arc<Queued>,
    direct: Option<Arc<dyn DirectRx>>,
    /// Where this port's last batch of one unicast source and destination
    /// went.
    route: Mutex<Option<Route>>,
}

/// How often a cached route is taken from the MAC table again, so the
/// sender's source MAC stays refreshed (learned) in it: far below
/// [`crate::fdb::FDB_AGE_NS`].
const ROUTE_REFRESH_NS: u64 = 1_000_000_000;

/// A destination looked up in the MAC table for frames of one source and
/// one unicast destination MAC, valid while the table has not changed
/// ([`Fdb::changes`]) and for [`ROUTE_REFRESH_NS`].
#[derive(Clone, Copy, Debug)]
struct Route {
    /// Destination and source MAC (the frames' first 12 bytes).
    macs: [u8; 12],
    dest: Dest,
    changes: u64,
    at: u64,
}

/// The first 12 bytes shared by every frame of `frames` (all long enough to
/// switch, the destination unicast), if they all share them.
fn shared_macs(frames: Frames<'_>) -> Option<[u8; 12]> {
    let first: [u8; 12] = frames.get(0).get(..12)?.try_into().ok()?;
    // The twelve bytes as two words: two compares per frame.
    let words = |m: &[u8; 12]| {
        let (a, b) = m.split_at(8);
        (
            u64::from_ne_bytes(a.try_into().unwrap_or_default()),
            u32::from_ne_bytes(b.try_into().unwrap_or_default()),
        )
    };
    let want = words(&first);
    if first[0] & 1 != 0
        || frames.iter().any(|f| {
            f.len() < MIN_SWITCH_FRAME || f.first_chunk::<12>().is_none_or(|m| words(m) != want)
        })
    {
        return None;
    }
    Some(first)
}

impl Port {
    /// The cached destination of `frames`, if they are one source's frames
    /// to one unicast destination and the route is still valid.
    fn cached(&self, frames: Frames<'_>, now: u64, changes: u64) -> Option<Dest> {
        let route = (*self.route.try_lock().ok()?)?;
        let fresh = route.changes == changes && now.wrapping_sub(route.at) < ROUTE_REFRESH_NS;
        (fresh && shared_macs(frames) == Some(route.macs)).then_some(route.dest)
    }

    /// Remembers where `frames` went when they share their addresses.
    fn remember(&self, frames: Frames<'_>, dest: Dest, now: u64, changes: u64) {
        let Some(macs) = shared_macs(frames) else {
            return;
        };
        if let Ok(mut r) = self.route.try_lock() {
            *r = Some(Route {
                macs,
                dest,
                changes,
                at: now,
            });
        }
    }
}

/// One network: ports and the learned MAC table.
#[derive(Default)]
pub struct Switch {
    ports: RwLock<Vec<Port>>,
    fdb: Mutex<Fdb>,
    /// [`Fdb::changes`] after the last lookup, read without the table's lock.
    fdb_changes: AtomicU64,
    pool: Arc<FramePool>,
    net: Arc<NetCounters>,
}

impl std::fmt::Debug for Switch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Switch").finish()
    }
}

/// A port's attachment: the sink its device transmits into.
pub struct PortHandle {
    switch: Arc<Switch>,
    index: usize,
    /// Counters of this port.
    pub counters: Arc<PortCounters>,
}

impl std::fmt::Debug for PortHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PortHandle")
            .field("index", &self.index)
            .finish()
    }
}

impl Switch {
    /// Adds a port; returns its transmit handle and the receiver of frames for it.
    pub fn attach(self: &Arc<Self>) -> (PortHandle, PortRx) {
        self.attach_direct(None)
    }

    /// Adds a port whose frames may be delivered synchronously through `direct`.
    pub fn attach_direct(
        self: &Arc<Self>,
        direct: Option<Arc<dyn DirectRx>>,
    ) -> (PortHandle, PortRx) {
        let (tx, rx) = sync_channel(PORT_QUEUE);
        let counters = Arc::new(PortCounters {
            net: self.net.clone(),
            ..Default::default()
        });
        let queued = Arc::new(Queued::default());
        let mut ports = self.ports.write().unwrap_or_else(|e| e.into_inner());
        ports.push(Port {
            queue: tx,
            counters: counters.clone(),
            queued: queued.clone(),
            direct,
            route: Mutex::new(None),
        });
        (
            PortHandle {
                switch: self.clone(),
                index: ports.len() - 1,
                counters,
            },
            PortRx {
                rx,
                pool: self.pool.clone(),
                queued,
            },
        )
    }

    /// Delivers frames to one port: straight into the receiver while its
    /// queue is empty and the receiver takes them, the rest through the
    /// queue (in order: once a frame is queued, the frames after it are
    /// too).
    fn deliver(&self, to: &Port, frames: Frames<'_>, sent: u64) {
        to.counters.capture.record_all(frames);
        let mut rest = frames;
        if let Some(d) = &to.direct {
            if to.queued.frames.load(Ordering::Acquire) == 0 {
                let taken = d.try_deliver_batch(frames, sent);
                to.counters
                    .rx_frames
                    .fetch_add(taken as u64, Ordering::Relaxed);
                rest = frames.from(taken);
            }
        }
        for f in rest.iter() {
            self.enqueue(to, f, sent);
        }
    }

    /// Queues a copy of a frame for the port's receive thread, or drops and
    /// counts it when the queue is full (frames or bytes).
    fn enqueue(&self, to: &Port, frame: &[u8], sent: u64) {
        let q = &to.queued;
        let bytes = q.bytes.fetch_add(frame.len(), Ordering::AcqRel);
        q.frames.fetch_add(1, Ordering::AcqRel);
        let refused = |b: Option<Vec<u8>>| {
            q.frames.fetch_sub(1, Ordering::AcqRel);
            q.bytes.fetch_sub(frame.len(), Ordering::AcqRel);
            to.counters.rx_drops.fetch_add(1, Ordering::Relaxed);
            if let Some(b) = b {
                self.pool.recycle(b);
            }
        };
        if bytes + frame.len() > PORT_QUEUE_BYTES {
            return refused(None);
        }
        match to.queue.try_send((self.pool.copy_of(frame), sent)) {
            Ok(()) => {
                to.counters.rx_frames.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Full((b, _))) | Err(TrySendError::Disconnected((b, _))) => {
                refused(Some(b))
            }
        }
    }

    /// Where each of `frames` (at most [`BATCH_FRAMES`]) from port `from`
    /// goes, in `dests`; returns the runts among them and the table's
    /// [`Fdb::changes`] after it. Under one lock of the
    /// MAC table: each source is learned (multicast sources are not), each
    /// unicast destination looked up — once per run of frames with the same
    /// source or destination, which is most of a batch. Multicast
    /// destinations always flood.
    fn route(&self, from: usize, frames: Frames<'_>, now: u64, dests: &mut [Dest]) -> (u64, u64) {
        let mut fdb = self.fdb.lock().unwrap_or_else(|e| e.into_inner());
        let mut made = Made::default();
        let mut runts = 0;
        let mut learned: Option<[u8; 6]> = None;
        let mut looked: Option<([u8; 6], Option<usize>)> = None;
        for (i, f) in frames.iter().enumerate() {
            if f.len() < MIN_SWITCH_FRAME {
                dests[i] = Dest::Drop;
                runts += 1;
                continue;
            }
            let dst: [u8; 6] = f[0..6].try_into().unwrap_or([0; 6]);
            let src: [u8; 6] = f[6..12].try_into().unwrap_or([0; 6]);
            if src[0] & 1 == 0 && learned != Some(src) {
                let m = fdb.learn(src, from, now);
                made.aged += m.aged;
                made.evicted += m.evicted;
                learned = Some(src);
                looked = None;
            }
            if dst[0] & 1 != 0 {
                dests[i] = Dest::Flood;
                continue;
            }
            let port = match looked {
                Some((d, p)) if d == dst => p,
                _ => {
                    let p = fdb.lookup(&dst, now);
                    looked = Some((dst, p));
                    p
                }
            };
            dests[i] = match port {
                Some(p) if p == from => Dest::Drop,
                Some(p) => Dest::Port(p),
                None => Dest::Flood,
            };
        }
        self.net.fdb_aged.fetch_add(made.aged, Ordering::Relaxed);
        self.net
            .fdb_evictions
            .fetch_add(made.evicted, Ordering::Relaxed);
        self.net
            .fdb_entries
            .store(fdb.len() as u64, Ordering::Relaxed);
        let changes = fdb.changes();
        self.fdb_changes.store(changes, Ordering::Release);
        (runts, changes)
    }

    /// Forwards a frame from port `from`: learn the source, send to the port
    /// that owns the destination, or flood.
    pub fn forward(&self, from: usize, frame: &[u8]) {
        self.forward_at(from, frame, MonotonicClock.now_ns());
    }

    /// [`Self::forward`] for a frame that left its sender at `sent` (host
    /// monotonic ns, the devices' clock); receivers get the time with it.
    pub fn forward_at(&self, from: usize, frame: &[u8], sent: u64) {
        self.forward_batch(from, Frames::One(frame), sent);
    }

    /// [`Self::forward_at`] for frames that left their sender together: the
    /// MAC table is consulted once per batch (and once per change of source
    /// or destination within it), and each run of frames for one port is
    /// delivered as a batch.
    pub fn forward_batch(&self, from: usize, frames: Frames<'_>, sent: u64) {
        let mut at = 0;
        while at < frames.len() {
            let end = (at + BATCH_FRAMES).min(frames.len());
            self.forward_chunk(from, frames.range(at, end), sent);
            at = end;
        }
    }

    /// [`Self::forward_batch`] of at most [`BATCH_FRAMES`] frames. Frames of
    /// one source to one unicast destination go where the sender's last
    /// such batch went while the MAC table has not changed since
    /// ([`Route`]), without taking the table's lock.
    fn forward_chunk(&self, from: usize, frames: Frames<'_>, sent: u64) {
        let mut dests = [Dest::Drop; BATCH_FRAMES];
        let ports = self.ports.read().unwrap_or_else(|e| e.into_inner());
        let sender = ports.get(from);
        let changes = self.fdb_changes.load(Ordering::Acquire);
        let runts = match sender.and_then(|p| p.cached(frames, sent, changes)) {
            Some(Dest::Port(p)) => {
                // One unicast destination for the whole chunk.
                if let Some(port) = ports.get(p) {
                    self.deliver(port, frames, sent);
                }
                return;
            }
            Some(d) => {
                dests[..frames.len()].fill(d);
                0
            }
            None => {
                let (runts, changes) = self.route(from, frames, sent, &mut dests);
                if let Some(p) = sender {
                    p.remember(frames, dests[0], sent, changes);
                }
                runts
            }
        };
        if runts > 0 {
            if let Some(p) = sender {
                p.counters.runt_drops.fetch_add(runts, Ordering::Relaxed);
            }
        }
        let mut i = 0;
        while i < frames.len() {
            let d = dests[i];
            let mut j = i + 1;
            while j < frames.len() && dests[j] == d {
                j += 1;
            }
            let run = frames.range(i, j);
            match d {
                Dest::Drop => {}
                Dest::Port(p) => {
                    if let Some(port) = ports.get(p) {
                        self.deliver(port, run, sent);
                    }
                }
                Dest::Flood => {
                    for (k, port) in ports.iter().enumerate() {
                        if k != from {
                            self.deliver(port, run, sent);
                        }
                    }
                }
            }
            i = j;
        }
    }
}

impl FrameSink for PortHandle {
    fn transmit(&self, frame: &[u8]) {
        self.counters.tx_frames.fetch_add(1, Ordering::Relaxed);
        self.counters.capture.record(frame);
        self.switch.forward(self.index, frame);
    }

    fn transmit_at(&self, frame: &[u8], sent_ns: u64) {
        self.counters.tx_frames.fetch_add(1, Ordering::Relaxed);
        self.counters.capture.record(frame);
        self.switch.forward_at(self.index, frame, sent_ns);
    }

    fn transmit_batch(&self, batch: &FrameBatch) {
        let frames = batch.frames();
        self.counters
            .tx_frames
            .fetch_add(frames.len() as u64, Ordering::Relaxed);
        self.counters.capture.record_all(frames);
        self.switch.forward_batch(self.index, frames, batch.sent());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[0..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
    }

    #[test]
    fn floods_then_learns() {
        let sw = Arc::new(Switch::default());
        let (a, ra) = sw.attach();
        let (b, rb) = sw.attach();
        let (_c, rc) = sw.attach();
        let ma = [2, 0, 0, 0, 0, 0xa];
        let mb = [2, 0, 0, 0, 0, 0xb];
        a.transmit(&frame(mb, ma));
        rb.rx.try_recv().unwrap();
        assert!(rc.rx.try_recv().is_ok(), "unknown destination floods");
        b.transmit(&frame(ma, mb));
        let got = ra.recv().unwrap();
        assert_eq!(got, frame(ma, mb));
        ra.recycle(got);
        assert!(
            rc.rx.try_recv().is_err(),
            "learned destination is not flooded"
        );
        assert!(ra.rx.try_recv().is_err(), "no echo to the sender");
    }

    /// A sender's route is cached per source and destination MAC; a MAC
    /// that moves to another port takes the next frame with it.
    #[test]
    fn a_cached_route_follows_a_mac_that_moves_port() {
        let sw = Arc::new(Switch::default());
        let (a, _ra) = sw.attach();
        let (b, rb) = sw.attach();
        let (c, rc) = sw.attach();
        let ma = [2, 0, 0, 0, 0, 0xa];
        let mx = [2, 0, 0, 0, 0, 0x1];
        b.transmit_at(&frame([0xff; 6], mx), 1);
        for t in 2..5 {
            a.transmit_at(&frame(mx, ma), t);
        }
        assert_eq!(rb.rx.try_iter().count(), 3, "unicast to b");
        assert_eq!(rc.rx.try_iter().count(), 1, "c saw only the broadcast");
        c.transmit_at(&frame([0xff; 6], mx), 5);
        rb.rx.try_iter().for_each(drop);
        a.transmit_at(&frame(mx, ma), 6);
        assert_eq!(rc.rx.try_iter().count(), 1, "the moved MAC's port got it");
        assert_eq!(rb.rx.try_iter().count(), 0, "the old port did not");
    }

    /// While a cached route is used the sender's MAC is still refreshed in
    /// the table (once per [`ROUTE_REFRESH_NS`]), so it does not age out and
    /// answers to it are not flooded.
    #[test]
    fn a_sender_on_a_cached_route_stays_learned() {
        let sw = Arc::new(Switch::default());
        let (a, ra) = sw.attach();
        let (b, rb) = sw.attach();
        let (_c, rc) = sw.attach();
        let (ma, mb) = ([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb]);
        b.transmit_at(&frame([0xff; 6], mb), 0);
        let step = 500_000_000;
        let end = crate::fdb::FDB_AGE_NS + 10 * step;
        let mut t = 0;
        while t <= end {
            a.transmit_at(&frame(mb, ma), t);
            b.transmit_at(&frame([0xff; 6], mb), t);
            t += step;
        }
        rb.rx.try_iter().for_each(drop);
        rc.rx.try_iter().for_each(drop);
        ra.rx.try_iter().for_each(drop);
        b.transmit_at(&frame(ma, mb), end);
        assert_eq!(ra.rx.try_iter().count(), 1);
        assert_eq!(rc.rx.try_iter().count(), 0, "not flooded: a is still known");
    }

    struct Sink(Mutex<Vec<Vec<u8>>>, Mutex<()>);
    impl DirectRx for Sink {
        fn try_deliver(&self, frame: &[u8], _: u64) -> bool {
            let Ok(_g) = self.1.try_lock() else {
                return false;
            };
            self.0.lock().unwrap().push(frame.to_vec());
            true
        }
    }

    #[test]
    fn direct_delivery_when_idle_queue_when_busy_never_reordered() {
        let sw = Arc::new(Switch::default());
        let (a, _ra) = sw.attach();
        let sink = Arc::new(Sink(Mutex::default(), Mutex::default()));
        let (_b, rb) = sw.attach_direct(Some(sink.clone()));
        let f = |n: u8| {
            let mut f = frame([0xff; 6], [2, 0, 0, 0, 0, 1]);
            f[20] = n;
            f
        };
        a.transmit(&f(1));
        assert_eq!(sink.0.lock().unwrap().len(), 1, "delivered directly");
        let busy = sink.1.lock().unwrap();
        a.transmit(&f(2));
        drop(busy);
        a.transmit(&f(3));
        assert_eq!(sink.0.lock().unwrap().len(), 1, "queued behind frame 2");
        let g2 = rb.recv().unwrap();
        assert_eq!(g2[20], 2);
        rb.recycle(g2);
        let g3 = rb.recv().unwrap();
        assert_eq!(g3[20], 3);
        rb.recycle(g3);
        a.transmit(&f(4));
        assert_eq!(sink.0.lock().unwrap().len(), 2, "direct again once drained");
    }

    /// Takes the first `room` frames it is offered, then is busy.
    struct Room(Mutex<(usize, Vec<Vec<u8>>)>);
    impl DirectRx for Room {
        fn try_deliver(&self, frame: &[u8], _: u64) -> bool {
            let mut r = self.0.lock().unwrap();
            if r.0 == 0 {
                return false;
            }
            r.0 -= 1;
            r.1.push(frame.to_vec());
            true
        }
    }

    #[test]
    fn a_batch_is_routed_frame_by_frame_and_kept_in_order() {
        let sw = Arc::new(Switch::default());
        let (a, _ra) = sw.attach();
        let room = Arc::new(Room(Mutex::new((2, Vec::new()))));
        let (b, rb) = sw.attach_direct(Some(room.clone()));
        let (_c, rc) = sw.attach();
        let (ma, mb) = ([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb]);
        b.transmit(&frame([0xff; 6], mb));
        let _ = rc.rx.try_recv();
        let numbered = |dst: [u8; 6], n: u8| {
            let mut f = frame(dst, ma);
            f[20] = n;
            f
        };
        let mut batch = FrameBatch::default();
        batch.push_copy(&numbered(mb, 1));
        batch.push_copy(&[0u8; 10]);
        batch.push_copy(&numbered(mb, 2));
        batch.push_copy(&numbered([0xff; 6], 3));
        batch.push_copy(&numbered(ma, 4));
        batch.push_copy(&numbered(mb, 5));
        batch.sent_ns(|| 1);
        a.transmit_batch(&batch);
        let direct: Vec<u8> = room.0.lock().unwrap().1.iter().map(|f| f[20]).collect();
        assert_eq!(direct, vec![1, 2], "taken directly while the port had room");
        let queued: Vec<u8> = std::iter::from_fn(|| rb.rx.try_recv().ok())
            .map(|(f, _)| f[20])
            .collect();
        assert_eq!(queued, vec![3, 5], "the rest queued behind them, in order");
        let flooded: Vec<u8> = std::iter::from_fn(|| rc.rx.try_recv().ok())
            .map(|(f, _)| f[20])
            .collect();
        assert_eq!(flooded, vec![3], "broadcast floods; unicast to B does not");
        assert_eq!(a.counters.runt_drops.load(Ordering::Relaxed), 1);
        assert_eq!(a.counters.tx_frames.load(Ordering::Relaxed), 6);
        assert_eq!(b.counters.rx_frames.load(Ordering::Relaxed), 4);
    }

    #[test]
    fn random_source_macs_keep_the_mac_table_bounded() {
        let sw = Arc::new(Switch::default());
        let (a, _ra) = sw.attach();
        let (_b, _rb) = sw.attach();
        let n = 3 * crate::fdb::FDB_CAP as u32;
        for i in 0..n {
            let b = i.to_be_bytes();
            a.transmit(&frame([0xff; 6], [2, 0, b[0], b[1], b[2], b[3]]));
        }
        let entries = sw.fdb.lock().unwrap().len();
        assert!(entries <= crate::fdb::FDB_CAP, "{entries} entries");
        let net = &a.counters.net;
        assert_eq!(
            net.fdb_evictions.load(Ordering::Relaxed),
            u64::from(n) - entries as u64,
            "every forgotten MAC is counted"
        );
    }

    #[test]
    fn runt_frames_are_dropped_and_counted_at_the_sender() {
        let sw = Arc::new(Switch::default());
        let (a, _ra) = sw.attach();
        let (b, rb) = sw.attach();
        a.transmit(&[0xff; 13]);
        a.transmit(&[]);
        rb.rx.try_recv().unwrap_err();
        assert_eq!(a.counters.runt_drops.load(Ordering::Relaxed), 2);
        assert_eq!(b.counters.rx_frames.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_port_queue_is_bounded_in_bytes() {
        let sw = Arc::new(Switch::default());
        let (a, _ra) = sw.attach();
        let (b, _rb) = sw.attach();
        let mut big = vec![0u8; 64 * 1024];
        big[0..6].copy_from_slice(&[0xff; 6]);
        big[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        for _ in 0..PORT_QUEUE {
            a.transmit(&big);
        }
        let queued = b.counters.rx_frames.load(Ordering::Relaxed) as usize;
        assert!(
            queued * big.len() <= PORT_QUEUE_BYTES,
            "{queued} frames of 64 KiB queued"
        );
        assert_eq!(
            b.counters.rx_drops.load(Ordering::Relaxed) as usize,
            PORT_QUEUE - queued
        );
    }

    #[test]
    fn the_frame_pool_is_bounded_in_bytes() {
        let pool = FramePool::default();
        for _ in 0..POOL_KEEP {
            pool.recycle(vec![0u8; 64 * 1024]);
        }
        assert!(
            pool.held_bytes() <= POOL_BYTES,
            "{} bytes",
            pool.held_bytes()
        );
    }

    #[test]
    fn full_queue_drops_and_counts() {
        let sw = Arc::new(Switch::default());
        let (a, _ra) = sw.attach();
        let (b, _rb) = sw.attach();
        for _ in 0..PORT_QUEUE + 10 {
            a.transmit(&frame([0xff; 6], [2, 0, 0, 0, 0, 1]));
        }
        assert_eq!(b.counters.rx_drops.load(Ordering::Relaxed), 10);
        assert_eq!(
            b.counters.rx_frames.load(Ordering::Relaxed),
            PORT_QUEUE as u64
        );
        a.transmit(&[0u8; 5]);
    }
}
