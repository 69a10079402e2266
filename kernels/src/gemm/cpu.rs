//! The CPU kernels, on all cores (rayon).
//!
//! GEMM: the library product (faer, f32 and f64) is the fair baseline; the hand loops (plain with any input and
//! accumulator type, and Kahan in f32) exist for the precision study. They take blocks of rows per task, run the
//! inner loop along a row of B (contiguous, vectorised), and B (k x n) stays in cache across the rows of a block.
//! Rust neither reassociates nor contracts floating-point operations, so the Kahan steps run as written (a test
//! checks that the compensation survives).
//!
//! Basis: rayon over electrons; per function the three contracted sums S_q = sum a b^q exp(-b r^2) give the value,
//! gradient and Laplacian with the polynomial's derivatives (see gemm.cu for the formulas).

use super::basis::BasisSet;
use super::{Shape, COMPONENTS};
use crate::Real;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

/// Rows of C per task: B is read from cache once per row block.
const ROWS: usize = 4;

fn check_lengths<T, A>(a: &[T], b: &[T], c: &[A], s: Shape) {
    assert_eq!(a.len(), s.m * s.k, "gemm cpu: A length");
    assert_eq!(b.len(), s.k * s.n, "gemm cpu: B length");
    assert_eq!(c.len(), s.m * s.n, "gemm cpu: C length");
}

/// C = A B with inputs T and one accumulator of type A per entry, each step `c += a * b` rounded twice.
pub fn gemm_plain<T: Real, A: Real>(a: &[T], b: &[T], c: &mut [A], s: Shape) {
    check_lengths(a, b, c, s);
    if s.n == 0 {
        return;
    }
    c.par_chunks_mut(ROWS * s.n).enumerate().for_each(|(blk, cb)| {
        crate::dispatch!(plain_block(a, b, cb, blk * ROWS, s));
    });
}

#[inline(always)]
fn plain_block<T: Real, A: Real>(a: &[T], b: &[T], cb: &mut [A], row0: usize, s: Shape) {
    cb.fill(A::zero());
    for p in 0..s.k {
        let brow = &b[p * s.n..(p + 1) * s.n];
        for (r, crow) in cb.chunks_exact_mut(s.n).enumerate() {
            let x = A::of(a[(row0 + r) * s.k + p].f64());
            for (cj, &bj) in crow.iter_mut().zip(brow) {
                *cj += x * A::of(bj.f64());
            }
        }
    }
}

/// C = A B in f32 with Kahan-compensated sums (Algorithm 2: only the additions are compensated; each product is
/// rounded to f32 first).
pub fn gemm_kahan_f32(a: &[f32], b: &[f32], c: &mut [f32], s: Shape) {
    check_lengths(a, b, c, s);
    if s.n == 0 {
        return;
    }
    c.par_chunks_mut(ROWS * s.n).enumerate().for_each(|(blk, cb)| {
        let mut comp = vec![0.0f32; cb.len()];
        crate::dispatch!(kahan_block(a, b, cb, &mut comp, blk * ROWS, s));
    });
}

#[inline(always)]
fn kahan_block(a: &[f32], b: &[f32], cb: &mut [f32], comp: &mut [f32], row0: usize, s: Shape) {
    cb.fill(0.0);
    for p in 0..s.k {
        let brow = &b[p * s.n..(p + 1) * s.n];
        for (r, (srow, crow)) in cb.chunks_exact_mut(s.n).zip(comp.chunks_exact_mut(s.n)).enumerate() {
            let x = a[(row0 + r) * s.k + p];
            for ((sj, cj), &bj) in srow.iter_mut().zip(crow.iter_mut()).zip(brow) {
                let y = x * bj - *cj;
                let t = *sj + y;
                *cj = (t - *sj) - y;
                *sj = t;
            }
        }
    }
}

/// C = A B by faer's GEMM on all threads of the pool (the library baseline).
pub fn gemm_blas<T: Real + faer::traits::ComplexField>(a: &[T], b: &[T], c: &mut [T], s: Shape) {
    check_lengths(a, b, c, s);
    let am = MatRef::from_row_major_slice(a, s.m, s.k);
    let bm = MatRef::from_row_major_slice(b, s.k, s.n);
    let cm = MatMut::from_row_major_slice_mut(c, s.m, s.n);
    faer::linalg::matmul::matmul(cm, Accum::Replace, am, bm, T::one(), Par::rayon(0));
}

/// Value, gradient and Laplacian of all functions at `pos` (`[point][xyz]`) into `out`
/// (`[point][component][function]`): stored O, arithmetic T (storage first, as everywhere), each function by the
/// base's one evaluation ([`crate::basis::vgl`]).
pub fn basis<O: Real, T: Real>(set: &BasisSet, pos: &[f64], out: &mut [O]) {
    let nf = set.len();
    assert_eq!(out.len(), pos.len() / 3 * COMPONENTS * nf, "basis cpu: output length");
    if nf == 0 {
        return;
    }
    out.par_chunks_mut(COMPONENTS * nf).zip(pos.par_chunks(3)).for_each(|(row, r)| {
        crate::dispatch!(basis_point::<O, T>(set, [r[0], r[1], r[2]], row));
    });
}

#[inline(always)]
fn basis_point<O: Real, T: Real>(set: &BasisSet, r: [f64; 3], row: &mut [O]) {
    let nf = set.len();
    for (j, f) in set.functions.iter().enumerate() {
        let chi = crate::basis::vgl::<T>(f, set.centers[f.center], &set.exps, &set.coefs, r);
        for (k, x) in chi.into_iter().enumerate() {
            row[k * nf + j] = O::of(x.f64());
        }
    }
}
