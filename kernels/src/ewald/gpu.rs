//! GPU launch code for the Ewald kernels: the set-up (images, G vectors, coefficients, ion terms) is uploaded once,
//! positions of all walkers are written per call as fractional coordinates `[walker][axis][electron]`, and each
//! operation is three launches over all walkers: real space, reciprocal space, combine (CASINO's split, §5.1).

use super::{Ewald, Move};
use crate::gpu::{grid_1d, CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("ewald.cu");

/// Threads per block of the energy kernels (a multiple of 32).
const BLOCK: u32 = 128;
/// Threads per block of the move kernels (one block per walker).
const MOVE_BLOCK: u32 = 128;

/// Mirrors `EwaldParams` in ewald.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct EwaldParams {
    n: i32,
    ions: i32,
    images: i32,
    gvecs: i32,
    walkers: i32,
    pad: i32,
    alpha: f64,
    rc2: f64,
    a: [f64; 9],
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for EwaldParams {}

fn suffix<S: Real, A: Real>() -> &'static str {
    match (S::NAME, A::NAME) {
        ("f32", "f64") => "mixed",
        (_, name) => name,
    }
}

/// Upload `v`, or one zero element when it is empty (the kernels then never read it).
fn upload<T: DeviceRepr + Default + Clone>(gpu: &Gpu, what: &str, v: &[T]) -> Result<CudaSlice<T>, GpuError> {
    if v.is_empty() {
        gpu.upload(what, &[T::default()])
    } else {
        gpu.upload(what, v)
    }
}

/// An Ewald system resident on the GPU with buffers for up to `walkers` walkers.
pub struct GpuEwald<S: Real, A: Real> {
    gpu: Arc<Gpu>,
    f: [CudaFunction; 5],
    p: EwaldParams,
    constant: f64,
    system: Ewald,
    frac: CudaSlice<S>,
    ion_frac: CudaSlice<S>,
    ion_q: CudaSlice<S>,
    images: CudaSlice<S>,
    gm: CudaSlice<i32>,
    coef: CudaSlice<A>,
    ion_sf: CudaSlice<A>,
    sf: CudaSlice<A>,
    real: CudaSlice<A>,
    recip: CudaSlice<A>,
    out: CudaSlice<A>,
    move_k: CudaSlice<i32>,
    move_to: CudaSlice<S>,
    capacity: usize,
}

impl<S: Real, A: Real> GpuEwald<S, A> {
    pub fn new(gpu: &Arc<Gpu>, e: &Ewald, walkers: usize) -> Result<Self, GpuError> {
        assert!((1..=65535).contains(&walkers), "ewald gpu: walkers must be 1..=65535 (one grid row each)");
        let (n, ng, ni) = (e.electrons, e.gvecs.len(), e.ions.len());
        let (sb, ab) = (std::mem::size_of::<S>(), std::mem::size_of::<A>());
        let blocks = n.div_ceil(BLOCK as usize) + ng.div_ceil(BLOCK as usize);
        gpu.ensure_fits("Ewald positions and structure factors", walkers * (3 * n * sb + (2 * ng + blocks + 3) * ab))?;
        let s = suffix::<S, A>();
        let f = [
            gpu.function("ewald", SRC, &format!("ewald_real_{s}"))?,
            gpu.function("ewald", SRC, &format!("ewald_recip_{s}"))?,
            gpu.function("ewald", SRC, &format!("ewald_move_real_{s}"))?,
            gpu.function("ewald", SRC, &format!("ewald_move_recip_{s}"))?,
            gpu.function("ewald", SRC, &format!("ewald_combine_{}", A::NAME))?,
        ];
        let mut a = [0.0; 9];
        for k in 0..3 {
            a[3 * k..3 * k + 3].copy_from_slice(&e.cell.a[k]);
        }
        let p = EwaldParams {
            n: n as i32,
            ions: ni as i32,
            images: e.images.len() as i32,
            gvecs: ng as i32,
            walkers: walkers as i32,
            pad: 0,
            alpha: e.params.alpha,
            rc2: e.params.rc * e.params.rc,
            a,
        };
        let ion_frac: Vec<[f64; 3]> = e.ions.pos.iter().map(|r| e.cell.frac(*r).map(|x| x - x.floor())).collect();
        let soa = |k: usize| ion_frac.iter().map(move |f| S::of(f[k]));
        let ion_frac: Vec<S> = soa(0).chain(soa(1)).chain(soa(2)).collect();
        let gm: Vec<i32> = (0..3).flat_map(|k| e.gvecs.iter().map(move |m| m[k])).collect();
        let ion_sf: Vec<A> = (0..2).flat_map(|k| e.ion_sf.iter().map(move |s| A::of(s[k]))).collect();
        Ok(GpuEwald {
            frac: gpu.zeros("positions", walkers * 3 * n)?,
            ion_frac: upload(gpu, "ion positions", &ion_frac)?,
            ion_q: upload(gpu, "ion charges", &e.ions.charge.iter().map(|&z| S::of(z)).collect::<Vec<_>>())?,
            images: upload(gpu, "lattice images", &e.images.iter().flat_map(|r| [r[0], r[1], r[2], super::cell::norm(*r)].map(S::of)).collect::<Vec<_>>())?,
            gm: upload(gpu, "G vectors", &gm)?,
            coef: upload(gpu, "G coefficients", &e.coef.iter().map(|&c| A::of(c)).collect::<Vec<_>>())?,
            ion_sf: upload(gpu, "ion structure factor", &ion_sf)?,
            sf: gpu.zeros("structure factors", walkers * 2 * ng)?,
            real: gpu.zeros("real-space partial sums", walkers * n.div_ceil(BLOCK as usize))?,
            recip: gpu.zeros("reciprocal-space partial sums", walkers * ng.div_ceil(BLOCK as usize).max(1))?,
            out: gpu.zeros("energies", walkers)?,
            move_k: gpu.zeros("moved electrons", walkers)?,
            move_to: gpu.zeros("move positions", walkers * 3)?,
            gpu: gpu.clone(),
            f,
            p,
            constant: e.constant,
            system: e.clone(),
            capacity: walkers,
        })
    }

    fn frac(&self, r: [f64; 3]) -> [f64; 3] {
        self.system.cell.frac(r).map(|x| x - x.floor())
    }

    /// Copy positions (`[walker][electron]`, Cartesian) of at most the walkers allocated for; later launches
    /// work on that many walkers.
    pub fn set_positions(&mut self, pos: &[[f64; 3]]) -> Result<(), GpuError> {
        let n = self.p.n as usize;
        let walkers = pos.len() / n;
        assert!(pos.len() == walkers * n && walkers <= self.capacity, "ewald gpu: positions length");
        let mut host = vec![S::zero(); walkers * 3 * n];
        for (w, chunk) in pos.chunks_exact(n).enumerate() {
            for (j, r) in chunk.iter().enumerate() {
                let f = self.frac(*r);
                for k in 0..3 {
                    host[(w * 3 + k) * n + j] = S::of(f[k]);
                }
            }
        }
        self.p.walkers = walkers as i32;
        let mut view = self.frac.slice_mut(..host.len());
        self.gpu.stream.memcpy_htod(&host, &mut view).during("copying positions")
    }

    /// For callers that keep positions on the device (the solid mini-app): the following launches work on `walkers`
    /// walkers, whose fractional coordinates (`[walker][xyz][electron]`, in [0, 1)) the caller writes into the
    /// returned buffer.
    pub fn device_fractions(&mut self, walkers: usize) -> &mut CudaSlice<S> {
        assert!(walkers <= self.capacity, "ewald gpu: more walkers than allocated");
        self.p.walkers = walkers as i32;
        &mut self.frac
    }

    /// Copy one move per walker of the current positions.
    pub fn set_moves(&mut self, moves: &[Move]) -> Result<(), GpuError> {
        assert_eq!(moves.len(), self.p.walkers as usize, "ewald gpu: one move per walker");
        assert!(moves.iter().all(|m| m.electron < self.p.n as usize), "ewald gpu: moved electron out of range");
        let k: Vec<i32> = moves.iter().map(|m| m.electron as i32).collect();
        let to: Vec<S> = moves.iter().flat_map(|m| self.frac(m.to).map(S::of)).collect();
        let mut kv = self.move_k.slice_mut(..k.len());
        self.gpu.stream.memcpy_htod(&k, &mut kv).during("copying moves")?;
        let mut tv = self.move_to.slice_mut(..to.len());
        self.gpu.stream.memcpy_htod(&to, &mut tv).during("copying moves")
    }

    fn launch_combine(&mut self, nr: i32, ng: i32, constant: f64) -> Result<(), GpuError> {
        let walkers = self.p.walkers;
        let mut b = self.gpu.stream.launch_builder(&self.f[4]);
        b.arg(&walkers).arg(&nr).arg(&ng).arg(&constant).arg(&self.real).arg(&self.recip).arg(&mut self.out);
        // SAFETY: real holds walkers*nr and recip walkers*ng partial sums (as the launches before wrote them), out
        // walkers entries; threads beyond walkers return.
        unsafe { b.launch(grid_1d(walkers as usize, 128)) }.during("launching ewald combine")?;
        Ok(())
    }

    /// Queue the full energy of every walker (asynchronous); also leaves S(G) for [`GpuEwald::launch_move`].
    pub fn launch_energy(&mut self) -> Result<(), GpuError> {
        let w = self.p.walkers as u32;
        let nr = (self.p.n as u32).div_ceil(BLOCK);
        let ng = (self.p.gvecs as u32).div_ceil(BLOCK);
        let cfg = |blocks: u32| LaunchConfig { grid_dim: (blocks, w, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let mut b = self.gpu.stream.launch_builder(&self.f[0]);
        b.arg(&self.p).arg(&self.frac).arg(&self.ion_frac).arg(&self.ion_q).arg(&self.images).arg(&mut self.real);
        // SAFETY: frac holds walkers*3*n positions, ion arrays 3*ions and ions, images 4*images, real walkers*nr;
        // threads with i >= n only take part in the block sum.
        unsafe { b.launch(cfg(nr)) }.during("launching ewald real")?;
        if ng > 0 {
            let mut b = self.gpu.stream.launch_builder(&self.f[1]);
            b.arg(&self.p).arg(&self.frac).arg(&self.gm).arg(&self.coef).arg(&self.ion_sf).arg(&mut self.sf).arg(&mut self.recip);
            // SAFETY: gm holds 3*gvecs indices, coef gvecs, ion_sf 2*gvecs, sf walkers*2*gvecs, recip walkers*ng;
            // threads with g >= gvecs only take part in the block sum.
            unsafe { b.launch(cfg(ng)) }.during("launching ewald recip")?;
        }
        self.launch_combine(nr as i32, ng as i32, self.constant)
    }

    /// Queue the energy change of the moves set with [`GpuEwald::set_moves`] (after an energy of these positions).
    pub fn launch_move(&mut self) -> Result<(), GpuError> {
        let cfg = LaunchConfig { grid_dim: (self.p.walkers as u32, 1, 1), block_dim: (MOVE_BLOCK, 1, 1), shared_mem_bytes: 0 };
        let mut b = self.gpu.stream.launch_builder(&self.f[2]);
        b.arg(&self.p).arg(&self.frac).arg(&self.ion_frac).arg(&self.ion_q).arg(&self.images).arg(&self.move_k).arg(&self.move_to).arg(&mut self.real);
        // SAFETY: as for the energy; move_k holds walkers indices < n (checked in set_moves), move_to walkers*3,
        // real at least walkers entries.
        unsafe { b.launch(cfg) }.during("launching ewald move real")?;
        let mut b = self.gpu.stream.launch_builder(&self.f[3]);
        b.arg(&self.p).arg(&self.frac).arg(&self.gm).arg(&self.coef).arg(&self.sf).arg(&self.move_k).arg(&self.move_to).arg(&mut self.recip);
        // SAFETY: sf holds walkers*2*gvecs entries written by the last energy; recip at least walkers entries.
        unsafe { b.launch(cfg) }.during("launching ewald move recip")?;
        self.launch_combine(1, 1, 0.0)
    }

    /// The results of the last launch, one per current walker.
    pub fn outputs(&self) -> Result<Vec<A>, GpuError> {
        self.gpu.stream.clone_dtoh(&self.out.slice(..self.p.walkers as usize)).during("copying energies")
    }

    /// Poison the results so a kernel that fails to write cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        let nan = vec![A::nan(); self.out.len()];
        self.gpu.write(&mut self.out, &nan)
    }
}
