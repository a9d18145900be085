// SPDX-License-Identifier: Apache-2.0
//! Per-port latency histograms, always on: where a transaction's time goes
//! inside nicemu (`nicemu ctl latency DEV`).
//!
//! Stages, each a histogram of nanoseconds on the host's monotonic clock (the
//! devices' [`MonotonicClock`]):
//!
//! | stage | igb/ixgbe function | virtio-net port |
//! |---|---|---|
//! | `doorbell_to_wire` | BAR write received (a TDT doorbell) → each frame its transmit pass hands to the switch (placed in the peer's ring when the peer takes it directly, else queued for the peer's receive thread) | kick seen by the queue's worker → each frame handed to the switch |
//! | `doorbell_to_done` | the doorbell's BAR write served (descriptors written back), for writes that sent frames | kick → used ring updated |
//! | `wire_to_ring` | a frame sent by a peer → accepted by this port (placed in a receive ring, or dropped and counted) | the same, into the receive virtqueue's used ring |
//! | `raise_to_irq` | interrupt raised by the model → its eventfd written (by the raising thread at the end of its pass when it is one of the port's own, else by the port's signaller thread) | used-ring signal raised → call eventfd written |
//! | `irq_write` | the eventfd `write(2)` alone, start → return: the kernel waking the client's thread that polls it (on a guest host that has to wake an idle vCPU, an IPI) | the same, for the call eventfd |
//! | `doorbell_to_irq` | a doorbell that sent frames → the port's next interrupt written | a kick that used chains → the port's next call written |
//!
//! A histogram is [`BUCKETS`] relaxed atomic counters, log-linear: four
//! buckets per power of two (a bucket spans at most 25 % of its value), so
//! a record is a clock read, one `leading_zeros` and two relaxed atomic
//! adds, with no allocation and no lock; any thread records into any port.
//! The exact maximum is kept too. Quantiles are the upper bound of the
//! bucket holding them (capped at the maximum).
//!
//! Why not the `hdrhistogram` crate: its `Histogram::record` takes `&mut
//! self`, so recording from several threads (a frame reaches a port's
//! receive ring from every sender's thread) needs a lock per record, or its
//! `SyncHistogram` with a recorder per thread and a reader that waits for
//! every recorder to phase — neither fits threads nicemu does not own
//! (vhost-user-backend's workers) or a control-socket read that must not
//! wait for a busy data path. Its precision (3 significant digits) is more
//! than a latency breakdown needs.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use nicemu_device_models::{
    Clock, Delivery, FrameBatch, FrameSink, Frames, MonotonicClock, NetPort,
};

use crate::schedstat::PortThreads;

/// Sub-buckets per power of two (2 bits of mantissa).
const SUB_BITS: u32 = 2;
const SUB: usize = 1 << SUB_BITS;
/// Buckets of one histogram: values below `SUB` have a bucket each, then
/// `SUB` per power of two up to 2^64.
pub const BUCKETS: usize = SUB + (64 - SUB_BITS as usize) * SUB;

/// The bucket of value `v`.
fn bucket(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // floor(log2 v) >= SUB_BITS
    let m = ((v >> (e - SUB_BITS)) as usize) & (SUB - 1);
    SUB + (e - SUB_BITS) as usize * SUB + m
}

/// The largest value bucket `b` holds.
fn upper(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let e = (b - SUB) / SUB + SUB_BITS as usize;
    let m = ((b - SUB) % SUB) as u64;
    let lo = (1u64 << e) | (m << (e - SUB_BITS as usize));
    lo.saturating_add((1u64 << (e - SUB_BITS as usize)) - 1)
}

/// A histogram of nanoseconds, recorded from any thread without locking.
#[derive(Debug)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
    max: AtomicU64,
    sum: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            max: AtomicU64::new(0),
            sum: AtomicU64::new(0),
        }
    }
}

/// Count and quantiles of a histogram, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Values recorded.
    pub count: u64,
    /// Median (upper bound of its bucket).
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Largest value.
    pub max: u64,
    /// Mean (sum / count).
    pub mean: u64,
}

impl Histogram {
    /// Records one value.
    #[inline]
    pub fn record(&self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Records the value `ns` `n` times (frames of one batch).
    #[inline]
    pub fn record_n(&self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts[bucket(ns)].fetch_add(n, Ordering::Relaxed);
        self.max.fetch_max(ns, Ordering::Relaxed);
        self.sum.fetch_add(ns.saturating_mul(n), Ordering::Relaxed);
    }

    /// Records the time from `since` (on [`MonotonicClock`]) to now; `0`
    /// means "not known" and records nothing.
    #[inline]
    pub fn record_since(&self, since: u64) {
        if since != 0 {
            self.record(now().saturating_sub(since));
        }
    }

    /// Sets every counter back to zero (values recorded meanwhile may be
    /// kept or lost).
    pub fn reset(&self) {
        self.counts
            .iter()
            .for_each(|c| c.store(0, Ordering::Relaxed));
        self.max.store(0, Ordering::Relaxed);
        self.sum.store(0, Ordering::Relaxed);
    }

    /// Count and quantiles now (a snapshot: counters read one by one).
    pub fn summary(&self) -> Summary {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let count: u64 = counts.iter().sum();
        let max = self.max.load(Ordering::Relaxed);
        let quantile = |q: f64| -> u64 {
            if count == 0 {
                return 0;
            }
            // The rank of the q-th value, 1-based, rounded up.
            let rank = ((count as f64 * q).ceil() as u64).clamp(1, count);
            let mut seen = 0;
            for (b, &c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return upper(b).min(max);
                }
            }
            max
        };
        Summary {
            count,
            p50: quantile(0.50),
            p90: quantile(0.90),
            p99: quantile(0.99),
            max,
            mean: self
                .sum
                .load(Ordering::Relaxed)
                .checked_div(count)
                .unwrap_or(0),
        }
    }
}

/// Nanoseconds on the devices' clock; never 0 (0 means "none" in the
/// stamps below).
#[inline]
pub fn now() -> u64 {
    MonotonicClock.now_ns().max(1)
}

/// The stage names, in path order.
pub const STAGES: [&str; 6] = [
    "doorbell_to_wire",
    "doorbell_to_done",
    "wire_to_ring",
    "raise_to_irq",
    "irq_write",
    "doorbell_to_irq",
];

/// The stages of one port (see the module documentation).
#[derive(Debug, Default)]
pub struct PortLatency {
    /// Doorbell (TDT write, kick) → each frame handed to the switch.
    pub doorbell_to_wire: Histogram,
    /// Doorbell → its transmit pass done (descriptors written back, used ring).
    pub doorbell_to_done: Histogram,
    /// A peer's frame sent → accepted by this port.
    pub wire_to_ring: Histogram,
    /// Interrupt raised → eventfd written.
    pub raise_to_irq: Histogram,
    /// The eventfd write alone: the `write(2)` call's start → its return.
    pub irq_write: Histogram,
    /// Doorbell that sent frames → next interrupt written.
    pub doorbell_to_irq: Histogram,
    /// The oldest doorbell that sent frames and no interrupt followed yet
    /// (0: none).
    doorbell_waiting: AtomicU64,
    /// The port's threads, for how long they wait for a core
    /// ([`crate::schedstat`]).
    pub threads: PortThreads,
}

impl PortLatency {
    /// Every stage by name, in path order.
    pub fn stages(&self) -> [(&'static str, &Histogram); 6] {
        let [a, b, c, d, e, f] = STAGES;
        [
            (a, &self.doorbell_to_wire),
            (b, &self.doorbell_to_done),
            (c, &self.wire_to_ring),
            (d, &self.raise_to_irq),
            (e, &self.irq_write),
            (f, &self.doorbell_to_irq),
        ]
    }

    /// Every stage's summary, as `ctl latency` returns it.
    pub fn to_json(&self) -> serde_json::Value {
        let stages: serde_json::Map<String, serde_json::Value> = self
            .stages()
            .iter()
            .map(|(n, h)| ((*n).to_string(), serde_json::json!(h.summary())))
            .collect();
        serde_json::Value::Object(stages)
    }

    /// Clears every stage (not the threads' accounting:
    /// [`PortThreads::report`] starts that afresh as it reads it).
    pub fn reset(&self) {
        self.stages().iter().for_each(|(_, h)| h.reset());
        self.doorbell_waiting.store(0, Ordering::Relaxed);
    }

    /// A doorbell that started at `at` sent `n` frames now.
    #[inline]
    pub fn frames_sent(&self, at: u64, n: u64) {
        self.doorbell_to_wire.record_n(now().saturating_sub(at), n);
        let _ = self
            .doorbell_waiting
            .compare_exchange(0, at, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// An interrupt raised at `raised` (0: unknown) was written now, by a
    /// write that started at `started` (0: not timed).
    pub fn irq_written(&self, raised: u64, started: u64) {
        let t = now();
        if started != 0 {
            self.irq_write.record(t.saturating_sub(started));
        }
        if raised != 0 {
            self.raise_to_irq.record(t.saturating_sub(raised));
        }
        let d = self.doorbell_waiting.swap(0, Ordering::Relaxed);
        if d != 0 {
            self.doorbell_to_irq.record(t.saturating_sub(d));
        }
    }
}

thread_local! {
    /// When the doorbell this thread serves arrived (0: none), and whether
    /// its pass sent a frame yet.
    static DOORBELL: Cell<(u64, bool)> = const { Cell::new((0, false)) };
}

/// A doorbell (or any BAR write, or a kick) served on this thread: frames
/// the thread sends meanwhile are timed from its start
/// ([`doorbell_frame_sent`]), and [`Doorbell::done`] records the pass.
#[derive(Debug)]
pub struct Doorbell {
    at: u64,
}

impl Doorbell {
    /// A doorbell starts now on this thread.
    #[inline]
    pub fn start() -> Doorbell {
        let at = now();
        DOORBELL.with(|d| d.set((at, false)));
        Doorbell { at }
    }

    /// The doorbell's pass is done: records `doorbell_to_done` into `lat`
    /// if it sent a frame.
    #[inline]
    pub fn done(self, lat: &PortLatency) {
        let (_, sent) = DOORBELL.with(|d| d.replace((0, false)));
        if sent {
            lat.doorbell_to_done.record_since(self.at);
        }
    }
}

/// A frame was handed to the switch on this thread: if a doorbell is being
/// served here, records it into `lat`.
#[inline]
pub fn doorbell_frame_sent(lat: &PortLatency) {
    doorbell_frames_sent(lat, 1);
}

/// `n` frames were handed to the switch at once on this thread (a batch).
#[inline]
pub fn doorbell_frames_sent(lat: &PortLatency, n: u64) {
    let (at, _) = DOORBELL.with(Cell::get);
    if at != 0 && n > 0 {
        DOORBELL.with(|d| d.set((at, true)));
        lat.frames_sent(at, n);
    }
}

/// A port's transmit path that times frames sent during a doorbell
/// (`doorbell_to_wire`; the frame has been handed on when `transmit`
/// returns).
pub struct TimedWire {
    inner: Arc<dyn FrameSink>,
    lat: Arc<PortLatency>,
}

impl TimedWire {
    /// Wraps `inner`, recording into `lat`.
    pub fn new(inner: Arc<dyn FrameSink>, lat: Arc<PortLatency>) -> Self {
        TimedWire { inner, lat }
    }
}

impl FrameSink for TimedWire {
    fn transmit(&self, frame: &[u8]) {
        self.inner.transmit(frame);
        doorbell_frame_sent(&self.lat);
    }

    fn transmit_at(&self, frame: &[u8], sent_ns: u64) {
        self.inner.transmit_at(frame, sent_ns);
        doorbell_frame_sent(&self.lat);
    }

    fn transmit_batch(&self, batch: &FrameBatch) {
        self.inner.transmit_batch(batch);
        doorbell_frames_sent(&self.lat, batch.len() as u64);
    }
}

/// A port's receive side that times each frame from when its sender sent
/// it to when the port took it (`wire_to_ring`).
pub struct TimedRx {
    inner: Arc<dyn NetPort>,
    lat: Arc<PortLatency>,
}

impl TimedRx {
    /// Wraps `inner`, recording into `lat`.
    pub fn new(inner: Arc<dyn NetPort>, lat: Arc<PortLatency>) -> Self {
        TimedRx { inner, lat }
    }
}

impl NetPort for TimedRx {
    fn deliver(&self, frame: &[u8], sent_ns: Option<u64>, wait: bool) -> Delivery {
        let d = self.inner.deliver(frame, sent_ns, wait);
        if d == Delivery::Done {
            if let Some(t) = sent_ns {
                self.lat.wire_to_ring.record_since(t);
            }
        }
        d
    }

    fn deliver_batch(&self, frames: Frames<'_>, sent_ns: Option<u64>, wait: bool) -> usize {
        let n = self.inner.deliver_batch(frames, sent_ns, wait);
        if let Some(t) = sent_ns {
            self.lat
                .wire_to_ring
                .record_n(now().saturating_sub(t), n as u64);
        }
        n
    }

    fn set_link(&self, up: bool) {
        self.inner.set_link(up);
    }

    fn link_up(&self) -> bool {
        self.inner.link_up()
    }

    fn set_wire_delay_ns(&self, ns: u64) {
        self.inner.set_wire_delay_ns(ns);
    }

    fn set_autoneg_ns(&self, ns: u64) {
        self.inner.set_autoneg_ns(ns);
    }

    fn attach_cable(&self, end: nicemu_device_models::cable::CableEnd) -> bool {
        self.inner.attach_cable(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_hold_their_values() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        assert_eq!(upper(BUCKETS - 1), u64::MAX);
        for b in 1..BUCKETS {
            assert!(upper(b - 1) < upper(b));
            assert_eq!(bucket(upper(b - 1) + 1), b, "first value of bucket {b}");
            assert_eq!(bucket(upper(b)), b, "last value of bucket {b}");
        }
        // A bucket spans at most a quarter of its values.
        for v in [5u64, 100, 1_000, 12_345, 1 << 40] {
            let u = upper(bucket(v));
            assert!(u >= v && (u - v) * 4 <= v, "{v} → {u}");
        }
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let h = Histogram::default();
        assert_eq!(h.summary(), Summary::default());
        for v in 1..=1000u64 {
            h.record(v * 1000); // 1 µs … 1 ms
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.max, 1_000_000);
        assert_eq!(s.mean, 500_500);
        // Within a bucket (≤ 25 %) above the exact quantile, never below.
        for (got, exact) in [(s.p50, 500_000), (s.p90, 900_000), (s.p99, 990_000)] {
            assert!(got >= exact && got <= exact + exact / 4, "{got} vs {exact}");
        }
        assert!(s.p50 <= s.p90 && s.p90 <= s.p99 && s.p99 <= s.max);
        h.reset();
        assert_eq!(h.summary().count, 0);
    }

    #[test]
    fn doorbell_stages_need_a_doorbell_on_the_thread() {
        let lat = PortLatency::default();
        doorbell_frame_sent(&lat); // not during a doorbell: nothing
        assert_eq!(lat.doorbell_to_wire.summary().count, 0);
        Doorbell::start().done(&lat); // a write that sent nothing
        assert_eq!(lat.doorbell_to_done.summary().count, 0);
        let d2 = Doorbell::start();
        doorbell_frame_sent(&lat);
        doorbell_frame_sent(&lat);
        doorbell_frames_sent(&lat, 0); // an empty batch: nothing
        d2.done(&lat);
        let d3 = Doorbell::start();
        doorbell_frames_sent(&lat, 3); // a batch: one value per frame
        d3.done(&lat);
        assert_eq!(lat.doorbell_to_wire.summary().count, 5);
        assert_eq!(lat.doorbell_to_done.summary().count, 2);
        lat.doorbell_to_wire.reset();
        lat.doorbell_to_done.reset();
        let d2 = Doorbell::start();
        doorbell_frame_sent(&lat);
        doorbell_frame_sent(&lat);
        d2.done(&lat);
        assert_eq!(lat.doorbell_to_wire.summary().count, 2);
        assert_eq!(lat.doorbell_to_done.summary().count, 1);
        lat.irq_written(now(), now());
        lat.irq_written(0, 0);
        assert_eq!(lat.raise_to_irq.summary().count, 1);
        assert_eq!(
            lat.irq_write.summary().count,
            1,
            "untimed writes are left out"
        );
        assert_eq!(
            lat.doorbell_to_irq.summary().count,
            1,
            "one doorbell, its first interrupt only"
        );
        lat.reset();
        assert!(lat.stages().iter().all(|(_, h)| h.summary().count == 0));
    }
}
