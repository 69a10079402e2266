//! Coverage of error bars: over many independent estimates of a known value, the fraction of z = (estimate -
//! truth) / error within 1 and within 2 must be that of a normal distribution, 68.27% and 95.45%, within binomial
//! bounds. An error bar too small by a factor f moves them to erf(1 / (f sqrt 2)) and erf(sqrt 2 / f): 57.2% and
//! 88.2% at f = 1.25, 44.6% and 75.8% at f = 1.7.
//!
//! The expected band of each fraction runs from below to above, widened by 4 binomial standard deviations
//! sqrt(p (1 - p) / runs) on each side (a false alarm once in ~16000 checks):
//! - above: the normal fraction;
//! - below: the Student t fraction of the fewest blocks any run's error came from (an error estimated from B
//!   blocks makes z a t variable with about B - 1 degrees of freedom: 66.7% and 93.6% at 16 blocks), lowered by
//!   what a bias of `bias` error bars costs, 0.242 bias^2 and 0.108 bias^2 (the second-order shift of
//!   P(|z + bias| < k), k phi(k) bias^2 with phi the normal density: 1.5% and 0.7% at a quarter of an error bar).

/// The coverage of a set of z values.
#[derive(Clone, Debug)]
pub struct Coverage {
    pub runs: usize,
    /// Fractions with |z| < 1 and |z| < 2.
    pub within: [f64; 2],
    /// The expected band of each fraction: (lowest, highest).
    pub band: [(f64, f64); 2],
    /// Mean z^2 (1 for honest error bars).
    pub mean_z2: f64,
}

impl Coverage {
    /// Both fractions within their bands.
    pub fn passed(&self) -> bool {
        (0..2).all(|k| self.band[k].0 <= self.within[k] && self.within[k] <= self.band[k].1)
    }
}

/// The coverage of `z`, each from an error estimated from at least `blocks` blocks, each estimate biased by at most
/// `bias` of its error bar.
pub fn coverage(z: &[f64], blocks: usize, bias: f64) -> Coverage {
    let runs = z.len();
    let within = [1.0, 2.0].map(|k| z.iter().filter(|z| z.abs() < k).count() as f64 / runs.max(1) as f64);
    let band = [1.0, 2.0].map(|k: f64| {
        let normal = libm::erf(k / std::f64::consts::SQRT_2);
        let shift = k * normal_density(k) * bias * bias;
        let low = student_t_within(k, blocks.saturating_sub(1).max(1) as f64) - shift;
        let sd = |p: f64| (p * (1.0 - p) / runs.max(1) as f64).sqrt();
        (low - 4.0 * sd(low), normal + 4.0 * sd(normal))
    });
    let mean_z2 = z.iter().map(|z| z * z).sum::<f64>() / runs.max(1) as f64;
    Coverage { runs, within, band, mean_z2 }
}

fn normal_density(x: f64) -> f64 {
    (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// P(|t| < k) for Student's t with `nu` degrees of freedom: twice the integral of its density from 0 to k
/// (Simpson's rule on 2000 intervals; the density is smooth and k is small).
pub fn student_t_within(k: f64, nu: f64) -> f64 {
    let norm = (libm::lgamma((nu + 1.0) / 2.0) - libm::lgamma(nu / 2.0)).exp() / (nu * std::f64::consts::PI).sqrt();
    let f = |t: f64| norm * (1.0 + t * t / nu).powf(-(nu + 1.0) / 2.0);
    let m = 2000;
    let h = k / m as f64;
    let s: f64 = (0..=m).map(|i| f(i as f64 * h) * if i == 0 || i == m { 1.0 } else if i % 2 == 1 { 4.0 } else { 2.0 }).sum();
    2.0 * s * h / 3.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::gaussian3;
    use crate::rng::rng;

    #[test]
    fn student_t_fractions_match_the_tables() {
        // P(|t| < 1), P(|t| < 2): nu = 1 (Cauchy) exactly 1/2 and 2 atan(2) / pi; nu = 15 (tables) 0.66683, 0.93605
        assert!((student_t_within(1.0, 1.0) - 0.5).abs() < 1e-9);
        assert!((student_t_within(2.0, 1.0) - 2.0 * 2f64.atan() / std::f64::consts::PI).abs() < 1e-9);
        assert!((student_t_within(1.0, 15.0) - 0.66683).abs() < 2e-5);
        assert!((student_t_within(2.0, 15.0) - 0.93605).abs() < 2e-5);
        assert!((student_t_within(2.0, 1e6) - libm::erf(2f64 / std::f64::consts::SQRT_2)).abs() < 1e-5);
    }

    /// Normal z pass; z of error bars 25% too small fail at 1000 runs; a bias of a quarter error bar still passes.
    #[test]
    fn honest_error_bars_pass_and_small_ones_fail() {
        let mut r = rng(3, 9);
        let z: Vec<f64> = (0..1000).map(|_| gaussian3(&mut r)[0]).collect();
        let c = coverage(&z, 16, 0.0);
        assert!(c.passed() && (c.mean_z2 - 1.0).abs() < 0.2, "{c:?}");
        let small: Vec<f64> = z.iter().map(|z| 1.25 * z).collect();
        assert!(!coverage(&small, 16, 0.0).passed());
        let biased: Vec<f64> = z.iter().map(|z| z + 0.25).collect();
        assert!(coverage(&biased, 16, 0.25).passed());
        // NaN z (a NaN energy or error) is never within
        let nan = vec![f64::NAN; 100];
        assert!(!coverage(&nan, 16, 0.0).passed());
    }
}
