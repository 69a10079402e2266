//! qmc-bench kernels: the physics of quantum Monte Carlo, one folder per kernel.
//!
//! Every kernel has a plain f64 reference (`reference.rs`), a fast multithreaded CPU version (`cpu.rs`) and a GPU
//! version (`gpu.rs` with its `.cu` source), generic over [`Real`] and chosen at run time by [`Precision`].

pub mod bspline;
pub mod determinant;
pub mod check;
pub mod gemm;
pub mod lattice;
pub mod ewald;
pub mod gpu;
pub mod jastrow;
pub mod pseudopotential;
pub mod qmc;
pub mod real;
pub mod rng;
pub mod sample;
pub mod simd;
pub mod solid;

pub use check::Check;
pub use real::{Precision, Real};
