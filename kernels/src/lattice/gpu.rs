//! GPU launch code for the lattice VMC: one thread block per Markov chain, all chains in one launch, the whole run
//! (equilibration and accumulation sweeps) inside it. The pair function and lattice tables are shared by all chains;
//! W, configurations, random-number states and tallies of all chains live in one allocation each.
//!
//! Each block works on a copy of its chain's W held in shared memory for the whole launch when it fits (`on_chip`:
//! N_P^2 elements of the larger of S and A, about 84 KB in double at L = 15, plus 27 KB of vectors, most of them the
//! look-ahead batch's (lattice.cu says why), so two chains per H100 SM; 42 + 14 KB in single, four where registers
//! allow (64 a thread: [`REGISTER_CAPS`]; three before the configuration's indices took 16 bits), and in a
//! per-chain device buffer otherwise (`m`). The rebuild's M (in A) shares W's memory, or lives in the device buffer
//! with W alone on chip ([`Placement`]): mixed then holds single's 42 + 14 KB at L = 15, four chains an SM instead of
//! two. Chains that fill the GPU: blocks per SM (from the occupancy calculator, `chains_in_flight`) times SMs; beyond
//! that chains run in waves; the default register cap and placement are those that put the most chains in flight
//! (mixed up to L = 9 excepted: `GpuEnsemble::default_layout` says why). Mixed above L = 9 runs screened
//! ([`GpuEnsemble::screened`]): W in f64 in the device buffer, its f32 copy on chip (67 KB at L = 15, three chains an
//! SM), one entry at 128 registers.

use super::{tally, ChainResult, Config, Model, Stream};
use crate::gpu::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("lattice.cu");
/// The kernel with W in each chain's device buffer ([`Placement::OffChip`]): lattice.cu's `LATTICE_W_OFF_CHIP`.
/// Where W is compiled to live in shared memory its accesses are shared-memory loads and stores with 32-bit
/// addresses; one entry for both placements made them generic (lattice.cu `run`, WOFF).
pub const SRC_W_OFF_CHIP: &str = concat!("#define LATTICE_W_OFF_CHIP 1\n", include_str!("lattice.cu"));

/// The module (name, source) whose entries keep W where `at` places it; screened mixed's W is off chip in both, and
/// it takes [`SRC`]'s.
fn module_of(at: Placement, screened: bool) -> (&'static str, &'static str) {
    if at == Placement::OffChip && !screened { ("lattice_w_off_chip", SRC_W_OFF_CHIP) } else { ("lattice", SRC) }
}

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
    ld: i32,
    on_chip: i32,
    vec_bytes: i32,
    j: f64,
    degenerate: f64,
    residual_limit: f64,
    window: i32,
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for LatticeParams {}

impl LatticeParams {
    /// The placement's fields: where W and M live, and the vectors' bytes for it.
    fn place<S: Real, A: Real>(&mut self, at: Placement) {
        self.on_chip = at as i32;
        self.vec_bytes = vec_bytes(self.pairs as usize, std::mem::size_of::<S>(), std::mem::size_of::<A>(), at.m_on_chip()) as i32;
    }
}

/// What a launch reads, built on the host from the model and the chains' starts: the kernel's parameters (no
/// placement or sweeps yet) and the arrays [`GpuEnsemble::new`] uploads (chain c draws from `Stream::new(seed, c)`
/// as on the CPU). The host run of the kernel (`host`) writes the same arrays to files.
struct Inputs<S> {
    params: LatticeParams,
    phi: Vec<S>,
    /// phi rounded to f32: screened mixed's copy ([`GpuEnsemble::screened`]).
    phi32: Vec<f32>,
    nbr: Vec<i32>,
    w: Vec<S>,
    up: Vec<i32>,
    dn: Vec<i32>,
    rng: Vec<u64>,
}

impl<S: Real> Inputs<S> {
    fn new(m: &Model, starts: &[(Config, Vec<f64>)], seed: u64) -> Self {
        let (np, ns, chains) = (m.pairs, m.sites, starts.len());
        assert!((1..=i32::MAX as usize).contains(&chains), "lattice gpu: chain count");
        assert!(ns < MAX_SITES, "lattice gpu: {ns} sites are more than 16-bit indices number");
        Inputs {
            params: LatticeParams { sites: ns as i32, pairs: np as i32, chains: chains as i32, equil: 0, sweeps: 0, recompute: 0, bfactor: DEFAULT_BFACTOR as i32, ld: row_stride(np) as i32, on_chip: 0, vec_bytes: 0, j: m.j, degenerate: super::degenerate_ratio(S::EPS), residual_limit: 0.0, window: WINDOW as i32 },
            phi: m.phi.iter().map(|&x| S::of(x)).collect(),
            phi32: m.phi.iter().map(|&x| x as f32).collect(),
            nbr: m.nbr.iter().map(|&x| x as i32).collect(),
            w: starts.iter().flat_map(|(_, w)| w.iter().map(|&x| S::of(x))).collect(),
            up: starts.iter().flat_map(|(c, _)| c.up.iter().map(|&s| s as i32)).collect(),
            dn: starts.iter().flat_map(|(c, _)| c.dn.iter().map(|&s| s as i32)).collect(),
            rng: (0..chains as u64).map(|c| Stream::new(seed, c).0).collect(),
        }
    }
}

/// [`GpuEnsemble::placements`] for N_P pairs and `sites` sites, storage S and arithmetic A, on a device whose blocks
/// can have `optin` bytes of shared memory.
fn placements_of<S: Real, A: Real>(pairs: usize, sites: usize, screened: bool, optin: usize) -> Vec<Placement> {
    if screened {
        return vec![Placement::OffChip];
    }
    let fits = |at| shared_bytes(pairs, sites, std::mem::size_of::<S>(), std::mem::size_of::<A>(), at) + STATIC_SHARED <= optin;
    let on: Vec<Placement> = [Placement::OnChip, Placement::RebuildOffChip].into_iter().filter(|&at| fits(at)).collect();
    if on.is_empty() { vec![Placement::OffChip] } else { on }
}

/// Entry of screened mixed ([`GpuEnsemble::screened`]), compiled at the launch bounds alone (128 registers).
pub const SCREENED_ENTRY: &str = "lattice_sweeps_screened";

/// The entry a launch takes: screened mixed's, or [`entry`]'s.
fn entry_of<S: Real, A: Real>(screened: bool, registers: usize) -> String {
    if screened { SCREENED_ENTRY.to_string() } else { entry::<S, A>(registers) }
}

/// Entry name for storage S and arithmetic A at register cap `registers` (one of [`REGISTER_CAPS`]).
pub fn entry<S: Real, A: Real>(registers: usize) -> String {
    let p = match (S::NAME, A::NAME) {
        ("f32", "f64") => "mixed",
        (_, "f32") => "f32",
        _ => "f64",
    };
    match registers {
        128 => format!("lattice_sweeps_{p}"),
        r => format!("lattice_sweeps_{p}_r{r}"),
    }
}

/// Registers a thread the kernel is compiled to at most (lattice.cu's entries: its launch bounds alone, 80 and 64):
/// fewer registers, more chains resident on an SM where shared memory allows, and spills.
pub const REGISTER_CAPS: [usize; 3] = [128, 80, 64];
/// Most threads a block of the 80-register entries (`__launch_bounds__(384, 2)`).
const R80_THREADS: usize = 384;

/// Threads per row of the down-electron dot products, by default: 8, the thesis' choice and the fastest measured on
/// an H100 (32 chains, double: L = 9 1.90 / 2.01 / 2.21 ms per run and L = 15 14.9 / 15.1 / 15.5 ms for 8 / 16 / 32).
pub const DEFAULT_BFACTOR: usize = 8;
/// The blocking factors the kernel supports (powers of two that divide a warp, from the thesis' 8 up).
pub const BFACTORS: [usize; 3] = [8, 16, 32];

/// Threads per block by default: N_P rounded up to whole warps below 64 pairs (a thread per column of W), else 256,
/// and at least N_P / `NARROW_MAX` (the rebuild's narrowing). Measured on an H100 with 2048 chains: L = 9 (37 pairs)
/// 64 threads 3.06M chain sweeps/s, 128 2.52M, 256 1.66M (double); L = 15 (102 pairs) 128 / 256 threads: double
/// 353k / 380k, mixed 214k / 245k, single 294k / 281k.
pub fn block_threads(pairs: usize) -> u32 {
    let t = if pairs < 64 { pairs.div_ceil(32).max(1) * 32 } else { 256 };
    t.max(pairs.div_ceil(NARROW_MAX).next_multiple_of(32)) as u32
}

/// Columns of a rebuilt W one thread narrows to f32 (`NARROW_MAX` in lattice.cu): a block has at least N_P / 2 threads.
const NARROW_MAX: usize = 2;

/// Row stride of the working copy of W: N_P rounded up to odd, so a warp reading down a column of W in shared
/// memory touches 32 different banks (4- and 8-byte elements alike).
pub fn row_stride(pairs: usize) -> usize {
    pairs | 1
}

/// Moves whose ratios one pass over W evaluates (`LOOK` in lattice.cu: the look-ahead batch).
pub const LOOK: usize = 8;

/// Random-number outputs a batch draws its moves from (`WINDOW` in lattice.cu).
pub const WINDOW: usize = 64;

/// Where a chain's working copy of W and the rebuild's M live (lattice.cu's `p.on_chip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Both in the chain's device buffer: W does not fit in shared memory.
    OffChip = 0,
    /// Both in shared memory, M over W, in the wider of S and A.
    OnChip = 1,
    /// W in shared memory (S) with the rows of the rebuild's M that its memory holds in A over it (all where S and A
    /// are one type, half in mixed), the other rows and the panels' pivot rows in the chain's device buffer.
    RebuildOffChip = 2,
}

impl Placement {
    /// Is M (the rebuild) in shared memory?
    fn m_on_chip(self) -> bool {
        self == Placement::OnChip
    }
}

/// Pivots a panel of the rebuild factors at a time (`PANEL` in lattice.cu).
const PANEL: usize = 8;

/// Bytes of shared memory from the vectors to the configuration (`p.vec_bytes`): f, g, the gathered phi row, buf and
/// 64 spare entries, and the look-ahead batch's three LOOK x N_P arrays (phi vectors, their f vectors, the short dots'
/// phi vectors), all in S (the evaluation type; the first four in A before 2026-12-01, the batch's before
/// 2026-11-27), or the rebuild's scratch over them where it is larger: the panel's multipliers and pivots' inverses
/// (PANEL N_P + PANEL entries of A) and, where M is on chip or S and A are one type, its pivot rows (PANEL N_P more;
/// lattice.cu `reinvert`: elsewhere they follow M in the device buffer); where S and A are one type also the next
/// panel's multipliers and pivots' inverses (the look-ahead), which leave the vectors the larger.
fn vec_bytes(pairs: usize, s_bytes: usize, a_bytes: usize, m_on_chip: bool) -> usize {
    let vectors = (4 * pairs + 64) * s_bytes + 3 * LOOK * pairs * s_bytes;
    let rows_on_chip = m_on_chip || s_bytes == a_bytes;
    let panels = if s_bytes == a_bytes { 2 } else { 1 };
    let rebuild = panels * (PANEL * pairs + PANEL) * a_bytes + if rows_on_chip { PANEL * pairs * a_bytes } else { 0 };
    vectors.max(rebuild).next_multiple_of(16)
}

/// Dynamic shared memory per block for the vectors: 64 doubles, [`vec_bytes`], the configuration and the pivots of
/// `reinvert` in 16-bit indices (`idx_t` in lattice.cu; ints before 2026-11-30, which kept single at L = 15 to three
/// chains an SM), padded to 16 bytes.
fn vector_bytes(pairs: usize, sites: usize, s_bytes: usize, a_bytes: usize, m_on_chip: bool) -> usize {
    (64 * 8 + vec_bytes(pairs, s_bytes, a_bytes, m_on_chip) + (3 * pairs + 2 * sites) * IDX_BYTES).next_multiple_of(16)
}

/// Bytes of a site or pair index in shared memory (`idx_t` in lattice.cu: 16-bit).
const IDX_BYTES: usize = 2;
/// Sites the 16-bit indices can number (the mini-app stops at 1682).
pub const MAX_SITES: usize = 1 << 15;

/// Dynamic shared memory per block at a placement: the vectors, and the working copy of W when it is on chip (with M
/// over it, in the wider of S and A, where M is on chip too).
pub fn shared_bytes(pairs: usize, sites: usize, s_bytes: usize, a_bytes: usize, at: Placement) -> usize {
    let entry = if at.m_on_chip() { s_bytes.max(a_bytes) } else { s_bytes };
    let matrix = if at == Placement::OffChip { 0 } else { pairs * row_stride(pairs) * entry };
    vector_bytes(pairs, sites, s_bytes, a_bytes, at.m_on_chip()) + matrix
}

/// Dynamic shared memory per block of screened mixed: double's vectors with W off chip (its batch's f32 f vectors and
/// their error sums take the f64 f vectors' place, lattice.cu `run`), and W's f32 copy. At L = 15 67 KB: three chains
/// an SM of 228 KB.
pub fn screened_shared_bytes(pairs: usize, sites: usize) -> usize {
    vector_bytes(pairs, sites, 8, 8, false) + pairs * row_stride(pairs) * 4
}

/// Entries of A a chain's device buffer holds where M is off chip: M (N_P rows of stride ld) and the rebuild's pivot
/// rows (PANEL x N_P), lattice.cu's `Mg`.
fn device_scratch(pairs: usize) -> usize {
    pairs * row_stride(pairs) + PANEL * pairs
}

/// Static shared memory of the kernel (`__shared__` arrays in lattice.cu: the batch's moves, the random-number
/// window, the tallies; ptxas 13.0 reports up to 1312 bytes), kept free beside the dynamic part.
pub(super) const STATIC_SHARED: usize = 1536;

/// All chains resident on the GPU.
pub struct GpuEnsemble<S: Real, A: Real> {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    params: LatticeParams,
    phi: CudaSlice<S>,
    /// Screened mixed ([`Self::screened`]): phi rounded to f32; one placeholder entry otherwise.
    phi32: CudaSlice<f32>,
    screened: bool,
    nbr: CudaSlice<i32>,
    hop: CudaSlice<f64>,
    w: CudaSlice<S>,
    /// Each chain's device buffer ([`device_scratch`] entries) where M is off chip; allocated at the first run there.
    m: CudaSlice<A>,
    placement: Placement,
    up: CudaSlice<i32>,
    dn: CudaSlice<i32>,
    rng: CudaSlice<u64>,
    tally: CudaSlice<f64>,
    /// The register cap of `func` (one of [`REGISTER_CAPS`]), and whether it or the placement was set rather than
    /// the default.
    registers: usize,
    layout_set: bool,
    threads: u32,
    _a: std::marker::PhantomData<A>,
}

impl<S: Real, A: Real> GpuEnsemble<S, A> {
    /// Upload the tables and the chains' starts; chain c draws from `Stream::new(seed, c)` as on the CPU.
    pub fn new(gpu: &Arc<Gpu>, m: &Model, starts: &[(Config, Vec<f64>)], seed: u64) -> Result<Self, GpuError> {
        Self::build(gpu, m, starts, seed, false)
    }

    fn build(gpu: &Arc<Gpu>, m: &Model, starts: &[(Config, Vec<f64>)], seed: u64, screened: bool) -> Result<Self, GpuError> {
        let (np, ns, chains) = (m.pairs, m.sites, starts.len());
        let es = std::mem::size_of::<S>();
        gpu.ensure_fits("the chains' inverse matrices", chains * np * np * es + ns * ns * es)?;
        // a placeholder until default_layout, from the module of the first placement it tries (the module of W off
        // chip alone where W does not fit on chip: each module is a full NVRTC compile, about 35 s at L = 15)
        let first = placements_of::<S, A>(np, ns, screened, gpu.info.shared_per_block_optin)[0];
        let (module, src) = module_of(first, screened);
        let func = gpu.function(module, src, &entry_of::<S, A>(screened, 128))?;
        let i = Inputs::<S>::new(m, starts, seed);
        let mut e = GpuEnsemble {
            phi32: gpu.upload("the pair function in f32", if screened { &i.phi32[..] } else { &i.phi32[..1] })?,
            screened,
            phi: gpu.upload("the pair function", &i.phi)?,
            nbr: gpu.upload("the neighbour table", &i.nbr)?,
            hop: gpu.upload("the hopping table", &m.hop)?,
            w: gpu.upload("the chains' inverse matrices", &i.w)?,
            m: gpu.zeros("the rebuild's scratch (placeholder)", 1)?,
            placement: Placement::OffChip,
            up: gpu.upload("up-electron sites", &i.up)?,
            dn: gpu.upload("down-electron sites", &i.dn)?,
            rng: gpu.upload("random-number states", &i.rng)?,
            tally: gpu.zeros("tallies", chains * tally::LEN)?,
            gpu: gpu.clone(),
            func,
            params: i.params,
            registers: 128,
            layout_set: false,
            threads: block_threads(np),
            _a: std::marker::PhantomData,
        };
        e.default_layout()?;
        Ok(e)
    }

    /// The placements whose shared memory a block can have: on chip and the rebuild off chip where W fits, else off
    /// chip; screened mixed: off chip (W in f64 there, its f32 copy on chip).
    pub fn placements(&self) -> Vec<Placement> {
        let (np, ns) = (self.params.pairs as usize, self.params.sites as usize);
        placements_of::<S, A>(np, ns, self.screened, self.gpu.info.shared_per_block_optin)
    }

    /// Place W and the rebuild's M (one of [`Self::placements`], or off chip, which every size can take); the
    /// register cap stays.
    pub fn set_placement(&mut self, at: Placement) -> Result<(), GpuError> {
        let ok = self.placements().contains(&at) || (at == Placement::OffChip && !self.screened);
        assert!(ok, "lattice gpu: placement {at:?} is not one of {:?}", self.placements());
        self.layout_set = true;
        self.place(at);
        self.load(self.registers)
    }

    fn place(&mut self, at: Placement) {
        self.placement = at;
        self.params.place::<S, A>(at);
    }

    /// The placement the launches use.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// Sweeps between rebuilds of W from scratch (0: never), as `cpu::Ensemble::recompute`.
    pub fn set_recompute(&mut self, sweeps: usize) {
        self.params.recompute = sweeps.min(i32::MAX as usize) as i32;
    }

    /// Rebuild W after a sweep whose residual check exceeds `limit` (0: no check), as
    /// `cpu::Ensemble::residual_limit`.
    pub fn set_residual_limit(&mut self, limit: f64) {
        self.params.residual_limit = limit;
    }

    /// Threads per row of the down-electron dot products, one of [`BFACTORS`].
    pub fn set_bfactor(&mut self, bfactor: usize) {
        assert!(BFACTORS.contains(&bfactor), "lattice gpu: bfactor {bfactor} is not one of {BFACTORS:?}");
        self.params.bfactor = bfactor as i32;
    }

    /// Threads per chain (block), a multiple of 32 with at least N_P / 2 (default [`block_threads`]); the default
    /// register cap is chosen again for them unless one was set.
    pub fn set_block_threads(&mut self, threads: usize) -> Result<(), GpuError> {
        let np = self.params.pairs as usize;
        assert!(threads.is_multiple_of(32) && (32..=1024).contains(&threads) && threads * NARROW_MAX >= np, "lattice gpu: {threads} threads per chain");
        self.threads = threads as u32;
        if self.layout_set {
            return self.load(self.registers);
        }
        self.default_layout()
    }

    /// Compile-time register cap of the kernel, one of [`REGISTER_CAPS`] (default: [`Self::default_layout`]'s):
    /// the entry compiled to it replaces the current one. The 80-register entry takes blocks of at most 384 threads.
    pub fn set_registers(&mut self, registers: usize) -> Result<(), GpuError> {
        assert!(REGISTER_CAPS.contains(&registers), "lattice gpu: register cap {registers} is not one of {REGISTER_CAPS:?}");
        self.layout_set = true;
        self.load(registers)
    }

    fn load(&mut self, registers: usize) -> Result<(), GpuError> {
        assert!(registers != 80 || self.threads as usize <= R80_THREADS, "lattice gpu: the 80-register entry takes at most {R80_THREADS} threads");
        assert!(!self.screened || registers == 128, "lattice gpu: screened mixed is compiled at 128 registers only");
        let (module, src) = module_of(self.placement, self.screened);
        let func = self.gpu.function(module, src, &entry_of::<S, A>(self.screened, registers))?;
        self.gpu.opt_in_shared("lattice sweeps", &func, self.shared())?;
        self.func = func;
        self.registers = registers;
        Ok(())
    }

    /// The register cap and placement a precision launches with unless one is set: of its caps (double 128; single
    /// 80 and 64, 80 for blocks of at most 384 threads; mixed all three: 128 alone up to `CHECKED_MAX_PAIRS` pairs,
    /// L = 9, from 2026-12-04 to 2026-12-07, below) and of [`Self::placements`], the pair that runs the most of the
    /// ensemble's chains at once (chains in flight, at most the chain count: room for more does nothing), the first
    /// of placements (on chip first) and then of caps where they tie.
    ///
    /// Mixed above L = 9 runs screened (from 2026-12-05: [`Self::screened`], 128 registers only); what follows about
    /// mixed at L = 15 is the kernel with W in f32, which it ran until then.
    ///
    /// Mixed up to L = 9 (from 2026-12-04). There its chains rebuild only on the residual check (a few in a thousand
    /// chain sweeps), yet the f64 rebuild compiled into the kernel sets its registers: at 64 a thread (ptxas 13.0,
    /// sm_90) mixed's entry spills 120 bytes where single's spills 12, and nvdisasm puts most of its 28 STL and 131 LDL
    /// in the sweep's move loop and its helpers; without `panel_factor` it spills nothing. At 128 registers it does not
    /// spill, and that beats twice the chains in flight. On the H200 (build bc8e53b, L = 9, chain sweeps/s, two runs
    /// each): 2048 chains 4.38M / 4.33M at 128 registers (1056 in flight) against 4.05M / 4.09M at 64 with the rebuild
    /// off chip (2112), the default until then, and 3.59M to 3.83M at 80; 6336 chains 4.70M against 4.22M to 4.24M; 32
    /// chains (already 128) 172k against 137k. At L = 15, where mixed rebuilds every sweep, 64 registers with the
    /// rebuild off chip stays the fastest (400k against 277k to 360k for the others). Single keeps its caps: at L = 9
    /// 4.61M to 4.69M at 64 against 4.31M to 4.39M at 128. With the rebuild out of line (b1a9cb8) mixed's 64-register
    /// entry spills 60 bytes, and on the H200 (2048 chains, L = 9) ran 3.77M against 4.36M at 128: 128 stays.
    /// Until 2026-12-07 (ab186cc): the rebuild's call took the chain's M_all slice as an argument, whose address the
    /// entry held across the move loop (single's, which never forms it, dropped it); read from shared memory instead
    /// (lattice.cu `m_slice`) mixed's 64-register entry spills 44 / 44 bytes (stores / loads) against 60 / 272, and
    /// with the rebuild off chip holds single's 2112 chains in flight on 132 SMs. On the H100 (ab186cc, L = 9, two
    /// rounds, ms a run of 3 + 6 sweeps): 2048 chains 3.88 / 3.92 at 64 registers off chip against 4.19 to 4.27 at 128
    /// (either placement) and 4.48 to 4.79 at 80 or on chip, single 3.87 to 3.94 at its default; 6336 chains 11.53 /
    /// 11.59 against 12.35 to 12.39, single 11.41 to 11.49. So mixed takes every cap again, and the rule picks 64 off
    /// chip: single's speed, 1.39x double's 5.39 ms.
    ///
    /// Measured on the H100 at 38989db (stage lattice-registers, chain sweeps/s at 2048 / 6336 chains): single at L =
    /// 9 3.06M / 3.14M at 128 registers (1056 chains in flight), 2.90M / 3.45M at 80 (1584), 3.36M / 3.43M at 64
    /// (2112); at L = 15 298k / 305k at 128 (264), 355k / 383k at 80 and 345k / 372k at 64 (396 both). Double ran
    /// fastest at 128 at both sizes (L = 15: 420k, 407k, 356k at 6336 chains): it spills below 128. Since the
    /// configuration's indices took 16 bits (6c9e622), single at L = 15 fits four chains an SM at 64 registers: on the
    /// H200, 355k / 365k at 128 (264 in flight), 435k / 478k at 80 (396), 536k / 559k at 64 (528). Mixed took 128
    /// registers with M on chip (two chains an SM at L = 15 by shared memory) until the rebuild could leave the chip
    /// (2026-12-01, [`Placement::RebuildOffChip`]), which lets it hold four as single does. On the H200 (stage
    /// lattice-rebuild, 2048 / 6336 chains, mixed at L = 15): with all of M in device memory (29dfa74) 340k / 355k at
    /// 64 registers (528 in flight) against 305k / 313k at 128 with M on chip (264), and 666k without rebuilds: the
    /// f64 rebuild in device memory took 1.42 us of each 2.92 us chain sweep (single's on chip 0.52 of 1.86). With the
    /// first N_P / 2 rows of M over W and fewer spills (770d751): 379k / 391k at 64 registers, 328k / 361k at 80 (396),
    /// against 300k / 308k at 128 with M on chip; at L = 9 2.97M / 2.96M at 64 (2112), against 2.87M / 2.90M at 128 on
    /// chip (1056). At 32 chains, where every pair ties, 29dfa74 took the rebuild off chip all the same (L = 15 27.2k
    /// against 36.6k on chip at 6c9e622): the tie rule above (770d751: 38.5k).
    fn default_layout(&mut self) -> Result<(), GpuError> {
        let caps: &[usize] = match (S::NAME, A::NAME) {
            _ if self.screened => &[128],
            ("f64", "f64") => &[128],
            ("f32", "f32") => &[80, 64],
            _ => &REGISTER_CAPS,
        };
        let (threads, chains) = (self.threads as usize, self.params.chains as usize);
        let mut best = None;
        for &at in &self.placements() {
            self.place(at);
            for &cap in caps.iter().filter(|&&c| c != 80 || threads <= R80_THREADS) {
                self.load(cap)?;
                let flight = self.chains_in_flight()?.min(chains);
                if best.is_none_or(|(f, _, _)| flight > f) {
                    best = Some((flight, at, cap));
                }
            }
        }
        let (_, at, cap) = best.expect("a placement and a register cap");
        self.place(at);
        self.load(cap)
    }

    /// The register cap of the kernel the launches use.
    pub fn registers(&self) -> usize {
        self.registers
    }

    /// Registers a thread of that kernel takes, as the driver's compiler allotted them.
    pub fn registers_used(&self) -> Result<usize, GpuError> {
        Ok(self.func.num_regs().during("reading the lattice kernel's registers")? as usize)
    }

    /// Threads per chain (block) the launches use.
    pub fn block_threads(&self) -> usize {
        self.threads as usize
    }

    /// Most threads per chain this kernel launches with (its registers per thread limit it: 512 x 132 registers of
    /// the f64 kernel are more than an SM has).
    pub fn max_block_threads(&self) -> Result<usize, GpuError> {
        Ok(self.func.max_threads_per_block().during("reading the lattice kernel's thread limit")? as usize)
    }

    /// Is each chain's W held in shared memory (screened mixed: the f32 copy its moves and measurements read)?
    pub fn on_chip(&self) -> bool {
        self.screened || self.placement != Placement::OffChip
    }

    /// Does this ensemble run screened mixed ([`Self::screened`])?
    pub fn is_screened(&self) -> bool {
        self.screened
    }

    /// Chains resident on the whole GPU at once (blocks per SM times SMs): fewer leave SMs idle, a chain count
    /// that is not a multiple runs a partial last wave.
    pub fn chains_in_flight(&self) -> Result<usize, GpuError> {
        let per_sm = self
            .func
            .occupancy_max_active_blocks_per_multiprocessor(self.threads, self.shared(), None)
            .during("reading the lattice kernel's occupancy")?;
        Ok(per_sm as usize * self.gpu.info.multiprocessors as usize)
    }

    fn shared(&self) -> usize {
        self.shared_at(self.placement)
    }

    fn shared_at(&self, at: Placement) -> usize {
        let (np, ns) = (self.params.pairs as usize, self.params.sites as usize);
        if self.screened {
            return screened_shared_bytes(np, ns);
        }
        shared_bytes(np, ns, std::mem::size_of::<S>(), std::mem::size_of::<A>(), at)
    }

    /// Random-number outputs a batch draws from, 4 to [`WINDOW`]: a test makes it small so that batches end early
    /// and first moves take the one-output-at-a-time path, which the full window reaches about never.
    pub fn set_window(&mut self, outputs: usize) {
        assert!((4..=WINDOW).contains(&outputs), "lattice gpu: window {outputs}");
        self.params.window = outputs as i32;
    }

    /// Intermediate-ratio magnitude below which an accepted swap rebuilds W (default `degenerate_ratio` of S, the type
    /// the ratios are evaluated in).
    pub fn set_degenerate(&mut self, ratio: f64) {
        self.params.degenerate = ratio;
    }

    /// Queue `equil` sweeps, then `sweeps` sweeps with a measurement each, for every chain (one launch).
    pub fn run(&mut self, equil: usize, sweeps: usize) -> Result<(), GpuError> {
        self.params.equil = equil as i32;
        self.params.sweeps = sweeps as i32;
        let scratch = if self.placement.m_on_chip() { 1 } else { self.params.chains as usize * device_scratch(self.params.pairs as usize) };
        if self.m.len() < scratch {
            self.gpu.ensure_fits("the chains' rebuild buffers (off chip)", scratch * std::mem::size_of::<A>())?;
            self.m = self.gpu.zeros("the chains' rebuild buffers (off chip)", scratch)?;
        }
        let cfg = LaunchConfig { grid_dim: (self.params.chains as u32, 1, 1), block_dim: (self.threads, 1, 1), shared_mem_bytes: self.shared() as u32 };
        let mut b = self.gpu.stream.launch_builder(&self.func);
        b.arg(&self.params).arg(&self.phi).arg(&self.phi32).arg(&self.nbr).arg(&self.hop);
        b.arg(&mut self.w).arg(&mut self.m).arg(&mut self.up).arg(&mut self.dn).arg(&mut self.rng).arg(&mut self.tally);
        // SAFETY: one block per chain; each block indexes its own chain's slices of w (np^2), of m (device_scratch,
        // only where M is off chip, allocated above then), up/dn (np), rng (1) and tally (LEN), phi (ns^2), phi32
        // (ns^2, read by the screened entry alone), nbr/hop (4 ns), all of the sizes uploaded; shared memory is sized
        // by shared_bytes for the same placement (vec_bytes with it; screened: screened_shared_bytes, W's copy and
        // the vectors of W off chip), and the threads are at least np / NARROW_MAX (set_block_threads, block_threads).
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
                    cond_max: f64::NAN,
                    growth_max: f64::NAN,
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

impl GpuEnsemble<f64, f64> {
    /// Screened mixed (lattice.cu `run` with SCR, as `cpu::Screened`): double's chains, W in f64 in each chain's
    /// device buffer and changed only as double's, every proposal screened by an f32 ratio and a bound on its distance
    /// from double's from W's f32 copy held on chip, only the moves near the line or accepted decided on double's f64
    /// ratio, every measurement in f32 from the copy. Double's rebuild policy (never; the degenerate swap's).
    pub fn screened(gpu: &Arc<Gpu>, m: &Model, starts: &[(Config, Vec<f64>)], seed: u64) -> Result<Self, GpuError> {
        let shared = screened_shared_bytes(m.pairs, m.sites) + STATIC_SHARED;
        if shared > gpu.info.shared_per_block_optin {
            return Err(GpuError::SharedMemory { kernel: format!("screened mixed lattice sweeps at {} pairs (W's f32 copy on chip)", m.pairs), asked: shared, limit: gpu.info.shared_per_block_optin });
        }
        Self::build(gpu, m, starts, seed, true)
    }
}

/// The kernel run on the host by scripts/lattice-run-host.cpp (a block of host threads a chain, in CI): a case's
/// launch written to a folder as the kernel reads it, and the chains' state read back.
#[cfg(test)]
pub(super) mod host {
    use super::*;
    use std::path::Path;

    /// A launch: where W and M live, threads per chain, the run and the knobs the tests turn.
    pub struct Case {
        pub name: &'static str,
        pub placement: Placement,
        pub threads: usize,
        pub equil: usize,
        pub sweeps: usize,
        pub recompute: usize,
        pub residual_limit: f64,
        pub window: usize,
        /// The degenerate-swap threshold (None: the default of the evaluation type).
        pub degenerate: Option<f64>,
        pub bfactor: usize,
        /// Screened mixed (`GpuEnsemble::screened`; write's S and A f64, placement off chip).
        pub screened: bool,
    }

    impl Case {
        pub fn new(name: &'static str, placement: Placement, threads: usize, equil: usize, sweeps: usize) -> Self {
            Case { name, placement, threads, equil, sweeps, recompute: 0, residual_limit: 0.0, window: WINDOW, degenerate: None, bfactor: DEFAULT_BFACTOR, screened: false }
        }
    }

    fn bytes<T: Copy, const N: usize>(v: &[T], to: fn(T) -> [u8; N]) -> Vec<u8> {
        v.iter().flat_map(|&x| to(x)).collect()
    }

    /// The case's folder under `root` with the launch's parameters (`LatticeParams`'s C layout, written field by
    /// field: its padding is not data) and arrays; returns its line of cases.txt (folder, precision as the kernel's
    /// entries name it, threads, dynamic shared bytes, device-buffer entries a chain).
    pub fn write<S: Real, A: Real>(root: &Path, case: &Case, m: &Model, starts: &[(Config, Vec<f64>)], seed: u64) -> String {
        let mut i = Inputs::<S>::new(m, starts, seed);
        let p = &mut i.params;
        p.place::<S, A>(case.placement);
        (p.equil, p.sweeps, p.recompute, p.bfactor, p.window) = (case.equil as i32, case.sweeps as i32, case.recompute as i32, case.bfactor as i32, case.window as i32);
        p.residual_limit = case.residual_limit;
        p.degenerate = case.degenerate.unwrap_or(p.degenerate);
        assert!(case.threads.is_multiple_of(32) && case.threads * NARROW_MAX >= m.pairs && case.threads <= 1024);
        assert_eq!(std::mem::size_of::<LatticeParams>(), 72, "LatticeParams' layout changed: update this and lattice-run-host.cpp");
        let ints = [p.sites, p.pairs, p.chains, p.equil, p.sweeps, p.recompute, p.bfactor, p.ld, p.on_chip, p.vec_bytes];
        let mut pb = bytes(&ints, i32::to_le_bytes);
        pb.extend(bytes(&[p.j, p.degenerate, p.residual_limit], f64::to_le_bytes));
        pb.extend(p.window.to_le_bytes());
        pb.extend([0u8; 4]);
        let dir = root.join(case.name);
        std::fs::create_dir_all(&dir).unwrap();
        let s_bytes = |v: &[S]| v.iter().flat_map(|x| if S::NAME == "f32" { (x.f64() as f32).to_le_bytes().to_vec() } else { x.f64().to_le_bytes().to_vec() }).collect::<Vec<u8>>();
        assert!(!case.screened || (S::NAME, A::NAME, case.placement) == ("f64", "f64", Placement::OffChip), "a screened case is f64 off chip");
        if case.screened {
            std::fs::write(dir.join("phi32.bin"), bytes(&i.phi32, f32::to_le_bytes)).unwrap();
        }
        for (file, b) in [("params.bin", pb), ("phi.bin", s_bytes(&i.phi)), ("nbr.bin", bytes(&i.nbr, i32::to_le_bytes)), ("hop.bin", bytes(&m.hop, f64::to_le_bytes)), ("w.bin", s_bytes(&i.w)), ("up.bin", bytes(&i.up, i32::to_le_bytes)), ("dn.bin", bytes(&i.dn, i32::to_le_bytes)), ("rng.bin", bytes(&i.rng, u64::to_le_bytes))] {
            std::fs::write(dir.join(file), b).unwrap();
        }
        let entry = entry_of::<S, A>(case.screened, 128);
        let precision = entry.trim_start_matches("lattice_sweeps_"); // f64, f32, mixed or screened: the kernel's entry
        let shared = if case.screened { screened_shared_bytes(m.pairs, m.sites) } else { shared_bytes(m.pairs, m.sites, std::mem::size_of::<S>(), std::mem::size_of::<A>(), case.placement) };
        let scratch = if case.placement.m_on_chip() { 0 } else { device_scratch(m.pairs) };
        format!("{} {precision} {} {shared} {scratch}", case.name, case.threads)
    }

    /// The chains' state after the host run of `write`'s case (W widened to f64).
    pub fn read<S: Real>(root: &Path, name: &str, m: &Model) -> Vec<ChainResult> {
        let dir = root.join(name);
        let file = |f: &str| std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e} (did lattice-run-host run?)"));
        let ints = |f: &str| file(f).chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap()) as u32).collect::<Vec<u32>>();
        let (up, dn) = (ints("out-up.bin"), ints("out-dn.bin"));
        let w: Vec<f64> = if S::NAME == "f32" {
            file("out-w.bin").chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap()) as f64).collect()
        } else {
            file("out-w.bin").chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect()
        };
        let t: Vec<f64> = file("out-tally.bin").chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
        let np = m.pairs;
        assert!(up.len().is_multiple_of(np) && w.len() == up.len() * np && t.len() == up.len() / np * tally::LEN, "{name}: outputs of the wrong sizes");
        (0..up.len() / np)
            .map(|c| ChainResult {
                config: Config { up: up[c * np..(c + 1) * np].to_vec(), dn: dn[c * np..(c + 1) * np].to_vec() },
                w: w[c * np * np..(c + 1) * np * np].to_vec(),
                tally: t[c * tally::LEN..(c + 1) * tally::LEN].try_into().unwrap(),
                cond_max: f64::NAN,
                growth_max: f64::NAN,
            })
            .collect()
    }
}
