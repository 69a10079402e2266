//! The VMC/DMC engine: walkers, single-electron drift-diffusion moves, and the small systems that validate it (H, He,
//! H2 in open boundaries), run by the one VMC loop and the one DMC generation of [`crate::ensemble`] (through
//! [`engine::Driven`]), with what this driver adds around them ([`vmc`], [`dmc`]: starts, checkpoints, estimates)
//! and the order of a system's runs, VMC then DMC at each time step then the fit to tau = 0 ([`plan`]).
//!
//! The trial wavefunction is a product of [`Component`]s (orbital part, Jastrow factors), each giving ln|psi|, the
//! gradient and Laplacian of ln psi for every electron, and, for a one-electron move, the ratio psi'/psi with the new
//! gradient: the calls a QMC driver makes (QMCPACK's evaluateLog / evalGrad / ratioGrad / acceptMove). The potential
//! comes from a [`Hamiltonian`]. The shared kernels (determinant, jastrow, ewald, gemm) plug in by implementing these
//! two traits: [`slater`] (one determinant per spin through the determinant kernel), [`jastrow`] (the jastrow
//! kernel's radial functors), [`systems`] (for the electron gas, the plane-wave kernel's description
//! `crate::planewave::heg`: its plane waves, the ewald kernel's energy, its B-spline Jastrow). What is left of the
//! first version ([`orbitals`], [`coulomb`]) is what He and H2 need in open boundaries.
//!
//! Precision (`System::precision`, chosen once when the system is built: `System::by_name_with` turns it into the
//! (storage, arithmetic) pair with `by_precision!`, the wavefunction in the storage type, the Slater inversion and
//! the local energy in the arithmetic type; the walker, VMC and DMC code is the same for all):
//! the [`Component`] and [`Hamiltonian`] interfaces stay f64 (positions, returned ln psi, ratios, gradients and
//! Laplacians), and each component converts at its boundary and computes inside in its own type.
//!
//! - double: everything in f64.
//! - mixed (paper 000's mixed precision): the wavefunction is evaluated and stored in f32: orbital values,
//!   gradients and Laplacians, the Slater matrices and their inverses with the Sherman-Morrison updates of accepted
//!   moves, the ratios and drift gradients, and the Jastrow pair terms. The inverse of each Slater matrix is recomputed
//!   from its f32 matrix with an f64 LU once every step (the full evaluation before the local energy), which bounds
//!   the drift of the f32 updates. The local energy (the kinetic sum over electrons and the potential: Coulomb or
//!   Ewald) is f64, and so is all accumulation: energies, weights, populations, blocking.
//! - single: as mixed, plus the inversion in f32 and the local-energy pieces of each walker in f32 (the Coulomb or
//!   Ewald potential and the kinetic sum over electrons). Positions stay f64 in the walker, and sums across walkers
//!   and generations (the energy estimators, DMC weights and blocking) stay f64, as in every kernel of the suite:
//!   single precision is the per-walker arithmetic.
//!
//! Scale-out: the ranks, migration and balance that every driver shares are in [`crate::ensemble`]; here
//! [`checkpoint`] (atomic files a DMC run restarts from).
//!
//! Engines: VMC and DMC drive any [`engine::Population`]: the CPU walkers (`Vec<Walker>`, rayon over walkers) or
//! [`gpu::GpuWalkers`] (every walker resident on one GPU, one thread per walker, rebuilt from the system's
//! [`systems::Blueprint`]; in double it follows the CPU trajectories, the same random numbers being drawn on the
//! device).


pub mod checkpoint;
pub mod coulomb;
pub mod dmc;
pub mod engine;
pub mod gpu;
pub mod jastrow;
pub mod orbitals;
pub mod plan;
pub mod slater;
pub mod systems;
pub mod timestep;
pub mod vmc;
pub mod walker;

#[cfg(test)]
mod gpu_tests;
#[cfg(test)]
mod scale_tests;
#[cfg(test)]
mod tests;

pub use systems::System;

use crate::{Precision, Real};

/// A point or vector in 3D.
pub type V3 = [f64; 3];

pub fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub fn add(a: V3, b: V3) -> V3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
pub fn scale(s: f64, a: V3) -> V3 {
    [s * a[0], s * a[1], s * a[2]]
}
pub fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub fn norm(a: V3) -> f64 {
    dot(a, a).sqrt()
}

/// One factor of the trial wavefunction. Per-walker cached state (e.g. an inverse Slater matrix) lives in the value
/// itself: each walker owns a clone, and `accept` keeps it in step with the positions.
pub trait Component: Send + Sync {
    /// Full evaluation at positions `r`: returns (ln|psi_c|, sign of psi_c) and ADDS grad ln psi_c and
    /// lap ln psi_c of every electron into `grad` and `lap` (so components can be summed).
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64);
    /// grad_i ln psi_c at the current positions.
    fn grad(&self, r: &[V3], i: usize) -> V3;
    /// psi_c(r with electron i at `new`) / psi_c(r), and grad_i ln psi_c at the new position.
    fn ratio_grad(&self, r: &[V3], i: usize, new: V3) -> (f64, V3);
    /// Electron i moves to `new` (r still holds the old position); stateless components need nothing.
    fn accept(&mut self, _r: &[V3], _i: usize, _new: V3) {}
    /// A copy for another walker.
    fn box_clone(&self) -> Box<dyn Component>;
}

/// The potential energy of a configuration (the kinetic part comes from the wavefunction).
pub trait Hamiltonian: Send + Sync {
    fn potential(&self, r: &[V3]) -> f64;
}

/// psi_T = the product of its components.
pub struct Wavefunction {
    pub parts: Vec<Box<dyn Component>>,
}

impl Clone for Wavefunction {
    fn clone(&self) -> Self {
        Wavefunction { parts: self.parts.iter().map(|p| p.box_clone()).collect() }
    }
}

impl Wavefunction {
    /// (ln|psi|, sign), with grad ln psi and lap ln psi of every electron written into `grad` and `lap`.
    pub fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        grad.fill([0.0; 3]);
        lap.fill(0.0);
        self.parts.iter_mut().fold((0.0, 1.0), |(l, s), p| {
            let (lp, sp) = p.evaluate(r, grad, lap);
            (l + lp, s * sp)
        })
    }
    pub fn grad(&self, r: &[V3], i: usize) -> V3 {
        self.parts.iter().fold([0.0; 3], |g, p| add(g, p.grad(r, i)))
    }
    pub fn ratio_grad(&self, r: &[V3], i: usize, new: V3) -> (f64, V3) {
        self.parts.iter().fold((1.0, [0.0; 3]), |(q, g), p| {
            let (qp, gp) = p.ratio_grad(r, i, new);
            (q * qp, add(g, gp))
        })
    }
    pub fn accept(&mut self, r: &[V3], i: usize, new: V3) {
        for p in &mut self.parts {
            p.accept(r, i, new);
        }
    }
}

/// Local energy H psi / psi = -1/2 sum_i (lap_i ln psi + |grad_i ln psi|^2) + V, from the gradients and Laplacians
/// that `Wavefunction::evaluate` left in `grad` and `lap`.
pub fn local_energy(p: Precision, h: &dyn Hamiltonian, r: &[V3], grad: &[V3], lap: &[f64]) -> f64 {
    kinetic(p, grad, lap) + h.potential(r)
}

/// The local kinetic energy -1/2 sum_i (lap_i ln psi + |grad_i ln psi|^2): summed over electrons in f32 in single
/// precision (a per-walker quantity), in f64 otherwise.
pub fn kinetic(p: Precision, grad: &[V3], lap: &[f64]) -> f64 {
    // the pair (S, A) that by_precision! gives: the sum is arithmetic, in A
    #[allow(clippy::extra_unused_type_parameters)]
    fn sum<S: Real, A: Real>(grad: &[V3], lap: &[f64]) -> f64 {
        let half = A::of(-0.5);
        let s: A = grad.iter().zip(lap).map(|(g, &l)| A::of(l) + g.iter().map(|&x| A::of(x) * A::of(x)).sum::<A>()).sum();
        (half * s).f64()
    }
    crate::by_precision!(p => sum(grad, lap))
}
