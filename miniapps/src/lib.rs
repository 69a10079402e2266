//! The qmc-bench programs. Each mini-app is a module with its clap `Args` (the common flags plus its sizes), a
//! `run` that describes and validates its cases through the harness [`Runner`](harness::Runner), and the command
//! lines of its quick, full and scoring suites; [`score`] is the scoring workload. [`registry`] lists them for `qmcbench`; a binary per kernel calls
//! [`registry::kernel_main`].

pub mod bspline;
pub mod common;
pub mod figures;
pub mod gemm;
pub mod headlines;
pub mod jastrow;
pub mod pseudopotential;
pub mod lattice;
pub mod ewald;
pub mod determinant;
pub mod projection;
pub mod qmc;
pub mod registry;
pub mod score;
pub mod solid;
