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
use kernels::pseudopotential::{self as pp, cpu, gpu::GpuPseudo, reference, slab::Slab, Channels, Energies, Job, Rule, Setup, Walkers};
use kernels::sample::Sample;
use kernels::{Check, Precision, Real};
use std::collections::BTreeMap;

/// Nonlocal pseudopotential energy (BFD carbon) of walkers in a synthetic diamond-like solid: job list, batched
/// determinant ratios at the quadrature points, sum per walker. Example, 256 atoms and 64 walkers:
///   pseudopotential --atoms 256 --walkers 64 --quadrature 12
#[derive(clap::Parser, Debug)]
#[command(name = "pseudopotential", version, verbatim_doc_comment)]
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
    /// Walkers whose energies and ratios are checked against the f64 reference: the first, the last, one in every
    /// GPU launch of 65535 quadrature points and a seeded random rest (default: as many as about a second of
    /// reference work affords, at least the first and the last).
    #[arg(long)]
    pub check_walkers: Option<usize>,
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

/// The reference results of every walker some sample holds, and where each walker's jobs start in job order.
struct Reference {
    /// (energy, ratios in job order) by walker
    walkers: BTreeMap<usize, (f64, Vec<f64>)>,
    /// `first_job[w]`: jobs of the walkers before w (walkers + 1 entries)
    first_job: Vec<usize>,
    nq: usize,
}

/// Offsets of each walker's jobs in a job list ordered by walker (`walkers + 1` entries).
fn first_jobs(jobs: &[Job], walkers: usize) -> Vec<usize> {
    let mut first = vec![0; walkers + 1];
    for j in jobs {
        first[j.walker + 1] += 1;
    }
    for w in 0..walkers {
        first[w + 1] += first[w];
    }
    first
}

/// The walkers of each GPU launch of phase 2 (chunks of `gpu::CHUNK` quadrature points in job order): a walker
/// whose points fall in a chunk belongs to it.
fn gpu_chunks(first_job: &[usize], nq: usize) -> Vec<std::ops::Range<usize>> {
    let points = first_job.last().copied().unwrap_or(0) * nq;
    let walker_of = |point: usize| first_job.partition_point(|&f| f * nq <= point) - 1;
    (0..points).step_by(pp::gpu::CHUNK).map(|p0| walker_of(p0)..walker_of((p0 + pp::gpu::CHUNK).min(points) - 1) + 1).collect()
}

/// Reference flops of one walker: per quadrature point every orbital's 64 B-spline terms (about 100 flops each)
/// and the Jastrow sums over the other electrons and the ions (about 160 flops a functor), at the expected jobs.
fn walker_cost(s: &Setup<f64>) -> f64 {
    let jastrow = if s.jastrow.is_some() { 160.0 * (s.electrons + s.ion_count()) as f64 } else { 0.0 };
    let point = 6400.0 * s.per_spin() as f64 + jastrow;
    s.expected_jobs() * s.rule.points() as f64 * point + s.electrons as f64 * jastrow
}

/// The walkers each walker count checks: first, last, one in every GPU chunk and a seeded random rest.
fn checked_walkers(a: &Args, s: &Setup<f64>, counts: &[usize], first_job: &[usize], seed: u64) -> BTreeMap<usize, Sample> {
    let nq = s.rule.points();
    counts.iter().map(|&nw| (nw, Sample::budgeted(nw, walker_cost(s), a.check_walkers, &gpu_chunks(&first_job[..=nw], nq), seed ^ nw as u64))).collect()
}

impl Reference {
    /// The reference of every walker the samples hold, walkers in parallel.
    fn new(s: &Setup<f64>, w: &Walkers<f64>, checked: &BTreeMap<usize, Sample>, first_job: Vec<usize>) -> Reference {
        let union: std::collections::BTreeSet<usize> = checked.values().flat_map(|c| c.items.iter().copied()).collect();
        let union = Sample { items: union.into_iter().collect(), total: w.count };
        let results = union.par_flat_map(|i| {
            let e = reference::energies(s, &w.range(i..i + 1));
            vec![(e.energy[0], e.ratios)]
        });
        Reference { walkers: union.items.iter().copied().zip(results).collect(), first_job, nq: s.rule.points() }
    }
}

/// Energies and ratios of the walkers `s` against the reference. The fast ratios are in job order; a job list of
/// another length cannot be lined up and fails.
fn checks(fast: &Energies, re: &Reference, s: &Sample, p: Precision) -> Vec<Check> {
    let ratios = |w: usize| re.first_job[w] * re.nq..re.first_job[w + 1] * re.nq;
    let total = re.first_job[s.total] * re.nq;
    let (mut fast_r, mut ref_r) = (vec![], vec![]);
    for &w in &s.items {
        let range = ratios(w);
        match fast.ratios.get(range.clone()).filter(|_| fast.ratios.len() == total) {
            Some(x) => fast_r.extend_from_slice(x),
            None => fast_r.extend(std::iter::repeat_n(f64::NAN, range.len())),
        }
        ref_r.extend_from_slice(&re.walkers[&w].1);
    }
    let ref_e: Vec<f64> = s.items.iter().map(|w| re.walkers[w].0).collect();
    vec![
        Check::compare("energy", &s.gather(&fast.energy, 1), &ref_e, tolerance(p)),
        Check::compare("ratio", &fast_r, &ref_r, tolerance(p)),
    ]
}

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    let cases = a.cases();
    let all_atoms: Vec<usize> = cases.iter().map(|c| c.0).collect();
    let all_walkers: Vec<usize> = cases.iter().flat_map(|c| c.1.iter().copied()).collect();
    positive("atoms", &all_atoms)?;
    positive("walkers", &all_walkers)?;
    if let Some(n) = a.check_walkers {
        positive("check-walkers", &[n])?;
    }
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
        r.step(format!("reference of a {atoms}-atom cell"));
        // the job list orders jobs by walker, and a smaller walker count is the first walkers: one list serves all
        let first_job = first_jobs(&cpu::jobs(&setup, &walkers), max_w);
        let checked = checked_walkers(a, &setup, walker_counts, &first_job, r.seed(2000 + i as u64));
        let re = Reference::new(&setup, &walkers, &checked, first_job);
        let f64s = (&setup, &walkers, &re, &checked);
        for p in r.precisions() {
            kernels::by_precision!(p => sweep(r, a, walker_counts, f64s))?;
        }
    }
    Ok(())
}

/// The double-precision cell and walkers, the reference of the checked walkers and the walkers each count checks.
type Double<'a> = (&'a Setup<f64>, &'a Walkers<f64>, &'a Reference, &'a BTreeMap<usize, Sample>);

/// The walker counts `counts` of one cell with every variant in one precision: storage S, arithmetic A.
fn sweep<S: Real, A: Real>(r: &mut Runner, a: &Args, counts: &[usize], f64s: Double) -> Result<()> {
    let p = Precision::of::<S, A>();
    let (re, checked) = (f64s.2, f64s.3);
    let (setup, all) = (kernels::real::in_storage(f64s.0, |s| s.convert::<S>()), kernels::real::in_storage(f64s.1, |w| w.convert::<S>()));
    let (setup, all) = (&*setup, &*all);
    let atoms = setup.ion_count();
    for &nw in counts {
        let w = all.prefix(nw);
        let jobs = cpu::jobs(setup, &w);
        let nq = setup.rule.points();
        let s = &checked[&nw];
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
        if r.runs(Variant::CpuRef) && p == Precision::Double && s.len() == nw {
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
            r.record(&case, Variant::Cpu, t, work, &checks(&out, re, s, p))?;
            r.extra("checked_walkers", s.len() as f64);
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
            r.record(&case, Variant::Gpu, t, work, &checks(&out, re, s, p))?;
            r.extra("checked_walkers", s.len() as f64);
            r.extra("walker_energies_per_s", nw as f64 / t.median);
            r.extra("joblist_share", t_jobs.median / t.median);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn gpu_chunks_name_the_walkers_of_each_launch() {
        // one point per job; walker 2 has no jobs
        let first = [0, 40000, 80000, 80000, 150000];
        assert_eq!(gpu_chunks(&first, 1), vec![0..2, 1..4, 3..4]);
        assert_eq!(gpu_chunks(&[0, 0], 12), vec![]);
    }

    #[test]
    fn a_wrong_middle_launch_fails() {
        // enough walkers of a small cell for three GPU launches; every ratio of the middle launch wrong
        let a = Args::try_parse_from(["pseudopotential", "--check-walkers", "2"]).unwrap();
        let setup = Setup::carbon(8, Rule::P12, Channels::carbon_bfd(), 1).unwrap();
        let nq = setup.rule.points();
        let walkers = Walkers::random(&setup, 1, 2);
        let per_walker = cpu::jobs(&setup, &walkers).len().max(1) * nq;
        let count = 3 * pp::gpu::CHUNK / per_walker;
        let walkers = Walkers::random(&setup, count, 2);
        let first_job = first_jobs(&cpu::jobs(&setup, &walkers), count);
        assert!(gpu_chunks(&first_job, nq).len() >= 3);
        let checked = checked_walkers(&a, &setup, &[count], &first_job, 3);
        let s = &checked[&count];
        let re = Reference::new(&setup, &walkers, &checked, first_job);
        let mut fast = cpu::energies::<f64, f64>(&setup, &walkers);
        let passes = |fast: &Energies, s: &Sample| checks(fast, &re, s, Precision::Double).iter().all(Check::passed);
        assert!(passes(&fast, s));
        for x in &mut fast.ratios[pp::gpu::CHUNK..2 * pp::gpu::CHUNK] {
            *x *= 1.0 + 1e-6;
        }
        assert!(!passes(&fast, s), "sample {:?}", s.items);
        // the rule before: walker 0 alone
        assert!(passes(&fast, &Sample { items: vec![0], total: count }));
    }
}
