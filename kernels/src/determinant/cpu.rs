//! The fast CPU engine: rayon over walkers (and over rows within a walker for the O(N^2) updates, so a few large
//! walkers still use every core), dot products with eight independent accumulators so they vectorise, faer for
//! the delayed update's matrix products and for LU inversion. Storage S, dot-product accumulation A.

use super::delayed::Delayed;
use super::dot::{dot, dot_wide};
use super::{singular_tolerance, DetError, Engine, MAX_DELAY};
use crate::{Real, Scalar};
use faer::Par;
use rayon::prelude::*;

/// One walker: its matrix, transposed inverse, proposals and delayed-update state.
struct Walker<S, A> {
    a: Vec<S>,
    t: Vec<S>,
    prop: Vec<S>,
    grad: Vec<S>,
    /// The pending delayed moves.
    delayed: Delayed<S, S, A>,
    /// Scratch: the row change of an accept.
    change: Vec<S>,
    ratio: A,
    grads: [A; 3],
    logdet: f64,
    sign: f64,
}

/// The CPU engine for all walkers.
pub struct CpuDets<S, A> {
    n: usize,
    delay: usize,
    walkers: Vec<Walker<S, A>>,
    flags: Vec<i32>,
}

fn conv<S: Real>(x: &[f64]) -> Vec<S> {
    x.iter().map(|&v| S::of(v)).collect()
}

impl<S: Scalar, A: Scalar> CpuDets<S, A> {
    /// Walkers from their proposals `[walker][row][col]` and gradient rows `[walker][xyz][n]`; `load` sets A and
    /// the inverse. Delays up to `max_delay` can be used later. Inversion runs in A (f64 for double and mixed).
    pub fn new(n: usize, prop: &[f64], grad: &[f64], max_delay: usize) -> CpuDets<S, A> {
        assert!((1..=MAX_DELAY).contains(&max_delay), "determinant cpu: delay out of range");
        let walkers = prop.len() / (n * n);
        let k = max_delay;
        let walkers = (0..walkers)
            .map(|w| Walker {
                a: vec![S::zero(); n * n],
                t: vec![S::zero(); n * n],
                prop: conv(&prop[w * n * n..(w + 1) * n * n]),
                grad: conv(&grad[w * 3 * n..(w + 1) * 3 * n]),
                delayed: Delayed::new(n, n, k),
                change: vec![S::zero(); n],
                ratio: A::zero(),
                grads: [A::zero(); 3],
                logdet: 0.0,
                sign: 0.0,
            })
            .collect();
        CpuDets { n, delay: 1, walkers, flags: vec![] }
    }

    fn par(&self) -> Par {
        if self.walkers.len() >= rayon::current_num_threads() {
            Par::Seq
        } else {
            Par::rayon(0)
        }
    }
}

/// Ratio against the current inverse: column q of Ainv_m = t[q] - U B^-1 (V t[q]) when moves are pending.
fn ratio_one<S: Scalar, A: Real>(wk: &mut Walker<S, A>, n: usize, q: usize) {
    let u = &wk.prop[q * n..(q + 1) * n];
    let tq = &wk.t[q * n..(q + 1) * n];
    let r: A;
    let g: [A; 3];
    if wk.delayed.pending() == 0 {
        r = dot(u, tq);
        g = [0, 1, 2].map(|d| dot::<S, A>(&wk.grad[d * n..(d + 1) * n], tq));
    } else {
        let col = wk.delayed.column(tq, q);
        r = dot_wide::<S, A, A>(u, col);
        g = [0, 1, 2].map(|d| dot_wide::<S, A, A>(&wk.grad[d * n..(d + 1) * n], col));
    }
    wk.ratio = r;
    wk.grads = g.map(|x| x / r);
}

/// Sherman-Morrison on the transposed inverse: t[j] -= ((t[j] . u - delta_jq) / ratio) t[q].
fn rank1<S: Real, A: Real>(wk: &mut Walker<S, A>, n: usize, q: usize) {
    let u = &wk.prop[q * n..(q + 1) * n];
    let c: Vec<S> = wk.t[q * n..(q + 1) * n].to_vec();
    let r: A = dot(u, &c);
    wk.t.par_chunks_mut(n).with_min_len(16).enumerate().for_each(|(j, row)| rank1_row(row, j, u, &c, q, r));
    wk.a[q * n..(q + 1) * n].copy_from_slice(u);
}

/// Row j of [`rank1`]'s update (c = the old row q of t, r = u . c): the one formula both the batched engine and a
/// single small determinant (the QMC driver's, one walker per thread, no nested parallelism) use.
#[inline(always)]
pub fn rank1_row<S: Real, A: Real>(row: &mut [S], j: usize, u: &[S], c: &[S], q: usize, r: A) {
    let mut coef = dot::<S, A>(row, u);
    if j == q {
        coef -= A::one();
    }
    let coef = S::of((coef / r).f64());
    for (x, &ci) in row.iter_mut().zip(c) {
        *x -= coef * ci;
    }
}

/// Append an accepted move to the delayed update: the row change u - a[q] into the next slot (B^-1 grows by its
/// Schur complement), and A's row q becomes u.
fn delay_accept<S: Scalar, A: Real>(wk: &mut Walker<S, A>, n: usize, q: usize) {
    let (u, aq) = (&wk.prop[q * n..(q + 1) * n], &wk.a[q * n..(q + 1) * n]);
    wk.change.iter_mut().zip(u.iter().zip(aq)).for_each(|(v, (&x, &y))| *v = x - y);
    let slot = wk.delayed.pending();
    wk.delayed.grow(slot, &wk.change, &wk.t[q * n..(q + 1) * n], None);
    wk.a[q * n..(q + 1) * n].copy_from_slice(&wk.prop[q * n..(q + 1) * n]);
}

/// Invert A in precision R (LU with partial pivoting, faer) into t = (A^T)^-1 = Ainv^T; log|det| and sign.
pub fn invert_in<S: Real, R: Scalar>(a: &[S], t: &mut [S], n: usize, par: Par) -> Result<(f64, f64), usize> {
    use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
    use faer::linalg::lu::partial_pivoting::{factor, inverse};
    // Column j of A^T is row j of A: contiguous reads into faer's column-major storage.
    let mut m = faer::Mat::<R>::from_fn(n, n, |i, j| R::of(a[j * n + i].f64()));
    let max_abs = a.iter().fold(0.0f64, |x, y| x.max(y.f64().abs()));
    let (mut perm, mut perm_inv) = (vec![0usize; n], vec![0usize; n]);
    let mut buf = MemBuffer::new(StackReq::any_of(&[
        factor::lu_in_place_scratch::<usize, R>(n, n, par, Default::default()),
        inverse::inverse_scratch::<usize, R>(n, par),
    ]));
    let stack = MemStack::new(&mut buf);
    let (info, p) = factor::lu_in_place(m.as_mut(), &mut perm, &mut perm_inv, par, stack, Default::default());
    let tol = singular_tolerance(n, max_abs, R::EPS);
    let mut logdet = 0.0;
    let mut sign = if info.transposition_count % 2 == 0 { 1.0 } else { -1.0 };
    for k in 0..n {
        let d = m[(k, k)].f64();
        if d.abs() <= tol || !d.is_finite() {
            return Err(k);
        }
        logdet += d.abs().ln();
        sign *= d.signum();
    }
    let mut out = faer::Mat::<R>::zeros(n, n);
    inverse::inverse(out.as_mut(), m.as_ref(), m.as_ref(), p, par, stack);
    for (i, row) in t.chunks_mut(n).enumerate() {
        for (j, x) in row.iter_mut().enumerate() {
            *x = S::of(out[(i, j)].f64());
        }
    }
    Ok((logdet, sign))
}

impl<S: Scalar, A: Scalar> Engine for CpuDets<S, A> {
    fn shape(&self) -> (usize, usize) {
        (self.walkers.len(), self.n)
    }

    fn set_delay(&mut self, k: usize) {
        assert!(k >= 1 && k <= self.max_delay(), "determinant cpu: delay {k} beyond the allocation");
        self.delay = k;
    }

    fn load(&mut self, a: &[f64], t: &[f64], flags: &[i32]) -> Result<(), DetError> {
        let nn = self.n * self.n;
        self.walkers.par_iter_mut().enumerate().for_each(|(w, wk)| {
            wk.a = conv(&a[w * nn..(w + 1) * nn]);
            wk.t = conv(&t[w * nn..(w + 1) * nn]);
            wk.delayed.clear();
        });
        self.flags = flags.to_vec();
        Ok(())
    }

    fn ratio(&mut self, q: usize) -> Result<(), DetError> {
        let n = self.n;
        self.walkers.par_iter_mut().for_each(|wk| ratio_one(wk, n, q));
        Ok(())
    }

    fn accept(&mut self, q: usize, step: usize) -> Result<(), DetError> {
        let (n, delay, nw) = (self.n, self.delay, self.walkers.len());
        let flags = &self.flags[step * nw..(step + 1) * nw];
        self.walkers.par_iter_mut().zip(flags).filter(|(_, &f)| f != 0).for_each(|(wk, _)| {
            if delay == 1 {
                rank1(wk, n, q)
            } else {
                delay_accept(wk, n, q)
            }
        });
        Ok(())
    }

    fn flush(&mut self, _pending: usize) -> Result<(), DetError> {
        let par = self.par();
        self.walkers.par_iter_mut().for_each(|wk| wk.delayed.apply(&mut wk.t, par));
        Ok(())
    }

    fn invert(&mut self) -> Result<(), DetError> {
        let (n, par) = (self.n, self.par());
        let res: Vec<Result<(f64, f64), usize>> = self.walkers.par_iter_mut().map(|wk| invert_in::<S, A>(&wk.a, &mut wk.t, n, par)).collect();
        for (w, (r, wk)) in res.into_iter().zip(self.walkers.iter_mut()).enumerate() {
            (wk.logdet, wk.sign) = r.map_err(|column| DetError::Singular { walker: w, column })?;
        }
        Ok(())
    }

    fn inverse(&mut self) -> Result<Vec<f64>, DetError> {
        Ok(self.walkers.iter().flat_map(|wk| wk.t.iter().map(|x| x.f64())).collect())
    }

    fn ratios(&mut self) -> Result<(Vec<f64>, Vec<f64>), DetError> {
        let r = self.walkers.iter().map(|wk| wk.ratio.f64()).collect();
        let g = self.walkers.iter().flat_map(|wk| wk.grads.map(|x| x.f64())).collect();
        Ok((r, g))
    }

    fn logdets(&mut self) -> Result<(Vec<f64>, Vec<f64>), DetError> {
        Ok((self.walkers.iter().map(|wk| wk.logdet).collect(), self.walkers.iter().map(|wk| wk.sign).collect()))
    }
}

impl<S: Scalar, A: Real> CpuDets<S, A> {
    fn max_delay(&self) -> usize {
        self.walkers[0].delayed.capacity()
    }
}
