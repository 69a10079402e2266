//! Diffusion Monte Carlo with importance sampling (Reynolds, Ceperley, Alder and Lester 1982; Umrigar, Nightingale
//! and Runge 1993), as paper 000 runs it: each generation every walker makes a sweep of single-electron
//! drift-diffusion moves accepted by Metropolis-Hastings (fixed-node: a sign change is rejected), then carries the
//! branching weight
//!     w = exp(-tau_eff [ (E_L(R) + E_L(R')) / 2 - E_T ]),
//! and is replaced by floor(w + xi) copies. The small-time-step improvements:
//!
//! - the limited drift (`walker::drift`), UNR's remedy for the divergent drift near nodes and nuclei,
//! - the local energy in the weight limited to E_est +- 0.2 sqrt(N / tau) (Zen, Sorella, Gillan, Michaelides and
//!   Alfè 2016), which stops a walker near a node from branching wildly. UNR's own limit, (E_est - E_L) scaled by
//!   |v_bar| / |v|, was tried first: it acts near the nuclei too, where E_L is finite with cusp-correct orbitals,
//!   and it moved He at tau = 0.04 by 1.2 mHa (-2.9005(4) against -2.9017(5) without any limit; -2.9031(3) with
//!   this one and a full equilibration),
//! - tau_eff = tau x (accepted / proposed mean-square displacement), accumulated over the run, so rejected moves do
//!   not make walkers branch as though they had diffused. A generation's weights use the ratio of the generations
//!   before it (tau itself in the first): that lets the generation's move statistics travel in the same one sum as
//!   its weights and populations (one synchronisation of the ranks a generation, not three). The ratio is a mean
//!   over every generation so far, so leaving the current one out changes it by O(1/g) of its own fluctuation,
//!   and the weights of a generation no longer correlate with that generation's own acceptance.
//!
//! The trial energy follows the population: E_T = E_est - ln(N / N_target) / (g tau_eff), which pulls the population
//! back to its target over about g generations. The energy is the mixed estimator over the generations after
//! equilibration, sum_g S_g / sum_g W_g with S_g = sum w E_L and W_g = sum w of generation g, and its error bar is
//! that of this ratio: the blocking of its projected fluctuations ([`weighted_blocking`]), not of the generation
//! averages as an unweighted series. The energy's inefficiency is about 1.1/Ha of imaginary time at every tau for
//! He (0.35/Ha for the 14-electron gas, 0.035/Ha for Be), and a converged error bar needs 256 of them
//! (`blocking`), so a run measures about 300/Ha (He), 90/Ha (gas) or 9/Ha (Be) at least, twice that to converge
//! reliably, whatever tau (`qmc --dmc-time`).
//!
//! Across ranks ([`comm`](crate::ensemble::comm)): each rank propagates its share of the walkers; the generation's energy,
//! weight, move statistics and populations (and each rank's compute time and last wait, for the records and the
//! balance) are summed over ranks in one sum, so the trial energy is global; after branching,
//! [`population::migrate_to`] moves walkers point to point until every rank holds its goal: its equal share, or
//! with [`Balance::Speed`] a share by its measured speed ([`balance`](crate::ensemble::balance)). Walker k of the global
//! order (rank 0's first) draws its moves and its branching number from streams named by (seed, generation, k):
//! with equal shares and a given number of ranks a run is reproducible, and a run restarted from a checkpoint
//! continues the same chains bit for bit (with shares by speed, which depend on timings, they agree statistically).

use crate::ensemble::balance::{Balance, Pace};
use super::blocking::weighted_blocking;
use super::checkpoint::{self, Header};
use crate::ensemble::comm::{share, Comm, Solo};
use super::engine::Population;
use crate::ensemble::pack::{put_f64, put_f64s, put_u64, unpack_all, Pack, Reader, Truncated};
use crate::ensemble::population::{copies, energy_cap, weight, Traffic};
use super::vmc::Estimate;
use crate::rng::stream;
use super::walker::Walker;
use crate::ensemble::moves::MoveStats;
use super::System;
use rand::Rng;
use std::path::PathBuf;
use std::time::Instant;

/// Parameters of a DMC run.
#[derive(Clone, Copy, Debug)]
pub struct DmcParams {
    /// Target population (over all ranks).
    pub walkers: usize,
    /// Measured generations after equilibration.
    pub steps: usize,
    /// Generations discarded first.
    pub equil: usize,
    pub tau: f64,
    pub seed: u64,
    /// Population feedback time g, in generations.
    pub feedback: f64,
    /// How walkers are spread over ranks after branching.
    pub balance: Balance,
}

/// The imaginary time DMC spends equilibrating at least, in 1/Ha. The excess of the VMC start over the DMC energy
/// decays as exp(-gap t), the gap being that to the first excited state of the same symmetry (0.73 Ha for He,
/// 0.45 Ha for H2): after 10/Ha the 25-35 mHa VMC excess is down to 0.3 mHa (H2) or far less, and still falling.
/// A run with 50 generations of 0.02 (1/Ha) was 22 mHa off for He.
pub const MIN_EQUIL_TIME: f64 = 10.0;

/// Generations discarded: --equil, but at least MIN_EQUIL_TIME of imaginary time.
pub fn equilibration(p: &DmcParams) -> usize {
    p.equil.max((MIN_EQUIL_TIME / p.tau).ceil() as usize)
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
    /// The walker population's own failure (a GPU driver error).
    #[error("{0}")]
    Device(String),
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
    /// Generation energies during equilibration (E_est forgets the VMC start).
    pub recent: Vec<f64>,
    /// Measured generations: mixed-estimator energy and total weight.
    pub series: Vec<f64>,
    pub weights: Vec<f64>,
    pub var_sum: f64,
    pub pop_sum: f64,
    pub moves: MoveStats,
    pub walker_steps: u64,
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

/// Where and how often a run writes its checkpoint.
#[derive(Clone, Debug)]
pub struct Checkpointing {
    pub path: PathBuf,
    /// Write after every this many generations (and after the last).
    pub every: usize,
    /// Write and stop after this generation (a job that must end before its time limit; the restart test).
    pub stop_after: Option<usize>,
}

/// Where the time of one rank went, summed over generations. Compute is the walker moves; reduce is the
/// generation's sum over ranks (mostly the wait for the slowest rank); migrate is packing, exchanging and rebuilding
/// walkers.
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
    /// The end of a run: the mean over ranks of the per-rank sums (every rank gets the same), and this rank's own,
    /// both with the extremes over ranks completed. `last_reduce` is this rank's wait in the last generation's sum,
    /// which no generation's sum carried (each carries the wait of the one before).
    fn over_ranks(self, comm: &dyn Comm, last_reduce: f64) -> (Timing, Timing) {
        let (me, n) = (comm.rank(), comm.size());
        let mut v = vec![0.0; 7 + 2 * n];
        v[..7].copy_from_slice(&[self.compute_s, self.reduce_s, self.migrate_s, self.checkpoint_s, self.migrated as f64, self.migrated_bytes as f64, self.walkers as f64]);
        (v[7 + me], v[7 + n + me]) = (self.compute_s, last_reduce);
        comm.sum(&mut v);
        let mut own = self;
        own.compute_slowest_s = largest(&v[7..7 + n]);
        if self.generations > 0 {
            own.reduce_max_s += largest(&v[7 + n..]);
        }
        let m = n as f64;
        let mut mean = own;
        (mean.compute_s, mean.reduce_s, mean.migrate_s, mean.checkpoint_s) = (v[0] / m, v[1] / m, v[2] / m, v[3] / m);
        (mean.migrated, mean.migrated_bytes, mean.walkers) = ((v[4] / m) as u64, (v[5] / m) as u64, (v[6] / m) as u64);
        (mean, own)
    }
    fn add(&mut self, t: &Traffic) {
        self.migrate_s += t.seconds;
        self.migrated += t.walkers;
        self.migrated_bytes += t.bytes;
    }
}

fn largest(x: &[f64]) -> f64 {
    x.iter().fold(0.0, |a, &b| a.max(b))
}

/// What a run returns: the estimate (None when it stopped early at `stop_after`) and where the time went.
#[derive(Clone, Debug)]
pub struct Report {
    pub estimate: Option<Estimate>,
    /// Means over ranks (extremes over ranks where the field says so): the same on every rank.
    pub timing: Timing,
    /// This rank's own timing and walkers.
    pub own: Timing,
    /// Generations done, counting those before a restart.
    pub generations: usize,
}

/// Run DMC on one rank from `walkers` (equilibrated VMC walkers; their number should be the target).
pub fn run(sys: &System, p: &DmcParams, walkers: Vec<Walker>) -> Result<Estimate, DmcError> {
    Ok(run_on(sys, p, &Solo, walkers, None, None, &sys.name)?.estimate.expect("a run without stop_after finishes"))
}

/// The header a checkpoint of this run carries; `system` names the system with its parameters.
pub fn header(system: &str, p: &DmcParams) -> Header {
    Header { system: system.into(), walkers: p.walkers as u64, seed: p.seed, tau: p.tau, feedback: p.feedback, equil: equilibration(p) as u64 }
}

/// Read a checkpoint of this run: the state, and this rank's share of the walkers (as many ranks as wrote it gives
/// each rank the walkers it held).
pub fn restart(sys: &System, p: &DmcParams, comm: &dyn Comm, system: &str, path: &std::path::Path) -> Result<(Accumulators, Vec<Walker>), DmcError> {
    let l = checkpoint::load(path, &header(system, p)).map_err(DmcError::Checkpoint)?;
    let damaged = || DmcError::Checkpoint(format!("checkpoint {} is damaged: its walkers do not fit {}", path.display(), sys.name));
    let acc = Accumulators::unpack(&(), &mut Reader::new(&l.state)).map_err(|_| damaged())?;
    if l.walkers.len() != acc.population {
        return Err(damaged());
    }
    let total = equilibration(p) + p.steps;
    if acc.gen >= total {
        return Err(DmcError::Checkpoint(format!(
            "checkpoint {} is at generation {}, the end of a run of {total} generations: ask for more --steps to extend it",
            path.display(),
            acc.gen
        )));
    }
    let (first, n) = share(acc.population, comm.rank(), comm.size());
    let mine: Vec<&[u8]> = l.walkers[first..first + n].iter().map(|w| w.as_slice()).collect();
    let walkers = unpack_all(sys, &mine).map_err(|_| damaged())?;
    Ok((acc, walkers))
}

/// Gather every rank's packed walkers on rank 0, which writes the checkpoint; every rank returns the same result.
fn save(comm: &dyn Comm, c: &Checkpointing, head: &Header, acc: &Accumulators, mine: Vec<u8>) -> Result<(), DmcError> {
    let mut failed = String::new();
    if comm.rank() == 0 {
        let mut all = vec![mine];
        all.extend((1..comm.size()).map(|r| comm.recv(r)));
        let mut state = vec![];
        acc.pack(&mut state);
        failed = match checkpoint::merge(&all) {
            Ok(walkers) => checkpoint::save(&c.path, head, &state, &walkers)
                .err()
                .map(|e| format!("cannot write checkpoint {}: {e} (the previous one, if any, is intact)", c.path.display()))
                .unwrap_or_default(),
            Err(_) => "walkers gathered for the checkpoint arrived damaged".into(),
        };
    } else {
        comm.send(0, mine);
    }
    let mut flag = [!failed.is_empty() as u8 as f64];
    comm.sum(&mut flag);
    if flag[0] > 0.0 {
        return Err(DmcError::Checkpoint(if failed.is_empty() { "rank 0 could not write the checkpoint".into() } else { failed }));
    }
    Ok(())
}

/// Run DMC on this rank's `walkers`, with the other ranks of `comm` doing the same on theirs. `resume` is the state
/// read from a checkpoint (with `walkers` read from it too), or None for a start from VMC walkers.
pub fn run_on(
    sys: &System,
    p: &DmcParams,
    comm: &dyn Comm,
    mut walkers: Vec<Walker>,
    resume: Option<Accumulators>,
    ckpt: Option<&Checkpointing>,
    system: &str,
) -> Result<Report, DmcError> {
    run_with(sys, p, comm, &mut walkers, resume, ckpt, system)
}

/// `run_on` for any walker population (the CPU walkers, the GPU engine).
pub fn run_with<P: Population>(
    sys: &System,
    p: &DmcParams,
    comm: &dyn Comm,
    pop: &mut P,
    resume: Option<Accumulators>,
    ckpt: Option<&Checkpointing>,
    system: &str,
) -> Result<Report, DmcError> {
    let device = |e: P::Error| DmcError::Device(e.to_string());
    let target = p.walkers;
    let cap = energy_cap(sys.n_electrons, p.tau);
    let equil = equilibration(p);
    let head = header(system, p);
    let (me, size) = (comm.rank(), comm.size());
    // every rank's population (one-hot), and at a fresh start the energies that start E_est
    let mut v = vec![0.0; 1 + size];
    v[1 + me] = pop.len() as f64;
    if resume.is_none() {
        pop.measure(sys).map_err(device)?;
        v[0] = pop.energies().map_err(device)?.iter().sum::<f64>();
    }
    comm.sum(&mut v);
    let mut held: Vec<usize> = v[1..].iter().map(|&c| c as usize).collect();
    let mut acc = match resume {
        Some(a) => a,
        None => {
            let (e, population) = (v[0] / held.iter().sum::<usize>() as f64, held.iter().sum());
            Accumulators { population, e_est: e, e_trial: e, ..Default::default() }
        }
    };
    let mut timing = Timing::default();
    let mut pace = Pace::new(size);
    // this rank's wait in the last generation's sum: the next generation's sum carries it to every rank
    let mut last_reduce = 0.0;
    while acc.gen < equil + p.steps {
        let gen = acc.gen;
        let first: usize = held[..me].iter().sum();
        // what a checkpoint of the last good generation needs, should this one fail
        let last_good = ckpt.map(|_| pop.packed()).transpose().map_err(device)?;
        let t = Instant::now();
        let (e_est, e_trial) = (acc.e_est, acc.e_trial);
        let old = pop.energies().map_err(device)?;
        timing.walkers += old.len() as u64;
        let out: Vec<(MoveStats, f64, f64)> = pop.advance(sys, p.tau, true, p.seed, 3, gen, first).map_err(device)?.into_iter().zip(old).map(|((m, e), e_old)| (m, e_old, e)).collect();
        // tau_eff of the generations before this one (see the module page): known before the sum
        let tau_eff = effective_tau(p.tau, &acc.moves);
        let w: Vec<f64> = out.iter().map(|o| weight(o.1, o.2, e_est, e_trial - e_est, tau_eff, cap)).collect();
        let n: Vec<usize> = w.iter().enumerate().map(|(k, wk)| copies(*wk, stream(p.seed, 4, gen, first + k).random())).collect();
        let mut m = MoveStats::default();
        for o in &out {
            m.add(&o.0);
        }
        // sum w, sum w E_L, sum w (E_L - E_est)^2 over all walkers of all ranks (E_est, known to all, keeps the
        // variance free of cancellation)
        let mut s = [0.0; 3];
        for (wk, o) in w.iter().zip(&out) {
            s[0] += wk;
            s[1] += wk * o.2;
            s[2] += wk * (o.2 - e_est).powi(2);
        }
        let compute = t.elapsed().as_secs_f64();
        timing.compute_s += compute;
        // the generation's one sum: move statistics, weights, then one-hot vectors of every rank's population after
        // branching, compute time of this generation and wait in the last generation's sum
        let t = Instant::now();
        let mut v = vec![0.0; 7 + 3 * size];
        v[..7].copy_from_slice(&[m.attempted as f64, m.accepted as f64, m.r2_proposed, m.r2_accepted, s[0], s[1], s[2]]);
        (v[7 + me], v[7 + size + me], v[7 + 2 * size + me]) = (n.iter().sum::<usize>() as f64, compute, last_reduce);
        comm.sum(&mut v);
        last_reduce = t.elapsed().as_secs_f64();
        timing.reduce_s += last_reduce;
        let mut moves = acc.moves;
        moves.add(&MoveStats { attempted: v[0] as u64, accepted: v[1] as u64, r2_proposed: v[2], r2_accepted: v[3] });
        let s = [v[4], v[5], v[6]];
        let counts: Vec<usize> = v[7..7 + size].iter().map(|&c| c as usize).collect();
        let (computes, waits) = (&v[7 + size..7 + 2 * size], &v[7 + 2 * size..]);
        timing.compute_max_s += largest(computes);
        if timing.generations > 0 {
            timing.reduce_max_s += largest(waits);
        }
        pace.update(computes, &held);
        let total: usize = counts.iter().sum();
        let e_gen = s[1] / s[0];
        let failure = if !e_gen.is_finite() {
            Some(DmcError::NotFinite(e_gen, gen))
        } else if total == 0 {
            Some(DmcError::DiedOut(gen, target))
        } else if total > 10 * target {
            Some(DmcError::Exploded(total, gen, target))
        } else {
            None
        };
        if let Some(e) = failure {
            // acc is still the state after generation gen - 1: save it with the walkers as they were then
            return Err(match (ckpt, last_good) {
                (Some(c), Some(bytes)) => match save(comm, c, &head, &acc, bytes) {
                    Ok(()) => DmcError::Saved(Box::new(e), gen, c.path.display().to_string()),
                    Err(why) => DmcError::Checkpoint(format!("{e}; and saving the last good state failed: {why}")),
                },
                _ => e,
            });
        }
        if gen >= equil {
            acc.var_sum += s[2] - s[0] * (e_gen - e_est).powi(2); // sum w (E_L - e_gen)^2
            acc.pop_sum += acc.population as f64;
            acc.series.push(e_gen);
            acc.weights.push(s[0]);
        }
        acc.walker_steps += acc.population as u64;
        acc.moves = moves;
        pop.branch(&n).map_err(device)?;
        let goals = pace.goals(total, p.balance);
        timing.add(&pop.migrate(comm, &counts, &goals, sys).map_err(device)?);
        held = goals;
        // E_est: during equilibration the mean of the last generations (forgetting the VMC start), then the mean
        // of all measured generations
        if gen < equil {
            acc.recent.push(e_gen);
            let keep = (acc.recent.len() / 2).max(1);
            acc.e_est = acc.recent[acc.recent.len() - keep..].iter().sum::<f64>() / keep as f64;
        } else {
            let wsum: f64 = acc.weights.iter().sum();
            acc.e_est = acc.series.iter().zip(&acc.weights).map(|(e, w)| e * w).sum::<f64>() / wsum;
        }
        acc.population = total;
        acc.e_trial = acc.e_est - (total as f64 / target as f64).ln() / (p.feedback * effective_tau(p.tau, &acc.moves));
        acc.gen += 1;
        timing.generations += 1;
        if let Some(c) = ckpt {
            let stop = c.stop_after == Some(acc.gen);
            if acc.gen % c.every == 0 || stop || acc.gen == equil + p.steps {
                let t = Instant::now();
                save(comm, c, &head, &acc, pop.packed().map_err(device)?)?;
                timing.checkpoint_s += t.elapsed().as_secs_f64();
            }
            if stop {
                let (timing, own) = timing.over_ranks(comm, last_reduce);
                return Ok(Report { estimate: None, timing, own, generations: acc.gen });
            }
        }
    }
    let (timing, own) = timing.over_ranks(comm, last_reduce);
    let a = &acc;
    // the weighted mean of the generation energies and its error (the ratio estimator, blocked)
    let b = weighted_blocking(&a.series, &a.weights);
    let wsum: f64 = a.weights.iter().sum();
    let estimate = Estimate {
        energy: b.mean,
        error: b.error,
        blocked: b,
        variance: a.var_sum / wsum,
        acceptance: a.moves.acceptance(),
        tau_eff: effective_tau(p.tau, &a.moves),
        population: a.pop_sum / a.series.len() as f64,
        walker_steps: a.walker_steps,
    };
    Ok(Report { estimate: Some(estimate), timing, own, generations: acc.gen })
}

/// tau x (accepted / proposed mean-square displacement) of the moves `m`; tau itself before any move.
fn effective_tau(tau: f64, m: &MoveStats) -> f64 {
    if m.r2_proposed > 0.0 {
        tau * m.r2_accepted / m.r2_proposed
    } else {
        tau
    }
}
