//! Tests of the engine against exact facts: an exact eigenfunction has a constant local energy; gradients and
//! Laplacians match finite differences; VMC is variational and reproducible whatever the thread count; DMC of a
//! nodeless system falls below VMC onto the exact energy.

use crate::ensemble::balance::Balance;
use super::dmc::{self, DmcParams};
use super::jastrow::TwoBody;
use crate::jastrow::Radial;
use super::systems::{System, HE_EXACT};
use super::vmc::{self, initial_walkers, VmcParams};
use crate::ensemble::moves::drift;
use crate::rng::gaussian3;
use super::{dot, norm, Wavefunction, V3};
use crate::rng::rng;

fn random_config(n: usize, seed: u64) -> Vec<V3> {
    let mut r = rng(seed, 5);
    (0..n).map(|_| gaussian3(&mut r)).collect()
}

fn log_psi(wf: &Wavefunction, r: &[V3]) -> f64 {
    let mut wf = wf.clone();
    let (mut g, mut l) = (vec![[0.0; 3]; r.len()], vec![0.0; r.len()]);
    wf.evaluate(r, &mut g, &mut l).0
}

#[test]
fn the_exact_hydrogen_1s_has_constant_local_energy() {
    let sys = System::hydrogen();
    for w in initial_walkers(&sys, 200, 3) {
        assert!((w.e_local + 0.5).abs() < 1e-12, "E_L = {} at {:?}", w.e_local, w.r);
    }
    let (e, _) = vmc::run(&sys, &VmcParams { walkers: 16, steps: 50, equil: 5, tau: 0.5, seed: 1 });
    assert!((e.energy + 0.5).abs() < 1e-12 && e.variance < 1e-20 && e.error < 1e-12, "{e:?}");
}

/// A He-like wavefunction with every kind of term: orbitals, e-e Padé of both spins, e-n Padé on two centres.
fn busy_system() -> System {
    let mut sys = System::h2(1.4, 1.1, 0.4);
    let mut j = TwoBody::pade(2, 0.7);
    let chi = Radial::pade(-0.1, &[], &[1.3]);
    j.nuclei = vec![([0.0, 0.0, -0.7], chi.clone()), ([0.0, 0.0, 0.7], chi)];
    sys.trial.parts[1] = Box::new(j);
    // three electrons: two up (like-spin pair) and one down; the orbital part takes one more orbital
    sys.n_up = 2;
    sys.n_electrons = 3;
    sys
}

#[test]
fn gradient_and_laplacian_match_finite_differences() {
    let mut sys = busy_system();
    if let Some(p) = sys.trial.parts.first_mut() {
        let o = super::orbitals::Lcao::sigma_g(1.1, [0.0, 0.0, -0.7], [0.0, 0.0, 0.7]);
        *p = Box::new(super::orbitals::OrbitalProduct::<f64>::new(vec![o.clone(), o.clone(), o]));
    }
    for (seed, wf) in [(1, &sys.trial), (2, &sys.trial), (3, &System::helium(0.3).trial)] {
        let n = if seed < 3 { 3 } else { 2 };
        let r = random_config(n, seed);
        let mut wf = wf.clone();
        let (mut g, mut l) = (vec![[0.0; 3]; n], vec![0.0; n]);
        wf.evaluate(&r, &mut g, &mut l);
        let h = 1e-4;
        for i in 0..n {
            let mut lap_fd = 0.0;
            for d in 0..3 {
                let mut rp = r.clone();
                let mut rm = r.clone();
                rp[i][d] += h;
                rm[i][d] -= h;
                let (fp, f0, fm) = (log_psi(&wf, &rp), log_psi(&wf, &r), log_psi(&wf, &rm));
                let g_fd = (fp - fm) / (2.0 * h);
                assert!((g_fd - g[i][d]).abs() < 1e-6, "grad[{i}][{d}] {} vs fd {g_fd}", g[i][d]);
                lap_fd += (fp - 2.0 * f0 + fm) / (h * h);
            }
            assert!((lap_fd - l[i]).abs() < 1e-4 * (1.0 + l[i].abs()), "lap[{i}] {} vs fd {lap_fd}", l[i]);
            // the one-electron calls agree with full evaluations
            let gi = wf.grad(&r, i);
            assert!(norm(super::sub(gi, g[i])) < 1e-12);
            let new = super::add(r[i], [0.3, -0.2, 0.1]);
            let (ratio, g_new) = wf.ratio_grad(&r, i, new);
            let mut r2 = r.clone();
            r2[i] = new;
            assert!((ratio.ln() - (log_psi(&wf, &r2) - log_psi(&wf, &r))).abs() < 1e-12);
            let (mut g2, mut l2) = (vec![[0.0; 3]; n], vec![0.0; n]);
            wf.clone().evaluate(&r2, &mut g2, &mut l2);
            assert!(norm(super::sub(g_new, g2[i])) < 1e-12);
        }
    }
}

/// The electron gas, Slater-Jastrow: plane-wave determinants (determinant kernel) and the periodic B-spline Jastrow.
#[test]
fn electron_gas_gradients_laplacians_and_ratios_match_finite_differences() {
    let sys = System::electron_gas(14, 1.5, true).unwrap();
    let side = sys.side.unwrap();
    let mut r = rng(9, 1);
    let pos = sys.initial_positions(&mut r);
    assert!(pos.iter().flatten().all(|x| (0.0..side).contains(x)));
    let mut wf = sys.trial.clone();
    let n = pos.len();
    let (mut g, mut l) = (vec![[0.0; 3]; n], vec![0.0; n]);
    wf.evaluate(&pos, &mut g, &mut l);
    let h = 1e-4;
    for i in [0, 6, 7, 13] {
        let mut lap_fd = 0.0;
        for d in 0..3 {
            let (mut rp, mut rm) = (pos.clone(), pos.clone());
            rp[i][d] += h;
            rm[i][d] -= h;
            let (fp, f0, fm) = (log_psi(&wf, &rp), log_psi(&wf, &pos), log_psi(&wf, &rm));
            assert!(((fp - fm) / (2.0 * h) - g[i][d]).abs() < 1e-6, "grad[{i}][{d}]");
            lap_fd += (fp - 2.0 * f0 + fm) / (h * h);
        }
        assert!((lap_fd - l[i]).abs() < 1e-4 * (1.0 + l[i].abs()), "lap[{i}] {} vs fd {lap_fd}", l[i]);
        assert!(norm(super::sub(wf.grad(&pos, i), g[i])) < 1e-10);
        let new = super::add(pos[i], [0.4, -0.3, 0.2]);
        let (ratio, g_new) = wf.ratio_grad(&pos, i, new);
        let mut r2 = pos.clone();
        r2[i] = new;
        let (mut g2, mut l2) = (vec![[0.0; 3]; n], vec![0.0; n]);
        let (log2, sign2) = wf.clone().evaluate(&r2, &mut g2, &mut l2);
        let (log1, sign1) = wf.clone().evaluate(&pos, &mut vec![[0.0; 3]; n], &mut vec![0.0; n]);
        assert!((ratio.abs().ln() - (log2 - log1)).abs() < 1e-10 && ratio.signum() == sign1 * sign2);
        assert!(norm(super::sub(g_new, g2[i])) < 1e-9);
        // after a Sherman-Morrison accept the one-electron calls agree with a fresh evaluation at the new positions
        let mut moved = wf.clone();
        moved.accept(&pos, i, new);
        let j = (i + 1) % n;
        assert!(norm(super::sub(moved.grad(&r2, j), g2[j])) < 1e-9);
        // a translation of every electron by a lattice vector changes nothing
        let shifted: Vec<V3> = pos.iter().map(|p| [p[0] + side, p[1], p[2] - side]).collect();
        assert!((log_psi(&wf, &shifted) - log1).abs() < 1e-9);
    }
}

#[test]
fn electron_gas_kinetic_energy_of_the_determinant_is_the_constant_sum_of_k2_over_2() {
    let sys = System::electron_gas(38, 2.0, false).unwrap();
    let hf = sys.hf.unwrap();
    // 19 states per spin: |n|^2 = 0, 1, 2 (1 + 6 + 12), k = 2 pi n / L
    let side = sys.side.unwrap();
    let k2 = (std::f64::consts::TAU / side).powi(2);
    assert!((hf.kinetic - 2.0 * 0.5 * k2 * (6.0 + 12.0 * 2.0)).abs() < 1e-12 * hf.kinetic);
    for w in initial_walkers(&sys, 8, 4) {
        assert!((w.kinetic(&sys) - hf.kinetic).abs() < 1e-9 * hf.kinetic, "{} vs {}", w.kinetic(&sys), hf.kinetic);
    }
}

#[test]
fn two_electron_gas_hartree_fock_energy_is_the_madelung_energy() {
    // one k = 0 state per spin: no kinetic energy, no exchange; E_HF = v_M, the Madelung energy of a simple cubic
    // jellium, -2.837297 / L (Fuchs 1935; Nijboer and de Wette 1957)
    let sys = System::electron_gas(2, 1.0, false).unwrap();
    let e = sys.hf.unwrap().energy;
    assert!((e + 2.837297 / sys.side.unwrap()).abs() < 1e-5, "{e}");
}

#[test]
fn electron_gas_needs_closed_shells() {
    assert_eq!(crate::planewave::occupied(7).unwrap().len(), 7);
    for n in [14, 38, 54, 66, 114] {
        assert!(System::electron_gas(n, 1.0, true).is_ok(), "{n}");
    }
    let e = System::electron_gas(16, 1.0, true).err().unwrap();
    assert!(e.contains("16 electrons do not fill closed shells: use one of 2, 14, 38, 54, 66, 114"), "{e}");
    assert!(System::electron_gas(15, 1.0, true).err().unwrap().contains("even number"));
    assert!(System::electron_gas(14, 0.0, true).err().unwrap().contains("--rs must be positive"));
}

#[test]
fn limited_drift_is_plain_drift_far_from_nodes_and_bounded_near_them() {
    let tau = 0.01;
    let small = drift([0.1, 0.0, 0.0], tau);
    assert!((small[0] - 0.1 * tau).abs() < 1e-7);
    for v in [10.0, 1e3, 1e6] {
        let d = drift([v, 0.0, 0.0], tau);
        assert!(norm(d) <= (2.0 * tau).sqrt() + 1e-12 && norm(d) > 0.0, "{d:?}");
    }
    assert!(dot(drift([0.0, 3.0, 4.0], tau), [0.0, 3.0, 4.0]) > 0.0);
}

/// Psi = exp(-2 r1 - 2 r2 + r12 / (2 (1 + 0.15 r12))), the form of Thijssen's Computational Physics (ch. 12), which
/// gives -2.8781 Ha near this b; a long run of this code (256 walkers x 4000 steps) gives -2.8775(5).
const HE_PADE_VMC: f64 = -2.8781;

#[test]
fn vmc_of_helium_is_variational_and_matches_the_known_pade_energy() {
    let sys = System::helium(0.15);
    let (e, _) = vmc::run(&sys, &VmcParams { walkers: 128, steps: 2000, equil: 200, tau: 0.3, seed: 7 });
    assert!(e.energy > HE_EXACT + 0.02, "{e:?}");
    assert!((e.energy - HE_PADE_VMC).abs() < 3.0 * e.error + 1e-3, "{e:?}");
    assert!(e.error < 1.5e-3 && e.blocked.converged, "{e:?}");
    assert!(e.acceptance > 0.5 && e.acceptance < 0.9, "{e:?}");
}

#[test]
fn walks_do_not_depend_on_the_thread_count() {
    let sys = System::helium(0.3);
    let p = VmcParams { walkers: 24, steps: 40, equil: 0, tau: 0.3, seed: 11 };
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(|| vmc::run(&sys, &p).0);
    let three = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap().install(|| vmc::run(&sys, &p).0);
    assert_eq!(one.energy.to_bits(), three.energy.to_bits());
    let d = DmcParams { walkers: 24, steps: 30, equil: 5, tau: 0.02, seed: 11, feedback: 10.0, balance: Balance::Equal };
    let run = |t| {
        rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap().install(|| {
            let (_, w) = vmc::run(&sys, &p);
            dmc::run(&sys, &d, w).unwrap()
        })
    };
    let (a, b) = (run(1), run(3));
    assert_eq!((a.energy.to_bits(), a.walker_steps), (b.energy.to_bits(), b.walker_steps));
}

#[test]
fn dmc_of_helium_falls_below_vmc_onto_the_exact_energy() {
    let sys = System::helium(0.3);
    let (v, w) = vmc::run(&sys, &VmcParams { walkers: 200, steps: 100, equil: 100, tau: 0.2, seed: 5 });
    // 500 generations of equilibration (10/Ha) are enforced whatever `equil` says
    let d = dmc::run(&sys, &DmcParams { walkers: 200, steps: 600, equil: 100, tau: 0.02, seed: 5, feedback: 10.0, balance: Balance::Equal }, w).unwrap();
    assert!(d.energy < v.energy - 0.01, "DMC {d:?} VMC {v:?}");
    assert!((d.energy - HE_EXACT).abs() < 4.0 * d.error + 2e-3, "{d:?}");
    assert!((d.population / 200.0 - 1.0).abs() < 0.1, "{d:?}");
}


#[test]
fn a_population_left_without_feedback_dies_out_or_explodes_with_a_clear_error() {
    let sys = System::helium(0.3);
    let (_, w) = vmc::run(&sys, &VmcParams { walkers: 1, steps: 2, equil: 10, tau: 0.3, seed: 3 });
    // one walker, no pull back to the target: a random walk of the population that ends at 0 or 10 walkers
    let e = dmc::run(&sys, &DmcParams { walkers: 1, steps: 100_000, equil: 0, tau: 0.05, seed: 3, feedback: 1e12, balance: Balance::Equal }, w).unwrap_err();
    let m = e.to_string();
    assert!(m.contains("died out") || m.contains("exploded"), "{m}");
}

/// The atomic kernel's orbital sets are this driver's orbitals: He's and H2's `Lcao`s (values, gradients and
/// Laplacians at random points 0.05 to 5 bohr from a nucleus, to 1e-12 of each component's largest value), and Be's
/// the kernel's own: the committed RHF orbitals as they are for be-hf, with the cusp restored (0.2 bohr) for be.
/// Through the systems' blueprints (the orbitals the engines run), so a change of an exponent, a bond or the cusp
/// radius in `systems` fails here.
#[test]
fn atomic_orbitals_are_the_drivers() {
    use super::systems::{OrbitalSet, H2_BOND, H2_JASTROW_B, H2_ZETA, HE_JASTROW_B};
    use crate::atomic::AtomicOrbitals;
    use crate::Check;
    use rand::Rng;
    let points = |centers: &[[f64; 3]], count: usize| -> Vec<V3> {
        let mut r = crate::rng::rng(7, 0xA70);
        (0..count)
            .map(|i| {
                let (c, g) = (centers[i % centers.len()], gaussian3(&mut r));
                let s = r.random_range(0.05f64.ln()..5.0f64.ln()).exp() / (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                [c[0] + s * g[0], c[1] + s * g[1], c[2] + s * g[2]]
            })
            .collect()
    };
    let product = |sys: System| match sys.blueprint.orbitals {
        OrbitalSet::Product(o) => o,
        other => panic!("{}: {other:?}", sys.name),
    };
    let (he, h2) = (product(System::helium(HE_JASTROW_B)), product(System::h2(H2_BOND, H2_ZETA, H2_JASTROW_B)));
    for (name, ours, theirs) in [("he", AtomicOrbitals::helium(), he), ("h2", AtomicOrbitals::h2(H2_BOND, H2_ZETA), h2)] {
        // one orbital per electron, the same for both spins, whose centres are ours
        assert_eq!(theirs.len(), 2, "{name}");
        assert_eq!(ours.centers, theirs[0].terms.iter().map(|t| t.2).collect::<Vec<_>>(), "{name}");
        for orbital in &theirs {
            let (mut mine, mut driver) = (vec![vec![]; 5], vec![vec![]; 5]);
            for r in points(&ours.centers, 50) {
                let mut out = vec![0.0; 5 * 64];
                ours.evaluate_point::<f64>(r, 64, &mut out);
                let (v, g, l) = orbital.vgl::<f64>(r);
                for (c, x) in [v, g[0], g[1], g[2], l].into_iter().enumerate() {
                    mine[c].push(out[c * 64]);
                    driver[c].push(x);
                }
            }
            for c in 0..5 {
                let check = Check::compare(&format!("{name} component {c}"), &mine[c], &driver[c], 1e-12);
                assert!(check.passed(), "{check:?}");
            }
        }
    }
    let atomic = |sys: System| match sys.blueprint.orbitals {
        OrbitalSet::Atomic(o) => o,
        other => panic!("{}: {other:?}", sys.name),
    };
    let be = AtomicOrbitals::beryllium();
    assert_eq!(atomic(System::beryllium(None)), be);
    let cusped = atomic(System::beryllium(Some(1.0)));
    assert_eq!(cusped, be.cusp_corrected(0, 4.0, crate::atomic::cusp::BE_RADIUS).unwrap());
    assert_eq!((cusped.cusps.len(), cusped.cusps[0].rc), (2, 0.2));
}

/// Single and mixed precision against double at the same configuration (the reference twin of the components):
/// ln psi, gradients, Laplacians, local energy, a move's ratio and new gradient, and the accepted move's
/// Sherman-Morrison update (ratios of a later move) agree to a tolerance in units of f32 epsilon; and a system
/// built wholly in double would be caught (the local energies must differ).
#[test]
fn single_and_mixed_components_match_double_to_f32_rounding() {
    use super::systems::Setup;
    use super::walker::Walker;
    use crate::Precision;
    for name in ["he", "h2", "be", "heg"] {
        let build = |precision| System::by_name_with(name, &Setup { electrons: 14, rs: 1.0, precision, atom: None }).unwrap();
        let double = build(Precision::Double);
        let pos = double.initial_positions(&mut rng(21, 2));
        let n = pos.len();
        let wd = Walker::new(&double, pos.clone());
        for p in [Precision::Single, Precision::Mixed] {
            let sys = build(p);
            assert_eq!(sys.precision, p);
            let mut w = Walker::new(&sys, pos.clone());
            // relative to the local energy's scale (kinetic and potential are each larger than their sum)
            let scale = wd.e_local.abs() + wd.kinetic(&double).abs();
            let de = (w.e_local - wd.e_local).abs();
            assert!(de < 1e4 * p.eps() * scale && de > 0.0, "{name} {p}: E_L {} vs {}", w.e_local, wd.e_local);
            let (mut wf_d, mut wf) = (wd.wf.clone(), w.wf.clone());
            let mut pos = pos.clone();
            for (i, step) in [(0, [0.1, -0.05, 0.08]), (n - 1, [-0.07, 0.04, 0.02]), (0, [0.03, 0.06, -0.04])] {
                let new = super::add(pos[i], step);
                let (rd, gd) = wf_d.ratio_grad(&pos, i, new);
                let (rp, gp) = wf.ratio_grad(&pos, i, new);
                assert!((rp - rd).abs() < 1e3 * p.eps() * rd.abs(), "{name} {p}: ratio {rp} vs {rd}");
                assert!(norm(super::sub(gp, gd)) < 1e3 * p.eps() * (1.0 + norm(gd)), "{name} {p}: grad {gp:?} vs {gd:?}");
                // accept into both; the next ratio (of electron 0 again) uses the updated inverses
                wf_d.accept(&pos, i, new);
                wf.accept(&pos, i, new);
                pos[i] = new;
            }
            w.measure(&sys);
            assert!(w.e_local.is_finite());
        }
    }
}
