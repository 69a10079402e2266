//! `ewald`: Ewald energies of electron-gas (and ion) configurations for a batch of walkers, full energy and one
//! electron move, CPU and GPU, every precision, each fast result checked against the f64 reference. See
//! `kernels::ewald` for the physics, the automatic splitting parameter and the kernels.

use crate::common::KernelArgs;
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::{BytesModel, Case, Runner, Variant, Work};
use kernels::ewald::{self as ew, cpu::CpuEwald, gpu::GpuEwald, reference::Reference, Ewald, Ions, Lattice, Move};
use kernels::sample::Sample;
use kernels::{Check, Precision, Real};
use std::collections::BTreeMap;

/// Ewald sums of periodic Coulomb systems as CASINO evaluates them in electron-gas runs (paper 003).
///
/// Electrons sit at random in a cell of the chosen lattice at density r_s (with optional ions of equal charge);
/// each walker is one configuration. `energy` is the full energy of every walker, `move` the change when one
/// electron per walker moves. The splitting parameter and cutoffs are chosen for --accuracy and printed. Example,
/// CASINO's closed-shell fcc sizes:
///   ewald --lattice fcc --electrons 118,226,678,1290 --walkers 256 --precision double,single
#[derive(clap::Parser, Debug)]
#[command(name = "ewald", version, verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Cell lattice: sc, fcc, bcc, triclinic (3D) or square, triangular (2D).
    #[arg(long, default_value = "fcc")]
    pub lattice: Lattice,
    /// Electrons per walker, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "54,118,226")]
    pub electrons: Vec<usize>,
    /// Walkers per launch, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "64")]
    pub walkers: Vec<usize>,
    /// Density parameter r_s (bohr): volume per electron 4/3 pi r_s^3 (3D) or pi r_s^2 (2D).
    #[arg(long, default_value_t = 2.0)]
    pub rs: f64,
    /// Ions (fixed, random positions, equal charges summing to the electron count; 0 = electron gas).
    #[arg(long, default_value_t = 0)]
    pub ions: usize,
    /// Requested absolute accuracy of the sums, Ha per particle.
    #[arg(long, default_value_t = 1e-8)]
    pub accuracy: f64,
    /// Splitting parameter alpha (bohr^-1, erfc(alpha r) / r in real space) instead of the automatic choice.
    #[arg(long)]
    pub alpha: Option<f64>,
    /// Operations: energy (full energy of each walker), move (change for one electron move per walker).
    #[arg(long, value_delimiter = ',', default_value = "energy,move")]
    pub ops: Vec<String>,
    /// Walkers checked against the f64 reference: the first, the last and a seeded random rest (default: as many
    /// as about a second of reference work affords, at least the first and the last). cpu-ref times walker 0.
    #[arg(long)]
    pub check_walkers: Option<usize>,
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// Suite command lines: the quick one has ions (all three parts of the energy); the full one is CASINO's
/// closed-shell fcc electron gas (paper 003's Ewald speedup chart) from 14 to 1930 electrons.
pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &["--lattice", "fcc", "--electrons", "14,38", "--ions", "2", "--walkers", "8"],
        Level::Full => &["--lattice", "fcc", "--electrons", "14,38,54,118,226,678,1290,1642,1930", "--walkers", "64"],
        Level::Score => &["--lattice", "fcc", "--electrons", "678", "--walkers", "64", "--precision", "double,mixed"],
    }
}

/// Tolerances in units of the precision's epsilon (normwise relative over the checked walkers). Energies are sums of
/// many terms of both signs with about tenfold cancellation; a move is a difference of two such sums, smaller. Plus
/// the reference's own rounding: plain f64 sums of ~N^2 pair terms, whose error grows like N f64 epsilons.
fn tolerance(op: &str, p: Precision, electrons: usize) -> f64 {
    let units = if op == "energy" { 512.0 } else { 4096.0 };
    units * p.eps() + 64.0 * electrons as f64 * f64::EPSILON
}

const MAX_ELECTRONS: usize = 20000;

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    positive("electrons", &a.electrons)?;
    positive("walkers", &a.walkers)?;
    if let Some(n) = a.electrons.iter().find(|&&n| n > MAX_ELECTRONS) {
        bail!("--electrons {n} is more than this mini-app supports ({MAX_ELECTRONS})");
    }
    if let Some(w) = a.walkers.iter().find(|&&w| w > 65535) {
        bail!("--walkers {w} is more than one launch takes (65535)");
    }
    if !(a.rs.is_finite() && a.rs > 0.0) {
        bail!("--rs must be a positive number of bohr, got {}", a.rs);
    }
    if !(a.accuracy > 0.0 && a.accuracy < 1.0) {
        bail!("--accuracy must be between 0 and 1 Ha per particle, got {}", a.accuracy);
    }
    if let Some(alpha) = a.alpha {
        if !(alpha.is_finite() && alpha > 0.0) {
            bail!("--alpha must be a positive number (bohr^-1), got {alpha}");
        }
    }
    if let Some(n) = a.electrons.iter().find(|&&n| a.ions > 0 && n % a.ions != 0) {
        bail!("--ions {} does not divide --electrons {n}: the ions must carry equal integer charges", a.ions);
    }
    if let Some(op) = a.ops.iter().find(|o| !["energy", "move"].contains(&o.as_str())) {
        bail!("unknown operation '{op}': expected energy or move");
    }
    let variants = Variant::ALL.into_iter().filter(|v| r.runs(*v)).count();
    r.plan(a.electrons.len() * a.walkers.len() * a.ops.len() * r.precisions().len() * variants);
    let max_w = *a.walkers.iter().max().unwrap();
    for (case_no, &n) in a.electrons.iter().enumerate() {
        let seed = r.seed(case_no as u64 + 1);
        let cell = ew::electron_gas_cell(a.lattice, n, a.rs);
        let ions = if a.ions > 0 { Ions::random(&cell, a.ions, (n / a.ions) as f64, seed) } else { Ions::default() };
        r.step(format!("choosing Ewald parameters for {n} electrons"));
        let e = match a.alpha {
            Some(alpha) => Ewald::with_alpha(cell.clone(), alpha, n, ions, a.accuracy),
            None => Ewald::auto(cell.clone(), n, ions, a.accuracy),
        };
        r.say(&format!(
            "ewald {} N={n} r_s={}: alpha = {:.5} /bohr{}, r_c = {:.4} bohr ({} images), G_c = {:.4} /bohr ({} G vectors), for {:.0e} Ha per particle",
            a.lattice.name(),
            a.rs,
            e.params.alpha,
            if a.alpha.is_some() { " (given)" } else { " (automatic)" },
            e.params.rc,
            e.images.len(),
            e.params.gc,
            e.gvecs.len(),
            a.accuracy
        ));
        let pos = ew::random_configs(&cell, max_w, n, seed + 1);
        let moves = ew::random_moves(&cell, &pos, max_w, a.rs, seed + 2);
        r.step(format!("reference for {n} electrons"));
        let reference = Reference::new(&cell, e.params);
        let configs = |w: usize| &pos[w * n..(w + 1) * n];
        // each walker count checks its own sample; the reference runs once for their union, walkers in parallel
        let cost = reference.cost(n, e.ions.len());
        let checked: BTreeMap<usize, Sample> = a.walkers.iter().map(|&w| (w, Sample::budgeted(w, cost, a.check_walkers, &[], seed ^ 0xC4EC ^ w as u64))).collect();
        let union = Sample { items: checked.values().flat_map(|s| s.items.iter().copied()).collect::<std::collections::BTreeSet<_>>().into_iter().collect(), total: max_w };
        let values = union.par_flat_map(|w| vec![(reference.energy(configs(w), &e.ions).total(), reference.move_change(configs(w), &e.ions, &moves[w]))]);
        let refs: BTreeMap<usize, (f64, f64)> = union.items.iter().copied().zip(values).collect();
        if r.runs(Variant::CpuRef) {
            for op in a.ops.iter().map(String::as_str) {
                // single-threaded, one repetition, walker 0: the reference is slow and only its results matter much
                let t = r.time_reps(Variant::CpuRef, 1, || -> Result<()> {
                    std::hint::black_box(match op {
                        "energy" => reference.energy(configs(0), &e.ions).total(),
                        _ => reference.move_change(configs(0), &e.ions, &moves[0]),
                    });
                    Ok(())
                })?;
                r.record(&case(a, &e, op, Precision::Double, 1), Variant::CpuRef, t, work(&e, op, 1, 8, 8), &[])?;
            }
        }
        // With a given alpha, the energy must equal the one of the automatic choice within the accuracy.
        let alpha_check = a.alpha.map(|_| {
            let auto = Ewald::auto(cell.clone(), n, e.ions.clone(), a.accuracy);
            let other = Reference::new(&cell, auto.params).energy(configs(0), &e.ions).total();
            Check::scalar("energy vs automatic alpha", refs[&0].0, other, 2.0 * a.accuracy * n as f64 / other.abs())
        });
        let sys = System { a, e: &e, pos: &pos, moves: &moves, refs: &refs, checked: &checked, alpha_check };
        for p in r.precisions() {
            kernels::by_precision!(p => sys.sweep(r))?;
        }
    }
    Ok(())
}

/// One system size with its inputs and reference results.
struct System<'a> {
    a: &'a Args,
    e: &'a Ewald,
    pos: &'a [[f64; 3]],
    moves: &'a [Move],
    /// Reference energy and move change of every walker some sample holds.
    refs: &'a BTreeMap<usize, (f64, f64)>,
    /// The walkers checked at each walker count.
    checked: &'a BTreeMap<usize, Sample>,
    alpha_check: Option<Check>,
}

fn case(a: &Args, e: &Ewald, op: &str, p: Precision, walkers: usize) -> Case {
    Case::new("ewald", op, p)
        .size("electrons", e.electrons)
        .size("ions", e.ions.len())
        .size("walkers", walkers)
        .size("gvecs", e.gvecs.len())
        .size("images", e.images.len())
        .param("lattice", a.lattice.name())
        .param("rs", a.rs)
        .param("alpha", format!("{:.6}", e.params.alpha))
        .param("rc", format!("{:.5}", e.params.rc))
        .param("gc", format!("{:.5}", e.params.gc))
        .param("accuracy", a.accuracy)
}

/// Work of one repetition over `walkers` walkers with S and A of `s` and `a` bytes.
fn work(e: &Ewald, op: &str, walkers: usize, s: usize, a: usize) -> Work {
    let w = walkers as f64;
    if op == "energy" {
        Work { bytes: w * e.energy_bytes(s, a), model: BytesModel::Compulsory, flops: w * e.energy_flops(), items: w, unit: "energies/s" }
    } else {
        Work { bytes: w * e.move_bytes(s, a), model: BytesModel::Compulsory, flops: w * e.move_flops(), items: w, unit: "electron moves/s" }
    }
}

impl System<'_> {
    fn case(&self, op: &str, p: Precision, walkers: usize) -> Case {
        case(self.a, self.e, op, p, walkers)
    }

    fn work(&self, op: &str, walkers: usize, s: usize, a: usize) -> Work {
        work(self.e, op, walkers, s, a)
    }

    /// Checks of one op's outputs of all `w` walkers (`out`, `[walker]`) on the walkers sampled for that count.
    fn checks<A: Real>(&self, op: &str, out: &[A], p: Precision, w: usize) -> Vec<Check> {
        let s = &self.checked[&w];
        let reference: Vec<f64> = s.items.iter().map(|i| if op == "energy" { self.refs[i].0 } else { self.refs[i].1 }).collect();
        let fast: Vec<f64> = s.gather(out, 1).iter().map(|x| x.f64()).collect();
        let mut c = vec![Check::compare(op, &fast, &reference, tolerance(op, p, self.e.electrons))];
        if op == "energy" {
            c.extend(self.alpha_check.clone());
        }
        c
    }

    /// All walker counts, operations and fast variants in one precision: storage and evaluation S, sums A.
    fn sweep<S: Real, A: Real>(&self, r: &mut Runner) -> Result<()> {
        let p = Precision::of::<S, A>();
        let (n, sb, ab) = (self.e.electrons, std::mem::size_of::<S>(), std::mem::size_of::<A>());
        let max_w = *self.a.walkers.iter().max().unwrap();
        let mut gpu = match r.gpu() {
            Some(g) if r.runs(Variant::Gpu) => Some(GpuEwald::<S, A>::new(g, self.e, max_w)?),
            _ => None,
        };
        let mut cpu = CpuEwald::<S, A>::new(self.e);
        for &w in &self.a.walkers {
            let pos = &self.pos[..w * n];
            let moves = &self.moves[..w];
            r.step(format!("ewald {p} electrons={n} walkers={w}"));
            if r.runs(Variant::Cpu) {
                let mut energy = vec![A::nan(); w];
                let mut change = vec![A::nan(); w];
                for op in &self.a.ops {
                    // a first run (untimed) sets the repetitions: slow cases (large N on the CPU) repeat fewer times
                    let first = std::time::Instant::now();
                    cpu.energy(pos, &mut energy);
                    if op == "move" {
                        cpu.moves(pos, moves, &mut change);
                    }
                    let reps = ((2.0 / first.elapsed().as_secs_f64()).ceil() as usize).max(2);
                    let t = if op == "energy" {
                        r.time_reps(Variant::Cpu, reps, || -> Result<()> {
                            cpu.energy(pos, &mut energy);
                            Ok(())
                        })?
                    } else {
                        r.time_reps(Variant::Cpu, reps, || -> Result<()> {
                            cpu.moves(pos, moves, &mut change);
                            Ok(())
                        })?
                    };
                    let out = if op == "energy" { &energy } else { &change };
                    r.record(&self.case(op, p, w), Variant::Cpu, t, self.work(op, w, sb, ab), &self.checks(op, out, p, w))?;
                    r.extra("checked_walkers", self.checked[&w].len() as f64);
                    // One core: the same kernel on a one-thread pool for a couple of walkers, scaled to the batch.
                    r.extra("one_core_s", one_core::<S, A>(op, self.e, pos, moves)? * w as f64);
                }
            }
            if let Some(g) = gpu.as_mut() {
                g.set_positions(pos)?;
                g.set_moves(moves)?;
                for op in &self.a.ops {
                    let t = if op == "energy" {
                        r.time(Variant::Gpu, || g.launch_energy())?
                    } else {
                        g.launch_energy()?;
                        r.time(Variant::Gpu, || g.launch_move())?
                    };
                    g.poison()?;
                    if op == "energy" {
                        g.launch_energy()?;
                    } else {
                        g.launch_move()?;
                    }
                    let out = g.outputs()?;
                    r.record(&self.case(op, p, w), Variant::Gpu, t, self.work(op, w, sb, ab), &self.checks(op, &out, p, w))?;
                    r.extra("checked_walkers", self.checked[&w].len() as f64);
                }
            }
        }
        Ok(())
    }
}

/// Seconds per walker of the CPU kernel in this precision on one core (the faster of two runs on one walker): the
/// one-core baseline of paper 003's speedup charts, next to the all-core `cpu` record.
fn one_core<S: Real, A: Real>(op: &str, e: &Ewald, pos: &[[f64; 3]], moves: &[Move]) -> Result<f64> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let mut cpu = CpuEwald::<S, A>::new(e);
    let (pos, moves) = (&pos[..e.electrons], &moves[..1]);
    let mut out = vec![A::zero(); 1];
    let mut best = f64::INFINITY;
    pool.install(|| {
        cpu.energy(pos, &mut out);
        for _ in 0..2 {
            let t = std::time::Instant::now();
            if op == "energy" {
                cpu.energy(pos, &mut out);
            } else {
                cpu.moves(pos, moves, &mut out);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
    });
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn a_wrong_energy_of_the_last_or_a_middle_walker_fails() {
        let a = Args::try_parse_from(["ewald", "--walkers", "12", "--check-walkers", "4"]).unwrap();
        let (n, w) = (8, 12);
        let cell = ew::electron_gas_cell(Lattice::Fcc, n, 2.0);
        let e = Ewald::auto(cell.clone(), n, Ions::default(), 1e-8);
        let pos = ew::random_configs(&cell, w, n, 1);
        let moves = ew::random_moves(&cell, &pos, w, 2.0, 2);
        let reference = Reference::new(&cell, e.params);
        let s = Sample::budgeted(w, 1.0, a.check_walkers, &[], 3);
        // the rule before: the first 2 walkers
        let old = Sample { items: vec![0, 1], total: w };
        let refs: BTreeMap<usize, (f64, f64)> = (0..w).map(|i| (i, (reference.energy(&pos[i * n..(i + 1) * n], &e.ions).total(), 0.0))).collect();
        let mut energy = vec![0.0f64; w];
        CpuEwald::<f64, f64>::new(&e).energy(&pos, &mut energy);
        let passes = |s: &Sample, out: &[f64]| {
            let checked = BTreeMap::from([(w, s.clone())]);
            let sys = System { a: &a, e: &e, pos: &pos, moves: &moves, refs: &refs, checked: &checked, alpha_check: None };
            sys.checks("energy", out, Precision::Double, w).iter().all(Check::passed)
        };
        assert!(passes(&s, &energy));
        let middle = *s.items.iter().find(|&&i| (2..w - 1).contains(&i)).expect("a middle walker past the first two");
        for bad_walker in [w - 1, middle] {
            let mut bad = energy.clone();
            bad[bad_walker] *= 1.0 + 1e-9;
            assert!(!passes(&s, &bad), "walker {bad_walker}");
            assert!(passes(&old, &bad), "walker {bad_walker}");
        }
    }
}
