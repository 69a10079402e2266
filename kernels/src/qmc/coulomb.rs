//! The Coulomb potential of electrons and fixed nuclei in open boundaries, summed directly. Periodic cells need the
//! `ewald` kernel, which implements [`Hamiltonian`] in its place.

use super::{norm, sub, Hamiltonian, V3};
use crate::Real;
use std::marker::PhantomData;

/// Nuclei of given charges at fixed positions; the electron terms are summed in T (f32 in single precision).
#[derive(Clone, Debug)]
pub struct Coulomb<T = f64> {
    pub nuclei: Vec<(f64, V3)>,
    pub precision: PhantomData<T>,
}

impl<T: Real> Coulomb<T> {
    pub fn new(nuclei: Vec<(f64, V3)>) -> Self {
        Coulomb { nuclei, precision: PhantomData }
    }


    /// Nucleus-nucleus repulsion, a constant of the geometry.
    pub fn nuclear_repulsion(&self) -> f64 {
        let n = &self.nuclei;
        (0..n.len()).flat_map(|a| (a + 1..n.len()).map(move |b| n[a].0 * n[b].0 / norm(sub(n[a].1, n[b].1)))).sum()
    }
}

impl<T: Real> Hamiltonian for Coulomb<T> {
    fn potential(&self, r: &[V3]) -> f64 {
        let dist = |p: V3, q: V3| {
            let d = [0, 1, 2].map(|k| T::of(p[k]) - T::of(q[k]));
            (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
        };
        let mut v = T::of(self.nuclear_repulsion());
        for (i, &ri) in r.iter().enumerate() {
            for &(z, a) in &self.nuclei {
                v -= T::of(z) / dist(ri, a);
            }
            for &rj in &r[i + 1..] {
                v += T::one() / dist(ri, rj);
            }
        }
        v.f64()
    }
}
