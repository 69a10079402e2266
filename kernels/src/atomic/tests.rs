use super::*;
use crate::basis::power;
use crate::rng;
use crate::gpu::PointKernel;
use crate::Check;

/// A set that uses every path: two centres; contracted and single Slater functions, one with powers (x, xy);
/// contracted Gaussian s and p shells, a d shell and an L = 4 function; `orbitals` orbitals of random coefficients.
fn mixed(orbitals: usize) -> AtomicOrbitals {
    use rand::Rng;
    let centers = vec![[0.1, -0.2, 0.3], [0.9, 0.4, -0.6]];
    let (mut functions, mut exps, mut coefs) = (vec![], vec![], vec![]);
    let mut add = |center: usize, radial: Radial, powers: &[[u32; 3]], prims: &[(f64, f64)]| {
        let start = exps.len();
        for &(e, c) in prims {
            exps.push(e);
            coefs.push(c);
        }
        for &p in powers {
            functions.push(Function { center, powers: p, radial, prims: start..exps.len() });
        }
    };
    add(0, Radial::Slater, &[[0, 0, 0]], &[(1.7, 0.8), (0.6, 0.3)]);
    add(1, Radial::Slater, &[[1, 0, 0]], &[(1.1, 1.0)]);
    add(0, Radial::Slater, &[[1, 1, 0]], &[(0.9, 0.5)]);
    add(1, Radial::Gaussian, &[[0, 0, 0]], &[(13.0, 0.2), (2.1, 0.5), (0.4, 0.4)]);
    add(0, Radial::Gaussian, &[[1, 0, 0], [0, 1, 0], [0, 0, 1]], &[(1.3, 0.6), (0.35, -0.5)]);
    add(1, Radial::Gaussian, &[[2, 0, 0], [1, 1, 0], [1, 0, 1], [0, 2, 0], [0, 1, 1], [0, 0, 2]], &[(0.8, 1.0)]);
    add(0, Radial::Gaussian, &[[2, 1, 1]], &[(0.5, 1.0)]);
    let mut r = rng::rng(5, 0xA70);
    let coef = (0..orbitals).map(|_| (0..functions.len()).map(|_| r.random_range(-1.0..1.0)).collect()).collect();
    AtomicOrbitals::new(centers, functions, exps, coefs, coef).unwrap()
}

/// The three atoms (H2 at the qmc driver's validation bond and exponent) and the mixed set.
fn sets() -> Vec<(&'static str, AtomicOrbitals)> {
    vec![("he", AtomicOrbitals::helium()), ("h2", AtomicOrbitals::h2(1.4, 1.19)), ("be", AtomicOrbitals::beryllium()), ("mixed", mixed(5))]
}

/// `count` points around the centres of `o`, at distances log-uniform in [0.05, 5] bohr, random directions.
fn points(o: &AtomicOrbitals, count: usize, seed: u64) -> Vec<f64> {
    use rand::Rng;
    let mut r = rng::rng(seed, 0x9017);
    let mut pos = vec![];
    for i in 0..count {
        let c = o.centers[i % o.centers.len()];
        let g = rng::gaussian3(&mut r);
        let norm = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
        let dist = (r.random_range(0.05f64.ln()..5.0f64.ln())).exp();
        pos.extend((0..3).map(|k| c[k] + dist * g[k] / norm));
    }
    pos
}

/// Compare component by component (`[point][5][stride]`): each has its own scale (Check's max |reference|), so the
/// large Laplacians near a nucleus do not hide an error of the values.
fn compare<A: Copy + Into<f64>>(what: &str, out: &[A], reference: &[f64], stride: usize, tol: f64) -> Vec<Check> {
    (0..5)
        .map(|c| {
            let pick = |v: &[f64]| v.chunks_exact(stride).skip(c).step_by(5).flatten().copied().collect::<Vec<f64>>();
            let o: Vec<f64> = out.iter().map(|&x| x.into()).collect();
            Check::compare(&format!("{what} component {c}"), &pick(&o), &pick(reference), tol)
        })
        .collect()
}

fn assert_passed(checks: &[Check]) {
    for c in checks {
        assert!(c.passed(), "{c:?}");
    }
}

#[test]
fn cpu_matches_reference_in_both_layouts() {
    for (name, o) in sets() {
        let pos = points(&o, 24, 1);
        for stride in [64, 128] {
            let reference = reference::evaluate(&o, &pos, stride);
            let mut out = vec![f64::NAN; reference.len()];
            o.evaluate::<f64>(&pos, stride, &mut out);
            assert_passed(&compare(name, &out, &reference, stride, 1e-13));
            // padding entries are written, zero
            assert!(out.chunks_exact(stride).all(|row| row[o.len()..].iter().all(|&x| x == 0.0)), "{name}");
        }
        // the qmc driver's layout holds the same numbers
        let (n, stride) = (o.len(), 64);
        let mut out = vec![0.0; 5 * stride];
        o.evaluate_point::<f64>([pos[3], pos[4], pos[5]], stride, &mut out);
        let (mut v, mut g, mut l) = (vec![0.0; n], vec![0.0; 3 * n], vec![0.0; n]);
        o.vgl::<f64>([pos[3], pos[4], pos[5]], &mut v, &mut g, &mut l);
        for j in 0..n {
            assert_eq!([v[j], g[j], g[n + j], g[2 * n + j], l[j]], [out[j], out[stride + j], out[2 * stride + j], out[3 * stride + j], out[4 * stride + j]], "{name}");
        }
    }
    // at the nucleus (r = 0) the Gaussians are smooth: Be there too
    let be = AtomicOrbitals::beryllium();
    let reference = reference::evaluate(&be, &[0.0; 3], 64);
    let mut out = vec![f64::NAN; reference.len()];
    be.evaluate::<f64>(&[0.0; 3], 64, &mut out);
    assert_passed(&compare("be at the nucleus", &out, &reference, 64, 1e-13));
}

/// A first-order bound on the rounding error of an evaluation in unit roundoff u, per output entry
/// (`[point][5][stride]`), from the terms it sums. Primitive n of function f gives orbital j the term C_jf a_n g_n
/// (g_n = exp(-x_n), x_n = b_n r^2 or zeta_n r) times a polynomial factor, which in absolute values is |P| for the
/// value, |dP/dx_k| + |d_k| |P| s_n for gradient k and |lap P| + |P| w_n for the Laplacian (s_n = 2 b_n,
/// w_n = 4 b_n^2 r^2 + 2 (2L + 3) b_n for a Gaussian; s_n = zeta_n / r, w_n = zeta_n^2 + 2 (L + 1) zeta_n / r for a
/// Slater function: each part of a difference counted, so a cancellation inside a term is covered). Its error, to
/// first order in u:
/// - x_n carries at most 7 relative roundings (the displacement rounded, its squares and their sum or the square
///   root, the exponent rounded, the product), which change g_n by a relative 7 u x_n;
/// - every other rounding is of one factor or product of the term: exp itself (2 ulp, 4 u), a_n, C_jf and their
///   products with g_n (3 u), the powers in P (2 L u) and the products making the output (at most 9 u): 16 + 2 L;
/// - the sums over primitives and functions and of the two parts of a gradient or Laplacian add (m - 1) u sum |terms|
///   for m terms: at most primitives + functions roundings.
///
/// So |error| <= u sum_terms |term| (16 + 2 L + primitives + functions + 7 x_n), with L, primitives and functions the
/// largest of the set.
fn rounding_bound(o: &AtomicOrbitals, pos: &[f64], stride: usize, u: f64) -> Vec<f64> {
    let degree = o.functions.iter().map(|f| f.powers.iter().sum::<u32>()).max().unwrap() as f64;
    let k = 16.0 + 2.0 * degree + o.functions.iter().map(|f| f.prims.len()).max().unwrap() as f64 + o.functions.len() as f64;
    let mut out = vec![0.0; pos.len() / 3 * 5 * stride];
    for (r, b) in pos.chunks_exact(3).zip(out.chunks_exact_mut(5 * stride)) {
        for (j, row) in o.coef.iter().enumerate() {
            for (f, &c) in o.functions.iter().zip(row) {
                let a = o.centers[f.center];
                let d = [0, 1, 2].map(|i| r[i] - a[i]);
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                let dist = r2.sqrt();
                let [px, py, pz] = [0, 1, 2].map(|i| power::<f64>(d[i], f.powers[i]).map(f64::abs));
                let p = px[0] * py[0] * pz[0];
                let dp = [px[1] * py[0] * pz[0], px[0] * py[1] * pz[0], px[0] * py[0] * pz[1]];
                let lap_p = px[2] * py[0] * pz[0] + px[0] * py[2] * pz[0] + px[0] * py[0] * pz[2];
                let l = f.powers.iter().sum::<u32>() as f64;
                for q in f.prims.clone() {
                    let x = o.exps[q];
                    let (arg, s, w) = match f.radial {
                        Radial::Gaussian => (x * r2, 2.0 * x, 4.0 * x * x * r2 + 2.0 * (2.0 * l + 3.0) * x),
                        Radial::Slater => (x * dist, x / dist, x * x + 2.0 * (l + 1.0) * x / dist),
                    };
                    let t = (c * o.coefs[q]).abs() * (-arg).exp() * u * (k + 7.0 * arg);
                    b[j] += t * p;
                    for i in 0..3 {
                        b[(1 + i) * stride + j] += t * (dp[i] + d[i].abs() * p * s);
                    }
                    b[4 * stride + j] += t * (lap_p + p * w);
                }
            }
        }
    }
    out
}

/// The largest |fast - reference| / bound over the entries (0 / 0 counts 0), or infinity for a non-finite entry.
fn worst(fast: &[f64], reference: &[f64], bound: &[f64]) -> f64 {
    fast.iter().zip(reference).zip(bound).map(|((&a, &r), &b)| if a.is_finite() { if a == r { 0.0 } else { (a - r).abs() / b } } else { f64::INFINITY }).fold(0.0, f64::max)
}

/// f32 evaluation within its rounding bound at every entry, f64 within the same bound in f64's u (the bound is
/// derived for any precision), and the bound not so loose that a coefficient wrong by 1e-4 would pass it.
#[test]
fn single_precision_is_within_its_rounding_bound() {
    let u32 = f32::EPSILON as f64 / 2.0;
    for (name, o) in sets() {
        let pos = points(&o, 40, 2);
        let stride = 64;
        let reference = reference::evaluate(&o, &pos, stride);
        let mut o32 = vec![f32::NAN; reference.len()];
        o.evaluate::<f32>(&pos, stride, &mut o32);
        let o32: Vec<f64> = o32.iter().map(|&x| x as f64).collect();
        let w = worst(&o32, &reference, &rounding_bound(&o, &pos, stride, u32));
        assert!(w <= 1.0, "{name}: f32 error at {w:.3} of its bound");
        let mut o64 = vec![f64::NAN; reference.len()];
        o.evaluate::<f64>(&pos, stride, &mut o64);
        let w64 = worst(&o64, &reference, &rounding_bound(&o, &pos, stride, f64::EPSILON / 2.0));
        assert!(w64 <= 1.0, "{name}: f64 error at {w64:.3} of its bound");
        let mut bad = o.clone();
        bad.coef[0][0] *= 1.0 + 1e-4;
        bad.evaluate::<f64>(&pos, stride, &mut o64);
        let w = worst(&o64, &reference, &rounding_bound(&o, &pos, stride, u32));
        assert!(w > 1.0, "{name}: a coefficient off by 1e-4 passes the f32 bound ({w:.3})");
    }
}

/// How far (in units of its tolerance) the gradient and Laplacian in `out` (`[5][stride]` at point r) are from
/// central differences of the values `value(point)` (`[5][stride]` rows, component 0 read). Richardson: the
/// difference D(h) of step h has error c h^2 + O(h^4), so D(h) - D(h/2) = 3/4 c h^2 and D(h/2) is off by a third of
/// |D(h) - D(h/2)|; the tolerance is that difference whole (three times the estimate) plus the rounding of D(h/2):
/// with e the largest rounding bound of a value on the stencil (`rounding_bound` in f64, which counts the terms that
/// cancel near a node, not the value's own size), e / (h/2) for a gradient and 3 x 4 e / (h/2)^2 for the Laplacian.
fn derivative_misfit(o: &AtomicOrbitals, stride: usize, r: [f64; 3], h: f64, out: &[f64], value: &dyn Fn([f64; 3]) -> Vec<f64>) -> f64 {
    let u = f64::EPSILON / 2.0;
    let hf = h / 2.0;
    let shifted = |d: usize, s: f64| {
        let mut p = r;
        p[d] += s;
        p
    };
    let v0 = value(r);
    let stencil: Vec<f64> = std::iter::once(r).chain((0..3).flat_map(|d| [shifted(d, hf), shifted(d, -hf)])).flatten().collect();
    let bound = rounding_bound(o, &stencil, stride, u);
    let mut worst = 0.0f64;
    for j in 0..o.len() {
        let e = bound.chunks_exact(5 * stride).map(|b| b[j]).fold(0.0, f64::max);
        // [gx, gy, gz, lap] by the differences of one step
        let diff = |step: f64| {
            let (mut g, mut lap) = ([0.0; 3], 0.0);
            for (d, gd) in g.iter_mut().enumerate() {
                let (plus, minus) = (value(shifted(d, step))[j], value(shifted(d, -step))[j]);
                *gd = (plus - minus) / (2.0 * step);
                lap += (plus - 2.0 * v0[j] + minus) / (step * step);
            }
            [g[0], g[1], g[2], lap]
        };
        let (coarse, fine) = (diff(h), diff(hf));
        for c in 0..4 {
            let rounding = if c < 3 { e / hf } else { 12.0 * e / (hf * hf) };
            let tol = (coarse[c] - fine[c]).abs() + rounding;
            worst = worst.max((out[(1 + c) * stride + j] - fine[c]).abs() / tol);
        }
    }
    worst
}

/// Gradient and Laplacian are the derivatives of the value, in the fast code and the reference; a Laplacian of the
/// wrong sign, gradients of swapped axes or a Laplacian 1% off (planted in the outputs) are caught.
#[test]
fn gradient_and_laplacian_are_the_derivatives_of_the_value() {
    let stride = 64;
    for (name, o) in sets() {
        // 0.05 bohr and more from the nuclei, where the Slater functions have their cusp
        let pos = points(&o, 12, 3);
        let fast = |p: [f64; 3]| {
            let mut out = vec![0.0; 5 * stride];
            o.evaluate_point::<f64>(p, stride, &mut out);
            out
        };
        let slow = |p: [f64; 3]| reference::evaluate(&o, &p, stride);
        let (mut planted_sign, mut planted_axes, mut planted_scale) = (0.0f64, 0.0f64, 0.0f64);
        for r in pos.chunks_exact(3) {
            let r = [r[0], r[1], r[2]];
            // a step of 1e-3 of the tightest width (1/sqrt(b) or 1/zeta, taken at least 0.02) and of the distance to the
            // nearest nucleus
            let widths = o.functions.iter().flat_map(|f| f.prims.clone().map(|q| if f.radial == Radial::Gaussian { 1.0 / o.exps[q].sqrt() } else { 1.0 / o.exps[q] }));
            let width = widths.fold(1.0, f64::min);
            let dist = o.centers.iter().map(|c| ((r[0] - c[0]).powi(2) + (r[1] - c[1]).powi(2) + (r[2] - c[2]).powi(2)).sqrt()).fold(f64::INFINITY, f64::min);
            let h = 1e-3 * width.max(0.02).min(dist);
            let out = fast(r);
            for eval in [&fast as &dyn Fn([f64; 3]) -> Vec<f64>, &slow] {
                let w = derivative_misfit(&o, stride, r, h, &out, eval);
                assert!(w <= 1.0, "{name} at {r:?}: derivatives off by {w:.3} of the tolerance");
            }
            let plant = |f: &dyn Fn(&mut Vec<f64>)| {
                let mut bad = out.clone();
                f(&mut bad);
                derivative_misfit(&o, stride, r, h, &bad, &fast)
            };
            planted_sign = planted_sign.max(plant(&|b| b[4 * stride..].iter_mut().for_each(|x| *x = -*x)));
            planted_axes = planted_axes.max(plant(&|b| {
                let (gx, rest) = b[stride..].split_at_mut(stride);
                gx.swap_with_slice(&mut rest[..stride]);
            }));
            planted_scale = planted_scale.max(plant(&|b| b[4 * stride..].iter_mut().for_each(|x| *x *= 1.01)));
        }
        assert!(planted_sign > 1.0 && planted_axes > 1.0 && planted_scale > 1.0, "{name}: a planted error passes ({planted_sign}, {planted_axes}, {planted_scale})");
    }
}

#[test]
fn reference_detects_a_wrong_kernel() {
    let o = mixed(5);
    let pos = points(&o, 10, 4);
    let reference = reference::evaluate(&o, &pos, 64);
    let wrong: [&dyn Fn(&mut AtomicOrbitals); 4] = [
        &|b| b.exps[3] *= 1.0 + 1e-6,
        &|b| b.coefs[0] *= 1.0 + 1e-6,
        &|b| b.functions[5].powers = [0, 0, 1],
        &|b| b.functions[0].radial = Radial::Gaussian,
    ];
    for (i, f) in wrong.iter().enumerate() {
        let mut bad = o.clone();
        f(&mut bad);
        let mut out = vec![0.0; reference.len()];
        bad.evaluate::<f64>(&pos, 64, &mut out);
        assert!(compare("vgl", &out, &reference, 64, 1e-12).iter().any(|c| !c.passed()), "planted error {i} passes");
    }
}

#[test]
fn beryllium_reproduces_pyscf_and_bad_parts_are_rejected() {
    let atom = hf::HfOrbitals::parse(hf::BE_HF).unwrap();
    assert_eq!((atom.z, atom.orbitals.len(), atom.orbitals.functions.len()), (4.0, 2, 16));
    assert!((atom.kinetic + atom.potential - atom.energy).abs() < 1e-9);
    assert!(!atom.checks.is_empty());
    let mut out = vec![0.0; 5 * 64];
    for (p, want) in &atom.checks {
        atom.orbitals.evaluate_point::<f64>(*p, 64, &mut out);
        for k in 0..2 {
            assert!((out[k] - want[k]).abs() < 1e-10 * want[k].abs().max(1.0), "orbital {k} at {p:?}: {} vs {}", out[k], want[k]);
        }
    }
    let e = hf::HfOrbitals::parse("energy 1 2 3\nnucleus 4 0 0 0\nshell 0 1\n1.0 1.0\norbital 1 2\n").unwrap_err();
    assert_eq!(e, "an orbital has 2 coefficients for 1 basis functions");
    for bad in ["", "energy 1 2\n", "energy 1 2 3\nnucleus 4 0 0 0\nshell 0 2\n1.0 1.0\n", "energy 1 2 3\nnucleus 4 0 0 0\nshell 3 1\n1.0 1.0\norbital 1\n", "bogus\n"] {
        assert!(hf::HfOrbitals::parse(bad).is_err(), "accepted: {bad:?}");
    }
    let o = AtomicOrbitals::helium();
    let parts = |f: &dyn Fn(&mut AtomicOrbitals)| {
        let mut b = o.clone();
        f(&mut b);
        AtomicOrbitals::new(b.centers, b.functions, b.exps, b.coefs, b.coef)
    };
    assert!(parts(&|_| {}).is_ok());
    for (bad, says) in [
        (parts(&|b| b.coef.clear()), "at least one basis function and one orbital"),
        (parts(&|b| b.coef[0].push(1.0)), "an orbital has 2 coefficients for 1 basis functions"),
        (parts(&|b| b.functions[0].center = 1), "basis function 0"),
        (parts(&|b| b.functions[0].prims = 0..2), "basis function 0"),
        (parts(&|b| b.exps[0] = -1.0), "positive"),
        (parts(&|b| b.coefs.push(1.0)), "1 exponents for 2 contraction coefficients"),
        (parts(&|b| b.centers[0][1] = f64::NAN), "finite"),
    ] {
        assert!(bad.as_ref().is_err_and(|e| e.contains(says)), "{bad:?}: expected '{says}'");
    }
}

#[test]
fn flops_count_functions_primitives_and_orbitals() {
    // He: one function of one Slater primitive, one orbital: 30 + 12 + 10
    assert_eq!(AtomicOrbitals::helium().flops(2), 2.0 * 52.0);
    // Be: 16 functions, 9 + 9 + 1 + 1 + 6 + 6 Gaussian primitives over them (the two d shells of one each), 2 orbitals
    assert_eq!(AtomicOrbitals::beryllium().flops(1), (16 * 30 + 8 * 32 + 16 * 20) as f64);
    let o = mixed(3);
    assert_eq!(o.packed().len(), o.coef_at() + 3 * o.functions.len());
}

/// The GPU against the CPU, padding included (outputs poisoned first): f64 to 1e-12 per component; f32 within the
/// rounding bound of `single_precision_is_within_its_rounding_bound` against the f64 reference. Cases of one row
/// (He, H2, Be in rows of 64) and of two (70 orbitals of the mixed set in rows of 128).
#[test]
fn gpu_matches_cpu_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    // the orbitals' VGL on the GPU in A at `pos`, padding poisoned first
    let on_gpu = |o: &AtomicOrbitals, pos: &[f64], stride: usize| -> (Vec<f64>, Vec<f64>) {
        let mut g = gpu::GpuAtomicOrbitals::<f64>::new(&gpu, o, stride, 40).unwrap();
        g.rows_mut().poison().unwrap();
        g.rows_mut().set_positions(pos).unwrap();
        g.launch().unwrap();
        let out64 = g.rows().outputs().unwrap();
        let mut g = gpu::GpuAtomicOrbitals::<f32>::new(&gpu, o, stride, 40).unwrap();
        g.rows_mut().poison().unwrap();
        g.rows_mut().set_positions(pos).unwrap();
        g.launch().unwrap();
        (out64, g.rows().outputs().unwrap().iter().map(|&x| x as f64).collect())
    };
    let mut cases = sets();
    cases.push(("mixed-70", mixed(70)));
    for (name, o) in cases {
        let stride = o.len().next_multiple_of(64);
        let pos = points(&o, 33, 6);
        let reference = reference::evaluate(&o, &pos, stride);
        let mut cpu = vec![0.0; reference.len()];
        o.evaluate::<f64>(&pos, stride, &mut cpu);
        let (out64, out32) = on_gpu(&o, &pos, stride);
        let f64_checks = compare(&format!("{name} gpu f64"), &out64, &cpu, stride, 1e-12);
        assert_passed(&f64_checks);
        let w = worst(&out32, &reference, &rounding_bound(&o, &pos, stride, f32::EPSILON as f64 / 2.0));
        assert!(w <= 1.0, "{name} gpu f32: error at {w:.3} of its bound");
        let worst64 = f64_checks.iter().map(|c| c.error).fold(0.0, f64::max);
        eprintln!("atomic gpu {name}: f64 vs cpu {worst64:.2e} (largest component error), f32 at {w:.3} of its bound");
    }
    // Be with its cusps restored, at points inside and outside the spheres: f64 against the CPU, f32 against the
    // reference within `cusped_orbitals_match_the_reference`'s bound
    let (o, pos, stride) = (be_cusped(), cusp_points(40), 64);
    let reference = reference::evaluate(&o, &pos, stride);
    let mut cpu = vec![0.0; reference.len()];
    o.evaluate::<f64>(&pos, stride, &mut cpu);
    let (out64, out32) = on_gpu(&o, &pos, stride);
    assert_passed(&compare("be cusped gpu f64", &out64, &cpu, stride, 1e-12));
    assert_passed(&compare("be cusped gpu f32", &out32, &reference, stride, 2e-6));
}

/// `count` points about Be's nucleus: two in three inside the cusp sphere (log-uniform from 1e-4 bohr), the rest
/// from r_c to 1 bohr; random directions.
fn cusp_points(count: usize) -> Vec<f64> {
    use rand::Rng;
    let mut r = rng::rng(11, 0xC05);
    let mut pos = vec![];
    for i in 0..count {
        let g = rng::gaussian3(&mut r);
        let norm = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
        let dist = if i % 3 == 2 { r.random_range(0.2..1.0) } else { (r.random_range(1e-4f64.ln()..0.2f64.ln())).exp() };
        pos.extend(g.map(|x| dist * x / norm));
    }
    pos
}

/// Be's orbitals with the cusp restored (the qmc driver's and the batched engines' `be`).
fn be_cusped() -> AtomicOrbitals {
    hf::HfOrbitals::parse(hf::BE_HF).unwrap().cusped().unwrap()
}

/// The one-electron local energy -1/2 lap phi / phi - Z / r of orbital j at distance r from Be's nucleus along a
/// fixed direction, through the fast evaluation (`vgl`) in f64.
fn orbital_energy(o: &AtomicOrbitals, j: usize, r: f64) -> f64 {
    let dir = [0.48, 0.6, -0.64];
    let (mut v, mut g, mut l) = (vec![0.0; 2], vec![0.0; 6], vec![0.0; 2]);
    o.vgl::<f64>(dir.map(|x| x * r), &mut v, &mut g, &mut l);
    -0.5 * l[j] / v[j] - 4.0 / r
}

/// The restored cusp does what it is for: the slope -Z at the nucleus (a1 = -4), value, slope and curvature
/// continuous at r_c (so is the local energy), and each orbital's local energy flat inside r_c (within 0.5 Ha of its
/// value at r_c: the fit reached 0.10 and 0.21, module docs) down to 1e-6 bohr, where the Gaussians' swings by
/// hundreds to thousands of Ha (the uncorrected orbitals are held to miss by more than 100 Ha at 1e-3 bohr, so this
/// test would see a correction that did nothing). Outside r_c nothing changes, bit for bit.
#[test]
fn cusp_restores_the_slope_and_flattens_the_local_energy() {
    let (be, cusped) = (AtomicOrbitals::beryllium(), be_cusped());
    assert_eq!(cusped.cusps.len(), 2);
    for c in &cusped.cusps {
        let j = c.orbital;
        assert_eq!((c.p[1], c.rc, c.center), (-4.0, cusp::BE_RADIUS, 0));
        // continuity at r_c: either side of it within 1e-7 relative (the functions' slopes over 2e-9 r_c)
        let side = |o: &AtomicOrbitals, r: f64| {
            let (mut v, mut g, mut l) = (vec![0.0; 2], vec![0.0; 6], vec![0.0; 2]);
            o.vgl::<f64>([0.0, 0.0, r], &mut v, &mut g, &mut l);
            [v[j], g[4 + j], l[j]]
        };
        let (inside, outside) = (side(&cusped, c.rc * (1.0 - 1e-9)), side(&cusped, c.rc * (1.0 + 1e-9)));
        for k in 0..3 {
            assert!((inside[k] - outside[k]).abs() <= 1e-7 * outside[k].abs(), "orbital {j} component {k}: {} inside r_c, {} outside", inside[k], outside[k]);
        }
        let at_rc = orbital_energy(&cusped, j, c.rc * (1.0 + 1e-9));
        let mut worst: f64 = 0.0;
        for i in 0..=200 {
            let r = c.rc * (i as f64 / 200.0).max(1e-6 / c.rc);
            worst = worst.max((orbital_energy(&cusped, j, r) - at_rc).abs());
        }
        assert!(worst < 0.5, "orbital {j}: local energy off its value at r_c by {worst} Ha inside r_c");
        let bare = (orbital_energy(&be, j, 1e-3) - orbital_energy(&be, j, c.rc)).abs();
        assert!(bare > 100.0, "orbital {j}: the uncorrected local energy at 1e-3 bohr is within {bare} Ha of r_c's");
        for r in [0.2001, 0.3, 1.0, 4.0] {
            assert_eq!(side(&be, r), side(&cusped, r), "orbital {j} changed at r = {r}");
        }
    }
}

/// Be's determinant D(1s, 2s) vanishes where f = phi_2s / phi_1s takes one value at both electrons. The correction
/// changes f only inside r_c (bit for bit the same outside: `cusp_restores_the_slope_and_flattens_the_local_energy`),
/// and the same way for both electrons, so the node set is unchanged if, with and without it, each value f takes
/// inside r_c is taken nowhere else: f increases on [0, 2 r_c] and takes none of those values beyond (out to 20
/// bohr on a grid of 1e-3; the Gaussian 1s has spurious nodes near 3.7 and 5.4 bohr, where f swings through +-inf,
/// but only through values above 280 or below -900, against -0.18 to -0.17 inside r_c). The fixed-node energy of
/// the literature that the DMC checks use therefore stays the reference of the corrected trial function.
#[test]
fn cusp_keeps_the_node_of_the_determinant() {
    let ratio = |o: &AtomicOrbitals, r: f64| {
        let (mut v, mut g, mut l) = (vec![0.0; 2], vec![0.0; 6], vec![0.0; 2]);
        o.vgl::<f64>([0.0, r, 0.0], &mut v, &mut g, &mut l);
        v[1] / v[0]
    };
    let rc = cusp::BE_RADIUS;
    for (name, o) in [("bare", AtomicOrbitals::beryllium()), ("cusped", be_cusped())] {
        let radii: Vec<f64> = (0..=2000).map(|i| 2.0 * rc * i as f64 / 2000.0).collect();
        for w in radii.windows(2) {
            assert!(ratio(&o, w[1]) > ratio(&o, w[0]), "{name}: phi_2s / phi_1s not increasing between r = {} and {}", w[0], w[1]);
        }
        let inside = ratio(&o, 0.0)..=ratio(&o, rc);
        let again = (1..20_000).map(|i| rc + i as f64 * 1e-3).find(|&r| inside.contains(&ratio(&o, r)));
        assert!(again.is_none(), "{name}: f takes a value of [0, r_c] again at r = {again:?}");
    }
    // an orbital that is not spherical about the centre cannot take the correction (only its s-part would)
    let mut p = AtomicOrbitals::beryllium();
    let px = p.functions.len();
    p.functions.push(Function { center: 0, powers: [1, 0, 0], radial: Radial::Gaussian, prims: 0..1 });
    p.coef.iter_mut().for_each(|row| row.push(0.3));
    let e = p.cusp_corrected(0, 4.0, 0.2).unwrap_err();
    assert!(e.contains("not spherical"), "{e} ({px} functions before)");
    assert!(AtomicOrbitals::beryllium().cusp_corrected(1, 4.0, 0.2).unwrap_err().contains("centre 1"));
    assert!(AtomicOrbitals::beryllium().cusp_corrected(0, 4.0, -1.0).is_err());
}

/// The cusped orbitals against the reference (which evaluates the cusp apart, axis by axis) at points inside and
/// outside the spheres: f64 to 1e-13 of each component's largest value (as the uncorrected sets), and f32 within
/// 2e-6 of it. Inside r_c an entry is s exp(p) times a polynomial in r of five terms or fewer (and 1 / r): about 20
/// roundings of its terms, each within u of the entry's size and no cancellation (p' is near -Z, p near a0, so
/// every factor keeps its sign at r < r_c), so the error is below 20 u = 1.2e-6 of the entry (the measured worst is
/// printed). Also in the GPU layout's padding and the packed table.
#[test]
fn cusped_orbitals_match_the_reference() {
    let (o, pos) = (be_cusped(), cusp_points(60));
    let stride = 64;
    let reference = reference::evaluate(&o, &pos, stride);
    let mut out = vec![f64::NAN; reference.len()];
    o.evaluate::<f64>(&pos, stride, &mut out);
    assert_passed(&compare("be cusped f64", &out, &reference, stride, 1e-13));
    let mut o32 = vec![f32::NAN; reference.len()];
    o.evaluate::<f32>(&pos, stride, &mut o32);
    let checks = compare("be cusped f32", &o32, &reference, stride, 2e-6);
    eprintln!("be cusped f32: worst component error {:.2e}", checks.iter().map(|c| c.error).fold(0.0, f64::max));
    assert_passed(&checks);
    // the uncorrected sums would fail: the reference holds the cusp
    let mut bare = vec![0.0; reference.len()];
    AtomicOrbitals::beryllium().evaluate::<f64>(&pos, stride, &mut bare);
    assert!(compare("bare", &bare, &reference, stride, 1e-3).iter().any(|c| !c.passed()));
    let t = o.packed();
    assert_eq!(t.len(), o.cusp_at() + 2 * AtomicOrbitals::CUSP_RECORD);
    assert_eq!(&t[o.cusp_at()..o.cusp_at() + 6], &[0.0, 0.0, 0.0, 0.0, 0.2, o.cusps[0].sign]);
}
