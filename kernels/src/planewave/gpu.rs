//! GPU launch code for the plane waves: the k vectors are uploaded once, positions are written each call (or filled
//! on the device by the caller), and one launch evaluates every point, one block each (planewave.cu), into the
//! B-spline kernel's output layout `[point][5][stride]` (`bspline::gpu::GpuSpline`'s VGL outputs), so an engine
//! reads either kernel's rows the same way.

use super::PlaneWaves;
use crate::gpu::{CudaFunction, CudaSlice, Gpu, GpuError, PointKernel, PointRows};
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
        self.params.points = self.rows.points() as i32;
        // SAFETY: planewave_vgl takes (params, k, positions, outputs); block pt reads position pt and the k rows of
        // j < orbitals (4 each, orbitals of them, as uploaded), and writes out[pt][5][stride]; threads loop over j <
        // stride, so any block width is safe; no shared memory.
        unsafe { self.rows.launch(&self.func, &self.params, &self.k, BLOCK, 0, "planewave_vgl") }
    }
}
