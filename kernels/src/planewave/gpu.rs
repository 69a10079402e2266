//! GPU launch code for the plane waves: the k vectors are uploaded once, positions are written each call (or filled
//! on the device by the caller), and one launch evaluates every point, one block each (planewave.cu), into the
//! B-spline kernel's output layout `[point][5][stride]` (`bspline::gpu::GpuSpline`'s VGL outputs), so an engine
//! reads either kernel's rows the same way.

use super::PlaneWaves;
use crate::gpu::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("planewave.cu");
/// Threads per block: the row stride is a multiple of 64 (`bspline::ROW_ALIGN`), so every thread has an entry.
const BLOCK: u32 = 64;

/// Mirrors `WaveParams` in planewave.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct WaveParams {
    orbitals: i32,
    stride: i32,
    points: i32,
    pad: i32,
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for WaveParams {}

/// Plane waves resident on the GPU with buffers for up to `capacity` points. Arithmetic (and output) type A.
pub struct GpuPlaneWaves<A: Real> {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    params: WaveParams,
    capacity: usize,
    k: CudaSlice<f64>,
    pos: CudaSlice<f64>,
    out: CudaSlice<A>,
}

impl<A: Real> GpuPlaneWaves<A> {
    /// Upload the k vectors, compile the kernel, allocate room for `capacity` points of rows of `stride` entries.
    pub fn new(gpu: &Arc<Gpu>, waves: &PlaneWaves, stride: usize, capacity: usize) -> Result<Self, GpuError> {
        assert!(!waves.is_empty() && waves.len() <= stride && stride.is_multiple_of(BLOCK as usize), "planewave gpu: stride must hold the orbitals and be a multiple of 64");
        assert!((1..=i32::MAX as usize).contains(&capacity), "planewave gpu: 1 to 2^31 - 1 points (one block each)");
        let out_len = capacity * 5 * stride;
        gpu.ensure_fits("the plane-wave outputs", out_len * std::mem::size_of::<A>() + capacity * 24)?;
        let func = gpu.function("planewave", SRC, &format!("planewave_vgl_{}", A::NAME))?;
        Ok(GpuPlaneWaves {
            k: gpu.upload("the plane waves' k vectors", &waves.packed())?,
            pos: gpu.zeros("plane-wave positions", capacity * 3)?,
            out: gpu.zeros("plane-wave outputs", out_len)?,
            params: WaveParams { orbitals: waves.len() as i32, stride: stride as i32, points: capacity as i32, pad: 0 },
            gpu: gpu.clone(),
            func,
            capacity,
        })
    }

    /// Copy new positions (`[point][xyz]`, at most the capacity) to the device; the following launches evaluate that
    /// many points.
    pub fn set_positions(&mut self, pos: &[f64]) -> Result<(), GpuError> {
        assert!(pos.len().is_multiple_of(3) && pos.len() <= 3 * self.capacity, "planewave gpu: positions length");
        self.params.points = (pos.len() / 3) as i32;
        let mut view = self.pos.slice_mut(..pos.len());
        self.gpu.stream.memcpy_htod(pos, &mut view).during("copying plane-wave positions")
    }

    /// For callers that compute the points on the GPU: set the number of points the next launch evaluates (at most
    /// the capacity) and return the position buffer (`[point][xyz]`) to fill on the device.
    pub fn device_positions(&mut self, points: usize) -> &mut CudaSlice<f64> {
        assert!(points <= self.capacity, "planewave gpu: more points than allocated");
        self.params.points = points as i32;
        &mut self.pos
    }

    /// Queue one evaluation of the current points (asynchronous).
    pub fn launch(&mut self) -> Result<(), GpuError> {
        let points = self.params.points as u32;
        if points == 0 {
            return Ok(());
        }
        let cfg = LaunchConfig { grid_dim: (points, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let mut b = self.gpu.stream.launch_builder(&self.func);
        b.arg(&self.params).arg(&self.k).arg(&self.pos).arg(&mut self.out);
        // SAFETY: block pt < points <= capacity reads pos[3 pt..3 pt + 3] (capacity * 3 entries) and the k rows of
        // j < orbitals (4 each, orbitals of them), and writes out[pt][5][stride] (capacity * 5 * stride entries);
        // threads loop over j < stride, so any block width is safe.
        unsafe { b.launch(cfg) }.during("launching planewave_vgl")?;
        Ok(())
    }

    /// The device output buffer (`[point][5][stride]`), read by a following kernel on the same stream.
    pub fn device_outputs(&self) -> &CudaSlice<A> {
        &self.out
    }

    /// The outputs of the last evaluation, `[point][5][stride]`, for the current points.
    pub fn outputs(&self) -> Result<Vec<A>, GpuError> {
        let n = self.params.points as usize * 5 * self.params.stride as usize;
        self.gpu.stream.clone_dtoh(&self.out.slice(..n)).during("copying plane-wave outputs")
    }

    /// Poison the outputs so a kernel that fails to write an entry cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        let nan = vec![A::nan(); self.out.len()];
        self.gpu.write(&mut self.out, &nan)
    }
}
