//! The qmc driver's plan (VMC, then DMC at each time step from VMC's walkers, then the fit to tau = 0:
//! [`crate::qmc::plan`]) on the solid's batched engines (issue #20, "one QMC driver"): [`Batched`] is its
//! [`Runs`] over [`CpuEngine`] (rayon over the walkers, all cores) or [`GpuEngine`] (every stage one launch over all
//! walkers), so the qmc mini-app runs He, H2, Be, be-hf and the electron gas through them with its own checks.
//!
//! Each run is a fresh engine in the run's precision ([`crate::by_precision!`]: double, mixed, single):
//! - VMC: `walkers` walkers from the engine's own start (electrons about the nuclei, or uniform in the cell),
//!   `equil + steps` steps; the estimate is the engine's [`Vmc`] after the `equil` steps (blocking error bar,
//!   variance and acceptance of the measured steps only); DMC starts from every walker's configuration
//!   ([`Configuration`]: positions, rotations, energies, condition number, in f64 whatever the precision) and the
//!   kinetic energies are every walker's at the end;
//! - DMC: `walkers` slots filled from VMC's configurations (cyclically, should the counts differ), their rows rebuilt
//!   with an f64 re-inversion (`start_from`), then `dmc::equilibration(p) + steps` generations of the engines'
//!   fixed-population comb ([`Control::Comb`](crate::ensemble::dmc::Control::Comb)): the population is `walkers` in
//!   every generation, so the qmc driver's trial-energy feedback (`DmcParams::feedback`) and its balance over ranks
//!   have nothing to do here and are ignored. The estimate is the engine's [`Dmc`] of the generations after the
//!   equilibration (the qmc driver's convention, `qmc::dmc::run_with`); tau_eff is formed from the measured moves'
//!   displacements (`effective_tau`), as the weights use it over the run.
//!
//! Random numbers: an engine draws with one tag whatever the method (`solid::draws`: stream (seed, step, walker)),
//! so a DMC engine seeded as VMC's would replay VMC's numbers step for step on the same walkers. DMC's seed is the
//! plan's XOR [`DMC_SEED_MIX`], which no VMC seed of a run (the plan's, small integers apart) meets.
//!
//! Not supported: checkpoints and restarts (the engines write none: [`Runs::restarted`] panics, and the mini-app
//! refuses `--restart` and `--checkpoint` with the batched engines), ranks (one engine a run).

use super::cpu::CpuEngine;
use super::gpu::GpuEngine;
use super::ranks::{Cargo, Engine};
use super::walker::Walker;
use super::{default_delay, Params, Parts, Solid, SolidError};
use crate::ensemble::comm::Solo;
use crate::ensemble::dmc::{effective_tau, Dmc};
use crate::ensemble::vmc::Vmc;
use crate::gpu::Gpu;
use crate::qmc::dmc::{equilibration, DmcParams, Report};
use crate::qmc::plan::{FitError, Runs};
use crate::qmc::vmc::{Estimate, VmcParams};
use crate::{Precision, Scalar};
use std::sync::Arc;

/// What DMC's seed is the plan's XOR with (module docs): the golden ratio's bits, far from any small seed.
pub const DMC_SEED_MIX: u64 = 0x9E37_79B9_7F4A_7C15;
/// The f64 re-inversion interval of the runs unless told otherwise (the engines' tests' and the solid mini-app's).
pub const RECOMPUTE: usize = 8;

/// Why a batched run failed.
#[derive(Debug, thiserror::Error)]
pub enum BatchedError {
    /// The engine's (a singular matrix, the GPU, a non-finite DMC energy: `SolidError::Dmc`).
    #[error(transparent)]
    Solid(#[from] SolidError),
    #[error(transparent)]
    Fit(#[from] FitError),
    #[error("the batched engines' DMC starts from VMC walkers, and there are none (the batched engines read no checkpoint)")]
    NoStart,
}

/// One system's runs on the batched engines.
pub struct Batched<'a> {
    pub sys: &'a Solid,
    /// None: the CPU engine on all cores (rayon's pool).
    pub gpu: Option<Arc<Gpu>>,
    pub precision: Precision,
    /// The delayed updates' rank (0: [`default_delay`] by electrons per spin and precision).
    pub delay: usize,
    /// The f64 re-inversion interval, in steps.
    pub recompute: usize,
}

/// A walker's configuration, where DMC starts: the engine's configuration cargo (`Cargo::Configuration`), which
/// carries no rows, so it is the same in every precision.
#[derive(Clone, Debug, PartialEq)]
pub struct Configuration {
    pub pos: Vec<f64>,
    pub rot: Vec<f64>,
    pub parts: Parts,
    pub cond: f64,
}

impl Configuration {
    fn of<S>(w: Walker<S>) -> Configuration {
        Configuration { pos: w.pos, rot: w.rot, parts: w.parts, cond: w.cond }
    }
    /// As a walker of an engine storing S: the configuration alone, whose rows the engine rebuilds.
    fn walker<S>(&self) -> Walker<S> {
        Walker { pos: self.pos.clone(), rot: self.rot.clone(), parts: self.parts, inv: vec![], dpsi: vec![], cond: self.cond, device: None }
    }
}

impl<'a> Batched<'a> {
    /// The runs of `sys` on the CPU engine (`gpu` None) or the GPU engine, default delay and re-inversion interval.
    pub fn new(sys: &'a Solid, gpu: Option<Arc<Gpu>>, precision: Precision) -> Batched<'a> {
        Batched { sys, gpu, precision, delay: 0, recompute: RECOMPUTE }
    }

    /// An engine's parameters for a run at `tau` (DMC or VMC) from `seed`.
    pub fn params(&self, tau: f64, dmc: bool, seed: u64) -> Params {
        let delay = if self.delay == 0 { default_delay(self.sys.setup.per_spin(), self.precision) } else { self.delay };
        Params { tau, dmc, recompute: self.recompute, seed, first: 0, delay }
    }
}

impl Runs for Batched<'_> {
    type Start = Vec<Configuration>;
    type Error = BatchedError;

    fn vmc(&mut self, vp: &VmcParams) -> Result<(Estimate, Vec<Configuration>, Vec<f64>), BatchedError> {
        crate::by_precision!(self.precision => vmc_in(self, vp))
    }

    fn restarted(&mut self) -> Vec<Configuration> {
        panic!("the batched engines write and read no checkpoints: a restart cannot run on them (the qmc mini-app refuses --restart with --engine batched)")
    }

    fn dmc(&mut self, start: &Vec<Configuration>, dp: &DmcParams) -> Result<Report, BatchedError> {
        if start.is_empty() {
            return Err(BatchedError::NoStart);
        }
        crate::by_precision!(self.precision => dmc_in(self, start, dp))
    }
}

/// What a plan needs of an engine beyond `ranks::Engine`: its whole step, its walkers' energies by part, its own
/// run (VMC or DMC) and a start from given walkers. Both engines, by one macro.
pub(crate) trait Batch<S>: Engine<S> {
    fn parts(&self) -> &[Parts];
    fn own_vmc(&self) -> Option<&Vmc>;
    fn own_dmc(&self) -> Option<&Dmc>;
    fn restart_from(&mut self, walkers: &[Walker<S>]) -> Result<(), SolidError>;
    fn whole_step(&mut self) -> Result<(), SolidError>;
}

macro_rules! batch {
    ($($engine:ident),*) => {$(
        impl<S: Scalar, A: Scalar> Batch<S> for $engine<'_, S, A> {
            fn parts(&self) -> &[Parts] {
                &self.parts
            }
            fn own_vmc(&self) -> Option<&Vmc> {
                self.vmc()
            }
            fn own_dmc(&self) -> Option<&Dmc> {
                self.dmc()
            }
            fn restart_from(&mut self, walkers: &[Walker<S>]) -> Result<(), SolidError> {
                self.start_from(walkers)
            }
            fn whole_step(&mut self) -> Result<(), SolidError> {
                self.step()
            }
        }
    )*};
}

batch!(CpuEngine, GpuEngine);

/// `f` on a fresh engine of `walkers` walkers with `p`: the CPU engine, or with a GPU the GPU engine (its setup in
/// S made here, outliving it).
fn on_engine<S: Scalar, A: Scalar, R>(b: &Batched, walkers: usize, p: Params, f: impl FnOnce(&mut dyn Batch<S>) -> Result<R, BatchedError>) -> Result<R, BatchedError> {
    match &b.gpu {
        None => f(&mut CpuEngine::<S, A>::new(b.sys, walkers, p)?),
        Some(gpu) => {
            let setup = b.sys.setup.convert::<S>();
            f(&mut GpuEngine::<S, A>::new(gpu, b.sys, &setup, walkers, p)?)
        }
    }
}

fn vmc_in<S: Scalar, A: Scalar>(b: &Batched, vp: &VmcParams) -> Result<(Estimate, Vec<Configuration>, Vec<f64>), BatchedError> {
    on_engine::<S, A, _>(b, vp.walkers, b.params(vp.tau, false, vp.seed), |e| vmc_on(e, vp))
}

fn dmc_in<S: Scalar, A: Scalar>(b: &Batched, start: &[Configuration], dp: &DmcParams) -> Result<Report, BatchedError> {
    on_engine::<S, A, _>(b, dp.walkers, b.params(dp.tau, true, dp.seed ^ DMC_SEED_MIX), |e| {
        start_on(e, start)?;
        dmc_on(e, dp)
    })
}

/// VMC on engine `e` (module docs).
fn vmc_on<S>(e: &mut dyn Batch<S>, vp: &VmcParams) -> Result<(Estimate, Vec<Configuration>, Vec<f64>), BatchedError> {
    let run = |e: &dyn Batch<S>| e.own_vmc().map(|v| (v.var_sum, v.moves)).expect("a VMC engine holds a VMC run");
    let mut equilibrated = run(e);
    for step in 0..vp.equil + vp.steps {
        if step == vp.equil {
            equilibrated = run(e);
        }
        e.whole_step()?;
    }
    let v = e.own_vmc().expect("a VMC engine holds a VMC run");
    let b = v.estimate(vp.equil);
    let moves = v.moves.since(&equilibrated.1);
    let measured = v.series.len().saturating_sub(vp.equil).max(1) as f64;
    let estimate = Estimate {
        energy: b.mean,
        error: b.error,
        blocked: b,
        variance: (v.var_sum - equilibrated.0) / measured + b.variance,
        acceptance: moves.acceptance(),
        tau_eff: vp.tau,
        population: vp.walkers as f64,
        walker_steps: (vp.walkers * (vp.equil + vp.steps)) as u64,
    };
    let start = (0..e.count()).map(|k| e.take(k, Cargo::Configuration).map(Configuration::of)).collect::<Result<_, _>>()?;
    let kinetic = e.parts().iter().map(|p| p.kinetic).collect();
    Ok((estimate, start, kinetic))
}

/// Engine `e` (a DMC engine) restarted from `start`, slot k from configuration k mod their number.
fn start_on<S>(e: &mut dyn Batch<S>, start: &[Configuration]) -> Result<(), SolidError> {
    let walkers: Vec<Walker<S>> = (0..e.count()).map(|k| start[k % start.len()].walker()).collect();
    e.restart_from(&walkers)
}

/// `equilibration(dp) + dp.steps` DMC generations of engine `e`, and the report of those after the equilibration.
fn dmc_on<S>(e: &mut dyn Batch<S>, dp: &DmcParams) -> Result<Report, BatchedError> {
    let equil = equilibration(dp);
    let run = |e: &dyn Batch<S>| e.own_dmc().map(|d| (d.acc.var_sum, d.acc.moves)).expect("a DMC engine holds a DMC run");
    let mut equilibrated = run(e);
    for gen in 0..equil + dp.steps {
        if gen == equil {
            equilibrated = run(e);
        }
        e.whole_step()?;
    }
    let d = e.own_dmc().expect("a DMC engine holds a DMC run");
    let a = &d.acc;
    let b = d.estimate(equil);
    let moves = a.moves.since(&equilibrated.1);
    let wsum: f64 = a.weights[equil.min(a.weights.len())..].iter().sum();
    let estimate = Estimate {
        energy: b.mean,
        error: b.error,
        blocked: b,
        variance: (a.var_sum - equilibrated.0) / wsum,
        acceptance: moves.acceptance(),
        tau_eff: effective_tau(dp.tau, &moves),
        // the comb keeps the population at its target in every generation
        population: e.count() as f64,
        walker_steps: a.walker_steps,
    };
    let (timing, own) = d.timing_over_ranks(&Solo);
    Ok(Report { estimate: Some(estimate), timing, own, generations: a.gen })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomic::hf::{HfOrbitals, BE_HF};
    use crate::qmc::plan::{self, Event, Plan};
    use crate::qmc::systems::HE_EXACT;
    use crate::qmc::timestep;

    fn vmc_params(walkers: usize, steps: usize, tau: f64) -> VmcParams {
        VmcParams { walkers, steps, equil: 100, tau, seed: 5 }
    }

    /// He through the whole plan on the CPU engine, a two-tau series: VMC variational, each DMC finite and below
    /// VMC, and the fit made.
    #[test]
    fn the_plan_runs_helium_on_the_cpu_engine() {
        let sys = Solid::atom("he").unwrap();
        let mut b = Batched::new(&sys, None, Precision::Double);
        let dmc = [0.08, 0.04].iter().map(|&tau| DmcParams { walkers: 32, steps: 1000, equil: 10, tau, seed: 6, feedback: 10.0, balance: Default::default() }).collect();
        let plan = Plan { vmc: vmc_params(32, 2000, 0.3), measured: true, restart: false, dmc, fit: timestep::Model::Linear };
        let (mut vmc, mut dmcs, mut fitted) = (None, vec![], None);
        plan::run(&plan, &mut b, |ev| {
            match ev {
                Event::Vmc { estimate, kinetic, .. } => {
                    assert_eq!(kinetic.len(), 32);
                    vmc = Some(*estimate);
                }
                Event::Dmc { params, report, .. } => {
                    assert_eq!(report.generations, equilibration(params) + params.steps);
                    dmcs.push((params.tau, report.estimate.unwrap()));
                }
                Event::Fit { fit, .. } => fitted = Some(fit.energy),
                _ => {}
            }
            Ok(())
        })
        .unwrap();
        let v = vmc.unwrap();
        eprintln!("he plan: VMC {:.4}({:.0}) acceptance {:.3}; DMC {:?}; fit {fitted:?}", v.energy, v.error * 1e4, v.acceptance, dmcs.iter().map(|(_, d)| (d.energy, d.error, d.tau_eff)).collect::<Vec<_>>());
        assert!(v.energy > HE_EXACT && v.energy < -2.80 && v.error < 0.01, "VMC {} +- {}", v.energy, v.error);
        assert!(v.acceptance > 0.5 && v.variance > 0.0 && v.walker_steps == 32 * 2100);
        assert_eq!(dmcs.len(), 2);
        for (tau, d) in &dmcs {
            assert!(d.energy.is_finite() && d.error.is_finite() && d.energy < v.energy, "DMC {} +- {} vs VMC {}", d.energy, d.error, v.energy);
            assert!(d.population == 32.0 && d.acceptance > 0.9);
            // tau_eff from the engine's displacements: below tau by the rejected moves' share (a few percent), not
            // tau itself as when no displacement was summed
            assert!(d.tau_eff < tau * (1.0 - 1e-3) && d.tau_eff > 0.8 * tau, "tau {tau}: tau_eff {}, acceptance {}", d.tau_eff, d.acceptance);
        }
        assert!(fitted.unwrap().is_finite());
    }

    /// The bare Be determinant's VMC through `Batched`: E_HF within 4 error bars (converged).
    #[test]
    fn be_hf_vmc_returns_hartree_fock() {
        let sys = Solid::atom("be-hf").unwrap();
        let hf = HfOrbitals::parse(BE_HF).unwrap().energy;
        let (e, start, kinetic) = Batched::new(&sys, None, Precision::Double).vmc(&vmc_params(64, 4000, 0.1)).unwrap();
        eprintln!("be-hf batched: E_VMC {:.4}({:.0}) vs E_HF {hf:.4}", e.energy, e.error * 1e4);
        assert!(e.blocked.converged, "{:?}", e.blocked.why_unconverged());
        assert!((e.energy - hf).abs() < 4.0 * e.error && e.error < 0.02, "E_VMC {} +- {} vs E_HF {hf}", e.energy, e.error);
        assert_eq!((start.len(), kinetic.len(), start[0].pos.len()), (64, 64, 12));
    }

    /// DMC starts from the VMC walkers (cyclically when it has more), not from the engine's own start: its walkers
    /// hold their positions, its start energy is theirs; and with no walkers a DMC run is refused.
    #[test]
    fn dmc_starts_from_the_vmc_walkers() {
        let sys = Solid::atom("he").unwrap();
        let mut b = Batched::new(&sys, None, Precision::Double);
        let (_, start, _) = b.vmc(&VmcParams { walkers: 3, steps: 20, equil: 0, tau: 0.3, seed: 1 }).unwrap();
        let mut e = CpuEngine::<f64, f64>::new(&sys, 5, b.params(0.02, true, 9)).unwrap();
        let own: Vec<Vec<f64>> = (0..5).map(|k| e.take(k, Cargo::Configuration).unwrap().pos).collect();
        assert!(own.iter().all(|p| start.iter().all(|s| &s.pos != p)), "the engine's own start is not VMC's");
        start_on(&mut e, &start).unwrap();
        for k in 0..5 {
            let w = e.take(k, Cargo::Configuration).unwrap();
            assert_eq!(w.pos, start[k % 3].pos, "slot {k}");
            assert!((w.parts.local() - start[k % 3].parts.local()).abs() < 1e-9, "slot {k}: energy remeasured");
        }
        let mean = (0..5).map(|k| start[k % 3].parts.local()).sum::<f64>() / 5.0;
        assert!((e.dmc().unwrap().acc.e_est - mean).abs() < 1e-9);
        let dp = DmcParams { walkers: 5, steps: 10, equil: 0, tau: 0.02, seed: 1, feedback: 10.0, balance: Default::default() };
        assert!(matches!(b.dmc(&vec![], &dp), Err(BatchedError::NoStart)));
    }
}
