// SPDX-License-Identifier: Apache-2.0
//! Statistics for A/B verdicts on a noisy host: the Mann–Whitney U rank test (exact for
//! small samples) for rates and times, Welch's t test for deterministic instruction
//! counts ([`welch`] says why), a seeded bootstrap confidence interval of the ratio of
//! medians, and
//! descriptive figures (median, min–max, coefficient of variation, the smallest effect a
//! number of rounds can detect).
//!
//! Distributions come from `statrs` (the normal CDF and quantile); the resampling RNG is
//! `rand_chacha`'s ChaCha8 with a fixed seed, so one set of samples always yields the same
//! interval. The Mann–Whitney null distribution is counted here (a small dynamic program):
//! no maintained crate ships the exact small-sample distribution.

pub mod bootstrap;
pub mod describe;
pub mod mann_whitney;
pub mod verdict;
pub mod welch;
