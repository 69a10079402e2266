//! `pseudopotential`: the nonlocal pseudopotential energy of a batch of walkers by spherical quadrature (paper 000):
//! job list of electron-ion pairs within the cutoff, then all wavefunction ratios in one batch, then the sum per
//! walker; CPU and GPU in every precision, checked against the f64 reference. See `kernels::pseudopotential`.
//!
//! The ratio is the Slater determinant's (B-spline orbitals dotted with the inverse's row) times the Jastrow ratio
//! (two-body and one-body B-spline functors of the jastrow kernel, one sum over the other electrons and the ions per
//! point); `--jastrow off` leaves determinant ratios only.
//!
//! Sizes: every `--atoms` x `--walkers` combination, or the explicit `--pairs` (the full suite: a size sweep at 64
//! walkers and walker sweeps to 1024 at 32 and 128 atoms, without the costly corner of large cells and many walkers,
//! whose CPU baseline alone would take minutes).

use crate::common::KernelArgs;
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::{BytesModel, Case, Runner, Variant, Work};
use kernels::pseudopotential::{self as pp, cpu, gpu::GpuPseudo, reference, slab::Slab, Channels, Energies, Rule, Setup, Walkers};
use kernels::{Check, Precision, Real};

/// Nonlocal pseudopotential energy (BFD carbon) of walkers in a synthetic diamond-like solid: job list, batched
/// determinant ratios at the quadrature points, sum per walker. Example, 256 atoms and 64 walkers:
///   pseudopotential --atoms 256 --walkers 64 --quadrature 12
#[derive(clap::Parser, Debug)]
#[command(name = "pseudopotential", version)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Atoms in the cell (multiples of 8: diamond cells), comma-separated; 4 valence electrons each.
    #[arg(long, value_delimiter = ',', default_value = "8,64")]
    pub atoms: Vec<usize>,
    /// Walkers evaluated together, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,32")]
    pub walkers: Vec<usize>,
    /// Explicit cases ATOMS:WALKERS, comma-separated (e.g. 32:1024,256:64), instead of every --atoms x --walkers
    /// combination.
    #[arg(long, value_delimiter = ',', conflicts_with_all = ["atoms", "walkers"])]
    pub pairs: Vec<Pair>,
    /// Quadrature points on the sphere: 6, 12 (icosahedron, default), 18, 26 or 50.
    #[arg(long, default_value = "12")]
    pub quadrature: Rule,
    /// Multiply each ratio by the Jastrow ratio (two-body and one-body): on or off.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub jastrow: String,
    /// Walkers whose energies and ratios are checked against the f64 reference.
    #[arg(long, default_value_t = 1)]
    pub check_walkers: usize,
}

/// One case of `--pairs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub atoms: usize,
    pub walkers: usize,
}

impl std::str::FromStr for Pair {
    type Err = String;
    fn from_str(s: &str) -> Result<Pair, String> {
        let parse = |(a, w): (&str, &str)| Some(Pair { atoms: a.trim().parse().ok()?, walkers: w.trim().parse().ok()? });
        s.split_once(':').and_then(parse).ok_or_else(|| format!("'{s}' is not ATOMS:WALKERS (e.g. 32:1024)"))
    }
}

impl Args {
    /// The cases to run, by cell: (atoms, walker counts ascending), cells in the order given.
    fn cases(&self) -> Vec<(usize, Vec<usize>)> {
        if self.pairs.is_empty() {
            return self.atoms.iter().map(|&n| (n, self.walkers.clone())).collect();
        }
        let mut out: Vec<(usize, Vec<usize>)> = vec![];
        for p in &self.pairs {
            match out.iter_mut().find(|(n, _)| *n == p.atoms) {
                Some((_, w)) => w.push(p.walkers),
                None => out.push((p.atoms, vec![p.walkers])),
            }
        }
        for (_, w) in &mut out {
            w.sort_unstable();
            w.dedup();
        }
        out
    }
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &["--atoms", "8,16", "--walkers", "1,8"],
        // size sweep at 64 walkers; walker sweeps 1..1024 at 32 and 128 atoms
        Level::Full => &["--pairs", "8:64,16:64,32:64,64:64,128:64,256:64,32:1,32:4,32:16,32:256,32:1024,128:1,128:4,128:16,128:256,128:1024"],
        Level::Score => &["--pairs", "128:256", "--precision", "double,mixed"],
    }
}

/// Largest cell: 256 atoms = 512 orbitals per spin; beyond, the f64 reference of one walker takes minutes.
const MAX_ATOMS: usize = 1024;
const MAX_WALKERS: usize = 4096;

/// Energies and ratios each sum many terms of both signs in the storage precision.
fn tolerance(p: Precision) -> f64 {
    1e3 * p.eps()
}

fn checks(fast: &Energies, re: &Energies, p: Precision) -> Vec<Check> {
    let nv = re.energy.len();
    vec![
        Check::compare("energy", &fast.energy[..nv], &re.energy, tolerance(p)),
        Check::compare("ratio", &fast.ratios[..re.ratios.len()], &re.ratios, tolerance(p)),
    ]
}

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    let cases = a.cases();
    let all_atoms: Vec<usize> = cases.iter().map(|c| c.0).collect();
    let all_walkers: Vec<usize> = cases.iter().flat_map(|c| c.1.iter().copied()).collect();
    positive("atoms", &all_atoms)?;
    positive("walkers", &all_walkers)?;
    positive("check-walkers", &[a.check_walkers])?;
    if let Some(n) = all_atoms.iter().find(|&&n| n % 8 != 0) {
        bail!("--atoms {n} is not a multiple of 8 (the cell is made of 8-atom diamond cells)");
    }
    if let Some(n) = all_atoms.iter().find(|&&n| n > MAX_ATOMS) {
        bail!("--atoms {n} is more than {MAX_ATOMS}");
    }
    if let Some(w) = all_walkers.iter().find(|&&w| w > MAX_WALKERS) {
        bail!("--walkers {w} is more than {MAX_WALKERS}");
    }
    let variants = [Variant::CpuRef, Variant::Cpu, Variant::Gpu].into_iter().filter(|v| r.runs(*v)).count();
    r.plan(all_walkers.len() * r.precisions().len() * variants);
    for (i, (atoms, walker_counts)) in cases.iter().enumerate() {
        let (atoms, max_w) = (*atoms, *walker_counts.iter().max().unwrap());
        r.step(format!("building a {atoms}-atom cell and {max_w} walkers"));
        let mut setup = Setup::carbon(atoms, a.quadrature, Channels::carbon_bfd(), r.seed(i as u64 + 1)).map_err(anyhow::Error::msg)?;
        if a.jastrow == "off" {
            setup = setup.without_jastrow();
        }
        let walkers = Walkers::random(&setup, max_w, r.seed(1000 + i as u64));
        let nval = a.check_walkers.min(max_w);
        let re = reference::energies(&setup, &walkers.prefix(nval));
        let (s32, w32) = (setup.convert::<f32>(), walkers.convert::<f32>());
        for p in r.precisions() {
            match p {
                Precision::Double => sweep::<f64, f64>(r, a, walker_counts, (&setup, &walkers), &setup, &walkers, &re, p)?,
                Precision::Single => sweep::<f32, f32>(r, a, walker_counts, (&setup, &walkers), &s32, &w32, &re, p)?,
                Precision::Mixed => sweep::<f32, f64>(r, a, walker_counts, (&setup, &walkers), &s32, &w32, &re, p)?,
            }
        }
    }
    Ok(())
}

/// The walker counts `counts` of one cell with every variant in one precision: storage S, arithmetic A.
/// `f64` is the double-precision cell and walkers (for the reference), `re` the reference of the checked walkers.
#[allow(clippy::too_many_arguments)]
fn sweep<S: Real, A: Real>(r: &mut Runner, a: &Args, counts: &[usize], f64s: (&Setup<f64>, &Walkers<f64>), setup: &Setup<S>, all: &Walkers<S>, re: &Energies, p: Precision) -> Result<()> {
    let atoms = setup.ion_count();
    for &nw in counts {
        let w = all.prefix(nw);
        let jobs = cpu::jobs(setup, &w);
        let nq = setup.rule.points();
        // the checked walkers' jobs come first in job order
        let nv = re.energy.len().min(nw);
        let checked_points = jobs.iter().filter(|j| j.walker < nv).count() * nq;
        let re_full = Energies { energy: re.energy[..nv].to_vec(), ratios: re.ratios[..checked_points].to_vec(), jobs: 0 };
        let mut rows: Vec<(usize, usize)> = jobs.iter().map(|j| (j.walker, j.electron)).collect();
        rows.dedup();
        let row_bytes = setup.table.stride * std::mem::size_of::<S>();
        // 64 table rows per point, overlapping stencils counted again (up to the whole table): passes
        let work = Work {
            model: BytesModel::Passes,
            bytes: pp::bytes(jobs.len() * nq, setup.table.bytes(), rows.len(), row_bytes, nw * setup.electrons),
            flops: pp::flops(setup, jobs.len(), rows.len(), nw),
            items: (jobs.len() * nq) as f64,
            unit: "ratios/s",
        };
        let case = Case::new("pseudopotential", "energy", p).size("atoms", atoms).size("walkers", nw).param("quadrature", nq).param("jastrow", &a.jastrow);
        r.step(format!("pseudopotential {p} atoms={atoms} walkers={nw} jobs={}", jobs.len()));
        if r.runs(Variant::CpuRef) && p == Precision::Double && nw <= a.check_walkers {
            // the reference is timed only where it covers the whole case (its checked walkers)
            let w64 = f64s.1.prefix(nw);
            let t = r.time_reps(Variant::CpuRef, 1, || -> Result<()> {
                std::hint::black_box(reference::energies(f64s.0, &w64));
                Ok(())
            })?;
            r.record(&case, Variant::CpuRef, t, work, &[])?;
            r.extra("walker_energies_per_s", nw as f64 / t.median);
        }
        if r.runs(Variant::Cpu) {
            // phase 1 alone first: the record takes its repetition count from the last timing
            let t_jobs = r.time_reps(Variant::Cpu, 3, || -> Result<()> {
                std::hint::black_box(cpu::jobs(setup, &w));
                Ok(())
            })?;
            let mut out = Energies::default();
            let t = r.time(Variant::Cpu, || -> Result<()> {
                out = cpu::energies::<S, A>(setup, &w);
                Ok(())
            })?;
            r.record(&case, Variant::Cpu, t, work, &checks(&out, &re_full, p))?;
            r.extra("walker_energies_per_s", nw as f64 / t.median);
            r.extra("joblist_share", t_jobs.median / t.median);
        }
        if r.runs(Variant::Gpu) {
            let Some(gpu) = r.gpu().cloned() else { continue };
            let slab = Slab::upload(&gpu, setup, &w, false)?;
            let mut g = GpuPseudo::<S, A>::new(&gpu, setup, &slab)?;
            let t_jobs = r.time_reps(Variant::Gpu, 3, || g.job_list(&slab))?;
            let t = r.time(Variant::Gpu, || g.evaluate(&slab).map(|_| ()))?;
            g.poison()?;
            let energy = g.evaluate(&slab)?;
            let out = Energies { energy, ratios: g.ratios()?, jobs: g.jobs_count() };
            r.record(&case, Variant::Gpu, t, work, &checks(&out, &re_full, p))?;
            r.extra("walker_energies_per_s", nw as f64 / t.median);
            r.extra("joblist_share", t_jobs.median / t.median);
        }
    }
    Ok(())
}
