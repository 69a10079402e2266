//! Diffusion Monte Carlo with importance sampling (Reynolds, Ceperley, Alder and Lester 1982; Umrigar, Nightingale
//! and Runge 1993), as paper 000 runs it: each generation every walker makes a sweep of single-electron
//! drift-diffusion moves accepted by Metropolis-Hastings (fixed-node: a sign change is rejected), then carries the
//! branching weight
//!     w = exp(-tau_eff [ (E_L(R) + E_L(R')) / 2 - E_T ]),
//! and is replaced by floor(w + xi) copies. The small-time-step improvements:
//!
//! - the limited drift (`walker::drift`), UNR's remedy for the divergent drift near nodes and nuclei,
//! - the local energy in the weight limited to E_est +- 0.2 sqrt(N / tau) (Zen, Sorella, Gillan, Michaelides and
//!   Alfè 2016), which stops a walker near a node from branching wildly. UNR's own limit, (E_est - E_L) scaled by
//!   |v_bar| / |v|, was tried first: it acts near the nuclei too, where E_L is finite with cusp-correct orbitals,
//!   and it moved He at tau = 0.04 by 1.2 mHa (-2.9005(4) against -2.9017(5) without any limit; -2.9031(3) with
//!   this one and a full equilibration),
//! - tau_eff = tau x (accepted / proposed mean-square displacement), accumulated over the run, so rejected moves do
//!   not make walkers branch as though they had diffused.
//!
//! The trial energy follows the population: E_T = E_est - ln(N / N_target) / (g tau_eff), which pulls the population
//! back to its target over about g generations. The energy is the mixed estimator sum w E_L / sum w per generation,
//! averaged over the generations after equilibration, with a blocking error bar.

use super::blocking::blocking;
use super::vmc::{stream, Estimate};
use super::walker::{MoveStats, Walker};
use super::System;
use rand::Rng;
use rayon::prelude::*;

/// Parameters of a DMC run.
#[derive(Clone, Copy, Debug)]
pub struct DmcParams {
    /// Target population.
    pub walkers: usize,
    /// Measured generations after equilibration.
    pub steps: usize,
    /// Generations discarded first.
    pub equil: usize,
    pub tau: f64,
    pub seed: u64,
    /// Population feedback time g, in generations.
    pub feedback: f64,
}

/// Most copies one walker may make in one generation (a walker that would make more is a sign of trouble; the cap
/// bounds the damage, and at the time steps used here w > 4 does not occur).
const MAX_COPIES: usize = 4;

/// The energy cap of Zen et al., in units of sqrt(N / tau).
const ENERGY_CAP: f64 = 0.2;

/// The imaginary time DMC spends equilibrating at least, in 1/Ha. The excess of the VMC start over the DMC energy
/// decays as exp(-gap t), the gap being that to the first excited state of the same symmetry (0.73 Ha for He,
/// 0.45 Ha for H2): after 10/Ha the 25-35 mHa VMC excess is down to 0.3 mHa (H2) or far less, and still falling.
/// A run with 50 generations of 0.02 (1/Ha) was 22 mHa off for He.
pub const MIN_EQUIL_TIME: f64 = 10.0;

/// Generations discarded: --equil, but at least MIN_EQUIL_TIME of imaginary time.
pub fn equilibration(p: &DmcParams) -> usize {
    p.equil.max((MIN_EQUIL_TIME / p.tau).ceil() as usize)
}

/// Why a DMC run stopped.
#[derive(Debug, thiserror::Error)]
pub enum DmcError {
    #[error("the DMC population died out at generation {0} (target {1}): the time step is likely too large for this trial function")]
    DiedOut(usize, usize),
    #[error("the DMC population exploded to {0} walkers at generation {1} (target {2}): the time step is likely too large for this trial function")]
    Exploded(usize, usize, usize),
    #[error("the DMC local energy became {0} at generation {1}")]
    NotFinite(f64, usize),
}

/// Run DMC from `walkers` (equilibrated VMC walkers; their number should be the target).
pub fn run(sys: &System, p: &DmcParams, mut walkers: Vec<Walker>) -> Result<Estimate, DmcError> {
    let target = p.walkers;
    walkers.par_iter_mut().for_each(|w| w.measure(sys));
    let mut e_est = walkers.iter().map(|w| w.e_local).sum::<f64>() / walkers.len() as f64;
    let mut e_trial = e_est;
    let mut recent: Vec<f64> = vec![];
    let (mut series, mut weights, mut var_sum, mut pop_sum) = (vec![], vec![], 0.0, 0.0);
    let (mut moves, mut walker_steps) = (MoveStats::default(), 0u64);
    let mut branch_rng = stream(p.seed, 4, 0, 0);
    let cap = ENERGY_CAP * (sys.n_electrons as f64 / p.tau).sqrt();
    let equil = equilibration(p);
    for gen in 0..equil + p.steps {
        let out: Vec<(MoveStats, f64, f64)> = walkers
            .par_iter_mut()
            .enumerate()
            .map(|(k, w)| {
                let s_old = (e_est - w.e_local).clamp(-cap, cap);
                let m = w.sweep(p.tau, true, &mut stream(p.seed, 3, gen, k));
                w.measure(sys);
                let s_new = (e_est - w.e_local).clamp(-cap, cap);
                (m, 0.5 * (s_old + s_new), w.e_local)
            })
            .collect();
        walker_steps += out.len() as u64;
        for o in &out {
            moves.add(&o.0);
        }
        let tau_eff = p.tau * moves.r2_accepted / moves.r2_proposed.max(f64::MIN_POSITIVE);
        let w: Vec<f64> = out.iter().map(|o| (tau_eff * (o.1 + e_trial - e_est)).exp()).collect();
        let wsum: f64 = w.iter().sum();
        let e_gen = w.iter().zip(&out).map(|(w, o)| w * o.2).sum::<f64>() / wsum;
        if !e_gen.is_finite() {
            return Err(DmcError::NotFinite(e_gen, gen));
        }
        if gen >= equil {
            var_sum += w.iter().zip(&out).map(|(w, o)| w * (o.2 - e_gen).powi(2)).sum::<f64>();
            pop_sum += walkers.len() as f64;
            series.push(e_gen);
            weights.push(wsum);
        }
        // birth and death: floor(w + xi) copies of each walker, drawn in walker order (deterministic)
        let mut next = Vec::with_capacity(walkers.len() + walkers.len() / 8);
        for (walker, wk) in walkers.into_iter().zip(&w) {
            let copies = ((wk + branch_rng.random::<f64>()) as usize).min(MAX_COPIES);
            for _ in 1..copies {
                next.push(walker.clone());
            }
            if copies > 0 {
                next.push(walker);
            }
        }
        walkers = next;
        if walkers.is_empty() {
            return Err(DmcError::DiedOut(gen, target));
        }
        if walkers.len() > 10 * target {
            return Err(DmcError::Exploded(walkers.len(), gen, target));
        }
        // E_est: during equilibration the mean of the last generations (forgetting the VMC start), then the mean
        // of all measured generations
        if gen < equil {
            recent.push(e_gen);
            let keep = (recent.len() / 2).max(1);
            e_est = recent[recent.len() - keep..].iter().sum::<f64>() / keep as f64;
        } else {
            let wsum: f64 = weights.iter().sum();
            e_est = series.iter().zip(&weights).map(|(e, w)| e * w).sum::<f64>() / wsum;
        }
        e_trial = e_est - (walkers.len() as f64 / target as f64).ln() / (p.feedback * tau_eff);
    }
    let b = blocking(&series);
    let wsum: f64 = weights.iter().sum();
    Ok(Estimate {
        energy: series.iter().zip(&weights).map(|(e, w)| e * w).sum::<f64>() / wsum,
        error: b.error,
        blocked: b,
        variance: var_sum / wsum,
        acceptance: moves.acceptance(),
        tau_eff: p.tau * moves.r2_accepted / moves.r2_proposed.max(f64::MIN_POSITIVE),
        population: pop_sum / series.len() as f64,
        walker_steps,
    })
}
