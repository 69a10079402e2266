//! The Jastrow factor exp(sum_{i<j} u_s(r_ij) + sum_{i,A} chi_A(r_iA)) of the trial wavefunction, with the radial
//! functors of the `jastrow` kernel ([`Radial`]: Padé, B-spline, CASINO u) evaluated pair by pair for one walker.
//!
//! The slope at r = 0 fixes Kato's cusps: +1/2 for electrons of opposite spin, +1/4 for like spins, and for an
//! electron-nucleus term -(Z - zeta) when the orbitals carry exponent zeta. In a periodic cube, pair distances are
//! minimum-image ones (the kernel's `wrap`), so functors must vanish with their derivatives at half the side: the
//! B-spline and CASINO forms do by construction.

use super::{add, norm, scale, sub, Component, V3};
use crate::jastrow::{wrap, Radial};

/// Two-body term (spin-resolved) and optional one-body terms, one per nucleus.
#[derive(Clone, Debug)]
pub struct TwoBody {
    /// Electrons 0..n_up are spin up, the rest spin down.
    pub n_up: usize,
    /// [like spins, opposite spins].
    pub pair: [Radial<f64>; 2],
    /// (nucleus position, chi_A).
    pub nuclei: Vec<(V3, Radial<f64>)>,
    /// Side of the periodic cube (minimum image), or None in open boundaries.
    pub side: Option<f64>,
}

impl TwoBody {
    /// The Padé u(r) = a r / (1 + b r) for both spin pairs, cusps fixed, open boundaries: the He/H2 form.
    pub fn pade(n_up: usize, b: f64) -> TwoBody {
        TwoBody { n_up, pair: [Radial::pade(0.25, &[], &[b]), Radial::pade(0.5, &[], &[b])], nuclei: vec![], side: None }
    }

    fn pair_of(&self, i: usize, j: usize) -> &Radial<f64> {
        &self.pair[((i < self.n_up) != (j < self.n_up)) as usize]
    }

    fn displacement(&self, d: V3) -> V3 {
        match self.side {
            Some(l) => d.map(|x| wrap(x, l, 1.0 / l, true)),
            None => d,
        }
    }

    /// Every term touching electron i at position p: (sum of u, gradient, Laplacian).
    fn terms(&self, r: &[V3], i: usize, p: V3) -> (f64, V3, f64) {
        let (mut u, mut g, mut l) = (0.0, [0.0; 3], 0.0);
        let mut one = |f: &Radial<f64>, d: V3| {
            let dist = norm(d).max(1e-300);
            let (v, dv, d2v) = f.eval(dist);
            u += v;
            g = add(g, scale(dv / dist, d));
            l += d2v + 2.0 * dv / dist;
        };
        for (j, &rj) in r.iter().enumerate() {
            if j != i {
                one(self.pair_of(i, j), self.displacement(sub(p, rj)));
            }
        }
        for (a, f) in &self.nuclei {
            one(f, sub(p, *a));
        }
        (u, g, l)
    }
}

impl Component for TwoBody {
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        // summing every electron's terms counts each pair twice and each nuclear term once
        let (mut twice_pairs_plus_nuclear, mut nuclear) = (0.0, 0.0);
        for i in 0..r.len() {
            let (u, g, l) = self.terms(r, i, r[i]);
            grad[i] = add(grad[i], g);
            lap[i] += l;
            twice_pairs_plus_nuclear += u;
            nuclear += self.nuclei.iter().map(|(a, f)| f.eval(norm(sub(r[i], *a))).0).sum::<f64>();
        }
        (0.5 * (twice_pairs_plus_nuclear + nuclear), 1.0)
    }

    fn grad(&self, r: &[V3], i: usize) -> V3 {
        self.terms(r, i, r[i]).1
    }

    fn ratio_grad(&self, r: &[V3], i: usize, new: V3) -> (f64, V3) {
        let (u_new, g, _) = self.terms(r, i, new);
        let (u_old, _, _) = self.terms(r, i, r[i]);
        ((u_new - u_old).exp(), g)
    }

    fn box_clone(&self) -> Box<dyn Component> {
        Box::new(self.clone())
    }
}
