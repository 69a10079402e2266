//! Variational Monte Carlo: walkers sample |psi_T|^2 by single-electron drift-diffusion moves with Metropolis-Hastings
//! acceptance; the energy is the average local energy after equilibration, with a blocking error bar.
//!
//! Walkers move in lock-step generations (in parallel: rayon over the CPU walkers, or the GPU engine; see
//! [`engine`](super::engine)). Walker k draws its random numbers at step
//! s from its own stream (seed, s, k), so a run is reproducible from its seed whatever the number of threads.

use super::engine::{infallible, Driven, Method, Population};
use super::walker::Walker;
use super::{System, V3};
use crate::ensemble::blocking::Blocked;
use crate::ensemble::comm::{share, Comm, Solo};
use crate::ensemble::vmc::Vmc;
use crate::rng::stream;
use rayon::prelude::*;

/// Parameters of a VMC run.
#[derive(Clone, Copy, Debug)]
pub struct VmcParams {
    pub walkers: usize,
    /// Measured steps (one move per electron each) after equilibration.
    pub steps: usize,
    /// Steps discarded first.
    pub equil: usize,
    pub tau: f64,
    pub seed: u64,
}

/// An energy estimate with what a record carries about it.
#[derive(Clone, Copy, Debug)]
pub struct Estimate {
    pub energy: f64,
    pub error: f64,
    pub blocked: Blocked,
    /// Variance of the local energy (zero for an exact eigenfunction).
    pub variance: f64,
    pub acceptance: f64,
    /// The time step the branching used (DMC) or tau (VMC).
    pub tau_eff: f64,
    /// Mean number of walkers over the measured steps.
    pub population: f64,
    /// Walker steps done, equilibration included (the throughput's numerator).
    pub walker_steps: u64,
}

/// Walkers spread over the system, each already evaluated.
pub fn initial_walkers(sys: &System, n: usize, seed: u64) -> Vec<Walker> {
    initial_walkers_in(sys, 0..n, seed)
}

/// Walkers `ks` of the global order (one rank's share), each already evaluated.
pub fn initial_walkers_in(sys: &System, ks: std::ops::Range<usize>, seed: u64) -> Vec<Walker> {
    start_positions(sys, ks, seed).into_par_iter().map(|r| Walker::new(sys, r)).collect()
}

/// The start positions of walkers `ks` of the global order (walker k from stream (seed, 1, 0, k)).
pub fn start_positions(sys: &System, ks: std::ops::Range<usize>, seed: u64) -> Vec<Vec<V3>> {
    ks.into_par_iter().map(|k| sys.initial_positions(&mut stream(seed, 1, 0, k))).collect()
}

/// Run VMC; returns the estimate and the final walkers (a DMC run starts from them).
pub fn run(sys: &System, p: &VmcParams) -> (Estimate, Vec<Walker>) {
    run_on(sys, p, &Solo)
}

/// Run VMC on this rank's share of the walkers (walker k of the global order keeps stream k whatever the number
/// of ranks, so the estimate does not depend on it beyond rounding); returns the global estimate and this rank's
/// final walkers.
pub fn run_on(sys: &System, p: &VmcParams, comm: &dyn Comm) -> (Estimate, Vec<Walker>) {
    let (first, n) = share(p.walkers, comm.rank(), comm.size());
    let mut walkers = initial_walkers_in(sys, first..first + n, p.seed);
    let est = infallible(run_with(sys, p, comm, &mut walkers, first));
    (est, walkers)
}

/// Run VMC on `pop`, this rank's share of the walkers (walker k being walker `first + k` of the global order),
/// already measured; the population ends where the run ends (a DMC run starts from it). The steps are the one VMC
/// loop's ([`crate::ensemble::vmc`]).
pub fn run_with<P: Population>(sys: &System, p: &VmcParams, comm: &dyn Comm, pop: &mut P, first: usize) -> Result<Estimate, P::Error> {
    let mut vmc = Vmc::new(p.walkers, first, p.equil);
    let mut pop = Driven { pop, sys, tau: p.tau, seed: p.seed, method: Method::Vmc };
    for _ in 0..p.equil + p.steps {
        vmc.step(comm, &mut pop)?;
    }
    let b = vmc.estimate(0);
    Ok(Estimate {
        energy: b.mean,
        error: b.error,
        blocked: b,
        variance: vmc.variance(),
        acceptance: vmc.moves.acceptance(),
        tau_eff: p.tau,
        population: p.walkers as f64,
        walker_steps: (p.walkers * (p.equil + p.steps)) as u64,
    })
}
