//! The fast CPU kernels: all cores (rayon over walkers), the i<j pair symmetry in `vgl`, structure-of-arrays
//! positions and stored quantities (electron index fastest), evaluation in T and sums in A.

use super::{wrap, Jastrow, Moves, Term, COMPONENTS};
use crate::Real;
use rayon::prelude::*;

/// The walkers' positions (`[walker][xyz][electron]`, T) and stored quantities (`[walker][component][electron]`, A).
#[derive(Clone, Debug)]
pub struct Batch<T, A> {
    pub walkers: usize,
    pub electrons: usize,
    pub pos: Vec<T>,
    pub state: Vec<A>,
}

impl<T: Real, A: Real> Batch<T, A> {
    /// Positions rounded to T; stored quantities not yet evaluated (NaN, so a skipped entry cannot pass).
    pub fn new(pos: &[f64], walkers: usize, electrons: usize) -> Self {
        assert_eq!(pos.len(), walkers * 3 * electrons, "jastrow: positions length");
        Batch { walkers, electrons, pos: pos.iter().map(|&x| T::of(x)).collect(), state: vec![A::nan(); walkers * COMPONENTS * electrons] }
    }

    /// Stored quantities of the electrons `which`, `[walker][component][which]` in f64 (for validation).
    pub fn pick(&self, which: &[usize]) -> Vec<f64> {
        pick(&self.state, self.walkers, self.electrons, which)
    }
}

/// Entries `which` of a `[walker][component][electron]` array.
pub fn pick<A: Real>(state: &[A], walkers: usize, n: usize, which: &[usize]) -> Vec<f64> {
    (0..walkers * COMPONENTS).flat_map(|row| which.iter().map(move |&i| state[row * n + i].f64())).collect()
}

/// Proposals of `Moves` in T.
#[derive(Clone, Debug)]
pub struct MovesT<T> {
    pub electrons: Vec<usize>,
    pub pos: Vec<T>,
}

impl<T: Real> MovesT<T> {
    pub fn new(m: &Moves) -> Self {
        MovesT { electrons: m.electrons.clone(), pos: m.pos.iter().map(|&x| T::of(x)).collect() }
    }
}

/// A Jastrow factor ready for the fast kernels: parameters, cell and ions in T.
pub struct Fast<T> {
    pub j: Jastrow<T>,
    ions: Vec<T>,
    side: T,
    inv_side: T,
}

type Vgl<T> = (T, [T; 3], T);

impl<T: Real> Fast<T> {
    pub fn new(j: &Jastrow<f64>) -> Self {
        Fast { j: j.convert(), ions: j.ions.iter().map(|&x| T::of(x)).collect(), side: T::of(j.cell.side), inv_side: T::of(1.0 / j.cell.side), }
    }

    #[inline(always)]
    fn disp(&self, a: [T; 3], b: [T; 3]) -> [T; 3] {
        let p = self.j.cell.periodic;
        [0, 1, 2].map(|d| wrap(a[d] - b[d], self.side, self.inv_side, p))
    }

    #[inline(always)]
    fn radial(f: &super::Radial<T>, d: [T; 3]) -> Vgl<T> {
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let (u, du, d2u) = f.eval(r);
        let dr = du / r;
        (u, d.map(|x| x * dr), d2u + T::of(2.0) * dr)
    }

    /// The two-body function of electrons at a and b (spins same or not).
    #[inline(always)]
    pub fn pair(&self, same: bool, a: [T; 3], b: [T; 3]) -> Vgl<T> {
        let d = self.disp(a, b);
        match self.j.term {
            Term::P => self.j.p.eval(d),
            _ => Self::radial(&self.j.pair[if same { 0 } else { 1 }], d),
        }
    }

    /// The one-body sum at r: value, gradient, Laplacian.
    #[inline(always)]
    pub fn ions(&self, r: [T; 3]) -> Vgl<T> {
        let m = self.ions.len() / 3;
        let mut s = (T::zero(), [T::zero(); 3], T::zero());
        for i in 0..m {
            let (v, g, l) = Self::radial(&self.j.one, self.disp(r, [self.ions[i], self.ions[m + i], self.ions[2 * m + i]]));
            s.0 += v;
            (0..3).for_each(|d| s.1[d] += g[d]);
            s.2 += l;
        }
        s
    }

    fn same(&self, i: usize, k: usize) -> bool {
        (i < self.j.up) == (k < self.j.up)
    }
}

#[inline(always)]
fn at<T: Copy>(pos: &[T], n: usize, i: usize) -> [T; 3] {
    [pos[i], pos[n + i], pos[2 * n + i]]
}

#[inline(always)]
fn a<A: Real, T: Real>(x: T) -> A {
    A::of(x.f64())
}

/// Everything from scratch for every walker.
pub fn vgl<T: Real, A: Real>(f: &Fast<T>, b: &mut Batch<T, A>) {
    let n = b.electrons;
    b.state.par_chunks_mut(COMPONENTS * n).zip(b.pos.par_chunks(3 * n)).for_each(|(st, pos)| {
        crate::dispatch!(vgl_walker(f, pos, st))
    });
}

#[inline(always)]
fn vgl_walker<T: Real, A: Real>(f: &Fast<T>, pos: &[T], st: &mut [A]) {
    let n = pos.len() / 3;
    st.iter_mut().for_each(|x| *x = A::zero());
    let (u2, rest) = st.split_at_mut(n);
    let (u1, rest) = rest.split_at_mut(n);
    let (gx, rest) = rest.split_at_mut(n);
    let (gy, rest) = rest.split_at_mut(n);
    let (gz, lap) = rest.split_at_mut(n);
    for i in 0..n {
        let ri = at(pos, n, i);
        let (mut v, mut g, mut l) = (A::zero(), [A::zero(); 3], A::zero());
        for k in i + 1..n {
            let (pv, pg, pl) = f.pair(f.same(i, k), ri, at(pos, n, k));
            let (pv, pl) = (a::<A, T>(pv), a::<A, T>(pl));
            let pg = pg.map(a::<A, T>);
            v += pv;
            l += pl;
            (0..3).for_each(|d| g[d] += pg[d]);
            // d(r_k - r_i) = -d: the value and Laplacian are even, the gradient odd
            u2[k] += pv;
            lap[k] += pl;
            gx[k] -= pg[0];
            gy[k] -= pg[1];
            gz[k] -= pg[2];
        }
        let (ov, og, ol) = f.ions(ri);
        u2[i] += v;
        u1[i] = a(ov);
        gx[i] += g[0] + a(og[0]);
        gy[i] += g[1] + a(og[1]);
        gz[i] += g[2] + a(og[2]);
        lap[i] += l + a(ol);
    }
}

/// Sum over k != skip of the pair function between r and electron k: value, gradient, Laplacian, in A.
#[inline(always)]
fn row<T: Real, A: Real>(f: &Fast<T>, pos: &[T], r: [T; 3], skip: usize) -> (A, [A; 3], A) {
    let n = pos.len() / 3;
    let mut s = (A::zero(), [A::zero(); 3], A::zero());
    for k in (0..n).filter(|&k| k != skip) {
        let (v, g, l) = f.pair(f.same(skip, k), r, at(pos, n, k));
        s.0 += a(v);
        (0..3).for_each(|d| s.1[d] += a(g[d]));
        s.2 += a(l);
    }
    s
}

/// Log ratio and new gradient (`out`: `[move][walker][4]`) of every proposal, each from the stored state.
pub fn ratio<T: Real, A: Real>(f: &Fast<T>, b: &Batch<T, A>, m: &MovesT<T>, out: &mut [A]) {
    let (n, walkers) = (b.electrons, b.walkers);
    assert_eq!(out.len(), m.electrons.len() * walkers * 4, "jastrow ratio: output length");
    let per: Vec<Vec<A>> = (0..walkers)
        .into_par_iter()
        .map(|w| {
            let pos = &b.pos[w * 3 * n..(w + 1) * 3 * n];
            let st = &b.state[w * COMPONENTS * n..(w + 1) * COMPONENTS * n];
            crate::dispatch!(ratio_walker(f, pos, st, m, w, walkers))
        })
        .collect();
    for (w, r) in per.iter().enumerate() {
        for mi in 0..m.electrons.len() {
            out[(mi * walkers + w) * 4..][..4].copy_from_slice(&r[mi * 4..][..4]);
        }
    }
}

#[inline(always)]
fn ratio_walker<T: Real, A: Real>(f: &Fast<T>, pos: &[T], st: &[A], m: &MovesT<T>, w: usize, walkers: usize) -> Vec<A> {
    let n = pos.len() / 3;
    let mut out = Vec::with_capacity(4 * m.electrons.len());
    for (mi, &k) in m.electrons.iter().enumerate() {
        let rn: [T; 3] = m.pos[(mi * walkers + w) * 3..][..3].try_into().unwrap();
        let (v, g, _) = row::<T, A>(f, pos, rn, k);
        let (ov, og, _) = f.ions(rn);
        out.push(v + a(ov) - st[k] - st[n + k]);
        (0..3).for_each(|d| out.push(g[d] + a(og[d])));
    }
    out
}

/// Accept every proposal of `m` in turn: update all stored quantities and the positions.
pub fn accept<T: Real, A: Real>(f: &Fast<T>, b: &mut Batch<T, A>, m: &MovesT<T>) {
    let (n, walkers) = (b.electrons, b.walkers);
    b.state.par_chunks_mut(COMPONENTS * n).zip(b.pos.par_chunks_mut(3 * n)).enumerate().for_each(|(w, (st, pos))| {
        crate::dispatch!(accept_walker(f, pos, st, m, w, walkers))
    });
}

#[inline(always)]
fn accept_walker<T: Real, A: Real>(f: &Fast<T>, pos: &mut [T], st: &mut [A], m: &MovesT<T>, w: usize, walkers: usize) {
    let n = pos.len() / 3;
    for (mi, &k) in m.electrons.iter().enumerate() {
        let rn: [T; 3] = m.pos[(mi * walkers + w) * 3..][..3].try_into().unwrap();
        let ro = at(pos, n, k);
        let (mut v, mut g, mut l) = (A::zero(), [A::zero(); 3], A::zero());
        for j in (0..n).filter(|&j| j != k) {
            let rj = at(pos, n, j);
            let same = f.same(k, j);
            let (nv, ng, nl) = f.pair(same, rn, rj);
            let (ov, og, ol) = f.pair(same, ro, rj);
            st[j] += a::<A, T>(nv) - a(ov);
            st[5 * n + j] += a::<A, T>(nl) - a(ol);
            for d in 0..3 {
                // grad_j f(r_j - r_k) = -(grad f)(r_k - r_j)
                st[(2 + d) * n + j] -= a::<A, T>(ng[d]) - a(og[d]);
            }
            v += a(nv);
            l += a(nl);
            (0..3).for_each(|d| g[d] += a(ng[d]));
        }
        let (iv, ig, il) = f.ions(rn);
        st[k] = v;
        st[n + k] = a(iv);
        (0..3).for_each(|d| st[(2 + d) * n + k] = g[d] + a(ig[d]));
        st[5 * n + k] = l + a(il);
        (0..3).for_each(|d| pos[d * n + k] = rn[d]);
    }
}
