//! `solid --ranks N` (or under mpirun with the `mpi` feature): the synthetic solid's (or with `--system gas` the
//! electron gas's) DMC over ranks, one per GPU
//! (threads: one thread per GPU of this process, device = local rank modulo the visible devices) or per CPU core
//! group (the cpu variant: thread ranks share the process's rayon pool, so the cores go to whichever rank has
//! work; under mpirun each process has its own pool, sized with --threads). `--walkers` is the population over all
//! ranks; each rank's engine holds its share. Population control is one comb over all ranks plus walker migration
//! (`kernels::solid::ranks`); the trial energy is global. With `--sync lagged` each rank combs its own walkers and
//! the generation's sum is finished a generation later (`kernels::ensemble::dmc::Control::Lagged`: ranks that do not
//! wait), the comb over all ranks coming only when the ranks' weights spread (the extra `rebalances_per_gen`);
//! `--lag` keeps the sums in flight more generations, `--spread` sets how far the weights may spread (`params.lag`,
//! `params.spread` where not the defaults).
//!
//! Records (rank 0 writes them): one per (electrons, walkers, precision, variant), the single-rank case's keys (the
//! gas's `params.system`, `rs` and `jastrow`; carbon's `params.system` names its cell), `sizes.ranks`,
//! `params.transport` (and `params.balance` = speed with `--balance speed`); the time of `--steps` generations after one untimed generation, with the
//! per-generation means over ranks of the time in walker moves (`compute_per_gen_s`), in the sum over ranks
//! (`reduce_per_gen_s`, including the wait for the slowest rank; `reduce_max_per_gen_s` that of the rank that waits
//! most; who is waited for: `compute_max_per_gen_s`, each generation's largest compute over ranks, and
//! `compute_slowest_rank_per_gen_s`, the slowest rank's own, as the qmc driver records them) and in branching and migration (`migrate_per_gen_s`, of which `take_per_gen_s` taking the leaving walkers
//! out of the engine, `exchange_per_gen_s` sending and receiving them, `put_per_gen_s` putting the arrivals in, and
//! `rebuild_per_gen_s` rebuilding what they did not carry), `params.migrate` (what a
//! migrating walker carries, `--migrate`), and `generations_run`: what the `solid-scaling` figure turns into
//! efficiencies.
//!
//! Validation, on every rank: every walker's local energy and weight finite at every generation
//! (`kernels::solid::finite::Finite`), a sample of its walkers (the first, the last and two seeded others) and
//! the last walker that arrived from another rank against the f64 reference, each within the tolerances of its
//! condition number (`kernels::solid::conditioning`; the record keeps the worst rank's error over its tolerance,
//! the walkers compared over all ranks, and the largest condition number as the extra `cond`); and every rank
//! holds the same trial energy (`E_est spread`).

use super::{work, Args};
use anyhow::{bail, Result};
use harness::timing::Stats;
use harness::{Runner, Variant};
use kernels::Scalar;
use kernels::gpu::Gpu;
use kernels::pseudopotential::Setup;
use kernels::ensemble::comm::{share, Comm, Ranks};
use kernels::solid::cpu::CpuEngine;
use kernels::solid::gpu::GpuEngine;
use kernels::check::{sample, worse};
use kernels::solid::ranks::{self as solid_ranks, generation, Cargo, Engine, Migration, Via};
use kernels::solid::finite::Finite;
use kernels::solid::validate::{sampled, RANDOM_WALKERS};
use kernels::solid::{Params, Solid};
use kernels::{Check, Precision, Real};
use crate::common::{Shares, Sync};
use kernels::ensemble::dmc::{Control, LAGGED_LAG, LAGGED_SPREAD};
use std::time::Instant;

/// What each rank reports, in one vector summed over ranks (each rank fills its own block).
const SLOTS: usize = 25;

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
    if a.balance == Shares::Speed && r.runs(Variant::Gpu) {
        bail!("--balance speed needs the cpu variant (--variants cpu): the GPU engine holds a fixed number of walkers");
    }
    if r.runs(Variant::Gpu) && ranks.transport() == "threads" {
        gpus_for_ranks(size, Gpu::count().unwrap_or(0))?;
    }
    let variants: Vec<Variant> = [Variant::Cpu, Variant::Gpu].into_iter().filter(|v| r.runs(*v)).collect();
    let electrons = a.electrons();
    r.plan(electrons.len() * a.walkers.len() * precisions.len() * variants.len());
    for (i, &ne) in electrons.iter().enumerate() {
        let sys = a.system(r, ne, i)?;
        for &p in precisions {
            let params = Params { tau: a.tau, dmc: true, recompute: a.recompute, seed: r.seed(100 + i as u64), first: 0, delay: crate::solid::delay(a, ne, p) };
            for &v in &variants {
                for &w in &a.walkers {
                    r.step(format!("solid {v} {p} electrons={ne} walkers={w} ranks={size}"));
                    let out = ranks.each(|c, _| kernels::by_precision!(p => on_rank(c, &sys, params, w, a, v)));
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
fn on_rank<S: Scalar, A: Scalar>(c: &dyn Comm, sys: &Solid, params: Params, total: usize, a: &Args, v: Variant) -> (Vec<f64>, f64) {
    let control = match a.sync {
        Sync::Each => Control::Comb { balance: a.balance.into() },
        Sync::Lagged => Control::Lagged { spread: a.spread.unwrap_or(LAGGED_SPREAD), lag: a.lag.unwrap_or(LAGGED_LAG), balance: a.balance.into() },
    };
    let (steps, cargo) = (a.timed_steps(), (a.migrate, a.migrate_via, control));
    let (first, n) = share(total, c.rank(), c.size());
    let params = Params { first, ..params };
    let p = Precision::of::<S, A>();
    let fail = |e: &dyn std::fmt::Display| -> ! { c.abort(&format!("rank {}: {e}", c.rank())) };
    let mut mine = vec![0.0; SLOTS];
    mine[22] = -1.0;
    let energy = match v {
        Variant::Gpu => {
            let count = Gpu::count().unwrap_or_else(|e| fail(&e)).max(1);
            let gpu = Gpu::open(c.local_rank() % count).unwrap_or_else(|e| fail(&e));
            // whether a copy to the next GPU could go direct (the device path's premise)
            mine[22] = if count > 1 { f64::from(u8::from(gpu.can_reach((c.local_rank() + 1) % count).unwrap_or_else(|e| fail(&e)))) } else { -1.0 };
            let setup: Setup<S> = sys.setup.convert();
            let mut g = GpuEngine::<S, A>::new(&gpu, sys, &setup, n, params).unwrap_or_else(|e| fail(&e));
            let energy = drive(c, &mut g, sys, params, total, steps, cargo, &mut mine).unwrap_or_else(|e| fail(&e));
            validate(sys, &mut g, p, params, c.rank(), &mut mine).unwrap_or_else(|e| fail(&e));
            mine[10] = g.moves.acceptance();
            energy
        }
        _ => {
            let mut e = CpuEngine::<S, A>::new(sys, n, params).unwrap_or_else(|e| fail(&e));
            let energy = drive(c, &mut e, sys, params, total, steps, cargo, &mut mine).unwrap_or_else(|e| fail(&e));
            validate(sys, &mut e, p, params, c.rank(), &mut mine).unwrap_or_else(|e| fail(&e));
            mine[10] = e.moves.acceptance();
            energy
        }
    };
    let mut all = vec![0.0; SLOTS * c.size()];
    all[SLOTS * c.rank()..SLOTS * (c.rank() + 1)].copy_from_slice(&mine);
    c.sum(&mut all);
    (all, energy)
}

/// Report block of a rank: [0..4] the sampled walkers' worst energy and inverse errors over their tolerances, the
/// arrived walker's (or -1: none); [13], [14] their largest condition numbers; [15] walkers sampled; [16], [17]
/// energies and weights checked finite, and those that were not;
/// [4] E_est; [5..8] compute, reduce, migrate seconds; [8..10] walkers and bytes migrated; [10] acceptance; [11]
/// the slot of the last arrival plus one (0: none); [12] the wall time of the timed generations; [18] seconds
/// rebuilding arrived configurations; [19..22] seconds taking the leaving walkers, exchanging them, putting the
/// arrivals; [22] whether this rank's GPU has peer access to the next one's (1, 0; -1: one GPU, or the cpu variant);
/// [23] each generation's largest compute over ranks, summed (the same on every rank); [24] generations of a lagged
/// run that combed over all ranks.
#[allow(clippy::too_many_arguments)]
fn drive<S: Real>(c: &dyn Comm, e: &mut dyn Engine<S>, sys: &Solid, p: Params, total: usize, steps: usize, (cargo, via, control): (Cargo, Via, Control), mine: &mut [f64]) -> Result<f64> {
    // one untimed generation, the estimator's equilibration: first-use costs (allocations, the first transfers) stay
    // out of the timing
    let mut d = solid_ranks::dmc(c, e, &p, total, sys.electrons(), 1, control)?;
    let mut m = Migration { cargo, via, ..Default::default() };
    generation(c, e, &mut d, &mut m)?;
    // a lagged run folds the untimed generation in during the first timed one
    (d.timing, m.timing) = Default::default();
    let rebalanced = d.rebalances();
    c.barrier();
    let t = Instant::now();
    for _ in 0..steps {
        generation(c, e, &mut d, &mut m)?;
    }
    d.finish(c)?;
    c.barrier();
    let secs = t.elapsed().as_secs_f64();
    let (t, mt) = (d.timing, m.timing);
    mine[4..10].copy_from_slice(&[d.acc.e_est, t.compute_s, t.reduce_s, t.migrate_s, t.migrated as f64, t.migrated_bytes as f64]);
    mine[11] = m.arrived.map_or(0.0, |k| k as f64 + 1.0);
    mine[12] = secs;
    mine[18] = mt.rebuild_s;
    mine[19..22].copy_from_slice(&[mt.take_s, mt.exchange_s, mt.put_s]);
    mine[23] = t.compute_max_s;
    mine[24] = (d.rebalances() - rebalanced) as f64;
    Ok(d.acc.series.iter().sum::<f64>() / steps as f64)
}

/// The sampled walkers, the last arrival and the finite tally into the report block.
fn validate<S: Real>(sys: &Solid, e: &mut dyn Engine<S>, p: Precision, params: Params, rank: usize, mine: &mut [f64]) -> Result<()> {
    let which = sample(e.count(), RANDOM_WALKERS, params.seed.wrapping_add(rank as u64));
    let s = sampled(sys, e, &which, p.eps(), params.recompute)?;
    let arr = match (mine[11] as usize).checked_sub(1) {
        Some(k) => {
            let a = sampled(sys, e, &[k], p.eps(), params.recompute)?;
            [a.energy, a.inverse, a.cond]
        }
        None => [-1.0, -1.0, -1.0],
    };
    mine[..4].copy_from_slice(&[s.energy, s.inverse, arr[0], arr[1]]);
    let f = *e.finite();
    mine[13..18].copy_from_slice(&[s.cond, arr[2], s.walkers as f64, f.checked as f64, f.bad as f64]);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn record(r: &mut Runner, a: &Args, sys: &Solid, p: Precision, v: Variant, total: usize, ranks: &Ranks, all: &[f64], energy: f64) -> Result<()> {
    let steps = a.timed_steps();
    let (ne, size) = (sys.electrons(), ranks.size());
    let blocks: Vec<&[f64]> = all.chunks_exact(SLOTS).collect();
    // NaN-safe: f64::max would drop a rank's NaN
    let worst = |i: usize| blocks.iter().map(|b| b[i]).fold(f64::NEG_INFINITY, worse);
    let mean = |i: usize| blocks.iter().map(|b| b[i]).sum::<f64>() / size as f64;
    let largest = |i: usize| blocks.iter().map(|b| b[i]).fold(0.0, f64::max);
    let count = |i: usize| blocks.iter().map(|b| b[i]).sum::<f64>() as usize;
    let sampled = count(15);
    let check = |quantity: &str, error: f64, compared: usize| Check { quantity: quantity.into(), error, tolerance: 1.0, compared };
    let mut checks = vec![
        check("sampled walkers' local energy vs reference, first, last and 2 random of each rank (error / cond tolerance, worst rank)", worst(0), sampled),
        check("sampled walkers' inverse vs reference, first, last and 2 random of each rank (error / cond tolerance, worst rank)", worst(1), sampled),
    ];
    let arrivals = blocks.iter().filter(|b| b[11] > 0.0).count();
    if arrivals > 0 {
        checks.push(check("migrated walker local energy vs reference (error / cond tolerance, worst rank)", worst(2), arrivals));
        checks.push(check("migrated walker inverse vs reference (error / cond tolerance, worst rank)", worst(3), arrivals));
    }
    checks.push(Finite { checked: count(16) as u64, bad: count(17) as u64, first: None }.check());
    let e_est: Vec<f64> = blocks.iter().map(|b| b[4]).collect();
    let spread = if e_est.iter().all(|x| x.is_finite()) {
        e_est.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x)) - e_est.iter().fold(f64::INFINITY, |m, &x| m.min(x))
    } else {
        f64::INFINITY
    };
    checks.push(Check { quantity: "E_est spread over ranks (Ha)".into(), error: spread, tolerance: 0.0, compared: size });
    let secs = blocks[0][12];
    // the single-rank case's keys (the gas's system, r_s and Jastrow among them) and the ranks'; carbon names its cell
    let case = a.case(p, ne, total, steps, crate::solid::delay(a, ne, p)).size("ranks", size);
    let case = if a.gas() { case } else { case.param("system", format!("C{}", ne / 4)) };
    let case = case
        .param("transport", ranks.transport())
        .param("migrate", a.migrate.name())
        .param("migrate_via", if ranks.transport() == "threads" && v == Variant::Gpu { a.migrate_via.name() } else { "host" });
    let case = if a.balance == Shares::Speed { case.param("balance", "speed") } else { case };
    let case = if a.sync == Sync::Lagged { case.param("sync", "lagged") } else { case };
    let case = if ranks.sleeps() { case.param("mpi_wait", "sleep") } else { case };
    let case = match a.lag.filter(|&l| l != LAGGED_LAG) {
        Some(l) => case.param("lag", l),
        None => case,
    };
    let case = match a.spread.filter(|&x| x != LAGGED_SPREAD) {
        Some(x) => case.param("spread", x),
        None => case,
    };
    let acc = mean(10);
    let params = Params { tau: a.tau, dmc: true, recompute: a.recompute, seed: 0, first: 0, delay: crate::solid::delay(a, ne, p) };
    r.record(&case, v, Stats::from_samples(&[secs]), work(sys, &params, p.bytes().0, total, steps, acc), &checks)?;
    if let Some(rec) = r.records.last_mut() {
        rec.reps = 1; // one run of --steps generations, timed whole
    }
    let g = steps as f64;
    for (k, x) in [
        ("compute_per_gen_s", mean(5) / g),
        ("reduce_per_gen_s", mean(6) / g),
        ("migrate_per_gen_s", mean(7) / g),
        ("rebuild_per_gen_s", mean(18) / g),
        ("take_per_gen_s", mean(19) / g),
        ("exchange_per_gen_s", mean(20) / g),
        ("put_per_gen_s", mean(21) / g),
        ("reduce_max_per_gen_s", largest(6) / g),
        ("compute_max_per_gen_s", largest(23) / g),
        ("compute_slowest_rank_per_gen_s", largest(5) / g),
        // which rank that was: the same one run after run points at its core (mpirun's own process, a daemon)
        ("slowest_rank", (0..size).fold(0, |s, r| if blocks[r][5] > blocks[s][5] { r } else { s }) as f64),
        ("migrated_per_gen", mean(8) / g),
        ("migrated_bytes_per_gen", mean(9) / g),
        ("generations_run", g),
        ("energy", energy),
        ("e_est", e_est[0]),
        ("acceptance", acc),
        ("cond", worse(worst(13), worst(14))),
    ] {
        r.extra(k, x);
    }
    if a.sync == Sync::Lagged {
        r.extra("rebalances_per_gen", blocks[0][24] / g);
    }
    let peer = blocks.iter().map(|b| b[22]).fold(f64::INFINITY, f64::min);
    if peer >= 0.0 {
        r.extra("peer_access", peer);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use harness::cli::CommonArgs;

    /// One rank's report block: sampled walkers within tolerance, no arrival, E_est -5, 4 walkers sampled, 8
    /// energies and weights checked finite.
    fn block() -> Vec<f64> {
        let mut b = vec![0.0; SLOTS];
        b[..5].copy_from_slice(&[0.1, 0.1, -1.0, -1.0, -5.0]);
        (b[12], b[13], b[14], b[15], b[16]) = (1.0, 100.0, -1.0, 4.0, 8.0);
        b
    }

    fn verdict(blocks: [Vec<f64>; 2]) -> harness::record::Validation {
        let a = Args::parse_from(["solid", "--ranks", "2", "--quiet"]);
        let mut r = Runner::new(&CommonArgs { variants: Some(vec![Variant::Cpu]), quiet: true, ..Default::default() }).unwrap();
        let sys = Solid::carbon(8, 1).unwrap();
        record(&mut r, &a, &sys, Precision::Double, Variant::Cpu, 8, &Ranks::Threads(2), &blocks.concat(), -5.0).unwrap();
        r.records.pop().unwrap().validation
    }

    /// The old fold (f64::max) dropped a rank's NaN, and nothing counted non-finite weights: both passed.
    #[test]
    fn a_nan_on_any_rank_fails_the_record() {
        let v = verdict([block(), block()]);
        assert!(v.passed(), "{v:?}");
        assert_eq!(v.checks[0].compared, Some(8), "4 walkers sampled on each rank");
        let mut nan = block();
        nan[0] = f64::NAN;
        assert!(verdict([block(), nan]).failed());
        let mut weight = block();
        weight[17] = 1.0;
        let v = verdict([weight, block()]);
        assert!(v.failed() && v.checks.iter().any(|c| c.quantity.contains("finite") && !c.passed), "{v:?}");
        let mut e_est = block();
        e_est[4] = f64::NAN;
        assert!(verdict([block(), e_est]).failed(), "a NaN trial energy on one rank is no spread of 0");
    }

    #[test]
    fn more_ranks_than_gpus_is_refused_in_a_sentence() {
        assert!(gpus_for_ranks(2, 2).is_ok());
        let e = gpus_for_ranks(2, 1).unwrap_err().to_string();
        assert_eq!(e, "--ranks 2 with the gpu variant needs one GPU per rank, but 1 GPU(s) are visible");
    }
}
