//! The f64 reference, written apart from the fast code: the B-spline functor summed over every coefficient with
//! the piecewise b(x), CASINO's u term by the product rule term by term, Padé by the quotient rule on explicit
//! powers, the p term with one cos/sin per G vector of the raw (not minimum-image) displacement, and every
//! electron's sums over all other electrons (no pair symmetry, no incremental updates).

use super::{Form, Jastrow, Radial, Term, COMPONENTS};
use crate::bspline::reference::bspline_1d;

/// u, u', u'' of a radial functor.
pub fn radial(f: &Radial<f64>, r: f64) -> (f64, f64, f64) {
    let mut out = (0.0, 0.0, 0.0);
    match f.form {
        Form::BSpline => {
            if r < f.cutoff {
                // basis function k is centred on knot (k - 1) h
                for (k, c) in f.coefs.iter().enumerate() {
                    let (b, db, d2b) = bspline_1d(r * f.inv_h - (k as f64 - 1.0));
                    out.0 += c * b;
                    out.1 += c * db * f.inv_h;
                    out.2 += c * d2b * f.inv_h * f.inv_h;
                }
            }
        }
        Form::Casino => {
            if r < f.cutoff {
                let c = f.power as i32;
                let t = r - f.cutoff;
                for (l, a) in f.coefs.iter().enumerate() {
                    let l = l as i32;
                    let rl = |m: i32| if m < 0 { 0.0 } else { r.powi(m) };
                    let tc = |m: i32| if m < 0 { 0.0 } else { t.powi(m) };
                    let (lf, cf) = (l as f64, c as f64);
                    out.0 += a * rl(l) * tc(c);
                    out.1 += a * (lf * rl(l - 1) * tc(c) + cf * rl(l) * tc(c - 1));
                    out.2 += a * (lf * (lf - 1.0) * rl(l - 2) * tc(c) + 2.0 * lf * cf * rl(l - 1) * tc(c - 1) + cf * (cf - 1.0) * rl(l) * tc(c - 2));
                }
            }
        }
        Form::Pade => {
            let (a, b) = f.coefs.split_at(f.power);
            // sum_k c_k r^k for k = 1.. and its derivatives
            let poly = |c: &[f64]| {
                let mut s = (0.0, 0.0, 0.0);
                for (i, ck) in c.iter().enumerate() {
                    let k = (i + 1) as f64;
                    s.0 += ck * r.powi(i as i32 + 1);
                    s.1 += ck * k * r.powi(i as i32);
                    if i >= 1 {
                        s.2 += ck * k * (k - 1.0) * r.powi(i as i32 - 1);
                    }
                }
                s
            };
            let (na, na1, na2) = poly(a);
            let (nb, nb1, nb2) = poly(b);
            let den = 1.0 + nb;
            let q1 = (na1 * den - na * nb1) / (den * den);
            let q2 = (na2 * den - na * nb2) / (den * den) - 2.0 * nb1 * (na1 * den - na * nb1) / (den * den * den);
            out = (na / den, q1, q2);
        }
    }
    out
}

/// Minimum-image displacement a - b.
fn displacement(j: &Jastrow<f64>, a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    let l = j.cell.side;
    [0, 1, 2].map(|d| {
        let x = a[d] - b[d];
        if j.cell.periodic {
            x - l * (x / l).round()
        } else {
            x
        }
    })
}

/// Value, gradient and Laplacian of a radial function of |d| with respect to d.
fn radial_vgl(f: &Radial<f64>, d: [f64; 3]) -> (f64, [f64; 3], f64) {
    let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let (u, du, d2u) = radial(f, r);
    (u, d.map(|x| du * x / r), d2u + 2.0 * du / r)
}

/// The two-body function of the displacement d = r_i - r_j of electrons i and j: value, gradient, Laplacian.
pub fn pair(j: &Jastrow<f64>, same_spin: bool, ri: [f64; 3], rj: [f64; 3]) -> (f64, [f64; 3], f64) {
    if j.term == Term::P {
        // periodic by construction: the raw displacement, no minimum image
        let d = [0, 1, 2].map(|k| ri[k] - rj[k]);
        let (mut v, mut g, mut l) = (0.0, [0.0; 3], 0.0);
        for (n, a) in j.p.n.iter().zip(&j.p.a) {
            let gv = n.map(|c| c as f64 * j.p.b);
            let arg = gv[0] * d[0] + gv[1] * d[1] + gv[2] * d[2];
            v += a * arg.cos();
            for k in 0..3 {
                g[k] -= a * gv[k] * arg.sin();
            }
            l -= a * (gv[0] * gv[0] + gv[1] * gv[1] + gv[2] * gv[2]) * arg.cos();
        }
        return (v, g, l);
    }
    radial_vgl(&j.pair[if same_spin { 0 } else { 1 }], displacement(j, ri, rj))
}

/// Position of electron i of one walker's positions `[xyz][electron]`.
pub fn position(pos: &[f64], n: usize, i: usize) -> [f64; 3] {
    [pos[i], pos[n + i], pos[2 * n + i]]
}

/// The stored quantities of electron i (U2, U1, gradient, Laplacian) from scratch.
pub fn electron(j: &Jastrow<f64>, pos: &[f64], i: usize) -> [f64; COMPONENTS] {
    let n = j.electrons;
    let ri = position(pos, n, i);
    let mut out = [0.0; COMPONENTS];
    for k in (0..n).filter(|&k| k != i) {
        let (v, g, l) = pair(j, (i < j.up) == (k < j.up), ri, position(pos, n, k));
        out[0] += v;
        out[2..5].iter_mut().zip(g).for_each(|(o, x)| *o += x);
        out[5] += l;
    }
    let ions = j.ion_count();
    for ion in 0..ions {
        let r_ion = position(&j.ions, ions, ion);
        let (v, g, l) = radial_vgl(&j.one, displacement(j, ri, r_ion));
        out[1] += v;
        out[2..5].iter_mut().zip(g).for_each(|(o, x)| *o += x);
        out[5] += l;
    }
    out
}

/// log J of one walker.
pub fn log_value(j: &Jastrow<f64>, pos: &[f64]) -> f64 {
    (0..j.electrons).map(|i| {
        let e = electron(j, pos, i);
        0.5 * e[0] + e[1]
    }).sum()
}

/// Stored quantities of the electrons `which` of every walker: `[walker][component][which]`.
pub fn electrons(j: &Jastrow<f64>, pos: &[f64], walkers: usize, which: &[usize]) -> Vec<f64> {
    let per = 3 * j.electrons;
    let mut out = vec![0.0; walkers * COMPONENTS * which.len()];
    for w in 0..walkers {
        for (s, &i) in which.iter().enumerate() {
            let e = electron(j, &pos[w * per..(w + 1) * per], i);
            for c in 0..COMPONENTS {
                out[(w * COMPONENTS + c) * which.len() + s] = e[c];
            }
        }
    }
    out
}

/// Log ratio and new gradient (`[move][walker][4]`) of each proposal of `m`, every one from the given positions.
pub fn ratios(j: &Jastrow<f64>, pos: &[f64], walkers: usize, m: &super::Moves) -> Vec<f64> {
    let n = j.electrons;
    let mut out = Vec::with_capacity(m.electrons.len() * walkers * 4);
    for (mi, &k) in m.electrons.iter().enumerate() {
        for w in 0..walkers {
            let mut p = pos[w * 3 * n..(w + 1) * 3 * n].to_vec();
            let old = electron(j, &p, k);
            for d in 0..3 {
                p[d * n + k] = m.pos[(mi * walkers + w) * 3 + d];
            }
            let new = electron(j, &p, k);
            out.push(new[0] + new[1] - old[0] - old[1]);
            out.extend_from_slice(&new[2..5]);
        }
    }
    out
}
