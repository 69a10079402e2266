//! `qmc --engine batched`: the qmc driver's systems on the solid's batched engines (`kernels::solid::plan`, issue
//! #20): every stage of a step one launch over all walkers on the GPU (`solid::gpu::GpuEngine`), rayon over the
//! walkers on the CPU (`solid::cpu::CpuEngine`), the B-spline Jastrow in the Padé's shape and the atomic or
//! plane-wave orbitals of `Solid::atom` and `Solid::electron_gas`. The plan, the checks, the records, the precision
//! comparisons and the extrapolation are the driver's own; what differs is here: which systems and options the
//! batched engines take, and the runs of `On` dispatched to `solid::plan::Batched`.
//!
//! The per-walker GPU engine's trajectory check (CPU and GPU walkers in step) has no batched counterpart in a run:
//! the solid's engine tests cover the GPU engine following the CPU engine (`solid::atom_tests`,
//! `atoms_gpu_match_cpu_when_present`; `solid::gas_tests`).

use super::{Args, EngineKind, On, Start};
use anyhow::{bail, Result};
use kernels::qmc::dmc::{DmcParams, Report};
use kernels::qmc::plan::Runs;
use kernels::qmc::vmc::{Estimate, VmcParams};
use kernels::solid::plan::{Batched, Configuration};
use kernels::solid::Solid;

/// The systems the batched engines run.
pub(crate) const SYSTEMS: [&str; 6] = ["he", "h2", "be", "be-hf", "heg", "heg-hf"];

/// The most walkers the batched GPU engine holds (a block a walker in the grid's second dimension).
pub(crate) const MAX_GPU_WALKERS: usize = 65535;

/// What the batched engines cannot do, refused in one sentence each before anything is read or runs (the ranks,
/// which MPI may choose, apart: [`refuse_ranks`]).
pub(crate) fn refuse(a: &Args, gpu: bool) -> Result<()> {
    if a.engine != EngineKind::Batched {
        return Ok(());
    }
    if a.system.iter().any(|s| s == "h") {
        bail!("--engine batched: h has one electron, and the batched engines hold closed shells (two electrons an orbital): run h with --engine per-walker, or give one of {}", SYSTEMS.join(", "));
    }
    if a.orbitals.is_some() {
        bail!("--engine batched runs be and be-hf with the committed orbitals (kernels/src/atomic/data/be-hf.txt): drop --orbitals, or use --engine per-walker");
    }
    if a.checkpoint.is_some() || a.restart.is_some() {
        bail!("--engine batched writes and reads no checkpoints: drop --checkpoint and --restart, or use --engine per-walker");
    }
    if a.coverage.is_some() {
        bail!("--engine batched does not run --coverage: use --engine per-walker");
    }
    refuse_ranks(a, a.ranks)?;
    if let Some(w) = [a.walkers, a.gas_walkers.unwrap_or(0), a.atom_walkers.unwrap_or(0)].into_iter().find(|w| gpu && *w > MAX_GPU_WALKERS) {
        bail!("--walkers {w} is more than the batched GPU engine holds ({MAX_GPU_WALKERS})");
    }
    Ok(())
}

/// More than one rank (threads, or MPI's), which the batched engines do not run.
pub(crate) fn refuse_ranks(a: &Args, ranks: usize) -> Result<()> {
    if a.engine == EngineKind::Batched && ranks > 1 {
        bail!("--engine batched runs one engine of all the walkers (no ranks): drop --ranks (and mpirun), or use --engine per-walker");
    }
    Ok(())
}

/// The solid's description of the qmc driver's system `name` (refused names never get here).
fn solid(name: &str, a: &Args) -> Result<Solid> {
    match name {
        "heg" | "heg-hf" => Solid::electron_gas(a.electrons, a.rs, name == "heg"),
        _ => Solid::atom(name),
    }
    .map_err(anyhow::Error::msg)
}

/// `on`'s VMC on the batched engine of its variant.
pub(crate) fn vmc(on: &On, vp: &VmcParams) -> Result<(Estimate, Start, Vec<f64>)> {
    let sys = solid(&on.sys.name, on.a)?;
    let (e, start, kinetic) = Batched::new(&sys, on.gpu.clone(), on.sys.precision).vmc(vp)?;
    Ok((e, Start::Batched(start), kinetic))
}

/// `on`'s DMC from VMC's configurations on the batched engine of its variant.
pub(crate) fn dmc(on: &On, start: &Vec<Configuration>, dp: &DmcParams) -> Result<Report> {
    let sys = solid(&on.sys.name, on.a)?;
    Ok(Batched::new(&sys, on.gpu.clone(), on.sys.precision).dmc(start, dp)?)
}
