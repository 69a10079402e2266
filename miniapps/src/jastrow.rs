//! `jastrow`: one- and two-body Jastrow factors (B-spline functors, CASINO u and p terms, Padé) for a batch of
//! walkers: full value/gradient/Laplacian (`vgl`), one-electron move ratios with new gradients (`ratio`) and the
//! updates after acceptance (`accept`), CPU and GPU, every precision, each checked against the f64 reference.
//! See `kernels::jastrow` for the formulas and layouts.

use crate::common::KernelArgs;
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::{BytesModel, Case, Runner, Variant, Work};
use kernels::jastrow::cpu::{self, Batch, Fast, MovesT};
use kernels::jastrow::gpu::GpuJastrow;
use kernels::jastrow::{self as jw, reference, Jastrow, Moves, Setup, Term, COMPONENTS};
use kernels::sample::Sample;
use kernels::{Check, Precision, Real};

/// Evaluate Jastrow factors of electron-gas-like systems for a batch of walkers, as VMC/DMC codes do every move.
///
/// Paper 003 (CASINO) Tables 4 and 5: the p and u terms' GPU speedup against the electron count, e.g.
///   jastrow --term p,u --electrons 54,114,246,514,1030,2058 --walkers 32 --precision double,single
#[derive(clap::Parser, Debug)]
#[command(name = "jastrow", version, verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Two-body terms, comma-separated: bspline (QMCPACK functor), u and p (CASINO), pade.
    #[arg(long, value_delimiter = ',', default_value = "bspline,u,p,pade")]
    pub term: Vec<Term>,
    /// Electrons (half spin up), comma-separated; electron-gas closed shells of a cubic cell are 54, 114, 162,
    /// 246, 342, 514, 682, 1030, 1642, 2058.
    #[arg(long, value_delimiter = ',', default_value = "54,114,246,514")]
    pub electrons: Vec<usize>,
    /// Walkers per launch, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "32")]
    pub walkers: Vec<usize>,
    /// Operations, comma-separated: vgl, ratio, accept.
    #[arg(long, value_delimiter = ',', default_value = "vgl,ratio,accept")]
    pub ops: Vec<String>,
    /// Ions of the one-body term (0: no one-body term), at random places in the cell.
    #[arg(long, default_value_t = 0)]
    pub ions: usize,
    /// Open boundaries instead of the periodic cubic cell (not for the p term).
    #[arg(long)]
    pub open: bool,
    /// Stars of G vectors in the p term (CASINO uses 3 to 15).
    #[arg(long, default_value_t = 8)]
    pub stars: usize,
    /// Electron moves per repetition of ratio and accept (distinct electrons, at most all of them).
    #[arg(long, default_value_t = 16)]
    pub moves: usize,
    /// Walkers checked against the f64 reference: the first, the last and a seeded random rest (default: as many
    /// as about a second of reference work affords, at least the first and the last).
    #[arg(long)]
    pub check_walkers: Option<usize>,
    /// Electrons per checked walker whose stored quantities are checked: the first, the last and a seeded random
    /// rest.
    #[arg(long, default_value_t = 16)]
    pub check_electrons: usize,
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// Suite command lines. The full suite is paper 003's Tables 4 and 5 across electron-gas closed shells: the u and
/// p terms, double and single precision, cpu (all cores) against gpu (the reference is left out: too slow at 2058
/// electrons).
pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &["--term", "bspline,u,p,pade", "--electrons", "16,54", "--walkers", "4", "--moves", "4", "--ions", "2"],
        Level::Full => &[
            "--term", "p,u", "--electrons", "54,114,162,246,342,514,682,1030,1642,2058", "--walkers", "32", "--moves", "16",
            "--precision", "double,single", "--variants", "cpu,gpu", "--reps", "3",
        ],
        Level::Score => &["--term", "u,p", "--electrons", "1030", "--walkers", "32", "--moves", "16", "--precision", "double,mixed"],
    }
}

const OPS: [&str; 3] = ["vgl", "ratio", "accept"];

/// Tolerance of a quantity: sums of N terms with cancellation, and for single precision the positions themselves
/// rounded to f32 (the reference sees the exact ones).
fn tolerance(p: Precision, electrons: usize) -> f64 {
    1024.0 * p.eps() * (electrons as f64).sqrt()
}

/// Checks of `[walker][component][electron]` arrays (`per` electrons each), split by quantity.
fn state_checks(fast: &[f64], reference: &[f64], per: usize, tol: f64) -> Vec<Check> {
    let split = |v: &[f64], comps: std::ops::Range<usize>| -> Vec<f64> {
        v.chunks(per).enumerate().filter(|(c, _)| comps.contains(&(c % COMPONENTS))).flat_map(|(_, x)| x.to_vec()).collect()
    };
    [("value", 0..2), ("gradient", 2..5), ("laplacian", 5..6)]
        .into_iter()
        .map(|(name, r)| Check::compare(name, &split(fast, r.clone()), &split(reference, r), tol))
        .collect()
}

/// Checks of `[move][walker][4]` ratio outputs of the walkers `s` against their reference, `[checked walker][move][4]`.
fn ratio_checks(fast: &[f64], reference: &[f64], s: &Sample, tol: f64) -> Vec<Check> {
    let moves = fast.len() / (4 * s.total);
    let mine: Vec<f64> = s.items.iter().flat_map(|&w| (0..moves).flat_map(move |m| fast[(m * s.total + w) * 4..][..4].to_vec())).collect();
    let pick = |v: &[f64], comps: std::ops::Range<usize>| -> Vec<f64> { v.chunks(4).flat_map(|e| e[comps.clone()].to_vec()).collect() };
    vec![Check::compare("log ratio", &pick(&mine, 0..1), &pick(reference, 0..1), tol), Check::compare("gradient", &pick(&mine, 1..4), &pick(reference, 1..4), tol)]
}

/// The proposals of walker `w` alone (of `walkers`).
fn walker_moves(m: &Moves, walkers: usize, w: usize) -> Moves {
    let pos = m.pos.chunks(3 * walkers).flat_map(|c| c[3 * w..3 * w + 3].to_vec()).collect();
    Moves { electrons: m.electrons.clone(), pos }
}

/// Reference flops of one walker: the stored quantities of the checked electrons before and after the moves,
/// and two sums per move, each over the other electrons and the ions (about 150 flops a functor, 25 a G vector of
/// the p term).
fn walker_cost(j: &Jastrow<f64>, checked_electrons: usize, moves: usize) -> f64 {
    let pair = if j.term == Term::P { 25.0 * j.p.n.len() as f64 } else { 150.0 };
    (2 * checked_electrons + 2 * moves) as f64 * (j.electrons + j.ion_count()) as f64 * pair
}

/// The f64 answers of the walkers `s`: stored quantities of the electrons `which` (`[walker][component][which]`)
/// before and after the moves, and the moves' ratios (`[walker][move][4]`), walkers in parallel.
fn references(j: &Jastrow<f64>, pos: &[f64], moves: &Moves, s: &Sample, which: &[usize]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let per = 3 * j.electrons;
    let one = |w: usize| &pos[w * per..(w + 1) * per];
    let moved = |w: usize| jw::moved_positions(one(w), &walker_moves(moves, s.total, w), 1, j.electrons);
    (
        s.par_flat_map(|w| reference::electrons(j, one(w), 1, which)),
        s.par_flat_map(|w| reference::ratios(j, one(w), 1, &walker_moves(moves, s.total, w))),
        s.par_flat_map(|w| reference::electrons(j, &moved(w), 1, which)),
    )
}

/// Inputs and f64 answers of one case (shared by every precision).
struct Inputs {
    walkers: usize,
    pos: Vec<f64>,
    moves: Moves,
    checked: Sample,
    which: Vec<usize>,
    vgl: Vec<f64>,
    ratio: Vec<f64>,
    accept: Vec<f64>,
}

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    positive("electrons", &a.electrons)?;
    positive("walkers", &a.walkers)?;
    positive("moves", &[a.moves])?;
    if let Some(n) = a.check_walkers {
        positive("check-walkers", &[n])?;
    }
    positive("check-electrons", &[a.check_electrons])?;
    if a.term.is_empty() {
        bail!("--term needs at least one of bspline, u, p, pade");
    }
    if let Some(op) = a.ops.iter().find(|o| !OPS.contains(&o.as_str())) {
        bail!("unknown operation '{op}': expected vgl, ratio or accept");
    }
    if let Some(n) = a.electrons.iter().find(|&&n| n < 2) {
        bail!("--electrons {n} is too few: a two-body term needs at least 2 electrons");
    }
    if let Some(n) = a.electrons.iter().find(|&&n| n > 100_000) {
        bail!("--electrons {n} is more than this benchmark supports (100000)");
    }
    if let Some(w) = a.walkers.iter().find(|&&w| w > 65535) {
        bail!("--walkers {w} is more than one launch takes (65535)");
    }
    if a.open && a.term.contains(&Term::P) {
        bail!("the p term is a sum of plane waves: it needs the periodic cell (drop --open or the p term)");
    }
    if a.term.contains(&Term::P) && !(1..=jw::max_stars()).contains(&a.stars) {
        bail!("--stars {} is out of range: the p term takes 1 to {} stars", a.stars, jw::max_stars());
    }
    if a.ions > 100_000 {
        bail!("--ions {} is more than this benchmark supports (100000)", a.ions);
    }
    let variants: Vec<Variant> = Variant::ALL.into_iter().filter(|v| r.runs(*v)).collect();
    let precisions = r.precisions();
    let reps = r.args.reps();
    let ops: Vec<&str> = OPS.into_iter().filter(|o| a.ops.iter().any(|x| x == o)).collect();
    r.plan(a.term.len() * a.electrons.len() * a.walkers.len() * ops.len() * precisions.len() * variants.len());
    let mut case_no = 0u64;
    for &term in &a.term {
        for &n in &a.electrons {
            case_no += 1;
            let j = Jastrow::random(&Setup { term, electrons: n, ions: a.ions, periodic: !a.open, stars: a.stars, seed: r.seed(case_no) });
            for &w in &a.walkers {
                r.step(format!("jastrow {} electrons={n} walkers={w}: reference", term.name()));
                let seed = r.seed(case_no * 7919 + w as u64);
                let pos = jw::random_positions(&j, w, seed);
                let moves = jw::random_moves(&j, &pos, w, a.moves, 0.5, seed + 1);
                let which = Sample::new(n, a.check_electrons, &[], seed ^ 0xE1EC).items;
                let checked = Sample::budgeted(w, walker_cost(&j, which.len(), moves.electrons.len()), a.check_walkers, &[], seed ^ 0xC4EC);
                let (vgl, ratio, accept) = references(&j, &pos, &moves, &checked, &which);
                let inputs = Inputs { vgl, ratio, accept, walkers: w, pos, moves, checked, which };
                let ctx = Ctx { j: &j, ops: &ops, variants: &variants, reps };
                for &p in &precisions {
                    kernels::by_precision!(p => sweep(r, &ctx, &inputs))?;
                }
            }
        }
    }
    Ok(())
}

struct Ctx<'a> {
    j: &'a Jastrow<f64>,
    ops: &'a [&'a str],
    variants: &'a [Variant],
    reps: usize,
}

/// Every operation and variant of one case in one precision: evaluation in T, sums in A.
fn sweep<T: Real, A: Real>(r: &mut Runner, c: &Ctx, inp: &Inputs) -> Result<()> {
    let p = Precision::of::<T, A>();
    let (j, n, w) = (c.j, c.j.electrons, inp.walkers);
    let nm = inp.moves.electrons.len();
    let tol = tolerance(p, n);
    let checked = |v: Vec<f64>| inp.checked.gather(&v, COMPONENTS * inp.which.len());
    let mut gpu = match r.gpu() {
        Some(g) if c.variants.contains(&Variant::Gpu) => {
            let mut g = GpuJastrow::<T, A>::new(g, j, w, nm)?;
            g.set_positions(&inp.pos)?;
            g.set_moves(&inp.moves)?;
            Some(g)
        }
        _ => None,
    };
    let f = Fast::<T>::new(j);
    let mt = MovesT::<T>::new(&inp.moves);
    let mut batch = Batch::<T, A>::new(&inp.pos, w, n);
    for &op in c.ops {
        let mut case = Case::new("jastrow", op, p).size("electrons", n).size("walkers", w).param("term", j.term.name()).param("cell", if j.cell.periodic { "periodic" } else { "open" });
        if op != "vgl" {
            case = case.size("moves", nm);
        }
        if j.ion_count() > 0 {
            case = case.size("ions", j.ion_count());
        }
        if j.term == Term::P {
            case = case.size("g_vectors", j.p.n.len());
        }
        let (items, unit) = if op == "vgl" { (w as f64, "walker evals/s") } else { (w as f64 * nm as f64, "electron moves/s") };
        let work = Work { bytes: jw::bytes(op, w, n, nm, std::mem::size_of::<T>(), std::mem::size_of::<A>()), model: BytesModel::Compulsory, flops: jw::flops(j, op, w, nm), items, unit };
        r.step(format!("jastrow {op} {} {p} electrons={n} walkers={w}", j.term.name()));
        if c.variants.contains(&Variant::CpuRef) && p == Precision::Double && op != "accept" {
            let t = r.time_reps(Variant::CpuRef, 1, || -> Result<()> {
                let all: Vec<usize> = (0..n).collect();
                std::hint::black_box(match op {
                    "vgl" => reference::electrons(j, &inp.pos, w, &all),
                    _ => reference::ratios(j, &inp.pos, w, &inp.moves),
                });
                Ok(())
            })?;
            r.record(&case, Variant::CpuRef, t, work, &[])?;
        }
        if c.variants.contains(&Variant::Cpu) {
            let (t, checks) = match op {
                "vgl" => {
                    let t = r.time_reps(Variant::Cpu, c.reps, || -> Result<()> {
                        cpu::vgl(&f, &mut batch);
                        Ok(())
                    })?;
                    (t, state_checks(&checked(batch.pick(&inp.which)), &inp.vgl, inp.which.len(), tol))
                }
                "ratio" => {
                    cpu::vgl(&f, &mut batch);
                    let mut out = vec![A::nan(); nm * w * 4];
                    let t = r.time_reps(Variant::Cpu, c.reps, || -> Result<()> {
                        cpu::ratio(&f, &batch, &mt, &mut out);
                        Ok(())
                    })?;
                    let out: Vec<f64> = out.iter().map(|x| x.f64()).collect();
                    (t, ratio_checks(&out, &inp.ratio, &inp.checked, tol))
                }
                _ => {
                    cpu::vgl(&f, &mut batch);
                    // accepting the same proposals again leaves the state where the first pass put it: repeatable
                    let t = r.time_reps(Variant::Cpu, c.reps, || -> Result<()> {
                        cpu::accept(&f, &mut batch, &mt);
                        Ok(())
                    })?;
                    let checks = state_checks(&checked(batch.pick(&inp.which)), &inp.accept, inp.which.len(), tol);
                    batch = Batch::new(&inp.pos, w, n);
                    (t, checks)
                }
            };
            r.record(&case, Variant::Cpu, t, work, &checks)?;
            r.extra("checked_walkers", inp.checked.len() as f64);
        }
        if let Some(g) = gpu.as_mut() {
            let (t, checks) = match op {
                "vgl" => {
                    let t = r.time_reps(Variant::Gpu, c.reps, || g.vgl())?;
                    g.poison()?;
                    g.vgl()?;
                    (t, state_checks(&checked(cpu::pick(&g.state()?, w, n, &inp.which)), &inp.vgl, inp.which.len(), tol))
                }
                "ratio" => {
                    g.vgl()?;
                    let t = r.time_reps(Variant::Gpu, c.reps, || g.ratios())?;
                    g.poison()?;
                    g.vgl()?;
                    g.ratios()?;
                    (t, ratio_checks(&g.ratio_outputs()?, &inp.ratio, &inp.checked, tol))
                }
                _ => {
                    g.vgl()?;
                    let t = r.time_reps(Variant::Gpu, c.reps, || g.accepts())?;
                    let checks = state_checks(&checked(cpu::pick(&g.state()?, w, n, &inp.which)), &inp.accept, inp.which.len(), tol);
                    g.set_positions(&inp.pos)?;
                    (t, checks)
                }
            };
            r.record(&case, Variant::Gpu, t, work, &checks)?;
            r.extra("checked_walkers", inp.checked.len() as f64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Jastrow factor of `n` electrons (and `ions` ions), `w` walkers, 4 moves each, and the CPU kernel's state.
    fn fixture(term: Term, n: usize, ions: usize, w: usize) -> (Jastrow<f64>, Vec<f64>, Moves, Batch<f64, f64>) {
        let j = Jastrow::random(&Setup { term, electrons: n, ions, periodic: true, stars: 8, seed: 1 });
        let pos = jw::random_positions(&j, w, 2);
        let moves = jw::random_moves(&j, &pos, w, 4, 0.5, 3);
        let mut batch = Batch::<f64, f64>::new(&pos, w, n);
        cpu::vgl(&Fast::<f64>::new(&j), &mut batch);
        (j, pos, moves, batch)
    }

    #[test]
    fn a_wrong_last_walker_or_last_electron_fails() {
        let (n, w) = (40, 10);
        let (j, pos, moves, batch) = fixture(Term::BSpline, n, 0, w);
        let tol = tolerance(Precision::Double, n);
        let passes = |state: &[f64], s: &Sample, which: &[usize]| {
            let (vgl, _, _) = references(&j, &pos, &moves, s, which);
            let fast = s.gather(&cpu::pick(state, w, n, which), COMPONENTS * which.len());
            state_checks(&fast, &vgl, which.len(), tol).iter().all(Check::passed)
        };
        let s = Sample::new(w, 3, &[], 4);
        let which = Sample::new(n, 16, &[], 5).items;
        // the rule before: the first 2 walkers, 16 electrons spread evenly from the first (never the last)
        let (old, old_which) = (Sample { items: vec![0, 1], total: w }, (0..16).map(|e| e * n / 16).collect::<Vec<_>>());
        assert!(passes(&batch.state, &s, &which));
        for (walker, electron) in [(w - 1, which[5]), (0, n - 1)] {
            let mut bad = batch.state.clone();
            bad[walker * COMPONENTS * n + electron] += 1e-6; // the two-body value U2 of one electron
            assert!(!passes(&bad, &s, &which), "walker {walker} electron {electron}");
            assert!(passes(&bad, &old, &old_which), "walker {walker} electron {electron}");
        }
    }

    #[test]
    fn ratios_of_the_sampled_walkers_line_up() {
        let (n, w) = (12, 5);
        let (j, pos, moves, batch) = fixture(Term::Pade, n, 2, w);
        let f = Fast::<f64>::new(&j);
        let mut out = vec![0.0f64; 4 * w * 4];
        cpu::ratio(&f, &batch, &MovesT::new(&moves), &mut out);
        let s = Sample::new(w, 3, &[], 9);
        let (_, ratio, _) = references(&j, &pos, &moves, &s, &[0]);
        let tol = tolerance(Precision::Double, n);
        assert!(ratio_checks(&out, &ratio, &s, tol).iter().all(Check::passed));
        out[(3 * w + w - 1) * 4] += 1e-6; // the last walker's log ratio of the last move
        assert!(!ratio_checks(&out, &ratio, &s, tol).iter().all(Check::passed));
    }
}
