//! The run context a mini-app gets: which variants and precisions to run, the GPU (opened once, or the reason it is
//! skipped), the bandwidth ceilings (measured once, lazily), timing, and the records collected so far. A mini-app
//! describes each case and its work; the runner times it, builds the record, prints it and writes it out.

use crate::ceilings;
use crate::cli::{CommonArgs, Outcome};
use crate::output;
use crate::record::{self, BytesModel, Record, Validation, Variant, SCHEMA};
use crate::system::{GpuSystem, System};
use crate::timing::{self, Clock, Plant, Spread, Stats};
use indicatif::{ProgressBar, ProgressStyle};
use kernels::gpu::{Gpu, GpuError, OPTIONS_TEXT};
use kernels::{Check, Precision};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What was measured: kernel, operation, precision, sizes and parameters.
#[derive(Clone, Debug)]
pub struct Case {
    pub kernel: &'static str,
    pub op: String,
    pub precision: Precision,
    pub sizes: Vec<(&'static str, u64)>,
    pub params: Vec<(&'static str, String)>,
}

impl Case {
    pub fn new(kernel: &'static str, op: &str, precision: Precision) -> Case {
        Case { kernel, op: op.into(), precision, sizes: vec![], params: vec![] }
    }
    pub fn size(mut self, name: &'static str, v: usize) -> Case {
        self.sizes.push((name, v as u64));
        self
    }
    pub fn param(mut self, name: &'static str, v: impl ToString) -> Case {
        self.params.push((name, v.to_string()));
        self
    }
}

/// The work of one repetition.
#[derive(Clone, Copy, Debug)]
pub struct Work {
    /// Bytes moved through memory, counted as `model` says.
    pub bytes: f64,
    pub model: BytesModel,
    /// Floating-point operations.
    pub flops: f64,
    /// Items in the field's unit (orbital evaluations, electron moves, ...).
    pub items: f64,
    pub unit: &'static str,
}

/// The run context (see module docs).
pub struct Runner {
    pub args: CommonArgs,
    variants: Vec<Variant>,
    gpu: Option<Arc<Gpu>>,
    pub system: System,
    cpu_ceiling: Option<f64>,
    gpu_ceiling: Option<f64>,
    /// FMA-rate ceilings (flop/s), [f32, f64], measured on first use.
    cpu_fma: [Option<f64>; 2],
    gpu_fma: [Option<f64>; 2],
    gpu_shared: Option<f64>,
    pub records: Vec<Record>,
    progress: ProgressBar,
    header_printed: bool,
    last_reps: usize,
    /// Records already appended to `--out`.
    written: usize,
    /// The `--out` folder, opened (and checked to belong to this machine) before anything is measured.
    folder: Option<output::Folder>,
    /// Parameters every record gets from now on (see [`Runner::mark`]).
    marks: BTreeMap<String, String>,
    /// The planted slowdown (`QMC_PLANT_SLOWDOWN`), if any, and the mini-app whose cases run now (it applies to
    /// the timed repetitions of the kernel it names).
    plant: Option<Plant>,
    kernel: Option<&'static str>,
}

impl Runner {
    /// Set up from the common flags. `--variants gpu` with no usable GPU is an error; by default the GPU variants
    /// are skipped with one line saying why.
    pub fn new(args: &CommonArgs) -> anyhow::Result<Runner> {
        if let Some(t) = args.threads {
            anyhow::ensure!(t > 0, "--threads must be positive");
            // Fails only if the pool exists already (a second runner in one process): the first setting stands.
            // One thread: this thread is the pool's one worker, so parallel loops run inline here, with no second
            // thread that wakes, spins and sleeps at its own pace (under valgrind that made instruction counts of
            // one case vary by up to 0.7% from run to run: scripts/instr-check.sh).
            let b = rayon::ThreadPoolBuilder::new().num_threads(t);
            let _ = if t == 1 { b.use_current_thread() } else { b }.build_global();
        }
        anyhow::ensure!(args.reps() > 0, "--reps must be positive");
        let plant = Plant::from_env().map_err(anyhow::Error::msg)?;
        anyhow::ensure!(!args.precision.is_empty(), "--precision needs at least one value");
        let explicit = args.variants.is_some();
        let mut variants = args.variants.clone().unwrap_or_else(|| Variant::ALL.to_vec());
        variants.sort();
        variants.dedup();
        let mut system = System::detect();
        let mut gpu = None;
        if variants.contains(&Variant::Gpu) {
            match Gpu::open(args.device) {
                Ok(g) => {
                    system.gpu = Some(GpuSystem::from(&g.info));
                    gpu = Some(g);
                }
                Err(e) if explicit => anyhow::bail!("the gpu variant was asked for, but {e}"),
                Err(e) => {
                    eprintln!("note: GPU variants skipped: {e}");
                    variants.retain(|v| *v != Variant::Gpu);
                }
            }
        }
        // a records folder holds only runs of its machine: refuse at once, not after an hour of measuring
        let folder = match &args.out {
            Some(dir) => {
                let f = output::Folder::open(dir)?;
                let cpu_only = System { gpu: None, ..system.clone() };
                f.check(&cpu_only, "a CPU run of this machine")?;
                if system.gpu.is_some() {
                    f.check(&system, "a GPU run of this machine")?;
                }
                Some(f)
            }
            None => None,
        };
        let progress = if args.quiet { ProgressBar::hidden() } else { ProgressBar::new(0) };
        progress.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
                .expect("valid template"),
        );
        Ok(Runner {
            args: args.clone(),
            variants,
            gpu,
            system,
            cpu_ceiling: None,
            gpu_ceiling: None,
            cpu_fma: [None; 2],
            gpu_fma: [None; 2],
            gpu_shared: None,
            records: vec![],
            progress,
            header_printed: false,
            last_reps: 0,
            written: 0,
            folder,
            marks: BTreeMap::new(),
            plant,
            kernel: None,
        })
    }

    /// The mini-app whose cases run from now on (a suite runs several in one runner): a planted slowdown that
    /// names a kernel applies to its timed repetitions only.
    pub fn set_kernel(&mut self, name: Option<&'static str>) {
        self.kernel = name;
    }

    /// The planted slowdown of this run, if any (`QMC_PLANT_SLOWDOWN`).
    pub fn plant(&self) -> Option<&Plant> {
        self.plant.as_ref()
    }

    /// The planted factor for the mini-app running now: how many times its timed work runs in all (1 unplanted).
    /// A driver that times one whole run rather than repetitions scales its step count with it
    /// ([`timing::Credit::total`]).
    pub fn plant_factor(&self) -> f64 {
        Plant::factor_for(self.plant.as_ref(), self.kernel)
    }

    /// Add the parameter `name=value` to every record kept from now on: a scoring run marks its records with the
    /// workload version (`score=v1`), which also keeps them apart from other runs of the same cases.
    pub fn mark(&mut self, name: &str, value: &str) {
        self.marks.insert(name.into(), value.into());
    }

    /// Run `f` with the variants, precisions and repetitions narrowed by `by` (a suite's per-kernel flags: its
    /// `--variants`, `--precision` and `--reps`), then put them back: a suite runs every kernel in one runner, and
    /// each kernel's preset says which of the suite's variants and precisions it measures.
    pub fn narrowed<T>(&mut self, by: &CommonArgs, f: impl FnOnce(&mut Runner) -> T) -> T {
        let saved = (self.variants.clone(), self.args.precision.clone(), self.args.reps);
        if let Some(vs) = &by.variants {
            self.variants.retain(|v| vs.contains(v));
        }
        self.args.precision.retain(|p| by.precision.contains(p));
        if by.reps.is_some() {
            self.args.reps = by.reps;
        }
        let out = f(self);
        (self.variants, self.args.precision, self.args.reps) = saved;
        out
    }

    /// Is this variant to be run?
    pub fn runs(&self, v: Variant) -> bool {
        self.variants.contains(&v)
    }

    /// The open GPU (present whenever `runs(Variant::Gpu)`).
    pub fn gpu(&self) -> Option<&Arc<Gpu>> {
        self.gpu.as_ref()
    }

    /// The precisions asked for.
    pub fn precisions(&self) -> Vec<Precision> {
        self.args.precision.clone()
    }

    /// Seed for the inputs of case number `i` (fresh inputs per case, reproducible from the recorded seed).
    pub fn seed(&self, i: u64) -> u64 {
        self.args.seed.wrapping_add(i.wrapping_mul(1_000_003))
    }

    /// Add `n` cases to the progress bar.
    pub fn plan(&self, n: usize) {
        self.progress.inc_length(n as u64);
    }

    /// Say which case runs now.
    pub fn step(&self, msg: String) {
        self.progress.set_message(msg);
    }

    /// Print a line without breaking the progress bar.
    pub fn say(&self, line: &str) {
        self.progress.suspend(|| println!("{line}"));
    }

    /// Time `f` for variant `v` (CUDA events for the GPU, the host clock otherwise) with the `--reps` repetitions,
    /// laid out as [`Runner::time_reps`] says.
    pub fn time<E: From<GpuError>>(&mut self, v: Variant, f: impl FnMut() -> Result<(), E>) -> Result<Stats, E> {
        self.time_reps(v, self.args.reps(), f)
    }

    /// Like [`Runner::time`] with at most `reps` repetitions (for slow references); exactly `--reps` with
    /// `--fixed-reps`.
    ///
    /// A CPU run on one thread (`--threads 1`: the baseline of a "GPU over one core") spreads its repetitions in time
    /// ([`Runner::one_core_spread`]); every other run times them back to back.
    pub fn time_reps<E: From<GpuError>>(&mut self, v: Variant, reps: usize, f: impl FnMut() -> Result<(), E>) -> Result<Stats, E> {
        let spread = spread_of(v, self.args.threads, self.args.fixed_reps);
        self.time_spread(v, reps, spread, f)
    }

    /// How a one-core baseline lays out its repetitions: [`timing::ONE_CORE`] (a shared host's speed for one thread
    /// moves from second to second), or back to back under `--fixed-reps`, which counts instructions: there the
    /// pauses would change no count and only multiply the wall time (5x, under valgrind).
    pub fn one_core_spread(&self) -> Spread {
        spread_of(Variant::Cpu, Some(1), self.args.fixed_reps)
    }

    /// Like [`Runner::time_reps`] with the repetitions laid out in time as `spread` says (a one-core baseline on a
    /// shared host: [`Spread::Bursts`]).
    pub fn time_spread<E: From<GpuError>>(
        &mut self,
        v: Variant,
        reps: usize,
        spread: Spread,
        f: impl FnMut() -> Result<(), E>,
    ) -> Result<Stats, E> {
        let clock = match (v, &self.gpu) {
            (Variant::Gpu, Some(g)) => Clock::Gpu(g),
            _ => Clock::Host,
        };
        self.last_reps = if self.args.fixed_reps { self.args.reps() } else { reps.clamp(1, self.args.reps()) };
        let warmup = if v == Variant::CpuRef { self.args.warmup.min(1) } else { self.args.warmup };
        timing::measure(clock, warmup, self.last_reps, self.plant_factor(), spread, f)
    }

    /// The timed repetitions of the last [`Runner::time_spread`] (its `reps` as `--reps` and `--fixed-reps` leave it).
    pub fn last_reps(&self) -> usize {
        self.last_reps
    }

    /// Copy bandwidth of the device variant `v` runs on, in bytes/s, measured on first use.
    pub fn ceiling(&mut self, v: Variant) -> anyhow::Result<f64> {
        anyhow::ensure!(!self.args.no_ceilings, "a ceiling was asked for, but --no-ceilings measures none");
        Ok(match v {
            Variant::Gpu => {
                let g = self.gpu.as_ref().ok_or_else(|| anyhow::anyhow!("no GPU open"))?;
                match self.gpu_ceiling {
                    Some(c) => c,
                    None => *self.gpu_ceiling.insert(g.copy_bandwidth()?),
                }
            }
            _ => *self.cpu_ceiling.get_or_insert_with(|| ceilings::cpu_copy_bandwidth(256 << 20)),
        })
    }

    /// Arithmetic ceiling (flop/s, an FMA is 2) of the device variant `v` runs on, in f64 (`double`) or f32,
    /// measured on first use: the rate a compute-bound kernel is compared with.
    pub fn fma_ceiling(&mut self, v: Variant, double: bool) -> anyhow::Result<f64> {
        anyhow::ensure!(!self.args.no_ceilings, "a ceiling was asked for, but --no-ceilings measures none");
        let k = double as usize;
        Ok(match v {
            Variant::Gpu => {
                let g = self.gpu.as_ref().ok_or_else(|| anyhow::anyhow!("no GPU open"))?;
                match self.gpu_fma[k] {
                    Some(c) => c,
                    None => *self.gpu_fma[k].insert(g.fma_rate(double)?),
                }
            }
            _ => *self.cpu_fma[k].get_or_insert_with(|| ceilings::cpu_fma_rate(double)),
        })
    }

    /// Shared-memory read bandwidth of the GPU (bytes/s), measured on first use: the ceiling of a kernel whose
    /// working set lives on chip.
    pub fn shared_ceiling(&mut self) -> anyhow::Result<f64> {
        anyhow::ensure!(!self.args.no_ceilings, "a ceiling was asked for, but --no-ceilings measures none");
        let g = self.gpu.as_ref().ok_or_else(|| anyhow::anyhow!("no GPU open"))?;
        Ok(match self.gpu_shared {
            Some(c) => c,
            None => *self.gpu_shared.insert(g.shared_bandwidth()?),
        })
    }

    /// Turn a timed case into a record: rates, ceiling fraction, validation. Prints it and keeps it. A fast variant
    /// without checks is unchecked (the run then exits 1); the f64 reference without checks is measure-only.
    pub fn record(&mut self, case: &Case, v: Variant, time: Stats, work: Work, checks: &[Check]) -> anyhow::Result<()> {
        let validation = if v == Variant::CpuRef && checks.is_empty() {
            Validation::measure_only("the f64 reference itself: the other variants are checked against it")
        } else {
            Validation::from_checks(checks)
        };
        self.record_as(case, v, time, work, validation)
    }

    /// A record of a measurement with nothing to check against (a bandwidth ceiling): `why` says so in the record.
    pub fn record_measurement(&mut self, case: &Case, v: Variant, time: Stats, work: Work, why: &str) -> anyhow::Result<()> {
        self.record_as(case, v, time, work, Validation::measure_only(why))
    }

    fn record_as(&mut self, case: &Case, v: Variant, time: Stats, work: Work, validation: Validation) -> anyhow::Result<()> {
        let ceiling = if self.args.no_ceilings { None } else { Some(self.ceiling(v)?) };
        let gbs = work.bytes / time.median / 1e9;
        let mut system = self.system.clone();
        if v != Variant::Gpu {
            system.gpu = None;
        }
        if v == Variant::CpuRef {
            system.threads_used = 1;
        }
        let gpu_compile = (v == Variant::Gpu).then(|| self.gpu.as_ref().map(|g| g.compile_seconds())).flatten();
        let rec = Record {
            schema: SCHEMA,
            kernel: case.kernel.into(),
            op: case.op.clone(),
            variant: v,
            precision: case.precision.name().into(),
            sizes: case.sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            params: self.params_of(case, v),
            reps: self.last_reps,
            time,
            throughput: work.items / time.median,
            throughput_unit: work.unit.into(),
            bytes: work.bytes,
            bytes_model: Some(work.model),
            flops: work.flops,
            gbytes_per_s: gbs,
            gflops: work.flops / time.median / 1e9,
            ceiling_gbytes_per_s: ceiling.map(|c| c / 1e9),
            fraction_of_ceiling: ceiling.map(|c| gbs * 1e9 / c),
            validation,
            compile_s: gpu_compile,
            compile_options: (v == Variant::Gpu).then(|| OPTIONS_TEXT.to_string()),
            extra: BTreeMap::new(),
            seed: self.args.seed,
            system,
            commit: record::commit().into(),
            timestamp: record::timestamp(),
        };
        self.push(rec);
        Ok(())
    }

    /// The case's parameters, plus `threads` for a CPU run on a pool set by `--threads`: a one-core baseline is
    /// then its own case, never mistaken for the all-core one it would otherwise share a key with.
    fn params_of(&self, case: &Case, v: Variant) -> BTreeMap<String, String> {
        let mut p: BTreeMap<String, String> = case.params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        if let (Variant::Cpu, Some(t)) = (v, self.args.threads) {
            p.insert("threads".into(), t.to_string());
        }
        p
    }

    /// Keep a record built elsewhere (e.g. with extra fields) and print its table line.
    pub fn push(&mut self, mut rec: Record) {
        rec.params.extend(self.marks.iter().map(|(k, v)| (k.clone(), v.clone())));
        // a record of a planted slowdown says so: it is never a baseline (`compare`) nor imported
        let planted = Plant::factor_for(self.plant.as_ref(), Some(&rec.kernel));
        if planted != 1.0 {
            rec.extra.insert(crate::compare::PLANTED_EXTRA.into(), planted);
        }
        if !self.header_printed {
            self.say(&output::table_header());
            self.header_printed = true;
        }
        self.say(&output::table_line(&rec));
        self.progress.inc(1);
        // The previous record is complete (extras are added right after a push): write it now, so a run that is
        // interrupted keeps everything it measured before.
        if let Err(e) = self.flush(self.records.len()) {
            self.say(&format!("warning: {e}"));
        }
        self.records.push(rec);
    }

    /// Append records `written..upto` to `--out` (nothing without `--out`).
    fn flush(&mut self, upto: usize) -> anyhow::Result<Vec<std::path::PathBuf>> {
        let mut files = vec![];
        if let Some(folder) = &mut self.folder {
            if upto > self.written {
                files = folder.append(&self.records[self.written..upto])?;
            }
        }
        self.written = upto.max(self.written);
        Ok(files)
    }

    /// Add a measured quantity to the last record. A measured result that is not finite (a NaN energy) fails the
    /// record with a check naming it, and is left out of `extra` (JSON has no NaN, and a record must read back as it
    /// was written). A quantity that does not apply to this case is not passed at all: don't call `extra` for it.
    pub fn extra(&mut self, name: &str, value: f64) {
        if let Some(r) = self.records.last_mut() {
            if value.is_finite() {
                r.extra.insert(name.into(), value);
            } else {
                r.validation.add(&Check::finite(&format!("extra {name} is finite (it is {value})"), &[value]));
            }
        }
    }

    /// Write records (with `--out`) and return the outcome: any failed validation makes it `ValidationFailed`, else
    /// any unchecked record `Unchecked` (both exit 1: a record that was not checked must not look passed);
    /// measure-only records (the reference, ceilings) count as neither.
    pub fn finish(mut self) -> anyhow::Result<Outcome> {
        self.progress.finish_and_clear();
        self.flush(self.records.len())?;
        if let Some(dir) = &self.args.out {
            let mut kernels: Vec<&str> = self.records.iter().map(|r| r.kernel.as_str()).collect();
            kernels.dedup();
            for k in kernels {
                eprintln!("wrote {}", dir.join(format!("{k}.jsonl")).display());
            }
        }
        Ok(verdict(&self.records))
    }
}

/// [`Runner::time_reps`]'s layout of the repetitions of variant `v` under `--threads` and `--fixed-reps`.
fn spread_of(v: Variant, threads: Option<usize>, fixed_reps: bool) -> Spread {
    if v == Variant::Cpu && threads == Some(1) && !fixed_reps { timing::ONE_CORE } else { Spread::BackToBack }
}

/// A run that stops on an error (a case that does not fit the device, a failed launch) keeps what it measured
/// before: the last record, complete but for extras its case would have added after the error, is written too
/// (`push` writes each record only when the next one comes, so that its extras go with it).
impl Drop for Runner {
    fn drop(&mut self) {
        if let Err(e) = self.flush(self.records.len()) {
            eprintln!("warning: the records measured so far were not all written: {e}");
        }
    }
}

/// The outcome of a run's records, with one line per record that failed or was not checked.
fn verdict(records: &[Record]) -> Outcome {
    let (mut failed, mut unchecked) = (0, 0);
    for r in records {
        if r.validation.failed() {
            eprintln!("FAILED validation: {} ({})", r.key(), r.validation.summary());
            failed += 1;
        } else if r.validation.is_unchecked() {
            eprintln!("UNCHECKED: {} ({})", r.key(), r.validation.note.as_deref().unwrap_or("no check was made"));
            unchecked += 1;
        }
    }
    if failed > 0 {
        Outcome::ValidationFailed
    } else if unchecked > 0 {
        Outcome::Unchecked
    } else {
        Outcome::Passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;

    /// Only the fast CPU variant on one thread spreads: not the GPU, not the reference (one core by design, never a
    /// speedup's baseline), not an all-core run, and not when counting instructions.
    #[test]
    fn only_a_one_core_baseline_spreads_its_repetitions() {
        assert_eq!(spread_of(Variant::Cpu, Some(1), false), timing::ONE_CORE);
        for (v, threads, fixed) in [(Variant::Cpu, None, false), (Variant::Cpu, Some(2), false), (Variant::Cpu, Some(1), true), (Variant::Gpu, Some(1), false), (Variant::CpuRef, Some(1), false)] {
            assert_eq!(spread_of(v, threads, fixed), Spread::BackToBack, "{v:?} threads {threads:?} fixed {fixed}");
        }
        let args = CommonArgs { variants: Some(vec![Variant::Cpu]), quiet: true, ..Default::default() };
        assert_eq!(Runner::new(&args).unwrap().one_core_spread(), timing::ONE_CORE);
        let args = CommonArgs { fixed_reps: true, ..args };
        assert_eq!(Runner::new(&args).unwrap().one_core_spread(), Spread::BackToBack);
    }

    #[test]
    fn records_reach_the_file_before_the_run_ends() {
        let dir = std::env::temp_dir().join(format!("qmc-runner-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let args = CommonArgs { variants: Some(vec![Variant::Cpu]), out: Some(dir.clone()), quiet: true, ..Default::default() };
        let mut r = Runner::new(&args).unwrap();
        r.push(sample("k", Variant::Cpu, 1, 1.0));
        r.extra("energy", -2.9);
        r.push(sample("k", Variant::Cpu, 2, 1.0));
        // the first record is complete (with its extra) and on disk while the run goes on
        let on_disk = crate::output::read_file(&dir.join("k.jsonl")).unwrap();
        assert_eq!(on_disk.len(), 1);
        assert_eq!(on_disk[0].extra["energy"], -2.9);
        r.finish().unwrap();
        assert_eq!(crate::output::read_file(&dir.join("k.jsonl")).unwrap().len(), 2, "finish writes the rest, once");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A run that stopped on an error after its second record (at 1536 electrons, the next walker count did not fit
    /// the GPU) lost that record: only `finish` wrote the last one.
    #[test]
    fn a_run_that_stops_on_an_error_keeps_its_last_record() {
        let dir = std::env::temp_dir().join(format!("qmc-runner-drop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let args = CommonArgs { variants: Some(vec![Variant::Cpu]), out: Some(dir.clone()), quiet: true, ..Default::default() };
        let run = |r: &mut Runner| -> anyhow::Result<()> {
            r.push(sample("k", Variant::Cpu, 1, 1.0));
            r.push(sample("k", Variant::Cpu, 2, 1.0));
            r.extra("energy", -2.9);
            anyhow::bail!("the next case does not fit")
        };
        let mut r = Runner::new(&args).unwrap();
        assert!(run(&mut r).is_err());
        drop(r);
        let on_disk = crate::output::read_file(&dir.join("k.jsonl")).unwrap();
        assert_eq!(on_disk.len(), 2, "both records kept");
        assert_eq!(on_disk[1].extra["energy"], -2.9);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_record_says_what_its_bytes_count_and_what_built_it() {
        let args = CommonArgs { variants: Some(vec![Variant::Cpu]), quiet: true, ..Default::default() };
        let mut r = Runner::new(&args).unwrap();
        let case = Case::new("k", "update", kernels::Precision::Double);
        let time = Stats::constant(1e-3);
        let work = Work { bytes: 1e9, model: BytesModel::Passes, flops: 0.0, items: 1.0, unit: "moves/s" };
        r.record(&case, Variant::Cpu, time, work, &[]).unwrap();
        let rec = &r.records[0];
        assert_eq!((rec.schema, rec.bytes_model), (2, Some(BytesModel::Passes)));
        assert!(rec.system.rustc.starts_with("rustc 1.") && rec.system.cudarc.split('.').count() == 3, "{:?}", rec.system);
        assert!(rec.system.host_gpus.is_some() && rec.system.host != "vm" && !rec.system.host.is_empty());
        assert!(output::table_line(rec).contains("%p"), "a passes-model fraction is marked: {}", output::table_line(rec));
        let csv = output::to_csv(&r.records);
        assert!(csv.starts_with("kernel,") && csv.contains(",bytes_model,") && csv.contains(",passes,"), "{csv}");
    }

    #[test]
    fn a_run_into_another_machines_folder_is_refused_before_it_measures() {
        // a folder named for a GPU no machine has
        let dir = std::env::temp_dir().join(format!("qmc-runner-{}/nvidia-x9000", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let args = CommonArgs { variants: Some(vec![Variant::Cpu]), out: Some(dir.clone()), quiet: true, ..Default::default() };
        let e = Runner::new(&args).err().expect("refused").to_string();
        assert!(e.contains("refusing to write to") && e.contains("a host without a GPU named nvidia-x9000"), "{e}");
        assert!(!dir.exists(), "nothing written");
    }

    /// The runner used to drop a non-finite extra without a word: a NaN energy left a passed record.
    #[test]
    fn a_non_finite_measured_extra_fails_the_record() {
        let args = CommonArgs { variants: Some(vec![Variant::Cpu]), quiet: true, ..Default::default() };
        let mut r = Runner::new(&args).unwrap();
        r.push(sample("k", Variant::Cpu, 1, 1.0));
        r.extra("energy", f64::NAN);
        r.extra("weight", f64::INFINITY);
        r.extra("acceptance", 0.5);
        let v = &r.records[0].validation;
        assert!(v.failed(), "{v:?}");
        assert!(v.checks.iter().any(|c| c.quantity.contains("extra energy") && !c.passed), "{v:?}");
        assert!(v.checks.iter().any(|c| c.quantity.contains("extra weight")), "{v:?}");
        assert!(!r.records[0].extra.contains_key("energy") && r.records[0].extra["acceptance"] == 0.5);
        assert!(matches!(r.finish().unwrap(), Outcome::ValidationFailed));
    }

    #[test]
    fn unchecked_records_make_the_run_exit_1_and_measurements_do_not() {
        let mut unchecked = sample("k", Variant::Cpu, 1, 1.0);
        unchecked.validation = Validation::from_checks(&[]);
        let mut reference = sample("k", Variant::CpuRef, 1, 1.0);
        reference.validation = Validation::measure_only("the reference");
        let passed = sample("k", Variant::Cpu, 2, 1.0);
        assert!(matches!(verdict(&[passed.clone(), reference.clone()]), Outcome::Passed));
        assert!(matches!(verdict(&[passed.clone(), unchecked.clone()]), Outcome::Unchecked));
        let mut failed = passed;
        failed.validation.add(&Check::finite("e", &[f64::NAN]));
        assert!(matches!(verdict(&[failed, unchecked]), Outcome::ValidationFailed));
    }

    #[test]
    fn the_reference_is_measure_only_and_a_fast_variant_without_checks_unchecked() {
        let args = CommonArgs { variants: Some(vec![Variant::CpuRef, Variant::Cpu]), quiet: true, ..Default::default() };
        let mut r = Runner::new(&args).unwrap();
        let case = Case::new("k", "op", kernels::Precision::Double).size("n", 1);
        let t = Stats::constant(1.0);
        let w = Work { bytes: 1.0, model: BytesModel::Compulsory, flops: 1.0, items: 1.0, unit: "items/s" };
        r.record(&case, Variant::CpuRef, t, w, &[]).unwrap();
        r.record(&case, Variant::Cpu, t, w, &[]).unwrap();
        r.record_measurement(&case, Variant::Cpu, t, w, "a ceiling").unwrap();
        let st: Vec<&str> = r.records.iter().map(|x| x.validation.status.as_str()).collect();
        assert_eq!(st, ["measure-only", "unchecked", "measure-only"]);
        assert_eq!(r.records[2].validation.note.as_deref(), Some("a ceiling"));
    }

    #[test]
    fn marks_reach_every_later_record_and_narrowing_is_undone() {
        let args = CommonArgs { variants: Some(vec![Variant::CpuRef, Variant::Cpu]), quiet: true, reps: Some(7), ..Default::default() };
        let mut r = Runner::new(&args).unwrap();
        r.push(sample("k", Variant::Cpu, 1, 1.0));
        r.mark("score", "v1");
        r.push(sample("k", Variant::Cpu, 2, 1.0));
        assert!(!r.records[0].params.contains_key("score"));
        assert_eq!(r.records[1].params["score"], "v1");
        assert!(r.records[1].key().contains("score=v1"), "a scoring record is a case of its own");
        let by = CommonArgs { variants: Some(vec![Variant::Cpu, Variant::Gpu]), precision: vec![Precision::Double, Precision::Mixed], reps: Some(3), ..Default::default() };
        let inside = r.narrowed(&by, |r| (r.runs(Variant::CpuRef), r.runs(Variant::Cpu), r.precisions(), r.args.reps()));
        assert_eq!(inside, (false, true, vec![Precision::Double, Precision::Mixed], 3));
        assert!(r.runs(Variant::CpuRef) && r.precisions().len() == 3 && r.args.reps() == 7, "put back afterwards");
    }
}
