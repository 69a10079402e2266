//! The f64 reference, written from the textbook formulas and independently of the fast code (faer on the CPU,
//! cuBLAS/cuSOLVER on the GPU): the inverse is kept in its natural (not transposed) layout, inversion is LU with
//! partial pivoting followed by forward and back substitution of the permuted identity, and a delayed update is
//! simply the sequence of Sherman-Morrison updates it must equal.
//!
//! The LU is the textbook right-looking elimination with one change of loop order that leaves every entry's
//! arithmetic as it was: the updates of the columns right of a panel of [`PANEL`] pivots are applied after the
//! panel is factored, one row at a time (each entry still sees its updates in pivot order, so the factors are
//! bit for bit those of the unblocked loop), so a row of the trailing matrix is read once per panel instead of once
//! per pivot. The substitutions run on strips of [`STRIP`] right-hand sides at a time for the same reason. Both run
//! over rows / strips with rayon so that N = 4096 stays practical: about 2.7 N^3 flops, measured 17 s of CPU time on
//! one thread of the 2-core build machine at N = 4096 (faer: 3.4 s; the unblocked loops before took 1.2 s at
//! N = 1024 against 0.3 s now).
//!
//! Accuracy: the test matrices are diagonally dominant (condition number below about 4, growth factor 1), so the
//! computed inverse is within about sqrt(N) f64 epsilons of the exact one normwise (1e-14 at N = 4096), two orders
//! below the tightest inversion tolerance the mini-app applies (64 eps sqrt(N) = 9e-13 there); the tests compare
//! it with closed-form inverses to that level.

use super::{row_of_step, singular_tolerance, DetError};
use rayon::prelude::*;

/// Pivots per panel of the LU (rows of U kept in cache while the rows below are updated).
pub const PANEL: usize = 32;
/// Right-hand sides solved together by the substitutions.
pub const STRIP: usize = 64;

/// row -= l * pivot_row, entry by entry.
#[inline]
fn axpy(row: &mut [f64], l: f64, pivot_row: &[f64]) {
    for (x, p) in row.iter_mut().zip(pivot_row) {
        *x -= l * p;
    }
}

/// LU with partial pivoting of the row-major n x n `a`: (packed L\U, row permutation, log|det|, sign of det), so
/// that row i of L U is row `perm[i]` of `a`; or the column where a pivot vanished.
pub fn lu(a: &[f64], n: usize) -> Result<(Vec<f64>, Vec<usize>, f64, f64), usize> {
    assert_eq!(a.len(), n * n, "lu: the matrix is not n x n");
    let mut m = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let tol = singular_tolerance(n, a.iter().fold(0.0f64, |x, y| x.max(y.abs())), f64::EPSILON);
    let (mut logdet, mut sign) = (0.0, 1.0);
    for k0 in (0..n).step_by(PANEL) {
        let k1 = (k0 + PANEL).min(n);
        // 1. The panel (columns k0..k1): elimination with row exchanges of whole rows, updates within the panel.
        for k in k0..k1 {
            let p = (k..n).max_by(|&x, &y| m[x * n + k].abs().total_cmp(&m[y * n + k].abs())).unwrap();
            let pivot = m[p * n + k];
            if pivot.abs() <= tol || !pivot.is_finite() {
                return Err(k);
            }
            if p != k {
                for j in 0..n {
                    m.swap(k * n + j, p * n + j);
                }
                perm.swap(k, p);
                sign = -sign;
            }
            logdet += pivot.abs().ln();
            sign *= pivot.signum();
            let (top, below) = m.split_at_mut((k + 1) * n);
            let prow = &top[k * n + k + 1..k * n + k1];
            below.par_chunks_mut(n).for_each(|row| {
                let l = row[k] / pivot;
                row[k] = l;
                axpy(&mut row[k + 1..k1], l, prow);
            });
        }
        // 2. The panel's rows right of it: the same eliminations, in pivot order (rows of U).
        for k in k0..k1 {
            let (top, rest) = m.split_at_mut((k + 1) * n);
            let prow = &top[k * n + k1..(k + 1) * n];
            for i in k + 1..k1 {
                let row = &mut rest[(i - k - 1) * n..(i - k) * n];
                let l = row[k];
                axpy(&mut row[k1..], l, prow);
            }
        }
        // 3. The rows below, right of the panel: every elimination of the panel, in pivot order.
        let (top, below) = m.split_at_mut(k1 * n);
        let top = &top[k0 * n..];
        below.par_chunks_mut(n).for_each(|row| {
            for k in k0..k1 {
                let l = row[k];
                axpy(&mut row[k1..], l, &top[(k - k0) * n + k1..(k - k0 + 1) * n]);
            }
        });
    }
    Ok((m, perm, logdet, sign))
}

/// The inverse of `a` (row-major, natural layout), log|det| and sign, or the column where elimination broke down.
pub fn inverse(a: &[f64], n: usize) -> Result<(Vec<f64>, f64, f64), usize> {
    let (lu, perm, logdet, sign) = lu(a, n)?;
    // A^-1 = U^-1 L^-1 P: the columns j0..j1 of the inverse solve L U X = P I[:, j0..j1], a strip at a time.
    let strips: Vec<Vec<f64>> = (0..n)
        .step_by(STRIP)
        .collect::<Vec<_>>()
        .into_par_iter()
        .map(|j0| {
            let w = STRIP.min(n - j0);
            // x[i][c] = column j0 + c of the right-hand side: row i of P I is e_perm[i]
            let mut x = vec![0.0; n * w];
            for (i, &p) in perm.iter().enumerate() {
                if (j0..j0 + w).contains(&p) {
                    x[i * w + p - j0] = 1.0;
                }
            }
            // forward substitution with the unit lower triangle: x_i -= L_ik x_k, k < i
            for i in 1..n {
                let (done, rest) = x.split_at_mut(i * w);
                let xi = &mut rest[..w];
                for k in 0..i {
                    axpy(xi, lu[i * n + k], &done[k * w..(k + 1) * w]);
                }
            }
            // back substitution with the upper triangle: x_i = (x_i - U_ik x_k, k > i) / U_ii
            for i in (0..n).rev() {
                let (head, done) = x.split_at_mut((i + 1) * w);
                let xi = &mut head[i * w..];
                for k in i + 1..n {
                    axpy(xi, lu[i * n + k], &done[(k - i - 1) * w..(k - i) * w]);
                }
                let d = lu[i * n + i];
                xi.iter_mut().for_each(|v| *v /= d);
            }
            x
        })
        .collect();
    let mut inv = vec![0.0; n * n];
    for (s, x) in strips.iter().enumerate() {
        let (j0, w) = (s * STRIP, x.len() / n);
        for i in 0..n {
            inv[i * n + j0..i * n + j0 + w].copy_from_slice(&x[i * w..(i + 1) * w]);
        }
    }
    Ok((inv, logdet, sign))
}

/// Natural-layout inverses of a batch, log|det| and signs.
pub type Inverses = (Vec<f64>, Vec<f64>, Vec<f64>);

/// Inverses of a batch `[walker][row][col]`: the natural-layout inverses, log|det| and signs.
pub fn invert_all(a: &[f64], n: usize) -> Result<Inverses, DetError> {
    let mut inv = Vec::with_capacity(a.len());
    let (mut logdet, mut sign) = (vec![], vec![]);
    for (w, m) in a.chunks(n * n).enumerate() {
        let (i, l, s) = inverse(m, n).map_err(|column| DetError::Singular { walker: w, column })?;
        inv.extend(i);
        logdet.push(l);
        sign.push(s);
    }
    Ok((inv, logdet, sign))
}

/// Ratio det(A')/det(A) for row q replaced by u, and the gradient ratios (grad . column q) / ratio.
pub fn ratio(inv: &[f64], n: usize, q: usize, u: &[f64], grad: &[f64]) -> (f64, [f64; 3]) {
    let col = |v: &[f64]| -> f64 { (0..n).map(|j| v[j] * inv[j * n + q]).sum() };
    let r = col(u);
    (r, [0, 1, 2].map(|d| col(&grad[d * n..(d + 1) * n]) / r))
}

/// Sherman-Morrison: row q of `a` becomes u and `inv` becomes the inverse of the new matrix:
/// Ainv' = Ainv - (Ainv e_q)(u^T Ainv - e_q^T) / (u^T Ainv e_q).
pub fn sherman_morrison(a: &mut [f64], inv: &mut [f64], n: usize, q: usize, u: &[f64]) {
    let c: Vec<f64> = (0..n).map(|i| inv[i * n + q]).collect();
    // w = u^T Ainv, accumulated row by row (contiguous reads)
    let mut w = vec![0.0; n];
    for (i, &ui) in u.iter().enumerate() {
        for (wj, &x) in w.iter_mut().zip(&inv[i * n..(i + 1) * n]) {
            *wj += ui * x;
        }
    }
    let r = w[q];
    w[q] -= 1.0;
    for i in 0..n {
        for j in 0..n {
            inv[i * n + j] -= c[i] * w[j] / r;
        }
    }
    a[q * n..(q + 1) * n].copy_from_slice(u);
}

/// One walker's move sequence (steps `steps`, its accept flags `flags[step]`), proposals `prop` (row q = the
/// proposal for electron q). Returns the ratio and gradient ratios of the last step.
pub fn moves(a: &mut [f64], inv: &mut [f64], n: usize, prop: &[f64], grad: &[f64], steps: std::ops::Range<usize>, flags: &[i32]) -> (f64, [f64; 3]) {
    let mut last = (0.0, [0.0; 3]);
    for s in steps {
        let q = row_of_step(s, n);
        let u = &prop[q * n..(q + 1) * n];
        last = ratio(inv, n, q, u, grad);
        if flags[s] != 0 {
            sherman_morrison(a, inv, n, q, u);
        }
    }
    last
}

/// The transposed layout the fast code stores.
pub fn transpose(m: &[f64], n: usize) -> Vec<f64> {
    let mut t = vec![0.0; m.len()];
    for (src, dst) in m.chunks(n * n).zip(t.chunks_mut(n * n)) {
        for i in 0..n {
            for j in 0..n {
                dst[j * n + i] = src[i * n + j];
            }
        }
    }
    t
}
