//! Slater determinants: ratios for a one-row change, Sherman-Morrison rank-1 and delayed (Woodbury rank-k) updates
//! of the inverse, and full inversion with log|det| (papers 000, 001; QMCPACK's `DelayedUpdate`).
//!
//! Each walker holds one N x N Slater matrix A (row i = the N orbitals at electron i) and its inverse, for one spin.
//! Moving electron q replaces row q by a proposed row u. The inverse is stored TRANSPOSED, `t[j][i] = Ainv[i][j]`
//! (QMCPACK's `psiMinv` layout), all walkers in one allocation `[walker][row][col]`, so
//! - the ratio det(A')/det(A) = sum_j u_j Ainv[j][q] = u . t[q] reads one contiguous row (coalesced on the GPU);
//! - the gradient ratio is the same dot product with the gradient rows of the proposal, divided by the ratio;
//! - the rank-1 update t -= ((t u - e_q) / ratio) (x) t[q] writes rows with the column index fastest (coalesced).
//!
//! Delayed update (McDaniel et al. 2017, QMCPACK): after m accepted moves with row changes v_j = u_j - a_{q_j},
//! A_m = A_0 + E V with E = [e_{q_1} ... e_{q_m}], and by Woodbury Ainv_m = Ainv - U B^-1 V Ainv with U = Ainv E
//! (rows of t, kept as `ut`) and B = I + V U (m x m, its inverse kept and grown by a Schur complement per accept).
//! A ratio during the delay costs O(mN): column q of Ainv_m = t[q] - U B^-1 (V t[q]). Every k moves the pending
//! moves are applied to t as three matrix products (faer on the CPU, cuBLAS strided-batched GEMM on the GPU):
//! W = V t^T, Y = B^-T ut, t -= W^T Y: 4kN^2 flops at the arithmetic intensity of a GEMM, where k rank-1 updates
//! would stream t 2k times.
//!
//! Inversion: LU with partial pivoting in faer on the CPU, cuBLAS batched LU (getrf/getri) on the GPU, in double; a matrix whose pivot vanishes (relative to its largest entry) is
//! reported singular instead of producing NaNs.
//!
//! Precision: `double` (f64 everywhere), `single` (f32 storage, arithmetic and inversion), `mixed` (f32 storage,
//! ratios and updates with f64 accumulation of the dot products, inversion in f64 from the f32 matrix, and a
//! re-inversion every `recompute` moves to reset the drift of the single-precision updates).
//!
//! Test matrices are strictly diagonally dominant, so well conditioned: off-diagonal entries uniform in
//! (-1/N, 1/N) (row sums of magnitudes below 1), diagonal entries of random sign and magnitude in [1, 2). A proposal
//! for row q is drawn the same way with its large entry in column q, so every matrix along a move sequence stays
//! diagonally dominant (condition number below about 4) and every ratio is far from zero.

pub mod cpu;
pub mod delayed;
pub mod dot;
pub mod gpu;
pub mod reference;

use crate::gpu::GpuError;
use crate::rng;
use rand::Rng;

/// Why a determinant operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DetError {
    #[error("the matrix of walker {walker} is singular (pivot {column} vanishes): it has no inverse")]
    Singular { walker: usize, column: usize },
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// Largest delay (rank of a delayed update) the kernels support: the GPU kernels keep B^-1 p in shared memory.
pub const MAX_DELAY: usize = 64;

/// A pivot is zero when below this many epsilons of the matrix's largest entry (times N).
pub fn singular_tolerance(n: usize, max_abs: f64, eps: f64) -> f64 {
    n as f64 * eps * max_abs
}

/// Entry (i, j) of a diagonally dominant row drawn from a uniform x in [-1, 1) (see module docs).
#[inline]
fn dominant(x: f64, i: usize, j: usize, n: usize) -> f64 {
    if i == j {
        x.signum() * (1.0 + x.abs())
    } else {
        x / n as f64
    }
}

/// `count` row-major n x n diagonally dominant matrices `[matrix][row][col]` (walkers' Slater matrices, or the
/// proposals: row q of proposal matrix w is walker w's proposed row for electron q).
pub fn random_matrices(n: usize, count: usize, seed: u64) -> Vec<f64> {
    let mut m = vec![0.0; n * n * count];
    rng::fill_uniform(&mut m, seed, -1.0, 1.0, |x| x);
    for (idx, x) in m.iter_mut().enumerate() {
        let (i, j) = ((idx / n) % n, idx % n);
        *x = dominant(*x, i, j, n);
    }
    m
}

/// Gradient rows of the proposals, `[walker][xyz][n]`, uniform in [-1, 1) (their values do not affect stability).
pub fn random_gradients(n: usize, walkers: usize, seed: u64) -> Vec<f64> {
    let mut g = vec![0.0; 3 * n * walkers];
    rng::fill_uniform(&mut g, seed ^ 0x6A, -1.0, 1.0, |x| x);
    g
}

/// Acceptance flags `[step][walker]` (1 accept, 0 reject), each 1 with probability `p`. Drawn in advance so every
/// variant and the reference take the same path.
pub fn accept_flags(steps: usize, walkers: usize, p: f64, seed: u64) -> Vec<i32> {
    let mut r = rng::rng(seed, 0xACC);
    (0..steps * walkers).map(|_| (r.random::<f64>() < p) as i32).collect()
}

/// The row moved at step s of a move sequence: electrons in order, wrapping.
pub fn row_of_step(s: usize, n: usize) -> usize {
    s % n
}

/// Fewest bytes and flops of the operations, per walker; `e` is the element size of the stored matrices.
pub mod work {
    /// Ratio and gradient ratio: one row of t, the proposal and its 3 gradient rows.
    pub fn ratio(n: usize, e: usize) -> (f64, f64) {
        ((5 * n * e) as f64, (8 * n) as f64)
    }
    /// Ratio plus a rank-1 update: t read by the matrix-vector product, then read and written by the rank-1 update.
    pub fn rank1(n: usize, e: usize) -> (f64, f64) {
        let (b, f) = ratio(n, e);
        (b + (3 * n * n * e) as f64, f + (4 * n * n) as f64)
    }
    /// k moves with a delayed update: per move the ratio against the pending moves (rows of V and U) and the
    /// accept (a dot per pending move), then the rank-k apply (t read by the first product, read and written by
    /// the last).
    pub fn delayed(n: usize, k: usize, e: usize) -> (f64, f64) {
        let (b, f) = ratio(n, e);
        let (nf, kf) = (n as f64, k as f64);
        let per_moves_b = kf * b + (kf * (kf - 1.0) / 2.0) * 3.0 * nf * e as f64;
        let per_moves_f = kf * f + (kf * (kf - 1.0) / 2.0) * 6.0 * nf;
        let apply_b = 3.0 * nf * nf * e as f64 + 4.0 * kf * nf * e as f64;
        let apply_f = 4.0 * kf * nf * nf + 2.0 * kf * kf * nf;
        (per_moves_b + apply_b, per_moves_f + apply_f)
    }
    /// Inversion: read A, write its inverse; about 2N^3 flops (LU and inverse).
    pub fn invert(n: usize, e: usize) -> (f64, f64) {
        ((2 * n * n * e) as f64, 2.0 * (n as f64).powi(3))
    }
}

/// The operations of a batch of determinants, on any device. The move-sequence driver and the mini-app use only
/// these, so the CPU and GPU paths run exactly the same sequence.
pub trait Engine {
    /// Walkers and matrix size.
    fn shape(&self) -> (usize, usize);
    /// Use rank-k delayed updates (k = 1: Sherman-Morrison); k at most the delay the engine was built for.
    fn set_delay(&mut self, k: usize);
    /// Set every walker's A and transposed inverse (`[walker][row][col]`, f64, converted to the storage type),
    /// drop pending moves, and take the acceptance flags `[step][walker]` of the next moves.
    fn load(&mut self, a: &[f64], t: &[f64], flags: &[i32]) -> Result<(), DetError>;
    /// The stored transposed inverses, as f64.
    fn inverse(&mut self) -> Result<Vec<f64>, DetError>;
    /// The last ratios `[walker]` and gradient ratios `[walker][xyz]`.
    fn ratios(&mut self) -> Result<(Vec<f64>, Vec<f64>), DetError>;
    /// log|det A| and sign of det A `[walker]` from the last inversion.
    fn logdets(&mut self) -> Result<(Vec<f64>, Vec<f64>), DetError>;
    /// Ratio and gradient ratio of moving electron `q` of every walker to its proposal (row q of its proposal
    /// matrix), against the current inverse including pending delayed moves.
    fn ratio(&mut self, q: usize) -> Result<(), DetError>;
    /// Accept the proposal at row q for the walkers whose flag of `step` is set: Sherman-Morrison (delay 1) or
    /// appended to the delayed moves. Needs the `ratio(q)` just before (the delayed accept reuses its products).
    fn accept(&mut self, q: usize, step: usize) -> Result<(), DetError>;
    /// Apply the pending delayed moves (rank-k update), `pending` being the most any walker holds.
    fn flush(&mut self, pending: usize) -> Result<(), DetError>;
    /// Invert every A from scratch (precision of the engine's inversion) into the stored inverse.
    fn invert(&mut self) -> Result<(), DetError>;
}

/// A move sequence: for each step, every walker proposes to move electron `row_of_step(s)`, computes the ratio and
/// accepts by its flag; with a delay k > 1, a walker's moves are applied once any walker holds k of them; with
/// `recompute` set, the inverse is recomputed from A every that many steps. Ends with nothing pending.
pub fn run_moves<E: Engine>(e: &mut E, steps: std::ops::Range<usize>, delay: usize, flags: &[i32], recompute: Option<usize>) -> Result<(), DetError> {
    let (walkers, n) = e.shape();
    let mut pending = vec![0usize; walkers];
    let mut most = 0;
    for s in steps {
        let q = row_of_step(s, n);
        e.ratio(q)?;
        e.accept(q, s)?;
        if delay > 1 {
            for (w, p) in pending.iter_mut().enumerate() {
                *p += flags[s * walkers + w] as usize;
                most = most.max(*p);
            }
            if most == delay {
                e.flush(most)?;
                pending.iter_mut().for_each(|p| *p = 0);
                most = 0;
            }
        }
        if recompute.is_some_and(|r| (s + 1) % r == 0) {
            if most > 0 {
                e.flush(most)?;
                pending.iter_mut().for_each(|p| *p = 0);
                most = 0;
            }
            e.invert()?;
        }
    }
    if most > 0 {
        e.flush(most)?;
    }
    Ok(())
}

/// A batch of walkers' matrices, proposals and gradient rows, with the f64 reference inverses (natural layout),
/// log|det| and signs of the `checked` walkers (ascending; the sample a check compares, see [`crate::sample`]).
pub struct Problem {
    pub n: usize,
    pub walkers: usize,
    pub a: Vec<f64>,
    pub prop: Vec<f64>,
    pub grad: Vec<f64>,
    pub checked: Vec<usize>,
    /// `[checked walker][row][col]`
    pub inv: Vec<f64>,
    pub logdet: Vec<f64>,
    pub sign: Vec<f64>,
}

impl Problem {
    pub fn new(n: usize, walkers: usize, checked: &[usize], seed: u64) -> Result<Problem, DetError> {
        assert!(checked.iter().all(|&w| w < walkers), "determinant: a checked walker beyond the batch");
        let a = random_matrices(n, walkers, seed);
        let prop = random_matrices(n, walkers, seed ^ 0x9E37);
        let grad = random_gradients(n, walkers, seed);
        let nn = n * n;
        let (mut inv, mut logdet, mut sign) = (Vec::with_capacity(checked.len() * nn), vec![], vec![]);
        for &w in checked {
            let (x, l, s) = reference::inverse(&a[w * nn..(w + 1) * nn], n).map_err(|column| DetError::Singular { walker: w, column })?;
            inv.extend(x);
            logdet.push(l);
            sign.push(s);
        }
        Ok(Problem { n, walkers, a, prop, grad, checked: checked.to_vec(), inv, logdet, sign })
    }

    /// The reference after `steps` of a move sequence with acceptance flags `[step][walker]`, for the checked
    /// walkers in order: transposed inverses, last ratios and last gradient ratios.
    pub fn moves(&self, steps: std::ops::Range<usize>, flags: &[i32]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        use rayon::prelude::*;
        let (n, nn) = (self.n, self.n * self.n);
        // each walker's sequence on one thread, the walkers in parallel
        let per: Vec<(Vec<f64>, f64, [f64; 3])> = (0..self.checked.len())
            .into_par_iter()
            .map(|c| {
                let w = self.checked[c];
                let mut a = self.a[w * nn..(w + 1) * nn].to_vec();
                let mut inv = self.inv[c * nn..(c + 1) * nn].to_vec();
                let f: Vec<i32> = flags.iter().skip(w).step_by(self.walkers).copied().collect();
                let (rw, gw) = reference::moves(&mut a, &mut inv, n, &self.prop[w * nn..(w + 1) * nn], &self.grad[w * 3 * n..(w + 1) * 3 * n], steps.clone(), &f);
                (reference::transpose(&inv, n), rw, gw)
            })
            .collect();
        let t = per.iter().flat_map(|x| x.0.iter().copied()).collect();
        (t, per.iter().map(|x| x.1).collect(), per.iter().flat_map(|x| x.2).collect())
    }
}

/// Max |A X^T - I| over one walker, with X = t the transposed inverse (f64 products): the residual of an inverse.
pub fn residual(a: &[f64], t: &[f64], n: usize) -> f64 {
    use faer::linalg::matmul::matmul;
    use faer::{Accum, MatRef, Par};
    let mut prod = faer::Mat::<f64>::zeros(n, n);
    let a = MatRef::from_row_major_slice(a, n, n);
    let x = MatRef::from_row_major_slice(t, n, n).transpose();
    matmul(prod.as_mut(), Accum::Replace, a, x, 1.0, Par::rayon(0));
    let mut worst = 0.0f64;
    for j in 0..n {
        for i in 0..n {
            let d = prod[(i, j)] - if i == j { 1.0 } else { 0.0 };
            worst = worst.max(if d.is_finite() { d.abs() } else { f64::INFINITY });
        }
    }
    worst
}

#[cfg(test)]
mod tests;
