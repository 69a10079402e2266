//! The flags every program shares, and the exit-code convention: 0 every record validated (or a measurement with
//! nothing to check, said so), 1 a validation failed or a record was not checked, 2 an error (bad input, no GPU
//! when one was demanded, unreadable files). Errors print one line, never a panic trace.

use crate::record::Variant;
use clap::Args;
use kernels::Precision;
use std::path::PathBuf;
use std::process::ExitCode;

/// Options common to every mini-app.
#[derive(Args, Clone, Debug)]
pub struct CommonArgs {
    /// Variants to run, comma-separated: cpu-ref (plain f64 reference), cpu (all cores), gpu.
    /// Default: all of them, with gpu skipped (and said so) when no GPU is present.
    #[arg(long, value_delimiter = ',')]
    pub variants: Option<Vec<Variant>>,
    /// Precisions, comma-separated: double, single, mixed (single storage and evaluation, double accumulation).
    #[arg(long, value_delimiter = ',', default_value = "double,single,mixed")]
    pub precision: Vec<Precision>,
    /// GPU ordinal to use.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// CPU threads for the `cpu` variant (default: all logical cores). With 1 (a one-core baseline) the timed
    /// repetitions are spread over several seconds, in bursts with pauses between them, since a shared host's
    /// speed for one thread moves from second to second.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Timed repetitions per case (min/median/max are reported) [default: 10, or the suite level's].
    #[arg(long)]
    pub reps: Option<usize>,
    /// Every timed case runs exactly --reps repetitions: no mini-app shortens a slow case (by its size, or by the
    /// time of a first run). For counting instructions (scripts/instr-check.sh), where the count must not depend
    /// on the machine's speed; the repetitions then run back to back, even on one core.
    #[arg(long)]
    pub fixed_reps: bool,
    /// Measure none of the machine's ceilings (copy bandwidth, FMA and GEMM rates): records carry no fraction of a
    /// ceiling and no floors. For counting instructions, where measuring them only adds start-up work.
    #[arg(long)]
    pub no_ceilings: bool,
    /// Untimed warm-up repetitions before timing.
    #[arg(long, default_value_t = 2)]
    pub warmup: usize,
    /// Folder to append records to (<kernel>.jsonl and <kernel>.csv; earlier records are kept).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seed of every random input (recorded, so a run can be repeated).
    #[arg(long, default_value_t = 20261122)]
    pub seed: u64,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl CommonArgs {
    /// Repetitions per case.
    pub fn reps(&self) -> usize {
        self.reps.unwrap_or(10)
    }
}

impl Default for CommonArgs {
    fn default() -> Self {
        CommonArgs {
            variants: None,
            precision: Precision::ALL.to_vec(),
            device: 0,
            threads: None,
            reps: None,
            fixed_reps: false,
            no_ceilings: false,
            warmup: 2,
            out: None,
            seed: 20261122,
            quiet: false,
        }
    }
}

/// Outcome of a program, mapped to its exit code.
pub enum Outcome {
    Passed,
    ValidationFailed,
    /// No record failed, but some were not checked: that must not look like a pass.
    Unchecked,
    /// `compare` found a slowdown beyond its tolerance.
    Regression,
}

/// Run a program body: print its error in one line (with causes) and choose the exit code.
pub fn main_with(body: impl FnOnce() -> anyhow::Result<Outcome>) -> ExitCode {
    quiet_on_closed_pipe();
    if let Err(e) = kernels::simd::from_env() {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    match body() {
        Ok(Outcome::Passed) => ExitCode::SUCCESS,
        Ok(Outcome::ValidationFailed) => {
            eprintln!("error: validation failed (see the records above); exit status 1");
            ExitCode::from(1)
        }
        Ok(Outcome::Unchecked) => {
            eprintln!("error: some records were not checked against a reference (UNCHECKED above); exit status 1");
            ExitCode::from(1)
        }
        Ok(Outcome::Regression) => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// A closed pipe ends the program quietly, as it ends any Unix filter (`qmcbench list | head`). The Rust runtime
/// ignores SIGPIPE, so a print to a closed pipe fails, and `println!` panics on the failure: a trace ("failed
/// printing to stdout: Broken pipe") and exit status 101 after the reader had all it wanted.
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: the default disposition, set before the program starts a thread; no handler of ours runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A size list like "64,256,1024" must be all positive.
pub fn positive(name: &str, values: &[usize]) -> anyhow::Result<()> {
    if values.is_empty() {
        anyhow::bail!("--{name} needs at least one value");
    }
    if let Some(v) = values.iter().find(|&&v| v == 0) {
        anyhow::bail!("--{name} must be positive, got {v}");
    }
    Ok(())
}
