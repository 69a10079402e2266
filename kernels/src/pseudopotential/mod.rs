//! Nonlocal pseudopotential energy by spherical quadrature (paper 000, "Nonlocal Pseudopotential Evaluation").
//!
//! For every electron i within r_c of ion I (distance r, unit vector d = (r_i - R_I) / r):
//!
//!   E_NL = sum_{i,I} sum_l (2l+1) dV_l(r) sum_q w_q P_l(u_q . d) Psi(.., R_I + r u_q, ..) / Psi(.., r_i, ..)
//!
//! with u_q the points of a rule on the unit sphere (weights summing to 1, see [`quadrature`]) turned by a random
//! rotation per (walker, ion) and evaluation, and dV_l = V_l - V_loc the radial channels ([`channels`]; BFD carbon
//! by default). The ratio is the Slater determinant's for a one-electron move: the orbitals at the quadrature point
//! (B-spline table, [`crate::bspline`]) dotted with row i of the transposed inverse ([`crate::determinant`]'s layout).
//! Times the Jastrow ratio J(R')/J(R) = exp(sum_{j != i} [u(|r' - r_j|) - u(|r_i - r_j|)] + sum_I [chi(|r' - R_I|) -
//! chi(|r_i - R_I|)]) (minimum image), with u (same and opposite spin) and chi the jastrow kernel's cubic B-spline
//! radial functors ([`crate::jastrow::Radial`]) cut off at half the diamond cell side; optional ([`Setup::jastrow`]).
//!
//! Two phases, as paper 000 does them: (1) the job list, the (walker, electron, ion) triples within r_c with
//! their minimum-image displacement, ordered by walker, electron, ion; (2) all ratios of all jobs in one batch
//! (orbital values at every quadrature point, one dot product each) and the sum per walker.
//!
//! System: a synthetic carbon-like solid, diamond conventional cells (8 atoms, a = 6.74 bohr) stacked
//! m1 x m2 x m3, 4 valence electrons per atom (half per spin, both spins sharing the 2 x atoms spatial orbitals),
//! electrons uniform in the cell, random B-spline coefficients on a grid of 12 points per cell side, and a random
//! well-conditioned (diagonally dominant) transposed inverse per walker and spin (`determinant::random_matrices`).
//!
//! Precision: `double` (f64 table, inverse, spline and dot product), `single` (f32 table and inverse, f32 spline
//! and dot product), `mixed` (f32 table and inverse, spline and dot product accumulated in f64). Positions, job
//! list, quadrature points, channel weights and the final sum are f64 in every mode. The Jastrow functors are
//! evaluated and summed in the arithmetic type (f32 in `single`, f64 in `double` and `mixed`) from f64 distances.

pub mod channels;
pub mod cpu;
pub mod gpu;
pub mod quadrature;
pub mod reference;
pub mod slab;

pub use channels::Channels;
pub use quadrature::Rule;

use crate::bspline::{self, Basis, Grid, Table};
use crate::jastrow::{Form, Radial};
use crate::{rng, Real};
use rand::Rng;

/// Diamond's conventional cubic cell side in bohr (3.567 Angstrom).
pub const DIAMOND_A: f64 = 6.74;
/// B-spline grid points per conventional cell side (0.56 bohr spacing).
pub const GRID_PER_CELL: usize = 12;
/// Valence electrons per carbon atom.
pub const VALENCE: usize = 4;

/// What all walkers share: cell, ions, orbitals, quadrature, channels.
#[derive(Clone, Debug)]
pub struct Setup<S> {
    /// The orthorhombic cell's sides; a side of 0 is an open axis, with no periodic images (the atoms of
    /// `solid::Solid::atom` are open along all three): [`inv_side`] makes every minimum image along it the plain
    /// displacement, on the CPU and the GPU (the kernels' params carry it: `common.cuh`'s `near_image`).
    pub cell: [f64; 3],
    /// `[ion][xyz]`
    pub ions: Vec<f64>,
    pub electrons: usize,
    /// Orbitals per spin = electrons / 2; rows padded to `table.stride`.
    pub table: Table<S>,
    pub rule: Rule,
    pub channels: Channels,
    /// The Jastrow factor of the ratios; `None`: determinant ratios only.
    pub jastrow: Option<Jastrow>,
}

/// 1 / side, and 0 for an open axis (side 0): the minimum image d - side * round(d * inv_side) is then d itself,
/// with no branch (the fast kernels' form).
pub fn inv_side(side: f64) -> f64 {
    if side > 0.0 {
        1.0 / side
    } else {
        0.0
    }
}

/// Cutoff of the Jastrow functors: half the diamond cell side, the smallest half side of every supercell, so one
/// minimum image holds every pair within it.
pub const JASTROW_CUTOFF: f64 = 0.5 * DIAMOND_A;

/// Two-body and one-body Jastrow functors (f64; the fast paths convert them to their arithmetic type).
#[derive(Clone, Debug)]
pub struct Jastrow {
    /// Electron-electron u: [same spin (cusp 1/4), opposite spin (cusp 1/2)].
    pub pair: [Radial<f64>; 2],
    /// Electron-ion chi: no cusp (the pseudopotential has no Coulomb singularity at the ion).
    pub one: Radial<f64>,
}

impl Jastrow {
    /// Random physically shaped B-spline functors, as the jastrow kernel draws them.
    pub fn random(seed: u64) -> Jastrow {
        let mut r = rng::rng(seed, 0x7A5);
        let rc = JASTROW_CUTOFF;
        let pair = [Radial::random(Form::BSpline, rc, 0.25, &mut r), Radial::random(Form::BSpline, rc, 0.5, &mut r)];
        Jastrow { pair, one: Radial::random(Form::BSpline, rc, 0.0, &mut r) }
    }
    /// Functor of the pair of electrons a and b (electrons 0..per_spin are spin up).
    pub fn pair_of(&self, a: usize, b: usize, per_spin: usize) -> &Radial<f64> {
        &self.pair[usize::from((a < per_spin) != (b < per_spin))]
    }
    /// Flops of one functor evaluation with its minimum-image distance.
    pub const PAIR_FLOPS: f64 = 35.0;
}

/// The state of a batch of walkers.
#[derive(Clone, Debug)]
pub struct Walkers<S> {
    pub count: usize,
    /// `[walker][electron][xyz]`
    pub pos: Vec<f64>,
    /// Transposed inverse, `[walker][spin][electron of that spin][stride]` (row i = column i of A^-1, padded with
    /// zeros like the orbital rows so dot products run over whole rows).
    pub inv: Vec<S>,
    /// Random rotation of the rule, `[walker][ion][3x3]`.
    pub rot: Vec<f64>,
}

/// One electron-ion pair within the cutoff.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Job {
    pub walker: usize,
    pub electron: usize,
    pub ion: usize,
    /// r_i - R_I, minimum image.
    pub d: [f64; 3],
}

/// Supercell factors m1 >= m2 >= m3 with m1 m2 m3 = cells, as cubic as possible.
pub fn supercell(cells: usize) -> [usize; 3] {
    let mut best = [cells, 1, 1];
    for a in 1..=cells {
        for b in 1..=a {
            if cells.is_multiple_of(a * b) {
                let c = cells / (a * b);
                if c <= b && a - c < best[0] - best[2] {
                    best = [a, b, c];
                }
            }
        }
    }
    best
}

impl Setup<f64> {
    /// The carbon-like solid of `atoms` atoms (a positive multiple of 8).
    pub fn carbon(atoms: usize, rule: Rule, channels: Channels, seed: u64) -> Result<Setup<f64>, String> {
        if atoms == 0 || !atoms.is_multiple_of(8) {
            return Err(format!("{atoms} atoms is not a whole number of 8-atom diamond cells"));
        }
        let m = supercell(atoms / 8);
        let cell = m.map(|k| k as f64 * DIAMOND_A);
        if 2.0 * channels.rc >= DIAMOND_A {
            return Err(format!("the cutoff {:.2} bohr exceeds half the cell", channels.rc));
        }
        let basis = [[0.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]];
        let mut ions = vec![];
        for i in 0..m[0] {
            for j in 0..m[1] {
                for k in 0..m[2] {
                    for shift in [0.0, 0.25] {
                        for b in basis {
                            let c = [i, j, k];
                            ions.extend((0..3).map(|d| (c[d] as f64 + b[d] + shift) * DIAMOND_A));
                        }
                    }
                }
            }
        }
        let grid = Grid { n: m.map(|k| k * GRID_PER_CELL), cell };
        let electrons = VALENCE * atoms;
        let table = bspline::random_table(grid, electrons / 2, Basis::BSpline, seed);
        Ok(Setup { cell, ions, electrons, table, rule, channels, jastrow: Some(Jastrow::random(seed ^ 0x7A57)) })
    }
}

impl<S: Real> Setup<S> {
    pub fn convert<T: Real>(&self) -> Setup<T> {
        Setup { table: self.table.convert(), cell: self.cell, ions: self.ions.clone(), electrons: self.electrons, rule: self.rule, channels: self.channels.clone(), jastrow: self.jastrow.clone() }
    }
    /// The same system with determinant ratios only.
    pub fn without_jastrow(mut self) -> Self {
        self.jastrow = None;
        self
    }
    /// The same system with the Jastrow factor of `seed`.
    pub fn with_jastrow(mut self, seed: u64) -> Self {
        self.jastrow = Some(Jastrow::random(seed));
        self
    }
    pub fn ion_count(&self) -> usize {
        self.ions.len() / 3
    }
    pub fn per_spin(&self) -> usize {
        self.electrons / 2
    }
    pub fn ion(&self, i: usize) -> [f64; 3] {
        [self.ions[3 * i], self.ions[3 * i + 1], self.ions[3 * i + 2]]
    }
    /// Minimum-image displacement a - b (the cutoff is below half the cell, so one image is enough).
    #[inline(always)]
    pub fn displacement(&self, a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        [0, 1, 2].map(|k| {
            let d = a[k] - b[k];
            if self.cell[k] > 0.0 {
                d - self.cell[k] * (d / self.cell[k]).round()
            } else {
                d
            }
        })
    }
    /// Expected jobs of one walker with uniform electrons: electrons times ions times the chance of lying within r_c
    /// of an ion (the sphere's share of the cell).
    pub fn expected_jobs(&self) -> f64 {
        if self.ion_count() == 0 {
            return 0.0;
        }
        let vol: f64 = self.cell.iter().product();
        let sphere = 4.0 / 3.0 * std::f64::consts::PI * self.channels.rc.powi(3);
        (self.electrons * self.ion_count()) as f64 * sphere / vol
    }
    /// Offset of the inverse row of `electron` of `walker` in `Walkers::inv`.
    pub fn inv_row(&self, walker: usize, electron: usize) -> usize {
        (walker * self.electrons + electron) * self.table.stride
    }
}

impl Walkers<f64> {
    /// `count` walkers of `setup`: uniform electrons, random well-conditioned inverses, random rotations.
    pub fn random<S: Real>(setup: &Setup<S>, count: usize, seed: u64) -> Walkers<f64> {
        let (ne, n, stride) = (setup.electrons, setup.per_spin(), setup.table.stride);
        let mut r = rng::rng(seed, 0x99);
        let pos = (0..count * ne * 3).map(|i| r.random_range(0.0..setup.cell[i % 3])).collect();
        let dense = crate::determinant::random_matrices(n, 2 * count, seed ^ 0x1A);
        let mut inv = vec![0.0; count * ne * stride];
        for (row, src) in inv.chunks_exact_mut(stride).zip(dense.chunks_exact(n)) {
            row[..n].copy_from_slice(src);
        }
        let mut r = rng::rng(seed, 0x707);
        let rot = (0..count * setup.ion_count()).flat_map(|_| quadrature::random_rotation(&mut r)).collect();
        Walkers { count, pos, inv, rot }
    }
}

impl<S: Real> Walkers<S> {
    pub fn convert<T: Real>(&self) -> Walkers<T> {
        Walkers { count: self.count, pos: self.pos.clone(), inv: self.inv.iter().map(|x| T::of(x.f64())).collect(), rot: self.rot.clone() }
    }
    /// The first `count` walkers.
    pub fn prefix(&self, count: usize) -> Walkers<S> {
        self.range(0..count)
    }
    /// The walkers `r`, as a batch of their own.
    pub fn range(&self, r: std::ops::Range<usize>) -> Walkers<S> {
        let (np, ni, nr) = (self.pos.len() / self.count, self.inv.len() / self.count, self.rot.len() / self.count);
        let pick = |v: &[f64], per: usize| v[r.start * per..r.end * per].to_vec();
        Walkers { count: r.len(), pos: pick(&self.pos, np), inv: self.inv[r.start * ni..r.end * ni].to_vec(), rot: pick(&self.rot, nr) }
    }
    pub fn electron(&self, electrons: usize, w: usize, e: usize) -> [f64; 3] {
        let o = 3 * (w * electrons + e);
        [self.pos[o], self.pos[o + 1], self.pos[o + 2]]
    }
}

/// Result of one evaluation: the nonlocal energy per walker and every ratio, in job order.
#[derive(Clone, Debug, Default)]
pub struct Energies {
    pub energy: Vec<f64>,
    /// `[job][quadrature point]`, jobs ordered by walker, electron, ion.
    pub ratios: Vec<f64>,
    pub jobs: usize,
}

/// Flops of one evaluation of `walkers` walkers with `jobs` jobs of `rows` distinct walker-electron pairs: spline
/// values at every point (`bspline::flops`), the dot products, the distance tests of the job list (10 per
/// electron-ion pair), and with the Jastrow one functor per other electron and ion at every point and at each of the
/// `rows` electrons (its old value, once per electron with jobs, as the CPU and GPU do it).
pub fn flops<S: Real>(s: &Setup<S>, jobs: usize, rows: usize, walkers: usize) -> f64 {
    let (electrons, ions, orbitals) = (s.electrons, s.ion_count(), s.per_spin());
    let p = (jobs * s.rule.points()) as f64;
    let j = if s.jastrow.is_some() { (p + rows as f64) * (electrons - 1 + ions) as f64 * Jastrow::PAIR_FLOPS } else { 0.0 };
    bspline::flops(jobs * s.rule.points(), orbitals, bspline::Output::V) + p * 2.0 * orbitals as f64 + 10.0 * (walkers * electrons * ions) as f64 + j
}

/// Fewest bytes one evaluation moves: the table rows the points touch once each (64 per point, at most the whole
/// table of `table_bytes`), each inverse row a job uses once (`inverse_rows` distinct walker-electron pairs with
/// jobs, `row_bytes` each), the electron positions, and one f64 contribution per point.
pub fn bytes(points: usize, table_bytes: usize, inverse_rows: usize, row_bytes: usize, electrons_total: usize) -> f64 {
    ((64 * points * row_bytes).min(table_bytes) + inverse_rows * row_bytes + electrons_total * 24 + points * 8) as f64
}

#[cfg(test)]
mod tests;
