//! Blocking analysis (Flyvbjerg and Petersen 1989): the error bar of the mean of a serially correlated series, and
//! of a weighted mean (DMC's sum w E / sum w).
//!
//! Successive Monte Carlo samples are correlated, so the naive sigma / sqrt(n) is too small. Averaging neighbours in
//! blocks of B samples leaves blocks that are nearly independent once B exceeds the correlation time; the naive
//! error of the block means then levels off at the true error.
//!
//! Weighted means. DMC's energy is a ratio, E = sum_g S_g / sum_g W_g over generations g (S_g = sum w E_L, W_g =
//! sum w). Its error follows from the delta method (Wolff 2004's projected fluctuations): E - E_true ~ mean of
//! y_g = (S_g - E W_g) / mean(W), so the blocking of y gives the error of E; a block of y is
//! (W_b / B mean(W)) (E_b - E), the weighted block average E_b = S_b / W_b. With equal weights y is x - mean, the
//! ordinary analysis. (Blocking the generation averages S_g / W_g as an unweighted series ignores how the weights
//! vary: with weights that vary independently of the noise its error is too small by sqrt(n sum W^2 / (sum W)^2).)
//!
//! The block size: the largest, n / 16 (16 blocks, so the error of the error is 1 / sqrt(30) = 18%, and
//! z = (estimate - truth) / error follows a Student t with 15 degrees of freedom). Choosing a smaller block where
//! the curve "has converged" is what biased the error bars of this driver low. DMC energies have a correlation tail
//! slower than their integrated time (He at tau = 0.04: the inefficiency reaches 0.75/Ha at blocks of 2.5/Ha,
//! 0.95/Ha at 10/Ha, about 1.1/Ha beyond), and every rule that stops at the first block size meeting a test on the
//! curve (Lee, Booth, Filippi and Umrigar 2011's B^3 > 2 n (err_B / err_1)^4, pyblock's; a plateau read from it)
//! stops where the tail is not yet counted, and picks the runs whose estimate happened to fall low: 121-256 He runs
//! of 120/Ha (64 and 256 walkers) spread 15% and 24% more than their error bars said, and a model of that
//! correlation (two AR(1) terms of 5 and 62 samples, 15% of the variance in the slow one) gives error bars 18% to
//! 6% low from 110 to 1100 inefficiencies of data with Lee's rule, and 7% to 0% low from 280 to 1100 with the
//! largest block (`a_slow_correlation_tail_is_counted`).
//!
//! Convergence: the series must hold at least 256 inefficiencies (r^2 = (err_B / err_1)^2, the number of correlated
//! samples worth one independent one), so that each of the 16 blocks spans 16 of them (32 integrated
//! autocorrelation times): a correlation tail of exponential time t biases the variance by about t / B, under 8%
//! for t up to 2.5 integrated times (He's slow mode, 1 / E_gap = 1.4/Ha, against tau_int ~ 0.55/Ha). The
//! inefficiency is read from 32 blocks (B = n / 32): from 16 it scatters by 36% and would fail runs at random; from
//! 32 by 25% (He at 500/Ha holds ~450 inefficiencies: a false failure needs a 3.4 sigma excursion). Otherwise the
//! error bar is reported unconverged ([`Blocked::why_unconverged`]), and a record fails on it: run longer, about
//! twice the bound to converge reliably. Whether the bars are honest is measured, not assumed: `qmc --coverage` counts how often
//! independent DMC runs cover the exact energy within one and two error bars.

/// The result of a blocking analysis.
#[derive(Clone, Copy, Debug)]
pub struct Blocked {
    pub mean: f64,
    /// Error of the mean: the naive error of the means of [`BLOCKS`] blocks.
    pub error: f64,
    /// sigma / sqrt(n) as if the samples were independent.
    pub naive_error: f64,
    /// Variance of the samples (weighted: sum w (x - mean)^2 / sum w).
    pub variance: f64,
    pub block_size: usize,
    pub blocks: usize,
    /// Samples analysed.
    pub samples: usize,
    /// The inefficiency read from 32 blocks, (err_{n/32} / err_1)^2: what convergence is judged by.
    pub inefficiency_32: f64,
    /// False when the series holds fewer than [`MIN_INEFFICIENCIES`] inefficiencies (`inefficiency_32`): the error
    /// is likely an underestimate.
    pub converged: bool,
}

/// Blocks the error is read from: the error of the error is 1 / sqrt(2 (blocks - 1)), 18%.
pub const BLOCKS: usize = 16;
/// Inefficiencies a series must hold for a converged error bar: 16 per block.
pub const MIN_INEFFICIENCIES: f64 = 256.0;

impl Blocked {
    /// (err / err_1)^2: the number of correlated samples worth one independent one.
    pub fn inefficiency(&self) -> f64 {
        if self.naive_error > 0.0 {
            (self.error / self.naive_error).powi(2)
        } else {
            1.0
        }
    }

    /// Samples a series of this inefficiency needs for a converged error bar (an estimate: twice it converges
    /// reliably).
    pub fn needed(&self) -> usize {
        (MIN_INEFFICIENCIES * self.inefficiency_32).ceil() as usize
    }

    /// Why the error bar is not to be trusted, or None when it converged.
    pub fn why_unconverged(&self) -> Option<String> {
        (!self.converged).then(|| {
            format!(
                "the blocking analysis did not converge: {} samples hold {:.0} inefficiencies ({:.1} samples each) where {MIN_INEFFICIENCIES} are needed, so at least {} samples (twice that to be safe)",
                self.samples,
                self.samples as f64 / self.inefficiency_32,
                self.inefficiency_32,
                self.needed()
            )
        })
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
    weighted_blocking(x, &vec![1.0; x.len()])
}

/// Blocking analysis of the weighted mean sum w x / sum w of `x` with weights `w` (at least two samples, the
/// weights positive): the delta method's series y = w (x - mean) / mean(w), in 16 blocks of n / 16 (the last
/// n mod 16 samples are left out of the error, not of the mean). A series shorter than 32 samples is unconverged
/// (shorter than 16, it gets the naive error).
pub fn weighted_blocking(x: &[f64], w: &[f64]) -> Blocked {
    assert!(x.len() >= 2, "blocking needs at least two samples");
    assert_eq!(x.len(), w.len(), "one weight per sample");
    let n = x.len();
    let wsum: f64 = w.iter().sum();
    let mean = x.iter().zip(w).map(|(x, w)| x * w).sum::<f64>() / wsum;
    let variance = x.iter().zip(w).map(|(x, w)| w * (x - mean) * (x - mean)).sum::<f64>() / wsum;
    let wbar = wsum / n as f64;
    let y: Vec<f64> = x.iter().zip(w).map(|(x, w)| w * (x - mean) / wbar).collect();
    // the naive error of the mean of blocks of `b`
    let error_at = |b: usize| {
        let means: Vec<f64> = y.chunks_exact(b).map(|c| c.iter().sum::<f64>() / b as f64).collect();
        (moments(&means).1 / (means.len() - 1) as f64).sqrt()
    };
    let naive = error_at(1);
    let block_size = (n / BLOCKS).max(1);
    let error = error_at(block_size);
    let inefficiency_32 = if naive > 0.0 { (error_at((n / (2 * BLOCKS)).max(1)) / naive).powi(2) } else { 1.0 };
    let converged = n >= 2 * BLOCKS && n as f64 >= MIN_INEFFICIENCIES * inefficiency_32;
    Blocked { mean, error, naive_error: naive, variance, block_size, blocks: n / block_size, samples: n, inefficiency_32, converged }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ensemble::coverage::coverage;
    use crate::rng::gaussian3;
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

    /// Over 40 series, the error of 16 blocks scatters by 18% around the true error (the mean of 40 by 3%); the
    /// naive error is too small by sqrt(19).
    #[test]
    fn blocking_recovers_the_true_error_of_a_correlated_series() {
        let (n, rho) = (1 << 15, 0.9);
        let truth = ((1.0 + rho) / (1.0 - rho) / n as f64).sqrt();
        let runs: Vec<Blocked> = (1..41).map(|seed| blocking(&ar1(n, rho, seed))).collect();
        let mean_ratio = runs.iter().map(|b| b.error / truth).sum::<f64>() / runs.len() as f64;
        assert!((mean_ratio - 1.0).abs() < 0.08, "mean blocked / true error {mean_ratio}");
        for b in &runs {
            assert!(b.converged && b.blocks == 16 && b.block_size == n / 16, "{b:?}");
            assert!(b.naive_error < 0.3 * truth, "{b:?}");
            assert!((b.variance - 1.0).abs() < 0.1, "{b:?}");
            assert!(b.mean.abs() < 5.0 * truth, "{b:?}");
        }
    }

    #[test]
    fn uncorrelated_samples_keep_the_naive_error() {
        let runs: Vec<Blocked> = (1..21).map(|s| blocking(&ar1(1 << 12, 0.0, s))).collect();
        let mean_ratio = runs.iter().map(|b| b.error / b.naive_error).sum::<f64>() / runs.len() as f64;
        assert!((mean_ratio - 1.0).abs() < 0.1, "{mean_ratio}");
        // a series too short for its correlation time says so, and how long it should be
        let short = blocking(&ar1(256, 0.99, 3));
        assert!(!short.converged, "{short:?}");
        let why = short.why_unconverged().unwrap();
        assert!(short.needed() > 256 && why.contains("256 samples") && why.contains(&format!("at least {} samples", short.needed())), "{why}");
        // fewer than 16 samples: the naive error, unconverged
        let tiny = blocking(&[1.0, 2.0, 4.0]);
        assert!(!tiny.converged && tiny.error == tiny.naive_error, "{tiny:?}");
    }

    /// The criterion needs 256 inefficiencies of samples: at rho = 0.9 (inefficiency 19, so 4864 samples) a series
    /// of 2000 never converges and one of 20000 always does.
    #[test]
    fn convergence_needs_256_inefficiencies_of_samples() {
        for seed in 1..21 {
            assert!(!blocking(&ar1(2000, 0.9, seed)).converged, "seed {seed}");
            let b = blocking(&ar1(20000, 0.9, seed));
            assert!(b.converged && b.needed() < 20000, "seed {seed}: {b:?}");
        }
    }

    /// The honesty of a converged error bar, measured: 2000 AR(1) series (rho = 0.9, n = 8192, 430
    /// inefficiencies) of known mean 0, and the coverage of their error bars (`coverage`: within one and two error
    /// bars as often as a t distribution of 15 degrees of freedom or a normal one says, within 4 binomial standard
    /// deviations, about 4% and 2% at 2000 runs). Error bars 20% too small fail.
    #[test]
    fn converged_error_bars_cover_the_true_mean_as_a_normal_distribution_does() {
        let runs = 2000;
        let blocked: Vec<Blocked> = (0..runs).map(|s| blocking(&ar1(8192, 0.9, 1000 + s))).filter(|b| b.converged).collect();
        assert!(blocked.len() > runs as usize * 95 / 100, "only {} of {runs} converged", blocked.len());
        let z: Vec<f64> = blocked.iter().map(|b| b.mean / b.error).collect();
        let c = coverage(&z, BLOCKS, 0.0);
        assert!(c.passed(), "{c:?}");
        let small: Vec<f64> = z.iter().map(|z| z * 1.2).collect();
        assert!(!coverage(&small, BLOCKS, 0.0).passed());
    }

    /// He's DMC correlation, modelled: 85% of the variance in an AR(1) term of time 5 samples, 15% in one of 62
    /// (inefficiency 27). Over 300 series of 16000 samples (590 inefficiencies), the mean error bar is within 6%
    /// of the true one (the model's bias at this length is about 4%) and the coverage holds. Lee et al.'s optimal
    /// block (the first B with B^3 > 2 n r_B^4, which this module used before) is about 8% low on the same series.
    #[test]
    fn a_slow_correlation_tail_is_counted() {
        let two_scale = |n: usize, seed: u64| -> Vec<f64> {
            let (fast, slow) = (ar1(n, (-1.0f64 / 5.0).exp(), seed), ar1(n, (-1.0f64 / 62.0).exp(), seed + 77_777));
            fast.iter().zip(&slow).map(|(f, s)| 0.85f64.sqrt() * f + 0.15f64.sqrt() * s).collect()
        };
        let rho = |t: f64| (-1.0 / t).exp();
        let ineff = 0.85 * (1.0 + rho(5.0)) / (1.0 - rho(5.0)) + 0.15 * (1.0 + rho(62.0)) / (1.0 - rho(62.0));
        let n = 16000;
        let truth = (ineff / n as f64).sqrt();
        let series: Vec<Vec<f64>> = (0..300).map(|s| two_scale(n, 5000 + s)).collect();
        let blocked: Vec<Blocked> = series.iter().map(|x| blocking(x)).filter(|b| b.converged).collect();
        // an inefficiency estimated from 16 blocks scatters by 36%: a few runs read it above 16000 / 256 = 62
        assert!(blocked.len() >= 290, "{} of 300 converged", blocked.len());
        let ratio = blocked.iter().map(|b| b.error).sum::<f64>() / blocked.len() as f64 / truth;
        assert!(ratio > 0.94 && ratio < 1.06, "largest block: mean error / true {ratio}");
        let z: Vec<f64> = blocked.iter().map(|b| b.mean / b.error).collect();
        assert!(coverage(&z, BLOCKS, 0.0).passed());
        // Lee et al.'s choice on the same series (levels of powers of two, at least 16 blocks)
        let lee = |x: &[f64]| {
            let naive = blocking(x).naive_error;
            let error_at = |b: usize| {
                let m: Vec<f64> = x.chunks_exact(b).map(|c| c.iter().sum::<f64>() / b as f64).collect();
                (moments(&m).1 / (m.len() - 1) as f64).sqrt()
            };
            let levels: Vec<usize> = (0..).map(|k| 1usize << k).take_while(|b| x.len() / b >= 16).collect();
            let chosen = levels.iter().find(|&&b| (b as f64).powi(3) > 2.0 * x.len() as f64 * (error_at(b) / naive).powi(4));
            error_at(*chosen.unwrap_or(levels.last().unwrap()))
        };
        let lee_ratio = series.iter().map(|x| lee(x)).sum::<f64>() / series.len() as f64 / truth;
        assert!(lee_ratio < 0.945, "Lee's block: mean error / true {lee_ratio}");
    }

    /// A weighted mean whose weights vary independently of the noise (independent x_g of variance 1 whatever w_g,
    /// w_g exponential): the variance of sum w x / sum w is n <w^2> / <w>^2 = 2 times that of the plain mean, so
    /// the error of the unweighted series is too small by sqrt(2). The weighted analysis gets it: over 400 series
    /// the mean z^2 is that of a t with 15 degrees of freedom, 15/13 = 1.15, within 4 standard deviations (about
    /// 0.08), and the old error gives about 2.3.
    #[test]
    fn a_weighted_mean_gets_the_error_of_its_weights() {
        let (runs, n) = (400, 4096);
        let (mut z2_weighted, mut z2_unweighted) = (0.0, 0.0);
        for s in 0..runs {
            let x = ar1(n, 0.0, 50 + s);
            let mut r = rng(7000 + s, 2);
            let w: Vec<f64> = (0..n).map(|_| -(1.0 - rand::Rng::random::<f64>(&mut r)).ln()).collect();
            let b = weighted_blocking(&x, &w);
            assert!(b.converged, "{b:?}");
            let mean = x.iter().zip(&w).map(|(x, w)| x * w).sum::<f64>() / w.iter().sum::<f64>();
            assert!((b.mean - mean).abs() < 1e-12);
            z2_weighted += (b.mean / b.error).powi(2) / runs as f64;
            z2_unweighted += (b.mean / blocking(&x).error).powi(2) / runs as f64;
        }
        assert!((z2_weighted - 15.0 / 13.0).abs() < 4.0 * 0.08, "weighted: mean z^2 = {z2_weighted}");
        assert!(z2_unweighted > 1.8, "the unweighted error bar should be too small here: mean z^2 = {z2_unweighted}");
        // equal weights are the ordinary analysis
        let x = ar1(3000, 0.8, 4);
        let (a, b) = (blocking(&x), weighted_blocking(&x, &vec![2.5; 3000]));
        assert!((a.error - b.error).abs() < 1e-15 && (a.mean - b.mean).abs() < 1e-15 && a.block_size == b.block_size);
    }
}
