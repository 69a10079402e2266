//! The fast CPU path, all cores, paper 000's two phases: the job list (rayon over walkers, then concatenated), and
//! the ratios in batches of jobs (rayon over batches: the B-spline CPU kernel evaluates all orbitals at the batch's
//! points into a buffer that stays in cache, then one dot product per point with the electron's inverse row, times
//! the Jastrow ratio: its old sum once per job, the new sum over the other electrons and the ions per point).

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
    let jas = s.jastrow.as_ref().map(|j| Functors::<A> { pair: [j.pair[0].convert(), j.pair[1].convert()], one: j.one.convert() });
    let per_batch: Vec<(Vec<f64>, Vec<f64>)> = jobs
        .par_chunks(BATCH)
        .map(|batch| {
            let (mut pos, mut factor) = (Vec::with_capacity(3 * nq * BATCH), Vec::with_capacity(nq * BATCH));
            for job in batch {
                points(s, &nodes, &w.rot[9 * (job.walker * s.ion_count() + job.ion)..][..9], job, &mut pos, &mut factor);
            }
            let mut phi = vec![A::zero(); factor.len() * stride];
            spline::evaluate::<S, A>(&s.table, &pos, Output::V, &mut phi);
            let old: Vec<f64> = match &jas {
                Some(f) => batch.iter().map(|j| f.log(s, w, j.walker, j.electron, w.electron(s.electrons, j.walker, j.electron))).collect(),
                None => vec![0.0; batch.len()],
            };
            let mut ratio = Vec::with_capacity(factor.len());
            for (p, row) in phi.chunks_exact(stride).enumerate() {
                let job = &batch[p / nq];
                let inv = &w.inv[s.inv_row(job.walker, job.electron)..][..stride];
                let det = crate::dispatch!(dot::<S, A>(row, inv)).f64();
                let jastrow = match &jas {
                    Some(f) => (f.log(s, w, job.walker, job.electron, [pos[3 * p], pos[3 * p + 1], pos[3 * p + 2]]) - old[p / nq]).exp(),
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

/// The Jastrow functors in the arithmetic type.
struct Functors<A> {
    pair: [Radial<A>; 2],
    one: Radial<A>,
}

impl<A: Real> Functors<A> {
    /// sum_{j != e} u(|at - r_j|) + sum_I chi(|at - R_I|), summed in A from f64 minimum-image distances.
    fn log<S: Real, T: Real>(&self, s: &Setup<S>, w: &Walkers<T>, walker: usize, e: usize, at: [f64; 3]) -> f64 {
        let (ne, n) = (s.electrons, s.per_spin());
        let dist = |b: &[f64]| {
            let d = s.displacement(at, [b[0], b[1], b[2]]);
            A::of((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt())
        };
        let pos = &w.pos[3 * walker * ne..][..3 * ne];
        let mut acc = A::zero();
        // spin up 0..n, spin down n..ne: one functor per half
        for (range, f) in [(0..n, &self.pair[usize::from(e >= n)]), (n..ne, &self.pair[usize::from(e < n)])] {
            for o in range.filter(|&o| o != e) {
                acc += f.eval(dist(&pos[3 * o..][..3])).0;
            }
        }
        for b in s.ions.chunks_exact(3) {
            acc += self.one.eval(dist(b)).0;
        }
        acc.f64()
    }
}
