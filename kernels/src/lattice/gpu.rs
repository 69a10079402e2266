//! GPU launch code for the lattice VMC: one thread block per Markov chain, all chains in one launch, the whole run
//! (equilibration and accumulation sweeps) inside it. The pair function and lattice tables are shared by all chains;
//! W, configurations, random-number states and tallies of all chains live in one allocation each, as does the
//! n x n scratch (in the arithmetic type A) where a chain rebuilds its inverse (see `Ensemble::recompute`).

use super::{tally, ChainResult, Config, Model, Stream};
use crate::gpu::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("lattice.cu");

/// Mirrors `LatticeParams` in lattice.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct LatticeParams {
    sites: i32,
    pairs: i32,
    chains: i32,
    equil: i32,
    sweeps: i32,
    recompute: i32,
    bfactor: i32,
    j: f64,
    degenerate: f64,
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for LatticeParams {}

/// Entry name for storage S and arithmetic A.
pub fn entry<S: Real, A: Real>() -> &'static str {
    match (S::NAME, A::NAME) {
        ("f32", "f64") => "lattice_sweeps_mixed",
        (_, "f32") => "lattice_sweeps_f32",
        _ => "lattice_sweeps_f64",
    }
}

/// Threads per row of the down-electron dot products, by default: 8, the thesis' choice and the fastest measured on
/// an H100 (32 chains, double: L = 9 1.90 / 2.01 / 2.21 ms per run and L = 15 14.9 / 15.1 / 15.5 ms for 8 / 16 / 32).
pub const DEFAULT_BFACTOR: usize = 8;
/// The blocking factors the kernel supports (powers of two that divide a warp, from the thesis' 8 up).
pub const BFACTORS: [usize; 3] = [8, 16, 32];

/// Threads per block: N_P rounded up to whole warps (a thread per column of W), at most 256.
pub fn block_threads(pairs: usize) -> u32 {
    (pairs.div_ceil(32) * 32).clamp(32, 256) as u32
}

/// Dynamic shared memory per block: 64 doubles, f, g, buf and 64 reduction slots in A, the configuration and the
/// pivots of `reinvert` in ints.
pub fn shared_bytes(pairs: usize, sites: usize, a_bytes: usize) -> usize {
    64 * 8 + (3 * pairs + 64) * a_bytes + (3 * pairs + 2 * sites) * 4
}

/// All chains resident on the GPU.
pub struct GpuEnsemble<S: Real, A: Real> {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    params: LatticeParams,
    phi: CudaSlice<S>,
    nbr: CudaSlice<i32>,
    hop: CudaSlice<f64>,
    w: CudaSlice<S>,
    /// Scratch of `reinvert`, n x n per chain.
    m: CudaSlice<A>,
    up: CudaSlice<i32>,
    dn: CudaSlice<i32>,
    rng: CudaSlice<u64>,
    tally: CudaSlice<f64>,
    _a: std::marker::PhantomData<A>,
}

impl<S: Real, A: Real> GpuEnsemble<S, A> {
    /// Upload the tables and the chains' starts; chain c draws from `Stream::new(seed, c)` as on the CPU.
    pub fn new(gpu: &Arc<Gpu>, m: &Model, starts: &[(Config, Vec<f64>)], seed: u64) -> Result<Self, GpuError> {
        let (np, ns, chains) = (m.pairs, m.sites, starts.len());
        assert!((1..=i32::MAX as usize).contains(&chains), "lattice gpu: chain count");
        let (es, ea) = (std::mem::size_of::<S>(), std::mem::size_of::<A>());
        gpu.ensure_fits("the chains' inverse matrices and their recompute scratch", chains * np * np * (es + ea) + ns * ns * es)?;
        let func = gpu.function("lattice", SRC, entry::<S, A>())?;
        let w: Vec<S> = starts.iter().flat_map(|(_, w)| w.iter().map(|&x| S::of(x))).collect();
        let up: Vec<i32> = starts.iter().flat_map(|(c, _)| c.up.iter().map(|&s| s as i32)).collect();
        let dn: Vec<i32> = starts.iter().flat_map(|(c, _)| c.dn.iter().map(|&s| s as i32)).collect();
        let rng: Vec<u64> = (0..chains as u64).map(|c| Stream::new(seed, c).0).collect();
        let phi: Vec<S> = m.phi.iter().map(|&x| S::of(x)).collect();
        let nbr: Vec<i32> = m.nbr.iter().map(|&x| x as i32).collect();
        let params = LatticeParams { sites: ns as i32, pairs: np as i32, chains: chains as i32, equil: 0, sweeps: 0, recompute: 0, bfactor: DEFAULT_BFACTOR as i32, j: m.j, degenerate: super::degenerate_ratio(A::EPS) };
        Ok(GpuEnsemble {
            phi: gpu.upload("the pair function", &phi)?,
            nbr: gpu.upload("the neighbour table", &nbr)?,
            hop: gpu.upload("the hopping table", &m.hop)?,
            w: gpu.upload("the chains' inverse matrices", &w)?,
            m: gpu.zeros("the recompute scratch", chains * np * np)?,
            up: gpu.upload("up-electron sites", &up)?,
            dn: gpu.upload("down-electron sites", &dn)?,
            rng: gpu.upload("random-number states", &rng)?,
            tally: gpu.zeros("tallies", chains * tally::LEN)?,
            gpu: gpu.clone(),
            func,
            params,
            _a: std::marker::PhantomData,
        })
    }

    /// Sweeps between rebuilds of W from scratch (0: never), as `cpu::Ensemble::recompute`.
    pub fn set_recompute(&mut self, sweeps: usize) {
        self.params.recompute = sweeps.min(i32::MAX as usize) as i32;
    }

    /// Threads per row of the down-electron dot products, one of [`BFACTORS`].
    pub fn set_bfactor(&mut self, bfactor: usize) {
        assert!(BFACTORS.contains(&bfactor), "lattice gpu: bfactor {bfactor} is not one of {BFACTORS:?}");
        self.params.bfactor = bfactor as i32;
    }

    /// Intermediate-ratio magnitude below which an accepted swap rebuilds W (default `degenerate_ratio` of A).
    pub fn set_degenerate(&mut self, ratio: f64) {
        self.params.degenerate = ratio;
    }

    /// Queue `equil` sweeps, then `sweeps` sweeps with a measurement each, for every chain (one launch).
    pub fn run(&mut self, equil: usize, sweeps: usize) -> Result<(), GpuError> {
        self.params.equil = equil as i32;
        self.params.sweeps = sweeps as i32;
        let (np, ns) = (self.params.pairs as usize, self.params.sites as usize);
        let cfg = LaunchConfig {
            grid_dim: (self.params.chains as u32, 1, 1),
            block_dim: (block_threads(np), 1, 1),
            shared_mem_bytes: shared_bytes(np, ns, std::mem::size_of::<A>()) as u32,
        };
        let mut b = self.gpu.stream.launch_builder(&self.func);
        b.arg(&self.params).arg(&self.phi).arg(&self.nbr).arg(&self.hop);
        b.arg(&mut self.w).arg(&mut self.m).arg(&mut self.up).arg(&mut self.dn).arg(&mut self.rng).arg(&mut self.tally);
        // SAFETY: one block per chain; each block indexes its own chain's slices of w and m (np^2), up/dn (np), rng (1) and
        // tally (LEN), phi (ns^2), nbr/hop (4 ns), all of the sizes uploaded; shared memory is sized by shared_bytes.
        unsafe { b.launch(cfg) }.during("launching lattice sweeps")?;
        Ok(())
    }

    /// The state of the chains `chains`, in that order (W widened to f64).
    pub fn results(&self, chains: &[usize]) -> Result<Vec<ChainResult>, GpuError> {
        let np = self.params.pairs as usize;
        let s = &self.gpu.stream;
        chains
            .iter()
            .map(|&c| {
                let w = s.clone_dtoh(&self.w.slice(c * np * np..(c + 1) * np * np)).during("copying W")?;
                let up = s.clone_dtoh(&self.up.slice(c * np..(c + 1) * np)).during("copying sites")?;
                let dn = s.clone_dtoh(&self.dn.slice(c * np..(c + 1) * np)).during("copying sites")?;
                let t = s.clone_dtoh(&self.tally.slice(c * tally::LEN..(c + 1) * tally::LEN)).during("copying tallies")?;
                Ok(ChainResult {
                    config: Config { up: up.iter().map(|&x| x as u32).collect(), dn: dn.iter().map(|&x| x as u32).collect() },
                    w: w.iter().map(|x| x.f64()).collect(),
                    tally: t.try_into().unwrap(),
                })
            })
            .collect()
    }

    /// Tallies of all chains.
    pub fn tallies(&self) -> Result<Vec<[f64; tally::LEN]>, GpuError> {
        let t = self.gpu.download(&self.tally)?;
        Ok(t.chunks_exact(tally::LEN).map(|c| c.try_into().unwrap()).collect())
    }
}
