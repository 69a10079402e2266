//! Delayed (Woodbury rank-k) updates of one transposed inverse on the CPU: the pending moves, the column of the
//! current inverse against them, the Schur-complement growth of B^-1 on an accept, and the rank-k apply through
//! faer's GEMM. The determinant kernel's CPU engine and the solid's CPU engine both keep one per matrix; their GPU
//! twins are `delayed.cuh` (the per-walker steps) and [`super::gpu::delayed_gemms`] (the apply).
//!
//! With t the transposed inverse at the start of the delay (row j = column j of A^-1, rows `ld` apart) and the
//! pending moves in slots l (row q_l of A changed by v_l), A^-1 now = A^-1 - U B^-1 V A^-1 with U = [t[q_l]] (kept as
//! the rows `ut`) and B = I + V U (see `super`'s module docs). A slot may hold, instead of the change v_l, the new
//! row u_l itself with `replaced` = q_l: then v_l = u_l - a_{q_l} and, a_{q_l} being a row of the matrix t inverts,
//! a_{q_l} . t[j] = delta_{q_l j}: every product with v_l is the product with u_l minus that delta. This is how a
//! caller that does not store A (the solid) delays its moves. Empty slots (a rejected move of a fixed window) have
//! zero rows and columns in B^-1, so they add nothing anywhere.

use super::cpu::{dot, Scalar};
use crate::Real;
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

/// The pending moves of one n x n matrix (see the module docs). S: storage, A: accumulation.
pub struct Delayed<S, A> {
    n: usize,
    ld: usize,
    k: usize,
    /// Slots in use: the highest filled slot + 1.
    slots: usize,
    /// Row changes (or new rows, see `replaced`), `[slot][ld]`.
    v: Vec<S>,
    /// The rows t[q_l] of the inverse the delay started from, `[slot][ld]`.
    ut: Vec<S>,
    /// B^-1, `[slot][k]`; zero rows and columns for empty slots.
    binv: Vec<S>,
    /// Some(q): the slot holds the new row replacing row q of A.
    replaced: Vec<Option<usize>>,
    /// Slots below `slots` that hold a move (a fixed window leaves the slots of rejected moves empty).
    filled: Vec<bool>,
    /// x = B^-1 p, p_l = v_l . t[q] of the last `column` (what `grow` needs of it).
    x: Vec<A>,
    p: Vec<A>,
    /// Scratch of `grow`.
    d: Vec<A>,
    y: Vec<A>,
    /// Column q of the current inverse, from the last `column`.
    col: Vec<A>,
    /// Scratch of `apply`: W = V t^T and B^-T U^T, `[slot][n]`.
    w: Vec<S>,
    yq: Vec<S>,
}

impl<S: Scalar, A: Real> Delayed<S, A> {
    /// Room for `k` pending moves on an n x n matrix whose rows are `ld` apart.
    pub fn new(n: usize, ld: usize, k: usize) -> Self {
        assert!(k >= 1 && ld >= n, "delayed: k >= 1 and ld >= n");
        Delayed {
            n,
            ld,
            k,
            slots: 0,
            v: vec![S::zero(); k * ld],
            ut: vec![S::zero(); k * ld],
            binv: vec![S::zero(); k * k],
            replaced: vec![None; k],
            filled: vec![false; k],
            x: vec![A::zero(); k],
            p: vec![A::zero(); k],
            d: vec![A::zero(); k],
            y: vec![A::zero(); k],
            col: vec![A::zero(); n],
            w: vec![S::zero(); k * n],
            yq: vec![S::zero(); k * n],
        }
    }

    /// The most pending moves.
    pub fn capacity(&self) -> usize {
        self.k
    }

    /// Slots in use (0: nothing pending).
    pub fn pending(&self) -> usize {
        self.slots
    }

    /// Column q of the current inverse, t[q] - U B^-1 (V t[q]) (`tq` = t[q], n entries; O(slots n)); kept for the
    /// `grow` of an accept of this move.
    #[inline(always)]
    pub fn column(&mut self, tq: &[S], q: usize) -> &[A] {
        let (n, ld, m) = (self.n, self.ld, self.slots);
        for l in 0..m {
            self.p[l] = if self.filled[l] { dot::<S, A>(&self.v[l * ld..l * ld + n], &tq[..n]) - if self.replaced[l] == Some(q) { A::one() } else { A::zero() } } else { A::zero() };
        }
        for i in 0..m {
            self.x[i] = (0..m).map(|l| A::of(self.binv[i * self.k + l].f64()) * self.p[l]).sum();
        }
        for (c, &t) in self.col.iter_mut().zip(&tq[..n]) {
            *c = A::of(t.f64());
        }
        for l in (0..m).filter(|&l| self.x[l] != A::zero()) {
            let xl = self.x[l];
            for (c, &u) in self.col.iter_mut().zip(&self.ut[l * ld..l * ld + n]) {
                *c -= A::of(u.f64()) * xl;
            }
        }
        &self.col
    }

    /// The column of the last `column` call.
    pub fn last_column(&self) -> &[A] {
        &self.col
    }

    /// Accept the move of the last `column` call (row q, `tq` = the t[q] passed there) into slot `slot` (at or after
    /// the slots in use, below the capacity): `row` is the row change, or with `replaced` = Some(q) the new row.
    /// B^-1 grows by its Schur complement (O(slot^2 + slot n)).
    #[inline(always)]
    pub fn grow(&mut self, slot: usize, row: &[S], tq: &[S], replaced: Option<usize>) {
        assert!(slot >= self.slots && slot < self.k, "delayed: slot {slot} out of order (in use {}, capacity {})", self.slots, self.k);
        let (n, ld, k, m) = (self.n, self.ld, self.k, slot);
        let one = |c: bool| if c { A::one() } else { A::zero() };
        // slots between the used ones and this one are empty: zero x and d there
        for l in self.slots..m {
            self.x[l] = A::zero();
            self.filled[l] = false;
        }
        for l in 0..m {
            self.d[l] = if self.filled[l] { dot::<S, A>(&row[..n], &self.ut[l * ld..l * ld + n]) - one(replaced.is_some() && replaced == self.replaced[l]) } else { A::zero() };
        }
        let beta = A::one() + dot::<S, A>(&row[..n], &tq[..n]) - one(replaced.is_some());
        let b = |i: usize, j: usize| A::of(self.binv[i * k + j].f64());
        for j in 0..m {
            self.y[j] = (0..m).map(|l| self.d[l] * b(l, j)).sum();
        }
        let s = beta - (0..m).map(|l| self.d[l] * self.x[l]).sum::<A>();
        for i in 0..m {
            let xi = self.x[i];
            for j in 0..m {
                let bij = &mut self.binv[i * k + j];
                *bij = S::of((A::of(bij.f64()) + xi * self.y[j] / s).f64());
            }
            self.binv[i * k + m] = S::of((-xi / s).f64());
            self.binv[m * k + i] = S::of((-self.y[i] / s).f64());
        }
        self.binv[m * k + m] = S::of((A::one() / s).f64());
        self.v[m * ld..m * ld + n].copy_from_slice(&row[..n]);
        self.ut[m * ld..m * ld + n].copy_from_slice(&tq[..n]);
        self.replaced[m] = replaced;
        self.filled[m] = true;
        self.slots = m + 1;
    }

    /// Apply the pending moves to `t` (n rows `ld` apart): W = V t^T (less the deltas of replaced rows),
    /// Y = B^-T U^T, t -= W^T Y (three faer products in S), then clear them.
    pub fn apply(&mut self, t: &mut [S], par: Par) {
        let (n, ld, k, m) = (self.n, self.ld, self.k, self.slots);
        if m == 0 {
            return;
        }
        let tm = MatRef::from_row_major_slice_with_stride(&t[..(n - 1) * ld + n], n, n, ld);
        let v = MatRef::from_row_major_slice_with_stride(&self.v[..(m - 1) * ld + n], m, n, ld);
        let ut = MatRef::from_row_major_slice_with_stride(&self.ut[..(m - 1) * ld + n], m, n, ld);
        let binv = MatRef::from_row_major_slice_with_stride(&self.binv[..(m - 1) * k + m], m, m, k);
        let mut w = MatMut::from_row_major_slice_mut(&mut self.w[..m * n], m, n);
        matmul(w.as_mut(), Accum::Replace, v, tm.transpose(), S::one(), par);
        for (l, q) in self.replaced[..m].iter().enumerate() {
            if let (Some(q), true) = (*q, self.filled[l]) {
                w[(l, q)] -= S::one();
            }
        }
        let mut y = MatMut::from_row_major_slice_mut(&mut self.yq[..m * n], m, n);
        matmul(y.as_mut(), Accum::Replace, binv.transpose(), ut, S::one(), par);
        // faer 0.24's from_row_major_slice_with_stride_mut lays the matrix out column-major: the transposed
        // column-major view is the row-major matrix
        let tm = MatMut::from_column_major_slice_with_stride_mut(&mut t[..(n - 1) * ld + n], n, n, ld).transpose_mut();
        matmul(tm, Accum::Add, w.as_ref().transpose(), y.as_ref(), -S::one(), par);
        self.clear();
    }

    /// Drop the pending moves (after `apply`, or when the inverse is replaced).
    pub fn clear(&mut self) {
        let m = self.slots;
        self.binv[..m.saturating_sub(1) * self.k + m].iter_mut().for_each(|x| *x = S::zero());
        self.replaced[..m].iter_mut().for_each(|r| *r = None);
        self.filled[..m].iter_mut().for_each(|f| *f = false);
        self.slots = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::determinant::{random_matrices, reference};

    /// A window of moves of new rows (`replaced`), every other one rejected (empty slots), rows `ld` apart with
    /// padding: each ratio is the reference's det(A')/det(A) of the matrix so far, and after the apply the inverse is
    /// the reference inverse of the changed matrix. A wrong delta, slot or apply fails it.
    #[test]
    fn new_rows_in_a_window_with_empty_slots_give_the_inverse() {
        let (n, ld) = (12, 16);
        let mut a = random_matrices(n, 1, 3);
        let prop = random_matrices(n, 1, 4);
        let (inv, _, _) = reference::inverse(&a, n).unwrap();
        let tr = reference::transpose(&inv, n);
        let mut t = vec![f64::NAN; n * ld];
        for i in 0..n {
            t[i * ld..i * ld + n].copy_from_slice(&tr[i * n..(i + 1) * n]);
        }
        let mut d = Delayed::<f64, f64>::new(n, ld, 6);
        for (slot, q) in (3..9).enumerate() {
            let u = &prop[q * n..(q + 1) * n];
            let col = d.column(&t[q * ld..q * ld + n], q).to_vec();
            let ratio: f64 = u.iter().zip(&col).map(|(x, c)| x * c).sum();
            let (_, l0, s0) = reference::inverse(&a, n).unwrap();
            let mut a1 = a.clone();
            a1[q * n..(q + 1) * n].copy_from_slice(u);
            let (_, l1, s1) = reference::inverse(&a1, n).unwrap();
            let exact = s0 * s1 * (l1 - l0).exp();
            assert!((ratio - exact).abs() < 1e-12 * exact.abs(), "slot {slot}: ratio {ratio} vs {exact}");
            if slot % 2 == 0 {
                let tq: Vec<f64> = t[q * ld..q * ld + n].to_vec();
                d.grow(slot, u, &tq, Some(q));
                a = a1;
            }
        }
        d.apply(&mut t, Par::Seq);
        assert_eq!(d.pending(), 0);
        let (inv, _, _) = reference::inverse(&a, n).unwrap();
        let tr = reference::transpose(&inv, n);
        for i in 0..n {
            for j in 0..n {
                assert!((t[i * ld + j] - tr[i * n + j]).abs() < 1e-12, "t[{i}][{j}] {} vs {}", t[i * ld + j], tr[i * n + j]);
            }
            assert!(t[i * ld + n].is_nan(), "the padding is left alone");
        }
    }
}
