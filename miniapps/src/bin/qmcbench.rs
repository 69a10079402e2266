//! `qmcbench`: the umbrella command of qmc-bench. Run one mini-app or the whole suite, draw the charts, compare a
//! run with a baseline, measure the machine's bandwidth ceilings, list what is available.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use harness::cli::{main_with, CommonArgs, Outcome};
use harness::{output, plot, Record, Runner, Variant};
use miniapps::registry::{self, Level};
use miniapps::score::WORKLOAD;
use std::path::PathBuf;
use std::process::ExitCode;

/// qmc-bench: quantum Monte Carlo kernels on CPU and GPU, timed, validated and charted.
///
/// Typical use:
///   qmcbench suite --quick              every kernel at small sizes (about a minute on 2 cores, no GPU needed)
///   qmcbench run bspline --help         one mini-app with its own sizes
///   qmcbench plot results/local         charts from records
///   qmcbench compare base/ new/         fail if any case slowed by more than --tolerance
///   qmcbench suite --score              the procurement workload (GPU host; run it three times)
///   qmcbench score results/a --reference results/b    GPU and host scores of machine a against machine b
///
/// Environment (read by qmcbench and by every mini-app):
///   QMC_SIMD=avx2|baseline            run the CPU side with a lower vector instruction set than the CPU's best,
///                                     to see what a smaller core gets (records say so; import refuses them)
///   QMC_PLANT_SLOWDOWN=<kernel>:<f>   make a kernel's timed work f times as long (proves the regression checks;
///                                     records say so; import refuses them)
#[derive(Parser)]
#[command(name = "qmcbench", version, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// List the kernels, the GPUs this machine has, and the CPU's vector instruction set.
    List,
    /// Run one mini-app: `qmcbench run <kernel> [its flags]` (see `qmcbench run <kernel> --help`).
    #[command(disable_help_flag = true)]
    Run {
        /// Kernel name (see `qmcbench list`).
        kernel: String,
        /// The mini-app's own flags.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run every kernel at preset sizes and draw the charts (or, with --score, run the procurement workload).
    Suite {
        /// Small sizes: about a minute on a 2-core machine without a GPU (the default).
        #[arg(long, conflicts_with_all = ["full", "score"])]
        quick: bool,
        /// The papers' sizes (for a GPU host).
        #[arg(long, conflicts_with = "score")]
        full: bool,
        /// The scoring workload (its cases and why: `miniapps::score`, the README), as a rule: GPU and all host
        /// cores, its own precisions, repetitions and seed; every record marked score=<version>; no charts. About
        /// 2 minutes on an H100 host; `qmcbench score` wants three such runs per machine in one folder.
        #[arg(long, conflicts_with = "kernels")]
        score: bool,
        /// Only these kernels, comma-separated.
        #[arg(long, value_delimiter = ',')]
        kernels: Option<Vec<String>>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Draw speedup and throughput charts (PNG and SVG) from record files or folders.
    Plot {
        /// Record files (*.jsonl) or folders holding them.
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// Folder for the charts.
        #[arg(long, default_value = "plots")]
        out: PathBuf,
        /// Size parameter on the x axis (default: the one with most distinct values).
        #[arg(long)]
        x: Option<String>,
        /// Variant the speedups are relative to (default: cpu when there are GPU records, else cpu-ref).
        #[arg(long)]
        baseline: Option<Variant>,
    },
    /// Compare a new record set with a baseline; exit 1 if any case slowed by more than the tolerance.
    Compare {
        /// Baseline records (file or folder).
        base: PathBuf,
        /// New records (file or folder).
        new: PathBuf,
        /// Allowed slowdown as a fraction of the baseline time (0.1 = 10% slower passes).
        #[arg(long, default_value_t = 0.10)]
        tolerance: f64,
        /// Compare times normalised by the copy-bandwidth ceiling measured in the same process, which removes most
        /// of the machine-to-machine and load difference (for CI machines).
        #[arg(long)]
        normalize: bool,
        /// Judge the suite as a whole: fail only if the geometric mean of new/base over all matched cases exceeds
        /// 1 + tolerance (single cases are still listed). For shared machines, where one small case can swing 2x.
        #[arg(long, conflicts_with_all = ["noise", "planted"])]
        aggregate: bool,
        /// The time compared: the median repetition, or the mean over the repetitions (which a planted fractional
        /// slowdown shifts by its factor). Records without it (no mean before it was recorded) are skipped; so are
        /// records that failed or were not checked, and on the baseline side records of a planted slowdown.
        #[arg(long, value_enum, default_value = "median")]
        stat: harness::compare::Stat,
        /// BASE and NEW are two unchanged runs: print each case's difference, the largest, and the tolerance a check
        /// takes from it (three times it, at least 1%) as a last line `tolerance=<fraction>`; exit 1 if that
        /// tolerance could not tell a slowdown of --resolve from noise.
        #[arg(long, conflicts_with = "planted")]
        noise: bool,
        /// With --noise: the slowdown the check must be able to catch (0.05 = 5%).
        #[arg(long, default_value_t = 0.05, requires = "noise")]
        resolve: f64,
        /// NEW ran with a slowdown planted in this kernel (QMC_PLANT_SLOWDOWN): pass only if every case of it is
        /// slower than the tolerance allows and no case of another kernel is.
        #[arg(long)]
        planted: Option<String>,
        /// NEW holds only some of BASE's cases (e.g. a device's whole results folder as BASE): list the cases of BASE
        /// it lacks as a count, not one by one.
        #[arg(long)]
        subset: bool,
    },
    /// Each case of a new run against its history in a device's committed records (the GPU host's regression stage,
    /// check (c)): the median of the case's latest committed records (same case, same work per repetition, passed,
    /// not planted), judged at the larger of --tolerance and three times the history's own spread, so the drift
    /// between machine sessions is allowed for by measurement rather than by a guess. A case with fewer than 3 such
    /// records is listed, not judged. Exit 1 if a judged case is slower than its tolerance allows.
    CompareHistory {
        /// The device's committed records, e.g. results/nvidia-h100-80gb-hbm3 (its history-since.tsv, if any, starts
        /// a kernel's history anew; see history-rebase).
        history: PathBuf,
        /// The new run's records (file or folder).
        new: PathBuf,
        /// The tolerance of a case with a quiet history: the within-session one (from two unchanged runs).
        #[arg(long)]
        tolerance: f64,
        /// The time compared (see compare).
        #[arg(long, value_enum, default_value = "mean")]
        stat: harness::compare::Stat,
    },
    /// Start a kernel's history anew in a device's results folder (a line in its history-since.tsv): for a change
    /// meant to alter the kernel's cost. Its older records stay, as records, but no longer judge new runs. Commit
    /// the file with the change and the reason.
    HistoryRebase {
        /// The device's results folder, e.g. results/nvidia-h100-80gb-hbm3.
        folder: PathBuf,
        /// The kernel, e.g. lattice.
        kernel: String,
        /// Why its cost was meant to change (one line; it goes into the file).
        #[arg(long)]
        reason: String,
        /// Where the history starts, as a record's timestamp (2026-11-26T14:00:00Z) [default: now, for a change not
        /// yet measured; name the first record of the changed code when it is already committed].
        #[arg(long)]
        since: Option<String>,
    },
    /// Compare two tables of instruction counts per repetition (scripts/instr-check.sh): exit 1 if any case's count
    /// changed, either way, by more than the tolerance, or a case is missing on one side; exit 2 on a malformed table
    /// (a zero or NaN count included).
    CompareInstructions {
        /// Baseline table (results/ci-baseline/instructions.tsv).
        base: PathBuf,
        /// New table.
        new: PathBuf,
        /// Allowed change as a fraction of the baseline count, either way (a case may carry its own in the table's
        /// third column).
        #[arg(long, default_value_t = 0.02)]
        tolerance: f64,
        /// The new table measured only some cases: baseline cases it lacks are not an error.
        #[arg(long)]
        subset: bool,
        /// A slowdown was planted in this kernel (the self-test): pass only if every case of it grew beyond the
        /// tolerance and no case of another kernel changed.
        #[arg(long)]
        planted: Option<String>,
    },
    /// Redraw a paper's chart or table from records, beside the paper's own numbers (`--list` names them). Draws
    /// only what the records hold (passed records; a ratio pairs records of one commit) and measures nothing unless
    /// asked: with no records for the figure it says so and exits 2; `--measure` runs the mini-app first.
    Figure {
        /// Figure name (see --list).
        #[arg(required_unless_present = "list")]
        name: Option<String>,
        /// List the figures.
        #[arg(long)]
        list: bool,
        /// Record files or folders to read; --measure writes into the first folder.
        #[arg(long, default_value = "results/local")]
        records: Vec<PathBuf>,
        /// Folder for the chart (PNG, SVG) and the side-by-side table (TXT) [default: <first records folder>/figures].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Run the figure's mini-app command lines on this machine first (records into the first records folder).
        #[arg(long)]
        measure: bool,
    },
    /// Procurement: a machine's GPU score and host score against a reference machine on the scoring workload
    /// (`qmcbench suite --score`), each the geometric mean over kernels of throughput ratios, with a 95% interval
    /// (bootstrap over whole runs) and per kernel its ratio, interval and fraction of the copy bandwidth (whether
    /// it is bandwidth-bound). Refused (exit 2, one sentence) unless both folders hold complete scoring runs of the
    /// same workload version, every record passed, each measured on the machine its folder is named for.
    Score {
        /// Records of the machine to score: its results folder, e.g. results/nvidia-h200.
        new: PathBuf,
        /// Records of the reference machine, e.g. results/nvidia-h100-80gb-hbm3.
        #[arg(long)]
        reference: PathBuf,
        /// Also print the combined score (geometric mean of the GPU and host scores).
        #[arg(long)]
        combined: bool,
        /// Also print every case's ratio.
        #[arg(long)]
        cases: bool,
        /// Write the one-page procurement report (self-contained HTML) to this file.
        #[arg(long)]
        html: Option<PathBuf>,
    },
    /// Write one self-contained HTML page (machines, summary, the papers' figures each beside its reading and table,
    /// every chart, every record) from record files.
    Report {
        /// Record files (*.jsonl) or folders holding them.
        #[arg(required = true)]
        records: Vec<PathBuf>,
        /// The page to write.
        #[arg(long, default_value = "report.html")]
        out: PathBuf,
        /// Page title.
        #[arg(long, default_value = "qmc-bench report")]
        title: String,
    },
    /// The README's headline tables from records: each number with its commit and device, from passed records of
    /// the folder's machine, the two records of a ratio of one commit. Prints the Markdown, or with --write replaces
    /// the section between the README's headline markers.
    Headlines {
        /// Record folders, one set of tables each [default: the folders the README shows].
        folders: Vec<String>,
        /// Replace the generated section of this file (README.md) instead of printing it.
        #[arg(long)]
        write: Option<PathBuf>,
    },
    /// The synthetic solid's DMC weak scaling projected to many GPUs from a folder's runs over a few (scripts/gpu-host.sh
    /// solid-scaling): each series' generation split into a rank's own work, its migration and the wait for the
    /// slowest rank (independent stragglers, fitted to the runs), plus an all-reduce across nodes of the given
    /// latency and bandwidth; efficiencies over the one-rank run of the same walkers a GPU, newest commit, passed
    /// records of the folder's machine. Exit 2 when the folder holds no such runs.
    Project {
        /// Records of one machine, e.g. results/nvidia-h200.
        folder: PathBuf,
        /// GPU counts to project to.
        #[arg(long, value_delimiter = ',', default_values_t = miniapps::projection::GPUS.to_vec())]
        gpus: Vec<usize>,
        /// Seconds a stage of the all-reduce between nodes costs before its bytes.
        #[arg(long, default_value_t = kernels::ensemble::projection::Network::default().latency_s)]
        latency: f64,
        /// Bytes per second a stage of the all-reduce moves.
        #[arg(long, default_value_t = kernels::ensemble::projection::Network::default().bandwidth)]
        bandwidth: f64,
        /// Only this migration cargo (configuration, inverse, whole) [default: every one measured].
        #[arg(long)]
        migrate: Option<String>,
    },
    /// Bring a GPU host's records into results/<gpu>/: every record must name a clean commit, be new to the folder
    /// and be a run of the folder's machine, or nothing is written. Prints the folder.
    Import {
        /// The records: a records.tgz from scripts/gpu-host.sh, a folder of *.jsonl, or one .jsonl file.
        source: PathBuf,
        /// The folder [default: results/<the GPU of the records, in lower case, e.g. nvidia-h100-80gb-hbm3>].
        #[arg(long)]
        into: Option<PathBuf>,
    },
    /// Measure the copy bandwidth of the CPU (all threads) and the GPU; --out writes them as records.
    Ceilings {
        #[command(flatten)]
        common: CommonArgs,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Cmd::Run { kernel, args } = cli.cmd {
        return match registry::find(&kernel) {
            Ok(k) => (k.main)(std::iter::once(format!("qmcbench run {kernel}")).chain(args).map(Into::into).collect()),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    main_with(|| match cli.cmd {
        Cmd::List => list(),
        Cmd::Suite { score: true, common, .. } => score_suite(common),
        Cmd::Suite { full, kernels, common, .. } => suite(if full { Level::Full } else { Level::Quick }, kernels, common),
        Cmd::Plot { records, out, x, baseline } => plot_cmd(&records, &out, x.as_deref(), baseline),
        Cmd::Compare { base, new, tolerance, normalize, aggregate, stat, noise, resolve, planted, subset } => {
            compare(&base, &new, &CompareHow { tolerance, normalize, aggregate, stat, noise, resolve, planted, subset })
        }
        Cmd::Ceilings { common } => ceilings(common),
        Cmd::CompareHistory { history, new, tolerance, stat } => compare_history(&history, &new, tolerance, stat),
        Cmd::HistoryRebase { folder, kernel, reason, since } => history_rebase(&folder, &kernel, &reason, since),
        Cmd::CompareInstructions { base, new, tolerance, subset, planted } => compare_instructions(&base, &new, tolerance, subset, planted.as_deref()),
        Cmd::Import { source, into } => import(&source, into.as_deref()),
        Cmd::Headlines { folders, write } => headlines(&folders, write.as_deref()),
        Cmd::Project { folder, gpus, latency, bandwidth, migrate } => project(&folder, &gpus, latency, bandwidth, migrate.as_deref()),
        Cmd::Report { records, out, title } => report(&records, &out, &title),
        Cmd::Score { new, reference, combined, cases, html } => score(&new, &reference, combined, cases, html.as_deref()),
        Cmd::Figure { name, list, records, out, measure } => figure(name.as_deref(), list, &records, out, measure),
        Cmd::Run { .. } => unreachable!("handled above"),
    })
}

fn list() -> Result<Outcome> {
    println!("kernels:");
    for k in registry::kernels() {
        println!("  {:<16} {}", k.name, k.about);
    }
    println!("devices:");
    let sys = harness::system::System::detect();
    let lowered = sys.cpu_isa_lowered_from.as_ref().map(|best| format!(", lowered from {best} by QMC_SIMD")).unwrap_or_default();
    println!("  cpu  {} ({} logical CPUs, vector ISA {}{lowered})", sys.cpu_model, sys.cpu_logical, sys.cpu_isa);
    match kernels::gpu::Gpu::count() {
        Ok(n) => {
            for i in 0..n {
                match kernels::gpu::Gpu::open(i) {
                    Ok(g) => println!(
                        "  gpu {i}  {} (compute {}.{}, {} SMs, {:.1} GiB, driver {})",
                        g.info.name,
                        g.info.compute_capability.0,
                        g.info.compute_capability.1,
                        g.info.multiprocessors,
                        g.info.memory_bytes as f64 / (1u64 << 30) as f64,
                        g.info.driver_version
                    ),
                    Err(e) => println!("  gpu {i}  unusable: {e}"),
                }
            }
        }
        Err(e) => println!("  no GPU: {e}"),
    }
    Ok(Outcome::Passed)
}

fn suite(level: Level, only: Option<Vec<String>>, mut common: CommonArgs) -> Result<Outcome> {
    let all = registry::kernels();
    let chosen: Vec<_> = match &only {
        Some(names) => names.iter().map(|n| registry::find(n)).collect::<Result<_>>()?,
        None => all,
    };
    common.reps.get_or_insert(if level == Level::Quick { 3 } else { 10 });
    let out = common.out.get_or_insert_with(|| PathBuf::from("results/local")).clone();
    let mut runner = Runner::new(&common)?;
    registry::check_plant(&runner)?;
    for k in &chosen {
        let flags = (k.suite)(level);
        runner.say(&format!("== {} {}", k.name, flags.join(" ")));
        (k.run_in)(&mut runner, flags).with_context(|| format!("suite: {}", k.name))?;
    }
    let records = runner.records.clone();
    let outcome = runner.finish()?;
    draw_all(&records, &out.join("plots"), None, None)?;
    Ok(outcome)
}

/// One run of the scoring workload, by its rule: every kernel of the workload with its preset, GPU and all cores,
/// records marked with the workload version; at the end the run checks that it holds every case of the workload.
fn score_suite(mut common: CommonArgs) -> Result<Outcome> {
    let d = CommonArgs::default();
    anyhow::ensure!(
        common.variants.is_none() && common.precision == d.precision && common.reps.is_none() && common.threads.is_none() && common.warmup == d.warmup && common.seed == d.seed && !common.fixed_reps && !common.no_ceilings,
        "--score runs the workload as defined (GPU and all cores, its precisions, repetitions and seed): leave out --variants, --precision, --reps, --fixed-reps, --no-ceilings, --threads, --warmup and --seed"
    );
    common.variants = Some(vec![Variant::Cpu, Variant::Gpu]);
    common.reps = Some(miniapps::score::REPS);
    let out = common.out.get_or_insert_with(|| PathBuf::from("results/local")).clone();
    let mut runner = Runner::new(&common)?;
    registry::check_plant(&runner)?;
    runner.mark(harness::score::PARAM, WORKLOAD.version);
    for name in WORKLOAD.kernels() {
        let k = registry::find(name)?;
        let flags = (k.suite)(Level::Score);
        runner.say(&format!("== {} {}", k.name, flags.join(" ")));
        (k.run_in)(&mut runner, flags).with_context(|| format!("suite --score: {}", k.name))?;
    }
    let records = runner.records.clone();
    let outcome = runner.finish()?;
    let missing = WORKLOAD.missing(&records);
    anyhow::ensure!(missing.is_empty(), "this scoring run lacks {} of the workload's {} cases (the first: {}): the kernels' presets and miniapps::score disagree", missing.len(), WORKLOAD.cases().count(), missing[0]);
    eprintln!("scoring run of workload {} complete: {} records in {}", WORKLOAD.version, records.len(), out.display());
    Ok(outcome)
}

fn charts(records: &[Record], x: Option<&str>, baseline: Option<Variant>) -> Vec<plot::Chart> {
    let mut charts = plot::speedup_charts(records, x, baseline);
    charts.extend(plot::throughput_charts(records, x));
    charts
}

fn figure(name: Option<&str>, list: bool, paths: &[PathBuf], out: Option<PathBuf>, measure: bool) -> Result<Outcome> {
    use miniapps::figures;
    if list {
        for f in figures::all() {
            println!("{:<28} {}\n{:<28} {}", f.name, f.title, "", f.paper);
        }
        return Ok(Outcome::Passed);
    }
    let f = figures::find(name.expect("clap requires a name without --list"))?;
    let mut outcome = Outcome::Passed;
    if measure {
        let dir = paths[0].clone();
        eprintln!("measuring {} into {} (--measure)", f.name, dir.display());
        let k = registry::find(f.kernel)?;
        for flags in f.runs {
            let argv: Vec<std::ffi::OsString> = std::iter::once(format!("qmcbench run {}", f.kernel))
                .chain(flags.iter().map(|s| s.to_string()))
                .chain(["--out".to_string(), dir.display().to_string()])
                .map(Into::into)
                .collect();
            if (k.main)(argv) != ExitCode::SUCCESS {
                outcome = Outcome::ValidationFailed;
            }
        }
    }
    // a folder that does not exist yet or holds no records is a figure with nothing to draw, said below
    let mut records = vec![];
    for p in paths.iter().filter(|p| p.exists()) {
        match output::read_records(std::slice::from_ref(p)) {
            Ok(r) => records.extend(r),
            Err(output::RecordsError::Empty(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let sel = figures::select(&f, &records);
    let measured = figures::series(&f, &sel);
    if measured.is_empty() {
        let runs: Vec<String> = f.runs.iter().map(|r| format!("qmcbench run {} {}", f.kernel, r.join(" "))).collect();
        anyhow::bail!(
            "no passed records for {} in {} (nothing measured: `qmcbench figure {} --measure` runs {} here first)",
            f.name,
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
            f.name,
            runs.join("; ")
        );
    }
    let dir = out.unwrap_or_else(|| paths[0].join("figures"));
    for p in plot::draw(&figures::chart(&f, &measured, &sel), &dir)? {
        eprintln!("wrote {}", p.display());
    }
    let table = figures::table(&f, &measured, &sel);
    output::write_atomic(&dir.join(format!("{}.txt", f.name)), table.as_bytes())?;
    print!("{table}");
    Ok(outcome)
}

fn project(folder: &std::path::Path, gpus: &[usize], latency: f64, bandwidth: f64, migrate: Option<&str>) -> Result<Outcome> {
    use kernels::ensemble::projection::Network;
    if !(latency >= 0.0 && latency.is_finite() && bandwidth > 0.0) || gpus.iter().any(|&p| p < 2) {
        anyhow::bail!("--latency must be a finite number of seconds >= 0, --bandwidth bytes/s > 0 and every --gpus count at least 2");
    }
    let records = harness::output::read_records(&[folder.to_path_buf()])?;
    let name = folder.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let identity = harness::machine::Identity::new(&name, &records);
    let mine: Vec<&harness::Record> = records.iter().filter(|r| r.validation.status == "passed" && identity.belongs(r)).collect();
    let series: Vec<_> = miniapps::projection::series(&mine).into_iter().filter(|s| migrate.is_none_or(|m| s.migrate == m)).collect();
    if series.is_empty() {
        anyhow::bail!("{} holds no passed solid DMC runs over several GPUs with their one-rank runs (scripts/gpu-host.sh solid-scaling makes them)", folder.display());
    }
    print!("{}", miniapps::projection::table(&series, gpus, &Network { latency_s: latency, bandwidth }));
    Ok(Outcome::Passed)
}

fn headlines(folders: &[String], write: Option<&std::path::Path>) -> Result<Outcome> {
    use miniapps::headlines;
    let folders: Vec<&str> = if folders.is_empty() { headlines::README_FOLDERS.to_vec() } else { folders.iter().map(String::as_str).collect() };
    let section = headlines::section(std::path::Path::new("."), &folders)?;
    match write {
        None => println!("{section}"),
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            output::write_atomic(path, headlines::replace_section(&text, &section)?.as_bytes())?;
            eprintln!("wrote the headline tables of {} into {}", folders.join(", "), path.display());
        }
    }
    Ok(Outcome::Passed)
}

fn import(source: &std::path::Path, into: Option<&std::path::Path>) -> Result<Outcome> {
    use harness::import;
    let records = import::read_source(source)?;
    let dir = import::destination(&records, into, std::path::Path::new("results"))?;
    let n = import::import(&records, &dir)?;
    eprintln!("imported {n} records from {} into {}", source.display(), dir.display());
    println!("{}", dir.display());
    Ok(Outcome::Passed)
}

fn score(new: &std::path::Path, reference: &std::path::Path, combined: bool, cases: bool, html: Option<&std::path::Path>) -> Result<Outcome> {
    let s = harness::score::score_folders(&WORKLOAD, new, reference)?;
    print!("{}", harness::score::text(&s, combined, cases));
    if let Some(page) = html {
        output::write_atomic(page, harness::score_report::html(&s, combined).as_bytes())?;
        eprintln!("wrote {}", page.display());
    }
    Ok(Outcome::Passed)
}

fn report(paths: &[PathBuf], out: &std::path::Path, title: &str) -> Result<Outcome> {
    let records = output::read_records(paths)?;
    let figures: Vec<_> = miniapps::figures::all().iter().filter_map(|f| miniapps::figures::section(f, &records)).collect();
    let page = harness::report::html(title, &records, &figures, &charts(&records, None, None))?;
    output::write_atomic(out, page.as_bytes())?;
    eprintln!("wrote {} ({} records)", out.display(), records.len());
    Ok(Outcome::Passed)
}

fn draw_all(records: &[Record], dir: &std::path::Path, x: Option<&str>, baseline: Option<Variant>) -> Result<()> {
    let charts = charts(records, x, baseline);
    for c in &charts {
        for f in plot::draw(c, dir)? {
            eprintln!("wrote {}", f.display());
        }
    }
    if charts.is_empty() {
        eprintln!("note: no chart could be drawn (no size varies, or no matching cases)");
    }
    Ok(())
}

fn plot_cmd(paths: &[PathBuf], out: &std::path::Path, x: Option<&str>, baseline: Option<Variant>) -> Result<Outcome> {
    let records = output::read_records(paths)?;
    draw_all(&records, out, x, baseline)?;
    Ok(Outcome::Passed)
}

/// How `qmcbench compare` judges (its flags).
struct CompareHow {
    tolerance: f64,
    normalize: bool,
    aggregate: bool,
    stat: harness::compare::Stat,
    noise: bool,
    resolve: f64,
    planted: Option<String>,
    subset: bool,
}

fn compare(base: &PathBuf, new: &PathBuf, how: &CompareHow) -> Result<Outcome> {
    let tolerance = how.tolerance;
    anyhow::ensure!(tolerance.is_finite() && tolerance >= 0.0, "--tolerance must be a non-negative number");
    anyhow::ensure!(how.resolve.is_finite() && how.resolve > 0.0, "--resolve must be a positive number");
    let b = output::read_records(std::slice::from_ref(base))?;
    let n = output::read_records(std::slice::from_ref(new))?;
    let time_of = |r: &Record| {
        let t = how.stat.of(r)?;
        // seconds x ceiling bandwidth = bytes the machine could have copied meanwhile
        Some(if how.normalize { t * r.ceiling_gbytes_per_s.unwrap_or(1.0) } else { t })
    };
    let c = harness::compare::compare_by(&b, &n, tolerance, time_of);
    let what = if how.noise { "noise" } else { "new/base" };
    println!("{:<90} {:>12} {:>12} {:>8}", "case", "base", "new", what);
    for row in &c.rows {
        if how.noise {
            println!("{:<90} {:>12.4e} {:>12.4e} {:>7.2}%", row.key, row.base, row.new, 100.0 * (row.ratio - 1.0).abs());
        } else {
            let flag = if row.slower { "  SLOWER" } else { "" };
            println!("{:<90} {:>12.4e} {:>12.4e} {:>8.3}{flag}", row.key, row.base, row.new, row.ratio);
        }
    }
    if how.subset {
        if !c.only_base.is_empty() {
            println!("{} cases of the baseline not in the new set", c.only_base.len());
        }
    } else {
        for k in &c.only_base {
            println!("only in base: {k}");
        }
    }
    for k in &c.only_new {
        println!("only in new:  {k}");
    }
    if c.skipped > 0 {
        println!("skipped {} records (failed or unchecked, planted in the baseline, or without a {:?} time)", c.skipped, how.stat);
    }
    anyhow::ensure!(!c.rows.is_empty(), "no case of {} matches a case of {}", new.display(), base.display());
    if how.noise {
        let (noise, case) = c.noise().expect("rows checked above");
        let tol = harness::compare::tolerance_from_noise(noise);
        println!("largest difference of the two unchanged runs: {:.2}% ({case})", 100.0 * noise);
        println!("tolerance={tol:.4}");
        if tol >= how.resolve {
            eprintln!("error: the runs differ by up to {:.2}%: a tolerance of {:.1}% cannot catch a {:.0}% slowdown", 100.0 * noise, 100.0 * tol, 100.0 * how.resolve);
            return Ok(Outcome::Regression);
        }
        return Ok(Outcome::Passed);
    }
    if let Some(k) = &how.planted {
        return Ok(match c.caught(k) {
            Ok(()) => {
                println!("the slowdown planted in {k} was caught (tolerance {:.1}%), no other kernel's case slower", 100.0 * tolerance);
                Outcome::Passed
            }
            Err(why) => {
                for w in &why {
                    eprintln!("error: {w}");
                }
                eprintln!("error: the slowdown planted in {k} was not caught cleanly (tolerance {:.1}%)", 100.0 * tolerance);
                Outcome::Regression
            }
        });
    }
    let slow = c.regressions().count();
    if how.aggregate {
        let g = c.geomean().expect("rows checked above");
        println!("geometric mean of new/base over {} cases: {g:.3} (limit {:.3})", c.rows.len(), 1.0 + tolerance);
        if g > 1.0 + tolerance {
            eprintln!("error: the suite as a whole slowed by {:.0}%, more than {:.0}%", 100.0 * (g - 1.0), 100.0 * tolerance);
            return Ok(Outcome::Regression);
        }
        return Ok(Outcome::Passed);
    }
    if slow > 0 {
        eprintln!("error: {slow} of {} cases slowed by more than {:.1}%", c.rows.len(), 100.0 * tolerance);
        return Ok(Outcome::Regression);
    }
    println!("{} cases within {:.1}% of the baseline", c.rows.len(), 100.0 * tolerance);
    Ok(Outcome::Passed)
}

fn compare_history(dir: &std::path::Path, new: &std::path::Path, tolerance: f64, stat: harness::compare::Stat) -> Result<Outcome> {
    use harness::history;
    anyhow::ensure!(tolerance.is_finite() && tolerance >= 0.0, "--tolerance must be a non-negative number");
    anyhow::ensure!(dir.is_dir(), "{} is not a folder of committed records", dir.display());
    let since = history::read_since(dir).map_err(anyhow::Error::msg)?;
    let committed = output::read_records(&[dir.to_path_buf()])?;
    let n = output::read_records(&[new.to_path_buf()])?;
    let rows = history::compare_history(&committed, &since, &n, tolerance, stat);
    anyhow::ensure!(!rows.is_empty(), "{} holds no passed record with a {stat:?} time", new.display());
    println!("{:<90} {:>3} {:>12} {:>7} {:>12} {:>8} {:>7}", "case", "n", "median", "spread", "new", "new/med", "tol");
    for r in &rows {
        let tol = r.tolerance.map_or("-".to_string(), |t| format!("{:.1}%", 100.0 * t));
        let flag = if r.slower { "  SLOWER" } else if r.tolerance.is_none() { "  not judged" } else { "" };
        let spread = if r.n > 0 { format!("{:.2}%", 100.0 * r.spread) } else { "-".into() };
        println!("{:<90} {:>3} {:>12.4e} {:>7} {:>12.4e} {:>8.3} {:>7}{flag}", r.key, r.n, r.median, spread, r.new, r.ratio, tol);
    }
    let judged = rows.iter().filter(|r| r.tolerance.is_some()).count();
    let slow = rows.iter().filter(|r| r.slower).count();
    if judged < rows.len() {
        println!(
            "{} of {} cases not judged: fewer than {} committed records of the case (same work per repetition) in {}",
            rows.len() - judged,
            rows.len(),
            history::MIN_HISTORY,
            dir.display()
        );
    }
    for r in rows.iter().filter(|r| r.tolerance.is_some_and(|t| t >= 0.05)) {
        println!("{}: its history spreads {:.1}%, so it cannot see a 5% slowdown", r.key, 100.0 * r.spread);
    }
    if slow > 0 {
        eprintln!("error: {slow} of {judged} judged cases slower than their history allows");
        return Ok(Outcome::Regression);
    }
    println!("{judged} cases judged, none slower than its history allows");
    Ok(Outcome::Passed)
}

fn history_rebase(dir: &std::path::Path, kernel: &str, reason: &str, since: Option<String>) -> Result<Outcome> {
    use harness::history;
    anyhow::ensure!(dir.is_dir(), "{} is not a device's results folder", dir.display());
    history::read_since(dir).map_err(anyhow::Error::msg)?; // a malformed file is not appended to
    let since = since.unwrap_or_else(harness::record::timestamp);
    let line = history::since_line(kernel, &since, reason).map_err(anyhow::Error::msg)?;
    let path = dir.join(history::SINCE_FILE);
    let old = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "# kernel\tits history starts at\twhy its cost was meant to change (qmcbench history-rebase)\n".into(),
        Err(e) => anyhow::bail!("{}: {e}", path.display()),
    };
    output::write_atomic(&path, format!("{old}{line}").as_bytes())?;
    print!("{}: {line}", path.display());
    Ok(Outcome::Passed)
}

fn compare_instructions(base: &std::path::Path, new: &std::path::Path, tolerance: f64, subset: bool, planted: Option<&str>) -> Result<Outcome> {
    use harness::compare::{compare_counts, Counts};
    anyhow::ensure!(tolerance.is_finite() && tolerance >= 0.0, "--tolerance must be a non-negative number");
    let read = |p: &std::path::Path| -> Result<Counts> {
        let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        Counts::parse(&text, &p.display().to_string()).map_err(anyhow::Error::msg)
    };
    let c = compare_counts(&read(base)?, &read(new)?, tolerance);
    println!("{:<32} {:>14} {:>14} {:>9} {:>6}", "case", "base", "new", "change", "tol");
    for r in &c.rows {
        let flag = if !r.changed { "" } else if r.ratio > 1.0 { "  MORE" } else { "  FEWER" };
        println!("{:<32} {:>14.1} {:>14.1} {:>+8.2}% {:>5.1}%{flag}", r.key, r.base, r.new, 100.0 * (r.ratio - 1.0), 100.0 * r.tolerance);
    }
    for k in &c.only_base {
        println!("{k:<32} only in the baseline{}", if subset { " (not measured in this run)" } else { "" });
    }
    for k in &c.only_new {
        println!("{k:<32} only in the new table");
    }
    let verdict = match planted {
        Some(k) => c.caught(k).map(|_| format!("planted slowdown in {k} caught: every case of {k} over the tolerance, no other case changed")),
        None => c.check(subset).map(|_| format!("{} cases within the tolerance of the baseline", c.rows.len())),
    };
    match verdict {
        Ok(line) => {
            println!("{line}");
            Ok(Outcome::Passed)
        }
        Err(why) => {
            for w in &why {
                eprintln!("error: {w}");
            }
            match planted {
                Some(k) => eprintln!("error: the planted slowdown in {k} was not caught cleanly ({} problems)", why.len()),
                None => eprintln!("error: instruction counts changed ({} problems)", why.len()),
            }
            Ok(Outcome::Regression)
        }
    }
}

fn ceilings(common: CommonArgs) -> Result<Outcome> {
    let mut runner = Runner::new(&common)?;
    let mut variants = vec![Variant::Cpu];
    if runner.runs(Variant::Gpu) {
        variants.push(Variant::Gpu);
    }
    for v in variants {
        let bw = runner.ceiling(v)?;
        let bytes = 2.0 * if v == Variant::Gpu { (1u64 << 30) as f64 } else { (256u64 << 20) as f64 };
        let case = harness::Case::new("ceilings", "copy", kernels::Precision::Double);
        let time = harness::Stats::constant(bytes / bw);
        let work = harness::Work { bytes, model: harness::BytesModel::Copy, flops: 0.0, items: bytes, unit: "B/s" };
        runner.record_measurement(&case, v, time, work, "a bandwidth ceiling: a measurement, nothing to check")?;
        // the arithmetic ceilings (what a compute-bound kernel's GFLOP/s is compared with), and on the GPU the
        // shared-memory bandwidth (kernels that keep their working set on chip); each record is one second of work
        for (p, double) in [(kernels::Precision::Double, true), (kernels::Precision::Single, false)] {
            let rate = runner.fma_ceiling(v, double)?;
            let time = harness::Stats::constant(1.0);
            runner.record_measurement(&harness::Case::new("ceilings", "fma", p), v, time, harness::Work { bytes: 0.0, model: harness::BytesModel::Copy, flops: rate, items: rate, unit: "flop/s" }, "an arithmetic ceiling: a measurement, nothing to check")?;
        }
        if v == Variant::Gpu {
            let bw = runner.shared_ceiling()?;
            let time = harness::Stats::constant(1.0);
            runner.record_measurement(&harness::Case::new("ceilings", "shared", kernels::Precision::Single), v, time, harness::Work { bytes: bw, model: harness::BytesModel::Copy, flops: 0.0, items: bw, unit: "B/s" }, "a bandwidth ceiling: a measurement, nothing to check")?;
        }
    }
    runner.finish()
}
