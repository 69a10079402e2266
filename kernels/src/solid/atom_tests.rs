//! The qmc driver's atoms and molecule on the solid's engines (issue #20, item 3): open boundaries (no images), the
//! direct Coulomb sum, atomic orbitals, the Padé-shaped B-spline Jastrow. The engines agree with the f64 reference
//! after every step, see no periodic image however far an electron goes, start from a run's walkers
//! (`start_from`), give the bare Be determinant's VMC energy E_HF and He a variational VMC energy; the GPU engine
//! follows the CPU engine.

use super::cpu::CpuEngine;
use super::gas_tests::{cpu_matches_reference, params};
use super::ranks::{Cargo, Engine};
use super::tests::{gpu_follows_cpu, mixed_gpu_within_tolerance, single_gpu_follows_cpu};
use super::walker::Walker;
use super::*;
use crate::atomic::hf::{HfOrbitals, BE_HF};
use crate::ensemble::blocking::blocking;
use crate::ensemble::moves::MoveStats;
use crate::qmc::systems::HE_EXACT;

#[test]
fn atoms_are_described_in_open_boundaries() {
    for (name, electrons, orbitals) in [("he", 2, 1), ("h2", 2, 1), ("be", 4, 2), ("be-hf", 4, 2)] {
        let sys = Solid::atom(name).unwrap();
        assert_eq!((sys.electrons(), sys.setup.ion_count(), sys.name(), sys.is_open()), (electrons, 0, name, true));
        assert!(matches!(&sys.orbitals, Orbitals::Atomic(o) if o.len() == orbitals));
        let nuclear: f64 = sys.coulomb.nuclei().iter().map(|n| n.0).sum();
        assert_eq!(nuclear, electrons as f64, "{name}: neutral");
        // the floor's work is finite with no volume and no ions
        let w = floor::class_work(&sys, 8, 0.9, 1, 8);
        assert!(w.iter().all(|c| c.0.is_finite() && c.1.is_finite()) && w[Class::Coulomb as usize].1 > 0.0, "{name}: {w:?}");
        assert_eq!(w[Class::Pseudopotential as usize], (0.0, 0.0));
    }
    // be runs the orbitals of the qmc driver's be (the cusp restored), be-hf the bare ones
    let cusps = |name| match Solid::atom(name).unwrap().orbitals {
        Orbitals::Atomic(o) => o.cusps.len(),
        _ => unreachable!(),
    };
    assert_eq!((cusps("be"), cusps("be-hf")), (2, 0));
    let j = Solid::atom("be-hf").unwrap();
    assert!(j.jastrow().pair.iter().all(|f| f.coefs.iter().all(|&c| c == 0.0)), "be-hf has no Jastrow");
    let he = Solid::atom("he").unwrap();
    let u = &he.jastrow().pair[1];
    let (_, du, _) = crate::jastrow::reference::radial(u, 1e-9);
    assert!((du - 0.5).abs() < 1e-6, "opposite-spin cusp 1/2: slope {du}");
    assert!(Solid::atom("li").unwrap_err().contains("unknown atom 'li'"));
}

/// Every walker of He, H2 and Be against the f64 reference after every step: energies by part and inverse rows,
/// double, mixed and single, Sherman-Morrison and (Be, two electrons a spin) delayed.
#[test]
fn atoms_follow_the_reference() {
    for name in ["he", "h2", "be"] {
        let sys = Solid::atom(name).unwrap();
        for delay in if name == "be" { vec![1, 2] } else { vec![1] } {
            let e = cpu_matches_reference::<f64, f64>(&sys, delay, 1e-10, 1e-9);
            assert!(e.moves.acceptance() > 0.3, "{name} delay {delay}: acceptance {}", e.moves.acceptance());
            cpu_matches_reference::<f32, f64>(&sys, delay, MIXED_TOLERANCE, 1e-3);
            cpu_matches_reference::<f32, f32>(&sys, delay, MIXED_TOLERANCE, 1e-3);
        }
    }
}

/// An engine started from walkers (`start_from`, configurations) holds them and starts its DMC run from their
/// energies; then He's walker placed with one electron 40 bohr from the nucleus: its Coulomb energy is the open direct
/// sum (a periodic image would bring the electrons closer), its Jastrow the full distance's (zero past the cutoff),
/// and the engine's energy the reference's.
#[test]
fn an_electron_far_away_sees_no_image_and_runs_start_from_walkers() {
    let sys = Solid::atom("he").unwrap();
    let p = Params { dmc: true, ..params(1) };
    let mut donor = CpuEngine::<f64, f64>::new(&sys, 2, Params { seed: 77, ..p }).unwrap();
    donor.step().unwrap();
    let mut w: Vec<Walker<f64>> = (0..2).map(|k| donor.take(k, Cargo::Configuration).unwrap()).collect();
    let mut e = CpuEngine::<f64, f64>::new(&sys, 2, p).unwrap();
    e.start_from(&w).unwrap();
    for k in 0..2 {
        assert_eq!((&e.take(k, Cargo::Configuration).unwrap().pos, e.energies()[k]), (&w[k].pos, w[k].parts.local()), "slot {k}");
    }
    let mean = donor.energies().iter().sum::<f64>() / 2.0;
    assert!((e.dmc().unwrap().acc.e_est - mean).abs() < 1e-12, "DMC starts from the walkers' energies: {} vs {mean}", e.dmc().unwrap().acc.e_est);
    let far = vec![0.3, -0.2, 0.5, 0.0, 0.0, -40.0];
    w[1].pos = far.clone();
    e.start_from(&w).unwrap();
    e.remeasure(true).unwrap();
    let r1 = (0.09f64 + 0.04 + 0.25).sqrt();
    let want = -2.0 / r1 - 2.0 / 40.0 + 1.0 / (0.09f64 + 0.04 + 40.5f64 * 40.5).sqrt();
    assert!((e.parts[1].coulomb - want).abs() < 1e-13, "coulomb {} vs {want}", e.parts[1].coulomb);
    let c = compare(&sys, &far, &[], e.parts[1], &e.w.inv[e.w.inv.len() / 2..]).unwrap();
    assert!(c.energy < 1e-10, "far walker vs reference: {c:?}");
    e.step().unwrap();
    assert!(e.energies().iter().all(|x| x.is_finite()));
}

/// The bare Be determinant (`be-hf`): VMC on the CPU engine returns the Hartree-Fock energy of its orbitals (the
/// orbital file's E_HF) within 4 error bars of a converged blocking analysis.
#[test]
fn be_without_the_jastrow_vmc_returns_hartree_fock() {
    let sys = Solid::atom("be-hf").unwrap();
    let hf = HfOrbitals::parse(BE_HF).unwrap().energy;
    let means = vmc_means(&sys, 64, 100, 5000, 0.1);
    let b = blocking(&means);
    eprintln!("be-hf cpu: E_VMC {:.4}({:.0}) vs E_HF {hf:.4}, {:.1} steps a sample", b.mean, b.error * 1e4, b.inefficiency_32);
    assert!(b.converged, "{:?}", b.why_unconverged());
    assert!((b.mean - hf).abs() < 4.0 * b.error && b.error < 0.02, "E_VMC {} +- {} vs E_HF {hf}", b.mean, b.error);
}

/// He with its Jastrow: VMC lies above the exact energy (variational, by more than 4 error bars: the trial function
/// is not exact) and below -2.86 Ha, near the qmc driver's Padé (-2.871; the product of 1s orbitals alone gives
/// -2.75): -2.8673(12) on the build machine. The same functor with its coefficients sampled one knot off (as the
/// gas's were until 2026-11-29, `jastrow::Radial::pade_shaped`) gave -2.848(2), which this bound catches.
#[test]
fn helium_vmc_is_variational_and_correlated() {
    let sys = Solid::atom("he").unwrap();
    let b = blocking(&vmc_means(&sys, 64, 100, 5000, 0.2));
    eprintln!("he cpu: E_VMC {:.4}({:.0}), {:.1} steps a sample", b.mean, b.error * 1e4, b.inefficiency_32);
    assert!(b.converged, "{:?}", b.why_unconverged());
    assert!(b.mean > HE_EXACT + 4.0 * b.error && b.mean < -2.86, "E_VMC {} +- {}", b.mean, b.error);
}

/// Mean local energy of each of `steps` VMC steps of `walkers` walkers at time step `tau` after `equil`.
fn vmc_means(sys: &Solid, walkers: usize, equil: usize, steps: usize, tau: f64) -> Vec<f64> {
    let mut e = CpuEngine::<f64, f64>::new(sys, walkers, Params { tau, ..params(1) }).unwrap();
    let mut means = vec![];
    for step in 0..equil + steps {
        e.step().unwrap();
        if step >= equil {
            means.push(e.energies().iter().sum::<f64>() / walkers as f64);
        }
    }
    means
}

/// The GPU engine follows the CPU engine on He, H2 and Be (same acceptances, energies within 1e-9 in double; Be
/// delayed too), mixed within its tolerance of the reference, and a GPU engine started from the CPU engine's walkers
/// holds their energies.
#[test]
fn atoms_gpu_match_cpu_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    for name in ["he", "h2", "be"] {
        let sys = Solid::atom(name).unwrap();
        for delay in if name == "be" { vec![1, 2] } else { vec![1] } {
            let p = Params { recompute: 2, ..params(delay) };
            let mut cpu = CpuEngine::<f64, f64>::new(&sys, 3, p).unwrap();
            let mut g = gpu::GpuEngine::<f64, f64>::new(&gpu, &sys, &sys.setup, 3, p).unwrap();
            gpu_follows_cpu(&mut cpu, &mut g, 3, &format!("{name} delay {delay}"));
            let w: Vec<Walker<f64>> = (0..3).map(|k| cpu.take(k, Cargo::Configuration).unwrap()).collect();
            let mut h = gpu::GpuEngine::<f64, f64>::new(&gpu, &sys, &sys.setup, 3, Params { seed: 99, ..p }).unwrap();
            h.start_from(&w).unwrap();
            h.remeasure().unwrap();
            for (k, (a, b)) in h.energies().unwrap().iter().zip(cpu.energies()).enumerate() {
                assert!((a - b).abs() <= 1e-9 * cpu.parts[k].magnitude(), "{name}: gpu started from cpu walker {k}: {a} vs {b}");
            }
        }
        mixed_gpu_within_tolerance(&gpu, &sys, params(1), name);
        // single's default delay for the atoms is 1 (`default_delay`); DMC's fixed-node rule as in the runs
        single_gpu_follows_cpu(&gpu, &sys, Params { dmc: true, tau: 0.01, recompute: 2, ..params(1) }, name);
    }
}

/// Be's local energy in single and mixed precision at the configurations of a double VMC run, walker by walker (each
/// engine re-inverts in f64 from its own orbital rows, as a run's re-inversion does): the mean difference from double
/// lies below 1e-5 Ha and no walker's beyond 1e-3 Ha. The batched GPU engine's Be DMC in single lay 2-3 mHa above
/// double at time steps 0.005 and 0.0025 (H200, e4503fe and c9e3496): an f32 local energy biased by even a tenth of
/// that fails here. Measured on the build machine at this size (256 walkers, 40 samples each): single -2.9e-8, largest
/// 6.4e-5; mixed 7e-9, largest 1.5e-5 (with 512 walkers and 100 samples: single -7e-8, standard error 2e-8).
#[test]
fn be_local_energy_in_f32_is_unbiased() {
    let sys = Solid::atom("be").unwrap();
    let walkers = 256;
    let p = Params { tau: 0.02, ..params(1) };
    let mut d = CpuEngine::<f64, f64>::new(&sys, walkers, p).unwrap();
    let mut s = CpuEngine::<f32, f32>::new(&sys, walkers, p).unwrap();
    let mut m = CpuEngine::<f32, f64>::new(&sys, walkers, p).unwrap();
    let (mut ds, mut dm) = (vec![], vec![]);
    for step in 0..300 {
        d.step().unwrap();
        if step >= 100 && step % 5 == 0 {
            s.w.pos.copy_from_slice(&d.w.pos);
            m.w.pos.copy_from_slice(&d.w.pos);
            s.remeasure(true).unwrap();
            m.remeasure(true).unwrap();
            let (ed, es, em) = (d.energies(), s.energies(), m.energies());
            ds.extend((0..walkers).map(|k| es[k] - ed[k]));
            dm.extend((0..walkers).map(|k| em[k] - ed[k]));
        }
    }
    unbiased("be single", &ds);
    unbiased("be mixed", &dm);
}

/// The two f32 local-energy tests' bound on `diffs` (an f32 engine's energies minus double's, walker by walker): mean
/// below 1e-5 Ha and none beyond 1e-3 Ha.
fn unbiased(what: &str, diffs: &[f64]) {
    let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
    let max = diffs.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    eprintln!("{what} - double: mean {mean:.2e}, largest {max:.2e} over {} samples", diffs.len());
    assert!(mean.abs() < 1e-5 && max < 1e-3, "{what}: local energy minus double's: mean {mean:e}, largest {max:e}");
}

/// Be's local energy as single and mixed runs measure it, from the inverse their own Sherman-Morrison updates keep
/// between re-inversions, along their own DMC moves (no branching) at time steps 0.02 and 0.005, walker by walker
/// against double's re-inverted measurement at the same configurations: the mean difference below 1e-5 Ha and no
/// walker's beyond 1e-3 Ha. `be_local_energy_in_f32_is_unbiased` measures right after an f64 re-inversion; this is
/// the state a run's other steps measure in, and the time step at which the batched GPU engine's Be DMC in single
/// lay about 2 mHa above double (0.005). Measured on the build machine (256 walkers, 100 samples each): single
/// -8e-8 and -9e-8 Ha (standard error 2e-8), largest 5e-5 and 8e-5; mixed below 2e-8, largest 4e-5. Nor do rare
/// configurations carry a bias: single at 0.005 over 1024 walkers x 2900 steps (3.0M samples, a one-off run) gave a
/// mean of -7.9e-8 Ha, the largest difference 3.0e-4 and none beyond 1e-3.
#[test]
fn be_running_local_energy_in_f32_is_unbiased() {
    let sys = Solid::atom("be").unwrap();
    let walkers = 256;
    for tau in [0.02, 0.005] {
        let p = Params { tau, dmc: true, recompute: plan::RECOMPUTE, ..params(1) };
        let mut s = CpuEngine::<f32, f32>::new(&sys, walkers, p).unwrap();
        let mut m = CpuEngine::<f32, f64>::new(&sys, walkers, p).unwrap();
        running_energies_are_unbiased(&sys, &format!("be tau {tau}"), [&mut s, &mut m], walkers, p, 600, 5);
    }
}

/// `be_running_local_energy_in_f32_is_unbiased` on the batched GPU engine, whose Be DMC in single lay +1.6 +- 0.4
/// mHa above double at time step 0.005 over seven series (issue #20), where the CPU engine's f32 measurement was
/// shown unbiased: single's and mixed's running local energies, from the inverse their f32 Sherman-Morrison updates
/// keep on the device between re-inversions, along their own moves at tau = 0.005 (1024 walkers, 3000 steps, no
/// branching), walker by walker against double's measurement from scratch at the same configurations on the CPU
/// (145 samples of every walker): the mean difference below 1e-5 Ha and none beyond 1e-3 Ha. A bias of a tenth of
/// the seen offset fails it. Measured on an H200 (c270889): single -6.2e-8 Ha, largest 1.6e-4, over 148,480 samples;
/// mixed -5.9e-9, largest 4.4e-5. With `be_gpu_f32_decisions_are_doubles_when_present` (no decision of 8.19M
/// differed) the f32 path is double's, and five independent seeds (gpu-host.sh qmc-be-single, 31 to 35) put single
/// at -0.23 +- 0.34 mHa from double at 0.005: the seven series' offset did not repeat.
#[test]
fn be_gpu_running_local_energy_in_f32_is_unbiased_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let sys = Solid::atom("be").unwrap();
    let walkers = 1024;
    let p = at_tau_0005();
    let mut s = gpu::GpuEngine::<f32, f32>::new(&gpu, &sys, &sys.setup.convert(), walkers, p).unwrap();
    let mut m = gpu::GpuEngine::<f32, f64>::new(&gpu, &sys, &sys.setup.convert(), walkers, p).unwrap();
    running_energies_are_unbiased(&sys, "be gpu tau 0.005", [&mut s, &mut m], walkers, p, 3000, 20);
    assert!(s.moves.acceptance() > 0.98 && m.moves.acceptance() > 0.98, "{:?} {:?}", s.moves, m.moves);
}

/// The batched GPU engine's f32 decisions are double's: at every step of single's and mixed's own moves at tau =
/// 0.005 (Be, 1024 walkers, 2000 steps, no branching), a CPU double engine rebuilt from scratch at their
/// configurations takes the same step on the same draws, and the walkers' accepted-move counts agree but for rounding
/// (`decisions_are_doubles`). Measured on an H200 (c270889): none of 8.19M moves differed in either precision,
/// positions within 4.7e-7 bohr after the same step.
#[test]
fn be_gpu_f32_decisions_are_doubles_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let sys = Solid::atom("be").unwrap();
    let (walkers, p) = (1024, at_tau_0005());
    let mut s = gpu::GpuEngine::<f32, f32>::new(&gpu, &sys, &sys.setup.convert(), walkers, p).unwrap();
    let mut m = gpu::GpuEngine::<f32, f64>::new(&gpu, &sys, &sys.setup.convert(), walkers, p).unwrap();
    decisions_are_doubles(&sys, "gpu", [&mut s, &mut m], walkers, 2000);
}

/// The GPU test's lockstep on the CPU engine (256 walkers, 2000 steps). Measured on the build machine: no decision
/// of 2.05M differed in either precision, positions within 4.4e-7 bohr after the same step.
#[test]
fn be_f32_decisions_are_doubles() {
    let sys = Solid::atom("be").unwrap();
    let (walkers, p) = (256, at_tau_0005());
    let mut s = CpuEngine::<f32, f32>::new(&sys, walkers, p).unwrap();
    let mut m = CpuEngine::<f32, f64>::new(&sys, walkers, p).unwrap();
    decisions_are_doubles(&sys, "cpu", [&mut s, &mut m], walkers, 2000);
}

/// `steps` steps of the f32 engines [single, mixed] of `walkers` walkers at `p` (no branching); every `every` steps
/// past the first 100, each walker's running energy against double's measurement from scratch at its configuration,
/// held to `unbiased`.
fn running_energies_are_unbiased(sys: &Solid, what: &str, f32s: [&mut dyn Lockstep; 2], walkers: usize, p: Params, steps: usize, every: usize) {
    let mut d = CpuEngine::<f64, f64>::new(sys, walkers, p).unwrap();
    for (e, name) in f32s.into_iter().zip(["single", "mixed"]) {
        let mut diffs = vec![];
        for step in 0..steps {
            e.advance();
            if step >= 100 && step % every == 0 {
                d.w.pos.copy_from_slice(&e.positions());
                d.remeasure(true).unwrap();
                diffs.extend(e.energies().iter().zip(d.energies()).map(|(x, y)| x - y));
            }
        }
        unbiased(&format!("{what} {name} running"), &diffs);
    }
}

/// The f32 tests' runs at tau = 0.005: DMC moves, re-inverted as the runs do.
fn at_tau_0005() -> Params {
    Params { tau: 0.005, dmc: true, recompute: plan::RECOMPUTE, ..params(1) }
}

/// What the f32 path's tests drive on either engine.
trait Lockstep {
    fn positions(&self) -> Vec<f64>;
    fn energies(&self) -> Vec<f64>;
    fn advance(&mut self);
    fn accepted(&self) -> Vec<u32>;
    fn moves(&self) -> MoveStats;
}

impl<S: crate::scalar::Scalar, A: crate::scalar::Scalar> Lockstep for CpuEngine<'_, S, A> {
    fn positions(&self) -> Vec<f64> {
        self.w.pos.clone()
    }
    fn energies(&self) -> Vec<f64> {
        CpuEngine::energies(self)
    }
    fn advance(&mut self) {
        CpuEngine::advance(self).unwrap()
    }
    fn accepted(&self) -> Vec<u32> {
        self.accepted.clone()
    }
    fn moves(&self) -> MoveStats {
        self.moves
    }
}

impl<S: crate::scalar::Scalar, A: crate::scalar::Scalar> Lockstep for gpu::GpuEngine<'_, S, A> {
    fn positions(&self) -> Vec<f64> {
        gpu::GpuEngine::positions(self).unwrap()
    }
    fn energies(&self) -> Vec<f64> {
        gpu::GpuEngine::energies(self).unwrap()
    }
    fn advance(&mut self) {
        gpu::GpuEngine::advance(self).unwrap()
    }
    fn accepted(&self) -> Vec<u32> {
        gpu::GpuEngine::accepted(self).unwrap()
    }
    fn moves(&self) -> MoveStats {
        self.moves
    }
}

/// `steps` steps of the f32 engines [single, mixed] of `walkers` walkers (`engine` names their kind), each beside a CPU double engine
/// rebuilt from scratch at its configurations before every step, which takes the same step on the same draws: the
/// walkers' accepted-move counts agree but for 1e-6 a move, and where they agree the positions after the step agree
/// to 1e-4 bohr (other draws would move them by sqrt(tau) = 0.07). The metropolis decision's f32 error (ratio,
/// gradients at both ends) is a few 1e-6 in log A, so a decision differs in about 1e-8 of the moves; the bound is a
/// fifteenth of single's acceptance above double's in the GPU's Be DMC records at this time step (+1.5e-5, issue #20).
fn decisions_are_doubles(sys: &Solid, engine: &str, f32s: [&mut dyn Lockstep; 2], walkers: usize, steps: usize) {
    for (e, name) in f32s.into_iter().zip(["single", "mixed"]) {
        let mut d = CpuEngine::<f64, f64>::new(sys, walkers, at_tau_0005()).unwrap();
        let (mut differ, mut far) = (0usize, 0.0f64);
        for _ in 0..steps {
            d.w.pos.copy_from_slice(&e.positions());
            d.remeasure(true).unwrap();
            e.advance();
            d.advance().unwrap();
            let (a, pos) = (e.accepted(), e.positions());
            differ += a.iter().zip(&d.accepted).filter(|(x, y)| x != y).count();
            let per = pos.len() / walkers;
            let same = (0..walkers).filter(|&k| a[k] == d.accepted[k]).flat_map(|k| k * per..(k + 1) * per);
            far = same.map(|i| (pos[i] - d.w.pos[i]).abs()).fold(far, f64::max);
        }
        let (g, moves) = (e.moves(), (walkers * steps * sys.electrons()) as f64);
        eprintln!("be {engine} {name} decisions against double's at tau 0.005 over {moves} moves: {differ} walker steps differ; positions elsewhere within {far:.1e}");
        assert!(g.acceptance() > 0.98 && g.attempted as f64 == moves, "{engine} {name}: {g:?}");
        assert!(far < 1e-4, "{engine} {name}: positions {far:e} from double's after the same step");
        assert!((differ as f64) < 1e-6 * moves, "{engine} {name}: {differ} walker steps decided otherwise than double over {moves} moves");
    }
}
