//! What VMC and DMC need from a population of walkers, so that one driver (accumulators, branching, trial energy,
//! checkpoints) runs the CPU walkers (`Vec<Walker>`, rayon over walkers) and the GPU engine (`gpu::GpuWalkers`,
//! walkers resident on the device) alike. Every method works in the global walker order: walker k of this rank is
//! walker `first + k` of the run and draws its moves from `rng::stream(seed, tag, step, first + k)`.

use crate::ensemble::comm::Comm;
use crate::ensemble::dmc::Ensemble;
use crate::ensemble::pack::pack_all;
use crate::ensemble::population::{branch, migrate_to, Traffic};
use super::walker::Walker;
use crate::ensemble::moves::MoveStats;
use crate::rng::stream;
use super::System;
use rayon::prelude::*;

/// A population of walkers that moves in lock-step generations.
pub trait Population {
    /// Why an operation failed (the CPU population never fails; the GPU one reports driver errors).
    type Error: std::fmt::Display;
    /// Walkers held.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Full evaluation of every walker (the local energies become valid).
    fn measure(&mut self, sys: &System) -> Result<(), Self::Error>;
    /// The local energies of the last measurement, in walker order.
    fn energies(&self) -> Result<Vec<f64>, Self::Error>;
    /// One sweep of every walker (walker k with stream (seed, tag, step, first + k)) and its measurement: per walker
    /// the move statistics and the new local energy.
    #[allow(clippy::too_many_arguments)]
    fn advance(&mut self, sys: &System, tau: f64, fixed_node: bool, seed: u64, tag: u64, step: usize, first: usize) -> Result<Vec<(MoveStats, f64)>, Self::Error>;
    /// Replace walker k by `n[k]` copies of itself, in walker order.
    fn branch(&mut self, n: &[usize]) -> Result<(), Self::Error>;
    /// Balance the populations over ranks after branching: from `counts` (every rank's population) to `goals`
    /// (every rank's walkers after; the same total).
    fn migrate(&mut self, comm: &dyn Comm, counts: &[usize], goals: &[usize], sys: &System) -> Result<Traffic, Self::Error>;
    /// The walkers as the checkpoint stores them (`pack::pack_all` of `Walker`s: positions only).
    fn packed(&self) -> Result<Vec<u8>, Self::Error>;
}

impl Population for Vec<Walker> {
    type Error = std::convert::Infallible;
    fn len(&self) -> usize {
        self.as_slice().len()
    }
    fn measure(&mut self, sys: &System) -> Result<(), Self::Error> {
        self.par_iter_mut().for_each(|w| w.measure(sys));
        Ok(())
    }
    fn energies(&self) -> Result<Vec<f64>, Self::Error> {
        Ok(self.iter().map(|w| w.e_local).collect())
    }
    fn advance(&mut self, sys: &System, tau: f64, fixed_node: bool, seed: u64, tag: u64, step: usize, first: usize) -> Result<Vec<(MoveStats, f64)>, Self::Error> {
        Ok(self
            .par_iter_mut()
            .enumerate()
            .map(|(k, w)| {
                let s = w.sweep(tau, fixed_node, &mut stream(seed, tag, step, first + k));
                w.measure(sys);
                (s, w.e_local)
            })
            .collect())
    }
    fn branch(&mut self, n: &[usize]) -> Result<(), Self::Error> {
        *self = branch(std::mem::take(self), n);
        Ok(())
    }
    fn migrate(&mut self, comm: &dyn Comm, counts: &[usize], goals: &[usize], sys: &System) -> Result<Traffic, Self::Error> {
        Ok(migrate_to(comm, self, counts, goals, sys))
    }
    fn packed(&self) -> Result<Vec<u8>, Self::Error> {
        Ok(pack_all(self))
    }
}

/// The value of a result that cannot fail.
pub fn infallible<T>(r: Result<T, std::convert::Infallible>) -> T {
    match r {
        Ok(v) => v,
        Err(never) => match never {},
    }
}

/// Which loop drives a population: VMC moves (stream tag 2, node crossings allowed) or DMC's (tag 3, fixed node).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Vmc,
    Dmc,
}

/// A population of this driver's walkers as the one VMC loop and the one DMC generation drive it
/// ([`crate::ensemble::dmc::Ensemble`]): its sweeps with the system, the time step and the run's seed, its
/// branching, then its migration.
pub struct Driven<'a, P> {
    pub pop: &'a mut P,
    pub sys: &'a System,
    pub tau: f64,
    pub seed: u64,
    pub method: Method,
}

impl<P: Population> Ensemble for Driven<'_, P> {
    type Error = P::Error;
    fn len(&self) -> usize {
        self.pop.len()
    }
    fn energies(&self) -> Result<Vec<f64>, P::Error> {
        self.pop.energies()
    }
    fn advance(&mut self, step: usize, first: usize) -> Result<(MoveStats, Vec<f64>), P::Error> {
        let (fixed_node, tag) = match self.method {
            Method::Vmc => (false, 2),
            Method::Dmc => (true, 3),
        };
        let out = self.pop.advance(self.sys, self.tau, fixed_node, self.seed, tag, step, first)?;
        let mut m = MoveStats::default();
        for o in &out {
            m.add(&o.0);
        }
        Ok((m, out.into_iter().map(|o| o.1).collect()))
    }
    fn repopulate(&mut self, comm: &dyn Comm, copies: &[usize], counts: &[usize], goals: &[usize]) -> Result<Traffic, P::Error> {
        self.pop.branch(copies)?;
        self.pop.migrate(comm, counts, goals, self.sys)
    }
}
