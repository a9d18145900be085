// SPDX-License-Identifier: Apache-2.0
//! A twisted-pair cable between the PHYs of two ports: each end sees what the
//! other signals — nothing (no power, no cable), autonegotiation under way, or
//! its [`Offer`] — and the link each end resolves follows from both (IEEE
//! 802.3 clause 28; [`crate::autoneg::resolve`]).
//!
//! An end publishes its signal whenever its PHY's state changes; when the
//! signal differs from the last one, the other end's kick runs (its device
//! then re-reads the partner on its own timer, never under this end's locks).
//! Frames do not travel here: the two ports still exchange them through their
//! network.

use std::sync::{Arc, Mutex, PoisonError};

use crate::autoneg::Offer;

/// What one end of the cable puts on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Signal {
    /// Nothing: the PHY is powered down or its cable is out.
    #[default]
    Off,
    /// Autonegotiation under way (fast link pulse bursts).
    Negotiating,
    /// Negotiated (or forced) with this offer: the link's idle or data.
    Offer(Offer),
}

/// Called when the other end's signal changes.
pub type Kick = Arc<dyn Fn() + Send + Sync>;

#[derive(Default)]
struct End {
    signal: Signal,
    kick: Option<Kick>,
}

/// The two ends' signals.
#[derive(Default)]
struct Wire {
    ends: Mutex<[End; 2]>,
}

/// One end of a cable (see the module documentation).
#[derive(Clone)]
pub struct CableEnd {
    wire: Arc<Wire>,
    side: usize,
}

impl std::fmt::Debug for CableEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CableEnd")
            .field("side", &self.side)
            .field("partner", &self.partner())
            .finish()
    }
}

impl CableEnd {
    /// A new cable's two ends, both signalling nothing yet.
    pub fn pair() -> (CableEnd, CableEnd) {
        let wire = Arc::new(Wire::default());
        (
            CableEnd {
                wire: wire.clone(),
                side: 0,
            },
            CableEnd { wire, side: 1 },
        )
    }

    fn ends(&self) -> std::sync::MutexGuard<'_, [End; 2]> {
        self.wire
            .ends
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets what runs when the other end's signal changes (the device
    /// holding this end re-reads [`Self::partner`] then).
    pub fn set_kick(&self, kick: Kick) {
        self.ends()[self.side].kick = Some(kick);
    }

    /// This end now signals `s`; the other end is kicked when that differs
    /// from before (the kick runs after the cable's lock is released).
    pub fn publish(&self, s: Signal) {
        let kick = {
            let mut ends = self.ends();
            if ends[self.side].signal == s {
                return;
            }
            ends[self.side].signal = s;
            ends[1 - self.side].kick.clone()
        };
        if let Some(k) = kick {
            k();
        }
    }

    /// What the other end signals.
    pub fn partner(&self) -> Signal {
        self.ends()[1 - self.side].signal
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_changed_signal_kicks_the_other_end_once() {
        let (a, b) = CableEnd::pair();
        let kicks = Arc::new(AtomicUsize::new(0));
        let k = kicks.clone();
        b.set_kick(Arc::new(move || {
            k.fetch_add(1, Ordering::SeqCst);
        }));
        assert_eq!(b.partner(), Signal::Off);
        a.publish(Signal::Negotiating);
        assert_eq!(b.partner(), Signal::Negotiating);
        assert_eq!(a.partner(), Signal::Off, "each end sees the other");
        a.publish(Signal::Negotiating);
        assert_eq!(
            kicks.load(Ordering::SeqCst),
            1,
            "the same signal kicks nobody"
        );
        a.publish(Signal::Offer(Offer::IDEAL_PARTNER));
        assert_eq!(kicks.load(Ordering::SeqCst), 2);
        // b's own publications do not kick b.
        b.publish(Signal::Negotiating);
        assert_eq!(kicks.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_kick_may_read_the_cable() {
        let (a, b) = CableEnd::pair();
        let seen = Arc::new(Mutex::new(Signal::Off));
        let (s, b2) = (seen.clone(), b.clone());
        b.set_kick(Arc::new(move || {
            *s.lock().unwrap() = b2.partner();
        }));
        a.publish(Signal::Negotiating);
        assert_eq!(*seen.lock().unwrap(), Signal::Negotiating);
    }
}
