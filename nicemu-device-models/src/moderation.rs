// SPDX-License-Identifier: Apache-2.0
//! Interrupt moderation shared by igb and ixgbe (EITR; 82576 datasheet
//! §7.3.4.1, 82599 §7.3.2.1): each MSI-X vector fires at most once per its
//! programmed interval. A cause that arrives sooner stays pending and a timer
//! is armed for the end of the interval, when the device delivers it.

use crate::env::TimerSink;

/// Per-vector moderation state: earliest time of each vector's next interrupt.
#[derive(Clone, Debug)]
pub struct Moderation {
    next: Vec<u64>,
}

impl Moderation {
    /// State for `vectors` vectors, all free to fire.
    pub fn new(vectors: usize) -> Self {
        Moderation {
            next: vec![0; vectors],
        }
    }

    /// From the vectors in `ready`, returns those that may fire at `now` and
    /// starts their next interval (`interval_ns(v)`); arms `timer` for the
    /// earliest vector held back.
    pub fn gate(
        &mut self,
        ready: u64,
        now: u64,
        interval_ns: impl Fn(usize) -> u64,
        timer: &dyn TimerSink,
    ) -> u64 {
        self.gate_at(ready, || now, interval_ns, timer)
    }

    /// [`Self::gate`] reading the time (`now`, a monotonic clock) only when
    /// a vector needs it: a vector free to fire (its next time 0) whose
    /// interval is 0 (no moderation) fires without it, and its next time
    /// stays 0, which any later time has passed as `now + 0` would.
    pub fn gate_at(
        &mut self,
        ready: u64,
        now: impl FnOnce() -> u64,
        interval_ns: impl Fn(usize) -> u64,
        timer: &dyn TimerSink,
    ) -> u64 {
        let mut clock = Some(now);
        let mut at = 0;
        let mut time = || {
            if let Some(c) = clock.take() {
                at = c();
            }
            at
        };
        let mut fire = 0u64;
        let mut wake = u64::MAX;
        let mut r = ready;
        while r != 0 {
            let v = r.trailing_zeros() as usize;
            r &= r - 1;
            let Some(next) = self.next.get_mut(v) else {
                fire |= 1 << v;
                continue;
            };
            if *next == 0 || time() >= *next {
                fire |= 1 << v;
                *next = match interval_ns(v) {
                    0 => 0,
                    iv => time().saturating_add(iv),
                };
            } else {
                wake = wake.min(*next);
            }
        }
        if wake != u64::MAX {
            timer.arm(wake);
        }
        fire
    }

    /// A write to the vector's EITR without the counter-ignore bit restarts
    /// its interval: the next cause fires at once.
    pub fn restart(&mut self, v: usize) {
        if let Some(n) = self.next.get_mut(v) {
            *n = 0;
        }
    }

    /// Device reset.
    pub fn reset(&mut self) {
        self.next.iter_mut().for_each(|n| *n = 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::RecordingTimer;

    /// Vectors without moderation fire without reading the clock; a
    /// moderated one reads it once per call.
    #[test]
    fn the_clock_is_read_only_for_moderated_vectors() {
        let t = RecordingTimer::default();
        let mut m = Moderation::new(4);
        let reads = std::cell::Cell::new(0);
        let clock = |ns: u64| {
            let reads = &reads;
            move || {
                reads.set(reads.get() + 1);
                ns
            }
        };
        let iv = |v: usize| if v == 1 { 50_000 } else { 0 };
        assert_eq!(m.gate_at(0b101, clock(1_000), iv, &t), 0b101);
        assert_eq!(m.gate_at(0b101, clock(2_000), iv, &t), 0b101);
        assert_eq!(reads.get(), 0, "no vector moderated");
        assert_eq!(m.gate_at(0b111, clock(3_000), iv, &t), 0b111);
        assert_eq!(
            m.gate_at(0b111, clock(4_000), iv, &t),
            0b101,
            "vector 1 held back"
        );
        assert_eq!(reads.get(), 2, "once per call");
        assert_eq!(t.take(), vec![53_000]);
    }

    #[test]
    fn holds_back_within_the_interval_and_arms_the_timer() {
        let t = RecordingTimer::default();
        let mut m = Moderation::new(4);
        let iv = |v: usize| if v == 1 { 50_000 } else { 0 };
        assert_eq!(m.gate(0b11, 1_000, iv, &t), 0b11);
        assert_eq!(m.gate(0b11, 2_000, iv, &t), 0b01, "vector 1 held back");
        assert_eq!(t.take(), vec![51_000]);
        assert_eq!(m.gate(0b10, 51_000, iv, &t), 0b10);
        m.restart(1);
        assert_eq!(m.gate(0b10, 52_000, iv, &t), 0b10, "restart frees it");
        assert_eq!(
            m.gate(1 << 40, 0, iv, &t),
            1 << 40,
            "vectors beyond the table are not moderated"
        );
    }
}
