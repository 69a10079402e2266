//! The one VMC loop of the suite, whatever the system and the engine (the qmc driver's walkers, CPU or GPU; the
//! batched engines of the solid and the electron gas): walkers sample |psi_T|^2 by single-electron drift-diffusion
//! moves with Metropolis-Hastings acceptance ([`Ensemble::advance`]); the energy is the mean local energy over the
//! steps after equilibration, with the error bar of a blocking analysis of the steps' means over all walkers.
//!
//! Walkers move in lock-step steps; walker k of the global order (rank 0's first) draws its random numbers at step s
//! from its own stream, so a run is reproducible from its seed whatever the number of threads or ranks (beyond the
//! rounding of the sums over ranks).

use super::blocking::{blocking, Blocked};
use super::comm::Comm;
use super::dmc::Ensemble;
use super::moves::MoveStats;

/// A VMC run in progress on one rank.
#[derive(Clone, Debug)]
pub struct Vmc {
    /// Walkers over all ranks, and this rank's first in the global order.
    walkers: usize,
    first: usize,
    /// Steps before the measurement starts.
    pub equil: usize,
    /// Steps done, equilibration included.
    pub steps: usize,
    /// Each measured step's mean local energy over all walkers.
    pub series: Vec<f64>,
    /// Each measured step's variance of the local energy over the walkers, summed over the steps.
    pub var_sum: f64,
    /// The measured steps' moves over all walkers.
    pub moves: MoveStats,
}

impl Vmc {
    /// A run of `walkers` over all ranks, this rank's being walkers `first..` of the global order, measuring after
    /// `equil` steps.
    pub fn new(walkers: usize, first: usize, equil: usize) -> Vmc {
        Vmc { walkers, first, equil, steps: 0, series: vec![], var_sum: 0.0, moves: MoveStats::default() }
    }

    /// One step of every walker, the other ranks of `comm` doing the same (two sums over ranks once measuring: the
    /// energies and moves, then the squares about the step's mean). Returns this rank's new local energies.
    pub fn step<E: Ensemble>(&mut self, comm: &dyn Comm, pop: &mut E) -> Result<Vec<f64>, E::Error> {
        let (m, e) = pop.advance(self.steps, self.first)?;
        self.steps += 1;
        if self.steps <= self.equil {
            return Ok(e);
        }
        let mut s = [e.iter().sum::<f64>(), m.attempted as f64, m.accepted as f64, m.r2_proposed, m.r2_accepted];
        comm.sum(&mut s);
        let n = self.walkers as f64;
        let mean = s[0] / n;
        let mut v = [e.iter().map(|x| (x - mean).powi(2)).sum::<f64>()];
        comm.sum(&mut v);
        self.var_sum += v[0] / n;
        self.series.push(mean);
        self.moves.add(&MoveStats { attempted: s[1] as u64, accepted: s[2] as u64, r2_proposed: s[3], r2_accepted: s[4] });
        Ok(e)
    }

    /// The VMC energy of the measured steps after the first `skip`, with its blocking error bar.
    pub fn estimate(&self, skip: usize) -> Blocked {
        blocking(&self.series[skip.min(self.series.len())..])
    }

    /// The variance of the local energy: within the steps, plus that of the steps' means.
    pub fn variance(&self) -> f64 {
        self.var_sum / self.series.len() as f64 + self.estimate(0).variance
    }
}
