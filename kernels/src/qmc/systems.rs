//! The validation systems, each with its trial wavefunction, Hamiltonian and exact energy.
//!
//! - H atom, psi = exp(-r): an exact eigenfunction, E_L = -1/2 everywhere (a test of the local energy).
//! - He atom, psi = exp(-2 r1 - 2 r2) exp(u(r12)), Padé u with the e-e cusp: nodeless, like the ground state, so
//!   DMC is exact up to time-step and population-control bias. Exact: -2.903724377 Ha (Pekeris; Drake).
//! - H2 at R = 1.4 bohr, psi = sigma_g(r1) sigma_g(r2) exp(u(r12)): the singlet ground state is nodeless too.
//!   Exact (Born-Oppenheimer, clamped nuclei): -1.174475 Ha (Kolos and Wolniewicz).
//! - Be atom, psi = D_up(1s, 2s) D_down(1s, 2s) exp(u): RHF/cc-pVTZ orbitals from PySCF ([`gaussian`]) and the Padé
//!   two-body Jastrow. The Gaussian orbitals have no nuclear cusp; we accept the larger variance rather than correct
//!   it (see `BE_JASTROW_B` for why a one-body cusp term was dropped). Exact
//!   non-relativistic energy -14.66736 Ha (Chakravorty et al. 1993); DMC with these HF nodes must give the
//!   fixed-node value, not the exact one. `be-hf` is the bare determinant: its VMC energy is E_HF.

use super::coulomb::Coulomb;
use super::gaussian::{HfAtom, BE_HF};
use super::slater::Slater;
use super::heg::{self, HartreeFock};
use super::jastrow::TwoBody;
use super::orbitals::{Lcao, OrbitalProduct};
use super::{Hamiltonian, Wavefunction, V3};
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
    /// Look a system up by its command-line name; the electron gas takes N and r_s. Err: unknown name or bad gas.
    pub fn by_name(name: &str, electrons: usize, rs: f64) -> Result<System, String> {
        match name {
            "h" => Ok(System::hydrogen()),
            "he" => Ok(System::helium(HE_JASTROW_B)),
            "h2" => Ok(System::h2(H2_BOND, H2_ZETA, H2_JASTROW_B)),
            "heg" => System::electron_gas(electrons, rs, true),
            "heg-hf" => System::electron_gas(electrons, rs, false),
            "be" => Ok(System::beryllium(Some(BE_JASTROW_B))),
            "be-hf" => Ok(System::beryllium(None)),
            _ => Err(format!("unknown system '{name}': known systems are {}", System::NAMES.join(", "))),
        }
    }

    /// The names `by_name` knows.
    pub const NAMES: [&'static str; 7] = ["h", "he", "h2", "be", "be-hf", "heg", "heg-hf"];

    fn open(name: &str, n_up: usize, nuclei: Vec<(f64, V3)>, trial: Wavefunction, exact: Option<f64>) -> System {
        System {
            name: name.into(),
            n_up,
            n_electrons: nuclei.iter().map(|n| n.0 as usize).sum(), // neutral
            hamiltonian: Arc::new(Coulomb { nuclei: nuclei.clone() }),
            nuclei,
            side: None,
            jastrow: trial.parts.len() > 1,
            trial,
            exact,
            hf: None,
            fixed_node: None,
        }
    }

    /// The electron gas of `electrons` electrons (closed shells) at r_s, with or without its Jastrow factor.
    pub fn electron_gas(electrons: usize, rs: f64, jastrow: bool) -> Result<System, String> {
        let g = heg::gas(electrons, rs)?;
        let mut parts: Vec<Box<dyn super::Component>> = vec![Box::new(g.up), Box::new(g.down)];
        if jastrow {
            parts.push(Box::new(heg::bspline_jastrow(electrons / 2, g.side, rs)));
        }
        Ok(System {
            name: if jastrow { "heg" } else { "heg-hf" }.into(),
            n_up: electrons / 2,
            n_electrons: electrons,
            hamiltonian: Arc::new(g.potential),
            nuclei: vec![],
            side: Some(g.side),
            trial: Wavefunction { parts },
            exact: None,
            hf: Some(g.hf),
            jastrow,
            fixed_node: None,
        })
    }

    /// H atom with its exact 1s orbital.
    pub fn hydrogen() -> System {
        let o = V3::default();
        let trial = Wavefunction { parts: vec![Box::new(OrbitalProduct { orbitals: vec![Lcao::slater_1s(1.0, o)] })] };
        System::open("h", 1, vec![(1.0, o)], trial, Some(-0.5))
    }

    /// He with 1s(zeta = 2) orbitals (exact nuclear cusp) and a two-body Padé Jastrow of parameter b.
    pub fn helium(b: f64) -> System {
        let o = V3::default();
        let orb = Lcao::slater_1s(2.0, o);
        let trial = Wavefunction { parts: vec![Box::new(OrbitalProduct { orbitals: vec![orb.clone(), orb] }), Box::new(TwoBody::pade(1, b))] };
        System::open("he", 1, vec![(2.0, o)], trial, Some(HE_EXACT))
    }

    /// H2 with bond length `bond` along z, sigma_g orbitals of exponent zeta and a two-body Padé Jastrow.
    pub fn h2(bond: f64, zeta: f64, b: f64) -> System {
        let (a, c) = ([0.0, 0.0, -0.5 * bond], [0.0, 0.0, 0.5 * bond]);
        let orb = Lcao::sigma_g(zeta, a, c);
        let trial = Wavefunction { parts: vec![Box::new(OrbitalProduct { orbitals: vec![orb.clone(), orb] }), Box::new(TwoBody::pade(1, b))] };
        System::open("h2", 1, vec![(1.0, a), (1.0, c)], trial, (bond == H2_BOND).then_some(H2_EXACT))
    }

    /// Be with PySCF's RHF orbitals, and with `jastrow` = Some(b) the Padé two-body term of parameter b; None: the
    /// bare Hartree-Fock determinant.
    pub fn beryllium(jastrow: Option<f64>) -> System {
        let atom = HfAtom::parse(BE_HF).expect("the committed Be orbital file parses (a unit test checks it)");
        let mut parts: Vec<Box<dyn super::Component>> = vec![Box::new(Slater::new(atom.orbitals.clone(), 0)), Box::new(Slater::new(atom.orbitals.clone(), 2))];
        if let Some(b) = jastrow {
            parts.push(Box::new(TwoBody::pade(2, b)));
        }
        let mut sys = System::open(if jastrow.is_some() { "be" } else { "be-hf" }, 2, vec![(atom.z, atom.center)], Wavefunction { parts }, Some(BE_EXACT));
        sys.hf = Some(HartreeFock { energy: atom.energy, kinetic: atom.kinetic });
        sys.fixed_node = Some(BE_FIXED_NODE);
        sys.jastrow = jastrow.is_some();
        sys
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
                let g = super::walker::gaussian3(rng);
                [c[0] + g[0], c[1] + g[1], c[2] + g[2]]
            })
            .collect()
    }
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
/// 5.4). A one-body cusp term chi = -Z r / (1 + b_en r) on top made things worse at every b_en tried (10, 30, 100:
/// variance 9 to 136 Ha^2, energies above E_HF): the contracted cc-pVTZ core Gaussians already follow exp(-Z r)
/// down to about 0.05 bohr, so a full -Z slope doubles the cusp instead of supplying it. A proper fix is a cusp
/// correction of the orbitals (Ma, Towler, Drummond and Needs 2005), not done here.
pub const BE_JASTROW_B: f64 = 1.0;
