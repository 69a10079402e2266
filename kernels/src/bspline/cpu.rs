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
            Output::V => crate::dispatch!(block::<S, A, 1>(table, r, b, w, p)),
            Output::Vgl => crate::dispatch!(block::<S, A, 5>(table, r, b, w, p)),
            Output::Vgh => crate::dispatch!(block::<S, A, 10>(table, r, b, w, p)),
        }
    });
}

/// Evaluate at one point `r` into `out` (`[component][stride]`) on the calling thread: what a caller that is itself
/// one task of a parallel loop (a driver's walker) uses, with no nested parallelism and no allocation.
pub fn evaluate_point<S: Real, A: Real>(table: &Table<S>, r: [f64; 3], output: Output, out: &mut [A]) {
    assert_eq!(out.len(), output.components() * table.stride, "bspline cpu: output length");
    let p = OutPtr(out.as_mut_ptr());
    for b in 0..table.stride / B {
        match output {
            Output::V => crate::dispatch!(block::<S, A, 1>(table, r, b, 0, p)),
            Output::Vgl => crate::dispatch!(block::<S, A, 5>(table, r, b, 0, p)),
            Output::Vgh => crate::dispatch!(block::<S, A, 10>(table, r, b, 0, p)),
        }
    }
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
    let mut rows = [[A::zero(); B]; 4];
    for i in 0..4 {
        for j in 0..4 {
            // The 4 rows along z of this (i, j), converted once to the arithmetic type.
            for (k, row) in rows.iter_mut().enumerate() {
                let start = table.row(idx[0][i], idx[1][j], idx[2][k]) + b * B;
                let src: &[S; B] = table.coefs[start..start + B].try_into().unwrap();
                row.iter_mut().zip(src).for_each(|(d, &s)| *d = A::of(s.f64()));
            }
            // z first (as the GPU kernel): reduce the 4 rows with the z weights of each derivative order the
            // outputs need, then spread over the NC outputs with the x-y weight products.
            let nz = if NC == 1 { 1 } else { 3 };
            let mut sz = [[A::zero(); B]; 3];
            for (q, s_q) in sz.iter_mut().enumerate().take(nz) {
                let z = wt[q][2].map(A::of);
                let [r0, r1, r2, r3] = &rows;
                for o in 0..B {
                    s_q[o] = z[0] * r0[o] + z[1] * r1[o] + z[2] * r2[o] + z[3] * r3[o];
                }
            }
            // (x order, y order, z order) of each output: V, gradient, then the Laplacian or the Hessian.
            let (x, y) = (wt.map(|o| o[0][i]), wt.map(|o| o[1][j]));
            let xy = |a: usize, b: usize| A::of(x[a] * y[b]);
            let terms: &[(A, usize)] = match NC {
                1 => &[(xy(0, 0), 0)],
                5 => &[(xy(0, 0), 0), (xy(1, 0), 0), (xy(0, 1), 0), (xy(0, 0), 1), (xy(2, 0) + xy(0, 2), 0)],
                _ => &[
                    (xy(0, 0), 0), (xy(1, 0), 0), (xy(0, 1), 0), (xy(0, 0), 1), (xy(2, 0), 0),
                    (xy(1, 1), 0), (xy(1, 0), 1), (xy(0, 2), 0), (xy(0, 1), 1), (xy(0, 0), 2),
                ],
            };
            for (acc_c, &(c, q)) in acc.iter_mut().zip(terms) {
                for o in 0..B {
                    acc_c[o] += c * sz[q][o];
                }
            }
            // the VGL Laplacian's z part: x y d2z
            if NC == 5 {
                let c = xy(0, 0);
                for o in 0..B {
                    acc[4][o] += c * sz[2][o];
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
