use super::quadrature::{legendre, random_rotation, rotate};
use super::*;
use crate::check::Check;
use crate::real::in_storage;
use crate::{Precision, Real};

/// Average of x^a y^b z^c over the unit sphere: (a-1)!!(b-1)!!(c-1)!! / (a+b+c+1)!! for even a, b, c, else 0.
fn sphere_moment(a: usize, b: usize, c: usize) -> f64 {
    if a % 2 == 1 || b % 2 == 1 || c % 2 == 1 {
        return 0.0;
    }
    let dfact = |n: i64| (1..=n).rev().step_by(2).map(|k| k as f64).product::<f64>();
    dfact(a as i64 - 1) * dfact(b as i64 - 1) * dfact(c as i64 - 1) / dfact((a + b + c + 1) as i64)
}

fn rule_moment(nodes: &(Vec<[f64; 3]>, Vec<f64>), rot: &[f64], e: [usize; 3]) -> f64 {
    nodes.0.iter().zip(&nodes.1).map(|(u, w)| {
        let v = rotate(rot, *u);
        w * v[0].powi(e[0] as i32) * v[1].powi(e[1] as i32) * v[2].powi(e[2] as i32)
    }).sum()
}

#[test]
fn rules_integrate_every_monomial_up_to_their_degree_in_any_orientation() {
    let mut r = rng::rng(1, 1);
    for rule in Rule::ALL {
        let nodes = rule.nodes();
        assert_eq!(nodes.0.len(), rule.points());
        for u in &nodes.0 {
            assert!((u.iter().map(|x| x * x).sum::<f64>() - 1.0).abs() < 1e-14);
        }
        for rot in [[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], random_rotation(&mut r)] {
            for deg in 0..=rule.degree() {
                for a in 0..=deg {
                    for b in 0..=deg - a {
                        let e = [a, b, deg - a - b];
                        let got = rule_moment(&nodes, &rot, e);
                        assert!((got - sphere_moment(e[0], e[1], e[2])).abs() < 1e-13, "{rule:?} monomial {e:?}: {got}");
                    }
                }
            }
        }
        // and no more: some monomial of the next even degree is wrong (the degree claims are tight)
        let d = rule.degree() + 1;
        let worst = (0..=d).flat_map(|a| (0..=d - a).map(move |b| [a, b, d - a - b]))
            .map(|e| (rule_moment(&nodes, &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0], e) - sphere_moment(e[0], e[1], e[2])).abs())
            .fold(0.0, f64::max);
        assert!(worst > 1e-6, "{rule:?} integrates degree {d} too");
    }
}

#[test]
fn rules_give_legendre_orthogonality() {
    // (1/4pi) int P_l(u.a) P_m(u.b) = delta_lm P_l(a.b) / (2l+1), exact while l + m <= degree
    let mut r = rng::rng(2, 2);
    for rule in Rule::ALL {
        let nodes = rule.nodes();
        let rot = random_rotation(&mut r);
        let a = rotate(&random_rotation(&mut r), [0.0, 0.0, 1.0]);
        let b = rotate(&random_rotation(&mut r), [0.0, 0.0, 1.0]);
        let ab = a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
        for l in 0..=3 {
            for m in 0..=3 {
                if l + m > rule.degree() {
                    continue;
                }
                let got: f64 = nodes.0.iter().zip(&nodes.1).map(|(u, w)| {
                    let v = rotate(&rot, *u);
                    let pa = legendre(v[0] * a[0] + v[1] * a[1] + v[2] * a[2]);
                    let pb = legendre(v[0] * b[0] + v[1] * b[1] + v[2] * b[2]);
                    w * pa[l] * pb[m]
                }).sum();
                let want = if l == m { legendre(ab)[l] / (2 * l + 1) as f64 } else { 0.0 };
                assert!((got - want).abs() < 1e-13, "{rule:?} l={l} m={m}: {got} vs {want}");
            }
        }
    }
}

#[test]
fn carbon_channel_and_cutoff() {
    let c = Channels::carbon_bfd();
    assert_eq!(c.lmax(), 0);
    assert!((c.value(0, 0.0) - 22.55164191).abs() < 1e-12);
    assert!((c.value(0, 1.0) - 22.55164191 * (-5.02991637f64).exp()).abs() < 1e-12);
    // the cutoff is where the channel falls to 1e-5 Ha: sqrt(ln(22.55e5) / 5.03) = 1.7055 bohr
    assert!((c.rc - (22.55164191e5f64.ln() / 5.02991637).sqrt()).abs() < 2e-3, "rc = {}", c.rc);
    assert!(c.value(0, c.rc).abs() < channels::CUTOFF_HARTREE);
}

#[test]
fn constant_wavefunction_gives_the_s_channel_only() {
    // ratio 1: the l > 0 channels integrate to zero and l = 0 gives dV_0(r) exactly, for every rule and rotation
    let ch = Channels::test_channels();
    let mut r = rng::rng(3, 3);
    for rule in Rule::ALL {
        for _ in 0..5 {
            let rot = random_rotation(&mut r);
            let d = rotate(&random_rotation(&mut r), [0.0, 0.0, 0.3 + 1.2 * rand::Rng::random::<f64>(&mut r)]);
            let rr = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            let (v, _) = reference::project(&ch, rule, &rot, [1.0, 2.0, 3.0], d, |_| 1.0);
            assert!((v - ch.value(0, rr)).abs() < 1e-12 * ch.value(0, rr).abs(), "{rule:?}: {v} vs {}", ch.value(0, rr));
        }
    }
}

#[test]
fn wavefunction_of_angular_momentum_l_projects_onto_channel_l_in_any_rotation() {
    // psi(r') = P_l(n . (r' - R)/|r' - R|): the projection gives exactly dV_l(r), whatever the rotation, while
    // l + 3 <= degree (all four channels present)
    let ch = Channels::test_channels();
    let mut r = rng::rng(4, 4);
    let ion = [0.5, -1.0, 2.0];
    for rule in Rule::ALL {
        for l in 0..=3usize {
            if l + 3 > rule.degree() {
                continue;
            }
            let n = rotate(&random_rotation(&mut r), [0.0, 0.0, 1.0]);
            let d = rotate(&random_rotation(&mut r), [0.0, 0.0, 0.9]);
            let psi = |p: [f64; 3]| {
                let v = [0, 1, 2].map(|k| p[k] - ion[k]);
                let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                legendre((v[0] * n[0] + v[1] * n[1] + v[2] * n[2]) / len)[l]
            };
            let at_e = psi([0, 1, 2].map(|k| ion[k] + d[k]));
            for _ in 0..4 {
                let rot = random_rotation(&mut r);
                let (v, _) = reference::project(&ch, rule, &rot, ion, d, |p| psi(p) / at_e);
                assert!((v - ch.value(l, 0.9)).abs() < 1e-11 * ch.value(l, 0.9).abs().max(1.0), "{rule:?} l={l}: {v} vs {}", ch.value(l, 0.9));
            }
        }
    }
}

fn small(rule: Rule, channels: Channels, walkers: usize, seed: u64) -> (Setup<f64>, Walkers<f64>) {
    let s = Setup::carbon(8, rule, channels, seed).unwrap();
    let w = Walkers::random(&s, walkers, seed + 1);
    (s, w)
}

#[test]
fn constant_orbital_through_the_whole_pipeline_gives_the_s_channel_sum() {
    // orbital 0 constant 1 (B-splines sum to one), inverse rows e_0: every ratio is 1, so each walker's energy is
    // the sum of dV_0(r) over its jobs, in cpu and reference alike
    let (s, mut w) = small(Rule::P12, Channels::test_channels(), 2, 5);
    let mut s = s.without_jastrow();
    let st = s.table.stride;
    for row in s.table.coefs.chunks_exact_mut(st) {
        row[0] = 1.0;
    }
    for row in w.inv.chunks_exact_mut(st) {
        row.iter_mut().for_each(|x| *x = 0.0);
        row[0] = 1.0;
    }
    let jobs = cpu::jobs(&s, &w);
    assert!(!jobs.is_empty());
    let mut want = [0.0; 2];
    for j in &jobs {
        want[j.walker] += s.channels.value(0, (j.d.iter().map(|x| x * x).sum::<f64>()).sqrt());
    }
    let re = reference::energies(&s, &w);
    let fast = cpu::energies::<f64, f64>(&s, &w);
    for (k, want) in want.iter().enumerate() {
        assert!((re.energy[k] - want).abs() < 1e-11 * want.abs(), "{} vs {want}", re.energy[k]);
        assert!((fast.energy[k] - want).abs() < 1e-11 * want.abs());
    }
    assert!(re.ratios.iter().all(|r| (r - 1.0).abs() < 1e-13));
}

#[test]
fn ratios_equal_determinant_ratios_with_the_true_inverse() {
    use crate::bspline::{reference as spline, Output};
    use crate::determinant::reference as det;
    let (s, mut w) = small(Rule::P12, Channels::carbon_bfd(), 1, 6);
    let s = s.without_jastrow();
    let n = s.per_spin();
    let st = s.table.stride;
    // the Slater matrix of spin up, A[i][k] = phi_k(r_i), and its true inverse in the transposed layout
    let a: Vec<f64> = (0..n).flat_map(|i| spline::evaluate(&s.table, &w.electron(s.electrons, 0, i), Output::V)[..n].to_vec()).collect();
    let (inv, _, _) = det::inverse(&a, n).expect("random orbitals at random points are invertible");
    for i in 0..n {
        for k in 0..n {
            w.inv[i * st + k] = inv[k * n + i];
        }
    }
    let (_, _, logdet, sign) = det::lu(&a, n).unwrap();
    let re = reference::energies(&s, &w);
    let jobs = cpu::jobs(&s, &w);
    let (pts, _) = s.rule.nodes();
    let mut checked = 0;
    for (j, job) in jobs.iter().enumerate().filter(|(_, j)| j.electron < n).take(4) {
        let rr = job.d.iter().map(|x| x * x).sum::<f64>().sqrt();
        let rot = &w.rot[9 * job.ion..][..9];
        for (q, u) in pts.iter().enumerate() {
            let u = rotate(rot, *u);
            let p: Vec<f64> = (0..3).map(|k| s.ion(job.ion)[k] + rr * u[k]).collect();
            let mut a2 = a.clone();
            a2[job.electron * n..][..n].copy_from_slice(&spline::evaluate(&s.table, &p, Output::V)[..n]);
            let (_, _, logdet2, sign2) = det::lu(&a2, n).unwrap();
            let direct = sign * sign2 * (logdet2 - logdet).exp();
            let got = re.ratios[j * pts.len() + q];
            assert!((got - direct).abs() < 1e-9 * direct.abs().max(1.0), "job {j} point {q}: {got} vs {direct}");
        }
        checked += 1;
    }
    assert!(checked > 0);
}

fn tolerance(p: Precision) -> f64 {
    1e3 * p.eps()
}

#[test]
fn cpu_matches_reference_in_every_precision() {
    let (s, w) = small(Rule::P12, Channels::test_channels(), 3, 7);
    let re = reference::energies(&s, &w);
    assert!(re.jobs > 0);
    fn energies<S: Real, A: Real>(s: &Setup<f64>, w: &Walkers<f64>) -> Energies {
        cpu::energies::<S, A>(&in_storage(s, |s| s.convert()), &in_storage(w, |w| w.convert()))
    }
    for p in Precision::ALL {
        let fast = crate::by_precision!(p => energies(&s, &w));
        assert_eq!(fast.jobs, re.jobs);
        for c in [Check::compare("energy", &fast.energy, &re.energy, tolerance(p)), Check::compare("ratio", &fast.ratios, &re.ratios, tolerance(p))] {
            assert!(c.passed(), "{p}: {c:?}");
        }
    }
}

#[test]
fn a_wrong_inverse_is_detected() {
    let (s, mut w) = small(Rule::P6, Channels::carbon_bfd(), 2, 8);
    let re = reference::energies(&s, &w);
    let jobs = cpu::jobs(&s, &w);
    let row = s.inv_row(jobs[0].walker, jobs[0].electron);
    w.inv[row] += 0.5;
    let fast = cpu::energies::<f64, f64>(&s, &w);
    assert!(!Check::compare("ratio", &fast.ratios, &re.ratios, tolerance(Precision::Double)).passed());
}

#[test]
fn supercells_are_as_cubic_as_possible() {
    assert_eq!(supercell(1), [1, 1, 1]);
    assert_eq!(supercell(4), [2, 2, 1]);
    assert_eq!(supercell(8), [2, 2, 2]);
    assert_eq!(supercell(32), [4, 4, 2]);
    assert!(Setup::carbon(12, Rule::P12, Channels::carbon_bfd(), 1).is_err());
    let s = Setup::carbon(16, Rule::P12, Channels::carbon_bfd(), 1).unwrap();
    assert_eq!(s.ion_count(), 16);
    // nearest neighbours at the diamond bond length a sqrt(3)/4, never closer
    let bond = DIAMOND_A * 3f64.sqrt() / 4.0;
    for i in 0..16 {
        let near = (0..16).filter(|&j| j != i).map(|j| s.displacement(s.ion(i), s.ion(j)).iter().map(|x| x * x).sum::<f64>().sqrt()).fold(f64::MAX, f64::min);
        assert!((near - bond).abs() < 1e-9, "ion {i}: nearest {near}");
    }
}

#[test]
fn gpu_matches_reference_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let (s, w) = small(Rule::P12, Channels::test_channels(), 3, 9);
    let re = reference::energies(&s, &w);
    // each precision with the estimated capacity, and double once more from a capacity of one job, so the list
    // overflows and the evaluation runs again with room for it
    for (p, cap) in Precision::ALL.into_iter().map(|p| (p, None)).chain([(Precision::Double, Some(1))]) {
        let (energy, ratios, jobs) = crate::by_precision!(p => run_gpu(&gpu, &s, &w, cap));
        assert_eq!(jobs, re.jobs, "gpu {p} capacity {cap:?}: job count");
        for c in [Check::compare("energy", &energy, &re.energy, tolerance(p)), Check::compare("ratio", &ratios, &re.ratios, tolerance(p))] {
            assert!(c.passed(), "gpu {p} capacity {cap:?}: {c:?}");
        }
    }
}

/// The device's job list over several scan tiles: 160 electrons per walker (two tiles of the per-walker block scan
/// of 128 threads) and 1030 walkers (two tiles of the scan over walker totals, 1024 threads): the job count and every
/// walker's energy as the CPU path gives them.
#[test]
fn gpu_job_list_over_several_scan_tiles_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let s = Setup::carbon(40, Rule::P12, Channels::carbon_bfd(), 3).unwrap();
    let w = Walkers::random(&s, 1030, 4);
    let want = cpu::energies::<f64, f64>(&s, &w);
    let slab = super::slab::Slab::upload(&gpu, &s, &w, false).unwrap();
    let mut g = gpu::GpuPseudo::<f64, f64>::new(&gpu, &s, &slab).unwrap();
    let got = g.evaluate(&slab).unwrap();
    assert_eq!(g.jobs_count(), want.jobs);
    let c = Check::compare("energy", &got, &want.energy, tolerance(Precision::Double));
    assert!(c.passed(), "{c:?}");
}

/// The GPU evaluation of `s` and `w` in storage S, arithmetic A: energies, ratios and the job count.
fn run_gpu<S: Real, A: Real>(gpu: &std::sync::Arc<crate::gpu::Gpu>, s: &Setup<f64>, w: &Walkers<f64>, cap: Option<usize>) -> (Vec<f64>, Vec<f64>, usize) {
    let (s, w) = (in_storage(s, |s| s.convert::<S>()), in_storage(w, |w| w.convert::<S>()));
    let (s, w) = (&*s, &*w);
    let slab = super::slab::Slab::upload(gpu, s, w, false).unwrap();
    let mut g = gpu::GpuPseudo::<S, A>::new(gpu, s, &slab).unwrap();
    if let Some(c) = cap {
        g.set_capacity(c).unwrap();
    }
    g.poison().unwrap();
    let energy = g.evaluate(&slab).unwrap();
    assert!(g.capacity() >= g.jobs_count(), "the capacity grew to the job count");
    let ratios = g.ratios().unwrap();
    // only the energies and the count came down, then the ratios asked for here
    let (nw, points) = (w.count as u64, ratios.len() as u64);
    let evaluations = if cap.is_some() { 2 } else { 1 };
    assert_eq!(g.traffic.to_host, 8 * (evaluations * (nw + 1) + points), "bytes to the host");
    (energy, ratios, g.jobs_count())
}

#[test]
fn without_the_jastrow_the_results_are_those_of_the_determinant_only_code() {
    // energies and ratios of the reference and cpu before the Jastrow factor existed (commit 304cac3), to the bit
    // in the reference and within rounding in the cpu path
    let (s, w) = small(Rule::P12, Channels::carbon_bfd(), 2, 11);
    let s = s.without_jastrow();
    let before = [0.01502757349691139, 0.44780578795815945];
    let before_ratios = [0.15073780465422468, -0.05693262088013829, -0.03370497654649828];
    let re = reference::energies(&s, &w);
    let fast = cpu::energies::<f64, f64>(&s, &w);
    assert_eq!(re.jobs, 34);
    assert_eq!(re.energy, before);
    assert_eq!(&re.ratios[..3], &before_ratios);
    for (a, b) in fast.energy.iter().zip(&before) {
        assert!((a - b).abs() < 1e-13, "{a} vs {b}");
    }
    // and the Jastrow changes them
    let on = reference::energies(&s.clone().with_jastrow(11), &w);
    assert!((on.energy[1] - before[1]).abs() > 1e-6, "{:?}", on.energy);
}

#[test]
fn jastrow_ratios_equal_the_jastrow_kernels_full_log_value_difference() {
    // ratio with the Jastrow / ratio without = J(R')/J(R) for the move of the job's electron to the point, where
    // log J is the jastrow kernel's reference evaluation from scratch of every pair and ion
    use crate::jastrow::{self as jk, reference as jref};
    let (s, w) = small(Rule::P12, Channels::carbon_bfd(), 1, 12);
    let j = s.jastrow.clone().unwrap();
    let (ne, ni) = (s.electrons, s.ion_count());
    let side = s.cell[0];
    assert!(s.cell.iter().all(|&c| c == side), "the jastrow kernel's cells are cubes");
    let jk = jk::Jastrow {
        term: jk::Term::BSpline,
        cell: jk::Cell { side, periodic: true },
        electrons: ne,
        up: s.per_spin(),
        pair: j.pair.clone(),
        p: jk::PTerm { b: std::f64::consts::TAU / side, n: vec![], a: vec![], stars: 0, nmax: 0 },
        ions: (0..3).flat_map(|k| (0..ni).map(move |i| (k, i))).map(|(k, i)| s.ion(i)[k]).collect(),
        one: j.one.clone(),
    };
    // positions in the jastrow kernel's layout, [xyz][electron]
    let old: Vec<f64> = (0..3).flat_map(|k| (0..ne).map(move |e| (k, e))).map(|(k, e)| w.electron(ne, 0, e)[k]).collect();
    let log_old = jref::log_value(&jk, &old);
    let on = reference::energies(&s, &w);
    let off = reference::energies(&s.clone().without_jastrow(), &w);
    let jobs = cpu::jobs(&s, &w);
    let (pts, _) = s.rule.nodes();
    let (mut checked, mut farthest) = (0, 0.0f64);
    for (jb, job) in jobs.iter().enumerate() {
        let rr = job.d.iter().map(|x| x * x).sum::<f64>().sqrt();
        for (q, u) in pts.iter().enumerate() {
            let u = rotate(&w.rot[9 * job.ion..][..9], *u);
            let mut new = old.clone();
            for k in 0..3 {
                new[k * ne + job.electron] = s.ion(job.ion)[k] + rr * u[k];
            }
            let want = (jref::log_value(&jk, &new) - log_old).exp();
            let k = jb * pts.len() + q;
            if off.ratios[k].abs() > 1e-3 {
                let got = on.ratios[k] / off.ratios[k];
                assert!((got - want).abs() < 1e-10 * want, "job {jb} point {q}: {got} vs {want}");
                farthest = farthest.max((want - 1.0).abs());
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "{checked}");
    // a Jastrow that does matter: some ratios far from 1
    assert!(farthest > 0.05, "largest |J ratio - 1| = {farthest}");
}
