//! `qmc`: the VMC/DMC driver. Runs variational and diffusion Monte Carlo of He, H2, Be and the 3D electron gas
//! with walkers in parallel on all cores, and validates each run: He and H2 against the exact energies (VMC above
//! it, DMC of these nodeless ground states on it within 3 error bars plus a stated time-step-bias allowance); Be
//! DMC against the published fixed-node energy of Hartree-Fock nodes; the electron gas against its Hartree-Fock
//! energy (with the Jastrow off VMC must equal E_HF and the local kinetic energy must be the constant sum k^2/2 to
//! rounding; with it on VMC must lie below E_HF) and DMC below VMC everywhere.
//!
//! `--precision double,single,mixed` builds each system's components in that precision (`kernels::qmc` module
//! docs say exactly what runs in f32: mixed = the wavefunction in f32 with the Slater inverses recomputed in f64
//! every step and the local energy in f64; single = also the inversion and the per-walker local energy in f32;
//! accumulation over walkers and generations is f64 in all). Every check above applies in every precision, with
//! rounding allowances in units of the precision's epsilon where a check is exact in exact arithmetic; and single
//! and mixed are checked against double of the same system, method and time step: |E_p - E_double| <=
//! 3 sqrt(sigma_p^2 + sigma_double^2) (independent runs, each precision with its own seed). See `kernels::qmc` for
//! the algorithms.
//!
//! `--variants gpu` (or `cpu,gpu`; by default the gpu variant runs wherever a GPU is found) runs the same systems
//! with the walkers resident on GPU 0 (`kernels::qmc::gpu`: one thread per walker sweeps and measures its walker in
//! one launch per step; the electron gas's Ewald energy by the ewald kernel's GPU code), driven by the same VMC and
//! DMC code, with every check above (single and mixed against the gpu variant's own double). Before a system's GPU
//! runs, a trajectory check: 8 walkers make 5 VMC steps on CPU and GPU in double from one seed, and their local
//! energies must agree to 1e-9 relative (the GPU draws the CPU's random numbers); it is a check of every GPU record
//! of that system, and its line in the log names the first walker and step that diverged. The gpu variant runs one
//! rank without checkpoints. A GPU-filling run (atoms 16384 walkers, the gas 16384):
//!   qmc --variants gpu --system he,h2,be,heg-hf,heg --walkers 16384 --steps 4000 --equil 400 --tau 0.01
//!       --atom-walkers 16384 --atom-steps 2000 --gas-walkers 16384 --gas-steps 2000

use crate::common::KernelArgs;
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::timing::Stats;
use harness::{BytesModel, Case, Runner, Variant, Work};
use kernels::gpu::Gpu;
use kernels::qmc::comm::{Ranks, Solo};
use kernels::qmc::gpu::{trajectory_check, GpuWalkers, MAX_EWALD_WALKERS};
use kernels::qmc::dmc::{self, Checkpointing, DmcParams, Report};
use kernels::qmc::vmc::{self, Estimate, VmcParams};
use kernels::qmc::walker::Walker;
use kernels::qmc::gaussian::HfAtom;
use kernels::qmc::heg::HartreeFock;
use kernels::qmc::slater::Orbitals;
use kernels::qmc::systems::Setup;
use kernels::qmc::System;
use kernels::{Check, Precision};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// VMC and DMC energies of He, H2, Be and the electron gas, validated against exact, fixed-node and Hartree-Fock
/// energies, in double, single and mixed precision. Example, a DMC time-step series:
///   qmc --method dmc --system he --walkers 2048 --steps 4000 --tau 0.04,0.02,0.01
/// Across ranks (threads of this process, or MPI under mpirun with the `mpi` feature), with a checkpoint every
/// 500 generations that a later run continues from:
///   qmc --system he --tau 0.02 --ranks 4 --checkpoint he.ckpt --checkpoint-every 500
///   qmc --system he --tau 0.02 --ranks 4 --restart he.ckpt --checkpoint he.ckpt
///   mpirun -n 2 qmc --system he --tau 0.02     (built with: cargo build --release --features mpi)
/// On the GPU (walkers resident on the device; one rank, no checkpoints), filling it with walkers:
///   qmc --variants gpu --system he,be,heg --walkers 16384 --gas-walkers 16384 --tau 0.01
#[derive(clap::Parser, Debug, Clone)]
#[command(name = "qmc", version)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Methods to run, comma-separated: vmc, dmc (DMC starts from the VMC walkers).
    #[arg(long, value_delimiter = ',', default_value = "vmc,dmc")]
    pub method: Vec<Method>,
    /// Systems, comma-separated: he (He atom), h2 (H2 at R = 1.4 bohr), h (H atom, exact trial function), be (Be
    /// atom, PySCF HF orbitals and a Jastrow), be-hf (its bare HF determinant), heg (the 3D electron gas,
    /// Slater-Jastrow), heg-hf (the electron gas without the Jastrow: the Hartree-Fock check).
    #[arg(long, value_delimiter = ',', default_value = "he")]
    pub system: Vec<String>,
    /// Electrons of the electron gas: closed shells, 14, 38, 54, 66, 114, ...
    #[arg(long, default_value_t = 14)]
    pub electrons: usize,
    /// Density parameter r_s of the electron gas, bohr.
    #[arg(long, default_value_t = 1.0)]
    pub rs: f64,
    /// Walkers (VMC) and target population (DMC).
    #[arg(long, default_value_t = 1024)]
    pub walkers: usize,
    /// Walkers of the electron gas, whose steps cost O(N^2) more than an atom's (default: --walkers).
    #[arg(long)]
    pub gas_walkers: Option<usize>,
    /// Measured steps of the electron gas (default: --steps).
    #[arg(long)]
    pub gas_steps: Option<usize>,
    /// Walkers of first-row atoms (Be), whose core electrons need shorter DMC time steps (default: --walkers).
    #[arg(long)]
    pub atom_walkers: Option<usize>,
    /// Measured steps of first-row atoms (default: --steps).
    #[arg(long)]
    pub atom_steps: Option<usize>,
    /// Orbital file of be and be-hf, in the format of scripts/pyscf-orbitals.py (default: the committed
    /// kernels/src/qmc/data/be-hf.txt).
    #[arg(long)]
    pub orbitals: Option<std::path::PathBuf>,
    /// Measured steps (VMC) or generations (DMC) after equilibration.
    #[arg(long, default_value_t = 4000)]
    pub steps: usize,
    /// Steps discarded before measuring, in each method (DMC discards at least 10/Ha of imaginary time).
    #[arg(long, default_value_t = 400)]
    pub equil: usize,
    /// DMC time steps in 1/Ha, comma-separated for a time-step series.
    #[arg(long, value_delimiter = ',', default_value = "0.01")]
    pub tau: Vec<f64>,
    /// VMC time step of the drift-diffusion proposal.
    #[arg(long, default_value_t = 0.3)]
    pub vmc_tau: f64,
    /// Generations over which the trial-energy feedback pulls the population back to its target.
    #[arg(long, default_value_t = 10.0)]
    pub feedback: f64,
    /// Ranks as threads of this process, each propagating its share of the walkers (energies and populations summed
    /// over ranks every generation, walkers migrating after branching). Under mpirun (the `mpi` feature) the MPI
    /// ranks are used instead and this stays 1.
    #[arg(long, default_value_t = 1)]
    pub ranks: usize,
    /// Write the DMC state (walkers, accumulators, generation; the random streams follow from the seed and the
    /// generation) to this file every --checkpoint-every generations, atomically: a crash mid-write leaves the
    /// previous checkpoint whole. If the population dies out or explodes, the last good generation is written.
    /// One system and one --tau per run.
    #[arg(long, value_name = "FILE")]
    pub checkpoint: Option<PathBuf>,
    /// Generations between checkpoints.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub checkpoint_every: usize,
    /// Continue the DMC run saved in FILE (VMC is skipped): same system, --walkers, --seed, --tau, --feedback and
    /// --equil, as many or more --steps. With the same number of ranks the result is bit-identical to a run never
    /// stopped; with another number of ranks the walkers are re-spread and the chains continue statistically.
    #[arg(long, value_name = "FILE")]
    pub restart: Option<PathBuf>,
    /// Write the checkpoint and stop after this many DMC generations (equilibration included), e.g. to end a job
    /// before its time limit; continue with --restart.
    #[arg(long, value_name = "GEN", requires = "checkpoint")]
    pub stop_after: Option<usize>,
}

/// Monte Carlo method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    Vmc,
    Dmc,
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// Suite command lines, each in double, single and mixed precision (the common default), single and mixed
/// compared with double. Quick (about 10 s on 2 cores): He VMC and DMC with error bars of 1-2 mHa, and the
/// 14-electron gas at r_s = 1 without its Jastrow (the Hartree-Fock checks in every precision) with 16 walkers; the
/// Slater-Jastrow gas is left to the full suite, its DMC equilibration (10/Ha) being the costliest part. Full: He and
/// H2 with error bars below 1 mHa on 16 cores at tau = 0.01, Be (PySCF orbitals) with 1024 walkers and 1000
/// generations (its core electrons make a step cost about 20 He steps), and the gas with and without its Jastrow,
/// 256 walkers; three precisions make it three runs, hence one time step (the series: --tau 0.02,0.01,...).
pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &[
            "--system", "he,heg-hf", "--walkers", "512", "--steps", "1000", "--equil", "200", "--tau", "0.02",
            "--gas-walkers", "16", "--gas-steps", "192",
        ],
        Level::Full => &[
            "--system", "he,h2,be,heg-hf,heg", "--walkers", "4096", "--steps", "4000", "--equil", "400", "--tau", "0.01",
            "--atom-walkers", "1024", "--atom-steps", "1000", "--gas-walkers", "256", "--gas-steps", "1000",
        ],
        // not in the scoring workload (`crate::score` says why)
        Level::Score => &[],
    }
}

/// The DMC time-step bias allowed on top of 3 error bars, in Ha: BIAS_PER_TAU x tau (tau in 1/Ha). The bias of
/// fixed-node DMC is O(tau); measured with this driver (4096 walkers, 5000 generations, 2 cores):
///
/// | system | tau 0.04 | tau 0.02 | tau 0.01 | exact |
/// | --- | --- | --- | --- | --- |
/// | He | -2.90311(35) | -2.90314(41) | -2.90292(76) | -2.903724 |
/// | H2 | -1.17418(18) | -1.17393(37) | -1.17479(51) | -1.174475 |
///
/// so |bias| <= 0.6 mHa at tau = 0.04, a slope of at most 0.015 Ha^2. The allowance is three times that slope:
/// a correct driver passes at every tau it accepts, while the errors a driver can make (a Green's-function factor
/// left out, branching with tau instead of tau_eff, too short an equilibration: a 50-generation one was 22 mHa off)
/// show up as several mHa and fail.
pub const BIAS_PER_TAU: f64 = 0.05;
/// The time-step allowance of Be's fixed-node check, Ha per 1/Ha. Measured with this driver (be, 1024 walkers,
/// 8000/12000/16000 generations at tau 0.02/0.01/0.005, double precision, 2 cores):
///
/// | system | tau 0.02 | tau 0.01 | tau 0.005 | fixed-node (HF nodes) |
/// | --- | --- | --- | --- | --- |
/// | Be | -14.6679(57) | -14.6609(18) | -14.6591(12) | -14.6572(2) |
///
/// Every point lies below the fixed-node value: a weighted fit of E(tau) - E_FN = b tau gives b = -0.40(13) Ha^2
/// (larger than He's, for Z = 4 and orbitals without the nuclear cusp: E_L ~ -Z/r near the nucleus). The
/// allowance is that slope plus two standard errors, 0.66, rounded up: 7 mHa at tau = 0.01. At tau = 0.02 the
/// local-energy variance was 49 Ha^2 against 9 at the smaller steps (rare walkers near the nucleus), so runs that
/// must be tight use tau <= 0.01.
pub const BE_BIAS_PER_TAU: f64 = 0.7;
/// The GPU engine's trajectory check: walkers and VMC steps run on CPU and GPU in double from one seed, and the
/// largest relative difference of their local energies allowed (rounding differences of a few steps, far below any
/// divergence: a walker whose move is accepted on one side and rejected on the other differs at once by ~1e-2).
pub const TRAJECTORY_WALKERS: usize = 8;
pub const TRAJECTORY_STEPS: usize = 5;
pub const TRAJECTORY_TOLERANCE: f64 = 1e-9;
/// The largest DMC time step accepted: beyond it the linear bias model behind the allowance does not hold.
pub const MAX_TAU: f64 = 0.1;

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    if a.method.is_empty() {
        bail!("--method needs at least one of vmc, dmc");
    }
    let atom = a.orbitals.as_deref().map(load_orbitals).transpose()?;
    // every system in every precision, built before anything runs (a bad name or gas fails at once)
    let systems: Vec<Vec<System>> = a
        .system
        .iter()
        .map(|s| {
            r.precisions()
                .into_iter()
                .map(|precision| System::by_name_with(s, &Setup { electrons: a.electrons, rs: a.rs, precision, atom: atom.clone() }).map_err(anyhow::Error::msg))
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<_>>()?;
    positive("walkers", &[a.walkers, a.gas_walkers.unwrap_or(1), a.atom_walkers.unwrap_or(1)])?;
    positive("steps", &[a.steps])?;
    if let Some(s) = [a.steps, a.gas_steps.unwrap_or(a.steps), a.atom_steps.unwrap_or(a.steps)].into_iter().find(|s| *s < 64) {
        bail!("--steps {s} is too few for a blocking error bar: use at least 64");
    }
    if let Some(t) = a.tau.iter().chain([&a.vmc_tau]).find(|t| !(t.is_finite() && **t > 0.0)) {
        bail!("time steps must be positive, got {t}");
    }
    if let Some(t) = a.tau.iter().find(|t| **t > MAX_TAU) {
        bail!("--tau {t} is too large for DMC (at most {MAX_TAU} 1/Ha): the time-step bias would exceed the validation allowance");
    }
    if !(a.feedback.is_finite() && a.feedback >= 1.0) {
        bail!("--feedback must be at least 1 generation, got {}", a.feedback);
    }
    if let Some(w) = [a.walkers, a.gas_walkers.unwrap_or(0), a.atom_walkers.unwrap_or(0)].into_iter().find(|w| *w > 1 << 22) {
        bail!("--walkers {w} is more than this driver holds (4194304)");
    }
    let ranks = Ranks::choose(a.ranks).map_err(anyhow::Error::msg)?;
    if let Some(w) = [a.walkers, a.gas_walkers.unwrap_or(a.walkers), a.atom_walkers.unwrap_or(a.walkers)].into_iter().find(|w| *w < ranks.size()) {
        bail!("--walkers {w} is fewer than the {} ranks: every rank needs walkers", ranks.size());
    }
    if a.checkpoint.is_some() || a.restart.is_some() {
        if !a.method.contains(&Method::Dmc) || systems.len() > 1 || a.tau.len() > 1 || r.precisions().len() > 1 {
            bail!("--checkpoint and --restart save one DMC run: give --method dmc (or vmc,dmc), one --system, one --tau and one --precision");
        }
        if a.checkpoint_every == 0 {
            bail!("--checkpoint-every must be at least 1 generation");
        }
    }
    // The cpu and gpu variants (the harness has already refused --variants gpu without a GPU, and by default
    // skipped the gpu variant with one line); cpu-ref has no meaning here: the reference is the exact energy.
    let variants: Vec<Variant> = [Variant::Cpu, Variant::Gpu].into_iter().filter(|v| r.runs(*v)).collect();
    if variants.is_empty() {
        bail!("qmc runs the cpu and gpu variants (its reference is the exact energy; a one-core run is --threads 1): use --variants cpu or gpu");
    }
    if variants.contains(&Variant::Gpu) {
        if ranks.size() > 1 || a.checkpoint.is_some() || a.restart.is_some() {
            bail!("the gpu variant runs one rank without checkpoints: drop --ranks, --checkpoint and --restart, or use --variants cpu");
        }
        if let Some(w) = a.system.iter().any(|s| s.starts_with("heg")).then(|| a.gas_walkers.unwrap_or(a.walkers)).filter(|w| *w > MAX_EWALD_WALKERS / 2) {
            bail!("--gas-walkers {w} is more than the gpu variant holds for the electron gas (at most {}, room for DMC population swings)", MAX_EWALD_WALKERS / 2);
        }
    }
    let dmc_runs = if a.method.contains(&Method::Dmc) { a.tau.len() } else { 0 };
    r.plan(variants.len() * systems.len() * r.precisions().len() * (a.method.contains(&Method::Vmc) as usize + dmc_runs));
    // (system, op, tau, variant) -> the double-precision estimate, which single and mixed runs are compared with
    let mut double: HashMap<(String, &str, u64, Variant), Estimate> = HashMap::new();
    for (i, (name, in_precisions)) in a.system.iter().zip(&systems).enumerate() {
        for &variant in &variants {
            // the GPU engine's trajectory check, once per system before its GPU runs: in double, CPU and GPU walkers
            // from the same start and seed must give the same local energies step after step
            let trajectory = match (variant, r.gpu()) {
                (Variant::Gpu, Some(gpu)) => {
                    let double_sys = System::by_name_with(name, &Setup { electrons: a.electrons, rs: a.rs, precision: Precision::Double, atom: atom.clone() }).map_err(anyhow::Error::msg)?;
                    let (check, note) = trajectory_check(gpu, &double_sys, TRAJECTORY_WALKERS, TRAJECTORY_STEPS, r.seed(i as u64 + 1), TRAJECTORY_TOLERANCE)?;
                    r.say(&format!("  trajectory check {}: {note}", if check.passed() { "passed" } else { "FAILED" }));
                    Some(check)
                }
                _ => None,
            };
            for sys in in_precisions {
                // an independent seed per precision: the comparison with double treats the runs as independent
                let seed = r.seed(i as u64 + 1) + 7919 * sys.precision as u64;
                let a = &sized(a, sys);
                let mut compared = |op: &'static str, tau: f64, e: &Estimate, checks: &mut Vec<Check>| {
                    checks.extend(trajectory.clone());
                    let key = (name.clone(), op, tau.to_bits(), variant);
                    match (sys.precision, double.get(&key)) {
                        (Precision::Double, _) => {
                            double.insert(key, *e);
                        }
                        (_, Some(d)) => checks.push(equal_to_double(e, d)),
                        (_, None) => {}
                    }
                };
                // Core electrons of Z > 2 move on a shorter scale: a proposal of tau 0.3 is accepted 60% of the time for Be.
                let vmc_tau = if atom_z(sys) > 2.0 { a.vmc_tau.min(0.05) } else { a.vmc_tau };
                let vp = VmcParams { walkers: a.walkers, steps: a.steps, equil: a.equil, tau: vmc_tau, seed };
                let mut vmc_energy = None;
                // DMC starts from VMC walkers: the measured VMC run when asked for, else an equilibration-only one
                // (each rank's share; none needed when DMC restarts from a checkpoint)
                if variant == Variant::Gpu {
                    let gpu = r.gpu().expect("the gpu variant runs only with a GPU").clone();
                    let start = if a.method.contains(&Method::Vmc) {
                        r.step(format!("vmc {} {} gpu walkers={}", sys.name, sys.precision, a.walkers));
                        let t = Instant::now();
                        let (e, pop) = gpu_vmc(&gpu, sys, &vp)?;
                        let secs = t.elapsed().as_secs_f64();
                        let mut checks = sys.exact.map(|x| vec![variational(&e, x)]).unwrap_or_default();
                        checks.extend(hartree_fock_checks(sys, &e, &pop.kinetic()?));
                        compared("vmc", vmc_tau, &e, &mut checks);
                        record(r, a, sys, "vmc", vmc_tau, &e, secs, &checks, &ranks, None, variant)?;
                        vmc_energy = Some(e.energy);
                        pop
                    } else {
                        gpu_vmc(&gpu, sys, &VmcParams { steps: 2, ..vp })?.1
                    };
                    if a.method.contains(&Method::Dmc) {
                        let positions = start.positions()?;
                        drop(start);
                        for (k, &tau) in a.tau.iter().enumerate() {
                            r.step(format!("dmc {} {} gpu walkers={} tau={tau}", sys.name, sys.precision, a.walkers));
                            let dp = DmcParams { walkers: a.walkers, steps: a.steps, equil: a.equil, tau, seed: seed + k as u64, feedback: a.feedback };
                            let t = Instant::now();
                            let mut pop = GpuWalkers::new(&gpu, sys, &positions)?;
                            let report = dmc::run_with(sys, &dp, &Solo, &mut pop, None, None, &sys.name)?;
                            let secs = t.elapsed().as_secs_f64();
                            let e = report.estimate.expect("a run without stop_after finishes");
                            let mut checks = dmc_checks(sys, &e, tau, vmc_energy);
                            compared("dmc", tau, &e, &mut checks);
                            record(r, a, sys, "dmc", tau, &e, secs, &checks, &ranks, Some(&report), variant)?;
                        }
                    }
                    continue;
                }
                let walkers: Vec<Vec<Walker>> = if a.restart.is_some() {
                    eprintln!("note: qmc --restart continues DMC from the checkpoint; VMC is skipped");
                    vec![]
                } else if a.method.contains(&Method::Vmc) {
                    r.step(format!("vmc {} {} walkers={}", sys.name, sys.precision, a.walkers));
                    let t = Instant::now();
                    let (mut e, w): (Vec<Estimate>, Vec<Vec<Walker>>) = ranks.each(|c, _| vmc::run_on(sys, &vp, c)).into_iter().unzip();
                    let secs = t.elapsed().as_secs_f64();
                    let e = e.swap_remove(0);
                    let mut checks = sys.exact.map(|x| vec![variational(&e, x)]).unwrap_or_default();
                    let kinetic: Vec<f64> = w.iter().flatten().map(|w| w.kinetic(sys)).collect();
                    checks.extend(hartree_fock_checks(sys, &e, &kinetic));
                    compared("vmc", vmc_tau, &e, &mut checks);
                    if ranks.root() {
                        record(r, a, sys, "vmc", vmc_tau, &e, secs, &checks, &ranks, None, variant)?;
                    }
                    vmc_energy = Some(e.energy);
                    w
                } else {
                    ranks.each(|c, _| vmc::run_on(sys, &VmcParams { steps: 2, ..vp }, c).1)
                };
                if a.method.contains(&Method::Dmc) {
                    for (k, &tau) in a.tau.iter().enumerate() {
                        r.step(format!("dmc {} {} walkers={} tau={tau}", sys.name, sys.precision, a.walkers));
                        let dp = DmcParams { walkers: a.walkers, steps: a.steps, equil: a.equil, tau, seed: seed + k as u64, feedback: a.feedback };
                        let label = if sys.side.is_some() {
                            format!("{} {} electrons={} rs={}", sys.name, sys.precision, sys.n_electrons, a.rs)
                        } else {
                            format!("{} {}", sys.name, sys.precision)
                        };
                        let ckpt = a.checkpoint.clone().map(|path| Checkpointing { path, every: a.checkpoint_every, stop_after: a.stop_after });
                        let t = Instant::now();
                        let mut out = ranks.each(|c, slot| match &a.restart {
                            Some(path) => dmc::restart(sys, &dp, c, &label, path)
                                .and_then(|(acc, w)| dmc::run_on(sys, &dp, c, w, Some(acc), ckpt.as_ref(), &label)),
                            None => dmc::run_on(sys, &dp, c, walkers[slot].clone(), None, ckpt.as_ref(), &label),
                        });
                        let secs = t.elapsed().as_secs_f64();
                        let report = out.swap_remove(0)?;
                        let Some(e) = report.estimate else {
                            let path = a.checkpoint.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
                            r.say(&format!("  dmc {}: stopped after generation {} as asked; continue with --restart {path}", sys.name, report.generations));
                            continue;
                        };
                        let mut checks = dmc_checks(sys, &e, tau, vmc_energy);
                        compared("dmc", tau, &e, &mut checks);
                        if ranks.root() {
                            record(r, a, sys, "dmc", tau, &e, secs, &checks, &ranks, Some(&report), variant)?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// VMC on the GPU from the CPU's start positions; the engine holds the final walkers.
fn gpu_vmc(gpu: &Arc<Gpu>, sys: &System, vp: &VmcParams) -> Result<(Estimate, GpuWalkers)> {
    let mut pop = GpuWalkers::new(gpu, sys, &vmc::start_positions(sys, 0..vp.walkers, vp.seed))?;
    let e = vmc::run_with(sys, vp, &Solo, &mut pop, 0)?;
    Ok((e, pop))
}

/// The checks of a DMC energy: against the fixed-node or exact energy, and below the VMC energy when there is one.
fn dmc_checks(sys: &System, e: &Estimate, tau: f64, vmc_energy: Option<f64>) -> Vec<Check> {
    let mut checks: Vec<Check> = match (sys.fixed_node, sys.exact) {
        (Some(fixed_node), _) => vec![fixed_node_within(e, fixed_node, tau)],
        (None, Some(x)) => vec![exact_within(e, x, tau)],
        (None, None) => vec![],
    };
    if let Some(v) = vmc_energy {
        // DMC lowers the energy of a variational trial function (a small tolerance for noise)
        checks.push(Check { quantity: "dmc below vmc (Ha)".into(), error: (e.energy - v).max(0.0), tolerance: 3.0 * e.error, compared: 1 });
    }
    checks
}

/// The largest nuclear charge of an open system (0 for the electron gas).
fn atom_z(sys: &System) -> f64 {
    sys.nuclei.iter().map(|n| n.0).fold(0.0, f64::max)
}

/// The arguments with the walkers and steps of this system's kind: the electron gas's, a first-row atom's, or the
/// common ones.
fn sized(a: &Args, sys: &System) -> Args {
    let (walkers, steps) = if sys.side.is_some() {
        (a.gas_walkers, a.gas_steps)
    } else if atom_z(sys) > 2.0 {
        (a.atom_walkers, a.atom_steps)
    } else {
        (None, None)
    };
    Args { walkers: walkers.unwrap_or(a.walkers), steps: steps.unwrap_or(a.steps), ..a.clone() }
}

/// Read and parse `--orbitals`; the driver's be/be-hf wavefunction needs Be's two doubly occupied orbitals.
fn load_orbitals(path: &Path) -> Result<HfAtom> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read the orbital file {}: {e}", path.display()))?;
    let atom = HfAtom::parse(&text).map_err(|e| anyhow::anyhow!("the orbital file {} is malformed: {e}", path.display()))?;
    if atom.z != 4.0 || atom.orbitals.len() != 2 {
        bail!("the orbital file {} holds Z = {} with {} orbitals: be needs Z = 4 with 2 (1s and 2s)", path.display(), atom.z, atom.orbitals.len());
    }
    Ok(atom)
}

/// A single- or mixed-precision energy against the double-precision one of the same system, method and time step:
/// |E_p - E_double| <= 3 sqrt(sigma_p^2 + sigma_double^2), the two runs being independent (their own seeds).
fn equal_to_double(e: &Estimate, d: &Estimate) -> Check {
    let diff = (e.energy - d.energy).abs();
    Check { quantity: "vs double (Ha)".into(), error: if diff.is_finite() { diff } else { f64::INFINITY }, tolerance: 3.0 * e.error.hypot(d.error), compared: 1 }
}

/// The electron gas against its Hartree-Fock energy. Jastrow off: the local kinetic energy of every walker equals
/// sum k^2/2 to rounding (the determinant of plane waves is an eigenfunction of the kinetic energy), and E_VMC equals
/// E_HF within 3 error bars plus the Ewald truncation allowance. Jastrow on: E_VMC lies below E_HF by more than
/// 3 error bars (a Jastrow with the cusp lowers the energy by most of the correlation energy).
fn hartree_fock_checks(sys: &System, e: &Estimate, kinetic: &[f64]) -> Vec<Check> {
    let Some(hf) = sys.hf else { return vec![] };
    if sys.jastrow && sys.side.is_none() {
        // an atom: the two-body Padé alone gains ~25 mHa over E_HF (Be), so a short run asks only "not above E_HF"
        return vec![Check { quantity: "vmc not above hf (Ha)".into(), error: (e.energy - hf.energy).max(0.0), tolerance: 3.0 * e.error, compared: 1 }];
    }
    if sys.jastrow {
        return vec![Check { quantity: "vmc below hf (Ha)".into(), error: (e.energy + 3.0 * e.error - hf.energy).max(0.0), tolerance: 0.0, compared: 1 }];
    }
    if sys.side.is_none() {
        // an atom's bare HF determinant: E_VMC = E_HF exactly in expectation (same orbitals, same Hamiltonian)
        let d = (e.energy - hf.energy).abs();
        return vec![Check { quantity: "vmc vs hf (Ha)".into(), error: if d.is_finite() { d } else { f64::INFINITY }, tolerance: 3.0 * e.error + rounding(sys, hf), compared: 1 }];
    }
    // the spread over walkers, as an rms: "zero variance" to rounding. The largest single deviation grows with the
    // number of walkers (some stand near a node, where the Slater matrix is ill-conditioned: 3e-13 Ha in double
    // among 16384 walkers), so it is reported but not bounded
    let rms = (kinetic.iter().map(|k| (k - hf.kinetic).powi(2)).sum::<f64>() / kinetic.len().max(1) as f64).sqrt();
    let allowance = 10.0 * sys.n_electrons as f64 * kernels::qmc::heg::EWALD_ACCURACY + rounding(sys, hf);
    let d = (e.energy - hf.energy).abs();
    vec![
        Check { quantity: "kinetic - sum k^2/2, rms over walkers (Ha)".into(), error: if rms.is_finite() { rms } else { f64::INFINITY }, tolerance: kinetic_rounding(sys, hf), compared: kinetic.len() },
        Check { quantity: "vmc vs hf (Ha)".into(), error: if d.is_finite() { d } else { f64::INFINITY }, tolerance: 3.0 * e.error + allowance, compared: 1 },
    ]
}

/// The rounding allowance of E_VMC = E_HF in the run's precision: N eps (|T| + |V|). Every electron's share of the
/// local energy (its kinetic term, its pair and background terms) is formed with a relative error of a few eps, and
/// the sum over N electrons accumulates at most N such roundings (Higham's gamma_N bound for a recursive sum), on
/// parts of magnitude |T| and |V| = |E_HF - T|. The zero-mean part of the rounding noise is already in the error
/// bar; this bounds a systematic shift. In double it is ~1e-14 Ha; in single and mixed ~1e-5 Ha for 14 electrons.
fn rounding(sys: &System, hf: HartreeFock) -> f64 {
    sys.precision.eps() * sys.n_electrons as f64 * (hf.kinetic.abs() + (hf.energy - hf.kinetic).abs())
}

/// The rounding allowance of the constant kinetic energy of one walker, 2 N eps T_0. Electron i's term is a dot
/// product of length N/2 over the orbitals (lap phi_j(r_i) with column i of the inverse), rounded within
/// gamma_{N/2} of the sum of its magnitudes, and the N terms are then summed (gamma_N); for a well-conditioned Slater
/// matrix the magnitudes add up to about T_0, so the error is below (N/2 + N) eps T_0 < 2 N eps T_0. (Near a node
/// the conditioning grows, and among 16384 walkers some stand there: the largest deviation on an H100 was 3.1e-13 Ha
/// in double and 8.1e-5 in mixed, so the check bounds the rms over walkers.) Measured, 14 electrons, 24 walkers:
/// at most 5e-15 Ha in double, 1e-6 in mixed and 4e-6 in single, against 1e-13 and 5e-5.
fn kinetic_rounding(sys: &System, hf: HartreeFock) -> f64 {
    2.0 * sys.n_electrons as f64 * sys.precision.eps() * hf.kinetic.abs()
}

/// VMC is variational: E_VMC >= E_exact, to within 3 error bars.
fn variational(e: &Estimate, exact: f64) -> Check {
    Check { quantity: "vmc above exact (Ha)".into(), error: (exact - e.energy).max(0.0), tolerance: 3.0 * e.error, compared: 1 }
}

/// |E_DMC - E_exact| <= 3 sigma + BIAS_PER_TAU tau (NaN fails: the error becomes infinite).
fn exact_within(e: &Estimate, exact: f64, tau: f64) -> Check {
    let d = (e.energy - exact).abs();
    Check { quantity: "dmc vs exact (Ha)".into(), error: if d.is_finite() { d } else { f64::INFINITY }, tolerance: 3.0 * e.error + BIAS_PER_TAU * tau, compared: 1 }
}

/// DMC with the nodes of psi_T against the published fixed-node energy of the same nodes:
/// |E_DMC - E_FN| <= 3 sqrt(sigma^2 + sigma_FN^2) + BE_BIAS_PER_TAU tau.
fn fixed_node_within(e: &Estimate, (value, error): (f64, f64), tau: f64) -> Check {
    let d = (e.energy - value).abs();
    let tolerance = 3.0 * e.error.hypot(error) + BE_BIAS_PER_TAU * tau;
    Check { quantity: "dmc vs fixed-node (Ha)".into(), error: if d.is_finite() { d } else { f64::INFINITY }, tolerance, compared: 1 }
}

#[allow(clippy::too_many_arguments)]
fn record(r: &mut Runner, a: &Args, sys: &System, op: &str, tau: f64, e: &Estimate, secs: f64, checks: &[Check], ranks: &Ranks, dmc: Option<&Report>, variant: Variant) -> Result<()> {
    let n = sys.n_electrons as f64;
    let nuclei = sys.nuclei.len() as f64;
    let case = Case::new("qmc", op, sys.precision)
        .size("walkers", a.walkers)
        .size("steps", a.steps)
        .size("electrons", sys.n_electrons)
        .param("system", sys.name.as_str())
        .param("rs", if sys.side.is_some() { a.rs.to_string() } else { "-".into() })
        .param("tau", tau)
        .size("ranks", ranks.size())
        .param("transport", ranks.transport());
    // Per walker step: each electron move reads and writes its position and the walker's cached gradient; the
    // flops are a rough count of the Padé/Slater terms (about 40 per pair or electron-nucleus term, 60 for the
    // move itself), the same for the full evaluation at the end of the step.
    let work = Work {
        bytes: e.walker_steps as f64 * n * 4.0 * 24.0,
        model: BytesModel::Passes,
        flops: e.walker_steps as f64 * 2.0 * n * (60.0 + 40.0 * (n - 1.0) + 40.0 * nuclei),
        items: e.walker_steps as f64,
        unit: "walker steps/s",
    };
    r.record(&case, variant, Stats::from_samples(&[secs]), work, checks)?;
    if let Some(rec) = r.records.last_mut() {
        rec.reps = 1; // one run, timed whole: a QMC run is its own repetition
    }
    let exact = sys.exact.unwrap_or(f64::NAN);
    let hf = sys.hf.map_or(f64::NAN, |h| h.energy);
    for (k, v) in [
        ("energy", e.energy),
        ("error", e.error),
        ("variance", e.variance),
        ("acceptance", e.acceptance),
        ("population", e.population),
        ("tau_eff", e.tau_eff),
        ("block_size", e.blocked.block_size as f64),
        ("blocking_converged", e.blocked.converged as u8 as f64),
        ("time_per_step_s", secs / (a.equil + a.steps) as f64),
    ] {
        r.extra(k, v);
    }
    // references this system has (a NaN extra fails the record: what does not apply is left out)
    for (k, v) in [("exact", sys.exact), ("hf", sys.hf.map(|h| h.energy))] {
        if let Some(v) = v {
            r.extra(k, v);
        }
    }
    // DMC across ranks: per generation, the mean over ranks of the time in walker moves, in sums over ranks (with
    // the wait for the slowest rank) and in migration, and the walkers and bytes a rank moved: the inputs of the
    // projection to many GPUs. A restarted run counts only the generations it ran.
    if let Some(d) = dmc {
        let g = d.timing.generations.max(1) as f64;
        let t = &d.timing;
        for (k, v) in [
            ("compute_per_gen_s", t.compute_s / g),
            ("reduce_per_gen_s", t.reduce_s / g),
            ("migrate_per_gen_s", t.migrate_s / g),
            ("checkpoint_s", t.checkpoint_s),
            ("migrated_per_gen", t.migrated as f64 / g),
            ("migrated_bytes_per_gen", t.migrated_bytes as f64 / g),
            ("generations_run", g),
        ] {
            r.extra(k, v);
        }
    }
    r.say(&format!(
        "  {op} {} {variant:?}: E = {:.6} +- {:.6} Ha (exact {exact}, hf {hf:.6}), variance {:.4}, acceptance {:.3}, population {:.0}, tau_eff {:.4}",
        sys.name, e.energy, e.error, e.variance, e.acceptance, e.population, e.tau_eff
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels::qmc::blocking::blocking;

    fn estimate(energy: f64, error: f64) -> Estimate {
        let blocked = blocking(&[energy - error, energy + error]);
        Estimate { energy, error, blocked, variance: 0.1, acceptance: 0.99, tau_eff: 0.01, population: 100.0, walker_steps: 1 }
    }

    #[test]
    fn energy_checks_pass_right_answers_and_catch_wrong_ones() {
        let x = -2.903724377;
        // within 3 sigma + 0.05 tau: 0.5 mHa error bar, tau = 0.01 -> tolerance 2 mHa
        assert!(exact_within(&estimate(x + 0.0019, 0.0005), x, 0.01).passed());
        assert!(!exact_within(&estimate(x + 0.0025, 0.0005), x, 0.01).passed());
        assert!(!exact_within(&estimate(f64::NAN, 0.0005), x, 0.01).passed());
        // VMC below the exact energy by more than 3 sigma is wrong
        assert!(variational(&estimate(x + 0.03, 0.001), x).passed());
        assert!(variational(&estimate(x - 0.002, 0.001), x).passed());
        assert!(!variational(&estimate(x - 0.004, 0.001), x).passed());
    }

    #[test]
    fn gas_kinetic_check_bounds_the_rms_over_walkers() {
        let sys = System::electron_gas(14, 1.0, false).unwrap();
        let hf = sys.hf.unwrap();
        let e = estimate(hf.energy, 0.01);
        let kinetic_check = |k: &[f64]| hartree_fock_checks(&sys, &e, k).into_iter().find(|c| c.quantity.starts_with("kinetic")).unwrap();
        // one walker near a node, off by 3e-13 Ha among 16384 exact ones: zero variance to rounding
        let mut k = vec![hf.kinetic; 16384];
        k[7] += 3e-13;
        assert!(kinetic_check(&k).passed());
        // a wrong Laplacian moves every walker
        let wrong: Vec<f64> = k.iter().enumerate().map(|(i, x)| x + 1e-3 * (i % 3) as f64).collect();
        assert!(!kinetic_check(&wrong).passed());
        k[0] = f64::NAN;
        assert!(!kinetic_check(&k).passed());
    }

    #[test]
    fn precision_comparison_passes_agreement_and_catches_a_shift() {
        let d = estimate(-2.9035, 0.0003);
        // 3 sqrt(0.3^2 + 0.4^2) mHa = 1.5 mHa
        assert!(equal_to_double(&estimate(-2.9049, 0.0004), &d).passed());
        assert!(!equal_to_double(&estimate(-2.9051, 0.0004), &d).passed());
        assert!(!equal_to_double(&estimate(f64::NAN, 0.0004), &d).passed());
    }
}
