// SPDX-License-Identifier: Apache-2.0
//! Device timers: one thread per device sleeps until the earliest deadline the
//! device armed (interrupt moderation, link timers) and then calls
//! [`PciFunction::on_timer`](nicemu_device_models::PciFunction::on_timer).

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use nicemu_device_models::{Clock, TimerSink};

use crate::latency::PortLatency;

/// The earliest armed deadline of one device.
#[derive(Debug, Default)]
pub struct DeviceTimer {
    deadline: Mutex<Option<u64>>,
    cv: Condvar,
}

impl TimerSink for DeviceTimer {
    fn arm(&self, deadline_ns: u64) {
        let mut d = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        if d.is_none_or(|cur| deadline_ns < cur) {
            *d = Some(deadline_ns);
            self.cv.notify_one();
        }
    }
}

impl DeviceTimer {
    /// Blocks until the armed deadline has passed and returns it (disarmed).
    fn wait(&self, clock: &dyn Clock) -> u64 {
        let mut d = self.deadline.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            match *d {
                None => d = self.cv.wait(d).unwrap_or_else(|e| e.into_inner()),
                Some(t) => {
                    let now = clock.now_ns();
                    if now >= t {
                        *d = None;
                        return now;
                    }
                    d = self
                        .cv
                        .wait_timeout(d, Duration::from_nanos(t - now))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
            }
        }
    }
}

/// Starts the timer thread of a device: each time a deadline has passed it
/// calls `on_deadline` with the time (the device's
/// [`on_timer`](nicemu_device_models::PciFunction::on_timer)). It is one of
/// the device's own threads: `on_deadline` writes the interrupts the
/// deadline raised on it (a vfio-user function wraps the call in its
/// `EventIrq::serving`).
pub fn spawn(
    id: &str,
    timer: Arc<DeviceTimer>,
    on_deadline: impl Fn(u64) + Send + 'static,
    clock: Arc<dyn Clock>,
    lat: Arc<PortLatency>,
) -> Result<(), crate::error::Error> {
    crate::threads::spawn(format!("timer-{id}"), move || {
        lat.threads.enter("timer");
        loop {
            on_deadline(timer.wait(clock.as_ref()));
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use nicemu_device_models::MonotonicClock;

    #[test]
    fn earliest_deadline_wins_and_wait_returns_after_it() {
        let t = DeviceTimer::default();
        let c = MonotonicClock;
        let now = c.now_ns();
        t.arm(now + 50_000_000);
        t.arm(now + 2_000_000);
        t.arm(now + 30_000_000);
        let woke = t.wait(&c);
        assert!(woke >= now + 2_000_000);
        assert!(
            woke < now + 30_000_000,
            "earliest deadline, not a later one"
        );
        assert!(t.deadline.lock().unwrap().is_none(), "disarmed");
    }
}
