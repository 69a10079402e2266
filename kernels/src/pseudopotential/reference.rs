//! The f64 reference: plain loops over walkers, electrons and ions in that order, the orbitals at each quadrature
//! point from the B-spline reference, the ratio as an explicit sum over orbitals, the channels and Legendre
//! polynomials evaluated per point, and the Jastrow ratio from both sums of the jastrow kernel's reference
//! functor (every B-spline coefficient summed) at the old and the new position.

use super::quadrature::{legendre, rotate};
use super::{Channels, Energies, Rule, Setup, Walkers};
use crate::bspline::{reference as spline, Output};
use crate::jastrow::reference::radial;

/// log J with electron `e` of `walker` at `at`, less the terms without electron e: sum_{j != e} u(|at - r_j|) +
/// sum_I chi(|at - R_I|).
pub fn log_jastrow_of(s: &Setup<f64>, w: &Walkers<f64>, walker: usize, e: usize, at: [f64; 3]) -> f64 {
    let Some(j) = &s.jastrow else { return 0.0 };
    let dist = |d: [f64; 3]| (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let mut log = 0.0;
    for other in (0..s.electrons).filter(|&o| o != e) {
        log += radial(j.pair_of(e, other, s.per_spin()), dist(s.displacement(at, w.electron(s.electrons, walker, other)))).0;
    }
    for ion in 0..s.ion_count() {
        log += radial(&j.one, dist(s.displacement(at, s.ion(ion)))).0;
    }
    log
}

/// sum_l (2l+1) dV_l(r) sum_q w_q P_l(u_q . d/r) ratio(R_I + r u_q), for the electron at displacement `d` from
/// the ion at `ion`, with the rule turned by `rot`. Returns the value and the ratios at the points, in order.
pub fn project(ch: &Channels, rule: Rule, rot: &[f64], ion: [f64; 3], d: [f64; 3], mut ratio: impl FnMut([f64; 3]) -> f64) -> (f64, Vec<f64>) {
    let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let (pts, wts) = rule.nodes();
    let mut total = 0.0;
    let mut ratios = vec![];
    for (u, w) in pts.iter().zip(&wts) {
        let u = rotate(rot, *u);
        let point = [0, 1, 2].map(|k| ion[k] + r * u[k]);
        let cos = (u[0] * d[0] + u[1] * d[1] + u[2] * d[2]) / r;
        let p = legendre(cos);
        let rho = ratio(point);
        for (l, pl) in p.iter().enumerate().take(ch.l.len()) {
            total += (2 * l + 1) as f64 * ch.value(l, r) * w * pl * rho;
        }
        ratios.push(rho);
    }
    (total, ratios)
}

/// The nonlocal energy of every walker and all ratios.
pub fn energies(s: &Setup<f64>, w: &Walkers<f64>) -> Energies {
    let n = s.per_spin();
    let mut out = Energies::default();
    for walker in 0..w.count {
        let mut e_w = 0.0;
        for e in 0..s.electrons {
            let re = w.electron(s.electrons, walker, e);
            let inv = &w.inv[s.inv_row(walker, e)..][..n];
            let log_old = log_jastrow_of(s, w, walker, e, re);
            for ion in 0..s.ion_count() {
                let d = s.displacement(re, s.ion(ion));
                if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt() >= s.channels.rc {
                    continue;
                }
                let rot = &w.rot[9 * (walker * s.ion_count() + ion)..][..9];
                let (v, ratios) = project(&s.channels, s.rule, rot, s.ion(ion), d, |p| {
                    let phi = spline::evaluate(&s.table, &p, Output::V);
                    let det: f64 = (0..n).map(|k| phi[k] * inv[k]).sum();
                    det * (log_jastrow_of(s, w, walker, e, p) - log_old).exp()
                });
                e_w += v;
                out.ratios.extend(ratios);
                out.jobs += 1;
            }
        }
        out.energy.push(e_w);
    }
    out
}
