//! Delayed (Woodbury rank-k) updates of one transposed inverse on the CPU: the pending moves, the column of the
//! current inverse against them, the Schur-complement growth of B^-1 on an accept, and the rank-k apply through
//! faer's GEMM. The determinant kernel's CPU engine and the solid's CPU engine both keep one per matrix; their GPU
//! twins are common.cuh's `delayed_*` (the per-walker steps) and [`super::gpu::delayed_gemms`] (the apply; the
//! solid in mixed precision: [`super::gpu::delayed_y`] and solid.cu's delayed_w and delayed_update, which read the
//! f32 inverse where it is stored and do the products in f64).
//!
//! With t the transposed inverse at the start of the delay (row j = column j of A^-1, rows `ld` apart) and the
//! pending moves in slots l (row q_l of A changed by v_l), A^-1 now = A^-1 - U B^-1 V A^-1 with U = [t[q_l]] (kept as
//! the rows `ut`) and B = I + V U (see `super`'s module docs). A slot may hold, instead of the change v_l, the new
//! row u_l itself with `replaced` = q_l: then v_l = u_l - a_{q_l} and, a_{q_l} being a row of the matrix t inverts,
//! a_{q_l} . t[j] = delta_{q_l j}: every product with v_l is the product with u_l minus that delta. This is how a
//! caller that does not store A (the solid) delays its moves. Empty slots (a rejected move of a fixed window) have
//! zero rows and columns in B^-1, so they add nothing anywhere.
//!
//! Types: S the inverse's storage, P the pending moves' (V, U^T, B^-1) and the apply's products, A the accumulation
//! of the column and the Schur complement. The determinant kernel keeps P = S (its mixed precision: f32 products); the
//! solid P = A = f64 in mixed precision too: its Slater matrices are ill-conditioned (cond 1e3..1e5), and f32 products
//! summed over n terms (W = V t^T) made its energies drift by up to 1e-2 eps cond per step, 17 times Sherman-Morrison's
//! f64-accumulated update (`examples/solid_mixed.rs`). What must be f64 is the arithmetic and B^-1, not the rows: a
//! new row is rounded to S before it is stored and ut holds rows of the S inverse, so both are exact in S. The
//! solid's GPU engine keeps them in S (half the bytes a move reads) and widens them as it reads them, with the same
//! results bit for bit; its CPU engine keeps P = f64 (faer's GEMM takes one type). Where P is wider than S the apply
//! converts t in blocks of rows and rounds the updated rows to S once, as Sherman-Morrison rounds its (the GPU twin
//! converts each entry in registers as it reads it and rounds it once as it writes it back: no f64 copy of t in
//! memory).

use super::dot::{dot, dot_wide};
use crate::{Real, Scalar};
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use std::any::TypeId;

/// Rows of t converted at a time where P is wider than S.
const BLOCK: usize = 64;

/// The pending moves of one n x n matrix (see the module docs). S: storage, P: pending moves, A: accumulation.
pub struct Delayed<S, P, A> {
    n: usize,
    ld: usize,
    k: usize,
    /// Slots in use: the highest filled slot + 1.
    slots: usize,
    /// Row changes (or new rows, see `replaced`), `[slot][ld]`.
    v: Vec<P>,
    /// The rows t[q_l] of the inverse the delay started from, `[slot][ld]`.
    ut: Vec<P>,
    /// B^-1, `[slot][k]`; zero rows and columns for empty slots.
    binv: Vec<P>,
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
    /// Scratch of `apply`: W = V t^T and B^-T U^T, `[slot][n]`; rows of t in P.
    w: Vec<P>,
    yq: Vec<P>,
    rows: Vec<P>,
    _s: std::marker::PhantomData<S>,
}

/// `x` as a slice of U, where U is T.
fn same<T: 'static, U: 'static>(x: &mut [T]) -> Option<&mut [U]> {
    // SAFETY: T and U are the same type (same TypeId), so the slice is one of U.
    (TypeId::of::<T>() == TypeId::of::<U>()).then(|| unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<U>(), x.len()) })
}

impl<S: Scalar, P: Scalar, A: Real> Delayed<S, P, A> {
    /// Room for `k` pending moves on an n x n matrix whose rows are `ld` apart.
    pub fn new(n: usize, ld: usize, k: usize) -> Self {
        assert!(k >= 1 && ld >= n, "delayed: k >= 1 and ld >= n");
        let wide = TypeId::of::<S>() != TypeId::of::<P>();
        Delayed {
            n,
            ld,
            k,
            slots: 0,
            v: vec![P::zero(); k * ld],
            ut: vec![P::zero(); k * ld],
            binv: vec![P::zero(); k * k],
            replaced: vec![None; k],
            filled: vec![false; k],
            x: vec![A::zero(); k],
            p: vec![A::zero(); k],
            d: vec![A::zero(); k],
            y: vec![A::zero(); k],
            col: vec![A::zero(); n],
            w: vec![P::zero(); k * n],
            yq: vec![P::zero(); k * n],
            rows: vec![P::zero(); if wide { BLOCK * n } else { 0 }],
            _s: std::marker::PhantomData,
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
            self.p[l] = if self.filled[l] { dot_wide::<S, P, A>(&tq[..n], &self.v[l * ld..l * ld + n]) - if self.replaced[l] == Some(q) { A::one() } else { A::zero() } } else { A::zero() };
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
            self.d[l] = if self.filled[l] { dot_wide::<S, P, A>(&row[..n], &self.ut[l * ld..l * ld + n]) - one(replaced.is_some() && replaced == self.replaced[l]) } else { A::zero() };
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
                *bij = P::of((A::of(bij.f64()) + xi * self.y[j] / s).f64());
            }
            self.binv[i * k + m] = P::of((-xi / s).f64());
            self.binv[m * k + i] = P::of((-self.y[i] / s).f64());
        }
        self.binv[m * k + m] = P::of((A::one() / s).f64());
        for (x, &r) in self.v[m * ld..m * ld + n].iter_mut().zip(&row[..n]) {
            *x = P::of(r.f64());
        }
        for (x, &r) in self.ut[m * ld..m * ld + n].iter_mut().zip(&tq[..n]) {
            *x = P::of(r.f64());
        }
        self.replaced[m] = replaced;
        self.filled[m] = true;
        self.slots = m + 1;
    }

    /// Apply the pending moves to `t` (n rows `ld` apart): Y = B^-T U^T, W = V t^T (less the deltas of replaced
    /// rows), t -= W^T Y (faer products in P; where P is wider than S, block by block of rows of t converted to P
    /// and rounded back once), then clear them.
    pub fn apply(&mut self, t: &mut [S], par: Par) {
        let (n, ld, k, m) = (self.n, self.ld, self.k, self.slots);
        if m == 0 {
            return;
        }
        let ut = MatRef::from_row_major_slice_with_stride(&self.ut[..(m - 1) * ld + n], m, n, ld);
        let binv = MatRef::from_row_major_slice_with_stride(&self.binv[..(m - 1) * k + m], m, m, k);
        let mut y = MatMut::from_row_major_slice_mut(&mut self.yq[..m * n], m, n);
        matmul(y.as_mut(), Accum::Replace, binv.transpose(), ut, P::one(), par);
        let v = MatRef::from_row_major_slice_with_stride(&self.v[..(m - 1) * ld + n], m, n, ld);
        let t_len = (n - 1) * ld + n;
        match same::<S, P>(&mut t[..t_len]) {
            Some(tp) => update(tp, 0, n, ld, v, y.as_ref(), &self.replaced[..m], &self.filled[..m], &mut self.w, par),
            None => {
                for first in (0..n).step_by(BLOCK) {
                    let rows = BLOCK.min(n - first);
                    for r in 0..rows {
                        let src = &t[(first + r) * ld..(first + r) * ld + n];
                        self.rows[r * n..(r + 1) * n].iter_mut().zip(src).for_each(|(x, &s)| *x = P::of(s.f64()));
                    }
                    update(&mut self.rows[..rows * n], first, rows, n, v, y.as_ref(), &self.replaced[..m], &self.filled[..m], &mut self.w, par);
                    for r in 0..rows {
                        let dst = &mut t[(first + r) * ld..(first + r) * ld + n];
                        dst.iter_mut().zip(&self.rows[r * n..(r + 1) * n]).for_each(|(x, &p)| *x = S::of(p.f64()));
                    }
                }
            }
        }
        self.clear();
    }

    /// Drop the pending moves (after `apply`, or when the inverse is replaced).
    pub fn clear(&mut self) {
        let m = self.slots;
        self.binv[..m.saturating_sub(1) * self.k + m].iter_mut().for_each(|x| *x = P::zero());
        self.replaced[..m].iter_mut().for_each(|r| *r = None);
        self.filled[..m].iter_mut().for_each(|f| *f = false);
        self.slots = 0;
    }
}

/// Rows `first..first + rows` of t (here `rows` rows `ld` apart) less their part of W^T Y: W = V t^T for these rows
/// (less the deltas of the replaced rows among them), then the rank-m update.
#[allow(clippy::too_many_arguments)]
fn update<P: Scalar>(t: &mut [P], first: usize, rows: usize, ld: usize, v: MatRef<P>, y: MatRef<P>, replaced: &[Option<usize>], filled: &[bool], w: &mut [P], par: Par) {
    let (m, n) = (v.nrows(), v.ncols());
    let len = (rows - 1) * ld + n;
    let mut w = MatMut::from_row_major_slice_mut(&mut w[..m * rows], m, rows);
    let tm = MatRef::from_row_major_slice_with_stride(&t[..len], rows, n, ld);
    matmul(w.as_mut(), Accum::Replace, v, tm.transpose(), P::one(), par);
    for (l, q) in replaced.iter().enumerate() {
        if let (Some(q), true) = (*q, filled[l]) {
            if (first..first + rows).contains(&q) {
                w[(l, q - first)] -= P::one();
            }
        }
    }
    // faer 0.24's from_row_major_slice_with_stride_mut lays the matrix out column-major: the transposed column-major
    // view is the row-major matrix
    let tm = MatMut::from_column_major_slice_with_stride_mut(&mut t[..len], n, rows, ld).transpose_mut();
    matmul(tm, Accum::Add, w.as_ref().transpose(), y, -P::one(), par);
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
        let mut d = Delayed::<f64, f64, f64>::new(n, ld, 6);
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
