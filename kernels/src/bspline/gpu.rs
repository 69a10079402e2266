//! GPU launch code for the B-spline kernel: the table is uploaded once at set-up, positions are written each call,
//! and one launch evaluates all walkers (paper 000's loop interchange).

use super::{Output, Table};
use crate::gpu::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("bspline.cu");

/// Mirrors `SplineParams` in common.cuh: a kernel argument, also of kernels that evaluate points themselves
/// ([`GpuSpline::kernel_args`]).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SplineParams {
    nx: i32,
    ny: i32,
    nz: i32,
    stride: i32,
    orbitals: i32,
    walkers: i32,
    cell: [f64; 3],
    scale: f64,
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for SplineParams {}

/// Kernel-name suffix for storage S and arithmetic A (`f64`, `f32`, `mixed`; shared by kernels built on this one).
pub fn suffix<S: Real, A: Real>() -> &'static str {
    match (S::NAME, A::NAME) {
        ("f32", "f64") => "mixed",
        (_, name) => name,
    }
}

/// A table resident on the GPU with buffers for `walkers` points.
pub struct GpuSpline<S: Real, A: Real> {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    /// The grouped kernel for points sorted by cell, once [`Self::for_sorted_points`] loaded it.
    sorted: Option<CudaFunction>,
    params: SplineParams,
    coefs: CudaSlice<S>,
    pos: CudaSlice<f64>,
    out: CudaSlice<A>,
    output: Output,
    per_thread: u32,
}

/// Orbitals per GPU thread when the user does not choose, from the load-width sweep on an H100 after the z-first
/// change (VGH, 64^3 grid, 1024 walkers; % of the copy bandwidth at 4096 / 1024 orbitals; results/nvidia-h100-80gb-hbm3):
///
/// | per thread | double | single | mixed |
/// | --- | --- | --- | --- |
/// | 1 | 94 / 88 | 77 / 72 | 83 / 78 |
/// | 2 | 96 / 91 | 93 / 76 | 96 / 89 |
/// | 4 | - | 95 / 86 | 94 / 77 |
///
/// so two for double and mixed, four for single (a 16-byte load each but in double, which 2 already fills).
pub fn default_per_thread<S: Real, A: Real>() -> usize {
    match (S::NAME, A::NAME) {
        ("f32", "f32") => 4,
        _ => 2,
    }
}

impl<S: Real, A: Real> GpuSpline<S, A> {
    /// Upload `table`, compile the kernel, allocate position and output buffers. Each thread evaluates `per_thread`
    /// adjacent orbitals (1, 2 or 4, at most 16 bytes of storage: see bspline.cu).
    pub fn new(gpu: &Arc<Gpu>, table: &Table<S>, walkers: usize, output: Output, per_thread: usize) -> Result<Self, GpuError> {
        assert!((1..=65535).contains(&walkers), "bspline gpu: walkers must be 1..=65535 (one grid row each)");
        assert!(
            [1, 2, 4].contains(&per_thread) && per_thread * std::mem::size_of::<S>() <= 16,
            "bspline gpu: orbitals per thread must be 1, 2 or 4 and at most 16 bytes"
        );
        let out_len = walkers * output.components() * table.stride;
        gpu.ensure_fits("the B-spline table and outputs", table.bytes() + out_len * std::mem::size_of::<A>())?;
        let name = format!("bspline_{}_{}_x{per_thread}", output.name(), suffix::<S, A>());
        let func = gpu.function("bspline", SRC, &name)?;
        let g = table.grid;
        let params = SplineParams {
            nx: g.n[0] as i32,
            ny: g.n[1] as i32,
            nz: g.n[2] as i32,
            stride: table.stride as i32,
            orbitals: table.orbitals as i32,
            walkers: walkers as i32,
            cell: g.cell,
            scale: table.basis.scale(),
        };
        Ok(GpuSpline {
            coefs: gpu.upload("the B-spline table", &table.coefs)?,
            pos: gpu.zeros("positions", walkers * 3)?,
            out: gpu.zeros("B-spline outputs", out_len)?,
            gpu: gpu.clone(),
            func,
            sorted: None,
            params,
            output,
            per_thread: per_thread as u32,
        })
    }

    /// Load the grouped kernel (bspline.cu `evaluate_grouped`) for [`Self::launch_sorted`], for callers whose
    /// points arrive sorted by grid cell ([`CellSort`]): each stencil row is read once per run of points in one
    /// cell. Values and values-gradients-Laplacians only.
    pub fn for_sorted_points(mut self) -> Result<Self, GpuError> {
        assert!(self.output != Output::Vgh, "bspline gpu: no grouped kernel for VGH");
        let name = format!("bspline_{}_{}_x{}_sorted", self.output.name(), suffix::<S, A>(), self.per_thread);
        self.sorted = Some(self.gpu.function("bspline", SRC, &name)?);
        Ok(self)
    }

    /// Grid points per side and the cell sides: what a caller needs to sort points by cell as the kernels find
    /// it (common.cuh `spline_cell`).
    pub fn grid(&self) -> ([i32; 3], [f64; 3]) {
        ([self.params.nx, self.params.ny, self.params.nz], self.params.cell)
    }

    /// A sort by this table's cells with room for `points` points.
    pub fn cell_sort(&self, points: usize) -> Result<CellSort, GpuError> {
        CellSort::new(&self.gpu, self.grid().0, points)
    }

    /// Copy new positions (`[walker][xyz]`, at most the walkers allocated for) to the device; the following
    /// launches evaluate that many walkers.
    pub fn set_positions(&mut self, pos: &[f64]) -> Result<(), GpuError> {
        assert!(pos.len() % 3 == 0 && pos.len() <= self.pos.len(), "bspline gpu: positions length");
        self.params.walkers = (pos.len() / 3) as i32;
        let mut view = self.pos.slice_mut(..pos.len());
        self.gpu.stream.memcpy_htod(pos, &mut view).during("copying positions")
    }

    /// Queue one evaluation of all walkers (asynchronous).
    pub fn launch(&mut self) -> Result<(), GpuError> {
        let f = self.func.clone();
        self.launch_with(&f, 1)
    }

    /// Queue one evaluation of all points with the grouped kernel: right for any points, fast for points sorted by
    /// cell (asynchronous). Needs [`Self::for_sorted_points`].
    pub fn launch_sorted(&mut self) -> Result<(), GpuError> {
        let f = self.sorted.clone().expect("bspline gpu: launch_sorted without for_sorted_points");
        // points per block: SPLINE_GROUP_V and SPLINE_GROUP_VGL in bspline.cu
        self.launch_with(&f, if self.output == Output::V { 8 } else { 4 })
    }

    /// One launch of `func`, `group` points per block along y.
    fn launch_with(&mut self, func: &CudaFunction, group: u32) -> Result<(), GpuError> {
        // Each thread evaluates `per_thread` adjacent orbitals; blocks of up to 128 threads, no wider than a row
        // needs (the stride is a multiple of 64, so at least 16 threads).
        let threads = self.params.stride as u32 / self.per_thread;
        let block = threads.min(128);
        let cfg = LaunchConfig {
            grid_dim: (threads.div_ceil(block), (self.params.walkers as u32).div_ceil(group), 1),
            block_dim: (block, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.gpu.stream.launch_builder(func);
        b.arg(&self.params).arg(&self.coefs).arg(&self.pos).arg(&mut self.out);
        // SAFETY: coefs holds nx*ny*nz*stride entries, pos walkers*3, out walkers*NC*stride, as the kernel indexes;
        // threads beyond stride or walkers return before touching memory (the grouped kernel: its block's points
        // beyond walkers are marked and never read or written; a block has at least 16 threads, so its first G <= 8
        // fill the shared arrays).
        unsafe { b.launch(cfg) }.during("launching bspline")?;
        Ok(())
    }

    /// The outputs of the last evaluation, `[walker][component][stride]`, for the current walkers.
    pub fn outputs(&self) -> Result<Vec<A>, GpuError> {
        let n = self.params.walkers as usize * self.output.components() * self.params.stride as usize;
        self.gpu.stream.clone_dtoh(&self.out.slice(..n)).during("copying outputs")
    }

    /// Poison the outputs so a kernel that fails to write an entry cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        let nan = vec![A::nan(); self.out.len()];
        self.gpu.write(&mut self.out, &nan)
    }

    /// For callers that compute the points on the GPU (the pseudopotential's quadrature points): set the number
    /// of points the next launch evaluates (at most the walkers allocated for) and return the position buffer
    /// (`[point][xyz]`) to fill on the device.
    pub fn device_positions(&mut self, points: usize) -> &mut CudaSlice<f64> {
        assert!(points * 3 <= self.pos.len(), "bspline gpu: more points than allocated");
        self.params.walkers = points as i32;
        &mut self.pos
    }

    /// The device output buffer (`[point][component][stride]`), read by a following kernel on the same stream.
    pub fn device_outputs(&self) -> &CudaSlice<A> {
        &self.out
    }

    /// For a kernel that evaluates its points itself (common.cuh's stencil; solid.cu's moves): the parameters,
    /// the table, the position buffer and the output buffer (room for the walkers allocated for), as its arguments.
    pub fn kernel_args(&mut self) -> (&SplineParams, &CudaSlice<S>, &mut CudaSlice<f64>, &mut CudaSlice<A>) {
        (&self.params, &self.coefs, &mut self.pos, &mut self.out)
    }

    pub fn output(&self) -> Output {
        self.output
    }
}

/// The counting sort of points by B-spline grid cell on the device, for [`GpuSpline::launch_sorted`]. The caller's
/// kernel writes, for each point below the count it passes to [`Self::finish`], its cell in `key` (common.cuh
/// `spline_cell`; -1 where there is no point) and its rank among the cell's points in `rank` (an atomicAdd on
/// `counts`, which [`Self::clear`] zeroes); `finish` turns the counts into each cell's first sorted position and
/// writes `perm` (sorted position -> point). A point's rank, and so its sorted position, varies from run to run with
/// the atomics' order; its value does not, so callers store results at the point's own index.
pub struct CellSort {
    gpu: Arc<Gpu>,
    scan: CudaFunction,
    scatter: CudaFunction,
    cells: usize,
    pub key: CudaSlice<i32>,
    pub rank: CudaSlice<i32>,
    pub counts: CudaSlice<i32>,
    pub perm: CudaSlice<i32>,
}

impl CellSort {
    fn new(gpu: &Arc<Gpu>, n: [i32; 3], points: usize) -> Result<Self, GpuError> {
        let cells = n.iter().map(|&k| k as usize).product::<usize>();
        assert!(cells < i32::MAX as usize, "bspline gpu: too many cells to sort by");
        let mut s = CellSort {
            gpu: gpu.clone(),
            scan: gpu.function("bspline", SRC, "cell_scan")?,
            scatter: gpu.function("bspline", SRC, "cell_scatter")?,
            cells,
            key: gpu.zeros("point cells", 1)?,
            rank: gpu.zeros("point ranks", 1)?,
            counts: gpu.zeros("points per cell", cells)?,
            perm: gpu.zeros("sorted points", 1)?,
        };
        s.resize(points)?;
        Ok(s)
    }

    /// Room for `points` points (the old buffers freed first).
    pub fn resize(&mut self, points: usize) -> Result<(), GpuError> {
        assert!(points < i32::MAX as usize, "bspline gpu: too many points to sort (32-bit positions)");
        for b in [&mut self.key, &mut self.rank, &mut self.perm] {
            *b = self.gpu.zeros("a placeholder", 1)?;
        }
        self.gpu.ensure_fits("the sort by cell", 12 * points)?;
        self.key = self.gpu.zeros("point cells", points.max(1))?;
        self.rank = self.gpu.zeros("point ranks", points.max(1))?;
        self.perm = self.gpu.zeros("sorted points", points.max(1))?;
        Ok(())
    }

    pub fn capacity(&self) -> usize {
        self.key.len()
    }

    /// Zero the counts before the caller's key kernel.
    pub fn clear(&mut self) -> Result<(), GpuError> {
        self.gpu.stream.memset_zeros(&mut self.counts).during("clearing the points per cell")
    }

    /// After the caller's key kernel over the first `points` points: the scan and the scatter into `perm`.
    pub fn finish(&mut self, points: usize) -> Result<(), GpuError> {
        assert!(points <= self.capacity(), "bspline gpu: more points than the sort holds");
        let s = self.gpu.stream.clone();
        let cells = self.cells as i32;
        let mut b = s.launch_builder(&self.scan);
        b.arg(&cells).arg(&mut self.counts);
        // SAFETY: one block of 1024 threads (a multiple of 32, as block_scan needs) scans counts (cells entries) in place.
        unsafe { b.launch(LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 }) }.during("launching cell_scan")?;
        let count = points as i64;
        let mut b = s.launch_builder(&self.scatter);
        b.arg(&count).arg(&self.key).arg(&self.rank).arg(&self.counts).arg(&mut self.perm);
        // SAFETY: thread pt < points with key[pt] >= 0 (a cell below cells) writes perm at its cell's first position
        // plus its rank; the ranks of a cell are 0..its count - 1, so the positions are distinct and below the
        // number of keyed points <= points <= the capacity of perm.
        unsafe { b.launch(crate::gpu::grid_1d(points.max(1), 128)) }.during("launching cell_scatter")?;
        Ok(())
    }
}
