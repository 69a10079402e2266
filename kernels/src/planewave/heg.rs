//! The 3D homogeneous electron gas as a system description, for both drivers (the qmc driver's `heg`, the solid
//! engine's `Solid::electron_gas`): N electrons in a periodic cube of volume N 4/3 pi r_s^3 with a neutralising
//! background, a plane-wave Slater determinant per spin (closed shells), the Ewald energy from the `ewald` kernel and
//! a two-body B-spline Jastrow from the `jastrow` kernel's radial functors.
//!
//! Orbitals: this kernel's ([`occupied`] closed shells, [`plane_waves`]: real plane waves 1, cos(k.r), sin(k.r)).
//! Each is an eigenfunction of the Laplacian (-k^2), hence so is the determinant: its local kinetic energy is
//! exactly T_0 = sum over occupied states of k^2 / 2, at every configuration.
//!
//! Hartree-Fock reference (what VMC with the Jastrow off must return). The potential of the determinant
//! |D|^2 averages, with the Ewald pair potential v_E (zero cell average, Fourier coefficients 4 pi / (Omega G^2)) and
//! the Madelung term v_M, to
//!     <V> = N v_M / 2 - 1/2 sum_spins sum_{k != k' occupied} 4 pi / (Omega |k - k'|^2)
//! (the Hartree term vanishes against the background; what is left is exchange, summed directly over the occupied
//! pairs). v_M comes from the `ewald` kernel's reference (`Reference::v_m`). E_HF = T_0 + <V>. The total local energy
//! is NOT constant: T_0 is, but V(R) fluctuates, so the zero-variance check applies to the kinetic part, and the
//! energy check is E_VMC = E_HF within its error bar.
//!
//! Nothing here runs a walker: each driver builds its own components from [`Gas`] and [`pair_functors`] (the qmc
//! driver in `qmc::systems`, the solid engine in `solid::Solid::electron_gas`).

use super::{occupied, plane_waves, PlaneWaves};
use crate::ewald::reference::Reference;
use crate::ewald::{electron_gas_cell, Cell, Ewald, Ions, Lattice};
use crate::jastrow::Radial;
use std::f64::consts::{PI, TAU};

/// Absolute accuracy of the Ewald sums per particle, Ha.
pub const EWALD_ACCURACY: f64 = 1e-6;

/// The Hartree-Fock energy of the plane-wave determinant and its (constant) kinetic part.
#[derive(Clone, Copy, Debug)]
pub struct HartreeFock {
    pub energy: f64,
    pub kinetic: f64,
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// E_HF of N = 2 x occ.len() electrons in the cube `cell`, as the module docs derive it.
pub fn hartree_fock(occ: &[[i32; 3]], cell: &Cell, ewald: &Ewald) -> HartreeFock {
    let side = cell.a[0][0];
    let k: Vec<[f64; 3]> = occ.iter().map(|n| n.map(|x| TAU / side * x as f64)).collect();
    let kinetic = 2.0 * k.iter().map(|k| 0.5 * dot(*k, *k)).sum::<f64>();
    let mut exchange = 0.0;
    for (a, ka) in k.iter().enumerate() {
        for kb in &k[..a] {
            let q = [ka[0] - kb[0], ka[1] - kb[1], ka[2] - kb[2]];
            // ordered pairs (a, b) and (b, a), times 1/2, times two spins
            exchange -= 2.0 * 4.0 * PI / (cell.volume * dot(q, q));
        }
    }
    let v_m = Reference::new(cell, ewald.params).v_m();
    let n = 2.0 * occ.len() as f64;
    HartreeFock { energy: kinetic + 0.5 * n * v_m + exchange, kinetic }
}

/// The parts of an electron-gas system (each driver makes its precision-specific components from them).
pub struct Gas {
    pub side: f64,
    /// The orbitals of each spin (the same closed shell).
    pub orbitals: PlaneWaves,
    pub ewald: Ewald,
    pub hf: HartreeFock,
}

/// N electrons (closed shells, N/2 per spin) at density r_s.
pub fn gas(electrons: usize, rs: f64) -> Result<Gas, String> {
    if !electrons.is_multiple_of(2) {
        return Err(format!("{electrons} electrons cannot be split into two closed-shell spin channels: use an even number"));
    }
    if !(rs.is_finite() && rs > 0.0) {
        return Err(format!("--rs must be positive, got {rs}"));
    }
    let occ = occupied(electrons / 2)?;
    let cell = electron_gas_cell(Lattice::Sc, electrons, rs);
    let side = cell.a[0][0];
    let ewald = Ewald::auto(cell.clone(), electrons, Ions::default(), EWALD_ACCURACY);
    let hf = hartree_fock(&occ, &cell, &ewald);
    Ok(Gas { side, orbitals: plane_waves(&occ, side), ewald, hf })
}

/// The functors of the gas's two-body B-spline Jastrow, [like spins, opposite spins] (what both drivers run): 8
/// intervals up to half the side, cusps 1/4 (like) and 1/2 (opposite), in the Padé shape c r / (1 + b r)
/// ([`Radial::pade_shaped`]), b = HEG_JASTROW_B / r_s.
pub fn pair_functors(side: f64, rs: f64) -> [Radial<f64>; 2] {
    let b = HEG_JASTROW_B / rs;
    [0.25, 0.5].map(|cusp| Radial::pade_shaped(0.5 * side, cusp, b, 8))
}

/// b r_s of the gas Jastrow's Padé shape (see [`pair_functors`]).
pub const HEG_JASTROW_B: f64 = 1.0;
