//! GPU launch code: all walkers in one set of buffers, paper 000's two phases, all on the device: the job list is
//! counted, scanned (a block scan per walker, then one over the walkers' totals) and written there (paper 000
//! concatenates on the CPU); the points are sorted by B-spline grid cell on the device (bspline::gpu::CellSort),
//! and the ratios run over the sorted points in chunks of at most 65535 (the B-spline buffer), each chunk three
//! launches (points, orbitals, ratios) on one stream, over a capacity of jobs estimated from the geometry (the host
//! does not wait for the count); one block per walker sums its contributions. The only
//! download is the energies with the job count: a count above the capacity makes `evaluate` run again with room
//! for it (rare: the estimate is 10% above the uniform expectation), and the capacity stays grown.
//! The walkers (positions, rotations, inverse rows) are a [`Slab`] the caller owns and passes to each phase. The ratio kernel multiplies in the
//! Jastrow ratio (B-spline functors only: their coefficients travel in the parameter block), whose old sum (at the
//! electron's own position) one launch before the chunks computes once per walker-electron with jobs.

use super::channels::{MAX_L, MAX_TERMS};
use super::slab::{Slab, SlabLayout};
use super::Setup;
use crate::bspline::gpu::{suffix, CellSort, GpuSpline};
use crate::bspline::Output;
use crate::gpu::{grid_1d, CudaFunction, CudaSlice, DriverContext, Gpu, GpuError, LaunchConfig, PushKernelArg, Traffic};
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

/// Orbitals per thread of the grouped B-spline kernel at the sorted points: one in mixed precision, whose f64 sums of
/// converted f32 rows leave it short of registers and issue slots with two (ncu on the H100: 134 registers, fp64
/// pipe 20% against double's 32%), the B-spline default otherwise. Measured on the H100 (solid, GPU, the
/// pseudopotential's time per walker step and the whole step, 4616337 and its variant with one orbital a thread):
///
/// | | 1536 electrons, 256 walkers | 384 electrons, 1024 walkers |
/// | --- | --- | --- |
/// | mixed, 2 a thread | 0.398 ms, 573 walker steps/s | 24.6 us, 11,390 |
/// | mixed, 1 a thread | 0.286 ms, 612 | 21.7 us, 11,711 |
/// | double, 2 a thread | 0.279 ms, 632 | 19.4 us, 11,687 |
/// | double, 1 a thread | 0.277 ms | 22.0 us, 11,362 |
fn sorted_per_thread<S: Real, A: Real>() -> usize {
    match (S::NAME, A::NAME) {
        ("f32", "f64") => 1,
        _ => crate::bspline::gpu::default_per_thread::<S, A>(),
    }
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
    inv_cell: [f64; 3],
    rc: f64,
    quad: [[f64; 4]; 50],
    jastrow: i32,
    jn: [i32; 3],
    jcut: [f64; 3],
    jinvh: [f64; 3],
    jcoef: [[f64; MAX_JASTROW_COEFS]; 3],
    slab: SlabLayout,
    grid_cell: [f64; 3],
    grid: [i32; 4],
}
// SAFETY: plain-old-data with the C layout of the kernel's struct.
unsafe impl DeviceRepr for PPParams {}

/// The setup and the work buffers on the GPU, for the walkers of one slab (`slab`: positions, rotations, inverse
/// rows), which every phase takes as an argument: the solid engine moves them in place between evaluations.
pub struct GpuPseudo<S: Real, A: Real> {
    gpu: Arc<Gpu>,
    spline: GpuSpline<S, A>,
    params: PPParams,
    f_count: CudaFunction,
    f_scan_walkers: CudaFunction,
    f_scan_totals: CudaFunction,
    f_fill: CudaFunction,
    f_points: CudaFunction,
    f_ratio: CudaFunction,
    f_old: CudaFunction,
    f_energies: CudaFunction,
    f_keys: CudaFunction,
    ions: CudaSlice<f64>,
    counts: CudaSlice<i32>,
    /// Each walker-electron's first job among its walker's.
    offsets: CudaSlice<i32>,
    /// Each walker's first job, then the total (walkers + 1).
    wbase: CudaSlice<i64>,
    /// The Jastrow sum of each walker-electron at its own position (written for those with jobs).
    old: CudaSlice<f64>,
    /// Jobs as (walker, electron, ion, pad) and their displacements, with room for `cap` jobs.
    jobs: CudaSlice<i32>,
    disp: CudaSlice<f64>,
    factor: CudaSlice<f64>,
    ratios: CudaSlice<f64>,
    contrib: CudaSlice<f64>,
    /// The points sorted by B-spline cell (room for the capacity's points).
    sort: CellSort,
    /// The walkers' energies, then the total job count (walkers + 1): the one download of an evaluation.
    out: CudaSlice<f64>,
    /// Jobs the list has room for; phase 2 launches cover that many (the host learns the total only at the end).
    cap: usize,
    /// Jobs of the last evaluation (may exceed `cap` until `evaluate` has run again with more room).
    total: usize,
    /// Bytes this kernel moved between host and device since it was made.
    pub traffic: Traffic,
}

/// Bytes of device memory per job of capacity: the job, its displacement, weight, ratio and contribution per point.
fn job_bytes(nq: usize) -> usize {
    16 + 24 + 24 * nq
}

impl<S: Real, A: Real> GpuPseudo<S, A> {
    pub fn new(gpu: &Arc<Gpu>, s: &Setup<S>, w: &Slab<S>) -> Result<Self, GpuError> {
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
            inv_cell: s.cell.map(super::inv_side),
            rc: ch.rc,
            quad: [[0.0; 4]; 50],
            jastrow: 0,
            jn: [0; 3],
            jcut: [0.0; 3],
            jinvh: [0.0; 3],
            jcoef: [[0.0; MAX_JASTROW_COEFS]; 3],
            slab: w.layout,
            grid_cell: [0.0; 3],
            grid: [0; 4],
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
        let sfx = suffix::<S, A>();
        let spline = GpuSpline::new(gpu, &s.table, CHUNK, Output::V, sorted_per_thread::<S, A>())?.for_sorted_points()?;
        let (n, cell) = spline.grid();
        (params.grid, params.grid_cell) = ([n[0], n[1], n[2], 0], cell);
        let f = |name: &str| gpu.function("pseudopotential", SRC, name);
        let mut g = GpuPseudo {
            f_count: f("pp_count")?,
            f_scan_walkers: f("pp_scan_walkers")?,
            f_scan_totals: f("pp_scan_totals")?,
            f_fill: f("pp_fill")?,
            f_points: f("pp_points")?,
            f_ratio: f(&format!("pp_ratio_{sfx}"))?,
            f_old: f(&format!("pp_old_{sfx}"))?,
            f_energies: f("pp_energies")?,
            f_keys: f("pp_keys")?,
            ions: gpu.upload("ion positions", &s.ions)?,
            counts: gpu.zeros("job counts", ne)?,
            offsets: gpu.zeros("job offsets", ne)?,
            wbase: gpu.zeros("walker job offsets", w.count + 1)?,
            old: gpu.zeros("old Jastrow sums", ne)?,
            jobs: gpu.zeros("jobs", 4)?,
            disp: gpu.zeros("displacements", 3)?,
            factor: gpu.zeros("weights", 1)?,
            ratios: gpu.zeros("ratios", 1)?,
            contrib: gpu.zeros("contributions", 1)?,
            sort: spline.cell_sort(0)?,
            out: gpu.zeros("nonlocal energies", w.count + 1)?,
            cap: 0,
            total: 0,
            traffic: Traffic::default(),
            gpu: gpu.clone(),
            spline,
            params,
        };
        // uniform electrons give about the expected count with a relative spread of 1/sqrt(jobs): 10% and eight
        // spreads above it rarely overflow; a walker population that gathers near the ions grows it once
        let m = w.count as f64 * s.expected_jobs();
        let most = ne * s.ion_count();
        g.set_capacity(((1.1 * m + 8.0 * m.sqrt()).ceil() as usize + 256).min(most))?;
        Ok(g)
    }

    /// Room for `jobs` jobs (the list keeps at most that many; phase 2 launches cover them all).
    pub fn set_capacity(&mut self, jobs: usize) -> Result<(), GpuError> {
        let (cap, nq) = (jobs.max(1), self.params.nq as usize);
        assert!(cap < i32::MAX as usize / 4 && cap * nq < i32::MAX as usize, "pseudopotential gpu: too many jobs for 32-bit job fields");
        // free the old list before asking for room for the new one
        for b in [&mut self.disp, &mut self.factor, &mut self.ratios, &mut self.contrib] {
            *b = self.gpu.zeros("a placeholder", 1)?;
        }
        self.jobs = self.gpu.zeros("a placeholder", 4)?;
        self.sort.resize(0)?;
        self.gpu.ensure_fits("the job list", cap * job_bytes(nq))?;
        self.jobs = self.gpu.zeros("jobs", 4 * cap)?;
        self.disp = self.gpu.zeros("displacements", 3 * cap)?;
        self.factor = self.gpu.zeros("weights", nq * cap)?;
        self.ratios = self.gpu.zeros("ratios", nq * cap)?;
        self.contrib = self.gpu.zeros("contributions", nq * cap)?;
        self.sort.resize(nq * cap)?;
        self.cap = cap;
        Ok(())
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Points of the last evaluation that the list held.
    fn points(&self) -> usize {
        self.total.min(self.cap) * self.params.nq as usize
    }

    /// Jobs of the last evaluation.
    pub fn jobs_count(&self) -> usize {
        self.total
    }

    /// Phase 1: the job list, on the device (asynchronous: the total comes back with the energies).
    pub fn job_list(&mut self, w: &Slab<S>) -> Result<(), GpuError> {
        self.check(w);
        let (nw, ne) = (self.params.walkers as usize, (self.params.walkers * self.params.electrons) as usize);
        let cfg = grid_1d(ne, 128);
        let cap = self.cap as i64;
        let s = self.gpu.stream.clone();
        let mut b = s.launch_builder(&self.f_count);
        b.arg(&self.params).arg(&w.buf).arg(&self.ions).arg(&mut self.counts);
        // SAFETY: the slab holds the walkers' positions (3 per electron at p.slab.pos), ions ions*3, counts ne; threads beyond ne return.
        unsafe { b.launch(cfg) }.during("launching pp_count")?;
        let mut b = s.launch_builder(&self.f_scan_walkers);
        b.arg(&self.params).arg(&self.counts).arg(&mut self.offsets).arg(&mut self.wbase);
        // SAFETY: block w < walkers scans counts[w E..(w+1) E] into the same range of offsets (ne each) and writes
        // wbase[w] (walkers + 1 entries); 128 threads, a multiple of 32 as block_scan needs.
        unsafe { b.launch(LaunchConfig { grid_dim: (nw as u32, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 }) }.during("launching pp_scan_walkers")?;
        let mut b = s.launch_builder(&self.f_scan_totals);
        b.arg(&self.params).arg(&mut self.wbase);
        // SAFETY: one block of 1024 threads scans wbase[0..walkers] in place and writes wbase[walkers].
        unsafe { b.launch(LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 }) }.during("launching pp_scan_totals")?;
        let mut b = s.launch_builder(&self.f_fill);
        b.arg(&self.params).arg(&w.buf).arg(&self.ions).arg(&self.offsets).arg(&self.wbase).arg(&cap).arg(&mut self.jobs).arg(&mut self.disp);
        // SAFETY: a job's index wbase[w] + offset + k is written only below cap, so it fits jobs (4 cap) and disp
        // (3 cap); offsets hold ne entries, wbase walkers + 1, the slab every walker's positions.
        unsafe { b.launch(cfg) }.during("launching pp_fill")?;
        Ok(())
    }

    /// Phase 2: all ratios and contributions of the current job list (asynchronous), over the capacity in chunks.
    pub fn ratios_launch(&mut self, w: &Slab<S>) -> Result<(), GpuError> {
        self.check(w);
        let nq = self.params.nq as usize;
        let (total, cap) = (self.cap * nq, self.cap as i64);
        if self.params.jastrow != 0 {
            let ne = (self.params.walkers * self.params.electrons) as usize;
            let mut b = self.gpu.stream.launch_builder(&self.f_old);
            b.arg(&self.params).arg(&w.buf).arg(&self.ions).arg(&self.counts).arg(&mut self.old);
            // SAFETY: warp t < ne reads its walker's positions in the slab, ions, counts (ne) of the last job list and writes old[t] (ne);
            // warps beyond ne return whole.
            unsafe { b.launch(grid_1d(ne * 32, 128)) }.during("launching pp_old")?;
        }
        self.sort_points(w)?;
        let mut first = 0usize;
        while first < total {
            let count = CHUNK.min(total - first);
            let (first_i, count_i) = (first as i64, count as i32);
            let pts = self.spline.device_positions(count);
            let mut b = self.gpu.stream.launch_builder(&self.f_points);
            b.arg(&self.params).arg(&self.ions).arg(&w.buf).arg(&self.jobs).arg(&self.disp).arg(&first_i).arg(&count_i);
            b.arg(&self.wbase).arg(&cap).arg(&self.sort.perm).arg(pts).arg(&mut self.factor);
            // SAFETY: sorted positions first..first+count lie below cap*nq; those beyond the list's points return,
            // the others read perm there (sort_points wrote every position below the list's points) and write their
            // point's weight; pts holds CHUNK*3 >= count*3 entries.
            unsafe { b.launch(grid_1d(count, 128)) }.during("launching pp_points")?;
            self.spline.launch_sorted()?;
            let phi = self.spline.device_outputs();
            let mut b = self.gpu.stream.launch_builder(&self.f_ratio);
            b.arg(&self.params).arg(phi).arg(&w.buf).arg(&self.jobs).arg(&self.factor).arg(&first_i).arg(&count_i).arg(&self.wbase).arg(&cap).arg(&self.sort.perm);
            b.arg(&self.ions).arg(&self.disp).arg(&self.old).arg(&mut self.ratios).arg(&mut self.contrib);
            // SAFETY: phi holds count*stride values; warps of points beyond the list's jobs return; the others read
            // jobs the list holds, whose inverse rows, positions and rotations lie in their walkers' slabs,
            // old sums in old (pp_old above wrote those with jobs), displacements in disp (jobs < cap); warp t writes point
            // first+t < nq*cap. 4 warps per block; warps beyond count return whole.
            unsafe { b.launch(grid_1d(count * 32, 128)) }.during("launching pp_ratio")?;
            first += count;
        }
        Ok(())
    }

    /// The points of the current job list sorted by B-spline cell, into the sort's `perm` (see pseudopotential.cu).
    fn sort_points(&mut self, w: &Slab<S>) -> Result<(), GpuError> {
        let total = self.cap * self.params.nq as usize;
        let cap = self.cap as i64;
        self.sort.clear()?;
        let mut b = self.gpu.stream.launch_builder(&self.f_keys);
        b.arg(&self.params).arg(&self.ions).arg(&w.buf).arg(&self.jobs).arg(&self.disp).arg(&self.wbase).arg(&cap);
        b.arg(&mut self.sort.key).arg(&mut self.sort.rank).arg(&mut self.sort.counts);
        // SAFETY: thread pt < cap*nq (the sort's capacity) writes key[pt]; those below the list's points read their
        // job and displacement (held jobs lie below cap) and the job's walker's rotations in the slab, and write
        // rank[pt] and count in counts at a cell below nx*ny*nz (spline_cell clamps each axis).
        unsafe { b.launch(grid_1d(total, 128)) }.during("launching pp_keys")?;
        self.sort.finish(total)
    }

    /// Both phases and the per-walker sums on the device: the nonlocal energy of every walker. The only download
    /// is the energies with the job count; when the count exceeds the capacity, once more with room for it.
    pub fn evaluate(&mut self, w: &Slab<S>) -> Result<Vec<f64>, GpuError> {
        loop {
            self.job_list(w)?;
            self.ratios_launch(w)?;
            let e = self.sums()?;
            if self.total <= self.cap {
                return Ok(e);
            }
            self.set_capacity(self.total + self.total / 8 + 256)?;
        }
    }

    /// Sum the contributions per walker on the device and download the sums with the job count.
    fn sums(&mut self) -> Result<Vec<f64>, GpuError> {
        let nw = self.params.walkers as usize;
        let cap = self.cap as i64;
        let mut b = self.gpu.stream.launch_builder(&self.f_energies);
        b.arg(&self.params).arg(&self.wbase).arg(&cap).arg(&self.contrib).arg(&mut self.out);
        // SAFETY: block w < walkers reads wbase[w], wbase[w+1] and the contributions between them clamped to cap*nq
        // (all within contrib); writes out[w] and (block 0) out[walkers]: walkers + 1 entries. 128 threads.
        unsafe { b.launch(LaunchConfig { grid_dim: (nw as u32, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 }) }.during("launching pp_energies")?;
        let mut out = self.gpu.download(&self.out)?;
        self.traffic.down::<f64>(out.len());
        self.total = out.pop().expect("walkers + 1 entries") as usize;
        Ok(out)
    }

    /// All ratios of the last evaluation, in job order.
    pub fn ratios(&mut self) -> Result<Vec<f64>, GpuError> {
        if self.points() == 0 {
            return Ok(vec![]);
        }
        self.traffic.down::<f64>(self.points());
        self.gpu.stream.clone_dtoh(&self.ratios.slice(..self.points())).during("copying ratios")
    }

    /// The kernels index walkers and arrays by this layout and count.
    fn check(&self, w: &Slab<S>) {
        assert!(w.layout == self.params.slab && w.count == self.params.walkers as usize, "pseudopotential gpu: a slab of another layout");
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
