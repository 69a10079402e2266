//! `solid`: whole VMC/DMC steps of a synthetic carbon-like solid (paper 000, Figs. 3 and 4): every stage of a real
//! step (B-spline orbitals, determinant ratios and delayed (rank-k, `--delay`) or Sherman-Morrison updates, Jastrow,
//! Ewald, nonlocal pseudopotential, branching) for all walkers, on all CPU cores and on the GPU, with per-stage
//! timers. See `kernels::solid`.
//!
//! `--system gas` runs the 3D electron gas through the same engines instead (`kernels::solid::Solid::electron_gas`:
//! plane-wave orbitals, no ions and so no pseudopotential stage, Ewald with the neutralising background, the gas's
//! two-body Jastrow or with `--jastrow off` none), at closed-shell sizes and density `--rs`. Its records carry
//! params.system, params.rs and params.jastrow (carbon's records keep their keys), and the gas's exact checks
//! (`gas`): with the Jastrow off the kinetic energy of every walker is T_0 at every step, and in VMC the energy is
//! the Hartree-Fock energy within 4 error bars once the blocking analysis has converged (extras `e_vmc`,
//! `e_vmc_error`, `e_hf`, `hf_converged`); in DMC the engine's energy lies below the Hartree-Fock energy by more
//! than 4 error bars once its blocking analysis has converged (fixed-node DMC with the Hartree-Fock nodes is
//! variational; extras `e_dmc`, `e_dmc_error`, `e_dmc_samples`, `e_hf`, `dmc_converged`). With `--ranks` (or under
//! mpirun) the gas runs over ranks as carbon does (`ranks`), with the ranks' checks and timings.
//!
//! Beside each record it prints the floor of one walker step per kernel class (`kernels::solid::floor`: the class's
//! bytes at the copy bandwidth, its flops at the f64 GEMM rate, both measured in this process) and the measured time
//! of that class, and keeps the floors as extras (`floor_s_<class>`, `floor_s_step`, `gemm_gflops`). A class whose
//! data stays in cache (the determinant of a small cell) can run below its bytes floor: it counts memory traffic.
//!
//! Records: one per (electrons, walkers, precision, variant); throughput in walker steps/s, `electron_moves_per_s`
//! and the time fraction of each kernel class (`frac_orbitals`, ...) as extras (CPU: thread time per class over the
//! timed steps; GPU: CUDA events between classes in one extra step after the timed ones, which run without them). The CPU variant runs
//! `--cpu-walkers` walkers (default: two per thread) and its time is scaled to the case's walkers (its rate per
//! walker step does not depend on the walker count once every core is busy; `cpu_walkers_timed` says how many ran).
//!
//! Validation, every record: every walker's local energy and branching weight finite at every step
//! (`kernels::solid::finite::Finite`: a NaN weight would send every comb copy to walker 0), and a sample of the
//! walkers (the first, the last and two seeded others, the seed the case's: `kernels::check::sample`) against the
//! f64 reference from scratch (`kernels::solid::reference`) at the end of the timed steps: energies (kinetic,
//! Ewald, nonlocal, local) and inverse rows, each walker within the tolerances of its condition number
//! (`kernels::solid::conditioning`: double 1e-8; mixed between 2e-5 and the cap 1e-4), the record keeping the
//! worst error over its tolerance, the walkers it compared, and as extras the largest condition number `cond`
//! (1-norm, the worse spin) and the energy tolerance at it (`energy_tolerance`); `reinversions_per_step` is the
//! fraction of walkers re-inverted per step (GPU: `reinversion_ms_per_step`, the device time of those f64
//! re-inversions per step of all walkers, averaged over every step the engine ran, and `lu_fallbacks_per_step`,
//! the fraction of walkers per step whose refinement did not converge and went to the LU). The GPU record also
//! follows the CPU engine of the same precision from the same start for `--check-steps` steps with the same random
//! numbers, and holds every walker of both engines against the reference at its own configuration. Double:
//! identical acceptances, positions within 1e-4 bohr, and the two engines' local energies within 1e-8 where their
//! configurations agree to 1e-10 bohr. Rounding differences (ulps of the drift) grow along the trajectory with the
//! conditioning: at 2048 electrons (cond 1e5) the engines' positions were 5e-8 to 3e-6 bohr apart after two steps,
//! which moves the local energy by up to 5e-7 relative while each engine stays on the reference to 1.7e-13; such
//! walkers are held against the reference alone. Mixed: a Metropolis decision near its threshold may flip on f32
//! rounding and the walkers then part (and their energies with them), so the total accepted moves of the two
//! engines must agree within 5 binomial standard deviations (parted walkers accept like independent walks), and the
//! two engines' energies are compared where their configurations agree to 1e-6 bohr. The pair check records how
//! many walkers agreed; where none did (seen at 1024 and 1536 electrons in mixed, 2048 in double) it says so and
//! holds each engine against the reference at its own configuration instead, never passing on nothing compared.
//!
//! With `--ranks N` (or under mpirun): DMC over ranks, one per GPU, `--walkers` being the population over all
//! ranks; see `ranks` for what those records hold and check.

mod gas;
mod ranks;

use crate::common::KernelArgs;
use gas::{GasOutcome, GasTally};
use crate::registry::Level;
use anyhow::{bail, Result};
use harness::cli::{positive, CommonArgs};
use harness::{Case, Runner, Variant, Work};
use kernels::Scalar;
use kernels::ensemble::comm::Ranks;
use kernels::solid::cpu::CpuEngine;
use kernels::solid::gpu::GpuEngine;
use kernels::pseudopotential::Setup;
use kernels::solid::ranks::Engine;
use kernels::solid::validate::{self, RANDOM_WALKERS};
use kernels::solid::{self, conditioning, Class, Params, Solid, Timers};
use kernels::check::{self, worse};
use rayon::prelude::*;
use kernels::{Check, Precision, Real};

/// Whole VMC/DMC steps of a synthetic carbon solid (random B-spline orbitals, Slater-Jastrow, Ewald, BFD nonlocal
/// pseudopotential) or of the 3D electron gas (plane waves, Ewald, two-body Jastrow) on the same batched engines:
/// GPU speedup over all cores and time per kernel class. Examples: the carbon solid of 512 electrons, 128 walkers;
/// the 162-electron gas without the Jastrow, whose VMC energy must be the Hartree-Fock energy:
///   solid --electrons 512 --walkers 128 --precision double,mixed
///   solid --system gas --electrons 162 --jastrow off --method vmc --walkers 512 --tau 0.1 --steps 400
#[derive(clap::Parser, Debug)]
#[command(name = "solid", version, verbatim_doc_comment)]
pub struct Args {
    #[command(flatten)]
    pub common: CommonArgs,
    /// The system: carbon (the synthetic carbon-like solid of paper 000: random B-spline orbitals, BFD nonlocal
    /// pseudopotential, ions of charge 4, two- and one-body Jastrow) or gas (the 3D homogeneous electron gas:
    /// plane-wave orbitals of closed shells, no ions, Ewald with a neutralising background, the two-body Jastrow of
    /// the qmc driver's gas). The gas's energies are exact checks: with --jastrow off every walker's kinetic energy is
    /// T_0 at every step, and VMC returns the Hartree-Fock energy (checked within 4 error bars once the error bar
    /// has converged: give VMC a few thousand steps, e.g. --steps 400 --max-reps 4, and a larger --tau such as 0.1,
    /// which VMC's energy does not depend on); DMC's energy, fixed-node with the Hartree-Fock nodes, lies below the
    /// Hartree-Fock energy (checked by more than 4 error bars once the error bar has converged: DMC needs a few
    /// thousand steps too, e.g. --tau 0.05 --steps 500 --max-reps 6, the first tenth being equilibration). The
    /// records carry the energies as extras (e_vmc or e_dmc, with their error bars, and e_hf).
    #[arg(long, default_value = "carbon", value_parser = ["carbon", "gas"])]
    pub system: String,
    /// Density parameter r_s of the gas in bohr (the cube holds N 4/3 pi r_s^3); gas only, default 1.0: the qmc
    /// driver's gas, so the two drivers' records of one size compare (r_s changes the energies and the acceptance,
    /// hardly the cost).
    #[arg(long)]
    pub rs: Option<f64>,
    /// The gas's Jastrow factor: on (Slater-Jastrow, the default) or off (the bare plane-wave determinant: the
    /// Hartree-Fock checks). Gas only.
    #[arg(long, value_parser = ["on", "off"])]
    pub jastrow: Option<String>,
    /// Electrons, comma-separated (default: 128 for carbon, 54 for the gas). Carbon: 4 per atom, multiples of 32
    /// (8-atom diamond cells), at most 4096. Gas: closed shells, 2, 14, 38, 54, 66, 114, 162, 186, 246, 294, 342, ...
    /// (both spins fill the same shells of plane waves), at most 4096. What fits a GPU, from the engine's
    /// allocations (slab of positions, inverse and gradient rows; f64 re-inversion buffers; delayed moves) per
    /// walker in double (mixed): about 100 MB (67 MB) at 2048 electrons, 230 MB (155 MB) at 3072, 410 MB (270 MB)
    /// at 4096, beside (carbon) a B-spline table of 1.0 GB (0.5) / 2.0 GB (1.0) / 3.6 GB (1.8): an 80 GB H100 holds
    /// about 750 / 330 / 185 carbon walkers in double, 1100 / 480 / 280 in mixed. A run that does not fit says so
    /// before it allocates.
    #[arg(long, value_delimiter = ',')]
    pub electrons: Vec<usize>,
    /// Walkers (per GPU; with --ranks, over all ranks), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "32")]
    pub walkers: Vec<usize>,
    /// Walkers the CPU variant runs (0: two per thread, at most the case's walkers).
    #[arg(long, default_value_t = 0)]
    pub cpu_walkers: usize,
    /// Steps per timed repetition (each step: one sweep of every electron, the measurement, DMC branching); 0: one
    /// whole re-inversion cycle, --recompute steps, so that the time holds the f64 re-inversions in their proportion
    /// (a walker re-inverts every --recompute steps, an ill-conditioned one in mixed precision every few).
    #[arg(long, default_value_t = 0)]
    pub steps: usize,
    /// Timed repetitions at most (the harness' --reps caps it too).
    #[arg(long, default_value_t = 3)]
    pub max_reps: usize,
    /// vmc or dmc.
    #[arg(long, default_value = "dmc", value_parser = ["vmc", "dmc"])]
    pub method: String,
    /// Time step (1/Ha).
    #[arg(long, default_value_t = 0.02)]
    pub tau: f64,
    /// Re-invert the Slater matrices in f64 every this many steps (0: never).
    #[arg(long, default_value_t = 8)]
    pub recompute: usize,
    /// Rank k of the delayed (Woodbury) inverse updates: the accepted moves of each k consecutive electrons of a spin
    /// reach the inverse together, as three matrix products; 1: Sherman-Morrison after every accepted move (the
    /// rank-1 path); 0: by size (the power of 2 nearest sqrt(electrons): 16 at 384 electrons, 32 at 768 and 1536,
    /// 64 at 3072; in single precision 1: an f32 apply's rounding errors grow about 17 times faster than rank-1
    /// updates', which loses the gas's zero-variance kinetic energy at 162 electrons; mixed applies in f64). At most
    /// 64. Recorded as params.delay.
    #[arg(long, default_value_t = 0)]
    pub delay: usize,
    /// Steps the GPU engine is followed step by step against the CPU engine (same start, same random numbers).
    #[arg(long, default_value_t = 2)]
    pub check_steps: usize,
    /// Walkers in that check.
    #[arg(long, default_value_t = 4)]
    pub check_walkers: usize,
    /// DMC over this many ranks (threads of this process: one per GPU with the gpu variant, one per core group
    /// with the cpu variant), --walkers being the population over all ranks; population control over all ranks
    /// with walker migration. Under mpirun (the `mpi` feature) the MPI ranks are used and this stays unset.
    /// Records carry sizes.ranks and params.transport (see `ranks`).
    #[arg(long)]
    pub ranks: Option<usize>,
    /// With ranks: what a walker migrating between ranks carries. configuration: positions, rotations and
    /// energies (14 KB at 512 electrons), the receiving rank rebuilding the inverse and gradient rows of all its
    /// arrivals in one batched pass (an f64 re-inversion); inverse: the inverse rows too (0.5 MB at 512 electrons
    /// in mixed, 1 MB in double), only the gradient rows rebuilt (the default: the fastest on two H200s); whole: the
    /// full state, gradient rows too (2 MB in mixed, 4 MB in double), nothing rebuilt. Recorded as params.migrate.
    #[arg(long, default_value = "inverse", value_parser = clap::value_parser!(kernels::solid::ranks::Cargo))]
    pub migrate: kernels::solid::ranks::Cargo,
    /// With threads ranks and the gpu variant: how a migrating walker's arrays travel. host: device to host, a
    /// message, host to device (the default, the only path of MPI ranks; on the 2 x H200 host neither won);
    /// device: staged on the sending GPU and copied GPU to GPU by the receiver (direct where the GPUs have peer
    /// access: the record's extra peer_access). MPI ranks and the cpu variant always go through the host.
    /// Recorded as params.migrate_via (what was used).
    #[arg(long, default_value = "host", value_parser = clap::value_parser!(kernels::solid::ranks::Via))]
    pub migrate_via: kernels::solid::ranks::Via,
    /// With ranks: how the walkers are spread over ranks after each generation's comb. equal: every rank its equal
    /// share (the engines keep their sizes; a run is reproducible bit for bit); speed: shares in proportion to each
    /// rank's measured speed (compute seconds per walker, smoothed over about 8 generations), so a rank on a slower
    /// core holds fewer walkers and the others wait less for it (runs then agree statistically, not bit for bit).
    /// speed needs the cpu variant: the GPU engine's walker slots are fixed. Recorded as params.balance = speed.
    #[arg(long, value_enum, default_value = "equal")]
    pub balance: crate::common::Shares,
    /// With ranks: how the ranks meet each generation. each: one comb over all ranks' walkers every generation, each
    /// rank waiting in the generation's sum for the slowest; lagged: each rank combs its own walkers to its share and
    /// its walkers carry the rank's weight, the generation's sum is finished one generation later while the rank
    /// computes, and the comb over all ranks (with migration) comes only when the ranks' weights spread by more than
    /// 1.2, so a rank waits only for one a whole generation behind (ranks that do not wait; the trial energy a
    /// generation older). With --balance speed the shares move at those combs, and a comb comes too when the measured
    /// speeds move a rank's share by more than 5%. Recorded as params.sync = lagged, with the extra rebalances_per_gen.
    #[arg(long, value_enum, default_value = "each")]
    pub sync: crate::common::Sync,
    /// With --sync lagged: generations a rank's sum stays in flight (default 1). With 2 or more a rank waits only for
    /// one that many generations behind, riding out a slow spell of a few generations on another core; the trial
    /// energy is older by as many. Recorded as params.lag where not 1.
    #[arg(long)]
    pub lag: Option<usize>,
    /// With --sync lagged: the largest over the smallest rank weight at which a generation combs over all ranks
    /// (default 1.2; more: fewer of those blocking generations, at a cost in statistical weight of about
    /// var(f) / mean(f)^2 of the rank weights f). Recorded as params.spread where not 1.2.
    #[arg(long)]
    pub spread: Option<f64>,
}

impl KernelArgs for Args {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

pub fn suite(level: Level) -> &'static [&'static str] {
    match level {
        Level::Quick => &["--electrons", "64", "--walkers", "4", "--cpu-walkers", "4", "--check-steps", "1", "--check-walkers", "2"],
        Level::Full => &["--electrons", "128,256,512,1024", "--walkers", "32,128,512,1024", "--steps", "1", "--max-reps", "2"],
        Level::Score => &["--electrons", "512", "--walkers", "512", "--steps", "1", "--max-reps", "3", "--precision", "double,mixed"],
    }
}

const MAX_ELECTRONS: usize = 4096;
/// Walker state the host start and the GPU hold at most (1024 walkers of 1024 electrons: 17 GB; 330 of 3072: 50 GB):
/// the largest GPU's memory; the engine checks its own device before allocating.
const MAX_STATE_BYTES: f64 = 144e9;

/// Bytes of the inverse and gradient rows of `walkers` walkers of `electrons` electrons in double.
fn state_bytes(electrons: usize, walkers: usize) -> f64 {
    (walkers * electrons * kernels::bspline::stride_for(electrons / 2) * 4 * 8) as f64
}
const MAX_WALKERS: usize = 4096;

/// The checks of one engine's record (module docs), with the conditioning they saw.
pub(crate) struct Validated {
    pub checks: Vec<Check>,
    pub cond: f64,
    pub energy_tolerance: f64,
}

impl Validated {
    /// Every walker's energies and weights finite at every step so far, and the first, the last and
    /// `RANDOM_WALKERS` walkers drawn with `seed` against the reference.
    pub(crate) fn of<S: Real>(sys: &Solid, e: &mut dyn Engine<S>, p: Precision, recompute: usize, seed: u64) -> Result<Validated> {
        let n = e.count();
        let which = check::sample(n, RANDOM_WALKERS, seed);
        let s = validate::sampled(sys, e, &which, p.eps(), recompute)?;
        let list: Vec<String> = which.iter().map(|k| k.to_string()).collect();
        let mut checks = s.checks(&format!("walkers {} of {n}", list.join(", "))).to_vec();
        checks.push(e.finite().check());
        Ok(Validated { checks, cond: s.cond, energy_tolerance: s.energy_tolerance })
    }

    /// The condition number and the energy tolerance as extras of the last record.
    fn extras(&self, r: &mut Runner) {
        r.extra("cond", self.cond);
        r.extra("energy_tolerance", self.energy_tolerance);
    }
}

pub fn run(r: &mut Runner, a: &Args) -> Result<()> {
    let electrons = a.electrons();
    positive("electrons", &electrons)?;
    positive("walkers", &a.walkers)?;
    positive("max-reps", &[a.max_reps])?;
    positive("check-walkers", &[a.check_walkers])?;
    if a.check_steps == 0 {
        bail!("--check-steps must be at least 1: every record rests on the GPU engine followed step by step against the CPU engine, and a check of nothing fails");
    }
    if a.gas() {
        if let Some(&n) = electrons.iter().find(|&&n| kernels::planewave::occupied(n / 2).is_err() || n % 2 != 0) {
            bail!("--electrons {n} is not a closed shell of the electron gas: use one of {}", kernels::planewave::closed_shell_list(n));
        }
        if let Some(rs) = a.rs.filter(|rs| !(rs.is_finite() && *rs > 0.0)) {
            bail!("--rs {rs} must be a positive number of bohr");
        }
    } else {
        for (flag, given) in [("--rs", a.rs.is_some()), ("--jastrow", a.jastrow.is_some())] {
            if given {
                bail!("{flag} applies to --system gas only (the carbon solid's density and Jastrow are fixed)");
            }
        }
        if let Some(n) = electrons.iter().find(|&&n| n % 32 != 0) {
            bail!("--electrons {n} is not a multiple of 32 (4 electrons per atom, 8-atom diamond cells)");
        }
    }
    if let Some(n) = electrons.iter().find(|&&n| n > MAX_ELECTRONS) {
        bail!("--electrons {n} is more than {MAX_ELECTRONS}");
    }
    if let Some(w) = a.walkers.iter().chain([&a.check_walkers, &a.cpu_walkers]).find(|&&w| w > MAX_WALKERS) {
        bail!("--walkers {w} is more than {MAX_WALKERS}");
    }
    let max_w = *a.walkers.iter().max().unwrap();
    if let Some(&ne) = electrons.iter().find(|&&ne| state_bytes(ne, max_w) > MAX_STATE_BYTES) {
        bail!("{max_w} walkers of {ne} electrons need {:.0} GB of walker state (inverses and gradient rows, in double) on the host and the GPU: at most {:.0} GB", state_bytes(ne, max_w) / 1e9, MAX_STATE_BYTES / 1e9);
    }
    if a.delay > kernels::determinant::MAX_DELAY {
        bail!("--delay {} is more than {}", a.delay, kernels::determinant::MAX_DELAY);
    }
    if !(a.tau > 0.0 && a.tau <= 1.0) {
        bail!("--tau {} must be in (0, 1]", a.tau);
    }
    if a.sync != crate::common::Sync::Lagged && (a.lag.is_some() || a.spread.is_some()) {
        bail!("--lag and --spread tune lagged ranks: add --ranks and --sync lagged");
    }
    if a.lag == Some(0) {
        bail!("--lag 0 would finish a sum before it is started: use 1 or more generations");
    }
    if let Some(x) = a.spread.filter(|x| !(*x > 1.0 && x.is_finite())) {
        bail!("--spread {x} is not a ratio above 1: the largest rank weight over the smallest, e.g. 1.2");
    }
    let precisions: Vec<Precision> = r.precisions();
    let ranks = Ranks::choose(a.ranks.unwrap_or(1)).map_err(anyhow::Error::msg)?;
    if a.ranks.is_some() || ranks.transport() == "mpi" {
        return ranks::run(r, a, &ranks, &precisions);
    }
    let variants = [Variant::Cpu, Variant::Gpu].into_iter().filter(|v| r.runs(*v)).count();
    r.plan(electrons.len() * a.walkers.len() * precisions.len() * variants);
    let mut gemm = GemmRates::default();
    for (i, &ne) in electrons.iter().enumerate() {
        let sys = a.system(r, ne, i)?;
        for &p in &precisions {
            let params = Params { tau: a.tau, dmc: a.method == "dmc", recompute: a.recompute, seed: r.seed(100 + i as u64), first: 0, delay: delay(a, ne, p) };
            kernels::by_precision!(p => sizes(r, a, &sys, params, &mut gemm))?;
        }
    }
    Ok(())
}

impl Args {
    pub(crate) fn gas(&self) -> bool {
        self.system == "gas"
    }

    /// --electrons, or the system's default.
    pub(crate) fn electrons(&self) -> Vec<usize> {
        match (self.electrons.is_empty(), self.gas()) {
            (false, _) => self.electrons.clone(),
            (true, false) => vec![128],
            (true, true) => vec![54],
        }
    }

    /// The gas's r_s (default 1.0) and whether its Jastrow is on (default on).
    fn gas_params(&self) -> (f64, bool) {
        (self.rs.unwrap_or(1.0), self.jastrow.as_deref() != Some("off"))
    }

    /// The system of the `i`-th electron count `ne`: the carbon solid of ne / 4 atoms (seeded by the case) or the gas.
    fn system(&self, r: &mut Runner, ne: usize, i: usize) -> Result<Solid> {
        if self.gas() {
            let (rs, jastrow) = self.gas_params();
            r.step(format!("building the {ne}-electron gas (r_s = {rs}, Jastrow {})", if jastrow { "on" } else { "off" }));
            Solid::electron_gas(ne, rs, jastrow).map_err(anyhow::Error::msg)
        } else {
            r.step(format!("building the {}-atom solid", ne / 4));
            Solid::carbon(ne / 4, r.seed(i as u64 + 1)).map_err(anyhow::Error::msg)
        }
    }

    /// The record's case: carbon's keys as they always were; the gas adds its system, r_s and Jastrow.
    fn case(&self, p: Precision, ne: usize, w: usize, steps: usize, delay: usize) -> Case {
        let c = Case::new("solid", &self.method, p).size("electrons", ne).size("walkers", w).param("tau", self.tau).param("steps", steps).param("delay", delay);
        if !self.gas() {
            return c;
        }
        let (rs, jastrow) = self.gas_params();
        c.param("system", "gas").param("rs", rs).param("jastrow", if jastrow { "on" } else { "off" })
    }

    /// Steps per timed repetition: --steps, or with 0 one whole re-inversion cycle.
    pub(crate) fn timed_steps(&self) -> usize {
        if self.steps == 0 {
            self.recompute.max(1)
        } else {
            self.steps
        }
    }
}

/// The delay of the inverse updates at `ne` electrons in precision `p`: --delay, or `solid::default_delay`.
pub(crate) fn delay(a: &Args, ne: usize, p: Precision) -> usize {
    if a.delay == 0 {
        solid::default_delay(ne / 2, p)
    } else {
        a.delay
    }
}

/// Every walker count of one system in one precision: storage S, arithmetic A.
fn sizes<S: Scalar, A: Scalar>(r: &mut Runner, a: &Args, sys: &Solid, params: Params, gemm: &mut GemmRates) -> Result<()> {
    let p = Precision::of::<S, A>();
    let (ne, steps) = (sys.electrons(), a.timed_steps());
    let case = |w: usize| a.case(p, ne, w, steps, params.delay);
    if r.runs(Variant::Cpu) {
        let max_w = *a.walkers.iter().max().unwrap();
        let cw = if a.cpu_walkers > 0 { a.cpu_walkers } else { 2 * rayon::current_num_threads() }.min(max_w);
        r.step(format!("solid cpu {p} electrons={ne} walkers={cw}"));
        let mut e = CpuEngine::<S, A>::new(sys, cw, params)?;
        e.ctx.profile = true;
        let mut tally = GasTally::new(sys, p, &params);
        let t = r.time_reps(Variant::Cpu, a.max_reps, || -> Result<()> {
            for _ in 0..steps {
                e.step()?;
                if let Some(g) = &mut tally {
                    g.add(&e.parts, &e.cond);
                }
            }
            Ok(())
        })?;
        let mut v = Validated::of(sys, &mut e, p, params.recompute, params.seed)?;
        let gas = tally.map(|g| g.outcome(e.dmc().map(|d| &d.acc), e.vmc()));
        if let Some(g) = &gas {
            v.checks.extend(g.checks.iter().cloned());
            if let Some(note) = &g.note {
                r.say(&format!("solid cpu {p} electrons={ne}: {note}"));
            }
        }
        let acc = e.moves.acceptance();
        let reinverted = e.reinversions as f64 / (cw * e.steps) as f64;
        for &w in &a.walkers {
            // time of the case's walkers at the measured rate per walker step
            let f = w as f64 / cw as f64;
            let t = t.scaled(f);
            r.record(&case(w), Variant::Cpu, t, work(sys, &params, S::BYTES, w, steps, acc), &v.checks)?;
            extras(r, &e.timers, ne, w * steps, t.median, acc);
            if !r.args.no_ceilings {
                let rate = gemm.of(r, Variant::Cpu)?;
                floors(r, Variant::Cpu, sys, &params, S::BYTES, &e.timers, t.median / (w * steps) as f64, acc, rate)?;
            }
            r.extra("cpu_walkers_timed", cw as f64);
            v.extras(r);
            r.extra("reinversions_per_step", reinverted);
            gas_extras(r, &gas);
        }
    }
    if r.runs(Variant::Gpu) {
        let Some(gpu) = r.gpu().cloned() else { return Ok(()) };
        let setup: Setup<S> = sys.setup.convert();
        r.step(format!("solid gpu {p} electrons={ne}: trajectory check"));
        let traj = trajectory_checks::<S, A>(&gpu, sys, &setup, params, a)?;
        r.say(&format!("solid gpu {p} electrons={ne}: trajectory check {}", traj.iter().map(|c| format!("{} {:.2e}/{:.0e}", c.quantity, c.error, c.tolerance)).collect::<Vec<_>>().join(", ")));
        for &w in &a.walkers {
            r.step(format!("solid gpu {p} electrons={ne} walkers={w}"));
            let mut g = GpuEngine::<S, A>::new(&gpu, sys, &setup, w, params)?;
            let mut tally = GasTally::new(sys, p, &params);
            let t = r.time_reps(Variant::Gpu, a.max_reps, || -> Result<()> {
                for _ in 0..steps {
                    g.step()?;
                    if let Some(t) = &mut tally {
                        t.add(&g.parts, &g.cond);
                    }
                }
                Ok(())
            })?;
            // one more step with CUDA events between the classes, for the fractions
            g.profile = true;
            g.step()?;
            if let Some(t) = &mut tally {
                t.add(&g.parts, &g.cond);
            }
            let mut v = Validated::of(sys, &mut g, p, params.recompute, params.seed)?;
            v.checks.extend(traj.iter().cloned());
            let gas = tally.map(|t| t.outcome(g.dmc().map(|d| &d.acc), g.vmc()));
            if let Some(o) = &gas {
                v.checks.extend(o.checks.iter().cloned());
                if let Some(note) = &o.note {
                    r.say(&format!("solid gpu {p} electrons={ne} walkers={w}: {note}"));
                }
            }
            let acc = g.moves.acceptance();
            r.record(&case(w), Variant::Gpu, t, work(sys, &params, S::BYTES, w, steps, acc), &v.checks)?;
            extras(r, &g.timers, ne, w * steps, t.median, acc);
            if !r.args.no_ceilings {
                let rate = gemm.of(r, Variant::Gpu)?;
                floors(r, Variant::Gpu, sys, &params, S::BYTES, &g.timers, t.median / (w * steps) as f64, acc, rate)?;
            }
            let bytes = g.traffic();
            r.extra("host_bytes_per_step", bytes.total() as f64 / g.steps as f64);
            r.extra("to_host_bytes_per_step", bytes.to_host as f64 / g.steps as f64);
            v.extras(r);
            r.extra("reinversions_per_step", g.reinversions as f64 / (w * g.steps) as f64);
            r.extra("reinversion_ms_per_step", 1e3 * g.reinversion_s / g.steps as f64);
            r.extra("lu_fallbacks_per_step", g.lu_fallbacks as f64 / (w * g.steps) as f64);
            gas_extras(r, &gas);
        }
    }
    Ok(())
}

/// The gas's extras (E_VMC, its error bar, E_HF, ...) on the last record.
fn gas_extras(r: &mut Runner, gas: &Option<GasOutcome>) {
    for (name, value) in gas.iter().flat_map(|g| g.extras.iter()) {
        r.extra(name, *value);
    }
}

/// A walker's energy by part, for the logs of failed checks.
fn show_parts(x: &solid::Parts) -> String {
    format!("kinetic {:.12e} coulomb {:.12e} nonlocal {:.12e}", x.kinetic, x.coulomb, x.nonlocal)
}

/// The walker at the start of the arrays (positions, rotations, inverse rows) against the reference.
fn compare_walker<S: Real>(sys: &Solid, pos: &[f64], rot: &[f64], parts: solid::Parts, inv: &[S]) -> Result<solid::Comparison> {
    let (ne, ni, st) = (sys.electrons(), sys.setup.ion_count(), sys.setup.table.stride);
    let rows: Vec<f64> = inv[..ne * st].iter().map(|x| x.f64()).collect();
    solid::compare(sys, &pos[..3 * ne], &rot[..9 * ni], parts, &rows).map_err(|e| anyhow::anyhow!("the reference found the Slater matrix of electron {e}'s spin singular"))
}

/// The GPU engine against the CPU engine from the same start positions (each inverts and measures them itself)
/// with the same random numbers, step by step (see the module docs for what double and mixed check). Prints what
/// differs. Profiled (CUDA events), so the first GPU run exercises every path.
fn trajectory_checks<S: Scalar, A: Scalar>(gpu: &std::sync::Arc<kernels::gpu::Gpu>, sys: &Solid, setup: &Setup<S>, params: Params, a: &Args) -> Result<Vec<Check>> {
    let p = Precision::of::<S, A>();
    // a re-inversion every second step, so the check goes through the cuBLAS path more than at the start
    let params = Params { recompute: 2, ..params };
    let nw = a.check_walkers;
    let mut cpu = CpuEngine::<S, A>::new(sys, nw, params)?;
    let mut g = GpuEngine::<S, A>::new(gpu, sys, setup, nw, params)?;
    g.profile = true;
    let mut acc_diff = 0.0f64;
    let (mut cpu_total, mut gpu_total) = (0.0f64, 0.0f64);
    for step in 0..a.check_steps {
        cpu.step()?;
        g.step()?;
        let ga = g.accepted()?;
        for (k, &ca) in cpu.accepted.iter().enumerate() {
            if ga[k] != ca {
                eprintln!("solid gpu {p} trajectory step {step} walker {k}: cpu accepted {ca}, gpu {}", ga[k]);
            }
            acc_diff = acc_diff.max((ga[k] as f64 - ca as f64).abs());
            (cpu_total, gpu_total) = (cpu_total + ca as f64, gpu_total + ga[k] as f64);
        }
        if p == Precision::Double {
            for (k, (ge, ce)) in g.energies()?.iter().zip(cpu.energies()).enumerate() {
                let err = if ge.is_finite() { (ge - ce).abs() / cpu.parts[k].magnitude() } else { f64::INFINITY };
                if err > solid::DOUBLE_TOLERANCE {
                    // by part, so the log says which stage parted (kinetic: orbitals and inverse; coulomb: Ewald;
                    // nonlocal: the pseudopotential's job list and ratios); judged below, with the configurations
                    eprintln!("solid gpu {p} trajectory step {step} walker {k}: cpu E_L {ce:.12e}, gpu E_L {ge:.12e}, relative difference {err:.3e}");
                    eprintln!("  cpu {}\n  gpu {}", show_parts(&cpu.parts[k]), show_parts(&g.parts[k]));
                }
            }
        }
    }
    // double: the same decisions walker by walker. Mixed: once an f32 rounding flips one Metropolis decision the
    // walkers part and their acceptances differ like those of independent walks, so the totals over all walkers
    // must agree within 5 binomial standard deviations of the difference of two such walks (a systematic error in
    // the acceptance, e.g. a wrong Green's function factor, shifts the total by far more at these move counts).
    let walker_steps = nw * a.check_steps;
    let acceptance = if p == Precision::Double {
        Check { quantity: "gpu vs cpu accepted moves (trajectory)".into(), error: acc_diff, tolerance: 0.0, compared: walker_steps }
    } else {
        let moves = (nw * a.check_steps * sys.electrons()) as f64;
        let pa = cpu_total / moves;
        let tolerance = (5.0 * (2.0 * pa * (1.0 - pa) * moves).sqrt()).max(2.0);
        let error = (gpu_total - cpu_total).abs();
        Check { quantity: "gpu vs cpu accepted moves, all walkers (trajectory, 5 binomial sigma)".into(), error, tolerance, compared: walker_steps }
    };
    let mut checks = vec![acceptance];
    // every walker of both engines against the reference at its own configuration (error over the tolerance of its
    // condition number; double: 1e-8), and the engines against each other where the configurations agree
    let (ne, ni, st) = (sys.electrons(), sys.setup.ion_count(), sys.setup.table.stride);
    let gpu_walkers = (0..nw).map(|k| g.walker(k)).collect::<Result<Vec<_>, _>>()?;
    let tol = |cond: f64| conditioning::energy_tolerance(p.eps(), cond, params.recompute);
    let results: Vec<Result<(solid::Comparison, solid::Comparison)>> = (0..nw)
        .into_par_iter()
        .map(|k| {
            let (pos, rot, parts, inv) = &gpu_walkers[k];
            let c = compare_walker(sys, &cpu.w.pos[3 * k * ne..], &cpu.w.rot[9 * k * ni..], cpu.parts[k], &cpu.w.inv[k * ne * st..])?;
            Ok((c, compare_walker(sys, pos, rot, *parts, inv)?))
        })
        .collect();
    let (mut worst_cpu, mut worst_gpu, mut worst_pair, mut agreed, mut widest) = (0.0f64, 0.0f64, 0.0f64, 0usize, 0.0f64);
    // double: agreeing configurations are equal to rounding (1e-15 bohr a step; the drift's rounding grows with the
    // conditioning, see the module docs); mixed: one flipped move parts them by a step (0.1 bohr)
    let agree = if p == Precision::Double { 1e-10 } else { 1e-6 };
    for (k, res) in results.into_iter().enumerate() {
        let (c, gc) = res?;
        let (cpu_tol, gpu_tol) = (tol(c.cond), tol(gc.cond));
        worst_cpu = worse(worst_cpu, c.energy / cpu_tol);
        worst_gpu = worse(worst_gpu, gc.energy / gpu_tol);
        let (gpos, _, gparts, _) = &gpu_walkers[k];
        let apart = gpos.iter().zip(&cpu.w.pos[3 * k * ne..3 * (k + 1) * ne]).fold(0.0f64, |m, (a, b)| worse(m, (a - b).abs()));
        widest = worse(widest, apart);
        let same = apart < agree;
        if same {
            let err = (gparts.local() - cpu.parts[k].local()).abs() / c.reference.magnitude();
            worst_pair = worse(worst_pair, err / (cpu_tol + gpu_tol));
            agreed += 1;
        }
        eprintln!("solid gpu {p} trajectory walker {k}: cond {:.2e} (gpu {:.2e}), error vs reference cpu {:.2e} gpu {:.2e} (tolerance {:.1e}), configurations {} ({apart:.1e} bohr)", c.cond, gc.cond, c.energy, gc.energy, cpu_tol, if same { "agree" } else { "parted" });
        if c.energy > cpu_tol || gc.energy > gpu_tol {
            eprintln!("  reference {}\n  cpu       {}\n  gpu ref.  {}\n  gpu       {}", show_parts(&c.reference), show_parts(&cpu.parts[k]), show_parts(&gc.reference), show_parts(gparts));
        }
    }
    if agreed < nw {
        let why = if p == Precision::Double { "rounding grown along the trajectory" } else { "a Metropolis decision flipped on f32 rounding" };
        eprintln!("solid gpu {p} trajectory: {} of {nw} walkers parted ({why}): each was held against the reference alone", nw - agreed);
    }
    if p == Precision::Double {
        // the same decisions move both engines' electrons by the same steps: a wrong drift or proposal parts them by
        // a sizeable fraction of a step (sqrt(tau) ~ 0.14 bohr) even where no decision flips; measured at most 3e-6
        checks.push(Check { quantity: "gpu vs cpu positions (trajectory, bohr)".into(), error: widest, tolerance: 1e-4, compared: nw });
    }
    let each = |engine: &str, error: f64| Check { quantity: format!("{engine} walkers vs reference (trajectory, error / cond tolerance)"), error, tolerance: 1.0, compared: nw };
    checks.extend([each("cpu", worst_cpu), each("gpu", worst_gpu), pair_check(agreed, nw, worst_pair, worse(worst_cpu, worst_gpu))]);
    Ok(checks)
}

/// The engines' local energies against each other where `agreed` of `nw` walkers kept the same configurations
/// (worst error over both tolerances `pair`). Where every walker parted there is no pair to compare: the check says
/// so and holds each engine against the reference at its own configurations (`each`, the worse of the two) rather
/// than pass on nothing.
fn pair_check(agreed: usize, nw: usize, pair: f64, each: f64) -> Check {
    if agreed > 0 {
        let quantity = format!("gpu vs cpu local energy where configurations agree, {agreed} of {nw} walkers (trajectory, error / both tolerances)");
        Check { quantity, error: pair, tolerance: 1.0, compared: agreed }
    } else {
        let quantity = format!("gpu vs cpu local energy: all {nw} walkers parted, so each engine vs reference at its own configuration instead (trajectory, error / cond tolerance)");
        Check { quantity, error: each, tolerance: 1.0, compared: 2 * nw }
    }
}

/// The work of `walkers` walkers' `steps` steps of `params` at acceptance `acc` (`solid::step_work`), the walker
/// state in a storage type of `e` bytes.
pub(crate) fn work(sys: &Solid, params: &Params, e: usize, walkers: usize, steps: usize, acc: f64) -> Work {
    let n = (walkers * steps) as f64;
    let (bytes, flops) = solid::step_work(sys, e, acc, params.delay, params.recompute);
    Work {
        bytes: n * bytes,
        model: harness::BytesModel::Passes,
        flops: n * flops,
        items: n,
        unit: "walker steps/s",
    }
}

/// The f64 GEMM rates (flops/s) of the CPU pool and the GPU, measured in this process on first use.
#[derive(Default)]
struct GemmRates {
    cpu: Option<f64>,
    gpu: Option<f64>,
}

impl GemmRates {
    fn of(&mut self, r: &Runner, v: Variant) -> Result<f64> {
        Ok(match v {
            Variant::Gpu => match self.gpu {
                Some(x) => x,
                None => *self.gpu.insert(solid::floor::gpu_gemm_rate(r.gpu().expect("the gpu variant runs with a GPU"))?),
            },
            _ => *self.cpu.get_or_insert_with(solid::floor::cpu_gemm_rate),
        })
    }
}

/// The floor of one walker step (`kernels::solid::floor`) beside its measured time, class by class: extras
/// `gemm_gflops`, `floor_s_step` and `floor_s_<class>` (seconds per walker step), and a line per record saying how far
/// each class is from its floor (measured time per class: the record's fractions of `per_step`).
#[allow(clippy::too_many_arguments)]
fn floors(r: &mut Runner, v: Variant, sys: &Solid, params: &Params, e: usize, t: &Timers, per_step: f64, acc: f64, gemm: f64) -> Result<()> {
    let copy = r.ceiling(v)?;
    let work = solid::floor::class_work(sys, e, acc, params.delay, params.recompute);
    let floor = solid::floor::floor(&work, copy, gemm);
    let frac = t.fractions();
    r.extra("gemm_gflops", gemm / 1e9);
    r.extra("floor_s_step", floor.iter().sum());
    let mut lines = vec![];
    let mut classes: Vec<Class> = Class::ALL.into_iter().filter(|&c| work[c as usize] != (0.0, 0.0)).collect();
    classes.sort_by(|&x, &y| frac[y as usize].total_cmp(&frac[x as usize]));
    for c in classes {
        let (f, m) = (floor[c as usize], frac[c as usize] * per_step);
        r.extra(&format!("floor_s_{}", c.name()), f);
        let bound = if solid::floor::bytes_bound(work[c as usize], copy, gemm) { "bytes" } else { "flops" };
        lines.push(format!("{} {m:.2e} s / floor {f:.2e} s ({bound}) = {:.1}x", c.name(), m / f));
    }
    r.say(&format!(
        "  one walker step {per_step:.3e} s, floor {:.3e} s at {:.0} GB/s copy and {:.0} GFLOP/s f64 GEMM; by class, measured / floor: {}",
        floor.iter().sum::<f64>(),
        copy / 1e9,
        gemm / 1e9,
        lines.join(", ")
    ));
    Ok(())
}

/// Throughput extras and the time fraction of each kernel class.
fn extras(r: &mut Runner, t: &Timers, electrons: usize, walker_steps: usize, seconds: f64, acc: f64) {
    r.extra("electron_moves_per_s", (walker_steps * electrons) as f64 / seconds);
    r.extra("acceptance", acc);
    for (c, f) in Class::ALL.iter().zip(t.fractions()) {
        r.extra(&format!("frac_{}", c.name()), f);
    }
}

#[cfg(test)]
mod tests {
    use super::pair_check;

    /// Where every walker parted the old pair check compared nothing and recorded error 0, passed. Now it says so
    /// and holds the engines against the reference: a bad engine fails it.
    #[test]
    fn the_pair_check_falls_back_when_every_walker_parted() {
        let c = pair_check(3, 4, 0.2, 0.5);
        assert!(c.passed() && c.compared == 3 && c.error == 0.2 && c.quantity.contains("3 of 4 walkers"), "{c:?}");
        let c = pair_check(0, 4, 0.0, 0.5);
        assert!(c.passed() && c.compared == 8 && c.error == 0.5 && c.quantity.contains("all 4 walkers parted"), "{c:?}");
        assert!(!pair_check(0, 4, 0.0, 2.0).passed(), "the fallback compares something real");
        assert!(!pair_check(0, 4, 0.0, f64::INFINITY).passed());
    }
}
