//! The f64 reference: every orbital, every one of the 64 stencil points, the basis function b(x) evaluated from its
//! piecewise definition (not from the weight polynomials the fast kernels use), one term at a time.

use super::{Grid, Output, Table};
use rayon::prelude::*;

/// Cubic B-spline b(x) and its first two derivatives, from the textbook piecewise definition.
pub fn bspline_1d(x: f64) -> (f64, f64, f64) {
    let a = x.abs();
    let sgn = x.signum();
    if a < 1.0 {
        (2.0 / 3.0 - a * a + 0.5 * a * a * a, sgn * (-2.0 * a + 1.5 * a * a), -2.0 + 3.0 * a)
    } else if a < 2.0 {
        let u = 2.0 - a;
        (u * u * u / 6.0, -sgn * 0.5 * u * u, u)
    } else {
        (0.0, 0.0, 0.0)
    }
}

/// Evaluate all orbitals at the points `pos` (`[point][xyz]`); result `[point][component][stride]`. Stencil point by
/// stencil point, the orbitals innermost (one pass over each table row, as the table lies in memory); each orbital's
/// terms are summed in the same order as one orbital at a time would. Points in parallel (rayon): a driver's
/// reference at thousands of electrons would otherwise take minutes.
pub fn evaluate(table: &Table<f64>, pos: &[f64], output: Output) -> Vec<f64> {
    let nc = output.components();
    let g: Grid = table.grid;
    let scale = table.basis.scale();
    let inv_h = [0, 1, 2].map(|d| g.n[d] as f64 / g.cell[d]);
    let points = pos.len() / 3;
    let mut out = vec![0.0; points * nc * table.stride];
    out.par_chunks_mut(nc * table.stride).enumerate().for_each(|(p, out)| {
        let mut acc = vec![[0.0f64; 10]; table.orbitals];
        // Grid coordinate of the point and the integer cell it falls in.
        let t: [f64; 3] = [0, 1, 2].map(|d| (pos[3 * p + d] / g.cell[d]).rem_euclid(1.0) * g.n[d] as f64);
        let base: [i64; 3] = [0, 1, 2].map(|d| t[d].floor() as i64);
        for di in -1..=2i64 {
            for dj in -1..=2i64 {
                for dk in -1..=2i64 {
                    let m = [base[0] + di, base[1] + dj, base[2] + dk];
                    let (bx, dbx, d2bx) = bspline_1d(t[0] - m[0] as f64);
                    let (by, dby, d2by) = bspline_1d(t[1] - m[1] as f64);
                    let (bz, dbz, d2bz) = bspline_1d(t[2] - m[2] as f64);
                    let w = [0, 1, 2].map(|d| m[d].rem_euclid(g.n[d] as i64) as usize);
                    let row = &table.coefs[table.row(w[0], w[1], w[2])..][..table.orbitals];
                    let (hx, hy, hz) = (inv_h[0], inv_h[1], inv_h[2]);
                    for (acc, &coef) in acc.iter_mut().zip(row) {
                        let c = coef * scale * scale * scale;
                        acc[0] += c * bx * by * bz;
                        acc[1] += c * dbx * by * bz * hx;
                        acc[2] += c * bx * dby * bz * hy;
                        acc[3] += c * bx * by * dbz * hz;
                        acc[4] += c * d2bx * by * bz * hx * hx;
                        acc[5] += c * dbx * dby * bz * hx * hy;
                        acc[6] += c * dbx * by * dbz * hx * hz;
                        acc[7] += c * bx * d2by * bz * hy * hy;
                        acc[8] += c * bx * dby * dbz * hy * hz;
                        acc[9] += c * bx * by * d2bz * hz * hz;
                    }
                }
            }
        }
        for (o, acc) in acc.iter().enumerate() {
            let at = |c: usize| c * table.stride + o;
            match output {
                Output::V => out[at(0)] = acc[0],
                Output::Vgl => {
                    out[at(0)..].iter_mut().step_by(table.stride).zip(&acc[..4]).for_each(|(o, a)| *o = *a);
                    out[at(4)] = acc[4] + acc[7] + acc[9];
                }
                Output::Vgh => {
                    out[at(0)..].iter_mut().step_by(table.stride).zip(acc).for_each(|(o, a)| *o = *a);
                }
            }
        }
    });
    out
}
