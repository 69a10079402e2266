//! The validation systems, each with its trial wavefunction, Hamiltonian and exact energy.
//!
//! - H atom, psi = exp(-r): an exact eigenfunction, E_L = -1/2 everywhere (a test of the local energy).
//! - He atom, psi = exp(-2 r1 - 2 r2) exp(u(r12)), Padé u with the e-e cusp: nodeless, like the ground state, so
//!   DMC is exact up to time-step and population-control bias. Exact: -2.903724377 Ha (Pekeris; Drake).
//! - H2 at R = 1.4 bohr, psi = sigma_g(r1) sigma_g(r2) exp(u(r12)): the singlet ground state is nodeless too.
//!   Exact (Born-Oppenheimer, clamped nuclei): -1.174475 Ha (Kolos and Wolniewicz).
//! - Be atom, psi = D_up(1s, 2s) D_down(1s, 2s) exp(u): RHF/cc-pVTZ orbitals from PySCF (the atomic kernel's
//!   [`crate::atomic::hf`]) with their nuclear cusp restored inside 0.2 bohr ([`crate::atomic::cusp`]: Gaussians have
//!   none, and without it the local energy's heavy tail made the error bars converge slowly), and the Padé two-body
//!   Jastrow. The cusp correction leaves the determinant's nodes where they were (the atomic kernel's test
//!   `cusp_keeps_the_node_of_the_determinant`), so DMC must give the
//!   fixed-node value of HF nodes, not the exact non-relativistic energy -14.66736 Ha (Chakravorty et al. 1993).
//!   `be-hf` is the bare determinant of the uncorrected orbitals: its VMC energy is E_HF.
//! - The 3D electron gas, `heg` (`heg-hf` without its Jastrow): the plane-wave kernel's system description
//!   (`crate::planewave::heg`: closed-shell plane waves, the Ewald energy, the B-spline Jastrow, E_HF), made into
//!   this driver's components below. With the Jastrow off its VMC energy is E_HF.

use super::coulomb::Coulomb;
use crate::atomic::hf::{HfOrbitals, BE_HF};
use crate::atomic::AtomicOrbitals;
use super::jastrow::TwoBody;
use super::orbitals::{Lcao, OrbitalProduct};
use super::slater::{Orbitals, Slater};
use super::{Component, Hamiltonian, Wavefunction, V3};
use crate::ewald::cpu::CpuEwald;
use crate::planewave::heg::{self, HartreeFock};
use crate::planewave::PlaneWaves;
use crate::ewald::Ewald;
use crate::{Precision, Real, Scalar};
use std::sync::Arc;

/// A system to simulate.
#[derive(Clone)]
pub struct System {
    pub name: String,
    /// Electrons 0..n_up are spin up, the rest spin down.
    pub n_up: usize,
    pub n_electrons: usize,
    pub hamiltonian: Arc<dyn Hamiltonian>,
    /// Nuclei (charge, position): where walkers start in open systems.
    pub nuclei: Vec<(f64, V3)>,
    /// Side of the periodic cube (walkers start uniform in it), or None in open boundaries.
    pub side: Option<f64>,
    pub trial: Wavefunction,
    /// The exact ground-state energy in Ha, when known.
    pub exact: Option<f64>,
    /// The Hartree-Fock energy of the electron gas's determinant, with its constant kinetic part.
    pub hf: Option<HartreeFock>,
    /// Whether psi_T has a Jastrow factor.
    pub jastrow: bool,
    /// The published fixed-node DMC energy of psi_T's nodes (value, its error bar), when DMC cannot reach `exact`.
    pub fixed_node: Option<(f64, f64)>,
    /// The precision psi_T and the local energy are evaluated in (see the `qmc` module docs).
    pub precision: Precision,
    /// psi_T and the potential as plain data, for engines that cannot run the CPU components (the GPU engine).
    pub blueprint: Blueprint,
}

/// The trial function and potential as the constructors build them, in data: the CPU components are trait objects,
/// and the GPU engine (`qmc::gpu`) rebuilds the same wavefunction from this.
#[derive(Clone, Debug)]
pub struct Blueprint {
    pub orbitals: OrbitalSet,
    /// The two-body Jastrow factor in f64 (None: psi_T has none).
    pub jastrow: Option<TwoBody>,
    /// The electron gas's Ewald sums (None: open boundaries, direct Coulomb).
    pub ewald: Option<Ewald>,
}

/// The orbital part of psi_T: one determinant per spin (electrons 0..n_up and n_up..).
#[derive(Clone, Debug)]
pub enum OrbitalSet {
    /// One orbital per electron, in electron order (`OrbitalProduct`: 1x1 determinants).
    Product(Vec<Lcao>),
    /// The same atomic orbitals (the atomic kernel's) for both spins.
    Atomic(AtomicOrbitals),
    /// The same plane waves for both spins.
    PlaneWaves(PlaneWaves),
}

/// What a system is built from besides its name: the electron gas's N and r_s, the precision, and the atom's
/// orbitals (None: the committed Be file).
#[derive(Clone, Debug)]
pub struct Setup {
    pub electrons: usize,
    pub rs: f64,
    pub precision: Precision,
    pub atom: Option<HfOrbitals>,
}

// psi_T and the potential in the (storage, arithmetic) pair (S, A) of the system's precision, the pair that
// `by_name_with` chooses once (`by_precision!`): the wavefunction (orbitals, Slater matrices and their updates, the
// Jastrow's pair terms) evaluated and stored in S, the Slater inversion, the potential and the local energy in A.
// Double is (f64, f64); mixed (f32, f64): an f32 wavefunction with f64 inversion and an f64 Coulomb or Ewald
// potential; single (f32, f32).

/// The determinant of electrons `first..first + n`: orbitals, matrix and updates in S, inversion in A.
fn slater<O: Orbitals, S: Real, A: Scalar>(orb: O, first: usize) -> Box<dyn Component> {
    Box::new(Slater::<O, S, A>::new(orb, first))
}

/// A Jastrow factor (built in f64) evaluated in S.
fn jastrow<S: Real>(j: &TwoBody) -> Box<dyn Component> {
    Box::new(j.convert::<S>())
}

/// One orbital per electron (1x1 determinants), evaluated in S.
fn product<S: Real>(orbitals: Vec<Lcao>) -> Box<dyn Component> {
    Box::new(OrbitalProduct::<S>::new(orbitals))
}

/// The potential in open boundaries, summed in A.
fn coulomb<A: Real>(nuclei: Vec<(f64, V3)>) -> Arc<dyn Hamiltonian> {
    Arc::new(Coulomb::<A>::new(nuclei))
}

/// The electron gas's Ewald energy, terms and sums in A.
fn ewald<A: Real>(e: &Ewald) -> Arc<dyn Hamiltonian> {
    Arc::new(EwaldPotential { ewald: CpuEwald::<A, A>::new(e) })
}

// The electron gas in this driver: the gas itself (cell, closed shells, E_HF, Jastrow functors) is the plane-wave
// kernel's system description, `planewave::heg`; here its parts become the driver's components.

/// The atomic kernel's orbitals (Be's Gaussians, with their restored cusp), as the driver's orbital set.
impl Orbitals for AtomicOrbitals {
    fn len(&self) -> usize {
        AtomicOrbitals::len(self)
    }
    fn vgl<T: Real>(&self, r: V3, v: &mut [T], g: &mut [T], l: &mut [T]) {
        AtomicOrbitals::vgl(self, r, v, g, l)
    }
}

/// The plane-wave orbitals of the planewave kernel, as the driver's orbital set.
impl Orbitals for PlaneWaves {
    fn len(&self) -> usize {
        PlaneWaves::len(self)
    }
    fn vgl<T: Real>(&self, r: V3, v: &mut [T], g: &mut [T], l: &mut [T]) {
        PlaneWaves::vgl(self, r, v, g, l)
    }
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

/// The gas's two-body B-spline Jastrow (`heg::pair_functors`) for `n_up` electrons of each spin in the cube of side
/// `side`, minimum image.
pub fn bspline_jastrow(n_up: usize, side: f64, rs: f64) -> TwoBody {
    TwoBody { n_up, pair: heg::pair_functors(side, rs), nuclei: vec![], side: Some(side) }
}

/// He exact non-relativistic energy, infinite nuclear mass.
pub const HE_EXACT: f64 = -2.903724377;
/// H2 at R = 1.4 bohr, clamped nuclei.
pub const H2_EXACT: f64 = -1.174475;
/// H2 bond length of the validation run, bohr.
pub const H2_BOND: f64 = 1.4;
/// Be exact non-relativistic energy, infinite nuclear mass (Chakravorty, Gwaltney, Davidson, Parpia and Fischer,
/// Phys. Rev. A 47, 3649 (1993)).
pub const BE_EXACT: f64 = -14.66736;
/// Be fixed-node DMC with Hartree-Fock nodes, Ha: -14.6572(2), the single-determinant DMC value of the literature
/// (Umrigar, Nightingale and Runge, J. Chem. Phys. 99, 2865 (1993); the same value recurs in later HF-node work,
/// e.g. Rasch and Mitas, arXiv:1107.3520). Our nodes are those of RHF/cc-pVTZ, 0.15 mHa above the HF limit in
/// energy; node differences of that order are far below the error bars reached here.
pub const BE_FIXED_NODE: (f64, f64) = (-14.6572, 0.0002);

impl System {
    /// Look a system up by its command-line name, in double precision; the electron gas takes N and r_s.
    /// Err: unknown name or bad gas.
    pub fn by_name(name: &str, electrons: usize, rs: f64) -> Result<System, String> {
        System::by_name_with(name, &Setup { electrons, rs, precision: Precision::Double, atom: None })
    }

    /// Look a system up by name with everything `Setup` holds: the one place its precision becomes types.
    pub fn by_name_with(name: &str, s: &Setup) -> Result<System, String> {
        crate::by_precision!(s.precision => System::named(name, s))
    }

    /// `by_name_with` in storage S and arithmetic A.
    fn named<S: Real, A: Scalar>(name: &str, s: &Setup) -> Result<System, String> {
        let atom = || s.atom.clone().unwrap_or_else(be_hf);
        match name {
            "h" => Ok(System::hydrogen_in::<S, A>()),
            "he" => Ok(System::helium_in::<S, A>(HE_JASTROW_B)),
            "h2" => Ok(System::h2_in::<S, A>(H2_BOND, H2_ZETA, H2_JASTROW_B)),
            "heg" => System::electron_gas_in::<S, A>(s.electrons, s.rs, true),
            "heg-hf" => System::electron_gas_in::<S, A>(s.electrons, s.rs, false),
            "be" => System::atom_in::<S, A>(atom(), Some(BE_JASTROW_B)),
            "be-hf" => System::atom_in::<S, A>(atom(), None),
            _ => Err(format!("unknown system '{name}': known systems are {}", System::NAMES.join(", "))),
        }
    }

    /// The names `by_name` knows.
    pub const NAMES: [&'static str; 7] = ["h", "he", "h2", "be", "be-hf", "heg", "heg-hf"];

    fn open<S: Real, A: Real>(name: &str, n_up: usize, nuclei: Vec<(f64, V3)>, trial: Wavefunction, exact: Option<f64>, blueprint: Blueprint) -> System {
        System {
            name: name.into(),
            n_up,
            n_electrons: nuclei.iter().map(|n| n.0 as usize).sum(), // neutral
            hamiltonian: coulomb::<A>(nuclei.clone()),
            nuclei,
            side: None,
            jastrow: trial.parts.len() > 1,
            trial,
            exact,
            hf: None,
            fixed_node: None,
            precision: Precision::of::<S, A>(),
            blueprint,
        }
    }

    /// The electron gas in double precision (see `electron_gas_in`).
    pub fn electron_gas(electrons: usize, rs: f64, jastrow: bool) -> Result<System, String> {
        System::electron_gas_in::<f64, f64>(electrons, rs, jastrow)
    }

    /// The electron gas of `electrons` electrons (closed shells) at r_s, with or without its Jastrow factor, in storage S
    /// and arithmetic A.
    pub fn electron_gas_in<S: Real, A: Scalar>(electrons: usize, rs: f64, with_jastrow: bool) -> Result<System, String> {
        let g = heg::gas(electrons, rs)?;
        let mut parts = vec![slater::<_, S, A>(g.orbitals.clone(), 0), slater::<_, S, A>(g.orbitals.clone(), electrons / 2)];
        let two_body = with_jastrow.then(|| bspline_jastrow(electrons / 2, g.side, rs));
        if let Some(j) = &two_body {
            parts.push(jastrow::<S>(j));
        }
        let blueprint = Blueprint { orbitals: OrbitalSet::PlaneWaves(g.orbitals), jastrow: two_body, ewald: Some(g.ewald.clone()) };
        Ok(System {
            name: if with_jastrow { "heg" } else { "heg-hf" }.into(),
            n_up: electrons / 2,
            n_electrons: electrons,
            hamiltonian: ewald::<A>(&g.ewald),
            nuclei: vec![],
            side: Some(g.side),
            trial: Wavefunction { parts },
            exact: None,
            hf: Some(g.hf),
            jastrow: with_jastrow,
            fixed_node: None,
            precision: Precision::of::<S, A>(),
            blueprint,
        })
    }

    /// H atom with its exact 1s orbital, in double precision.
    pub fn hydrogen() -> System {
        System::hydrogen_in::<f64, f64>()
    }

    /// H atom in storage S and arithmetic A.
    pub fn hydrogen_in<S: Real, A: Real>() -> System {
        let o = V3::default();
        let orbitals = vec![Lcao::slater_1s(1.0, o)];
        let trial = Wavefunction { parts: vec![product::<S>(orbitals.clone())] };
        let blueprint = Blueprint { orbitals: OrbitalSet::Product(orbitals), jastrow: None, ewald: None };
        System::open::<S, A>("h", 1, vec![(1.0, o)], trial, Some(-0.5), blueprint)
    }

    /// He in double precision (see `helium_in`).
    pub fn helium(b: f64) -> System {
        System::helium_in::<f64, f64>(b)
    }

    /// He with 1s(zeta = 2) orbitals (exact nuclear cusp) and a two-body Padé Jastrow of parameter b, in storage S and
    /// arithmetic A.
    pub fn helium_in<S: Real, A: Real>(b: f64) -> System {
        let o = V3::default();
        let orb = Lcao::slater_1s(2.0, o);
        let (orbitals, j) = (vec![orb.clone(), orb], TwoBody::pade(1, b));
        let trial = Wavefunction { parts: vec![product::<S>(orbitals.clone()), jastrow::<S>(&j)] };
        let blueprint = Blueprint { orbitals: OrbitalSet::Product(orbitals), jastrow: Some(j), ewald: None };
        System::open::<S, A>("he", 1, vec![(2.0, o)], trial, Some(HE_EXACT), blueprint)
    }

    /// H2 in double precision (see `h2_in`).
    pub fn h2(bond: f64, zeta: f64, b: f64) -> System {
        System::h2_in::<f64, f64>(bond, zeta, b)
    }

    /// H2 with bond length `bond` along z, sigma_g orbitals of exponent zeta and a two-body Padé Jastrow, in storage S
    /// and arithmetic A.
    pub fn h2_in<S: Real, A: Real>(bond: f64, zeta: f64, b: f64) -> System {
        let (a, c) = ([0.0, 0.0, -0.5 * bond], [0.0, 0.0, 0.5 * bond]);
        let orb = Lcao::sigma_g(zeta, a, c);
        let (orbitals, j) = (vec![orb.clone(), orb], TwoBody::pade(1, b));
        let trial = Wavefunction { parts: vec![product::<S>(orbitals.clone()), jastrow::<S>(&j)] };
        let blueprint = Blueprint { orbitals: OrbitalSet::Product(orbitals), jastrow: Some(j), ewald: None };
        System::open::<S, A>("h2", 1, vec![(1.0, a), (1.0, c)], trial, (bond == H2_BOND).then_some(H2_EXACT), blueprint)
    }

    /// Be with the committed PySCF orbitals, in double precision (see `atom_in`).
    pub fn beryllium(jastrow: Option<f64>) -> System {
        System::atom_in::<f64, f64>(be_hf(), jastrow).expect("the committed Be orbitals take the cusp correction (a unit test checks it)")
    }

    /// Be with the RHF orbitals of `atom`, and with `with_jastrow` = Some(b) the Padé two-body term of parameter b
    /// and the orbitals' nuclear cusp restored ([`HfOrbitals::cusped`]); None: the bare Hartree-Fock determinant of the
    /// orbitals as they are; in storage S and arithmetic A. Err: the orbitals cannot take the cusp correction (one
    /// sentence).
    pub fn atom_in<S: Real, A: Scalar>(atom: HfOrbitals, with_jastrow: Option<f64>) -> Result<System, String> {
        let orbitals = match with_jastrow {
            Some(_) => atom.cusped()?,
            None => atom.orbitals.clone(),
        };
        let mut parts = vec![slater::<_, S, A>(orbitals.clone(), 0), slater::<_, S, A>(orbitals.clone(), 2)];
        let two_body = with_jastrow.map(|b| TwoBody::pade(2, b));
        if let Some(j) = &two_body {
            parts.push(jastrow::<S>(j));
        }
        let name = if with_jastrow.is_some() { "be" } else { "be-hf" };
        let blueprint = Blueprint { orbitals: OrbitalSet::Atomic(orbitals), jastrow: two_body, ewald: None };
        let mut sys = System::open::<S, A>(name, 2, vec![(atom.z, atom.center)], Wavefunction { parts }, Some(BE_EXACT), blueprint);
        sys.hf = Some(HartreeFock { energy: atom.energy, kinetic: atom.kinetic });
        sys.fixed_node = Some(BE_FIXED_NODE);
        sys.jastrow = with_jastrow.is_some();
        Ok(sys)
    }

    /// Starting positions: uniform in a periodic cube; else electron k near nucleus k mod (number of nuclei), spread
    /// by about a bohr.
    pub fn initial_positions(&self, rng: &mut crate::rng::Rng64) -> Vec<V3> {
        use rand::Rng;
        if let Some(l) = self.side {
            return (0..self.n_electrons).map(|_| [0, 1, 2].map(|_| rng.random_range(0.0..l))).collect();
        }
        let n = &self.nuclei;
        (0..self.n_electrons)
            .map(|k| {
                let c = n[k % n.len()].1;
                let g = crate::rng::gaussian3(rng);
                [c[0] + g[0], c[1] + g[1], c[2] + g[2]]
            })
            .collect()
    }
}

/// The committed Be orbitals.
fn be_hf() -> HfOrbitals {
    HfOrbitals::parse(BE_HF).expect("the committed Be orbital file parses (a unit test checks it)")
}

/// He Jastrow b: the lowest local-energy variance of a VMC scan over b = 0.1..0.5 (0.084 Ha^2; E_VMC = -2.8707 Ha),
/// which is what DMC efficiency needs. The lowest VMC energy is near b = 0.15 (-2.8775 Ha).
pub const HE_JASTROW_B: f64 = 0.3;
/// H2 orbital exponent: zeta / (1 + exp(-zeta R)) = 1 makes the sigma_g orbital satisfy the nuclear cusp on average.
pub const H2_ZETA: f64 = 1.19;
/// H2 Jastrow b: the lowest variance of a scan over 0.3, 0.5, 0.8 at zeta = 1.19 (0.050 Ha^2; E_VMC = -1.1504 Ha).
pub const H2_JASTROW_B: f64 = 0.5;
/// Be two-body Padé b: the lowest variance of a VMC scan (512 walkers, 300 steps, tau 0.05) over b = 0.5, 1, 2, 4:
/// E = -14.550(10), -14.599(7), -14.607(8), -14.599(12) Ha, variance 3.3, 1.9, 2.5, 3.5 Ha^2 (bare HF determinant:
/// 5.4), all without the orbitals' cusp correction. A one-body cusp term chi = -Z r / (1 + b_en r) on top made things
/// worse at every b_en tried (10, 30, 100: variance 9 to 136 Ha^2, energies above E_HF): the contracted cc-pVTZ core
/// Gaussians already follow exp(-Z r) down to about 0.05 bohr, so a full -Z slope doubles the cusp instead of
/// supplying it; the cusp is now restored in the orbitals themselves (`atom_in`, [`crate::atomic::cusp`]).
pub const BE_JASTROW_B: f64 = 1.0;
