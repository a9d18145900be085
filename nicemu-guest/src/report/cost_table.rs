// SPDX-License-Identifier: Apache-2.0
//! The A/B table of where the instructions went, callgrind-style: for each counting
//! window, its functions' own instructions per unit of work on A and on B, the difference
//! and its verdict, largest differences first.
//!
//! A window's table lists its largest functions only (`cost.self_cut`: what the ones it
//! leaves out ran at most). A function missing from a round's table counts 0 there when
//! that round listed every function that ran (a patch that removes a code path makes its
//! functions vanish from B's windows); when the round cut its table, the function ran
//! somewhere below the cut, which is not 0: that side is shown as "< cut" and not judged.
//! Only rounds whose window was counted are filled.

use std::collections::BTreeMap;

use super::ab_record::AbSummary;
use super::compare::fmt_num;
use crate::stats::verdict;

/// (device, scenario, window prefix or metric key).
pub type Key = (String, String, String);
/// One window over the rounds of each side.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counted {
    /// Rounds of A, of B, whose window was counted.
    pub rounds: (usize, usize),
    /// The largest `cost.self_cut` of A's, of B's rounds (0: every function listed).
    pub cut: (f64, f64),
}
/// (device, scenario, window prefix) → the window's rounds and table cuts.
pub type Windows = BTreeMap<Key, Counted>;
/// Function metric → the cut below which it ran on the rounds of A, of B, that did not list
/// it (`None`: listed in every round of that side, or the rounds listed every function).
pub type Censored = BTreeMap<Key, (Option<f64>, Option<f64>)>;
/// Per metric, A's and B's samples.
pub type Samples = BTreeMap<Key, (Vec<f64>, Vec<f64>)>;
/// A function's row: name, A's median, B's median, the cuts a side ran below, verdict.
type Row<'a> = (&'a str, f64, f64, (Option<f64>, Option<f64>), String);

/// A side's figure: its median, or "< cut" when it is a round that ran below its table's
/// cut.
fn side(median: f64, cut: Option<f64>) -> String {
    match cut {
        Some(c) if median == 0.0 => format!("< {}", fmt_num(c)),
        _ => fmt_num(median),
    }
}

/// The window prefix of a metric key: `tests.TCP_RR` of `tests.TCP_RR.cost.kernel`
/// (empty for a scenario-level window), and the rest after `cost.`.
fn split(key: &str) -> Option<(&str, &str)> {
    if let Some(rest) = key.strip_prefix("cost.") {
        return Some(("", rest));
    }
    key.split_once(".cost.")
}

/// Notes in `windows` what a cell's scenario said of a window: that it was counted (`key`
/// is the window's `cost.kernel`) or its table's cut (`cost.self_cut`, value `v`). True for
/// the cut, which is not a metric of its own.
pub fn note_window(
    windows: &mut Windows,
    (device, scenario): (&str, &str),
    key: &str,
    v: f64,
    a: bool,
) -> bool {
    let Some((prefix, what @ ("kernel" | "self_cut"))) = split(key) else {
        return false;
    };
    let e = windows
        .entry((device.to_owned(), scenario.to_owned(), prefix.to_owned()))
        .or_default();
    let (rounds, cut) = if a {
        (&mut e.rounds.0, &mut e.cut.0)
    } else {
        (&mut e.rounds.1, &mut e.cut.1)
    };
    if what == "kernel" {
        *rounds += 1;
        false
    } else {
        *cut = cut.max(v);
        true
    }
}

/// Pads each side's own-instruction samples with zeros up to the rounds whose window was
/// counted, and returns the functions padded on a side whose tables were cut.
pub fn pad_functions(samples: &mut Samples, windows: &Windows) -> Censored {
    let mut censored = Censored::new();
    for ((dev, scen, key), (a, b)) in samples.iter_mut() {
        let Some((prefix, rest)) = split(key) else {
            continue;
        };
        if !rest.starts_with("self.") {
            continue;
        }
        let Some(w) = windows.get(&(dev.clone(), scen.clone(), prefix.to_owned())) else {
            continue;
        };
        let below = |v: &[f64], n: usize, cut: f64| (v.len() < n && cut > 0.0).then_some(cut);
        let c = (below(a, w.rounds.0, w.cut.0), below(b, w.rounds.1, w.cut.1));
        if c != (None, None) {
            censored.insert((dev.clone(), scen.clone(), key.clone()), c);
        }
        a.resize(a.len().max(w.rounds.0), 0.0);
        b.resize(b.len().max(w.rounds.1), 0.0);
    }
    censored
}

/// The Markdown tables, one per window with own-instruction figures: up to `rows`
/// functions by the size of B − A.
pub fn render(ab: &AbSummary, rows: usize) -> String {
    let mut windows: BTreeMap<Key, Vec<Row>> = BTreeMap::new();
    for m in &ab.metrics {
        let (Some((prefix, rest)), Some(v)) = (split(&m.metric), &m.verdict) else {
            continue;
        };
        let Some(f) = rest.strip_prefix("self.") else {
            continue;
        };
        let cut = m.below_cut.unwrap_or_default();
        let verdict = match cut {
            (Some(_), Some(_)) => "not judged: below the table's cut on A and B".into(),
            (Some(_), None) => "not judged: below the table's cut on A".into(),
            (None, Some(_)) => "not judged: below the table's cut on B".into(),
            (None, None) if v.significant => v
                .change
                .map(|c| format!("{} %", verdict::pct(c)))
                .unwrap_or_else(|| "differs".into()),
            (None, None) => "·".into(),
        };
        windows
            .entry((m.device.clone(), m.scenario.clone(), prefix.to_owned()))
            .or_default()
            .push((f, v.a.median, v.b.median, cut, verdict));
    }
    let mut s = String::new();
    for ((dev, scen, prefix), mut fns) in windows {
        // Judged rows first, then those below a cut, each by the size of B − A.
        let cut = |r: &Row| r.3 != (None, None);
        fns.sort_by(|x, y| {
            (cut(x).cmp(&cut(y))).then((y.2 - y.1).abs().total_cmp(&(x.2 - x.1).abs()))
        });
        let window = if prefix.is_empty() {
            scen.clone()
        } else {
            format!("{scen}.{prefix}")
        };
        s.push_str(&format!(
            "\nInstructions per unit in {window} ({dev}), by function (own, not callees'), \
             largest A→B change first:\n\n| function | A | B | B − A | verdict |\n|---|---:|---:|---:|---|\n"
        ));
        for (f, a, b, (ca, cb), v) in fns.into_iter().take(rows) {
            let delta = if ca.is_some() || cb.is_some() {
                "?".to_owned()
            } else {
                format!("{:+.1}", b - a)
            };
            s.push_str(&format!(
                "| {f} | {} | {} | {delta} | {v} |\n",
                side(a, ca),
                side(b, cb)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_prefixes_and_zero_padding() {
        assert_eq!(
            split("tests.TCP_RR.cost.self.f"),
            Some(("tests.TCP_RR", "self.f"))
        );
        assert_eq!(split("cost.kernel"), Some(("", "kernel")));
        assert_eq!(split("msgs_per_s"), None);
        let mut w = Windows::new();
        for a in [true, true, true, false, false, false] {
            assert!(!note_window(
                &mut w,
                ("d", "netperf"),
                "tests.X.cost.kernel",
                9.0,
                a
            ));
        }
        assert!(!note_window(
            &mut w,
            ("d", "netperf"),
            "tests.X.cost.user",
            1.0,
            true
        ));
        let counted = w[&("d".into(), "netperf".into(), "tests.X".into())];
        assert_eq!(counted.rounds, (3, 3));
        assert_eq!(
            counted.cut,
            (0.0, 0.0),
            "no cut noted: every function listed"
        );
        let mut samples = BTreeMap::new();
        let key = |k: &str| ("d".to_owned(), "netperf".to_owned(), k.to_owned());
        samples.insert(
            key("tests.X.cost.self.skb_tx_hash"),
            (vec![50.0; 3], vec![]),
        );
        samples.insert(key("tests.X.cost.kernel"), (vec![9.0; 3], vec![8.0; 2]));
        assert!(pad_functions(&mut samples, &w).is_empty());
        assert_eq!(samples[&key("tests.X.cost.self.skb_tx_hash")].1, [0.0; 3]);
        assert_eq!(
            samples[&key("tests.X.cost.kernel")].1.len(),
            2,
            "only functions"
        );
    }
}
