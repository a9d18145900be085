// SPDX-License-Identifier: Apache-2.0
//! The cost gate: B may not execute more guest instructions per unit of work than A by
//! more than a limit — what callgrind-based gates do for user space, for a kernel driver,
//! with no hardware. `run … --cost-limit METRIC=+1%` checks an A/B run when it ends;
//! `cost-check A.json B.json --limit METRIC=+1%` checks two results files (or one with two
//! kernels or sides).
//!
//! `METRIC` is a pattern over `SCENARIO.KEY` as in `--main-metric` (`*` one segment) and must
//! name instruction counts (a key under `cost`, e.g.
//! `netperf.tests.*.cost.modules.igb`: igb's own instructions per message). Each matching
//! metric of each device is compared by the median of its rounds on either side; a growth
//! past the limit fails (exit 1). A limit that matches no count on both sides is an error
//! (exit 2): a gate that checks nothing must not pass.

use std::collections::BTreeMap;

use crate::report::compare::{flatten, fmt_num};
use crate::report::{CellRun, RunReport};

/// One `METRIC=+N%` limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    /// `SCENARIO.KEY` pattern.
    pub pattern: String,
    /// Largest growth of B's median over A's allowed, in percent.
    pub max_pct: f64,
}

impl Limit {
    /// Parses `METRIC=+N%` (`N%` alike); the error is one line saying what to write.
    pub fn parse(s: &str) -> Result<Limit, String> {
        let usage = || {
            format!(
                "cost limit {s:?}: expected METRIC=+N% (METRIC an instruction count under \
                 `cost`, e.g. netperf.tests.*.cost.modules.igb=+1%)"
            )
        };
        let (pattern, limit) = s.rsplit_once('=').ok_or_else(usage)?;
        let pattern = pattern.trim();
        let n = limit.trim().strip_suffix('%').ok_or_else(usage)?;
        let n = n.strip_prefix('+').unwrap_or(n);
        let max_pct: f64 = n.parse().map_err(|_| usage())?;
        if pattern.is_empty() || !max_pct.is_finite() || !(0.0..=1000.0).contains(&max_pct) {
            return Err(usage());
        }
        if !pattern.split('.').any(|seg| seg == "cost" || seg == "*") {
            return Err(format!(
                "cost limit {s:?}: {pattern} is not an instruction count (its key must run \
                 through `cost`, e.g. netperf.tests.*.cost.modules.igb)"
            ));
        }
        Ok(Limit {
            pattern: pattern.to_owned(),
            max_pct,
        })
    }

    /// Parses every limit (comma-separated lists allowed).
    pub fn parse_all(v: &[String]) -> Result<Vec<Limit>, String> {
        v.iter()
            .flat_map(|s| s.split(','))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Limit::parse)
            .collect()
    }
}

/// Per (device, `SCENARIO.KEY`): the instruction counts of every booted cell.
pub type Counts = BTreeMap<(String, String), Vec<f64>>;

/// The instruction counts per unit of `cells`.
pub fn counts<'a>(cells: impl Iterator<Item = &'a CellRun>) -> Counts {
    let mut out = Counts::new();
    for c in cells.filter(|c| c.boot == "ok") {
        for r in &c.scenarios {
            let mut m = BTreeMap::new();
            let v = serde_json::to_value(&r.metrics).unwrap_or_default();
            flatten("", &v, &mut m);
            for (k, v) in m {
                if super::metrics::is_count(&k) && v.is_finite() {
                    out.entry((c.device.clone(), format!("{}.{k}", r.scenario)))
                        .or_default()
                        .push(v);
                }
            }
        }
    }
    out
}

/// Splits one report into A and B: by the cells' `side` (an A/B run), else by its two
/// kernels.
pub fn sides(r: &RunReport) -> Result<(Counts, Counts), String> {
    if r.runs.iter().any(|c| c.side.is_some()) {
        let side =
            |s: &'static str| counts(r.runs.iter().filter(move |c| c.side.as_deref() == Some(s)));
        return Ok((side("A"), side("B")));
    }
    match r.kernels().as_slice() {
        [a, b] => Ok((
            counts(r.runs.iter().filter(|c| &c.kernel == a)),
            counts(r.runs.iter().filter(|c| &c.kernel == b)),
        )),
        k => Err(format!(
            "the results hold {} kernel(s) and no A/B sides: give two files, or one of an A/B run",
            k.len()
        )),
    }
}

/// One metric checked against one limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// Device kind.
    pub device: String,
    /// `SCENARIO.KEY`.
    pub metric: String,
    /// Median of A's rounds.
    pub a: f64,
    /// Median of B's rounds.
    pub b: f64,
    /// (B − A) / A in percent (0 when both are 0; infinite when only A is 0).
    pub change_pct: f64,
    /// The limit in percent.
    pub max_pct: f64,
}

impl Check {
    /// B grew past the limit.
    pub fn breached(&self) -> bool {
        self.change_pct > self.max_pct
    }

    /// "FAIL nicemu-igb netperf…cost.modules.igb: 1200 → 1300 per unit of work
    /// (+8.3 %, limit +1 %)".
    pub fn line(&self) -> String {
        let change = if self.change_pct.is_finite() {
            format!("{:+.2} %", self.change_pct)
        } else {
            "new".to_owned()
        };
        format!(
            "{} {} {}: {} → {} per unit of work ({change}, limit +{} %)",
            if self.breached() { "FAIL" } else { "ok  " },
            self.device,
            self.metric,
            fmt_num(self.a),
            fmt_num(self.b),
            self.max_pct
        )
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Checks every limit against the counts of both sides: every metric a limit matches on
/// both sides is a [`Check`]. A limit that matches nothing is an error naming it.
pub fn check(a: &Counts, b: &Counts, limits: &[Limit]) -> Result<Vec<Check>, String> {
    let mut out = Vec::new();
    for l in limits {
        let before = out.len();
        for (key, av) in a {
            let Some(bv) = b.get(key) else { continue };
            if av.is_empty() || bv.is_empty() || !crate::report::ab::matches(&l.pattern, &key.1) {
                continue;
            }
            let (ma, mb) = (median(av), median(bv));
            let change_pct = if ma == 0.0 {
                if mb == 0.0 {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                (mb / ma - 1.0) * 100.0
            };
            out.push(Check {
                device: key.0.clone(),
                metric: key.1.clone(),
                a: ma,
                b: mb,
                change_pct,
                max_pct: l.max_pct,
            });
        }
        if out.len() == before {
            return Err(format!(
                "cost limit {}: no instruction count matches it on both sides (counts are made \
                 under TCG with --param cost on; see a results file's `cost` keys)",
                l.pattern
            ));
        }
    }
    Ok(out)
}

/// The report of `checks`: one line per check, breaches first, then the outcome.
pub fn render(checks: &[Check]) -> String {
    let mut s = String::from("cost gate (B against A, medians of the rounds, per unit of work):\n");
    let (bad, good): (Vec<&Check>, Vec<&Check>) = checks.iter().partition(|c| c.breached());
    for c in bad.iter().chain(&good) {
        s.push_str(&format!("  {}\n", c.line()));
    }
    s.push_str(&if bad.is_empty() {
        format!(
            "cost gate: ok ({} metric(s) within their limits)\n",
            good.len()
        )
    } else {
        format!(
            "cost gate: FAILED — {} of {} metric(s) grew past their limit\n",
            bad.len(),
            checks.len()
        )
    });
    s
}

/// Runs the gate on an A/B run's report: prints it and returns whether it passed.
pub fn after_run(report: &RunReport, limits: &[Limit]) -> crate::error::Result<bool> {
    let usage = crate::error::Error::Usage;
    let (a, b) = sides(report).map_err(usage)?;
    let checks = check(&a, &b, limits).map_err(usage)?;
    print!("\n{}", render(&checks));
    Ok(checks.iter().all(|c| !c.breached()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_parse_with_or_without_plus_and_lists_split_on_commas() {
        let l = Limit::parse("netperf.tests.*.cost.modules.igb=+1%").unwrap();
        assert_eq!(l.pattern, "netperf.tests.*.cost.modules.igb");
        assert_eq!(l.max_pct, 1.0);
        assert_eq!(Limit::parse("a.cost.kernel=0.5%").unwrap().max_pct, 0.5);
        let v = Limit::parse_all(&["a.cost.kernel=+1%,b.cost.user=+2%".into()]).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[1].pattern, "b.cost.user");
    }

    #[test]
    fn bad_limits_say_what_to_write_in_one_line() {
        for bad in [
            "a.cost.kernel",
            "a.cost.kernel=+1",
            "a.cost.kernel=+x%",
            "=+1%",
            "a.cost.kernel=-3%",
            "a.cost.kernel=inf%",
        ] {
            let e = Limit::parse(bad).unwrap_err();
            assert!(e.contains("METRIC=+N%"), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = Limit::parse("netperf.tests.UDP_STREAM:1.msgs_per_s_sent=+1%").unwrap_err();
        assert!(e.contains("not an instruction count"), "{e}");
    }

    fn counts_of(v: &[(&str, &[f64])]) -> Counts {
        v.iter()
            .map(|(k, s)| (("nicemu-igb".to_owned(), (*k).to_owned()), s.to_vec()))
            .collect()
    }

    #[test]
    fn growth_past_the_limit_fails_and_within_passes() {
        let a = counts_of(&[
            ("netperf.tests.T.cost.modules.igb", &[1000.0, 1001.0, 999.0]),
            (
                "netperf.tests.T.cost.kernel",
                &[20_000.0, 20_010.0, 19_990.0],
            ),
        ]);
        let b = counts_of(&[
            (
                "netperf.tests.T.cost.modules.igb",
                &[1300.0, 1301.0, 1299.0],
            ),
            (
                "netperf.tests.T.cost.kernel",
                &[20_100.0, 20_110.0, 20_090.0],
            ),
        ]);
        let l = Limit::parse_all(&["netperf.tests.*.cost.modules.igb=+1%".into()]).unwrap();
        let c = check(&a, &b, &l).unwrap();
        assert_eq!(c.len(), 1);
        assert!(c[0].breached());
        assert!((c[0].change_pct - 30.0).abs() < 1e-9);
        let r = render(&c);
        assert!(
            r.contains("FAIL nicemu-igb netperf.tests.T.cost.modules.igb: 1000 → 1300"),
            "{r}"
        );
        assert!(r.contains("FAILED — 1 of 1"), "{r}");
        let l = Limit::parse_all(&["netperf.tests.T.cost.kernel=+1%".into()]).unwrap();
        let c = check(&a, &b, &l).unwrap();
        assert!(!c[0].breached(), "+0.5 % is within +1 %");
        assert!(render(&c).contains("cost gate: ok (1 metric(s)"));
    }

    #[test]
    fn a_limit_matching_nothing_is_an_error_not_a_pass() {
        let a = counts_of(&[("ping.cost.kernel", &[5.0])]);
        let l = Limit::parse_all(&["netperf.tests.*.cost.kernel=+1%".into()]).unwrap();
        let e = check(&a, &a, &l).unwrap_err();
        assert!(e.contains("no instruction count matches"), "{e}");
    }

    #[test]
    fn a_path_new_on_b_counts_as_growth() {
        let a = counts_of(&[("x.cost.self.igb:new_fn", &[0.0])]);
        let b = counts_of(&[("x.cost.self.igb:new_fn", &[40.0])]);
        let l = Limit::parse_all(&["x.cost.self.*=+5%".into()]).unwrap();
        let c = check(&a, &b, &l).unwrap();
        assert!(c[0].breached());
        assert!(c[0].line().contains("(new, limit +5 %)"), "{}", c[0].line());
    }

    #[test]
    fn sides_come_from_the_cells_side_else_from_two_kernels() {
        use crate::report::testdata::{cell, report};
        let mut one = cell("sid", "nicemu-igb", 1.0, 100.0, false);
        one.scenarios[0].metrics.insert(
            "cost".into(),
            serde_json::json!({"kernel": 100.0, "units": 10.0}),
        );
        let mut two = one.clone();
        two.scenarios[0].metrics.insert(
            "cost".into(),
            serde_json::json!({"kernel": 150.0, "units": 10.0}),
        );
        let (mut a, mut b) = (one.clone(), two.clone());
        a.side = Some("A".into());
        b.side = Some("B".into());
        let r = report("r", vec![a, b]);
        let (ca, cb) = sides(&r).unwrap();
        let scen = &one.scenarios[0].scenario;
        let key = ("nicemu-igb".to_owned(), format!("{scen}.cost.kernel"));
        assert_eq!(ca[&key], [100.0]);
        assert_eq!(cb[&key], [150.0]);
        assert!(!ca.contains_key(&("nicemu-igb".to_owned(), format!("{scen}.cost.units"))));
        two.kernel = "trixie".into();
        let r = report("r", vec![one.clone(), two]);
        let (_, cb) = sides(&r).unwrap();
        assert_eq!(cb[&key], [150.0]);
        let e = sides(&report("r", vec![one])).unwrap_err();
        assert!(e.contains("give two files"), "{e}");
    }
}
