//! The kernels `qmcbench` knows. Adding a mini-app takes one line here (and its module and binary).

use crate::common::{parse, run_in, KernelArgs};
use harness::cli::main_with;
use harness::Runner;
use std::ffi::OsString;
use std::process::ExitCode;

/// Suite size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// About a minute for all kernels on a 2-core machine without a GPU.
    Quick,
    /// The sizes of the papers' figures (for a GPU host).
    Full,
    /// The fixed procurement workload (`crate::score`): GPU and all host cores, the precisions a user runs, sizes
    /// that fit a GPU of 40 GB.
    Score,
}

/// One mini-app as `qmcbench` sees it.
pub struct Kernel {
    pub name: &'static str,
    pub about: &'static str,
    /// The mini-app's whole program, given its command line (argv[0] first).
    pub main: fn(Vec<OsString>) -> ExitCode,
    /// Run it inside a shared runner with these flags of its own.
    pub run_in: fn(&mut Runner, &[&str]) -> anyhow::Result<()>,
    /// Its flags at each suite level.
    pub suite: fn(Level) -> &'static [&'static str],
    /// Check a command line of its flags without running anything (the suite presets are checked by tests).
    pub parses: fn(&[&str]) -> anyhow::Result<()>,
}

macro_rules! kernel {
    ($m:ident, $about:expr) => {
        Kernel {
            name: stringify!($m),
            about: $about,
            main: |argv| kernel_main(stringify!($m), argv, crate::$m::run),
            run_in: |r, argv| run_in(r, stringify!($m), argv, crate::$m::run),
            suite: crate::$m::suite,
            parses: |argv| parse::<crate::$m::Args>(stringify!($m), argv).map(drop),
        }
    };
}

/// All mini-apps, in suite order.
pub fn kernels() -> Vec<Kernel> {
    vec![
        kernel!(bspline, "3D B-spline orbitals (V, VGL, VGH) for a batch of walkers; CASINO blips as --basis blip"),
        kernel!(gemm, "Gaussian-basis orbitals: basis functions and the orbital GEMM in naive/Kahan single, double, mixed, faer/cuBLAS (paper 004)"),
        kernel!(jastrow, "Jastrow factors (B-spline, CASINO u and p, Padé): vgl, move ratios, accepts for a batch of walkers"),
        kernel!(lattice, "t-J model VMC, pair-function determinant, many Markov chains (LSU thesis, paper 001)"),
        kernel!(ewald, "Ewald sums (3D any lattice, 2D) of electron-gas and ion configurations: full energy and one-electron move"),
        kernel!(determinant, "Slater determinants: ratios, Sherman-Morrison and delayed (rank-k) updates, inversion, drift"),
        kernel!(pseudopotential, "Nonlocal pseudopotential energy (BFD carbon) by spherical quadrature: job list, batched determinant ratios (paper 000)"),
        kernel!(qmc, "VMC/DMC driver: He and H2 energies with blocking error bars, validated against exact values"),
        kernel!(solid, "Whole VMC/DMC steps of a synthetic carbon solid: orbitals, determinant, Jastrow, Ewald, pseudopotential, branching; time per class (paper 000 Figs. 3, 4)"),
    ]
}

/// The whole `main` of a mini-app: clap errors exit 2 with usage; run errors print one line and exit 2; a failed
/// validation exits 1.
pub fn kernel_main<A: KernelArgs>(name: &'static str, argv: Vec<OsString>, run: fn(&mut Runner, &A) -> anyhow::Result<()>) -> ExitCode {
    let args = A::parse_from(argv);
    main_with(|| {
        let mut runner = Runner::new(args.common())?;
        check_plant(&runner)?;
        runner.set_kernel(Some(name));
        run(&mut runner, &args)?;
        runner.finish()
    })
}

/// Find a kernel by name, with the list of names in the error.
pub fn find(name: &str) -> anyhow::Result<Kernel> {
    let all = kernels();
    let names: Vec<&str> = all.iter().map(|k| k.name).collect();
    all.into_iter().find(|k| k.name == name).ok_or_else(|| anyhow::anyhow!("unknown kernel '{name}': known kernels are {}", names.join(", ")))
}

/// A planted slowdown (`QMC_PLANT_SLOWDOWN=<kernel>:<factor>`) must name a kernel this suite has: a misspelt name
/// would plant nothing, and a self-test of the regression check would then fail for the wrong reason.
pub fn check_plant(runner: &Runner) -> anyhow::Result<()> {
    if let Some(k) = runner.plant().and_then(|p| p.kernel.as_deref()) {
        find(k).map_err(|e| anyhow::anyhow!("{}: {e}", harness::timing::PLANT_VAR))?;
    }
    Ok(())
}
