//! `gemm`: Gaussian-basis orbitals as in paper 004 (Anderson, Goddard, Schröder 2007). Op `basis` evaluates the
//! contracted Cartesian Gaussians (value, gradient, Laplacian) of all electrons of a batch of walkers; op `gemm`
//! multiplies that stacked matrix by the shared coefficients in every algorithm of `kernels::gemm::Algo` (naive and
//! Kahan single, double, mixed, and the library: faer on the CPU, cuBLAS f32/f64/TF32 on the GPU), each checked
//! against a twice-working-precision reference. The molecules are the seven of the paper's Fig. 7 table;
//! `--square` adds square products for a roofline.

use crate::common::KernelArgs;
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::{BytesModel, Case, Runner, Variant, Work};
use kernels::gemm::basis::BasisSet;
use kernels::gemm::gpu::{GpuBasis, GpuGemm};
use kernels::gemm::{self as gm, cpu, reference, Algo, Molecule, Operands, Shape, COMPONENTS};
use kernels::sample::Sample;
use kernels::{Check, Precision, Real};

/// Gaussian-basis orbitals and the precision of their matrix product: naive vs Kahan single vs double vs library.
///
/// Example, the Fig. 7 molecules at 256 walkers and a square roofline on a GPU host:
///   gemm --walkers 256 --square 2048,8192 --precision single,double
#[derive(clap::Parser, Debug)]
#[command(name = "gemm", version, verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Operations: basis (basis functions of all electrons), gemm (the orbital product), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "basis,gemm")]
    pub op: Vec<String>,
    /// Molecules of the paper's Fig. 7 (acetic-acid, benzaldehyde, annulene, diazobenzene, lysine, arginine, hmx).
    #[arg(long, value_delimiter = ',', default_value = "acetic-acid,benzaldehyde,annulene,diazobenzene,lysine,arginine,hmx")]
    pub molecules: Vec<String>,
    /// Walkers stacked into one product (or one basis launch), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,128")]
    pub walkers: Vec<usize>,
    /// Square GEMM sizes (m = k = n) for a roofline, comma-separated; none by default.
    #[arg(long, value_delimiter = ',')]
    pub square: Vec<usize>,
    /// Inner dimensions of a 1024 x 1024 product of uniform [0,1) operands, comma-separated: the paper's Fig. 5
    /// precision study (error against inner dimension); none by default.
    #[arg(long, value_delimiter = ',')]
    pub inner: Vec<usize>,
    /// GEMM algorithms to run (default: all of each precision asked for): naive-f32, kahan-f32, blas-f32,
    /// blas-tf32 (single); f64, blas-f64 (double); mixed. blas is faer on the CPU and cuBLAS on the GPU.
    #[arg(long, value_delimiter = ',')]
    pub algo: Option<Vec<Algo>>,
    /// The multiplier of the molecule products: basis (basis-function values at electron positions, the paper's
    /// "QMC-distributed" Fig. 6) or uniform (on [0,1), Fig. 5). Square products are always uniform.
    #[arg(long, default_value = "basis")]
    pub inputs: String,
    /// Rows of each product (and electrons of each basis batch) checked against the reference: the first, the last
    /// and a seeded random rest (default: as many as about a second of reference work affords, at least 2).
    #[arg(long)]
    pub check_rows: Option<usize>,
    /// CPU hand-written GEMMs are skipped above this many GFLOP per product (the library gets 20 times more).
    #[arg(long, default_value_t = 8.0)]
    pub cpu_max_gflop: f64,
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// Suite command lines.
pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &["--molecules", "acetic-acid,benzaldehyde", "--walkers", "1,4", "--square", "96"],
        Level::Full => &["--walkers", "1,16,128,1024", "--square", "1024,2048,4096,8192", "--inner", "1024,8192,65536"],
        Level::Score => &[
            "--op", "basis,gemm", "--molecules", "hmx", "--walkers", "1024", "--square", "4096", "--algo", "blas-f64,blas-f32",
            "--precision", "double,single",
        ],
    }
}

/// The most walkers x electrons one basis launch takes (one block row each) and that fit an i32 product size.
const MAX_ROWS: usize = 1 << 24;

/// Rows and columns of the `--inner` products (the paper's Fig. 5 used a 1000 x 1000 result).
const FIG5_SIDE: usize = 1024;

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    positive("walkers", &a.walkers)?;
    if let Some(n) = a.check_rows {
        positive("check-rows", &[n])?;
    }
    if !a.square.is_empty() {
        positive("square", &a.square)?;
    }
    let mols: Vec<Molecule> = a.molecules.iter().map(|m| gm::molecule(m)).collect::<Result<_, String>>().map_err(anyhow::Error::msg)?;
    for op in &a.op {
        if op != "basis" && op != "gemm" {
            bail!("unknown --op '{op}': expected basis or gemm");
        }
    }
    if a.inputs != "basis" && a.inputs != "uniform" {
        bail!("unknown --inputs '{}': expected basis or uniform", a.inputs);
    }
    if a.cpu_max_gflop.is_nan() || a.cpu_max_gflop <= 0.0 {
        bail!("--cpu-max-gflop must be positive");
    }
    if !a.inner.is_empty() {
        positive("inner", &a.inner)?;
    }
    if let Some(s) = a.square.iter().find(|&&s| s > 32768) {
        bail!("--square {s} is too large: the largest square product is 32768 (8 GiB per f64 operand)");
    }
    if let Some(k) = a.inner.iter().find(|&&k| k > 1 << 20) {
        bail!("--inner {k} is too large: the longest inner dimension is {} (8 GiB per f64 operand)", 1 << 20);
    }
    let max_electrons = mols.iter().map(|m| m.electrons).max().unwrap_or(0);
    if let Some(w) = a.walkers.iter().find(|&&w| w * max_electrons * COMPONENTS > MAX_ROWS) {
        bail!("--walkers {w} is too many: {w} x {max_electrons} electrons x 5 rows exceeds {MAX_ROWS}");
    }
    // Host memory: the largest product holds A in f64 and f32 plus the f64 output of a CPU run.
    let host_mem = r.system.memory_bytes as usize;
    let biggest = mols
        .iter()
        .flat_map(|m| a.walkers.iter().map(|&w| Shape::orbitals(*m, w)))
        .chain(a.square.iter().map(|&s| Shape::square(s)))
        .chain(a.inner.iter().map(|&k| Shape { m: FIG5_SIDE, k, n: FIG5_SIDE }))
        .map(|s| (s.m * s.k + s.k * s.n) * 12 + s.m * s.n * 8)
        .max()
        .unwrap_or(0);
    if host_mem > 0 && biggest > host_mem * 3 / 4 {
        bail!("the largest product needs {:.1} GiB of host memory; this machine has {:.1} GiB", gib(biggest), gib(host_mem));
    }
    let algos = |p: Precision| -> Vec<Algo> {
        Algo::of(p).into_iter().filter(|x| !matches!(&a.algo, Some(only) if !only.contains(x))).collect()
    };
    if a.algo.is_some() && r.precisions().iter().all(|&p| algos(p).is_empty()) {
        bail!("none of the --algo values belongs to the --precision modes asked for");
    }
    let mut case_no = 0u64;
    for op in &a.op {
        for mol in &mols {
            for &w in &a.walkers {
                case_no += 1;
                if op == "basis" {
                    basis_case(r, a, *mol, w, case_no)?;
                } else {
                    gemm_case(r, a, Some(*mol), mol.name, Shape::orbitals(*mol, w), w, case_no, &algos)?;
                }
            }
        }
        if op == "gemm" {
            for &s in &a.square {
                case_no += 1;
                gemm_case(r, a, None, "square", Shape::square(s), 0, case_no, &algos)?;
            }
            for &k in &a.inner {
                case_no += 1;
                gemm_case(r, a, None, "fig5", Shape { m: FIG5_SIDE, k, n: FIG5_SIDE }, 0, case_no, &algos)?;
            }
        }
    }
    Ok(())
}

fn gib(bytes: usize) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

/// Tolerance of a basis component (value, gradient, Laplacian) for a mode.
fn basis_tolerance(component: usize, p: Precision) -> f64 {
    let units = match component {
        0 => 64.0,
        1..=3 => 256.0,
        _ => 1024.0,
    };
    units * p.eps()
}

/// Reference flops of one row of a product: a Dot2 of length k (about 10 flops a term) per column.
fn gemm_row_cost(s: Shape) -> f64 {
    10.0 * (s.k * s.n) as f64
}

/// Reference flops of one electron's basis functions: about 100 flops (an exponential and the polynomial's
/// derivatives) per primitive of every function.
fn basis_point_cost(set: &BasisSet) -> f64 {
    100.0 * set.functions.iter().map(|f| f.prims.len()).sum::<usize>() as f64
}

/// One check per component kind over `points` points of output `[point][5][nf]`.
fn basis_checks(out: &[f64], refv: &[f64], nf: usize, p: Precision) -> Vec<Check> {
    [("value", 0..1), ("gradient", 1..4), ("laplacian", 4..5)]
        .into_iter()
        .map(|(name, range)| {
            let pick = |v: &[f64]| -> Vec<f64> {
                v.chunks(COMPONENTS * nf).flat_map(|row| row[range.start * nf..range.end * nf].to_vec()).collect()
            };
            Check::compare(name, &pick(out), &pick(refv), basis_tolerance(range.start, p))
        })
        .collect()
}

fn basis_case(r: &mut Runner, a: &Args, mol: Molecule, walkers: usize, case_no: u64) -> Result<()> {
    let set = BasisSet::synthetic(mol, r.seed(case_no));
    let points = walkers * mol.electrons;
    let pos = set.electrons(walkers, mol.electrons, r.seed(case_no) ^ 0xE);
    let checked = Sample::budgeted(points, basis_point_cost(&set), a.check_rows, &[], r.seed(case_no) ^ 0xC4EC);
    let refv = checked.par_flat_map(|i| reference::basis(&set, &pos[3 * i..3 * i + 3]));
    for p in r.precisions() {
        let case = Case::new("gemm", "basis", p)
            .size("electrons", mol.electrons)
            .size("basis", mol.basis)
            .size("walkers", walkers)
            .param("molecule", mol.name);
        r.step(format!("basis {p} {} walkers={walkers}", mol.name));
        kernels::by_precision!(p => basis_variants(r, &case, &set, &pos, &refv, &checked))?;
    }
    Ok(())
}

/// The basis kernel on CPU (and its single-core reference in double) and GPU: stored O, arithmetic T; `refv` is
/// the reference of the `checked` electrons.
fn basis_variants<O: Real, T: Real>(r: &mut Runner, case: &Case, set: &BasisSet, pos: &[f64], refv: &[f64], checked: &Sample) -> Result<()> {
    let points = pos.len() / 3;
    let nf = set.len();
    let work = Work { bytes: set.bytes(points, std::mem::size_of::<O>()), model: BytesModel::Compulsory, flops: set.flops(points), items: (points * nf) as f64, unit: "basis evals/s" };
    // The single-core reference is timed only where it takes well under a second.
    if r.runs(Variant::CpuRef) && case.precision == Precision::Double && points * nf <= 1 << 21 {
        let t = r.time_reps(Variant::CpuRef, 2, || -> Result<()> {
            std::hint::black_box(reference::basis(set, pos));
            Ok(())
        })?;
        r.record(case, Variant::CpuRef, t, work, &[])?;
    }
    if r.runs(Variant::Cpu) {
        let mut out = vec![O::nan(); points * COMPONENTS * nf];
        let t = r.time(Variant::Cpu, || -> Result<()> {
            cpu::basis::<O, T>(set, pos, &mut out);
            Ok(())
        })?;
        let fast: Vec<f64> = checked.gather(&out, COMPONENTS * nf).iter().map(|x| x.f64()).collect();
        r.record(case, Variant::Cpu, t, work, &basis_checks(&fast, refv, nf, case.precision))?;
        r.extra("checked_electrons", checked.len() as f64);
    }
    if let Some(gpu) = r.gpu().filter(|_| r.runs(Variant::Gpu)).cloned() {
        let mut g = GpuBasis::<O, T>::new(&gpu, set, points)?;
        g.set_positions(pos)?;
        let t = r.time(Variant::Gpu, || g.launch())?;
        g.poison()?;
        g.launch()?;
        r.record(case, Variant::Gpu, t, work, &basis_checks(&g.outputs_at(&checked.items)?, refv, nf, case.precision))?;
        r.extra("checked_electrons", checked.len() as f64);
    }
    Ok(())
}

/// The operands of one product: for a molecule, basis values of its electrons (or uniform) times uniform
/// coefficients on [0, 1) (the paper's random multiplicand); for the other products, uniform on [0, 1).
fn operands(a: &Args, mol: Option<Molecule>, shape: Shape, walkers: usize, seed: u64) -> Operands {
    match mol {
        Some(mol) if a.inputs == "basis" => {
            let set = BasisSet::synthetic(mol, seed);
            let pos = set.electrons(walkers, mol.electrons, seed ^ 0xE);
            let mut values = vec![0.0f64; shape.m * shape.k];
            cpu::basis::<f64, f64>(&set, &pos, &mut values);
            let coefs = Operands::uniform(Shape { m: 0, k: shape.k, n: shape.n }, seed ^ 0xC0EF).b;
            Operands::from_f64(shape, values, coefs)
        }
        _ => Operands::uniform(shape, seed),
    }
}

#[allow(clippy::too_many_arguments)]
fn gemm_case(r: &mut Runner, a: &Args, mol: Option<Molecule>, label: &str, shape: Shape, walkers: usize, case_no: u64, algos: &dyn Fn(Precision) -> Vec<Algo>) -> Result<()> {
    r.step(format!("gemm {label} {}x{}x{}: building operands", shape.m, shape.k, shape.n));
    let ops = operands(a, mol, shape, walkers, r.seed(case_no));
    let checked = Sample::budgeted(shape.m, gemm_row_cost(shape), a.check_rows, &[], r.seed(case_no) ^ 0xC4EC);
    let rows = &checked.items;
    let refc = checked.par_flat_map(|i| reference::gemm_rows(&ops.a, &ops.b, shape.k, shape.n, &[i]));
    let gflop = shape.flops() / 1e9;
    for p in r.precisions() {
        let list = algos(p);
        if list.is_empty() {
            continue;
        }
        let mut gpu = match r.gpu() {
            Some(g) if r.runs(Variant::Gpu) => Some(GpuGemm::new(g, &ops, &list)?),
            _ => None,
        };
        for &algo in &list {
            let mut case = Case::new("gemm", "gemm", p).size("m", shape.m).size("k", shape.k).size("n", shape.n);
            if let Some(m) = mol {
                case = case.size("electrons", m.electrons).size("walkers", walkers).param("inputs", &a.inputs);
            }
            let case = case.param("molecule", label).param("algo", algo.name());
            let (in_b, out_b) = (if algo.f64_inputs() { 8 } else { 4 }, if algo.f64_output() { 8 } else { 4 });
            let work = Work { bytes: shape.bytes(in_b, out_b), model: BytesModel::Compulsory, flops: shape.flops(), items: (shape.m * shape.n) as f64, unit: "orbital entries/s" };
            let tol = algo.tolerance(shape.k);
            r.step(format!("gemm {label} {}x{}x{} {algo}", shape.m, shape.k, shape.n));
            let cap = if matches!(algo, Algo::BlasF32 | Algo::BlasF64) { 20.0 * a.cpu_max_gflop } else { a.cpu_max_gflop };
            if r.runs(Variant::Cpu) && algo.on_cpu() {
                if gflop <= cap {
                    let (t, c) = cpu_gemm(r, algo, &ops, rows)?;
                    r.record(&case, Variant::Cpu, t, work, &[Check::compare("orbitals", &c, &refc, tol)])?;
                    r.extra("checked_rows", rows.len() as f64);
                } else {
                    r.say(&format!("note: cpu {algo} skipped for {label} {}x{}x{}: {gflop:.0} GFLOP is over --cpu-max-gflop", shape.m, shape.k, shape.n));
                }
            }
            if let Some(g) = gpu.as_mut() {
                let t = r.time(Variant::Gpu, || g.launch(algo))?;
                g.poison()?;
                g.launch(algo)?;
                let c = g.rows(algo, rows)?;
                r.record(&case, Variant::Gpu, t, work, &[Check::compare("orbitals", &c, &refc, tol)])?;
                r.extra("checked_rows", rows.len() as f64);
            }
        }
    }
    Ok(())
}

/// Time one CPU algorithm; return its timing and the checked rows.
fn cpu_gemm(r: &mut Runner, algo: Algo, ops: &Operands, rows: &[usize]) -> Result<(harness::Stats, Vec<f64>)> {
    let s = ops.shape;
    // Fewer repetitions for big products: the whole suite must stay within minutes.
    let reps = ((2e10 / s.flops()) as usize).max(1);
    let mut c32 = vec![f32::NAN; if algo.f64_output() { 0 } else { s.m * s.n }];
    let mut c64 = vec![f64::NAN; if algo.f64_output() { s.m * s.n } else { 0 }];
    let t = r.time_reps(Variant::Cpu, reps, || -> Result<()> {
        match algo {
            Algo::NaiveF32 => cpu::gemm_plain::<f32, f32>(&ops.a32, &ops.b32, &mut c32, s),
            Algo::KahanF32 => cpu::gemm_kahan_f32(&ops.a32, &ops.b32, &mut c32, s),
            Algo::BlasF32 => cpu::gemm_blas::<f32>(&ops.a32, &ops.b32, &mut c32, s),
            Algo::F64 => cpu::gemm_plain::<f64, f64>(&ops.a, &ops.b, &mut c64, s),
            Algo::BlasF64 => cpu::gemm_blas::<f64>(&ops.a, &ops.b, &mut c64, s),
            Algo::Mixed => cpu::gemm_plain::<f32, f64>(&ops.a32, &ops.b32, &mut c64, s),
            Algo::BlasTf32 => bail!("no TF32 on the CPU"),
        }
        Ok(())
    })?;
    let c = if algo.f64_output() { gm::pick_rows(&c64, s.n, rows) } else { gm::pick_rows(&c32, s.n, rows) };
    Ok((t, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_middle_row_fails() {
        // a 4-walker acetic-acid product (640 rows) checked on 64 rows; one row of C wrong
        let shape = Shape::orbitals(gm::molecule("acetic-acid").unwrap(), 4);
        let ops = Operands::uniform(shape, 3);
        let mut c = vec![0.0; shape.m * shape.n];
        cpu::gemm_plain::<f64, f64>(&ops.a, &ops.b, &mut c, shape);
        let verdict = |rows: &[usize], c: &[f64]| {
            let refc = reference::gemm_rows(&ops.a, &ops.b, shape.k, shape.n, rows);
            Check::compare("orbitals", &gm::pick_rows(c, shape.n, rows), &refc, Algo::F64.tolerance(shape.k)).passed()
        };
        let s = Sample::budgeted(shape.m, gemm_row_cost(shape), Some(64), &[], 4);
        // the rule before: the first and the last 32 rows
        let old: Vec<usize> = (0..32).chain(shape.m - 32..shape.m).collect();
        assert!(verdict(&s.items, &c));
        let middle = s.items[s.len() / 2];
        assert!((32..shape.m - 32).contains(&middle), "{:?}", s.items);
        c[middle * shape.n + 2] *= 1.0 + 1e-9;
        assert!(!verdict(&s.items, &c));
        assert!(verdict(&old, &c));
    }

    #[test]
    fn the_budget_scales_the_rows() {
        // small products are checked whole; a tall one on a sample that reaches its last row
        let small = Shape::orbitals(gm::molecule("acetic-acid").unwrap(), 4);
        assert_eq!(Sample::budgeted(small.m, gemm_row_cost(small), None, &[], 1).len(), small.m);
        let tall = Shape::orbitals(gm::molecule("hmx").unwrap(), 1024);
        let s = Sample::budgeted(tall.m, gemm_row_cost(tall), None, &[], 1);
        assert!(s.len() < tall.m && s.items[s.len() - 1] == tall.m - 1);
    }
}
