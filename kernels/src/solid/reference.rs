//! The f64 reference: the local energy of one configuration from scratch, with each kernel's reference code and
//! nothing kept from earlier moves: orbitals by the B-spline or the plane-wave reference, the Slater matrices inverted by the
//! determinant reference (natural layout), the Jastrow by the jastrow reference functor (every coefficient summed),
//! the Ewald reference (its own image box and full G sphere) or in open boundaries the direct sum over ordered pairs, and the nonlocal energy by the pseudopotential
//! reference with those inverses (none without ions). The kinetic energy is written in its expanded form
//! -1/2 sum_i (lap D/D + 2 grad ln D . grad J + |grad J|^2 + lap J), not the fast code's.

use super::{Coulomb, Orbitals, Parts, Solid};
use crate::bspline::{reference as spline, Output};
use crate::determinant::reference::inverse;
use crate::ewald::reference::Reference;
use crate::jastrow::reference::radial;
use crate::atomic;
use crate::planewave::reference as planewave;
use crate::pseudopotential::{reference as pp, Walkers};

/// Local energy by parts of the configuration `pos` (`[electron][xyz]`) with quadrature rotations `rot`
/// (`[ion][9]`), the transposed inverse rows `[electron][stride]`, and the larger 1-norm condition number
/// ||A|| ||A^-1|| of the two Slater matrices; Err(electron) if a Slater matrix is singular.
pub fn energy(sys: &Solid, pos: &[f64], rot: &[f64]) -> Result<(Parts, Vec<f64>, f64), usize> {
    let s = &sys.setup;
    let (ne, n, st) = (s.electrons, s.per_spin(), s.table.stride);
    let vgl = match &sys.orbitals {
        Orbitals::Table => spline::evaluate(&s.table, pos, Output::Vgl),
        Orbitals::PlaneWaves(w) => planewave::evaluate(w, pos, st),
        Orbitals::Atomic(o) => atomic::reference::evaluate(o, pos, st),
    };
    let at = |e: usize, c: usize, j: usize| vgl[(e * 5 + c) * st + j];
    let mut rows = vec![0.0; ne * st];
    let (mut kinetic, mut cond) = (0.0, 0.0f64);
    let j = sys.jastrow();
    for spin in 0..2 {
        let a: Vec<f64> = (0..n * n).map(|x| at(spin * n + x / n, 0, x % n)).collect();
        let (ainv, _, _) = inverse(&a, n).map_err(|_| spin * n)?;
        cond = cond.max(1.0 / crate::linalg::rcond(&a, &ainv, n));
        for k in 0..n {
            let e = spin * n + k;
            // grad D / D and lap D / D: column k of the inverse against the derivative rows
            let col = |c: usize| (0..n).map(|m| at(e, c, m) * ainv[m * n + k]).sum::<f64>();
            let gd = [col(1), col(2), col(3)];
            let ld = col(4);
            for m in 0..n {
                rows[e * st + m] = ainv[m * n + k];
            }
            let (mut gj, mut lj) = ([0.0; 3], 0.0);
            let mut add = |f: &crate::jastrow::Radial<f64>, b: [f64; 3]| {
                let d = s.displacement([pos[3 * e], pos[3 * e + 1], pos[3 * e + 2]], b);
                let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let (_, du, d2u) = radial(f, r);
                for x in 0..3 {
                    gj[x] += du * d[x] / r;
                }
                lj += d2u + 2.0 * du / r;
            };
            for o in (0..ne).filter(|&o| o != e) {
                add(j.pair_of(e, o, n), [pos[3 * o], pos[3 * o + 1], pos[3 * o + 2]]);
            }
            for i in 0..s.ion_count() {
                add(&j.one, s.ion(i));
            }
            let dot = |x: [f64; 3], y: [f64; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
            kinetic += -0.5 * (ld + 2.0 * dot(gd, gj) + dot(gj, gj) + lj);
        }
    }
    let r: Vec<[f64; 3]> = pos.chunks_exact(3).map(|x| [x[0], x[1], x[2]]).collect();
    let coulomb = match &sys.coulomb {
        Coulomb::Ewald(e) => Reference::new(&e.cell, e.params).energy(&r, &e.ions).total(),
        // open boundaries: every ordered pair once, halved (the fast code sums i < j)
        Coulomb::Open(o) => {
            let dist = |a: [f64; 3], b: [f64; 3]| ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt();
            let ee: f64 = r.iter().enumerate().flat_map(|(i, &a)| r.iter().enumerate().filter(move |(j, _)| *j != i).map(move |(_, &b)| 0.5 / dist(a, b))).sum();
            let en: f64 = r.iter().flat_map(|&a| o.nuclei.iter().map(move |&(z, c)| -z / dist(a, c))).sum();
            let nn: f64 = o.nuclei.iter().flat_map(|&(za, a)| o.nuclei.iter().map(move |&(zb, b)| if a == b { 0.0 } else { 0.5 * za * zb / dist(a, b) })).sum();
            ee + en + nn
        }
    };
    let w = Walkers { count: 1, pos: pos.to_vec(), inv: rows.clone(), rot: rot.to_vec() };
    let nonlocal = if sys.has_ions() { pp::energies(s, &w).energy[0] } else { 0.0 };
    Ok((Parts { kinetic, coulomb, nonlocal }, rows, cond))
}
