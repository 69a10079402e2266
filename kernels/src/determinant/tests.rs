use super::*;
use crate::Check;

/// A problem with the reference for every walker, and its transposed inverses as `t`.
struct Full {
    p: Problem,
    t: Vec<f64>,
}

impl std::ops::Deref for Full {
    type Target = Problem;
    fn deref(&self) -> &Problem {
        &self.p
    }
}

fn problem(n: usize, walkers: usize, seed: u64) -> Full {
    let all: Vec<usize> = (0..walkers).collect();
    let p = Problem::new(n, walkers, &all, seed).unwrap();
    let t = reference::transpose(&p.inv, n);
    Full { p, t }
}

/// Run a move sequence on an engine and compare inverse, ratios and gradients with the reference.
fn check_moves<E: Engine>(e: &mut E, p: &Full, delay: usize, accept: f64, tol: f64) {
    let steps = 0..2 * p.n + 3;
    let flags = accept_flags(steps.end, p.walkers, accept, 5);
    e.load(&p.a, &p.t, &flags).unwrap();
    e.set_delay(delay);
    run_moves(e, steps.clone(), delay, &flags, None).unwrap();
    let (t, r, g) = p.moves(steps, &flags);
    let (fr, fg) = e.ratios().unwrap();
    for c in [Check::compare("inverse", &e.inverse().unwrap(), &t, tol), Check::compare("ratio", &fr, &r, tol), Check::compare("gradient", &fg, &g, tol)] {
        assert!(c.passed(), "delay {delay}: {} error {:.3e} over {:.1e}", c.quantity, c.error, c.tolerance);
    }
}

#[test]
fn reference_ratio_is_the_ratio_of_determinants() {
    let p = problem(9, 1, 1);
    let (l0, s0) = {
        let (_, _, l, s) = reference::lu(&p.a, 9).unwrap();
        (l, s)
    };
    for q in [0, 4, 8] {
        let mut a1 = p.a.clone();
        a1[q * 9..(q + 1) * 9].copy_from_slice(&p.prop[q * 9..(q + 1) * 9]);
        let (_, _, l1, s1) = reference::lu(&a1, 9).unwrap();
        let (r, _) = reference::ratio(&p.inv, 9, q, &p.prop[q * 9..(q + 1) * 9], &p.grad);
        let exact = s0 * s1 * (l1 - l0).exp();
        assert!((r - exact).abs() < 1e-12 * exact.abs(), "q {q}: ratio {r} vs {exact}");
    }
}

#[test]
fn reference_inverse_and_update_are_inverses() {
    let p = problem(17, 1, 2);
    assert!(residual(&p.a, &p.t, 17) < 1e-13);
    // log|det| of a 2x2 by hand, and the sign of a permutation matrix.
    let (_, l, s) = reference::inverse(&[2.0, 1.0, 4.0, 3.0], 2).unwrap();
    assert!((l - 2f64.ln()).abs() < 1e-15 && s == 1.0);
    let (_, l, s) = reference::inverse(&[0.0, 1.0, 1.0, 0.0], 2).unwrap();
    assert!(l.abs() < 1e-15 && s == -1.0);
    // Sherman-Morrison against a fresh inverse of the changed matrix.
    let (mut a, mut inv) = (p.a.clone(), p.inv.clone());
    reference::sherman_morrison(&mut a, &mut inv, 17, 5, &p.prop[5 * 17..6 * 17]);
    let (fresh, _, _) = reference::inverse(&a, 17).unwrap();
    assert!(Check::compare("inverse", &inv, &fresh, 1e-13).passed());
}

#[test]
fn test_matrices_are_diagonally_dominant() {
    let n = 50;
    let a = random_matrices(n, 2, 3);
    for row in a.chunks(n).enumerate() {
        let (i, r) = (row.0 % n, row.1);
        let off: f64 = r.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, x)| x.abs()).sum();
        assert!(r[i].abs() >= 1.0 && off < 1.0, "row {i}: diagonal {} off-diagonal sum {off}", r[i]);
    }
}

#[test]
fn singular_matrix_is_an_error_not_nans() {
    let n = 6;
    let mut a = random_matrices(n, 2, 4);
    let (r0, r3) = (n * n, n * n + 3 * n); // rows 0 and 3 of walker 1
    let row: Vec<f64> = a[r0..r0 + n].to_vec();
    a[r3..r3 + n].copy_from_slice(&row); // walker 1: rows 0 and 3 equal
    assert!(reference::inverse(&a[n * n..], n).is_err());
    let prop = random_matrices(n, 2, 5);
    let grad = random_gradients(n, 2, 5);
    let expect_singular = |r: Result<(), DetError>| match r {
        Err(DetError::Singular { walker: 1, .. }) => {}
        other => panic!("expected a singular-matrix error for walker 1, got {other:?}"),
    };
    let mut e = cpu::CpuDets::<f64, f64>::new(n, &prop, &grad, 1);
    e.load(&a, &a, &[]).unwrap();
    expect_singular(e.invert());
    let mut e = cpu::CpuDets::<f32, f32>::new(n, &prop, &grad, 1);
    e.load(&a, &a, &[]).unwrap();
    expect_singular(e.invert());
    let msg = DetError::Singular { walker: 1, column: 3 }.to_string();
    assert!(msg.contains("singular") && msg.contains("walker 1"));
}

#[test]
fn cpu_matches_reference_in_every_precision() {
    let p = problem(24, 3, 6);
    for delay in [1, 4, 7] {
        let mut e = cpu::CpuDets::<f64, f64>::new(p.n, &p.prop, &p.grad, 8);
        check_moves(&mut e, &p, delay, 0.6, 1e-12);
        let mut e = cpu::CpuDets::<f32, f32>::new(p.n, &p.prop, &p.grad, 8);
        check_moves(&mut e, &p, delay, 0.6, 2e-5);
        let mut e = cpu::CpuDets::<f32, f64>::new(p.n, &p.prop, &p.grad, 8);
        check_moves(&mut e, &p, delay, 0.6, 2e-5);
    }
}

#[test]
fn cpu_inversion_matches_reference() {
    let n = 40;
    let a = random_matrices(n, 3, 7);
    let (inv, logdet, sign) = reference::invert_all(&a, n).unwrap();
    let t = reference::transpose(&inv, n);
    let prop = random_matrices(n, 3, 8);
    let grad = random_gradients(n, 3, 8);
    let mut e = cpu::CpuDets::<f64, f64>::new(n, &prop, &grad, 1);
    e.load(&a, &vec![0.0; a.len()], &[]).unwrap();
    e.invert().unwrap();
    let (l, s) = e.logdets().unwrap();
    assert!(Check::compare("inverse", &e.inverse().unwrap(), &t, 1e-13).passed());
    assert!(Check::compare("logdet", &l, &logdet, 1e-13).passed());
    assert_eq!(s, sign);
    assert!(sign.iter().any(|&s| s < 0.0) || sign.iter().any(|&s| s > 0.0));
    let mut e = cpu::CpuDets::<f32, f32>::new(n, &prop, &grad, 1);
    e.load(&a, &vec![0.0; a.len()], &[]).unwrap();
    e.invert().unwrap();
    assert!(Check::compare("inverse", &e.inverse().unwrap(), &t, 1e-5).passed());
}

#[test]
fn mixed_recompute_restores_double_accuracy() {
    // After moves with an f64 re-inversion at the end, the f32-stored inverse is the f64 inverse rounded once.
    let p = problem(32, 2, 9);
    let steps = 0..32;
    let flags = accept_flags(32, 2, 1.0, 3);
    let (t, _, _) = p.moves(steps.clone(), &flags);
    let mut e = cpu::CpuDets::<f32, f64>::new(p.n, &p.prop, &p.grad, 1);
    e.load(&p.a, &p.t, &flags).unwrap();
    run_moves(&mut e, steps, 1, &flags, Some(32)).unwrap();
    let c = Check::compare("inverse", &e.inverse().unwrap(), &t, f32::EPSILON as f64);
    assert!(c.passed(), "error {:.2e}", c.error);
}

#[test]
fn a_wrong_update_is_detected() {
    // Accepting one move the reference rejected must fail the comparison: the checks can fail.
    let p = problem(16, 2, 10);
    let steps = 0..16;
    let flags = accept_flags(16, 2, 0.5, 11);
    let mut wrong = flags.clone();
    let i = wrong.iter().position(|&f| f == 0).unwrap();
    wrong[i] = 1;
    let mut e = cpu::CpuDets::<f64, f64>::new(p.n, &p.prop, &p.grad, 4);
    e.load(&p.a, &p.t, &wrong).unwrap();
    e.set_delay(4);
    run_moves(&mut e, steps.clone(), 4, &wrong, None).unwrap();
    let (t, _, _) = p.moves(steps, &flags);
    assert!(!Check::compare("inverse", &e.inverse().unwrap(), &t, 1e-6).passed());
}

#[test]
fn gpu_matches_reference_when_present() {
    let Some(g) = crate::gpu::for_test() else { return };
    let p = problem(40, 3, 12);
    for delay in [1, 5] {
        let mut e = gpu::GpuDets::<f64, f64>::new(&g, p.n, &p.prop, &p.grad, 8, 2 * p.n + 3).unwrap();
        check_moves(&mut e, &p, delay, 0.6, 1e-12);
        let mut e = gpu::GpuDets::<f32, f32>::new(&g, p.n, &p.prop, &p.grad, 8, 2 * p.n + 3).unwrap();
        check_moves(&mut e, &p, delay, 0.6, 2e-5);
        let mut e = gpu::GpuDets::<f32, f64>::new(&g, p.n, &p.prop, &p.grad, 8, 2 * p.n + 3).unwrap();
        check_moves(&mut e, &p, delay, 0.6, 2e-5);
    }
    let mut e = gpu::GpuDets::<f64, f64>::new(&g, p.n, &p.prop, &p.grad, 1, 1).unwrap();
    e.load(&p.a, &vec![0.0; p.a.len()], &[0; 3]).unwrap();
    e.invert().unwrap();
    let (_, logdet, _) = reference::invert_all(&p.a, p.n).unwrap();
    assert!(Check::compare("inverse", &e.inverse().unwrap(), &p.t, 1e-12).passed());
    assert!(Check::compare("logdet", &e.logdets().unwrap().0, &logdet, 1e-12).passed());
    let mut singular = p.a.clone();
    let row: Vec<f64> = singular[p.n * p.n..p.n * p.n + p.n].to_vec();
    singular[p.n * p.n + 7 * p.n..p.n * p.n + 8 * p.n].copy_from_slice(&row);
    e.load(&singular, &p.t, &[0; 3]).unwrap();
    assert!(matches!(e.invert(), Err(DetError::Singular { walker: 1, .. })));
}

/// From `solver_min_n` up the inversion goes through cuSOLVER on the solver's lanes: more matrices than lanes, so
/// some lanes take two; every inverse and log|det| against the reference, and a singular matrix on a lane's second
/// turn still flagged as that walker's.
#[test]
fn gpu_inverts_large_matrices_on_the_solver_lanes_when_present() {
    let Some(g) = crate::gpu::for_test() else { return };
    let (n, walkers) = (gpu::solver_min_n::<f64>(), crate::gpu::LANES + 3);
    let p = problem(n, walkers, 31);
    let mut e = gpu::GpuDets::<f64, f64>::new(&g, n, &p.prop, &p.grad, 1, 1).unwrap();
    e.load(&p.a, &vec![0.0; p.a.len()], &vec![0; walkers]).unwrap();
    e.invert().unwrap();
    let (_, logdet, _) = reference::invert_all(&p.a, n).unwrap();
    let c = Check::compare("inverse", &e.inverse().unwrap(), &p.t, 1e-9);
    assert!(c.passed(), "inverse error {:.2e}", c.error);
    let c = Check::compare("logdet", &e.logdets().unwrap().0, &logdet, 1e-12);
    assert!(c.passed(), "log|det| error {:.2e}", c.error);
    let bad = crate::gpu::LANES + 1;
    let mut singular = p.a.clone();
    let m = &mut singular[bad * n * n..(bad + 1) * n * n];
    let row = m[..n].to_vec();
    m[5 * n..6 * n].copy_from_slice(&row);
    e.load(&singular, &p.t, &vec![0; walkers]).unwrap();
    assert!(matches!(e.invert(), Err(DetError::Singular { walker, .. }) if walker == bad));
}

/// The textbook right-looking LU with partial pivoting, one pivot at a time (what `reference::lu` reorders).
fn textbook_lu(a: &[f64], n: usize) -> (Vec<f64>, Vec<usize>) {
    let (mut m, mut perm) = (a.to_vec(), (0..n).collect::<Vec<usize>>());
    for k in 0..n {
        let p = (k..n).max_by(|&x, &y| m[x * n + k].abs().total_cmp(&m[y * n + k].abs())).unwrap();
        for j in 0..n {
            m.swap(k * n + j, p * n + j);
        }
        perm.swap(k, p);
        for i in k + 1..n {
            m[i * n + k] /= m[k * n + k];
            for j in k + 1..n {
                m[i * n + j] -= m[i * n + k] * m[k * n + j];
            }
        }
    }
    (m, perm)
}

/// Sizes that end mid-panel and mid-strip, with several of each.
const ODD_N: usize = 2 * reference::STRIP + reference::PANEL / 2 + 3;

#[test]
fn reference_lu_is_the_textbook_elimination_bit_for_bit() {
    // a general matrix (not dominant), so rows are exchanged at most pivots
    let n = ODD_N;
    let mut a = vec![0.0; n * n];
    crate::rng::fill_uniform(&mut a, 21, -1.0, 1.0, |x| x);
    let (m, perm, _, _) = reference::lu(&a, n).unwrap();
    let (tm, tperm) = textbook_lu(&a, n);
    assert_eq!(perm, tperm);
    assert!(m.iter().zip(&tm).all(|(x, y)| x.to_bits() == y.to_bits()), "the panel order changed an entry's arithmetic");
    assert!(perm.iter().enumerate().filter(|(i, p)| i != *p).count() > n / 2);
}

#[test]
fn reference_inverse_matches_closed_forms() {
    let n = ODD_N;
    // (1) A = P (I + u v^T), rows permuted so that elimination must pivot: A^-1 = (I - u v^T / (1 + v.u)) P^T,
    // entry (r, c) = B^-1[r][pi(c)] where row c of A is row pi(c) of B; det A = sign(pi) (1 + v.u).
    let mut uv = vec![0.0; 2 * n];
    crate::rng::fill_uniform(&mut uv, 22, -1.0, 1.0, |x| x / (n as f64).sqrt());
    let (u, v) = uv.split_at(n);
    let vu: f64 = u.iter().zip(v).map(|(x, y)| x * y).sum();
    let pi: Vec<usize> = (0..n).map(|c| (11 * c + 3) % n).collect();
    let mut sorted = pi.clone();
    sorted.sort_unstable();
    assert!(sorted.iter().enumerate().all(|(i, &x)| i == x), "not a permutation: 11 divides {n}");
    let b = |r: usize, c: usize| f64::from(r == c) + u[r] * v[c];
    let binv = |r: usize, c: usize| f64::from(r == c) - u[r] * v[c] / (1.0 + vu);
    let a: Vec<f64> = (0..n * n).map(|x| b(pi[x / n], x % n)).collect();
    let exact: Vec<f64> = (0..n * n).map(|x| binv(x / n, pi[x % n])).collect();
    let (inv, logdet, sign) = reference::inverse(&a, n).unwrap();
    let c = Check::compare("inverse", &inv, &exact, 1e-14);
    assert!(c.passed(), "permuted rank-one update: error {:.2e}", c.error);
    // sign of pi from its cycles: each cycle of length L is L - 1 transpositions
    let mut seen = vec![false; n];
    let mut parity = 0;
    for s in 0..n {
        let mut len = 0;
        let mut i = s;
        while !seen[i] {
            seen[i] = true;
            i = pi[i];
            len += 1;
        }
        parity += len.max(1) - 1;
    }
    let det_sign = if parity % 2 == 0 { 1.0 } else { -1.0 } * (1.0 + vu).signum();
    assert!((logdet - (1.0 + vu).abs().ln()).abs() < 1e-13 && sign == det_sign, "logdet {logdet} sign {sign}");
    // (2) the 1D Laplacian tridiag(-1, 2, -1): (A^-1)_ij = min(i, j) (n + 1 - max(i, j)) / (n + 1) (1-based), det = n + 1.
    // Its condition number is about 4 (n + 1)^2 / pi^2 = 1e4: the normwise error may be that many epsilons.
    let a: Vec<f64> = (0..n * n).map(|x| match (x / n).abs_diff(x % n) { 0 => 2.0, 1 => -1.0, _ => 0.0 }).collect();
    let exact: Vec<f64> = (0..n * n).map(|x| ((x / n).min(x % n) + 1) as f64 * (n - (x / n).max(x % n)) as f64 / (n + 1) as f64).collect();
    let (inv, logdet, sign) = reference::inverse(&a, n).unwrap();
    let c = Check::compare("inverse", &inv, &exact, 1e4 * f64::EPSILON);
    assert!(c.passed(), "Laplacian: error {:.2e}", c.error);
    assert!((logdet - ((n + 1) as f64).ln()).abs() < 1e-12 && sign == 1.0);
}

#[test]
fn reference_inverse_is_independent_of_faer() {
    // The CPU engine inverts with faer; the reference must agree to rounding, and not be the same numbers.
    let n = ODD_N;
    let a = random_matrices(n, 1, 23);
    let (inv, _, _) = reference::inverse(&a, n).unwrap();
    let mut e = cpu::CpuDets::<f64, f64>::new(n, &a, &a[..3 * n], 1);
    e.load(&a, &a, &[]).unwrap();
    e.invert().unwrap();
    let c = Check::compare("inverse", &e.inverse().unwrap(), &reference::transpose(&inv, n), 16.0 * f64::EPSILON * (n as f64).sqrt());
    assert!(c.passed(), "faer vs reference: {:.2e}", c.error);
    assert!(c.error > 0.0, "the reference reproduced faer bit for bit: it is not an independent computation");
}
