//! The storage types of the engines that multiply and invert matrices: [`Real`] with the linear algebra behind it
//! on both sides, faer's on the CPU and cuBLAS's batched GEMM on the GPU. Base layer: the determinant kernel and the
//! qmc and solid drivers are generic over it.

use crate::gpu::BatchedGemm;
use crate::Real;

/// What the engines store: f32 or f64, a faer scalar (CPU products) and a cuBLAS one (GPU products).
pub trait Scalar: Real + faer::traits::RealField + BatchedGemm {}
impl Scalar for f32 {}
impl Scalar for f64 {}
