//! The CPU engine: walkers over all cores (rayon), each walker swept electron by electron and measured in its own
//! task so its inverse and gradient rows stay in cache (paper 000's CPU loop order), then the nonlocal energy of all
//! walkers in one batch of the pseudopotential kernel, then (DMC) the branching. Storage S, arithmetic A.
//!
//! State, walker-major (`pseudopotential::Walkers` holds the first three, so the nonlocal energy reads them as is):
//! positions `[walker][electron][xyz]` (f64), transposed inverses `[walker][electron][stride]` (row e = column of
//! A_s^-1 for electron e of spin s, the determinant kernel's layout), quadrature rotations `[walker][ion][9]`,
//! orbital gradients at the current positions `[walker][electron][xyz][stride]`.

use super::conditioning::{cond_1, reinverts};
use super::validate::Finite;
use super::{branch, comb_offset, draws, start_walkers, timed, weight, Class, Functors, Params, Parts, Solid, Timers, PER_MOVE};
use crate::bspline::{cpu as spline, Output};
use crate::determinant::cpu::{dot, invert_in, Scalar};
use crate::ewald::cpu::CpuEwald;
use crate::pseudopotential::{self as pp, Setup, Walkers};
use crate::qmc::walker::{drift, MoveStats};
use crate::Real;
use rayon::prelude::*;
use std::time::Instant;

/// What one walker's task returns: its timers, move statistics, accepted moves, kinetic and Coulomb energies and
/// whether it re-inverted.
type WalkerStep = (Timers, MoveStats, u32, Result<(f64, f64, bool), SolidError>);
/// Kinetic and Coulomb energies of one walker's measurement, and the condition number if it re-inverted.
type Measured = (f64, f64, Option<f64>);

/// Why a step failed.
#[derive(Debug, thiserror::Error)]
pub enum SolidError {
    #[error("the Slater matrix of walker {0} is singular: its inverse cannot be recomputed")]
    Singular(usize),
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
}

/// All walkers and what the step needs of the system, in precision S (storage) and A (arithmetic).
pub struct CpuEngine<'a, S: Scalar, A: Real> {
    pub ctx: Ctx<'a, S, A>,
    pub w: Walkers<S>,
    /// Orbital gradients at the current positions, `[walker][electron][xyz][stride]`.
    pub dpsi: Vec<S>,
    pub parts: Vec<Parts>,
    /// 1-norm condition number of each walker's worse Slater matrix at its last f64 re-inversion (decides the next:
    /// `conditioning::reinverts`).
    pub cond: Vec<f64>,
    /// Walker re-inversions in the steps so far.
    pub reinversions: u64,
    /// Moves accepted by each walker in the last step.
    pub accepted: Vec<u32>,
    /// Branching weights and the parent of each slot in the last step (DMC).
    pub weights: Vec<f64>,
    pub parents: Vec<usize>,
    pub e_est: f64,
    pub steps: usize,
    pub timers: Timers,
    pub moves: MoveStats,
    /// Every walker's local energy and weight checked finite at every step (`validate`).
    pub finite: Finite,
}

/// What every walker's task reads: the system in S and A, and the parameters.
pub struct Ctx<'a, S: Real, A: Real> {
    pub sys: &'a Solid,
    pub setup: Setup<S>,
    ewald: CpuEwald<S, A>,
    fun: Functors<A>,
    pub p: Params,
}

impl<'a, S: Scalar, A: Real> CpuEngine<'a, S, A> {
    /// `count` walkers with uniformly random electrons, inverted and measured.
    pub fn new(sys: &'a Solid, count: usize, p: Params) -> Result<Self, SolidError> {
        let setup: Setup<S> = sys.setup.convert();
        let w = start_walkers::<S>(sys, count, &p);
        let st = setup.table.stride;
        let mut e = CpuEngine {
            ctx: Ctx { ewald: CpuEwald::new(&sys.ewald), fun: Functors::new(sys.jastrow()), setup, sys, p },
            dpsi: vec![S::zero(); count * sys.electrons() * 3 * st],
            parts: vec![Parts::default(); count],
            cond: vec![f64::INFINITY; count],
            reinversions: 0,
            accepted: vec![0; count],
            weights: vec![1.0; count],
            parents: (0..count).collect(),
            e_est: 0.0,
            steps: 0,
            timers: Timers::default(),
            moves: MoveStats::default(),
            finite: Finite::default(),
            w,
        };
        e.measure(true)?;
        e.nonlocal();
        e.e_est = e.parts.iter().map(Parts::local).sum::<f64>() / count as f64;
        e.timers = Timers::default();
        Ok(e)
    }

    pub fn count(&self) -> usize {
        self.w.count
    }

    /// Local energies of all walkers.
    pub fn energies(&self) -> Vec<f64> {
        self.parts.iter().map(Parts::local).collect()
    }

    /// One step of every walker (sweep, measurement, nonlocal energy, DMC branching); adds to `timers`.
    pub fn step(&mut self) -> Result<(), SolidError> {
        let (step, old) = (self.steps, self.energies());
        self.advance()?;
        self.finite.tally(step, &self.energies());
        if self.ctx.p.dmc {
            let start = Instant::now();
            self.branch(&old, step);
            self.timers.add(Class::Branching, start.elapsed().as_secs_f64());
        }
        Ok(())
    }

    /// The step without branching: sweep, measurement and nonlocal energy of every walker (what each rank does
    /// before the population control over ranks, `super::ranks`).
    pub fn advance(&mut self) -> Result<(), SolidError> {
        let (ne, ni, st) = (self.ctx.sys.electrons(), self.ctx.setup.ion_count(), self.ctx.setup.table.stride);
        let step = self.steps;
        let start = Instant::now();
        let me = &self.ctx;
        let out: Vec<WalkerStep> = self
            .w
            .pos
            .par_chunks_mut(3 * ne)
            .zip(self.w.inv.par_chunks_mut(ne * st))
            .zip(self.dpsi.par_chunks_mut(ne * 3 * st))
            .zip(self.w.rot.par_chunks_mut(9 * ni))
            .zip(self.cond.par_iter_mut())
            .enumerate()
            .map(|(k, ((((pos, inv), dpsi), rot), cond))| {
                let mut t = Timers::default();
                let mut mv = vec![0.0; PER_MOVE * ne];
                timed(&mut t, Class::Other, || draws(me.p.seed, step, me.p.first + k, ne, ni, &mut mv, rot));
                let (stats, acc) = me.sweep(pos, inv, dpsi, &mv, &mut t);
                let invert = reinverts(&me.p, step, S::EPS, *cond);
                let m = me.measure_walker(pos, inv, dpsi, invert, &mut t).map_err(|_| SolidError::Singular(k));
                let m = m.map(|(kinetic, coulomb, c)| {
                    *cond = c.unwrap_or(*cond);
                    (kinetic, coulomb, invert)
                });
                (t, stats, acc, m)
            })
            .collect();
        let wall = start.elapsed().as_secs_f64();
        let mut threads = Timers::default();
        for (k, (t, stats, acc, m)) in out.into_iter().enumerate() {
            threads = threads.merge(t);
            self.moves.add(&stats);
            self.accepted[k] = acc;
            let (kinetic, coulomb, inverted) = m?;
            self.reinversions += u64::from(inverted);
            self.parts[k].kinetic = kinetic;
            self.parts[k].coulomb = coulomb;
        }
        self.timers = self.timers.merge(threads.scaled_to(wall));
        let start = Instant::now();
        self.nonlocal();
        self.timers.add(Class::Pseudopotential, start.elapsed().as_secs_f64());
        self.steps += 1;
        Ok(())
    }

    /// All energies of every walker at its positions again, with or without an f64 re-inversion first.
    pub fn remeasure(&mut self, invert: bool) -> Result<(), SolidError> {
        self.measure(invert)?;
        self.nonlocal();
        Ok(())
    }

    /// Measurement of every walker (all walkers in parallel), with or without re-inversion.
    fn measure(&mut self, invert: bool) -> Result<(), SolidError> {
        let (ne, st) = (self.ctx.sys.electrons(), self.ctx.setup.table.stride);
        let me = &self.ctx;
        let out: Vec<Result<Measured, SolidError>> = self
            .w
            .pos
            .par_chunks(3 * ne)
            .zip(self.w.inv.par_chunks_mut(ne * st))
            .zip(self.dpsi.par_chunks_mut(ne * 3 * st))
            .enumerate()
            .map(|(k, ((pos, inv), dpsi))| me.measure_walker(pos, inv, dpsi, invert, &mut Timers::default()).map_err(|_| SolidError::Singular(k)))
            .collect();
        for ((p, cond), m) in self.parts.iter_mut().zip(&mut self.cond).zip(out) {
            let c;
            (p.kinetic, p.coulomb, c) = m?;
            *cond = c.unwrap_or(*cond);
        }
        Ok(())
    }

    /// The nonlocal energy of all walkers: the pseudopotential kernel's batched job list and ratios.
    fn nonlocal(&mut self) {
        let e = pp::cpu::energies::<S, A>(&self.ctx.setup, &self.w).energy;
        for (p, v) in self.parts.iter_mut().zip(e) {
            p.nonlocal = v;
        }
    }

    /// DMC: weights from the old and new local energies, the comb, the copies (in place: see `branch`), and the
    /// estimate of the energy the weights refer to.
    fn branch(&mut self, old: &[f64], step: usize) {
        let ne = self.ctx.sys.electrons();
        let new = self.energies();
        self.weights = old.iter().zip(&new).map(|(&o, &n)| weight(o, n, self.e_est, self.ctx.p.tau, ne)).collect();
        self.finite.tally(step, &self.weights);
        let wsum: f64 = self.weights.iter().sum();
        let e_gen = self.weights.iter().zip(&new).map(|(w, e)| w * e).sum::<f64>() / wsum;
        self.parents = branch(&self.weights, comb_offset(self.ctx.p.seed, step));
        let parents = std::mem::take(&mut self.parents);
        self.copy_slots(&parents);
        self.parents = parents;
        // the energy estimate the weights are measured from: running mean of the generations
        self.e_est += (e_gen - self.e_est) / (step + 2) as f64;
    }

    /// Slot s takes the state of walker `parents[s]` (no parent's own slot is overwritten: see `branch`).
    pub fn copy_slots(&mut self, parents: &[usize]) {
        let (ne, st, ni) = (self.ctx.sys.electrons(), self.ctx.setup.table.stride, self.ctx.setup.ion_count());
        for (slot, &from) in parents.iter().enumerate().filter(|(s, f)| s != *f) {
            copy_slot(&mut self.w.pos, 3 * ne, from, slot);
            copy_slot(&mut self.w.inv, ne * st, from, slot);
            copy_slot(&mut self.w.rot, 9 * ni, from, slot);
            copy_slot(&mut self.dpsi, 3 * ne * st, from, slot);
            copy_slot(&mut self.parts, 1, from, slot);
            copy_slot(&mut self.cond, 1, from, slot);
        }
    }
}

impl<S: Scalar, A: Real> Ctx<'_, S, A> {
    /// The sweep of one walker: every electron proposed once, in order. Returns the statistics and accepted moves.
    fn sweep(&self, pos: &mut [f64], inv: &mut [S], dpsi: &mut [S], mv: &[f64], t: &mut Timers) -> (MoveStats, u32) {
        let (ne, n, st) = (self.sys.electrons(), self.setup.per_spin(), self.setup.table.stride);
        let tau = self.p.tau;
        let mut phi = vec![A::zero(); 5 * st];
        let mut row_s = vec![S::zero(); 4 * st];
        let (mut stats, mut acc) = (MoveStats::default(), 0u32);
        for e in 0..ne {
            let (s, k) = (e / n, e % n);
            let old = [pos[3 * e], pos[3 * e + 1], pos[3 * e + 2]];
            let g_det = timed(t, Class::Determinant, || {
                let row = &inv[(s * n + k) * st..][..st];
                [0, 1, 2].map(|d| dot::<S, A>(&dpsi[(3 * e + d) * st..][..st], row).f64())
            });
            let (j_old, g_jas, _) = timed(t, Class::Jastrow, || self.fun.electron(&self.sys.setup, pos, e, old));
            let chi = [0, 1, 2].map(|d| tau.sqrt() * mv[PER_MOVE * e + d]);
            let dr = drift([0, 1, 2].map(|d| g_det[d] + g_jas[d]), tau);
            let new = [0, 1, 2].map(|d| old[d] + dr[d] + chi[d]);
            timed(t, Class::Orbitals, || spline::evaluate::<S, A>(&self.setup.table, &new, Output::Vgl, &mut phi));
            let (ratio_det, g_det_new) = timed(t, Class::Determinant, || {
                // value and gradient rows in S: the row Sherman-Morrison writes in, and the next gradient row
                row_s.iter_mut().zip(&phi[..4 * st]).for_each(|(x, &y)| *x = S::of(y.f64()));
                let row = &inv[(s * n + k) * st..][..st];
                let r: A = dot(&row_s[..st], row);
                (r.f64(), [1, 2, 3].map(|d| (dot::<S, A>(&row_s[d * st..][..st], row) / r).f64()))
            });
            let (j_new, g_jas_new, _) = timed(t, Class::Jastrow, || self.fun.electron(&self.sys.setup, pos, e, new));
            let ratio = ratio_det * (j_new - j_old).exp();
            let dr2: f64 = (0..3).map(|d| (new[d] - old[d]).powi(2)).sum();
            stats.attempted += 1;
            stats.r2_proposed += dr2;
            if !accept(ratio, self.p.dmc, old, new, chi, [0, 1, 2].map(|d| g_det_new[d] + g_jas_new[d]), tau, mv[PER_MOVE * e + 3]) {
                continue;
            }
            timed(t, Class::Determinant, || {
                sherman_morrison::<S, A>(&mut inv[s * n * st..(s + 1) * n * st], n, st, k, &row_s[..st], A::of(ratio_det));
                dpsi[3 * e * st..(3 * e + 3) * st].copy_from_slice(&row_s[st..4 * st]);
            });
            pos[3 * e..3 * e + 3].copy_from_slice(&new);
            stats.accepted += 1;
            stats.r2_accepted += dr2;
            acc += 1;
        }
        (stats, acc)
    }

    /// Kinetic and Coulomb energy of one walker at its positions; refreshes its gradient rows, and with `invert`
    /// its inverses (f64 inversion of the Slater matrices of the measured values) and returns their larger
    /// condition number.
    fn measure_walker(&self, pos: &[f64], inv: &mut [S], dpsi: &mut [S], invert: bool, t: &mut Timers) -> Result<Measured, usize> {
        let (ne, n, st) = (self.sys.electrons(), self.setup.per_spin(), self.setup.table.stride);
        let mut vgl = vec![A::zero(); ne * 5 * st];
        timed(t, Class::Orbitals, || spline::evaluate::<S, A>(&self.setup.table, pos, Output::Vgl, &mut vgl));
        let mut cond = None;
        let det = timed(t, Class::Determinant, || -> Result<Vec<[f64; 4]>, usize> {
            if invert {
                let mut worst = 0.0f64;
                let mut a = vec![S::zero(); n * n];
                let mut tr = vec![S::zero(); n * n];
                for s in 0..2 {
                    for i in 0..n {
                        for (x, &y) in a[i * n..(i + 1) * n].iter_mut().zip(&vgl[(s * n + i) * 5 * st..][..n]) {
                            *x = S::of(y.f64());
                        }
                    }
                    invert_in::<S, f64>(&a, &mut tr, n, faer::Par::Seq)?;
                    worst = worst.max(cond_1(&a, &tr, n, n));
                    for i in 0..n {
                        inv[(s * n + i) * st..][..n].copy_from_slice(&tr[i * n..(i + 1) * n]);
                    }
                }
                cond = Some(worst);
            }
            // grad and Laplacian of ln D at each electron: (row . inverse row), the ratio at the current point is 1
            let mut rows = vec![S::zero(); 5 * st];
            Ok((0..ne)
                .map(|e| {
                    rows.iter_mut().zip(&vgl[e * 5 * st..(e + 1) * 5 * st]).for_each(|(x, &y)| *x = S::of(y.f64()));
                    dpsi[3 * e * st..(3 * e + 3) * st].copy_from_slice(&rows[st..4 * st]);
                    let r = &inv[e * st..(e + 1) * st];
                    [1, 2, 3, 4].map(|c| dot::<S, A>(&rows[c * st..(c + 1) * st], r).f64())
                })
                .collect())
        })?;
        let kinetic = timed(t, Class::Jastrow, || {
            let mut sum = 0.0;
            for (e, d) in det.iter().enumerate() {
                let (_, gj, lj) = self.fun.electron(&self.sys.setup, pos, e, [pos[3 * e], pos[3 * e + 1], pos[3 * e + 2]]);
                sum += kinetic_term(*d, gj, lj);
            }
            sum
        });
        let coulomb = timed(t, Class::Coulomb, || {
            let r: Vec<[f64; 3]> = pos.chunks_exact(3).map(|x| [x[0], x[1], x[2]]).collect();
            self.ewald.energy_one(&r).f64()
        });
        Ok((kinetic, coulomb, cond))
    }
}

fn copy_slot<T: Copy>(v: &mut [T], len: usize, from: usize, to: usize) {
    v.copy_within(from * len..(from + 1) * len, to * len);
}

/// -1/2 (lap ln Psi + |grad ln Psi|^2) of one electron from (grad D / D, lap D / D) and the Jastrow's grad and
/// Laplacian of log J: lap ln D = lap D / D - |grad ln D|^2.
pub fn kinetic_term(det: [f64; 4], gj: [f64; 3], lj: f64) -> f64 {
    let gd = [det[0], det[1], det[2]];
    let g: [f64; 3] = [0, 1, 2].map(|k| gd[k] + gj[k]);
    let lap = det[3] - (gd[0] * gd[0] + gd[1] * gd[1] + gd[2] * gd[2]) + lj;
    -0.5 * (lap + g[0] * g[0] + g[1] * g[1] + g[2] * g[2])
}

/// Metropolis-Hastings with the drift-diffusion Green's functions (qmc::walker's rule). A move to a zero or
/// non-finite ratio, or (fixed node) a sign change, is rejected; the uniform `u` is always drawn, so every engine
/// consumes the same numbers.
#[allow(clippy::too_many_arguments)]
pub fn accept(ratio: f64, fixed_node: bool, old: [f64; 3], new: [f64; 3], chi: [f64; 3], g_new: [f64; 3], tau: f64, u: f64) -> bool {
    if !(ratio.is_finite() && ratio != 0.0) || (fixed_node && ratio < 0.0) {
        return false;
    }
    let dn = drift(g_new, tau);
    let back: [f64; 3] = [0, 1, 2].map(|d| old[d] - new[d] - dn[d]);
    let sq = |v: [f64; 3]| v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
    let log_accept = 2.0 * ratio.abs().ln() + (sq(chi) - sq(back)) / (2.0 * tau);
    log_accept >= 0.0 || u < log_accept.exp()
}

/// Sherman-Morrison on one spin's transposed inverse (n rows of `stride`): row k of A becomes `u` (ratio
/// u . t[k]); t[j] -= ((t[j] . u - delta_jk) / ratio) t[k].
fn sherman_morrison<S: Real, A: Real>(t: &mut [S], n: usize, stride: usize, k: usize, u: &[S], ratio: A) {
    let tk: Vec<A> = t[k * stride..(k + 1) * stride].iter().map(|x| A::of(x.f64())).collect();
    for (j, row) in t.chunks_exact_mut(stride).take(n).enumerate() {
        let mut c: A = dot(row, u);
        if j == k {
            c -= A::one();
        }
        let c = c / ratio;
        for (x, &y) in row.iter_mut().zip(&tk) {
            *x = S::of((A::of(x.f64()) - c * y).f64());
        }
    }
}
