//! One Slater determinant per spin, through the `determinant` kernel's generic CPU routines: the matrix A (row i =
//! the orbitals at electron i of this spin) is inverted with log|det| at every full evaluation (so Sherman-Morrison
//! round-off never accumulates past a step), a move's ratio and new gradient are dot products with a row of the
//! transposed inverse t = Ainv^T (the kernel's layout: contiguous reads), and an accepted move is the kernel's
//! Sherman-Morrison row update.
//!
//! grad_i ln D = sum_j grad phi_j(r_i) Ainv[j][i], and lap_i ln D = sum_j lap phi_j(r_i) Ainv[j][i] - |grad_i ln D|^2.
//!
//! Precision: orbitals are evaluated, and A and t stored and updated, in T; the full inversion runs in R (the
//! kernel's `invert_in`). Double is <f64, f64>, mixed <f32, f64> (paper 000: the f32 inverse is recomputed in f64
//! every step, which bounds the Sherman-Morrison drift), single <f32, f32>.

use super::{Component, V3};
use crate::determinant::cpu::{invert_in, rank1_row};
use crate::determinant::dot::dot;
use crate::{Real, Scalar};
use faer::Par;
use std::marker::PhantomData;

/// A set of real orbitals evaluated together at one point.
pub trait Orbitals: Clone + Send + Sync + 'static {
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Values v[j], gradients g[d * n + j] and Laplacians l[j] of the n orbitals at r, computed in T.
    fn vgl<T: Real>(&self, r: V3, v: &mut [T], g: &mut [T], l: &mut [T]);
}

/// The determinant of electrons `first..first + n` in orbitals `orb` (n of them): storage and evaluation in T,
/// inversion in R.
#[derive(Clone, Debug)]
pub struct Slater<O, T = f64, R = f64> {
    pub orb: O,
    pub first: usize,
    a: Vec<T>,
    t: Vec<T>,
    inversion: PhantomData<R>,
}

impl<O: Orbitals, T: Real, R: Scalar> Slater<O, T, R> {
    pub fn new(orb: O, first: usize) -> Self {
        let n = orb.len();
        Slater { orb, first, a: vec![T::zero(); n * n], t: vec![T::zero(); n * n], inversion: PhantomData }
    }

    fn mine(&self, i: usize) -> Option<usize> {
        (i >= self.first && i < self.first + self.orb.len()).then(|| i - self.first)
    }

    /// (values, gradients [d][j], Laplacians) at r.
    fn at(&self, r: V3) -> (Vec<T>, Vec<T>, Vec<T>) {
        let n = self.orb.len();
        let (mut v, mut g, mut l) = (vec![T::zero(); n], vec![T::zero(); 3 * n], vec![T::zero(); n]);
        self.orb.vgl(r, &mut v, &mut g, &mut l);
        (v, g, l)
    }

    /// Column q of the inverse dotted with a row vector x: sum_j x_j Ainv[j][q] = x . t[q].
    fn col(&self, q: usize, x: &[T]) -> T {
        let n = self.orb.len();
        dot::<T, T>(x, &self.t[q * n..(q + 1) * n])
    }

    fn grad_at(&self, q: usize, g: &[T]) -> [T; 3] {
        let n = self.orb.len();
        [0, 1, 2].map(|d| self.col(q, &g[d * n..(d + 1) * n]))
    }
}

impl<O: Orbitals, T: Real, R: Scalar> Component for Slater<O, T, R> {
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        let n = self.orb.len();
        let mut rows = Vec::with_capacity(n);
        for q in 0..n {
            let (v, g, l) = self.at(r[self.first + q]);
            self.a[q * n..(q + 1) * n].copy_from_slice(&v);
            rows.push((g, l));
        }
        // one walker per thread already: the inversion of this small matrix stays sequential
        let Ok((logdet, sign)) = invert_in::<T, R>(&self.a, &mut self.t, n, Par::Seq) else {
            // exactly on a node: psi = 0, which the walk never accepts; report it as such
            return (f64::NEG_INFINITY, 0.0);
        };
        for (q, (g, l)) in rows.iter().enumerate() {
            let gq = self.grad_at(q, g);
            let lq = self.col(q, l) - gq.iter().map(|&x| x * x).sum::<T>();
            let i = self.first + q;
            grad[i] = super::add(grad[i], gq.map(|x| x.f64()));
            lap[i] += lq.f64();
        }
        (logdet, sign)
    }

    fn grad(&self, r: &[V3], i: usize) -> V3 {
        let Some(q) = self.mine(i) else { return [0.0; 3] };
        let (_, g, _) = self.at(r[i]);
        self.grad_at(q, &g).map(|x| x.f64())
    }

    fn ratio_grad(&self, _r: &[V3], i: usize, new: V3) -> (f64, V3) {
        let Some(q) = self.mine(i) else { return (1.0, [0.0; 3]) };
        let (v, g, _) = self.at(new);
        let ratio = self.col(q, &v);
        (ratio.f64(), self.grad_at(q, &g).map(|x| (x / ratio).f64()))
    }

    fn accept(&mut self, _r: &[V3], i: usize, new: V3) {
        if let Some(q) = self.mine(i) {
            let n = self.orb.len();
            let (u, _, _) = self.at(new);
            let c = self.t[q * n..(q + 1) * n].to_vec();
            let ratio: T = dot(&u, &c);
            for (j, row) in self.t.chunks_mut(n).enumerate() {
                rank1_row(row, j, &u, &c, q, ratio);
            }
            self.a[q * n..(q + 1) * n].copy_from_slice(&u);
        }
    }

    fn box_clone(&self) -> Box<dyn Component> {
        Box::new(self.clone())
    }
}
