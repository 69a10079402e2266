//! The electron gas's own checks in a `solid --system gas` run (`kernels::solid::Solid::electron_gas`), gathered
//! from every step an engine takes (the warm-up and timed repetitions and the profiled step; the cost is a sum over
//! the walkers' host energies, which both engines hold after each step anyway):
//! - with the Jastrow off, every walker's kinetic energy equals the plane waves' T_0 at every step (the determinant
//!   is an eigenfunction of the kinetic energy): the largest |T - T_0| / T_0 over walkers and steps, over the energy
//!   tolerance of the walker's condition number (`conditioning::energy_tolerance`: 1e-8 in double), must be <= 1;
//! - in VMC, the mean local energy over the steps after equilibration (the first tenth, at least 10 steps), with
//!   the error bar of a blocking analysis (`kernels::qmc::blocking`) of the per-step means over walkers: extras
//!   `e_vmc`, `e_vmc_error`, `e_hf` and `hf_converged`. With the Jastrow off E_VMC must be E_HF: a check that fails
//!   beyond 4 error bars, made only when the blocking analysis converged; otherwise the run says why (too few
//!   steps for the correlation time: run more `--steps` or `--max-reps`), records `hf_converged` 0 and no energy
//!   check. With the Jastrow on the extras show how far below E_HF the correlation brings the energy.

use kernels::qmc::blocking::{blocking, Blocked};
use kernels::planewave::heg::HartreeFock;
use kernels::solid::conditioning::energy_tolerance;
use kernels::solid::{Params, Parts, Solid};
use kernels::{Check, Precision};

/// Error bars within which E_VMC must equal E_HF.
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
    /// Mean local energy of each step.
    means: Vec<f64>,
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
        Some(GasTally { hf: gas.hf, jastrow: gas.jastrow, vmc: !params.dmc, eps: p.eps(), recompute: params.recompute, worst: 0.0, checked: 0, means: vec![] })
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
        self.means.push(parts.iter().map(Parts::local).sum::<f64>() / parts.len() as f64);
    }

    /// The blocking analysis of the steps after equilibration (None: too few of them to analyse).
    fn blocked(&self) -> Option<Blocked> {
        let skip = (self.means.len() / 10).max(10);
        (self.means.len() >= skip + 2).then(|| blocking(&self.means[skip..]))
    }

    pub fn outcome(&self) -> GasOutcome {
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
            return out;
        }
        let Some(b) = self.blocked() else {
            out.note = Some(format!("E_VMC not analysed: {} steps leave fewer than 2 after equilibration", self.means.len()));
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
