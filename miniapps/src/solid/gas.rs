//! The electron gas's own checks in a `solid --system gas` run (`kernels::solid::Solid::electron_gas`), gathered
//! from every step an engine takes (the warm-up and timed repetitions and the profiled step; the cost is a sum over
//! the walkers' host energies, which both engines hold after each step anyway):
//! - with the Jastrow off, every walker's kinetic energy equals the plane waves' T_0 at every step (the determinant
//!   is an eigenfunction of the kinetic energy): the largest |T - T_0| / T_0 over walkers and steps, over the energy
//!   tolerance of the walker's condition number (`conditioning::energy_tolerance`: 1e-8 in double), must be <= 1;
//! - in VMC, the engine's energy (`kernels::ensemble::vmc::Vmc::estimate`: the mean local energy over the steps
//!   after equilibration, the first tenth and at least 10 steps, with the error bar of a blocking analysis of the
//!   per-step means over walkers): extras
//!   `e_vmc`, `e_vmc_error`, `e_hf` and `hf_converged`. With the Jastrow off E_VMC must be E_HF: a check that fails
//!   beyond 4 error bars, made only when the blocking analysis converged; otherwise the run says why (too few
//!   steps for the correlation time: run more `--steps` or `--max-reps`), records `hf_converged` 0 and no energy
//!   check. With the Jastrow on the extras show how far below E_HF the correlation brings the energy;
//! - in DMC, the engine's energy (`kernels::ensemble::dmc::Accumulators::estimate`: the generations' weighted mean local
//!   energies after equilibration, the same first tenth and at least 10 generations, with the error bar of a
//!   weighted blocking analysis): extras `e_dmc`, `e_dmc_error`, `e_dmc_samples`, `e_dmc_inefficiency`, `e_hf` and
//!   `dmc_converged`. Fixed-node DMC is variational, and the nodes here are the Hartree-Fock determinant's (the
//!   Jastrow, positive, moves none), so E_DMC <= E_HF with the Jastrow on or off, lower by the correlation energy
//!   those nodes allow (0.48 Ha at 14 electrons and r_s 1: tens of converged error bars). So, as the qmc driver's
//!   DMC check (3 error bars there), E_DMC must lie below E_HF by more than 4 error bars: the check's error is
//!   E_DMC + 4 sigma - E_HF in Ha (0 where negative), its tolerance 0, so a DMC that raises the energy or fails to
//!   lower it fails. It is made only when the blocking analysis converged; otherwise the run says why and records
//!   `dmc_converged` 0 and no energy check.

use crate::qmc::at_most;
use kernels::planewave::heg::HartreeFock;
use kernels::solid::conditioning::energy_tolerance;
use kernels::ensemble::dmc::Accumulators;
use kernels::ensemble::vmc::Vmc;
use kernels::solid::{Params, Parts, Solid};
use kernels::{Check, Precision};

/// Error bars within which E_VMC must equal E_HF, and by more than which E_DMC must lie below it.
pub const HF_SIGMAS: f64 = 4.0;

/// What the checks gather, step by step.
pub(crate) struct GasTally {
    hf: HartreeFock,
    jastrow: bool,
    vmc: bool,
    eps: f64,
    recompute: usize,
    /// Largest kinetic deviation over its tolerance, and the walker energies compared.
    worst: f64,
    checked: usize,
}

/// The outcome: checks for the record, extras, and a line to say.
pub(crate) struct GasOutcome {
    pub checks: Vec<Check>,
    pub extras: Vec<(&'static str, f64)>,
    pub note: Option<String>,
}

impl GasTally {
    /// The tally of a run of `sys` (None for carbon: nothing of this to check).
    pub fn new(sys: &Solid, p: Precision, params: &Params) -> Option<GasTally> {
        let gas = sys.gas?;
        Some(GasTally { hf: gas.hf, jastrow: gas.jastrow, vmc: !params.dmc, eps: p.eps(), recompute: params.recompute, worst: 0.0, checked: 0 })
    }

    /// After a step: every walker's energies and condition number.
    pub fn add(&mut self, parts: &[Parts], cond: &[f64]) {
        if !self.jastrow {
            let t0 = self.hf.kinetic;
            for (p, &c) in parts.iter().zip(cond) {
                let err = if p.kinetic.is_finite() { (p.kinetic - t0).abs() / t0 } else { f64::INFINITY };
                self.worst = kernels::check::worse(self.worst, err / energy_tolerance(self.eps, c, self.recompute));
            }
            self.checked += parts.len();
        }
    }

    /// The outcome of the run: `dmc` the engine's DMC generations (None in VMC), `vmc` its VMC steps (None in DMC).
    pub fn outcome(&self, dmc: Option<&Accumulators>, vmc: Option<&Vmc>) -> GasOutcome {
        let mut out = GasOutcome { checks: vec![], extras: vec![("e_hf", self.hf.energy), ("kinetic_t0", self.hf.kinetic)], note: None };
        if !self.jastrow {
            out.checks.push(Check {
                quantity: "kinetic energy = T_0 (zero variance), every walker every step (|T - T_0| / T_0 over cond tolerance)".into(),
                error: self.worst,
                tolerance: 1.0,
                compared: self.checked,
            });
        }
        if !self.vmc {
            if let Some(d) = dmc {
                dmc_outcome(self.hf.energy, d, &mut out);
            }
            return out;
        }
        let steps = vmc.map_or(0, |v| v.series.len());
        let Some(b) = equilibration(steps).and_then(|skip| vmc.map(|v| v.estimate(skip))) else {
            out.note = Some(format!("E_VMC not analysed: {steps} steps leave fewer than 2 after equilibration"));
            out.extras.push(("hf_converged", 0.0));
            return out;
        };
        out.extras.extend([("e_vmc", b.mean), ("e_vmc_error", b.error), ("e_vmc_samples", b.samples as f64), ("e_vmc_inefficiency", b.inefficiency_32), ("hf_converged", f64::from(u8::from(b.converged)))]);
        let sigmas = (b.mean - self.hf.energy) / b.error;
        let line = format!("E_VMC {:.6} +- {:.6} Ha ({} steps), E_HF {:.6} Ha: {sigmas:+.1} error bars", b.mean, b.error, b.samples, self.hf.energy);
        match (self.jastrow, b.why_unconverged()) {
            (false, None) => out.checks.push(Check {
                quantity: format!("VMC energy = Hartree-Fock energy without the Jastrow (|E_VMC - E_HF| / error bar, blocking of {} steps)", b.samples),
                error: if sigmas.is_finite() { sigmas.abs() } else { f64::INFINITY },
                tolerance: HF_SIGMAS,
                compared: b.samples,
            }),
            (false, Some(why)) => out.note = Some(format!("{line}; not checked against E_HF: {why}")),
            (true, why) => out.note = Some(format!("{line} (with the Jastrow: below E_HF is the expectation){}", why.map_or(String::new(), |w| format!("; {w}")))),
        }
        if out.note.is_none() {
            out.note = Some(line);
        }
        out
    }
}

/// The steps of a series of `n` left out as equilibration: the first tenth, at least 10 (None: fewer than 2 would
/// remain to analyse).
fn equilibration(n: usize) -> Option<usize> {
    let skip = (n / 10).max(10);
    (n >= skip + 2).then_some(skip)
}

/// The DMC energy of a run (module docs) into `out`: extras, the note, and once the blocking analysis converged the
/// check against `hf`.
fn dmc_outcome(hf: f64, d: &Accumulators, out: &mut GasOutcome) {
    let Some(skip) = equilibration(d.series.len()) else {
        out.note = Some(format!("E_DMC not analysed: {} generations leave fewer than 2 after equilibration", d.series.len()));
        out.extras.push(("dmc_converged", 0.0));
        return;
    };
    let b = d.estimate(skip);
    out.extras.extend([("e_dmc", b.mean), ("e_dmc_error", b.error), ("e_dmc_samples", b.samples as f64), ("e_dmc_inefficiency", b.inefficiency_32), ("dmc_converged", f64::from(u8::from(b.converged)))]);
    let sigmas = (b.mean - hf) / b.error;
    let line = format!("E_DMC {:.6} +- {:.6} Ha ({} generations after {skip}), E_HF {hf:.6} Ha: {sigmas:+.1} error bars", b.mean, b.error, b.samples);
    out.note = Some(match b.why_unconverged() {
        None => {
            // a NaN energy or error bar fails (at_most)
            let quantity = format!("DMC energy below the Hartree-Fock energy by more than {HF_SIGMAS} error bars (E_DMC + {HF_SIGMAS} sigma - E_HF, Ha; blocking of {} generations)", b.samples);
            out.checks.push(Check { compared: b.samples, ..at_most(&quantity, b.mean + HF_SIGMAS * b.error, hf, 0.0) });
            line
        }
        Some(why) => format!("{line}; not checked against E_HF: {why}"),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The outcome of a DMC run of the 14-electron gas whose generations had the energies `e` (weights 1).
    fn dmc_run(e: Vec<f64>) -> (GasOutcome, f64) {
        let sys = Solid::electron_gas(14, 1.0, true).unwrap();
        let params = Params { tau: 0.05, dmc: true, recompute: 8, seed: 1, first: 0, delay: 4 };
        let tally = GasTally::new(&sys, Precision::Double, &params).unwrap();
        let d = Accumulators { weights: vec![1.0; e.len()], series: e, ..Default::default() };
        (tally.outcome(Some(&d), None), sys.gas.unwrap().hf.energy)
    }

    /// `n` uncorrelated generations' energies about `mean` (spread 0.05 Ha: the error bar of 1800 of them is 1.2 mHa).
    fn noisy(n: usize, mean: f64) -> Vec<f64> {
        let mut r = kernels::rng::rng(7, 0);
        (0..n).map(|_| mean + 0.05 * kernels::rng::gaussian3(&mut r)[0]).collect()
    }

    fn extra(o: &GasOutcome, name: &str) -> Option<f64> {
        o.extras.iter().find(|e| e.0 == name).map(|e| e.1)
    }

    /// A DMC run recorded no energy and checked nothing about it. Now: E_DMC and its error bar as extras, and once
    /// the blocking analysis converged a check that E_DMC lies below E_HF by more than 4 error bars.
    #[test]
    fn the_gas_dmc_energy_is_checked_below_hartree_fock() {
        let hf = dmc_run(vec![]).1;
        let (o, _) = dmc_run(noisy(2000, hf - 0.48));
        assert_eq!(o.checks.len(), 1, "{:?}", o.checks);
        let c = &o.checks[0];
        assert!(c.passed() && c.error == 0.0 && c.compared == 1800 && c.quantity.contains("below the Hartree-Fock energy"), "{c:?}");
        assert!((extra(&o, "e_dmc").unwrap() - (hf - 0.48)).abs() < 0.005 && extra(&o, "e_dmc_samples") == Some(1800.0) && extra(&o, "dmc_converged") == Some(1.0));
        assert!(extra(&o, "e_dmc_error").is_some_and(|s| s > 0.0 && s < 0.002) && extra(&o, "e_vmc").is_none() && extra(&o, "e_hf") == Some(hf));
        assert!(o.note.as_deref().is_some_and(|n| n.starts_with("E_DMC") && n.contains("1800 generations after 200")), "{:?}", o.note);
        // above E_HF, at it, or below it by less than 4 error bars (about 5 mHa here): fails
        for shift in [0.1, 0.0, -0.002] {
            let (o, _) = dmc_run(noisy(2000, hf + shift));
            assert!(!o.checks[0].passed() && o.checks[0].error > 0.0, "E_HF {shift:+}: {:?}", o.checks[0]);
        }
        // a NaN generation: the mean is NaN, which fails
        let mut e = noisy(2000, hf - 0.48);
        e[1000] = f64::NAN;
        let (o, _) = dmc_run(e);
        assert!(!o.checks[0].passed() && o.checks[0].error == f64::INFINITY, "{:?}", o.checks[0]);
    }

    /// Too few generations to analyse, or too few for a converged error bar: the run says so, records
    /// dmc_converged 0 and makes no energy check (and does not panic).
    #[test]
    fn a_short_gas_dmc_says_why_it_is_not_checked() {
        let (o, hf) = dmc_run(noisy(11, 0.0));
        assert!(o.checks.is_empty() && extra(&o, "dmc_converged") == Some(0.0) && extra(&o, "e_dmc").is_none(), "{:?}", o.extras);
        assert!(o.note.as_deref().is_some_and(|n| n.contains("E_DMC not analysed: 11 generations")), "{:?}", o.note);
        let (o, _) = dmc_run(noisy(40, hf - 0.48));
        assert!(o.checks.is_empty() && extra(&o, "dmc_converged") == Some(0.0) && extra(&o, "e_dmc").is_some(), "{:?}", o.extras);
        assert!(o.note.as_deref().is_some_and(|n| n.contains("not checked against E_HF: the blocking analysis did not converge")), "{:?}", o.note);
        // VMC's outcome has no DMC energy
        let sys = Solid::electron_gas(14, 1.0, true).unwrap();
        let params = Params { tau: 0.15, dmc: false, recompute: 8, seed: 1, first: 0, delay: 4 };
        let o = GasTally::new(&sys, Precision::Double, &params).unwrap().outcome(None, None);
        assert!(extra(&o, "dmc_converged").is_none() && extra(&o, "hf_converged") == Some(0.0));
    }
}
