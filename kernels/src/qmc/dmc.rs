//! The qmc driver's diffusion Monte Carlo run: the one DMC generation ([`crate::ensemble::dmc`], which the module
//! page describes: weights, branching, trial energy, estimator, ranks) over this driver's walkers, under
//! [`Control::Branch`], with what a run adds around it: equilibration by imaginary time, checkpoints and restart,
//! the failure that saves the last good generation, and the final estimate. The small-time-step improvements it
//! relies on:
//!
//! - the limited drift (`walker::drift`), UNR's remedy for the divergent drift near nodes and nuclei,
//! - the local energy in the weight limited to E_est +- 0.2 sqrt(N / tau) (Zen, Sorella, Gillan, Michaelides and
//!   Alfè 2016), which stops a walker near a node from branching wildly. UNR's own limit, (E_est - E_L) scaled by
//!   |v_bar| / |v|, was tried first: it acts near the nuclei too, where E_L is finite with cusp-correct orbitals,
//!   and it moved He at tau = 0.04 by 1.2 mHa (-2.9005(4) against -2.9017(5) without any limit; -2.9031(3) with
//!   this one and a full equilibration),
//! - tau_eff from the accepted mean-square displacement, so rejected moves do not make walkers branch as though
//!   they had diffused.
//!
//! The energy's inefficiency is about 1.1/Ha of imaginary time at every tau for He (0.35/Ha for the 14-electron
//! gas, 0.035/Ha for Be), and a converged error bar needs 256 of them (`blocking`), so a run measures about 300/Ha
//! (He), 90/Ha (gas) or 9/Ha (Be) at least, twice that to converge reliably, whatever tau (`qmc --dmc-time`).
//!
//! After branching, [`population::migrate_to`](crate::ensemble::population::migrate_to) moves walkers point to
//! point until every rank holds its goal: its equal share, or with [`Balance::Speed`] a share by its measured speed
//! ([`balance`](crate::ensemble::balance)). With equal shares a run restarted from a checkpoint continues the same
//! chains bit for bit (with shares by speed, which depend on timings, they agree statistically).

use super::checkpoint::{self, Header};
use super::engine::{Driven, Method, Population};
use super::vmc::Estimate;
use super::walker::Walker;
use super::System;
use crate::ensemble::balance::Balance;
use crate::ensemble::comm::{share, Comm, Solo};
pub use crate::ensemble::dmc::{Accumulators, DmcError, Timing};
use crate::ensemble::dmc::{effective_tau, Control, Dmc, Params};
use crate::ensemble::pack::{unpack_all, Pack, Reader};
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

/// Where and how often a run writes its checkpoint.
#[derive(Clone, Debug)]
pub struct Checkpointing {
    pub path: PathBuf,
    /// Write after every this many generations (and after the last).
    pub every: usize,
    /// Write and stop after this generation (a job that must end before its time limit; the restart test).
    pub stop_after: Option<usize>,
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
    let equil = equilibration(p);
    let head = header(system, p);
    let control = Control::Branch { feedback: p.feedback, balance: p.balance };
    let params = Params { target: p.walkers, tau: p.tau, seed: p.seed, electrons: sys.n_electrons, equil, control };
    if resume.is_none() {
        pop.measure(sys).map_err(DmcError::device)?;
    }
    let mut pop = Driven { pop, sys, tau: p.tau, seed: p.seed, method: Method::Dmc };
    let mut d = Dmc::start(comm, &pop, params, resume)?;
    while d.acc.gen < equil + p.steps {
        // what a checkpoint of the last good generation needs, should this one fail
        let last_good = ckpt.map(|_| pop.pop.packed()).transpose().map_err(DmcError::device)?;
        if let Err(e) = d.generation(comm, &mut pop) {
            // d.acc is still the state after the generation before: save it with the walkers as they were then
            return Err(match (ckpt, last_good, e) {
                (_, _, e @ DmcError::Device(_)) => e,
                (Some(c), Some(bytes), e) => match save(comm, c, &head, &d.acc, bytes) {
                    Ok(()) => DmcError::Saved(Box::new(e), d.acc.gen, c.path.display().to_string()),
                    Err(why) => DmcError::Checkpoint(format!("{e}; and saving the last good state failed: {why}")),
                },
                (_, _, e) => e,
            });
        }
        if let Some(c) = ckpt {
            let stop = c.stop_after == Some(d.acc.gen);
            if d.acc.gen % c.every == 0 || stop || d.acc.gen == equil + p.steps {
                let t = Instant::now();
                save(comm, c, &head, &d.acc, pop.pop.packed().map_err(DmcError::device)?)?;
                d.timing.checkpoint_s += t.elapsed().as_secs_f64();
            }
            if stop {
                let (timing, own) = d.timing_over_ranks(comm);
                return Ok(Report { estimate: None, timing, own, generations: d.acc.gen });
            }
        }
    }
    let (timing, own) = d.timing_over_ranks(comm);
    let a = &d.acc;
    // the weighted mean of the generation energies and its error (the ratio estimator, blocked)
    let b = a.estimate(0);
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
    Ok(Report { estimate: Some(estimate), timing, own, generations: d.acc.gen })
}
