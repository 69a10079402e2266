//! The Coulomb potential of electrons and fixed nuclei in open boundaries: the ewald kernel's direct sum
//! ([`Open`]) as this driver's [`Hamiltonian`]. Periodic cells need the Ewald sums, which implement it in its place.

use super::{Hamiltonian, V3};
use crate::ewald::open::Open;
use crate::Real;
use std::marker::PhantomData;

/// Nuclei of given charges at fixed positions; the electron terms are summed in T (f32 in single precision).
#[derive(Clone, Debug)]
pub struct Coulomb<T = f64> {
    pub open: Open,
    pub precision: PhantomData<T>,
}

impl<T: Real> Coulomb<T> {
    pub fn new(nuclei: Vec<(f64, V3)>) -> Self {
        Coulomb { open: Open::new(nuclei), precision: PhantomData }
    }

    /// Nucleus-nucleus repulsion, a constant of the geometry.
    pub fn nuclear_repulsion(&self) -> f64 {
        self.open.nuclear_repulsion()
    }
}

impl<T: Real> Hamiltonian for Coulomb<T> {
    fn potential(&self, r: &[V3]) -> f64 {
        self.open.energy::<T>(r).f64()
    }
}
