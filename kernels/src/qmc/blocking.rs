//! Blocking analysis (Flyvbjerg and Petersen 1989): the error bar of the mean of a serially correlated series.
//!
//! Successive Monte Carlo samples are correlated, so the naive sigma / sqrt(n) is too small. Averaging neighbours in
//! blocks of B samples leaves blocks that are nearly independent once B exceeds the correlation time; the naive
//! error of the block means then levels off at the true error. The block size is chosen by the criterion of Lee,
//! Booth, Filippi and Umrigar (2011, and pyblock): the smallest B with B^3 > 2 n (err_B / err_1)^4, where
//! (err_B / err_1)^2 estimates the inefficiency 2 tau_int and the bound keeps the bias of a short block below the
//! statistical error of the error.

/// The result of a blocking analysis.
#[derive(Clone, Copy, Debug)]
pub struct Blocked {
    pub mean: f64,
    /// Error of the mean at the chosen block size.
    pub error: f64,
    /// sigma / sqrt(n) as if the samples were independent.
    pub naive_error: f64,
    /// Variance of the samples.
    pub variance: f64,
    pub block_size: usize,
    pub blocks: usize,
    /// False when no block size met the criterion (series too short for its correlation time): the error is then
    /// that of the largest block size with at least 16 blocks, and likely an underestimate.
    pub converged: bool,
}

impl Blocked {
    /// (err_B / err_1)^2: the number of correlated samples worth one independent one.
    pub fn inefficiency(&self) -> f64 {
        if self.naive_error > 0.0 {
            (self.error / self.naive_error).powi(2)
        } else {
            1.0
        }
    }
}

/// Mean and variance (divided by n).
fn moments(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    (m, x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / n)
}

/// Blocking analysis of `x` (at least two samples).
pub fn blocking(x: &[f64]) -> Blocked {
    assert!(x.len() >= 2, "blocking needs at least two samples");
    let n = x.len();
    let (mean, variance) = moments(x);
    let naive = (variance / (n - 1) as f64).sqrt();
    let mut level: Vec<f64> = x.to_vec();
    let mut block = 1usize;
    let mut last = (naive, 1usize, n);
    while level.len() >= 16 {
        let (_, v) = moments(&level);
        let err = (v / (level.len() - 1) as f64).sqrt();
        last = (err, block, level.len());
        let ratio = if naive > 0.0 { err / naive } else { 1.0 };
        if (block as f64).powi(3) > 2.0 * n as f64 * ratio.powi(4) {
            return Blocked { mean, error: err, naive_error: naive, variance, block_size: block, blocks: level.len(), converged: true };
        }
        level = level.chunks_exact(2).map(|p| 0.5 * (p[0] + p[1])).collect();
        block *= 2;
    }
    Blocked { mean, error: last.0, naive_error: naive, variance, block_size: last.1, blocks: last.2, converged: false }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qmc::walker::gaussian3;
    use crate::rng::rng;

    /// x_{t+1} = rho x_t + sqrt(1 - rho^2) eta_t has unit variance and autocorrelation rho^k, so the variance of the
    /// mean of n samples is (1 + rho) / (1 - rho) / n for large n: 19 / n at rho = 0.9.
    fn ar1(n: usize, rho: f64, seed: u64) -> Vec<f64> {
        let mut r = rng(seed, 1);
        let mut x = 0.0;
        let s = (1.0 - rho * rho).sqrt();
        (0..n)
            .map(|_| {
                x = rho * x + s * gaussian3(&mut r)[0];
                x
            })
            .collect()
    }

    #[test]
    fn blocking_recovers_the_true_error_of_a_correlated_series() {
        let (n, rho) = (1 << 18, 0.9);
        let truth = ((1.0 + rho) / (1.0 - rho) / n as f64).sqrt();
        for seed in 1..4 {
            let b = blocking(&ar1(n, rho, seed));
            assert!(b.converged, "{b:?}");
            assert!((b.error / truth - 1.0).abs() < 0.15, "blocked error {} vs true {truth}: {b:?}", b.error);
            // the naive error is too small by sqrt(19)
            assert!(b.naive_error < 0.3 * truth, "{b:?}");
            assert!((b.variance - 1.0).abs() < 0.05, "{b:?}");
            assert!(b.mean.abs() < 4.0 * truth, "{b:?}");
            assert!((b.inefficiency() - 19.0).abs() < 6.0, "{b:?}");
        }
    }

    #[test]
    fn uncorrelated_samples_keep_the_naive_error() {
        let x = ar1(1 << 14, 0.0, 9);
        let b = blocking(&x);
        assert!((b.error / b.naive_error - 1.0).abs() < 0.15, "{b:?}");
        // a series too short for its correlation time says so
        let short = blocking(&ar1(256, 0.99, 3));
        assert!(!short.converged, "{short:?}");
    }
}
