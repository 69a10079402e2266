//! Diffusion Monte Carlo with importance sampling (Reynolds, Ceperley, Alder and Lester 1982; Umrigar, Nightingale
//! and Runge 1993), as paper 000 runs it: each generation every walker makes a sweep of single-electron
//! drift-diffusion moves accepted by Metropolis-Hastings (fixed-node: a sign change is rejected), then carries the
//! branching weight
//!     w = exp(-tau_eff [ (E_L(R) + E_L(R')) / 2 - E_T ]),
//! and is replaced by floor(w + xi) copies. The small-time-step improvements of UNR:
//! - the limited drift (`walker::drift`),
//! - the local energy in the weight enters as E_est - (E_est - E_L) |v_bar| / |v|, which tames the divergence of
//!   E_L near nodes and nuclei and vanishes as tau -> 0,
//! - tau_eff = tau x (accepted / proposed mean-square displacement), accumulated over the run, so rejected moves do
//!   not make walkers branch as though they had diffused.
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
    walkers.par_iter_mut().for_each(|w| w.measure(sys, p.tau));
    let mut e_est = walkers.iter().map(|w| w.e_local).sum::<f64>() / walkers.len() as f64;
    let mut e_trial = e_est;
    let mut recent: Vec<f64> = vec![];
    let (mut series, mut weights, mut var_sum, mut pop_sum) = (vec![], vec![], 0.0, 0.0);
    let (mut moves, mut walker_steps) = (MoveStats::default(), 0u64);
    let mut branch_rng = stream(p.seed, 4, 0, 0);
    for gen in 0..p.equil + p.steps {
        let out: Vec<(MoveStats, f64, f64)> = walkers
            .par_iter_mut()
            .enumerate()
            .map(|(k, w)| {
                let s_old = (e_est - w.e_local) * w.drift_ratio;
                let m = w.sweep(p.tau, true, &mut stream(p.seed, 3, gen, k));
                w.measure(sys, p.tau);
                let s_new = (e_est - w.e_local) * w.drift_ratio;
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
        if gen >= p.equil {
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
        if gen < p.equil {
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
