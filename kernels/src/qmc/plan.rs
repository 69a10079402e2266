//! The VMC-then-DMC plan of one system, the same on every engine: VMC (measured, or equilibration only, to give DMC
//! its walkers), DMC at each time step from those walkers (or from a checkpoint), and, when every time step ran to
//! the end and they are at least the time-step model's coefficients, the fit of the DMC energies to tau = 0
//! ([`timestep`]). Where the runs happen (CPU ranks, one GPU) is the caller's [`Runs`]; the caller is told of each
//! run before and after it ([`Event`]) and keeps its records; the order, the starts and the fit are decided here.

use super::dmc::{DmcParams, Report};
use super::timestep::{self, Fit};
use super::vmc::{Estimate, VmcParams};
use std::time::Instant;

/// One system's plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// VMC's parameters; `measured` false runs its equilibration and two steps only (DMC's start).
    pub vmc: VmcParams,
    pub measured: bool,
    /// DMC continues from a checkpoint: no VMC at all ([`Runs::restarted`] gives the start).
    pub restart: bool,
    /// DMC at each of these time steps, in order; none: VMC only.
    pub dmc: Vec<DmcParams>,
    /// The model the DMC energies are fitted with.
    pub fit: timestep::Model,
}

/// Where a plan's runs happen.
pub trait Runs {
    /// Where DMC starts: VMC's walkers (or what the engine rebuilds them from).
    type Start;
    type Error: From<FitError>;
    /// VMC: its estimate, where DMC starts, and every walker's local kinetic energy at the end.
    fn vmc(&mut self, p: &VmcParams) -> Result<(Estimate, Self::Start, Vec<f64>), Self::Error>;
    /// The start when DMC continues from a checkpoint (the engine reads it there).
    fn restarted(&mut self) -> Self::Start;
    /// DMC from `start` (every time step starts from the same walkers).
    fn dmc(&mut self, start: &Self::Start, p: &DmcParams) -> Result<Report, Self::Error>;
}

/// What the plan tells its caller, in order.
pub enum Event<'a> {
    /// VMC is about to run (measured or not; never on a restart).
    VmcStarts { measured: bool },
    /// The measured VMC run: its estimate, every walker's local kinetic energy at the end, its wall time.
    Vmc { estimate: &'a Estimate, kinetic: &'a [f64], secs: f64 },
    /// DMC is about to run at this time step.
    DmcStarts { params: &'a DmcParams },
    /// A DMC run ended (its `estimate` is None when it stopped early, as asked: no fit follows then).
    Dmc { params: &'a DmcParams, report: &'a Report, secs: f64 },
    /// The fit to tau = 0 of the series (tau, estimate, seconds).
    Fit { fit: &'a Fit, series: &'a [(f64, Estimate, f64)] },
    /// Every time step ran, but too few of them for the model: no extrapolation.
    NoFit { steps: usize, model: timestep::Model },
}

/// A fit of the DMC energies to tau = 0 that could not be made (`timestep::fit`'s reason).
#[derive(Debug)]
pub struct FitError(pub String);

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "time-step fit: {}", self.0)
    }
}

impl std::error::Error for FitError {}

/// Run `plan` on `runs`, telling `on` of each run; the first error (of a run or of `on`) stops it.
pub fn run<R: Runs>(plan: &Plan, runs: &mut R, mut on: impl FnMut(Event) -> Result<(), R::Error>) -> Result<(), R::Error> {
    let start = if plan.restart {
        runs.restarted()
    } else {
        on(Event::VmcStarts { measured: plan.measured })?;
        let t = Instant::now();
        let p = if plan.measured { plan.vmc } else { VmcParams { steps: 2, ..plan.vmc } };
        let (estimate, start, kinetic) = runs.vmc(&p)?;
        if plan.measured {
            on(Event::Vmc { estimate: &estimate, kinetic: &kinetic, secs: t.elapsed().as_secs_f64() })?;
        }
        start
    };
    if plan.dmc.is_empty() {
        return Ok(());
    }
    let mut series = vec![];
    for params in &plan.dmc {
        on(Event::DmcStarts { params })?;
        let t = Instant::now();
        let report = runs.dmc(&start, params)?;
        let secs = t.elapsed().as_secs_f64();
        on(Event::Dmc { params, report: &report, secs })?;
        if let Some(e) = report.estimate {
            series.push((params.tau, e, secs));
        }
    }
    if series.len() < plan.dmc.len() {
        return Ok(());
    }
    if series.len() < plan.fit.parameters() {
        return on(Event::NoFit { steps: series.len(), model: plan.fit });
    }
    let points: Vec<(f64, f64, f64)> = series.iter().map(|(tau, e, _)| (*tau, e.energy, e.error)).collect();
    let fit = timestep::fit(&points, plan.fit).map_err(FitError)?;
    on(Event::Fit { fit: &fit, series: &series })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ensemble::blocking::Blocked;
    use crate::ensemble::dmc::Timing;
    use crate::ensemble::balance::Balance;

    fn estimate(energy: f64) -> Estimate {
        let blocked = Blocked { mean: energy, error: 0.01, naive_error: 0.005, variance: 0.1, block_size: 64, blocks: 32, samples: 2048, inefficiency_32: 4.0, converged: true };
        Estimate { energy, error: 0.01, blocked, variance: 0.1, acceptance: 0.99, tau_eff: 0.01, population: 100.0, walker_steps: 1 }
    }

    /// Runs that return E(tau) = -2.9 + tau (VMC -2.8), say which runs they made, and stop the DMC at `stop` early.
    #[derive(Default)]
    struct Fake {
        calls: Vec<String>,
        stop: Option<f64>,
    }

    impl Runs for Fake {
        type Start = &'static str;
        type Error = String;
        fn vmc(&mut self, p: &VmcParams) -> Result<(Estimate, &'static str, Vec<f64>), String> {
            self.calls.push(format!("vmc {}", p.steps));
            Ok((estimate(-2.8), "vmc walkers", vec![1.0, 2.0]))
        }
        fn restarted(&mut self) -> &'static str {
            self.calls.push("restart".into());
            "checkpoint"
        }
        fn dmc(&mut self, start: &&'static str, p: &DmcParams) -> Result<Report, String> {
            self.calls.push(format!("dmc {} from {start}", p.tau));
            let estimate = (self.stop != Some(p.tau)).then(|| estimate(-2.9 + p.tau));
            Ok(Report { estimate, timing: Timing::default(), own: Timing::default(), generations: p.steps })
        }
    }

    impl From<FitError> for String {
        fn from(e: FitError) -> String {
            e.to_string()
        }
    }

    fn plan(taus: &[f64]) -> Plan {
        let vmc = VmcParams { walkers: 8, steps: 100, equil: 10, tau: 0.3, seed: 1 };
        let dmc = taus.iter().map(|&tau| DmcParams { walkers: 8, steps: 100, equil: 10, tau, seed: 2, feedback: 10.0, balance: Balance::Equal }).collect();
        Plan { vmc, measured: true, restart: false, dmc, fit: timestep::Model::Linear }
    }

    /// The events of `plan` on `runs`, one word each (the fit with its energy).
    fn events(plan: &Plan, runs: &mut Fake) -> Vec<String> {
        let mut seen = vec![];
        run(plan, runs, |e| {
            seen.push(match e {
                Event::VmcStarts { measured } => format!("vmc-starts {measured}"),
                Event::Vmc { estimate, kinetic, .. } => format!("vmc {} {}", estimate.energy, kinetic.len()),
                Event::DmcStarts { params } => format!("dmc-starts {}", params.tau),
                Event::Dmc { params, report, .. } => format!("dmc {} {}", params.tau, report.estimate.is_some()),
                Event::Fit { fit, series } => format!("fit {:.6} {}", fit.energy, series.len()),
                Event::NoFit { steps, .. } => format!("no-fit {steps}"),
            });
            Ok(())
        })
        .unwrap();
        seen
    }

    #[test]
    fn vmc_then_dmc_at_each_time_step_from_its_walkers_then_the_fit() {
        let mut runs = Fake::default();
        let seen = events(&plan(&[0.04, 0.02, 0.01]), &mut runs);
        assert_eq!(seen, ["vmc-starts true", "vmc -2.8 2", "dmc-starts 0.04", "dmc 0.04 true", "dmc-starts 0.02", "dmc 0.02 true", "dmc-starts 0.01", "dmc 0.01 true", "fit -2.900000 3"]);
        assert_eq!(runs.calls, ["vmc 100", "dmc 0.04 from vmc walkers", "dmc 0.02 from vmc walkers", "dmc 0.01 from vmc walkers"]);
    }

    #[test]
    fn too_few_time_steps_or_one_stopped_early_give_no_fit() {
        assert_eq!(events(&plan(&[0.02]), &mut Fake::default()).last().unwrap(), "no-fit 1");
        let mut stopped = Fake { stop: Some(0.02), ..Fake::default() };
        let seen = events(&plan(&[0.04, 0.02, 0.01]), &mut stopped);
        assert_eq!(seen.last().unwrap(), "dmc 0.01 true", "{seen:?}");
        assert!(seen.contains(&"dmc 0.02 false".to_string()));
    }

    #[test]
    fn unmeasured_vmc_only_starts_dmc_and_a_restart_skips_it() {
        let mut runs = Fake::default();
        let seen = events(&Plan { measured: false, ..plan(&[0.02]) }, &mut runs);
        assert_eq!(seen[..3], ["vmc-starts false", "dmc-starts 0.02", "dmc 0.02 true"]);
        assert_eq!(runs.calls[0], "vmc 2");
        let mut runs = Fake::default();
        let seen = events(&Plan { restart: true, ..plan(&[0.02]) }, &mut runs);
        assert_eq!(seen[0], "dmc-starts 0.02");
        assert_eq!(runs.calls, ["restart", "dmc 0.02 from checkpoint"]);
        // VMC alone: no DMC event
        assert_eq!(events(&plan(&[]), &mut Fake::default()), ["vmc-starts true", "vmc -2.8 2"]);
    }

    #[test]
    fn an_error_of_the_caller_stops_the_plan() {
        let mut runs = Fake::default();
        let out = run(&plan(&[0.04, 0.02]), &mut runs, |e| if matches!(e, Event::Dmc { .. }) { Err("disk full".to_string()) } else { Ok(()) });
        assert_eq!(out, Err("disk full".to_string()));
        assert_eq!(runs.calls.len(), 2, "stopped after the first DMC run: {:?}", runs.calls);
    }
}
