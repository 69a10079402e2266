//! Ewald sums: the Coulomb energy of electrons and ions in a periodic cell with a neutralising background, in 3D
//! (any lattice vectors) and 2D (a layer in a 2D cell). CASINO (paper 003) spends most of an electron-gas run here.
//!
//! Energy of charges q_i (electrons q = -1, ions q = Z_I) in a cell of volume Omega (area in 2D), CASINO's Eqs. 2-4:
//!
//!   E = sum_{i<j} q_i q_j v_E(r_i - r_j) + 1/2 sum_i q_i^2 v_M,
//!
//! split with alpha (= sqrt(gamma)) into a real-space sum of erfc(alpha r) / r over lattice images within r_c, a
//! reciprocal-space sum sum_{0<|G|<=G_c} c(G) e^{iG.r} with c(G) = 4 pi / Omega e^{-G^2 / 4 alpha^2} / G^2
//! (3D) or 2 pi / A erfc(G / 2 alpha) / G (2D), the background -pi / (Omega alpha^2) (3D) or
//! -2 sqrt(pi) / (A alpha) (2D) per pair, and the self term -2 alpha / sqrt(pi) in v_M. The fast kernels use the
//! structure factor S(G) = sum_i q_i e^{iG.r_i} for the reciprocal part, one G of each +-G pair:
//!
//!   E = sum_{i<j} q_i q_j phi(r_ij) + sum_{G in half} c(G) |S(G)|^2 + constant,
//!
//! phi the real-space image sum and the constant the self, background, own-image and ion-ion real-space terms.
//! Electrons move; ions are the same for all walkers, so S_ion(G) and the constant are computed once.
//!
//! Operations, for a batch of walkers (one configuration of N electrons each):
//! `energy`: the full energy of each walker (also leaves S(G) per walker for the moves);
//! `move`: the change of energy when one electron of each walker moves (real space over the other particles, and
//! |S + e^{iG.r} - e^{iG.r'}|^2 - |S|^2 in reciprocal space).
//!
//! Precision: `double` all f64; `single` f32 storage, evaluation and accumulation (compensated sums); `mixed` f32
//! storage and evaluation of each term, f64 accumulation of pair and structure-factor sums. Set-up (parameters,
//! G coefficients, ion terms, constants) is always f64, as CASINO's lookup tables are.

pub mod cell;
pub mod cpu;
pub mod gpu;
pub mod open;
pub mod params;
pub mod reference;

pub use cell::{Cell, Lattice};
pub use params::Params;

use crate::rng;
use rand::Rng;
use std::f64::consts::PI;

/// Fixed ions: positions (Cartesian) and charges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Ions {
    pub pos: Vec<[f64; 3]>,
    pub charge: Vec<f64>,
}

impl Ions {
    /// `count` ions of equal charge `charge` at random positions in the cell.
    pub fn random(cell: &Cell, count: usize, charge: f64, seed: u64) -> Ions {
        let mut r = rng::rng(seed, 0x10);
        let pos = (0..count).map(|_| random_point(cell, &mut r)).collect();
        Ions { pos, charge: vec![charge; count] }
    }
    pub fn len(&self) -> usize {
        self.pos.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }
}

/// One proposed electron move per walker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Move {
    pub electron: usize,
    pub to: [f64; 3],
}

/// The cell of an electron gas of `electrons` electrons at density parameter r_s (volume per electron
/// 4/3 pi r_s^3 in 3D, pi r_s^2 in 2D).
pub fn electron_gas_cell(lattice: Lattice, electrons: usize, rs: f64) -> Cell {
    let per = if lattice.dim() == 3 { 4.0 / 3.0 * PI * rs.powi(3) } else { PI * rs * rs };
    lattice.cell(per * electrons as f64)
}

fn random_point(cell: &Cell, r: &mut rng::Rng64) -> [f64; 3] {
    let f = [0, 1, 2].map(|k| if k < cell.dim { r.random_range(0.0..1.0) } else { 0.0 });
    cell.cart(f)
}

/// Random electron positions, `[walker][electron][xyz]`, uniform in the cell.
pub fn random_configs(cell: &Cell, walkers: usize, electrons: usize, seed: u64) -> Vec<[f64; 3]> {
    let mut r = rng::rng(seed, 0xE1);
    (0..walkers * electrons).map(|_| random_point(cell, &mut r)).collect()
}

/// One random move per walker: a random electron displaced by up to `step` bohr along each axis of the cell's plane.
pub fn random_moves(cell: &Cell, configs: &[[f64; 3]], walkers: usize, step: f64, seed: u64) -> Vec<Move> {
    let n = configs.len() / walkers;
    let mut r = rng::rng(seed, 0x3D);
    (0..walkers)
        .map(|w| {
            let electron = r.random_range(0..n);
            let old = configs[w * n + electron];
            let to = [0, 1, 2].map(|x| if x < cell.dim { old[x] + r.random_range(-step..step) } else { 0.0 });
            Move { electron, to }
        })
        .collect()
}

/// Everything the fast kernels share: the cell, parameters, real-space images, G vectors and coefficients, ion
/// structure factor and the configuration-independent constant. Built once per system in f64.
#[derive(Clone, Debug)]
pub struct Ewald {
    pub cell: Cell,
    pub params: Params,
    pub electrons: usize,
    pub ions: Ions,
    /// Lattice points the real-space sum of a wrapped displacement can need: |R| <= r_c + max wrapped length.
    pub images: Vec<[f64; 3]>,
    /// Half-space G vectors (Miller indices), grouped by (m1, m2).
    pub gvecs: Vec<[i32; 3]>,
    /// c(G) of each G vector.
    pub coef: Vec<f64>,
    /// Ion structure factor sum_I Z_I e^{iG.R_I} (re, im).
    pub ion_sf: Vec<[f64; 2]>,
    /// Self, background, own-image and ion-ion real-space terms.
    pub constant: f64,
}

/// The real-space image sum of erfc(alpha |d - R|) / |d - R| for a wrapped displacement (f64, set-up use).
fn phi(e: &Ewald, d: [f64; 3]) -> f64 {
    let d = e.cell.wrap(d);
    let rc2 = e.params.rc * e.params.rc;
    e.images
        .iter()
        .map(|r| {
            let x = [d[0] - r[0], d[1] - r[1], d[2] - r[2]];
            let r2 = cell::dot(x, x);
            if r2 < rc2 && r2 > 0.0 {
                libm::erfc(e.params.alpha * r2.sqrt()) / r2.sqrt()
            } else {
                0.0
            }
        })
        .sum()
}

/// Sum of squared charges of the electrons and ions.
pub fn charge2(electrons: usize, ions: &Ions) -> f64 {
    electrons as f64 + ions.charge.iter().map(|z| z * z).sum::<f64>()
}

/// Background term per unit of charge product (3D: pi / (Omega alpha^2); 2D: 2 sqrt(pi) / (A alpha)).
pub fn background(cell: &Cell, alpha: f64) -> f64 {
    if cell.dim == 3 {
        PI / (cell.volume * alpha * alpha)
    } else {
        2.0 * PI.sqrt() / (cell.volume * alpha)
    }
}

/// Reciprocal-space coefficient c(G) for |G| = g.
pub fn coefficient(cell: &Cell, alpha: f64, g: f64) -> f64 {
    if cell.dim == 3 {
        4.0 * PI / cell.volume * (-g * g / (4.0 * alpha * alpha)).exp() / (g * g)
    } else {
        2.0 * PI / cell.volume * libm::erfc(g / (2.0 * alpha)) / g
    }
}

impl Ewald {
    pub fn new(cell: Cell, params: Params, electrons: usize, ions: Ions) -> Ewald {
        let images = cell.lattice_points(params.rc + cell.max_wrapped());
        let gvecs = cell.half_reciprocal(params.gc);
        let coef = gvecs.iter().map(|&m| coefficient(&cell, params.alpha, cell::norm(cell.g(m)))).collect();
        let ion_sf = gvecs
            .iter()
            .map(|&m| {
                let g = cell.g(m);
                ions.pos.iter().zip(&ions.charge).fold([0.0, 0.0], |s, (r, z)| {
                    let (sn, cs) = cell::dot(g, *r).sin_cos();
                    [s[0] + z * cs, s[1] + z * sn]
                })
            })
            .collect();
        let mut e = Ewald { cell, params, electrons, ions, images, gvecs, coef, ion_sf, constant: 0.0 };
        let q2 = charge2(electrons, &e.ions);
        let total = e.ions.charge.iter().sum::<f64>() - electrons as f64;
        let alpha = params.alpha;
        let own_images: f64 = e
            .images
            .iter()
            .map(|r| cell::norm(*r))
            .filter(|&r| r > 0.0 && r < params.rc)
            .map(|r| libm::erfc(alpha * r) / r)
            .sum();
        let mut ion_pairs = 0.0;
        for i in 0..e.ions.len() {
            for j in 0..i {
                let d = [0, 1, 2].map(|x| e.ions.pos[i][x] - e.ions.pos[j][x]);
                ion_pairs += e.ions.charge[i] * e.ions.charge[j] * phi(&e, d);
            }
        }
        e.constant = -alpha / PI.sqrt() * q2 + 0.5 * q2 * own_images - 0.5 * background(&e.cell, alpha) * total * total + ion_pairs;
        e
    }

    /// The system with parameters chosen automatically for `accuracy` Ha per particle.
    pub fn auto(cell: Cell, electrons: usize, ions: Ions, accuracy: f64) -> Ewald {
        let params = Params::auto(&cell, electrons, ions.len(), charge2(electrons, &ions), accuracy);
        Ewald::new(cell, params, electrons, ions)
    }

    /// The system with a user-chosen alpha and cutoffs for `accuracy`.
    pub fn with_alpha(cell: Cell, alpha: f64, electrons: usize, ions: Ions, accuracy: f64) -> Ewald {
        let params = Params::for_alpha(&cell, alpha, charge2(electrons, &ions), accuracy);
        Ewald::new(cell, params, electrons, ions)
    }

    /// Fraction of lattice images that fall within r_c of a random displacement: erfc evaluations per pair.
    pub fn inside(&self) -> f64 {
        let r = self.params.rc;
        let v = if self.cell.dim == 3 { 4.0 / 3.0 * PI * r * r * r } else { PI * r * r };
        v / self.cell.volume
    }

    /// Nominal flops of one full energy of one walker: 8 per (pair, image) distance check, 30 per erfc term within
    /// r_c, 8 per (particle, G) structure-factor term. This is the work of the plain algorithm (every image of every
    /// pair checked, erfc counted as a short rational approximation), the same number for every variant so their rates
    /// compare; it is not what each variant executes. The fast CPU code tries fewer images (6 instead of 19 at the
    /// suite's large sizes), but its polynomial erfc costs ~115 flops in f64 (~80 in f32) and runs on every pair in
    /// the one-image path: about 200 flops per pair in f64 (160 in f32) against the nominal 170 at 678-1930
    /// electrons, so its real rate is within 15% of the recorded one.
    pub fn energy_flops(&self) -> f64 {
        let (n, m) = (self.electrons as f64, self.ions.len() as f64);
        let pairs = n * (n - 1.0) / 2.0 + n * m;
        pairs * (8.0 * self.images.len() as f64 + 30.0 * self.inside()) + 8.0 * n * self.gvecs.len() as f64
    }

    /// Nominal flops of one move of one walker (two real-space rows and two phases per G).
    pub fn move_flops(&self) -> f64 {
        let others = (self.electrons + self.ions.len()) as f64;
        2.0 * others * (8.0 * self.images.len() as f64 + 30.0 * self.inside()) + 24.0 * self.gvecs.len() as f64
    }

    /// Fewest bytes per walker of an energy: positions in (S), S(G) out and the energy (A).
    pub fn energy_bytes(&self, s: usize, a: usize) -> f64 {
        (3 * self.electrons * s + 2 * self.gvecs.len() * a + a) as f64
    }

    /// Fewest bytes per walker of a move: positions and S(G) in, the change out.
    pub fn move_bytes(&self, s: usize, a: usize) -> f64 {
        (3 * (self.electrons + 1) * s + 2 * self.gvecs.len() * a + a) as f64
    }
}

#[cfg(test)]
mod tests;
