//! cuSOLVER's per-matrix LU side by side on several streams. One blocked LU of a matrix of 1024..4096 keeps only a
//! few of the device's SMs busy: its panel factorisations are chains of small launches. The inversions of a batch are
//! independent, so each matrix goes to one of [`LANES`] streams, each with its own cuSOLVER handle and workspace,
//! and the device runs their launches concurrently. The lanes start after the work queued on the device's stream and
//! that stream waits for all of them (events), so callers keep one stream's ordering.

use super::{BatchedLu, DriverContext, Gpu, GpuError};
use cudarc::cusolver::{sys as dn, DnHandle};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// Streams the matrices of one batch are spread over. Eight keep the H100 busy where one LU of n = 1536 uses a
/// fraction of it; more buy nothing once the lanes together fill the device, and each costs a workspace.
pub const LANES: usize = 8;

struct Lane {
    stream: Arc<CudaStream>,
    handle: DnHandle,
    /// cuSOLVER's LU workspace, grown to the largest asked for, and the (n, element bytes) it was sized for.
    work: Option<CudaSlice<u8>>,
    sized: (usize, usize),
}

/// The lanes of one device (`Gpu::solver`).
pub struct Lanes {
    lanes: Vec<Lane>,
}

fn status(during: &str, st: dn::cusolverStatus_t) -> Result<(), GpuError> {
    if st == dn::cusolverStatus_t::CUSOLVER_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Blas { during: during.into(), message: format!("{st:?}") })
    }
}

impl Lanes {
    pub(super) fn new(gpu: &Gpu) -> Result<Lanes, GpuError> {
        let mut lanes = Vec::with_capacity(LANES);
        for _ in 0..LANES {
            let stream = gpu.ctx.new_stream().during("creating a solver stream")?;
            let handle = DnHandle::new(stream.clone()).map_err(|e| GpuError::Blas { during: "creating a cuSOLVER handle".into(), message: format!("{e:?}") })?;
            lanes.push(Lane { stream, handle, work: None, sized: (0, 0) });
        }
        Ok(Lanes { lanes })
    }

    /// Run `each(lane handle, workspace address, q)` for q in 0..count, matrix q on lane q % LANES, after the work
    /// queued on the device's stream; that stream then waits for every lane.
    fn spread<A: BatchedLu>(&mut self, gpu: &Gpu, n: usize, count: usize, each: impl Fn(dn::cusolverDnHandle_t, u64, usize) -> Result<(), GpuError>) -> Result<(), GpuError> {
        let used = count.min(LANES);
        // workspaces first: a new one is cleared on the device's stream, before the lanes' start
        for lane in &mut self.lanes[..used] {
            let elem = std::mem::size_of::<A>();
            if n > lane.sized.0 || elem > lane.sized.1 {
                let bytes = workspace_bytes::<A>(gpu, lane, n.max(lane.sized.0))?;
                if lane.work.as_ref().is_none_or(|w| w.len() < bytes) {
                    lane.work = Some(gpu.zeros("cuSOLVER workspace", bytes)?);
                }
                lane.sized = (n.max(lane.sized.0), elem.max(lane.sized.1));
            }
        }
        let start = gpu.stream.record_event(None).during("recording the lanes' start")?;
        for lane in &self.lanes[..used] {
            lane.stream.wait(&start).during("starting a solver lane")?;
        }
        for q in 0..count {
            let lane = &self.lanes[q % LANES];
            let ws = lane.work.as_ref().unwrap().device_ptr(&lane.stream).0;
            each(lane.handle.cu(), ws, q)?;
        }
        for lane in &self.lanes[..used] {
            gpu.stream.join(&lane.stream).during("joining a solver lane")?;
        }
        Ok(())
    }

    /// In-place LU of each n x n column-major matrix `jobs[q] = (a, piv, info)` (device addresses: the matrix, n
    /// pivot ints, one status int), as cuSOLVER's getrf.
    pub fn getrf<A: BatchedLu>(&mut self, gpu: &Gpu, n: usize, jobs: &[(u64, u64, u64)]) -> Result<(), GpuError> {
        self.spread::<A>(gpu, n, jobs.len(), |h, ws, q| {
            let (a, piv, info) = jobs[q];
            // SAFETY: the caller's a, piv and info are an n x n matrix, n ints and one int on this device, no two jobs
            // sharing any; ws is this lane's workspace of the size getrf_bufferSize asked for; the handle runs on the
            // lane's stream, which waits for the work queued before on the device's stream.
            status("the LU factorisation (cuSOLVER getrf)", unsafe { A::dn_getrf(h, n as i32, a, ws, piv, info) })
        })
    }

    /// Solve A X = B in place for each `jobs[q] = (lu, piv, b, info)`: `getrf`'s LU and pivots of A, the n x n
    /// right-hand side B, one status int.
    pub fn getrs<A: BatchedLu>(&mut self, gpu: &Gpu, n: usize, jobs: &[(u64, u64, u64, u64)]) -> Result<(), GpuError> {
        self.spread::<A>(gpu, n, jobs.len(), |h, _, q| {
            let (lu, piv, b, info) = jobs[q];
            // SAFETY: as for getrf; b is an n x n matrix of its own, distinct from every other job's.
            status("the LU solve (cuSOLVER getrs)", unsafe { A::dn_getrs(h, n as i32, lu, piv, b, info) })
        })
    }
}

/// Bytes of cuSOLVER's LU workspace for an n x n matrix in A.
fn workspace_bytes<A: BatchedLu>(gpu: &Gpu, lane: &Lane, n: usize) -> Result<usize, GpuError> {
    let mut lwork = 0i32;
    // cuSOLVER sizes the workspace from the dimensions only; any valid device address serves as the matrix
    let probe: CudaSlice<A> = gpu.zeros("cuSOLVER sizing probe", 1)?;
    let a = probe.device_ptr(&lane.stream).0;
    // SAFETY: lwork is a host int; getrf_bufferSize reads no matrix entry.
    status("sizing cuSOLVER's LU workspace (getrf_bufferSize)", unsafe { A::dn_getrf_size(lane.handle.cu(), n as i32, a, &mut lwork) })?;
    Ok(lwork.max(1) as usize * std::mem::size_of::<A>())
}
