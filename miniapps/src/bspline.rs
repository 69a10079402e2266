//! `bspline`: 3D B-spline orbital evaluation (V, VGL, VGH) for a batch of walkers, CPU and GPU, every precision,
//! each fast result checked against the f64 reference. See `kernels::bspline` for the physics and layout.

use crate::common::KernelArgs;
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::{Case, Runner, Variant, Work};
use kernels::bspline::{self as bs, cpu, gpu::GpuSpline, reference, Basis, Grid, Output, Table};
use kernels::sample::Sample;
use kernels::{Check, Precision, Real};

/// Evaluate B-spline orbitals (value, gradient, Hessian) for a batch of walkers, as QMC codes do every move.
///
/// The coefficient table holds grid^3 x orbitals numbers (orbital index fastest); each walker's point reads 64 rows of
/// it. Tables of several GB are fine on the GPU. Example, a 1 GB single-precision table:
///   bspline --grid 64 --orbitals 1024 --walkers 256,1024 --precision single,mixed
#[derive(clap::Parser, Debug)]
#[command(name = "bspline", version, verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Grid points per side of the periodic cell (at least 4), comma-separated for a sweep.
    #[arg(long, value_delimiter = ',', default_value = "48")]
    pub grid: Vec<usize>,
    /// Orbitals (splines) in the table, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128,512,2048")]
    pub orbitals: Vec<usize>,
    /// Walkers evaluated per launch (one point each), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,32,256")]
    pub walkers: Vec<usize>,
    /// What to evaluate: v, vgl or vgh.
    #[arg(long, default_value = "vgh")]
    pub output: Output,
    /// Basis function: bspline (QMCPACK) or blip (CASINO, 1.5 x the B-spline).
    #[arg(long, default_value = "bspline")]
    pub basis: Basis,
    /// Walkers whose outputs are checked against the f64 reference: the first, the last and a seeded random rest
    /// (default: as many as about a second of reference work affords, at least the first and the last).
    #[arg(long)]
    pub check_walkers: Option<usize>,
    /// GPU: adjacent orbitals each thread evaluates with one load per stencil row (1, 2 or 4; at most 16 bytes, so
    /// at most 2 in double). Default: the fastest measured on an H100 (2 in double and mixed, 4 in single). Always recorded as the extra `orbitals_per_thread`; an explicit
    /// choice is also the parameter `per_thread`, so a tuning sweep keeps one record per choice.
    #[arg(long)]
    pub per_thread: Option<usize>,
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// Suite command lines.
pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &["--grid", "16", "--orbitals", "64,256", "--walkers", "4,32"],
        Level::Full => &["--grid", "64", "--orbitals", "256,1024,4096", "--walkers", "16,128,1024"],
        Level::Score => &["--grid", "64", "--orbitals", "2048", "--walkers", "1024", "--output", "vgl", "--precision", "double,mixed"],
    }
}

/// Tolerance of each quantity, in units of the storage precision's epsilon: a value sums 64 terms; each derivative
/// order multiplies the conditioning by about the grid factor of the weights.
fn tolerance(quantity: &str, p: Precision) -> f64 {
    let units = match quantity {
        "value" => 64.0,
        "gradient" => 256.0,
        _ => 1024.0,
    };
    units * p.eps()
}

/// The walkers a case checks: first, last and a seeded random rest, as many as the reference affords (about 100
/// flops per orbital and stencil point: three 1D B-splines and ten products) or `count`.
fn checked_walkers(walkers: usize, orbitals: usize, count: Option<usize>, seed: u64) -> Sample {
    Sample::budgeted(walkers, 6400.0 * orbitals as f64, count, &[], seed)
}

/// Checks of the sampled walkers' outputs (`out` holds every walker's, `refv` the sample's), one per quantity.
fn checks<A: Real>(out: &[A], refv: &[f64], output: Output, stride: usize, s: &Sample, p: Precision) -> Vec<Check> {
    let nc = output.components();
    let fast: Vec<f64> = s.gather(out, nc * stride).iter().map(|x| x.f64()).collect();
    output
        .quantities()
        .iter()
        .map(|(name, range)| {
            let pick = |v: &[f64]| -> Vec<f64> { v.iter().enumerate().filter(|(i, _)| range.contains(&((i / stride) % nc))).map(|(_, &x)| x).collect() };
            Check::compare(name, &pick(&fast), &pick(refv), tolerance(name, p))
        })
        .collect()
}

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    positive("grid", &a.grid)?;
    positive("orbitals", &a.orbitals)?;
    positive("walkers", &a.walkers)?;
    if let Some(g) = a.grid.iter().find(|&&g| g < Grid::MIN_POINTS) {
        bail!("--grid {g} is too small: the cubic stencil needs at least {} points a side", Grid::MIN_POINTS);
    }
    if let Some(w) = a.walkers.iter().find(|&&w| w > 65535) {
        bail!("--walkers {w} is more than one launch takes (65535)");
    }
    if let Some(n) = a.per_thread {
        if ![1, 2, 4].contains(&n) {
            bail!("--per-thread {n}: a thread evaluates 1, 2 or 4 orbitals");
        }
        if n == 4 && r.precisions().contains(&Precision::Double) {
            bail!("--per-thread 4 needs 32-byte loads in double precision (at most 16): use 1 or 2, or --precision single,mixed");
        }
    }
    let host_mem = r.system.memory_bytes as usize;
    for &g in &a.grid {
        for &o in &a.orbitals {
            let bytes = bs::table_bytes(&Grid::cubic(g, 1.0), o, 8) * 3 / 2;
            if host_mem > 0 && bytes > host_mem * 4 / 5 {
                bail!("a {g}^3 x {o} table needs {:.1} GiB of host memory (f64 reference plus f32 copy); this machine has {:.1} GiB", bytes as f64 / (1u64 << 30) as f64, host_mem as f64 / (1u64 << 30) as f64);
            }
        }
    }
    let variants = Variant::ALL.into_iter().filter(|v| r.runs(*v)).count();
    r.plan(a.grid.len() * a.orbitals.len() * a.walkers.len() * r.precisions().len() * variants);
    let mut case_no = 0;
    for &g in &a.grid {
        // The cell side follows the grid, so the orbitals look the same at every resolution (spacing 0.25 bohr).
        let grid = Grid::cubic(g, 0.25 * g as f64);
        for &o in &a.orbitals {
            case_no += 1;
            r.step(format!("building a {g}^3 x {o} table"));
            let t64 = bs::random_table::<f64>(grid, o, a.basis, r.seed(case_no));
            r.step(format!("reference of a {g}^3 x {o} table"));
            let inputs: Vec<Inputs> = a.walkers.iter().map(|&w| Inputs::new(a, &t64, w, r.seed(case_no * 7919 + w as u64))).collect();
            for p in r.precisions() {
                kernels::by_precision!(p => sweep(r, a, &t64, &inputs))?;
            }
        }
    }
    Ok(())
}

/// One walker count's positions, its checked walkers and their reference outputs (shared by every precision).
struct Inputs {
    walkers: usize,
    pos: Vec<f64>,
    checked: Sample,
    refv: Vec<f64>,
}

impl Inputs {
    fn new(a: &Args, t64: &Table<f64>, walkers: usize, seed: u64) -> Inputs {
        let pos = bs::random_positions(walkers, &t64.grid, seed);
        let checked = checked_walkers(walkers, t64.orbitals, a.check_walkers, seed ^ 0xC4EC);
        let refv = checked.par_flat_map(|w| reference::evaluate(t64, &pos[3 * w..3 * w + 3], a.output));
        Inputs { walkers, pos, checked, refv }
    }
}

/// All walker counts and variants of one table in one precision: storage S, arithmetic A.
fn sweep<S: Real, A: Real>(r: &mut Runner, a: &Args, t64: &Table<f64>, inputs: &[Inputs]) -> Result<()> {
    let p = Precision::of::<S, A>();
    let table = kernels::real::in_storage(t64, |t| t.convert::<S>());
    let table = &*table;
    let max_w = *a.walkers.iter().max().unwrap();
    let mut gpu = match r.gpu() {
        Some(g) if r.runs(Variant::Gpu) => {
            let per_thread = a.per_thread.unwrap_or(kernels::bspline::gpu::default_per_thread::<S, A>());
            Some((GpuSpline::<S, A>::new(g, table, max_w, a.output, per_thread)?, per_thread))
        }
        _ => None,
    };
    let nc = a.output.components();
    for Inputs { walkers: w, pos, checked, refv } in inputs {
        let w = *w;
        let case = Case::new("bspline", a.output.name(), p)
            .size("grid", t64.grid.n[0])
            .size("orbitals", t64.orbitals)
            .size("walkers", w)
            .param("basis", a.basis.name());
        let work = Work {
            model: harness::BytesModel::Compulsory,
            bytes: bs::bytes(w, bs::stencil_rows(&t64.grid, pos), table.stride, a.output, std::mem::size_of::<S>(), std::mem::size_of::<A>()),
            flops: bs::flops(w, t64.orbitals, a.output),
            items: (w * t64.orbitals) as f64,
            unit: "orbital evals/s",
        };
        r.step(format!("bspline {} {p} grid={} orbitals={} walkers={w}", a.output.name(), t64.grid.n[0], t64.orbitals));
        if r.runs(Variant::CpuRef) && p == Precision::Double {
            let mut out = vec![];
            let t = r.time_reps(Variant::CpuRef, 2, || -> Result<()> {
                out = reference::evaluate(t64, pos, a.output);
                Ok(())
            })?;
            r.record(&case, Variant::CpuRef, t, work, &[])?;
        }
        if r.runs(Variant::Cpu) {
            let mut out = vec![A::nan(); w * nc * table.stride];
            let t = r.time(Variant::Cpu, || -> Result<()> {
                cpu::evaluate::<S, A>(table, pos, a.output, &mut out);
                Ok(())
            })?;
            let c = checks(&out, refv, a.output, table.stride, checked, p);
            r.record(&case, Variant::Cpu, t, work, &c)?;
            r.extra("checked_walkers", checked.len() as f64);
        }
        if let Some((g, per_thread)) = gpu.as_mut() {
            let per_thread = *per_thread;
            g.set_positions(pos)?;
            let t = r.time(Variant::Gpu, || g.launch())?;
            g.poison()?;
            g.launch()?;
            let c = checks(&g.outputs()?, refv, a.output, table.stride, checked, p);
            // an explicit choice is part of the case (a tuning sweep keeps one record per choice); the default is not
            let gcase = match a.per_thread {
                Some(n) => case.clone().param("per_thread", n),
                None => case.clone(),
            };
            r.record(&gcase, Variant::Gpu, t, work, &c)?;
            r.extra("orbitals_per_thread", per_thread as f64);
            r.extra("checked_walkers", checked.len() as f64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 40 walkers of a small table: the table, the positions and every walker's f64 outputs from the CPU kernel.
    fn fixture() -> (Table<f64>, Vec<f64>, Vec<f64>) {
        let grid = Grid::cubic(6, 1.5);
        let t = bs::random_table::<f64>(grid, 8, Basis::BSpline, 1);
        let pos = bs::random_positions(40, &grid, 2);
        let mut out = vec![0.0; 40 * 10 * t.stride];
        cpu::evaluate::<f64, f64>(&t, &pos, Output::Vgh, &mut out);
        (t, pos, out)
    }

    /// Do the checks of the walkers `s` pass?
    fn passes(t: &Table<f64>, pos: &[f64], out: &[f64], s: &Sample) -> bool {
        let refv = reference::evaluate(t, &s.gather(pos, 3), Output::Vgh);
        checks(out, &refv, Output::Vgh, t.stride, s, Precision::Double).iter().all(Check::passed)
    }

    #[test]
    fn a_fault_in_the_last_or_a_middle_walker_fails() {
        let (t, pos, out) = fixture();
        let s = checked_walkers(40, 8, Some(8), 3);
        let old = Sample { items: (0..8).collect(), total: 40 }; // the rule before: the first 8 walkers
        assert!(passes(&t, &pos, &out, &s));
        let middle = s.items[s.len() / 2];
        assert!(middle > 7 && middle < 39, "sample {:?}", s.items);
        for w in [39, middle] {
            let mut bad = out.clone();
            bad[w * 10 * t.stride + 3] += 1e-3; // the value of one orbital
            assert!(!passes(&t, &pos, &bad, &s), "walker {w}");
            assert!(passes(&t, &pos, &bad, &old), "walker {w}");
        }
    }

    #[test]
    fn the_budget_checks_every_walker_of_a_small_case() {
        assert_eq!(checked_walkers(1024, 64, None, 1).len(), 1024);
        // 4096 orbitals: a sample, spread from the first walker to the last
        let s = checked_walkers(1024, 4096, None, 1);
        assert!((2..1024).contains(&s.len()) && s.items[0] == 0 && s.items[s.len() - 1] == 1023, "{}", s.len());
    }
}
