//! GPU launch code for the plane waves: the k vectors are uploaded once, positions are written each call (or filled
//! on the device by the caller), and one launch evaluates every point, one block each (planewave.cu), into the
//! B-spline kernel's output layout `[point][5][stride]` (`bspline::gpu::GpuSpline`'s VGL outputs), so an engine
//! reads either kernel's rows the same way.

use super::PlaneWaves;
use crate::gpu::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PointKernel, PointRows, PushKernelArg};
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
    k: CudaSlice<f64>,
    rows: PointRows<A>,
}

impl<A: Real> GpuPlaneWaves<A> {
    /// Upload the k vectors, compile the kernel, allocate room for `capacity` points of rows of `stride` entries.
    pub fn new(gpu: &Arc<Gpu>, waves: &PlaneWaves, stride: usize, capacity: usize) -> Result<Self, GpuError> {
        assert!(!waves.is_empty() && waves.len() <= stride && stride.is_multiple_of(BLOCK as usize), "planewave gpu: stride must hold the orbitals and be a multiple of 64");
        let rows = PointRows::new(gpu, "plane-wave", stride, capacity)?;
        let func = gpu.function("planewave", SRC, &format!("planewave_vgl_{}", A::NAME))?;
        Ok(GpuPlaneWaves {
            k: gpu.upload("the plane waves' k vectors", &waves.packed())?,
            params: WaveParams { orbitals: waves.len() as i32, stride: stride as i32, points: capacity as i32, pad: 0 },
            gpu: gpu.clone(),
            func,
            rows,
        })
    }
}

impl<A: Real> PointKernel<A> for GpuPlaneWaves<A> {
    fn rows(&self) -> &PointRows<A> {
        &self.rows
    }

    fn rows_mut(&mut self) -> &mut PointRows<A> {
        &mut self.rows
    }

    fn launch(&mut self) -> Result<(), GpuError> {
        let points = self.rows.points();
        if points == 0 {
            return Ok(());
        }
        self.params.points = points as i32;
        let cfg = LaunchConfig { grid_dim: (points as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let (pos, out) = self.rows.buffers();
        let mut b = self.gpu.stream.launch_builder(&self.func);
        b.arg(&self.params).arg(&self.k).arg(pos).arg(out);
        // SAFETY: block pt < points <= capacity reads pos[3 pt..3 pt + 3] (capacity * 3 entries) and the k rows of
        // j < orbitals (4 each, orbitals of them), and writes out[pt][5][stride] (capacity * 5 * stride entries);
        // threads loop over j < stride, so any block width is safe.
        unsafe { b.launch(cfg) }.during("launching planewave_vgl")?;
        Ok(())
    }
}
