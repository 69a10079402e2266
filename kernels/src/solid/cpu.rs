//! The CPU engine: walkers over all cores (rayon), each walker swept electron by electron and measured in its own
//! task so its inverse and gradient rows stay in cache (paper 000's CPU loop order), then (with ions) the nonlocal
//! energy of all walkers in one batch of the pseudopotential kernel, then (DMC) the population control of
//! [`ranks::generation`](super::ranks::generation) on one rank. Storage S, arithmetic
//! A. The orbitals (B-spline table or plane waves: [`PointOrbitals`]) are chosen once per walker task.
//!
//! State, walker-major (`pseudopotential::Walkers` holds the first three, so the nonlocal energy reads them as is):
//! positions `[walker][electron][xyz]` (f64), transposed inverses `[walker][electron][stride]` (row e = column of
//! A_s^-1 for electron e of spin s, the determinant kernel's layout), quadrature rotations `[walker][ion][9]`,
//! orbital gradients and Laplacians at the current positions `[walker][electron][xyz][stride]`,
//! `[walker][electron][stride]` (kept by the accepted moves, so the measurement needs no orbitals unless it
//! re-inverts).

use super::conditioning::{cond_1, reinverts};
use super::finite::Finite;
use super::ranks::{self, Cargo, Engine, Run};
use crate::ensemble::dmc::Dmc;
use crate::ensemble::vmc::Vmc;
use super::walker::Walker;
use super::{draws, start_walkers, timed, Class, Coulomb, Orbitals, Params, Parts, Solid, SolidError, Timers, PER_MOVE};
use crate::bspline::{cpu as spline, Output, Table};
use crate::determinant::cpu::invert_in;
use crate::determinant::delayed::Delayed;
use crate::determinant::dot::{dot, dot_wide};
use crate::ewald::cpu::CpuEwald;
use crate::pseudopotential::cpu::{JastrowSums, Soa};
use crate::atomic::AtomicOrbitals;
use crate::planewave::PlaneWaves;
use crate::pseudopotential::{self as pp, Setup, Walkers};
use crate::ensemble::moves::{drift, MoveStats};
use crate::{Real, Scalar};
use rayon::iter::Either;
use rayon::prelude::*;
use std::sync::Mutex;
use std::time::Instant;

/// What one walker's task leaves: its timers, move statistics, accepted moves, kinetic energy and, if it
/// re-inverted, the condition number (or the failure).
#[derive(Default)]
struct Outcome {
    t: Timers,
    stats: MoveStats,
    accepted: u32,
    kinetic: f64,
    inverted: bool,
    cond: Option<f64>,
    singular: bool,
}

/// All walkers and what the step needs of the system, in precision S (storage) and A (arithmetic).
pub struct CpuEngine<'a, S: Scalar, A: Scalar> {
    pub ctx: Ctx<'a, S, A>,
    pub w: Walkers<S>,
    /// Orbital gradients at the current positions, `[walker][electron][xyz][stride]`.
    pub dpsi: Vec<S>,
    /// Orbital Laplacians at the current positions, `[walker][electron][stride]`, where `lap_known` (the measurement
    /// evaluates the orbitals again where not).
    pub lap: Vec<S>,
    pub(crate) lap_known: Vec<bool>,
    pub parts: Vec<Parts>,
    /// 1-norm condition number of each walker's worse Slater matrix at its last f64 re-inversion (decides the next:
    /// `conditioning::reinverts`).
    pub cond: Vec<f64>,
    /// Walker re-inversions in the steps so far.
    pub reinversions: u64,
    /// Moves accepted by each walker in the last step.
    pub accepted: Vec<u32>,
    /// The run of this engine's own steps (`step`): VMC, or DMC with the population control on this engine alone
    /// (an engine of one of several ranks holds one too, unstepped: the ranks run their own).
    run: Run,
    pub steps: usize,
    /// Seconds by class (the walkers' stages with `ctx.profile`).
    pub timers: Timers,
    pub moves: MoveStats,
    /// Every walker's local energy and weight checked finite at every step (`validate`).
    pub finite: Finite,
    /// Each walker task's outcome in the last step.
    outcomes: Vec<Outcome>,
    /// Working memory of the walker tasks, one per thread of the pool (indexed by rayon's thread index): the step
    /// allocates nothing.
    scratch: Vec<Mutex<Scratch<S, A>>>,
}

/// The Coulomb energy as this engine sums it: the ewald kernel's CPU Ewald sums (terms in S, sums in A), or in
/// open boundaries its direct sum in A.
enum CpuCoulomb<S: Real, A: Real> {
    Ewald(CpuEwald<S, A>),
    Open(crate::ewald::open::Open),
}

impl<S: Real, A: Real> CpuCoulomb<S, A> {
    fn new(c: &Coulomb) -> Self {
        match c {
            Coulomb::Ewald(e) => CpuCoulomb::Ewald(CpuEwald::new(e)),
            Coulomb::Open(o) => CpuCoulomb::Open(o.clone()),
        }
    }
    fn energy(&self, r: &[[f64; 3]]) -> f64 {
        match self {
            CpuCoulomb::Ewald(e) => e.energy_one(r).f64(),
            CpuCoulomb::Open(o) => o.energy::<A>(r).f64(),
        }
    }
}

/// What every walker's task reads: the system in S and A, and the parameters.
pub struct Ctx<'a, S: Real, A: Real> {
    pub sys: &'a Solid,
    pub setup: Setup<S>,
    coulomb: CpuCoulomb<S, A>,
    fun: JastrowSums<A>,
    pub p: Params,
    /// Time the walkers' stages by class into the engine's `timers` (the solid mini-app's breakdown); off, they hold
    /// the Coulomb and branching phases alone.
    pub profile: bool,
}

/// One thread's working memory for a walker's sweep and measurement.
struct Scratch<S, A> {
    /// The walker's random numbers of the step.
    moves: Vec<f64>,
    /// Orbitals VGL at one point (A), and rounded to S (the rows the inverse and gradient rows are made of).
    phi: Vec<A>,
    rows: Vec<S>,
    /// The walker's electrons by spin, for the Jastrow sums.
    electrons: Soa,
    /// The pending moves of the delayed update (delay > 1).
    delayed: Delayed<S, A, A>,
    /// A re-inversion: one spin's Slater matrix and its transposed inverse.
    slater: Vec<S>,
    inverse: Vec<S>,
    /// (grad D / D, lap D / D) of every electron.
    det: Vec<[f64; 4]>,
}

impl<S: Scalar, A: Scalar> Scratch<S, A> {
    fn new(s: &Setup<S>, delay: usize) -> Self {
        let (ne, n, st) = (s.electrons, s.per_spin(), s.table.stride);
        Scratch {
            moves: vec![0.0; PER_MOVE * ne],
            phi: vec![A::zero(); 5 * st],
            rows: vec![S::zero(); 5 * st],
            electrons: Soa::new(&vec![0.0; 3 * ne], 2, n),
            delayed: Delayed::new(n, st, delay.max(1)),
            slater: vec![S::zero(); n * n],
            inverse: vec![S::zero(); n * n],
            det: vec![[0.0; 4]; ne],
        }
    }
}

impl<'a, S: Scalar, A: Scalar> CpuEngine<'a, S, A> {
    /// `count` walkers with uniformly random electrons, inverted and measured.
    pub fn new(sys: &'a Solid, count: usize, p: Params) -> Result<Self, SolidError> {
        assert!((1..=crate::determinant::MAX_DELAY).contains(&p.delay), "solid cpu: delay {} out of 1..=64", p.delay);
        let setup: Setup<S> = sys.setup.convert();
        let w = start_walkers::<S>(sys, count, &p);
        let st = setup.table.stride;
        let mut e = CpuEngine {
            ctx: Ctx { coulomb: CpuCoulomb::new(&sys.coulomb), fun: JastrowSums::new(&sys.setup, sys.jastrow()), setup, sys, p, profile: false },
            dpsi: vec![S::zero(); count * sys.electrons() * 3 * st],
            lap: vec![S::zero(); count * sys.electrons() * st],
            lap_known: vec![false; count],
            parts: vec![Parts::default(); count],
            cond: vec![f64::INFINITY; count],
            reinversions: 0,
            accepted: vec![0; count],
            run: Run::placeholder(),
            steps: 0,
            timers: Timers::default(),
            moves: MoveStats::default(),
            finite: Finite::default(),
            outcomes: (0..count).map(|_| Outcome::default()).collect(),
            scratch: vec![],
            w,
        };
        e.measure(true)?;
        e.nonlocal();
        e.run = Run::start(&mut e, &p, sys.electrons())?;
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

    /// One step of every walker (sweep, measurement, nonlocal energy; DMC: the generation's population control on
    /// this engine alone); adds to `timers`.
    pub fn step(&mut self) -> Result<(), SolidError> {
        let step = self.steps;
        ranks::step_alone(self, |e| &mut e.run, step, |e, branching_s, done| {
            e.timers.add(Class::Branching, branching_s);
            done
        })
    }

    /// Go on from `walkers` (a VMC run's, for a DMC run): `ranks::start_from`.
    pub fn start_from(&mut self, walkers: &[Walker<S>]) -> Result<(), SolidError> {
        let (p, ne) = (self.ctx.p, self.ctx.sys.electrons());
        ranks::start_from(self, |e| &mut e.run, walkers, &p, ne)
    }

    /// The DMC run's population control and its generations' energies and weights (None in VMC).
    pub fn dmc(&self) -> Option<&Dmc> {
        self.run.dmc()
    }

    /// The VMC run's steps' mean energies (None in DMC).
    pub fn vmc(&self) -> Option<&Vmc> {
        self.run.vmc()
    }

    /// The step without branching: sweep, measurement and nonlocal energy of every walker (what each rank does
    /// before the population control over ranks, `super::ranks`).
    pub fn advance(&mut self) -> Result<(), SolidError> {
        let step = self.steps;
        self.walker_tasks(Some(step), false)?;
        if self.ctx.sys.has_ions() {
            let start = Instant::now();
            self.nonlocal();
            self.timers.add(Class::Pseudopotential, start.elapsed().as_secs_f64());
        }
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
        let timers = self.timers;
        self.walker_tasks(None, invert)?;
        self.timers = timers;
        Ok(())
    }

    /// Every walker in its own task, all walkers in parallel: with `step`, that step's sweep and then the
    /// measurement (re-inverting as `conditioning::reinverts` says); without, the measurement alone (re-inverting
    /// if `invert`). Then the Ewald energies (a parallel phase of its own: the ewald kernel spreads one walker over
    /// threads). Adds the thread times per class, scaled to the wall time, to `timers`.
    fn walker_tasks(&mut self, step: Option<usize>, invert: bool) -> Result<(), SolidError> {
        let (ne, ni, st) = (self.ctx.sys.electrons(), self.ctx.setup.ion_count(), self.ctx.setup.table.stride);
        self.scratch_for(rayon::current_num_threads());
        let start = Instant::now();
        let (me, scratch) = (&self.ctx, &self.scratch);
        // each walker's rotations: without ions an empty slice each (there are no chunks of length 0)
        let rot = match ni {
            0 => Either::Right((0..self.w.count).into_par_iter().map(|_| <&mut [f64]>::default())),
            _ => Either::Left(self.w.rot.par_chunks_mut(9 * ni)),
        };
        self.w
            .pos
            .par_chunks_mut(3 * ne)
            .zip(self.w.inv.par_chunks_mut(ne * st))
            .zip(self.dpsi.par_chunks_mut(ne * 3 * st))
            .zip(self.lap.par_chunks_mut(ne * st))
            .zip(self.lap_known.par_iter_mut())
            .zip(rot)
            .zip(self.cond.par_iter_mut())
            .zip(self.outcomes.par_iter_mut())
            .enumerate()
            .for_each(|(k, (((((((pos, inv), dpsi), lap), known), rot), cond), out))| {
                // the task runs no parallel loop of its own, so no other task of this thread starts inside it
                let slot = rayon::current_thread_index().unwrap_or(0) % scratch.len();
                let mut sc = scratch[slot].try_lock().expect("solid cpu: one walker task per thread at a time");
                *out = Outcome::default();
                let invert = match step {
                    Some(step) => {
                        let t = &mut out.t;
                        timed(t, me.profile, Class::Other, || draws(me.p.seed, step, me.p.first + k, ne, ni, &mut sc.moves, rot));
                        (out.stats, out.accepted) = with_orbitals!(me, o, crate::dispatch!(me.sweep(o, pos, inv, dpsi, lap, &mut *sc, t)));
                        reinverts(&me.p, step, S::EPS, *cond)
                    }
                    None => invert,
                };
                out.inverted = invert;
                match with_orbitals!(me, o, crate::dispatch!(me.measure_walker(o, pos, inv, dpsi, lap, *known, invert, &mut *sc, &mut out.t))) {
                    Ok((kinetic, c)) => {
                        *known = true;
                        out.kinetic = kinetic;
                        out.cond = c;
                        *cond = c.unwrap_or(*cond);
                    }
                    Err(_) => out.singular = true,
                }
            });
        let wall = start.elapsed().as_secs_f64();
        let mut threads = Timers::default();
        for (k, out) in self.outcomes.iter().enumerate() {
            if out.singular {
                return Err(SolidError::Singular(k));
            }
            threads = threads.merge(out.t);
            if step.is_some() {
                self.moves.add(&out.stats);
                self.accepted[k] = out.accepted;
                self.reinversions += u64::from(out.inverted);
            }
            self.parts[k].kinetic = out.kinetic;
        }
        self.timers = self.timers.merge(threads.scaled_to(wall));
        let start = Instant::now();
        let coulomb = &self.ctx.coulomb;
        self.w.pos.par_chunks(3 * ne).zip(self.parts.par_iter_mut()).for_each(|(pos, p)| p.coulomb = coulomb.energy(points(pos)));
        self.timers.add(Class::Coulomb, start.elapsed().as_secs_f64());
        Ok(())
    }

    /// The nonlocal energy of all walkers: the pseudopotential kernel's batched job list and ratios (none without
    /// ions: the energies stay 0).
    fn nonlocal(&mut self) {
        if !self.ctx.sys.has_ions() {
            return;
        }
        let e = pp::cpu::energies::<S, A>(&self.ctx.setup, &self.w).energy;
        for (p, v) in self.parts.iter_mut().zip(e) {
            p.nonlocal = v;
        }
    }

    /// At least `threads` scratch spaces (made on first use, kept).
    fn scratch_for(&mut self, threads: usize) {
        while self.scratch.len() < threads {
            self.scratch.push(Mutex::new(Scratch::new(&self.ctx.setup, self.ctx.p.delay)));
        }
    }

    /// The walkers in `slots` (arrived from another rank: positions and rotations set, energies and condition number
    /// carried, the inverse rows too unless `invert`) get their orbital rows, and with `invert` an f64 inverse, from
    /// their positions, as a fresh measurement makes them; their energies stay those they carried.
    pub fn rebuild(&mut self, slots: &[usize], invert: bool) -> Result<(), SolidError> {
        let (ne, st) = (self.ctx.sys.electrons(), self.ctx.setup.table.stride);
        self.scratch_for(1);
        let me = &self.ctx;
        let mut sc = self.scratch[0].lock().expect("solid cpu: scratch");
        for &k in slots {
            let mut t = Timers::default();
            let (pos, inv) = (&self.w.pos[3 * ne * k..3 * ne * (k + 1)], &mut self.w.inv[ne * st * k..ne * st * (k + 1)]);
            let (dpsi, lap) = (&mut self.dpsi[3 * ne * st * k..3 * ne * st * (k + 1)], &mut self.lap[ne * st * k..ne * st * (k + 1)]);
            let (_, cond) = with_orbitals!(me, o, crate::dispatch!(me.measure_walker(o, pos, inv, dpsi, lap, false, invert, &mut *sc, &mut t))).map_err(|_| SolidError::Singular(k))?;
            self.cond[k] = cond.unwrap_or(self.cond[k]);
            self.lap_known[k] = true;
        }
        Ok(())
    }

    /// Slot s takes the state of walker `parents[s]` (no parent's own slot is overwritten: see `ranks::place`).
    /// Hold `n` walker slots (shares by speed: `ranks::Engine::resize`): slots past `n` go, new ones hold zeros
    /// until a copy or an arrival fills them.
    pub fn resize(&mut self, n: usize) {
        let (ne, st, ni) = (self.ctx.sys.electrons(), self.ctx.setup.table.stride, self.ctx.setup.ion_count());
        self.w.pos.resize(3 * ne * n, 0.0);
        self.w.inv.resize(ne * st * n, S::zero());
        self.w.rot.resize(9 * ni * n, 0.0);
        self.dpsi.resize(3 * ne * st * n, S::zero());
        self.lap.resize(ne * st * n, S::zero());
        self.lap_known.resize(n, false);
        self.parts.resize(n, Parts::default());
        self.cond.resize(n, f64::INFINITY);
        self.accepted.resize(n, 0);
        self.outcomes.resize_with(n, Outcome::default);
        self.w.count = n;
    }

    pub fn copy_slots(&mut self, parents: &[usize]) {
        let (ne, st, ni) = (self.ctx.sys.electrons(), self.ctx.setup.table.stride, self.ctx.setup.ion_count());
        for (slot, &from) in parents.iter().enumerate().filter(|(s, f)| s != *f) {
            copy_slot(&mut self.w.pos, 3 * ne, from, slot);
            copy_slot(&mut self.w.inv, ne * st, from, slot);
            copy_slot(&mut self.w.rot, 9 * ni, from, slot);
            copy_slot(&mut self.dpsi, 3 * ne * st, from, slot);
            copy_slot(&mut self.lap, ne * st, from, slot);
            copy_slot(&mut self.lap_known, 1, from, slot);
            copy_slot(&mut self.parts, 1, from, slot);
            copy_slot(&mut self.cond, 1, from, slot);
        }
    }
}

/// The orbitals VGL at one point into `[component][stride]` in A, on the calling thread, allocating nothing: the
/// B-spline table (storage S), the plane waves or the atomic orbitals. The engine calls the sweep and the measurement
/// with the system's set as a concrete type (`with_orbitals!`), so the choice is made once per walker task and the
/// carbon solid's loops are the ones they were.
pub trait PointOrbitals<A> {
    fn vgl(&self, r: [f64; 3], out: &mut [A]);
}

impl<S: Real, A: Real> PointOrbitals<A> for Table<S> {
    #[inline(always)]
    fn vgl(&self, r: [f64; 3], out: &mut [A]) {
        spline::evaluate_point::<S, A>(self, r, Output::Vgl, out)
    }
}

impl<A: Real> PointOrbitals<A> for PlaneWaves {
    #[inline(always)]
    fn vgl(&self, r: [f64; 3], out: &mut [A]) {
        self.evaluate_point::<A>(r, out.len() / 5, out)
    }
}

impl<A: Real> PointOrbitals<A> for AtomicOrbitals {
    #[inline(always)]
    fn vgl(&self, r: [f64; 3], out: &mut [A]) {
        self.evaluate_point::<A>(r, out.len() / 5, out)
    }
}

/// `$body` with `$o` bound to the system's orbitals of context `$ctx` as a concrete [`PointOrbitals`] type: one
/// match per call of the body (a walker's sweep or measurement), each arm compiled for its own type.
macro_rules! with_orbitals {
    ($ctx:expr, $o:ident, $body:expr) => {
        match &$ctx.sys.orbitals {
            Orbitals::Table => {
                let $o = &$ctx.setup.table;
                $body
            }
            Orbitals::PlaneWaves(w) => {
                let $o = w;
                $body
            }
            Orbitals::Atomic(a) => {
                let $o = a;
                $body
            }
        }
    };
}
use with_orbitals;

/// `[electron][xyz]` positions as points.
fn points(pos: &[f64]) -> &[[f64; 3]] {
    assert!(pos.len().is_multiple_of(3));
    // SAFETY: [f64; 3] has the size and alignment of three consecutive f64s; the length is a multiple of 3.
    unsafe { std::slice::from_raw_parts(pos.as_ptr().cast::<[f64; 3]>(), pos.len() / 3) }
}

impl<S: Scalar, A: Scalar> Ctx<'_, S, A> {
    /// The sweep of one walker: every electron proposed once, in order. With delay k > 1, each spin's electrons in
    /// windows of k: the ratio and gradients against the window's pending moves (`Delayed::column`), the accepted
    /// moves applied to the inverse together at the window's end; with k = 1, Sherman-Morrison on every accept.
    /// Returns the statistics and accepted moves. Inline, for the caller's `dispatch!` (and so are the timed
    /// closures: a closure not inlined would run without the vector instruction set, and its minimum images would
    /// call libm's rint).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn sweep<O: PointOrbitals<A>>(&self, orb: &O, pos: &mut [f64], inv: &mut [S], dpsi: &mut [S], lap: &mut [S], sc: &mut Scratch<S, A>, t: &mut Timers) -> (MoveStats, u32) {
        let (ne, n, st) = (self.sys.electrons(), self.setup.per_spin(), self.setup.table.stride);
        let (tau, k) = (self.p.tau, self.p.delay);
        let (mut stats, mut acc) = (MoveStats::default(), 0u32);
        let Scratch { moves: mv, phi, rows: row_s, electrons, delayed, .. } = sc;
        electrons.fill(pos);
        for e in 0..ne {
            let (s, q) = (e / n, e % n);
            let window = q - q % k;
            let ts = &mut inv[s * n * st..(s + 1) * n * st];
            let old = [pos[3 * e], pos[3 * e + 1], pos[3 * e + 2]];
            // grad ln D at the old position: the gradient rows against column q of the current inverse
            let g_det = timed(t, self.profile, Class::Determinant, #[inline(always)] || {
                let tq = &ts[q * st..(q + 1) * st];
                // the three dots written out: an array's `.map` is compiled out of line, outside the instruction
                // set `dispatch!` chose (the dots then ran in 128-bit SSE2)
                let dp = |d: usize| &dpsi[(3 * e + d) * st..][..st];
                if k == 1 {
                    [dot::<S, A>(dp(0), tq).f64(), dot::<S, A>(dp(1), tq).f64(), dot::<S, A>(dp(2), tq).f64()]
                } else {
                    let col = delayed.column(&tq[..n], q);
                    let dw = |d: usize| dot_wide::<S, A, A>(&dp(d)[..n], col).f64();
                    [dw(0), dw(1), dw(2)]
                }
            });
            let (j_old, g_jas, _) = timed(t, self.profile, Class::Jastrow, #[inline(always)] || self.fun.electron(electrons, n, e, old));
            let chi = [0, 1, 2].map(|d| tau.sqrt() * mv[PER_MOVE * e + d]);
            let dr = drift([0, 1, 2].map(|d| g_det[d] + g_jas[d]), tau);
            let new = [0, 1, 2].map(|d| old[d] + dr[d] + chi[d]);
            timed(t, self.profile, Class::Orbitals, #[inline(always)] || orb.vgl(new, phi));
            let (ratio_det, g_det_new) = timed(t, self.profile, Class::Determinant, #[inline(always)] || {
                // value and gradient rows in S: the row the update writes in, and the next gradient row
                row_s[..4 * st].iter_mut().zip(&phi[..4 * st]).for_each(|(x, &y)| *x = S::of(y.f64()));
                let r: A;
                let g: [A; 3];
                if k == 1 {
                    let row = &ts[q * st..(q + 1) * st];
                    r = dot(&row_s[..st], row);
                    g = [dot(&row_s[st..2 * st], row), dot(&row_s[2 * st..3 * st], row), dot(&row_s[3 * st..4 * st], row)];
                } else {
                    let col = delayed.last_column();
                    r = dot_wide::<S, A, A>(&row_s[..n], col);
                    let dw = |d: usize| dot_wide::<S, A, A>(&row_s[d * st..][..n], col);
                    g = [dw(1), dw(2), dw(3)];
                }
                (r.f64(), g.map(|x| (x / r).f64()))
            });
            let (j_new, g_jas_new, _) = timed(t, self.profile, Class::Jastrow, #[inline(always)] || self.fun.electron(electrons, n, e, new));
            let ratio = ratio_det * (j_new - j_old).exp();
            let dr2: f64 = (0..3).map(|d| (new[d] - old[d]).powi(2)).sum();
            stats.attempted += 1;
            stats.r2_proposed += dr2;
            if accept(ratio, self.p.dmc, old, new, chi, [0, 1, 2].map(|d| g_det_new[d] + g_jas_new[d]), tau, mv[PER_MOVE * e + 3]) {
                timed(t, self.profile, Class::Determinant, #[inline(always)] || {
                    if k == 1 {
                        sherman_morrison::<S, A>(ts, n, st, q, &row_s[..st], A::of(ratio_det));
                    } else {
                        delayed.grow(q - window, &row_s[..n], &ts[q * st..q * st + n], Some(q));
                    }
                    dpsi[3 * e * st..(3 * e + 3) * st].copy_from_slice(&row_s[st..4 * st]);
                    lap[e * st..(e + 1) * st].iter_mut().zip(&phi[4 * st..5 * st]).for_each(|(x, &y)| *x = S::of(y.f64()));
                });
                pos[3 * e..3 * e + 3].copy_from_slice(&new);
                electrons.set(s, q, new);
                stats.accepted += 1;
                stats.r2_accepted += dr2;
                acc += 1;
            }
            if k > 1 && (q + 1 == n || q + 1 - window == k) {
                timed(t, self.profile, Class::Determinant, #[inline(always)] || delayed.apply(ts, faer::Par::Seq));
            }
        }
        (stats, acc)
    }

    /// Kinetic energy of one walker at its positions from its gradient and Laplacian rows, which the sweep keeps at
    /// the current positions (as QMCPACK keeps dpsiM and d2psiM): the orbitals are evaluated again only where those
    /// rows are not `known` (the start, a migrated walker) or with `invert`, which re-inverts the Slater matrices of
    /// the measured values in f64, spin by spin, and returns their larger condition number. Inline, for the caller's
    /// `dispatch!`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn measure_walker<O: PointOrbitals<A>>(&self, orb: &O, pos: &[f64], inv: &mut [S], dpsi: &mut [S], lap: &mut [S], known: bool, invert: bool, sc: &mut Scratch<S, A>, t: &mut Timers) -> Result<(f64, Option<f64>), usize> {
        let (ne, n, st) = (self.sys.electrons(), self.setup.per_spin(), self.setup.table.stride);
        let Scratch { phi, rows, electrons, slater, inverse, det, .. } = sc;
        let mut worst = 0.0f64;
        for s in 0..2 {
            if invert || !known {
                for i in 0..n {
                    let e = s * n + i;
                    timed(t, self.profile, Class::Orbitals, #[inline(always)] || orb.vgl([pos[3 * e], pos[3 * e + 1], pos[3 * e + 2]], phi));
                    timed(t, self.profile, Class::Determinant, #[inline(always)] || {
                        rows.iter_mut().zip(phi.iter()).for_each(|(x, &y)| *x = S::of(y.f64()));
                        dpsi[3 * e * st..(3 * e + 3) * st].copy_from_slice(&rows[st..4 * st]);
                        lap[e * st..(e + 1) * st].copy_from_slice(&rows[4 * st..]);
                        slater[i * n..(i + 1) * n].copy_from_slice(&rows[..n]);
                    });
                }
            }
            timed(t, self.profile, Class::Determinant, #[inline(always)] || -> Result<(), usize> {
                if invert {
                    invert_in::<S, f64>(slater, inverse, n, faer::Par::Seq)?;
                    worst = worst.max(cond_1(slater, inverse, n, n));
                    for i in 0..n {
                        inv[(s * n + i) * st..][..n].copy_from_slice(&inverse[i * n..(i + 1) * n]);
                    }
                }
                // grad and Laplacian of ln D: (row . inverse row), the ratio at the current point being 1
                for e in s * n..(s + 1) * n {
                    let r = &inv[e * st..(e + 1) * st];
                    let g_c = |c: usize| dot::<S, A>(&dpsi[(3 * e + c) * st..][..st], r).f64();
                    let g = [g_c(0), g_c(1), g_c(2)];
                    det[e] = [g[0], g[1], g[2], dot::<S, A>(&lap[e * st..(e + 1) * st], r).f64()];
                }
                Ok(())
            })?;
        }
        let kinetic = timed(t, self.profile, Class::Jastrow, #[inline(always)] || {
            electrons.fill(pos);
            let mut sum = 0.0;
            for (e, d) in det[..ne].iter().enumerate() {
                let (_, gj, lj) = self.fun.electron(electrons, n, e, [pos[3 * e], pos[3 * e + 1], pos[3 * e + 2]]);
                sum += kinetic_term(*d, gj, lj);
            }
            sum
        });
        Ok((kinetic, invert.then_some(worst)))
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

impl<S: Scalar, A: Scalar> Engine<S> for CpuEngine<'_, S, A> {
    fn count(&self) -> usize {
        CpuEngine::count(self)
    }
    fn advance(&mut self) -> Result<(), SolidError> {
        CpuEngine::advance(self)
    }
    fn energies(&self) -> Vec<f64> {
        CpuEngine::energies(self)
    }
    fn copy_slots(&mut self, parents: &[usize]) -> Result<(), SolidError> {
        CpuEngine::copy_slots(self, parents);
        Ok(())
    }
    fn take(&mut self, k: usize, cargo: Cargo) -> Result<Walker<S>, SolidError> {
        let (ne, st, ni) = (self.ctx.sys.electrons(), self.ctx.setup.table.stride, self.ctx.setup.ion_count());
        let f = |v: &[S], len: usize, carried: bool| if carried { v[k * len..(k + 1) * len].to_vec() } else { vec![] };
        Ok(Walker {
            pos: self.w.pos[3 * ne * k..3 * ne * (k + 1)].to_vec(),
            rot: self.w.rot[9 * ni * k..9 * ni * (k + 1)].to_vec(),
            parts: self.parts[k],
            inv: f(&self.w.inv, ne * st, cargo != Cargo::Configuration),
            dpsi: f(&self.dpsi, 3 * ne * st, cargo == Cargo::Whole),
            cond: self.cond[k],
            device: None,
        })
    }
    fn put(&mut self, k: usize, w: &Walker<S>) -> Result<(), SolidError> {
        assert!(w.device.is_none(), "a CPU engine's walkers travel through the host");
        let (ne, st, ni) = (self.ctx.sys.electrons(), self.ctx.setup.table.stride, self.ctx.setup.ion_count());
        let set = |v: &mut [S], len: usize, src: &[S]| v[k * len..(k + 1) * len].copy_from_slice(src);
        self.w.pos[3 * ne * k..3 * ne * (k + 1)].copy_from_slice(&w.pos);
        self.w.rot[9 * ni * k..9 * ni * (k + 1)].copy_from_slice(&w.rot);
        if !w.inv.is_empty() {
            set(&mut self.w.inv, ne * st, &w.inv);
        }
        if !w.dpsi.is_empty() {
            set(&mut self.dpsi, 3 * ne * st, &w.dpsi);
        }
        // its Laplacian rows did not travel: the next measurement (or `rebuild`) evaluates its orbitals
        self.lap_known[k] = false;
        self.parts[k] = w.parts;
        self.cond[k] = w.cond;
        Ok(())
    }
    fn rebuild(&mut self, slots: &[usize], cargo: Cargo) -> Result<(), SolidError> {
        CpuEngine::rebuild(self, slots, cargo == Cargo::Configuration)
    }
    fn resize(&mut self, n: usize) -> Result<(), SolidError> {
        CpuEngine::resize(self, n);
        Ok(())
    }
    fn renumber(&mut self, first: usize) {
        self.ctx.p.first = first;
    }
    fn finite(&mut self) -> &mut Finite {
        &mut self.finite
    }
    fn moves(&self) -> MoveStats {
        self.moves
    }
}
