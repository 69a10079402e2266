//! The procurement score: one machine against a reference machine on a fixed workload, run by rule, with how sure
//! the number is. `qmcbench score` prints it; [`crate::score_report`] writes it as one HTML page.
//!
//! **Workload.** The programs define it (`miniapps::score`): a version and a list of cases, each measured on the GPU
//! and on the host's CPU (all cores). A scoring run (`qmcbench suite --score`) marks every record it writes with the
//! parameter `score=<version>`, and each record names its commit.
//!
//! **Rules.** The records of a side (one folder) are scored only if
//! - it holds a scoring run of this workload version, and of no other;
//! - every scoring record passed its check against the f64 reference: `validation.status` is exactly `"passed"` (a
//!   failed, skipped or unchecked record is not a measurement to buy on);
//! - they were all measured on one machine, the one the folder is named for ([`machine`]);
//! - every case of the workload is there (complete) and each is matched by records of one case key (unambiguous).
//!
//! Otherwise [`side`] refuses with one sentence naming what is missing. The sides need not run the same commit; both
//! commits are printed.
//!
//! **Estimate.** A case's throughput on a side is the median over its runs (whole scoring runs, each its own
//! process); a kernel's ratio is the geometric mean over its cases of new / reference; a score is the geometric mean
//! over kernels, so every kernel weighs the same however many cases it has (as SPEC does over benchmarks). The GPU
//! cases give the GPU score and the CPU cases the host score; they are combined (geometric mean) only on request.
//!
//! **Interval.** What spread is honest was measured on the H100 host (`results/nvidia-h100-80gb-hbm3`, the solid's
//! records of commits 3c4bfdf, 7fec760, 4947132 and bd36f95, each run twice minutes apart): the two runs' medians of
//! a case differed by 1-4% on the GPU and 5-22% on the CPU, while each run's repetitions spanned 0.1-1% (GPU) and
//! 1-6% (CPU) of the median, and one run's min..max held the other run's median in half the cases. The repetitions
//! inside one process share its memory placement, clocks and neighbours and understate how much a run moves; and a
//! slow run was slow in most of its cases at once. So the unit of spread is the whole run: the workload runs three
//! times per machine (`scripts/gpu-host.sh score`), and the bootstrap draws as many runs as each side has, with
//! replacement and the same draw for all of a side's cases, takes each case's median over the drawn runs and
//! recomputes everything; the 2.5th and 97.5th percentiles of [`RESAMPLES`] draws are the 95% interval. With one
//! run on a side only its repetitions are left: each case's time is drawn within its min..max (half the draws below
//! the median, half above), and [`Scores::interval_note`] says that this understates the spread.
//!
//! **Roofline.** Every record holds the fraction of the copy bandwidth measured in its own process. A kernel whose
//! cases reach [`BANDWIDTH_BOUND`] of it or more on the reference machine is bandwidth-bound and its ratio should
//! follow the ratio of the two machines' copy ceilings (reported with each score); the others are bound by
//! arithmetic or latency and follow the arithmetic rate. An H200 against an H100 (1.4x the bandwidth, about the same
//! arithmetic) should show about 1.4 on the first and 1.0 on the second.

use crate::record::{Record, Variant};
use anyhow::{bail, Result};
use rand::Rng;
use std::path::{Path, PathBuf};

/// The record parameter that marks a scoring run; its value is the workload version.
pub const PARAM: &str = "score";

/// The variants a workload measures, GPU first: every case on each.
pub const VARIANTS: [Variant; 2] = [Variant::Gpu, Variant::Cpu];

/// Bootstrap resamples behind every interval.
pub const RESAMPLES: usize = 4000;

/// Fraction of the copy bandwidth (on the reference machine) from which a kernel counts as bandwidth-bound.
pub const BANDWIDTH_BOUND: f64 = 0.5;

/// One case of a workload: what identifies its records (the sizes and parameters named here must match; others,
/// such as derived sizes, may be anything).
#[derive(Clone, Copy, Debug)]
pub struct CaseSpec {
    pub kernel: &'static str,
    pub op: &'static str,
    pub precision: &'static str,
    pub sizes: &'static [(&'static str, u64)],
    pub params: &'static [(&'static str, &'static str)],
}

impl CaseSpec {
    /// Does this record measure this case (in any variant)?
    pub fn matches(&self, r: &Record) -> bool {
        r.kernel == self.kernel
            && r.op == self.op
            && r.precision == self.precision
            && self.sizes.iter().all(|(k, v)| r.sizes.get(*k) == Some(v))
            && self.params.iter().all(|(k, v)| r.params.get(*k).map(String::as_str) == Some(*v))
    }

    /// For tables and messages: `bspline/vgl double [grid=64,...] [basis=bspline]`.
    pub fn label(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let params: Vec<String> = self.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let params = if params.is_empty() { String::new() } else { format!(" [{}]", params.join(",")) };
        format!("{}/{} {} [{}]{params}", self.kernel, self.op, self.precision, sizes.join(","))
    }
}

/// A fixed set of cases, versioned: records of one version are comparable with each other only.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    pub version: &'static str,
    pub cases: &'static [CaseSpec],
}

impl Workload {
    /// Every case the workload measures: each spec on each of [`VARIANTS`].
    pub fn cases(&self) -> impl Iterator<Item = (Variant, &CaseSpec)> {
        VARIANTS.into_iter().flat_map(move |v| self.cases.iter().map(move |c| (v, c)))
    }

    /// The kernels it measures, in the order of its cases.
    pub fn kernels(&self) -> Vec<&'static str> {
        let mut k: Vec<&'static str> = vec![];
        for c in self.cases {
            if !k.contains(&c.kernel) {
                k.push(c.kernel);
            }
        }
        k
    }

    /// Its cases that `records` lack, as labels with the variant.
    pub fn missing(&self, records: &[Record]) -> Vec<String> {
        self.cases()
            .filter(|(v, c)| !records.iter().any(|r| r.variant == *v && c.matches(r)))
            .map(|(v, c)| format!("{} {v}", c.label()))
            .collect()
    }
}

/// The machine of a side: its GPU and its host CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    pub gpu: String,
    pub cpu: String,
}

impl Machine {
    pub fn label(&self) -> String {
        format!("{} + {}", self.gpu, self.cpu)
    }
}


/// The one machine `records` were measured on, which must be the one the folder `dir` is named for: one GPU name
/// over the GPU records, one CPU model and signature over all (a GPU record names its host's CPU too). This is the
/// single place that decides a side's machine identity.
pub fn machine(dir: &Path, records: &[&Record]) -> Result<Machine, String> {
    let shown = dir.display();
    let distinct = |it: &mut dyn Iterator<Item = String>| -> Vec<String> {
        let mut v: Vec<String> = vec![];
        for x in it {
            if !v.contains(&x) {
                v.push(x);
            }
        }
        v
    };
    // one of each: more than one is another machine's records in this folder
    let one = |what: &str, v: &[String]| -> Result<(), String> {
        if v.len() > 1 {
            return Err(format!("{shown} mixes records of {} {what} ({}): a scoring run comes from one machine", v.len(), v.join(", ")));
        }
        Ok(())
    };
    let cpus = distinct(&mut records.iter().map(|r| r.system.cpu_model.clone()));
    let gpus = distinct(&mut records.iter().filter_map(|r| r.system.gpu.as_ref().map(|g| g.name.clone())));
    one("CPUs", &cpus)?;
    // A virtual machine's model name can be generic ("Intel(R) Xeon(R) Processor") over CPU generations that differ in
    // speed (two H100 hosts on 2026-12-07: models 143 and 207), so the signatures must agree too where recorded.
    one("CPUs", &distinct(&mut records.iter().map(|r| r.system.cpu_signature.clone()).filter(|s| !s.is_empty())))?;
    one("GPUs", &gpus)?;
    let Some(gpu) = gpus.into_iter().next() else {
        return Err(format!("{shown} holds no GPU record: a scoring run measures the GPU and the host"));
    };
    let name = std::fs::canonicalize(dir).ok().and_then(|p| {
        let d = if p.is_file() { p.parent()?.to_path_buf() } else { p };
        d.file_name().map(|n| n.to_string_lossy().into_owned())
    });
    let want = crate::machine::slug(&gpu);
    if name.as_deref() != Some(want.as_str()) {
        return Err(format!(
            "{shown} is not named for the machine its records were measured on ({gpu}): they belong in a folder named {want}"
        ));
    }
    Ok(Machine { gpu, cpu: cpus.into_iter().next().unwrap_or_default() })
}

/// One run's measurement of a case.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// Work per second at the median time.
    throughput: f64,
    median: f64,
    min: f64,
    max: f64,
    fraction: Option<f64>,
    ceiling: Option<f64>,
}

impl Run {
    fn of(r: &Record) -> Run {
        Run {
            throughput: r.throughput,
            median: r.time.median,
            min: r.time.min,
            max: r.time.max,
            fraction: r.fraction_of_ceiling,
            ceiling: r.ceiling_gbytes_per_s,
        }
    }
}

/// The records of one side that the rules admitted, per workload case.
#[derive(Clone, Debug)]
pub struct Side {
    pub path: PathBuf,
    pub machine: Machine,
    pub commits: Vec<String>,
    /// Whole runs scored: the fewest runs any case has (later, partial runs are left out).
    pub runs: usize,
    /// Cases measured more often than `runs` (a later run cut short): their extra records are left out.
    pub partial: usize,
    /// Per case of `Workload::cases()`, in that order: its runs, oldest first.
    cases: Vec<Vec<Run>>,
}

/// Apply the rules to the records read from `path` (see the module docs); refuse with one sentence.
pub fn side(workload: &Workload, path: &Path, records: &[Record]) -> Result<Side> {
    let shown = path.display();
    let mut scoring: Vec<&Record> = records.iter().filter(|r| r.params.contains_key(PARAM)).collect();
    if scoring.is_empty() {
        bail!("{shown} holds no scoring run (no record has the parameter {PARAM}=...): run `qmcbench suite --score` on that machine");
    }
    let mut versions: Vec<&str> = scoring.iter().map(|r| r.params[PARAM].as_str()).collect();
    versions.sort_unstable();
    versions.dedup();
    if versions.len() > 1 {
        bail!("{shown} mixes scoring runs of workload versions {}: keep one version per folder", versions.join(", "));
    }
    if versions[0] != workload.version {
        bail!("{shown} is a scoring run of workload {}, but this qmcbench scores workload {}", versions[0], workload.version);
    }
    let unpassed: Vec<&&Record> = scoring.iter().filter(|r| r.validation.status != "passed").collect();
    if let Some(first) = unpassed.first() {
        bail!(
            "{shown} has {} scoring record(s) that did not pass their check against the reference (the first: {} is {})",
            unpassed.len(),
            first.key(),
            first.validation.status
        );
    }
    let machine = machine(path, &scoring).map_err(anyhow::Error::msg)?;
    scoring.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
    let mut cases = vec![];
    let mut missing = vec![];
    for (v, spec) in workload.cases() {
        let mut mine: Vec<&Record> = scoring.iter().copied().filter(|r| r.variant == v && spec.matches(r)).collect();
        // a record imported twice is one measurement
        mine.dedup_by(|a, b| a.timestamp == b.timestamp && a.time == b.time && a.key() == b.key());
        let mut keys: Vec<String> = mine.iter().map(|r| r.key()).collect();
        keys.sort();
        keys.dedup();
        if keys.len() > 1 {
            bail!("{shown} has records of {} different cases for the workload case {} {v} ({}): they cannot be told apart", keys.len(), spec.label(), keys.join("; "));
        }
        if mine.is_empty() {
            missing.push(format!("{} {v}", spec.label()));
        }
        cases.push(mine.iter().map(|r| Run::of(r)).collect::<Vec<Run>>());
    }
    if let Some(first) = missing.first() {
        bail!("{shown} is an incomplete scoring run: {} of the workload's {} cases are missing (the first: {first})", missing.len(), cases.len());
    }
    let runs = cases.iter().map(Vec::len).min().unwrap_or(0);
    let partial = cases.iter().filter(|c| c.len() > runs).count();
    for c in &mut cases {
        c.truncate(runs);
    }
    let mut commits: Vec<String> = vec![];
    for r in &scoring {
        if !commits.contains(&r.commit) {
            commits.push(r.commit.clone());
        }
    }
    Ok(Side { path: path.to_path_buf(), machine, commits, runs, partial, cases })
}

/// A value with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Estimate {
    fn of(value: f64, mut draws: Vec<f64>) -> Estimate {
        draws.sort_by(f64::total_cmp);
        let n = draws.len();
        let at = |q: f64| draws[((q * n as f64) as usize).min(n - 1)];
        Estimate { value, lo: at(0.025), hi: at(0.975) }
    }
}

/// One case of a part: its ratio and where each side stands against its copy ceiling.
#[derive(Clone, Debug)]
pub struct CaseRow {
    pub kernel: &'static str,
    pub label: String,
    pub ratio: Estimate,
    pub fraction_ref: Option<f64>,
    pub fraction_new: Option<f64>,
}

/// One kernel of a part.
#[derive(Clone, Debug)]
pub struct KernelRow {
    pub kernel: &'static str,
    pub cases: usize,
    /// Geometric mean over its cases of new / reference throughput.
    pub ratio: Estimate,
    /// Median over its cases of the fraction of the copy ceiling on each machine.
    pub fraction_ref: Option<f64>,
    pub fraction_new: Option<f64>,
}

impl KernelRow {
    /// Bandwidth-bound when its cases reach [`BANDWIDTH_BOUND`] of the copy ceiling on the reference machine.
    pub fn bandwidth_bound(&self) -> bool {
        self.fraction_ref.is_some_and(|f| f >= BANDWIDTH_BOUND)
    }
    pub fn bound(&self) -> &'static str {
        if self.bandwidth_bound() {
            "bandwidth"
        } else {
            "arithmetic or latency"
        }
    }
}

/// The GPU or the host part of a score.
#[derive(Clone, Debug)]
pub struct Part {
    pub variant: Variant,
    /// Geometric mean over kernels.
    pub score: Estimate,
    pub kernels: Vec<KernelRow>,
    pub cases: Vec<CaseRow>,
    /// Median copy bandwidth (GB/s) measured in the records of each side: a bandwidth-bound kernel's ratio should
    /// be near `ceiling_new / ceiling_ref`.
    pub ceiling_ref: Option<f64>,
    pub ceiling_new: Option<f64>,
}

impl Part {
    pub fn name(&self) -> &'static str {
        if self.variant == Variant::Gpu {
            "GPU"
        } else {
            "host"
        }
    }
    pub fn ceiling_ratio(&self) -> Option<f64> {
        Some(self.ceiling_new? / self.ceiling_ref?)
    }
}

/// A machine scored against a reference machine.
#[derive(Clone, Debug)]
pub struct Scores {
    pub version: &'static str,
    pub new: Side,
    pub reference: Side,
    pub gpu: Part,
    pub host: Part,
    /// Geometric mean of the GPU and host scores.
    pub combined: Estimate,
}

impl Scores {
    /// Where the intervals come from, in one sentence.
    pub fn interval_note(&self) -> String {
        let (n, r) = (self.new.runs, self.reference.runs);
        if n >= 2 && r >= 2 {
            format!("95% intervals from {RESAMPLES} bootstrap draws of whole runs ({n} of the machine, {r} of the reference)")
        } else {
            format!(
                "95% intervals from {RESAMPLES} bootstrap draws; {} only one run, so its cases were drawn within their repetitions' min..max, which understates the spread between runs (measured 3-10x narrower): run the workload three times",
                if n < 2 && r < 2 { "each side has" } else if n < 2 { "the machine has" } else { "the reference has" }
            )
        }
    }
}

/// Median of a non-empty slice (mean of the middle two for an even count).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn median_of(it: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = it.filter(|x| x.is_finite()).collect();
    (!v.is_empty()).then(|| median(&mut v))
}

/// Log throughput of every case on one side for one resample: `pick` holds the drawn run indices (whole runs, shared
/// by all cases), or is empty when the side has one run and each case is drawn within its repetitions.
fn draw_side(side: &Side, pick: &[usize], rng: &mut impl Rng) -> Vec<f64> {
    side.cases
        .iter()
        .map(|runs| {
            if pick.is_empty() {
                // split uniform in log time: half the draws between min and median, half between median and max
                // (throughput goes as 1 / time; offsets from the median in log, so no spread gives the point exactly)
                let r = runs[0];
                let (a, b) = if rng.random_bool(0.5) { (r.min, r.median) } else { (r.median, r.max) };
                let offset = (a.ln() - r.median.ln()) + rng.random::<f64>() * (b.ln() - a.ln());
                r.throughput.ln() - offset
            } else {
                let mut v: Vec<f64> = pick.iter().map(|&i| runs[i].throughput.ln()).collect();
                median(&mut v)
            }
        })
        .collect()
}

/// The point estimate of every case on one side: median over runs of log throughput.
fn point_side(side: &Side) -> Vec<f64> {
    side.cases.iter().map(|runs| median(&mut runs.iter().map(|r| r.throughput.ln()).collect::<Vec<_>>())).collect()
}

/// Per case (in `Workload::cases()` order) log(new / reference), to the kernel and part geometric means.
struct Layout {
    /// Per part (GPU, host): per kernel, the case indices.
    parts: Vec<Vec<(&'static str, Vec<usize>)>>,
}

impl Layout {
    fn new(workload: &Workload) -> Layout {
        let all: Vec<(Variant, &CaseSpec)> = workload.cases().collect();
        let parts = VARIANTS
            .iter()
            .map(|&v| {
                workload
                    .kernels()
                    .into_iter()
                    .map(|k| (k, all.iter().enumerate().filter(|(_, (cv, c))| *cv == v && c.kernel == k).map(|(i, _)| i).collect()))
                    .collect()
            })
            .collect();
        Layout { parts }
    }

    /// Log ratios per kernel and per part from per-case log ratios.
    fn roll_up(&self, case: &[f64]) -> (Vec<Vec<f64>>, Vec<f64>) {
        let mean = |v: &mut dyn Iterator<Item = f64>| {
            let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
            s / n as f64
        };
        let kernels: Vec<Vec<f64>> = self.parts.iter().map(|ks| ks.iter().map(|(_, idx)| mean(&mut idx.iter().map(|&i| case[i]))).collect()).collect();
        let parts = kernels.iter().map(|k| mean(&mut k.iter().copied())).collect();
        (kernels, parts)
    }
}

/// Score `new` against `reference` (both admitted by [`side`] for this workload).
pub fn score(workload: &Workload, new: Side, reference: Side) -> Scores {
    let layout = Layout::new(workload);
    let diff = |n: &[f64], r: &[f64]| -> Vec<f64> { n.iter().zip(r).map(|(a, b)| a - b).collect() };
    let point = diff(&point_side(&new), &point_side(&reference));
    let (point_k, point_p) = layout.roll_up(&point);
    // draws: per case, per kernel, per part, combined
    let ncase = point.len();
    let mut d_case = vec![Vec::with_capacity(RESAMPLES); ncase];
    let mut d_kernel: Vec<Vec<Vec<f64>>> = point_k.iter().map(|k| vec![Vec::with_capacity(RESAMPLES); k.len()]).collect();
    let mut d_part = vec![Vec::with_capacity(RESAMPLES); point_p.len()];
    let mut d_comb = Vec::with_capacity(RESAMPLES);
    let mut rng = kernels::rng::rng(20261125, 0x5C0E);
    for _ in 0..RESAMPLES {
        let pick = |s: &Side, rng: &mut kernels::rng::Rng64| -> Vec<usize> {
            if s.runs < 2 {
                vec![]
            } else {
                (0..s.runs).map(|_| rng.random_range(0..s.runs)).collect()
            }
        };
        let (pn, pr) = (pick(&new, &mut rng), pick(&reference, &mut rng));
        let c = diff(&draw_side(&new, &pn, &mut rng), &draw_side(&reference, &pr, &mut rng));
        let (k, p) = layout.roll_up(&c);
        for (i, x) in c.iter().enumerate() {
            d_case[i].push(x.exp());
        }
        for (pi, ks) in k.iter().enumerate() {
            for (ki, x) in ks.iter().enumerate() {
                d_kernel[pi][ki].push(x.exp());
            }
        }
        for (pi, x) in p.iter().enumerate() {
            d_part[pi].push(x.exp());
        }
        d_comb.push((0.5 * (p[0] + p[1])).exp());
    }
    let all: Vec<(Variant, &CaseSpec)> = workload.cases().collect();
    let frac = |s: &Side, i: usize| median_of(s.cases[i].iter().filter_map(|r| r.fraction));
    let ceiling = |s: &Side, v: Variant| median_of(all.iter().enumerate().filter(|(_, (cv, _))| *cv == v).flat_map(|(i, _)| s.cases[i].iter().filter_map(|r| r.ceiling)));
    let mut d_case: Vec<Option<Vec<f64>>> = d_case.into_iter().map(Some).collect();
    let parts: Vec<Part> = VARIANTS
        .iter()
        .enumerate()
        .map(|(pi, &v)| {
            let kernels = layout.parts[pi]
                .iter()
                .enumerate()
                .map(|(ki, (kernel, idx))| KernelRow {
                    kernel,
                    cases: idx.len(),
                    ratio: Estimate::of(point_k[pi][ki].exp(), std::mem::take(&mut d_kernel[pi][ki])),
                    fraction_ref: median_of(idx.iter().filter_map(|&i| frac(&reference, i))),
                    fraction_new: median_of(idx.iter().filter_map(|&i| frac(&new, i))),
                })
                .collect();
            let cases = layout.parts[pi]
                .iter()
                .flat_map(|(kernel, idx)| idx.iter().map(move |&i| (*kernel, i)))
                .map(|(kernel, i)| CaseRow {
                    kernel,
                    label: all[i].1.label(),
                    ratio: Estimate::of(point[i].exp(), d_case[i].take().expect("each case once")),
                    fraction_ref: frac(&reference, i),
                    fraction_new: frac(&new, i),
                })
                .collect();
            Part {
                variant: v,
                score: Estimate::of(point_p[pi].exp(), std::mem::take(&mut d_part[pi])),
                kernels,
                cases,
                ceiling_ref: ceiling(&reference, v),
                ceiling_new: ceiling(&new, v),
            }
        })
        .collect();
    let [gpu, host]: [Part; 2] = parts.try_into().expect("two parts");
    let combined = Estimate::of((0.5 * (point_p[0] + point_p[1])).exp(), d_comb);
    Scores { version: workload.version, new, reference, gpu, host, combined }
}

/// The whole of `qmcbench score` short of printing: read both sides, apply the rules, score.
pub fn score_folders(workload: &Workload, new: &Path, reference: &Path) -> Result<Scores> {
    let read = |p: &Path| crate::output::read_records(&[p.to_path_buf()]);
    let n = side(workload, new, &read(new)?)?;
    let r = side(workload, reference, &read(reference)?)?;
    Ok(score(workload, n, r))
}

/// The score as text: both machines and commits, each part's score with its interval, the per-kernel table with
/// the roofline side, and (with `cases`) every case.
pub fn text(s: &Scores, combined: bool, cases: bool) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let side = |o: &mut String, what: &str, x: &Side| {
        let partial = if x.partial > 0 { format!("; a later run cut short left out ({} cases)", x.partial) } else { String::new() };
        let _ = writeln!(o, "{what:<10} {} ({}), commit {}, {} run(s){partial}", x.machine.label(), x.path.display(), x.commits.iter().map(|c| short(c)).collect::<Vec<_>>().join(", "), x.runs);
    };
    let _ = writeln!(o, "workload:  score {} ({} cases, each on the GPU and on all host cores)", s.version, s.gpu.cases.len());
    side(&mut o, "machine:", &s.new);
    side(&mut o, "reference:", &s.reference);
    for p in [&s.gpu, &s.host] {
        let _ = writeln!(o);
        let _ = writeln!(o, "{} SCORE {:.3}  (95% interval {:.3} - {:.3}; > 1 is faster than the reference)", p.name().to_uppercase(), p.score.value, p.score.lo, p.score.hi);
        if let (Some(r), Some(n), Some(x)) = (p.ceiling_ref, p.ceiling_new, p.ceiling_ratio()) {
            let _ = writeln!(o, "  copy bandwidth: {n:.0} GB/s against {r:.0} GB/s, ratio {x:.2}: the ratio a bandwidth-bound kernel should show");
        }
        let _ = writeln!(o, "  {:<16} {:>5} {:>8} {:>17} {:>9} {:>9}  bound", "kernel", "cases", "ratio", "95% interval", "ref %bw", "new %bw");
        for k in &p.kernels {
            let _ = writeln!(o, "  {:<16} {:>5} {:>8.3} {:>17} {:>9} {:>9}  {}", k.kernel, k.cases, k.ratio.value, format!("{:.3} - {:.3}", k.ratio.lo, k.ratio.hi), pct(k.fraction_ref), pct(k.fraction_new), k.bound());
        }
        if cases {
            for c in &p.cases {
                let _ = writeln!(o, "    {:<72} {:>7.3} {:>17} {:>7} {:>7}", c.label, c.ratio.value, format!("{:.3} - {:.3}", c.ratio.lo, c.ratio.hi), pct(c.fraction_ref), pct(c.fraction_new));
            }
        }
    }
    if combined {
        let _ = writeln!(o, "\nCOMBINED {:.3}  (95% interval {:.3} - {:.3}; geometric mean of the GPU and host scores)", s.combined.value, s.combined.lo, s.combined.hi);
    }
    let _ = writeln!(o, "\n{}.", s.interval_note());
    o
}

/// A commit shortened for tables (the `-dirty` mark kept).
pub fn short(commit: &str) -> String {
    match commit.split_once('-') {
        Some((h, rest)) => format!("{}-{rest}", &h[..h.len().min(10)]),
        None => commit[..commit.len().min(10)].to_string(),
    }
}

/// A fraction as a percentage, "-" when not recorded.
pub fn pct(f: Option<f64>) -> String {
    f.map(|x| format!("{:.0}%", 100.0 * x)).unwrap_or_else(|| "-".into())
}

/// Test support: scoring records of made-up machines, for the tests here, in the report module and of the programs
/// (feature `testing`, which only their dev-dependencies turn on).
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    use super::*;
    use crate::record::{Validation, SCHEMA};
    use crate::system::{GpuSystem, System};
    use crate::timing::Stats;

    /// How one run measured one case on one machine.
    pub struct Measured<'a> {
        pub gpu: &'a str,
        pub cpu: &'a str,
        pub commit: &'a str,
        /// Run number (minutes into the made-up hour: the records' time stamps order the runs).
        pub run: usize,
        pub median: f64,
        /// Repetitions spanned median x (1 -+ spread).
        pub spread: f64,
        /// Bytes of one repetition and the copy bandwidth of the device (GB/s).
        pub bytes: f64,
        pub ceiling: f64,
    }

    /// A passed scoring record of workload `version` for `case` on variant `v`.
    pub fn record(case: &CaseSpec, v: Variant, version: &str, m: &Measured) -> Record {
        let gbs = m.bytes / m.median / 1e9;
        Record {
            schema: SCHEMA,
            kernel: case.kernel.into(),
            op: case.op.into(),
            variant: v,
            precision: case.precision.into(),
            sizes: case.sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            params: case.params.iter().map(|(k, v)| (k.to_string(), v.to_string())).chain([(PARAM.to_string(), version.to_string())]).collect(),
            reps: 5,
            time: Stats { min: m.median * (1.0 - m.spread), median: m.median, max: m.median * (1.0 + m.spread), mean: Some(m.median) },
            throughput: 1.0 / m.median,
            throughput_unit: "items/s".into(),
            bytes: m.bytes,
            flops: 0.0,
            gbytes_per_s: gbs,
            gflops: 0.0,
            ceiling_gbytes_per_s: Some(m.ceiling),
            fraction_of_ceiling: Some(gbs / m.ceiling),
            validation: Validation { status: "passed".into(), checks: vec![], note: None },
            compile_s: None,
            compile_options: None,
            extra: Default::default(),
            bytes_model: None,
            seed: 1,
            system: System {
                cpu_model: m.cpu.into(),
                gpu: (v == Variant::Gpu).then(|| GpuSystem { name: m.gpu.into(), ..Default::default() }),
                ..Default::default()
            },
            commit: m.commit.into(),
            timestamp: format!("2026-11-25T00:{:02}:00Z", m.run),
        }
    }
}

/// A small workload and machines made up for the tests here and in the report module.
#[cfg(test)]
pub(crate) mod synthetic {
    use super::testing::{record, Measured};
    use super::*;

    /// Three kernels: `stream` (bandwidth-bound, two cases), `flops` and `tiny` (arithmetic-bound).
    pub const CASES: &[CaseSpec] = &[
        CaseSpec { kernel: "stream", op: "copy", precision: "double", sizes: &[("n", 1)], params: &[] },
        CaseSpec { kernel: "stream", op: "copy", precision: "mixed", sizes: &[("n", 1)], params: &[] },
        CaseSpec { kernel: "flops", op: "fma", precision: "double", sizes: &[("n", 2)], params: &[("algo", "x")] },
        CaseSpec { kernel: "tiny", op: "fma", precision: "double", sizes: &[("n", 3)], params: &[] },
    ];
    pub const WORKLOAD: Workload = Workload { version: "v1", cases: CASES };

    /// A machine: GPU name, CPU model, copy bandwidths (GB/s) of GPU and CPU, and the time factor of a
    /// bandwidth-bound and of an arithmetic-bound case (1 = the reference's speed).
    pub struct Spec {
        pub gpu: &'static str,
        pub cpu: &'static str,
        pub bw: (f64, f64),
        pub time_bw: f64,
        pub time_flops: f64,
    }

    /// One run of the workload: each case at its base time times the machine's factor times `jitter(case index)`,
    /// repetitions spanning +-`spread` around the median.
    pub fn run(m: &Spec, run: usize, spread: f64, jitter: impl Fn(usize) -> f64) -> Vec<Record> {
        WORKLOAD
            .cases()
            .enumerate()
            .map(|(i, (v, c))| {
                let bw_bound = c.kernel == "stream";
                let base = 1e-3 * (1 + i % 3) as f64;
                // the same work on every machine: 90% (bandwidth-bound) or 5% of the reference's copy bandwidth
                let reference_bw = if v == Variant::Gpu { H100.bw.0 } else { H100.bw.1 };
                let bytes = if bw_bound { 0.9 } else { 0.05 } * reference_bw * 1e9 * base;
                let median = base * if bw_bound { m.time_bw } else { m.time_flops } * jitter(i);
                let ceiling = if v == Variant::Gpu { m.bw.0 } else { m.bw.1 };
                record(c, v, "v1", &Measured { gpu: m.gpu, cpu: m.cpu, commit: "0123456789abcdef", run, median, spread, bytes, ceiling })
            })
            .collect()
    }

    pub const H100: Spec = Spec { gpu: "NVIDIA H100 80GB HBM3", cpu: "Xeon A", bw: (2800.0, 100.0), time_bw: 1.0, time_flops: 1.0 };
    /// 1.4x the bandwidth (GPU and host), the same arithmetic.
    pub const H200: Spec = Spec { gpu: "NVIDIA H200", cpu: "Xeon B", bw: (3920.0, 140.0), time_bw: 1.0 / 1.4, time_flops: 1.0 };

    /// A fresh folder named for the machine, under a scratch folder unique to the test.
    pub fn folder(test: &str, m: &Spec) -> PathBuf {
        let d = std::env::temp_dir().join(format!("qmc-score-{test}-{}", std::process::id())).join(crate::machine::slug(m.gpu));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// `runs` runs of a machine whose run `k` is off by `dev[k]` (relative) in every case, repetitions +-`spread`.
    pub fn runs(m: &Spec, dev: &[f64], spread: f64) -> Vec<Record> {
        dev.iter().enumerate().flat_map(|(k, d)| run(m, k, spread, |i| 1.0 + d * if i % 2 == 0 { 1.0 } else { 0.5 })).collect()
    }

    /// Both sides admitted, scored.
    pub fn scored(test: &str, new: (&Spec, Vec<Record>), reference: (&Spec, Vec<Record>)) -> Scores {
        let (dn, dr) = (folder(&format!("{test}-new"), new.0), folder(&format!("{test}-ref"), reference.0));
        let n = side(&WORKLOAD, &dn, &new.1).unwrap();
        let r = side(&WORKLOAD, &dr, &reference.1).unwrap();
        score(&WORKLOAD, n, r)
    }
}

#[cfg(test)]
mod tests {
    use super::synthetic::*;
    use super::*;

    fn refusal(test: &str, m: &Spec, records: &[Record]) -> String {
        side(&WORKLOAD, &folder(test, m), records).unwrap_err().to_string()
    }

    #[test]
    fn bandwidth_bound_kernels_follow_the_bandwidth_and_compute_bound_ones_the_arithmetic() {
        let s = scored("split", (&H200, runs(&H200, &[0.0, 0.01, -0.01], 0.005)), (&H100, runs(&H100, &[0.0, -0.01, 0.01], 0.005)));
        let k = |p: &Part, name: &str| p.kernels.iter().find(|k| k.kernel == name).unwrap().clone();
        for p in [&s.gpu, &s.host] {
            let stream = k(p, "stream");
            assert!((stream.ratio.value - 1.4).abs() < 1e-9, "{}: {:?}", p.name(), stream.ratio);
            assert!(stream.bandwidth_bound() && stream.bound() == "bandwidth");
            assert_eq!(stream.cases, 2);
            for name in ["flops", "tiny"] {
                let f = k(p, name);
                assert!((f.ratio.value - 1.0).abs() < 1e-9, "{name}: {:?}", f.ratio);
                assert!(!f.bandwidth_bound(), "{name} reaches 5% of the copy bandwidth");
                assert!(f.ratio.lo < 1.0 && f.ratio.hi > 1.0, "{name}: the interval holds 1: {:?}", f.ratio);
            }
            // every kernel weighs the same: (1.4 * 1 * 1)^(1/3)
            assert!((p.score.value - 1.4f64.powf(1.0 / 3.0)).abs() < 1e-9, "{:?}", p.score);
            assert!((p.ceiling_ratio().unwrap() - 1.4).abs() < 1e-9);
        }
        assert!((s.combined.value - 1.4f64.powf(1.0 / 3.0)).abs() < 1e-9);
        assert_eq!((s.new.runs, s.reference.runs), (3, 3));
        assert_eq!(s.new.machine, Machine { gpu: "NVIDIA H200".into(), cpu: "Xeon B".into() });
    }

    #[test]
    fn the_interval_holds_the_estimate_and_shrinks_with_the_spread() {
        let width = |e: &Estimate| e.hi / e.lo;
        // whole runs apart by +-4% and by +-1%
        let wide = scored("wide", (&H200, runs(&H200, &[0.0, 0.04, -0.03], 0.01)), (&H100, runs(&H100, &[0.02, -0.04, 0.0], 0.01)));
        let narrow = scored("narrow", (&H200, runs(&H200, &[0.0, 0.01, -0.0075], 0.01)), (&H100, runs(&H100, &[0.005, -0.01, 0.0], 0.01)));
        for s in [&wide, &narrow] {
            for e in [s.gpu.score, s.host.score, s.combined].iter().chain(s.gpu.kernels.iter().map(|k| &k.ratio)).chain(s.gpu.cases.iter().map(|c| &c.ratio)) {
                assert!(e.lo <= e.value && e.value <= e.hi, "{e:?}");
            }
        }
        assert!(width(&wide.gpu.score) > 1.02, "runs 4% apart give a visible interval: {:?}", wide.gpu.score);
        assert!(width(&narrow.gpu.score) < width(&wide.gpu.score), "narrow {:?} wide {:?}", narrow.gpu.score, wide.gpu.score);
        // one run per side: the repetitions' spread is all there is, and the interval follows it
        let one = |spread| scored(&format!("one-{spread}"), (&H200, runs(&H200, &[0.0], spread)), (&H100, runs(&H100, &[0.0], spread)));
        let (w, n) = (one(0.05), one(0.01));
        assert!(w.gpu.score.lo <= w.gpu.score.value && w.gpu.score.value <= w.gpu.score.hi);
        assert!(width(&n.gpu.score) < width(&w.gpu.score), "{:?} vs {:?}", n.gpu.score, w.gpu.score);
        assert!(w.interval_note().contains("understates"), "{}", w.interval_note());
        assert!(!wide.interval_note().contains("understates"));
        // zero spread: a point
        let exact = one(0.0);
        assert_eq!((exact.gpu.score.lo, exact.gpu.score.hi), (exact.gpu.score.value, exact.gpu.score.value));
    }

    #[test]
    fn records_of_another_machine_are_refused() {
        // the H200 folder holding CPU records of another host (the build machine), as issue 27 found
        let mut recs = runs(&H200, &[0.0], 0.01);
        for r in recs.iter_mut().filter(|r| r.variant == Variant::Cpu).take(1) {
            r.system.cpu_model = "AMD EPYC build machine".into();
        }
        let e = refusal("mixed-cpu", &H200, &recs);
        assert!(e.contains("mixes records of 2 CPUs") && e.contains("AMD EPYC build machine"), "{e}");
        // one generic model name over two CPU generations, told apart by their signatures; records without one
        // (before schema 2) do not count as another CPU
        let mut recs = runs(&H200, &[0.0], 0.01);
        for r in recs.iter_mut() {
            r.system.cpu_signature = "GenuineIntel family 6 model 207 stepping 2".into();
        }
        recs[0].system.cpu_signature = String::new();
        assert!(side(&WORKLOAD, &folder("one-signature", &H200), &recs).is_ok(), "an unrecorded signature is no second CPU");
        recs[1].system.cpu_signature = "GenuineIntel family 6 model 143 stepping 8".into();
        let e = refusal("mixed-signature", &H200, &recs);
        assert!(e.contains("mixes records of 2 CPUs") && e.contains("model 143") && e.contains("model 207"), "{e}");
        // another GPU
        let mut recs = runs(&H200, &[0.0], 0.01);
        recs[0].system.gpu.as_mut().unwrap().name = "NVIDIA H100 80GB HBM3".into();
        assert!(refusal("mixed-gpu", &H200, &recs).contains("mixes records of 2 GPUs"));
        // one machine, but filed in another machine's folder
        let e = refusal("wrong-folder", &H100, &runs(&H200, &[0.0], 0.01));
        assert!(e.contains("not named for the machine") && e.contains("nvidia-h200"), "{e}");
    }

    #[test]
    fn an_incomplete_run_is_refused_and_a_partial_later_run_left_out() {
        let mut recs = runs(&H100, &[0.0], 0.01);
        recs.retain(|r| !(r.kernel == "flops" && r.variant == Variant::Cpu));
        let e = refusal("incomplete", &H100, &recs);
        assert!(e.contains("incomplete scoring run: 1 of the workload's 8 cases are missing") && e.contains("flops/fma double [n=2] [algo=x] cpu"), "{e}");
        // the same run imported twice is one run
        let mut recs = runs(&H100, &[0.0, 0.01], 0.01);
        recs.extend(recs.clone());
        let s = side(&WORKLOAD, &folder("twice", &H100), &recs).unwrap();
        assert_eq!((s.runs, s.partial), (2, 0));
        // a second run cut short after two cases: the first run is scored alone, and it says so
        let mut recs = runs(&H100, &[0.0], 0.01);
        recs.extend(run(&H100, 1, 0.01, |_| 1.0).into_iter().take(2));
        let s = side(&WORKLOAD, &folder("partial", &H100), &recs).unwrap();
        assert_eq!((s.runs, s.partial), (1, 2));
    }

    #[test]
    fn failed_or_unchecked_records_are_refused() {
        for status in ["failed", "unchecked", "skipped"] {
            let mut recs = runs(&H100, &[0.0], 0.01);
            recs[3].validation.status = status.into();
            let e = refusal(&format!("status-{status}"), &H100, &recs);
            assert!(e.contains("did not pass") && e.contains(&format!("is {status}")), "{e}");
        }
    }

    #[test]
    fn runs_of_another_workload_version_or_none_are_refused() {
        let mut recs = runs(&H100, &[0.0], 0.01);
        for r in &mut recs {
            r.params.insert(PARAM.into(), "v0".into());
        }
        assert!(refusal("v0", &H100, &recs).contains("workload v0, but this qmcbench scores workload v1"));
        recs[0].params.insert(PARAM.into(), "v1".into());
        assert!(refusal("v0v1", &H100, &recs).contains("mixes scoring runs of workload versions v0, v1"));
        for r in &mut recs {
            r.params.remove(PARAM);
        }
        assert!(refusal("none", &H100, &recs).contains("holds no scoring run"));
    }

    #[test]
    fn two_cases_matching_one_workload_case_are_refused() {
        let mut recs = runs(&H100, &[0.0], 0.01);
        let mut twin = recs[0].clone();
        twin.sizes.insert("derived".into(), 7);
        recs.push(twin);
        assert!(refusal("twin", &H100, &recs).contains("cannot be told apart"));
    }

    #[test]
    fn folder_names_follow_the_import_script() {
        assert_eq!(crate::machine::slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(crate::machine::slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(crate::machine::slug(" A100-SXM4 (40GB) "), "a100-sxm4-40gb");
    }

    #[test]
    fn text_names_both_machines_commits_and_the_bound() {
        let s = scored("text", (&H200, runs(&H200, &[0.0, 0.01, -0.01], 0.005)), (&H100, runs(&H100, &[0.0, -0.01, 0.01], 0.005)));
        let t = text(&s, false, true);
        for want in ["NVIDIA H200 + Xeon B", "NVIDIA H100 80GB HBM3 + Xeon A", "commit 0123456789", "GPU SCORE 1.119", "HOST SCORE 1.119", "bandwidth", "arithmetic or latency", "stream/copy mixed [n=1]", "ratio 1.40"] {
            assert!(t.contains(want), "lacks '{want}':\n{t}");
        }
        assert!(!t.contains("COMBINED"));
        assert!(text(&s, true, false).contains("COMBINED 1.119"));
    }
}
