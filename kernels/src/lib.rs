//! qmc-bench kernels: the physics of quantum Monte Carlo, one folder per kernel.
//!
//! Every kernel has a plain f64 reference (`reference.rs`), a fast multithreaded CPU version (`cpu.rs`) and a GPU
//! version (`gpu.rs` with its `.cu` source), generic over [`Real`] and chosen at run time by [`Precision`].

// Layers, each importing only from the layers above it in this list (issue 20's target layout; the driver machinery
// shared by `qmc` and `solid` still lives in `qmc`):
// the base: real types and precision, random streams (per walker too), sampling of checked items, checks, dense
// linear algebra for checks, SIMD dispatch, the GPU layer and the shared CUDA prelude (`common.cuh`)
pub mod check;
pub mod gpu;
pub mod linalg;
pub mod real;
pub mod rng;
pub mod sample;
pub mod scalar;
pub mod simd;
// the kernels: one folder each
pub mod bspline;
pub mod determinant;
pub mod ewald;
pub mod gemm;
pub mod jastrow;
pub mod lattice;
pub mod pseudopotential;
// the drivers: whole VMC/DMC steps composed of the kernels
pub mod qmc;
pub mod solid;

pub use check::Check;
pub use real::{Precision, Real};
pub use scalar::Scalar;
