//! Dot products of the CPU engines: eight independent accumulators, so the loops vectorise and the rounding-error
//! chain is an eighth as long as one running sum's. Their own module, below both `cpu` (the engine) and `delayed`
//! (the rank-k update the engine holds), which both use them.

use crate::Real;

/// x . y accumulated in A (eight partial sums: vectorisable, and a shorter error chain than one running sum).
#[inline(always)]
pub fn dot<S: Real, A: Real>(x: &[S], y: &[S]) -> A {
    dot_wide::<S, S, A>(x, y)
}

/// x . y with x stored in S and y in P (a column of the current inverse, a pending row), accumulated in A as [`dot`].
#[inline(always)]
pub fn dot_wide<S: Real, P: Real, A: Real>(x: &[S], y: &[P]) -> A {
    let mut acc = [A::zero(); 8];
    let (xc, yc) = (x.chunks_exact(8), y.chunks_exact(8));
    let tail: A = xc.remainder().iter().zip(yc.remainder()).map(|(&a, &b)| A::of(a.f64()) * A::of(b.f64())).sum();
    for (a, b) in xc.zip(yc) {
        for l in 0..8 {
            acc[l] += A::of(a[l].f64()) * A::of(b[l].f64());
        }
    }
    acc.iter().copied().sum::<A>() + tail
}
