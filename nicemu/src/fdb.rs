// SPDX-License-Identifier: Apache-2.0
//! The switch's MAC table (forwarding database): which port a unicast MAC
//! was last seen on. It is bounded, because any guest can send frames with
//! random source MACs: at most [`FDB_CAP`] entries, an entry not refreshed
//! for [`FDB_AGE_NS`] is forgotten (the 802.1D default ageing time, as
//! Linux's bridge), and when the table is full the least recently seen
//! entries make room. A MAC that is not (or no longer) in the table is
//! flooded, so a full table costs bandwidth, never connectivity.

use std::collections::HashMap;

/// Most entries the table holds.
pub const FDB_CAP: usize = 4096;
/// An entry not refreshed for this long is forgotten: 300 s (IEEE 802.1D
/// ageing time default; Linux bridge `ageing_time`).
pub const FDB_AGE_NS: u64 = 300_000_000_000;

#[derive(Clone, Copy, Debug)]
struct Entry {
    port: usize,
    seen_ns: u64,
}

/// What the table did to make room, for the switch's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Made {
    /// Entries removed because they had aged out.
    pub aged: u64,
    /// Live entries removed because the table was full.
    pub evicted: u64,
}

/// A bounded, ageing MAC table.
#[derive(Debug)]
pub struct Fdb {
    map: HashMap<[u8; 6], Entry>,
    cap: usize,
    age_ns: u64,
    /// Bumped whenever a MAC is added, moves port or is removed.
    changes: u64,
}

impl Default for Fdb {
    fn default() -> Self {
        Fdb::new(FDB_CAP, FDB_AGE_NS)
    }
}

impl Fdb {
    /// A table of at most `cap` entries (at least 1) ageing after `age_ns`.
    pub fn new(cap: usize, age_ns: u64) -> Self {
        Fdb {
            map: HashMap::new(),
            cap: cap.max(1),
            age_ns,
            changes: 0,
        }
    }

    /// Entries now (aged ones included until room is needed).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True when no MAC is known.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Records that `mac` was seen on `port` at `now_ns`; returns what was
    /// removed to make room for it.
    pub fn learn(&mut self, mac: [u8; 6], port: usize, now_ns: u64) -> Made {
        if let Some(e) = self.map.get_mut(&mac) {
            if e.port != port {
                self.changes += 1;
            }
            *e = Entry {
                port,
                seen_ns: now_ns,
            };
            return Made::default();
        }
        let made = if self.map.len() >= self.cap {
            self.make_room(now_ns)
        } else {
            Made::default()
        };
        self.changes += 1;
        self.map.insert(
            mac,
            Entry {
                port,
                seen_ns: now_ns,
            },
        );
        made
    }

    /// A count that changes whenever a MAC is added, moves to another port
    /// or is removed: what a lookup answered stays true while it does not
    /// (and the entries it used have not aged out).
    pub fn changes(&self) -> u64 {
        self.changes
    }

    /// The port `mac` was last seen on, unless the entry has aged out.
    pub fn lookup(&self, mac: &[u8; 6], now_ns: u64) -> Option<usize> {
        let e = self.map.get(mac)?;
        (!self.expired(e, now_ns)).then_some(e.port)
    }

    fn expired(&self, e: &Entry, now_ns: u64) -> bool {
        now_ns.saturating_sub(e.seen_ns) >= self.age_ns
    }

    /// Removes the aged entries; if none had aged, the least recently seen
    /// eighth of the table (so a flood of new MACs costs amortised O(1) per
    /// frame, not a scan of the table per frame).
    fn make_room(&mut self, now_ns: u64) -> Made {
        let before = self.map.len();
        let age = self.age_ns;
        self.map
            .retain(|_, e| now_ns.saturating_sub(e.seen_ns) < age);
        let aged = (before - self.map.len()) as u64;
        self.changes += 1;
        if self.map.len() < self.cap {
            return Made { aged, evicted: 0 };
        }
        let mut seen: Vec<u64> = self.map.values().map(|e| e.seen_ns).collect();
        let n = (self.cap / 8).max(1).min(seen.len());
        let (_, &mut cut, _) = seen.select_nth_unstable(n - 1);
        let mut evicted = 0u64;
        self.map.retain(|_, e| {
            let go = e.seen_ns <= cut && evicted < n as u64;
            evicted += u64::from(go);
            !go
        });
        Made { aged, evicted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(i: u32) -> [u8; 6] {
        let b = i.to_be_bytes();
        [2, 0, b[0], b[1], b[2], b[3]]
    }

    #[test]
    fn random_sources_stay_within_the_cap_and_evictions_are_counted() {
        let mut t = Fdb::new(64, FDB_AGE_NS);
        let mut made = Made::default();
        for i in 0..10_000u32 {
            let m = t.learn(mac(i), 1, u64::from(i));
            made.aged += m.aged;
            made.evicted += m.evicted;
            assert!(t.len() <= 64);
        }
        assert_eq!(made.aged, 0);
        assert_eq!(made.evicted, 10_000 - t.len() as u64);
        assert_eq!(t.lookup(&mac(9_999), 10_000), Some(1), "newest kept");
        assert_eq!(t.lookup(&mac(0), 10_000), None, "oldest evicted");
    }

    #[test]
    fn refreshed_entries_survive_a_flood_and_stale_ones_age_out() {
        let mut t = Fdb::new(16, 1_000);
        t.learn(mac(0xa), 3, 0);
        for i in 0..100u32 {
            t.learn(mac(0xa), 3, u64::from(i) * 5);
            t.learn(mac(1000 + i), 1, u64::from(i) * 5);
        }
        assert_eq!(t.lookup(&mac(0xa), 500), Some(3), "a live MAC stays known");
        assert_eq!(t.lookup(&mac(0xa), 495 + 1_000), None, "aged out");
        let mut u = Fdb::new(4, 1_000);
        for i in 0..4 {
            u.learn(mac(i), 0, 0);
        }
        let m = u.learn(mac(9), 2, 2_000);
        assert_eq!(
            m,
            Made {
                aged: 4,
                evicted: 0
            },
            "aged entries go first"
        );
        assert_eq!(u.len(), 1);
    }

    #[test]
    fn a_moved_mac_follows_its_port() {
        let mut t = Fdb::default();
        t.learn(mac(1), 0, 0);
        t.learn(mac(1), 2, 1);
        assert_eq!(t.lookup(&mac(1), 2), Some(2));
        assert_eq!(t.len(), 1);
    }
}
