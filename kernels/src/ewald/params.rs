//! The splitting parameter alpha (erfc(alpha r) / r is the real-space part, gamma = alpha^2 in CASINO's Eq. 3) and
//! the two cutoffs, chosen for a requested absolute accuracy per particle.
//!
//! Truncation errors are estimated as the sum of the dropped terms for an uncorrelated uniform configuration, which
//! is what they are for the electron gas (all charges alike, so dropped real-space terms do not cancel):
//! real space, per particle, 1/2 n int_{r_c} S_d(r) erfc(alpha r) / r dr (S_d the sphere or circle area, n the
//! density of squared charge); reciprocal space, per particle, 1/2 sum_{|G| > G_c} c(G) with the sum as an integral.
//! Each part gets a tenth of the requested accuracy, a margin for the estimate (the tests check the outcome).

use super::cell::Cell;
use std::f64::consts::PI;

/// Splitting parameter and cutoffs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// alpha (bohr^-1): real-space terms erfc(alpha r) / r, Gaussian width 1 / (2 alpha) in reciprocal space.
    pub alpha: f64,
    /// Real-space cutoff radius (bohr).
    pub rc: f64,
    /// Reciprocal-space cutoff |G| (bohr^-1).
    pub gc: f64,
}

/// Share of the accuracy each of the two truncations may use (see module docs).
const SHARE: f64 = 0.1;

/// Simpson integral of f over [lo, lo + width] (the integrands decay like Gaussians well within the width).
fn integrate(f: impl Fn(f64) -> f64, lo: f64, width: f64) -> f64 {
    let n = 400;
    let h = width / n as f64;
    let mut s = f(lo) + f(lo + width);
    for i in 1..n {
        s += f(lo + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 };
    }
    s * h / 3.0
}

/// Estimated real-space truncation error per particle (see module docs); `density` = sum q^2 / volume.
pub fn real_tail(dim: usize, alpha: f64, rc: f64, density: f64) -> f64 {
    let shell = |r: f64| if dim == 3 { 4.0 * PI * r * r } else { 2.0 * PI * r };
    0.5 * density * integrate(|r| shell(r) * libm::erfc(alpha * r) / r, rc.max(1e-12), 12.0 / alpha)
}

/// Estimated reciprocal-space truncation error per particle.
pub fn recip_tail(dim: usize, alpha: f64, gc: f64) -> f64 {
    if dim == 3 {
        integrate(|g| (-g * g / (4.0 * alpha * alpha)).exp(), gc, 24.0 * alpha) / PI
    } else {
        0.5 * integrate(|g| libm::erfc(g / (2.0 * alpha)), gc, 24.0 * alpha)
    }
}

/// Smallest x in [0, hi] with tail(x) <= target (tail decreasing), by bisection.
fn solve(tail: impl Fn(f64) -> f64, target: f64, hi: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, hi);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if tail(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

impl Params {
    /// Cutoffs for a given alpha: each truncation error at most SHARE x `accuracy` per particle.
    /// `charge2` is the sum of squared charges in the cell.
    pub fn for_alpha(cell: &Cell, alpha: f64, charge2: f64, accuracy: f64) -> Params {
        let density = charge2 / cell.volume;
        let rc = solve(|r| real_tail(cell.dim, alpha, r, density), SHARE * accuracy, 20.0 / alpha);
        let gc = solve(|g| recip_tail(cell.dim, alpha, g), SHARE * accuracy, 40.0 * alpha);
        Params { alpha, rc, gc }
    }

    /// The alpha (and cutoffs) with the least work for `electrons` electrons and `ions` ions: a scan over alpha of
    /// a cost model counting real-space image checks (and erfc evaluations, weighted 6) per pair and one complex
    /// product per particle and G vector.
    pub fn auto(cell: &Cell, electrons: usize, ions: usize, charge2: f64, accuracy: f64) -> Params {
        let length = cell.volume.powf(1.0 / cell.dim as f64);
        let (n, m) = (electrons as f64, ions as f64);
        let pairs = n * (n - 1.0) / 2.0 + n * m + n;
        let sphere = |r: f64| if cell.dim == 3 { 4.0 / 3.0 * PI * r * r * r } else { PI * r * r };
        let mut best: Option<(f64, Params)> = None;
        for step in 0..48 {
            let alpha = (1.5 * (30.0f64).powf(step as f64 / 47.0)) / length;
            let p = Params::for_alpha(cell, alpha, charge2, accuracy);
            let images = cell.lattice_points(p.rc + cell.max_wrapped()).len() as f64;
            let inside = sphere(p.rc) / cell.volume;
            let gvecs = cell.half_reciprocal(p.gc).len() as f64;
            let cost = pairs * (images + 6.0 * inside) + (n + 1.0) * gvecs;
            if !matches!(best, Some((c, _)) if c <= cost) {
                best = Some((cost, p));
            }
        }
        best.expect("the scan has steps").1
    }
}
