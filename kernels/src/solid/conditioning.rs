//! The conditioning of the Slater matrices, and what mixed precision can promise with it.
//!
//! Random B-spline orbitals make ill-conditioned Slater matrices: the 1-norm condition number
//! cond = ||A||_1 ||A^-1||_1 (the worse spin) of uniformly placed electrons is 2e4..5e5 at 512 and 3e4..3e5 at
//! 1024 electrons; along the trajectories it is 1e3..7e4 (256), 4e3..5e4 (512), 1e4..4e4 (1024)
//! (`examples/solid_mixed.rs` prints issue 10's measurement). In mixed precision (f32 table, inverse and
//! gradient rows, f64 sums) an energy term that is a row dotted with the inverse rows is off by up to
//! eps_f32 cond times the size of its summands. Measured on the CPU engine (largest error of a part, relative to
//! the magnitude of the parts; the Coulomb part stays below 6e-8 at every size and conditioning):
//! - right after an f64 re-inversion: 1e-10..5e-8 along the trajectories, up to 1.9e-6 at the start (cond 7e4
//!   at 256 electrons, 5e5 at 512), at most 2.3e-4 eps cond; most of it is the f32 table itself (the reference
//!   with the table rounded to f32 is off by up to 7e-7 there): a slightly different wavefunction;
//! - then the kinetic and nonlocal errors wander with the f32 Sherman-Morrison updates, by at most 5.6e-4
//!   eps cond per step since the re-inversion (cond at the measurement; 1.3e-4 with the largest cond since the
//!   re-inversion), without growing steadily: the largest after up to 8 steps is 1.4e-6 (512 electrons) and
//!   7e-7 (1024); the inverse rows' normwise error grows by 7e-6 (256) to 4e-5 (512, 1024) per step. These are
//!   Sherman-Morrison's; the delayed updates (pending moves and apply in f64, `determinant::delayed`) stayed at or
//!   below them (256 and 512 electrons, delays 16 and 32, 4 steps: energy parts <= 1.7e-7, inverse <= 7.2e-6 per
//!   step against 2.5e-7 and 3.9e-5); with the apply in f32 they were 17 times Sherman-Morrison's growth.
//!
//! Hence the rule ([`reinverts`]): re-invert every `recompute` steps, or every fewer steps as the growth bound
//! [`GROWTH`] eps cond per step asks to stay within [`MIXED_CAP`] (from cond > 1.05e5 at the default 8; every
//! step from cond > 8.4e5); and the
//! tolerance of a walker's energy against the reference ([`energy_tolerance`]): that bound over the steps the
//! walker may go without a re-inversion, never below [`MIXED_FLOOR`] and never above [`MIXED_CAP`]. Over
//! every measured point up to 1024 electrons the largest error was 6% of its tolerance (energy and inverse); at 2048
//! the energy 28% (9.9e-6 against 3.5e-5 at cond 3e5). Double: 1e-8 as before.

use super::Params;
use crate::gpu::{CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;

pub const SRC: &str = include_str!("conditioning.cu");

/// Bound on the energy error per step since an f64 re-inversion (the fresh error included), in units of eps_S
/// cond: above the largest growth measured (5.6e-4 per step, 2.3e-4 fresh).
pub const GROWTH: f64 = 1e-3;
/// Least tolerance of a mixed-precision energy (relative to the magnitude of its parts): what f32 storage costs a
/// well-conditioned walker (seen: up to 4.6e-6 at 64 electrons, 1e-8 in the Coulomb part at every size).
pub const MIXED_FLOOR: f64 = 3e-5;
/// Most tolerance of a mixed-precision energy: what issue 10's mixed precision must meet at any conditioning.
/// The largest error measured up to 1024 electrons was 1.9e-6 (the old fixed 1e-4 held it with a fiftyfold
/// margin); the fresh error (2.3e-4 eps cond) reaches it only at cond ~4e6, where an f32 inverse keeps about one
/// digit, and a walker re-inverted every step stays below it up to cond ~1e6 by the growth bound.
pub const MIXED_CAP: f64 = 1e-4;

/// Steps a walker of condition number `cond` in storage precision `eps` may go between f64 re-inversions: the most
/// steps, at most `recompute`, whose growth bound [`GROWTH`] eps cond per step stays within [`MIXED_CAP`]; at least 1
/// (also where `cond` is unknown). So a walker just past the cap's reach re-inverts every few steps rather than every
/// step: at 3072 electrons (cond ~2.5e5) every third step.
pub fn interval(eps: f64, cond: f64, recompute: usize) -> usize {
    let steps = MIXED_CAP / (GROWTH * eps * cond);
    if steps.is_nan() || steps < 1.0 {
        1
    } else {
        (steps.floor() as usize).clamp(1, recompute.max(1))
    }
}

/// Does a walker whose Slater matrices had condition number `cond` at its last f64 re-inversion, stored in
/// precision `eps`, re-invert at the end of step `step`? At every step that ends a multiple of its [`interval`]
/// (with the whole `recompute`, every `recompute` steps). The interval changes only at a re-inversion, and
/// the next multiple of the new one is at most that many steps away, so no walker goes longer than its interval;
/// a branching copy takes its parent's condition number with its inverse. Never with `recompute` 0.
pub fn reinverts(p: &Params, step: usize, eps: f64, cond: f64) -> bool {
    p.recompute > 0 && (step + 1).is_multiple_of(interval(eps, cond, p.recompute))
}

/// Tolerance of a walker's energy (largest error of the parts and the local energy, relative to the magnitude
/// of the parts) against the f64 reference, stored in precision `eps` with condition number `cond` and
/// re-inverted by [`reinverts`]: the double engines' 1e-8; in mixed precision [`GROWTH`] eps cond per step of the
/// interval, between [`MIXED_FLOOR`] and [`MIXED_CAP`] (with `recompute` 0, never re-inverted, the cap).
pub fn energy_tolerance(eps: f64, cond: f64, recompute: usize) -> f64 {
    if eps < 1e-10 {
        return super::DOUBLE_TOLERANCE;
    }
    if recompute == 0 {
        return MIXED_CAP;
    }
    (GROWTH * interval(eps, cond, recompute) as f64 * eps * cond).clamp(MIXED_FLOOR, MIXED_CAP)
}

/// Tolerance of the inverse rows (normwise) against the reference's: the inverse of the f32-rounded matrix (each
/// entry off by at most eps/2 relative, so ||dA||_1 <= eps/2 ||A||_1) is off by up to eps/2 cond to first order,
/// and each step of Sherman-Morrison updates adds up to 4e-5 (about 350 eps); here eps cond plus 1000 eps per step
/// of the interval, at most 1e-2. Measured: 3.5e-4 eps cond up to 1024 electrons, 1.4e-2 eps cond at 2048 (cond
/// 3e5, a fresh inverse: 5.05e-4, which failed the old calibrated 1e-2 eps cond). Double: 1e-8.
pub fn inverse_tolerance(eps: f64, cond: f64, recompute: usize) -> f64 {
    if eps < 1e-10 {
        return 1e-8;
    }
    let steps = if recompute == 0 { 8 } else { interval(eps, cond, recompute) };
    (eps * cond + 1e3 * eps * steps as f64).min(1e-2)
}

/// 1-norm condition number of the n x n row-major matrix `a` from its transposed inverse rows `t` (row i of
/// `t`, `stride` apart, is column i of A^-1): ||A||_1 ||A^-1||_1, the largest column sum of |A| times the largest
/// row sum of |t|. O(n^2), beside the O(n^3) inversion that produced `t`.
pub fn cond_1<S: Real>(a: &[S], t: &[S], n: usize, stride: usize) -> f64 {
    let mut cols = vec![0.0f64; n];
    for row in a.chunks_exact(n).take(n) {
        cols.iter_mut().zip(row).for_each(|(c, x)| *c += x.f64().abs());
    }
    let inv = t.chunks(stride).take(n).map(|r| r[..n].iter().map(|x| x.f64().abs()).sum::<f64>()).fold(0.0, f64::max);
    cols.into_iter().fold(0.0, f64::max) * inv
}

/// 1-norms of the first `count` packed column-major n x n f64 matrices of `mats` (n^2 entries apart) less `shift`
/// times the identity, on the device (conditioning.cu), downloaded. NaN for a matrix with a NaN entry. Shift 0: the
/// norms of the condition number (the matrices of a re-inversion list: entry 2k + s for spin s of its k-th walker);
/// shift 1 on a refinement's 2 I - A X: the residual ||I - A X||_1.
pub fn device_norms(gpu: &Gpu, mats: &CudaSlice<f64>, n: usize, count: usize, shift: f64) -> Result<Vec<f64>, GpuError> {
    let f = gpu.function("solid_conditioning", SRC, "solid_norm1")?;
    let mut out = gpu.zeros::<f64>("matrix norms", count)?;
    let (ni, ci) = (n as i32, count as i32);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&ni).arg(&ci).arg(&shift).arg(mats).arg(&mut out);
    // SAFETY: block b < count reads matrix b (n^2 entries of mats, which holds at least count of them) and writes
    // out[b].
    unsafe { b.launch(LaunchConfig { grid_dim: (count as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }) }.during("launching solid_norm1")?;
    gpu.download(&out)
}
