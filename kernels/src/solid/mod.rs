//! A whole QMC step, batched over walkers, on a CPU engine and a GPU engine, for systems given as descriptions
//! ([`Solid`]): the synthetic carbon-like solid of paper 000's Figs. 3 and 4 (the work of a real VMC or DMC generation
//! with real-material sizes, as miniqmc imitates it: the energies are not physical, the cost is), and the 3D
//! homogeneous electron gas (whose energies are: its checks are exact).
//!
//! Systems:
//! - carbon ([`Solid::carbon`]): the pseudopotential kernel's cell ([`crate::pseudopotential::Setup::carbon`]):
//!   diamond cells of 8 atoms, 4 valence electrons per atom (half per spin), random B-spline orbitals (bspline kernel
//!   table), BFD carbon nonlocal channels, two-body and one-body B-spline Jastrow functors (jastrow kernel's
//!   [`crate::jastrow::Radial`]), plus the Ewald sum (ewald kernel) of the electrons and the ions of charge 4 in the
//!   same orthorhombic cell;
//! - the electron gas ([`Solid::electron_gas`]): N electrons (closed shells) in the simple cubic cell of volume
//!   N 4/3 pi r_s^3 (the plane-wave kernel's system description [`crate::planewave::heg`], which the qmc driver's
//!   `heg` runs too), plane-wave orbitals ([`crate::planewave`]), no ions (so no one-body
//!   Jastrow and no pseudopotential stage: the engines skip it, no launch or loop over zero ions), the Ewald sum of
//!   the electrons with the neutralising background, and the gas's two-body B-spline Jastrow or, without it, zero
//!   functors (the Jastrow factor exactly 1). Without the Jastrow each walker's kinetic energy is the plane waves'
//!   T_0 at every configuration and the VMC energy is the Hartree-Fock energy ([`Gas::hf`]), the checks of
//!   `gas_tests`;
//! - the atoms and molecule of the qmc driver ([`Solid::atom`]: He, H2, Be and Be's bare determinant): open
//!   boundaries (cell sides 0, so no minimum image anywhere: [`crate::pseudopotential::inv_side`]), the direct Coulomb
//!   sum with the nuclei ([`Coulomb::Open`], `ewald::open`) in place of Ewald, atomic orbitals ([`crate::atomic`]), the
//!   two-body Jastrow as B-splines in the shape of the qmc driver's Padé, and walkers that start about the nuclei.
//!   Their energies are exact checks too (He's and H2's exact energies, Be's fixed-node and Hartree-Fock ones), made
//!   by the qmc driver's plan on these engines (`qmc --engine batched`); `atom_tests` checks the engines against the
//!   reference.
//!
//! The orbital set is the one choice between them ([`Orbitals`]): the B-spline table, the plane waves or atomic orbitals, all writing
//! value, gradient and Laplacian rows in one layout (`[component][stride]` per point), so everything after the
//! orbitals is one code; each engine picks the evaluator once (per walker task on the CPU, at construction on the
//! GPU), not per point.
//!
//! Wavefunction: Psi = D_up D_down exp(J), D_s = det[phi_k(r_i)] over the electrons of spin s (both spins share the
//! orbitals), J = sum_{i<j} u(r_ij) + sum_{i,I} chi(r_iI), minimum image (none in open boundaries).
//!
//! One step, every walker (see [`cpu`] and [`gpu`]):
//! 1. the sweep, electron by electron: drift-diffusion proposal from grad ln Psi (column q of the current inverse
//!    dotted with the stored orbital gradients, plus the Jastrow gradient), orbitals VGL at the new point
//!    (B-spline or plane waves), determinant ratio and gradient (the same column), Jastrow ratio and gradient (one O(N) pass over
//!    the other electrons and the ions at the old and the new point: the cost QMCPACK's stored-row update has),
//!    Metropolis-Hastings with the drift-diffusion Green's functions (qmc::walker's rule), and on accept the update
//!    of the inverse and the new gradient row. With [`Params::delay`] k > 1 the electrons of a spin go in windows of
//!    k (McDaniel et al. 2017, QMCPACK's delayed update, [`crate::determinant::delayed`]): the column is the
//!    inverse row corrected by the window's pending moves (O(k n)), an accept grows B^-1 by its Schur complement,
//!    and the window's accepted moves reach the inverse together as three matrix products (faer; cuBLAS batched over
//!    the walkers), k times fewer passes over the inverse than k Sherman-Morrison updates; with k = 1 each accept is a
//!    Sherman-Morrison update;
//! 2. the measurement: grad and Laplacian of ln D from the orbital gradient and Laplacian rows at the current
//!    positions (the CPU engine keeps them from the accepted moves; the GPU engine evaluates the orbitals at all
//!    electrons) against the inverse rows, the Jastrow's, the kinetic energy; the Ewald energy (electron-electron,
//!    electron-ion, ion-ion); with ions the nonlocal pseudopotential energy (pseudopotential kernel, all walkers in one
//!    batch); every `recompute` steps (more often for an ill-conditioned walker in mixed precision:
//!    [`conditioning::reinverts`]) a fresh f64 inversion of the Slater matrices from the measured values;
//! 3. DMC only: the suite's one DMC generation ([`crate::ensemble::dmc`], the qmc driver's too) under its
//!    fixed-population comb ([`ranks::generation`]): on one rank, or over several (one per GPU or core group) one
//!    comb over all ranks' walkers and walker migration.
//!
//! Random numbers: per walker and step one stream (rng::stream), drawn in a fixed order ([`draws`]): per
//! electron three normals and one uniform, then the quadrature rotations of every ion. The GPU engine draws the same
//! numbers on the device (solid/draws.cu, bit for bit as [`draws`]: scripts/cu-on-host.sh checks it), so in double
//! it follows the CPU engine's trajectory.
//!
//! Precision: `double` (f64 everywhere), `mixed` (f32 B-spline table, inverse and stored gradients; f64 positions,
//! dot products, pending delayed moves and their apply, Jastrow, Ewald sums and energies; f64 re-inversion every
//! `recompute` steps, and more often, down to every step, for a walker whose Slater matrices are ill-conditioned for f32:
//! [`conditioning`]; plane waves are evaluated in f64 and rounded to f32 where stored, as the B-spline's rows are).
//! `single` (f32 storage as mixed, and f32 arithmetic: the orbitals' evaluation, the Jastrow, the Ewald sums, the
//! nonlocal energy and the delayed updates; the f64 re-inversion kept, as in mixed): paper 000 keeps the inversion
//! and the sums in double, and so does mixed; single is what a code without any f64 in its step would do, measured
//! beside them and held to the same f32 tolerance of each walker's condition number.

pub mod conditioning;
pub mod cpu;
pub mod finite;
pub mod floor;
pub mod gpu;
pub mod plan;
pub mod ranks;
pub mod reference;
pub mod validate;
pub mod walker;
#[cfg(test)]
mod atom_tests;
#[cfg(test)]
mod gas_tests;
#[cfg(test)]
mod tests;

use crate::bspline::{self, Basis, Grid, Table};
use crate::ewald::{self, open::Open, Ewald};
use crate::atomic::hf::{HfOrbitals, BE_HF};
use crate::atomic::AtomicOrbitals;
use crate::planewave::PlaneWaves;
use crate::pseudopotential::{self as pp, quadrature::random_rotation, Channels, Rule, Setup};
use crate::planewave::heg::{self, HartreeFock};
use crate::rng::{gaussian3, stream};
use crate::Real;
use rand::Rng;

/// Ewald accuracy in Ha per particle (the electron gas's, [`heg::EWALD_ACCURACY`]).
pub const EWALD_ACCURACY: f64 = heg::EWALD_ACCURACY;
/// Ion charge: carbon's valence with the BFD core removed.
pub const ION_CHARGE: f64 = 4.0;
/// Random numbers per electron per sweep: three normals and one uniform.
pub const PER_MOVE: usize = 4;

/// The system all walkers share: the pseudopotential kernel's setup (cell, ions, electrons, the orbitals' row
/// stride, the quadrature and channels, the Jastrow functors), the Ewald sum, which orbitals the determinants are made
/// of, and for the electron gas what its checks need.
#[derive(Clone, Debug)]
pub struct Solid {
    pub setup: Setup<f64>,
    pub coulomb: Coulomb,
    pub orbitals: Orbitals,
    /// The electron gas's density and Hartree-Fock energy (None: the carbon solid or an atom).
    pub gas: Option<Gas>,
    /// The atom's or molecule's name, the qmc driver's (`he`, `h2`, `be`, `be-hf`; None: periodic).
    pub atom: Option<&'static str>,
}

/// The Coulomb energy of a configuration: the Ewald sums of the periodic cell (carbon, the electron gas), or the
/// direct sum of open boundaries (the atoms: `ewald::open`).
#[derive(Clone, Debug)]
pub enum Coulomb {
    Ewald(Ewald),
    Open(Open),
}

impl Coulomb {
    /// The nuclei of open boundaries (none in a periodic cell, whose ions are the setup's).
    pub fn nuclei(&self) -> &[(f64, [f64; 3])] {
        match self {
            Coulomb::Ewald(_) => &[],
            Coulomb::Open(o) => &o.nuclei,
        }
    }
}

/// The orbitals of the Slater determinants (both spins share them). Each engine chooses its evaluator once, per
/// walker task (CPU) or at construction (GPU), never per point.
#[derive(Clone, Debug)]
pub enum Orbitals {
    /// The setup's B-spline table (`setup.table`, the bspline kernel): the carbon solid.
    Table,
    /// Plane waves (the planewave kernel): the electron gas. The setup's table then holds no coefficients, only
    /// the orbital count and the row stride that every layout uses (`no_table`).
    PlaneWaves(PlaneWaves),
    /// Atomic orbitals (the atomic kernel: LCAOs of Slater and Gaussian functions), the orbitals of He, H2 and Be on
    /// these engines ([`Solid::atom`]). As with the plane waves the setup's table holds only the orbital count and the
    /// row stride. The engines' tests also run a dense set of them in the electron gas's cell (`gas_tests`:
    /// `atomic_orbitals_follow_the_reference`, `atomic_orbitals_gpu_matches_cpu_when_present`).
    Atomic(AtomicOrbitals),
}

/// What the electron gas's description adds: its density, whether the Jastrow factor is on, and the finite-N
/// Hartree-Fock energy VMC without the Jastrow must return.
#[derive(Clone, Copy, Debug)]
pub struct Gas {
    pub rs: f64,
    pub jastrow: bool,
    pub hf: HartreeFock,
}

/// A table of `orbitals` orbitals on no grid: the row stride of the layouts and nothing to evaluate (the electron
/// gas's setup, whose orbitals are plane waves; without ions the pseudopotential evaluates no orbitals either).
fn no_table(orbitals: usize, cell: [f64; 3]) -> Table<f64> {
    Table { grid: Grid { n: [0; 3], cell }, orbitals, stride: bspline::stride_for(orbitals), basis: Basis::BSpline, coefs: vec![] }
}

impl Solid {
    /// The solid of `atoms` atoms (a positive multiple of 8), 12-point quadrature, BFD carbon.
    pub fn carbon(atoms: usize, seed: u64) -> Result<Solid, String> {
        let setup = Setup::carbon(atoms, Rule::P12, Channels::carbon_bfd(), seed)?;
        let c = setup.cell;
        let cell = ewald::Cell::new(3, [[c[0], 0.0, 0.0], [0.0, c[1], 0.0], [0.0, 0.0, c[2]]]);
        let ions = ewald::Ions { pos: setup.ions.chunks_exact(3).map(|r| [r[0], r[1], r[2]]).collect(), charge: vec![ION_CHARGE; setup.ion_count()] };
        let ewald = Ewald::auto(cell, setup.electrons, ions, EWALD_ACCURACY);
        Ok(Solid { setup, coulomb: Coulomb::Ewald(ewald), orbitals: Orbitals::Table, gas: None, atom: None })
    }

    /// The 3D electron gas of `electrons` electrons (closed shells: 2, 14, 38, 54, 66, 114, 162, ...) at density
    /// `rs` in the simple cubic cell of the plane-wave kernel's gas (`planewave::heg::gas`): plane-wave orbitals, no
    /// ions (so no one-body Jastrow and no pseudopotential), the Ewald sum of the electrons in their neutralising
    /// background, and with `jastrow` the gas's two-body B-spline Jastrow (`planewave::heg::pair_functors`); without
    /// it the functors are zero (every coefficient), so the Jastrow factor is exactly 1 and VMC must return E_HF.
    /// Nothing in it is random.
    pub fn electron_gas(electrons: usize, rs: f64, jastrow: bool) -> Result<Solid, String> {
        let g = heg::gas(electrons, rs)?;
        let side = g.side;
        let cell = [side; 3];
        let pair = if jastrow { heg::pair_functors(side, rs) } else { [zero_functor(0.5 * side), zero_functor(0.5 * side)] };
        // no ions: the one-body functor is never evaluated (a zero one, for the GPU's fixed table of three)
        let jas = pp::Jastrow { pair, one: zero_functor(0.5 * side) };
        let setup = Setup {
            cell,
            ions: vec![],
            electrons,
            table: no_table(electrons / 2, cell),
            // the quadrature and channels of a pseudopotential that never runs (no ions)
            rule: Rule::P12,
            channels: Channels::carbon_bfd(),
            jastrow: Some(jas),
        };
        Ok(Solid { setup, coulomb: Coulomb::Ewald(g.ewald), orbitals: Orbitals::PlaneWaves(g.orbitals), gas: Some(Gas { rs, jastrow, hf: g.hf }), atom: None })
    }

    /// The qmc driver's atoms and molecule on these engines, by its names: `he` (1s of exponent 2, exact nuclear
    /// cusp), `h2` (sigma_g at the validation bond length), `be` (the committed RHF/cc-pVTZ 1s and 2s with their
    /// nuclear cusp restored inside 0.2 bohr, [`crate::atomic::cusp`], as the qmc driver's `be`) and `be-hf` (the
    /// bare determinant of the uncorrected orbitals: no Jastrow, so VMC returns E_HF). Open boundaries (cell sides
    /// 0: no images), the direct Coulomb sum with the nuclei ([`Coulomb::Open`]), the atomic kernel's orbitals (both
    /// spins the same), no ions in the setup (so no one-body Jastrow and no pseudopotential: the orbitals carry the
    /// nuclear cusp) and the two-body Jastrow as B-splines in
    /// the shape of the qmc driver's Padé, cusps 1/4 and 1/2, zero beyond [`ATOM_JASTROW_CUTOFF`]
    /// ([`crate::jastrow::Radial::pade_shaped`]: the engines' functors are B-splines). Their exact energies are the
    /// qmc driver's systems' (`qmc::System`), which the drivers check against.
    pub fn atom(name: &str) -> Result<Solid, String> {
        use crate::qmc::systems::{BE_JASTROW_B, H2_BOND, H2_JASTROW_B, H2_ZETA, HE_JASTROW_B};
        let (atom, orbitals, nuclei, b): (&'static str, _, _, _) = match name {
            "he" => ("he", AtomicOrbitals::helium(), vec![(2.0, [0.0; 3])], Some(HE_JASTROW_B)),
            "h2" => ("h2", AtomicOrbitals::h2(H2_BOND, H2_ZETA), vec![(1.0, [0.0, 0.0, -0.5 * H2_BOND]), (1.0, [0.0, 0.0, 0.5 * H2_BOND])], Some(H2_JASTROW_B)),
            "be" => ("be", HfOrbitals::parse(BE_HF)?.cusped()?, vec![(4.0, [0.0; 3])], Some(BE_JASTROW_B)),
            "be-hf" => ("be-hf", AtomicOrbitals::beryllium(), vec![(4.0, [0.0; 3])], None),
            _ => return Err(format!("unknown atom '{name}': the batched engines run he, h2, be and be-hf")),
        };
        let electrons = nuclei.iter().map(|n: &(f64, [f64; 3])| n.0 as usize).sum::<usize>();
        let rc = ATOM_JASTROW_CUTOFF;
        let pair = match b {
            Some(b) => [0.25, 0.5].map(|cusp| crate::jastrow::Radial::pade_shaped(rc, cusp, b, ATOM_JASTROW_INTERVALS)),
            None => [zero_functor(rc), zero_functor(rc)],
        };
        let cell = [0.0; 3];
        let setup = Setup {
            cell,
            ions: vec![],
            electrons,
            table: no_table(orbitals.len(), cell),
            rule: Rule::P12,
            channels: Channels::carbon_bfd(),
            jastrow: Some(pp::Jastrow { pair, one: zero_functor(rc) }),
        };
        if orbitals.len() != electrons / 2 {
            return Err(format!("{name}: {} orbitals for {electrons} electrons (closed shells: one orbital per pair)", orbitals.len()));
        }
        Ok(Solid { setup, coulomb: Coulomb::Open(Open::new(nuclei)), orbitals: Orbitals::Atomic(orbitals), gas: None, atom: Some(atom) })
    }

    pub fn electrons(&self) -> usize {
        self.setup.electrons
    }
    pub fn jastrow(&self) -> &pp::Jastrow {
        self.setup.jastrow.as_ref().expect("the solid always has a Jastrow factor")
    }
    /// Whether there are ions (and with them the one-body Jastrow and the nonlocal pseudopotential).
    pub fn has_ions(&self) -> bool {
        self.setup.ion_count() > 0
    }
    /// `carbon`, `gas` or the atom's name: the mini-apps' `--system`.
    pub fn name(&self) -> &'static str {
        match (self.gas, self.atom) {
            (Some(_), _) => "gas",
            (None, Some(a)) => a,
            (None, None) => "carbon",
        }
    }
    /// Whether the boundaries are open (the atoms): no periodic images, the direct Coulomb sum.
    pub fn is_open(&self) -> bool {
        matches!(self.coulomb, Coulomb::Open(_))
    }
}

/// The atoms' Jastrow cutoff in bohr: past where their electrons go (He's density falls as exp(-3.4 r), Be's 2s as
/// exp(-1.7 r)), so the cut tail of the Padé shape costs nothing but a constant.
pub const ATOM_JASTROW_CUTOFF: f64 = 10.0;
/// Intervals of the atoms' B-spline functors: 15 coefficients, the most the GPU's tables hold being 16.
pub const ATOM_JASTROW_INTERVALS: usize = 12;

/// A B-spline functor that is zero everywhere (every coefficient zero, so its value and derivatives are exactly 0).
fn zero_functor(cutoff: f64) -> crate::jastrow::Radial<f64> {
    crate::jastrow::Radial::bspline(cutoff, 0.0, &[0.0; 7])
}

/// Run parameters of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    pub tau: f64,
    /// DMC: fixed-node moves, branching weights and the comb. VMC otherwise.
    pub dmc: bool,
    /// Re-invert the Slater matrices in f64 every this many steps (0: never).
    pub recompute: usize,
    pub seed: u64,
    /// The index of this engine's walker 0 among all ranks' walkers: walker k draws the random numbers and starts
    /// at the positions of global walker `first + k`, so ranks never share a stream (0 for a single engine).
    pub first: usize,
    /// Rank of the delayed inverse updates: the accepted moves of each window of `delay` consecutive electrons of a
    /// spin are applied to its inverse together (Woodbury, three GEMMs), the ratios and gradients inside the window
    /// taken against the pending moves; 1: Sherman-Morrison after every accepted move. [`default_delay`] by size.
    pub delay: usize,
}

/// Why a step failed (either engine's).
#[derive(Debug, thiserror::Error)]
pub enum SolidError {
    #[error("the Slater matrix of walker {0} is singular: its inverse cannot be recomputed")]
    Singular(usize),
    /// The mixed delayed apply's products run on FP64 tensor cores (solid.cu, mma.m8n8k4 f64): sm_80 and later.
    #[error("the mixed-precision delayed updates need FP64 tensor cores (compute capability 8.0 or newer), and {0} has {1}.{2}: use --delay 1 or --precision double")]
    NoTensorF64(String, i32, i32),
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    /// The DMC generation's own stop (a non-finite energy), or an engine error it passed on, as its message.
    #[error("{0}")]
    Dmc(String),
    /// A share of walkers other than the engine's fixed count (`ranks::Engine::resize`).
    #[error("this engine holds a fixed {0} walkers and cannot hold {1}: shares by speed (--balance speed) need the CPU engine")]
    Fixed(usize, usize),
}

/// The delay both engines use for `n` electrons per spin in precision `p` unless told otherwise: the power of 2
/// nearest sqrt(2n) (the pending moves cost about 1.5 k n per move, the apply 3 n^2 / k per move: their sum is least
/// at k = sqrt(2n)), from 8 to 64 ([`crate::determinant::MAX_DELAY`]) and at most n: 16 at 384 electrons, 32 at 768
/// and 1536, 64 at 3072. In single precision 1 (the rank-1 path): single's delayed apply runs in f32 (three SGEMMs on
/// the GPU, faer's f32 GEMM on the CPU), and its rounding errors grow about 17 times faster per step than f32
/// Sherman-Morrison's (`conditioning`'s module docs: measured on the CPU engine when the apply first ran in f32; mixed
/// precision's apply runs in f64 for that reason). So it loses the electron gas's zero-variance kinetic energy at 162
/// electrons: at delay 16 the GPU engine reached 6.2 times the f32 tolerance of the walkers' condition numbers in 512
/// walkers x 2500 steps, against 0.16 with rank-1 updates (H200, 6f8d3d8, gpu-host.sh stages gas-single and
/// gas-single-delay), and the CPU engine, same walkers, 250 steps, 1.0 (failed) against 0.056 (the 2-core build
/// machine, 2026-11-28; its 0.51 in gas-single came from 32 walkers). The same growth on both engines: the f32 apply
/// itself, not a GPU fault.
pub fn default_delay(n: usize, p: crate::Precision) -> usize {
    if p == crate::Precision::Single {
        return 1;
    }
    let k = 2f64.powf((2.0 * n as f64).sqrt().log2().round());
    (k as usize).clamp(8, crate::determinant::MAX_DELAY).min(n.max(1))
}

/// The kernel classes of paper 000's Fig. 4, plus what falls outside them (random numbers, bookkeeping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Orbitals,
    Determinant,
    Jastrow,
    Coulomb,
    Pseudopotential,
    Branching,
    Other,
}

impl Class {
    pub const ALL: [Class; 7] = [Class::Orbitals, Class::Determinant, Class::Jastrow, Class::Coulomb, Class::Pseudopotential, Class::Branching, Class::Other];
    pub fn name(self) -> &'static str {
        match self {
            Class::Orbitals => "orbitals",
            Class::Determinant => "determinant",
            Class::Jastrow => "jastrow",
            Class::Coulomb => "coulomb",
            Class::Pseudopotential => "pseudopotential",
            Class::Branching => "branching",
            Class::Other => "other",
        }
    }
}

/// Seconds spent per class.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timers(pub [f64; 7]);

impl Timers {
    pub fn add(&mut self, c: Class, seconds: f64) {
        self.0[c as usize] += seconds;
    }
    pub fn merge(mut self, o: Timers) -> Timers {
        self.0.iter_mut().zip(o.0).for_each(|(a, b)| *a += b);
        self
    }
    pub fn total(&self) -> f64 {
        self.0.iter().sum()
    }
    /// Fraction of the total per class.
    pub fn fractions(&self) -> [f64; 7] {
        let t = self.total().max(f64::MIN_POSITIVE);
        self.0.map(|x| x / t)
    }
    /// These thread times rescaled to sum to `wall` (a parallel phase split in the proportions its threads spent).
    pub fn scaled_to(&self, wall: f64) -> Timers {
        let t = self.total();
        Timers(if t > 0.0 { self.0.map(|x| x * wall / t) } else { [0.0; 7] })
    }
}

/// Time `f` into class `c` of `t` if `on` (an engine's `profile`). Two clock reads a call: on the CPU engine's
/// stages of a two-electron atom, a fifth of the run (perf, He, 1024 walkers, this suite's 2-core machine).
#[inline(always)]
pub fn timed<R>(t: &mut Timers, on: bool, c: Class, f: impl FnOnce() -> R) -> R {
    if !on {
        return f();
    }
    let start = std::time::Instant::now();
    let r = f();
    t.add(c, start.elapsed().as_secs_f64());
    r
}

/// The energy of one walker, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Parts {
    pub kinetic: f64,
    /// Ewald: electron-electron, electron-ion, ion-ion.
    pub coulomb: f64,
    pub nonlocal: f64,
}

impl Parts {
    pub fn local(&self) -> f64 {
        self.kinetic + self.coulomb + self.nonlocal
    }
    /// The scale errors are measured against: a relative error of the sum of parts of both signs would be
    /// meaningless where they cancel.
    pub fn magnitude(&self) -> f64 {
        self.kinetic.abs() + self.coulomb.abs() + self.nonlocal.abs()
    }
}

/// The random numbers of one walker for one step: per electron (chi_x, chi_y, chi_z, u) with chi standard normal
/// and u uniform in [0, 1), then one 3x3 rotation per ion for the quadrature.
pub fn draws(seed: u64, step: usize, walker: usize, electrons: usize, ions: usize, moves: &mut [f64], rot: &mut [f64]) {
    let mut r = stream(seed, 0x501D, step, walker);
    for m in moves[..PER_MOVE * electrons].chunks_exact_mut(PER_MOVE) {
        let chi = gaussian3(&mut r);
        m[..3].copy_from_slice(&chi);
        m[3] = r.random::<f64>();
    }
    for q in rot[..9 * ions].chunks_exact_mut(9) {
        q.copy_from_slice(&random_rotation(&mut r));
    }
}

/// The walkers both engines start from: electrons uniform in the cell (about the nuclei in open boundaries), quadrature rotations, each walker from its
/// own stream indexed by its global index (`p.first + k`), so a population split over ranks starts where one engine
/// of all the walkers would. The inverses are zero placeholders: the first measurement inverts the Slater matrices.
pub fn start_walkers<S: Real>(sys: &Solid, count: usize, p: &Params) -> pp::Walkers<S> {
    let s = &sys.setup;
    let (ne, ni) = (s.electrons, s.ion_count());
    let (mut pos, mut rot) = (Vec::with_capacity(3 * ne * count), Vec::with_capacity(9 * ni * count));
    let nuclei = sys.coulomb.nuclei();
    for k in 0..count {
        let mut r = stream(p.seed, 0x5011D, 0, p.first + k);
        if nuclei.is_empty() {
            pos.extend((0..3 * ne).map(|i| r.random_range(0.0..s.cell[i % 3])));
        } else {
            // open boundaries: electron e about a bohr from nucleus e mod (nuclei), as the qmc driver starts them
            for e in 0..ne {
                let (c, g) = (nuclei[e % nuclei.len()].1, gaussian3(&mut r));
                pos.extend([0, 1, 2].map(|x| c[x] + g[x]));
            }
        }
        rot.extend((0..ni).flat_map(|_| random_rotation(&mut r)));
    }
    pp::Walkers { count, pos, inv: vec![S::zero(); count * ne * s.table.stride], rot }
}

/// Expected nonlocal jobs of one walker: electrons times ions times the chance of being within r_c of an ion.
pub fn expected_jobs(sys: &Solid) -> f64 {
    sys.setup.expected_jobs()
}

/// Fewest bytes and flops of one walker step with stored elements of `e` bytes at acceptance `acc`, delay `k` and a
/// re-inversion every `recompute` steps: the sums over the kernel classes of [`floor::class_work`].
pub fn step_work(sys: &Solid, e: usize, acc: f64, k: usize, recompute: usize) -> (f64, f64) {
    floor::class_work(sys, e, acc, k, recompute).iter().fold((0.0, 0.0), |t, w| (t.0 + w.0, t.1 + w.1))
}

/// A walker against the reference from scratch at the same configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    pub reference: Parts,
    /// Largest error of the local energy and of each part, relative to the reference's magnitude.
    pub energy: f64,
    /// The error of each part (kinetic, Coulomb, nonlocal), relative to the reference's magnitude.
    pub parts: [f64; 3],
    /// Normwise error of the inverse rows.
    pub inverse: f64,
    /// The larger 1-norm condition number of the two Slater matrices (the reference's f64 inverse).
    pub cond: f64,
}

/// A walker's energies and inverse rows (`[electron][stride]`, f64) against the reference from scratch.
/// Err(electron) if the reference finds a Slater matrix singular.
pub fn compare(sys: &Solid, pos: &[f64], rot: &[f64], parts: Parts, inv: &[f64]) -> Result<Comparison, usize> {
    let (re, rows, cond) = reference::energy(sys, pos, rot)?;
    let m = re.magnitude();
    let err = |a: f64, b: f64| if a.is_finite() { (a - b).abs() / m } else { f64::INFINITY };
    let p = [err(parts.kinetic, re.kinetic), err(parts.coulomb, re.coulomb), err(parts.nonlocal, re.nonlocal)];
    let energy = p.iter().copied().fold(err(parts.local(), re.local()), f64::max);
    let inverse = crate::Check::compare("inverse", inv, &rows, 0.0).error;
    Ok(Comparison { reference: re, energy, parts: p, inverse, cond })
}

/// Largest error of a mixed-precision energy at the conditioning of the small systems the tests run (the cap of
/// [`conditioning::energy_tolerance`]).
pub const MIXED_TOLERANCE: f64 = conditioning::MIXED_CAP;
/// The same for double (the 1e-8).
pub const DOUBLE_TOLERANCE: f64 = 1e-8;
