// SPDX-License-Identifier: Apache-2.0
//! The A/B table of where the instructions went, callgrind-style: for each counting
//! window, its functions' own instructions per unit of work on A and on B, the difference
//! and its verdict, largest differences first.
//!
//! A function a window did not run in a round counts 0 there (a patch that removes a code
//! path makes its functions vanish from B's windows); only rounds whose window was
//! counted are filled.

use std::collections::BTreeMap;

use super::ab_record::AbSummary;
use super::compare::fmt_num;
use crate::stats::verdict;

/// (device, scenario, window prefix or metric key).
pub type Key = (String, String, String);
/// (device, scenario, window prefix) → windows counted on (A, B).
pub type Windows = BTreeMap<Key, (usize, usize)>;
/// Per metric, A's and B's samples.
pub type Samples = BTreeMap<Key, (Vec<f64>, Vec<f64>)>;
/// A function's row: name, A's median, B's median, verdict.
type Row<'a> = (&'a str, f64, f64, String);

/// The window prefix of a metric key: `tests.TCP_RR` of `tests.TCP_RR.cost.kernel`
/// (empty for a scenario-level window), and the rest after `cost.`.
fn split(key: &str) -> Option<(&str, &str)> {
    if let Some(rest) = key.strip_prefix("cost.") {
        return Some(("", rest));
    }
    key.split_once(".cost.")
}

/// Notes in `windows` that a cell's scenario counted window `key`'s (when `key` is the
/// window's `cost.kernel`).
pub fn note_window(windows: &mut Windows, device: &str, scenario: &str, key: &str, a: bool) {
    if let Some((prefix, "kernel")) = split(key) {
        let e = windows
            .entry((device.to_owned(), scenario.to_owned(), prefix.to_owned()))
            .or_default();
        if a {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
    }
}

/// Pads each side's own-instruction samples with zeros up to the rounds whose window was
/// counted.
pub fn pad_functions(samples: &mut Samples, windows: &Windows) {
    for ((dev, scen, key), (a, b)) in samples.iter_mut() {
        let Some((prefix, rest)) = split(key) else {
            continue;
        };
        if !rest.starts_with("self.") {
            continue;
        }
        let Some(&(na, nb)) = windows.get(&(dev.clone(), scen.clone(), prefix.to_owned())) else {
            continue;
        };
        a.resize(a.len().max(na), 0.0);
        b.resize(b.len().max(nb), 0.0);
    }
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
        let verdict = if v.significant {
            v.change
                .map(|c| format!("{} %", verdict::pct(c)))
                .unwrap_or_else(|| "differs".into())
        } else {
            "·".into()
        };
        windows
            .entry((m.device.clone(), m.scenario.clone(), prefix.to_owned()))
            .or_default()
            .push((f, v.a.median, v.b.median, verdict));
    }
    let mut s = String::new();
    for ((dev, scen, prefix), mut fns) in windows {
        fns.sort_by(|x, y| (y.2 - y.1).abs().total_cmp(&(x.2 - x.1).abs()));
        let window = if prefix.is_empty() {
            scen.clone()
        } else {
            format!("{scen}.{prefix}")
        };
        s.push_str(&format!(
            "\nInstructions per unit in {window} ({dev}), by function (own, not callees'), \
             largest A→B change first:\n\n| function | A | B | B − A | verdict |\n|---|---:|---:|---:|---|\n"
        ));
        for (f, a, b, v) in fns.into_iter().take(rows) {
            s.push_str(&format!(
                "| {f} | {} | {} | {:+.1} | {v} |\n",
                fmt_num(a),
                fmt_num(b),
                b - a
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
            note_window(&mut w, "d", "netperf", "tests.X.cost.kernel", a);
        }
        note_window(&mut w, "d", "netperf", "tests.X.cost.user", true);
        assert_eq!(w[&("d".into(), "netperf".into(), "tests.X".into())], (3, 3));
        let mut samples = BTreeMap::new();
        let key = |k: &str| ("d".to_owned(), "netperf".to_owned(), k.to_owned());
        samples.insert(
            key("tests.X.cost.self.skb_tx_hash"),
            (vec![50.0; 3], vec![]),
        );
        samples.insert(key("tests.X.cost.kernel"), (vec![9.0; 3], vec![8.0; 2]));
        pad_functions(&mut samples, &w);
        assert_eq!(samples[&key("tests.X.cost.self.skb_tx_hash")].1, [0.0; 3]);
        assert_eq!(
            samples[&key("tests.X.cost.kernel")].1.len(),
            2,
            "only functions"
        );
    }
}
