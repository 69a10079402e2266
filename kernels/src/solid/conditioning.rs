//! The conditioning of the Slater matrices, and what mixed precision can promise with it.
//!
//! Random B-spline orbitals make ill-conditioned Slater matrices: the 1-norm condition number
//! cond = ||A||_1 ||A^-1||_1 (the worse spin) was 1e3..7e4 at 256 and 512 electrons and 1e4..8e4 at 1024 along
//! the trajectories measured (`examples/solid_mixed.rs` prints issue 10's measurement). In mixed precision (f32
//! table, inverse and gradient rows, f64 sums) an energy term that is a row dotted with the inverse rows is off by
//! up to eps_f32 cond times the size of its summands. Measured on the CPU engine (largest error of a part relative
//! to the magnitude of the parts; the Coulomb part stays near 1e-8 at every size): right after an f64
//! re-inversion 1e-10..3e-8 (the f32 table alone: up to 3e-7 at cond 2e5), then the kinetic and nonlocal errors
//! grow with each step of f32 Sherman-Morrison updates by at most 2.6e-4 eps_f32 cond per step (up to 9e-7
//! after 4 steps at 256 electrons, 7e-7 after 2 at 1024), and the inverse's normwise error by 5e-6 (256) to
//! 2e-5 (1024) per step.
//!
//! Hence the rule ([`reinverts`]): re-invert every `recompute` steps, and every step while `recompute` steps of
//! the growth bound [`GROWTH`] eps cond would pass [`MIXED_CAP`]; and the tolerance of a walker's energy
//! against the reference ([`energy_tolerance`]): that bound over the steps the walker may go without a
//! re-inversion, never below [`MIXED_FLOOR`] and never above [`MIXED_CAP`]. Double: 1e-8 as before.

use super::Params;
use crate::gpu::{CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;

pub const SRC: &str = include_str!("conditioning.cu");

/// Bound on the growth of the energy error per step since an f64 re-inversion, in units of eps_S cond: four
/// times the largest growth measured (2.6e-4).
pub const GROWTH: f64 = 1e-3;
/// Least tolerance of a mixed-precision energy (relative to the magnitude of its parts): what f32 storage costs a
/// well-conditioned walker (seen: up to 4.6e-6 at 64 electrons, 1e-8 in the Coulomb part at every size).
pub const MIXED_FLOOR: f64 = 3e-5;
/// Most tolerance of a mixed-precision energy: what issue 10's mixed precision must meet at any conditioning.
/// The largest error measured up to 1024 electrons was 1e-6, so a hundredfold margin; the f32 rounding of a fresh
/// inverse alone reaches it only at cond ~1e7, where f32 keeps too few digits of the inverse anyway.
pub const MIXED_CAP: f64 = 1e-4;

/// Steps a walker of condition number `cond` in storage precision `eps` may go between f64 re-inversions: 1 where
/// `recompute` steps of [`GROWTH`] would pass [`MIXED_CAP`] (or `cond` is unknown), else `recompute`.
pub fn interval(eps: f64, cond: f64, recompute: usize) -> usize {
    let drift = GROWTH * recompute as f64 * eps * cond;
    if drift.is_nan() || drift > MIXED_CAP {
        1
    } else {
        recompute
    }
}

/// Does a walker whose Slater matrices had condition number `cond` at its last f64 re-inversion, stored in
/// precision `eps`, re-invert at the end of step `step`? Every `recompute` steps ([`Params::reinverts`]), and
/// every step where [`interval`] is 1. Never with `recompute` 0.
pub fn reinverts(p: &Params, step: usize, eps: f64, cond: f64) -> bool {
    p.recompute > 0 && (p.reinverts(step) || interval(eps, cond, p.recompute) == 1)
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

/// Tolerance of the inverse rows (normwise) against the reference's: the inverse of the f32-rounded matrix is
/// off by up to eps cond (measured: 3.5e-4 eps cond), and each step of Sherman-Morrison updates adds up to 2e-5
/// (about 170 eps at 1024 electrons); here 1e-2 eps cond plus 1000 eps per step of the interval, at most 1e-2.
/// Double: 1e-8.
pub fn inverse_tolerance(eps: f64, cond: f64, recompute: usize) -> f64 {
    if eps < 1e-10 {
        return 1e-8;
    }
    let steps = if recompute == 0 { 8 } else { interval(eps, cond, recompute) };
    (1e-2 * eps * cond + 1e3 * eps * steps as f64).min(1e-2)
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

/// 1-norms of `count` column-major n x n f64 matrices on the device (conditioning.cu), downloaded.
pub fn device_norms(gpu: &Gpu, mats: &CudaSlice<f64>, n: usize, count: usize) -> Result<Vec<f64>, GpuError> {
    let f = gpu.function("solid_conditioning", SRC, "solid_norm1")?;
    let mut out = gpu.zeros::<f64>("matrix norms", count)?;
    let (ni, ci) = (n as i32, count as i32);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&ni).arg(&ci).arg(mats).arg(&mut out);
    // SAFETY: block b < count reads matrix b (n^2 entries of mats, which holds count of them) and writes out[b].
    unsafe { b.launch(LaunchConfig { grid_dim: (count as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }) }.during("launching solid_norm1")?;
    gpu.download(&out)
}
