use super::basis::BasisSet;
use super::*;
use crate::Check;

/// Normwise error of the CPU result of `algo` on `ops` against the reference (all rows).
fn cpu_error(algo: Algo, ops: &Operands) -> f64 {
    let s = ops.shape;
    let rows: Vec<usize> = (0..s.m).collect();
    let reference = reference::gemm_rows(&ops.a, &ops.b, s.k, s.n, &rows);
    let out: Vec<f64> = match algo {
        Algo::NaiveF32 => run32(ops, |a, b, c| cpu::gemm_plain::<f32, f32>(a, b, c, s)),
        Algo::KahanF32 => run32(ops, |a, b, c| cpu::gemm_kahan_f32(a, b, c, s)),
        Algo::BlasF32 => run32(ops, |a, b, c| cpu::gemm_blas::<f32>(a, b, c, s)),
        Algo::Mixed => {
            let mut c = vec![f64::NAN; s.m * s.n];
            cpu::gemm_plain::<f32, f64>(&ops.a32, &ops.b32, &mut c, s);
            c
        }
        Algo::F64 | Algo::BlasF64 => {
            let mut c = vec![f64::NAN; s.m * s.n];
            if algo == Algo::F64 {
                cpu::gemm_plain::<f64, f64>(&ops.a, &ops.b, &mut c, s);
            } else {
                cpu::gemm_blas::<f64>(&ops.a, &ops.b, &mut c, s);
            }
            c
        }
        Algo::BlasTf32 => unreachable!("no TF32 on the CPU"),
    };
    Check::compare(algo.name(), &out, &reference, 0.0).error
}

fn run32(ops: &Operands, f: impl Fn(&[f32], &[f32], &mut [f32])) -> Vec<f64> {
    let mut c = vec![f32::NAN; ops.shape.m * ops.shape.n];
    f(&ops.a32, &ops.b32, &mut c);
    c.into_iter().map(f64::from).collect()
}

#[test]
fn dot2_is_exact_where_plain_f64_fails() {
    // 1e16 + 1 - 1e16 loses the 1 in f64; twice-working precision keeps it.
    let a = [1e16, 1.0, -1e16, 3.0];
    let b = [1.0, 1.0, 1.0, 0.5];
    assert_eq!(reference::dot2(a.iter().copied(), b.iter().copied()), 2.5);
    let plain: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert_ne!(plain, 2.5);
    // A product's rounding error is kept too: (1 + 2^-30)^2 - 1 - 2^-29 = 2^-60 exactly.
    let x = 1.0 + 2f64.powi(-30);
    let d = reference::dot2([x, 1.0, 1.0].into_iter(), [x, -1.0, -(2f64.powi(-29))].into_iter());
    assert_eq!(d, 2f64.powi(-60));
}

#[test]
fn reference_rows_match_an_integer_product() {
    // Small integers: every product and sum is exact, so the reference must be exact.
    let s = Shape { m: 5, k: 7, n: 3 };
    let a: Vec<f64> = (0..35).map(|i| (i % 11) as f64 - 5.0).collect();
    let b: Vec<f64> = (0..21).map(|i| (i % 7) as f64 - 3.0).collect();
    let got = reference::gemm_rows(&a, &b, s.k, s.n, &[1, 4]);
    for (idx, &r) in [1usize, 4].iter().enumerate() {
        for col in 0..s.n {
            let exact: f64 = (0..s.k).map(|p| a[r * s.k + p] * b[p * s.n + col]).sum();
            assert_eq!(got[idx * s.n + col], exact);
        }
    }
}

#[test]
fn cpu_gemm_matches_reference_in_every_algo() {
    // Odd sizes: rows not a multiple of the row block, columns not of any vector width.
    let ops = Operands::uniform(Shape { m: 23, k: 301, n: 19 }, 5);
    for algo in Algo::ALL.into_iter().filter(|a| a.on_cpu()) {
        let err = cpu_error(algo, &ops);
        let tol = algo.tolerance(ops.shape.k);
        assert!(err <= tol, "{algo}: error {err:.3e} over tolerance {tol:.3e}");
    }
    // f64 and mixed are far better than single: the tolerances are not loose enough to hide a wrong type.
    assert!(cpu_error(Algo::F64, &ops) < 1e-13);
    assert!(cpu_error(Algo::Mixed, &ops) < 2.0 * f32::EPSILON as f64);
}

#[test]
fn kahan_beats_naive_single_on_a_long_inner_dimension() {
    // Fig. 5 of the paper: positive operands, so the naive f32 error grows with k while Kahan's stays at a few
    // eps. If the compensation were optimised away, Kahan would equal naive and this fails.
    let ops = Operands::uniform(Shape { m: 6, k: 200_000, n: 5 }, 9);
    let naive = cpu_error(Algo::NaiveF32, &ops);
    let kahan = cpu_error(Algo::KahanF32, &ops);
    let eps = f32::EPSILON as f64;
    assert!(naive > 30.0 * eps, "naive error {naive:.3e} is suspiciously small");
    assert!(kahan < 4.0 * eps, "kahan error {kahan:.3e} is not at the few-eps level");
    assert!(kahan * 10.0 < naive, "kahan {kahan:.3e} is not measurably better than naive {naive:.3e}");
}

#[test]
fn a_wrong_product_is_detected() {
    let ops = Operands::uniform(Shape { m: 9, k: 40, n: 7 }, 2);
    let s = ops.shape;
    let rows = crate::sample::Sample::new(s.m, 4, &[], 1).items;
    let reference = reference::gemm_rows(&ops.a, &ops.b, s.k, s.n, &rows);
    let mut c = vec![0.0; s.m * s.n];
    // One coefficient off by 1e-6 relative: far beyond f64 tolerance.
    let mut b = ops.b.clone();
    b[3] *= 1.0 + 1e-6;
    cpu::gemm_plain::<f64, f64>(&ops.a, &b, &mut c, s);
    let check = Check::compare("c", &pick_rows(&c, s.n, &rows), &reference, Algo::F64.tolerance(s.k));
    assert!(!check.passed());
}

#[test]
fn algos_parse_and_map_to_precisions() {
    assert_eq!("cublas-tf32".parse::<Algo>().unwrap(), Algo::BlasTf32);
    assert_eq!("Kahan-F32".parse::<Algo>().unwrap(), Algo::KahanF32);
    assert!("kahan".parse::<Algo>().unwrap_err().contains("kahan-f32"));
    assert_eq!(Algo::of(Precision::Double), vec![Algo::F64, Algo::BlasF64]);
    assert_eq!(Algo::of(Precision::Mixed), vec![Algo::Mixed]);
    assert_eq!(Algo::of(Precision::Single).len(), 4);
    assert!(molecule("HMX").unwrap().basis == 516 && molecule("water").is_err());
}

#[test]
fn synthetic_basis_has_the_table_sizes() {
    for mol in MOLECULES {
        let set = BasisSet::synthetic(mol, 1);
        assert_eq!(set.len(), mol.basis, "{}", mol.name);
        assert_eq!(set.centers.len(), mol.basis.div_ceil(basis::PER_ATOM));
        assert!(set.functions.iter().all(|f| f.prims.end <= set.exps.len() && !f.prims.is_empty()));
    }
}

fn small_set() -> BasisSet {
    BasisSet::synthetic(Molecule { name: "test", electrons: 4, basis: 40 }, 3)
}

#[test]
fn reference_derivatives_match_finite_differences() {
    let set = small_set();
    let nf = set.len();
    let at = |p: [f64; 3]| reference::basis(&set, &p);
    let h = 1e-4;
    for p in set.electrons(1, 6, 4).chunks(3) {
        let p = [p[0], p[1], p[2]];
        let v = at(p);
        let mut lap = vec![0.0; nf];
        for d in 0..3 {
            let (mut up, mut dn) = (p, p);
            up[d] += h;
            dn[d] -= h;
            let (vu, vd) = (at(up), at(dn));
            for j in 0..nf {
                let grad = (vu[j] - vd[j]) / (2.0 * h);
                assert!((grad - v[(1 + d) * nf + j]).abs() < 1e-5 * (1.0 + grad.abs()), "gradient of function {j}");
                lap[j] += (vu[j] - 2.0 * v[j] + vd[j]) / (h * h);
            }
        }
        for j in 0..nf {
            assert!((lap[j] - v[4 * nf + j]).abs() < 1e-3 * (1.0 + lap[j].abs()), "laplacian of function {j}");
        }
    }
    // At its own atom an s function is the sum of its contraction coefficients.
    let f = &set.functions[0];
    let v = at(set.centers[f.center]);
    let sum: f64 = f.prims.clone().map(|q| set.coefs[q]).sum();
    assert!((v[0] - sum).abs() < 1e-14);
}

/// Tolerance of each basis component in units of the arithmetic's epsilon.
pub fn basis_tolerance(component: usize, eps: f64) -> f64 {
    match component {
        0 => 64.0 * eps,
        1..=3 => 256.0 * eps,
        _ => 1024.0 * eps,
    }
}

fn basis_checks(fast: &[f64], reference: &[f64], nf: usize, eps: f64) {
    for comp in 0..COMPONENTS {
        let pick = |v: &[f64]| -> Vec<f64> { v.chunks(COMPONENTS * nf).flat_map(|r| r[comp * nf..(comp + 1) * nf].to_vec()).collect() };
        let c = Check::compare("basis", &pick(fast), &pick(reference), basis_tolerance(comp, eps));
        assert!(c.passed(), "component {comp}: error {:.3e} over {:.3e}", c.error, c.tolerance);
    }
}

#[test]
fn cpu_basis_matches_reference_in_every_precision() {
    let set = small_set();
    let pos = set.electrons(3, 5, 8);
    let reference = reference::basis(&set, &pos);
    let n = reference.len();
    let mut o64 = vec![f64::NAN; n];
    cpu::basis::<f64, f64>(&set, &pos, &mut o64);
    basis_checks(&o64, &reference, set.len(), f64::EPSILON);
    let mut o32 = vec![f32::NAN; n];
    cpu::basis::<f32, f32>(&set, &pos, &mut o32);
    basis_checks(&o32.iter().map(|&x| x as f64).collect::<Vec<_>>(), &reference, set.len(), f32::EPSILON as f64);
    cpu::basis::<f32, f64>(&set, &pos, &mut o32);
    // Mixed: f64 arithmetic, one rounding to f32 at the end.
    let err = Check::compare("mixed", &o32, &reference, 0.0).error;
    assert!(err <= f32::EPSILON as f64, "mixed error {err:.3e}");
}

#[test]
fn gpu_matches_reference_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    // Not a multiple of any tile in any dimension.
    let ops = Operands::uniform(Shape { m: 131, k: 1000, n: 70 }, 3);
    let s = ops.shape;
    let rows: Vec<usize> = (0..s.m).collect();
    let reference = reference::gemm_rows(&ops.a, &ops.b, s.k, s.n, &rows);
    let mut g = gpu::GpuGemm::new(&gpu, &ops, &Algo::ALL).unwrap();
    for algo in Algo::ALL {
        g.poison().unwrap();
        g.launch(algo).unwrap();
        let c = Check::compare(algo.name(), &g.rows(algo, &rows).unwrap(), &reference, algo.tolerance(s.k));
        assert!(c.passed(), "{algo}: error {:.3e} over {:.3e}", c.error, c.tolerance);
    }
    // The GPU Kahan kernel keeps its compensation under -fmad=true.
    let ops = Operands::uniform(Shape { m: 3, k: 200_000, n: 2 }, 4);
    let reference = reference::gemm_rows(&ops.a, &ops.b, 200_000, 2, &[0, 1, 2]);
    let mut g = gpu::GpuGemm::new(&gpu, &ops, &[Algo::NaiveF32, Algo::KahanF32]).unwrap();
    let mut err = |algo| {
        g.launch(algo).unwrap();
        Check::compare("c", &g.rows(algo, &[0, 1, 2]).unwrap(), &reference, 0.0).error
    };
    let (naive, kahan) = (err(Algo::NaiveF32), err(Algo::KahanF32));
    assert!(kahan * 10.0 < naive && kahan < 4.0 * f32::EPSILON as f64, "gpu kahan {kahan:.3e} vs naive {naive:.3e}");
    // Basis functions in all three modes.
    let set = small_set();
    let pos = set.electrons(2, 7, 5);
    let refb = reference::basis(&set, &pos);
    let all: Vec<usize> = (0..14).collect();
    let mut b64 = gpu::GpuBasis::<f64, f64>::new(&gpu, &set, 14).unwrap();
    b64.poison().unwrap();
    b64.set_positions(&pos).unwrap();
    b64.launch().unwrap();
    basis_checks(&b64.outputs_at(&all).unwrap(), &refb, set.len(), f64::EPSILON);
    let mut b32 = gpu::GpuBasis::<f32, f32>::new(&gpu, &set, 14).unwrap();
    b32.set_positions(&pos).unwrap();
    b32.launch().unwrap();
    basis_checks(&b32.outputs_at(&all).unwrap(), &refb, set.len(), f32::EPSILON as f64);
}

/// The body of PTX function `entry` (from its `.entry` line to the next one).
fn ptx_body<'a>(ptx: &'a str, entry: &str) -> &'a str {
    let start = ptx.find(&format!(".entry {entry}(")).unwrap_or_else(|| panic!("{entry} not in the PTX"));
    let rest = &ptx[start + 1..];
    &ptx[start..start + 1 + rest.find(".entry").unwrap_or(rest.len())]
}

#[test]
fn kahan_kernel_compiles_without_fused_multiply_add() {
    // Under -fmad=true an FMA in the Kahan loop would change its rounding (Y = a*b - C in one step); the
    // intrinsics must keep every step separate. The naive kernel, by contrast, is expected to fuse.
    if !crate::gpu::nvrtc_available() {
        assert!(std::env::var("QMC_REQUIRE_NVRTC").is_err(), "QMC_REQUIRE_NVRTC set but libnvrtc is not loadable");
        eprintln!("SKIPPED: libnvrtc not found");
        return;
    }
    let ptx = crate::gpu::compile("gemm", gpu::SRC, crate::gpu::arch_name(9, 0)).unwrap().to_src();
    let kahan = ptx_body(&ptx, "gemm_kahan_f32");
    assert!(kahan.contains("mul.rn.f32") && kahan.contains("sub.rn.f32"), "Kahan steps missing from the PTX");
    assert!(!kahan.contains("fma."), "the Kahan kernel was contracted into FMAs");
    assert!(ptx_body(&ptx, "gemm_naive_f32").contains("fma.rn.f32"));
}
