//! The f64 reference, written from the textbook formulas and independently of the fast code: the inverse is kept
//! in its natural (not transposed) layout, inversion is LU with partial pivoting followed by one triangular solve
//! per column, and a delayed update is simply the sequence of Sherman-Morrison updates it must equal.
//! The elimination and the column solves run over rows/columns with rayon only so that N = 4096 stays practical.

use super::{row_of_step, singular_tolerance, DetError};
use rayon::prelude::*;

/// LU with partial pivoting of the row-major n x n `a`: (packed L\U, row permutation, log|det|, sign of det).
pub fn lu(a: &[f64], n: usize) -> Result<(Vec<f64>, Vec<usize>, f64, f64), usize> {
    let mut m = a.to_vec();
    let mut perm: Vec<usize> = (0..n).collect();
    let tol = singular_tolerance(n, a.iter().fold(0.0f64, |x, y| x.max(y.abs())), f64::EPSILON);
    let (mut logdet, mut sign) = (0.0, 1.0);
    for k in 0..n {
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
        let prow = &top[k * n..];
        below.par_chunks_mut(n).for_each(|row| {
            let l = row[k] / pivot;
            row[k] = l;
            for j in k + 1..n {
                row[j] -= l * prow[j];
            }
        });
    }
    Ok((m, perm, logdet, sign))
}

/// The inverse of `a` (row-major, natural layout), log|det| and sign, or the column where elimination broke down.
pub fn inverse(a: &[f64], n: usize) -> Result<(Vec<f64>, f64, f64), usize> {
    let (lu, perm, logdet, sign) = lu(a, n)?;
    // Column j of the inverse solves L U x = P e_j.
    let cols: Vec<Vec<f64>> = (0..n)
        .into_par_iter()
        .map(|j| {
            let mut x: Vec<f64> = perm.iter().map(|&p| if p == j { 1.0 } else { 0.0 }).collect();
            for i in 0..n {
                let s: f64 = (0..i).map(|k| lu[i * n + k] * x[k]).sum();
                x[i] -= s;
            }
            for i in (0..n).rev() {
                let s: f64 = (i + 1..n).map(|k| lu[i * n + k] * x[k]).sum();
                x[i] = (x[i] - s) / lu[i * n + i];
            }
            x
        })
        .collect();
    let mut inv = vec![0.0; n * n];
    for (j, c) in cols.iter().enumerate() {
        for i in 0..n {
            inv[i * n + j] = c[i];
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
