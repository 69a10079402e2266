//! Contracted Cartesian Gaussian basis sets: chi_j(r) = x^k y^l z^m sum_n a_nj exp(-b_nj |r - R_j|^2).
//!
//! The paper's molecules come without geometries or basis sets, so a molecule here is synthetic but shaped like
//! the real thing: atoms about 2.5 bohr apart carrying 15 functions each (the paper's count for Li to Ne): a
//! contracted s (3 primitives), two single s, a contracted p shell (2 primitives), a single p shell and a single
//! Cartesian d shell (6 functions). The last atom is cut short to give the table's exact basis size.
//! Electrons sit within 1.5 bohr of a random atom, where real electrons are. The functions are the base's
//! ([`crate::basis`]), evaluated by its one evaluation on the CPU and on the GPU, as the atomic orbitals are.

use super::Molecule;
use crate::basis::{Function, Radial};
use crate::rng;
use rand::Rng;

/// Functions per atom of the synthetic molecules (the paper's "15 per atom from Li to Ne").
pub const PER_ATOM: usize = 15;

/// Shells of one atom: (angular momentum, primitives).
const SHELLS: [(u32, usize); 6] = [(0, 3), (0, 1), (0, 1), (1, 2), (1, 1), (2, 1)];

/// Cartesian powers (k, l, m) of each angular momentum, in the usual order.
fn cartesians(l: u32) -> &'static [[u32; 3]] {
    match l {
        0 => &[[0, 0, 0]],
        1 => &[[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        _ => &[[2, 0, 0], [1, 1, 0], [1, 0, 1], [0, 2, 0], [0, 1, 1], [0, 0, 2]],
    }
}

/// A basis set: atom positions, functions, and the primitives' exponents b and contraction coefficients a.
#[derive(Clone, Debug)]
pub struct BasisSet {
    pub centers: Vec<[f64; 3]>,
    pub functions: Vec<Function>,
    pub exps: Vec<f64>,
    pub coefs: Vec<f64>,
}

impl BasisSet {
    /// A molecule's synthetic basis (see the module docs), reproducible from `seed`.
    pub fn synthetic(mol: Molecule, seed: u64) -> BasisSet {
        let atoms = mol.basis.div_ceil(PER_ATOM);
        let mut r = rng::rng(seed, 0xBA515);
        // Atoms on a jittered cubic lattice of spacing 2.5 bohr: bonded distances, no two atoms on top of each other.
        let side = (atoms as f64).cbrt().ceil() as usize;
        let centers: Vec<[f64; 3]> = (0..atoms)
            .map(|i| {
                let cell = [i % side, (i / side) % side, i / (side * side)];
                cell.map(|c| 2.5 * c as f64 + r.random_range(-0.3..0.3))
            })
            .collect();
        let mut set = BasisSet { centers, functions: vec![], exps: vec![], coefs: vec![] };
        'atoms: for atom in 0..atoms {
            for &(l, n) in &SHELLS {
                // Exponents of a shell spread over a decade each, tight to diffuse; contraction weights positive.
                let start = set.exps.len();
                for p in 0..n {
                    let decade = 10f64.powi((n - 1 - p) as i32);
                    set.exps.push(r.random_range(0.15..1.5) * decade);
                    set.coefs.push(r.random_range(0.2..1.0));
                }
                for &powers in cartesians(l) {
                    if set.functions.len() == mol.basis {
                        break 'atoms;
                    }
                    set.functions.push(Function { center: atom, powers, radial: Radial::Gaussian, prims: start..start + n });
                }
            }
        }
        set
    }

    pub fn len(&self) -> usize {
        self.functions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// Electron positions `[walker][electron][xyz]`: each electron within 1.5 bohr (per axis) of a random atom.
    pub fn electrons(&self, walkers: usize, electrons: usize, seed: u64) -> Vec<f64> {
        let mut r = rng::rng(seed, 0xE1EC);
        let mut pos = Vec::with_capacity(walkers * electrons * 3);
        for _ in 0..walkers * electrons {
            let c = self.centers[r.random_range(0..self.centers.len())];
            pos.extend(c.map(|x| x + r.random_range(-1.5..1.5)));
        }
        pos
    }

    /// The functions as the GPU reads them ([`crate::basis::pack`]: records, then the primitives from
    /// [`crate::basis::prims_at`] on).
    pub fn packed(&self) -> Vec<f64> {
        crate::basis::pack(&self.centers, &self.functions, &self.exps, &self.coefs)
    }

    /// Flops of evaluating all functions at `points` electron positions ([`crate::basis::flops`]: 30 a function for
    /// the displacement, powers and the five outputs, and 8 a primitive, the exponential counted as one).
    pub fn flops(&self, points: usize) -> f64 {
        (points * crate::basis::flops(&self.functions)) as f64
    }

    /// Fewest bytes: positions in, five outputs per function out (the basis set itself is small and cached).
    pub fn bytes(&self, points: usize, out_bytes: usize) -> f64 {
        (points * (24 + super::COMPONENTS * self.len() * out_bytes)) as f64
    }
}
