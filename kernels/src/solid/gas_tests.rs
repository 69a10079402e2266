//! The electron gas on the solid's engines (issue #20, item 4): without the Jastrow the plane-wave determinant is an
//! eigenfunction of the kinetic energy, so every walker's kinetic energy is T_0 at every step and the VMC energy is
//! the Hartree-Fock energy; with it VMC lies below; the engines agree with the f64 reference; the GPU engine follows
//! the CPU engine.

use super::cpu::CpuEngine;
use super::tests::{gpu_follows_cpu, mixed_gpu_within_tolerance, single_gpu_follows_cpu};
use super::gpu::GpuEngine;
use crate::ensemble::dmc::Dmc;
use super::*;
use crate::ensemble::blocking::{blocking, Blocked};
use crate::Scalar;

pub(super) fn params(delay: usize) -> Params {
    Params { tau: 0.15, dmc: false, recompute: 8, seed: 21, first: 0, delay }
}

/// What the energy tests below drive, so that one body serves both engines: a step, the walkers' energies, the
/// acceptance so far and the DMC population control (`ranks::Engine` has no whole step).
trait Walk {
    fn step(&mut self) -> Result<(), SolidError>;
    fn parts(&self) -> &[Parts];
    fn acceptance(&self) -> f64;
    fn dmc(&self) -> Option<&Dmc>;
}

impl<S: Scalar, A: Scalar> Walk for CpuEngine<'_, S, A> {
    fn step(&mut self) -> Result<(), SolidError> {
        CpuEngine::step(self)
    }
    fn parts(&self) -> &[Parts] {
        &self.parts
    }
    fn acceptance(&self) -> f64 {
        self.moves.acceptance()
    }
    fn dmc(&self) -> Option<&Dmc> {
        CpuEngine::dmc(self)
    }
}

impl<S: Scalar, A: Scalar> Walk for GpuEngine<'_, S, A> {
    fn step(&mut self) -> Result<(), SolidError> {
        GpuEngine::step(self)
    }
    fn parts(&self) -> &[Parts] {
        &self.parts
    }
    fn acceptance(&self) -> f64 {
        self.moves.acceptance()
    }
    fn dmc(&self) -> Option<&Dmc> {
        GpuEngine::dmc(self)
    }
}

/// `steps` VMC steps of `walkers` walkers on the CPU engine after `equil` unrecorded ones (`vmc_on`).
fn vmc(sys: &Solid, walkers: usize, equil: usize, steps: usize, kinetic_t0: Option<f64>) -> Vec<f64> {
    vmc_on(&mut CpuEngine::<f64, f64>::new(sys, walkers, params(4)).unwrap(), equil, steps, kinetic_t0)
}

/// `steps` VMC steps of engine `e` after `equil` unrecorded ones: the mean local energy of each step, and (with
/// `kinetic_t0`) every walker's kinetic energy checked against T_0 at every step.
fn vmc_on(e: &mut impl Walk, equil: usize, steps: usize, kinetic_t0: Option<f64>) -> Vec<f64> {
    let mut means = vec![];
    for step in 0..equil + steps {
        e.step().unwrap();
        if let Some(t0) = kinetic_t0 {
            for (k, p) in e.parts().iter().enumerate() {
                assert!((p.kinetic - t0).abs() < 1e-10 * t0, "step {step} walker {k}: kinetic {} vs T_0 {t0}", p.kinetic);
            }
        }
        if step >= equil {
            means.push(e.parts().iter().map(Parts::local).sum::<f64>() / e.parts().len() as f64);
        }
    }
    assert!(e.acceptance() > 0.5 && e.acceptance() < 1.0, "acceptance {}", e.acceptance());
    means
}

/// The DMC time step of the order tests below.
const DMC_TAU: f64 = 0.05;
/// The DMC steps left out as equilibration: 10/Ha from the random start.
const DMC_EQUIL: usize = 200;

/// VMC (tau 0.15, 40 steps of equilibration, then `vmc_steps`) and fixed-node DMC (`DMC_TAU`, `DMC_EQUIL` steps of
/// equilibration, then `dmc_steps`) of the gas `sys` (Jastrow on) on the engines `make` builds from a run's
/// parameters (`what` names them): E_VMC from a blocking analysis of the per-step means, E_DMC the engine's estimate
/// (the generations after equilibration, weighted and blocked as the qmc driver's), both printed beside E_HF with
/// the steps a sample of each analysis. Both analyses must have converged, E_DMC lie below E_VMC by more than 4
/// combined error bars, and E_VMC below E_HF by more than 4.
fn dmc_below_vmc_below_hartree_fock<E: Walk>(what: &str, sys: &Solid, (vmc_steps, dmc_steps): (usize, usize), make: impl Fn(Params) -> E) {
    let gas = sys.gas.unwrap();
    let hf = gas.hf;
    let v = blocking(&vmc_on(&mut make(params(4)), 40, vmc_steps, None));
    let (equil, steps) = (DMC_EQUIL, dmc_steps);
    let mut e = make(Params { tau: DMC_TAU, dmc: true, ..params(4) });
    for _ in 0..equil + steps {
        e.step().unwrap();
    }
    let d = e.dmc().unwrap().estimate(equil);
    let show = |b: &Blocked| format!("{:.5}({:.0}), {:.1} steps a sample", b.mean, b.error * 1e5, b.inefficiency_32);
    eprintln!("{}-electron gas, r_s {}, {what}: E_HF {:.5}, E_VMC {}, E_DMC {} at tau {DMC_TAU}", sys.electrons(), gas.rs, hf.energy, show(&v), show(&d));
    assert!(v.converged && d.converged, "{what}: VMC {:?}, DMC {:?}", v.why_unconverged(), d.why_unconverged());
    assert!(d.mean < v.mean - 4.0 * d.error.hypot(v.error), "{what}: E_DMC {} +- {} vs E_VMC {} +- {}", d.mean, d.error, v.mean, v.error);
    assert!(v.mean < hf.energy - 4.0 * v.error, "{what}: E_VMC {} +- {} vs E_HF {}", v.mean, v.error, hf.energy);
}

#[test]
fn the_gas_is_described_by_its_closed_shells() {
    let sys = Solid::electron_gas(38, 2.0, true).unwrap();
    assert_eq!((sys.electrons(), sys.setup.ion_count(), sys.setup.table.stride, sys.name()), (38, 0, 64, "gas"));
    assert!(matches!(&sys.orbitals, Orbitals::PlaneWaves(w) if w.len() == 19));
    let side = (38.0 * 4.0 / 3.0 * std::f64::consts::PI * 8.0f64).cbrt();
    assert!((sys.setup.cell[0] - side).abs() < 1e-12 && matches!(&sys.coulomb, super::Coulomb::Ewald(e) if e.ions.is_empty()));
    // the Jastrow off: every functor zero
    let off = Solid::electron_gas(38, 2.0, false).unwrap();
    let j = off.jastrow();
    assert!(j.pair.iter().chain([&j.one]).all(|f| f.coefs.iter().all(|&c| c == 0.0)));
    let e = Solid::electron_gas(40, 1.0, true).unwrap_err();
    assert!(e.contains("40 electrons do not fill closed shells: use one of 2, 14, 38, 54, 66, 114, 162, 186, 246, 294, 342"), "{e}");
    assert!(Solid::electron_gas(15, 1.0, true).unwrap_err().contains("even number"));
    assert!(Solid::electron_gas(14, -1.0, true).unwrap_err().contains("--rs must be positive"));
    // no ions: no pseudopotential work in the floor, the orbitals' bytes are the outputs only
    let w = floor::class_work(&sys, 8, 0.7, 4, 8);
    assert_eq!(w[Class::Pseudopotential as usize], (0.0, 0.0));
    assert!(w[Class::Orbitals as usize].0 > 0.0 && w[Class::Coulomb as usize].1 > 0.0);
}

/// Jastrow off: zero variance of the kinetic energy (T_0 to rounding, every walker, every step) and the VMC energy
/// equal to E_HF within 4 error bars of a converged blocking analysis.
#[test]
fn without_the_jastrow_vmc_returns_hartree_fock() {
    let sys = Solid::electron_gas(14, 1.0, false).unwrap();
    let hf = sys.gas.unwrap().hf;
    let means = vmc(&sys, 32, 40, 1200, Some(hf.kinetic));
    let b = blocking(&means);
    assert!(b.converged, "{:?}", b.why_unconverged());
    assert!((b.mean - hf.energy).abs() < 4.0 * b.error, "E_VMC {} +- {} vs E_HF {}", b.mean, b.error, hf.energy);
    assert!(b.error < 0.01 * hf.energy.abs(), "error bar {} too wide to mean anything", b.error);
}

/// Jastrow on: the correlation lowers the VMC energy below E_HF by more than 4 error bars.
#[test]
fn with_the_jastrow_vmc_is_below_hartree_fock() {
    let sys = Solid::electron_gas(14, 1.0, true).unwrap();
    let hf = sys.gas.unwrap().hf;
    let b = blocking(&vmc(&sys, 32, 40, 1200, None));
    assert!(b.converged, "{:?}", b.why_unconverged());
    assert!(b.mean < hf.energy - 4.0 * b.error, "E_VMC {} +- {} vs E_HF {}", b.mean, b.error, hf.energy);
}

/// Jastrow on, fixed-node DMC on the batched CPU engine (issue #20: DMC below VMC below Hartree-Fock on the batched
/// engines): the DMC energy (the generations after 10/Ha of equilibration from the random start, weighted and blocked
/// as the qmc driver's) lies below VMC's by more than 4 combined error bars, and VMC below E_HF. The gap is about
/// 0.3 Ha at 14 electrons (the qmc driver's one-thread engines: VMC 8.323, DMC 7.997 at tau = 0.02), far beyond the
/// time-step error of tau = 0.05 there (mHa), so no extrapolation is needed for the order.
#[test]
fn with_the_jastrow_dmc_is_below_vmc_below_hartree_fock() {
    let sys = Solid::electron_gas(14, 1.0, true).unwrap();
    dmc_below_vmc_below_hartree_fock("cpu double, 32 walkers", &sys, (1200, 3000), |p| CpuEngine::<f64, f64>::new(&sys, 32, p).unwrap());
}

/// As `with_the_jastrow_dmc_is_below_vmc_below_hartree_fock` on the GPU engine, double and mixed (issue #20): the
/// 14-electron gas with the CPU test's 32 walkers, and the 54-electron gas with 256 walkers, where the GPU engine's
/// DMC step outran the 16 cores of the H100 host 16-fold (512 walkers, the gas records of 80019b5). Twice the CPU
/// test's recorded steps: a blocking analysis converges at 256 times its steps a sample, and these cases on the CPU
/// engine took up to 4.1 steps a sample in VMC and 8.4 in DMC (14 electrons, mixed), which 1200 and 3000 recorded
/// steps clear by less than 1.5x.
/// On the 2-core build machine's CPU engine the cases gave (E_HF, E_VMC, E_DMC): 14 electrons mixed 8.49148,
/// 8.31329(1534), 8.02115(1468); 54 electrons double, 256 walkers, 30.73921, 29.76687(631), 28.69116(552). Each of
/// the four (size, precision) runs takes 8640 steps.
#[test]
fn gas_dmc_below_vmc_below_hartree_fock_on_the_gpu_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    for (n, walkers) in [(14, 32), (54, 256)] {
        let sys = Solid::electron_gas(n, 1.0, true).unwrap();
        let mixed = sys.setup.convert();
        let steps = (2400, 6000);
        dmc_below_vmc_below_hartree_fock(&format!("gpu double, {walkers} walkers"), &sys, steps, |p| GpuEngine::<f64, f64>::new(&gpu, &sys, &sys.setup, walkers, p).unwrap());
        dmc_below_vmc_below_hartree_fock(&format!("gpu mixed, {walkers} walkers"), &sys, steps, |p| GpuEngine::<f32, f64>::new(&gpu, &sys, &mixed, walkers, p).unwrap());
    }
}

/// Every walker's energies and inverse rows against the f64 reference from scratch: double and mixed, Sherman-Morrison
/// and delayed, the Jastrow on and off, through a re-inversion.
#[test]
fn the_engines_energies_match_the_reference() {
    for jastrow in [false, true] {
        let sys = Solid::electron_gas(38, 1.0, jastrow).unwrap();
        for delay in [1, 4] {
            cpu_matches_reference::<f64, f64>(&sys, delay, 1e-10, 1e-9);
            cpu_matches_reference::<f32, f64>(&sys, delay, MIXED_TOLERANCE, 1e-3);
        }
    }
}

/// 4 steps of 3 walkers of the CPU engine in `sys` (a re-inversion every 3 steps): after each, every walker's energies
/// and inverse rows within the tolerances of the f64 reference from scratch, and nothing nonlocal (no ions). The
/// engine, for what else the caller checks.
pub(super) fn cpu_matches_reference<S: Scalar, A: Scalar>(sys: &Solid, delay: usize, energy_tol: f64, inverse_tol: f64) -> CpuEngine<'_, S, A> {
    let mut e = CpuEngine::<S, A>::new(sys, 3, Params { recompute: 3, ..params(delay) }).unwrap();
    let (ne, st) = (sys.electrons(), sys.setup.table.stride);
    for step in 0..4 {
        e.step().unwrap();
        for k in 0..e.count() {
            let inv: Vec<f64> = e.w.inv[k * ne * st..(k + 1) * ne * st].iter().map(|x| x.f64()).collect();
            let c = compare(sys, &e.w.pos[3 * k * ne..3 * (k + 1) * ne], &[], e.parts[k], &inv).unwrap();
            assert!(c.energy < energy_tol && c.inverse < inverse_tol, "{} delay {delay} step {step} walker {k}: energy {:e}, inverse {:e}", S::NAME, c.energy, c.inverse);
            assert_eq!(c.reference.nonlocal, 0.0);
        }
    }
    e
}

/// The GPU engine follows the CPU engine on the gas (same start, same random numbers): identical acceptances and
/// local energies within 1e-9 in double, delayed and Sherman-Morrison, the Jastrow on and off; no pseudopotential
/// stage (nothing nonlocal crosses to the host); mixed within its tolerance of the reference. Both ways of issuing a
/// move: the fused launches of the timed sweep and the separate ones of a profiled step.
#[test]
fn gas_gpu_matches_cpu_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    for jastrow in [true, false] {
        let sys = Solid::electron_gas(54, 1.0, jastrow).unwrap();
        for (delay, profile) in [(4, false), (4, true), (1, false), (1, true)] {
            let p = Params { delay, recompute: 2, ..params(delay) };
            let mut cpu = CpuEngine::<f64, f64>::new(&sys, 3, p).unwrap();
            let mut g = gpu::GpuEngine::<f64, f64>::new(&gpu, &sys, &sys.setup, 3, p).unwrap();
            for (k, (a, b)) in g.energies().unwrap().iter().zip(cpu.energies()).enumerate() {
                assert!((a - b).abs() <= 1e-10 * cpu.parts[k].magnitude(), "jastrow {jastrow} delay {delay} start walker {k}: gpu {a} cpu {b}");
            }
            g.profile = profile;
            gpu_follows_cpu(&mut cpu, &mut g, 3, &format!("jastrow {jastrow} delay {delay} profile {profile}"));
            assert!(!profile || g.timers.0[Class::Orbitals as usize] > 0.0 && g.timers.0[Class::Pseudopotential as usize] == 0.0);
            let (pos, rot, parts, inv) = g.walker(2).unwrap();
            let c = compare(&sys, &pos, &rot, parts, &inv).unwrap();
            assert!(c.energy < DOUBLE_TOLERANCE && c.inverse < 1e-9, "jastrow {jastrow} delay {delay} gpu walker 2 vs reference: energy {:e}, inverse {:e}", c.energy, c.inverse);
            // to the host every step: kinetic and Ewald energies (8 bytes a walker each), move tallies (24: the accepted
            // count and the proposed and accepted r^2), and no nonlocal energies; the step-1 re-inversion's residuals and norms as for carbon
            let w = 3u64;
            assert_eq!(g.traffic().to_host, 3 * (8 * w + 8 * w + 24 * w) + 8 * 2 * w + 2 * 8 * 2 * w, "jastrow {jastrow} delay {delay}");
        }
        mixed_gpu_within_tolerance(&gpu, &sys, params(4), &format!("jastrow {jastrow}"));
        single_gpu_follows_cpu(&gpu, &sys, Params { recompute: 2, ..params(1) }, &format!("gas jastrow {jastrow}"));
    }
}

/// The 14-electron gas's cell, Ewald sum and Jastrow with atomic orbitals in place of its plane waves (issue #20: the
/// orbitals the atoms will run on these engines): per spin 7 Gaussian and Slater functions on three centres inside
/// the cell, s and p, each orbital a mix of all of them (a dense coefficient matrix: every determinant entry sums
/// every function). Not a physical system: the engines' arithmetic with these orbitals is what the tests check.
fn gas_with_atomic_orbitals() -> Solid {
    use crate::atomic::{AtomicOrbitals, Function, Radial};
    let mut sys = Solid::electron_gas(14, 1.0, true).unwrap();
    let l = sys.setup.cell[0];
    let centers = vec![[0.3 * l, 0.4 * l, 0.5 * l], [0.7 * l, 0.5 * l, 0.4 * l], [0.5 * l, 0.6 * l, 0.7 * l]];
    // (centre, powers, radial, exponents and coefficients of its primitives)
    let shells: [(usize, [u32; 3], Radial, &[(f64, f64)]); 7] = [
        (0, [0, 0, 0], Radial::Gaussian, &[(2.0, 0.4), (0.5, 0.7)]),
        (1, [0, 0, 0], Radial::Gaussian, &[(0.6, 1.0)]),
        (2, [0, 0, 0], Radial::Slater, &[(1.2, 1.0)]),
        (0, [1, 0, 0], Radial::Gaussian, &[(0.8, 1.0)]),
        (1, [0, 1, 0], Radial::Gaussian, &[(0.7, 1.0)]),
        (2, [0, 0, 1], Radial::Slater, &[(0.9, 1.0)]),
        (1, [1, 1, 0], Radial::Gaussian, &[(0.5, 1.0)]),
    ];
    let (mut functions, mut exps, mut coefs) = (vec![], vec![], vec![]);
    for (center, powers, radial, prims) in shells {
        functions.push(Function { center, powers, radial, prims: exps.len()..exps.len() + prims.len() });
        exps.extend(prims.iter().map(|p| p.0));
        coefs.extend(prims.iter().map(|p| p.1));
    }
    let coef = (0..7).map(|j| (0..7).map(|f| if j == f { 1.0 } else { 0.1 * (((3 * j + 5 * f) % 7) as f64 - 3.0) }).collect()).collect();
    sys.orbitals = Orbitals::Atomic(AtomicOrbitals::new(centers, functions, exps, coefs, coef).unwrap());
    sys
}

/// With atomic orbitals the CPU engine's walkers match the f64 reference after every step (energies by part, the
/// inverse rows), double and mixed, Sherman-Morrison and delayed: the engine evaluates the orbitals the reference
/// does, at the points it moves to.
#[test]
fn atomic_orbitals_follow_the_reference() {
    let sys = gas_with_atomic_orbitals();
    for delay in [1, 4] {
        let e = cpu_matches_reference::<f64, f64>(&sys, delay, 1e-10, 1e-9);
        assert!(e.moves.acceptance() > 0.2, "delay {delay}: acceptance {}", e.moves.acceptance());
        cpu_matches_reference::<f32, f64>(&sys, delay, MIXED_TOLERANCE, 1e-3);
    }
}

/// The GPU engine with atomic orbitals (GpuAtomicOrbitals through the engine's per-point evaluator) follows the CPU
/// engine: same acceptances, local energies within 1e-9 in double, fused and profiled launches, delayed and
/// Sherman-Morrison; mixed within its tolerance of the reference.
#[test]
fn atomic_orbitals_gpu_matches_cpu_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let sys = gas_with_atomic_orbitals();
    for (delay, profile) in [(4, false), (1, true)] {
        let p = Params { delay, recompute: 2, ..params(delay) };
        let mut cpu = CpuEngine::<f64, f64>::new(&sys, 3, p).unwrap();
        let mut g = gpu::GpuEngine::<f64, f64>::new(&gpu, &sys, &sys.setup, 3, p).unwrap();
        g.profile = profile;
        gpu_follows_cpu(&mut cpu, &mut g, 3, &format!("atomic orbitals delay {delay} profile {profile}"));
    }
    mixed_gpu_within_tolerance(&gpu, &sys, params(4), "atomic orbitals");
}
