//! The Coulomb energy in open boundaries: electrons and fixed nuclei with no periodic images and no background,
//! summed directly, E = sum_{i<j} 1/r_ij - sum_{i,I} Z_I/r_iI + sum_{I<J} Z_I Z_J/R_IJ. The potential of the atoms
//! and molecules (He, H2, Be) on every engine: the qmc driver's (`qmc::coulomb`) and the batched engines' (the solid
//! engines' CPU sums and `solid.cu`'s `solid_open_coulomb`, one block a walker). N^2/2 pair terms a configuration,
//! which for a few electrons is nothing beside the rest of a step; a periodic cell needs the Ewald sums instead.
//!
//! Precision: the nucleus-nucleus constant in f64 (the geometry's, computed once); the electron terms in T (f32 in
//! single precision), each displacement formed in T from the f64 positions.

use crate::Real;

/// Fixed nuclei of given charges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Open {
    /// (charge, position) of each nucleus.
    pub nuclei: Vec<(f64, [f64; 3])>,
}

impl Open {
    pub fn new(nuclei: Vec<(f64, [f64; 3])>) -> Open {
        Open { nuclei }
    }

    /// Nucleus-nucleus repulsion, a constant of the geometry.
    pub fn nuclear_repulsion(&self) -> f64 {
        let n = &self.nuclei;
        (0..n.len()).flat_map(|a| (a + 1..n.len()).map(move |b| n[a].0 * n[b].0 / distance::<f64>(n[a].1, n[b].1))).sum()
    }

    /// The energy of electrons at `r`, the electron terms summed in T.
    pub fn energy<T: Real>(&self, r: &[[f64; 3]]) -> T {
        let mut v = T::of(self.nuclear_repulsion());
        for (i, &ri) in r.iter().enumerate() {
            for &(z, a) in &self.nuclei {
                v -= T::of(z) / distance::<T>(ri, a);
            }
            for &rj in &r[i + 1..] {
                v += T::one() / distance::<T>(ri, rj);
            }
        }
        v
    }

    /// Flops of one configuration of `electrons` (a pair term: 3 subtractions, 3 multiply-adds, a square root and a
    /// division, counted 8 + 2 x 4).
    pub fn energy_flops(&self, electrons: usize) -> f64 {
        let pairs = electrons * (electrons.saturating_sub(1)) / 2 + electrons * self.nuclei.len();
        16.0 * pairs as f64
    }
}

/// |p - q|, the displacement in T.
fn distance<T: Real>(p: [f64; 3], q: [f64; 3]) -> T {
    let d = [0, 1, 2].map(|k| T::of(p[k]) - T::of(q[k]));
    (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// H2+ like geometry by hand: two protons 1.4 apart, one electron at the midpoint, another 1 bohr above it.
    #[test]
    fn the_direct_sum_matches_a_hand_computation() {
        let o = Open::new(vec![(1.0, [0.0, 0.0, -0.7]), (1.0, [0.0, 0.0, 0.7])]);
        assert!((o.nuclear_repulsion() - 1.0 / 1.4).abs() < 1e-15);
        let r = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]];
        let side = (1.0f64 + 0.49).sqrt();
        let want = 1.0 / 1.4 - 2.0 / 0.7 - 2.0 / side + 1.0;
        assert!((o.energy::<f64>(&r) - want).abs() < 1e-14, "{} vs {want}", o.energy::<f64>(&r));
        let single = o.energy::<f32>(&r).f64();
        assert!((single - want).abs() < 8.0 * f32::EPSILON as f64 * want.abs().max(4.0), "{single} vs {want}");
        // a charge-2 nucleus: twice the attraction
        let he = Open::new(vec![(2.0, [0.0; 3])]);
        assert!((he.energy::<f64>(&[[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]]) - (-2.0 - 1.0 + 1.0 / 5f64.sqrt())).abs() < 1e-15);
    }
}
