//! The point buffers of the orbital kernels that evaluate one block per point (the plane waves, the atomic
//! orbitals): positions `[point][xyz]` written from the host or filled on the device by the caller, and value,
//! gradient and Laplacian rows `[point][5][stride]` (the B-spline kernel's VGL layout), so an engine reads any
//! orbital kernel's rows the same way. Each kernel keeps its own data and launch; this holds what they share.

use super::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use cudarc::driver::DeviceRepr;
use crate::Real;
use std::sync::Arc;

/// Room for up to `capacity` points of rows of `stride` entries, and how many the next launch evaluates.
pub struct PointRows<A: Real> {
    gpu: Arc<Gpu>,
    /// What the buffers are for, in messages ("plane-wave", "atomic-orbital").
    what: &'static str,
    capacity: usize,
    stride: usize,
    points: usize,
    pos: CudaSlice<f64>,
    out: CudaSlice<A>,
}

impl<A: Real> PointRows<A> {
    /// Allocate the buffers, after checking that they fit the device.
    pub fn new(gpu: &Arc<Gpu>, what: &'static str, stride: usize, capacity: usize) -> Result<Self, GpuError> {
        assert!((1..=i32::MAX as usize).contains(&capacity), "{what} gpu: 1 to 2^31 - 1 points (one block each)");
        let out_len = capacity * 5 * stride;
        gpu.ensure_fits(&format!("the {what} outputs"), out_len * std::mem::size_of::<A>() + capacity * 24)?;
        Ok(PointRows {
            pos: gpu.zeros(&format!("{what} positions"), capacity * 3)?,
            out: gpu.zeros(&format!("{what} outputs"), out_len)?,
            gpu: gpu.clone(),
            what,
            capacity,
            stride,
            points: capacity,
        })
    }

    /// Points the next launch evaluates.
    pub fn points(&self) -> usize {
        self.points
    }

    /// Copy new positions (`[point][xyz]`, at most the capacity) to the device; the following launches evaluate that
    /// many points.
    pub fn set_positions(&mut self, pos: &[f64]) -> Result<(), GpuError> {
        assert!(pos.len().is_multiple_of(3) && pos.len() <= 3 * self.capacity, "{} gpu: positions length", self.what);
        self.points = pos.len() / 3;
        let mut view = self.pos.slice_mut(..pos.len());
        self.gpu.stream.memcpy_htod(pos, &mut view).during(&format!("copying {} positions", self.what))
    }

    /// For callers that compute the points on the GPU: set the number of points the next launch evaluates (at most
    /// the capacity) and return the position buffer (`[point][xyz]`) to fill on the device.
    pub fn device_positions(&mut self, points: usize) -> &mut CudaSlice<f64> {
        assert!(points <= self.capacity, "{} gpu: more points than allocated", self.what);
        self.points = points;
        &mut self.pos
    }

    /// Queue `func` on the current points (asynchronous; nothing with none): one block of `block` threads and `shared`
    /// bytes of dynamic shared memory a point, with the arguments every per-point orbital kernel takes, (params,
    /// table, positions, outputs). `what` names the kernel in an error.
    ///
    /// # Safety
    /// `func` is such a kernel: block pt < points reads positions[3 pt..3 pt + 3] and writes at most the rows of
    /// point pt (5 rows of the stride), with any block width; with `params` and `table` it reads nothing outside
    /// `table` and its shared memory fits `shared`.
    pub unsafe fn launch<P: DeviceRepr>(&mut self, func: &CudaFunction, params: &P, table: &CudaSlice<f64>, block: u32, shared: u32, what: &str) -> Result<(), GpuError> {
        if self.points == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig { grid_dim: (self.points as u32, 1, 1), block_dim: (block, 1, 1), shared_mem_bytes: shared };
        let mut b = self.gpu.stream.launch_builder(func);
        b.arg(params).arg(table).arg(&self.pos).arg(&mut self.out);
        // SAFETY: the caller's: points <= capacity blocks, each within its position and its rows of the buffers.
        unsafe { b.launch(cfg) }.during(&format!("launching {what}"))?;
        Ok(())
    }

    /// The device output buffer (`[point][5][stride]`), read by a following kernel on the same stream.
    pub fn device_outputs(&self) -> &CudaSlice<A> {
        &self.out
    }

    /// The outputs of the last evaluation, `[point][5][stride]`, for the current points.
    pub fn outputs(&self) -> Result<Vec<A>, GpuError> {
        let n = self.points * 5 * self.stride;
        self.gpu.stream.clone_dtoh(&self.out.slice(..n)).during(&format!("copying {} outputs", self.what))
    }

    /// Poison the outputs so a kernel that fails to write an entry cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        let nan = vec![A::nan(); self.out.len()];
        self.gpu.write(&mut self.out, &nan)
    }
}

/// An orbital kernel that evaluates one block per point into [`PointRows`]: what an engine needs of it, whichever
/// orbitals it is (the plane waves, the atomic orbitals).
pub trait PointKernel<A: Real> {
    /// Queue one evaluation of the current points (asynchronous).
    fn launch(&mut self) -> Result<(), GpuError>;
    /// The points and their rows (positions in, VGL rows out).
    fn rows(&self) -> &PointRows<A>;
    /// The same, to set the points.
    fn rows_mut(&mut self) -> &mut PointRows<A>;
}
