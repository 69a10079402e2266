//! What a run of the solid checks, on one engine or on every rank's:
//! - every walker's local energy and branching weight finite at every step ([`Finite`](super::finite::Finite), tallied by the engines
//!   where they compute them: a NaN weight would send every comb copy to walker 0 and nothing else would notice);
//! - a sample of the walkers (the first, the last and [`RANDOM_WALKERS`] seeded others: `check::sample`) against the
//!   f64 reference from scratch at their own configurations ([`sampled`]), each within the tolerances of its
//!   condition number (`conditioning`), so a fault in a late walker or a late chunk of the population shows.
//!
//! Both engines' host copies of the energies are what is tallied: the GPU engine downloads every walker's kinetic,
//! Ewald and nonlocal energies every step anyway (the comb runs on the host), so the check needs no extra reduction
//! or transfer.

use super::conditioning::{energy_tolerance, inverse_tolerance};
use super::ranks::{Cargo, Engine};
use super::{compare, Solid, SolidError};
use crate::check::{worse, Check};
use crate::Real;
use rayon::prelude::*;

/// Walkers drawn at random per engine besides the first and the last.
pub const RANDOM_WALKERS: usize = 2;

/// Sampled walkers against the reference: the worst error over its tolerance, and the conditioning seen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampled {
    /// Walkers compared.
    pub walkers: usize,
    /// Largest energy and inverse error, each over the tolerance of its walker's condition number (NaN: infinite).
    pub energy: f64,
    pub inverse: f64,
    /// The largest condition number among them, and the energy tolerance at it.
    pub cond: f64,
    pub energy_tolerance: f64,
}

impl Sampled {
    /// The two checks of a record; `which` says what was sampled ("first, last and 2 random of 128 walkers").
    pub fn checks(&self, which: &str) -> [Check; 2] {
        let check = |what: &str, error: f64| Check {
            quantity: format!("{what} vs reference, {which} (error / cond tolerance)"),
            error,
            tolerance: 1.0,
            compared: self.walkers,
        };
        [check("local energy", self.energy), check("inverse", self.inverse)]
    }
}

/// Walkers `which` of engine `e` (downloaded one by one from a GPU) against the f64 reference, in parallel, with the
/// tolerances of storage precision `eps` and re-inversion interval `recompute`.
pub fn sampled<S: Real>(sys: &Solid, e: &mut dyn Engine<S>, which: &[usize], eps: f64, recompute: usize) -> Result<Sampled, SolidError> {
    let walkers = which.iter().map(|&k| e.take(k, Cargo::Whole).map(|w| (k, w))).collect::<Result<Vec<_>, _>>()?;
    let results: Vec<Result<(f64, f64, f64, f64), SolidError>> = walkers
        .par_iter()
        .map(|(k, w)| {
            let c = compare(sys, &w.pos, &w.rot, w.parts, &w.inv_f64()).map_err(|_| SolidError::Singular(*k))?;
            let tol = energy_tolerance(eps, c.cond, recompute);
            Ok((c.energy / tol, c.inverse / inverse_tolerance(eps, c.cond, recompute), c.cond, tol))
        })
        .collect();
    let mut s = Sampled { walkers: which.len(), energy: 0.0, inverse: 0.0, cond: 0.0, energy_tolerance: 0.0 };
    for r in results {
        let (energy, inverse, cond, tol) = r?;
        (s.energy, s.inverse) = (worse(s.energy, energy), worse(s.inverse, inverse));
        if cond > s.cond || cond.is_nan() {
            (s.cond, s.energy_tolerance) = (cond, tol);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::super::cpu::CpuEngine;
    use super::super::{Params, Solid};
    use super::*;
    use crate::check::sample;

    fn engine(sys: &Solid, walkers: usize) -> CpuEngine<'_, f64, f64> {
        CpuEngine::<f64, f64>::new(sys, walkers, Params { tau: 0.02, dmc: true, recompute: 0, seed: 5, first: 0, delay: 1 }).unwrap()
    }

    /// A NaN weight on walker 2 of 4 (its old energy made NaN before the step): walker 0 and the step's energies
    /// stay finite, so the old walker-0 check passed; the DMC generation stops on the NaN energy it makes, and the
    /// tally names the walker and fails the record.
    #[test]
    fn a_nan_weight_on_a_later_walker_fails() {
        let sys = Solid::carbon(8, 5).unwrap();
        let mut e = engine(&sys, 4);
        e.step().unwrap();
        assert!(e.finite.check().passed(), "{:?}", e.finite);
        e.parts[2].kinetic = f64::NAN;
        let stop = e.step().unwrap_err().to_string();
        assert!(stop.contains("became NaN at generation 1"), "{stop}");
        let c = e.finite.check();
        assert!(!c.passed(), "{c:?}");
        assert!(c.quantity.contains("step 1, walker 2"), "{}", c.quantity);
        let walker0 = sampled(&sys, &mut e, &[0], f64::EPSILON, 0).unwrap();
        assert!(walker0.checks("walker 0").iter().all(Check::passed), "what the old check saw: {walker0:?}");
    }

    /// The sample reaches a late walker: a planted error in the last walker fails the check, and a NaN energy
    /// there is infinite, not dropped.
    #[test]
    fn the_sample_catches_a_fault_in_the_last_walker() {
        let sys = Solid::carbon(8, 5).unwrap();
        let mut e = engine(&sys, 5);
        e.step().unwrap();
        let which = sample(5, RANDOM_WALKERS, 1);
        assert_eq!((which[0], *which.last().unwrap(), which.len()), (0, 4, 4));
        let ok = sampled(&sys, &mut e, &which, f64::EPSILON, 0).unwrap();
        assert!(ok.checks("x").iter().all(|c| c.passed() && c.compared == 4), "{ok:?}");
        assert!(ok.cond > 1.0 && ok.energy_tolerance == 1e-8);
        e.parts[4].nonlocal += 1e-7 * e.parts[4].magnitude(); // ten times the double tolerance
        let bad = sampled(&sys, &mut e, &which, f64::EPSILON, 0).unwrap();
        assert!(!bad.checks("x")[0].passed() && bad.checks("x")[1].passed(), "{bad:?}");
        e.parts[4].nonlocal = f64::NAN;
        let nan = sampled(&sys, &mut e, &which, f64::EPSILON, 0).unwrap();
        assert_eq!(nan.energy, f64::INFINITY);
    }
}
