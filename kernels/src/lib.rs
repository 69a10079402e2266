//! qmc-bench kernels: the physics of quantum Monte Carlo, one folder per kernel.
//!
//! Every kernel has a plain f64 reference (`reference.rs`), a fast multithreaded CPU version (`cpu.rs`) and a GPU
//! version (`gpu.rs` with its `.cu` source), generic over [`Real`] and chosen at run time by [`Precision`].
//!
//! Three layers, each importing only from itself and the layers below it (issue 20):
//! - the base: real types and precision ([`real`], and [`Scalar`] for the engines that multiply and invert
//!   matrices), random streams ([`rng`]), the one GPU layer ([`gpu`], with the cuBLAS/cuSOLVER traits), checks and
//!   their sampling ([`check`], [`sample`]), basis functions on centres, Gaussian and Slater ([`basis`]), dense
//!   linear algebra for checks ([`linalg`]), SIMD dispatch ([`simd`]),
//!   and the CUDA prelude of shared device maths (`common.cuh`: precision overloads, B-spline weights, radial
//!   functors, plane waves, drift) with its host side ([`maths`]: the B-spline weights, the functors' forms and
//!   their numbers);
//! - the kernels, one folder each ([`atomic`], [`bspline`], [`determinant`], [`ewald`], [`gemm`], [`jastrow`],
//!   [`lattice`], [`planewave`], [`pseudopotential`]): they import the base, and a kernel another only where the
//!   physics composes them (the Jastrow's radial functors are B-splines; the pseudopotential's ratios need orbitals,
//!   determinants and Jastrow; the electron gas, a system description beside its plane waves ([`planewave::heg`],
//!   what both drivers run), has the Ewald energy and the Jastrow's functors);
//! - the drivers, whole VMC/DMC steps composed of the kernels ([`qmc`]: walkers, moves, branching, ranks; [`solid`]:
//!   the batched CPU and GPU engines, running the synthetic solid and the electron gas), over what both share
//!   ([`ensemble`]: ranks and how they talk, walkers as bytes, branching and migration, balance by speed, the drift
//!   of a move).
//!
//! No module imports one that imports it back. `tests/layers.rs` checks both rules from the source.

// the base
pub mod basis;
pub mod check;
pub mod gpu;
pub mod linalg;
pub mod maths;
pub mod real;
pub mod rng;
pub mod sample;
pub mod scalar;
pub mod simd;
// the kernels
/// Atomic orbitals (Slater and contracted Gaussian LCAOs): He, H2 and Be's orbitals for the batched engines.
pub mod atomic;
pub mod bspline;
pub mod determinant;
pub mod ewald;
pub mod gemm;
pub mod jastrow;
pub mod lattice;
pub mod planewave;
pub mod pseudopotential;
// the drivers
pub mod ensemble;
pub mod qmc;
pub mod solid;

pub use check::Check;
pub use real::{Precision, Real};
pub use scalar::Scalar;
