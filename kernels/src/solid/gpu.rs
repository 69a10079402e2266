//! The GPU engine: every stage of a step for all walkers at once (paper 000's interchange of the walker and
//! electron loops). Per electron, six launches over all walkers (solid.cu): determinant gradient, Jastrow and
//! proposal, orbital VGL at the proposals (bspline kernel, or the planewave kernel for the gas: `Evaluator`, chosen
//! at construction, both writing `[point][5][stride]`), determinant ratio, Jastrow ratio and Metropolis-
//! Hastings, the update for the accepted walkers: with delay k > 1 (`Params::delay`) the gradient and ratio against
//! the window's pending moves and the accept into its slot (common.cuh's delayed_*), and at each window's end the
//! rank-k apply over every walker's inverse (`apply_pending`: in double three cuBLAS strided-batched GEMMs on the
//! slabs; in mixed precision cuBLAS's Y = B^-T U^T and two kernels of solid.cu that read the f32 inverses in the slabs
//! directly and do the products in f64, W = V t^T and t -= W^T Y, rounding each entry to f32 once); with k = 1
//! Sherman-Morrison (each row's coefficient and rank-1 update in one pass). The timed sweep joins these: two launches
//! a move (`move_begin`, `move_end`) around the orbitals', and with the B-spline orbitals one launch a window of k
//! moves (`window`: each walker's block evaluates the orbitals at its own proposal), then the apply. The measurement:
//! VGL of all electrons in chunks of points (B-spline: sorted by cell for the grouped kernel; plane waves: in walker
//! order), the determinant's gradient and Laplacian (and first,
//! for the walkers that re-invert (`conditioning::reinverts`, walker by walker as on the CPU) the f64 inverse: by
//! Newton-Schulz refinement of the updated inverse rows in tensor-core DGEMMs, or where that cannot converge, and at
//! the start, an f64 LU: cuBLAS batched below n = 1024 per spin, cuSOLVER per matrix from there), the kinetic energy, the Ewald energy (ewald kernel,
//! fed fractional coordinates on the device; in open boundaries the direct sum, `solid_open_coulomb`), the nonlocal energy (pseudopotential kernel, on the very walker slabs
//! this engine moves; without ions, the gas, there is no such stage: no kernel, no launch, no transfer). Then
//! (DMC) the comb on the host and one slab copy per walker that dies.
//!
//! What crosses between host and device per step (counted: `traffic`): the move tallies (accepted
//! count and displacements), the kinetic, Ewald and
//! nonlocal energies (the pseudopotential kernel builds its job list and sums its contributions on the device: one
//! download of the energies and the job count), and for a re-inversion the list of its walkers (up) and their
//! matrix norms and the refinement's residuals per update (the LU's status flags instead) (down). The random
//! numbers do not cross: the
//! device draws them (`solid_draws`, draws.cu) from the CPU engine's streams in its order, moves and quadrature
//! rotations, so a double run follows the CPU engine. Branching copies stay on the device.
//!
//! Walker data in paper 000's layout (`pseudopotential::slab`): each walker's positions, rotations, transposed
//! inverse and gradient rows contiguous in one slab, all slabs in one allocation at a fixed walker stride, which
//! every kernel here and the pseudopotential kernel index: a branching copy of walker j over walker i is one
//! device-to-device copy, a migration one transfer each way (`take`, `put`).
//!
//! Start: the CPU engine's start positions (`start_walkers`), inverted and measured here, so a GPU engine of any
//! size starts in a moment and the trajectory check compares two independent starts.
//!
//! Timers (with `profile`): CUDA events between the launches of different classes, summed per class after the step.

use super::conditioning::{device_norms, reinverts};
use super::walker::Walker;
use super::finite::Finite;
use super::ranks::{self, Cargo, Engine, Run};
use crate::ensemble::dmc::Dmc;
use crate::ensemble::vmc::Vmc;
use super::{start_walkers, Class, Coulomb, Orbitals, Params, Parts, Solid, SolidError, Timers, PER_MOVE};
use crate::bspline::gpu::{default_per_thread, suffix, CellSort, GpuSpline};
use crate::bspline::Output;
use crate::determinant::gpu::{delayed_gemms, delayed_y, solver_min_n, DelayedBatch};
use crate::ewald::gpu::GpuEwald;
use crate::gpu::{blas_ok, BatchedGemm, BatchedLu, CudaEvent, CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PointKernel, PushKernelArg, Traffic};
use crate::atomic::gpu::GpuAtomicOrbitals;
use crate::planewave::gpu::GpuPlaneWaves;
use crate::pseudopotential::gpu::{jastrow_tables, GpuPseudo, MAX_JASTROW_COEFS};
use crate::pseudopotential::slab::{Field, Slab, SlabLayout};
use crate::pseudopotential::Setup;
use crate::ensemble::moves::MoveStats;
use crate::{Real, Scalar};
use cudarc::driver::{sys, CudaGraph, DevicePtr, DeviceRepr};
use std::sync::Arc;

/// The solid's kernels: the per-walker random draws (draws.cu, a file of its own so that g++ builds it for the host
/// check, scripts/solid-draws-host.cpp) before solid.cu.
pub const SRC: &str = concat!("#line 1 \"draws.cu\"\n", include_str!("draws.cu"), "#line 1 \"solid.cu\"\n", include_str!("solid.cu"));

/// Most B-spline coefficients of a Jastrow functor: the pseudopotential kernel's packing (SOLID_MAX_JC in solid.cu).
const MAX_JC: usize = MAX_JASTROW_COEFS;
/// Threads per block of the solid.cu kernels that are not one block per walker.
const BLOCK: u32 = 128;

/// Threads per block of the kernels that run one block per walker (the moves' determinant and Jastrow steps, the
/// sums): enough for about 128k threads over all walkers, 128 to 512. One block per walker leaves a few blocks per
/// SM when walkers are few, and those kernels wait on memory: more threads per walker keep more loads in flight.
/// Measured on the H100 (walker steps/s, double / mixed, delay path; every solid.cu kernel at the block size):
///
/// | threads | 1536 electrons, 256 walkers | 384 electrons, 1024 walkers |
/// | --- | --- | --- |
/// | 128 | 524 / 506 | 11,870 / 11,525 |
/// | 256 | 604 / 562 | 11,323 / 10,935 |
/// | 512 | 635 / 582 | 9,911 / 9,620 |
///
/// Tried and not kept (63b1dc0, 2026-12-06): at most 2 n threads (n electrons a spin), where 512 leave most warps of
/// a move's determinant steps idle at 256 electrons. On the H100 (mixed, against f8cab3e interleaved P C C P): 256
/// threads at 256 walkers ran the step 0.6% faster (84.6 -> 84.2 ms for 8 steps) but 2.6% to 4.4% slower at 32 to 128
/// walkers (41.6 -> 43.4 ms at 32), the fixed cost a move rising from 16.2 to 17.1 us: where walkers are few, more
/// threads a walker keep more of each move's loads in flight.
pub(super) fn walker_block(walkers: usize) -> u32 {
    ((1usize << 17) / walkers.max(1)).next_power_of_two().clamp(128, 512) as u32
}
/// Threads per block of solid_draws: one warp, the walkers' sequential draws spread over many SMs.
const DRAW_BLOCK: u32 = 32;
/// Sherman-Morrison holds a row in registers between its two passes when it is longer than this (the cache keeps
/// shorter ones) and at most `SM_HELD_MAX` entries (32 SOLID_SM_HELD in solid.cu): measured on the H100 (solid.cu).
const SM_CACHED_BYTES: usize = 2048;
const SM_HELD_MAX: usize = 512;
/// Most bytes of orbital VGL output per measurement chunk.
const CHUNK_BYTES: usize = 1 << 30;

/// Mirrors `SolidParams` in solid.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct SolidParams {
    walkers: i32,
    electrons: i32,
    n: i32,
    stride: i32,
    ions: i32,
    dmc: i32,
    tau: f64,
    cell: [f64; 3],
    inv_cell: [f64; 3],
    jn: [i32; 3],
    pad: i32,
    jcut: [f64; 3],
    jinvh: [f64; 3],
    jcoef: [[f64; MAX_JC]; 3],
    slab: SlabLayout,
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for SolidParams {}

struct Funcs {
    det_grad: CudaFunction,
    jastrow_move: CudaFunction,
    det_ratio: CudaFunction,
    sm_update: CudaFunction,
    measure_det: CudaFunction,
    cell_keys: CudaFunction,
    from_inverse: CudaFunction,
    to_inverse: CudaFunction,
    kinetic: CudaFunction,
    fractions: CudaFunction,
    row_sum: CudaFunction,
    det_column: CudaFunction,
    det_ratio_delayed: CudaFunction,
    det_accept: CudaFunction,
    delayed_fix: CudaFunction,
    /// The moves' fused launches (solid.cu move_begin, move_end; the delayed ones with delayed updates), which the
    /// sweep's graph replays in place of the four (six with delayed updates) they join.
    move_begin: CudaFunction,
    move_end: CudaFunction,
    /// With the B-spline orbitals, a move with its orbitals in one launch, a window of delayed moves in one
    /// (solid.cu move_window), in place of the three launches a move of move_begin, the bspline kernel and move_end.
    window: CudaFunction,
    /// Where S is narrower than A (mixed): the apply's W = V t^T and t -= W^T Y on the S inverses (solid.cu).
    fused: Option<Fused>,
    gather: CudaFunction,
    identity: CudaFunction,
    matrix_ptrs: CudaFunction,
    draws: CudaFunction,
}

struct Fused {
    w: CudaFunction,
    update: CudaFunction,
    /// The pending inverse rows widened to f64 for cuBLAS's Y = B^-T U^T.
    widen: CudaFunction,
}

/// Tiles of solid.cu's delayed_w (rows of t per block of W_BLOCK threads, with 32 or 64 slots: 8 warps of 32 rows
/// by 16 or 32 slots on the FP64 tensor cores) and delayed_update (rows and columns of t per block of UPDATE_BLOCK
/// threads: 8 warps of 32 x 32): SOLID_W_BLOCK, SOLID_W_ROWS, SOLID_U_ROWS, SOLID_U_COLS, SOLID_U_BLOCK.
const W_BLOCK: u32 = 256;
const W_ROWS: usize = 128;
const U_ROWS: usize = 64;
const U_COLS: usize = 128;
const UPDATE_BLOCK: u32 = 256;

/// The pending moves of the delayed updates (delay k > 1), every walker's in one allocation each (solid.cu): the rows
/// in S (exact: a new row is rounded to S before the update writes it, and ut holds rows of the S inverse), what is
/// computed from them in A, f64 in mixed precision too (determinant::delayed says why).
struct Pending<S, A> {
    k: usize,
    /// New value rows and the inverse rows they started from, `[walker][k][stride]`.
    v: CudaSlice<S>,
    ut: CudaSlice<S>,
    /// B^-1, `[walker][k][k]`; the row each slot replaces (-1: empty), `[walker][k]`; V t[q] of the last column.
    binv: CudaSlice<A>,
    rep: CudaSlice<i32>,
    p: CudaSlice<A>,
    /// The apply's W^T and Y^T, `[walker][k][n]` (W^T's buffer first holds ut widened to f64 where S is f32).
    w: CudaSlice<A>,
    y: CudaSlice<A>,
}

impl<S: Real, A: Real> Pending<S, A> {
    fn new(gpu: &Gpu, walkers: usize, k: usize, n: usize, stride: usize) -> Result<Self, GpuError> {
        Ok(Pending {
            k,
            v: gpu.zeros("delayed new rows", walkers * k * stride)?,
            ut: gpu.zeros("delayed inverse rows", walkers * k * stride)?,
            binv: gpu.zeros("delayed B inverses", walkers * k * k)?,
            rep: gpu.upload("delayed slots", &vec![-1i32; walkers * k])?,
            p: gpu.zeros("delayed products p", walkers * k)?,
            w: gpu.zeros("delayed products W", walkers * k * n)?,
            y: gpu.zeros("delayed products Y", walkers * k * n)?,
        })
    }

    /// Device bytes of `walkers` walkers' pending moves.
    fn bytes(walkers: usize, k: usize, n: usize, stride: usize) -> usize {
        walkers * (2 * k * stride * std::mem::size_of::<S>() + k * (k + 2 * n + 1) * std::mem::size_of::<A>() + 4 * k)
    }
}

/// Buffers of the f64 re-inversion, and the walker lists the measurement goes through. The matrices are packed in
/// list order: matrix q is spin q % 2 of the list's walker q / 2, column-major n x n (solid.cu's measure_det mode 1).
struct Inversion {
    /// The listed walkers' Slater matrices (the LU works in place), room for every walker's two.
    work: CudaSlice<f64>,
    /// Their inverses, same layout.
    out: CudaSlice<f64>,
    /// The Newton-Schulz refinement's 2 I - A X and X (2 I - A X) of `batch` matrices at a time.
    r: CudaSlice<f64>,
    t: CudaSlice<f64>,
    batch: usize,
    /// cuBLAS's batched route: the addresses of the listed matrices of work, then of out.
    ptrs: CudaSlice<u64>,
    /// Pivots and status per listed matrix; getrs's status apart from getrf's (after the first 2 walkers entries).
    piv: CudaSlice<i32>,
    info: CudaSlice<i32>,
    /// Every walker in order (the measurement's list), and the walkers that re-invert this step (first entries).
    all: CudaSlice<i32>,
    chosen: CudaSlice<i32>,
}

/// Device memory of the refinement's two work buffers together: batches of matrices this large keep the GEMMs
/// wide (at 1536 electrons 113 matrices of n = 768, at 3072 electrons 28 of n = 1536) without doubling the
/// re-inversion's memory.
const REFINE_BYTES: usize = 1 << 30;
/// A refinement's last update is the one from a residual ||I - A X||_1 at most this (`GpuEngine::refine`): the next
/// residual is its square, 1e-12, below what an f64 LU's inverse leaves (n eps cond, 1e-11 at n = 768, cond 1e5),
/// and this is far above the rounding of the residual's own computation (the same n eps cond).
const REFINE_DONE: f64 = 1e-6;
/// A residual above this converges too slowly (or not at all, from 1 up): the LU takes over. Mixed walkers of the
/// worst conditioning start near it: at 1536 electrons (H100, bf1769a) the largest first residual of a batch was
/// 0.42, the typical 3e-3 (two updates), double ones 1e-10 (one).
const REFINE_DIVERGES: f64 = 0.9;
/// Most updates of a batch: from 0.9, nine squarings reach REFINE_DONE's square.
const REFINE_MOST: usize = 10;

impl Inversion {
    fn new(gpu: &Gpu, walkers: usize, n: usize) -> Result<Self, GpuError> {
        let m = 2 * walkers;
        let batch = (REFINE_BYTES / (2 * n * n * 8)).clamp(1, m);
        Ok(Inversion {
            work: gpu.zeros("Slater matrices", m * n * n)?,
            out: gpu.zeros("inverses", m * n * n)?,
            r: gpu.zeros("refinement residuals", batch * n * n)?,
            t: gpu.zeros("refinement products", batch * n * n)?,
            batch,
            ptrs: gpu.zeros("matrix addresses", 2 * m)?,
            piv: gpu.zeros("pivots", m * n)?,
            info: gpu.zeros("inversion info", 2 * m)?,
            all: gpu.upload("walker list", &(0..walkers as i32).collect::<Vec<_>>())?,
            chosen: gpu.zeros("re-inverting walkers", walkers)?,
        })
    }
}

/// CUDA events at class boundaries: the time between consecutive marks goes to the class of the later one.
#[derive(Default)]
struct Marks {
    events: Vec<CudaEvent>,
    classes: Vec<Class>,
    used: usize,
}

impl Marks {
    fn mark(&mut self, gpu: &Gpu, c: Class) -> Result<(), GpuError> {
        if self.used == self.events.len() {
            self.events.push(gpu.ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).during("creating an event")?);
            self.classes.push(c);
        }
        self.classes[self.used] = c;
        self.events[self.used].record(&gpu.stream).during("recording an event")?;
        self.used += 1;
        Ok(())
    }
    fn finish(&mut self) -> Result<Timers, GpuError> {
        let mut t = Timers::default();
        for i in 1..self.used {
            t.add(self.classes[i], self.events[i - 1].elapsed_ms(&self.events[i]).during("timing with events")? as f64 * 1e-3);
        }
        self.used = 0;
        Ok(t)
    }
}

fn cfg(grid: (u32, u32), block: u32) -> LaunchConfig {
    LaunchConfig { grid_dim: (grid.0, grid.1, 1), block_dim: (block, 1, 1), shared_mem_bytes: 0 }
}

/// The orbitals' evaluator on the GPU: the B-spline kernel, or a kernel of one block per point (the plane waves, the
/// atomic orbitals), all writing VGL rows `[point][5][stride]` in A into their output buffer from the positions in
/// theirs. The engine chose it at construction; each method dispatches once per launch.
enum Evaluator<S: Real, A: Real> {
    Spline(GpuSpline<S, A>),
    Points(Box<dyn PointKernel<A>>),
}

impl<S: Real, A: Real> Evaluator<S, A> {
    /// Queue the evaluation of the points set with `device_positions` (the per-point kernel).
    fn launch(&mut self) -> Result<(), GpuError> {
        match self {
            Evaluator::Spline(s) => s.launch(),
            Evaluator::Points(k) => k.launch(),
        }
    }
    /// The same for points sorted by B-spline cell (the grouped kernel; the per-point kernels need no order).
    fn launch_sorted(&mut self) -> Result<(), GpuError> {
        match self {
            Evaluator::Spline(s) => s.launch_sorted(),
            Evaluator::Points(k) => k.launch(),
        }
    }
    /// The position buffer (`[point][xyz]`) of the next launch, which evaluates `points` points.
    fn device_positions(&mut self, points: usize) -> &mut CudaSlice<f64> {
        match self {
            Evaluator::Spline(s) => s.device_positions(points),
            Evaluator::Points(k) => k.rows_mut().device_positions(points),
        }
    }
    /// The output buffer, `[point][5][stride]`.
    fn device_outputs(&self) -> &CudaSlice<A> {
        match self {
            Evaluator::Spline(s) => s.device_outputs(),
            Evaluator::Points(k) => k.rows().device_outputs(),
        }
    }
}

/// One walker downloaded: positions, rotations, energies, inverse rows.
pub type WalkerState<S> = (Vec<f64>, Vec<f64>, Parts, Vec<S>);

/// All walkers on the GPU. Storage S, arithmetic A (double: f64/f64, mixed: f32/f64).
pub struct GpuEngine<'a, S: Real, A: Real> {
    gpu: Arc<Gpu>,
    pub sys: &'a Solid,
    p: Params,
    kp: SolidParams,
    f: Funcs,
    /// The orbitals' evaluator (the system's choice, made here once: every launch below goes to it).
    orb: Evaluator<S, A>,
    /// The measurement's points (every electron of every walker) sorted by B-spline cell for the grouped kernel
    /// (None with plane waves, whose cost does not depend on the order of the points).
    sort: Option<CellSort>,
    coulomb: GpuCoulomb<S, A>,
    /// The nonlocal pseudopotential (None without ions: no stage at all).
    pp: Option<GpuPseudo<S, A>>,
    /// Every walker's positions, rotations, inverse and gradient rows.
    slab: Slab<S>,
    ions: CudaSlice<f64>,
    draws: CudaSlice<f64>,
    g: CudaSlice<f64>,
    /// Per walker the Jastrow's value at the old position and its 5 sums at the proposal, `[walker][6]`.
    jold: CudaSlice<f64>,
    newpos: CudaSlice<f64>,
    accept: CudaSlice<i32>,
    /// Per walker this step's accepted moves and sums of |r' - r|^2 over its proposals and accepted moves,
    /// `[walker][3]` (f64: the count is exact far past any step's electrons).
    tally: CudaSlice<f64>,
    urow: CudaSlice<S>,
    /// Each walker's inverse row of the moving electron (Sherman-Morrison's pivot row).
    tk: CudaSlice<A>,
    det4: CudaSlice<f64>,
    term: CudaSlice<f64>,
    kin: CudaSlice<f64>,
    inversion: Inversion,
    /// The delayed updates' pending moves (None: Sherman-Morrison, delay 1).
    pending: Option<Pending<S, A>>,
    /// Points per measurement chunk.
    chunk: usize,
    pub parts: Vec<Parts>,
    /// Each walker's condition number at its last f64 re-inversion, which decides when it re-inverts next
    /// (`conditioning::reinverts`).
    pub cond: Vec<f64>,
    /// Walker re-inversions in the steps so far.
    pub reinversions: u64,
    /// Seconds the device spent in them (CUDA events from the first norm to the end of the LU or refinement; the
    /// condition numbers and the copy of the inverses into the slabs after it are not counted, nor the start's).
    pub reinversion_s: f64,
    /// Walker re-inversions of the steps that the refinement left to the LU (`reinvert`: none expected).
    pub lu_fallbacks: u64,
    /// The host copy of `tally` from the last step: the accepted counts and the step's displacements come from it.
    last_tally: Vec<f64>,
    /// The run of this engine's own steps (`step`), as `CpuEngine`'s.
    run: Run,
    pub steps: usize,
    pub timers: Timers,
    pub moves: MoveStats,
    /// Record CUDA events between classes into `timers` (off while the step is timed as a whole: the events and
    /// their read-out cost host time the step would not otherwise spend).
    pub profile: bool,
    marks: Marks,
    /// Bytes this engine moved between host and device in its steps (the pseudopotential kernel's apart).
    traffic: Traffic,
    /// Every walker's local energy and weight checked finite at every step (`validate`: on the host copies the
    /// comb needs anyway).
    pub finite: Finite,
    /// The sweep's launches (a few an electron, or with the B-spline orbitals a few a window), captured once into a
    /// CUDA graph and
    /// replayed each step: at a few hundred walkers each launch runs for a few microseconds, about what the host
    /// takes to issue it, so the step was bound by issuing. Every argument is fixed from step to step (the electron,
    /// the buffers; the step's random numbers are drawn on the device before it). Not with `profile`, whose events
    /// need the launches issued one by one.
    sweep_graph: Option<CudaGraph>,
    /// Walkers staged for ranks of this process to copy device to device (`stage`).
    outbox: CudaSlice<u8>,
}

/// The Coulomb energy on the device: the ewald kernel's sums (periodic), or in open boundaries solid.cu's direct sum,
/// one block a walker, with the nuclei `[I][x, y, z, Z]` and their repulsion (the constant).
enum GpuCoulomb<S: Real, A: Real> {
    Ewald(GpuEwald<S, A>),
    Open { f: CudaFunction, nuclei: CudaSlice<f64>, count: i32, constant: f64, out: CudaSlice<A> },
}

impl<S: Real, A: Real> GpuCoulomb<S, A> {
    fn new(gpu: &Arc<Gpu>, c: &Coulomb, walkers: usize, func: &dyn Fn(&str) -> Result<CudaFunction, GpuError>) -> Result<Self, GpuError> {
        Ok(match c {
            Coulomb::Ewald(e) => GpuCoulomb::Ewald(GpuEwald::new(gpu, e, walkers)?),
            Coulomb::Open(o) => {
                let nuclei: Vec<f64> = o.nuclei.iter().flat_map(|(z, r)| [r[0], r[1], r[2], *z]).collect();
                GpuCoulomb::Open {
                    f: func("open_coulomb")?,
                    // no nuclei: a one-entry placeholder the kernel never reads
                    nuclei: if nuclei.is_empty() { gpu.zeros("nuclei", 1)? } else { gpu.upload("nuclei", &nuclei)? },
                    count: o.nuclei.len() as i32,
                    constant: o.nuclear_repulsion(),
                    out: gpu.zeros("Coulomb energies", walkers)?,
                }
            }
        })
    }
}

impl<'a, S: Scalar, A: Scalar> GpuEngine<'a, S, A> {
    /// `walkers` walkers at the CPU engine's start positions (`start_walkers`), inverted (cuBLAS, f64) and
    /// measured on the GPU: the start `CpuEngine::new` makes, up to rounding.
    pub fn new(gpu: &Arc<Gpu>, sys: &'a Solid, setup: &Setup<S>, walkers: usize, p: Params) -> Result<Self, SolidError> {
        assert!((1..=65535).contains(&walkers), "solid gpu: 1..=65535 walkers");
        let w = start_walkers::<S>(sys, walkers, &p);
        let (ne, n, st, ni) = (sys.electrons(), setup.per_spin(), setup.table.stride, setup.ion_count());
        let j = sys.jastrow();
        let (jn, jcut, jinvh, jcoef) = jastrow_tables(j, "solid gpu");
        let kp = SolidParams {
            walkers: walkers as i32,
            electrons: ne as i32,
            n: n as i32,
            stride: st as i32,
            ions: ni as i32,
            dmc: p.dmc as i32,
            tau: p.tau,
            cell: setup.cell,
            inv_cell: setup.cell.map(crate::pseudopotential::inv_side),
            jn,
            pad: 0,
            jcut,
            jinvh,
            jcoef,
            slab: SlabLayout::new(setup, true),
        };
        let ab = std::mem::size_of::<A>();
        assert!((1..=crate::determinant::MAX_DELAY).contains(&p.delay), "solid gpu: delay {} out of 1..=64", p.delay);
        // the mixed apply's products are mma.m8n8k4 f64 (solid.cu), which trap below sm_80 (CUDA 13 still builds for
        // sm_75): refused here, before anything is launched
        let (major, minor) = gpu.info.compute_capability;
        if std::mem::size_of::<S>() < ab && p.delay > 1 && major < 8 {
            return Err(SolidError::NoTensorF64(gpu.info.name.clone(), major, minor));
        }
        let pending_bytes = if p.delay > 1 { Pending::<S, A>::bytes(walkers, p.delay, n, st) } else { 0 };
        gpu.ensure_fits("the walkers' slabs, f64 re-inversion buffers and delayed moves", walkers * kp.slab.bytes as usize + 4 * walkers * n * n * 8 + pending_bytes)?;
        let slab = Slab::upload(gpu, setup, &w, true)?;
        let chunk = (CHUNK_BYTES / (5 * st * ab)).clamp(walkers, 65535).min((walkers * ne).max(walkers));
        let sfx = suffix::<S, A>();
        let func = |name: &str| gpu.function("solid", SRC, &format!("solid_{name}_{sfx}"));
        let f = Funcs {
            det_grad: func("det_grad")?,
            jastrow_move: func("jastrow_move")?,
            det_ratio: func("det_ratio")?,
            // rows over 2 KB and of at most 512 entries held in registers (solid.cu, sm_update)
            sm_update: func(if st * std::mem::size_of::<S>() > SM_CACHED_BYTES && st <= SM_HELD_MAX { "sm_update_held" } else { "sm_update" })?,
            measure_det: func("measure_det")?,
            cell_keys: gpu.function("solid", SRC, "solid_cell_keys")?,
            from_inverse: func("from_inverse")?,
            to_inverse: func("to_inverse")?,
            kinetic: func("kinetic")?,
            fractions: func("fractions")?,
            row_sum: gpu.function("solid", SRC, "solid_row_sum")?,
            det_column: func("det_column")?,
            det_ratio_delayed: func("det_ratio_delayed")?,
            det_accept: func("det_accept")?,
            delayed_fix: func("delayed_fix")?,
            move_begin: func(if p.delay > 1 { "move_begin_delayed" } else { "move_begin" })?,
            move_end: func(if p.delay > 1 { "move_end_delayed" } else { "move_end" })?,
            window: func(if p.delay > 1 { "moves_delayed" } else { "moves" })?,
            fused: if std::mem::size_of::<S>() < ab {
                Some(Fused {
                    w: func(if p.delay <= 32 { "delayed_w4" } else { "delayed_w8" })?,
                    update: func("delayed_update")?,
                    widen: gpu.function("solid", SRC, "solid_widen_ut")?,
                })
            } else {
                None
            },
            gather: gpu.function("solid", SRC, "solid_gather_positions")?,
            identity: gpu.function("solid", SRC, "solid_identity")?,
            matrix_ptrs: gpu.function("solid", SRC, "solid_matrix_ptrs")?,
            draws: gpu.function("solid", SRC, "solid_draws")?,
        };
        let (orb, sort) = match &sys.orbitals {
            Orbitals::Table => {
                let spline = GpuSpline::new(gpu, &setup.table, chunk, Output::Vgl, default_per_thread::<S, A>())?.for_sorted_points()?;
                let sort = spline.cell_sort(walkers * ne)?;
                (Evaluator::Spline(spline), Some(sort))
            }
            Orbitals::PlaneWaves(w) => (Evaluator::Points(Box::new(GpuPlaneWaves::new(gpu, w, st, chunk)?)), None),
            Orbitals::Atomic(o) => (Evaluator::Points(Box::new(GpuAtomicOrbitals::new(gpu, o, st, chunk)?)), None),
        };
        let mut e = GpuEngine {
            orb,
            sort,
            coulomb: GpuCoulomb::new(gpu, &sys.coulomb, walkers, &func)?,
            pp: if ni > 0 { Some(GpuPseudo::new(gpu, setup, &slab)?) } else { None },
            slab,
            // without ions a one-entry placeholder (no zero-length allocation): the kernels loop over no ion
            ions: if ni > 0 { gpu.upload("ion positions", &setup.ions)? } else { gpu.zeros("ion positions", 1)? },
            draws: gpu.zeros("random numbers", walkers * ne * PER_MOVE)?,
            g: gpu.zeros("ratios and gradients", 4 * walkers)?,
            jold: gpu.zeros("Jastrow sums of a move", 6 * walkers)?,
            newpos: gpu.zeros("proposals", 3 * walkers)?,
            accept: gpu.zeros("accept flags", walkers)?,
            tally: gpu.zeros("move tallies", 3 * walkers)?,
            urow: gpu.zeros("proposed rows", 4 * walkers * st)?,
            tk: gpu.zeros("Sherman-Morrison rows", walkers * st)?,
            det4: gpu.zeros("determinant derivatives", 4 * walkers * ne)?,
            term: gpu.zeros("kinetic terms", walkers * ne)?,
            kin: gpu.zeros("kinetic energies", walkers)?,
            inversion: Inversion::new(gpu, walkers, n)?,
            pending: if p.delay > 1 { Some(Pending::new(gpu, walkers, p.delay, n, st)?) } else { None },
            chunk,
            last_tally: vec![0.0; 3 * walkers],
            run: Run::placeholder(),
            parts: vec![Parts::default(); walkers],
            cond: vec![f64::INFINITY; walkers],
            reinversions: 0,
            reinversion_s: 0.0,
            lu_fallbacks: 0,
            steps: 0,
            timers: Timers::default(),
            moves: MoveStats::default(),
            profile: false,
            marks: Marks::default(),
            traffic: Traffic::default(),
            finite: Finite::default(),
            sweep_graph: None,
            outbox: gpu.zeros("the migration's outbox", 1)?,
            gpu: gpu.clone(),
            p,
            sys,
            kp,
            f,
        };
        // the measurement with a re-inversion makes the inverses and gradient rows from the positions
        e.measure(&(0..walkers).collect::<Vec<_>>(), false)?;
        e.energies_to_host()?;
        e.run = Run::start(&mut e, &p, sys.electrons())?;
        // the start's transfers and its LU re-inversion of every walker are not a step's
        e.traffic = Traffic::default();
        e.reinversion_s = 0.0;
        if let Some(pp) = &mut e.pp {
            pp.traffic = Traffic::default();
        }
        Ok(e)
    }

    /// Kinetic, Ewald and nonlocal energies of the last measurement into `parts`; the last step's move tallies into
    /// `last_tally`.
    fn energies_to_host(&mut self) -> Result<(), GpuError> {
        let kinetic = self.gpu.download(&self.kin)?;
        let coulomb: Vec<A> = match &self.coulomb {
            GpuCoulomb::Ewald(e) => e.outputs()?,
            GpuCoulomb::Open { out, .. } => self.gpu.stream.clone_dtoh(&out.slice(..self.count())).during("copying energies")?,
        };
        self.last_tally = self.gpu.download(&self.tally)?;
        self.traffic.down::<f64>(kinetic.len());
        self.traffic.down::<A>(coulomb.len());
        self.traffic.down::<f64>(self.last_tally.len());
        self.mark(Class::Other)?;
        let nonlocal = match &mut self.pp {
            Some(pp) => {
                let v = pp.evaluate(&self.slab)?;
                self.mark(Class::Pseudopotential)?;
                v
            }
            None => vec![0.0; self.count()],
        };
        for k in 0..self.count() {
            self.parts[k] = Parts { kinetic: kinetic[k], coulomb: coulomb[k].f64(), nonlocal: nonlocal[k] };
        }
        Ok(())
    }

    pub fn count(&self) -> usize {
        self.kp.walkers as usize
    }

    /// Bytes moved between host and device by the steps so far (all stages).
    pub fn traffic(&self) -> Traffic {
        match &self.pp {
            Some(pp) => self.traffic.merge(pp.traffic),
            None => self.traffic,
        }
    }

    fn mark(&mut self, c: Class) -> Result<(), GpuError> {
        if self.profile {
            self.marks.mark(&self.gpu, c)?;
        }
        Ok(())
    }

    /// Local energies of all walkers (host copies of the last step's).
    pub fn energies(&self) -> Result<Vec<f64>, GpuError> {
        Ok(self.parts.iter().map(Parts::local).collect())
    }

    /// Moves accepted by each walker in the last step.
    pub fn accepted(&self) -> Result<Vec<u32>, GpuError> {
        Ok(self.last_tally.chunks_exact(3).map(|t| t[0] as u32).collect())
    }

    /// Walker k's positions, rotations, energies and inverse rows (its slab downloaded), for validation.
    pub fn walker(&mut self, k: usize) -> Result<WalkerState<S>, GpuError> {
        let h = self.slab.take(&self.gpu, k, None)?;
        Ok((h.pos, h.rot, self.parts[k], h.inv))
    }

    /// Every walker's positions (`[walker][e][3]`), in one transfer.
    pub fn positions(&self) -> Result<Vec<f64>, GpuError> {
        self.slab.positions(&self.gpu)
    }

    /// All energies of every walker at its positions again, after an f64 re-inversion from the positions (what the
    /// start does; the CPU engine's `remeasure(true)`).
    pub fn remeasure(&mut self) -> Result<(), SolidError> {
        self.measure(&(0..self.count()).collect::<Vec<_>>(), false)?;
        Ok(self.energies_to_host()?)
    }

    /// Go on from `walkers` (a VMC run's, for a DMC run): `ranks::start_from`, the rows rebuilt on the device.
    pub fn start_from(&mut self, walkers: &[Walker<S>]) -> Result<(), SolidError> {
        let (p, ne) = (self.p, self.sys.electrons());
        ranks::start_from(self, |e| &mut e.run, walkers, &p, ne)?;
        // the start's transfers are not a step's
        self.traffic = Traffic::default();
        Ok(())
    }

    /// The DMC run's population control and its generations' energies and weights (None in VMC).
    pub fn dmc(&self) -> Option<&Dmc> {
        self.run.dmc()
    }

    /// The VMC run's steps' mean energies (None in DMC).
    pub fn vmc(&self) -> Option<&Vmc> {
        self.run.vmc()
    }

    /// One step of every walker, as `CpuEngine::step`.
    pub fn step(&mut self) -> Result<(), SolidError> {
        let step = self.steps;
        ranks::step_alone(self, |e| &mut e.run, step, |e, _, done| {
            done?;
            Ok(e.mark(Class::Branching)?)
        })?;
        if self.profile {
            self.timers = self.timers.merge(self.marks.finish()?);
        }
        Ok(())
    }

    /// The step without branching, as `CpuEngine::advance` (with `profile`, the marks are read by `step`).
    pub fn advance(&mut self) -> Result<(), SolidError> {
        let (nw, ne) = (self.count(), self.kp.electrons as usize);
        let step = self.steps;
        self.mark(Class::Other)?;
        self.draw(step)?;
        self.gpu.stream.memset_zeros(&mut self.tally).during("clearing the move tallies")?;
        self.mark(Class::Other)?;
        self.sweep(ne)?;
        // walker by walker, as the CPU engine
        let chosen: Vec<usize> = (0..nw).filter(|&k| reinverts(&self.p, step, S::EPS, self.cond[k])).collect();
        self.measure(&chosen, true)?;
        self.reinversions += chosen.len() as u64;
        self.energies_to_host()?;
        for t in self.last_tally.chunks_exact(3) {
            self.moves.accepted += t[0] as u64;
            self.moves.r2_proposed += t[1];
            self.moves.r2_accepted += t[2];
        }
        self.moves.attempted += (nw * ne) as u64;
        self.steps += 1;
        Ok(())
    }

    /// The random numbers of step `step` on the device, in the CPU engine's order: the moves, and the rotations into
    /// the slabs.
    fn draw(&mut self, step: usize) -> Result<(), GpuError> {
        let (nw, kp) = (self.count(), self.kp);
        let (seed, step, first) = (self.p.seed, step as u64, self.p.first as u64);
        let s = self.gpu.stream.clone();
        let mut b = s.launch_builder(&self.f.draws);
        b.arg(&kp.walkers).arg(&kp.electrons).arg(&kp.ions).arg(&kp.slab).arg(&seed).arg(&step).arg(&first);
        b.arg(&mut self.draws).arg(&mut self.slab.buf);
        // SAFETY: thread w < walkers writes draws[w][electrons][4] (the buffer holds walkers * electrons * 4) and
        // the ions * 9 rotations of walker w's slab.
        unsafe { b.launch(cfg(((nw as u32).div_ceil(DRAW_BLOCK), 1), DRAW_BLOCK)) }.during("launching solid_draws")?;
        Ok(())
    }

    /// For the tests, with the B-spline orbitals: the first window of the next step's moves (`window`), then the
    /// orbital rows it left (each walker's VGL at its last proposal, `[walker][5][stride]`) and the bspline kernel's
    /// at the same points.
    #[cfg(test)]
    pub(super) fn window_rows(&mut self) -> Result<(Vec<A>, Vec<A>), GpuError> {
        let nw = self.count();
        self.draw(self.steps)?;
        let k = self.pending.as_ref().map_or(1, |x| x.k).min(self.kp.n as usize);
        self.window(0, k as i32)?;
        let len = nw * 5 * self.kp.stride as usize;
        let s = self.gpu.stream.clone();
        let Evaluator::Spline(spline) = &mut self.orb else { panic!("window_rows needs the B-spline orbitals") };
        let fused = s.clone_dtoh(&spline.device_outputs().slice(..len)).during("copying the window's rows")?;
        spline.device_positions(nw);
        spline.launch()?;
        let kernel = s.clone_dtoh(&spline.device_outputs().slice(..len)).during("copying the kernel's rows")?;
        Ok((fused, kernel))
    }

    /// For the tests (delayed updates, B-spline orbitals): the next step's first `count` moves in one window or in the
    /// three launches a move, then what the moves leave per walker (g, jold, newpos, accept, tally) as f64.
    #[cfg(test)]
    pub(super) fn first_moves(&mut self, count: usize, windowed: bool) -> Result<Vec<f64>, GpuError> {
        self.draw(self.steps)?;
        let k = self.pending.as_ref().expect("first_moves needs delayed updates").k as i32;
        if windowed {
            self.window(0, count as i32)?;
        } else {
            for e in 0..count as i32 {
                self.move_begin(e, Some((e, k)))?;
                self.orb.launch()?;
                self.move_end(e, Some((e, k)))?;
            }
        }
        let s = self.gpu.stream.clone();
        let mut out = s.clone_dtoh(&self.g).during("g")?;
        out.extend(s.clone_dtoh(&self.jold).during("jold")?);
        out.extend(s.clone_dtoh(&self.newpos).during("newpos")?);
        out.extend(s.clone_dtoh(&self.accept).during("accept")?.iter().map(|&a| a as f64));
        out.extend(s.clone_dtoh(&self.tally).during("tally")?);
        Ok(out)
    }

    /// Every electron's move, all walkers: replayed from the graph captured at the first step (`sweep_graph`), or
    /// issued launch by launch with `profile`.
    fn sweep(&mut self, ne: usize) -> Result<(), GpuError> {
        if self.profile {
            return (0..ne).try_for_each(|e| self.sweep_electron(e as i32));
        }
        if self.sweep_graph.is_none() {
            // the delayed updates' cuBLAS handle, made before the capture
            self.gpu.blas()?;
            let gpu = self.gpu.clone();
            self.sweep_graph = Some(gpu.capture("the sweep", || self.sweep_windows(ne))?);
        }
        self.sweep_graph.as_ref().expect("captured above").launch().during("launching the sweep's graph")
    }

    /// Every electron's move, all walkers, as the sweep's graph holds them: with the B-spline orbitals one launch a
    /// window of delayed moves (`window`; a move with Sherman-Morrison), then the window's apply (Sherman-Morrison's
    /// update); with the other evaluators each electron's fused launches (`sweep_electron`).
    fn sweep_windows(&mut self, ne: usize) -> Result<(), GpuError> {
        if !matches!(self.orb, Evaluator::Spline(_)) {
            return (0..ne).try_for_each(|e| self.sweep_electron(e as i32));
        }
        let n = self.kp.n as usize;
        let k = self.pending.as_ref().map_or(1, |x| x.k);
        for spin in 0..ne / n {
            for q0 in (0..n).step_by(k) {
                let (e0, count) = ((spin * n + q0) as i32, k.min(n - q0));
                self.window(e0, count as i32)?;
                if self.pending.is_some() {
                    self.apply_pending(spin, count)?;
                } else {
                    self.sm_update(e0)?;
                }
            }
        }
        Ok(())
    }

    /// `count` moves from electron e0 (one with Sherman-Morrison; with delayed updates e0 starts a window), all
    /// walkers, in one launch (solid.cu move_window): each walker's block proposes, evaluates the B-spline orbitals
    /// at its proposal, decides and (delayed) fills the window's slot.
    fn window(&mut self, e0: i32, count: i32) -> Result<(), GpuError> {
        let nw = self.count();
        let kp = self.kp;
        let s = self.gpu.stream.clone();
        let Evaluator::Spline(spline) = &mut self.orb else { unreachable!("window needs the B-spline orbitals") };
        let (sp, coefs, spline_pos, phi) = spline.kernel_args();
        let k = self.pending.as_ref().map_or(1, |x| x.k) as i32;
        let mut b = s.launch_builder(&self.f.window);
        b.arg(&kp).arg(&e0);
        if self.pending.is_some() {
            b.arg(&count).arg(&k);
        }
        b.arg(sp).arg(coefs).arg(phi).arg(spline_pos).arg(&mut self.slab.buf).arg(&self.ions).arg(&self.draws);
        if let Some(x) = self.pending.as_mut() {
            b.arg(&mut x.v).arg(&mut x.ut).arg(&mut x.binv).arg(&mut x.rep).arg(&mut x.p);
        }
        b.arg(&mut self.tk).arg(&mut self.urow).arg(&mut self.g).arg(&mut self.jold).arg(&mut self.newpos);
        b.arg(&mut self.accept).arg(&mut self.tally);
        // SAFETY: block w < walkers, for each of count electrons from e0 (count <= k <= 64, e0 + count within e0's
        // spin): move_begin's reads and writes (as in `move_begin`), then the VGL of walker w's proposal into
        // phi[w][5][stride] (the spline's outputs hold at least walkers points; the table nx ny nz x stride entries,
        // as `sp` says), then move_end's (as in `move_end`, the slot the electron's place in the window).
        unsafe { b.launch(cfg((nw as u32, 1), walker_block(nw))) }.during("launching solid_moves")?;
        Ok(())
    }

    /// Sherman-Morrison's update of electron e's rows for the walkers that accepted (det_ratio, in move_end or the
    /// window's launch, left the new rows and the pivot row).
    fn sm_update(&mut self, e: i32) -> Result<(), GpuError> {
        let (nw, n) = (self.count() as u32, self.kp.n as u32);
        let kp = self.kp;
        let mut b = self.gpu.stream.launch_builder(&self.f.sm_update);
        b.arg(&kp).arg(&e).arg(&mut self.slab.buf).arg(&self.urow).arg(&self.accept).arg(&self.g).arg(&self.tk);
        // SAFETY: block (x, w): 4 warps, each rewrites its row 4x..4x+3 < n of walker w's spin block (stride
        // entries, reading only that row, urow and tk, which det_ratio wrote before on this stream); block 0 also
        // the 3 gradient rows of electron e.
        unsafe { b.launch(cfg((n.div_ceil(BLOCK / 32), nw), BLOCK)) }.during("launching solid_sm_update")?;
        Ok(())
    }

    /// One electron's move, all walkers: the fused launches (`move_begin`, the orbitals, `move_end`) or, profiled,
    /// the five separate ones, then the Sherman-Morrison update; with delayed updates those of `delayed_electron`.
    fn sweep_electron(&mut self, e: i32) -> Result<(), GpuError> {
        if self.pending.is_some() {
            return self.delayed_electron(e);
        }
        let nw = self.count() as u32;
        let s = self.gpu.stream.clone();
        let kp = self.kp;
        if !self.profile {
            self.move_begin(e, None)?;
            self.orb.launch()?;
            self.move_end(e, None)?;
        } else {
            let mut b = s.launch_builder(&self.f.det_grad);
            b.arg(&kp).arg(&e).arg(&self.slab.buf).arg(&mut self.g);
            // SAFETY: block w < walkers reads row e of walker w's inverse ([e][stride]) and gradient rows
            // ([e][3][stride]) in its slab, writes g[4w..4w+4].
            unsafe { b.launch(cfg((nw, 1), walker_block(nw as usize))) }.during("launching solid_det_grad")?;
            self.mark(Class::Determinant)?;
            self.jastrow_move(e, 0)?;
            self.mark(Class::Jastrow)?;
            self.orb.launch()?;
            self.mark(Class::Orbitals)?;
            let mut b = s.launch_builder(&self.f.det_ratio);
            b.arg(&kp).arg(&e).arg(self.orb.device_outputs()).arg(&self.slab.buf).arg(&mut self.urow).arg(&mut self.g).arg(&mut self.tk);
            // SAFETY: block w reads point w of the spline output ([point][5][stride], nw points evaluated) and row e of
            // walker w's inverse; writes urow[w][4][stride], g[4w..4w+4] and tk[w][stride].
            unsafe { b.launch(cfg((nw, 1), walker_block(nw as usize))) }.during("launching solid_det_ratio")?;
            self.mark(Class::Determinant)?;
            self.jastrow_move(e, 1)?;
            self.mark(Class::Jastrow)?;
        }
        self.sm_update(e)?;
        self.mark(Class::Determinant)
    }

    /// One electron's move with delayed updates, all walkers: the column of the current inverse against the window's
    /// pending moves and the gradient, Jastrow and proposal, B-spline VGL, ratio, Jastrow and Metropolis-Hastings, the
    /// accepted moves into their slot; at the window's end (k electrons, or the spin's last) the rank-k apply.
    fn delayed_electron(&mut self, e: i32) -> Result<(), GpuError> {
        let (nw, n) = (self.count() as u32, self.kp.n as usize);
        let s = self.gpu.stream.clone();
        let kp = self.kp;
        let x = self.pending.as_mut().expect("delayed_electron needs the pending moves");
        let k = x.k;
        let q = e as usize % n;
        let (slot, ki) = ((q % k) as i32, k as i32);
        if !self.profile {
            self.move_begin(e, Some((slot, ki)))?;
            self.orb.launch()?;
            self.move_end(e, Some((slot, ki)))?;
        } else {
            let mut b = s.launch_builder(&self.f.det_column);
            b.arg(&kp).arg(&e).arg(&slot).arg(&ki).arg(&self.slab.buf).arg(&x.v).arg(&x.ut).arg(&x.binv).arg(&x.rep);
            b.arg(&mut x.p).arg(&mut self.tk).arg(&mut self.g);
            // SAFETY: block w < walkers reads row e of walker w's inverse and gradient rows in its slab and the first slot
            // < k rows of its pending moves (k <= 64, the shared arrays' size); writes p[w][..slot], tk[w][..n] and
            // g[4w+1..4w+4].
            unsafe { b.launch(cfg((nw, 1), walker_block(nw as usize))) }.during("launching solid_det_column")?;
            self.mark(Class::Determinant)?;
            self.jastrow_move(e, 0)?;
            self.mark(Class::Jastrow)?;
            self.orb.launch()?;
            self.mark(Class::Orbitals)?;
            let mut b = s.launch_builder(&self.f.det_ratio_delayed);
            b.arg(&kp).arg(&e).arg(self.orb.device_outputs()).arg(&self.slab.buf).arg(&mut self.urow).arg(&mut self.g).arg(&mut self.tk);
            // SAFETY: block w reads point w of the spline output ([point][5][stride], nw points evaluated) and tk[w];
            // writes urow[w][4][stride] and g[4w..4w+4].
            unsafe { b.launch(cfg((nw, 1), walker_block(nw as usize))) }.during("launching solid_det_ratio_delayed")?;
            self.mark(Class::Determinant)?;
            self.jastrow_move(e, 1)?;
            self.mark(Class::Jastrow)?;
            let x = self.pending.as_mut().expect("delayed_electron needs the pending moves");
            let mut b = s.launch_builder(&self.f.det_accept);
            b.arg(&kp).arg(&e).arg(&slot).arg(&ki).arg(&mut self.slab.buf).arg(&self.urow).arg(&self.accept);
            b.arg(&mut x.v).arg(&mut x.ut).arg(&mut x.binv).arg(&mut x.rep).arg(&x.p);
            // SAFETY: block w (accepted walkers only) writes the 3 gradient rows of electron e in its slab and slot
            // `slot` < k of its pending moves (row slot of v and ut, B^-1's first slot + 1 rows and columns, rep[slot]),
            // reading urow[w], row e of its inverse and p[w] (written by det_column on this stream).
            unsafe { b.launch(cfg((nw, 1), walker_block(nw as usize))) }.during("launching solid_det_accept")?;
        }
        // the window's end, both ways
        if q + 1 == n || (q + 1).is_multiple_of(k) {
            self.apply_pending(e as usize / n, q % k + 1)?;
        }
        self.mark(Class::Determinant)
    }

    /// The rank-`slots` apply of spin `spin`'s pending moves of every walker, in A, on the inverses in their slabs:
    /// (double) three strided-batched GEMMs (determinant::gpu::delayed_gemms); (mixed) cuBLAS's Y = B^-T U^T
    /// (`delayed_y`) and solid.cu's delayed_w (W = V t^T) and delayed_update (t -= W^T Y), which read the S entries
    /// and round the updated ones to S once. solid_delayed_fix between the products that read B^-1 and the one that
    /// reads W (the deltas of the replaced rows; the slots emptied).
    fn apply_pending(&mut self, spin: usize, slots: usize) -> Result<(), GpuError> {
        let (nw, n, st) = (self.count(), self.kp.n as usize, self.kp.stride as usize);
        let blas = self.gpu.blas()?;
        let s = self.gpu.stream.clone();
        let kp = self.kp;
        let x = self.pending.as_mut().expect("apply_pending needs the pending moves");
        let (k, e) = (x.k, std::mem::size_of::<S>());
        let slab_bytes = kp.slab.bytes as usize;
        let base = self.slab.buf.device_ptr(&s).0;
        let at = |v: &CudaSlice<A>| v.device_ptr(&s).0;
        let d = DelayedBatch {
            n,
            batch: nw,
            kmax: k,
            t: base + (kp.slab.inv as usize + spin * n * st * e) as u64,
            t_ld: st,
            t_stride: slab_bytes / e,
            v: x.v.device_ptr(&s).0,
            ut: x.ut.device_ptr(&s).0,
            vu_ld: st,
            vu_stride: k * st,
            binv: at(&x.binv),
            binv_stride: k * k,
            w: at(&x.w),
            y: at(&x.y),
            wy_stride: k * n,
        };
        let (spin_i, ni, sti, ki, si) = (spin as i32, n as i32, st as i32, k as i32, slots as i32);
        let fix = |rep: &mut CudaSlice<i32>, w: &mut CudaSlice<A>, binv: &mut CudaSlice<A>| -> Result<(), GpuError> {
            let mut b = s.launch_builder(&self.f.delayed_fix);
            b.arg(&ni).arg(&ki).arg(&si).arg(rep).arg(w).arg(binv);
            // SAFETY: block b < walkers touches rep[b][..slots], W^T's entries (rep, l) < (n, k) and the k x k B^-1 of
            // walker b; after the products that read B^-1, before the one that reads W, on this stream.
            unsafe { b.launch(cfg((nw as u32, 1), walker_block(nw))) }.during("launching solid_delayed_fix")?;
            Ok(())
        };
        let Some(fused) = &self.f.fused else {
            // SAFETY: t holds every walker's spin block (n rows st apart, slab_bytes from walker to walker, in S = A);
            // v, ut (k rows of st), binv (k x k), w, y (k rows of n) hold every walker's at these strides; slots <= k.
            return unsafe { delayed_gemms::<A>(&blas, &d, slots, || fix(&mut x.rep, &mut x.w, &mut x.binv)) };
        };
        {
            let mut b = s.launch_builder(&fused.widen);
            b.arg(&ni).arg(&sti).arg(&ki).arg(&si).arg(&x.ut).arg(&mut x.w);
            // SAFETY: block b < walkers reads ut[b][l][..n] (k rows of st) and writes w[b][l][..n] (k rows of n), l < slots
            // <= k.
            unsafe { b.launch(cfg((nw as u32, 1), walker_block(nw))) }.during("launching solid_widen_ut")?;
        }
        // Y from the widened rows, which W^T's buffer holds until delayed_w overwrites them, k rows of n apart
        let dy = DelayedBatch { ut: at(&x.w), vu_ld: n, vu_stride: k * n, ..d };
        // SAFETY: the widened ut (k rows of n), binv (k x k) and y (k rows of n) hold every walker's at these strides;
        // slots <= k.
        unsafe { delayed_y::<A>(&blas, &dy, slots) }?;
        {
            let mut b = s.launch_builder(&fused.w);
            b.arg(&kp).arg(&spin_i).arg(&si).arg(&ki).arg(&self.slab.buf).arg(&x.v).arg(&mut x.w);
            // SAFETY: block (r, w) reads rows 128 r .. (at most n) of walker w's spin block `spin` in its slab (columns
            // < n), v[w][l][..n] for l < slots, writes w[w][l][128 r ..] for l < slots <= k; its 8 warps' fragments
            // cover 32 slots (delayed_w4, k <= 32) or 64 (delayed_w8, k <= 64): every slot. The device is sm_80 or
            // later (checked in `new`).
            unsafe { b.launch(cfg((n.div_ceil(W_ROWS) as u32, nw as u32), W_BLOCK)) }.during("launching solid_delayed_w")?;
        }
        fix(&mut x.rep, &mut x.w, &mut x.binv)?;
        let mut b = s.launch_builder(&fused.update);
        b.arg(&kp).arg(&spin_i).arg(&si).arg(&ki).arg(&mut self.slab.buf).arg(&x.w).arg(&x.y);
        // SAFETY: block (c, r, w) reads w[w][l][64 r ..] and y[w][l][128 c ..] (l < slots, entries < n), written before
        // on this stream, and rewrites its 64 x 128 tile (entries < n) of walker w's spin block `spin` in its slab; sm_80
        // or later (checked in `new`).
        let grid = LaunchConfig { grid_dim: (n.div_ceil(U_COLS) as u32, n.div_ceil(U_ROWS) as u32, nw as u32), block_dim: (UPDATE_BLOCK, 1, 1), shared_mem_bytes: 0 };
        unsafe { b.launch(grid) }.during("launching solid_delayed_update")?;
        Ok(())
    }

    /// The fused first launch of electron e's move (solid.cu move_begin): the determinant's gradient (with delayed
    /// updates, `window` = (slot, k): the column against the pending moves), the Jastrow at the old position and the
    /// proposal into the orbital evaluator's positions.
    fn move_begin(&mut self, e: i32, window: Option<(i32, i32)>) -> Result<(), GpuError> {
        let nw = self.count();
        let kp = self.kp;
        let s = self.gpu.stream.clone();
        let sp = self.orb.device_positions(nw);
        let mut b = s.launch_builder(&self.f.move_begin);
        b.arg(&kp).arg(&e);
        if let Some((slot, k)) = &window {
            b.arg(slot).arg(k);
        }
        b.arg(&mut self.slab.buf).arg(&self.ions).arg(&self.draws);
        if window.is_some() {
            let x = self.pending.as_mut().expect("a window needs the pending moves");
            b.arg(&x.v).arg(&x.ut).arg(&x.binv).arg(&x.rep).arg(&mut x.p).arg(&mut self.tk);
        }
        b.arg(&mut self.g).arg(&mut self.jold).arg(&mut self.newpos).arg(sp);
        // SAFETY: block w < walkers: det_grad's or det_column's reads and writes (rows e of walker w's inverse and
        // gradient rows, the first slot < k <= 64 rows of its pending moves; p[w][..slot], tk[w][..n], g[4w+1..4w+4])
        // then jastrow_move's in phase 0 (walker w's positions and draws row e, the ions; thread 0 writes jold[w][..6],
        // 3 entries of newpos and of the orbital evaluator's positions, which hold nw >= w + 1 points).
        unsafe { b.launch(cfg((nw as u32, 1), walker_block(nw))) }.during("launching solid_move_begin")?;
        Ok(())
    }

    /// The fused second launch of electron e's move (solid.cu move_end): the ratio and gradient at the proposal from
    /// the orbital evaluator's outputs, Metropolis-Hastings with the Jastrow sums move_begin left, and with delayed updates (`window`) an
    /// accepted move into its slot.
    fn move_end(&mut self, e: i32, window: Option<(i32, i32)>) -> Result<(), GpuError> {
        let nw = self.count();
        let kp = self.kp;
        let s = self.gpu.stream.clone();
        let mut b = s.launch_builder(&self.f.move_end);
        b.arg(&kp).arg(&e);
        if let Some((slot, k)) = &window {
            b.arg(slot).arg(k);
        }
        b.arg(self.orb.device_outputs()).arg(&mut self.slab.buf).arg(&self.ions).arg(&self.draws);
        b.arg(&mut self.urow).arg(&mut self.g).arg(&mut self.tk).arg(&mut self.jold).arg(&mut self.newpos);
        b.arg(&mut self.accept).arg(&mut self.tally);
        if window.is_some() {
            let x = self.pending.as_mut().expect("a window needs the pending moves");
            b.arg(&mut x.v).arg(&mut x.ut).arg(&mut x.binv).arg(&mut x.rep).arg(&x.p);
        }
        // SAFETY: block w < walkers: det_ratio's reads and writes (point w of the spline output, nw points evaluated;
        // row e of walker w's inverse or tk[w]; urow[w][4][stride], g[4w..4w+4], tk[w]), then jastrow_move's in phase
        // 1 (thread 0 reads jold[w][..6], writes accept[w], tally[w][..3] and, on accept, walker w's position e), then with a window det_accept's
        // (accepted walkers only: the gradient rows of electron e in its slab and slot `slot` < k of its pending moves).
        unsafe { b.launch(cfg((nw as u32, 1), walker_block(nw))) }.during("launching solid_move_end")?;
        Ok(())
    }

    /// Phase 0 (old position, proposal into the spline's positions, the Jastrow there) or 1 (ratio, accept).
    fn jastrow_move(&mut self, e: i32, phase: i32) -> Result<(), GpuError> {
        let nw = self.count();
        let kp = self.kp;
        let s = self.gpu.stream.clone();
        let sp = self.orb.device_positions(nw);
        let mut b = s.launch_builder(&self.f.jastrow_move);
        b.arg(&kp).arg(&e).arg(&phase).arg(&mut self.slab.buf).arg(&self.ions).arg(&self.draws).arg(&self.g).arg(&mut self.jold);
        b.arg(&mut self.newpos).arg(sp).arg(&mut self.accept).arg(&mut self.tally);
        // SAFETY: block w reads walker w's positions and draws row e, the ions; thread 0 writes jold[w][..6],
        // accept, tally[w][..3], and 3 entries of newpos, the spline positions (room for nw >= w + 1 points) and pos.
        unsafe { b.launch(cfg((nw as u32, 1), walker_block(nw))) }.during("launching solid_jastrow_move")?;
        Ok(())
    }

    /// Orbitals VGL at every electron in chunks; first, for the walkers in `chosen`, a pass that fills their Slater
    /// matrices and re-inverts them in f64 (`refine`: from their updated inverse rows, see `reinvert`); then the
    /// determinant derivatives, the kinetic energy and the Ewald energy.
    fn measure(&mut self, chosen: &[usize], refine: bool) -> Result<(), SolidError> {
        let (nw, ne) = (self.count(), self.kp.electrons as usize);
        if !chosen.is_empty() {
            self.list(chosen)?;
            self.measure_chunks(1, true, chosen.len())?;
            self.reinvert(chosen, refine)?;
        }
        self.measure_chunks(0, false, nw)?;
        let kp = self.kp;
        let s = self.gpu.stream.clone();
        {
            let mut b = s.launch_builder(&self.f.kinetic);
            b.arg(&kp).arg(&self.slab.buf).arg(&self.ions).arg(&self.det4).arg(&mut self.term);
            // SAFETY: block (e, w) reads walker w's positions and det4[w][e], writes term[w][e].
            unsafe { b.launch(cfg((ne as u32, nw as u32), BLOCK)) }.during("launching solid_kinetic")?;
            let len = ne as i32;
            let mut b = s.launch_builder(&self.f.row_sum);
            b.arg(&len).arg(&self.term).arg(&mut self.kin);
            // SAFETY: block w sums term[w][0..ne] into kin[w].
            unsafe { b.launch(cfg((nw as u32, 1), walker_block(nw))) }.during("launching solid_row_sum")?;
        }
        self.mark(Class::Jastrow)?;
        match &mut self.coulomb {
            GpuCoulomb::Ewald(ewald) => {
                let frac = ewald.device_fractions(nw);
                let mut b = s.launch_builder(&self.f.fractions);
                b.arg(&kp).arg(&self.slab.buf).arg(frac);
                // SAFETY: grid-stride over walkers x electrons; frac holds walkers*3*electrons entries.
                unsafe { b.launch(cfg((((nw * ne) as u32).div_ceil(BLOCK).min(4096), 1), BLOCK)) }.during("launching solid_fractions")?;
                ewald.launch_energy()?;
            }
            GpuCoulomb::Open { f, nuclei, count, constant, out } => {
                let mut b = s.launch_builder(f);
                b.arg(&kp).arg(&self.slab.buf).arg(&*nuclei).arg(&*count).arg(&*constant).arg(out);
                // SAFETY: block w reads walker w's positions (w < nw <= the slab's walkers) and the count nuclei of
                // `nuclei` (4 entries each), and writes out[w] (out holds the engine's walkers).
                unsafe { b.launch(cfg((nw as u32, 1), 128)) }.during("launching solid_open_coulomb")?;
            }
        }
        self.mark(Class::Coulomb)?;
        Ok(())
    }

    /// `walkers` into the inversion's `chosen` list on the device, which the listed passes (`measure_chunks` with
    /// `listed`, `reinvert`) go through.
    fn list(&mut self, walkers: &[usize]) -> Result<(), GpuError> {
        let list: Vec<i32> = walkers.iter().map(|&k| k as i32).collect();
        self.gpu.stream.memcpy_htod(&list, &mut self.inversion.chosen.slice_mut(..list.len())).during("copying the walker list")?;
        self.traffic.up::<i32>(list.len());
        Ok(())
    }

    /// VGL of the points (walker, electron) of the first `walkers` walkers of a list (not `listed`: every walker in
    /// order, with B-spline orbitals the points sorted by cell and evaluated by the grouped kernel; `listed`: the
    /// walkers of the inversion's `chosen` list, in order) in chunks, each followed by solid_measure_det in `mode` (0: gradient
    /// rows and derivatives; 1: Slater matrices for the re-inversion).
    fn measure_chunks(&mut self, mode: i32, listed: bool, walkers: usize) -> Result<(), GpuError> {
        let total = walkers * self.kp.electrons as usize;
        let kp = self.kp;
        let s = self.gpu.stream.clone();
        let sorted = !listed && self.sort.is_some();
        if sorted {
            self.sort_points(total)?;
        }
        // the order of the points: the sort's (a null pointer: the list's own)
        let null: u64 = 0;
        let mut first = 0usize;
        while first < total {
            let count = self.chunk.min(total - first);
            {
                let sp = self.orb.device_positions(count);
                let (first_i, count_i) = (first as i64, count as i32);
                let x = &self.inversion;
                let list = if listed { &x.chosen } else { &x.all };
                let mut b = s.launch_builder(&self.f.gather);
                b.arg(&kp).arg(&first_i).arg(&count_i).arg(list);
                match self.sort.as_ref().filter(|_| sorted) {
                    Some(sort) => b.arg(&sort.perm),
                    None => b.arg(&null),
                };
                b.arg(&self.slab.buf).arg(sp);
                // SAFETY: thread t < count reads the position of point first + t < walkers * electrons (or, sorted,
                // of the point perm holds there: sort_points wrote a permutation of 0..total) (its walker from list,
                // which holds `walkers` entries) in that walker's slab and writes 3 entries of sp, which holds
                // chunk >= count points.
                unsafe { b.launch(cfg(((count as u32).div_ceil(BLOCK), 1), BLOCK)) }.during("launching solid_gather_positions")?;
            }
            if sorted { self.orb.launch_sorted() } else { self.orb.launch() }?;
            self.mark(Class::Orbitals)?;
            let first_i = first as i64;
            let x = &mut self.inversion;
            let list = if listed { &x.chosen } else { &x.all };
            let mut b = s.launch_builder(&self.f.measure_det);
            b.arg(&kp).arg(&first_i).arg(&mode).arg(list);
            match self.sort.as_ref().filter(|_| sorted) {
                Some(sort) => b.arg(&sort.perm),
                None => b.arg(&null),
            };
            b.arg(self.orb.device_outputs()).arg(&mut self.slab.buf).arg(&mut self.det4).arg(&mut x.work);
            // SAFETY: block t handles point first + t < total of the listed walkers (sorted: the point perm holds
            // there, a permutation of 0..total): its spline output row (count
            // points evaluated), its inverse and gradient rows, det4[4 pt..] (mode 0, where list is every walker in
            // order); mode 1 writes column-major entries of its walker's spin matrix in work (2 n^2 per walker).
            unsafe { b.launch(cfg((count as u32, 1), BLOCK)) }.during("launching solid_measure_det")?;
            self.mark(Class::Determinant)?;
            first += count;
        }
        Ok(())
    }

    /// Every electron of every walker (point = walker * electrons + electron, `total` of them) sorted by B-spline
    /// cell into the sort's perm (B-spline orbitals only: the sort exists with them).
    fn sort_points(&mut self, total: usize) -> Result<(), GpuError> {
        let (Evaluator::Spline(spline), Some(sort)) = (&self.orb, &mut self.sort) else {
            unreachable!("solid gpu: points are sorted for the B-spline kernel only")
        };
        if total > sort.capacity() {
            sort.resize(total)?;
        }
        sort.clear()?;
        let (n, c) = spline.grid();
        let kp = self.kp;
        let mut b = self.gpu.stream.launch_builder(&self.f.cell_keys);
        b.arg(&kp).arg(&n[0]).arg(&n[1]).arg(&n[2]).arg(&c[0]).arg(&c[1]).arg(&c[2]).arg(&self.slab.buf);
        b.arg(&mut sort.key).arg(&mut sort.rank).arg(&mut sort.counts);
        // SAFETY: thread pt < walkers * electrons = total (within the sort's capacity) reads its electron's position
        // in its walker's slab, writes key[pt] and rank[pt] and counts in counts at a cell below nx*ny*nz.
        unsafe { b.launch(cfg(((total as u32).div_ceil(BLOCK), 1), BLOCK)) }.during("launching solid_cell_keys")?;
        sort.finish(total)
    }

    /// The f64 inverses of both Slater matrices of each walker in `chosen` (listed on the device, their matrices in
    /// `work` by `measure_chunks` mode 1), back into their inverse rows, with each one's condition number.
    ///
    /// With `refine` (the periodic re-inversion of walkers whose inverse rows hold the updated inverse) by
    /// Newton-Schulz refinement of those rows, X <- X (2 I - A X), in f64 strided-batched GEMMs (`refine`); where it
    /// cannot converge (a residual ||I - A X||_1 above [`REFINE_DIVERGES`]) and without `refine` (the start, a migration's rebuild:
    /// no inverse to start from) by LU: cuBLAS's batched LU below [`solver_min_n`] (1024 in f64), cuSOLVER's blocked
    /// LU and solves against the identity per matrix from there (side by side on the solver's lanes), as the
    /// determinant kernel (which measured the blocked LU the faster from n = 1024). For the few matrices of a
    /// migration's rebuild cuSOLVER is no faster either: on two H200s at 512 electrons (n = 256, about 7 matrices a
    /// generation) a generation took 54.6 ms with it against 53.7 with the batched LU (ff491b4 and a variant of it).
    /// Both LU routes give walkers on the f64 reference to 1.7e-13 at 2048 electrons (cond 1e5).
    fn reinvert(&mut self, chosen: &[usize], refine: bool) -> Result<bool, SolidError> {
        let (n, c) = (self.kp.n as usize, chosen.len());
        let s = self.gpu.stream.clone();
        let timing = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = s.record_event(timing).during("recording the re-inversion's start")?;
        let norms = device_norms(&self.gpu, &self.inversion.work, n, 2 * c, 0.0)?;
        self.traffic.down::<f64>(norms.len());
        let refined = refine && self.refine(c)?;
        if !refined {
            self.lu(c)?;
        }
        if refine && !refined {
            self.lu_fallbacks += c as u64;
        }
        let end = s.record_event(timing).during("recording the re-inversion's end")?;
        end.synchronize().during("waiting for the re-inversion")?;
        self.reinversion_s += start.elapsed_ms(&end).during("timing the re-inversion")? as f64 * 1e-3;
        if !refined {
            let info = s.clone_dtoh(&self.inversion.info.slice(..2 * c)).during("copying the inversion status")?;
            self.traffic.down::<i32>(info.len());
            if let Some(q) = info.iter().position(|&i| i != 0) {
                return Err(SolidError::Singular(chosen[q / 2]));
            }
        }
        let spread = self.spread(2 * c);
        let x = &mut self.inversion;
        let inv_norms = device_norms(&self.gpu, &x.out, n, 2 * c, 0.0)?;
        self.traffic.down::<f64>(inv_norms.len());
        for (j, &k) in chosen.iter().enumerate() {
            self.cond[k] = (0..2).map(|s| norms[2 * j + s] * inv_norms[2 * j + s]).fold(0.0, f64::max);
        }
        {
            let kp = self.kp;
            let ci = c as i32;
            let mut b = s.launch_builder(&self.f.from_inverse);
            b.arg(&kp).arg(&x.chosen).arg(&ci).arg(&x.out).arg(&mut self.slab.buf);
            // SAFETY: grid-stride over the 2 c n^2 entries of the listed matrices of out; each lands in row k < n,
            // column m < n <= stride of its walker's spin block in inv.
            unsafe { b.launch(spread) }.during("launching solid_from_inverse")?;
        }
        self.mark(Class::Determinant)?;
        Ok(refined)
    }

    /// Test hook: every walker re-inverted now, from its positions, as a step's measurement does (by refinement of
    /// its inverse rows with `refine`, else by LU); whether the refinement held.
    #[cfg(test)]
    pub(super) fn reinvert_all(&mut self, refine: bool) -> Result<bool, SolidError> {
        let all: Vec<usize> = (0..self.count()).collect();
        self.list(&all)?;
        self.measure_chunks(1, true, all.len())?;
        self.reinvert(&all, refine)
    }

    /// A grid-stride launch over `matrices` packed n x n matrices.
    fn spread(&self, matrices: usize) -> LaunchConfig {
        let n = self.kp.n as usize;
        cfg((((matrices * n * n) as u32).div_ceil(BLOCK).min(8192), 1), BLOCK)
    }

    /// The LU route of `reinvert` for the 2 c listed matrices: their inverses into `out`, the status into `info`
    /// (getrs's after getrf's).
    fn lu(&mut self, c: usize) -> Result<(), SolidError> {
        let n = self.kp.n as usize;
        let m = 2 * c;
        let solver = if n >= solver_min_n::<f64>() { self.gpu.solver()? } else { None };
        let s = self.gpu.stream.clone();
        let spread = self.spread(m);
        let x = &mut self.inversion;
        let ptr = |v: &CudaSlice<i32>| v.device_ptr(&s).0;
        let (piv, info) = (ptr(&x.piv), ptr(&x.info));
        let (work, out) = (x.work.device_ptr(&s).0, x.out.device_ptr(&s).0);
        let (ni, mi) = (n as i32, m as i32);
        let (mat, ints) = ((n * n * 8) as u64, (n * 4) as u64);
        if let Some(lanes) = &solver {
            let mut lanes = lanes.lock().unwrap();
            let lu: Vec<(u64, u64, u64)> = (0..m as u64).map(|q| (work + q * mat, piv + q * ints, info + 4 * q)).collect();
            lanes.getrf::<f64>(&self.gpu, n, &lu)?;
            let one = 1.0f64;
            let mut b = s.launch_builder(&self.f.identity);
            b.arg(&ni).arg(&mi).arg(&one).arg(&mut x.out);
            // SAFETY: grid-stride over the m n^2 entries of the first m matrices of out.
            unsafe { b.launch(spread) }.during("launching solid_identity")?;
            // out's matrix q is the right-hand side, solved in place; getrs's status goes after getrf's (info holds
            // 2 m ints) so a singular factor stays flagged
            let solve: Vec<(u64, u64, u64, u64)> = (0..m as u64).map(|q| (work + q * mat, piv + q * ints, out + q * mat, info + 4 * (m as u64 + q))).collect();
            lanes.getrs::<f64>(&self.gpu, n, &solve)?;
            return Ok(());
        }
        let blas = self.gpu.blas()?;
        let h = *blas.handle();
        let mut b = s.launch_builder(&self.f.matrix_ptrs);
        b.arg(&ni).arg(&mi).arg(&work).arg(&out).arg(&mut x.ptrs);
        // SAFETY: thread q < m writes ptrs[q] and ptrs[m + q]; ptrs holds 4 walkers entries.
        unsafe { b.launch(cfg(((m as u32).div_ceil(BLOCK), 1), BLOCK)) }.during("launching solid_matrix_ptrs")?;
        let (wp, op) = (x.ptrs.device_ptr(&s).0, x.ptrs.device_ptr(&s).0 + 8 * m as u64);
        // SAFETY: wp and op hold the addresses of the m listed n x n matrices of work and out (written by the
        // launch before, on this stream); piv holds n ints per listed matrix, info one; the handle runs on the
        // stream of the launches that filled work.
        blas_ok("the batched LU factorisation (getrfBatched)", unsafe { <f64 as BatchedLu>::getrf(h, ni, wp, piv, info, mi) })?;
        // SAFETY: as for getrf; out is a separate allocation from work.
        blas_ok("the batched LU inversion (getriBatched)", unsafe { <f64 as BatchedLu>::getri(h, ni, wp, piv, op, info, mi) })?;
        Ok(())
    }

    /// The refinement route of `reinvert` for the 2 c listed matrices: X_0 the walkers' inverse rows in f64 (in
    /// `out`), then X_{k+1} = X_k (2 I - A X_k), batch by batch, whose residual R_k = I - A X_k squares each time
    /// (R_{k+1} = R_k^2). A batch stops after the update from a residual of at most [`REFINE_DONE`] in every matrix
    /// (then ||R|| <= 1e-12 but for the GEMMs' rounding, which is the LU's: n eps ||A|| ||X||); it fails if a
    /// residual exceeds [`REFINE_DIVERGES`] (or is NaN) or [`REFINE_MOST`] updates do not get there: false, and
    /// `reinvert` takes the LU route for the whole list. Double walkers start from the f64 updated inverse (R_0
    /// about 1e-10 after 8 steps: one update); mixed ones from f32 (R_0 about eps_f32 cond, mostly 3e-4..1e-2: two).
    /// Cost: 4 n^3 flops an update in tensor-core DGEMMs, against 2 n^3 flops of cuBLAS's batched LU at a small
    /// fraction of the GEMM rate. Measured on the H100 at 1536 electrons (n = 768, batches of 113): each GEMM 1.95 ms,
    /// 54 TFLOP/s; the residuals' norms 0.3 ms an update; the 512 matrices of 256 double walkers in 23 ms, where the
    /// batched LU took about 210 ms.
    fn refine(&mut self, c: usize) -> Result<bool, SolidError> {
        let n = self.kp.n as usize;
        let m = 2 * c;
        let s = self.gpu.stream.clone();
        {
            let (kp, ci) = (self.kp, c as i32);
            let spread = self.spread(m);
            let x = &mut self.inversion;
            let mut b = s.launch_builder(&self.f.to_inverse);
            b.arg(&kp).arg(&x.chosen).arg(&ci).arg(&self.slab.buf).arg(&mut x.out);
            // SAFETY: grid-stride over the 2 c n^2 entries of the first 2 c matrices of out, each read from row
            // k < n, column m < n <= stride of its walker's spin block in inv.
            unsafe { b.launch(spread) }.during("launching solid_to_inverse")?;
        }
        let blas = self.gpu.blas()?;
        let h = *blas.handle();
        let (ni, nn) = (n as i32, (n * n) as i64);
        let mat = (n * n * 8) as u64;
        let (work, out) = (self.inversion.work.device_ptr(&s).0, self.inversion.out.device_ptr(&s).0);
        let (r, t) = (self.inversion.r.device_ptr(&s).0, self.inversion.t.device_ptr(&s).0);
        let gemm = |what: &str, st| blas_ok(&format!("the refinement's {what} (gemmStridedBatched)"), st);
        let mut first = 0;
        while first < m {
            let g = self.inversion.batch.min(m - first);
            let (a, xk) = (work + first as u64 * mat, out + first as u64 * mat);
            let gi = g as i32;
            let mut updates = 0;
            loop {
                {
                    let two = 2.0f64;
                    let spread = self.spread(g);
                    let mut b = s.launch_builder(&self.f.identity);
                    b.arg(&ni).arg(&gi).arg(&two).arg(&mut self.inversion.r);
                    // SAFETY: grid-stride over the g n^2 entries of r, which holds batch >= g matrices.
                    unsafe { b.launch(spread) }.during("launching solid_identity")?;
                }
                use cudarc::cublas::sys::cublasOperation_t::CUBLAS_OP_N;
                // SAFETY (both): a, xk, r and t each hold g packed n x n matrices n^2 apart (work and out past the
                // first `first`, r and t from their start: batch >= g); the outputs are distinct from the inputs.
                // r = 2 I - A X
                gemm("2 I - A X", unsafe { <f64 as BatchedGemm>::gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, -1.0, a, ni, nn, xk, ni, nn, 1.0, r, ni, nn, gi) })?;
                let residual = device_norms(&self.gpu, &self.inversion.r, n, g, 1.0)?;
                self.traffic.down::<f64>(residual.len());
                // (a NaN residual counts as infinite)
                let worst = residual.iter().copied().fold(0.0, crate::check::worse);
                if !(worst <= REFINE_DIVERGES) || updates == REFINE_MOST {
                    return Ok(false);
                }
                // t = X (2 I - A X), then X = t
                // SAFETY: as above.
                gemm("X (2 I - A X)", unsafe { <f64 as BatchedGemm>::gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, 1.0, xk, ni, nn, r, ni, nn, 0.0, t, ni, nn, gi) })?;
                let mut dst = self.inversion.out.slice_mut(first * n * n..(first + g) * n * n);
                s.memcpy_dtod(&self.inversion.t.slice(..g * n * n), &mut dst).during("copying the refined inverses")?;
                updates += 1;
                if worst <= REFINE_DONE {
                    break;
                }
            }
            first += g;
        }
        Ok(true)
    }

    /// Slot s takes the state of walker `parents[s]` (no parent's own slot is overwritten: see `ranks::place`): one slab
    /// copy per pair on the device, the host's energies.
    pub fn copy_slots(&mut self, parents: &[usize]) -> Result<(), GpuError> {
        for (slot, &f) in parents.iter().enumerate().filter(|(s, f)| s != *f) {
            self.slab.copy(&self.gpu, f, slot)?;
            self.parts[slot] = self.parts[f];
            self.cond[slot] = self.cond[f];
        }
        Ok(())
    }

    /// Walker k's state for migration: its energies and its arrays before `upto` (all with None: positions,
    /// rotations, inverse and gradient rows in storage; its positions and rotations before `Field::Inv`, its
    /// inverse rows too before `Field::Dpsi`), through the host in one transfer.
    pub fn take(&mut self, k: usize, upto: Option<Field>) -> Result<Walker<S>, GpuError> {
        let h = self.slab.take(&self.gpu, k, upto)?;
        Ok(Walker { pos: h.pos, rot: h.rot, parts: self.parts[k], inv: h.inv, dpsi: h.dpsi, cond: self.cond[k], device: None })
    }

    /// Walkers `ks` staged on this GPU for ranks of this process to copy device to device (`put` of a walker with
    /// `device`): each one's slab bytes before `upto` (all with None) into the outbox, which stays untouched until
    /// this engine's next `stage`, after the next generation's sum, by which time every receiver has copied them.
    /// Returns when the staging copies are complete (a receiver's copy runs on its own stream).
    pub fn stage(&mut self, ks: &[usize], upto: Option<Field>) -> Result<Vec<Walker<S>>, GpuError> {
        let len = self.slab.prefix_len(upto);
        if self.outbox.len() < ks.len() * len {
            self.outbox = self.gpu.zeros("the migration's outbox", ks.len() * len)?;
        }
        let mut out = Vec::with_capacity(ks.len());
        for (i, &k) in ks.iter().enumerate() {
            let device = self.slab.stage(&self.gpu, k, upto, &mut self.outbox, i * len)?;
            out.push(Walker { pos: vec![], rot: vec![], parts: self.parts[k], inv: vec![], dpsi: vec![], cond: self.cond[k], device: Some(device) });
        }
        self.gpu.stream.synchronize().during("staging walkers")?;
        Ok(out)
    }

    /// The walkers in `slots` (put there without their gradient rows, and without their inverse rows too if
    /// `invert`) get them from their positions in one batched pass, as the measurement makes them: with `invert`,
    /// VGL at every electron into the Slater matrices and the f64 LU and inverse (with the condition number); then
    /// the gradient rows. Their energies stay those they carried.
    pub fn rebuild(&mut self, slots: &[usize], invert: bool) -> Result<(), SolidError> {
        if slots.is_empty() {
            return Ok(());
        }
        self.list(slots)?;
        if invert {
            self.measure_chunks(1, true, slots.len())?;
            self.reinvert(slots, false)?;
        }
        // det4 of the first slots.len() walkers is overwritten here: the next measurement writes it again first
        self.measure_chunks(0, true, slots.len())?;
        Ok(())
    }

    /// Slot k takes the state `w` (a walker that migrated from another rank): its arrays in one transfer from the
    /// host, or one copy from the GPU it was staged on (`rebuild` makes the arrays it did not carry).
    pub fn put(&mut self, k: usize, w: &Walker<S>) -> Result<(), GpuError> {
        match w.device {
            Some(d) => self.slab.put_device(&self.gpu, k, d)?,
            None => self.slab.put(&self.gpu, k, [&w.pos, &w.rot], [&w.inv, &w.dpsi])?,
        }
        self.parts[k] = w.parts;
        self.cond[k] = w.cond;
        Ok(())
    }
}

impl<S: Scalar, A: Scalar> Engine<S> for GpuEngine<'_, S, A> {
    fn count(&self) -> usize {
        GpuEngine::count(self)
    }
    fn advance(&mut self) -> Result<(), SolidError> {
        GpuEngine::advance(self)
    }
    fn energies(&self) -> Vec<f64> {
        self.parts.iter().map(Parts::local).collect()
    }
    fn copy_slots(&mut self, parents: &[usize]) -> Result<(), SolidError> {
        Ok(GpuEngine::copy_slots(self, parents)?)
    }
    fn take(&mut self, k: usize, cargo: Cargo) -> Result<Walker<S>, SolidError> {
        Ok(GpuEngine::take(self, k, cargo.upto())?)
    }
    fn stage(&mut self, ks: &[usize], cargo: Cargo) -> Result<Option<Vec<Walker<S>>>, SolidError> {
        Ok(Some(GpuEngine::stage(self, ks, cargo.upto())?))
    }
    fn put(&mut self, k: usize, w: &Walker<S>) -> Result<(), SolidError> {
        Ok(GpuEngine::put(self, k, w)?)
    }
    fn rebuild(&mut self, slots: &[usize], cargo: Cargo) -> Result<(), SolidError> {
        GpuEngine::rebuild(self, slots, cargo == Cargo::Configuration)
    }
    fn finite(&mut self) -> &mut Finite {
        &mut self.finite
    }
    fn moves(&self) -> MoveStats {
        self.moves
    }
    fn renumber(&mut self, first: usize) {
        self.p.first = first;
    }
}

#[cfg(test)]
impl<S: Scalar, A: Scalar> GpuEngine<'_, S, A> {
    /// For the apply's test: every walker's pending moves set to `[v, ut]` (`[walker][k][stride]`), `binv`
    /// (`[walker][k][k]`) and `rep` (`[walker][k]`), W and Y filled with `fill` (what the apply must write before it
    /// reads), then the rank-`slots` apply of spin `spin`. Returns rep and B^-1 after it.
    pub(super) fn apply_with(&mut self, spin: usize, slots: usize, [v, ut]: [&[S]; 2], binv: &[A], rep: &[i32], fill: A) -> Result<(Vec<i32>, Vec<A>), GpuError> {
        let x = self.pending.as_mut().expect("apply_with needs a delayed engine");
        self.gpu.write(&mut x.v, v)?;
        self.gpu.write(&mut x.ut, ut)?;
        self.gpu.write(&mut x.binv, binv)?;
        self.gpu.write(&mut x.rep, rep)?;
        let filled = vec![fill; x.w.len()];
        self.gpu.write(&mut x.w, &filled)?;
        self.gpu.write(&mut x.y, &filled)?;
        self.apply_pending(spin, slots)?;
        let x = self.pending.as_ref().expect("apply_with needs a delayed engine");
        Ok((self.gpu.download(&x.rep)?, self.gpu.download(&x.binv)?))
    }
}
