//! GPU launch code for the atomic orbitals: the packed orbitals (functions, primitives, coefficients) are uploaded
//! once, positions are written each call (or filled on the device by the caller), and one launch evaluates every
//! point, one block each (atomic.cu: the basis functions into shared memory, then the orbitals), into the B-spline
//! kernel's output layout `[point][5][stride]` (`bspline::gpu::GpuSpline`'s VGL outputs), so an engine reads any
//! orbital kernel's rows the same way.

use super::AtomicOrbitals;
use crate::gpu::{CudaFunction, CudaSlice, Gpu, GpuError, PointKernel, PointRows};
use crate::Real;
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("atomic.cu");
/// Threads per block: the row stride is a multiple of 64 (`bspline::ROW_ALIGN`), so every thread has an entry.
const BLOCK: u32 = 64;
/// Shared memory a block may take without opting in: the basis functions' VGL, 5 values of A each.
const SHARED: usize = 48 * 1024;

/// Mirrors `AtomicParams` in atomic.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct AtomicParams {
    orbitals: i32,
    functions: i32,
    stride: i32,
    points: i32,
    prims_at: i32,
    coef_at: i32,
    cusp_at: i32,
    cusps: i32,
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for AtomicParams {}

/// Atomic orbitals resident on the GPU with buffers for up to `capacity` points. Arithmetic (and output) type A.
pub struct GpuAtomicOrbitals<A: Real> {
    func: CudaFunction,
    params: AtomicParams,
    shared: u32,
    tab: CudaSlice<f64>,
    rows: PointRows<A>,
}

impl<A: Real> GpuAtomicOrbitals<A> {
    /// Upload the orbitals, compile the kernel, allocate room for `capacity` points of rows of `stride` entries.
    pub fn new(gpu: &Arc<Gpu>, orbs: &AtomicOrbitals, stride: usize, capacity: usize) -> Result<Self, GpuError> {
        assert!(!orbs.is_empty() && orbs.len() <= stride && stride.is_multiple_of(BLOCK as usize), "atomic gpu: stride must hold the orbitals and be a multiple of 64");
        if let Err(e) = orbs.check() {
            panic!("atomic gpu: {e}");
        }
        let shared = 5 * orbs.functions.len() * std::mem::size_of::<A>();
        assert!(shared <= SHARED, "atomic gpu: {} basis functions need {shared} bytes of shared memory, over {SHARED}", orbs.functions.len());
        let tab = orbs.packed();
        assert!(tab.len() <= i32::MAX as usize, "atomic gpu: the packed orbitals are too long");
        let rows = PointRows::new(gpu, "atomic-orbital", stride, capacity)?;
        let func = gpu.function("atomic", SRC, &format!("atomic_vgl_{}", A::NAME))?;
        let params = AtomicParams {
            orbitals: orbs.len() as i32,
            functions: orbs.functions.len() as i32,
            stride: stride as i32,
            points: capacity as i32,
            prims_at: orbs.prims_at() as i32,
            coef_at: orbs.coef_at() as i32,
            cusp_at: orbs.cusp_at() as i32,
            cusps: orbs.cusps.len() as i32,
        };
        Ok(GpuAtomicOrbitals {
            tab: gpu.upload("the atomic orbitals", &tab)?,
            params,
            shared: shared as u32,
            func,
            rows,
        })
    }
}

impl<A: Real> PointKernel<A> for GpuAtomicOrbitals<A> {
    fn rows(&self) -> &PointRows<A> {
        &self.rows
    }

    fn rows_mut(&mut self) -> &mut PointRows<A> {
        &mut self.rows
    }

    fn launch(&mut self) -> Result<(), GpuError> {
        self.params.points = self.rows.points() as i32;
        // SAFETY: atomic_vgl takes (params, table, positions, outputs); block pt reads position pt and the packed table
        // within its length (the functions' records, the primitives they name, in range by the check in `new`,
        // orbitals x functions coefficients, and the cusps' records); it writes 5 * functions values of A to its
        // dynamic shared memory (sized so) and out[pt][5][stride]; threads loop over f < functions and j < stride, so
        // any block width is safe.
        unsafe { self.rows.launch(&self.func, &self.params, &self.tab, BLOCK, self.shared, "atomic_vgl") }
    }
}
