//! The GPU engine of the VMC/DMC driver: the walkers of a run resident on one device, driven by the same VMC and
//! DMC code as the CPU walkers through [`Population`].
//!
//! One launch per step over all walkers (`qmc.cu`, one thread per walker): the sweep of its walker (drift,
//! proposal, ratio and gradient, Metropolis-Hastings, Sherman-Morrison on accept) and the full evaluation (Slater
//! inverses from scratch, the local kinetic energy and, in open boundaries, the Coulomb potential). For the electron
//! gas the ewald kernel's GPU code ([`GpuEwald`]) adds the potential, fed fractional coordinates on the device.
//! These systems are small (2 to ~54 electrons): a thread holds one orbital row at a time, and the walker's
//! positions, inverses and inversion workspace live in global memory, element-major and walker-minor
//! (`x[elem * capacity + w]`) so that a warp reads consecutive addresses.
//!
//! The random numbers are drawn on the device from the CPU's streams (xoshiro256++ seeded as `crate::rng::rng`,
//! `rng::stream(seed, tag, step, k)`, Box-Muller as `rng::gaussian3`, the Metropolis uniform drawn only when the
//! CPU draws it), so in double precision a GPU walker follows its CPU twin's trajectory: [`trajectory_check`].
//! Without a GPU, `scripts/cu-on-host.sh` compiles qmc.cu's step kernel for the host with g++ and runs it one
//! walker at a time against the CPU driver on every system (double: 5 steps to 1e-9, with the same accepted moves;
//! single and mixed: the first measurement to f32 rounding).
//!
//! What crosses the bus per step: per walker the kinetic energy and potential (and the Ewald energy), the move
//! counts and the squared displacements; for DMC the parent list of branching (uploaded), after which one copy
//! launch per array (positions, inverses) makes the new population, the buffers growing when it outgrows them.
//!
//! Precisions as the CPU driver's (`qmc` module docs): double <f64 wavefunction, f64 inversion, f64 local energy>,
//! mixed <f32, f64, f64>, single <f32, f32, f32>; positions f64 in all.

use crate::ensemble::comm::Comm;
use super::engine::Population;
use crate::ensemble::pack::{pack_all, put_f64, Pack, Reader, Truncated};
use crate::ensemble::population::Traffic;
use super::systems::OrbitalSet;
use super::vmc::{initial_walkers, start_positions};
use crate::ensemble::moves::MoveStats;
use super::{System, V3};
use crate::ewald::gpu::GpuEwald;
use crate::ewald::Ewald;
use crate::gpu::{grid_1d, CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, PushKernelArg};
use crate::jastrow::Form;
use crate::{Check, Precision, Real};
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("qmc.cu");

/// QMC_MAXN, QMC_MAXC, QMC_MAXNUC of qmc.cu.
pub const MAX_PER_SPIN: usize = 32;
const MAX_COEFS: usize = 16;
const MAX_NUCLEI: usize = 4;
/// Threads per block of the step kernel (register-heavy: small blocks).
const BLOCK: u32 = 64;
/// Most walkers of a periodic system (the ewald kernel's one grid row per walker).
pub const MAX_EWALD_WALKERS: usize = 65535;

/// Mirrors `QmcRadial` in qmc.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct Radial {
    form: i32,
    power: i32,
    ncoef: i32,
    pad: i32,
    cutoff: f64,
    inv_h: f64,
    coef: [f64; MAX_COEFS],
}

/// Mirrors `QmcParams` in qmc.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct Params {
    walkers: i32,
    capacity: i32,
    electrons: i32,
    n_up: i32,
    orbitals: i32,
    jastrow: i32,
    periodic: i32,
    nuclei: i32,
    nf: i32,
    coef_off: i32,
    fixed_node: i32,
    sweep: i32,
    prims_at: i32,
    cusp_at: i32,
    cusps: i32,
    pad: i32,
    tau: f64,
    side: f64,
    inv_side: f64,
    nuclear_repulsion: f64,
    nuc: [f64; MAX_NUCLEI * 4],
    pair: [Radial; 2],
    seed_mix: u64,
    step: u64,
    first: u64,
}

/// Mirrors `QmcCell` in qmc.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct CellB {
    b: [f64; 9],
}
// SAFETY: plain-old-data with the C layout of the kernels' structs.
unsafe impl DeviceRepr for Params {}
unsafe impl DeviceRepr for CellB {}

/// Why the GPU engine failed.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// A system or run the engine does not handle, in one sentence.
    #[error("{0}")]
    Unsupported(String),
}

/// What the engine takes from the run's (storage, arithmetic) pair (S, A), chosen once from its precision
/// (`by_precision!`): the step kernel's entry point (`qmc_step_f64`, `_mixed`, `_f32`), the bytes of an element of
/// the inverses (S) and of the inversion workspace (A), and the electron gas's potential, in A.
struct Types {
    step: String,
    t_bytes: usize,
    r_bytes: usize,
    potential: MakePotential,
}

/// [`potential`] in one type: the potential of an Ewald sum for so many walkers.
type MakePotential = fn(&Arc<Gpu>, &Ewald, usize) -> Result<Box<dyn DevicePotential>, EngineError>;

fn types<S: Real, A: Real>() -> Types {
    let suffix = match (S::NAME, A::NAME) {
        ("f32", "f64") => "mixed",
        (_, name) => name,
    };
    Types { step: format!("qmc_step_{suffix}"), t_bytes: S::BYTES, r_bytes: A::BYTES, potential: potential::<A> }
}

/// The electron gas's potential on the device in the run's arithmetic type A (f64 in double and mixed, f32 in
/// single): the ewald kernel's sums, fed fractional coordinates by `qmc_fractions_<A>`.
struct Potential<A: Real> {
    ewald: GpuEwald<A, A>,
    fractions: CudaFunction,
}

/// A [`Potential`] of either type: its type is chosen once, by the constructor that `types` picks ([`potential`] in
/// A), and it remakes itself in that type when the walkers outgrow it.
trait DevicePotential: Send + Sync {
    /// Fractional coordinates from the engine's positions, then the Ewald energy of every walker.
    fn energies(&mut self, gpu: &Gpu, cell: &CellB, pos: &CudaSlice<f64>, count: usize, cap: usize, ne: usize) -> Result<Vec<f64>, GpuError>;
    /// The same potential for `capacity` walkers.
    fn resized(&self, gpu: &Arc<Gpu>, e: &Ewald, capacity: usize) -> Result<Box<dyn DevicePotential>, EngineError>;
}

/// The potential of `e` for `capacity` walkers, in A.
fn potential<A: Real>(gpu: &Arc<Gpu>, e: &Ewald, capacity: usize) -> Result<Box<dyn DevicePotential>, EngineError> {
    if capacity > MAX_EWALD_WALKERS {
        return Err(EngineError::Unsupported(format!("{capacity} walkers of a periodic system: the GPU engine's Ewald sums hold at most {MAX_EWALD_WALKERS}")));
    }
    let fractions = gpu.function("qmc", SRC, &format!("qmc_fractions_{}", A::NAME))?;
    Ok(Box::new(Potential::<A> { ewald: GpuEwald::new(gpu, e, capacity)?, fractions }))
}

impl<A: Real> DevicePotential for Potential<A> {
    fn energies(&mut self, gpu: &Gpu, cell: &CellB, pos: &CudaSlice<f64>, count: usize, cap: usize, ne: usize) -> Result<Vec<f64>, GpuError> {
        let e = &mut self.ewald;
        let frac = e.device_fractions(count);
        let (ne, n, c) = (ne as i32, count as i32, cap as i32);
        let mut b = gpu.stream.launch_builder(&self.fractions);
        b.arg(cell).arg(pos).arg(frac).arg(&ne).arg(&n).arg(&c);
        // SAFETY: grid-stride over count x ne (< capacity x ne positions); frac holds at least count*3*ne entries.
        unsafe { b.launch(grid_1d((count * ne as usize).min(1 << 22), 256)) }.during("launching qmc_fractions")?;
        e.launch_energy()?;
        Ok(e.outputs()?.into_iter().map(|x| x.f64()).collect())
    }

    fn resized(&self, gpu: &Arc<Gpu>, e: &Ewald, capacity: usize) -> Result<Box<dyn DevicePotential>, EngineError> {
        potential::<A>(gpu, e, capacity)
    }
}

/// A walker's positions travel as a CPU `Walker` does (its `Pack`), so checkpoints are interchangeable.
struct Config(Vec<V3>);
impl Pack for Config {
    type Context = usize;
    fn pack(&self, out: &mut Vec<u8>) {
        for x in self.0.iter().flatten() {
            put_f64(out, *x);
        }
    }
    fn unpack(n: &usize, r: &mut Reader) -> Result<Config, Truncated> {
        Ok(Config((0..*n).map(|_| Ok([r.f64()?, r.f64()?, r.f64()?])).collect::<Result<_, Truncated>>()?))
    }
}

/// The walkers of one run on one GPU.
pub struct GpuWalkers {
    gpu: Arc<Gpu>,
    p: Params,
    step: CudaFunction,
    copy64: CudaFunction,
    copy32: CudaFunction,
    itab: CudaSlice<i32>,
    dtab: CudaSlice<f64>,
    /// Positions and transposed inverses, with spares of the same capacity that branching copies into.
    pos: CudaSlice<f64>,
    t: CudaSlice<u8>,
    spare_pos: CudaSlice<f64>,
    spare_t: CudaSlice<u8>,
    work: CudaSlice<u8>,
    kin: CudaSlice<f64>,
    pot: CudaSlice<f64>,
    counts: CudaSlice<i32>,
    r2: CudaSlice<f64>,
    parent: CudaSlice<i32>,
    ewald: Option<(Ewald, Box<dyn DevicePotential>)>,
    cell: CellB,
    /// Local energies of the last measurement (host copy).
    energies: Vec<f64>,
    /// Bytes of T and R; elements of t and of the workspace per walker.
    t_bytes: usize,
    r_bytes: usize,
    t_elems: usize,
    w_elems: usize,
}

fn radial(f: &crate::jastrow::Radial<f64>) -> Result<Radial, EngineError> {
    if f.form == Form::Casino {
        // the prelude's functor has the form, but no GPU test runs it against the CPU driver
        return Err(EngineError::Unsupported("the GPU engine takes B-spline and Padé Jastrow functors, not CASINO's".into()));
    }
    let form = f.form.number();
    if f.coefs.len() > MAX_COEFS {
        return Err(EngineError::Unsupported(format!("a Jastrow functor of {} coefficients: the GPU engine holds at most {MAX_COEFS}", f.coefs.len())));
    }
    let mut coef = [0.0; MAX_COEFS];
    coef[..f.coefs.len()].copy_from_slice(&f.coefs);
    Ok(Radial { form, power: f.power as i32, ncoef: f.coefs.len() as i32, pad: 0, cutoff: f.cutoff, inv_h: f.inv_h, coef })
}

/// The orbitals as qmc.cu's `orbitals` reads them.
struct Tables {
    itab: Vec<i32>,
    dtab: Vec<f64>,
    /// 0 LCAO product, 1 atomic orbitals, 2 plane waves.
    kind: i32,
    /// Atomic orbitals: basis functions, and where the primitives, the orbital coefficients and the cusps start in
    /// dtab (`AtomicOrbitals::packed`), and how many cusps.
    nf: i32,
    prims_at: i32,
    coef_off: i32,
    cusp_at: i32,
    cusps: i32,
}

fn orbital_tables(set: &OrbitalSet, n_up: usize, ne: usize) -> Result<Tables, EngineError> {
    let (mut it, mut dt) = (vec![], vec![]);
    Ok(match set {
        OrbitalSet::Product(orbs) => {
            if n_up > 1 || ne - n_up > 1 || orbs.len() != ne {
                return Err(EngineError::Unsupported("a product of orbitals is a determinant only with one electron per spin".into()));
            }
            it.push(0);
            for o in orbs {
                for &(c, z, a) in &o.terms {
                    dt.extend([c, z, a[0], a[1], a[2]]);
                }
                it.push((dt.len() / 5) as i32);
            }
            Tables { itab: it, dtab: dt, kind: 0, nf: 0, prims_at: 0, coef_off: 0, cusp_at: 0, cusps: 0 }
        }
        OrbitalSet::Atomic(o) => {
            if o.len() > MAX_PER_SPIN {
                return Err(EngineError::Unsupported(format!("{} atomic orbitals: the GPU engine holds at most {MAX_PER_SPIN} per spin", o.len())));
            }
            let at = |x: usize| x as i32;
            Tables { itab: vec![0], dtab: o.packed(), kind: 1, nf: at(o.functions.len()), prims_at: at(o.prims_at()), coef_off: at(o.coef_at()), cusp_at: at(o.cusp_at()), cusps: at(o.cusps.len()) }
        }
        OrbitalSet::PlaneWaves(pw) => {
            for (k, sine) in &pw.k {
                dt.extend([k[0], k[1], k[2], *sine as u8 as f64]);
            }
            it.push(0);
            Tables { itab: it, dtab: dt, kind: 2, nf: 0, prims_at: 0, coef_off: 0, cusp_at: 0, cusps: 0 }
        }
    })
}

/// The kernel parameters and orbital tables of a system (no device needed).
fn plan(sys: &System) -> Result<(Params, Tables), EngineError> {
    let (ne, n_up) = (sys.n_electrons, sys.n_up);
    let n_dn = ne - n_up;
    if n_up > MAX_PER_SPIN || n_dn > MAX_PER_SPIN {
        return Err(EngineError::Unsupported(format!("{} has {n_up} + {n_dn} electrons: the GPU engine holds at most {MAX_PER_SPIN} per spin", sys.name)));
    }
    let bp = &sys.blueprint;
    let tables = orbital_tables(&bp.orbitals, n_up, ne)?;
    let zero = Radial { form: 1, power: 0, ncoef: 0, pad: 0, cutoff: 0.0, inv_h: 0.0, coef: [0.0; MAX_COEFS] };
    let (pair, side) = match &bp.jastrow {
        Some(j) => {
            if !j.nuclei.is_empty() {
                return Err(EngineError::Unsupported("the GPU engine has no one-body Jastrow terms".into()));
            }
            ([radial(&j.pair[0])?, radial(&j.pair[1])?], j.side)
        }
        None => ([zero, zero], None),
    };
    if sys.nuclei.len() > MAX_NUCLEI {
        return Err(EngineError::Unsupported(format!("{} nuclei: the GPU engine holds at most {MAX_NUCLEI}", sys.nuclei.len())));
    }
    let mut nuc = [0.0; MAX_NUCLEI * 4];
    for (k, (z, a)) in sys.nuclei.iter().enumerate() {
        nuc[4 * k..4 * k + 4].copy_from_slice(&[*z, a[0], a[1], a[2]]);
    }
    let side = side.or(sys.side).unwrap_or(1.0);
    let p = Params {
        walkers: 0,
        capacity: 0,
        electrons: ne as i32,
        n_up: n_up as i32,
        orbitals: tables.kind,
        jastrow: bp.jastrow.is_some() as i32,
        periodic: bp.ewald.is_some() as i32,
        nuclei: sys.nuclei.len() as i32,
        nf: tables.nf,
        coef_off: tables.coef_off,
        prims_at: tables.prims_at,
        cusp_at: tables.cusp_at,
        cusps: tables.cusps,
        pad: 0,
        fixed_node: 0,
        sweep: 0,
        tau: 0.0,
        side,
        inv_side: 1.0 / side,
        nuclear_repulsion: super::coulomb::Coulomb::<f64>::new(sys.nuclei.clone()).nuclear_repulsion(),
        nuc,
        pair,
        seed_mix: 0,
        step: 0,
        first: 0,
    };
    Ok((p, tables))
}

/// For a host build of qmc.cu (scripts/cu-on-host.sh): the parameter block as the kernel reads it, and the
/// orbital tables.
pub fn host_plan(sys: &System) -> Result<(Vec<u8>, Vec<i32>, Vec<f64>), EngineError> {
    let (p, t) = plan(sys)?;
    // SAFETY: Params is plain-old-data (repr(C), no padding holes the kernel reads).
    let bytes = unsafe { std::slice::from_raw_parts(&p as *const Params as *const u8, std::mem::size_of::<Params>()) }.to_vec();
    Ok((bytes, t.itab, t.dtab))
}

impl GpuWalkers {
    /// Walkers at `positions` (walker k is walker `first + k` of the run), measured.
    pub fn new(gpu: &Arc<Gpu>, sys: &System, positions: &[Vec<V3>]) -> Result<GpuWalkers, EngineError> {
        let (p, Tables { itab, dtab, .. }) = plan(sys)?;
        let bp = &sys.blueprint;
        let (n_up, n_dn) = (sys.n_up, sys.n_electrons - sys.n_up);
        let Types { step, t_bytes, r_bytes, potential } = crate::by_precision!(sys.precision => types());
        let mut cell = CellB { b: [0.0; 9] };
        if let Some(e) = &bp.ewald {
            for k in 0..3 {
                cell.b[3 * k..3 * k + 3].copy_from_slice(&e.cell.b[k]);
            }
        }
        let f = |name: &str| gpu.function("qmc", SRC, name);
        let mut me = GpuWalkers {
            gpu: gpu.clone(),
            p,
            step: f(&step)?,
            copy64: f("qmc_copy_u64")?,
            copy32: f("qmc_copy_u32")?,
            itab: gpu.upload("orbital indices", &itab)?,
            dtab: gpu.upload("orbital tables", &dtab)?,
            pos: gpu.zeros("positions", 1)?,
            t: gpu.zeros("inverses", 1)?,
            spare_pos: gpu.zeros("positions", 1)?,
            spare_t: gpu.zeros("inverses", 1)?,
            work: gpu.zeros("inversion workspace", 1)?,
            kin: gpu.zeros("kinetic energies", 1)?,
            pot: gpu.zeros("potentials", 1)?,
            counts: gpu.zeros("move counts", 1)?,
            r2: gpu.zeros("displacements", 1)?,
            parent: gpu.zeros("parents", 1)?,
            ewald: None,
            cell,
            energies: vec![],
            t_bytes,
            r_bytes,
            t_elems: n_up * n_up + n_dn * n_dn,
            w_elems: n_up.max(n_dn).pow(2),
        };
        if let Some(e) = &bp.ewald {
            me.ewald = Some((e.clone(), potential(gpu, e, 1)?));
        }
        me.grow(positions.len().max(1))?;
        me.upload_positions(positions)?;
        me.measure(sys)?;
        Ok(me)
    }

    fn capacity(&self) -> usize {
        self.p.capacity as usize
    }

    /// Buffers for `cap` walkers (positions and inverses kept: copied by the caller).
    fn grow(&mut self, cap: usize) -> Result<(), EngineError> {
        let g = self.gpu.clone();
        let ne = self.p.electrons as usize;
        let per_walker = 2 * (3 * ne * 8 + self.t_elems * self.t_bytes) + self.w_elems * self.r_bytes + 6 * 8 + 4;
        g.ensure_fits("QMC walkers", cap * per_walker)?;
        self.spare_pos = g.zeros("positions", 3 * ne * cap)?;
        self.spare_t = g.zeros("inverses", self.t_elems.max(1) * self.t_bytes * cap)?;
        self.work = g.zeros("inversion workspace", self.w_elems.max(1) * self.r_bytes * cap)?;
        self.kin = g.zeros("kinetic energies", cap)?;
        self.pot = g.zeros("potentials", cap)?;
        self.counts = g.zeros("move counts", 2 * cap)?;
        self.r2 = g.zeros("displacements", 2 * cap)?;
        self.parent = g.zeros("parents", cap)?;
        if let Some((e, pot)) = &mut self.ewald {
            *pot = pot.resized(&g, e, cap)?;
        }
        self.p.capacity = cap as i32;
        Ok(())
    }

    fn upload_positions(&mut self, positions: &[Vec<V3>]) -> Result<(), EngineError> {
        let (ne, cap, n) = (self.p.electrons as usize, self.capacity(), positions.len());
        let mut host = vec![0.0; 3 * ne * cap];
        for (w, r) in positions.iter().enumerate() {
            assert_eq!(r.len(), ne, "qmc gpu: positions of walker {w}");
            for (e, x) in r.iter().enumerate() {
                for k in 0..3 {
                    host[(3 * e + k) * cap + w] = x[k];
                }
            }
        }
        self.pos = self.gpu.upload("positions", &host)?;
        self.t = self.gpu.zeros("inverses", self.t_elems.max(1) * self.t_bytes * cap)?;
        self.p.walkers = n as i32;
        Ok(())
    }

    /// Every walker's positions (host copy).
    pub fn positions(&self) -> Result<Vec<Vec<V3>>, EngineError> {
        let (ne, cap) = (self.p.electrons as usize, self.capacity());
        let host = self.gpu.download(&self.pos)?;
        Ok((0..self.len()).map(|w| (0..ne).map(|e| [0, 1, 2].map(|k| host[(3 * e + k) * cap + w])).collect()).collect())
    }

    /// Every walker's local kinetic energy at the last measurement, in the system's precision.
    pub fn kinetic(&self) -> Result<Vec<f64>, EngineError> {
        Ok(self.gpu.stream.clone_dtoh(&self.kin.slice(..self.len())).during("copying kinetic energies")?)
    }

    /// One launch of the step kernel (with `sweep`: moves first), then the energies and move statistics.
    fn launch(&mut self, sweep: bool) -> Result<Vec<MoveStats>, EngineError> {
        let n = self.len();
        self.p.sweep = sweep as i32;
        if n > 0 {
            let mut b = self.gpu.stream.launch_builder(&self.step);
            b.arg(&self.p).arg(&self.itab).arg(&self.dtab).arg(&mut self.pos).arg(&mut self.t).arg(&mut self.work);
            b.arg(&mut self.kin).arg(&mut self.pot).arg(&mut self.counts).arg(&mut self.r2);
            // SAFETY: thread w < walkers <= capacity touches entry w of every element row of the capacity-strided
            // buffers (pos 3*ne, t t_elems, work w_elems, kin, pot, counts and r2 two rows); the tables hold what
            // orbital_tables built for the indices the kernel reads.
            unsafe { b.launch(grid_1d(n, BLOCK)) }.during("launching qmc_step")?;
        }
        let s = &self.gpu.stream;
        let cap = self.capacity();
        let get = |x: &CudaSlice<f64>, from: usize| s.clone_dtoh(&x.slice(from..from + n)).during("copying energies");
        let kin = get(&self.kin, 0)?;
        let pot = get(&self.pot, 0)?;
        let (r2p, r2a) = (get(&self.r2, 0)?, get(&self.r2, cap)?);
        let att = s.clone_dtoh(&self.counts.slice(0..n)).during("copying move counts")?;
        let acc = s.clone_dtoh(&self.counts.slice(cap..cap + n)).during("copying move counts")?;
        let ne = self.p.electrons as usize;
        self.energies = match &mut self.ewald {
            // the CPU's kinetic + potential, the potential being the Ewald energy
            Some((_, pot)) => kin.iter().zip(pot.energies(&self.gpu, &self.cell, &self.pos, n, cap, ne)?).map(|(k, v)| k + v).collect(),
            None => kin.iter().zip(&pot).map(|(k, v)| k + v).collect(),
        };
        Ok((0..n).map(|w| MoveStats { attempted: att[w] as u64, accepted: acc[w] as u64, r2_proposed: r2p[w], r2_accepted: r2a[w] }).collect())
    }

    /// Copy `count` walkers by `parent` from `src` (stride src_cap) to `dst` (stride dst_cap), `elems` elements of
    /// 8 or 4 bytes each per walker.
    #[allow(clippy::too_many_arguments)]
    fn copy<T: DeviceRepr>(&self, f: &CudaFunction, src: &CudaSlice<T>, dst: &mut CudaSlice<T>, elems: usize, count: usize, src_cap: usize, dst_cap: usize) -> Result<(), GpuError> {
        let (e, c, sc, dc) = (elems as i32, count as i32, src_cap as i32, dst_cap as i32);
        let mut b = self.gpu.stream.launch_builder(f);
        b.arg(src).arg(dst).arg(&self.parent).arg(&e).arg(&c).arg(&sc).arg(&dc);
        // SAFETY: parent holds count indices < src_cap written just before; src holds elems*src_cap and dst
        // elems*dst_cap elements of the kernel's width (the caller picks copy64 or copy32 from the byte sizes).
        unsafe { b.launch(grid_1d((elems * count).min(1 << 22), 256)) }.during("launching qmc_copy")?;
        Ok(())
    }
}

impl Population for GpuWalkers {
    type Error = EngineError;
    fn len(&self) -> usize {
        self.p.walkers as usize
    }
    fn measure(&mut self, _sys: &System) -> Result<(), EngineError> {
        self.launch(false).map(|_| ())
    }
    fn energies(&self) -> Result<Vec<f64>, EngineError> {
        Ok(self.energies.clone())
    }
    fn advance(&mut self, _sys: &System, tau: f64, fixed_node: bool, seed: u64, tag: u64, step: usize, first: usize) -> Result<Vec<(MoveStats, f64)>, EngineError> {
        self.p.tau = tau;
        self.p.fixed_node = fixed_node as i32;
        self.p.seed_mix = seed ^ tag.wrapping_mul(0xA24B_AED4_963E_E407); // rng::stream
        self.p.step = step as u64;
        self.p.first = first as u64;
        let stats = self.launch(true)?;
        Ok(stats.into_iter().zip(self.energies.iter().copied()).collect())
    }
    fn branch(&mut self, n: &[usize]) -> Result<(), EngineError> {
        assert_eq!(n.len(), self.len(), "qmc gpu: one copy count per walker");
        let parents: Vec<i32> = n.iter().enumerate().flat_map(|(k, &c)| std::iter::repeat_n(k as i32, c)).collect();
        let (m, old_cap) = (parents.len(), self.capacity());
        if m > old_cap {
            // room for the next swings too, within what the Ewald sums hold
            let want = m.max(old_cap + old_cap / 4);
            self.grow(if self.ewald.is_some() { want.min(MAX_EWALD_WALKERS).max(m) } else { want })?;
        }
        let cap = self.capacity();
        self.energies = parents.iter().map(|&k| self.energies[k as usize]).collect();
        if m > 0 {
            self.gpu.stream.memcpy_htod(&parents, &mut self.parent.slice_mut(..m)).during("copying parents")?;
            let ne = self.p.electrons as usize;
            let mut spare_pos = std::mem::replace(&mut self.spare_pos, self.gpu.zeros("positions", 1)?);
            self.copy(&self.copy64, &self.pos, &mut spare_pos, 3 * ne, m, old_cap, cap)?;
            let mut spare_t = std::mem::replace(&mut self.spare_t, self.gpu.zeros("inverses", 1)?);
            // t holds t_bytes-wide elements: copied as such (its buffer is bytes, the kernel's pointer is typed)
            let f = if self.t_bytes == 8 { &self.copy64 } else { &self.copy32 };
            if self.t_elems > 0 {
                self.copy(f, &self.t, &mut spare_t, self.t_elems, m, old_cap, cap)?;
            }
            // the old buffers become the spares (reallocated at the new capacity if it grew)
            let old_pos = std::mem::replace(&mut self.pos, spare_pos);
            let old_t = std::mem::replace(&mut self.t, spare_t);
            if cap == old_cap {
                (self.spare_pos, self.spare_t) = (old_pos, old_t);
            } else {
                self.spare_pos = self.gpu.zeros("positions", 3 * ne * cap)?;
                self.spare_t = self.gpu.zeros("inverses", self.t_elems.max(1) * self.t_bytes * cap)?;
            }
        }
        self.p.walkers = m as i32;
        Ok(())
    }
    fn migrate(&mut self, comm: &dyn Comm, counts: &[usize], _goals: &[usize], _sys: &System) -> Result<Traffic, EngineError> {
        if comm.size() > 1 || counts.len() > 1 {
            return Err(EngineError::Unsupported("the GPU engine runs on one rank".into()));
        }
        Ok(Traffic::default())
    }
    fn packed(&self) -> Result<Vec<u8>, EngineError> {
        Ok(pack_all(&self.positions()?.into_iter().map(Config).collect::<Vec<_>>()))
    }
}

/// The trajectory check of the GPU engine in double precision: `walkers` walkers from the same start and seed make
/// `steps` VMC sweeps on the CPU and on the GPU; the local energies after every step must agree to `tolerance`
/// relative. Returns the check (the largest relative difference) and, for the log, what diverged first.
pub fn trajectory_check(gpu: &Arc<Gpu>, sys: &System, walkers: usize, steps: usize, seed: u64, tolerance: f64) -> Result<(Check, String), EngineError> {
    assert_eq!(sys.precision, Precision::Double, "the trajectory check runs in double precision");
    let mut cpu = initial_walkers(sys, walkers, seed);
    let mut dev = GpuWalkers::new(gpu, sys, &start_positions(sys, 0..walkers, seed))?;
    let rel = |a: f64, b: f64| if a == b { 0.0 } else { (a - b).abs() / a.abs().max(b.abs()).max(f64::MIN_POSITIVE) };
    let (mut worst, mut first_bad) = (0.0f64, String::new());
    let mut compare = |label: &str, c: &[(MoveStats, f64)], g: &[(MoveStats, f64)]| {
        for (w, (a, b)) in c.iter().zip(g).enumerate() {
            let d = if a.1.is_finite() && b.1.is_finite() { rel(a.1, b.1) } else { f64::INFINITY };
            worst = worst.max(d);
            if (d > tolerance || a.0.accepted != b.0.accepted) && first_bad.is_empty() {
                first_bad = format!(
                    "{} {label} walker {w}: cpu E_L {:.15e} accepted {}/{} r2 {:.6e}, gpu E_L {:.15e} accepted {}/{} r2 {:.6e} (relative difference {d:.3e})",
                    sys.name, a.1, a.0.accepted, a.0.attempted, a.0.r2_accepted, b.1, b.0.accepted, b.0.attempted, b.0.r2_accepted
                );
            }
        }
    };
    let start = |e: Vec<f64>| e.into_iter().map(|x| (MoveStats::default(), x)).collect::<Vec<_>>();
    compare("start", &start(super::engine::infallible(cpu.energies())), &start(dev.energies()?));
    for step in 0..steps {
        let c = super::engine::infallible(cpu.advance(sys, 0.3, false, seed, 2, step, 0));
        let g = dev.advance(sys, 0.3, false, seed, 2, step, 0)?;
        compare(&format!("step {step}"), &c, &g);
    }
    let check = Check { quantity: "gpu vs cpu trajectory (relative E_L)".into(), error: worst, tolerance, compared: walkers * (steps + 1) };
    let note = if first_bad.is_empty() { format!("{}: {walkers} walkers, {steps} steps, largest relative difference {worst:.2e}", sys.name) } else { first_bad };
    Ok((check, note))
}
