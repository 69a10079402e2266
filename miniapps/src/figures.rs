//! The papers' charts and tables, redrawn from records: `qmcbench figure <name>`.
//!
//! A figure names the records it needs (kernel, operation, the sizes and parameters that must match), what its y axis
//! measures (a speedup over all CPU cores or over one core, a fraction of the bandwidth ceiling, a throughput), the
//! mini-app command line that produces those records when they are missing, and the paper's own numbers with the
//! hardware they came from. The chart shows the measured series and the paper's points; the table beside it prints
//! both, so a reader sees at once how today's machine compares with the paper's.

use anyhow::{bail, Result};
use harness::plot::{Chart, Series};
use harness::{Record, Variant};
use std::collections::BTreeMap;

/// What a figure's y axis measures for one GPU or CPU record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// GPU median time over the all-core CPU median of the same case.
    SpeedupAllCores,
    /// GPU median time over the one-core CPU median (`threads=1`) of the same case.
    SpeedupOneCore,
    /// Achieved bandwidth as a percentage of the copy ceiling measured in the same process (GPU records).
    PercentOfCeiling,
    /// Throughput in the record's unit, every variant.
    Throughput,
    /// The validation error against the f64 reference (largest over the record's checks).
    Error,
    /// Throughput over that of the same case with parameter `.0` set to `.1` (e.g. delayed updates over rank-1).
    SpeedupOverParam(&'static str, &'static str),
    /// GPU speedup over the all-core CPU record of the same case in precision `.0` (paper 000 pairs its mixed-precision
    /// GPU with a double-precision CPU).
    SpeedupOverCpuIn(&'static str),
    /// Quantities the mini-app added to its records (`Runner::extra`), one series per name, of GPU and all-core CPU
    /// records; `.0` is the axis label.
    Extras(&'static str, &'static [&'static str]),
    /// Shares of a whole (e.g. of the step's time) the mini-app added to its records: the series as for `Extras`,
    /// drawn as stacked bars, one bar per variant, precision and x; `.0` is the axis label.
    Shares(&'static str, &'static [&'static str]),
    /// DMC parallel efficiency over `ranks` from the per-generation time: weak (W walkers on R ranks against W / R
    /// on one) t1 / t, strong (W walkers on R ranks against W on one) t1 / (R t).
    ScalingEfficiency,
}

impl Measure {
    fn label(self) -> &'static str {
        match self {
            Measure::SpeedupAllCores => "speedup over all CPU cores",
            Measure::SpeedupOneCore => "speedup over one CPU core",
            Measure::PercentOfCeiling => "% of measured copy bandwidth",
            Measure::Throughput => "throughput",
            Measure::Error => "max |error| / max |reference|",
            Measure::SpeedupOverParam(..) => "throughput over the baseline setting",
            Measure::SpeedupOverCpuIn(_) => "speedup over all CPU cores in double",
            Measure::Extras(label, _) | Measure::Shares(label, _) => label,
            Measure::ScalingEfficiency => "parallel efficiency (1 = perfect)",
        }
    }
}

/// A number the paper printed, for the side-by-side table and the chart.
#[derive(Clone, Copy, Debug)]
pub struct PaperPoint {
    pub x: f64,
    pub y: f64,
    /// Which of the paper's rows or series (e.g. "DP", "bfactor=16").
    pub label: &'static str,
}

/// One paper chart or table.
pub struct Figure {
    pub name: &'static str,
    pub paper: &'static str,
    pub title: &'static str,
    pub kernel: &'static str,
    pub op: &'static str,
    /// The size on the x axis.
    pub x: &'static str,
    pub measure: Measure,
    /// Sizes or parameters a record must have (`name=value`, or `name>=number`), e.g. `walkers=1024`.
    pub select: &'static [&'static str],
    /// `qmcbench run <kernel>` flags that produce the records (each line one run).
    pub runs: &'static [&'static [&'static str]],
    pub paper_points: &'static [PaperPoint],
    /// The hardware of the paper's numbers.
    pub paper_hardware: &'static str,
    /// What a reader should know to compare (printed under the table).
    pub note: &'static str,
}

/// `pt!(x, y, "label")`: a paper point, as a literal so figure tables stay `'static`.
macro_rules! pt {
    ($x:expr, $y:expr, $label:expr) => {
        PaperPoint { x: $x, y: $y, label: $label }
    };
}

/// Every figure the suite can draw.
pub fn all() -> Vec<Figure> {
    vec![
        Figure {
            name: "000-bspline-bandwidth",
            paper: "Esler et al., CiSE 2012 (paper 000): B-spline orbital evaluation",
            title: "B-spline VGH: fraction of the memory bandwidth reached",
            kernel: "bspline",
            op: "vgh",
            x: "walkers",
            measure: Measure::PercentOfCeiling,
            select: &["grid=64", "basis=bspline"],
            runs: &[&["--grid", "64", "--orbitals", "256,1024,4096", "--walkers", "16,128,1024", "--variants", "cpu,gpu"]],
            paper_points: &[pt!(128.0, 75.0, "B-spline, 75% of peak")],
            paper_hardware: "NVIDIA Tesla (GT200), percentage of peak bandwidth",
            note: "here the percentage is of the copy bandwidth measured in the same process, not of the datasheet peak",
        },
        Figure {
            name: "qmcpack-delayed-update",
            paper: "McDaniel et al. delayed updates as in QMCPACK (anchors-qmc.md); paper 000's rank-1 Sherman-Morrison",
            title: "Determinant move loop: delayed (Woodbury rank-k) over rank-1 updates",
            kernel: "determinant",
            op: "moves",
            x: "n",
            measure: Measure::SpeedupOverParam("delay", "1"),
            select: &[],
            runs: &[&["--n", "128,512,1024,2048", "--walkers", "64", "--max-gb", "1", "--delay", "1,4,16,64", "--steps", "128", "--variants", "cpu,gpu"]],
            paper_points: &[pt!(6144.0, 2.0, "QMCPACK GPU, delayed over rank-1")],
            paper_hardware: "QMCPACK on NVIDIA GPUs (anchors-qmc.md: about 2x at 6144 electrons)",
            note: "electrons per spin on x; each walker proposes 128 moves, half accepted",
        },
        Figure {
            name: "001-tables-6.2-6.3",
            paper: "Rajagopalan, LSU thesis 2013 (paper 001), Tables 6.2 and 6.3",
            title: "t-J VMC, 32 chains: GPU over one CPU core",
            kernel: "lattice",
            op: "vmc",
            x: "L",
            measure: Measure::SpeedupOneCore,
            select: &["chains=32"],
            runs: &[&["--lattice", "5,9,15", "--chains", "32", "--variants", "cpu,gpu", "--precision", "double"]],
            paper_points: &[
                pt!(5.0, 7.10, "bfactor=8"),
                pt!(9.0, 16.53, "bfactor=8"),
                pt!(15.0, 16.12, "bfactor=8"),
                pt!(5.0, 9.14, "bfactor=16"),
                pt!(9.0, 19.88, "bfactor=16"),
                pt!(15.0, 19.44, "bfactor=16"),
            ],
            paper_hardware: "Tesla M2070 vs one Xeon core, 32 chains back to back",
            note: "speedups recomputed as CPU time / GPU time from the thesis' times (its printed 7.26 and 16.72 do not match)",
        },
        Figure {
            name: "001-table-6.5",
            paper: "Rajagopalan, LSU thesis 2013 (paper 001), Table 6.5",
            title: "t-J VMC, 32 chains: GPU over all CPU cores",
            kernel: "lattice",
            op: "vmc",
            x: "L",
            measure: Measure::SpeedupAllCores,
            select: &["chains=32"],
            runs: &[&["--lattice", "5,9,15", "--chains", "32", "--variants", "cpu,gpu", "--precision", "double"]],
            paper_points: &[pt!(5.0, 1.53, "vs 32 MPI ranks"), pt!(9.0, 3.66, "vs 32 MPI ranks"), pt!(15.0, 3.85, "vs 32 MPI ranks")],
            paper_hardware: "Tesla M2070 (bfactor=8) vs the group's Fortran MPI code, one rank per chain",
            note: "the thesis' MPI code was ~7x slower per chain than its own C++ (seed-001); here the CPU side is this suite's all-core code",
        },
        Figure {
            name: "003-table4-5-p",
            paper: "Thorpe et al., CASINO on GPUs (paper 003), Tables 4 and 5: long-range Jastrow p term",
            title: "Jastrow p term (plane-wave stars), move ratios: GPU over all CPU cores",
            kernel: "jastrow",
            op: "ratio",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            select: &["term=p"],
            runs: &[&["--term", "p", "--electrons", "54,114,162,246,342,514,682,1030,1642,2058", "--walkers", "32", "--variants", "cpu,gpu", "--precision", "double,single"]],
            paper_points: &[pt!(678.0, 2.42, "DP"), pt!(678.0, 2.82, "SP"), pt!(1290.0, 3.15, "SP"), pt!(150.0, 1.0, "DP break-even")],
            paper_hardware: "V100 vs 32-core POWER9, whole-VMC p-term timer",
            note: "the paper times the p term inside whole VMC runs; here the kernel alone, walkers batched",
        },
        Figure {
            name: "003-table4-5-u",
            paper: "Thorpe et al., CASINO on GPUs (paper 003), Tables 4 and 5: short-range Jastrow u term",
            title: "Jastrow u term, move ratios: GPU over all CPU cores",
            kernel: "jastrow",
            op: "ratio",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            select: &["term=u"],
            runs: &[&["--term", "u", "--electrons", "54,114,162,246,342,514,682,1030,1642,2058", "--walkers", "32", "--variants", "cpu,gpu", "--precision", "double,single"]],
            paper_points: &[pt!(678.0, 1.03, "DP"), pt!(678.0, 1.11, "SP"), pt!(1290.0, 1.14, "SP")],
            paper_hardware: "V100 vs 32-core POWER9, whole-VMC u-term timer",
            note: "CASINO kept the u term on the CPU (warp stalls); here one block per walker",
        },
        Figure {
            name: "003-ewald",
            paper: "Thorpe et al., CASINO on GPUs (paper 003), Fig. 2 and Table 5: Ewald",
            title: "Ewald energy of the fcc electron gas: GPU over all CPU cores",
            kernel: "ewald",
            op: "energy",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            select: &["lattice=fcc"],
            runs: &[&["--lattice", "fcc", "--electrons", "14,38,54,118,226,678,1290,1642,1930", "--walkers", "64", "--variants", "cpu,gpu"]],
            paper_points: &[pt!(350.0, 1.0, "DP break-even"), pt!(678.0, 1.79, "SP"), pt!(1290.0, 3.63, "SP")],
            paper_hardware: "V100 vs 32-core POWER9",
            note: "the paper's speedups are of the Ewald timer in whole VMC runs",
        },
        Figure {
            name: "004-fig7-basis",
            paper: "Anderson, Goddard, Schroeder, CPC 2007 (paper 004), Fig. 7 table: basis-function kernel",
            title: "Gaussian basis functions (value, gradient, Laplacian): GPU over one CPU core",
            kernel: "gemm",
            op: "basis",
            x: "electrons",
            measure: Measure::SpeedupOneCore,
            select: &["walkers=128"],
            runs: &[
                &["--op", "basis", "--walkers", "128", "--variants", "cpu,gpu"],
                &["--op", "basis", "--walkers", "128", "--variants", "cpu", "--threads", "1"],
            ],
            paper_points: &[
                pt!(32.0, 18.2, "basis"),
                pt!(56.0, 25.9, "basis"),
                pt!(70.0, 30.2, "basis"),
                pt!(96.0, 31.6, "basis"),
                pt!(102.0, 29.2, "basis"),
                pt!(116.0, 28.5, "basis"),
                pt!(152.0, 33.3, "basis"),
            ],
            paper_hardware: "GeForce 7800 GTX vs one 3.0 GHz Pentium 4, single precision",
            note: "molecules by electron count: acetic acid 32, benzaldehyde 56, [10]annulene 70, diazobenzene 96, lysine 102, arginine 116, HMX 152",
        },
        Figure {
            name: "004-kahan-gemm",
            paper: "Anderson, Goddard, Schroeder, CPC 2007 (paper 004), Algorithm 2 and Sec. 5: Kahan-compensated GEMM",
            title: "Orbital GEMM by algorithm (naive and Kahan single, double, library, TF32)",
            kernel: "gemm",
            op: "gemm",
            x: "electrons",
            measure: Measure::Throughput,
            select: &["walkers=128", "inputs=basis"],
            runs: &[&["--op", "gemm", "--walkers", "128", "--variants", "cpu,gpu"]],
            paper_points: &[],
            paper_hardware: "GeForce 7800 GTX",
            note: "the Fig. 7 table has no GEMM column; its text puts the Kahan (KSF) penalty at 3% to 25% of the whole run, growing with the GEMM's share",
        },
        Figure {
            name: "004-precision",
            paper: "Anderson, Goddard, Schroeder, CPC 2007 (paper 004), Fig. 5: GEMM error vs inner dimension",
            title: "GEMM error against the compensated f64 reference vs inner dimension (1024 x k x 1024)",
            kernel: "gemm",
            op: "gemm",
            x: "k",
            measure: Measure::Error,
            select: &["molecule=fig5"],
            runs: &[&["--op", "gemm", "--molecules", "acetic-acid", "--walkers", "1", "--inner", "1024,8192,65536", "--variants", "cpu,gpu"]],
            paper_points: &[],
            paper_hardware: "GeForce 7800 GTX (no IEEE denormals)",
            note: "Kahan single should stay near f32 epsilon (6e-8) as k grows while naive single grows like sqrt(k) eps; TF32 sits near 2^-11",
        },
        Figure {
            name: "000-fig3-speedup",
            paper: "Esler et al., CiSE 2012 (paper 000), Fig. 3: whole-application GPU speedup",
            title: "Synthetic carbon solid, DMC steps: GPU over all CPU cores vs electrons, per walker count",
            kernel: "solid",
            op: "dmc",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            // the paper's sizes: the smoke runs' 64 electrons and 4 walkers (scripts/gpu-host.sh solid-check) stay out
            select: &["electrons>=128", "walkers>=32"],
            runs: &[&["--electrons", "128,256,512,1024", "--walkers", "32,128,512,1024", "--steps", "1", "--max-reps", "2", "--variants", "cpu,gpu", "--precision", "double,mixed"]],
            paper_points: &[],
            paper_hardware: "Tesla S1070 (GT200) vs one quad-core Xeon E5410 (4 threads)",
            note: "the paper prints no numbers for its Fig. 3: about 10 to 15 times one quad-core socket, rising with electrons and walkers, its GPU in mixed precision against the CPU in double; here each precision is paired with the CPU in the same precision, the CPU time scaled from --cpu-walkers walkers to the case's walkers",
        },
        Figure {
            name: "000-fig3-gpu-over-double-cpu",
            paper: "Esler et al., CiSE 2012 (paper 000), Fig. 3: whole-application GPU speedup, as the paper pairs it",
            title: "Synthetic carbon solid, DMC steps: GPU (double and mixed) over all CPU cores in double vs electrons",
            kernel: "solid",
            op: "dmc",
            x: "electrons",
            measure: Measure::SpeedupOverCpuIn("double"),
            select: &["electrons>=128", "walkers>=32"],
            runs: &[&["--electrons", "128,256,512,1024", "--walkers", "32,128,512,1024", "--steps", "1", "--max-reps", "2", "--variants", "cpu,gpu", "--precision", "double,mixed"]],
            paper_points: &[],
            paper_hardware: "Tesla S1070 (GT200) vs one quad-core Xeon E5410 (4 threads)",
            note: "the paper's pairing: its GPU in mixed precision against the CPU in double, about 10 to 15 times one socket; target here at least 15 times all cores at the largest sizes in mixed",
        },
        Figure {
            name: "000-fig4-classes",
            paper: "Esler et al., CiSE 2012 (paper 000), Fig. 4: time per kernel class",
            title: "Synthetic carbon solid, DMC steps with 128 walkers: fraction of the time per kernel class, CPU and GPU",
            kernel: "solid",
            op: "dmc",
            x: "electrons",
            measure: Measure::Shares("fraction of the step's time", &["frac_orbitals", "frac_determinant", "frac_jastrow", "frac_coulomb", "frac_pseudopotential", "frac_branching"]),
            select: &["walkers=128", "electrons>=128"],
            runs: &[&["--electrons", "128,256,512,1024", "--walkers", "128", "--steps", "1", "--max-reps", "2", "--variants", "cpu,gpu", "--precision", "double,mixed"]],
            paper_points: &[],
            paper_hardware: "Tesla S1070 (GT200) vs quad-core Xeon E5410",
            note: "the paper's bars (one system, percentages) show B-splines a smaller share on the GPU and determinant updates a larger one; the rest (random numbers, transfers) is frac_other in the records",
        },
        pp_figure(
            "000-pseudopotential-speedup",
            "Nonlocal pseudopotential energy, 64 walkers: GPU over all CPU cores vs cell size",
            "atoms",
            Measure::SpeedupAllCores,
            "carbon-like cell, 4 electrons per atom, BFD channels, 12-point rule, Slater-Jastrow ratios",
        ),
        pp_figure(
            "000-pseudopotential-ratios",
            "Nonlocal pseudopotential, 64 walkers: wavefunction ratios per second vs cell size",
            "atoms",
            Measure::Throughput,
            "a ratio is one quadrature point of one electron-ion pair within r_c: spline orbitals, dot with the inverse row, Jastrow ratio",
        ),
        pp_figure(
            "000-pseudopotential-energies",
            "Nonlocal pseudopotential, 64 walkers: whole nonlocal energies per walker per second vs cell size",
            "atoms",
            Measure::Extras("walker energies per second", &["walker_energies_per_s"]),
            "both phases (job list and ratios) and the sum, per walker",
        ),
        pp_figure(
            "000-pseudopotential-joblist",
            "Nonlocal pseudopotential, 64 walkers: fraction of the time in the job list (the rest: the ratios)",
            "atoms",
            Measure::Extras("job-list share of the time", &["joblist_share"]),
            "job-list time (timed alone) over the whole evaluation; the paper builds the list on the GPU and concatenates it on the CPU, as here",
        ),
        pp_figure(
            "000-pseudopotential-walkers-32",
            "Nonlocal pseudopotential, 32 atoms: wavefunction ratios per second vs walkers",
            "walkers",
            Measure::Throughput,
            "the GPU needs many walkers in one launch to fill; the CPU is flat once every core has walkers",
        ),
        pp_figure(
            "000-pseudopotential-walkers-128",
            "Nonlocal pseudopotential, 128 atoms: wavefunction ratios per second vs walkers",
            "walkers",
            Measure::Throughput,
            "the GPU needs many walkers in one launch to fill; the CPU is flat once every core has walkers",
        ),
        Figure {
            name: "dmc-scaling",
            paper: "Issue 11 after papers 000 and 002: DMC over ranks with walker migration (paper 002: at least 85% strong-scaling efficiency at 2,000 nodes)",
            title: "DMC parallel efficiency over ranks (weak: fixed walkers per rank; strong: fixed population)",
            kernel: "qmc",
            op: "dmc",
            x: "ranks",
            measure: Measure::ScalingEfficiency,
            select: &[],
            runs: &[
                &["--method", "dmc", "--system", "heg", "--gas-walkers", "256", "--gas-steps", "200", "--tau", "0.02", "--ranks", "1", "--threads", "1"],
                &["--method", "dmc", "--system", "heg", "--gas-walkers", "512", "--gas-steps", "200", "--tau", "0.02", "--ranks", "2", "--threads", "2"],
                &["--method", "dmc", "--system", "heg", "--gas-walkers", "1024", "--gas-steps", "200", "--tau", "0.02", "--ranks", "4", "--threads", "4"],
            ],
            paper_points: &[pt!(2.0, 0.95, "issue 11 target: weak, 2 GPUs")],
            paper_hardware: "target, not a measurement",
            note: "scripts/scaling.sh OUT [MAX_RANKS] makes the full set (threads or MPI=1 mpirun); a point needs the one-rank run of the same population (strong) or of one rank's share (weak)",
        },
        Figure {
            name: "solid-scaling",
            paper: "Issue 13 after papers 000 and 002: whole DMC steps of the synthetic carbon solid over GPUs, one rank per GPU, global comb and walker migration",
            title: "Synthetic-solid DMC parallel efficiency over GPUs (weak: fixed walkers per GPU; strong: fixed population)",
            kernel: "solid",
            op: "dmc",
            x: "ranks",
            measure: Measure::ScalingEfficiency,
            select: &[],
            runs: &[
                &["--electrons", "256,512", "--walkers", "256,512", "--ranks", "1", "--steps", "4", "--variants", "gpu", "--precision", "mixed"],
                &["--electrons", "256,512", "--walkers", "512", "--ranks", "2", "--steps", "4", "--variants", "gpu", "--precision", "mixed"],
            ],
            paper_points: &[pt!(2.0, 0.95, "issue 11 target: weak, 2 GPUs")],
            paper_hardware: "target, not a measurement",
            note: "scripts/gpu-host.sh solid-scaling makes the set on a host's GPUs (threads transport, one thread per GPU); a point needs the one-rank run of the same population (strong) or of one rank's share (weak)",
        },
    ]
}

/// A figure of the pseudopotential mini-app (paper 000 prints no numbers for it): over cell size at 64 walkers, or
/// over walkers at the cell size in the name's last field.
fn pp_figure(name: &'static str, title: &'static str, x: &'static str, measure: Measure, note: &'static str) -> Figure {
    let (select, runs): (&'static [&'static str], &'static [&'static [&'static str]]) = match (x, name.rsplit('-').next()) {
        ("walkers", Some("32")) => (&["atoms=32", "jastrow=on", "quadrature=12"], &[&["--pairs", "32:1,32:4,32:16,32:64,32:256,32:1024", "--variants", "cpu,gpu"]]),
        ("walkers", _) => (&["atoms=128", "jastrow=on", "quadrature=12"], &[&["--pairs", "128:1,128:4,128:16,128:64,128:256,128:1024", "--variants", "cpu,gpu"]]),
        _ => (&["walkers=64", "jastrow=on", "quadrature=12"], &[&["--pairs", "8:64,16:64,32:64,64:64,128:64,256:64", "--variants", "cpu,gpu"]]),
    };
    Figure {
        name,
        paper: "Esler et al., CiSE 2012 (paper 000): nonlocal pseudopotential, job list and batched ratios",
        title,
        kernel: "pseudopotential",
        op: "energy",
        x,
        measure,
        select,
        runs,
        paper_points: &[],
        paper_hardware: "no printed numbers (its Fig. 4 splits whole-DMC time by kernel)",
        note,
    }
}

/// Find a figure by name, listing the names on failure.
pub fn find(name: &str) -> Result<Figure> {
    let figs = all();
    let names: Vec<&str> = figs.iter().map(|f| f.name).collect();
    match figs.into_iter().find(|f| f.name == name) {
        Some(f) => Ok(f),
        None => bail!("unknown figure '{name}': known figures are {}", names.join(", ")),
    }
}

/// Does record `r` have the size or parameter `sel`: `name=value`, `name>=number` (at least that number), or lack it
/// (`!name`)?
pub(crate) fn has(r: &Record, sel: &str) -> bool {
    if let Some(name) = sel.strip_prefix('!') {
        return !r.sizes.contains_key(name) && !r.params.contains_key(name);
    }
    let value = |k: &str| r.sizes.get(k).map(|x| x.to_string()).or_else(|| r.params.get(k).cloned());
    if let Some((k, least)) = sel.split_once(">=") {
        let least: f64 = least.parse().expect("figure select: a number after >=");
        return value(k).and_then(|x| x.parse::<f64>().ok()).is_some_and(|x| x >= least);
    }
    let (k, v) = sel.split_once('=').unwrap_or((sel, ""));
    value(k).is_some_and(|x| x == v)
}

/// The records a figure draws on (latest per key).
pub fn select<'a>(f: &Figure, records: &'a [Record]) -> Vec<&'a Record> {
    let chosen = records.iter().filter(|r| r.kernel == f.kernel && r.op == f.op && f.select.iter().all(|s| has(r, s)));
    if f.measure == Measure::ScalingEfficiency {
        // every run in file order: a scaling point pairs a run with the one-rank run of its own commit
        return chosen.collect();
    }
    let mut latest: BTreeMap<String, &Record> = BTreeMap::new();
    for r in chosen {
        latest.insert(r.key(), r);
    }
    latest.into_values().collect()
}

/// A record's case key without the parameters that only say how the CPU side ran (`threads`, `mode`): pairs a CPU
/// baseline with the GPU run of its case.
pub(crate) fn pair_key(r: &Record) -> String {
    let mut r = r.clone();
    r.params.remove("threads");
    r.params.remove("mode");
    r.case_key()
}

/// A CPU record on one core: `--threads 1`, or a mini-app's serial mode (chains one after another).
pub(crate) fn one_core(r: &Record) -> bool {
    r.variant == Variant::Cpu && (r.params.get("threads").is_some_and(|t| t == "1") || r.params.get("mode").is_some_and(|m| m == "serial"))
}

/// A CPU record on every core of the pool.
pub(crate) fn all_cores(r: &Record) -> bool {
    r.variant == Variant::Cpu && !r.params.contains_key("threads") && r.params.get("mode").is_none_or(|m| m != "serial")
}

/// Label of a measured series: precision, variant where it matters, and the sizes and parameters that vary.
fn series_label(f: &Figure, r: &Record, varying: &[String]) -> String {
    let mut parts = vec![];
    if matches!(f.measure, Measure::Throughput | Measure::PercentOfCeiling | Measure::Error | Measure::SpeedupOverParam(..) | Measure::Extras(..) | Measure::Shares(..)) {
        parts.push(r.variant.name().to_string());
    }
    parts.push(r.precision.clone());
    for k in varying {
        if let Some(v) = r.sizes.get(k) {
            parts.push(format!("{k}={v}"));
        } else if let Some(v) = r.params.get(k) {
            parts.push(format!("{k}={v}"));
        }
    }
    parts.join(" ")
}

/// The measured series of a figure: (label, [(x, y)]) sorted by x.
pub fn series(f: &Figure, recs: &[&Record]) -> Vec<Series> {
    if f.measure == Measure::ScalingEfficiency {
        return scaling_series(recs);
    }
    // sizes and params (other than x, threads and the selected ones) that take several values name the series
    let mut values: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for r in recs {
        for (k, v) in &r.sizes {
            values.entry(k.clone()).or_default().insert(v.to_string());
        }
        for (k, v) in &r.params {
            values.entry(k.clone()).or_default().insert(v.clone());
        }
    }
    // a size tied to x (e.g. basis functions per molecule) does not name series: only keys with several values at
    // one x do
    let mut at_x: BTreeMap<(String, u64), std::collections::BTreeSet<String>> = BTreeMap::new();
    for r in recs {
        let Some(&x) = r.sizes.get(f.x) else { continue };
        for (k, v) in r.sizes.iter().map(|(k, v)| (k, v.to_string())).chain(r.params.iter().map(|(k, v)| (k, v.clone()))) {
            at_x.entry((k.clone(), x)).or_default().insert(v);
        }
    }
    let varying: Vec<String> = values
        .into_keys()
        .filter(|k| k != f.x && k != "threads" && k != "mode" && at_x.iter().any(|((key, _), v)| key == k && v.len() > 1))
        .collect();
    let all_core_time: BTreeMap<String, f64> = recs.iter().filter(|r| all_cores(r)).map(|r| (pair_key(r), r.time.median)).collect();
    let in_precision = |r: &Record, p: &str| {
        let mut r = r.clone();
        r.precision = p.to_string();
        pair_key(&r)
    };
    let one_core_time: BTreeMap<String, f64> = recs.iter().filter(|r| one_core(r)).map(|r| (pair_key(r), r.time.median)).collect();
    // for SpeedupOverParam: the throughput of each case at the baseline setting, keyed without that parameter
    let without = |r: &Record, p: &str| {
        let mut r = r.clone();
        r.params.remove(p);
        r.key()
    };
    let base_throughput: BTreeMap<String, f64> = match f.measure {
        Measure::SpeedupOverParam(p, v) => {
            recs.iter().filter(|r| r.params.get(p).is_some_and(|x| x == v)).map(|r| (without(r, p), r.throughput)).collect()
        }
        _ => BTreeMap::new(),
    };
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in recs {
        let Some(&x) = r.sizes.get(f.x) else { continue };
        if let Measure::Extras(_, names) | Measure::Shares(_, names) = f.measure {
            if r.variant == Variant::Gpu || all_cores(r) {
                for name in names {
                    if let Some(v) = r.extra.get(*name) {
                        out.entry(format!("{} {name}", series_label(f, r, &varying))).or_default().push((x as f64, *v));
                    }
                }
            }
            continue;
        }
        let y = match f.measure {
            Measure::SpeedupAllCores if r.variant == Variant::Gpu => all_core_time.get(&pair_key(r)).map(|c| c / r.time.median),
            Measure::SpeedupOneCore if r.variant == Variant::Gpu => one_core_time.get(&pair_key(r)).map(|c| c / r.time.median),
            Measure::SpeedupOverCpuIn(p) if r.variant == Variant::Gpu => all_core_time.get(&in_precision(r, p)).map(|c| c / r.time.median),
            Measure::PercentOfCeiling if r.variant == Variant::Gpu || all_cores(r) => {
                r.fraction_of_ceiling.map(|f| 100.0 * f)
            }
            Measure::Throughput if r.variant == Variant::Gpu || all_cores(r) => Some(r.throughput),
            Measure::SpeedupOverParam(p, v) if (r.variant == Variant::Gpu || all_cores(r)) && r.params.get(p).is_some_and(|x| x != v) => {
                base_throughput.get(&without(r, p)).map(|b| r.throughput / b)
            }
            Measure::Error if r.variant == Variant::Gpu || all_cores(r) => {
                r.validation.checks.iter().filter_map(|c| c.error).fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))))
            }
            _ => None,
        };
        if let Some(y) = y {
            out.entry(series_label(f, r, &varying)).or_default().push((x as f64, y));
        }
    }
    out.into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { name, points }
        })
        .collect()
}

/// Weak and strong scaling series (see `Measure::ScalingEfficiency`). A run of W walkers on R ranks is a point of
/// the strong series of W walkers when one rank ran W, and of the weak series of W / R walkers per rank when one
/// rank ran W / R. The time of a generation is the run's time over the generations it ran.
fn scaling_series(recs: &[&Record]) -> Vec<Series> {
    let gen_time = |r: &Record| r.extra.get("generations_run").filter(|g| **g > 0.0).map(|g| r.time.median / g);
    // the case without what scaling varies
    let case = |r: &Record| {
        let mut r = r.clone();
        for k in ["ranks", "walkers"] {
            r.sizes.remove(k);
        }
        for k in ["transport", "threads"] {
            r.params.remove(k);
        }
        r.key()
    };
    let system = |r: &Record| r.params.get("system").cloned().unwrap_or_default();
    let transport = |r: &Record| r.params.get("transport").cloned().unwrap_or_default();
    // the one-rank baselines of each commit's runs, per transport: "solo" (no communication layer) for every
    // transport, and a transport's own one-rank run (mpirun -n 1) where there is one, which then takes precedence.
    // Records come in file order: a later run of the same case replaces an earlier one.
    let one: BTreeMap<(String, String, String, u64), f64> = recs
        .iter()
        .filter(|r| r.sizes.get("ranks") == Some(&1))
        .filter_map(|r| Some(((r.commit.clone(), transport(r), case(r), *r.sizes.get("walkers")?), gen_time(r)?)))
        .collect();
    let base = |tr: &str, r: &Record, w: u64| {
        let key = |t: &str| (r.commit.clone(), t.to_string(), case(r), w);
        one.get(&key(tr)).or_else(|| one.get(&key("solo")))
    };
    // each transport its own series, starting at efficiency 1 on one rank; per series and rank count the latest
    // run that has a baseline of its own commit
    let mut points: BTreeMap<String, BTreeMap<u64, f64>> = BTreeMap::new();
    for r in recs {
        let (Some(&ranks), Some(&w), Some(t)) = (r.sizes.get("ranks"), r.sizes.get("walkers"), gen_time(r)) else { continue };
        if ranks < 2 {
            continue;
        }
        let tr = transport(r);
        if let Some(t1) = base(&tr, r, w) {
            points.entry(format!("{} strong, {w} walkers, {tr}", system(r))).or_default().insert(ranks, t1 / (ranks as f64 * t));
        }
        if let Some(t1) = base(&tr, r, w / ranks).filter(|_| w % ranks == 0) {
            points.entry(format!("{} weak, {} walkers per rank, {tr}", system(r), w / ranks)).or_default().insert(ranks, t1 / t);
        }
    }
    let mut out: BTreeMap<String, Vec<(f64, f64)>> =
        points.into_iter().map(|(name, p)| (name, p.into_iter().map(|(n, e)| (n as f64, e)).collect())).collect();
    out.values_mut().for_each(|p| p.push((1.0, 1.0)));
    out.into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { name, points }
        })
        .collect()
}

/// The chart: measured series plus the paper's points as their own series.
pub fn chart(f: &Figure, measured: &[Series], hardware: &str) -> Chart {
    if let Measure::Shares(label, names) = f.measure {
        return shares_chart(f, label, names, measured, hardware);
    }
    let mut s = measured.to_vec();
    let mut paper: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for p in f.paper_points {
        paper.entry(p.label).or_default().push((p.x, p.y));
    }
    for (label, points) in paper {
        s.push(Series { name: format!("paper: {label} ({})", f.paper_hardware), points });
    }
    Chart {
        name: f.name.to_string(),
        title: f.title.to_string(),
        x_label: format!("{}   [here: {hardware}]", f.x),
        y_label: f.measure.label().to_string(),
        series: s,
        hline: matches!(f.measure, Measure::SpeedupAllCores | Measure::SpeedupOneCore).then_some(1.0),
        bars: vec![],
    }
}

/// Stacked bars of `Measure::Shares`: one bar per (x, variant and precision) in order of x, one stacked series per
/// share name (the series of `series` are named "<variant> <precision> <name>").
fn shares_chart(f: &Figure, label: &str, names: &[&str], measured: &[Series], hardware: &str) -> Chart {
    let mut bars: Vec<(f64, String)> = vec![];
    for s in measured {
        let Some((who, _)) = s.name.rsplit_once(' ') else { continue };
        for p in &s.points {
            if !bars.iter().any(|b| b.0 == p.0 && b.1 == who) {
                bars.push((p.0, who.to_string()));
            }
        }
    }
    bars.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let series = names
        .iter()
        .map(|name| Series {
            name: name.trim_start_matches("frac_").to_string(),
            points: bars
                .iter()
                .enumerate()
                .filter_map(|(i, (x, who))| {
                    let s = measured.iter().find(|s| s.name == format!("{who} {name}"))?;
                    s.points.iter().find(|p| p.0 == *x).map(|p| (i as f64, p.1))
                })
                .collect(),
        })
        .collect();
    // "cpu double" -> "cpu-d": short enough to sit under a bar
    let short = |who: &str| who.split(' ').enumerate().map(|(k, w)| if k == 0 { w.to_string() } else { w[..1].to_string() }).collect::<Vec<_>>().join("-");
    Chart {
        name: f.name.to_string(),
        title: f.title.to_string(),
        x_label: format!("{} and variant-precision (d double, m mixed, s single)   [here: {hardware}]", f.x),
        y_label: label.to_string(),
        series,
        hline: None,
        bars: bars.iter().map(|(x, who)| format!("{} {x}", short(who))).collect(),
    }
}

/// The side-by-side table: each x with the paper's values and the measured ones.
pub fn table(f: &Figure, measured: &[Series], hardware: &str) -> String {
    let mut xs: Vec<f64> = measured.iter().flat_map(|s| s.points.iter().map(|p| p.0)).chain(f.paper_points.iter().map(|p| p.x)).collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    let mut t = format!("{}: {}\n{}\npaper: {}\nhere:  {hardware}\ny: {}\n", f.name, f.title, f.paper, f.paper_hardware, f.measure.label());
    if !f.note.is_empty() {
        t += &format!("note: {}\n", f.note);
    }
    t += &format!("{:>10}  {:<28} {:>10}  {:<40} {:>10}\n", f.x, "paper series", "paper", "measured series", "measured");
    for x in xs {
        let paper: Vec<&PaperPoint> = f.paper_points.iter().filter(|p| p.x == x).collect();
        let here: Vec<(&str, f64)> = measured.iter().filter_map(|s| s.points.iter().find(|p| p.0 == x).map(|p| (s.name.as_str(), p.1))).collect();
        for i in 0..paper.len().max(here.len()) {
            let num = |v: f64| match v.abs() {
                a if a >= 1e4 => harness::output::fmt_si(v),
                a if a < 1e-2 && a > 0.0 => format!("{v:.2e}"),
                _ => format!("{v:.3}"),
            };
            let (pl, pv) = paper.get(i).map(|p| (p.label.to_string(), num(p.y))).unwrap_or_default();
            let (ml, mv) = here.get(i).map(|(l, v)| (l.to_string(), num(*v))).unwrap_or_default();
            let xl = if i == 0 { format!("{x}") } else { String::new() };
            t += &format!("{xl:>10}  {pl:<28} {pv:>10}  {ml:<40} {mv:>10}\n");
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(variant: Variant, walkers: u64, median: f64, threads: Option<&str>) -> Record {
        let mut r: Record = serde_json::from_str(include_str!("../tests/data/record.json")).unwrap();
        r.variant = variant;
        r.sizes.insert("walkers".into(), walkers);
        r.time.median = median;
        if let Some(t) = threads {
            r.params.insert("threads".into(), t.into());
        }
        r
    }

    #[test]
    fn speedups_pair_gpu_with_all_core_and_one_core_cpu() {
        let recs = vec![
            rec(Variant::Cpu, 16, 1.0, None),
            rec(Variant::Cpu, 16, 8.0, Some("1")),
            rec(Variant::Gpu, 16, 0.1, None),
            rec(Variant::Cpu, 128, 4.0, None),
            rec(Variant::Gpu, 128, 0.2, None),
        ];
        let mut f = find("000-bspline-bandwidth").unwrap();
        f.measure = Measure::SpeedupAllCores;
        let sel = select(&f, &recs);
        let s = series(&f, &sel);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].points, vec![(16.0, 10.0), (128.0, 20.0)]);
        f.measure = Measure::SpeedupOneCore;
        let s = series(&f, &sel);
        assert_eq!(s[0].points, vec![(16.0, 80.0)], "only the case with a one-core run");
        let t = table(&f, &s, "test machine");
        assert!(t.contains("80.000") && t.contains("75.000") && t.contains("test machine"), "{t}");
    }

    #[test]
    fn an_extra_measure_reads_the_records_extra_of_gpu_and_all_core_cpu_records() {
        let mut recs = vec![rec(Variant::Cpu, 16, 1.0, None), rec(Variant::Cpu, 16, 8.0, Some("1")), rec(Variant::Gpu, 16, 0.1, None)];
        for (r, share) in recs.iter_mut().zip([0.02, 0.5, 0.3]) {
            r.extra.insert("joblist_share".into(), share);
        }
        let mut f = find("000-bspline-bandwidth").unwrap();
        f.measure = Measure::Extras("job-list share", &["joblist_share"]);
        let s = series(&f, &select(&f, &recs));
        let points: Vec<(&str, Vec<(f64, f64)>)> = s.iter().map(|s| (s.name.split(' ').next().unwrap(), s.points.clone())).collect();
        // the one-core run is not drawn
        assert_eq!(points, vec![("cpu", vec![(16.0, 0.02)]), ("gpu", vec![(16.0, 0.3)])]);
    }

    #[test]
    fn scaling_efficiency_pairs_runs_with_their_one_rank_baseline() {
        fn close(s: &[Series], name: &str, want: [(f64, f64); 2]) {
            let got = &s.iter().find(|x| x.name.ends_with(name)).unwrap_or_else(|| panic!("no series {name} in {s:?}")).points;
            assert!(got.len() == 2 && got.iter().zip(want).all(|(g, w)| g.0 == w.0 && (g.1 - w.1).abs() < 1e-12), "{name}: {got:?}");
        }
        let run = |ranks: u64, walkers: u64, seconds: f64, transport: &str| {
            let mut r = rec(Variant::Cpu, walkers, seconds, Some(&ranks.to_string()));
            r.kernel = "qmc".into();
            r.op = "dmc".into();
            r.sizes.insert("ranks".into(), ranks);
            r.params.insert("transport".into(), transport.into());
            r.extra.insert("generations_run".into(), 100.0);
            r
        };
        // one rank: 100 walkers 1 s, 200 walkers 2 s, and 100 walkers 1.6 s under mpirun -n 1; two ranks: 200
        // walkers 1.25 s over threads, 2 s over MPI
        let recs = vec![
            run(1, 100, 1.0, "solo"),
            run(1, 200, 2.0, "solo"),
            run(1, 100, 1.6, "mpi"),
            run(2, 200, 1.25, "threads"),
            run(2, 200, 2.0, "mpi"),
        ];
        let f = find("dmc-scaling").unwrap();
        let s = series(&f, &select(&f, &recs));
        // strong: 2 s on one rank against 2 x 1.25 s; weak: 1 s for 100 walkers against 1.25 s for 100 per rank;
        // each transport its own series, against its own one-rank run where there is one (MPI weak: 1.6 s / 2 s)
        close(&s, "strong, 200 walkers, threads", [(1.0, 1.0), (2.0, 0.8)]);
        close(&s, "weak, 100 walkers per rank, threads", [(1.0, 1.0), (2.0, 0.8)]);
        close(&s, "strong, 200 walkers, mpi", [(1.0, 1.0), (2.0, 0.5)]);
        close(&s, "weak, 100 walkers per rank, mpi", [(1.0, 1.0), (2.0, 0.8)]);
        assert_eq!(s.len(), 4, "no series without a multi-rank point: {s:?}");
        // a later commit's runs pair with their own one-rank runs: its strong point replaces the earlier one, and
        // its 2-rank run of 200 walkers does not become a weak point against the earlier commit's 100-walker run
        let later = |mut r: Record| {
            r.commit = "later".into();
            r
        };
        let mut recs = recs;
        recs.extend([later(run(1, 200, 1.0, "solo")), later(run(2, 200, 0.5, "threads"))]);
        let s = series(&f, &select(&f, &recs));
        close(&s, "strong, 200 walkers, threads", [(1.0, 1.0), (2.0, 1.0)]);
        close(&s, "weak, 100 walkers per rank, threads", [(1.0, 1.0), (2.0, 0.8)]);
    }

    #[test]
    fn select_takes_values_and_least_numbers() {
        let r = rec(Variant::Gpu, 32, 1.0, Some("4"));
        assert!(has(&r, "walkers=32") && !has(&r, "walkers=3"));
        assert!(has(&r, "walkers>=32") && has(&r, "walkers>=4") && !has(&r, "walkers>=33"));
        assert!(has(&r, "threads>=4") && !has(&r, "threads>=5"), "parameters too");
        assert!(!has(&r, "nonesuch>=1"));
        assert!(has(&r, "!nonesuch") && !has(&r, "!walkers") && !has(&r, "!threads"), "absent sizes and parameters");
    }

    #[test]
    fn unknown_figure_lists_the_known_ones() {
        let e = find("nope").err().unwrap().to_string();
        assert!(e.contains("000-bspline-bandwidth"), "{e}");
    }

    #[test]
    fn every_figure_selects_a_registered_kernel() {
        let kernels: Vec<&str> = crate::registry::kernels().iter().map(|k| k.name).collect();
        for f in all() {
            assert!(kernels.contains(&f.kernel), "{} needs kernel {}", f.name, f.kernel);
            assert!(!f.runs.is_empty() && (!f.paper_points.is_empty() || !f.note.is_empty()), "{}", f.name);
        }
    }
}
