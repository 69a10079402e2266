//! GPU launch code for the Jastrow kernels: the parameters (functors, G vectors) and ions are uploaded once, the
//! walkers' positions and stored quantities live in one allocation each, and every operation is one launch for all
//! walkers (`vgl`), or one launch per electron move for all walkers (`ratio`, `accept`).

use super::{Jastrow, Moves, Radial, Term, COMPONENTS, MAX_COEFS, MAX_G, MAX_POWER};
use crate::gpu::{CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg};
use crate::Real;
use std::sync::Arc;

pub const SRC: &str = include_str!("jastrow.cu");
/// Threads per block (JBLOCK in jastrow.cu).
const BLOCK: u32 = 128;
const MAXC: usize = MAX_COEFS + 2;

/// Mirrors `RadialP` in jastrow.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct RadialP {
    form: i32,
    power: i32,
    ncoef: i32,
    pad: i32,
    d: [f64; MAXC],
    f: [f32; MAXC],
}

/// Mirrors `JParams` in jastrow.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct JParams {
    n: i32,
    up: i32,
    ions: i32,
    periodic: i32,
    ng: i32,
    nmax: i32,
    pad: [i32; 2],
    cd: [f64; 4],
    cf: [f32; 4],
    rad: [RadialP; 3],
    a: [f64; MAX_G],
    af: [f32; MAX_G],
    gn: [[i8; 4]; MAX_G],
}

fn radial_params(r: &Radial<f64>) -> RadialP {
    assert!(r.coefs.len() <= MAX_COEFS, "jastrow gpu: at most {MAX_COEFS} coefficients per functor");
    let mut p = RadialP {
        form: r.form.number(),
        power: r.power as i32,
        ncoef: r.coefs.len() as i32,
        pad: 0,
        d: [0.0; MAXC],
        f: [0.0; MAXC],
    };
    // Padé has no cutoff: any finite large value would do, infinity compares correctly in both precisions
    let head = [r.cutoff, r.inv_h];
    for (i, &x) in head.iter().chain(&r.coefs).enumerate() {
        p.d[i] = x;
        p.f[i] = x as f32;
    }
    p
}

fn params(j: &Jastrow<f64>) -> JParams {
    let ng = j.p.n.len();
    assert!(ng <= MAX_G && j.p.nmax <= MAX_POWER, "jastrow gpu: at most {MAX_G} G vectors with |n_k| <= {MAX_POWER}");
    let (side, b) = (j.cell.side, j.p.b);
    let mut p = JParams {
        n: j.electrons as i32,
        up: j.up as i32,
        ions: j.ion_count() as i32,
        periodic: j.cell.periodic as i32,
        ng: ng as i32,
        nmax: j.p.nmax as i32,
        pad: [0; 2],
        cd: [side, 1.0 / side, b, 0.0],
        cf: [side as f32, (1.0 / side) as f32, b as f32, 0.0],
        rad: [radial_params(&j.pair[0]), radial_params(&j.pair[1]), radial_params(&j.one)],
        a: [0.0; MAX_G],
        af: [0.0; MAX_G],
        gn: [[0; 4]; MAX_G],
    };
    for (g, (n, a)) in j.p.n.iter().zip(&j.p.a).enumerate() {
        p.a[g] = *a;
        p.af[g] = *a as f32;
        p.gn[g] = [n[0] as i8, n[1] as i8, n[2] as i8, 0];
    }
    p
}

/// Kernel-name suffix for evaluation type T and sum type A.
fn suffix<T: Real, A: Real>() -> &'static str {
    match (T::NAME, A::NAME) {
        ("f32", "f64") => "mixed",
        (name, _) => name,
    }
}

/// A Jastrow factor and its walkers resident on the GPU.
pub struct GpuJastrow<T: Real, A: Real> {
    gpu: Arc<Gpu>,
    funcs: [CudaFunction; 3],
    params: CudaSlice<u8>,
    ions: CudaSlice<T>,
    pos: CudaSlice<T>,
    state: CudaSlice<A>,
    newpos: CudaSlice<T>,
    ratio: CudaSlice<A>,
    electrons: usize,
    walkers: usize,
    moves: Vec<usize>,
    shared: u32,
}

impl<T: Real, A: Real> GpuJastrow<T, A> {
    /// Upload the parameters and ions, compile, and allocate buffers for `walkers` walkers and `moves` moves.
    pub fn new(gpu: &Arc<Gpu>, j: &Jastrow<f64>, walkers: usize, moves: usize) -> Result<Self, GpuError> {
        let n = j.electrons;
        let (t, a) = (std::mem::size_of::<T>(), std::mem::size_of::<A>());
        gpu.ensure_fits("the walkers' positions and Jastrow quantities", walkers * n * (3 * t + COMPONENTS * a) + moves * walkers * (3 * t + 4 * a))?;
        let kind = if j.term == Term::P { "p" } else { "radial" };
        let name = |op: &str| format!("jastrow_{op}_{kind}_{}", suffix::<T, A>());
        let funcs = [gpu.function("jastrow", SRC, &name("vgl"))?, gpu.function("jastrow", SRC, &name("ratio"))?, gpu.function("jastrow", SRC, &name("accept"))?];
        let p = params(j);
        // SAFETY: JParams is plain old data (repr(C), no padding the kernel reads uninitialised: pads are zeroed).
        let bytes = unsafe { std::slice::from_raw_parts(&p as *const JParams as *const u8, std::mem::size_of::<JParams>()) };
        let ions: Vec<T> = j.ions.iter().map(|&x| T::of(x)).collect();
        let shared = if j.term == Term::P { (3 * (MAX_POWER + 1) * 2 * BLOCK as usize * t) as u32 } else { 0 };
        Ok(GpuJastrow {
            params: gpu.upload("the Jastrow parameters", bytes)?,
            ions: if ions.is_empty() { gpu.zeros("ions", 3)? } else { gpu.upload("ions", &ions)? },
            pos: gpu.zeros("positions", walkers * 3 * n)?,
            state: gpu.zeros("stored Jastrow quantities", walkers * COMPONENTS * n)?,
            newpos: gpu.zeros("proposed positions", moves.max(1) * walkers * 3)?,
            ratio: gpu.zeros("ratios", moves.max(1) * walkers * 4)?,
            gpu: gpu.clone(),
            funcs,
            electrons: n,
            walkers,
            moves: vec![],
            shared,
        })
    }

    /// Copy positions (`[walker][xyz][electron]`, f64) to the device in T.
    pub fn set_positions(&mut self, pos: &[f64]) -> Result<(), GpuError> {
        assert_eq!(pos.len(), self.pos.len(), "jastrow gpu: positions length");
        let host: Vec<T> = pos.iter().map(|&x| T::of(x)).collect();
        self.gpu.write(&mut self.pos, &host)
    }

    /// Copy the proposals of `m` to the device.
    pub fn set_moves(&mut self, m: &Moves) -> Result<(), GpuError> {
        assert!(m.pos.len() <= self.newpos.len() && m.pos.len() == m.electrons.len() * self.walkers * 3, "jastrow gpu: moves length");
        let host: Vec<T> = m.pos.iter().map(|&x| T::of(x)).collect();
        let mut view = self.newpos.slice_mut(..host.len());
        self.gpu.stream.memcpy_htod(&host, &mut view).during("copying proposals")?;
        self.moves = m.electrons.clone();
        Ok(())
    }

    /// Queue the full evaluation of all walkers.
    pub fn vgl(&mut self) -> Result<(), GpuError> {
        let cfg = LaunchConfig {
            grid_dim: ((self.electrons as u32).div_ceil(BLOCK), self.walkers as u32, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: self.shared,
        };
        let mut b = self.gpu.stream.launch_builder(&self.funcs[0]);
        b.arg(&self.params).arg(&self.pos).arg(&self.ions).arg(&mut self.state);
        // SAFETY: buffers sized for `walkers` x `electrons` as the kernel indexes; threads past the electrons only
        // help load tiles; grid y is the walker.
        unsafe { b.launch(cfg) }.during("launching jastrow vgl")?;
        Ok(())
    }

    fn per_walker(&self) -> LaunchConfig {
        LaunchConfig { grid_dim: (self.walkers as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: self.shared }
    }

    /// Queue the ratio and new gradient of every proposal (one launch per move, each from the stored state).
    pub fn ratios(&mut self) -> Result<(), GpuError> {
        let cfg = self.per_walker();
        let walkers = self.walkers as i32;
        for (m, &k) in self.moves.iter().enumerate() {
            let (k, m) = (k as i32, m as i32);
            let mut b = self.gpu.stream.launch_builder(&self.funcs[1]);
            b.arg(&self.params).arg(&self.pos).arg(&self.ions).arg(&self.state).arg(&self.newpos).arg(&k).arg(&m).arg(&walkers).arg(&mut self.ratio);
            // SAFETY: one block per walker; move m < moves allocated (set_moves checked), k < electrons.
            unsafe { b.launch(cfg) }.during("launching jastrow ratio")?;
        }
        Ok(())
    }

    /// Queue the acceptance of every proposal in turn (one launch per move).
    pub fn accepts(&mut self) -> Result<(), GpuError> {
        let cfg = self.per_walker();
        let walkers = self.walkers as i32;
        for (m, &k) in self.moves.iter().enumerate() {
            let (k, m) = (k as i32, m as i32);
            let mut b = self.gpu.stream.launch_builder(&self.funcs[2]);
            b.arg(&self.params).arg(&mut self.pos).arg(&self.ions).arg(&mut self.state).arg(&self.newpos).arg(&k).arg(&m).arg(&walkers);
            // SAFETY: as for ratios; each block writes only its own walker's rows.
            unsafe { b.launch(cfg) }.during("launching jastrow accept")?;
        }
        Ok(())
    }

    /// The stored quantities, `[walker][component][electron]`.
    pub fn state(&self) -> Result<Vec<A>, GpuError> {
        self.gpu.download(&self.state)
    }

    /// Log ratios and new gradients of the last `ratios`, `[move][walker][4]`, in f64.
    pub fn ratio_outputs(&self) -> Result<Vec<f64>, GpuError> {
        let n = self.moves.len() * self.walkers * 4;
        Ok(self.gpu.stream.clone_dtoh(&self.ratio.slice(..n)).during("copying ratios")?.iter().map(|x| x.f64()).collect())
    }

    /// Poison the outputs so an entry a kernel fails to write cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        let nan = vec![A::nan(); self.state.len()];
        self.gpu.write(&mut self.state, &nan)?;
        let nan = vec![A::nan(); self.ratio.len()];
        self.gpu.write(&mut self.ratio, &nan)
    }
}
