//! `qmcbench`: the umbrella command of qmc-bench. Run one mini-app or the whole suite, draw the charts, compare a
//! run with a baseline, measure the machine's bandwidth ceilings, list what is available.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use harness::cli::{main_with, CommonArgs, Outcome};
use harness::{output, plot, Record, Runner, Variant};
use miniapps::registry::{self, Level};
use std::path::PathBuf;
use std::process::ExitCode;

/// qmc-bench: quantum Monte Carlo kernels on CPU and GPU, timed, validated and charted.
///
/// Typical use:
///   qmcbench suite --quick              every kernel at small sizes (about a minute on 2 cores, no GPU needed)
///   qmcbench run bspline --help         one mini-app with its own sizes
///   qmcbench plot results/local         charts from records
///   qmcbench compare base/ new/         fail if any case slowed by more than --tolerance
#[derive(Parser)]
#[command(name = "qmcbench", version)]
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
    /// Run every kernel at preset sizes and draw the charts.
    Suite {
        /// Small sizes: about a minute on a 2-core machine without a GPU (the default).
        #[arg(long, conflicts_with = "full")]
        quick: bool,
        /// The papers' sizes (for a GPU host).
        #[arg(long)]
        full: bool,
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
        #[arg(long)]
        aggregate: bool,
    },
    /// Redraw a paper's chart or table from records, beside the paper's own numbers (`--list` names them). Runs
    /// the mini-app first when the records hold nothing for the figure.
    Figure {
        /// Figure name (see --list).
        #[arg(required_unless_present = "list")]
        name: Option<String>,
        /// List the figures.
        #[arg(long)]
        list: bool,
        /// Record files or folders to read; missing records are measured into the first folder.
        #[arg(long, default_value = "results/local")]
        records: Vec<PathBuf>,
        /// Folder for the chart (PNG, SVG) and the side-by-side table (TXT) [default: <first records folder>/figures].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Measure even when records exist.
        #[arg(long)]
        run: bool,
    },
    /// One number for a machine, for procurement: the geometric mean over kernels of each kernel's geometric-mean
    /// throughput ratio against a reference machine's records (cases measured by both), with the breakdown.
    Score {
        /// Records of the machine to score (file or folder).
        new: PathBuf,
        /// Records of the reference machine, e.g. results/nvidia-h100-80gb-hbm3.
        #[arg(long)]
        reference: PathBuf,
        /// Score only this variant (gpu to compare GPUs, cpu to compare hosts) [default: every variant].
        #[arg(long)]
        variant: Option<Variant>,
    },
    /// Write one self-contained HTML page (machines, summary, every chart, every record) from record files.
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
        Cmd::Suite { full, kernels, common, .. } => suite(if full { Level::Full } else { Level::Quick }, kernels, common),
        Cmd::Plot { records, out, x, baseline } => plot_cmd(&records, &out, x.as_deref(), baseline),
        Cmd::Compare { base, new, tolerance, normalize, aggregate } => compare(&base, &new, tolerance, normalize, aggregate),
        Cmd::Ceilings { common } => ceilings(common),
        Cmd::Report { records, out, title } => report(&records, &out, &title),
        Cmd::Score { new, reference, variant } => score(&new, &reference, variant),
        Cmd::Figure { name, list, records, out, run } => figure(name.as_deref(), list, &records, out, run),
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
    println!("  cpu  {} ({} logical CPUs, vector ISA {})", sys.cpu_model, sys.cpu_logical, sys.cpu_isa);
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

fn charts(records: &[Record], x: Option<&str>, baseline: Option<Variant>) -> Vec<plot::Chart> {
    let mut charts = plot::speedup_charts(records, x, baseline);
    charts.extend(plot::throughput_charts(records, x));
    charts
}

fn figure(name: Option<&str>, list: bool, paths: &[PathBuf], out: Option<PathBuf>, run: bool) -> Result<Outcome> {
    use miniapps::figures;
    if list {
        for f in figures::all() {
            println!("{:<28} {}\n{:<28} {}", f.name, f.title, "", f.paper);
        }
        return Ok(Outcome::Passed);
    }
    let f = figures::find(name.expect("clap requires a name without --list"))?;
    let read = || -> Result<Vec<Record>> {
        let existing: Vec<PathBuf> = paths.iter().filter(|p| p.exists()).cloned().collect();
        Ok(if existing.is_empty() { vec![] } else { output::read_records(&existing)? })
    };
    let mut records = read()?;
    let mut outcome = Outcome::Passed;
    if run || figures::select(&f, &records).is_empty() {
        let dir = paths[0].clone();
        eprintln!("measuring {} into {} (no records for it yet, or --run)", f.name, dir.display());
        let k = registry::find(f.kernel)?;
        for flags in f.runs {
            let argv: Vec<std::ffi::OsString> = std::iter::once(format!("qmcbench run {}", f.kernel))
                .chain(flags.iter().map(|s| s.to_string()))
                .chain(["--out".to_string(), dir.display().to_string()])
                .map(Into::into)
                .collect();
            let code = (k.main)(argv);
            if code != ExitCode::SUCCESS {
                outcome = Outcome::ValidationFailed;
            }
        }
        records = read()?;
    }
    let sel = figures::select(&f, &records);
    anyhow::ensure!(!sel.is_empty(), "no records for {} in {}", f.name, paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "));
    let hardware = sel
        .iter()
        .find(|r| r.variant == Variant::Gpu)
        .map(|r| format!("{} + {}", r.system.label(true), r.system.label(false)))
        .unwrap_or_else(|| sel[0].system.label(false));
    let measured = figures::series(&f, &sel);
    let dir = out.unwrap_or_else(|| paths[0].join("figures"));
    for p in plot::draw(&figures::chart(&f, &measured, &hardware), &dir)? {
        eprintln!("wrote {}", p.display());
    }
    let table = figures::table(&f, &measured, &hardware);
    output::write_atomic(&dir.join(format!("{}.txt", f.name)), table.as_bytes())?;
    print!("{table}");
    Ok(outcome)
}

fn score(new: &PathBuf, reference: &PathBuf, variant: Option<Variant>) -> Result<Outcome> {
    let n = output::read_records(std::slice::from_ref(new))?;
    let r = output::read_records(std::slice::from_ref(reference))?;
    let (total, per) = harness::compare::score(&r, &n, variant);
    let Some(total) = total else {
        anyhow::bail!("no case of {} was also measured in {}: nothing to score", new.display(), reference.display());
    };
    let label = |rs: &[Record]| {
        rs.iter().find(|x| x.variant == Variant::Gpu).map(|x| x.system.label(true)).unwrap_or_else(|| rs[0].system.label(false))
    };
    println!("machine:   {} ({})", label(&n), new.display());
    println!("reference: {} ({})", label(&r), reference.display());
    println!("{:<16} {:>8} {:>14}", "kernel", "cases", "throughput x");
    for k in &per {
        println!("{:<16} {:>8} {:>14.3}", k.kernel, k.cases, k.ratio);
    }
    println!("{:<16} {:>8} {:>14.3}   (geometric mean over kernels; > 1 is faster than the reference)", "SCORE", per.iter().map(|k| k.cases).sum::<usize>(), total);
    Ok(Outcome::Passed)
}

fn report(paths: &[PathBuf], out: &std::path::Path, title: &str) -> Result<Outcome> {
    let records = output::read_records(paths)?;
    let page = harness::report::html(title, &records, &charts(&records, None, None))?;
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

fn compare(base: &PathBuf, new: &PathBuf, tolerance: f64, normalize: bool, aggregate: bool) -> Result<Outcome> {
    anyhow::ensure!(tolerance.is_finite() && tolerance >= 0.0, "--tolerance must be a non-negative number");
    let b = output::read_records(std::slice::from_ref(base))?;
    let n = output::read_records(std::slice::from_ref(new))?;
    let time_of = |r: &Record| {
        if normalize {
            // seconds x ceiling bandwidth = bytes the machine could have copied meanwhile
            r.time.median * r.ceiling_gbytes_per_s.unwrap_or(1.0)
        } else {
            r.time.median
        }
    };
    let c = harness::compare::compare(&b, &n, tolerance, time_of);
    println!("{:<90} {:>12} {:>12} {:>8}", "case", "base", "new", "new/base");
    for row in &c.rows {
        let flag = if row.slower { "  SLOWER" } else { "" };
        println!("{:<90} {:>12.4e} {:>12.4e} {:>8.3}{flag}", row.key, row.base, row.new, row.ratio);
    }
    for k in &c.only_base {
        println!("only in base: {k}");
    }
    for k in &c.only_new {
        println!("only in new:  {k}");
    }
    anyhow::ensure!(!c.rows.is_empty(), "no case of {} matches a case of {}", new.display(), base.display());
    let slow = c.regressions().count();
    if aggregate {
        let g = c.geomean().expect("rows checked above");
        println!("geometric mean of new/base over {} cases: {g:.3} (limit {:.3})", c.rows.len(), 1.0 + tolerance);
        if g > 1.0 + tolerance {
            eprintln!("error: the suite as a whole slowed by {:.0}%, more than {:.0}%", 100.0 * (g - 1.0), 100.0 * tolerance);
            return Ok(Outcome::Regression);
        }
        return Ok(Outcome::Passed);
    }
    if slow > 0 {
        eprintln!("error: {slow} of {} cases slowed by more than {:.0}%", c.rows.len(), 100.0 * tolerance);
        return Ok(Outcome::Regression);
    }
    println!("{} cases within {:.0}% of the baseline", c.rows.len(), 100.0 * tolerance);
    Ok(Outcome::Passed)
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
        let time = harness::Stats { min: bytes / bw, median: bytes / bw, max: bytes / bw };
        runner.record(&case, v, time, harness::Work { bytes, flops: 0.0, items: bytes, unit: "B/s" }, &[])?;
        // the arithmetic ceilings (what a compute-bound kernel's GFLOP/s is compared with), and on the GPU the
        // shared-memory bandwidth (kernels that keep their working set on chip); each record is one second of work
        for (p, double) in [(kernels::Precision::Double, true), (kernels::Precision::Single, false)] {
            let rate = runner.fma_ceiling(v, double)?;
            let time = harness::Stats { min: 1.0, median: 1.0, max: 1.0 };
            runner.record(&harness::Case::new("ceilings", "fma", p), v, time, harness::Work { bytes: 0.0, flops: rate, items: rate, unit: "flop/s" }, &[])?;
        }
        if v == Variant::Gpu {
            let bw = runner.shared_ceiling()?;
            let time = harness::Stats { min: 1.0, median: 1.0, max: 1.0 };
            runner.record(&harness::Case::new("ceilings", "shared", kernels::Precision::Single), v, time, harness::Work { bytes: bw, flops: 0.0, items: bw, unit: "B/s" }, &[])?;
        }
    }
    runner.finish()
}
