//! One Slater determinant per spin, through the `determinant` kernel's f64 routines: the matrix A (row i = the
//! orbitals at electron i of this spin) is inverted with log|det| at every full evaluation (so Sherman-Morrison
//! round-off never accumulates past a step), a move's ratio and new gradient are dot products with a column of the
//! inverse, and an accepted move is a Sherman-Morrison update.
//!
//! grad_i ln D = sum_j grad phi_j(r_i) Ainv[j][i], and lap_i ln D = sum_j lap phi_j(r_i) Ainv[j][i] - |grad_i ln D|^2.

use super::{Component, V3};
use crate::determinant::reference::{inverse, ratio, sherman_morrison};

/// A set of real orbitals evaluated together at one point.
pub trait Orbitals: Clone + Send + Sync + 'static {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Values v[j], gradients g[d * n + j] and Laplacians l[j] of the n orbitals at r.
    fn vgl(&self, r: V3, v: &mut [f64], g: &mut [f64], l: &mut [f64]);
}

/// The determinant of electrons `first..first + n` in orbitals `orb` (n of them).
#[derive(Clone, Debug)]
pub struct Slater<O> {
    pub orb: O,
    pub first: usize,
    a: Vec<f64>,
    inv: Vec<f64>,
}

impl<O: Orbitals> Slater<O> {
    pub fn new(orb: O, first: usize) -> Slater<O> {
        let n = orb.len();
        Slater { orb, first, a: vec![0.0; n * n], inv: vec![0.0; n * n] }
    }

    fn mine(&self, i: usize) -> Option<usize> {
        (i >= self.first && i < self.first + self.orb.len()).then(|| i - self.first)
    }

    /// (values, gradients [d][j], Laplacians) at r.
    fn at(&self, r: V3) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let n = self.orb.len();
        let (mut v, mut g, mut l) = (vec![0.0; n], vec![0.0; 3 * n], vec![0.0; n]);
        self.orb.vgl(r, &mut v, &mut g, &mut l);
        (v, g, l)
    }

    /// Column q of the inverse dotted with a row vector x: sum_j x_j Ainv[j][q].
    fn col(&self, q: usize, x: &[f64]) -> f64 {
        let n = self.orb.len();
        x.iter().enumerate().map(|(j, xj)| xj * self.inv[j * n + q]).sum()
    }
}

impl<O: Orbitals> Component for Slater<O> {
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        let n = self.orb.len();
        let mut rows = Vec::with_capacity(n);
        for q in 0..n {
            let (v, g, l) = self.at(r[self.first + q]);
            self.a[q * n..(q + 1) * n].copy_from_slice(&v);
            rows.push((g, l));
        }
        let Ok((inv, logdet, sign)) = inverse(&self.a, n) else {
            // exactly on a node: psi = 0, which the walk never accepts; report it as such
            return (f64::NEG_INFINITY, 0.0);
        };
        self.inv = inv;
        for (q, (g, l)) in rows.iter().enumerate() {
            let gq = [0, 1, 2].map(|d| self.col(q, &g[d * n..(d + 1) * n]));
            grad[self.first + q] = super::add(grad[self.first + q], gq);
            lap[self.first + q] += self.col(q, l) - super::dot(gq, gq);
        }
        (logdet, sign)
    }

    fn grad(&self, r: &[V3], i: usize) -> V3 {
        let Some(q) = self.mine(i) else { return [0.0; 3] };
        let n = self.orb.len();
        let (_, g, _) = self.at(r[i]);
        [0, 1, 2].map(|d| self.col(q, &g[d * n..(d + 1) * n]))
    }

    fn ratio_grad(&self, _r: &[V3], i: usize, new: V3) -> (f64, V3) {
        let Some(q) = self.mine(i) else { return (1.0, [0.0; 3]) };
        let (v, g, _) = self.at(new);
        ratio(&self.inv, self.orb.len(), q, &v, &g)
    }

    fn accept(&mut self, _r: &[V3], i: usize, new: V3) {
        if let Some(q) = self.mine(i) {
            let (v, _, _) = self.at(new);
            sherman_morrison(&mut self.a, &mut self.inv, self.orb.len(), q, &v);
        }
    }

    fn box_clone(&self) -> Box<dyn Component> {
        Box::new(self.clone())
    }
}
