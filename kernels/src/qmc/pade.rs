//! The Padé Jastrow factor exp(sum_{i<j} u(r_ij) + sum_{i,A} u_A(r_iA)) with u(r) = a r / (1 + b r).
//!
//! The slope at r = 0 is a, fixed by Kato's cusp conditions: a = 1/2 for electrons of opposite spin, 1/4 for like
//! spins, and for the electron-nucleus term a = -(Z - zeta) when the orbitals carry exponent zeta (so the total
//! slope is -Z). b is the one free parameter of each term. The `jastrow` kernel's B-spline and CASINO functors
//! replace this component later; this is the form He and H2 need.

use super::{add, norm, scale, sub, Component, V3};

/// u(r) = a r / (1 + b r).
#[derive(Clone, Copy, Debug)]
pub struct Pade {
    pub a: f64,
    pub b: f64,
}

impl Pade {
    /// (u, u', u'').
    pub fn vdl(&self, r: f64) -> (f64, f64, f64) {
        let d = 1.0 / (1.0 + self.b * r);
        (self.a * r * d, self.a * d * d, -2.0 * self.a * self.b * d * d * d)
    }
    pub fn value(&self, r: f64) -> f64 {
        self.a * r / (1.0 + self.b * r)
    }
}

/// Two-body term (spin-resolved cusp) and optional one-body terms, one per nucleus.
#[derive(Clone, Debug)]
pub struct PadeJastrow {
    /// Electrons 0..n_up are spin up, the rest spin down.
    pub n_up: usize,
    pub like: Pade,
    pub unlike: Pade,
    /// (nucleus position, u_A).
    pub nuclei: Vec<(V3, Pade)>,
}

impl PadeJastrow {
    /// Two-body only, cusp slopes fixed, one b for both spin pairs.
    pub fn two_body(n_up: usize, b: f64) -> PadeJastrow {
        PadeJastrow { n_up, like: Pade { a: 0.25, b }, unlike: Pade { a: 0.5, b }, nuclei: vec![] }
    }

    fn pair(&self, i: usize, j: usize) -> &Pade {
        if (i < self.n_up) == (j < self.n_up) {
            &self.like
        } else {
            &self.unlike
        }
    }

    /// Every term touching electron i at position p: (sum of u, gradient, Laplacian).
    fn terms(&self, r: &[V3], i: usize, p: V3) -> (f64, V3, f64) {
        let (mut u, mut g, mut l) = (0.0, [0.0; 3], 0.0);
        let mut one = |f: &Pade, d: V3| {
            let dist = norm(d).max(1e-300);
            let (v, dv, d2v) = f.vdl(dist);
            u += v;
            g = add(g, scale(dv / dist, d));
            l += d2v + 2.0 * dv / dist;
        };
        for (j, &rj) in r.iter().enumerate() {
            if j != i {
                one(self.pair(i, j), sub(p, rj));
            }
        }
        for (a, f) in &self.nuclei {
            one(f, sub(p, *a));
        }
        (u, g, l)
    }
}

impl Component for PadeJastrow {
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        // summing every electron's terms counts each pair twice and each nuclear term once
        let (mut twice_pairs_plus_nuclear, mut nuclear) = (0.0, 0.0);
        for i in 0..r.len() {
            let (u, g, l) = self.terms(r, i, r[i]);
            grad[i] = add(grad[i], g);
            lap[i] += l;
            twice_pairs_plus_nuclear += u;
            nuclear += self.nuclei.iter().map(|(a, f)| f.value(norm(sub(r[i], *a)))).sum::<f64>();
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
