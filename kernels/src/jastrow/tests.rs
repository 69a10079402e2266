use super::cpu::{self, Batch, Fast, MovesT};
use super::*;
use crate::{Check, Precision};

fn setup(term: Term, electrons: usize, ions: usize, periodic: bool, seed: u64) -> Jastrow<f64> {
    Jastrow::random(&Setup { term, electrons, ions, periodic, stars: 8, seed })
}

/// Every term in the cells it is smooth in: Padé has no cutoff, so its minimum image jumps at half the side.
fn cases() -> Vec<(Term, bool)> {
    vec![(Term::BSpline, true), (Term::BSpline, false), (Term::U, true), (Term::P, true), (Term::Pade, false)]
}

#[test]
fn radial_forms_match_reference_and_finite_differences() {
    let mut r = crate::rng::rng(1, 2);
    for form in [Form::BSpline, Form::Casino, Form::Pade] {
        let f = Radial::random(form, 3.0, 0.5, &mut r);
        for i in 1..60 {
            // off the B-spline knots, where u''' jumps and a difference of u' is only first order
            let x = 0.05 * i as f64 + 0.0123;
            let (u, du, d2u) = f.eval(x);
            let (ru, rdu, rd2u) = reference::radial(&f, x);
            assert!((u - ru).abs() < 1e-13 && (du - rdu).abs() < 1e-12 && (d2u - rd2u).abs() < 1e-11, "{form:?} at {x}: fast {:?} reference {:?}", (u, du, d2u), (ru, rdu, rd2u));
            let h = 1e-5;
            let fd1 = (reference::radial(&f, x + h).0 - reference::radial(&f, x - h).0) / (2.0 * h);
            let fd2 = (reference::radial(&f, x + h).1 - reference::radial(&f, x - h).1) / (2.0 * h);
            assert!((fd1 - rdu).abs() < 1e-7 && (fd2 - rd2u).abs() < 1e-6, "{form:?} derivatives at {x}");
        }
    }
}

#[test]
fn cusp_and_cutoff_conditions() {
    let mut r = crate::rng::rng(3, 4);
    for form in [Form::BSpline, Form::Casino, Form::Pade] {
        for cusp in [0.25, 0.5, -1.0] {
            let f = Radial::random(form, 2.5, cusp, &mut r);
            // the slope at coalescence is the Kato cusp, from the fast form and from a finite difference
            let d = 1e-7;
            assert!((f.eval(0.0).1 - cusp).abs() < 1e-12, "{form:?} u'(0) = {} for cusp {cusp}", f.eval(0.0).1);
            assert!(((reference::radial(&f, d).0 - reference::radial(&f, 0.0).0) / d - cusp).abs() < 1e-5);
            if form != Form::Pade {
                // u, u', u'' go to zero continuously at the cutoff
                let (u, du, d2u) = reference::radial(&f, 2.5 - 1e-9);
                assert!(u.abs() < 1e-12 && du.abs() < 1e-9 && d2u.abs() < 1e-5, "{form:?} at the cutoff: {u} {du} {d2u}");
            }
        }
    }
    // the cusp of the wave function itself: two electrons of opposite spin about to meet, d log J / dr -> 1/2
    let j = setup(Term::BSpline, 2, 0, false, 5);
    let mut pos = vec![1.0, 1.0 + 1e-9, 2.0, 2.0, 3.0, 3.0];
    let base = reference::log_value(&j, &pos);
    pos[1] += 1e-6;
    assert!(((reference::log_value(&j, &pos) - base) / 1e-6 - 0.5).abs() < 1e-4);
}

#[test]
fn gradients_and_laplacians_match_finite_differences() {
    for (term, periodic) in cases() {
        let j = setup(term, 7, 2, periodic, 7);
        let n = j.electrons;
        let pos = random_positions(&j, 1, 8);
        for i in [0, 4, 6] {
            let e = reference::electron(&j, &pos, i);
            let (mut lap, h, h2) = (0.0, 1e-5, 2e-3);
            for d in 0..3 {
                let shifted = |s: f64| {
                    let mut p = pos.clone();
                    p[d * n + i] += s;
                    reference::log_value(&j, &p)
                };
                let fd = (shifted(h) - shifted(-h)) / (2.0 * h);
                assert!((fd - e[2 + d]).abs() < 1e-6 * (1.0 + e[2 + d].abs()), "{term:?} grad {d} of {i}: fd {fd} analytic {}", e[2 + d]);
                lap += (shifted(h2) - 2.0 * shifted(0.0) + shifted(-h2)) / (h2 * h2);
            }
            assert!((lap - e[5]).abs() < 1e-4 * (1.0 + e[5].abs()), "{term:?} laplacian of {i}: fd {lap} analytic {}", e[5]);
        }
    }
}

#[test]
fn reference_ratio_is_the_change_of_log_j() {
    let j = setup(Term::U, 6, 1, true, 9);
    let pos = random_positions(&j, 2, 10);
    let m = random_moves(&j, &pos, 2, 3, 1.0, 11);
    let r = reference::ratios(&j, &pos, 2, &m);
    for (mi, &k) in m.electrons.iter().enumerate() {
        for w in 0..2 {
            let p0 = &pos[w * 18..(w + 1) * 18];
            let mut p1 = p0.to_vec();
            (0..3).for_each(|d| p1[d * 6 + k] = m.pos[(mi * 2 + w) * 3 + d]);
            let dl = reference::log_value(&j, &p1) - reference::log_value(&j, p0);
            assert!((r[(mi * 2 + w) * 4] - dl).abs() < 1e-12);
        }
    }
}

#[test]
fn cubic_stars_match_the_simple_cubic_shells() {
    // cumulative G vectors (one of each +-G) of the first 16 stars, as counted in papers/seed-003-casino.md
    let want = [3, 9, 13, 16, 28, 40, 46, 49, 61, 73, 85, 89, 101, 125, 128, 140];
    let stars = cubic_stars(16);
    let mut total = 0;
    for (s, w) in stars.iter().zip(want) {
        total += s.len();
        assert_eq!(total, w);
    }
    assert_eq!(stars.len(), 16);
    assert_eq!(max_stars(), 15);
}

/// The three operations on the CPU in precision (T, A) against the reference: vgl at the start, ratio of every
/// proposal, stored quantities after accepting them all.
fn cpu_errors<T: Real, A: Real>(j: &Jastrow<f64>, walkers: usize) -> Vec<Check> {
    let n = j.electrons;
    let pos = random_positions(j, walkers, 21);
    let m = random_moves(j, &pos, walkers, 5, 0.8, 22);
    let which: Vec<usize> = (0..n).collect();
    let f = Fast::<T>::new(j);
    let mut b = Batch::<T, A>::new(&pos, walkers, n);
    cpu::vgl(&f, &mut b);
    let tol = 1e3 * if T::EPS > 1e-10 { Precision::Single.eps() } else { Precision::Double.eps() };
    let mut c = vec![Check::compare("vgl", &b.pick(&which), &reference::electrons(j, &pos, walkers, &which), tol)];
    let mt = MovesT::<T>::new(&m);
    let mut out = vec![A::nan(); m.electrons.len() * walkers * 4];
    cpu::ratio(&f, &b, &mt, &mut out);
    c.push(Check::compare("ratio", &out.iter().map(|x| x.f64()).collect::<Vec<_>>(), &reference::ratios(j, &pos, walkers, &m), tol));
    cpu::accept(&f, &mut b, &mt);
    let moved = moved_positions(&pos, &m, walkers, n);
    c.push(Check::compare("accept", &b.pick(&which), &reference::electrons(j, &moved, walkers, &which), tol));
    c
}

#[test]
fn cpu_matches_reference_in_every_precision() {
    for (term, periodic) in cases() {
        let j = setup(term, 37, 3, periodic, 31);
        let all = [cpu_errors::<f64, f64>(&j, 3), cpu_errors::<f32, f32>(&j, 3), cpu_errors::<f32, f64>(&j, 3)];
        for (p, checks) in ["double", "single", "mixed"].iter().zip(all) {
            for c in checks {
                assert!(c.passed(), "{term:?} periodic={periodic} {p} {}: error {:.2e} > {:.2e}", c.quantity, c.error, c.tolerance);
            }
        }
    }
}

#[test]
fn a_wrong_coefficient_is_detected() {
    let j = setup(Term::P, 10, 0, true, 41);
    let mut bad = j.clone();
    bad.p.a[5] *= 1.001;
    let pos = random_positions(&j, 2, 42);
    let which: Vec<usize> = (0..10).collect();
    let f = Fast::<f64>::new(&bad);
    let mut b = Batch::<f64, f64>::new(&pos, 2, 10);
    cpu::vgl(&f, &mut b);
    assert!(!Check::compare("vgl", &b.pick(&which), &reference::electrons(&j, &pos, 2, &which), 1e-10).passed());
}

#[test]
fn p_term_is_invariant_under_lattice_translations() {
    let j = setup(Term::P, 12, 0, true, 51);
    let n = j.electrons;
    let pos = random_positions(&j, 1, 52);
    // every electron moved by its own lattice vector, and all of them by a common one
    let mut r = crate::rng::rng(53, 0);
    let shifted: Vec<f64> = pos.iter().map(|x| x + j.cell.side * (r.random_range(-3..=3) + 2) as f64).collect();
    let which: Vec<usize> = (0..n).collect();
    let eval = |p: &[f64]| {
        let mut b = Batch::<f64, f64>::new(p, 1, n);
        cpu::vgl(&Fast::new(&j), &mut b);
        b.pick(&which)
    };
    let (a, b) = (eval(&pos), eval(&shifted));
    assert!(Check::compare("p", &b, &a, 1e-12).passed());
    assert!((reference::log_value(&j, &pos) - reference::log_value(&j, &shifted)).abs() < 1e-10);
    // and not under a translation of one electron by a non-lattice vector
    let mut moved = pos.clone();
    moved[0] += 0.3 * j.cell.side;
    assert!(!Check::compare("p", &eval(&moved), &a, 1e-6).passed());
}

#[test]
fn gpu_matches_reference_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    for (term, periodic) in cases() {
        let j = setup(term, 37, 3, periodic, 61);
        let (n, walkers) = (j.electrons, 3);
        let pos = random_positions(&j, walkers, 62);
        let m = random_moves(&j, &pos, walkers, 4, 0.8, 63);
        let which: Vec<usize> = (0..n).collect();
        let mut g = gpu::GpuJastrow::<f64, f64>::new(&gpu, &j, walkers, m.electrons.len()).unwrap();
        g.set_positions(&pos).unwrap();
        g.set_moves(&m).unwrap();
        g.poison().unwrap();
        g.vgl().unwrap();
        let vgl = cpu::pick(&g.state().unwrap(), walkers, n, &which);
        assert!(Check::compare("vgl", &vgl, &reference::electrons(&j, &pos, walkers, &which), 1e-11).passed(), "{term:?} vgl");
        g.ratios().unwrap();
        let r: Vec<f64> = g.ratio_outputs().unwrap();
        assert!(Check::compare("ratio", &r, &reference::ratios(&j, &pos, walkers, &m), 1e-11).passed(), "{term:?} ratio");
        g.accepts().unwrap();
        let moved = moved_positions(&pos, &m, walkers, n);
        let st = cpu::pick(&g.state().unwrap(), walkers, n, &which);
        assert!(Check::compare("accept", &st, &reference::electrons(&j, &moved, walkers, &which), 1e-11).passed(), "{term:?} accept");
    }
}
