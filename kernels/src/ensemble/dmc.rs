//! The one DMC generation of the suite, whatever the system and the engine (the qmc driver's walkers, CPU or GPU;
//! the batched engines of the solid and the electron gas): diffusion Monte Carlo with importance sampling
//! (Reynolds, Ceperley, Alder and Lester 1982; Umrigar, Nightingale and Runge 1993). Each generation every walker
//! makes a sweep of single-electron drift-diffusion moves accepted by Metropolis-Hastings ([`Ensemble::advance`]),
//! then carries the branching weight
//!     w = exp(-tau_eff [ (E_L(R) + E_L(R')) / 2 - E_T ]),
//! (the local energy limited to E_est +- 0.2 sqrt(N / tau): [`energy_cap`]) and the population is renewed by one of
//! two controls ([`Control`]):
//! - [`Control::Branch`]: walker k becomes floor(w + xi) copies (xi from walker k's stream), the population varies and
//!   the trial energy follows it, E_T = E_est - ln(N / N_target) / (g tau_eff), which pulls it back to its target
//!   over about g generations; after branching the ranks' walkers are balanced ([`Balance`]);
//! - [`Control::Comb`]: one comb over all ranks' walkers in rank order ([`teeth`], [`comb_copies`]) keeps the
//!   population at its target exactly (the batched engines, whose walkers are batched in slots), and after the
//!   migration every rank holds its share ([`Balance`]: equal, or by speed where the engine's slots can change in
//!   number); E_T is E_est.
//!
//! tau_eff = tau x (accepted / proposed mean-square displacement), accumulated over the run, so rejected moves do
//! not make walkers branch as though they had diffused. A generation's weights use the ratio of the generations
//! before it (tau itself in the first; every engine sums its moves' displacements): that lets the
//! generation's move statistics travel in the same one sum as its weights and populations, one synchronisation of
//! the ranks a generation. The ratio is a mean over every generation so far, so leaving the current one out changes
//! it by O(1/g) of its own fluctuation.
//!
//! The energy is the mixed estimator over the generations after equilibration, sum_g S_g / sum_g W_g with
//! S_g = sum w E_L and W_g = sum w of generation g, and its error bar is that of this ratio ([`weighted_blocking`]).
//! E_est is, during equilibration, the mean of the later half of the generations so far (forgetting the start),
//! then that estimator.
//!
//! Across ranks ([`comm`](super::comm)): each rank advances its share of the walkers; the generation's move
//! statistics, weight sums and, per rank, its population after branching (its weight total under the comb), its
//! compute time and its last wait are summed over ranks in one sum, so the trial energy and every rank's plan are
//! global. Walker k of the global order (rank 0's first) draws its moves and its branching number from streams named
//! by (seed, generation, k): with equal shares and a given number of ranks a run is reproducible bit for bit.
//!
//! Ranks that do not wait ([`Control::Lagged`], issue #24): under the comb every rank waits each generation in the
//! sum for the slowest, and on 16 CPU ranks (H200 host, 0244813, shares by speed) that was a random straggler, a
//! different rank each generation: each generation's largest compute 2.7 ms above the mean of 22.7, the slowest
//! rank's own total only 0.2 ms above. A lagged run makes the generation's sum a started one
//! ([`Comm::start_sum`]), finished in the next generation after its compute: a rank waits only for one a whole
//! generation behind. What the sum decided must then wait a generation too, so each rank combs its own walkers to
//! its own share (no migration), and, the ranks' weight totals differing, its walkers carry a common factor, the
//! rank's total over its share, renormalised over all ranks when the sum is finished so that all walkers' weights
//! add up to the target. The factors drift apart as a random walk; once the largest exceeds the smallest by the
//! run's `spread`, one generation takes the comb over all ranks with a blocking sum (the generation's weights times
//! the factors), which gives every walker the same weight again. The estimator, E_est and the trial energy are the
//! comb's from the same sums, a generation later; the weights and the energy cap use the estimate of two generations
//! before instead of one. A run may keep its sums in flight `lag` generations instead of one, so that a rank waits
//! only for one that many generations behind (a slow spell of a few generations on another core; the estimate the
//! weights use is then lag + 1 generations old). The factors then live in a unit that drifts: each generation's sum
//! carries every rank's factor times its share, and its weights are divided by that total over the target when it is
//! folded in (`normalised`), as a lag of one gives them.
//! Measured (H100 host, 16 cores, 65a9059, gpu-host.sh gas-ranks-lagged: the 54-electron gas, 32 walkers a rank,
//! three rounds): 16 MPI ranks 21.4 ms a generation lagged against 23.2 (weak efficiency 0.832 against 0.768 over
//! one rank's 17.8), faster in each round; 16 thread ranks 19.6 both ways. The wait itself stayed (3.7 to 4.3 ms a
//! generation against 4.0 to 4.8): at 32 walkers a rank the factors pass 1.2 in 19 of 200 generations, each then a
//! blocking comb, and a rank slow over several generations falls a whole one behind. So `each` stays the default.
//! A longer lag did not cut that wait (H100 host, b216828, gpu-host.sh gas-ranks-lag, three rounds, ms a generation):
//! 16 MPI ranks each 24.7, lag 1 24.4, lag 2 25.0, lag 4 25.6, spread 1.5 24.1, over one rank's 16.9. In 13 of
//! those 15 runs the slowest rank's own compute was within 1.5 ms of each generation's largest: a rank slow for the
//! whole run, which only shares by speed can help (a lagged run's `balance`, since 898de3e); and 16 ranks computed
//! about 22% slower than one (mean compute 18.4 to 22.7 ms).
//! Shares by speed, measured (H100 host, ab5d4b7, gpu-host.sh gas-ranks-speed and gas-ranks-loaded, six rounds, ms a
//! generation): 16 MPI ranks with equal shares 23.5 to 25.7, with shares by speed 20.6 to 24.3, faster in 5 of the 6
//! rounds (weak efficiency 0.831 against 0.786 over one rank's 17.8 to 20.6); lagged, with or without speed, and
//! ranks that wait asleep (`QMC_MPI_WAIT=sleep`) no faster than equal shares. The cause is the cores: 16 one-rank
//! runs at once, no communication, computed 17.1 to 24.2 ms a generation (the lone run 18.5), and with shares by
//! speed the most-waiting rank waited 1.7 to 3.1 ms a generation against 5.0 to 7.3. On a second H100 host the same
//! day (other cores: CPU model 143 against 207), the same build: 16 one-rank runs at once 14.1 to 14.6 ms, one rank
//! 14.0 to 14.1, 16 MPI ranks 14.6 to 14.7 with equal shares (weak efficiency 0.959) and 14.5 to 15.0 with shares by
//! speed (0.951): on cores of one speed there is nothing to balance, and the ranks cost 4%. Equal shares stay the
//! default: they keep a run reproducible bit for bit, and speed helps only where the cores differ.

use super::balance::{Balance, Pace, MARGIN};
use super::blocking::{weighted_blocking, Blocked};
use super::comm::{Comm, Pending};
use super::moves::MoveStats;
use super::pack::{put_f64, put_f64s, put_u64, Pack, Reader, Truncated};
use super::population::{comb_copies, comb_offset, copies, energy_cap, teeth, weight, Traffic};
use crate::rng::stream;
use rand::Rng;
use std::collections::VecDeque;
use std::time::Instant;

/// How the population is renewed each generation (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Control {
    /// Each walker its own number of copies; the population varies about its target, held by the trial energy's
    /// feedback over `feedback` generations; the ranks' shares after branching as `balance` says.
    Branch { feedback: f64, balance: Balance },
    /// One comb over all walkers: the population stays at its target, and every rank holds its share as `balance`
    /// says (by speed only for an ensemble whose walker count can change from one generation to the next).
    Comb { balance: Balance },
    /// Ranks that do not wait ([`Dmc::generation`], lagged): each rank combs its own walkers to its own equal share,
    /// so no walker migrates, and its walkers carry one common weight, the rank's factor (its weight total over its
    /// share, renormalised so that the factors of all walkers add up to the target); the generation's sum over
    /// ranks is started and finished one generation later, while the rank computes the next. The trial energy and
    /// the energy cap use the estimate one generation older than under the comb. When the ranks' factors differ by
    /// more than `spread` (largest over smallest), one generation takes the comb over all ranks (blocking, with
    /// migration), which gives every walker the same weight again. `lag` generations pass between starting a sum and
    /// finishing it (1: the next generation's; more: a rank waits only for one that many generations behind, and the
    /// trial energy is older by as many). The shares are set by `balance` at each comb over all ranks; by speed, a
    /// fold whose paces move some rank's goal by more than [`MARGIN`] of its share calls one too.
    Lagged { spread: f64, lag: usize, balance: Balance },
}

/// The largest over the smallest rank factor at which a lagged run ([`Control::Lagged`]) combs over all ranks again
/// by default: a spread of factors f costs a fraction var(f) / mean(f)^2 of the population's statistical weight, at
/// most about 1% within 1.2.
pub const LAGGED_SPREAD: f64 = 1.2;
/// Generations a lagged run's sum stays in flight by default ([`Control::Lagged`]).
pub const LAGGED_LAG: usize = 1;

/// What a DMC run is, for its generations.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Target population over all ranks.
    pub target: usize,
    pub tau: f64,
    pub seed: u64,
    /// Electrons of the system (the local energy's limit in the weight scales with sqrt(N)).
    pub electrons: usize,
    /// Generations before the estimator starts.
    pub equil: usize,
    pub control: Control,
}

/// Why a DMC run stopped.
#[derive(Debug, thiserror::Error)]
pub enum DmcError {
    #[error("the DMC population died out at generation {0} (target {1}): the time step is likely too large for this trial function")]
    DiedOut(usize, usize),
    #[error("the DMC population exploded to {0} walkers at generation {1} (target {2}): the time step is likely too large for this trial function")]
    Exploded(usize, usize, usize),
    #[error("the DMC local energy became {0} at generation {1}")]
    NotFinite(f64, usize),
    /// A failure after which the last good generation was written to a checkpoint.
    #[error("{0}; the state after generation {1} (the last good one) is saved in {2}")]
    Saved(Box<DmcError>, usize, String),
    #[error("{0}")]
    Checkpoint(String),
    /// The engine's own failure (a GPU driver error).
    #[error("{0}")]
    Device(String),
    /// Parameters that cannot run.
    #[error("{0}")]
    Params(String),
}

impl DmcError {
    /// An engine's own error (`Ensemble::Error`) as the run's.
    pub fn device(e: impl std::fmt::Display) -> DmcError {
        DmcError::Device(e.to_string())
    }
}

/// The walkers of one rank as the DMC generation drives them: the one engine interface of every system.
pub trait Ensemble {
    /// Why an operation failed (the qmc driver's CPU walkers never fail; GPU engines report driver errors).
    type Error: std::fmt::Display;
    /// Walkers held.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The local energies of the last measurement, in walker order.
    fn energies(&self) -> Result<Vec<f64>, Self::Error>;
    /// One sweep of every walker and its measurement, for generation `gen`, walker k being walker `first + k` of
    /// all ranks (which names its random streams); the tally of the moves and the new local energies.
    fn advance(&mut self, gen: usize, first: usize) -> Result<(MoveStats, Vec<f64>), Self::Error>;
    /// Every generation's local energies and weights, before they are summed (an engine's finite-value tally).
    fn weighed(&mut self, _gen: usize, _energies: &[f64], _weights: &[f64]) {}
    /// Walker k becomes `copies[k]` walkers; then walkers move between ranks from `counts` (every rank's walkers
    /// after the copies) to `goals` (the same total).
    fn repopulate(&mut self, comm: &dyn Comm, copies: &[usize], counts: &[usize], goals: &[usize]) -> Result<Traffic, Self::Error>;
}

/// Everything of a DMC run that carries from one generation to the next besides the walkers; a checkpoint holds
/// it. Every rank holds the same copy: it is built from sums over ranks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accumulators {
    /// Generations done.
    pub gen: usize,
    /// Walkers on all ranks.
    pub population: usize,
    pub e_est: f64,
    pub e_trial: f64,
    /// Generation energies during equilibration (E_est forgets the start).
    pub recent: Vec<f64>,
    /// Measured generations: mixed-estimator energy and total weight.
    pub series: Vec<f64>,
    pub weights: Vec<f64>,
    pub var_sum: f64,
    pub pop_sum: f64,
    pub moves: MoveStats,
    pub walker_steps: u64,
}

impl Accumulators {
    /// The DMC energy of the measured generations after the first `skip`, weighted by their total weights, with the
    /// error bar of the blocking of that ratio.
    pub fn estimate(&self, skip: usize) -> Blocked {
        let skip = skip.min(self.series.len());
        weighted_blocking(&self.series[skip..], &self.weights[skip..])
    }
}

impl Pack for Accumulators {
    type Context = ();
    fn pack(&self, out: &mut Vec<u8>) {
        for v in [self.gen as u64, self.population as u64, self.moves.attempted, self.moves.accepted, self.walker_steps] {
            put_u64(out, v);
        }
        for v in [self.e_est, self.e_trial, self.var_sum, self.pop_sum, self.moves.r2_proposed, self.moves.r2_accepted] {
            put_f64(out, v);
        }
        for v in [&self.recent, &self.series, &self.weights] {
            put_f64s(out, v);
        }
    }
    fn unpack(_: &(), r: &mut Reader) -> Result<Accumulators, Truncated> {
        let (gen, population, attempted, accepted, walker_steps) = (r.u64()?, r.u64()?, r.u64()?, r.u64()?, r.u64()?);
        let (e_est, e_trial, var_sum, pop_sum, r2_proposed, r2_accepted) = (r.f64()?, r.f64()?, r.f64()?, r.f64()?, r.f64()?, r.f64()?);
        let (recent, series, weights) = (r.f64s()?, r.f64s()?, r.f64s()?);
        let moves = MoveStats { attempted, accepted, r2_proposed, r2_accepted };
        let (gen, population) = (gen as usize, population as usize);
        Ok(Accumulators { gen, population, e_est, e_trial, recent, series, weights, var_sum, pop_sum, moves, walker_steps })
    }
}

/// Where the time of one rank went, summed over generations. Compute is the walker moves and weights; reduce is the
/// generation's sum over ranks (mostly the wait for the slowest rank); migrate is the copies, the exchange and the
/// rebuild of walkers.
///
/// The per-generation extremes tell two causes of waiting apart: ranks waiting for one persistently slow rank
/// (then `compute_slowest_s`, the slowest rank's own total, is close to `compute_max_s`, the sum of each
/// generation's slowest compute, and shares by speed help), or for random stragglers, a different rank each
/// generation (then `compute_max_s` exceeds `compute_slowest_s`, and no plan can foresee them).
#[derive(Clone, Copy, Debug, Default)]
pub struct Timing {
    pub generations: u64,
    pub compute_s: f64,
    pub reduce_s: f64,
    pub migrate_s: f64,
    pub checkpoint_s: f64,
    /// Walkers and bytes this rank sent or received.
    pub migrated: u64,
    pub migrated_bytes: u64,
    /// Walkers this rank propagated, summed over generations.
    pub walkers: u64,
    /// Each generation's largest compute over ranks, summed over generations (the same on every rank).
    pub compute_max_s: f64,
    /// Each generation's largest wait in the sum over ranks, summed over generations (the same on every rank).
    pub reduce_max_s: f64,
    /// The largest over ranks of a rank's compute summed over generations (set at the end of a run).
    pub compute_slowest_s: f64,
}

impl Timing {
    fn add(&mut self, t: &Traffic) {
        self.migrate_s += t.seconds;
        self.migrated += t.walkers;
        self.migrated_bytes += t.bytes;
    }
}

fn largest(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |a, &b| a.max(b))
}

/// tau x (accepted / proposed mean-square displacement) of the moves `m`; tau itself before any move.
pub fn effective_tau(tau: f64, m: &MoveStats) -> f64 {
    if m.r2_proposed > 0.0 {
        tau * m.r2_accepted / m.r2_proposed
    } else {
        tau
    }
}

/// A DMC run in progress on one rank: its parameters, the state every rank shares, and this rank's timing.
#[derive(Debug)]
pub struct Dmc {
    pub p: Params,
    pub acc: Accumulators,
    pub timing: Timing,
    /// Every rank's walkers now.
    held: Vec<usize>,
    pace: Pace,
    /// This rank's wait in the last generation's sum: the next generation's sum carries it to every rank.
    last_reduce: f64,
    /// A lagged run's state ([`Control::Lagged`]).
    lag: Lag,
}

/// What a lagged run carries from one generation to the next ([`Control::Lagged`]).
#[derive(Debug, Default)]
struct Lag {
    /// The common weight of this rank's walkers (1 after a comb over all ranks), over `unit`: each generation's sum
    /// carries every rank's factor times its share, and that total normalises the generation's weights
    /// (`normalised`), so the unit is free; each fold moves it to the folded generation's total, which keeps the
    /// factor near 1.
    factor: f64,
    /// The factors' unit, the same on every rank (1 after a comb over all ranks).
    unit: f64,
    /// The sums started and not yet finished, oldest first.
    pending: VecDeque<Started>,
    /// Whether this generation combs over all ranks (decided from the last finished sum, the same on every rank).
    rebalance: bool,
    /// Generations that combed over all ranks.
    rebalances: u64,
}

/// A lagged generation's sum in flight: the generation's number, the estimate its variance sum was taken about and
/// the factors' unit it was taken in.
#[derive(Debug)]
struct Started {
    sum: Pending,
    gen: usize,
    e_ref: f64,
    unit: f64,
}

impl Dmc {
    /// The run at its start (one sum over ranks): from `resume`, the state a checkpoint held, or fresh from the
    /// walkers' energies (which must be measured).
    pub fn start<E: Ensemble>(comm: &dyn Comm, pop: &E, p: Params, resume: Option<Accumulators>) -> Result<Dmc, DmcError> {
        let (me, size) = (comm.rank(), comm.size());
        // every rank's population (one-hot), and at a fresh start the energies that start E_est
        let mut v = vec![0.0; 1 + size];
        v[1 + me] = pop.len() as f64;
        if resume.is_none() {
            v[0] = pop.energies().map_err(DmcError::device)?.iter().sum::<f64>();
        }
        comm.sum(&mut v);
        let held: Vec<usize> = v[1..].iter().map(|&c| c as usize).collect();
        let acc = match resume {
            Some(a) => a,
            None => {
                let (e, population) = (v[0] / held.iter().sum::<usize>() as f64, held.iter().sum());
                Accumulators { population, e_est: e, e_trial: e, ..Default::default() }
            }
        };
        if let Control::Lagged { spread, lag, .. } = p.control {
            if !(spread > 1.0) {
                return Err(DmcError::Params(format!("a lagged run's factor spread must exceed 1, not {spread}")));
            }
            if lag == 0 {
                return Err(DmcError::Params("a lagged run's sums must stay in flight at least 1 generation, not 0".into()));
            }
        }
        let lag = Lag { factor: 1.0, unit: 1.0, ..Default::default() };
        Ok(Dmc { p, acc, timing: Timing::default(), held, pace: Pace::new(size), last_reduce: 0.0, lag })
    }

    /// The DMC energy of the measured generations after the first `skip` (`Accumulators::estimate`).
    pub fn estimate(&self, skip: usize) -> Blocked {
        self.acc.estimate(skip)
    }

    /// One generation on this rank, with every other rank of `comm` doing the same (module docs). On an error the
    /// shared state (`acc`) is still that after the generation before, which a checkpoint can save; the walkers are
    /// not.
    pub fn generation<E: Ensemble>(&mut self, comm: &dyn Comm, pop: &mut E) -> Result<(), DmcError> {
        let p = self.p;
        let (me, size) = (comm.rank(), comm.size());
        // a lagged run's walkers are a generation ahead of the shared state for each of its sums in flight
        let gen = self.acc.gen + self.lag.pending.len();
        let first: usize = self.held[..me].iter().sum();
        let t = Instant::now();
        let (e_est, e_trial) = (self.acc.e_est, self.acc.e_trial);
        let old = pop.energies().map_err(DmcError::device)?;
        self.timing.walkers += old.len() as u64;
        let (m, new) = pop.advance(gen, first).map_err(DmcError::device)?;
        // tau_eff of the generations before this one (module docs): known before the sum
        let tau_eff = effective_tau(p.tau, &self.acc.moves);
        let cap = energy_cap(p.electrons, p.tau);
        let w: Vec<f64> = old.iter().zip(&new).map(|(&o, &e)| weight(o, e, e_est, e_trial - e_est, tau_eff, cap)).collect();
        pop.weighed(gen, &new, &w);
        // each walker's copies, under Branch: known before the sum, which carries their count
        let n: Vec<usize> = match p.control {
            Control::Branch { .. } => w.iter().enumerate().map(|(k, wk)| copies(*wk, stream(p.seed, 4, gen, first + k).random())).collect(),
            Control::Comb { .. } | Control::Lagged { .. } => vec![],
        };
        let compute = t.elapsed().as_secs_f64();
        self.timing.compute_s += compute;
        let t = Instant::now();
        // a lagged run: the sum started `lag` generations ago renormalises this rank's factor and says whether this
        // generation combs over all ranks (which then finishes the sums still in flight first)
        let lagged = matches!(p.control, Control::Lagged { .. });
        if let Control::Lagged { lag, .. } = p.control {
            self.fold_pending(comm, lag - 1)?;
        }
        // sum w, sum w E_L, sum w (E_L - E_est)^2 over all walkers of all ranks (E_est, known to all, keeps the
        // variance free of cancellation: the estimate this generation's sum is folded against, which a lagged run's
        // fold may just have moved); the weights of a lagged run's walkers times their rank's factor (1 else)
        let (f, e_ref) = (self.lag.factor, self.acc.e_est);
        let mut s = [0.0; 3];
        for (wk, e) in w.iter().zip(&new) {
            s[0] += f * wk;
            s[1] += f * wk * e;
            s[2] += f * wk * (e - e_ref).powi(2);
        }
        // the generation's one sum: move statistics, weights, then per rank its population after branching (under
        // the combs its weight total, from which every rank derives every rank's copies), its compute time in this
        // generation and its wait in the last generation's sum; a lagged run's, then, its factor times its share
        let mut v = vec![0.0; 7 + 3 * size + usize::from(lagged)];
        v[..7].copy_from_slice(&[m.attempted as f64, m.accepted as f64, m.r2_proposed, m.r2_accepted, s[0], s[1], s[2]]);
        v[7 + me] = match p.control {
            Control::Branch { .. } => n.iter().sum::<usize>() as f64,
            Control::Comb { .. } | Control::Lagged { .. } => s[0],
        };
        (v[7 + size + me], v[7 + 2 * size + me]) = (compute, self.last_reduce);
        if lagged {
            v[7 + 3 * size] = f * self.held[me] as f64;
            if !self.lag.rebalance {
                return self.comb_own(comm, pop, gen, &w, v, t, e_ref);
            }
        }
        comm.sum(&mut v);
        self.last_reduce = t.elapsed().as_secs_f64();
        self.timing.reduce_s += self.last_reduce;
        self.times(&v[7 + size..], size);
        let (n, counts) = match p.control {
            Control::Branch { .. } => (n, v[7..7 + size].iter().map(|&c| c as usize).collect::<Vec<usize>>()),
            Control::Comb { .. } | Control::Lagged { .. } => {
                // tooth k at (k + xi) W / N along all ranks' weights in rank order; W summed as `teeth` sums it
                let totals = &v[7..7 + size];
                let xi = comb_offset(p.seed, gen);
                let ranges = teeth(totals, p.target, xi);
                let (before, all): (f64, f64) = (totals[..me].iter().sum(), totals.iter().sum());
                let fw: Vec<f64> = w.iter().map(|wk| f * wk).collect();
                let n = comb_copies(&fw, before, all, p.target, xi, ranges[me].clone());
                (n, ranges.iter().map(|r| r.len()).collect())
            }
        };
        let total: usize = counts.iter().sum();
        // the comb above takes the weights in the factors' unit, the estimator in the target's
        let e_gen = measured(&mut self.acc, &p, gen, &normalised(v.clone(), size, p.target).0, total, e_ref)?;
        let goals = match p.control {
            Control::Branch { balance, .. } | Control::Comb { balance } | Control::Lagged { balance, .. } => self.pace.goals(total, balance),
        };
        self.repopulate(comm, pop, &n, &counts, &goals)?;
        self.held = goals;
        estimated(&mut self.acc, &p, gen, e_gen, total);
        if lagged {
            // the comb over all ranks gives every walker the same weight (no sum in flight keeps an older unit)
            (self.lag.factor, self.lag.unit, self.lag.rebalance) = (1.0, 1.0, false);
            self.lag.rebalances += 1;
        }
        self.timing.generations += 1;
        Ok(())
    }

    /// The engine's copies and migration (`Ensemble::repopulate`), timed into the run's timing.
    fn repopulate<E: Ensemble>(&mut self, comm: &dyn Comm, pop: &mut E, n: &[usize], counts: &[usize], goals: &[usize]) -> Result<(), DmcError> {
        let t = Instant::now();
        let mut traffic = pop.repopulate(comm, n, counts, goals).map_err(DmcError::device)?;
        traffic.seconds = t.elapsed().as_secs_f64();
        self.timing.add(&traffic);
        Ok(())
    }

    /// The per-rank compute times and last waits of a generation's sum (`v`: compute then waits, a slot a rank) into
    /// the timing and the pace.
    fn times(&mut self, v: &[f64], size: usize) {
        let (computes, waits) = (&v[..size], &v[size..2 * size]);
        self.timing.compute_max_s += largest(computes);
        if self.timing.generations > 0 {
            self.timing.reduce_max_s += largest(waits);
        }
        self.pace.update(computes, &self.held);
    }

    /// A lagged generation's own comb ([`Control::Lagged`]): this rank's walkers (weights `w`) combed to its share,
    /// and the generation's sum `v` started, to be finished in the next generation, whose fold sets the rank's factor
    /// (`t`: when this rank began to meet the others; `e_ref`: the estimate its variance sum was taken about).
    #[allow(clippy::too_many_arguments)]
    fn comb_own<E: Ensemble>(&mut self, comm: &dyn Comm, pop: &mut E, gen: usize, w: &[f64], v: Vec<f64>, t: Instant, e_ref: f64) -> Result<(), DmcError> {
        let (p, me) = (self.p, comm.rank());
        let (own, share) = (w.iter().sum::<f64>(), self.held[me]);
        let n = if own.is_finite() {
            // the share's walkers now weigh `own` together: each carries own / share of the rank's factor
            self.lag.factor *= own / share as f64;
            comb_copies(w, 0.0, own, share, stream(p.seed, 0xB4AA, gen, me).random::<f64>(), 0..share)
        } else {
            vec![1; w.len()] // the sum carries the NaN to every rank, which stops at its fold of this generation
        };
        self.lag.pending.push_back(Started { sum: comm.start_sum(v), gen, e_ref, unit: self.lag.unit });
        self.last_reduce = t.elapsed().as_secs_f64();
        self.timing.reduce_s += self.last_reduce;
        let held = self.held.clone();
        self.repopulate(comm, pop, &n, &held, &held)?;
        if !own.is_finite() {
            return Err(DmcError::NotFinite(own, gen));
        }
        self.timing.generations += 1;
        Ok(())
    }

    /// Finish and fold in the oldest started sums until `keep` are left in flight, or all of them once a fold has
    /// decided that this generation combs over all ranks (lagged runs): the run's shared state, this rank's factor in
    /// the unit of the folded generation, and whether to comb over all ranks.
    fn fold_pending(&mut self, comm: &dyn Comm, keep: usize) -> Result<(), DmcError> {
        let Control::Lagged { spread, balance, .. } = self.p.control else { return Ok(()) };
        while self.lag.pending.len() > if self.lag.rebalance { 0 } else { keep } {
            let Started { sum, gen, e_ref, unit } = self.lag.pending.pop_front().expect("a sum in flight");
            let (p, size) = (self.p, comm.size());
            let (v, c) = normalised(comm.finish_sum(sum), size, p.target);
            // the unit of that generation's total (c in the unit it was taken in, which later folds may since have
            // moved: dividing by c alone would divide by the same drift again at every fold in flight)
            let to = c * unit;
            self.lag.factor *= self.lag.unit / to;
            self.lag.unit = to;
            self.times(&v[7 + size..], size);
            let e_gen = measured(&mut self.acc, &p, gen, &v, p.target, e_ref)?;
            estimated(&mut self.acc, &p, gen, e_gen, p.target);
            // rank r's walkers weighed its total over its share after that generation's own comb
            let factors: Vec<f64> = (0..size).map(|r| v[7 + r] / self.held[r] as f64).collect();
            let (lo, hi) = factors.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
            self.lag.rebalance |= hi > spread * lo;
            // by speed: shares that no longer match the paces (every rank folds the same paces, so all agree)
            if balance == Balance::Speed {
                let goals = self.pace.goals(p.target, balance);
                self.lag.rebalance |= goals.iter().zip(&self.held).any(|(&g, &h)| g.abs_diff(h) as f64 > MARGIN * h as f64);
            }
        }
        Ok(())
    }

    /// Fold in a lagged run's last started sum, so that the shared state (`acc`) holds every generation run; nothing
    /// to do for the other controls. Call it after the last generation, before reading the estimate.
    pub fn finish(&mut self, comm: &dyn Comm) -> Result<(), DmcError> {
        if let Control::Lagged { .. } = self.p.control {
            let t = Instant::now();
            self.fold_pending(comm, 0)?;
            self.last_reduce = t.elapsed().as_secs_f64();
            self.timing.reduce_s += self.last_reduce;
        }
        Ok(())
    }

    /// Generations of a lagged run that combed over all ranks ([`Control::Lagged`]).
    pub fn rebalances(&self) -> u64 {
        self.lag.rebalances
    }

    /// The timing of the run so far: the mean over ranks of the per-rank sums (every rank gets the same), and this
    /// rank's own, both with the extremes over ranks completed (one sum over ranks).
    pub fn timing_over_ranks(&self, comm: &dyn Comm) -> (Timing, Timing) {
        let (me, n) = (comm.rank(), comm.size());
        let t = self.timing;
        let mut v = vec![0.0; 7 + 2 * n];
        v[..7].copy_from_slice(&[t.compute_s, t.reduce_s, t.migrate_s, t.checkpoint_s, t.migrated as f64, t.migrated_bytes as f64, t.walkers as f64]);
        // the wait in the last generation's sum, which no generation's sum carried (each carries the one before)
        (v[7 + me], v[7 + n + me]) = (t.compute_s, self.last_reduce);
        comm.sum(&mut v);
        let mut own = t;
        own.compute_slowest_s = largest(&v[7..7 + n]);
        if t.generations > 0 {
            own.reduce_max_s += largest(&v[7 + n..]);
        }
        let m = n as f64;
        let mut mean = own;
        (mean.compute_s, mean.reduce_s, mean.migrate_s, mean.checkpoint_s) = (v[0] / m, v[1] / m, v[2] / m, v[3] / m);
        (mean.migrated, mean.migrated_bytes, mean.walkers) = ((v[4] / m) as u64, (v[5] / m) as u64, (v[6] / m) as u64);
        (mean, own)
    }
}



/// A lagged generation's sum `v` over `size` ranks with its weights in the unit of a target population: its weight
/// sums and the ranks' totals divided by c, the ranks' factors times their shares (its last value) over the target;
/// and c (1 for the other controls' sums, which carry no such value and come back as they are).
fn normalised(mut v: Vec<f64>, size: usize, target: usize) -> (Vec<f64>, f64) {
    if v.len() == 7 + 3 * size {
        return (v, 1.0);
    }
    let c = v[7 + 3 * size] / target as f64;
    for x in v[4..7 + size].iter_mut() {
        *x /= c;
    }
    (v, c)
}

/// Generation `gen`'s sum `v` (move statistics, then sum w, sum w E_L, sum w (E_L - e_ref)^2, `e_ref` the estimate
/// before it) into the run's state, with `total` walkers after it: the error of a non-finite energy or a population
/// that died out or exploded, the moves and, past equilibration, the estimator's series; its energy.
fn measured(acc: &mut Accumulators, p: &Params, gen: usize, v: &[f64], total: usize, e_ref: f64) -> Result<f64, DmcError> {
    let s = [v[4], v[5], v[6]];
    let e_gen = s[1] / s[0];
    if !e_gen.is_finite() {
        return Err(DmcError::NotFinite(e_gen, gen));
    } else if total == 0 {
        return Err(DmcError::DiedOut(gen, p.target));
    } else if total > 10 * p.target {
        return Err(DmcError::Exploded(total, gen, p.target));
    }
    if gen >= p.equil {
        acc.var_sum += s[2] - s[0] * (e_gen - e_ref).powi(2); // sum w (E_L - e_gen)^2
        acc.pop_sum += acc.population as f64;
        acc.series.push(e_gen);
        acc.weights.push(s[0]);
    }
    acc.walker_steps += acc.population as u64;
    acc.moves.add(&MoveStats { attempted: v[0] as u64, accepted: v[1] as u64, r2_proposed: v[2], r2_accepted: v[3] });
    Ok(e_gen)
}

/// After generation `gen` of energy `e_gen`, `total` walkers: E_est (during equilibration the mean of the last
/// generations, forgetting the start, then the mean of all measured generations), the trial energy, the
/// generation count.
fn estimated(acc: &mut Accumulators, p: &Params, gen: usize, e_gen: f64, total: usize) {
    if gen < p.equil {
        acc.recent.push(e_gen);
        let keep = (acc.recent.len() / 2).max(1);
        acc.e_est = acc.recent[acc.recent.len() - keep..].iter().sum::<f64>() / keep as f64;
    } else {
        let wsum: f64 = acc.weights.iter().sum();
        acc.e_est = acc.series.iter().zip(&acc.weights).map(|(e, w)| e * w).sum::<f64>() / wsum;
    }
    acc.population = total;
    acc.e_trial = match p.control {
        Control::Branch { feedback, .. } => acc.e_est - (total as f64 / p.target as f64).ln() / (feedback * effective_tau(p.tau, &acc.moves)),
        Control::Comb { .. } | Control::Lagged { .. } => acc.e_est,
    };
    acc.gen += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ensemble::comm::{share, Solo, Threads};
    use crate::ensemble::pack::{put_f64, Pack, Reader, Truncated};
    use crate::ensemble::population::{branch, migrate_to};

    /// A walker of the toy: its local energy.
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Energy(f64);
    impl Pack for Energy {
        type Context = ();
        fn pack(&self, out: &mut Vec<u8>) {
            put_f64(out, self.0);
        }
        fn unpack(_: &(), r: &mut Reader) -> Result<Energy, Truncated> {
            Ok(Energy(r.f64()?))
        }
    }

    /// A toy ensemble: a step moves each walker's energy halfway to `mean` plus a uniform kick of +-`spread` from
    /// its own stream (global walker index), so the weights spread and the population control has work; a walker
    /// set to poison makes a NaN.
    struct Toy {
        walkers: Vec<Energy>,
        mean: f64,
        spread: f64,
        poison: Option<usize>,
        /// A slower core: each generation sleeps this long a walker.
        delay: std::time::Duration,
    }

    impl Ensemble for Toy {
        type Error = std::convert::Infallible;
        fn len(&self) -> usize {
            self.walkers.len()
        }
        fn energies(&self) -> Result<Vec<f64>, Self::Error> {
            Ok(self.walkers.iter().map(|w| w.0).collect())
        }
        fn advance(&mut self, gen: usize, first: usize) -> Result<(MoveStats, Vec<f64>), Self::Error> {
            for (k, w) in self.walkers.iter_mut().enumerate() {
                let u: f64 = stream(11, 5, gen, first + k).random();
                w.0 = 0.5 * (w.0 + self.mean) + self.spread * (2.0 * u - 1.0);
            }
            if let Some(k) = self.poison {
                self.walkers[k].0 = f64::NAN;
            }
            std::thread::sleep(self.delay * self.walkers.len() as u32);
            let n = self.walkers.len() as u64;
            Ok((MoveStats { attempted: n, accepted: n / 2, r2_proposed: 0.0, r2_accepted: 0.0 }, self.energies()?))
        }
        fn repopulate(&mut self, comm: &dyn Comm, copies: &[usize], counts: &[usize], goals: &[usize]) -> Result<Traffic, Self::Error> {
            self.walkers = branch(std::mem::take(&mut self.walkers), copies);
            assert_eq!(self.walkers.len(), counts[comm.rank()], "this rank's copies are what every rank counted for it");
            Ok(migrate_to(comm, &mut self.walkers, counts, goals, &()))
        }
    }

    fn toy(ks: std::ops::Range<usize>) -> Toy {
        Toy { walkers: ks.map(|k| Energy(-1.0 + 0.01 * k as f64)).collect(), mean: -1.0, spread: 0.5, poison: None, delay: Default::default() }
    }

    fn params(target: usize, control: Control) -> Params {
        Params { target, tau: 0.1, seed: 3, electrons: 2, equil: 5, control }
    }

    /// Under the comb the population is its target after every generation, every rank holds its equal share, the
    /// trial energy is the estimate, every rank holds the same state, and after equilibration the estimate is the
    /// weighted mean of the measured generations.
    #[test]
    fn the_comb_holds_the_target_and_every_rank_its_share() {
        let out = Threads::run(3, |c| {
            let (first, n) = share(13, c.rank(), 3);
            let mut pop = toy(first..first + n);
            let mut d = Dmc::start(c, &pop, params(13, Control::Comb { balance: Balance::Equal }), None).unwrap();
            for _ in 0..30 {
                d.generation(c, &mut pop).unwrap();
                assert_eq!((d.acc.population, pop.len()), (13, n), "rank {}", c.rank());
                assert_eq!(d.acc.e_trial, d.acc.e_est);
            }
            (d.acc.clone(), d.timing.migrated)
        });
        assert!(out.iter().all(|o| o.0 == out[0].0), "every rank holds the same state");
        let a = &out[0].0;
        assert_eq!((a.gen, a.series.len()), (30, 25));
        let mean = a.series.iter().zip(&a.weights).map(|(e, w)| e * w).sum::<f64>() / a.weights.iter().sum::<f64>();
        assert!((a.e_est - mean).abs() < 1e-12, "{} vs {mean}", a.e_est);
        assert!((a.e_est + 1.0).abs() < 0.1, "the toy's energies sit about -1: {}", a.e_est);
        assert!(out.iter().map(|o| o.1).sum::<u64>() > 0, "no walker moved between ranks: the test did not exercise the exchange");
    }

    /// Under the comb with shares by speed, a rank slower per walker (200 us a walker against the toy's
    /// microseconds for all of them) ends up holding fewer walkers than the others, while the population stays at
    /// its target and every rank holds the same state.
    #[test]
    fn the_comb_by_speed_gives_a_slow_rank_fewer_walkers() {
        let out = Threads::run(3, |c| {
            let (first, n) = share(30, c.rank(), 3);
            let mut pop = toy(first..first + n);
            if c.rank() == 1 {
                pop.delay = std::time::Duration::from_micros(200);
            }
            let mut d = Dmc::start(c, &pop, params(30, Control::Comb { balance: Balance::Speed }), None).unwrap();
            for _ in 0..20 {
                d.generation(c, &mut pop).unwrap();
                assert_eq!(d.acc.population, 30);
            }
            (d.acc.clone(), pop.len())
        });
        assert!(out.iter().all(|o| o.0 == out[0].0), "every rank holds the same state");
        let held: Vec<usize> = out.iter().map(|o| o.1).collect();
        assert_eq!(held.iter().sum::<usize>(), 30);
        assert!(held[1] < held[0] && held[1] < held[2], "the slow rank holds {held:?}");
    }

    /// Lagged ranks with shares by speed: a rank slower per walker (as in the comb's test above) ends up holding
    /// fewer walkers, the population stays at its target, every rank holds the same state, and the estimate agrees
    /// with the comb's over all ranks within their error bars; with factors free to spread a billionfold, only the
    /// paces call the combs over all ranks that move the shares.
    #[test]
    fn lagged_shares_by_speed_give_a_slow_rank_fewer_walkers() {
        let comb = Threads::run(3, |c| {
            let (first, n) = share(30, c.rank(), 3);
            let mut pop = toy(first..first + n);
            let mut d = Dmc::start(c, &pop, params(30, Control::Comb { balance: Balance::Equal }), None).unwrap();
            for _ in 0..300 {
                d.generation(c, &mut pop).unwrap();
            }
            d.acc.estimate(0)
        });
        for (spread, gens) in [(LAGGED_SPREAD, 300), (1e9, 30)] {
            let out = Threads::run(3, |c| {
                let (first, n) = share(30, c.rank(), 3);
                let mut pop = toy(first..first + n);
                if c.rank() == 1 {
                    pop.delay = std::time::Duration::from_micros(200);
                }
                let control = Control::Lagged { spread, lag: 1, balance: Balance::Speed };
                let mut d = Dmc::start(c, &pop, params(30, control), None).unwrap();
                for _ in 0..gens {
                    d.generation(c, &mut pop).unwrap();
                }
                d.finish(c).unwrap();
                (d.acc.clone(), pop.len(), d.rebalances())
            });
            assert!(out.iter().all(|o| o.0 == out[0].0), "spread {spread}: every rank holds the same state");
            let held: Vec<usize> = out.iter().map(|o| o.1).collect();
            assert_eq!((held.iter().sum::<usize>(), out[0].0.population, out[0].0.gen), (30, 30, gens), "spread {spread}");
            if gens == 300 {
                let (a, b) = (out[0].0.estimate(0), &comb[0]);
                let z = (a.mean - b.mean) / a.error.hypot(b.error);
                assert!(z.abs() < 4.0, "{} +- {}, comb {} +- {}", a.mean, a.error, b.mean, b.error);
            }
            assert!(held[1] < held[0] && held[1] < held[2], "spread {spread}: the slow rank holds {held:?}");
            assert!(out[0].2 > 0, "spread {spread}: no comb over all ranks");
        }
    }

    /// A lagged run of 3 thread ranks, its sums in flight 1 and 3 generations: every rank keeps its share in every
    /// generation (no walker migrates but in the generations that comb over all ranks, which the toy's wide weights
    /// make happen, though not in every generation), every rank ends with the same state, which holds every
    /// generation once finished, two runs of one seed are the same run, and the estimate agrees with the comb's over
    /// all ranks within their error bars.
    #[test]
    fn lagged_ranks_keep_their_shares_and_agree_with_the_comb() {
        let run = |control: Control| {
            Threads::run(3, |c| {
                let (first, n) = share(30, c.rank(), 3);
                let mut pop = toy(first..first + n);
                let mut d = Dmc::start(c, &pop, params(30, control), None).unwrap();
                for g in 0..400 {
                    d.generation(c, &mut pop).unwrap();
                    if let Control::Lagged { .. } = control {
                        assert_eq!(pop.len(), n, "rank {} at generation {g}", c.rank());
                    }
                }
                d.finish(c).unwrap();
                (d.acc.clone(), d.rebalances(), d.timing.migrated)
            })
        };
        let comb = run(Control::Comb { balance: Balance::Equal });
        let mut means = vec![];
        for lag in [1, 3] {
            let control = Control::Lagged { spread: LAGGED_SPREAD, lag, balance: Balance::Equal };
            let lagged = run(control);
            assert!(lagged.iter().all(|o| o.0 == lagged[0].0), "lag {lag}: every rank holds the same state");
            let (acc, rebalances, _) = &lagged[0];
            assert_eq!((acc.gen, acc.series.len(), acc.population), (400, 395, 30), "lag {lag}");
            assert!(*rebalances > 0 && *rebalances < 200, "lag {lag}: {rebalances} generations of 400 combed over all ranks");
            assert!(lagged.iter().map(|o| o.2).sum::<u64>() > 0, "lag {lag}: no walker moved in the combs over all ranks");
            assert_eq!(run(control)[0].0, *acc, "lag {lag}: one seed, one run");
            let (a, b) = (acc.estimate(0), comb[0].0.estimate(0));
            let z = (a.mean - b.mean) / a.error.hypot(b.error);
            assert!(z.abs() < 4.0, "lag {lag}: {} +- {}, comb {} +- {}", a.mean, a.error, b.mean, b.error);
            // the weighted variance of the local energy, each generation's taken about the estimate its sum used
            let var = |a: &Accumulators| a.var_sum / a.weights.iter().sum::<f64>();
            assert!((var(acc) / var(&comb[0].0) - 1.0).abs() < 0.1, "lag {lag}: variance {} against the comb's {}", var(acc), var(&comb[0].0));
            means.push(a.mean);
        }
        assert!(means[0] != comb[0].0.estimate(0).mean && means[1] != means[0], "each lagged run is a run of its own");
    }

    /// One rank runs a lagged run alone (the blocking default of a started sum), its sums in flight 1 and 2
    /// generations (the shared state that many behind until finished); a factor spread of 1 or less and a lag of 0
    /// are refused; a NaN stops the generation that made it.
    #[test]
    fn a_lagged_run_on_one_rank_and_its_errors() {
        let mut pop = toy(0..16);
        for control in [Control::Lagged { spread: 1.0, lag: 1, balance: Balance::Equal }, Control::Lagged { spread: LAGGED_SPREAD, lag: 0, balance: Balance::Equal }] {
            let e = Dmc::start(&Solo, &pop, params(16, control), None).unwrap_err();
            assert!(matches!(e, DmcError::Params(_)), "{control:?}: {e}");
        }
        for lag in [1, 2] {
            let mut d = Dmc::start(&Solo, &pop, params(16, Control::Lagged { spread: LAGGED_SPREAD, lag, balance: Balance::Equal }), None).unwrap();
            for g in 0..20 {
                d.generation(&Solo, &mut pop).unwrap();
                assert_eq!((pop.len(), d.acc.gen), (16, (g + 1usize).saturating_sub(lag)), "lag {lag}");
            }
            assert_eq!(d.rebalances(), 0, "one rank's factor has nothing to spread against");
            d.finish(&Solo).unwrap();
            assert_eq!(d.acc.gen, 20);
            pop.poison = Some(3);
            let e = d.generation(&Solo, &mut pop).unwrap_err();
            assert!(matches!(e, DmcError::NotFinite(x, 20) if x.is_nan()), "lag {lag}: {e}");
            pop = toy(0..16);
        }
    }

    /// The factors' unit follows the weights without feedback: over 3,000 generations of one rank at lags 1 to 4,
    /// with no comb over all ranks to reset it, the rank's factor stays within a factor 2 of 1 (2,000 generations of
    /// the 14-electron gas over two ranks at lag 4 once ended in an infinite factor, each fold dividing by a drift
    /// that the folds before it had already divided out), and every generation is measured.
    #[test]
    fn a_lagged_factor_stays_near_one_at_every_lag() {
        for lag in 1..=4 {
            let mut pop = toy(0..16);
            let mut d = Dmc::start(&Solo, &pop, params(16, Control::Lagged { spread: LAGGED_SPREAD, lag, balance: Balance::Equal }), None).unwrap();
            for g in 0..3000 {
                d.generation(&Solo, &mut pop).unwrap();
                assert!((0.5..2.0).contains(&d.lag.factor), "lag {lag}, generation {g}: factor {}", d.lag.factor);
            }
            d.finish(&Solo).unwrap();
            assert_eq!((d.acc.gen, d.rebalances()), (3000, 0), "lag {lag}");
        }
    }

    /// Under branching the population varies about its target, held by the trial energy: above the target E_T is
    /// below E_est, below it above; two runs of one seed are the same run.
    #[test]
    fn branching_holds_the_population_near_its_target_by_the_trial_energy() {
        let run = || {
            let mut pop = toy(0..200);
            let mut d = Dmc::start(&Solo, &pop, params(200, Control::Branch { feedback: 10.0, balance: Balance::Equal }), None).unwrap();
            let mut seen = vec![];
            for _ in 0..100 {
                d.generation(&Solo, &mut pop).unwrap();
                let (n, shift) = (d.acc.population, d.acc.e_trial - d.acc.e_est);
                assert!((100..=400).contains(&n), "population {n}");
                assert!(n == 200 || (n > 200) == (shift < 0.0), "population {n}, E_T - E_est {shift}");
                seen.push(n);
            }
            (seen, d.acc)
        };
        let (seen, acc) = run();
        assert!(seen.iter().any(|&n| n != 200), "the population never moved: branching did nothing");
        assert_eq!(run().1, acc, "one seed, one run");
    }

    /// A NaN local energy stops the generation with its error and leaves the shared state as it was, so a
    /// checkpoint saves the last good generation.
    #[test]
    fn a_nan_energy_stops_the_generation_and_keeps_the_last_good_state() {
        for control in [Control::Comb { balance: Balance::Equal }, Control::Branch { feedback: 10.0, balance: Balance::Equal }] {
            let mut pop = toy(0..16);
            let mut d = Dmc::start(&Solo, &pop, params(16, control), None).unwrap();
            for _ in 0..3 {
                d.generation(&Solo, &mut pop).unwrap();
            }
            let good = d.acc.clone();
            pop.poison = Some(7);
            let e = d.generation(&Solo, &mut pop).unwrap_err();
            assert!(matches!(e, DmcError::NotFinite(x, 3) if x.is_nan()), "{control:?}: {e}");
            assert_eq!(d.acc, good, "{control:?}");
        }
    }
}
