//! The papers' charts and tables, redrawn from records: `qmcbench figure <name>`.
//!
//! A figure names the records it needs (kernel, operation, the sizes and parameters that must match), what its y axis
//! measures (a speedup over all CPU cores or over one core, a fraction of the bandwidth ceiling, a throughput), the
//! mini-app command line that produces those records (run only when asked: `--measure`), and the paper's own numbers
//! with the hardware they came from. Only records that passed their check are drawn, and a ratio pairs two records of
//! one commit; where several commits measured a point, the latest pair is drawn, and the chart and table name the
//! commits. The chart shows the measured series and the paper's numbers; the table beside it prints both, and a
//! one-sentence reading says what the figure shows against which paper.

use anyhow::{bail, Result};
use harness::plot::style::value_order;
use harness::plot::{Bar, Chart, PaperMark, RefLine, Series};
use harness::report::FigureSection;
use harness::{Record, Variant};
use std::collections::{BTreeMap, BTreeSet};

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
    /// drawn as stacked bars, one bar per variant and precision, one panel per x; `.0` is the axis label.
    Shares(&'static str, &'static [&'static str]),
    /// DMC parallel efficiency over `ranks` from the per-generation time: weak (W walkers on R ranks against W / R
    /// on one) t1 / t, strong (W walkers on R ranks against W on one) t1 / (R t).
    ScalingEfficiency,
}

impl Measure {
    fn label(self) -> String {
        match self {
            Measure::SpeedupAllCores => "speedup over all CPU cores".into(),
            Measure::SpeedupOneCore => "speedup over one CPU core".into(),
            Measure::PercentOfCeiling => "% of measured copy bandwidth".into(),
            Measure::Throughput => "throughput".into(),
            Measure::Error => "max |error| / max |reference|".into(),
            Measure::SpeedupOverParam(p, v) => format!("throughput over {p}={v}"),
            Measure::SpeedupOverCpuIn(p) => format!("speedup over all CPU cores in {p}"),
            Measure::Extras(label, _) | Measure::Shares(label, _) => label.into(),
            Measure::ScalingEfficiency => "parallel efficiency (1 = perfect)".into(),
        }
    }

    /// A ratio of times or throughputs, whose break-even is 1.
    fn is_speedup(self) -> bool {
        matches!(self, Measure::SpeedupAllCores | Measure::SpeedupOneCore | Measure::SpeedupOverParam(..) | Measure::SpeedupOverCpuIn(_))
    }
}

/// A number the paper printed at an x, for the side-by-side table and the chart.
#[derive(Clone, Copy, Debug)]
pub struct PaperPoint {
    pub x: f64,
    pub y: f64,
    /// Which of the paper's rows or series (e.g. "DP", "bfactor=16").
    pub label: &'static str,
    /// The precision it compares with, where it names one (its colour in the chart).
    pub precision: Option<&'static str>,
}

/// A range (or, lo = hi, a level) the paper gives without an x: a shaded band across the chart.
#[derive(Clone, Copy, Debug)]
pub struct PaperRange {
    pub lo: f64,
    pub hi: f64,
    pub label: &'static str,
}

/// One paper chart or table.
pub struct Figure {
    pub name: &'static str,
    pub paper: &'static str,
    /// The paper, short, as the chart's legend names it (e.g. "paper 003").
    pub cite: &'static str,
    pub title: &'static str,
    pub kernel: &'static str,
    pub op: &'static str,
    /// The size on the x axis.
    pub x: &'static str,
    pub measure: Measure,
    /// Sizes or parameters a record must have (`name=value`, `name>=number`), or lack (`!name`).
    pub select: &'static [&'static str],
    /// `qmcbench run <kernel>` flags that produce the records (each line one run).
    pub runs: &'static [&'static [&'static str]],
    pub paper_points: &'static [PaperPoint],
    pub paper_ranges: &'static [PaperRange],
    /// Goals that are not the paper's measurements (a target of this suite), drawn as labelled lines.
    pub goals: &'static [(f64, &'static str)],
    /// The hardware of the paper's numbers.
    pub paper_hardware: &'static str,
    /// What a reader should know to compare (printed under the table and the chart).
    pub note: &'static str,
    /// What the figure shows, against which paper: the start of its one-sentence reading.
    pub reading: &'static str,
}

/// `pt!(x, y, "label")` or `pt!(x, y, "label", "single")`: a paper point, as a literal so figure tables stay
/// `'static`.
macro_rules! pt {
    ($x:expr, $y:expr, $label:expr) => {
        PaperPoint { x: $x, y: $y, label: $label, precision: None }
    };
    ($x:expr, $y:expr, $label:expr, $precision:expr) => {
        PaperPoint { x: $x, y: $y, label: $label, precision: Some($precision) }
    };
}

const FIG3_RUNS: &[&[&str]] =
    &[&["--electrons", "128,256,512,1024", "--walkers", "32,128,512,1024", "--steps", "1", "--max-reps", "2", "--variants", "cpu,gpu", "--precision", "double,mixed"]];
const FIG3_RANGE: &[PaperRange] = &[PaperRange { lo: 10.0, hi: 15.0, label: "about 10-15x, GPU in mixed over CPU in double" }];

/// Every figure the suite can draw.
pub fn all() -> Vec<Figure> {
    vec![
        Figure {
            name: "000-bspline-bandwidth",
            paper: "Esler et al., CiSE 2012 (paper 000): B-spline orbital evaluation",
            cite: "paper 000",
            title: "B-spline VGH: fraction of the memory bandwidth reached",
            kernel: "bspline",
            op: "vgh",
            x: "walkers",
            measure: Measure::PercentOfCeiling,
            // the tuned default of orbitals per GPU thread; the per_thread sweep is a tuning experiment
            select: &["grid=64", "basis=bspline", "!per_thread"],
            runs: &[&["--grid", "64", "--orbitals", "256,1024,4096", "--walkers", "16,128,1024", "--variants", "cpu,gpu"]],
            paper_points: &[],
            paper_ranges: &[PaperRange { lo: 75.0, hi: 75.0, label: "75% of peak bandwidth" }],
            goals: &[],
            paper_hardware: "NVIDIA Tesla (GT200), percentage of the datasheet peak",
            note: "here the percentage is of the copy bandwidth measured in the same process, not of the datasheet peak; the byte count is the model's (each coefficient read once), so cache reuse can take a CPU point above 100%",
            reading: "How close B-spline VGH evaluation comes to the copy bandwidth measured in the same process, on the GPU and on all CPU cores, against the 75% of peak paper 000 reached on a GT200 Tesla",
        },
        Figure {
            name: "qmcpack-delayed-update",
            paper: "Luo, Kim and Kent, JCTC 21, 12064 (2025): improved delayed updates in QMCPACK (anchors-qmc.md 2.6); the delayed update of McDaniel et al., JCP 147, 174107 (2017); paper 000's rank-1 Sherman-Morrison",
            cite: "Luo, Kim, Kent 2025",
            title: "Determinant move loop: delayed (Woodbury rank-k) over rank-1 updates",
            kernel: "determinant",
            op: "moves",
            x: "n",
            measure: Measure::SpeedupOverParam("delay", "1"),
            select: &[],
            runs: &[&["--n", "128,512,1024,2048", "--walkers", "64", "--max-gb", "1", "--delay", "1,4,16,64", "--steps", "128", "--variants", "cpu,gpu"]],
            paper_points: &[pt!(3072.0, 2.0, "GPU, whole DMC run"), pt!(3072.0, 12.0, "CPU, whole DMC run")],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "QMCPACK, 512 atoms, 6144 electrons",
            note: "n is electrons per spin (the paper's 6144 electrons are 3072 per spin); the paper's 2x (GPU) and 12x (CPU) are of whole DMC runs against rank-1 Sherman-Morrison, here the move loop alone (each walker proposes 128 moves, half accepted)",
            reading: "How much faster the determinant move loop runs with delayed rank-k updates than with rank-1 Sherman-Morrison, against the 2x (GPU) and 12x (CPU) Luo, Kim and Kent (JCTC 2025) report for whole QMCPACK DMC runs at 6144 electrons",
        },
        Figure {
            name: "001-tables-6.2-6.3",
            paper: "Rajagopalan, LSU thesis 2013 (paper 001), Tables 6.2 and 6.3",
            cite: "paper 001",
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
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "Tesla M2070 vs one Xeon core, 32 chains back to back",
            note: "speedups recomputed as CPU time / GPU time from the thesis' times (its printed 7.26 and 16.72 do not match)",
            reading: "t-J VMC of 32 Markov chains on the GPU against one CPU core, against the 7-20x of paper 001 (Tesla M2070 vs one Xeon core)",
        },
        Figure {
            name: "001-table-6.5",
            paper: "Rajagopalan, LSU thesis 2013 (paper 001), Table 6.5",
            cite: "paper 001",
            title: "t-J VMC, 32 chains: GPU over all CPU cores",
            kernel: "lattice",
            op: "vmc",
            x: "L",
            measure: Measure::SpeedupAllCores,
            select: &["chains=32"],
            runs: &[&["--lattice", "5,9,15", "--chains", "32", "--variants", "cpu,gpu", "--precision", "double"]],
            paper_points: &[pt!(5.0, 1.53, "vs 32 MPI ranks"), pt!(9.0, 3.66, "vs 32 MPI ranks"), pt!(15.0, 3.85, "vs 32 MPI ranks")],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "Tesla M2070 (bfactor=8) vs the group's Fortran MPI code, one rank per chain",
            note: "the thesis' MPI code was ~7x slower per chain than its own C++ (seed-001); here the CPU side is this suite's all-core code",
            reading: "t-J VMC of 32 chains on the GPU against all CPU cores, against the 1.5-3.9x of paper 001 over its 32-rank MPI code",
        },
        Figure {
            name: "003-table4-5-p",
            paper: "Thorpe et al., CASINO on GPUs (paper 003), Tables 4 and 5: long-range Jastrow p term",
            cite: "paper 003",
            title: "Jastrow p term (plane-wave stars), move ratios: GPU over all CPU cores",
            kernel: "jastrow",
            op: "ratio",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            select: &["term=p"],
            runs: &[&["--term", "p", "--electrons", "54,114,162,246,342,514,682,1030,1642,2058", "--walkers", "32", "--variants", "cpu,gpu", "--precision", "double,single"]],
            paper_points: &[pt!(678.0, 2.42, "DP", "double"), pt!(678.0, 2.82, "SP", "single"), pt!(1290.0, 3.15, "SP", "single"), pt!(150.0, 1.0, "DP break-even", "double")],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "V100 vs 32-core POWER9, whole-VMC p-term timer",
            note: "the paper times the p term inside whole VMC runs; here the kernel alone, walkers batched",
            reading: "The Jastrow p term's move ratios on the GPU over all CPU cores, against CASINO's 2.4x (double) and 2.8-3.2x (single) on a V100 over a 32-core POWER9 (paper 003)",
        },
        Figure {
            name: "003-table4-5-u",
            paper: "Thorpe et al., CASINO on GPUs (paper 003), Tables 4 and 5: short-range Jastrow u term",
            cite: "paper 003",
            title: "Jastrow u term, move ratios: GPU over all CPU cores",
            kernel: "jastrow",
            op: "ratio",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            select: &["term=u"],
            runs: &[&["--term", "u", "--electrons", "54,114,162,246,342,514,682,1030,1642,2058", "--walkers", "32", "--variants", "cpu,gpu", "--precision", "double,single"]],
            paper_points: &[pt!(678.0, 1.03, "DP", "double"), pt!(678.0, 1.11, "SP", "single"), pt!(1290.0, 1.14, "SP", "single")],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "V100 vs 32-core POWER9, whole-VMC u-term timer",
            note: "CASINO kept the u term on the CPU (warp stalls); here one block per walker",
            reading: "The Jastrow u term's move ratios on the GPU over all CPU cores, against CASINO's 1.03-1.14x on a V100 over a 32-core POWER9 (paper 003)",
        },
        Figure {
            name: "003-ewald",
            paper: "Thorpe et al., CASINO on GPUs (paper 003), Fig. 2 and Table 5: Ewald",
            cite: "paper 003",
            title: "Ewald energy of the fcc electron gas: GPU over all CPU cores",
            kernel: "ewald",
            op: "energy",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            select: &["lattice=fcc"],
            runs: &[&["--lattice", "fcc", "--electrons", "14,38,54,118,226,678,1290,1642,1930", "--walkers", "64", "--variants", "cpu,gpu"]],
            paper_points: &[pt!(350.0, 1.0, "DP break-even", "double"), pt!(678.0, 1.79, "SP", "single"), pt!(1290.0, 3.63, "SP", "single")],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "V100 vs 32-core POWER9",
            note: "the paper's speedups are of the Ewald timer in whole VMC runs",
            reading: "The Ewald energy on the GPU over all CPU cores, against CASINO's break-even near 350 electrons and 1.8-3.6x (single) on a V100 over a 32-core POWER9 (paper 003)",
        },
        Figure {
            name: "004-fig7-basis",
            paper: "Anderson, Goddard, Schroeder, CPC 2007 (paper 004), Fig. 7 table: basis-function kernel",
            cite: "paper 004",
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
                pt!(32.0, 18.2, "basis", "single"),
                pt!(56.0, 25.9, "basis", "single"),
                pt!(70.0, 30.2, "basis", "single"),
                pt!(96.0, 31.6, "basis", "single"),
                pt!(102.0, 29.2, "basis", "single"),
                pt!(116.0, 28.5, "basis", "single"),
                pt!(152.0, 33.3, "basis", "single"),
            ],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "GeForce 7800 GTX vs one 3.0 GHz Pentium 4, single precision",
            note: "molecules by electron count: acetic acid 32, benzaldehyde 56, [10]annulene 70, diazobenzene 96, lysine 102, arginine 116, HMX 152",
            reading: "Gaussian basis functions on the GPU over one CPU core, molecule by molecule, against the 18-33x of paper 004 (GeForce 7800 GTX over a Pentium 4, single precision)",
        },
        Figure {
            name: "004-kahan-gemm",
            paper: "Anderson, Goddard, Schroeder, CPC 2007 (paper 004), Algorithm 2 and Sec. 5: Kahan-compensated GEMM",
            cite: "paper 004",
            title: "Orbital GEMM by algorithm (naive and Kahan single, double, library, TF32)",
            kernel: "gemm",
            op: "gemm",
            x: "electrons",
            measure: Measure::Throughput,
            select: &["walkers=128", "inputs=basis"],
            runs: &[&["--op", "gemm", "--walkers", "128", "--variants", "cpu,gpu"]],
            paper_points: &[],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "GeForce 7800 GTX",
            note: "the Fig. 7 table has no GEMM column; its text puts the Kahan (KSF) penalty at 3% to 25% of the whole run, growing with the GEMM's share",
            reading: "The orbital GEMM's throughput by algorithm on the GPU and all CPU cores, for the cost of Kahan compensation that paper 004 puts at 3-25% of a whole run",
        },
        Figure {
            name: "004-precision",
            paper: "Anderson, Goddard, Schroeder, CPC 2007 (paper 004), Fig. 5: GEMM error vs inner dimension",
            cite: "paper 004",
            title: "GEMM error against the compensated f64 reference vs inner dimension (1024 x k x 1024)",
            kernel: "gemm",
            op: "gemm",
            x: "k",
            measure: Measure::Error,
            select: &["molecule=fig5"],
            runs: &[&["--op", "gemm", "--molecules", "acetic-acid", "--walkers", "1", "--inner", "1024,8192,65536", "--variants", "cpu,gpu"]],
            paper_points: &[],
            paper_ranges: &[],
            goals: &[(5.96e-8, "f32 unit roundoff 6e-8"), (4.88e-4, "TF32 unit roundoff 4.9e-4")],
            paper_hardware: "GeForce 7800 GTX (no IEEE denormals)",
            note: "Kahan single should stay near f32 epsilon (6e-8) as k grows while naive single grows like sqrt(k) eps; TF32 sits near 2^-11",
            reading: "The GEMM's error against a compensated f64 reference as the inner dimension grows, by algorithm, for paper 004's claim that Kahan-compensated single precision stays at single-precision roundoff",
        },
        Figure {
            name: "000-fig3-speedup",
            paper: "Esler et al., CiSE 2012 (paper 000), Fig. 3: whole-application GPU speedup",
            cite: "paper 000",
            title: "Synthetic carbon solid, DMC steps: GPU over all CPU cores in the same precision, per walker count",
            kernel: "solid",
            op: "dmc",
            x: "electrons",
            measure: Measure::SpeedupAllCores,
            // the paper's sizes: the smoke runs' 64 electrons and 4 walkers (scripts/gpu-host.sh solid-check) stay out,
            // and so do the runs over ranks (the scaling figure's); only the engine with delayed updates (issue 21:
            // records before it carry no delay, and delay 1 is the rank-1 comparison), so every ratio is over
            // today's CPU engine
            select: &["electrons>=128", "walkers>=32", "!ranks", "delay>=2"],
            runs: FIG3_RUNS,
            paper_points: &[],
            paper_ranges: FIG3_RANGE,
            goals: &[],
            paper_hardware: "Tesla S1070 (GT200) vs one quad-core Xeon E5410 (4 threads)",
            note: "the paper prints no numbers for its Fig. 3: about 10 to 15 times one quad-core socket, rising with electrons and walkers, its GPU in mixed precision against the CPU in double; here each precision is paired with the CPU in the same precision",
            reading: "How many times faster whole DMC steps of the synthetic carbon solid run on the GPU than on all CPU cores in the same precision, against the 10-15x of paper 000's Fig. 3 (Tesla S1070 over a quad-core Xeon, mixed over double)",
        },
        Figure {
            name: "000-fig3-gpu-over-double-cpu",
            paper: "Esler et al., CiSE 2012 (paper 000), Fig. 3: whole-application GPU speedup, as the paper pairs it",
            cite: "paper 000",
            title: "Synthetic carbon solid, DMC steps: GPU (double and mixed) over all CPU cores in double",
            kernel: "solid",
            op: "dmc",
            x: "electrons",
            measure: Measure::SpeedupOverCpuIn("double"),
            select: &["electrons>=128", "walkers>=32", "!ranks", "delay>=2"],
            runs: FIG3_RUNS,
            paper_points: &[],
            paper_ranges: FIG3_RANGE,
            goals: &[],
            paper_hardware: "Tesla S1070 (GT200) vs one quad-core Xeon E5410 (4 threads)",
            note: "the paper's pairing: its GPU in mixed precision against the CPU in double, about 10 to 15 times one socket; target here at least 15 times all cores at the largest sizes in mixed",
            reading: "How many times faster whole DMC steps of the synthetic carbon solid run on the GPU (double and mixed) than on all CPU cores in double, the pairing of paper 000's Fig. 3 (about 10-15x on a Tesla S1070 over a quad-core Xeon)",
        },
        Figure {
            name: "000-fig4-classes",
            paper: "Esler et al., CiSE 2012 (paper 000), Fig. 4: time per kernel class",
            cite: "paper 000",
            title: "Synthetic carbon solid, DMC steps with 128 walkers: fraction of the time per kernel class, CPU and GPU",
            kernel: "solid",
            op: "dmc",
            x: "electrons",
            measure: Measure::Shares("fraction of the step's time", &["frac_orbitals", "frac_determinant", "frac_jastrow", "frac_coulomb", "frac_pseudopotential", "frac_branching"]),
            select: &["walkers=128", "electrons>=128", "!ranks", "delay>=2"],
            runs: &[&["--electrons", "128,256,512,1024", "--walkers", "128", "--steps", "1", "--max-reps", "2", "--variants", "cpu,gpu", "--precision", "double,mixed"]],
            paper_points: &[],
            paper_ranges: &[],
            goals: &[],
            paper_hardware: "Tesla S1070 (GT200) vs quad-core Xeon E5410",
            note: "the paper's bars (one system, percentages) show B-splines a smaller share on the GPU and determinant updates a larger one; the rest (random numbers, transfers) is frac_other in the records",
            reading: "Where a DMC step's time goes, by kernel class, on all CPU cores and on the GPU, against paper 000's Fig. 4 (B-splines a smaller share on the GPU, determinant updates a larger one)",
        },
        pp_figure(
            "000-pseudopotential-speedup",
            "Nonlocal pseudopotential energy, 64 walkers: GPU over all CPU cores vs cell size",
            "atoms",
            Measure::SpeedupAllCores,
            "carbon-like cell, 4 electrons per atom, BFD channels, 12-point rule, Slater-Jastrow ratios",
            "The nonlocal pseudopotential energy on the GPU over all CPU cores as the cell grows (paper 000 batches it through a job list; it prints no numbers)",
        ),
        pp_figure(
            "000-pseudopotential-ratios",
            "Nonlocal pseudopotential, 64 walkers: wavefunction ratios per second vs cell size",
            "atoms",
            Measure::Throughput,
            "a ratio is one quadrature point of one electron-ion pair within r_c: spline orbitals, dot with the inverse row, Jastrow ratio",
            "Wavefunction ratios per second of the nonlocal pseudopotential on the GPU and all CPU cores as the cell grows (paper 000's job-list scheme; it prints no numbers)",
        ),
        pp_figure(
            "000-pseudopotential-energies",
            "Nonlocal pseudopotential, 64 walkers: whole nonlocal energies per walker per second vs cell size",
            "atoms",
            Measure::Extras("walker energies per second", &["walker_energies_per_s"]),
            "both phases (job list and ratios) and the sum, per walker",
            "Whole nonlocal energies per walker per second, GPU and all CPU cores, as the cell grows (paper 000's scheme; it prints no numbers)",
        ),
        pp_figure(
            "000-pseudopotential-joblist",
            "Nonlocal pseudopotential, 64 walkers: fraction of the time in the job list (the rest: the ratios)",
            "atoms",
            Measure::Extras("job-list share of the time", &["joblist_share"]),
            "job-list time (timed alone) over the whole evaluation; the paper builds the list on the GPU and concatenates it on the CPU, as here",
            "The share of the nonlocal evaluation spent building paper 000's job list, GPU and all CPU cores, as the cell grows",
        ),
        pp_figure(
            "000-pseudopotential-walkers-32",
            "Nonlocal pseudopotential, 32 atoms: wavefunction ratios per second vs walkers",
            "walkers",
            Measure::Throughput,
            "the GPU needs many walkers in one launch to fill; the CPU is flat once every core has walkers",
            "How many walkers the GPU needs in one launch to outrun all CPU cores on the nonlocal pseudopotential of a 32-atom cell (paper 000's batching; no printed numbers)",
        ),
        pp_figure(
            "000-pseudopotential-walkers-128",
            "Nonlocal pseudopotential, 128 atoms: wavefunction ratios per second vs walkers",
            "walkers",
            Measure::Throughput,
            "the GPU needs many walkers in one launch to fill; the CPU is flat once every core has walkers",
            "How many walkers the GPU needs in one launch to outrun all CPU cores on the nonlocal pseudopotential of a 128-atom cell (paper 000's batching; no printed numbers)",
        ),
        Figure {
            name: "dmc-scaling",
            paper: "Issue 11 after papers 000 and 002: DMC over ranks with walker migration (paper 002: at least 85% strong-scaling efficiency at 2,000 nodes)",
            cite: "paper 002",
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
            paper_points: &[],
            paper_ranges: &[PaperRange { lo: 0.85, hi: 0.85, label: "at least 85% strong scaling at 2,000 nodes" }],
            goals: &[(0.95, "issue 11 target 0.95 (weak, 2 GPUs)")],
            paper_hardware: "paper 002's production runs",
            note: "scripts/scaling.sh OUT [MAX_RANKS] makes the full set (threads or MPI=1 mpirun); a point needs the one-rank run of the same population (strong) or of one rank's share (weak), of the same commit",
            reading: "How well DMC keeps every rank busy as ranks are added, at a fixed population (strong) and a fixed population per rank (weak), against paper 002's 85% strong-scaling efficiency at 2,000 nodes",
        },
        Figure {
            name: "solid-scaling",
            paper: "Issue 13 after papers 000 and 002: whole DMC steps of the synthetic carbon solid (and the electron gas) over GPUs, one rank per GPU, global comb and walker migration",
            cite: "paper 002",
            title: "DMC parallel efficiency over GPUs, synthetic solid and electron gas (weak: fixed walkers per GPU; strong: fixed population)",
            kernel: "solid",
            op: "dmc",
            x: "ranks",
            measure: Measure::ScalingEfficiency,
            // ranks with a GPU each (the gas's CPU ranks, solid --system gas --ranks --variants cpu, are not GPUs)
            select: &["ranks>=1", "variant=gpu"],
            runs: &[
                &["--electrons", "256,512", "--walkers", "256,512", "--ranks", "1", "--steps", "50", "--variants", "gpu", "--precision", "mixed"],
                &["--electrons", "256,512", "--walkers", "512", "--ranks", "2", "--steps", "50", "--variants", "gpu", "--precision", "mixed", "--migrate", "inverse"],
                &["--electrons", "256,512", "--walkers", "512", "--ranks", "2", "--steps", "50", "--variants", "gpu", "--precision", "mixed", "--migrate", "inverse", "--migrate-via", "device"],
                &["--electrons", "256,512", "--walkers", "512", "--ranks", "2", "--steps", "50", "--variants", "gpu", "--precision", "mixed", "--migrate", "configuration"],
                &["--electrons", "256,512", "--walkers", "512", "--ranks", "2", "--steps", "50", "--variants", "gpu", "--precision", "mixed", "--migrate", "whole"],
                &["--system", "gas", "--electrons", "162,294", "--walkers", "512,1024", "--ranks", "1", "--steps", "50", "--variants", "gpu", "--precision", "mixed"],
                &["--system", "gas", "--electrons", "162,294", "--walkers", "1024", "--ranks", "2", "--steps", "50", "--variants", "gpu", "--precision", "mixed"],
            ],
            paper_points: &[],
            paper_ranges: &[PaperRange { lo: 0.85, hi: 0.85, label: "at least 85% strong scaling at 2,000 nodes" }],
            goals: &[(0.97, "issue 24 target 0.97 (weak, 2 GPUs)"), (0.90, "issue 24 target 0.90 (strong, 2 GPUs)")],
            paper_hardware: "paper 002's production runs",
            note: "scripts/gpu-host.sh solid-scaling (the solid) and gas-scaling (the gas) make the set on a host's GPUs (threads transport, one thread per GPU, then MPI); a point needs the one-rank run of the same population (strong) or of one rank's share (weak), of the same commit",
            reading: "How well whole DMC steps of the synthetic solid and the electron gas keep every GPU busy as GPUs are added, against paper 002's 85% strong-scaling efficiency at 2,000 nodes",
        },
    ]
}

/// A figure of the pseudopotential mini-app (paper 000 prints no numbers for it): over cell size at 64 walkers, or
/// over walkers at the cell size in the name's last field.
fn pp_figure(name: &'static str, title: &'static str, x: &'static str, measure: Measure, note: &'static str, reading: &'static str) -> Figure {
    let (select, runs): (&'static [&'static str], &'static [&'static [&'static str]]) = match (x, name.rsplit('-').next()) {
        ("walkers", Some("32")) => (&["atoms=32", "jastrow=on", "quadrature=12"], &[&["--pairs", "32:1,32:4,32:16,32:64,32:256,32:1024", "--variants", "cpu,gpu"]]),
        ("walkers", _) => (&["atoms=128", "jastrow=on", "quadrature=12"], &[&["--pairs", "128:1,128:4,128:16,128:64,128:256,128:1024", "--variants", "cpu,gpu"]]),
        _ => (&["walkers=64", "jastrow=on", "quadrature=12"], &[&["--pairs", "8:64,16:64,32:64,64:64,128:64,256:64", "--variants", "cpu,gpu"]]),
    };
    Figure {
        name,
        paper: "Esler et al., CiSE 2012 (paper 000): nonlocal pseudopotential, job list and batched ratios",
        cite: "paper 000",
        title,
        kernel: "pseudopotential",
        op: "energy",
        x,
        measure,
        select,
        runs,
        paper_points: &[],
        paper_ranges: &[],
        goals: &[],
        paper_hardware: "no printed numbers (its Fig. 4 splits whole-DMC time by kernel)",
        note,
        reading,
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

/// Does record `r` match `sel`: `name=value`, `name>=number` (at least that number), or `!name` (no such size or
/// parameter)? A name is a size, a parameter, or `variant` (`variant=gpu`).
pub(crate) fn has(r: &Record, sel: &str) -> bool {
    // sizes, then parameters, then `variant` (cpu, gpu)
    let value = |k: &str| r.sizes.get(k).map(|x| x.to_string()).or_else(|| r.params.get(k).cloned()).or_else(|| (k == "variant").then(|| r.variant.name().to_string()));
    if let Some(k) = sel.strip_prefix('!') {
        return value(k).is_none();
    }
    if let Some((k, least)) = sel.split_once(">=") {
        let least: f64 = least.parse().expect("figure select: a number after >=");
        return value(k).and_then(|x| x.parse::<f64>().ok()).is_some_and(|x| x >= least);
    }
    let (k, v) = sel.split_once('=').unwrap_or((sel, ""));
    value(k).is_some_and(|x| x == v)
}

/// The records a figure may draw on: its kernel, operation and selection, passed only (a record whose check failed,
/// was skipped or has not run is never drawn), oldest first.
pub fn select<'a>(f: &Figure, records: &'a [Record]) -> Vec<&'a Record> {
    let mut chosen: Vec<&Record> =
        records.iter().filter(|r| r.validation.status == "passed" && r.kernel == f.kernel && r.op == f.op && f.select.iter().all(|s| has(r, s))).collect();
    chosen.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
    chosen
}

/// "NVIDIA H100 80GB HBM3 + Intel(R) Xeon(R) Processor (16 cores)": the machines of the records, each once, in the
/// order first met and joined by "; " (a scaling figure spans hosts of one, two and four GPUs: "2x NVIDIA H200 + ...").
/// Records from before `host_gpus` was recorded do not say how many GPUs their host had: they are named with a
/// record of the same GPU and CPU that does, if there is one, rather than as one more machine.
pub fn hardware(recs: &[&Record]) -> String {
    // machine -> (GPUs on the host where known, the GPU's name once a GPU record of it is met, the CPU)
    let mut machines: Vec<(String, (Option<usize>, Option<String>, String))> = vec![];
    for r in recs {
        let m = r.system.machine();
        let i = match machines.iter().position(|(k, _)| *k == m) {
            Some(i) => i,
            None => {
                let cpu = format!("{} ({} cores)", r.system.cpu_model, r.system.cores());
                machines.push((m, (r.system.host_gpus.as_ref().map(|v| v.len()), None, cpu)));
                machines.len() - 1
            }
        };
        let (_, (_, gpu, _)) = &mut machines[i];
        if gpu.is_none() && r.variant == Variant::Gpu {
            *gpu = Some(r.system.label(true));
        }
    }
    let named: Vec<&(Option<usize>, Option<String>, String)> = machines.iter().map(|(_, d)| d).collect();
    let mut out: Vec<String> = vec![];
    for &(n, gpu, cpu) in &named {
        if n.is_none() && named.iter().any(|(k, g, c)| k.is_some() && g == gpu && c == cpu) {
            continue;
        }
        let name = match (gpu, n) {
            (Some(g), Some(n)) if *n > 1 => format!("{n}x {g} + {cpu}"),
            (Some(g), _) => format!("{g} + {cpu}"),
            (None, _) => cpu.clone(),
        };
        if !out.contains(&name) {
            out.push(name);
        }
    }
    out.join("; ")
}

/// A record's case key without the parameters that only say how one side ran (`threads`, `mode` on the CPU; where
/// the GPU kept a matrix, `w_on_chip`), behind its machine ([`harness::System::machine`]): pairs a CPU baseline with
/// the GPU run of its case on the same machine.
pub(crate) fn pair_key(r: &Record) -> String {
    let mut r = r.clone();
    r.params.remove("threads");
    r.params.remove("mode");
    r.params.remove("w_on_chip");
    format!("{} | {}", r.system.machine(), r.case_key())
}

/// A CPU record on one core: `--threads 1`, or a mini-app's serial mode (chains one after another).
pub(crate) fn one_core(r: &Record) -> bool {
    r.variant == Variant::Cpu && (r.params.get("threads").is_some_and(|t| t == "1") || r.params.get("mode").is_some_and(|m| m == "serial"))
}

/// A CPU record on every core of the pool.
pub(crate) fn all_cores(r: &Record) -> bool {
    r.variant == Variant::Cpu && !r.params.contains_key("threads") && r.params.get("mode").is_none_or(|m| m != "serial")
}

/// One measured point and the commit its records came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub commit: String,
    /// The later time stamp of its records (of several commits, the latest point is drawn).
    pub stamp: String,
}

/// A measured series: what identifies it (variant where it matters, precision, the sizes and parameters that vary)
/// and its points in order of x.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub attrs: Vec<(String, String)>,
    pub points: Vec<Point>,
}

impl Measured {
    pub fn series(&self) -> Series {
        Series::new(self.attrs.clone(), self.points.iter().map(|p| (p.x, p.y)).collect())
    }
    pub fn label(&self) -> String {
        self.series().label()
    }
}

/// Attributes of a measured series: the variant where the measure draws several, the precision, and the sizes and
/// parameters that vary.
fn series_attrs(f: &Figure, r: &Record, varying: &[String]) -> Vec<(String, String)> {
    let mut attrs = vec![];
    if matches!(f.measure, Measure::Throughput | Measure::PercentOfCeiling | Measure::Error | Measure::SpeedupOverParam(..) | Measure::Extras(..) | Measure::Shares(..)) {
        attrs.push(("variant".to_string(), r.variant.name().to_string()));
    }
    attrs.push(("precision".to_string(), r.precision.clone()));
    for k in varying {
        if let Some(v) = r.sizes.get(k) {
            attrs.push((k.clone(), v.to_string()));
        } else if let Some(v) = r.params.get(k) {
            attrs.push((k.clone(), v.clone()));
        }
    }
    attrs
}

type Points = Vec<(Vec<(String, String)>, f64, f64, String)>;

/// The points one commit's records give: (attributes, x, y, time stamp). Records come oldest first, so of a case
/// measured twice the later run is the one used.
fn commit_points(f: &Figure, recs: &[&Record], varying: &[String]) -> Points {
    let timed = |pick: &dyn Fn(&Record) -> bool, key: &dyn Fn(&Record) -> String| -> BTreeMap<String, (f64, f64, &str)> {
        recs.iter().filter(|r| pick(r)).map(|r| (key(r), (r.time.median, r.throughput, r.timestamp.as_str()))).collect()
    };
    let all_core = timed(&all_cores, &pair_key);
    let one = timed(&one_core, &pair_key);
    let in_precision = |r: &Record, p: &str| {
        let mut r = r.clone();
        r.precision = p.to_string();
        pair_key(&r)
    };
    let without = |r: &Record, p: &str| {
        let mut r = r.clone();
        r.params.remove(p);
        r.key()
    };
    let base = match f.measure {
        Measure::SpeedupOverParam(p, v) => timed(&|r: &Record| r.params.get(p).is_some_and(|x| x == v), &|r: &Record| without(r, p)),
        _ => BTreeMap::new(),
    };
    let later = |a: &str, b: &str| a.max(b).to_string();
    let mut out: Points = vec![];
    for r in recs {
        let Some(&x) = r.sizes.get(f.x) else { continue };
        let x = x as f64;
        let drawn = r.variant == Variant::Gpu || all_cores(r);
        if let Measure::Extras(_, names) | Measure::Shares(_, names) = f.measure {
            if drawn {
                for name in names {
                    if let Some(v) = r.extra.get(*name) {
                        let mut attrs = series_attrs(f, r, varying);
                        if names.len() > 1 {
                            attrs.push(("quantity".into(), name.to_string()));
                        }
                        out.push((attrs, x, *v, r.timestamp.clone()));
                    }
                }
            }
            continue;
        }
        let gpu = r.variant == Variant::Gpu;
        let over = |m: Option<&(f64, f64, &str)>| m.map(|c| (c.0 / r.time.median, later(c.2, &r.timestamp)));
        let y = match f.measure {
            Measure::SpeedupAllCores if gpu => over(all_core.get(&pair_key(r))),
            Measure::SpeedupOneCore if gpu => over(one.get(&pair_key(r))),
            Measure::SpeedupOverCpuIn(p) if gpu => over(all_core.get(&in_precision(r, p))),
            Measure::PercentOfCeiling if drawn => r.fraction_of_ceiling.map(|v| (100.0 * v, r.timestamp.clone())),
            Measure::Throughput if drawn => Some((r.throughput, r.timestamp.clone())),
            Measure::SpeedupOverParam(p, v) if drawn && r.params.get(p).is_some_and(|x| x != v) => {
                base.get(&without(r, p)).map(|b| (r.throughput / b.1, later(b.2, &r.timestamp)))
            }
            Measure::Error if drawn => r.validation.checks.iter().filter_map(|c| c.error).reduce(f64::max).map(|e| (e, r.timestamp.clone())),
            _ => None,
        };
        if let Some((y, stamp)) = y {
            out.push((series_attrs(f, r, varying), x, y, stamp));
        }
    }
    out
}

/// Gather points into series: of several points of one series at one x (several commits), the latest.
fn gather(points: impl IntoIterator<Item = (Vec<(String, String)>, f64, f64, String, String)>) -> Vec<Measured> {
    let mut best: BTreeMap<Vec<(String, String)>, Vec<Point>> = BTreeMap::new();
    for (attrs, x, y, stamp, commit) in points {
        let pts = best.entry(attrs).or_default();
        match pts.iter_mut().find(|p| p.x == x) {
            Some(p) if p.stamp <= stamp => *p = Point { x, y, commit, stamp },
            Some(_) => {}
            None => pts.push(Point { x, y, commit, stamp }),
        }
    }
    let mut out: Vec<Measured> = best
        .into_iter()
        .map(|(attrs, mut points)| {
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            Measured { attrs, points }
        })
        .collect();
    // series in value order of their attributes (walkers=32 before walkers=128)
    out.sort_by(|a, b| {
        a.attrs.iter().zip(&b.attrs).map(|(x, y)| x.0.cmp(&y.0).then(value_order(&x.1, &y.1))).find(|o| o.is_ne()).unwrap_or(a.attrs.len().cmp(&b.attrs.len()))
    });
    out
}

/// The measured series of a figure from its selected records (`select`): each point from records of one commit.
pub fn series(f: &Figure, recs: &[&Record]) -> Vec<Measured> {
    if f.measure == Measure::ScalingEfficiency {
        return scaling_series(recs);
    }
    // sizes and params (other than x, threads and mode) that take several values at one x name the series (a size
    // tied to x, e.g. basis functions per molecule, does not)
    let mut at_x: BTreeMap<(String, u64), BTreeSet<String>> = BTreeMap::new();
    for r in recs {
        let Some(&x) = r.sizes.get(f.x) else { continue };
        for (k, v) in r.sizes.iter().map(|(k, v)| (k, v.to_string())).chain(r.params.iter().map(|(k, v)| (k, v.clone()))) {
            at_x.entry((k.clone(), x)).or_default().insert(v);
        }
    }
    let varying: BTreeSet<String> =
        at_x.iter().filter(|((k, _), v)| k != f.x && k != "threads" && k != "mode" && v.len() > 1).map(|((k, _), _)| k.clone()).collect();
    let varying: Vec<String> = varying.into_iter().collect();
    let mut by_commit: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in recs {
        by_commit.entry(r.commit.as_str()).or_default().push(r);
    }
    gather(by_commit.into_iter().flat_map(|(commit, rs)| {
        commit_points(f, &rs, &varying).into_iter().map(move |(a, x, y, s)| (a, x, y, s, commit.to_string()))
    }))
}

/// A DMC run's time per generation: its time over the generations it ran (None before the record had them).
pub(crate) fn gen_time(r: &Record) -> Option<f64> {
    r.extra.get("generations_run").filter(|g| **g > 0.0).map(|g| r.time.median / g)
}

/// A ranks run's case without what scaling varies (ranks, walkers, transport, threads, migration).
fn scaling_case(r: &Record) -> String {
    let mut r = r.clone();
    for k in ["ranks", "walkers"] {
        r.sizes.remove(k);
    }
    // how the ranks ran and shared the walkers: a one-rank run is the baseline of every way
    for k in ["transport", "threads", "migrate", "migrate_via", "balance", "sync", "lag", "spread", "mpi_wait"] {
        r.params.remove(k);
    }
    r.key()
}

/// How a ranks run's ranks met (`solid --sync`, with a lagged run's `--lag` and `--spread` where not the defaults,
/// and MPI ranks that waited asleep, QMC_MPI_WAIT=sleep): "lagged", "lagged, lag 2", "lagged, lag 2, spread 1.5",
/// "each, asleep"; None for the comb every generation with MPI's own wait.
fn sync_name(r: &Record) -> Option<String> {
    let asleep = r.params.get("mpi_wait").is_some_and(|w| w == "sleep");
    let mut name = match r.params.get("sync") {
        Some(s) => s.clone(),
        None if asleep => "each".into(),
        None => return None,
    };
    for k in ["lag", "spread"] {
        if let Some(v) = r.params.get(k) {
            name.push_str(&format!(", {k} {v}"));
        }
    }
    if asleep {
        name.push_str(", asleep");
    }
    Some(name)
}

fn transport(r: &Record) -> String {
    r.params.get("transport").cloned().unwrap_or_default()
}

/// Runs of one case (key K) counted by their mean time and the newest of them, which stands for them all.
fn mean_runs<'a, K: Ord>(runs: impl Iterator<Item = (K, f64, &'a Record)>) -> BTreeMap<K, (f64, &'a Record)> {
    let mut sums: BTreeMap<K, (f64, usize, &Record)> = BTreeMap::new();
    for (k, t, r) in runs {
        let e = sums.entry(k).or_insert((0.0, 0, r));
        (e.0, e.1) = (e.0 + t, e.1 + 1);
        if r.timestamp >= e.2.timestamp {
            e.2 = r;
        }
    }
    sums.into_iter().map(|(k, (sum, n, r))| (k, (sum / n as f64, r))).collect()
}

/// The one-rank baselines of scaling runs, per commit, machine, transport, case and walkers: a run is paired with the
/// one-rank run of its own machine (two hosts of one GPU model differ by a percent or two) and its transport's own
/// one-rank run (mpirun -n 1) where there is one, else the run without a communication layer ("solo"). Where one
/// case ran alone more than once (the gas-ranks-weak stage runs it before and after the 16-rank run), the mean of
/// those runs: on the H200 host at 4be9411 they were 21.9 and 24.4 ms a generation, and the later alone made 16
/// thread ranks look 0.998 efficient. Each baseline keeps its newest timestamp.
pub(crate) struct OneRank<'a>(BTreeMap<(String, String, String, String, u64), (f64, &'a str)>);

impl<'a> OneRank<'a> {
    pub(crate) fn of(recs: &[&'a Record]) -> OneRank<'a> {
        let runs = recs.iter().filter(|r| r.sizes.get("ranks") == Some(&1)).filter_map(|&r| {
            let (&w, t) = (r.sizes.get("walkers")?, gen_time(r)?);
            Some(((r.commit.clone(), r.system.machine(), transport(r), scaling_case(r), w), t, r))
        });
        OneRank(mean_runs(runs).into_iter().map(|(k, (t, r))| (k, (t, r.timestamp.as_str()))).collect())
    }

    /// The baseline of multi-rank run `r` at `walkers` on one rank (seconds a generation, timestamp).
    pub(crate) fn of_run(&self, r: &Record, walkers: u64) -> Option<(f64, &'a str)> {
        let key = |t: String| (r.commit.clone(), r.system.machine(), t, scaling_case(r), walkers);
        self.0.get(&key(transport(r))).or_else(|| self.0.get(&key("solo".into()))).copied()
    }
}

/// Weak and strong scaling series (see `Measure::ScalingEfficiency`). A run of W walkers on R ranks is a point of
/// the strong series of W walkers when one rank ran W, and of the weak series of W / R walkers per rank when one
/// rank ran W / R, both of its own commit ([`OneRank`]). The time of a generation is the run's time over the
/// generations it ran.
fn scaling_series(recs: &[&Record]) -> Vec<Measured> {
    // what names a series besides the scaling: the system, the precision and the other sizes
    let named = |r: &Record| {
        let mut a = vec![];
        if let Some(s) = r.params.get("system") {
            a.push(("system".to_string(), s.clone()));
        }
        a.push(("precision".to_string(), r.precision.clone()));
        a.extend(r.sizes.iter().filter(|(k, _)| !matches!(k.as_str(), "ranks" | "walkers")).map(|(k, v)| (k.clone(), v.to_string())));
        // what a migrating walker carried, how the walkers were shared and how the ranks met name a series of their
        // own, over the one-rank run (which migrates, shares and meets nothing)
        let several = r.sizes.get("ranks").is_some_and(|&n| n > 1);
        for k in ["migrate", "migrate_via", "balance"] {
            if let Some(m) = r.params.get(k).filter(|_| several) {
                a.push((k.to_string(), m.clone()));
            }
        }
        if let Some(m) = sync_name(r).filter(|_| several) {
            a.push(("sync".to_string(), m));
        }
        a
    };
    let one = OneRank::of(recs);
    // a case run more than once on one machine at one commit (gas-ranks-loaded runs each three times: a lone rank's
    // speed drifted by 15-25% between runs) counts by its mean time, as the one-rank baselines do; the newest run
    // stands for them
    let runs = recs
        .iter()
        .filter(|r| r.sizes.get("ranks").is_some_and(|&n| n > 1))
        .filter_map(|&r| Some(((r.commit.clone(), r.system.machine(), r.key()), gen_time(r)?, r)));
    // each transport its own series, starting at efficiency 1 on one rank
    let mut points = vec![];
    for (t, r) in mean_runs(runs).into_values() {
        let (Some(&ranks), Some(&w)) = (r.sizes.get("ranks"), r.sizes.get("walkers")) else { continue };
        let tr = transport(r);
        let attrs = |scaling: &str, walkers: u64| {
            let mut a = named(r);
            a.extend([("scaling".into(), scaling.into()), ("walkers".into(), walkers.to_string()), ("transport".into(), tr.clone())]);
            a
        };
        let stamp = |b: &(f64, &str)| b.1.max(r.timestamp.as_str()).to_string();
        let host = r.system.machine();
        if let Some(b) = one.of_run(r, w) {
            points.push((attrs("strong", w), ranks as f64, b.0 / (ranks as f64 * t), stamp(&b), r.commit.clone(), host.clone()));
        }
        if let Some(b) = one.of_run(r, w / ranks).filter(|_| w % ranks == 0) {
            points.push((attrs("weak, per rank", w / ranks), ranks as f64, b.0 / t, stamp(&b), r.commit.clone(), host));
        }
    }
    // a series is one host's, the host of its newest point, as in the README's scaling tables: each point is over its
    // own host's one-rank run, but a line from one host's point to another's (the H200 folder's 2-GPU and 4-GPU
    // hosts, two H100 hosts of other CPUs) would compare their cores, not the ranks
    let mut newest: BTreeMap<&Vec<(String, String)>, (&str, &str)> = BTreeMap::new();
    for (a, _, _, stamp, _, host) in &points {
        let e = newest.entry(a).or_insert((stamp, host));
        if stamp.as_str() > e.0 {
            *e = (stamp, host);
        }
    }
    let keep: Vec<bool> = points.iter().map(|(a, .., host)| newest[a].1 == host).collect();
    let mut out = gather(points.into_iter().zip(keep).filter(|(_, k)| *k).map(|((a, x, y, s, c, _), _)| (a, x, y, s, c)));
    for m in out.iter_mut() {
        let first = m.points[0].clone();
        m.points.insert(0, Point { x: 1.0, y: 1.0, ..first });
    }
    out
}

/// The chart's notes from the records: how the CPU side was timed where it timed fewer walkers than the case has.
fn record_notes(recs: &[&Record]) -> Vec<String> {
    let scaled: BTreeSet<(u64, u64)> = recs
        .iter()
        .filter(|r| r.variant == Variant::Cpu)
        .filter_map(|r| Some((r.extra.get("cpu_walkers_timed").map(|t| *t as u64)?, *r.sizes.get("walkers")?)))
        .filter(|(timed, w)| timed < w)
        .collect();
    if scaled.is_empty() {
        return vec![];
    }
    let timed: BTreeSet<u64> = scaled.iter().map(|s| s.0).collect();
    let to: BTreeSet<u64> = scaled.iter().map(|s| s.1).collect();
    let list = |s: &BTreeSet<u64>| s.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ");
    vec![format!(
        "CPU side: {} walkers timed per case (the records' cpu_walkers_timed) and the time scaled in proportion to the case's {} walkers",
        list(&timed),
        list(&to)
    )]
}

/// The paper's numbers as the chart draws them: points grouped by label, and ranges as bands.
fn paper_marks(f: &Figure) -> Vec<PaperMark> {
    let mut marks: Vec<PaperMark> = vec![];
    for p in f.paper_points {
        let label = format!("{}: {} ({})", f.cite, p.label, f.paper_hardware);
        match marks.iter_mut().find(|m| m.label == label) {
            Some(m) => m.points.push((p.x, p.y)),
            None => marks.push(PaperMark {
                label,
                attrs: p.precision.map(|v| vec![("precision".to_string(), v.to_string())]).unwrap_or_default(),
                points: vec![(p.x, p.y)],
                band: None,
            }),
        }
    }
    for r in f.paper_ranges {
        marks.push(PaperMark { label: format!("{}: {} ({})", f.cite, r.label, f.paper_hardware), band: Some((r.lo, r.hi)), ..Default::default() });
    }
    marks
}

/// The distinct commits of the measured points.
pub fn commits(measured: &[Measured]) -> BTreeSet<String> {
    measured.iter().flat_map(|m| m.points.iter().map(|p| p.commit.clone())).collect()
}

/// The chart: measured series, the paper's numbers, break-even / ceiling / goal lines, and the notes.
pub fn chart(f: &Figure, measured: &[Measured], recs: &[&Record]) -> Chart {
    let subtitle = format!(
        "here: {}; passed records of {}",
        hardware(recs),
        harness::plot::commits_phrase(commits(measured).iter().map(|c| c.as_str()))
    );
    let mut notes = vec![format!("Note: {}.", f.note)];
    notes.extend(record_notes(recs).into_iter().map(|n| format!("{n}.")));
    if let Measure::Shares(label, names) = f.measure {
        return Chart { subtitle, notes, ..shares_chart(f, label, names, measured) };
    }
    let mut lines: Vec<RefLine> = vec![];
    if f.measure.is_speedup() {
        lines.push(RefLine { y: 1.0, label: "break-even (1x)".into() });
    }
    match f.measure {
        Measure::PercentOfCeiling => lines.push(RefLine { y: 100.0, label: "measured copy bandwidth (100%)".into() }),
        Measure::ScalingEfficiency => lines.push(RefLine { y: 1.0, label: "perfect scaling".into() }),
        _ => {}
    }
    lines.extend(f.goals.iter().map(|(y, label)| RefLine { y: *y, label: label.to_string() }));
    let y_label = match (f.measure, recs.first()) {
        (Measure::Throughput, Some(r)) => r.throughput_unit.clone(),
        _ => f.measure.label(),
    };
    Chart {
        name: f.name.to_string(),
        title: f.title.to_string(),
        subtitle,
        x_label: axis_name(f.x),
        y_label,
        series: measured.iter().map(Measured::series).collect(),
        paper: paper_marks(f),
        lines,
        bars: vec![],
        notes,
    }
}

/// The x axis's name: the size's name, spelled out where it is a letter.
fn axis_name(x: &str) -> String {
    match x {
        "n" => "electrons per spin (n)".into(),
        "L" => "cluster side L (L^2 + 1 sites)".into(),
        "k" => "inner dimension k".into(),
        _ => x.to_string(),
    }
}

/// Stacked bars of `Measure::Shares`: one panel per x, in it one bar per variant and precision, one stacked series
/// per share name (measured series carry the name as their "quantity").
fn shares_chart(f: &Figure, label: &str, names: &[&str], measured: &[Measured]) -> Chart {
    let who = |m: &Measured| {
        let v = m.attrs.iter().find(|a| a.0 == "variant").map_or("", |a| a.1.as_str());
        let p = m.attrs.iter().find(|a| a.0 == "precision").map_or("", |a| a.1.as_str());
        format!("{v} {p}")
    };
    let mut bars: Vec<(f64, String)> = vec![];
    for m in measured {
        for p in &m.points {
            if !bars.iter().any(|b| b.0 == p.x && b.1 == who(m)) {
                bars.push((p.x, who(m)));
            }
        }
    }
    bars.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let series = names
        .iter()
        .map(|name| {
            let points = bars
                .iter()
                .enumerate()
                .filter_map(|(i, (x, w))| {
                    let m = measured.iter().find(|m| who(m) == *w && m.attrs.iter().any(|a| a.0 == "quantity" && a.1 == *name))?;
                    m.points.iter().find(|p| p.x == *x).map(|p| (i as f64, p.y))
                })
                .collect();
            Series::new(vec![("share".into(), name.trim_start_matches("frac_").to_string())], points)
        })
        .collect();
    Chart {
        name: f.name.to_string(),
        title: f.title.to_string(),
        x_label: "variant and precision".into(),
        y_label: label.to_string(),
        series,
        bars: bars.iter().map(|(x, w)| Bar { panel: format!("{x} {}", f.x), label: w.clone() }).collect(),
        ..Default::default()
    }
}

/// A number for tables and readings: three significant digits, SI above 10^4, short scientific below 10^-2.
fn num(v: f64) -> String {
    match v.abs() {
        a if a >= 1e4 => harness::output::fmt_si(v),
        a if a < 1e-2 && a > 0.0 => format!("{v:.2e}"),
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

/// "256 electrons", or "n = 1024" for a size named by a letter.
fn at_x(f: &Figure, x: f64) -> String {
    let x = harness::plot::ticks::format_tick(x);
    if f.x.chars().count() == 1 {
        format!("{} = {x}", f.x)
    } else {
        format!("{x} {}", f.x)
    }
}

/// The side-by-side rows: x, the paper's series and value, the measured series, value and commit.
pub fn table_rows(f: &Figure, measured: &[Measured]) -> Vec<[String; 6]> {
    let mut xs: Vec<f64> = measured.iter().flat_map(|m| m.points.iter().map(|p| p.x)).chain(f.paper_points.iter().map(|p| p.x)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let mut rows = vec![];
    for x in xs {
        let paper: Vec<&PaperPoint> = f.paper_points.iter().filter(|p| p.x == x).collect();
        let here: Vec<(String, &Point)> = measured.iter().filter_map(|m| m.points.iter().find(|p| p.x == x).map(|p| (m.label(), p))).collect();
        for i in 0..paper.len().max(here.len()) {
            let (pl, pv) = paper.get(i).map(|p| (p.label.to_string(), num(p.y))).unwrap_or_default();
            let (ml, mv, mc) = here.get(i).map(|(l, p)| (l.clone(), num(p.y), harness::plot::short_commit(&p.commit).to_string())).unwrap_or_default();
            let xl = if i == 0 { format!("{x}") } else { String::new() };
            rows.push([xl, pl, pv, ml, mv, mc]);
        }
    }
    rows
}

/// The column heads of `table_rows`.
pub fn table_header(f: &Figure) -> [String; 6] {
    [f.x.to_string(), "paper series".into(), "paper".into(), "measured series".into(), "measured".into(), "commit".into()]
}

/// The side-by-side table as text: what, whose numbers, on which machines and commits, then the rows.
pub fn table(f: &Figure, measured: &[Measured], recs: &[&Record]) -> String {
    let mut t = format!("{}: {}\n{}\npaper: {}\nhere:  {}\n", f.name, f.title, f.paper, f.paper_hardware, hardware(recs));
    t += &format!("records: passed only, {}\n", harness::plot::commits_phrase(commits(measured).iter().map(|c| c.as_str())));
    t += &format!("y: {}\n", f.measure.label());
    for r in f.paper_ranges {
        let tick = harness::plot::ticks::format_tick;
        let range = if r.hi > r.lo { format!("{}-{}", tick(r.lo), tick(r.hi)) } else { tick(r.lo) };
        t += &format!("paper range: {range} ({})\n", r.label);
    }
    for (y, label) in f.goals {
        t += &format!("goal: {} ({label})\n", harness::plot::ticks::format_tick(*y));
    }
    if !f.note.is_empty() {
        t += &format!("note: {}\n", f.note);
    }
    for n in record_notes(recs) {
        t += &format!("note: {n}\n");
    }
    t += &format!("reading: {}\n", reading(f, measured));
    let widths = [10, 30, 10, 46, 10, 8];
    let row = |cells: &[String; 6]| {
        format!(
            "{:>w0$}  {:<w1$} {:>w2$}  {:<w3$} {:>w4$}  {:<w5$}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5],
            w0 = widths[0], w1 = widths[1], w2 = widths[2], w3 = widths[3], w4 = widths[4], w5 = widths[5]
        )
        .trim_end()
        .to_string()
            + "\n"
    };
    t += &row(&table_header(f));
    for r in table_rows(f, measured) {
        t += &row(&r);
    }
    t
}

/// One sentence: what the figure shows against which paper (`Figure::reading`), then what was measured here.
pub fn reading(f: &Figure, measured: &[Measured]) -> String {
    let all: Vec<(&Measured, &Point)> = measured.iter().flat_map(|m| m.points.iter().map(move |p| (m, p))).filter(|(_, p)| p.x != 1.0 || f.measure != Measure::ScalingEfficiency).collect();
    let here = if let Measure::Shares(..) = f.measure {
        // at the largest x, each variant's largest share
        let xmax = all.iter().map(|(_, p)| p.x).fold(f64::MIN, f64::max);
        let mut top: BTreeMap<String, (f64, String)> = BTreeMap::new();
        for (m, p) in all.iter().filter(|(_, p)| p.x == xmax) {
            let get = |k: &str| m.attrs.iter().find(|a| a.0 == k).map_or(String::new(), |a| a.1.clone());
            let who = format!("{} {}", get("variant"), get("precision"));
            if top.get(&who).is_none_or(|t| t.0 < p.y) {
                top.insert(who, (p.y, get("quantity").trim_start_matches("frac_").to_string()));
            }
        }
        let parts: Vec<String> = top.iter().map(|(who, (v, q))| format!("{who} {q} {:.0}%", 100.0 * v)).collect();
        format!("at {}, the largest share: {}", at_x(f, xmax), parts.join(", "))
    } else {
        let lo = all.iter().min_by(|a, b| a.1.y.total_cmp(&b.1.y));
        let hi = all.iter().max_by(|a, b| a.1.y.total_cmp(&b.1.y));
        match (lo, hi) {
            (Some(lo), Some(hi)) => {
                let unit = match f.measure {
                    m if m.is_speedup() => "x",
                    Measure::PercentOfCeiling => "%",
                    _ => "",
                };
                let range = if num(lo.1.y) == num(hi.1.y) { format!("{}{unit}", num(hi.1.y)) } else { format!("{}{unit} to {}{unit}", num(lo.1.y), num(hi.1.y)) };
                // of points from several commits, the reader needs to know which run holds the highest: a point an
                // older commit alone measured may stand over a CPU side the later commits made faster
                let whose = if commits(measured).len() > 1 { format!(" ({})", harness::plot::commits_phrase([hi.1.commit.as_str()])) } else { String::new() };
                format!("here {range}, the highest for {} at {}{whose}", hi.0.label(), at_x(f, hi.1.x))
            }
            _ => "nothing measured here yet".into(),
        }
    };
    format!("{}: {here}.", f.reading)
}

/// A figure drawn from `records`, for the report: the chart, its reading and its table; None when no passed record
/// is there for it.
pub fn section(f: &Figure, records: &[Record]) -> Option<FigureSection> {
    let sel = select(f, records);
    let measured = series(f, &sel);
    if measured.is_empty() {
        return None;
    }
    Some(FigureSection {
        chart: chart(f, &measured, &sel),
        reading: reading(f, &measured),
        header: table_header(f).to_vec(),
        rows: table_rows(f, &measured).into_iter().map(|r| r.to_vec()).collect(),
    })
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

    fn points(m: &Measured) -> Vec<(f64, f64)> {
        m.points.iter().map(|p| (p.x, p.y)).collect()
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
        assert_eq!(points(&s[0]), vec![(16.0, 10.0), (128.0, 20.0)]);
        f.measure = Measure::SpeedupOneCore;
        let s = series(&f, &sel);
        assert_eq!(points(&s[0]), vec![(16.0, 80.0)], "only the case with a one-core run");
        let t = table(&f, &s, &sel);
        assert!(t.contains("80.0") && t.contains("75% of peak") && t.contains("NVIDIA"), "{t}");
        assert!(t.contains("the highest for double at 16 walkers"), "{t}");
        // a one-core run of the same commit on another machine (same host id, twice the cores) is no baseline
        let mut other = recs[1].clone();
        other.system.cpu_physical = Some(2 * other.system.cores());
        let recs = vec![other, recs[2].clone()];
        assert!(series(&f, &select(&f, &recs)).is_empty(), "no pair across machines");
    }

    #[test]
    fn the_hardware_names_every_machine_of_the_records_once() {
        let mut one = rec(Variant::Gpu, 16, 0.1, None);
        let gpu = one.system.gpu.as_ref().expect("the test record ran on a GPU").name.clone();
        one.system.host_gpus = Some(vec![gpu.clone()]);
        let mut cpu = rec(Variant::Cpu, 16, 1.0, None);
        cpu.system = one.system.clone();
        let mut two = one.clone();
        two.system.host_gpus = Some(vec![gpu.clone(); 2]);
        two.system.cpu_physical = Some(2 * one.system.cores());
        let (model, cores) = (&one.system.cpu_model, one.system.cores());
        assert_eq!(hardware(&[&one, &cpu, &one]), format!("{gpu} + {model} ({cores} cores)"));
        let both = hardware(&[&one, &cpu, &two]);
        assert_eq!(both, format!("{gpu} + {model} ({cores} cores); 2x {gpu} + {model} ({} cores)", 2 * cores), "{both}");
        // a record from before host_gpus on the two-GPU host is that host, not a third machine
        let mut old = two.clone();
        old.system.host_gpus = None;
        assert_eq!(hardware(&[&one, &old, &two]), both);
        // alone, it is named without a count
        assert_eq!(hardware(&[&old]), format!("{gpu} + {model} ({} cores)", 2 * cores));
    }

    #[test]
    fn ratios_pair_passed_records_of_one_commit_and_name_it() {
        let at = |v: Variant, walkers: u64, median: f64, commit: &str, stamp: &str| {
            let mut r = rec(v, walkers, median, None);
            r.commit = commit.into();
            r.timestamp = stamp.into();
            r
        };
        let mut f = find("000-bspline-bandwidth").unwrap();
        f.measure = Measure::SpeedupAllCores;
        let mut recs = vec![
            at(Variant::Cpu, 16, 1.0, "aaaaaaa1", "2026-01-01T00:00:00Z"),
            at(Variant::Gpu, 16, 0.1, "aaaaaaa1", "2026-01-01T00:00:01Z"),
            // a later GPU run of another commit without its CPU run: not paired with the older CPU run
            at(Variant::Gpu, 16, 0.01, "bbbbbbb2", "2026-01-02T00:00:00Z"),
            // a failed CPU run, the latest of its commit: never drawn
            at(Variant::Cpu, 16, 100.0, "aaaaaaa1", "2026-01-03T00:00:00Z"),
        ];
        recs[3].validation.status = "failed".into();
        let sel = select(&f, &recs);
        let s = series(&f, &sel);
        assert_eq!(points(&s[0]), vec![(16.0, 10.0)]);
        assert_eq!(s[0].points[0].commit, "aaaaaaa1");
        assert!(table(&f, &s, &sel).contains("commit aaaaaaa"), "the table names the commit");
        assert!(chart(&f, &s, &sel).subtitle.contains("commit aaaaaaa"), "the chart too");
        // records that are not "passed" (skipped, unchecked, ...) are not drawn
        recs[0].validation.status = "unchecked".into();
        assert!(series(&f, &select(&f, &recs)).is_empty());
        // the second commit's pair, once complete, is the later point
        recs[0].validation.status = "passed".into();
        recs.push(at(Variant::Cpu, 16, 0.2, "bbbbbbb2", "2026-01-02T00:00:01Z"));
        let s = series(&f, &select(&f, &recs));
        assert_eq!(points(&s[0]), vec![(16.0, 20.0)]);
        assert_eq!(s[0].points[0].commit, "bbbbbbb2");
        let one = table(&f, &s, &select(&f, &recs));
        assert!(one.contains("the highest for double at 16 walkers.") && !one.contains("(commit"), "one commit: {one}");
        // a point only the older commit measured: drawn beside the newer one, and the reading names whose it is
        recs.push(at(Variant::Cpu, 128, 1.0, "aaaaaaa1", "2026-01-01T00:00:02Z"));
        recs.push(at(Variant::Gpu, 128, 0.02, "aaaaaaa1", "2026-01-01T00:00:03Z"));
        let sel = select(&f, &recs);
        let s = series(&f, &sel);
        assert_eq!(points(&s[0]), vec![(16.0, 20.0), (128.0, 50.0)]);
        let t = table(&f, &s, &sel);
        assert!(t.contains("the highest for double at 128 walkers (commit aaaaaaa)."), "{t}");
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
        let got: Vec<(&str, Vec<(f64, f64)>)> = s.iter().map(|m| (m.attrs[0].1.as_str(), points(m))).collect();
        // the one-core run is not drawn
        assert_eq!(got, vec![("cpu", vec![(16.0, 0.02)]), ("gpu", vec![(16.0, 0.3)])]);
    }

    #[test]
    fn the_cpu_side_timed_on_fewer_walkers_is_stated() {
        let mut recs = [rec(Variant::Cpu, 1024, 1.0, None), rec(Variant::Gpu, 1024, 0.1, None)];
        recs[0].extra.insert("cpu_walkers_timed".into(), 32.0);
        let sel: Vec<&Record> = recs.iter().collect();
        let notes = record_notes(&sel);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("32 walkers timed") && notes[0].contains("1024 walkers"), "{notes:?}");
        let f = find("000-fig3-gpu-over-double-cpu").unwrap();
        assert!(table(&f, &[], &sel).contains("32 walkers timed"));
        assert!(chart(&f, &[], &sel).notes.iter().any(|n| n.contains("32 walkers timed")));
    }

    #[test]
    fn the_delayed_update_credits_luo_kim_and_kent_at_3072_electrons_per_spin() {
        let f = find("qmcpack-delayed-update").unwrap();
        assert!(f.paper.starts_with("Luo, Kim and Kent") && f.cite.contains("Luo"), "{}", f.paper);
        assert!(f.paper_points.iter().all(|p| p.x == 3072.0), "6144 electrons are 3072 per spin");
        let marks = paper_marks(&f);
        assert!(marks.iter().all(|m| m.label.starts_with("Luo, Kim, Kent 2025")), "{marks:?}");
    }

    #[test]
    fn scaling_efficiency_pairs_runs_with_their_one_rank_baseline() {
        fn close(s: &[Measured], want_attrs: &[(&str, &str)], want: [(f64, f64); 2]) {
            let m = s
                .iter()
                .find(|m| want_attrs.iter().all(|(k, v)| m.attrs.iter().any(|a| a.0 == *k && a.1 == *v)))
                .unwrap_or_else(|| panic!("no series {want_attrs:?} in {s:?}"));
            let got = points(m);
            assert!(got.len() == 2 && got.iter().zip(want).all(|(g, w)| g.0 == w.0 && (g.1 - w.1).abs() < 1e-12), "{want_attrs:?}: {got:?}");
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
        let sc = |scaling: &'static str, w: &'static str, tr: &'static str| [("scaling", scaling), ("walkers", w), ("transport", tr)];
        close(&s, &sc("strong", "200", "threads"), [(1.0, 1.0), (2.0, 0.8)]);
        close(&s, &sc("weak, per rank", "100", "threads"), [(1.0, 1.0), (2.0, 0.8)]);
        close(&s, &sc("strong", "200", "mpi"), [(1.0, 1.0), (2.0, 0.5)]);
        close(&s, &sc("weak, per rank", "100", "mpi"), [(1.0, 1.0), (2.0, 0.8)]);
        assert_eq!(s.len(), 4, "no series without a multi-rank point: {s:?}");
        // one case run alone twice (before and after the multi-rank run): their mean, not the later one
        let mut again = recs.clone();
        again.push(run(1, 100, 1.5, "solo"));
        let s = series(&f, &select(&f, &again));
        close(&s, &sc("weak, per rank", "100", "threads"), [(1.0, 1.0), (2.0, 1.0)]);
        // a later commit's runs pair with their own one-rank runs: its strong point replaces the earlier one, and
        // its 2-rank run of 200 walkers does not become a weak point against the earlier commit's 100-walker run
        let later = |mut r: Record| {
            r.commit = "later".into();
            r.timestamp = "2030-01-01T00:00:00Z".into();
            r
        };
        let mut recs = recs;
        recs.extend([later(run(1, 200, 1.0, "solo")), later(run(2, 200, 0.5, "threads"))]);
        let s = series(&f, &select(&f, &recs));
        close(&s, &sc("strong", "200", "threads"), [(1.0, 1.0), (2.0, 1.0)]);
        close(&s, &sc("weak, per rank", "100", "threads"), [(1.0, 1.0), (2.0, 0.8)]);
        // what migrating walkers carried: each its own series over the same one-rank run (which migrates nothing,
        // whatever its --migrate said)
        let cargo = |mut r: Record, m: &str| {
            r.commit = "cargo".into();
            r.params.insert("migrate".into(), m.into());
            r
        };
        let recs = vec![cargo(run(1, 200, 2.0, "solo"), "configuration"), cargo(run(2, 200, 1.25, "threads"), "configuration"), cargo(run(2, 200, 2.0, "threads"), "whole")];
        let s = series(&f, &select(&f, &recs));
        let strong = |m: &'static str| [("scaling", "strong"), ("walkers", "200"), ("migrate", m)];
        close(&s, &strong("configuration"), [(1.0, 1.0), (2.0, 0.8)]);
        close(&s, &strong("whole"), [(1.0, 1.0), (2.0, 0.5)]);
        assert_eq!(s.len(), 2, "{s:?}");
        // a case run more than once at one commit (gas-ranks-loaded runs each three times): the mean of its times,
        // as for one-rank runs; shares by speed: a series of its own over the same one-rank run
        let balance = |mut r: Record, b: Option<&str>| {
            r.commit = "balance".into();
            if let Some(b) = b {
                r.params.insert("balance".into(), b.into());
            }
            r
        };
        let recs = vec![balance(run(1, 100, 1.0, "mpi"), None), balance(run(2, 200, 1.0, "mpi"), None), balance(run(2, 200, 1.5, "mpi"), None), balance(run(2, 200, 1.1, "mpi"), Some("speed"))];
        let s = series(&f, &select(&f, &recs));
        let weak = |b: Option<&str>| {
            let m = s.iter().find(|m| m.attrs.iter().any(|a| a.1 == "weak, per rank") && m.attrs.iter().find(|a| a.0 == "balance").map(|a| a.1.as_str()) == b);
            points(m.unwrap_or_else(|| panic!("no weak series of balance {b:?} in {s:?}")))
        };
        assert!((weak(None)[1].1 - 0.8).abs() < 1e-12, "the mean of 1.0 and 1.5 s: {:?}", weak(None));
        assert!((weak(Some("speed"))[1].1 - 1.0 / 1.1).abs() < 1e-12, "{:?}", weak(Some("speed")));
        // lagged ranks (--sync lagged): a series of their own over the same one-rank run, and with --lag another
        let mut lagged = balance(run(2, 200, 1.25, "mpi"), None);
        lagged.params.insert("sync".into(), "lagged".into());
        let mut lag2 = lagged.clone();
        lag2.params.insert("lag".into(), "2".into());
        lag2.time.median = 1.1;
        // ranks that waited asleep: the comb every generation named "each, asleep", a lagged run "lagged, asleep"
        let mut asleep = balance(run(2, 200, 1.2, "mpi"), None);
        asleep.params.insert("mpi_wait".into(), "sleep".into());
        let mut lagged_asleep = lagged.clone();
        lagged_asleep.params.insert("mpi_wait".into(), "sleep".into());
        lagged_asleep.time.median = 1.05;
        let recs = vec![balance(run(1, 100, 1.0, "mpi"), None), balance(run(2, 200, 1.5, "mpi"), None), lagged, lag2, asleep, lagged_asleep];
        let s = series(&f, &select(&f, &recs));
        let sync = |y: Option<&str>| {
            let m = s.iter().find(|m| m.attrs.iter().any(|a| a.1 == "weak, per rank") && m.attrs.iter().find(|a| a.0 == "sync").map(|a| a.1.as_str()) == y);
            points(m.unwrap_or_else(|| panic!("no weak series of sync {y:?} in {s:?}")))
        };
        assert!((sync(None)[1].1 - 1.0 / 1.5).abs() < 1e-12, "{:?}", sync(None));
        assert!((sync(Some("lagged"))[1].1 - 0.8).abs() < 1e-12, "{:?}", sync(Some("lagged")));
        assert!((sync(Some("lagged, lag 2"))[1].1 - 1.0 / 1.1).abs() < 1e-12, "{:?}", sync(Some("lagged, lag 2")));
        assert!((sync(Some("each, asleep"))[1].1 - 1.0 / 1.2).abs() < 1e-12, "{:?}", sync(Some("each, asleep")));
        assert!((sync(Some("lagged, asleep"))[1].1 - 1.0 / 1.05).abs() < 1e-12, "{:?}", sync(Some("lagged, asleep")));
        // a run pairs with the one-rank run of its own host, not with a later one of the same commit on another
        let host = |mut r: Record, h: &str| {
            (r.commit, r.system.host) = ("hosts".into(), h.into());
            r
        };
        let recs = vec![host(run(1, 200, 2.0, "solo"), "a"), host(run(2, 200, 1.25, "threads"), "a"), host(later(run(1, 200, 1.0, "solo")), "b")];
        let s = series(&f, &select(&f, &recs));
        close(&s, &sc("strong", "200", "threads"), [(1.0, 1.0), (2.0, 0.8)]);
        // nor on another machine of the same host id (the GPU hosts' containers share one host name): the one-H200
        // host's 16 cores and the two-H200 host's 32 are two machines
        let cores = |mut r: Record, n: usize| {
            (r.commit, r.system.host, r.system.cpu_physical) = ("cores".into(), "same".into(), Some(n));
            r
        };
        let recs = vec![cores(run(1, 200, 2.0, "solo"), 32), cores(run(2, 200, 1.25, "threads"), 32), cores(later(run(1, 200, 1.0, "solo")), 16)];
        let s = series(&f, &select(&f, &recs));
        close(&s, &sc("strong", "200", "threads"), [(1.0, 1.0), (2.0, 0.8)]);
        // a series is one host's, its newest point's: the older host's 4-rank point does not sit beside the newer
        // host's 2-rank point (each over its own one-rank run, but the cores differ)
        let cpu = |mut r: Record, h: &str, model: &str| {
            r = host(r, h);
            r.system.cpu_signature = format!("GenuineIntel family 6 model {model} stepping 2");
            r
        };
        let recs = vec![
            cpu(run(1, 400, 4.0, "solo"), "a", "207"),
            cpu(run(4, 400, 1.25, "threads"), "a", "207"),
            cpu(later(run(1, 400, 2.0, "solo")), "b", "143"),
            cpu(later(run(2, 400, 1.25, "threads")), "b", "143"),
        ];
        let s = series(&f, &select(&f, &recs));
        close(&s, &sc("strong", "400", "threads"), [(1.0, 1.0), (2.0, 0.8)]);
    }

    #[test]
    fn select_takes_values_least_numbers_and_absence() {
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
    fn every_figure_selects_a_registered_kernel_and_reads_as_a_sentence() {
        let kernels: Vec<&str> = crate::registry::kernels().iter().map(|k| k.name).collect();
        for f in all() {
            assert!(kernels.contains(&f.kernel), "{} needs kernel {}", f.name, f.kernel);
            assert!(!f.runs.is_empty() && (!f.paper_points.is_empty() || !f.paper_ranges.is_empty() || !f.note.is_empty()), "{}", f.name);
            assert!(!f.reading.is_empty() && !f.reading.ends_with('.'), "{}: the reading is completed with what was measured", f.name);
        }
    }
}
