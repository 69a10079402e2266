//! The nuclear cusp of Gaussian orbitals, restored inside a small sphere (after Ma, Towler, Drummond and Needs,
//! J. Chem. Phys. 122, 224322 (2005)).
//!
//! Why. A Gaussian has zero slope at its centre, so an orbital built of Gaussians misses Kato's cusp
//! (d phi / dr = -Z phi at the nucleus): near the nucleus -1/2 lap phi / phi stays finite while the potential goes
//! as -Z / r, and where the contraction's Gaussians cross the local energy oscillates wildly (Be's RHF/cc-pVTZ 1s:
//! -12 Ha at r = 0.05 bohr, -28 at 0.02, +55 at 0.01, -3,067 at 0.001). The local energy's distribution then has a
//! heavy tail: the variance is finite, but the error bars of short runs converge slowly and scatter (Be's DMC
//! extrapolations to tau -> 0 scattered by 1.5 mHa against quoted error bars of 1.0 mHa, issue #20).
//!
//! What. Inside r < r_c of the nucleus an orbital that is spherical about it is replaced by
//!
//!   phi~(r) = s exp(p(r)),   p(r) = a0 + a1 r + a2 r^2 + a3 r^3 + a4 r^4,
//!
//! with s the sign of phi there, a1 = -Z (the cusp), a2, a3, a4 such that phi~ matches phi's value, slope and
//! curvature at r_c (so the local energy stays continuous there), and a0 (the value at the nucleus) chosen so that
//! the orbital's one-electron local energy E(r) = -1/2 lap phi~ / phi~ - Z / r stays as flat as it can: the largest
//! |E(r) - E(r_c)| over [0, r_c] is minimised (MTDN fit E(r) to an ideal curve; flat at E(r_c) is the simplest such
//! curve). E is finite at r = 0: E = -1/2 (p'' + p'^2) - (p' + Z) / r and p' + Z = 2 a2 r + 3 a3 r^2 + 4 a4 r^3.
//! Derivatives of phi~ = s e^p about the nucleus, with d = r - A and r = |d|:
//!
//!   grad phi~ = phi~ p'(r) d / r,   lap phi~ = phi~ (p''(r) + p'(r)^2 + 2 p'(r) / r).
//!
//! The nodes. Inside r_c phi~ keeps phi's sign and changes only a spherical function, so no node of an orbital
//! moves; the nodes of a determinant can: Be's D(1s, 2s) vanishes where phi_2s / phi_1s takes equal values at the
//! two electrons, so its node is r1 = r2 as long as that ratio is monotonic in r, which the correction keeps (a unit
//! test checks it on both orbital sets). The fixed-node energy of the literature (HF nodes) stays the reference.
//!
//! r_c. Be takes 0.2 bohr ([`BE_RADIUS`]). Its largest |E(r) - E(r_c)| inside r_c at the fitted a0, for r_c 0.05,
//! 0.1, 0.15, 0.2 and 0.3 bohr: 1s 4.4, 1.0, 0.86, 0.10, 0.85 Ha; 2s 4.4, 1.0, 0.98, 0.21, 1.3 Ha (the Gaussians'
//! oscillation puts E(r_c) at a different phase for each r_c; 0.2 is where both orbitals' curves are flattest). The
//! value at the nucleus rises by 1.7% over the Gaussians'.

use super::AtomicOrbitals;
use crate::Real;

/// Be's cusp radius, bohr (see the module docs).
pub const BE_RADIUS: f64 = 0.2;

/// The corrected form of orbital `orbital` inside `rc` of centre `center` (coordinates `at`): s exp(p(r)).
#[derive(Clone, Debug, PartialEq)]
pub struct Cusp {
    pub orbital: usize,
    pub center: usize,
    pub at: [f64; 3],
    pub rc: f64,
    pub sign: f64,
    /// a0..a4 of p(r).
    pub p: [f64; 5],
}

/// The value, slope and curvature of orbital j along a ray from centre `at`, at distance r: phi, phi' and
/// phi'' = lap phi - 2 phi' / r (a spherical function's Laplacian), from the uncorrected orbitals in f64.
fn radial(o: &AtomicOrbitals, j: usize, at: [f64; 3], dir: [f64; 3], r: f64) -> [f64; 3] {
    let n = o.len();
    let (mut v, mut g, mut l) = (vec![0.0; n], vec![0.0; 3 * n], vec![0.0; n]);
    o.vgl_uncorrected::<f64>([0, 1, 2].map(|k| at[k] + r * dir[k]), &mut v, &mut g, &mut l);
    let slope = (0..3).map(|k| g[k * n + j] * dir[k]).sum::<f64>();
    [v[j], slope, l[j] - 2.0 * slope / r]
}

/// Solve the 3 x 3 system a x = b by Cramer's rule (well conditioned here: powers of r_c).
fn solve3(a: [[f64; 3]; 3], b: [f64; 3]) -> [f64; 3] {
    let det = |m: [[f64; 3]; 3]| m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    let d = det(a);
    [0, 1, 2].map(|c| {
        let mut m = a;
        for r in 0..3 {
            m[r][c] = b[r];
        }
        det(m) / d
    })
}

impl Cusp {
    /// Fit orbital `j` of `o` about centre `center` of charge `z` inside radius `rc`. Err: one sentence, if the
    /// orbital is not spherical about the centre, or changes sign or vanishes inside `rc`.
    pub fn fit(o: &AtomicOrbitals, j: usize, center: usize, z: f64, rc: f64) -> Result<Cusp, String> {
        let at = o.centers[center];
        if !(rc > 0.0 && rc.is_finite() && z > 0.0) {
            return Err(format!("a cusp needs a positive radius and charge, not r_c = {rc}, Z = {z}"));
        }
        // spherical: the same value, slope and curvature along four directions at several radii
        let dirs = [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.6, -0.8, 0.0], [0.48, 0.6, -0.64]];
        let mut sign = 0.0;
        for i in 1..=8 {
            let r = rc * i as f64 / 8.0;
            let first = radial(o, j, at, dirs[0], r);
            for d in &dirs[1..] {
                let other = radial(o, j, at, *d, r);
                if (0..3).any(|k| (other[k] - first[k]).abs() > 1e-9 * (1.0 + first[k].abs())) {
                    return Err(format!("orbital {j} is not spherical about centre {center}: its s-part alone would need the correction"));
                }
            }
            let s = first[0].signum();
            if first[0] == 0.0 || (sign != 0.0 && s != sign) {
                return Err(format!("orbital {j} vanishes or changes sign within r_c = {rc} of centre {center}"));
            }
            sign = s;
        }
        let [v, d1, d2] = radial(o, j, at, dirs[0], rc);
        // ln|phi| and its first two derivatives at r_c
        let x = [(v * sign).ln(), d1 / v, d2 / v - (d1 / v) * (d1 / v)];
        let fit_a0 = |a0: f64| {
            let a1 = -z;
            let m = [[rc * rc, rc.powi(3), rc.powi(4)], [2.0 * rc, 3.0 * rc * rc, 4.0 * rc.powi(3)], [2.0, 6.0 * rc, 12.0 * rc * rc]];
            let [a2, a3, a4] = solve3(m, [x[0] - a0 - a1 * rc, x[1] - a1, x[2]]);
            Cusp { orbital: j, center, at, rc, sign, p: [a0, a1, a2, a3, a4] }
        };
        let e_rc = fit_a0(x[0]).local_energy(rc, z);
        let misfit = |c: &Cusp| (0..=100).map(|i| (c.local_energy(rc * i as f64 / 100.0, z) - e_rc).abs()).fold(0.0, f64::max);
        // a0 about ln|phi(0)| of the Gaussians: a scan of +-0.2, then +-1 step of it at a tenth of the step, twice
        let phi0 = radial(o, j, at, dirs[0], rc * 1e-6)[0];
        let (mut best, mut step) = ((phi0 * sign).ln(), 5e-4);
        for span in [400, 10, 10] {
            let centre = best;
            best = (-span..=span).map(|k| centre + k as f64 * step).min_by(|a, b| misfit(&fit_a0(*a)).total_cmp(&misfit(&fit_a0(*b)))).unwrap();
            step /= 10.0;
        }
        Ok(fit_a0(best))
    }

    /// p, p' and p'' at distance r, by Horner in A.
    #[inline(always)]
    pub fn poly<A: Real>(&self, r: A) -> [A; 3] {
        let a = self.p.map(A::of);
        let c = |x: f64| A::of(x);
        [a[0] + r * (a[1] + r * (a[2] + r * (a[3] + r * a[4]))), a[1] + r * (c(2.0) * a[2] + r * (c(3.0) * a[3] + r * c(4.0) * a[4])), c(2.0) * a[2] + r * (c(6.0) * a[3] + r * c(12.0) * a[4])]
    }

    /// The corrected orbital's one-electron local energy -1/2 lap phi~ / phi~ - Z / r at distance r (finite at 0).
    pub fn local_energy(&self, r: f64, z: f64) -> f64 {
        let ([_, d1, d2], a) = (self.poly(r), self.p);
        // (p' + Z) / r with the constant term apart: a1 + Z is 0 for a fitted cusp, and 0 / 0 at r = 0 is not
        let c = a[1] + z;
        let pole = if c == 0.0 { 0.0 } else { c / r };
        -0.5 * (d2 + d1 * d1) - pole - (2.0 * a[2] + r * (3.0 * a[3] + r * 4.0 * a[4]))
    }

    /// `[value, gx, gy, gz, Laplacian]` of the corrected orbital at r in A, or None outside r_c ([`Cusp::poly`] in
    /// A; the displacement formed in f64 and rounded once, as the basis functions form theirs).
    #[inline(always)]
    pub fn vgl<A: Real>(&self, r: [f64; 3]) -> Option<[A; 5]> {
        let d = [0, 1, 2].map(|k| A::of(r[k] - self.at[k]));
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        if r2 >= A::of(self.rc * self.rc) {
            return None;
        }
        let dist = r2.sqrt().max(A::min_positive_value());
        let [p, d1, d2] = self.poly(dist);
        let v = A::of(self.sign) * p.exp();
        let s = v * d1 / dist;
        Some([v, s * d[0], s * d[1], s * d[2], v * (d2 + d1 * d1 + A::of(2.0) * d1 / dist)])
    }
}

impl AtomicOrbitals {
    /// These orbitals with the cusp of a nucleus of charge `z` at centre `center` restored inside `rc` (module
    /// docs) in every orbital that does not vanish there. Err: one sentence, if such an orbital is not spherical
    /// about the centre (its s-part alone would need the correction, which this does not build) or changes sign
    /// inside `rc`, or the centre is not one of the orbitals'.
    pub fn cusp_corrected(&self, center: usize, z: f64, rc: f64) -> Result<AtomicOrbitals, String> {
        if center >= self.centers.len() {
            return Err(format!("cusp centre {center}: the orbitals have {} centres", self.centers.len()));
        }
        let mut out = self.clone();
        out.cusps.retain(|c| c.center != center);
        let n = self.len();
        let (mut v, mut g, mut l) = (vec![0.0; n], vec![0.0; 3 * n], vec![0.0; n]);
        self.vgl_uncorrected::<f64>(self.centers[center], &mut v, &mut g, &mut l);
        let largest = v.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        for j in 0..n {
            if v[j].abs() > 1e-12 * largest {
                out.cusps.push(Cusp::fit(self, j, center, z, rc)?);
            }
        }
        Ok(out)
    }
}
