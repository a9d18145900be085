// SPDX-License-Identifier: Apache-2.0
//! Percentile bootstrap confidence interval of the ratio of medians, median(B)/median(A):
//! each of [`RESAMPLES`] iterations draws |A| values from A and |B| from B with
//! replacement and records the ratio of their medians; the interval is the 2.5 % and
//! 97.5 % quantiles of those ratios. The RNG is ChaCha8 seeded with [`SEED`], so the same
//! samples always give the same interval.

use rand::RngExt;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::describe::median;

/// Resampling iterations.
pub const RESAMPLES: usize = 10_000;
/// Fixed seed of the resampling RNG.
pub const SEED: u64 = 0x6e69_6365_6d75; // "nicemu"

/// A two-sided interval of the ratio median(B)/median(A).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RatioCi {
    /// median(B)/median(A) of the samples themselves.
    pub ratio: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Confidence level (0.95).
    pub level: f64,
}

/// The 95 % interval; `None` if a sample is empty or A's resampled median can be 0.
pub fn ratio_of_medians(a: &[f64], b: &[f64]) -> Option<RatioCi> {
    ratio_of_medians_at(a, b, 0.95, RESAMPLES)
}

/// The `level` interval from `resamples` iterations.
pub fn ratio_of_medians_at(a: &[f64], b: &[f64], level: f64, resamples: usize) -> Option<RatioCi> {
    if a.is_empty() || b.is_empty() || a.iter().any(|v| *v <= 0.0) || resamples == 0 {
        return None;
    }
    let ratio = median(b)? / median(a)?;
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let mut ratios = Vec::with_capacity(resamples);
    let (mut ra, mut rb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    for _ in 0..resamples {
        draw(&mut rng, a, &mut ra);
        draw(&mut rng, b, &mut rb);
        ratios.push(median(&rb)? / median(&ra)?);
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some(RatioCi {
        ratio,
        low: quantile_sorted(&ratios, tail),
        high: quantile_sorted(&ratios, 1.0 - tail),
        level,
    })
}

fn draw(rng: &mut ChaCha8Rng, from: &[f64], into: &mut [f64]) {
    for v in into.iter_mut() {
        *v = from[rng.random_range(0..from.len())];
    }
}

/// The `q` quantile of sorted values: the smallest value with at least q·n values at or
/// below it (the inverse of the empirical CDF).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    let k = ((q * n as f64).ceil() as usize).clamp(1, n);
    sorted[k - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_samples_give_a_point_interval() {
        let ci = ratio_of_medians(&[100.0; 5], &[110.0; 5]).unwrap();
        assert!((ci.ratio - 1.1).abs() < 1e-12);
        assert!((ci.low - 1.1).abs() < 1e-12 && (ci.high - 1.1).abs() < 1e-12);
    }

    #[test]
    fn five_values_over_a_constant_give_the_extreme_order_statistics() {
        // A is constant, so the ratio is median(resampled B)/100. The median of 5 draws is
        // ≤ the smallest value with probability P(≥3 of 5 draws hit it) = 0.05792 > 2.5 %,
        // likewise ≥ the largest: the 95 % interval is exactly [105, 115] / 100.
        let b = [105.0, 108.0, 110.0, 112.0, 115.0];
        let ci = ratio_of_medians(&[100.0; 5], &b).unwrap();
        assert!((ci.ratio - 1.10).abs() < 1e-12);
        assert!((ci.low - 1.05).abs() < 1e-12, "{ci:?}");
        assert!((ci.high - 1.15).abs() < 1e-12, "{ci:?}");
        // A 50 % interval is narrower: between the 2nd and 4th order statistics.
        let half = ratio_of_medians_at(&[100.0; 5], &b, 0.5, RESAMPLES).unwrap();
        assert!(
            half.low >= 1.08 - 1e-12 && half.high <= 1.12 + 1e-12,
            "{half:?}"
        );
    }

    #[test]
    fn seeded_so_the_same_samples_give_the_same_interval() {
        let a = [90.0, 101.0, 97.0, 120.0, 99.0];
        let b = [111.0, 104.0, 130.0, 95.0, 108.0];
        let x = ratio_of_medians(&a, &b).unwrap();
        let y = ratio_of_medians(&a, &b).unwrap();
        assert_eq!(x, y);
        assert!(x.low <= x.ratio && x.ratio <= x.high);
    }

    #[test]
    fn zero_or_empty_baselines_are_refused() {
        assert!(ratio_of_medians(&[], &[1.0]).is_none());
        assert!(ratio_of_medians(&[0.0, 1.0], &[1.0]).is_none());
    }

    #[test]
    fn quantile_is_the_inverse_empirical_cdf() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert_eq!(quantile_sorted(&v, 0.25), 1.0);
        assert_eq!(quantile_sorted(&v, 0.26), 2.0);
        assert_eq!(quantile_sorted(&v, 1.0), 4.0);
    }
}
