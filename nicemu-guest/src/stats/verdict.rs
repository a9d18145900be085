// SPDX-License-Identifier: Apache-2.0
//! The verdict of one metric in an A/B run: the Mann–Whitney U test decides whether B
//! differs from A (two-sided, 5 %); the bootstrap interval of the ratio of medians says by
//! how much. Printed as "+10.4 % (95 % CI +6.1…+14.9 %, n=5+5)" or "no significant
//! difference (n=5+5)".

use super::bootstrap::{self, RatioCi};
use super::describe::{self, Summary, ALPHA};
use super::mann_whitney::{self, MannWhitney};
use super::welch::{self, Welch};

/// Everything the tables print about one metric.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Verdict {
    /// A's samples summarised.
    pub a: Summary,
    /// B's samples summarised.
    pub b: Summary,
    /// median(B)/median(A) − 1 (`None` when A's median is 0).
    pub change: Option<f64>,
    /// The rank test.
    pub test: MannWhitney,
    /// Welch's t test, for a deterministic metric (instruction counts): then it decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub welch: Option<Welch>,
    /// The 95 % bootstrap interval of median(B)/median(A) (`None` for non-positive A).
    pub ci: Option<RatioCi>,
    /// True when the rank test's p is below 5 %.
    pub significant: bool,
    /// Run-to-run spread used for the detectable effect: the root mean square of both
    /// sides' coefficients of variation (in an A/A run, the A/A spread).
    pub spread_cv: Option<f64>,
    /// Smallest relative change these rounds detect at 5 % with 80 % power given
    /// `spread_cv` (see [`describe::detectable_effect`]); for a count, never below its
    /// noise threshold.
    pub detectable: Option<f64>,
    /// A count's change the t test found but smaller than the noise threshold (this
    /// threshold): reported as noise, not significant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inside_noise: Option<f64>,
}

/// Compares the samples of A and B; `None` if either is empty or not finite.
pub fn compare(a: &[f64], b: &[f64]) -> Option<Verdict> {
    let test = mann_whitney::test(a, b)?;
    let (sa, sb) = (Summary::of(a)?, Summary::of(b)?);
    let change = (sa.median != 0.0).then(|| sb.median / sa.median - 1.0);
    let spread_cv = match (sa.cv, sb.cv) {
        (Some(x), Some(y)) => Some(((x * x + y * y) / 2.0).sqrt()),
        (x, y) => x.or(y),
    };
    let detectable = spread_cv.and_then(|cv| describe::detectable_effect(cv, a.len(), b.len()));
    Some(Verdict {
        a: sa,
        b: sb,
        change,
        test,
        welch: None,
        ci: bootstrap::ratio_of_medians(a, b),
        significant: test.p < ALPHA,
        spread_cv,
        detectable,
        inside_noise: None,
    })
}

/// Compares a deterministic metric (an instruction count per unit of work): Welch's t test
/// decides (it has power at 3+3 rounds, where the rank test has none; see
/// [`super::welch`]); falls back to [`compare`] with a single round a side.
///
/// A relative change smaller than `noise` is noise even when the test finds it, as
/// criterion's `noise_threshold` treats a benchmark's: the test assumes one path length
/// plus small symmetric noise, and a path a boot picks at random breaks that (in
/// `ixgbe-xps`, a socket's random transmit hash makes `netdev_pick_tx` 762.9 or 765.9
/// instructions a call; three boots a side can all fall on different values).
pub fn compare_counts(a: &[f64], b: &[f64], noise: f64) -> Option<Verdict> {
    let mut v = compare(a, b)?;
    let Some(w) = welch::test(a, b) else {
        return Some(v);
    };
    v.significant = w.p < ALPHA;
    if v.significant && noise > 0.0 && v.change.is_some_and(|c| c.abs() < noise) {
        v.significant = false;
        v.inside_noise = Some(noise);
    }
    v.detectable = v
        .spread_cv
        .and_then(|cv| welch::detectable_effect(cv, a.len(), b.len()))
        .map(|d| d.max(noise));
    v.welch = Some(w);
    Some(v)
}

/// A signed percentage with one decimal: "+10.4".
pub fn pct(x: f64) -> String {
    format!("{:+.1}", x * 100.0)
}

impl Verdict {
    /// The sample sizes, "n=5+5".
    pub fn sizes(&self) -> String {
        format!("n={}+{}", self.a.n, self.b.n)
    }

    /// The headline: "+10.4 % (95 % CI +6.1…+14.9 %, n=5+5)" or "no significant
    /// difference (n=5+5)".
    pub fn headline(&self) -> String {
        match (self.significant, self.change) {
            (true, Some(c)) => match &self.ci {
                Some(ci) => format!(
                    "{} % (95 % CI {}…{} %, {})",
                    pct(c),
                    pct(ci.low - 1.0),
                    pct(ci.high - 1.0),
                    self.sizes()
                ),
                None => format!("{} % ({})", pct(c), self.sizes()),
            },
            (true, None) => format!("significant difference ({})", self.sizes()),
            (false, Some(c)) if self.inside_noise.is_some() => format!(
                "{} %, inside the ±{} % noise threshold ({})",
                pct(c),
                self.inside_noise.unwrap_or_default() * 100.0,
                self.sizes()
            ),
            (false, _) => format!("no significant difference ({})", self.sizes()),
        }
    }

    /// Which test and its result: "Mann–Whitney U=25, exact p=0.008", or for a count
    /// "Welch t=14.2, df 3.1, p=0.0007 (counts: t test)".
    pub fn test_note(&self) -> String {
        if let Some(w) = &self.welch {
            return match w.df {
                Some(df) => format!("Welch t={:.2}, df {df:.1}, p={:.4} (counts)", w.t, w.p),
                None if w.p == 0.0 => "both sides constant and different (counts)".into(),
                None => "both sides constant and equal (counts)".into(),
            };
        }
        let m = match self.test.method {
            mann_whitney::Method::Exact => "exact",
            mann_whitney::Method::Normal => "normal approx.",
        };
        format!("Mann–Whitney U={}, {m} p={:.3}", self.test.u, self.test.p)
    }

    /// Spread and detectable effect: "spread CV 4.1 %, detects ≥ 7.9 %" (or "cannot
    /// detect at 5 % with n=3+3").
    pub fn noise_note(&self) -> String {
        let cv = self
            .spread_cv
            .map(|c| format!("spread CV {:.1} %", c * 100.0))
            .unwrap_or_else(|| "spread unknown".into());
        match self.detectable {
            Some(d) => format!("{cv}, detects ≥ {:.1} %", d * 100.0),
            None => format!("{cv}, cannot detect at 5 % with {}", self.sizes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_gain_prints_change_and_interval() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b = [110.0, 111.0, 109.0, 110.5, 109.5];
        let v = compare(&a, &b).unwrap();
        assert!(v.significant);
        let h = v.headline();
        assert!(h.starts_with("+10.0 % (95 % CI +"), "{h}");
        assert!(h.ends_with(" %, n=5+5)"), "{h}");
        assert_eq!(v.test_note(), "Mann–Whitney U=25, exact p=0.008");
        assert_eq!(v.noise_note(), "spread CV 0.8 %, detects ≥ 1.4 %");
    }

    #[test]
    fn overlapping_samples_are_no_significant_difference() {
        let a = [100.0, 130.0, 70.0, 110.0, 90.0];
        let b = [105.0, 125.0, 75.0, 95.0, 115.0];
        let v = compare(&a, &b).unwrap();
        assert!(!v.significant);
        assert_eq!(v.headline(), "no significant difference (n=5+5)");
    }

    #[test]
    fn a_count_step_inside_the_noise_threshold_is_not_significant() {
        // ixgbe-xps --aa, run 1796529336-15854: netdev_pick_tx per call on the same kernel.
        let a = [765.836, 765.945, 765.83];
        let b = [762.889, 762.906, 762.951];
        let exact = compare_counts(&a, &b, 0.0).unwrap();
        assert!(
            exact.significant,
            "the t test alone calls the 3-instruction step"
        );
        let v = compare_counts(&a, &b, 0.005).unwrap();
        assert!(!v.significant);
        assert_eq!(v.inside_noise, Some(0.005));
        assert_eq!(
            v.headline(),
            "-0.4 %, inside the ±0.5 % noise threshold (n=3+3)"
        );
        assert_eq!(v.detectable, Some(0.005));
        // A change beyond it still counts: hwstamp-lock's stamp path, 163 -> 129.
        let v = compare_counts(&[163.0; 3], &[129.0; 3], 0.005).unwrap();
        assert!(v.significant && v.inside_noise.is_none());
    }

    #[test]
    fn two_rounds_each_cannot_detect_anything() {
        let v = compare(&[1.0, 2.0], &[3.0, 4.0]).unwrap();
        assert!(!v.significant, "2+2 exact minimum p is 1/3");
        assert!(v.noise_note().ends_with("cannot detect at 5 % with n=2+2"));
    }
}
