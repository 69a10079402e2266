//! The GPU engine: every array of all walkers in one device allocation, one launch per step for all walkers,
//! the delayed update's rank-k apply as three cuBLAS strided-batched GEMMs (one batch entry per walker), and the
//! inversion in the accumulation type (f64 for double and mixed), with log|det| and sign from the LU diagonal and
//! pivots.
//!
//! Two inversion routes, chosen by size: cuBLAS's batched LU (`getrfBatched`, then `getriBatched`) is built for many
//! small matrices; a blocked LU per matrix (cuSOLVER `getrf`, then `getrs` against the identity) keeps the GPU busy
//! with large GEMMs inside each factorisation but pays a launch sequence per walker; the matrices go to eight
//! streams side by side (`gpu::Lanes`), since one factorisation fills only part of the device. Measured on an H100
//! (median of 3, all walkers; batched / per-matrix on one stream, 2aec892, before the lanes):
//!
//! | N (walkers) | double | single |
//! | --- | --- | --- |
//! | 128 (64) | 0.82 / 18.4 ms | 0.69 / 15.9 ms |
//! | 512 (64) | 15.3 / 89.8 ms | 38.6 / 77.3 ms |
//! | 1024 (29) | 89.4 / 91.1 ms | 299 / 76 ms |
//! | 2048 (7) | 588 / 51.6 ms | 2568 / 43.6 ms |
//! | 4096 (1) | 4251 / 20.1 ms | 18911 / 17.5 ms |
//!
//! and with the lanes (H100, one run: batched 825a7e2 / lanes 74ca2ba; 1024 and 2048 lanes only, 994e14d):
//!
//! | N (walkers) | double | single |
//! | --- | --- | --- |
//! | 512 (64) | 15.3 / 31.0 ms | 38.4 / 27.4 ms |
//! | 768 (64) | 43.0 / 44.3 ms | 133.5 / 28.5 ms |
//! | 1024 (64) | 62.6 ms | 54.0 ms |
//! | 2048 (29) | 87.4 ms | 66.2 ms |
//!
//! hence the lanes from [`solver_min_n`]: n = 1024 in f64 (the batched LU wins at 512 and ties at 768), 512 in f32
//! (where cuBLAS's batched f32 LU falls behind early). Where libcusolver cannot be loaded the batched route is used
//! at every size.
//!
//! cuBLAS is column-major: a row-major r x c array is its c x r transpose. With T = t (row-major N x N) and
//! V, U^T, W, Y row-major k x N, the products W = V t^T, Y = B^-T U^T, t -= W^T Y read, in column-major terms,
//! W^T = op_T(T^T) V^T, Y^T = U^T_cm B_cm^T, T^T -= Y^T (W^T)^T.

use super::{singular_tolerance, DetError, Engine, MAX_DELAY};
use crate::gpu::{blas_ok, BatchedGemm, BatchedLu, CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use cudarc::cublas::sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
use cudarc::driver::DevicePtr;
use std::sync::Arc;

pub const SRC: &str = include_str!("determinant.cu");

const BLOCK: u32 = 256;

/// From this matrix size up, invert in A through cuSOLVER's per-matrix LU on the lanes (see the module docs).
pub fn solver_min_n<A: Real>() -> usize {
    if A::EPS < 1e-10 {
        1024
    } else {
        512
    }
}

/// Kernel-name suffix for storage S and accumulation A.
fn suffix<S: Real, A: Real>() -> &'static str {
    match (S::NAME, A::NAME) {
        ("f32", "f64") => "mixed",
        (_, name) => name,
    }
}

struct Funcs {
    ratio: CudaFunction,
    gemv: CudaFunction,
    rank1: CudaFunction,
    accept: CudaFunction,
    to_work: CudaFunction,
    from_work: CudaFunction,
    lu_logdet: CudaFunction,
    identity: CudaFunction,
}

/// Buffers of the inversion, allocated on its first use: the LU (in place) and the inverse, with the arrays of
/// per-walker matrix addresses that the batched cuBLAS routines take.
struct InvertBuffers<A> {
    work: CudaSlice<A>,
    out: CudaSlice<A>,
    work_ptrs: CudaSlice<u64>,
    out_ptrs: CudaSlice<u64>,
    piv: CudaSlice<i32>,
    info: CudaSlice<i32>,
    logdet: CudaSlice<f64>,
    neg: CudaSlice<i32>,
    singular: CudaSlice<i32>,
}

/// The delayed-update operands of a batch of matrices: device addresses, row lengths (`_ld`) and strides between the
/// batch's entries (`_stride`), in elements. Row-major as the kernels keep them: t (n rows), V and U^T (kmax rows),
/// B^-1 (kmax x kmax, rows kmax apart); W and Y scratch (kmax rows of n).
#[derive(Clone, Copy, Debug)]
pub struct DelayedBatch {
    pub n: usize,
    pub batch: usize,
    pub kmax: usize,
    pub t: u64,
    pub t_ld: usize,
    pub t_stride: usize,
    pub v: u64,
    pub ut: u64,
    pub vu_ld: usize,
    pub vu_stride: usize,
    pub binv: u64,
    pub binv_stride: usize,
    pub w: u64,
    pub y: u64,
    pub wy_stride: usize,
}

/// Apply the pending moves (slots below `pending` of every matrix of the batch) as three strided-batched GEMMs (module
/// docs): W = V t^T and Y = B^-T U^T, then `between` (the caller's correction of W: the deltas of replaced rows,
/// see `delayed.cuh`; it may clear B^-1, which is read no more), then t -= W^T Y. Queued on the handle's stream.
///
/// # Safety
/// The addresses of `d` hold `d.batch` matrices each of the shapes and strides it names, with `pending <= d.kmax`.
pub unsafe fn delayed_gemms<S: BatchedGemm>(blas: &cudarc::cublas::CudaBlas, d: &DelayedBatch, pending: usize, between: impl FnOnce() -> Result<(), GpuError>) -> Result<(), GpuError> {
    let h = *blas.handle();
    let (n, k) = (d.n as i32, pending as i32);
    let (one, zero) = (S::one(), S::zero());
    let check = |what: &str, st| blas_ok(&format!("the delayed update's {what} (gemmStridedBatched)"), st);
    let (tl, vl, b) = (d.t_ld as i32, d.vu_ld as i32, d.batch as i32);
    let (ts, vs, ws) = (d.t_stride as i64, d.vu_stride as i64, d.wy_stride as i64);
    // SAFETY (both): the shapes below stay inside the matrices the caller vouches for.
    // W^T (n x k, column-major) = op_T(t^T) V^T
    check("W = V t^T", unsafe { S::gemm_batched(h, CUBLAS_OP_T, CUBLAS_OP_N, n, k, n, one, d.t, tl, ts, d.v, vl, vs, zero, d.w, n, ws, b) })?;
    // SAFETY: as the caller's.
    unsafe { delayed_y::<S>(blas, d, pending) }?;
    between()?;
    // t^T (n x n) -= Y^T op_T(W^T)
    check("t -= W^T Y", unsafe { S::gemm_batched(h, CUBLAS_OP_N, CUBLAS_OP_T, n, n, k, -one, d.y, n, ws, d.w, n, ws, one, d.t, tl, ts, b) })
}

/// The middle product of `delayed_gemms` alone, Y = B^-T U^T (per matrix Y^T, n x `pending` column-major: Y's rows
/// n apart), as `delayed_gemms` writes it: for a caller that does the other two products itself (the solid in mixed
/// precision: solid.cu's delayed_w and delayed_update, on its f32 inverses). Queued on the handle's stream; reads
/// only `d.ut` and `d.binv`, writes `d.y`.
///
/// # Safety
/// As `delayed_gemms` for those three operands.
pub unsafe fn delayed_y<S: BatchedGemm>(blas: &cudarc::cublas::CudaBlas, d: &DelayedBatch, pending: usize) -> Result<(), GpuError> {
    let (n, k, vl, b) = (d.n as i32, pending as i32, d.vu_ld as i32, d.batch as i32);
    let (vs, bs, ws) = (d.vu_stride as i64, d.binv_stride as i64, d.wy_stride as i64);
    // Y^T (n x k) = U^T op_T(B^-T)
    // SAFETY: the shapes stay inside the matrices the caller vouches for.
    let st = unsafe { S::gemm_batched(*blas.handle(), CUBLAS_OP_N, CUBLAS_OP_T, n, k, k, S::one(), d.ut, vl, vs, d.binv, d.kmax as i32, bs, S::zero(), d.y, n, ws, b) };
    blas_ok("the delayed update's Y = B^-T U^T (gemmStridedBatched)", st)
}

/// All walkers' determinants on the GPU (see module docs). Storage S, accumulation and inversion A.
pub struct GpuDets<S: Real, A: Real> {
    gpu: Arc<Gpu>,
    f: Funcs,
    n: usize,
    walkers: usize,
    kmax: usize,
    delay: usize,
    /// Largest |A| entry of the loaded matrices: the scale of the singular-pivot test.
    max_abs: f64,
    a: CudaSlice<S>,
    t: CudaSlice<S>,
    prop: CudaSlice<S>,
    grad: CudaSlice<S>,
    flags: CudaSlice<i32>,
    ratio: CudaSlice<A>,
    grads: CudaSlice<A>,
    wv: CudaSlice<A>,
    c: CudaSlice<S>,
    v: CudaSlice<S>,
    ut: CudaSlice<S>,
    binv: CudaSlice<S>,
    wbuf: CudaSlice<S>,
    ybuf: CudaSlice<S>,
    p: CudaSlice<A>,
    count: CudaSlice<i32>,
    inv: Option<InvertBuffers<A>>,
}

fn conv<S: Real>(x: &[f64]) -> Vec<S> {
    x.iter().map(|&v| S::of(v)).collect()
}

fn cfg(grid: (u32, u32, u32), block: (u32, u32, u32)) -> LaunchConfig {
    LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: 0 }
}

/// Device bytes of an engine (to check before allocating, and for the mini-app's size limits).
pub fn device_bytes(n: usize, walkers: usize, kmax: usize, steps: usize, s: usize, a: usize) -> usize {
    let nn = n * n * walkers;
    4 * nn * s + 2 * nn * a + 5 * kmax * n * walkers * s + (3 * n + 4) * walkers * s.max(a) + steps * walkers * 4
}

impl<S: BatchedGemm, A: BatchedLu> GpuDets<S, A> {
    /// Upload the proposals `[walker][row][col]` and gradient rows `[walker][xyz][n]`; room for delays up to
    /// `max_delay` and acceptance flags of `steps` steps. `load` sets A and the inverse.
    pub fn new(gpu: &Arc<Gpu>, n: usize, prop: &[f64], grad: &[f64], max_delay: usize, steps: usize) -> Result<Self, GpuError> {
        assert!((1..=MAX_DELAY).contains(&max_delay), "determinant gpu: delay out of range");
        let walkers = prop.len() / (n * n);
        assert!((1..=65535).contains(&walkers) && n <= 65535, "determinant gpu: walkers and n must fit a grid");
        let (s, a) = (std::mem::size_of::<S>(), std::mem::size_of::<A>());
        gpu.ensure_fits("the determinant matrices", device_bytes(n, walkers, max_delay, steps, s, a))?;
        let suf = suffix::<S, A>();
        let func = |name: &str| gpu.function("determinant", SRC, &format!("det_{name}_{suf}"));
        let inv_suf = A::NAME;
        let ifunc = |name: &str| gpu.function("determinant", SRC, &format!("det_{name}_{inv_suf}"));
        let f = Funcs {
            ratio: func("ratio")?,
            gemv: func("gemv")?,
            rank1: func("rank1")?,
            accept: func("accept")?,
            to_work: func("to_work")?,
            from_work: func("from_work")?,
            lu_logdet: ifunc("lu_logdet")?,
            identity: ifunc("identity")?,
        };
        let nn = n * n * walkers;
        let k = max_delay;
        Ok(GpuDets {
            a: gpu.zeros("Slater matrices", nn)?,
            t: gpu.zeros("inverses", nn)?,
            prop: gpu.upload("proposed rows", &conv::<S>(prop))?,
            grad: gpu.upload("proposed gradient rows", &conv::<S>(grad))?,
            flags: gpu.zeros("acceptance flags", steps.max(1) * walkers)?,
            ratio: gpu.zeros("ratios", walkers)?,
            grads: gpu.zeros("gradient ratios", 3 * walkers)?,
            wv: gpu.zeros("rank-1 products", n * walkers)?,
            c: gpu.zeros("inverse columns", n * walkers)?,
            v: gpu.zeros("delayed row changes", k * n * walkers)?,
            ut: gpu.zeros("delayed inverse rows", k * n * walkers)?,
            binv: gpu.zeros("delayed B inverses", k * k * walkers)?,
            wbuf: gpu.zeros("delayed products W", k * n * walkers)?,
            ybuf: gpu.zeros("delayed products Y", k * n * walkers)?,
            p: gpu.zeros("delayed products p", k * walkers)?,
            count: gpu.zeros("delayed counts", walkers)?,
            inv: None,
            gpu: gpu.clone(),
            f,
            n,
            walkers,
            kmax: k,
            delay: 1,
            max_abs: 0.0,
        })
    }

    fn clear_delayed(&mut self) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        s.memset_zeros(&mut self.v).during("clearing delayed moves")?;
        s.memset_zeros(&mut self.ut).during("clearing delayed moves")?;
        s.memset_zeros(&mut self.binv).during("clearing delayed moves")?;
        s.memset_zeros(&mut self.count).during("clearing delayed moves")
    }

    /// Device addresses of the `walkers` n x n matrices of `m`.
    fn matrix_ptrs(&self, m: &CudaSlice<A>) -> Result<CudaSlice<u64>, GpuError> {
        let (base, _sync) = m.device_ptr(&self.gpu.stream);
        let bytes = (self.n * self.n * std::mem::size_of::<A>()) as u64;
        let ptrs: Vec<u64> = (0..self.walkers as u64).map(|w| base + w * bytes).collect();
        self.gpu.upload("inversion matrix addresses", &ptrs)
    }
}

impl<S: BatchedGemm, A: BatchedLu> Engine for GpuDets<S, A> {
    fn shape(&self) -> (usize, usize) {
        (self.walkers, self.n)
    }

    fn set_delay(&mut self, k: usize) {
        assert!(k >= 1 && k <= self.kmax, "determinant gpu: delay {k} beyond the allocation");
        self.delay = k;
    }

    fn load(&mut self, a: &[f64], t: &[f64], flags: &[i32]) -> Result<(), DetError> {
        assert!(a.len() == self.a.len() && t.len() == self.t.len() && flags.len() <= self.flags.len(), "determinant gpu: load sizes");
        self.max_abs = a.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        self.gpu.write(&mut self.a, &conv::<S>(a))?;
        self.gpu.write(&mut self.t, &conv::<S>(t))?;
        if !flags.is_empty() {
            let mut view = self.flags.slice_mut(..flags.len());
            self.gpu.stream.memcpy_htod(flags, &mut view).during("copying acceptance flags")?;
        }
        self.clear_delayed()?;
        Ok(())
    }

    fn ratio(&mut self, q: usize) -> Result<(), DetError> {
        let (n, kmax, q) = (self.n as i32, self.kmax as i32, q as i32);
        let mut b = self.gpu.stream.launch_builder(&self.f.ratio);
        b.arg(&n).arg(&kmax).arg(&q).arg(&self.t).arg(&self.prop).arg(&self.grad).arg(&self.v).arg(&self.ut);
        b.arg(&self.binv).arg(&self.count).arg(&mut self.p).arg(&mut self.ratio).arg(&mut self.grads);
        // SAFETY: one block per walker; every buffer holds walkers times the per-walker extent the kernel indexes
        // (n*n, 3n, kmax*n, kmax*kmax, kmax, 1, 3) and count[w] <= kmax <= 64 (the shared arrays' size).
        unsafe { b.launch(cfg((self.walkers as u32, 1, 1), (BLOCK, 1, 1))) }.during("launching det_ratio")?;
        Ok(())
    }

    fn accept(&mut self, q: usize, step: usize) -> Result<(), DetError> {
        assert!((step + 1) * self.walkers <= self.flags.len(), "determinant gpu: step beyond the flags");
        let (n, kmax, q, step, nw) = (self.n as i32, self.kmax as i32, q as i32, step as i32, self.walkers as i32);
        let w = self.walkers as u32;
        if self.delay == 1 {
            let mut b = self.gpu.stream.launch_builder(&self.f.gemv);
            b.arg(&n).arg(&q).arg(&step).arg(&nw).arg(&self.t).arg(&self.prop).arg(&self.flags);
            b.arg(&mut self.a).arg(&mut self.wv).arg(&mut self.c);
            // SAFETY: grid (ceil(n/8), walkers) of 8 warps, one row each; rows >= n return; buffers sized as in new.
            unsafe { b.launch(cfg(((self.n as u32).div_ceil(BLOCK / 32), w, 1), (BLOCK, 1, 1))) }.during("launching det_gemv")?;
            let mut b = self.gpu.stream.launch_builder(&self.f.rank1);
            b.arg(&n).arg(&q).arg(&step).arg(&nw).arg(&mut self.t).arg(&self.flags).arg(&self.wv).arg(&self.c);
            // SAFETY: grid (ceil(n/256), n, walkers): column i < n checked, row j < n and walker w by the grid.
            unsafe { b.launch(cfg(((self.n as u32).div_ceil(BLOCK), self.n as u32, w), (BLOCK, 1, 1))) }.during("launching det_rank1")?;
        } else {
            let mut b = self.gpu.stream.launch_builder(&self.f.accept);
            b.arg(&n).arg(&kmax).arg(&q).arg(&step).arg(&nw).arg(&self.t).arg(&self.prop).arg(&self.flags);
            b.arg(&mut self.a).arg(&mut self.v).arg(&mut self.ut).arg(&mut self.binv).arg(&mut self.count).arg(&self.p);
            // SAFETY: one block per walker; the driver flushes before any walker holds kmax moves, so row
            // count[w] < kmax of v, ut and binv exists.
            unsafe { b.launch(cfg((w, 1, 1), (BLOCK, 1, 1))) }.during("launching det_accept")?;
        }
        Ok(())
    }

    fn flush(&mut self, pending: usize) -> Result<(), DetError> {
        if pending == 0 {
            return Ok(());
        }
        assert!(pending <= self.kmax, "determinant gpu: more pending moves than the delay allows");
        let blas = self.gpu.blas()?;
        let s = &self.gpu.stream;
        let (n, k) = (self.n, self.kmax);
        let ptr = |x: &CudaSlice<S>| x.device_ptr(s).0;
        let d = DelayedBatch {
            n,
            batch: self.walkers,
            kmax: k,
            t: ptr(&self.t),
            t_ld: n,
            t_stride: n * n,
            v: ptr(&self.v),
            ut: ptr(&self.ut),
            vu_ld: n,
            vu_stride: k * n,
            binv: ptr(&self.binv),
            binv_stride: k * k,
            w: ptr(&self.wbuf),
            y: ptr(&self.ybuf),
            wy_stride: k * n,
        };
        // SAFETY: every address is of an allocation of this engine holding `walkers` entries at these strides (t: n x
        // n; v, ut, wbuf, ybuf: kmax rows of n; binv: kmax x kmax), and pending <= kmax.
        unsafe { delayed_gemms::<S>(&blas, &d, pending, || Ok(())) }?;
        self.clear_delayed()?;
        Ok(())
    }

    fn invert(&mut self) -> Result<(), DetError> {
        let (n, walkers) = (self.n, self.walkers);
        if self.inv.is_none() {
            let g = &self.gpu;
            let (work, out) = (g.zeros("inversion LU", n * n * walkers)?, g.zeros("inversion output", n * n * walkers)?);
            self.inv = Some(InvertBuffers {
                work_ptrs: self.matrix_ptrs(&work)?,
                out_ptrs: self.matrix_ptrs(&out)?,
                work,
                out,
                piv: g.zeros("pivot rows", n * walkers)?,
                info: g.zeros("factorisation info", walkers)?,
                logdet: g.zeros("log determinants", walkers)?,
                neg: g.zeros("determinant signs", walkers)?,
                singular: g.zeros("singular flags", walkers)?,
            });
        }
        let solver = if n >= solver_min_n::<A>() { self.gpu.solver()? } else { None };
        let blas = self.gpu.blas()?;
        let inv = self.inv.as_mut().unwrap();
        let s = &self.gpu.stream;
        let (ni, nw) = (n as i32, walkers as i32);
        let (w, tiles) = (walkers as u32, (n as u32).div_ceil(32));
        let mut b = s.launch_builder(&self.f.to_work);
        b.arg(&ni).arg(&self.a).arg(&mut inv.work);
        // SAFETY: 32 x 32 tiles cover n x n for every walker; entries beyond n are skipped.
        unsafe { b.launch(cfg((tiles, tiles, w), (32, 8, 1))) }.during("launching det_to_work")?;
        let ptr = |x: &CudaSlice<i32>| x.device_ptr(s).0;
        let (piv, info) = (ptr(&inv.piv), ptr(&inv.info));
        let (wp, op) = (inv.work_ptrs.device_ptr(s).0, inv.out_ptrs.device_ptr(s).0);
        let (work, out) = (inv.work.device_ptr(s).0, inv.out.device_ptr(s).0);
        let (mat, ints) = ((n * n * std::mem::size_of::<A>()) as u64, (n * 4) as u64);
        if let Some(lanes) = &solver {
            // walker k's matrix, pivots and info lie at these offsets of work, piv and info (sized for all walkers)
            let lu: Vec<(u64, u64, u64)> = (0..walkers as u64).map(|k| (work + k * mat, piv + k * ints, info + 4 * k)).collect();
            lanes.lock().unwrap().getrf::<A>(&self.gpu, n, &lu)?;
        } else {
            // SAFETY: work_ptrs and out_ptrs hold the addresses of the `walkers` n x n matrices of work and out
            // (built from these very allocations, which live as long as the pointer arrays); piv holds n * walkers
            // ints and info walkers ints; the handle runs on the stream of every launch here.
            blas_ok("the batched LU factorisation (getrfBatched)", unsafe { A::getrf(*blas.handle(), ni, wp, piv, info, nw) })?;
        }
        let tol = singular_tolerance(n, self.max_abs, A::EPS);
        let mut b = s.launch_builder(&self.f.lu_logdet);
        b.arg(&ni).arg(&tol).arg(&inv.work).arg(&inv.piv).arg(&inv.info);
        b.arg(&mut inv.logdet).arg(&mut inv.neg).arg(&mut inv.singular);
        // SAFETY: one block per walker over its n x n LU, n pivots and one entry of info/logdet/neg/singular.
        unsafe { b.launch(cfg((w, 1, 1), (BLOCK, 1, 1))) }.during("launching det_lu_logdet")?;
        let total = (n * n * walkers) as u64;
        let spread = cfg((self.gpu.info.multiprocessors.max(1) as u32 * 8, 1, 1), (BLOCK, 1, 1));
        if let Some(lanes) = &solver {
            let mut b = s.launch_builder(&self.f.identity);
            b.arg(&ni).arg(&total).arg(&mut inv.out);
            // SAFETY: grid-stride loop over the `total` entries of out.
            unsafe { b.launch(spread) }.during("launching det_identity")?;
            // out's walker-k matrix is the right-hand side, overwritten in place
            let solve: Vec<(u64, u64, u64, u64)> = (0..walkers as u64).map(|k| (work + k * mat, piv + k * ints, out + k * mat, info + 4 * k)).collect();
            lanes.lock().unwrap().getrs::<A>(&self.gpu, n, &solve)?;
        } else {
            // SAFETY: as for getrf; out is a separate allocation from work.
            blas_ok("the batched LU inversion (getriBatched)", unsafe { A::getri(*blas.handle(), ni, wp, piv, op, info, nw) })?;
        }
        let mut b = s.launch_builder(&self.f.from_work);
        b.arg(&total).arg(&inv.out).arg(&mut self.t);
        // SAFETY: grid-stride loop over the `total` entries both buffers hold.
        unsafe { b.launch(spread) }.during("launching det_from_work")?;
        let singular = self.gpu.download(&inv.singular)?;
        if let Some((walker, &c)) = singular.iter().enumerate().find(|(_, &c)| c != 0) {
            return Err(DetError::Singular { walker, column: c as usize - 1 });
        }
        Ok(())
    }

    fn inverse(&mut self) -> Result<Vec<f64>, DetError> {
        Ok(self.gpu.download(&self.t)?.iter().map(|x| x.f64()).collect())
    }

    fn ratios(&mut self) -> Result<(Vec<f64>, Vec<f64>), DetError> {
        let r = self.gpu.download(&self.ratio)?.iter().map(|x| x.f64()).collect();
        let g = self.gpu.download(&self.grads)?.iter().map(|x| x.f64()).collect();
        Ok((r, g))
    }

    fn logdets(&mut self) -> Result<(Vec<f64>, Vec<f64>), DetError> {
        let inv = self.inv.as_ref().expect("determinant gpu: logdets before any inversion");
        let neg = self.gpu.download(&inv.neg)?;
        Ok((self.gpu.download(&inv.logdet)?, neg.iter().map(|&k| if k % 2 == 0 { 1.0 } else { -1.0 }).collect()))
    }
}
