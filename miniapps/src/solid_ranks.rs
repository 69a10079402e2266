//! `solid --ranks N` (or under mpirun with the `mpi` feature): the synthetic solid's DMC over ranks, one per GPU
//! (threads: one thread per GPU of this process, device = local rank modulo the visible devices) or per CPU core
//! group (the cpu variant: thread ranks share the process's rayon pool, so the cores go to whichever rank has
//! work; under mpirun each process has its own pool, sized with --threads). `--walkers` is the population over all
//! ranks; each rank's engine holds its share. Population control is one comb over all ranks plus walker migration
//! (`kernels::solid::ranks`); the trial energy is global.
//!
//! Records (rank 0 writes them): one per (electrons, walkers, precision, variant), `sizes.ranks`,
//! `params.transport`, `params.system`; the time of `--steps` generations after one untimed generation, with the
//! per-generation means over ranks of the time in walker moves (`compute_per_gen_s`), in the sum over ranks
//! (`reduce_per_gen_s`, including the wait for the slowest rank) and in branching and migration
//! (`migrate_per_gen_s`), and `generations_run`: what the `solid-scaling` figure turns into efficiencies.
//!
//! Validation, on every rank: walker 0, and the last walker that arrived from another rank, against the f64
//! reference, each within the tolerances of its condition number (`kernels::solid::conditioning`; the record keeps
//! the worst rank's error over its tolerance, and the largest condition number as the extra `cond`); and every
//! rank holds the same trial energy (`E_est spread`).

use crate::solid::{reference_checks, work, Args};
use anyhow::{bail, Result};
use harness::timing::Stats;
use harness::{Case, Runner, Variant};
use kernels::determinant::cpu::Scalar;
use kernels::gpu::Gpu;
use kernels::pseudopotential::Setup;
use kernels::qmc::comm::{share, Comm, Ranks};
use kernels::solid::cpu::CpuEngine;
use kernels::solid::gpu::GpuEngine;
use kernels::solid::ranks::{generation, Dmc, Engine};
use kernels::solid::{Params, Solid};
use kernels::{Check, Precision, Real};
use std::time::Instant;

/// What each rank reports, in one vector summed over ranks (each rank fills its own block).
const SLOTS: usize = 15;

/// Threads transport with the gpu variant: one GPU per rank.
pub fn gpus_for_ranks(ranks: usize, gpus: usize) -> Result<()> {
    if gpus < ranks {
        bail!("--ranks {ranks} with the gpu variant needs one GPU per rank, but {gpus} GPU(s) are visible");
    }
    Ok(())
}

pub fn run(r: &mut Runner, a: &Args, ranks: &Ranks, precisions: &[Precision]) -> Result<()> {
    let size = ranks.size();
    if a.method != "dmc" {
        bail!("--ranks runs DMC (population control over ranks): use --method dmc");
    }
    if let Some(w) = a.walkers.iter().find(|&&w| w < size) {
        bail!("--walkers {w} is fewer than the {size} ranks: every rank needs walkers");
    }
    if r.runs(Variant::Gpu) && ranks.transport() == "threads" {
        gpus_for_ranks(size, Gpu::count().unwrap_or(0))?;
    }
    let variants: Vec<Variant> = [Variant::Cpu, Variant::Gpu].into_iter().filter(|v| r.runs(*v)).collect();
    r.plan(a.electrons.len() * a.walkers.len() * precisions.len() * variants.len());
    for (i, &ne) in a.electrons.iter().enumerate() {
        r.step(format!("building the {}-atom solid", ne / 4));
        let sys = Solid::carbon(ne / 4, r.seed(i as u64 + 1)).map_err(anyhow::Error::msg)?;
        for &p in precisions {
            let params = Params { tau: a.tau, dmc: true, recompute: a.recompute, seed: r.seed(100 + i as u64), first: 0, delay: crate::solid::delay(a, ne) };
            for &v in &variants {
                for &w in &a.walkers {
                    r.step(format!("solid {v} {p} electrons={ne} walkers={w} ranks={size}"));
                    let out = match p {
                        Precision::Double => ranks.each(|c, _| on_rank::<f64, f64>(c, &sys, params, w, a.steps, v)),
                        _ => ranks.each(|c, _| on_rank::<f32, f64>(c, &sys, params, w, a.steps, v)),
                    };
                    let (all, energy) = out.into_iter().next().expect("at least one rank here");
                    if ranks.root() {
                        record(r, a, &sys, p, v, w, ranks, &all, energy)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// One rank's run: its engine over its share, one untimed generation, `steps` timed ones; returns every rank's
/// report block (summed over ranks) and the mean generation energy. A rank that fails stops all of them.
fn on_rank<S: Scalar, A: Scalar>(c: &dyn Comm, sys: &Solid, params: Params, total: usize, steps: usize, v: Variant) -> (Vec<f64>, f64) {
    let (first, n) = share(total, c.rank(), c.size());
    let params = Params { first, ..params };
    let p = if std::mem::size_of::<S>() == 8 { Precision::Double } else { Precision::Mixed };
    let fail = |e: &dyn std::fmt::Display| -> ! { c.abort(&format!("rank {}: {e}", c.rank())) };
    let mut mine = vec![0.0; SLOTS];
    let energy = match v {
        Variant::Gpu => {
            let gpu = Gpu::count().and_then(|count| Gpu::open(c.local_rank() % count.max(1))).unwrap_or_else(|e| fail(&e));
            let setup: Setup<S> = sys.setup.convert();
            let mut g = GpuEngine::<S, A>::new(&gpu, sys, &setup, n, params).unwrap_or_else(|e| fail(&e));
            let energy = drive(c, &mut g, sys, params, total, steps, &mut mine).unwrap_or_else(|e| fail(&e));
            let (pos, rot, parts, inv) = g.walker(0).unwrap_or_else(|e| fail(&e));
            validate(sys, &pos, &rot, parts, &inv, mine[11] as usize, &mut g, p, params.recompute, &mut mine).unwrap_or_else(|e| fail(&e));
            mine[10] = g.moves.acceptance();
            energy
        }
        _ => {
            let mut e = CpuEngine::<S, A>::new(sys, n, params).unwrap_or_else(|e| fail(&e));
            let energy = drive(c, &mut e, sys, params, total, steps, &mut mine).unwrap_or_else(|e| fail(&e));
            let (pos, rot, parts, inv) = (e.w.pos.clone(), e.w.rot.clone(), e.parts[0], e.w.inv.clone());
            validate(sys, &pos, &rot, parts, &inv, mine[11] as usize, &mut e, p, params.recompute, &mut mine).unwrap_or_else(|e| fail(&e));
            mine[10] = e.moves.acceptance();
            energy
        }
    };
    let mut all = vec![0.0; SLOTS * c.size()];
    all[SLOTS * c.rank()..SLOTS * (c.rank() + 1)].copy_from_slice(&mine);
    c.sum(&mut all);
    (all, energy)
}

/// Report block of a rank: [0..4] walker 0's energy and inverse errors over their tolerances, the arrived
/// walker's (or -1: none); [13], [14] their condition numbers;
/// [4] E_est; [5..8] compute, reduce, migrate seconds; [8..10] walkers and bytes migrated; [10] acceptance; [11]
/// the slot of the last arrival plus one (0: none); [12] the wall time of the timed generations.
fn drive(c: &dyn Comm, e: &mut dyn Engine, sys: &Solid, p: Params, total: usize, steps: usize, mine: &mut [f64]) -> Result<f64> {
    let mut d = Dmc::start(c, e, total, p.tau, sys.electrons(), p.seed);
    // one untimed generation: first-use costs (allocations, the first transfers) stay out of the timing
    generation(c, e, &mut d)?;
    d.timing = Default::default();
    c.barrier();
    let t = Instant::now();
    for _ in 0..steps {
        generation(c, e, &mut d)?;
    }
    c.barrier();
    let secs = t.elapsed().as_secs_f64();
    let t = d.timing;
    mine[4..10].copy_from_slice(&[d.e_est, t.compute_s, t.reduce_s, t.migrate_s, t.migrated as f64, t.migrated_bytes as f64]);
    mine[11] = d.arrived.map_or(0.0, |k| k as f64 + 1.0);
    mine[12] = secs;
    Ok(d.energies[1..].iter().sum::<f64>() / steps as f64)
}

/// Walker 0 and the last arrival against the reference into the report block.
#[allow(clippy::too_many_arguments)]
fn validate<S: Real>(sys: &Solid, pos: &[f64], rot: &[f64], parts: kernels::solid::Parts, inv: &[S], arrived: usize, e: &mut dyn Engine, p: Precision, recompute: usize, mine: &mut [f64]) -> Result<()> {
    let scaled = |v: &crate::solid::Validated| [v.checks[0].error / v.checks[0].tolerance, v.checks[1].error / v.checks[1].tolerance, v.cond];
    let w0 = scaled(&reference_checks(sys, pos, rot, parts, inv, p, recompute)?);
    let arr = match arrived.checked_sub(1) {
        Some(k) => {
            let w = e.take(k)?;
            scaled(&reference_checks(sys, &w.pos, &w.rot, w.parts, &w.inv, p, recompute)?)
        }
        None => [-1.0, -1.0, -1.0],
    };
    mine[..4].copy_from_slice(&[w0[0], w0[1], arr[0], arr[1]]);
    mine[13..15].copy_from_slice(&[w0[2], arr[2]]);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn record(r: &mut Runner, a: &Args, sys: &Solid, p: Precision, v: Variant, total: usize, ranks: &Ranks, all: &[f64], energy: f64) -> Result<()> {
    let (ne, size) = (sys.electrons(), ranks.size());
    let blocks: Vec<&[f64]> = all.chunks_exact(SLOTS).collect();
    let worst = |i: usize| blocks.iter().map(|b| b[i]).fold(f64::NEG_INFINITY, f64::max);
    let mean = |i: usize| blocks.iter().map(|b| b[i]).sum::<f64>() / size as f64;
    let mut checks = vec![
        Check { quantity: "walker 0 local energy vs reference (error / cond tolerance, worst rank)".into(), error: worst(0), tolerance: 1.0 },
        Check { quantity: "walker 0 inverse vs reference (error / cond tolerance, worst rank)".into(), error: worst(1), tolerance: 1.0 },
    ];
    if worst(2) >= 0.0 {
        checks.push(Check { quantity: "migrated walker local energy vs reference (error / cond tolerance, worst rank)".into(), error: worst(2), tolerance: 1.0 });
        checks.push(Check { quantity: "migrated walker inverse vs reference (error / cond tolerance, worst rank)".into(), error: worst(3), tolerance: 1.0 });
    }
    let e_est: Vec<f64> = blocks.iter().map(|b| b[4]).collect();
    let spread = e_est.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x)) - e_est.iter().fold(f64::INFINITY, |m, &x| m.min(x));
    checks.push(Check { quantity: "E_est spread over ranks (Ha)".into(), error: spread, tolerance: 0.0 });
    let secs = blocks[0][12];
    let case = Case::new("solid", "dmc", p)
        .size("electrons", ne)
        .size("walkers", total)
        .size("ranks", size)
        .param("system", format!("C{}", ne / 4))
        .param("tau", a.tau)
        .param("steps", a.steps)
        .param("delay", crate::solid::delay(a, ne))
        .param("transport", ranks.transport());
    let acc = mean(10);
    let params = Params { tau: a.tau, dmc: true, recompute: a.recompute, seed: 0, first: 0, delay: crate::solid::delay(a, ne) };
    r.record(&case, v, Stats::from_samples(&[secs]), work_of(sys, &params, p, total, a.steps, acc), &checks)?;
    if let Some(rec) = r.records.last_mut() {
        rec.reps = 1; // one run of --steps generations, timed whole
    }
    let g = a.steps as f64;
    for (k, x) in [
        ("compute_per_gen_s", mean(5) / g),
        ("reduce_per_gen_s", mean(6) / g),
        ("migrate_per_gen_s", mean(7) / g),
        ("migrated_per_gen", mean(8) / g),
        ("migrated_bytes_per_gen", mean(9) / g),
        ("generations_run", g),
        ("energy", energy),
        ("e_est", e_est[0]),
        ("acceptance", acc),
        ("cond", worst(13).max(worst(14))),
    ] {
        r.extra(k, x);
    }
    Ok(())
}

fn work_of(sys: &Solid, params: &Params, p: Precision, walkers: usize, steps: usize, acc: f64) -> harness::Work {
    match p {
        Precision::Double => work::<f64>(sys, params, walkers, steps, acc),
        _ => work::<f32>(sys, params, walkers, steps, acc),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn more_ranks_than_gpus_is_refused_in_a_sentence() {
        assert!(super::gpus_for_ranks(2, 2).is_ok());
        let e = super::gpus_for_ranks(2, 1).unwrap_err().to_string();
        assert_eq!(e, "--ranks 2 with the gpu variant needs one GPU per rank, but 1 GPU(s) are visible");
    }
}
