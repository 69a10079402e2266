//! cuBLAS's and cuSOLVER's routines that the kernels call through raw device addresses, as traits over f32 and f64:
//! batched and per-matrix LU factorisation and inversion, strided-batched GEMM. Base layer: the determinant kernel
//! and the solid driver both use them, and [`crate::Scalar`] requires [`BatchedGemm`].

use super::GpuError;
use crate::Real;
use cudarc::cublas::sys;
use cudarc::cusolver::sys as dn;

/// A cuBLAS call's status as a result: anything but success is [`GpuError::Blas`] naming what was running.
pub fn blas_ok(during: &str, st: sys::cublasStatus_t) -> Result<(), GpuError> {
    if st == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Blas { during: during.into(), message: format!("{st:?}") })
    }
}

/// LU factorisation and inversion in f32 or f64: cuBLAS's batched routines and cuSOLVER's per-matrix ones.
pub trait BatchedLu: Real {
    /// # Safety
    /// `a` is a device array of `batch` addresses of n x n column-major matrices; `piv` holds n * batch and
    /// `info` batch ints on the device.
    unsafe fn getrf(h: sys::cublasHandle_t, n: i32, a: u64, piv: u64, info: u64, batch: i32) -> sys::cublasStatus_t;
    /// # Safety
    /// As `getrf`, with `c` the addresses of `batch` output matrices distinct from the inputs.
    unsafe fn getri(h: sys::cublasHandle_t, n: i32, a: u64, piv: u64, c: u64, info: u64, batch: i32) -> sys::cublasStatus_t;
    /// # Safety
    /// `a` is the device address of one n x n column-major matrix; `lwork` a host int.
    unsafe fn dn_getrf_size(h: dn::cusolverDnHandle_t, n: i32, a: u64, lwork: *mut i32) -> dn::cusolverStatus_t;
    /// # Safety
    /// In-place LU of the n x n matrix at `a`; `work` holds the `dn_getrf_size` elements, `piv` n ints and `info`
    /// one int on the device (1-based pivots, info as LAPACK's).
    unsafe fn dn_getrf(h: dn::cusolverDnHandle_t, n: i32, a: u64, work: u64, piv: u64, info: u64) -> dn::cusolverStatus_t;
    /// # Safety
    /// Solves A X = B in place in the n x n matrix at `b`, from `dn_getrf`'s LU at `a` and its pivots.
    unsafe fn dn_getrs(h: dn::cusolverDnHandle_t, n: i32, a: u64, piv: u64, b: u64, info: u64) -> dn::cusolverStatus_t;
}

macro_rules! batched_lu {
    ($t:ty, $getrf:ident, $getri:ident, $dnsize:ident, $dngetrf:ident, $dngetrs:ident) => {
        impl BatchedLu for $t {
            unsafe fn getrf(h: sys::cublasHandle_t, n: i32, a: u64, piv: u64, info: u64, batch: i32) -> sys::cublasStatus_t {
                unsafe { sys::$getrf(h, n, a as _, n, piv as _, info as _, batch) }
            }
            unsafe fn getri(h: sys::cublasHandle_t, n: i32, a: u64, piv: u64, c: u64, info: u64, batch: i32) -> sys::cublasStatus_t {
                unsafe { sys::$getri(h, n, a as _, n, piv as _, c as _, n, info as _, batch) }
            }
            unsafe fn dn_getrf_size(h: dn::cusolverDnHandle_t, n: i32, a: u64, lwork: *mut i32) -> dn::cusolverStatus_t {
                unsafe { dn::$dnsize(h, n, n, a as _, n, lwork) }
            }
            unsafe fn dn_getrf(h: dn::cusolverDnHandle_t, n: i32, a: u64, work: u64, piv: u64, info: u64) -> dn::cusolverStatus_t {
                unsafe { dn::$dngetrf(h, n, n, a as _, n, work as _, piv as _, info as _) }
            }
            unsafe fn dn_getrs(h: dn::cusolverDnHandle_t, n: i32, a: u64, piv: u64, b: u64, info: u64) -> dn::cusolverStatus_t {
                let op = dn::cublasOperation_t::CUBLAS_OP_N;
                unsafe { dn::$dngetrs(h, op, n, n, a as _, n, piv as _, b as _, n, info as _) }
            }
        }
    };
}

batched_lu!(f64, cublasDgetrfBatched, cublasDgetriBatched, cusolverDnDgetrf_bufferSize, cusolverDnDgetrf, cusolverDnDgetrs);
batched_lu!(f32, cublasSgetrfBatched, cublasSgetriBatched, cusolverDnSgetrf_bufferSize, cusolverDnSgetrf, cusolverDnSgetrs);

/// cuBLAS's strided-batched GEMM in f32 or f64 on raw device addresses (operands inside other allocations, as the
/// solid's inverses inside its walker slabs).
pub trait BatchedGemm: Real {
    /// # Safety
    /// a, b and c are device addresses of `batch` column-major matrices at the given strides and leading dimensions
    /// (elements), valid for the shapes the operations and m, n, k give; c distinct from a and b.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_batched(h: sys::cublasHandle_t, ta: sys::cublasOperation_t, tb: sys::cublasOperation_t, m: i32, n: i32, k: i32, alpha: Self, a: u64, lda: i32, sa: i64, b: u64, ldb: i32, sb: i64, beta: Self, c: u64, ldc: i32, sc: i64, batch: i32) -> sys::cublasStatus_t;
}

macro_rules! batched_gemm {
    ($t:ty, $f:ident) => {
        impl BatchedGemm for $t {
            unsafe fn gemm_batched(h: sys::cublasHandle_t, ta: sys::cublasOperation_t, tb: sys::cublasOperation_t, m: i32, n: i32, k: i32, alpha: Self, a: u64, lda: i32, sa: i64, b: u64, ldb: i32, sb: i64, beta: Self, c: u64, ldc: i32, sc: i64, batch: i32) -> sys::cublasStatus_t {
                unsafe { sys::$f(h, ta, tb, m, n, k, &alpha, a as _, lda, sa, b as _, ldb, sb, &beta, c as _, ldc, sc, batch) }
            }
        }
    };
}

batched_gemm!(f64, cublasDgemmStridedBatched);
batched_gemm!(f32, cublasSgemmStridedBatched);
