//! GPU launch code: all walkers in one set of buffers, paper 000's two phases. The job list is counted and written
//! on the device with a host scan between (the paper concatenates on the CPU too); the ratios run in chunks of at
//! most 65535 points (the B-spline kernel's launch limit), each chunk three launches (points, orbitals, ratios)
//! on one stream; the contributions come back and the host sums them per walker. The ratio kernel multiplies in the
//! Jastrow ratio (B-spline functors only: their coefficients travel in the parameter block), whose old sum (at the
//! electron's own position) one launch before the chunks computes once per walker-electron with jobs.

use super::channels::{MAX_L, MAX_TERMS};
use super::{Setup, Walkers};
use crate::bspline::gpu::{suffix, GpuSpline};
use crate::bspline::Output;
use crate::gpu::{grid_1d, CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, PushKernelArg};
use crate::Real;
use cudarc::driver::DeviceRepr;
use std::sync::Arc;

pub const SRC: &str = include_str!("pseudopotential.cu");

/// Most coefficients of a Jastrow functor (PP_MAX_JC in pseudopotential.cu).
pub const MAX_JASTROW_COEFS: usize = 16;

/// The three B-spline functors of `j` (pair same spin, pair opposite spin, one-body) as the kernels' parameter arrays:
/// coefficient counts, cutoffs, inverse knot spacings and coefficients. `who` names the caller in the panic message.
pub fn jastrow_tables(j: &super::Jastrow, who: &str) -> ([i32; 3], [f64; 3], [f64; 3], [[f64; MAX_JASTROW_COEFS]; 3]) {
    let (mut n, mut cut, mut inv_h, mut coef) = ([0; 3], [0.0; 3], [0.0; 3], [[0.0; MAX_JASTROW_COEFS]; 3]);
    for (f, u) in [&j.pair[0], &j.pair[1], &j.one].into_iter().enumerate() {
        assert!(u.form == crate::jastrow::Form::BSpline && u.coefs.len() <= MAX_JASTROW_COEFS, "{who}: Jastrow functors must be B-splines of at most {MAX_JASTROW_COEFS} coefficients");
        n[f] = u.coefs.len() as i32;
        cut[f] = u.cutoff;
        inv_h[f] = u.inv_h;
        coef[f][..u.coefs.len()].copy_from_slice(&u.coefs);
    }
    (n, cut, inv_h, coef)
}

/// Points per chunk of phase 2 (one B-spline launch each).
pub const CHUNK: usize = 65535;

/// Mirrors `PPParams` in pseudopotential.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct PPParams {
    walkers: i32,
    electrons: i32,
    ions: i32,
    stride: i32,
    nq: i32,
    nl: i32,
    nterms: [i32; MAX_L + 1],
    npow: [[i32; MAX_TERMS]; MAX_L + 1],
    coef: [[f64; MAX_TERMS]; MAX_L + 1],
    expo: [[f64; MAX_TERMS]; MAX_L + 1],
    cell: [f64; 3],
    rc: f64,
    quad: [[f64; 4]; 50],
    jastrow: i32,
    jn: [i32; 3],
    jcut: [f64; 3],
    jinvh: [f64; 3],
    jcoef: [[f64; MAX_JASTROW_COEFS]; 3],
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for PPParams {}

/// Setup and walkers resident on the GPU.
pub struct GpuPseudo<S: Real, A: Real> {
    gpu: Arc<Gpu>,
    spline: GpuSpline<S, A>,
    params: PPParams,
    f_count: CudaFunction,
    f_fill: CudaFunction,
    f_points: CudaFunction,
    f_ratio: CudaFunction,
    f_old: CudaFunction,
    ions: CudaSlice<f64>,
    pos: CudaSlice<f64>,
    rot: CudaSlice<f64>,
    inv: CudaSlice<S>,
    counts: CudaSlice<i32>,
    offsets: CudaSlice<i32>,
    /// The Jastrow sum of each walker-electron at its own position (written for those with jobs).
    old: CudaSlice<f64>,
    /// Jobs as (walker, electron, ion, pad) and their displacements, with room for `cap` jobs.
    jobs: CudaSlice<i32>,
    disp: CudaSlice<f64>,
    factor: CudaSlice<f64>,
    ratios: CudaSlice<f64>,
    contrib: CudaSlice<f64>,
    cap: usize,
    /// Host copy of the offsets plus the total: walker w's jobs are offsets[w E] .. offsets[(w+1) E].
    host_offsets: Vec<i32>,
}

impl<S: Real, A: Real> GpuPseudo<S, A> {
    pub fn new(gpu: &Arc<Gpu>, s: &Setup<S>, w: &Walkers<S>) -> Result<Self, GpuError> {
        let ch = &s.channels;
        let (pts, wts) = s.rule.nodes();
        let mut params = PPParams {
            walkers: w.count as i32,
            electrons: s.electrons as i32,
            ions: s.ion_count() as i32,
            stride: s.table.stride as i32,
            nq: pts.len() as i32,
            nl: ch.l.len() as i32,
            nterms: [0; MAX_L + 1],
            npow: [[0; MAX_TERMS]; MAX_L + 1],
            coef: [[0.0; MAX_TERMS]; MAX_L + 1],
            expo: [[0.0; MAX_TERMS]; MAX_L + 1],
            cell: s.cell,
            rc: ch.rc,
            quad: [[0.0; 4]; 50],
            jastrow: 0,
            jn: [0; 3],
            jcut: [0.0; 3],
            jinvh: [0.0; 3],
            jcoef: [[0.0; MAX_JASTROW_COEFS]; 3],
        };
        if let Some(j) = &s.jastrow {
            params.jastrow = 1;
            (params.jn, params.jcut, params.jinvh, params.jcoef) = jastrow_tables(j, "pseudopotential gpu");
        }
        for (l, terms) in ch.l.iter().enumerate() {
            params.nterms[l] = terms.len() as i32;
            for (k, t) in terms.iter().enumerate() {
                params.npow[l][k] = t.n;
                params.coef[l][k] = t.c;
                params.expo[l][k] = t.a;
            }
        }
        for (q, (u, wt)) in pts.iter().zip(&wts).enumerate() {
            params.quad[q] = [u[0], u[1], u[2], *wt];
        }
        let ne = w.count * s.electrons;
        gpu.ensure_fits("the walkers' inverses", w.inv.len() * std::mem::size_of::<S>())?;
        let sfx = suffix::<S, A>();
        let spline = GpuSpline::new(gpu, &s.table, CHUNK, Output::V, crate::bspline::gpu::default_per_thread::<S, A>())?;
        Ok(GpuPseudo {
            f_count: gpu.function("pseudopotential", SRC, "pp_count")?,
            f_fill: gpu.function("pseudopotential", SRC, "pp_fill")?,
            f_points: gpu.function("pseudopotential", SRC, "pp_points")?,
            f_ratio: gpu.function("pseudopotential", SRC, &format!("pp_ratio_{sfx}"))?,
            f_old: gpu.function("pseudopotential", SRC, &format!("pp_old_{sfx}"))?,
            ions: gpu.upload("ion positions", &s.ions)?,
            pos: gpu.upload("electron positions", &w.pos)?,
            rot: gpu.upload("rotations", &w.rot)?,
            inv: gpu.upload("inverses", &w.inv)?,
            counts: gpu.zeros("job counts", ne)?,
            offsets: gpu.zeros("job offsets", ne)?,
            old: gpu.zeros("old Jastrow sums", ne)?,
            jobs: gpu.zeros("jobs", 4)?,
            disp: gpu.zeros("displacements", 3)?,
            factor: gpu.zeros("weights", 1)?,
            ratios: gpu.zeros("ratios", 1)?,
            contrib: gpu.zeros("contributions", 1)?,
            cap: 0,
            host_offsets: vec![],
            gpu: gpu.clone(),
            spline,
            params,
        })
    }

    fn points(&self) -> usize {
        self.jobs_count() * self.params.nq as usize
    }

    pub fn jobs_count(&self) -> usize {
        self.host_offsets.last().map_or(0, |&t| t as usize)
    }

    /// Phase 1: the job list. Returns the number of jobs.
    pub fn job_list(&mut self) -> Result<usize, GpuError> {
        let ne = (self.params.walkers * self.params.electrons) as usize;
        let cfg = grid_1d(ne, 128);
        let mut b = self.gpu.stream.launch_builder(&self.f_count);
        b.arg(&self.params).arg(&self.pos).arg(&self.ions).arg(&mut self.counts);
        // SAFETY: pos holds ne*3 entries, ions ions*3, counts ne; threads beyond ne return.
        unsafe { b.launch(cfg) }.during("launching pp_count")?;
        let counts = self.gpu.download(&self.counts)?;
        let mut offsets = Vec::with_capacity(ne + 1);
        let mut total = 0i64;
        for c in counts {
            offsets.push(total as i32);
            total += c as i64;
        }
        assert!(total < i32::MAX as i64 / 4, "pseudopotential gpu: too many jobs for 32-bit offsets");
        offsets.push(total as i32);
        let total = total as usize;
        self.gpu.write(&mut self.offsets, &offsets[..ne])?;
        if total > self.cap {
            let cap = total + total / 4 + 1;
            let nq = self.params.nq as usize;
            self.gpu.ensure_fits("the job list", cap * (16 + 24 + 24 * nq))?;
            self.jobs = self.gpu.zeros("jobs", 4 * cap)?;
            self.disp = self.gpu.zeros("displacements", 3 * cap)?;
            self.factor = self.gpu.zeros("weights", nq * cap)?;
            self.ratios = self.gpu.zeros("ratios", nq * cap)?;
            self.contrib = self.gpu.zeros("contributions", nq * cap)?;
            self.cap = cap;
        }
        let mut b = self.gpu.stream.launch_builder(&self.f_fill);
        b.arg(&self.params).arg(&self.pos).arg(&self.ions).arg(&self.offsets).arg(&mut self.jobs).arg(&mut self.disp);
        // SAFETY: offsets[t] + count[t] <= total <= cap, so every job written fits jobs (4 cap) and disp (3 cap).
        unsafe { b.launch(cfg) }.during("launching pp_fill")?;
        self.host_offsets = offsets;
        Ok(total)
    }

    /// Phase 2: all ratios and contributions of the current job list (asynchronous).
    pub fn ratios_launch(&mut self) -> Result<(), GpuError> {
        let total = self.points();
        if self.params.jastrow != 0 && total > 0 {
            let ne = (self.params.walkers * self.params.electrons) as usize;
            let mut b = self.gpu.stream.launch_builder(&self.f_old);
            b.arg(&self.params).arg(&self.pos).arg(&self.ions).arg(&self.counts).arg(&mut self.old);
            // SAFETY: warp t < ne reads pos (3 ne), ions, counts (ne) of the last job list and writes old[t] (ne);
            // warps beyond ne return whole.
            unsafe { b.launch(grid_1d(ne * 32, 128)) }.during("launching pp_old")?;
        }
        let mut first = 0usize;
        while first < total {
            let count = CHUNK.min(total - first);
            let (first_i, count_i) = (first as i64, count as i32);
            let pts = self.spline.device_positions(count);
            let mut b = self.gpu.stream.launch_builder(&self.f_points);
            b.arg(&self.params).arg(&self.ions).arg(&self.rot).arg(&self.jobs).arg(&self.disp).arg(&first_i).arg(&count_i).arg(pts).arg(&mut self.factor);
            // SAFETY: points first..first+count belong to jobs < total <= cap; pts holds CHUNK*3 >= count*3 entries.
            unsafe { b.launch(grid_1d(count, 128)) }.during("launching pp_points")?;
            self.spline.launch()?;
            let phi = self.spline.device_outputs();
            let mut b = self.gpu.stream.launch_builder(&self.f_ratio);
            b.arg(&self.params).arg(phi).arg(&self.inv).arg(&self.jobs).arg(&self.factor).arg(&first_i).arg(&count_i);
            b.arg(&self.pos).arg(&self.ions).arg(&self.rot).arg(&self.disp).arg(&self.old).arg(&mut self.ratios).arg(&mut self.contrib);
            // SAFETY: phi holds count*stride values; inverse rows, positions and old sums of the jobs' walkers and
            // electrons lie in inv, pos and old (pp_old above wrote those with jobs), their rotations in rot, their
            // displacements in disp (jobs < total <= cap); warp t writes point first+t < total <= nq*cap. 4 warps per
            // block; warps beyond count return whole.
            unsafe { b.launch(grid_1d(count * 32, 128)) }.during("launching pp_ratio")?;
            first += count;
        }
        Ok(())
    }

    /// Both phases and the per-walker sum on the host: the nonlocal energy of every walker.
    pub fn evaluate(&mut self) -> Result<Vec<f64>, GpuError> {
        self.job_list()?;
        self.ratios_launch()?;
        self.energies()
    }

    /// Download the contributions and sum them per walker.
    pub fn energies(&self) -> Result<Vec<f64>, GpuError> {
        let nq = self.params.nq as usize;
        let contrib = if self.points() > 0 { self.gpu.stream.clone_dtoh(&self.contrib.slice(..self.points())).during("copying contributions")? } else { vec![] };
        let ne = self.params.electrons as usize;
        Ok((0..self.params.walkers as usize)
            .map(|w| {
                let (a, b) = (self.host_offsets[w * ne] as usize, self.host_offsets[(w + 1) * ne] as usize);
                contrib[a * nq..b * nq].iter().sum()
            })
            .collect())
    }

    /// All ratios of the last evaluation, in job order.
    pub fn ratios(&self) -> Result<Vec<f64>, GpuError> {
        if self.points() == 0 {
            return Ok(vec![]);
        }
        self.gpu.stream.clone_dtoh(&self.ratios.slice(..self.points())).during("copying ratios")
    }

    /// The walkers' state on the device, for a driver that moves the walkers in place (the solid mini-app):
    /// positions `[walker][electron][xyz]`, transposed inverses `[walker][electron][stride]`, rotations
    /// `[walker][ion][9]`. The next `evaluate` reads them as they are then.
    pub fn state_mut(&mut self) -> (&mut CudaSlice<f64>, &mut CudaSlice<S>, &mut CudaSlice<f64>) {
        (&mut self.pos, &mut self.inv, &mut self.rot)
    }

    /// Poison the outputs so a kernel that fails to write an entry cannot pass validation.
    pub fn poison(&mut self) -> Result<(), GpuError> {
        let (nc, no) = (self.contrib.len(), self.old.len());
        let nan = vec![f64::NAN; nc.max(no)];
        self.gpu.write(&mut self.contrib, &nan[..nc])?;
        self.gpu.write(&mut self.old, &nan[..no])?;
        self.gpu.write(&mut self.ratios, &nan[..nc])
    }
}
