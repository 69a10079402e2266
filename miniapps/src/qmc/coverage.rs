//! `qmc --coverage N`: are the DMC error bars honest? N independent DMC runs (seeded apart, each from its own VMC
//! equilibration) of a system with an exact energy, and the fraction of runs whose error bar covers it: within one
//! error bar 68.3% of the time and within two 95.4%, as a normal distribution has it (a Student t of 15 degrees of
//! freedom for error bars from 16 blocks: 66.7% and 93.6%), within the binomial bounds of N runs
//! (`kernels::qmc::coverage`). The runs are spread over the CPU cores (one after another on the GPU).
//!
//! The runs compare with the exact energy, so their biases must be negligible beside their error bars. The
//! time-step bias is not: He at tau = 0.04 lies about 0.8 mHa above the exact energy (1024 walkers, 1000/Ha:
//! +0.81(31) mHa), several tenths of a short run's error bar. Given a time-step series (--tau 0.04,0.02), each run
//! is extrapolated to tau = 0 as the driver does, which removes it. What remains is the population-control bias,
//! O(1 / walkers): 121 runs of 32 walkers and 173 of 64 (tau = 0.04, 120/Ha) lay 1.8(5) and 1.7(3) mHa above the
//! exact energy, 256 walkers 1.1(2), of which the time step accounts for 0.8. A bias of `BIAS` error bars moves the
//! fractions by at most 1.5% and 0.7%, which the expected band allows for; the pooled mean of the runs measures
//! the bias, and the record fails if it exceeds BIAS error bars by more than 3 pooled standard errors. A run whose
//! error bar did not converge is left out (its error bar is not to be trusted) and counted; more than 5% of them
//! fails the record (run longer: --dmc-time).
//!
//! Measured on the 2-core build machine: 200 runs of 64 walkers, tau = 0.04 and 0.02 for 500/Ha each,
//! extrapolated: 199 converged; 63.3% within one error bar (band 51.7-81.5%) and 95.0% within two (85.7-100%),
//! mean z^2 1.22 (1.15 expected of a t with 15 degrees of freedom); the runs spread by 3.85 mHa against a mean error
//! bar of 3.83 mHa; their pooled mean +0.91(27) mHa above the exact energy, 0.24 error bars (population control
//! of 64 walkers). The same runs with Lee et al.'s block choice and 120/Ha (the driver before): a spread 15%
//! larger than the error bars (173 runs), 24% at 256 walkers.

use super::{at_most, case, seed_of, sized, vmc_tau, within, work, Args, On};
use anyhow::{bail, Result};
use harness::timing::Stats;
use harness::{Runner, Variant};
use kernels::ensemble::comm::Ranks;
use kernels::ensemble::blocking::BLOCKS;
use kernels::ensemble::coverage::coverage;
use kernels::qmc::dmc::DmcParams;
use kernels::qmc::plan::{self, Event, Plan};
use kernels::qmc::vmc::VmcParams;
use kernels::qmc::System;
use kernels::Check;
use rayon::prelude::*;
use std::time::Instant;

/// The largest bias a run may carry, in units of its error bar.
pub const BIAS: f64 = 0.25;
/// The largest fraction of runs without a converged error bar.
pub const MAX_UNCONVERGED: f64 = 0.05;

/// One run's estimate: the energy at one time step, or extrapolated to tau = 0 over the series.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub energy: f64,
    pub error: f64,
    /// Every error bar it rests on converged.
    pub converged: bool,
    pub walker_steps: u64,
}

/// Run the coverage test of every system (each needs an exact energy and a nonzero variance: he, h2). With as many
/// time steps as the --tau-fit model has coefficients, each run is a time-step series extrapolated to tau = 0 (so
/// the time-step bias is removed, as in the main driver) and there is one record per system, precision and
/// variant at tau = 0; with one time step, one record per time step.
pub fn run(r: &mut Runner, a: &Args, systems: &[Vec<System>], variants: &[Variant], runs: usize) -> Result<()> {
    if runs < 20 {
        bail!("--coverage {runs} is too few runs to count fractions: use at least 20 (binomial bounds of 100 runs are +-19% at 4 standard deviations)");
    }
    if let Some(s) = systems.iter().flatten().find(|s| s.exact.is_none() || s.fixed_node.is_some() || s.name == "h") {
        bail!("--coverage compares DMC with an exact energy: {} has none that DMC reaches (use he or h2)", s.name);
    }
    let extrapolate = a.tau.len() >= a.tau_fit.parameters();
    if !extrapolate && a.tau.len() > 1 {
        bail!("--coverage takes one --tau, or a series of at least {} for a {} extrapolation to tau = 0", a.tau_fit.parameters(), a.tau_fit.name());
    }
    let ranks = Ranks::choose(1).map_err(anyhow::Error::msg)?;
    r.plan(variants.len() * systems.iter().map(|s| s.len()).sum::<usize>());
    for (i, in_precisions) in systems.iter().enumerate() {
        for &variant in variants {
            for sys in in_precisions {
                let n = sized(a, sys);
                let base = seed_of(r, i, sys.precision);
                let generations: Vec<usize> = a.tau.iter().map(|&tau| n.dmc_steps(tau)).collect();
                r.step(format!("dmc coverage {} {} {variant:?}: {runs} runs of {} walkers, tau {:?}, generations {generations:?}", sys.name, sys.precision, n.walkers, a.tau));
                let t = Instant::now();
                let gpu = r.gpu().cloned();
                // run j: VMC from its own seed, then DMC at every time step from the VMC walkers
                let one = |j: usize| -> Result<Sample> {
                    let seed = base.wrapping_add((j as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let vmc = VmcParams { walkers: n.walkers, steps: 2, equil: a.equil, tau: vmc_tau(sys, a), seed };
                    let dmc = a.tau.iter().enumerate().map(|(k, &tau)| DmcParams { walkers: n.walkers, steps: generations[k], equil: a.equil, tau, seed: seed + k as u64, feedback: a.feedback, balance: a.balance.into() }).collect();
                    let plan = Plan { vmc, measured: false, restart: false, dmc, fit: a.tau_fit };
                    // one rank per run (an MPI communicator is not shared by the runs' threads)
                    let solo = Ranks::Solo;
                    let mut on = On { gpu: if variant == Variant::Gpu { gpu.clone() } else { None }, sys, ranks: &solo, a, label: sys.name.clone() };
                    let mut sample = Sample { energy: 0.0, error: 0.0, converged: true, walker_steps: 0 };
                    // the extrapolation to tau = 0, or with one --tau that time step's energy
                    let (mut first, mut fitted) = (None, None);
                    plan::run(&plan, &mut on, |event| {
                        match event {
                            Event::Dmc { report, .. } => {
                                let e = report.estimate.expect("a run without stop_after finishes");
                                sample.converged &= e.blocked.converged;
                                sample.walker_steps += e.walker_steps;
                                first.get_or_insert((e.energy, e.error));
                            }
                            Event::Fit { fit, .. } => fitted = Some((fit.energy, fit.error)),
                            _ => {}
                        }
                        Ok(())
                    })?;
                    (sample.energy, sample.error) = fitted.or(first).expect("--coverage runs at least one time step");
                    Ok(sample)
                };
                let samples: Vec<Sample> = match variant {
                    Variant::Gpu => (0..runs).map(one).collect::<Result<_>>()?,
                    _ => (0..runs).into_par_iter().map(one).collect::<Result<_>>()?,
                };
                let secs = t.elapsed().as_secs_f64();
                let exact = sys.exact.expect("checked above");
                let (checks, extras, summary) = evaluate(&samples, exact);
                let walker_steps = samples.iter().map(|e| e.walker_steps).sum();
                let tau = if extrapolate { 0.0 } else { a.tau[0] };
                let case = case(a, n, sys, "dmc-coverage", tau, &ranks).size("steps", generations[generations.len() - 1]).size("runs", runs);
                r.record(&case, variant, Stats::from_samples(&[secs]), work(sys, walker_steps), &checks)?;
                if let Some(rec) = r.records.last_mut() {
                    rec.reps = 1;
                }
                for (k, v) in extras {
                    r.extra(k, v);
                }
                r.extra("time_steps", a.tau.len() as f64);
                r.say(&format!("  dmc coverage {} {} {variant:?} tau {}: {summary}", sys.name, sys.precision, if extrapolate { "-> 0".to_string() } else { a.tau[0].to_string() }));
            }
        }
    }
    Ok(())
}

/// The checks of a set of runs against the exact energy, the record's extras and a one-line summary.
pub fn evaluate(samples: &[Sample], exact: f64) -> (Vec<Check>, Vec<(&'static str, f64)>, String) {
    let n = samples.len();
    let kept: Vec<&Sample> = samples.iter().filter(|e| e.converged).collect();
    let m = kept.len().max(1) as f64;
    let z: Vec<f64> = kept.iter().map(|e| (e.energy - exact) / e.error).collect();
    let c = coverage(&z, BLOCKS, BIAS);
    // the pooled mean of the runs (equal weights: independent runs of one length) and its standard error from their
    // spread; the bias in units of the mean error bar
    let pooled = kept.iter().map(|e| e.energy).sum::<f64>() / m;
    let spread = (kept.iter().map(|e| (e.energy - pooled).powi(2)).sum::<f64>() / (m - 1.0).max(1.0)).sqrt();
    let pooled_error = spread / m.sqrt();
    let mean_error = kept.iter().map(|e| e.error).sum::<f64>() / m;
    let unconverged = (n - kept.len()) as f64 / n as f64;
    let mid = |k: usize| 0.5 * (c.band[k].0 + c.band[k].1);
    let half = |k: usize| 0.5 * (c.band[k].1 - c.band[k].0);
    let checks = vec![
        at_most("runs with unconverged error bars (fraction)", unconverged, 0.0, MAX_UNCONVERGED),
        within("runs within 1 error bar of exact (fraction, band centre)", c.within[0], mid(0), half(0)),
        within("runs within 2 error bars of exact (fraction, band centre)", c.within[1], mid(1), half(1)),
        at_most("bias: |pooled mean - exact| / mean error bar", (pooled - exact).abs() / mean_error, 0.0, BIAS + 3.0 * pooled_error / mean_error),
    ];
    let extras = vec![
        ("runs", n as f64),
        ("converged_runs", kept.len() as f64),
        ("within_1", c.within[0]),
        ("within_2", c.within[1]),
        ("band_1_low", c.band[0].0),
        ("band_1_high", c.band[0].1),
        ("band_2_low", c.band[1].0),
        ("band_2_high", c.band[1].1),
        ("mean_z2", c.mean_z2),
        ("pooled_energy", pooled),
        ("pooled_error", pooled_error),
        ("spread", spread),
        ("mean_error", mean_error),
        ("exact", exact),
    ];
    let summary = format!(
        "{} of {n} runs converged; within 1 error bar {:.3} (band {:.3}-{:.3}), within 2 {:.3} (band {:.3}-{:.3}), mean z^2 {:.2}; pooled {pooled:.6} +- {pooled_error:.6} Ha (exact {exact}), spread of the runs {spread:.6}, mean error bar {mean_error:.6}",
        kept.len(),
        c.within[0],
        c.band[0].0,
        c.band[0].1,
        c.within[1],
        c.band[1].0,
        c.band[1].1,
        c.mean_z2
    );
    (checks, extras, summary)
}
