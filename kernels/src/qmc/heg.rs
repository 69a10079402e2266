//! The 3D homogeneous electron gas: N electrons in a periodic cube of volume N 4/3 pi r_s^3 with a neutralising
//! background, a plane-wave Slater determinant per spin (closed shells), the Ewald energy from the `ewald` kernel and
//! a two-body B-spline Jastrow from the `jastrow` kernel.
//!
//! Orbitals are real: 1 for k = 0, and cos(k.r), sin(k.r) for each pair +-k. A closed shell holds both k and -k, so
//! these span the same space as the complex exp(ik.r) and the determinant differs by a constant factor only.
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

use super::jastrow::TwoBody;
use super::slater::Orbitals;
use super::{dot, Hamiltonian, V3};
use crate::ewald::cpu::CpuEwald;
use crate::ewald::reference::Reference;
use crate::ewald::{electron_gas_cell, Cell, Ewald, Ions, Lattice};
use crate::jastrow::Radial;
use crate::Real;
use std::f64::consts::{PI, TAU};

/// Absolute accuracy of the Ewald sums per particle, Ha.
pub const EWALD_ACCURACY: f64 = 1e-6;

/// Real plane waves: (k, sine?) per orbital; (0, false) is the constant.
#[derive(Clone, Debug)]
pub struct PlaneWaves {
    pub k: Vec<(V3, bool)>,
}

impl Orbitals for PlaneWaves {
    fn len(&self) -> usize {
        self.k.len()
    }
    fn vgl<T: Real>(&self, r: V3, v: &mut [T], g: &mut [T], l: &mut [T]) {
        let n = self.k.len();
        let r = r.map(T::of);
        for (j, &(k, sine)) in self.k.iter().enumerate() {
            let k = k.map(T::of);
            let (s, c) = (k[0] * r[0] + k[1] * r[1] + k[2] * r[2]).sin_cos();
            // cos: grad -sin k; sin: grad cos k; both: lap = -k^2 value
            let (val, dval) = if sine { (s, c) } else { (c, -s) };
            v[j] = val;
            for d in 0..3 {
                g[d * n + j] = dval * k[d];
            }
            l[j] = -(k[0] * k[0] + k[1] * k[1] + k[2] * k[2]) * val;
        }
    }
}

/// The occupied integer wavevectors n (k = 2 pi n / L) of one spin: the `count` smallest |n|^2, which must be a
/// closed shell (1, 7, 19, 27, 33, 57, 81, ...).
pub fn occupied(count: usize) -> Result<Vec<[i32; 3]>, String> {
    let m = (count as f64).cbrt().ceil() as i32 + 1;
    let mut all: Vec<[i32; 3]> = vec![];
    for a in -m..=m {
        for b in -m..=m {
            for c in -m..=m {
                all.push([a, b, c]);
            }
        }
    }
    let n2 = |v: &[i32; 3]| v.iter().map(|x| x * x).sum::<i32>();
    all.sort_by_key(|v| (n2(v), *v));
    let closed = |c: usize| c == 0 || c == all.len() || n2(&all[c - 1]) != n2(&all[c]);
    if count == 0 || !closed(count) {
        let shells: Vec<String> = (1..all.len()).filter(|&c| closed(c)).take(6).map(|c| (2 * c).to_string()).collect();
        return Err(format!("{} electrons do not fill closed shells: use one of {}, ...", 2 * count, shells.join(", ")));
    }
    all.truncate(count);
    Ok(all)
}

/// The real orbitals of an occupied set (k from integer vectors in a cube of side `side`).
pub fn plane_waves(occ: &[[i32; 3]], side: f64) -> PlaneWaves {
    let kv = |n: &[i32; 3]| n.map(|x| TAU / side * x as f64);
    let mut k = vec![];
    for n in occ {
        if *n == [0, 0, 0] {
            k.push((kv(n), false));
        } else if *n > [-n[0], -n[1], -n[2]] {
            // one of each +-n pair carries both the cosine and the sine
            k.push((kv(n), false));
            k.push((kv(n), true));
        }
    }
    PlaneWaves { k }
}

/// The Ewald energy of the electrons and background, one configuration at a time: terms in S, sums in A (the
/// `ewald` kernel's CPU code; f64/f64 for double and mixed, f32/f32 for single).
pub struct EwaldPotential<S: Real = f64, A: Real = f64> {
    pub ewald: CpuEwald<S, A>,
}

impl<S: Real, A: Real> Hamiltonian for EwaldPotential<S, A> {
    fn potential(&self, r: &[V3]) -> f64 {
        self.ewald.energy_one(r).f64()
    }
}

/// The Hartree-Fock energy of the plane-wave determinant and its (constant) kinetic part.
#[derive(Clone, Copy, Debug)]
pub struct HartreeFock {
    pub energy: f64,
    pub kinetic: f64,
}

/// E_HF of N = 2 x occ.len() electrons in the cube `cell`, as the module docs derive it.
pub fn hartree_fock(occ: &[[i32; 3]], cell: &Cell, ewald: &Ewald) -> HartreeFock {
    let side = cell.a[0][0];
    let k: Vec<V3> = occ.iter().map(|n| n.map(|x| TAU / side * x as f64)).collect();
    let kinetic = 2.0 * k.iter().map(|k| 0.5 * dot(*k, *k)).sum::<f64>();
    let mut exchange = 0.0;
    for (a, ka) in k.iter().enumerate() {
        for kb in &k[..a] {
            let q = super::sub(*ka, *kb);
            // ordered pairs (a, b) and (b, a), times 1/2, times two spins
            exchange -= 2.0 * 4.0 * PI / (cell.volume * dot(q, q));
        }
    }
    let v_m = Reference::new(cell, ewald.params).v_m();
    let n = 2.0 * occ.len() as f64;
    HartreeFock { energy: kinetic + 0.5 * n * v_m + exchange, kinetic }
}

/// The parts of an electron-gas system (the precision-specific components are made from them in `systems`).
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

/// The two-body B-spline Jastrow of the gas: 8 intervals up to half the side, cusps 1/4 (like) and 1/2 (opposite),
/// interior coefficients sampled from a Padé shape c r / (1 + b r) with its value and slope at the cutoff
/// subtracted, so u rises from below to zero at the cutoff. b = HEG_JASTROW_B / r_s.
pub fn bspline_jastrow(n_up: usize, side: f64, rs: f64) -> TwoBody {
    let rc = 0.5 * side;
    let m = 8;
    let h = rc / m as f64;
    let b = HEG_JASTROW_B / rs;
    let make = |cusp: f64| {
        let g = |r: f64| cusp * r / (1.0 + b * r);
        let dg = |r: f64| cusp / (1.0 + b * r).powi(2);
        let interior: Vec<f64> = (1..m).map(|k| k as f64 * h).map(|r| g(r) - g(rc) - dg(rc) * (r - rc)).collect();
        Radial::bspline(rc, cusp, &interior)
    };
    TwoBody { n_up, pair: [make(0.25), make(0.5)], nuclei: vec![], side: Some(side) }
}

/// b r_s of the gas Jastrow's Padé shape (see `bspline_jastrow`).
pub const HEG_JASTROW_B: f64 = 1.0;
