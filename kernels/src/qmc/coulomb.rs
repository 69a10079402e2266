//! The Coulomb potential of electrons and fixed nuclei in open boundaries, summed directly. Periodic cells need the
//! `ewald` kernel, which implements [`Hamiltonian`] in its place.

use super::{norm, sub, Hamiltonian, V3};

/// Nuclei of given charges at fixed positions.
#[derive(Clone, Debug)]
pub struct Coulomb {
    pub nuclei: Vec<(f64, V3)>,
}

impl Coulomb {
    /// Nucleus-nucleus repulsion, a constant of the geometry.
    pub fn nuclear_repulsion(&self) -> f64 {
        let n = &self.nuclei;
        (0..n.len()).flat_map(|a| (a + 1..n.len()).map(move |b| n[a].0 * n[b].0 / norm(sub(n[a].1, n[b].1)))).sum()
    }
}

impl Hamiltonian for Coulomb {
    fn potential(&self, r: &[V3]) -> f64 {
        let mut v = self.nuclear_repulsion();
        for (i, &ri) in r.iter().enumerate() {
            for &(z, a) in &self.nuclei {
                v -= z / norm(sub(ri, a));
            }
            for &rj in &r[i + 1..] {
                v += 1.0 / norm(sub(ri, rj));
            }
        }
        v
    }
}
