//! `determinant`: Slater-determinant ratios, Sherman-Morrison and delayed (Woodbury) updates, inversion, QMC-like
//! move loops and the single-precision drift of the inverse, CPU and GPU, every precision, each fast result checked
//! against the f64 reference. See `kernels::determinant` for the algebra, layouts and test matrices.

use crate::common::KernelArgs;
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::{BytesModel, Case, Runner, Variant, Work};
use kernels::determinant::{self as det, cpu::CpuDets, gpu::GpuDets, reference, work, Engine};
use kernels::gpu::{BatchedGemm, BatchedLu};
use kernels::sample::Sample;
use kernels::{Check, Precision, Scalar};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Time the determinant kernels of QMC for a batch of walkers (one N x N Slater matrix per walker and spin).
///
/// Ops (--ops):
///   ratio    ratio and gradient ratio of a one-row change
///   update   ratio + Sherman-Morrison rank-1
///   delayed  k moves with a Woodbury rank-k update, each --delay
///   invert   LU: faer / cuBLAS batched below N = 1024 in f64 and 512 in f32, cuSOLVER per matrix on eight streams
///            from there; log|det|
///   moves    a QMC-like move loop: propose, ratio, accept with --accept probability, update; rank-1 and each delay
///   drift    CPU: error of the inverse after K single-precision rank-1 updates, against the f64 reference inverse
/// Example:
///   determinant --n 2048 --walkers 32 --delay 1,16,64 --ops moves --variants gpu
#[derive(clap::Parser, Debug)]
#[command(name = "determinant", version, verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Electrons per spin (matrix size N), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "128,512")]
    pub n: Vec<usize>,
    /// Walkers (one matrix each), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "16")]
    pub walkers: Vec<usize>,
    /// Delays k of the delayed update (1 = Sherman-Morrison), comma-separated, at most 64.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64")]
    pub delay: Vec<usize>,
    /// Operations: ratio, update, delayed, invert, moves, drift.
    #[arg(long, value_delimiter = ',', default_value = "ratio,update,delayed,invert,moves,drift")]
    pub ops: Vec<String>,
    /// Acceptance probability of a move in the move loop.
    #[arg(long, default_value_t = 0.5)]
    pub accept: f64,
    /// Proposed moves per walker in one move loop.
    #[arg(long, default_value_t = 128)]
    pub steps: usize,
    /// Mixed precision: moves between re-inversions in f64 (0: never).
    #[arg(long, default_value_t = 64)]
    pub recompute: usize,
    /// Drift: numbers of single-precision rank-1 updates after which the error is measured, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "16,64,256,1024")]
    pub drift_updates: Vec<usize>,
    /// Cap on the matrix storage of one case in GB (f64 A, inverse, proposals, workspace): fewer walkers are
    /// used where a case would exceed it.
    #[arg(long, default_value_t = 4.0)]
    pub max_gb: f64,
    /// Walkers whose results are checked against the f64 reference: the first, the last and a seeded random rest
    /// (default: as many as about a second of reference work affords, at least the first and the last).
    #[arg(long)]
    pub check_walkers: Option<usize>,
    /// Largest N for the O(N^2) ops (ratio, update, delayed, moves); larger N run only invert and drift.
    #[arg(long, default_value_t = 16384)]
    pub moves_max_n: usize,
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// Suite command lines.
pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &["--n", "16,64", "--walkers", "4", "--delay", "1,4,16", "--steps", "32", "--recompute", "16", "--drift-updates", "16,64"],
        // Budgeted from an H100 host run (16 cores): --max-gb 1 gives 64, 64, 29, 7 and 1 walkers at N = 128 ... 4096
        // (7 walkers at N = 2048 still fill the GPU for the rank-1 vs delayed comparison); one f64 re-inversion per
        // 128-move loop in mixed (the drift table shows f32 updates stay near 1e-6 after 1024 moves up to N = 1024);
        // N = 4096 only inverts and drifts. The 1024 and 2048 cases dominate (CPU inversions and move loops).
        Level::Full => &[
            "--n", "128,512,1024,2048,4096", "--walkers", "64", "--max-gb", "1", "--delay", "1,4,16,64", "--steps", "128",
            "--recompute", "128", "--moves-max-n", "2048", "--drift-updates", "64,256,1024", "--reps", "5", "--warmup", "1",
        ],
        // the move loop without re-inversion (a code amortises one over thousands of moves; `invert` times it)
        Level::Score => &[
            "--n", "1024", "--walkers", "32", "--delay", "1,16", "--ops", "moves,invert", "--steps", "128", "--recompute", "0",
            "--precision", "double,mixed",
        ],
    }
}

const OPS: [&str; 6] = ["ratio", "update", "delayed", "invert", "moves", "drift"];

/// One (N, walkers) problem with its starting state: the inverses of all walkers (f64, from faer: the engines'
/// input, not a reference) and the flags, `ones` all-accepting steps (ratio, update, delayed) followed by the move
/// loop's random ones. The checked walkers' reference inverses are the plain f64 LU's (`reference::inverse`), at
/// every N.
struct Setup {
    pb: det::Problem,
    t0: Vec<f64>,
    flags: Vec<i32>,
    ones: usize,
    /// Reference results of the move sequences already computed (shared by every precision and variant).
    cache: RefCell<HashMap<(usize, usize), Rc<Reference>>>,
}

/// Reference transposed inverses, last ratios and gradient ratios of the checked walkers.
type Reference = (Vec<f64>, Vec<f64>, Vec<f64>);

impl std::ops::Deref for Setup {
    type Target = det::Problem;
    fn deref(&self) -> &det::Problem {
        &self.pb
    }
}

/// Reference flops per checked walker: the inversion (LU 2/3 N^3, substitutions 2 N^3) and the move sequences
/// replayed by Sherman-Morrison (about 5 N^2 a step: the first move, each delay's moves, the move loop).
fn reference_cost(a: &Args, n: usize) -> f64 {
    let steps = 1 + a.delay.iter().sum::<usize>() + a.steps;
    let n = n as f64;
    8.0 / 3.0 * n.powi(3) + 5.0 * n * n * steps as f64
}

/// The walkers a case checks: first, last and a seeded random rest, as many as the budget (or --check-walkers) says.
fn checked_walkers(a: &Args, n: usize, walkers: usize, seed: u64) -> Sample {
    Sample::budgeted(walkers, reference_cost(a, n), a.check_walkers, &[], seed ^ 0xC4EC)
}

impl Setup {
    fn new(a: &Args, n: usize, walkers: usize, seed: u64) -> Result<Setup> {
        let checked = checked_walkers(a, n, walkers, seed);
        let pb = det::Problem::new(n, walkers, &checked.items, seed)?;
        let nn = n * n;
        let mut start = CpuDets::<f64, f64>::new(n, &pb.prop[..nn], &pb.grad[..3 * n], 1);
        let mut t0 = Vec::with_capacity(pb.a.len());
        for m in pb.a.chunks(nn) {
            start.load(m, m, &[])?;
            start.invert()?;
            t0.extend(start.inverse()?);
        }
        let ones = a.delay.iter().copied().max().unwrap_or(1).max(1);
        let mut flags = vec![1; ones * walkers];
        flags.extend(det::accept_flags(a.steps, walkers, a.accept, seed));
        Ok(Setup { pb, t0, flags, ones, cache: RefCell::default() })
    }

    fn nn(&self) -> usize {
        self.n * self.n
    }

    /// The checked walkers' entries of a `[walker][per]` array, in order.
    fn gather(&self, v: &[f64], per: usize) -> Vec<f64> {
        Sample { items: self.checked.clone(), total: self.walkers }.gather(v, per)
    }

    fn moves(&self, steps: std::ops::Range<usize>) -> Rc<Reference> {
        let key = (steps.start, steps.end);
        let mut cache = self.cache.borrow_mut();
        cache.entry(key).or_insert_with(|| Rc::new(self.pb.moves(steps, &self.flags))).clone()
    }
}

/// Tolerance after `updates` updates in precision p: dot products of length N lose about sqrt(N) epsilons, and
/// independent rounding errors of successive updates add up like a random walk.
fn tolerance(p: Precision, n: usize, updates: usize) -> f64 {
    16.0 * p.eps() * (n as f64).sqrt() * (1.0 + updates as f64).sqrt()
}

/// Compare the engine's state with the reference for the checked walkers.
fn state_checks<E: Engine>(e: &mut E, pb: &Setup, reference: &Reference, p: Precision, updates: usize) -> Result<Vec<Check>> {
    let tol = tolerance(p, pb.n, updates);
    let t = e.inverse()?;
    let (r, g) = e.ratios()?;
    Ok(vec![
        Check::compare("inverse", &pb.gather(&t, pb.nn()), &reference.0, tol),
        Check::compare("ratio", &pb.gather(&r, 1), &reference.1, tol),
        Check::compare("gradient", &pb.gather(&g, 3), &reference.2, tol),
    ])
}

/// Checks of an inversion of every walker (`x` the transposed inverses, `l` and `s` log|det| and signs): the
/// residual, inverse, log|det| and sign of the checked walkers against the reference.
fn invert_checks(pb: &Setup, x: &[f64], l: &[f64], s: &[f64], p: Precision) -> Vec<Check> {
    let (n, nn) = (pb.n, pb.nn());
    // mixed inverts in f64, but the matrix it inverts and the inverse are stored in f32
    let tol = 64.0 * p.eps() * (n as f64).sqrt();
    let inv_tol = tolerance(p, n, 0).max(tol);
    let residual = pb.checked.iter().map(|&w| det::residual(&pb.a[w * nn..(w + 1) * nn], &x[w * nn..(w + 1) * nn], n)).fold(0.0, f64::max);
    vec![
        Check::compare("residual |A X - I|", &[residual], &[0.0], inv_tol),
        Check::compare("inverse", &pb.gather(x, nn), &reference::transpose(&pb.inv, n), inv_tol),
        Check::compare("logdet", &pb.gather(l, 1), &pb.logdet, tol),
        Check::compare("sign", &pb.gather(s, 1), &pb.sign, 0.0),
    ]
}

/// The record just made checked these walkers (their number; which ones follows from the seed).
fn record_checked(r: &mut Runner, pb: &Setup) {
    r.extra("checked_walkers", pb.checked.len() as f64);
}

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    positive("n", &a.n)?;
    positive("walkers", &a.walkers)?;
    positive("delay", &a.delay)?;
    positive("drift-updates", &a.drift_updates)?;
    if a.steps == 0 {
        bail!("--steps must be positive");
    }
    if let Some(op) = a.ops.iter().find(|o| !OPS.contains(&o.as_str())) {
        bail!("unknown op '{op}': expected one of {}", OPS.join(", "));
    }
    if let Some(n) = a.n.iter().find(|&&n| !(2..=16384).contains(&n)) {
        bail!("--n {n} is out of range: matrices from 2 x 2 to 16384 x 16384 electrons per spin");
    }
    if let Some(k) = a.delay.iter().find(|&&k| k > det::MAX_DELAY) {
        bail!("--delay {k} is too large: delayed updates go up to rank {}", det::MAX_DELAY);
    }
    if let Some(w) = a.walkers.iter().find(|&&w| w > 65535) {
        bail!("--walkers {w} is more than one launch takes (65535)");
    }
    if !(0.0..=1.0).contains(&a.accept) {
        bail!("--accept {} is not a probability (0 to 1)", a.accept);
    }
    if a.max_gb.is_nan() || a.max_gb <= 0.0 {
        bail!("--max-gb must be positive");
    }
    let host_mem = r.system.memory_bytes as f64;
    let ops = |o: &str| a.ops.iter().any(|x| x == o);
    let mut case_no = 0;
    for &n in &a.n {
        for &w0 in &a.walkers {
            // f64 A, inverse, proposals and workspace per walker; the host holds about twice that.
            let per_walker = (4 * n * n * 8) as f64;
            let w = w0.min(((a.max_gb * 1e9 / per_walker) as usize).max(1));
            if w < w0 {
                r.say(&format!("note: n={n}: {w} walkers instead of {w0} (--max-gb {})", a.max_gb));
            }
            if host_mem > 0.0 && 2.0 * per_walker * w as f64 > 0.8 * host_mem {
                bail!("n={n} with {w} walkers needs {:.1} GB of host memory; this machine has {:.1} GB", 2.0 * per_walker * w as f64 / 1e9, host_mem / 1e9);
            }
            case_no += 1;
            r.step(format!("building {w} matrices of {n} x {n}"));
            let pb = Setup::new(a, n, w, r.seed(case_no))?;
            if r.runs(Variant::CpuRef) && r.precisions().contains(&Precision::Double) && n <= 256 {
                reference_timings(r, &pb)?;
            }
            for p in r.precisions() {
                kernels::by_precision!(p => precision(r, a, &pb))?;
            }
        }
        let drifts: Vec<Precision> = r.precisions().into_iter().filter(|&p| p != Precision::Double).collect();
        if ops("drift") && !drifts.is_empty() && r.runs(Variant::Cpu) {
            r.step(format!("determinant drift n={n}: reference inverses"));
            let d = Drift::new(a, n, r.seed(0xD1F7 + n as u64))?;
            for p in drifts {
                match p {
                    Precision::Single => drift::<f32, f32>(r, a, &d, p, None)?,
                    _ => drift::<f32, f64>(r, a, &d, p, (a.recompute > 0).then_some(a.recompute))?,
                }
            }
        }
    }
    Ok(())
}

fn case(op: &str, p: Precision, pb: &Setup) -> Case {
    Case::new("determinant", op, p).size("n", pb.n).size("walkers", pb.walkers)
}

fn scaled(b: (f64, f64), times: f64) -> (f64, f64) {
    (b.0 * times, b.1 * times)
}

/// The work of a determinant operation. Ratios and inversions count each matrix once (`Compulsory`); the updates count
/// the inverse read by the matrix-vector product and read and written by the update, for every move (`Passes`): on
/// the CPU a walker's inverse stays in cache between moves, so these run at several times the copy ceiling.
fn work_of(bf: (f64, f64), model: BytesModel, items: f64, unit: &'static str) -> Work {
    Work { bytes: bf.0, model, flops: bf.1, items, unit }
}

/// Repetitions: fewer for the large cases, whose single runs take long enough to time well.
fn reps(r: &Runner, n: usize) -> usize {
    r.args.reps().min(match n {
        0..=512 => usize::MAX,
        513..=1024 => 5,
        _ => 3,
    })
}

/// The plain reference timed on all walkers (small N only): ratio, Sherman-Morrison, inversion.
fn reference_timings(r: &mut Runner, pb: &Setup) -> Result<()> {
    let (n, nn, nw) = (pb.n, pb.nn(), pb.walkers as f64);
    let (mut inv, _, _) = reference::invert_all(&pb.a, n)?;
    let t = r.time_reps(Variant::CpuRef, 3, || -> Result<()> {
        for w in 0..pb.walkers {
            std::hint::black_box(reference::ratio(&inv[w * nn..(w + 1) * nn], n, 0, &pb.prop[w * nn..w * nn + n], &pb.grad[w * 3 * n..(w + 1) * 3 * n]));
        }
        Ok(())
    })?;
    r.record(&case("ratio", Precision::Double, pb), Variant::CpuRef, t, work_of(scaled(work::ratio(n, 8), nw), BytesModel::Compulsory, nw, "ratios/s"), &[])?;
    let mut a = pb.a.clone();
    let t = r.time_reps(Variant::CpuRef, 3, || -> Result<()> {
        for w in 0..pb.walkers {
            let u = &pb.prop[w * nn..w * nn + n];
            reference::sherman_morrison(&mut a[w * nn..(w + 1) * nn], &mut inv[w * nn..(w + 1) * nn], n, 0, u);
        }
        Ok(())
    })?;
    r.record(&case("update", Precision::Double, pb).param("delay", 1), Variant::CpuRef, t, work_of(scaled(work::rank1(n, 8), nw), BytesModel::Passes, nw, "electron moves/s"), &[])?;
    let t = r.time_reps(Variant::CpuRef, 2, || -> Result<()> {
        std::hint::black_box(reference::invert_all(&pb.a, n)?);
        Ok(())
    })?;
    r.record(&case("invert", Precision::Double, pb), Variant::CpuRef, t, work_of(scaled(work::invert(n, 8), nw), BytesModel::Compulsory, nw, "inversions/s"), &[])?;
    Ok(())
}

/// All ops of one problem in one precision, on the CPU and (when present) the GPU.
fn precision<S: Scalar + BatchedGemm, A: Scalar + BatchedLu>(r: &mut Runner, a: &Args, pb: &Setup) -> Result<()> {
    let p = Precision::of::<S, A>();
    let kmax = a.delay.iter().copied().max().unwrap().max(1);
    if r.runs(Variant::Cpu) {
        let mut e = CpuDets::<S, A>::new(pb.n, &pb.prop, &pb.grad, kmax);
        ops(r, a, pb, p, Variant::Cpu, &mut e)?;
    }
    if r.runs(Variant::Gpu) {
        let g = r.gpu().expect("gpu variant runs only with a GPU").clone();
        let mut e = GpuDets::<S, A>::new(&g, pb.n, &pb.prop, &pb.grad, kmax, pb.flags.len() / pb.walkers)?;
        ops(r, a, pb, p, Variant::Gpu, &mut e)?;
    }
    Ok(())
}

fn ops<E: Engine>(r: &mut Runner, a: &Args, pb: &Setup, p: Precision, v: Variant, e: &mut E) -> Result<()> {
    let (n, nw) = (pb.n, pb.walkers as f64);
    let es = if p == Precision::Double { 8 } else { 4 };
    let has = |o: &str| a.ops.iter().any(|x| x == o) && (n <= a.moves_max_n || o == "invert");
    let reps = reps(r, n);
    r.step(format!("determinant {v} {p} n={n} walkers={}", pb.walkers));
    if has("ratio") {
        e.load(&pb.a, &pb.t0, &pb.flags)?;
        let t = r.time_reps(v, reps, || e.ratio(0))?;
        // the ratio leaves the inverse as it was; its ratios are those of the first move
        let first = pb.moves(0..1);
        let c = state_checks(e, pb, &(reference::transpose(&pb.inv, n), first.1.clone(), first.2.clone()), p, 0)?;
        r.record(&case("ratio", p, pb), v, t, work_of(scaled(work::ratio(n, es), nw), BytesModel::Compulsory, nw, "ratios/s"), &c)?;
        record_checked(r, pb);
    }
    if has("update") {
        e.load(&pb.a, &pb.t0, &pb.flags)?;
        e.set_delay(1);
        let t = r.time_reps(v, reps, || det::run_moves(e, 0..1, 1, &pb.flags, None))?;
        e.load(&pb.a, &pb.t0, &pb.flags)?;
        det::run_moves(e, 0..1, 1, &pb.flags, None)?;
        let c = state_checks(e, pb, &pb.moves(0..1), p, 1)?;
        r.record(&case("update", p, pb).param("delay", 1), v, t, work_of(scaled(work::rank1(n, es), nw), BytesModel::Passes, nw, "electron moves/s"), &c)?;
        record_checked(r, pb);
    }
    if has("delayed") {
        for &k in a.delay.iter().filter(|&&k| k > 1) {
            e.load(&pb.a, &pb.t0, &pb.flags)?;
            e.set_delay(k);
            let t = r.time_reps(v, reps, || det::run_moves(e, 0..k, k, &pb.flags, None))?;
            e.load(&pb.a, &pb.t0, &pb.flags)?;
            det::run_moves(e, 0..k, k, &pb.flags, None)?;
            let c = state_checks(e, pb, &pb.moves(0..k), p, k)?;
            let kw = k as f64 * nw;
            r.record(&case("delayed", p, pb).param("delay", k), v, t, work_of(scaled(work::delayed(n, k, es), nw), BytesModel::Passes, kw, "electron moves/s"), &c)?;
            record_checked(r, pb);
        }
    }
    if has("invert") {
        e.load(&pb.a, &pb.t0, &pb.flags)?;
        let t = r.time_reps(v, reps.min(if n >= 4096 { 1 } else if n >= 2048 { 2 } else { reps }), || e.invert())?;
        let ie = if p == Precision::Single { 4 } else { 8 };
        let (l, s) = e.logdets()?;
        let checks = invert_checks(pb, &e.inverse()?, &l, &s, p);
        r.record(&case("invert", p, pb), v, t, work_of(scaled(work::invert(n, ie), nw), BytesModel::Compulsory, nw, "inversions/s"), &checks)?;
        record_checked(r, pb);
    }
    if has("moves") {
        let steps = pb.ones..pb.ones + a.steps;
        let recompute = (p == Precision::Mixed && a.recompute > 0).then_some(a.recompute);
        let accepted = pb.flags[steps.start * pb.walkers..].iter().filter(|&&f| f != 0).count() as f64;
        for &k in &a.delay {
            e.load(&pb.a, &pb.t0, &pb.flags)?;
            e.set_delay(k);
            let t = r.time_reps(v, reps, || det::run_moves(e, steps.clone(), k, &pb.flags, recompute))?;
            e.load(&pb.a, &pb.t0, &pb.flags)?;
            det::run_moves(e, steps.clone(), k, &pb.flags, recompute)?;
            let c = state_checks(e, pb, &pb.moves(steps.clone()), p, recompute.unwrap_or(a.steps).min(a.steps))?;
            let proposed = a.steps as f64 * nw;
            let ratio = work::ratio(n, es);
            let per_accept = if k == 1 {
                let u = work::rank1(n, es);
                (u.0 - ratio.0, u.1 - ratio.1)
            } else {
                let d = work::delayed(n, k, es);
                ((d.0 - k as f64 * ratio.0) / k as f64, (d.1 - k as f64 * ratio.1) / k as f64)
            };
            let bf = (proposed * ratio.0 + accepted * per_accept.0, proposed * ratio.1 + accepted * per_accept.1);
            let mut cs = case("moves", p, pb).param("delay", k).param("accept", a.accept).param("steps", a.steps);
            if let Some(rc) = recompute {
                cs = cs.param("recompute", rc);
            }
            r.record(&cs, v, t, work_of(bf, BytesModel::Passes, proposed, "electron moves/s"), &c)?;
            record_checked(r, pb);
        }
    }
    Ok(())
}

/// The drift study's matrix (one walker), its proposals, its starting inverse (faer's f64: the engines' input) and
/// the reference inverses (plain f64 LU, transposed) of the matrix after each number of updates, shared by both
/// precisions.
struct Drift {
    m: Vec<f64>,
    prop: Vec<f64>,
    grad: Vec<f64>,
    t0: Vec<f64>,
    /// (updates, the changed matrix, its reference transposed inverse)
    after: Vec<(usize, Vec<f64>, Vec<f64>)>,
}

impl Drift {
    fn new(a: &Args, n: usize, seed: u64) -> Result<Drift> {
        let m = det::random_matrices(n, 1, seed);
        let prop = det::random_matrices(n, 1, seed ^ 0x9E37);
        let grad = det::random_gradients(n, 1, seed);
        let mut start = CpuDets::<f64, f64>::new(n, &prop, &grad, 1);
        start.load(&m, &m, &[])?;
        start.invert()?;
        let t0 = start.inverse()?;
        let mut after = vec![];
        for &k in &a.drift_updates {
            let mut am = m.clone();
            for s in 0..k {
                let q = det::row_of_step(s, n);
                am[q * n..(q + 1) * n].copy_from_slice(&prop[q * n..(q + 1) * n]);
            }
            let (inv, _, _) = reference::inverse(&am, n).map_err(|column| det::DetError::Singular { walker: 0, column })?;
            after.push((k, am, reference::transpose(&inv, n)));
        }
        Ok(Drift { m, prop, grad, t0, after })
    }
}

/// Drift of the single-precision inverse (CPU, one walker): after K rank-1 updates (all accepted, electrons in
/// turn), max |A Ainv - I| and the normwise error against the f64 reference inverse of the same A. With `recompute`
/// (mixed), the inverse is re-inverted in f64 every that many moves.
fn drift<S: Scalar, A: Scalar>(r: &mut Runner, a: &Args, d: &Drift, p: Precision, recompute: Option<usize>) -> Result<()> {
    let n = d.grad.len() / 3;
    let kmax = *a.drift_updates.iter().max().unwrap();
    let flags = vec![1; kmax];
    let mut e = CpuDets::<S, A>::new(n, &d.prop, &d.grad, 1);
    for (k, am, tf) in &d.after {
        let k = *k;
        r.step(format!("determinant drift {p} n={n} K={k}"));
        e.load(&d.m, &d.t0, &flags)?;
        let t = r.time_reps(Variant::Cpu, 1, || -> Result<()> {
            e.load(&d.m, &d.t0, &flags)?;
            Ok(det::run_moves(&mut e, 0..k, 1, &flags, recompute)?)
        })?;
        let ts = e.inverse()?;
        let err = Check::compare("inverse vs fresh f64", &ts, tf, 0.01);
        let res = det::residual(am, &ts, n);
        let mut cs = Case::new("determinant", "drift", p).size("n", n).size("walkers", 1).param("updates", k);
        if let Some(rc) = recompute {
            cs = cs.param("recompute", rc);
        }
        let es = std::mem::size_of::<S>();
        r.record(&cs, Variant::Cpu, t, work_of(scaled(work::rank1(n, es), k as f64), BytesModel::Passes, k as f64, "electron moves/s"), std::slice::from_ref(&err))?;
        r.extra("residual_max_abs", res);
        r.extra("error_vs_f64", err.error);
        r.extra("error_in_eps", err.error / S::EPS);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> Args {
        Args::try_parse_from(["determinant"].iter().chain(extra)).unwrap()
    }

    /// Inverses, log|det| and signs of every walker from the CPU engine in double precision.
    fn inverted(pb: &Setup) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut e = CpuDets::<f64, f64>::new(pb.n, &pb.prop, &pb.grad, 1);
        e.load(&pb.a, &pb.t0, &pb.flags).unwrap();
        e.invert().unwrap();
        let (l, s) = e.logdets().unwrap();
        (e.inverse().unwrap(), l, s)
    }

    #[test]
    fn a_wrong_inverse_of_the_last_or_a_middle_walker_fails() {
        let pb = Setup::new(&args(&["--check-walkers", "4"]), 24, 9, 5).unwrap();
        assert_eq!(pb.checked.len(), 4);
        let middle = *pb.checked.iter().find(|&&w| (2..8).contains(&w)).expect("two middle walkers, one past the first two");
        let (x, l, s) = inverted(&pb);
        assert!(invert_checks(&pb, &x, &l, &s, Precision::Double).iter().all(Check::passed));
        // the rule before: the first 2 walkers (the same matrices)
        let old = Setup { pb: det::Problem::new(24, 9, &[0, 1], 5).unwrap(), t0: vec![], flags: vec![], ones: 1, cache: Default::default() };
        let nn = pb.nn();
        for w in [8, middle] {
            let mut bad = x.clone();
            bad[w * nn + 5 * 24 + 7] += 1e-9;
            assert!(!invert_checks(&pb, &bad, &l, &s, Precision::Double).iter().all(Check::passed), "walker {w}");
            assert!(invert_checks(&old, &bad, &l, &s, Precision::Double).iter().all(Check::passed), "walker {w}");
        }
    }

    #[test]
    fn the_reference_inverse_is_never_the_engines_own() {
        // CPU errors of exactly 0 at large N came from comparing faer with itself; the reference is an independent LU
        let pb = Setup::new(&args(&[]), 40, 3, 7).unwrap();
        let (x, l, s) = inverted(&pb);
        let c = invert_checks(&pb, &x, &l, &s, Precision::Double);
        assert!(c.iter().all(Check::passed));
        assert!(c[1].error > 0.0, "the inverse matched the reference bit for bit");
        assert_eq!(pb.checked, vec![0, 1, 2], "a small case checks every walker");
    }
}
