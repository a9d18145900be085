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
            if now >= *next {
                fire |= 1 << v;
                *next = now.saturating_add(interval_ns(v));
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
