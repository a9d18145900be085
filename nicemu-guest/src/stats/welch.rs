// SPDX-License-Identifier: Apache-2.0
//! Welch's t test, for the deterministic metrics: guest instruction counts per unit of
//! work.
//!
//! Why not the rank test there: with 3 rounds per side the exact two-sided Mann–Whitney
//! test cannot give p below 2/C(6,3) = 0.1 however far apart the sides are, and no
//! permutation test of 3+3 values can do better. Instruction counts under TCG are a
//! constant (the code path's length) plus a little noise from the few events the window
//! catches by time (a page fault more, an interrupt's entry on the task's stack): the
//! noise is small and roughly symmetric, which is the case the t test's normal
//! assumption fits, and its power at n = 3 is what a 3+3 verdict needs. Both sides
//! exactly constant is a deterministic answer: equal means no difference (p = 1),
//! different means a difference (p = 0). The assumption is printed with every such
//! verdict; the rank test is still computed and kept in the results.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::describe::{ALPHA, POWER};

/// Welch's t test of B against A.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Welch {
    /// (mean(B) − mean(A)) / standard error (±∞ when both sides are constant).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (`None` when both sides are constant).
    pub df: Option<f64>,
    /// Two-sided p.
    pub p: f64,
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// The test; `None` with fewer than two values on a side or non-finite values.
pub fn test(a: &[f64], b: &[f64]) -> Option<Welch> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let ((ma, va), (mb, vb)) = (mean_var(a), mean_var(b));
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let se2 = sa + sb;
    if se2 == 0.0 {
        let differ = ma != mb;
        return Some(Welch {
            t: if differ {
                f64::INFINITY.copysign(mb - ma)
            } else {
                0.0
            },
            df: None,
            p: if differ { 0.0 } else { 1.0 },
        });
    }
    let t = (mb - ma) / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (a.len() as f64 - 1.0) + sb * sb / (b.len() as f64 - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(Welch {
        t,
        df: Some(df),
        p: (2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0, 1.0),
    })
}

/// Smallest relative change `na` + `nb` rounds detect with this test at two-sided
/// [`ALPHA`] and [`POWER`] for a metric whose run-to-run coefficient of variation is
/// `cv`: δ = (t₁₋α/₂ + t_power) · cv · √(1/na + 1/nb), t with na + nb − 2 degrees of
/// freedom. `None` below two values a side.
pub fn detectable_effect(cv: f64, na: usize, nb: usize) -> Option<f64> {
    if na < 2 || nb < 2 {
        return None;
    }
    let dist = StudentsT::new(0.0, 1.0, (na + nb - 2) as f64).ok()?;
    let t = dist.inverse_cdf(1.0 - ALPHA / 2.0) + dist.inverse_cdf(POWER);
    Some(t * cv * (1.0 / na as f64 + 1.0 / nb as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_rounds_a_side_separate_counts_the_rank_test_cannot() {
        let a = [295_008.0, 295_008.0, 295_188.0];
        let b = [310_210.0, 310_008.0, 310_008.0];
        let w = test(&a, &b).unwrap();
        assert!(w.p < 0.001, "{w:?}");
        assert!(w.t > 0.0);
        let mw = crate::stats::mann_whitney::test(&a, &b).unwrap();
        assert!(
            mw.p >= 0.05,
            "the rank test cannot reach 5 % at 3+3: {mw:?}"
        );
    }

    #[test]
    fn noise_alone_is_no_difference() {
        let a = [295_008.0, 295_352.0, 295_008.0];
        let b = [295_188.0, 295_008.0, 295_008.0];
        assert!(test(&a, &b).unwrap().p > 0.5);
    }

    #[test]
    fn constant_sides_give_a_deterministic_answer() {
        let same = test(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap();
        assert_eq!((same.p, same.df), (1.0, None));
        let apart = test(&[5.0, 5.0, 5.0], &[6.0, 6.0, 6.0]).unwrap();
        assert_eq!(apart.p, 0.0);
        assert_eq!(apart.t, f64::INFINITY);
        assert!(test(&[5.0], &[6.0, 6.0]).is_none());
    }

    #[test]
    fn known_welch_figures() {
        // Two samples with unequal variances; t and df by hand:
        // mean 2, var 1 (n 3); mean 5, var 4 (n 3): se² = 1/3 + 4/3 = 5/3,
        // t = 3 / √(5/3) = 2.3238, df = (5/3)² / ((1/3)²/2 + (4/3)²/2) = 2.9412.
        let w = test(&[1.0, 2.0, 3.0], &[3.0, 5.0, 7.0]).unwrap();
        assert!((w.t - 2.3238).abs() < 1e-4, "{w:?}");
        assert!((w.df.unwrap() - 2.9412).abs() < 1e-4, "{w:?}");
        assert!(w.p > 0.09 && w.p < 0.11, "{w:?}");
    }

    #[test]
    fn detectable_effect_at_three_rounds() {
        // (t_.975,4 + t_.8,4) · √(2/3) = (2.7764 + 0.9410) · 0.8165 = 3.0353
        let d = detectable_effect(0.001, 3, 3).unwrap();
        assert!((d - 0.0030353).abs() < 1e-6, "{d}");
        assert_eq!(detectable_effect(0.001, 1, 3), None);
    }
}
