// SPDX-License-Identifier: Apache-2.0
//! Descriptive figures of one metric's samples and the smallest effect a test with given
//! sample sizes can detect.

use statrs::distribution::{ContinuousCDF, Normal};

use super::mann_whitney::exact_counts;

/// The median (mean of the two middle values for an even count); `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Median, range and spread of one side's samples.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    /// Sample count.
    pub n: usize,
    /// Median.
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Coefficient of variation: sample standard deviation (n−1) over the mean; `None`
    /// for fewer than two values or a zero mean.
    pub cv: Option<f64>,
}

impl Summary {
    /// Summarises `v`; `None` when empty.
    pub fn of(v: &[f64]) -> Option<Summary> {
        let median = median(v)?;
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Summary {
            n: v.len(),
            median,
            min,
            max,
            cv: cv(v),
        })
    }
}

/// Coefficient of variation (sample standard deviation / mean).
pub fn cv(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean.abs())
}

/// Significance level of every verdict (two-sided).
pub const ALPHA: f64 = 0.05;
/// Power at which the detectable effect is quoted.
pub const POWER: f64 = 0.8;

/// Smallest relative change (0.10 = 10 %) that `na` + `nb` rounds detect at two-sided
/// [`ALPHA`] with [`POWER`], for a metric whose run-to-run coefficient of variation is
/// `cv`: δ = (z₁₋α/₂ + z_power) · cv · √(1/na + 1/nb) / √(3/π) — the two-sample normal
/// formula divided by the square root of the Mann–Whitney test's asymptotic relative
/// efficiency against the t test (3/π). `None` when the rank test cannot reach ALPHA at
/// these sizes at all (its smallest exact p, 2/C(na+nb, na), is above ALPHA: e.g. 3+3).
pub fn detectable_effect(cv: f64, na: usize, nb: usize) -> Option<f64> {
    if na == 0 || nb == 0 || min_exact_p(na, nb) > ALPHA {
        return None;
    }
    let std = Normal::standard();
    let z = std.inverse_cdf(1.0 - ALPHA / 2.0) + std.inverse_cdf(POWER);
    let are = 3.0 / std::f64::consts::PI;
    Some(z * cv * (1.0 / na as f64 + 1.0 / nb as f64).sqrt() / are.sqrt())
}

/// The smallest two-sided p the exact test can give for these sample sizes.
pub fn min_exact_p(na: usize, nb: usize) -> f64 {
    if na > 20 || nb > 20 {
        return 0.0;
    }
    let total: f64 = exact_counts(na, nb).iter().sum();
    2.0 / total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn summary_and_cv() {
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (8, 4.5, 2.0, 9.0));
        // mean 5, sample variance 32/7
        let want = (32.0f64 / 7.0).sqrt() / 5.0;
        assert!((s.cv.unwrap() - want).abs() < 1e-12);
        assert_eq!(cv(&[1.0]), None);
    }

    #[test]
    fn detectable_effect_for_five_rounds() {
        // z = 1.959964 + 0.841621 = 2.801585; √(2/5) = 0.632456; √(3/π) = 0.977205.
        let d = detectable_effect(0.05, 5, 5).unwrap();
        assert!(
            (d - 2.801585 * 0.05 * 0.632456 / 0.977205).abs() < 1e-5,
            "{d}"
        );
        // With 3+3 rounds the rank test never reaches 5 %: 2/20 = 0.1.
        assert_eq!(detectable_effect(0.05, 3, 3), None);
        assert!((min_exact_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
        // Halving the spread halves the detectable effect.
        let h = detectable_effect(0.025, 5, 5).unwrap();
        assert!((d / h - 2.0).abs() < 1e-12);
    }
}
