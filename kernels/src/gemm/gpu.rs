//! GPU launch code: the GEMM variants on operands uploaded once (one launch or one cuBLAS call per product, all
//! walkers stacked in A), and the basis kernel for all electrons of all walkers in one launch.
//!
//! cuBLAS is column-major; a row-major C = A B is the column-major C^T = B^T A^T, so the library is called with the
//! operands swapped and no transposes. TF32 is the handle's math mode for that one call, restored after.

use super::basis::BasisSet;
use super::{Algo, Operands, Shape, COMPONENTS};
use crate::gpu::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use cudarc::cublas::sys::{cublasMath_t, cublasOperation_t, cublasSetMathMode};
use cudarc::cublas::{Gemm, GemmConfig};
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("gemm.cu");

/// Mirrors BM, BN and TPB in gemm.cu.
const TILE: usize = 64;
const THREADS: u32 = 256;

fn blas_error(during: &str, e: impl std::fmt::Debug) -> GpuError {
    GpuError::Blas { during: during.into(), message: format!("{e:?}") }
}

/// Operands and result of one product resident on the GPU, in the storage types of one precision mode: f32
/// inputs for single and mixed, f64 for double; the output f64 unless the mode is single.
pub struct GpuGemm {
    gpu: Arc<Gpu>,
    shape: Shape,
    a32: Option<CudaSlice<f32>>,
    b32: Option<CudaSlice<f32>>,
    a64: Option<CudaSlice<f64>>,
    b64: Option<CudaSlice<f64>>,
    c32: Option<CudaSlice<f32>>,
    c64: Option<CudaSlice<f64>>,
}

impl GpuGemm {
    /// Upload what `algos` need and allocate their outputs.
    pub fn new(gpu: &Arc<Gpu>, ops: &Operands, algos: &[Algo]) -> Result<GpuGemm, GpuError> {
        let s = ops.shape;
        assert!(s.m <= i32::MAX as usize && s.k <= i32::MAX as usize && s.n <= i32::MAX as usize, "gemm gpu: shape");
        let any = |f: fn(&Algo) -> bool| algos.iter().any(f);
        let (in32, in64) = (any(|a| !a.f64_inputs()), any(|a| a.f64_inputs()));
        let (out32, out64) = (any(|a| !a.f64_output()), any(|a| a.f64_output()));
        let bytes = (s.m * s.k + s.k * s.n) * (4 * in32 as usize + 8 * in64 as usize)
            + s.m * s.n * (4 * out32 as usize + 8 * out64 as usize);
        gpu.ensure_fits("the GEMM operands and result", bytes)?;
        Ok(GpuGemm {
            gpu: gpu.clone(),
            shape: s,
            a32: in32.then(|| gpu.upload("A (f32)", &ops.a32)).transpose()?,
            b32: in32.then(|| gpu.upload("B (f32)", &ops.b32)).transpose()?,
            a64: in64.then(|| gpu.upload("A (f64)", &ops.a)).transpose()?,
            b64: in64.then(|| gpu.upload("B (f64)", &ops.b)).transpose()?,
            c32: out32.then(|| gpu.zeros("C (f32)", s.m * s.n)).transpose()?,
            c64: out64.then(|| gpu.zeros("C (f64)", s.m * s.n)).transpose()?,
        })
    }

    fn tiled<T: DeviceRepr, A: DeviceRepr>(&self, entry: &str, a: &CudaSlice<T>, b: &CudaSlice<T>, c: &mut CudaSlice<A>) -> Result<(), GpuError> {
        let f: CudaFunction = self.gpu.function("gemm", SRC, entry)?;
        let s = self.shape;
        let cfg = LaunchConfig {
            grid_dim: (s.m.div_ceil(TILE).max(1) as u32, s.n.div_ceil(TILE).max(1) as u32, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (m, n, k) = (s.m as i32, s.n as i32, s.k as i32);
        let mut lb = self.gpu.stream.launch_builder(&f);
        lb.arg(&m).arg(&n).arg(&k).arg(a).arg(b).arg(c);
        // SAFETY: a holds m*k, b k*n and c m*n entries (allocated from this shape); the kernel reads and writes only
        // entries with row < m, col < n, inner index < k. Grid x = ceil(m/64) <= 2^31, y = ceil(n/64) <= 65535.
        unsafe { lb.launch(cfg) }.during(&format!("launching {entry}"))?;
        Ok(())
    }

    /// cuBLAS C = A B (row-major) as C^T = B^T A^T (column-major).
    fn blas<T>(&self, a: &CudaSlice<T>, b: &CudaSlice<T>, c: &mut CudaSlice<T>) -> Result<(), GpuError>
    where
        T: DeviceRepr + num_traits::One + num_traits::Zero,
        cudarc::cublas::CudaBlas: Gemm<T>,
    {
        let s = self.shape;
        let cfg = GemmConfig {
            transa: cublasOperation_t::CUBLAS_OP_N,
            transb: cublasOperation_t::CUBLAS_OP_N,
            m: s.n as i32,
            n: s.m as i32,
            k: s.k as i32,
            alpha: T::one(),
            lda: s.n.max(1) as i32,
            ldb: s.k.max(1) as i32,
            beta: T::zero(),
            ldc: s.n.max(1) as i32,
        };
        let blas = self.gpu.blas()?;
        // SAFETY: column-major B^T is n x k with ld n, A^T is k x m with ld k, C^T is n x m with ld n: exactly the
        // buffers' sizes.
        unsafe { blas.gemm(cfg, b, a, c) }.map_err(|e| blas_error("running a GEMM", e))
    }

    fn set_math(&self, mode: cublasMath_t) -> Result<(), GpuError> {
        let blas = self.gpu.blas()?;
        // SAFETY: the handle is live (owned by the Gpu); the mode is a valid enum value.
        unsafe { cublasSetMathMode(*blas.handle(), mode) }.result().map_err(|e| blas_error("setting the math mode", e))
    }

    /// Queue one product with `algo` (asynchronous). The algorithm's operands must have been uploaded by `new`.
    pub fn launch(&mut self, algo: Algo) -> Result<(), GpuError> {
        let missing = || -> GpuError { blas_error("choosing buffers", format!("{algo} was not prepared by GpuGemm::new")) };
        let (a32, b32, a64, b64) = (self.a32.as_ref(), self.b32.as_ref(), self.a64.as_ref(), self.b64.as_ref());
        let mut c32 = self.c32.take();
        let mut c64 = self.c64.take();
        let result = (|| match algo {
            Algo::NaiveF32 | Algo::KahanF32 => {
                let entry = if algo == Algo::NaiveF32 { "gemm_naive_f32" } else { "gemm_kahan_f32" };
                self.tiled(entry, a32.ok_or_else(missing)?, b32.ok_or_else(missing)?, c32.as_mut().ok_or_else(missing)?)
            }
            Algo::Mixed => self.tiled("gemm_mixed", a32.ok_or_else(missing)?, b32.ok_or_else(missing)?, c64.as_mut().ok_or_else(missing)?),
            Algo::F64 => self.tiled("gemm_f64", a64.ok_or_else(missing)?, b64.ok_or_else(missing)?, c64.as_mut().ok_or_else(missing)?),
            Algo::BlasF32 => self.blas(a32.ok_or_else(missing)?, b32.ok_or_else(missing)?, c32.as_mut().ok_or_else(missing)?),
            Algo::BlasF64 => self.blas(a64.ok_or_else(missing)?, b64.ok_or_else(missing)?, c64.as_mut().ok_or_else(missing)?),
            Algo::BlasTf32 => {
                self.set_math(cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH)?;
                let r = self.blas(a32.ok_or_else(missing)?, b32.ok_or_else(missing)?, c32.as_mut().ok_or_else(missing)?);
                self.set_math(cublasMath_t::CUBLAS_DEFAULT_MATH)?;
                r
            }
        })();
        self.c32 = c32;
        self.c64 = c64;
        result
    }

    /// Rows `rows` of the last result of `algo`, widened to f64 (consecutive rows are copied in one transfer).
    pub fn rows(&self, algo: Algo, rows: &[usize]) -> Result<Vec<f64>, GpuError> {
        let n = self.shape.n;
        let mut out = Vec::with_capacity(rows.len() * n);
        for run in runs(rows) {
            let range = run.start * n..run.end * n;
            if algo.f64_output() {
                let c = self.c64.as_ref().expect("gemm gpu: f64 output allocated");
                out.extend(self.gpu.stream.clone_dtoh(&c.slice(range)).during("copying C")?);
            } else {
                let c = self.c32.as_ref().expect("gemm gpu: f32 output allocated");
                out.extend(self.gpu.stream.clone_dtoh(&c.slice(range)).during("copying C")?.into_iter().map(f64::from));
            }
        }
        Ok(out)
    }

    /// Poison the outputs so that an entry a kernel fails to write cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        if let Some(c) = self.c32.as_mut() {
            self.gpu.stream.memcpy_htod(&vec![f32::NAN; c.len()], c).during("poisoning C")?;
        }
        if let Some(c) = self.c64.as_mut() {
            self.gpu.stream.memcpy_htod(&vec![f64::NAN; c.len()], c).during("poisoning C")?;
        }
        Ok(())
    }
}

/// Split sorted row indices into runs of consecutive rows.
fn runs(rows: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = vec![];
    for &r in rows {
        match out.last_mut() {
            Some(last) if last.end == r => last.end = r + 1,
            _ => out.push(r..r + 1),
        }
    }
    out
}

/// Mirrors `BasisParams` in gemm.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct BasisParams {
    functions: i32,
    rows: i32,
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for BasisParams {}

/// Kernel-name suffix for stored output O and arithmetic T.
fn basis_entry<O: Real, T: Real>() -> &'static str {
    match (T::NAME, O::NAME) {
        ("f64", "f32") => "basis_mixed",
        ("f32", _) => "basis_f32",
        _ => "basis_f64",
    }
}

/// A basis set resident on the GPU with room for `points` electron positions and their outputs.
pub struct GpuBasis<O: Real, T: Real> {
    gpu: Arc<Gpu>,
    func: CudaFunction,
    params: BasisParams,
    /// kernels::basis::pack's records, `[function][RECORD]`
    table: CudaSlice<f64>,
    /// its primitives, `[primitive][exponent, coefficient]`, rounded once to the arithmetic type (converting them
    /// on the device, once per thread and primitive, cost the f32 kernel 1-5%: common.cuh atomic_function_vgl)
    prims: CudaSlice<T>,
    pos: CudaSlice<f64>,
    out: CudaSlice<O>,
}

impl<O: Real, T: Real> GpuBasis<O, T> {
    pub fn new(gpu: &Arc<Gpu>, set: &BasisSet, points: usize) -> Result<Self, GpuError> {
        assert!(points <= i32::MAX as usize, "basis gpu: too many points");
        let out_len = points * COMPONENTS * set.len();
        gpu.ensure_fits("the basis outputs", out_len * std::mem::size_of::<O>() + points * 24)?;
        let table = set.packed();
        assert!(table.len() <= i32::MAX as usize, "basis gpu: the packed basis set is too long");
        let (records, prims) = table.split_at(crate::basis::prims_at(set.len()));
        let prims: Vec<T> = prims.iter().map(|&x| T::of(x)).collect();
        Ok(GpuBasis {
            func: gpu.function("gemm", SRC, basis_entry::<O, T>())?,
            params: BasisParams { functions: set.len() as i32, rows: points as i32 },
            table: gpu.upload("basis function table", records)?,
            prims: gpu.upload("basis primitives", &prims)?,
            pos: gpu.zeros("electron positions", points * 3)?,
            out: gpu.zeros("basis outputs", out_len)?,
            gpu: gpu.clone(),
        })
    }

    /// Copy electron positions (`[point][xyz]`, at most the points allocated for); later launches evaluate them.
    pub fn set_positions(&mut self, pos: &[f64]) -> Result<(), GpuError> {
        assert!(pos.len() % 3 == 0 && pos.len() <= self.pos.len(), "basis gpu: positions length");
        self.params.rows = (pos.len() / 3) as i32;
        let mut view = self.pos.slice_mut(..pos.len());
        self.gpu.stream.memcpy_htod(pos, &mut view).during("copying positions")
    }

    /// Queue one evaluation of all points (asynchronous).
    pub fn launch(&mut self) -> Result<(), GpuError> {
        const BLOCK: u32 = 128;
        let cfg = LaunchConfig {
            grid_dim: (self.params.rows.max(1) as u32, (self.params.functions as u32).div_ceil(BLOCK).max(1), 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.gpu.stream.launch_builder(&self.func);
        b.arg(&self.params).arg(&self.table).arg(&self.prims).arg(&self.pos).arg(&mut self.out);
        // SAFETY: the table holds a basis::RECORD per function (naming primitives that exist in prims, 2 values each:
        // crate::basis::pack); pos holds 3 per row, out 5 * functions per row; threads with j >= functions
        // or row >= rows return before any access.
        unsafe { b.launch(cfg) }.during("launching the basis kernel")?;
        Ok(())
    }

    /// Outputs of the points `points` (ascending) of the last launch, `[point][component][function]`, widened to
    /// f64 (consecutive points are copied in one transfer).
    pub fn outputs_at(&self, points: &[usize]) -> Result<Vec<f64>, GpuError> {
        let per = COMPONENTS * self.params.functions as usize;
        let mut out = Vec::with_capacity(points.len() * per);
        for run in runs(points) {
            let v = self.gpu.stream.clone_dtoh(&self.out.slice(run.start * per..run.end * per)).during("copying basis outputs")?;
            out.extend(v.into_iter().map(|x| x.f64()));
        }
        Ok(out)
    }

    /// Poison the outputs so a kernel that fails to write an entry cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        let nan = vec![O::nan(); self.out.len()];
        self.gpu.write(&mut self.out, &nan)
    }
}
