// SPDX-License-Identifier: Apache-2.0
//! The Mann–Whitney U test (Wilcoxon rank-sum), two-sided.
//!
//! U counts the pairs (a, b) with b > a, ties counting one half. Without ties and with
//! both samples of at most [`EXACT_MAX`] values the p-value is exact (the count of rank
//! arrangements at least as extreme, over C(n₁+n₂, n₁)); otherwise it uses the normal
//! approximation with the tie-corrected variance and a continuity correction of ½.

use statrs::distribution::{ContinuousCDF, Normal};

/// Largest sample size per side for which the exact distribution is counted.
pub const EXACT_MAX: usize = 20;

/// How the p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Exact null distribution (no ties, small samples).
    Exact,
    /// Normal approximation with tie correction and continuity correction.
    Normal,
}

/// Result of one test.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MannWhitney {
    /// U of `b` against `a`: pairs with b > a, ties ½ each (0 … n₁·n₂).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// How `p` was computed.
    pub method: Method,
}

/// Runs the two-sided test of `a` against `b`; `None` if either sample is empty or holds
/// a non-finite value.
pub fn test(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|v| !v.is_finite()) {
        return None;
    }
    let u = u_statistic(a, b);
    let ties = has_ties(a, b);
    let (p, method) = if !ties && a.len() <= EXACT_MAX && b.len() <= EXACT_MAX {
        (exact_p(a.len(), b.len(), u), Method::Exact)
    } else {
        (normal_p(a, b, u), Method::Normal)
    };
    Some(MannWhitney { u, p, method })
}

/// U of `b` against `a`.
pub fn u_statistic(a: &[f64], b: &[f64]) -> f64 {
    let mut u = 0.0;
    for x in a {
        for y in b {
            if y > x {
                u += 1.0;
            } else if y == x {
                u += 0.5;
            }
        }
    }
    u
}

fn has_ties(a: &[f64], b: &[f64]) -> bool {
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    all.windows(2).any(|w| w[0] == w[1])
}

/// Number of arrangements of `m` values of one sample among `m + n` ranks, per U value
/// (index U, 0 … m·n): the recurrence f(m, n, u) = f(m−1, n, u−n) + f(m, n−1, u).
pub fn exact_counts(m: usize, n: usize) -> Vec<f64> {
    // table[j][u] = f(i, j, u) for the current i.
    let mut table: Vec<Vec<f64>> = (0..=n).map(|_| vec![1.0]).collect();
    for i in 1..=m {
        let mut next: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
        next.push(vec![1.0]);
        for j in 1..=n {
            let mut row = vec![0.0; i * j + 1];
            for (u, c) in table[j].iter().enumerate() {
                row[u + j] += c;
            }
            for (u, c) in next[j - 1].iter().enumerate() {
                row[u] += c;
            }
            next.push(row);
        }
        table = next;
    }
    table.swap_remove(n)
}

/// Two-sided exact p: twice the smaller tail at `u`, at most 1.
fn exact_p(m: usize, n: usize, u: f64) -> f64 {
    let counts = exact_counts(m, n);
    let total: f64 = counts.iter().sum();
    let k = u.round() as usize;
    let lower: f64 = counts[..=k.min(counts.len() - 1)].iter().sum();
    let upper: f64 = counts[k.min(counts.len() - 1)..].iter().sum();
    (2.0 * lower.min(upper) / total).min(1.0)
}

/// Two-sided p from the normal approximation: σ² = n₁n₂/12 · ((N+1) − Σ(t³−t)/(N(N−1))).
fn normal_p(a: &[f64], b: &[f64], u: f64) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let n = n1 + n2;
    let mut all: Vec<f64> = a.iter().chain(b).copied().collect();
    all.sort_by(f64::total_cmp);
    let mut tie_sum = 0.0;
    let mut i = 0;
    while i < all.len() {
        let j = all[i..].iter().take_while(|v| **v == all[i]).count();
        let t = j as f64;
        tie_sum += t * t * t - t;
        i += j;
    }
    let var = n1 * n2 / 12.0 * ((n + 1.0) - tie_sum / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0; // every value equal: no evidence of a difference
    }
    let mean = n1 * n2 / 2.0;
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    let std = Normal::standard();
    (2.0 * (1.0 - std.cdf(z))).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, eps: f64) -> bool {
        (a - b).abs() < eps
    }

    #[test]
    fn fully_separated_five_and_five_is_two_over_252() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        let r = test(&a, &b).unwrap();
        assert_eq!(r.u, 25.0);
        assert_eq!(r.method, Method::Exact);
        assert!(close(r.p, 2.0 / 252.0, 1e-12), "{}", r.p);
        // Symmetric: B below A gives U = 0 and the same p.
        let r = test(&b, &a).unwrap();
        assert_eq!(r.u, 0.0);
        assert!(close(r.p, 2.0 / 252.0, 1e-12));
    }

    #[test]
    fn one_swap_doubles_the_tail() {
        let r = test(&[1.0, 2.0, 3.0, 4.0, 6.0], &[5.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(r.u, 24.0);
        assert!(close(r.p, 4.0 / 252.0, 1e-12), "{}", r.p);
    }

    #[test]
    fn textbook_five_and_four_exact_and_normal() {
        // The 5 + 4 sample of SciPy's mannwhitneyu documentation: U = 17, exact p = 1/9,
        // asymptotic (continuity-corrected) p = 0.11134688653314041.
        let males = [19.0, 22.0, 16.0, 29.0, 24.0];
        let females = [20.0, 11.0, 17.0, 12.0];
        let r = test(&females, &males).unwrap();
        assert_eq!(r.u, 17.0);
        assert!(close(r.p, 1.0 / 9.0, 1e-12), "{}", r.p);
        let p = normal_p(&females, &males, r.u);
        assert!(close(p, 0.111_346_886_533_140_41, 1e-9), "{p}");
    }

    #[test]
    fn ties_use_the_corrected_normal_approximation() {
        // a = 1 1 2 2, b = 2 3 3 3: U = 4·3 + 2·(½·1)·... counted by hand: b=2 ties two 2s
        // (1) and beats two 1s (2) → 3; each 3 beats all four → 12; U = 15.
        // Ties: {1,1} t=2, {2,2,2} t=3, {3,3,3} t=3 → Σ(t³−t) = 6+24+24 = 54.
        // σ² = 16/12·(9 − 54/56) = 10.714285…; z = (15 − 8 − ½)/σ = 1.98578…
        let r = test(&[1.0, 1.0, 2.0, 2.0], &[2.0, 3.0, 3.0, 3.0]).unwrap();
        assert_eq!(r.u, 15.0);
        assert_eq!(r.method, Method::Normal);
        let z: f64 = 6.5 / (16.0f64 / 12.0 * (9.0 - 54.0 / 56.0)).sqrt();
        let want = 2.0 * (1.0 - Normal::standard().cdf(z));
        assert!(close(r.p, want, 1e-12));
        assert!(close(r.p, 0.047_06, 5e-5), "{}", r.p);
    }

    #[test]
    fn identical_samples_are_not_different() {
        let r = test(&[3.0; 5], &[3.0; 5]).unwrap();
        assert_eq!(r.u, 12.5);
        assert_eq!(r.p, 1.0);
    }

    #[test]
    fn exact_counts_sum_to_the_binomial_and_are_symmetric() {
        let c = exact_counts(5, 5);
        assert_eq!(c.len(), 26);
        assert_eq!(c.iter().sum::<f64>(), 252.0);
        assert_eq!(c[0], 1.0);
        assert_eq!(c[1], 1.0);
        assert_eq!(c[2], 2.0);
        for u in 0..=25 {
            assert_eq!(c[u], c[25 - u]);
        }
        assert_eq!(exact_counts(3, 2).iter().sum::<f64>(), 10.0);
    }

    #[test]
    fn empty_or_nan_input_is_refused() {
        assert!(test(&[], &[1.0]).is_none());
        assert!(test(&[1.0, f64::NAN], &[1.0]).is_none());
    }
}
