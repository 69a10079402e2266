//! Tests of DMC across ranks and of checkpoint/restart: a two-rank run agrees with a one-rank run within error
//! bars; a run stopped at a checkpoint and restarted ends bit-identical to one never stopped (one rank and two);
//! checkpoints of another run are refused; a population that dies out leaves its last good generation on disk; a
//! rank made slower holds fewer walkers when shares follow speed, and the others wait less for it.

use crate::ensemble::balance::Balance;
use crate::ensemble::comm::{Comm, Solo, Threads};
use super::dmc::{self, Checkpointing, DmcError, DmcParams, Report};
use super::systems::{System, HE_EXACT};
use super::engine::Population;
use crate::ensemble::population::Traffic;
use super::vmc::{self, Estimate, VmcParams};
use super::walker::Walker;
use crate::ensemble::moves::MoveStats;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qmc-scale-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const DMC: DmcParams = DmcParams { walkers: 96, steps: 300, equil: 0, tau: 0.04, seed: 11, feedback: 10.0, balance: Balance::Equal };

/// VMC then DMC of He on this rank, optionally stopping at `stop` or restarting from `restart`.
fn he_dmc(comm: &dyn Comm, p: &DmcParams, ckpt: Option<&Checkpointing>, restart: Option<&Path>) -> Result<Report, DmcError> {
    let sys = System::by_name("he", 0, 0.0).unwrap();
    let (acc, walkers) = match restart {
        Some(path) => {
            let (a, w) = dmc::restart(&sys, p, comm, "he", path)?;
            (Some(a), w)
        }
        None => (None, vmc::run_on(&sys, &VmcParams { walkers: p.walkers, steps: 2, equil: 50, tau: 0.3, seed: p.seed }, comm).1),
    };
    dmc::run_on(&sys, p, comm, walkers, acc, ckpt, "he")
}

fn bits(e: &Estimate) -> [u64; 5] {
    [e.energy, e.error, e.variance, e.tau_eff, e.population].map(f64::to_bits)
}

#[test]
fn two_ranks_agree_with_one_within_error_bars() {
    let one = he_dmc(&Solo, &DMC, None, None).unwrap().estimate.unwrap();
    let two = Threads::run(2, |c| he_dmc(c, &DMC, None, None).unwrap());
    let e2 = two[0].estimate.unwrap();
    // every rank ends with the same estimate, and the ranks exchanged walkers
    assert_eq!(bits(&e2), bits(&two[1].estimate.unwrap()));
    assert!(two[0].timing.migrated > 0, "{:?}", two[0].timing);
    let sigma = one.error.hypot(e2.error);
    assert!((one.energy - e2.energy).abs() < 4.0 * sigma, "one rank {one:?}, two ranks {e2:?}");
    for e in [one, e2] {
        assert!((e.energy - HE_EXACT).abs() < 4.0 * e.error + 0.005, "{e:?}");
        assert!((e.population - DMC.walkers as f64).abs() < 0.2 * DMC.walkers as f64, "{e:?}");
    }
}

#[test]
fn a_stopped_and_restarted_run_is_bit_identical_to_an_unstopped_one() {
    let dir = scratch("restart");
    for ranks in [1usize, 2] {
        let path = dir.join(format!("he-{ranks}.ckpt"));
        let ck = |stop| Checkpointing { path: path.clone(), every: 40, stop_after: stop };
        let whole = Threads::run(ranks, |c| he_dmc(c, &DMC, None, None).unwrap().estimate.unwrap());
        // stopped after generation 130 (a checkpoint written every 40 and at the stop), then restarted
        let stopped = Threads::run(ranks, |c| he_dmc(c, &DMC, Some(&ck(Some(130))), None).unwrap());
        assert!(stopped[0].estimate.is_none() && stopped[0].generations == 130);
        let resumed = Threads::run(ranks, |c| he_dmc(c, &DMC, Some(&ck(None)), Some(&path)).unwrap());
        assert_eq!(resumed[0].generations, dmc::equilibration(&DMC) + DMC.steps);
        for r in 0..ranks {
            assert_eq!(bits(&resumed[r].estimate.unwrap()), bits(&whole[0]), "{ranks} ranks: {:?} vs {:?}", resumed[r].estimate, whole[0]);
        }
        // the run's end is checkpointed too: restarting from it asks for more steps
        let e = Threads::run(ranks, |c| he_dmc(c, &DMC, None, Some(&path)).unwrap_err().to_string());
        assert!(e[0].contains("the end of a run") && e[0].contains("--steps"), "{}", e[0]);
    }
    // a restart with more steps continues the same chains
    let longer = DmcParams { steps: DMC.steps + 40, ..DMC };
    let extended = he_dmc(&Solo, &longer, None, Some(&dir.join("he-1.ckpt"))).unwrap().estimate.unwrap();
    assert_eq!(bits(&extended), bits(&he_dmc(&Solo, &longer, None, None).unwrap().estimate.unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_checkpoint_of_another_run_is_refused_and_left_intact() {
    let dir = scratch("foreign");
    let path = dir.join("he.ckpt");
    let ck = Checkpointing { path: path.clone(), every: 1000, stop_after: Some(30) };
    he_dmc(&Solo, &DMC, Some(&ck), None).unwrap();
    let before = std::fs::read(&path).unwrap();
    let other = DmcParams { tau: 0.02, ..DMC };
    let e = he_dmc(&Solo, &other, None, Some(&path)).unwrap_err().to_string();
    assert!(e.contains("belongs to another run: it was written with tau 0.04, this run has 0.02"), "{e}");
    let sys = System::by_name("h2", 0, 0.0).unwrap();
    let e = dmc::restart(&sys, &DMC, &Solo, "h2", &path).err().unwrap().to_string();
    assert!(e.contains("system he, this run has h2"), "{e}");
    std::fs::write(dir.join("cut.ckpt"), &before[..before.len() / 2]).unwrap();
    let e = he_dmc(&Solo, &DMC, None, Some(&dir.join("cut.ckpt"))).unwrap_err().to_string();
    assert!(e.contains("truncated or damaged"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_population_that_dies_out_saves_the_last_good_generation() {
    // one walker and no feedback: the population dies out after a few generations
    let dir = scratch("death");
    let path = dir.join("dying.ckpt");
    let p = DmcParams { walkers: 1, steps: 100_000, equil: 0, tau: 0.05, seed: 3, feedback: 1e12, balance: Balance::Equal };
    let ck = Checkpointing { path: path.clone(), every: 1_000_000, stop_after: None };
    let e = he_dmc(&Solo, &p, Some(&ck), None).unwrap_err();
    let DmcError::Saved(cause, gen, saved) = &e else { panic!("{e}") };
    assert!(matches!(**cause, DmcError::DiedOut(..)), "{e}");
    assert_eq!(saved, &path.display().to_string());
    assert!(e.to_string().contains("died out") && e.to_string().contains("is saved in"), "{e}");
    // the saved state is that before the fatal generation: restarting from it dies in that same generation
    let sys = System::by_name("he", 0, 0.0).unwrap();
    let (acc, walkers) = dmc::restart(&sys, &p, &Solo, "he", &path).unwrap();
    assert_eq!((acc.gen, walkers.len()), (*gen, 1));
    let again = dmc::run_on(&sys, &p, &Solo, walkers, Some(acc), None, "he").unwrap_err();
    assert!(matches!(again, DmcError::DiedOut(g, 1) if g == *gen), "{again}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// CPU walkers on a slower core: each generation takes `delay` longer per walker (a sleep, so the test's ranks do
/// not fight for the cores). The hook lives here, in the population a test hands to the driver: production code
/// has none.
struct Slowed {
    walkers: Vec<Walker>,
    delay: Duration,
}

impl Population for Slowed {
    type Error = std::convert::Infallible;
    fn len(&self) -> usize {
        self.walkers.len()
    }
    fn measure(&mut self, sys: &System) -> Result<(), Self::Error> {
        self.walkers.measure(sys)
    }
    fn energies(&self) -> Result<Vec<f64>, Self::Error> {
        self.walkers.energies()
    }
    fn advance(&mut self, sys: &System, tau: f64, fixed_node: bool, seed: u64, tag: u64, step: usize, first: usize) -> Result<Vec<(MoveStats, f64)>, Self::Error> {
        std::thread::sleep(self.delay * self.walkers.len() as u32);
        self.walkers.advance(sys, tau, fixed_node, seed, tag, step, first)
    }
    fn branch(&mut self, n: &[usize]) -> Result<(), Self::Error> {
        self.walkers.branch(n)
    }
    fn migrate(&mut self, comm: &dyn Comm, counts: &[usize], goals: &[usize], sys: &System) -> Result<Traffic, Self::Error> {
        self.walkers.migrate(comm, counts, goals, sys)
    }
    fn packed(&self) -> Result<Vec<u8>, Self::Error> {
        self.walkers.packed()
    }
}

/// He DMC over two thread ranks, rank 1 fifteen times as slow per walker as rank 0 (150 against 10 us): per rank,
/// its report (own and mean timings). The contrast is wide so that the wait it causes (about 48 x 140 us = 6.7 ms a
/// generation with equal shares) stands far above the scheduling noise of a loaded 2-core CI machine, where the
/// test runs beside others: with 30 against 10 us (1 ms of wait) CI once measured 1.27 ms by speed against 2.0 ms
/// with equal shares, and the test failed though the balance worked.
fn uneven(balance: Balance) -> Vec<Report> {
    let sys = System::by_name("he", 0, 0.0).unwrap();
    let p = DmcParams { balance, ..DMC };
    Threads::run(2, |c| {
        let walkers = vmc::run_on(&sys, &VmcParams { walkers: p.walkers, steps: 2, equil: 50, tau: 0.3, seed: p.seed }, c).1;
        let mut pop = Slowed { walkers, delay: Duration::from_micros(if c.rank() == 1 { 150 } else { 10 }) };
        dmc::run_with(&sys, &p, c, &mut pop, None, None, "he").unwrap()
    })
}

#[test]
fn a_slow_rank_gets_fewer_walkers_by_speed_and_the_wait_falls() {
    let (equal, speed) = (uneven(Balance::Equal), uneven(Balance::Speed));
    let held = |r: &Report| r.own.walkers as f64 / r.own.generations as f64;
    let wait = |r: &Report| r.own.reduce_s / r.own.generations as f64;
    // equal shares: half each, and rank 0 waits for rank 1 every generation (about 48 x 140 us = 6.7 ms). The
    // timings' order is exact: the sum of each generation's largest compute is at least the slowest rank's total,
    // which is at least the mean over ranks; and the slow rank stands well above the mean (1.9x with sleeps alone;
    // the walkers' own work and the sleeps' overshoot narrow it: 1.30x measured with another test run loading the
    // 2-core machine). Until 2026-11-29 this also held the slowest rank's total above 0.9 of the per-generation
    // maxima, which that load broke (0.88: the fast rank descheduled in some generations), a bound on the
    // scheduler, not on the code.
    assert!((held(&equal[1]) - 48.0).abs() < 5.0, "{:?}", equal[1].own);
    assert!(wait(&equal[0]) > 0.6e-3, "{:?}", equal[0].own);
    let t = equal[0].timing;
    assert!(t.compute_max_s >= t.compute_slowest_s && t.compute_slowest_s > 1.2 * t.compute_s && t.compute_max_s > 1.25 * t.compute_s, "{t:?}");
    assert!(t.reduce_max_s >= wait(&equal[0]) * t.generations as f64 * 0.99, "{t:?}");
    // by speed: rank 1 converges on about a tenth of the walkers (speeds 1 : 1/15 with the walkers' own work), and
    // rank 0's wait falls
    assert!(held(&speed[1]) < 0.35 * DMC.walkers as f64, "rank 1 held {} walkers a generation", held(&speed[1]));
    assert!(held(&speed[0]) > 0.6 * DMC.walkers as f64, "rank 0 held {} walkers a generation", held(&speed[0]));
    assert!(wait(&speed[0]) < 0.5 * wait(&equal[0]), "rank 0 waited {} s a generation by speed, {} s with equal shares", wait(&speed[0]), wait(&equal[0]));
    // and the physics holds: both ranks hold the same estimate, near the exact energy. Not within its error bar:
    // with shares by speed the walkers' paths depend on the measured timings, so the energy is a fresh sample on
    // every machine, and this short run's error bar does not converge (300 generations; 1200 did not either, the
    // inefficiency still rising past 15), so a 4-sigma test of it could fail by accident: it did once on a 32-core
    // host, 23 mHa above the exact energy against an unconverged 4.5 mHa. The bound below only catches broken
    // population control (lost or doubled walkers, wrong weights: gross errors); the energy
    // against its error bar is the equal-shares test's, whose paths are reproducible.
    let (e, e1) = (speed[0].estimate.unwrap(), speed[1].estimate.unwrap());
    assert_eq!(bits(&e), bits(&e1));
    assert!((e.energy - HE_EXACT).abs() < 0.05, "{e:?}");
    assert!((e.population - DMC.walkers as f64).abs() < 0.2 * DMC.walkers as f64, "{e:?}");
}

#[test]
fn a_run_balanced_by_speed_stops_and_restarts() {
    let dir = scratch("restart-speed");
    let path = dir.join("he.ckpt");
    // 6000 generations: long enough for an honest error bar (below)
    let p = DmcParams { balance: Balance::Speed, steps: 6000, ..DMC };
    let ck = |stop| Checkpointing { path: path.clone(), every: 40, stop_after: stop };
    let stopped = Threads::run(2, |c| he_dmc(c, &p, Some(&ck(Some(130))), None).unwrap());
    assert!(stopped[0].estimate.is_none() && stopped[0].generations == 130);
    // the restart re-spreads the walkers in equal shares (the file does not keep who held which), then balances
    let resumed = Threads::run(2, |c| he_dmc(c, &p, None, Some(&path)).unwrap());
    assert_eq!(resumed[0].generations, dmc::equilibration(&p) + p.steps);
    assert_eq!(resumed[0].own.generations + 130, resumed[0].generations as u64);
    let e = resumed[0].estimate.unwrap();
    assert_eq!(bits(&e), bits(&resumed[1].estimate.unwrap()));
    // Its paths depend on the measured timings, as in the test above, so the energy is a fresh sample on every
    // machine, and a 4-sigma test is only as good as the error bar. At 300 generations (12/Ha, about 60
    // inefficiencies) blocking never converged: the reported 5.2 mHa against a spread of 8.6-9.3 mHa over 1000 runs
    // (Equal and Speed alike; mean z^2 3.25), so about 1% of runs failed 4 sigma + 5 mHa, on the high side where the
    // distribution leans: the 23 and 28 mHa of two GPU hosts. Speed minus Equal on the same seeds: -0.04 +- 0.28 mHa,
    // no bias. At 6000 generations the error bars are honest (spread 1.9-2.1 against 2.0 mHa reported, 260 runs),
    // and the bound, about 13 mHa, catches a run that does not project (the VMC energy lies 32 mHa above exact).
    let bound = 4.0 * e.error + 0.005;
    assert!(bound < 0.02, "error bar {:.1e} too wide to tell a projected energy from the VMC one: {e:?}", e.error);
    assert!((e.energy - HE_EXACT).abs() < bound, "{e:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
