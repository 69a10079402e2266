//! The fast CPU engine: rayon over walkers (and over rows within a walker for the O(N^2) updates, so a few large
//! walkers still use every core), dot products with eight independent accumulators so they vectorise, faer for
//! the delayed update's matrix products and for LU inversion. Storage S, dot-product accumulation A.

use super::{singular_tolerance, DetError, Engine, MAX_DELAY};
use crate::Real;
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};
use rayon::prelude::*;

/// What the engine stores: S must be a faer scalar too (f32 or f64).
pub trait Scalar: Real + faer::traits::RealField {}
impl Scalar for f32 {}
impl Scalar for f64 {}

/// x . y accumulated in A (eight partial sums: vectorisable, and a shorter error chain than one running sum).
#[inline(always)]
pub fn dot<S: Real, A: Real>(x: &[S], y: &[S]) -> A {
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

/// One walker: its matrix, transposed inverse, proposals and delayed-update state.
struct Walker<S, A> {
    a: Vec<S>,
    t: Vec<S>,
    prop: Vec<S>,
    grad: Vec<S>,
    /// Pending delayed moves: row changes V, base-inverse rows U^T, B^-1 (k x k), V t[q] of the last ratio.
    v: Vec<S>,
    ut: Vec<S>,
    binv: Vec<S>,
    p: Vec<A>,
    count: usize,
    /// Column q of the current inverse (scratch of the delayed ratio).
    col: Vec<A>,
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
                v: vec![S::zero(); k * n],
                ut: vec![S::zero(); k * n],
                binv: vec![S::zero(); k * k],
                p: vec![A::zero(); k],
                count: 0,
                col: vec![A::zero(); n],
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
fn ratio_one<S: Real, A: Real>(wk: &mut Walker<S, A>, n: usize, k: usize, q: usize) {
    let u = &wk.prop[q * n..(q + 1) * n];
    let tq = &wk.t[q * n..(q + 1) * n];
    let m = wk.count;
    let r: A;
    let g: [A; 3];
    if m == 0 {
        r = dot(u, tq);
        g = [0, 1, 2].map(|d| dot::<S, A>(&wk.grad[d * n..(d + 1) * n], tq));
    } else {
        for j in 0..m {
            wk.p[j] = dot(&wk.v[j * n..(j + 1) * n], tq);
        }
        let z: Vec<A> = (0..m).map(|j| (0..m).map(|l| A::of(wk.binv[j * k + l].f64()) * wk.p[l]).sum()).collect();
        for (i, c) in wk.col.iter_mut().enumerate() {
            *c = A::of(tq[i].f64());
        }
        for (j, &zj) in z.iter().enumerate() {
            for (c, &x) in wk.col.iter_mut().zip(&wk.ut[j * n..(j + 1) * n]) {
                *c -= A::of(x.f64()) * zj;
            }
        }
        let dot_col = |x: &[S]| -> A { x.iter().zip(&wk.col).map(|(&a, &c)| A::of(a.f64()) * c).sum() };
        r = dot_col(u);
        g = [0, 1, 2].map(|d| dot_col(&wk.grad[d * n..(d + 1) * n]));
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

/// Append an accepted move to the delayed update: grow B^-1 by its Schur complement (O(m^2)).
fn delay_accept<S: Real, A: Real>(wk: &mut Walker<S, A>, n: usize, k: usize, q: usize) {
    let m = wk.count;
    let (u, aq, tq) = (&wk.prop[q * n..(q + 1) * n], &wk.a[q * n..(q + 1) * n], &wk.t[q * n..(q + 1) * n]);
    let v: Vec<S> = u.iter().zip(aq).map(|(&x, &y)| x - y).collect();
    let d: Vec<A> = (0..m).map(|j| dot(&v, &wk.ut[j * n..(j + 1) * n])).collect();
    let beta = A::one() + dot::<S, A>(&v, tq);
    let b = |i: usize, j: usize| A::of(wk.binv[i * k + j].f64());
    let x: Vec<A> = (0..m).map(|i| (0..m).map(|l| b(i, l) * wk.p[l]).sum()).collect();
    let y: Vec<A> = (0..m).map(|j| (0..m).map(|l| d[l] * b(l, j)).sum()).collect();
    let s = beta - d.iter().zip(&x).map(|(&a, &c)| a * c).sum::<A>();
    for i in 0..m {
        for (bij, &yj) in wk.binv[i * k..i * k + m].iter_mut().zip(&y) {
            *bij = S::of((A::of(bij.f64()) + x[i] * yj / s).f64());
        }
        wk.binv[i * k + m] = S::of((-x[i] / s).f64());
        wk.binv[m * k + i] = S::of((-y[i] / s).f64());
    }
    wk.binv[m * k + m] = S::of((A::one() / s).f64());
    wk.v[m * n..(m + 1) * n].copy_from_slice(&v);
    wk.ut[m * n..(m + 1) * n].copy_from_slice(&wk.t[q * n..(q + 1) * n]);
    let u = wk.prop[q * n..(q + 1) * n].to_vec();
    wk.a[q * n..(q + 1) * n].copy_from_slice(&u);
    wk.count = m + 1;
}

/// Apply the pending moves: W = V t^T, Y = B^-T U^T, t -= W^T Y (three faer products), then clear them.
fn delay_apply<S: Scalar, A: Real>(wk: &mut Walker<S, A>, n: usize, k: usize, par: Par) {
    let m = wk.count;
    if m == 0 {
        return;
    }
    let v = MatRef::from_row_major_slice(&wk.v[..m * n], m, n);
    let ut = MatRef::from_row_major_slice(&wk.ut[..m * n], m, n);
    let binv = MatRef::from_row_major_slice_with_stride(&wk.binv[..(m - 1) * k + m], m, m, k);
    let mut w = faer::Mat::<S>::zeros(m, n);
    let mut y = faer::Mat::<S>::zeros(m, n);
    matmul(w.as_mut(), Accum::Replace, v, MatRef::from_row_major_slice(&wk.t, n, n).transpose(), S::one(), par);
    matmul(y.as_mut(), Accum::Replace, binv.transpose(), ut, S::one(), par);
    matmul(MatMut::from_row_major_slice_mut(&mut wk.t, n, n), Accum::Add, w.transpose(), y.as_ref(), -S::one(), par);
    wk.v.iter_mut().chain(wk.ut.iter_mut()).chain(wk.binv.iter_mut()).for_each(|x| *x = S::zero());
    wk.count = 0;
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
            wk.v.iter_mut().chain(wk.ut.iter_mut()).chain(wk.binv.iter_mut()).for_each(|x| *x = S::zero());
            wk.count = 0;
        });
        self.flags = flags.to_vec();
        Ok(())
    }

    fn ratio(&mut self, q: usize) -> Result<(), DetError> {
        let (n, k) = (self.n, self.max_delay());
        self.walkers.par_iter_mut().for_each(|wk| ratio_one(wk, n, k, q));
        Ok(())
    }

    fn accept(&mut self, q: usize, step: usize) -> Result<(), DetError> {
        let (n, k, delay, nw) = (self.n, self.max_delay(), self.delay, self.walkers.len());
        let flags = &self.flags[step * nw..(step + 1) * nw];
        self.walkers.par_iter_mut().zip(flags).filter(|(_, &f)| f != 0).for_each(|(wk, _)| {
            if delay == 1 {
                rank1(wk, n, q)
            } else {
                delay_accept(wk, n, k, q)
            }
        });
        Ok(())
    }

    fn flush(&mut self, _pending: usize) -> Result<(), DetError> {
        let (n, k, par) = (self.n, self.max_delay(), self.par());
        self.walkers.par_iter_mut().for_each(|wk| delay_apply(wk, n, k, par));
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

impl<S, A> CpuDets<S, A> {
    fn max_delay(&self) -> usize {
        self.walkers[0].p.len()
    }
}
