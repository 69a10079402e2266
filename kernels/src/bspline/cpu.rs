//! The fast CPU kernel: all cores (rayon over walkers x blocks of 64 orbitals), orbital index innermost so each of
//! the 64 stencil rows is streamed once and the component updates vectorise (QMCPACK's SoA `MultiBspline`).

use super::{weights, Output, Table, ROW_ALIGN};
use crate::Real;
use rayon::prelude::*;

const B: usize = ROW_ALIGN;

/// Raw output pointer shared by tasks that write disjoint index ranges.
#[derive(Clone, Copy)]
struct OutPtr<A>(*mut A);
// SAFETY: each task writes only its own (walker, orbital block) entries; no two tasks touch the same element.
unsafe impl<A> Send for OutPtr<A> {}
unsafe impl<A> Sync for OutPtr<A> {}

/// Evaluate at `pos` (`[walker][xyz]`) into `out` (`[walker][component][stride]`). Storage S, arithmetic A.
pub fn evaluate<S: Real, A: Real>(table: &Table<S>, pos: &[f64], output: Output, out: &mut [A]) {
    let walkers = pos.len() / 3;
    let nc = output.components();
    assert_eq!(out.len(), walkers * nc * table.stride, "bspline cpu: output length");
    let blocks = table.stride / B;
    let ptr = OutPtr(out.as_mut_ptr());
    (0..walkers * blocks).into_par_iter().for_each(|task| {
        let (w, b) = (task / blocks, task % blocks);
        let r = [pos[3 * w], pos[3 * w + 1], pos[3 * w + 2]];
        let p = ptr;
        match output {
            Output::V => block::<S, A, 1>(table, r, b, w, p),
            Output::Vgl => block::<S, A, 5>(table, r, b, w, p),
            Output::Vgh => block::<S, A, 10>(table, r, b, w, p),
        }
    });
}

/// One walker, one block of B orbitals, NC output components.
#[inline(always)]
fn block<S: Real, A: Real, const NC: usize>(table: &Table<S>, r: [f64; 3], b: usize, w: usize, out: OutPtr<A>) {
    let g = &table.grid;
    let s = table.basis.scale();
    let mut idx = [[0usize; 4]; 3];
    let mut wt = [[[0.0f64; 4]; 3]; 3]; // [derivative order][dim][point]
    for d in 0..3 {
        let (i, t) = g.locate(r[d], d);
        let inv_h = g.n[d] as f64 / g.cell[d];
        let (a, da, d2a) = weights(t);
        for p in 0..4 {
            idx[d][p] = (i + g.n[d] + p - 1) % g.n[d];
            wt[0][d][p] = a[p] * s;
            wt[1][d][p] = da[p] * s * inv_h;
            wt[2][d][p] = d2a[p] * s * inv_h * inv_h;
        }
    }
    let mut acc = [[A::zero(); B]; NC];
    for i in 0..4 {
        for j in 0..4 {
            for k in 0..4 {
                let (x, y, z) = (wt.map(|o| o[0][i]), wt.map(|o| o[1][j]), wt.map(|o| o[2][k]));
                let mut c = [0.0f64; NC];
                c[0] = x[0] * y[0] * z[0];
                if NC >= 5 {
                    c[1] = x[1] * y[0] * z[0];
                    c[2] = x[0] * y[1] * z[0];
                    c[3] = x[0] * y[0] * z[1];
                }
                if NC == 5 {
                    c[4] = x[2] * y[0] * z[0] + x[0] * y[2] * z[0] + x[0] * y[0] * z[2];
                } else if NC == 10 {
                    c[4] = x[2] * y[0] * z[0];
                    c[5] = x[1] * y[1] * z[0];
                    c[6] = x[1] * y[0] * z[1];
                    c[7] = x[0] * y[2] * z[0];
                    c[8] = x[0] * y[1] * z[1];
                    c[9] = x[0] * y[0] * z[2];
                }
                let start = table.row(idx[0][i], idx[1][j], idx[2][k]) + b * B;
                let row: &[S; B] = table.coefs[start..start + B].try_into().unwrap();
                for (acc_c, &cw) in acc.iter_mut().zip(&c) {
                    let cw = A::of(cw);
                    for (a, &v) in acc_c.iter_mut().zip(row) {
                        *a += cw * A::of(v.f64());
                    }
                }
            }
        }
    }
    for (comp, acc_c) in acc.iter().enumerate() {
        let at = (w * NC + comp) * table.stride + b * B;
        // SAFETY: `at..at + B` lies inside this walker's component row, written by this task alone, and inside `out`
        // (its length was checked against walkers * NC * stride).
        unsafe { std::ptr::copy_nonoverlapping(acc_c.as_ptr(), out.0.add(at), B) };
    }
}
