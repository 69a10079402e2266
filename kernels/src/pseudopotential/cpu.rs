//! The fast CPU path, all cores, paper 000's two phases: the job list (rayon over walkers, then concatenated), and
//! the ratios in batches of jobs (rayon over batches: the B-spline CPU kernel evaluates all orbitals at the batch's
//! points into a buffer that stays in cache, then one dot product per point with the electron's inverse row, times
//! the Jastrow ratio: its old sum once per (walker, electron), the new sum over the other electrons and the ions per
//! point, both over structure-of-arrays positions in blocks whose distance tests vectorise).

use super::quadrature::{legendre, rotate};
use super::{Energies, Job, Setup, Walkers};
use crate::bspline::{cpu as spline, Output};
use crate::jastrow::Radial;
use crate::Real;
use rayon::prelude::*;

/// Jobs per batch of phase 2: 8 jobs x 12 points x 512 orbitals x 8 bytes = 384 KiB of orbital values.
const BATCH: usize = 8;

/// Phase 1: every (walker, electron, ion) within the cutoff, ordered by walker, electron, ion.
pub fn jobs<S: Real, T: Real>(s: &Setup<S>, w: &Walkers<T>) -> Vec<Job> {
    let rc2 = s.channels.rc * s.channels.rc;
    let per_walker: Vec<Vec<Job>> = (0..w.count)
        .into_par_iter()
        .map(|walker| {
            let mut list = vec![];
            for electron in 0..s.electrons {
                let re = w.electron(s.electrons, walker, electron);
                for ion in 0..s.ion_count() {
                    let d = s.displacement(re, s.ion(ion));
                    if d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < rc2 {
                        list.push(Job { walker, electron, ion, d });
                    }
                }
            }
            list
        })
        .collect();
    per_walker.concat()
}

/// Quadrature points of a job and the weight of each point's ratio in the energy:
/// f_q = sum_l (2l+1) dV_l(r) w_q P_l(u_q . d / r).
pub fn points<S: Real>(s: &Setup<S>, nodes: &(Vec<[f64; 3]>, Vec<f64>), rot: &[f64], job: &Job, pos: &mut Vec<f64>, factor: &mut Vec<f64>) {
    let d = job.d;
    let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let dv: Vec<f64> = (0..s.channels.l.len()).map(|l| (2 * l + 1) as f64 * s.channels.value(l, r)).collect();
    let ion = s.ion(job.ion);
    for (u, w) in nodes.0.iter().zip(&nodes.1) {
        let u = rotate(rot, *u);
        pos.extend((0..3).map(|k| ion[k] + r * u[k]));
        let p = legendre((u[0] * d[0] + u[1] * d[1] + u[2] * d[2]) / r);
        factor.push(w * dv.iter().zip(&p).map(|(a, b)| a * b).sum::<f64>());
    }
}

/// Both phases: table and inverse in S, spline and dot products in A.
pub fn energies<S: Real, A: Real>(s: &Setup<S>, w: &Walkers<S>) -> Energies {
    let jobs = jobs(s, w);
    ratios::<S, A>(s, w, &jobs)
}

/// Phase 2 for a given job list.
pub fn ratios<S: Real, A: Real>(s: &Setup<S>, w: &Walkers<S>, jobs: &[Job]) -> Energies {
    let nodes = s.rule.nodes();
    let nq = nodes.1.len();
    let stride = s.table.stride;
    let jas = s.jastrow.as_ref().map(|j| Functors::<A>::new(s, w, j));
    // the old Jastrow sum once per (walker, electron) with jobs; `row[k]`: job k's entry
    let mut row = Vec::with_capacity(jobs.len());
    let mut rows: Vec<(usize, usize)> = vec![];
    for j in jobs {
        if rows.last() != Some(&(j.walker, j.electron)) {
            rows.push((j.walker, j.electron));
        }
        row.push(rows.len() - 1);
    }
    let old: Vec<f64> = match &jas {
        Some(f) => rows.par_iter().map(|&(walker, e)| f.log(walker, e, w.electron(s.electrons, walker, e))).collect(),
        None => vec![0.0; rows.len()],
    };
    let per_batch: Vec<(Vec<f64>, Vec<f64>)> = jobs
        .par_chunks(BATCH)
        .zip(row.par_chunks(BATCH))
        .map(|(batch, batch_row)| {
            let (mut pos, mut factor) = (Vec::with_capacity(3 * nq * BATCH), Vec::with_capacity(nq * BATCH));
            for job in batch {
                points(s, &nodes, &w.rot[9 * (job.walker * s.ion_count() + job.ion)..][..9], job, &mut pos, &mut factor);
            }
            let mut phi = vec![A::zero(); factor.len() * stride];
            spline::evaluate::<S, A>(&s.table, &pos, Output::V, &mut phi);
            let mut ratio = Vec::with_capacity(factor.len());
            for (p, phi_p) in phi.chunks_exact(stride).enumerate() {
                let job = &batch[p / nq];
                let inv = &w.inv[s.inv_row(job.walker, job.electron)..][..stride];
                let det = crate::dispatch!(dot::<S, A>(phi_p, inv)).f64();
                let jastrow = match &jas {
                    Some(f) => (f.log(job.walker, job.electron, [pos[3 * p], pos[3 * p + 1], pos[3 * p + 2]]) - old[batch_row[p / nq]]).exp(),
                    None => 1.0,
                };
                ratio.push(det * jastrow);
            }
            let contrib = ratio.iter().zip(&factor).map(|(r, f)| r * f).collect();
            (ratio, contrib)
        })
        .collect();
    let mut out = Energies { energy: vec![0.0; w.count], ratios: Vec::with_capacity(jobs.len() * nq), jobs: jobs.len() };
    let mut k = 0;
    for (ratio, contrib) in per_batch {
        for (q, c) in contrib.iter().enumerate() {
            out.energy[jobs[k + q / nq].walker] += c;
        }
        k += ratio.len() / nq;
        out.ratios.extend(ratio);
    }
    out
}

#[inline(always)]
fn dot<S: Real, A: Real>(phi: &[A], inv: &[S]) -> A {
    phi.iter().zip(inv).fold(A::zero(), |acc, (&a, &b)| acc + a * A::of(b.f64()))
}

/// Points per block of the Jastrow sums: the distance test runs over whole blocks (the loop the compiler
/// vectorises), the functor only where a block has a point within the cutoff.
pub const LANES: usize = 16;

/// Points as structure of arrays (x block, y block, z block per group), each group padded to whole blocks with
/// NaN, which fails every cutoff test. Shared with the solid's Jastrow sums.
pub struct Soa {
    xyz: Vec<f64>,
    /// Points per group.
    n: usize,
    /// Padded length of one group.
    len: usize,
}

impl Soa {
    /// `groups` groups of `n` points each from `[point][xyz]`.
    pub fn new(pts: &[f64], groups: usize, n: usize) -> Soa {
        let len = n.div_ceil(LANES) * LANES;
        let mut s = Soa { xyz: vec![f64::NAN; groups * 3 * len], n, len };
        s.fill(pts);
        s
    }
    /// Every point again from `[point][xyz]` (as many as the groups hold), without allocating.
    pub fn fill(&mut self, pts: &[f64]) {
        let (n, len) = (self.n, self.len);
        if len == 0 {
            return; // no points (a system without ions)
        }
        for (g, out) in self.xyz.chunks_exact_mut(3 * len).enumerate() {
            for (i, p) in pts[3 * g * n..][..3 * n].chunks_exact(3).enumerate() {
                (0..3).for_each(|k| out[k * len + i] = p[k]);
            }
        }
    }
    /// Point i of group g moves to p.
    pub fn set(&mut self, g: usize, i: usize, p: [f64; 3]) {
        let o = 3 * g * self.len + i;
        (0..3).for_each(|k| self.xyz[o + k * self.len] = p[k]);
    }
    /// Group g: its x, y and z blocks.
    pub fn group(&self, g: usize) -> [&[f64]; 3] {
        let o = 3 * g * self.len;
        [0, 1, 2].map(|k| &self.xyz[o + k * self.len..][..self.len])
    }
}

/// The Jastrow functors in the arithmetic type A with what their vectorised sums read: the squared cutoffs (a little
/// beyond the functors' own, which are zero from there on, so the test's rounding drops no term), the cell and the
/// ions by coordinate. The pseudopotential's ratios sum values ([`JastrowSums::value`]), the solid's moves values,
/// gradients and Laplacians ([`JastrowSums::electron`]).
pub struct JastrowSums<A> {
    pub pair: [Radial<A>; 2],
    pub one: Radial<A>,
    cut2: [f64; 3],
    cell: [f64; 3],
    inv_cell: [f64; 3],
    ions: Soa,
}

impl<A: Real> JastrowSums<A> {
    pub fn new<S: Real>(s: &Setup<S>, j: &super::Jastrow) -> Self {
        let cut2 = [j.pair[0].cutoff, j.pair[1].cutoff, j.one.cutoff].map(|c| (c * (1.0 + 1e-9)).powi(2));
        JastrowSums {
            pair: [j.pair[0].convert(), j.pair[1].convert()],
            one: j.one.convert(),
            cut2,
            cell: s.cell,
            inv_cell: s.cell.map(super::inv_side),
            ions: Soa::new(&s.ions, 1, s.ion_count()),
        }
    }

    /// Functor f: 0 same spin, 1 opposite spin, 2 electron-ion.
    #[inline(always)]
    fn functor(&self, f: usize) -> &Radial<A> {
        if f == 2 {
            &self.one
        } else {
            &self.pair[f]
        }
    }

    /// Minimum image of a displacement along axis k (round-to-even and a multiply instead of a division: no branch).
    #[inline(always)]
    fn image(&self, d: f64, k: usize) -> f64 {
        d - self.cell[k] * (d * self.inv_cell[k]).round_ties_even()
    }

    /// The squared minimum-image distances from `at` of the block of points starting at `b` (the pass the compiler
    /// vectorises), and whether any is within `cut2`.
    #[inline(always)]
    fn block(&self, at: [f64; 3], [x, y, z]: [&[f64]; 3], b: usize, cut2: f64) -> ([f64; LANES], bool) {
        let mut r2 = [0.0; LANES];
        for l in 0..LANES {
            let (dx, dy, dz) = (self.image(at[0] - x[b + l], 0), self.image(at[1] - y[b + l], 1), self.image(at[2] - z[b + l], 2));
            r2[l] = dx * dx + dy * dy + dz * dz;
        }
        (r2, r2.iter().fold(false, |hit, &v| hit | (v < cut2)))
    }

    /// sum over the points k != skip of functor f at |at - p_k|: the distances block by block, the functor only where
    /// a point is within the cutoff.
    #[inline(always)]
    fn value(&self, f: usize, at: [f64; 3], pts: [&[f64]; 3], skip: usize) -> A {
        let (fun, cut2) = (self.functor(f), self.cut2[f]);
        let mut acc = A::zero();
        for b in (0..pts[0].len()).step_by(LANES) {
            let (r2, hit) = self.block(at, pts, b, cut2);
            if hit {
                for (l, &v) in r2.iter().enumerate() {
                    if v < cut2 && b + l != skip {
                        acc += fun.eval(A::of(v.sqrt())).0;
                    }
                }
            }
        }
        acc
    }

    /// Adds the value, gradient (with respect to `at`) and Laplacian of functor f summed over the points k != skip.
    #[inline(always)]
    fn vgl(&self, f: usize, at: [f64; 3], pts: [&[f64]; 3], skip: usize, acc: &mut (A, [A; 3], A)) {
        let (fun, cut2) = (self.functor(f), self.cut2[f]);
        for b in (0..pts[0].len()).step_by(LANES) {
            let (r2, hit) = self.block(at, pts, b, cut2);
            if !hit {
                continue;
            }
            for (l, &v) in r2.iter().enumerate() {
                if v < cut2 && b + l != skip {
                    // written out: an array's `.map` is compiled out of line, outside `dispatch!`'s instruction set
                    let d = [self.image(at[0] - pts[0][b + l], 0), self.image(at[1] - pts[1][b + l], 1), self.image(at[2] - pts[2][b + l], 2)];
                    let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                    let (u, du, d2u) = fun.eval(A::of(r));
                    let dr = du / A::of(r);
                    acc.0 += u;
                    (0..3).for_each(|k| acc.1[k] += dr * A::of(d[k]));
                    acc.2 += d2u + A::of(2.0) * dr;
                }
            }
        }
    }

    /// The terms of log J that contain electron `e` placed at `at`, the electrons at `electrons` (group 0 spin up,
    /// group 1 spin down, `n` each): value sum_{j != e} u(|at - r_j|) + sum_I chi(|at - R_I|), its gradient and
    /// Laplacian with respect to `at`. Distances in f64, functors and sums in A, in the order of the electrons, then
    /// the ions (the GPU's and the reference's order). Inline, for the caller's `dispatch!`.
    #[inline(always)]
    pub fn electron(&self, electrons: &Soa, n: usize, e: usize, at: [f64; 3]) -> (f64, [f64; 3], f64) {
        let spin = usize::from(e >= n);
        let mut acc = (A::zero(), [A::zero(); 3], A::zero());
        for g in 0..2 {
            let skip = if g == spin { e - spin * n } else { usize::MAX };
            self.vgl(usize::from(g != spin), at, electrons.group(g), skip, &mut acc);
        }
        self.vgl(2, at, self.ions.group(0), usize::MAX, &mut acc);
        (acc.0.f64(), acc.1.map(|x| x.f64()), acc.2.f64())
    }
}

/// The pseudopotential's Jastrow: the sums, and every walker's electrons by spin (group 2w: walker w's spin up,
/// 2w + 1 its spin down).
struct Functors<A> {
    sums: JastrowSums<A>,
    electrons: Soa,
    per_spin: usize,
}

impl<A: Real> Functors<A> {
    fn new<S: Real, T: Real>(s: &Setup<S>, w: &Walkers<T>, j: &super::Jastrow) -> Self {
        Functors { sums: JastrowSums::new(s, j), electrons: Soa::new(&w.pos, 2 * w.count, s.per_spin()), per_spin: s.per_spin() }
    }

    /// sum_{j != e} u(|at - r_j|) + sum_I chi(|at - R_I|), summed in A from f64 minimum-image distances.
    fn log(&self, walker: usize, e: usize, at: [f64; 3]) -> f64 {
        crate::dispatch!(self.log_here(walker, e, at))
    }

    #[inline(always)]
    fn log_here(&self, walker: usize, e: usize, at: [f64; 3]) -> f64 {
        let (n, j) = (self.per_spin, &self.sums);
        let mine = usize::from(e >= n);
        // same spin: electron e skipped; opposite spin: nothing skipped (the index is out of range)
        let same = j.value(0, at, self.electrons.group(2 * walker + mine), e - mine * n);
        let other = j.value(1, at, self.electrons.group(2 * walker + 1 - mine), usize::MAX);
        let ions = j.value(2, at, j.ions.group(0), usize::MAX);
        (same + other + ions).f64()
    }
}
