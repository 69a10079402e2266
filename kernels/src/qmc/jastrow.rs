//! The Jastrow factor exp(sum_{i<j} u_s(r_ij) + sum_{i,A} chi_A(r_iA)) of the trial wavefunction, with the radial
//! functors of the `jastrow` kernel ([`Radial`]: Padé, B-spline, CASINO u) evaluated pair by pair for one walker.
//!
//! The slope at r = 0 fixes Kato's cusps: +1/2 for electrons of opposite spin, +1/4 for like spins, and for an
//! electron-nucleus term -(Z - zeta) when the orbitals carry exponent zeta. In a periodic cube, pair distances are
//! minimum-image ones (the kernel's `wrap`), so functors must vanish with their derivatives at half the side: the
//! B-spline and CASINO forms do by construction.
//!
//! Precision: the functors' parameters and every pair term are in T (f64 for double, f32 for single and mixed);
//! sums over the pairs of one electron too, widened to f64 only at the `Component` interface.

use super::{Component, V3};
use crate::jastrow::{wrap, Radial};
use crate::Real;

/// Two-body term (spin-resolved) and optional one-body terms, one per nucleus, evaluated in T.
#[derive(Clone, Debug)]
pub struct TwoBody<T = f64> {
    /// Electrons 0..n_up are spin up, the rest spin down.
    pub n_up: usize,
    /// [like spins, opposite spins].
    pub pair: [Radial<T>; 2],
    /// (nucleus position, chi_A).
    pub nuclei: Vec<(V3, Radial<T>)>,
    /// Side of the periodic cube (minimum image), or None in open boundaries.
    pub side: Option<f64>,
}

impl TwoBody<f64> {
    /// The Padé u(r) = a r / (1 + b r) for both spin pairs, cusps fixed, open boundaries: the He/H2 form.
    pub fn pade(n_up: usize, b: f64) -> TwoBody {
        TwoBody { n_up, pair: [Radial::pade(0.25, &[], &[b]), Radial::pade(0.5, &[], &[b])], nuclei: vec![], side: None }
    }
}

impl<T: Real> TwoBody<T> {
    /// The same factor with its parameters in U.
    pub fn convert<U: Real>(&self) -> TwoBody<U> {
        TwoBody {
            n_up: self.n_up,
            pair: [self.pair[0].convert(), self.pair[1].convert()],
            nuclei: self.nuclei.iter().map(|(a, f)| (*a, f.convert())).collect(),
            side: self.side,
        }
    }

    fn pair_of(&self, i: usize, j: usize) -> &Radial<T> {
        &self.pair[((i < self.n_up) != (j < self.n_up)) as usize]
    }

    /// p - q in T, minimum image in a periodic cube.
    fn displacement(&self, p: V3, q: V3) -> [T; 3] {
        let d = [0, 1, 2].map(|k| T::of(p[k]) - T::of(q[k]));
        match self.side {
            Some(l) => d.map(|x| wrap(x, T::of(l), T::of(1.0 / l), true)),
            None => d,
        }
    }

    /// Every term touching electron i at position p: (sum of u, gradient, Laplacian).
    fn terms(&self, r: &[V3], i: usize, p: V3) -> (T, [T; 3], T) {
        let (mut u, mut g, mut l) = (T::zero(), [T::zero(); 3], T::zero());
        let two = T::of(2.0);
        let tiny = T::min_positive_value();
        let mut one = |f: &Radial<T>, d: [T; 3]| {
            let dist = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt().max(tiny);
            let (v, dv, d2v) = f.eval(dist);
            u += v;
            for k in 0..3 {
                g[k] += dv / dist * d[k];
            }
            l += d2v + two * dv / dist;
        };
        for (j, &rj) in r.iter().enumerate() {
            if j != i {
                one(self.pair_of(i, j), self.displacement(p, rj));
            }
        }
        for (a, f) in &self.nuclei {
            // open boundaries only: nuclei are not wrapped
            one(f, [0, 1, 2].map(|k| T::of(p[k]) - T::of(a[k])));
        }
        (u, g, l)
    }
}

impl<T: Real> Component for TwoBody<T> {
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        // summing every electron's terms counts each pair twice and each nuclear term once
        let (mut twice_pairs_plus_nuclear, mut nuclear) = (T::zero(), T::zero());
        for i in 0..r.len() {
            let (u, g, l) = self.terms(r, i, r[i]);
            grad[i] = super::add(grad[i], g.map(|x| x.f64()));
            lap[i] += l.f64();
            twice_pairs_plus_nuclear += u;
            for (a, f) in &self.nuclei {
                let d = [0, 1, 2].map(|k| T::of(r[i][k]) - T::of(a[k]));
                nuclear += f.eval((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()).0;
            }
        }
        ((T::of(0.5) * (twice_pairs_plus_nuclear + nuclear)).f64(), 1.0)
    }

    fn grad(&self, r: &[V3], i: usize) -> V3 {
        self.terms(r, i, r[i]).1.map(|x| x.f64())
    }

    fn ratio_grad(&self, r: &[V3], i: usize, new: V3) -> (f64, V3) {
        let (u_new, g, _) = self.terms(r, i, new);
        let (u_old, _, _) = self.terms(r, i, r[i]);
        ((u_new - u_old).exp().f64(), g.map(|x| x.f64()))
    }

    fn box_clone(&self) -> Box<dyn Component> {
        Box::new(self.clone())
    }
}
