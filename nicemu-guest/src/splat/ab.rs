// SPDX-License-Identifier: Apache-2.0
//! A/B attribution of splats: per side and device, each fingerprint with the number of
//! rounds (boots) it appeared in; a fingerprint only B shows is what B introduces, and that
//! is the first line of the A/B verdict ("B introduces: BUG: sleeping function called from
//! invalid context in igb_get_stats64 (igb_main.c:6695), 5 of 5 rounds"). Ignored splats
//! take no part (they are expected on both sides).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::model::Splat;

/// One fingerprint on one side and device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SideCount {
    /// Device kind.
    pub device: String,
    /// The fingerprint.
    pub fingerprint: String,
    /// The culprit's location, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Rounds (boots) of this side and device that showed it.
    pub rounds: u32,
    /// Rounds of this side and device.
    pub of: u32,
}

impl SideCount {
    /// "BUG: … in igb_get_stats64 (igb_main.c:6695), 5 of 5 rounds".
    pub fn line(&self, with_device: bool) -> String {
        let loc = self
            .location
            .as_deref()
            .map(|l| format!(" ({})", super::model::short_location(l)))
            .unwrap_or_default();
        let dev = if with_device {
            format!(" on {}", self.device)
        } else {
            String::new()
        };
        format!(
            "{}{loc}{dev}, {} of {} round{}",
            self.fingerprint,
            self.rounds,
            self.of,
            if self.of == 1 { "" } else { "s" }
        )
    }
}

/// The splat fingerprints of both sides of an A/B run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SplatAb {
    /// Side A's fingerprints.
    pub a: Vec<SideCount>,
    /// Side B's fingerprints.
    pub b: Vec<SideCount>,
    /// Shown by B and never by A (same device).
    pub introduced: Vec<SideCount>,
    /// Shown by A and never by B.
    pub gone: Vec<SideCount>,
}

/// One booted cell: side A?, device, its splats.
pub type CellSplats<'a> = (bool, &'a str, &'a [Splat]);

/// Counts the fingerprints of `cells` per side and device.
pub fn attribute<'a>(cells: impl IntoIterator<Item = CellSplats<'a>>) -> SplatAb {
    // (side A, device) -> (rounds, fingerprint -> (rounds seen, location))
    type Tally = BTreeMap<(bool, String), (u32, BTreeMap<String, (u32, Option<String>)>)>;
    let mut t: Tally = BTreeMap::new();
    for (a, device, splats) in cells {
        let e = t.entry((a, device.to_owned())).or_default();
        e.0 += 1;
        let mut seen: Vec<&str> = Vec::new();
        for s in splats.iter().filter(|s| s.fails()) {
            if seen.contains(&s.fingerprint.as_str()) {
                continue;
            }
            seen.push(&s.fingerprint);
            let f = e.1.entry(s.fingerprint.clone()).or_default();
            f.0 += 1;
            if f.1.is_none() {
                f.1 = s.location.clone();
            }
        }
    }
    let side = |want_a: bool| -> Vec<SideCount> {
        t.iter()
            .filter(|((a, _), _)| *a == want_a)
            .flat_map(|((_, device), (of, fps))| {
                fps.iter().map(|(fp, (n, loc))| SideCount {
                    device: device.clone(),
                    fingerprint: fp.clone(),
                    location: loc.clone(),
                    rounds: *n,
                    of: *of,
                })
            })
            .collect()
    };
    let (a, b) = (side(true), side(false));
    let only = |x: &[SideCount], y: &[SideCount]| -> Vec<SideCount> {
        x.iter()
            .filter(|c| {
                !y.iter()
                    .any(|o| o.device == c.device && o.fingerprint == c.fingerprint)
            })
            .cloned()
            .collect()
    };
    SplatAb {
        introduced: only(&b, &a),
        gone: only(&a, &b),
        a,
        b,
    }
}

impl SplatAb {
    /// The verdict's first lines: what B introduces (or that it introduces nothing), then
    /// what B no longer shows.
    pub fn verdict_lines(&self) -> Vec<String> {
        let devices: std::collections::BTreeSet<&str> = self
            .a
            .iter()
            .chain(&self.b)
            .map(|c| c.device.as_str())
            .collect();
        let many = devices.len() > 1;
        let mut v: Vec<String> = self
            .introduced
            .iter()
            .map(|c| format!("B introduces: {}", c.line(many)))
            .collect();
        if v.is_empty() {
            v.push(
                match (self.a.is_empty(), self.b.is_empty()) {
                    (true, true) => "B introduces no kernel splat (none on either side)",
                    (false, true) => "B introduces no kernel splat (B shows none)",
                    _ => "B introduces no kernel splat (A shows every one B shows)",
                }
                .to_owned(),
            );
        }
        v.extend(
            self.gone
                .iter()
                .map(|c| format!("B no longer shows: {}", c.line(many))),
        );
        v
    }
}

#[cfg(test)]
mod tests {
    use super::super::samples::read;
    use super::super::scan;
    use super::*;

    #[test]
    fn a_fingerprint_only_b_shows_is_the_first_line() {
        let bug = scan(&read("sleep-in-atomic-igb-get-stats64.log"));
        let wd = scan(&read("netdev-watchdog.log"));
        let none: Vec<Splat> = Vec::new();
        let mut cells: Vec<CellSplats> = Vec::new();
        for round in 0..5 {
            cells.push((true, "nicemu-igb", if round == 2 { &wd } else { &none }));
            cells.push((false, "nicemu-igb", &bug));
        }
        cells.push((false, "nicemu-igb", &wd));
        let ab = attribute(cells);
        assert_eq!(
            ab.verdict_lines(),
            ["B introduces: BUG: sleeping function called from invalid context in igb_get_stats64, 5 of 6 rounds"]
        );
        assert_eq!(ab.a.len(), 1);
        assert_eq!((ab.a[0].rounds, ab.a[0].of), (1, 5));
        assert!(ab.gone.is_empty());
    }

    #[test]
    fn a_a_introduces_nothing_and_ignored_splats_take_no_part() {
        let w = scan(&read("warn-igb-xmit.log"));
        let ab = attribute([
            (true, "qemu-igb", w.as_slice()),
            (false, "qemu-igb", w.as_slice()),
        ]);
        assert_eq!(
            ab.verdict_lines(),
            ["B introduces no kernel splat (A shows every one B shows)"]
        );
        let mut ignored = w.clone();
        ignored[0].ignored = Some(super::super::model::Ignored {
            entry: "f:1".into(),
            reason: "r".into(),
        });
        let none: Vec<Splat> = Vec::new();
        let ab = attribute([
            (true, "qemu-igb", none.as_slice()),
            (false, "qemu-igb", ignored.as_slice()),
        ]);
        assert_eq!(
            ab.verdict_lines(),
            ["B introduces no kernel splat (none on either side)"]
        );
        let ab = attribute([
            (true, "qemu-igb", w.as_slice()),
            (false, "qemu-igb", none.as_slice()),
        ]);
        assert_eq!(
            ab.verdict_lines(),
            [
                "B introduces no kernel splat (B shows none)",
                "B no longer shows: WARNING in igb_xmit_frame_ring (igb_main.c:6533), 1 of 1 round"
            ]
        );
    }
}
