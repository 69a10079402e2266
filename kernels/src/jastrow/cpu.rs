//! The fast CPU kernels: all cores (rayon over walkers), the i<j pair symmetry in `vgl`, structure-of-arrays
//! positions and stored quantities (electron index fastest), evaluation in T and sums in A.
//!
//! Pairs go in blocks of 16 lanes, and every loop over a block's lanes is free of choices so that it vectorises:
//! the p term computes each lane's exp(i b x) and then the powers across lanes (`p_block`); the radial terms compute
//! every lane's displacement and distance, then evaluate one functor across each run of lanes (a block of electrons
//! ordered up then down changes functor at most once), with `Radial::eval` free of branches. Measured on this suite's
//! 2-core development machine (246 electrons, 16 walkers, interleaved builds, all records passed), the radial terms'
//! ratio and accept ran 1.24x to 1.86x their old scalar loop with AVX-512 and 1.23x to 1.51x with AVX2
//! (`QMC_SIMD=avx2`), vgl 1.25x to 1.50x. Two pitfalls found there: an array's `.map` in this code was compiled out
//! of line, outside the instruction set `dispatch!` chose (so its rounding called libm's `roundf`: 16% of the
//! samples), hence the written-out arrays; and the p term's code beside the radial terms' in one function moved their
//! speed by 10-20% (code placement), hence `by_term`.

use super::{wrap, Jastrow, Moves, Term, COMPONENTS, MAX_POWER};
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
        // written out, not `[0, 1, 2].map(..)`: the array's map was compiled out of line (`try_map`), outside the
        // vector instruction set `dispatch!` chose, and its rounding then called libm's `roundf` (16% of the Pade
        // ratio's samples)
        let (p, s, is) = (self.j.cell.periodic, self.side, self.inv_side);
        [wrap(a[0] - b[0], s, is, p), wrap(a[1] - b[1], s, is, p), wrap(a[2] - b[2], s, is, p)]
    }

    #[inline(always)]
    fn radial(f: &super::Radial<T>, d: [T; 3]) -> Vgl<T> {
        let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        let (u, du, d2u) = f.eval(r);
        let dr = du / r;
        (u, [d[0] * dr, d[1] * dr, d[2] * dr], d2u + T::of(2.0) * dr)
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

    /// The p term between r and electrons k0..k0+len, one SIMD lane per pair: the power tables of Eq. 8 for all
    /// lanes first, then each G vector across the lanes (the loop the compiler vectorises).
    #[inline(always)]
    fn p_block(&self, r: [T; 3], pos: &[T], k0: usize, len: usize, out: &mut Block<T>) {
        let (p, n) = (&self.j.p, pos.len() / 3);
        let mut pw = [[[[T::zero(); PB]; 2]; MAX_POWER + 1]; 3];
        // exp(i b x) of every lane, then its powers power by power across the lanes: loops over the lanes that
        // vectorise (`maths::sin_cos` is plain arithmetic, where the library's is a call per lane that took half
        // the p term's time); lanes from `len` on stay zero from the first power on
        for d in 0..3 {
            pw[d][0][0] = [T::one(); PB];
            let (mut s, mut c) = ([T::zero(); PB], [T::zero(); PB]);
            for l in 0..len {
                let x = wrap(r[d] - pos[d * n + k0 + l], self.side, self.inv_side, self.j.cell.periodic);
                (s[l], c[l]) = crate::maths::sin_cos(p.b * x);
            }
            let (mut re, mut im) = ([T::one(); PB], [T::zero(); PB]);
            for m in 1..=p.nmax {
                for l in 0..PB {
                    (re[l], im[l]) = (re[l] * c[l] - im[l] * s[l], re[l] * s[l] + im[l] * c[l]);
                }
                pw[d][m] = [re, im];
            }
        }
        for (nv, &a) in p.n.iter().zip(&p.a) {
            // exp(-i x) is the conjugate of exp(i x): negative components flip the sign of the imaginary part
            let sg = nv.map(|c| if c < 0 { -T::one() } else { T::one() });
            let [t1, t2, t3] = [0, 1, 2].map(|d| &pw[d][nv[d].unsigned_abs() as usize]);
            let cl = -a * T::of((nv[0] * nv[0] + nv[1] * nv[1] + nv[2] * nv[2]) as f64);
            let cg = nv.map(|c| -a * T::of(c as f64));
            for l in 0..PB {
                let (y1, y2, y3) = (t1[1][l] * sg[0], t2[1][l] * sg[1], t3[1][l] * sg[2]);
                let (x12, y12) = (t1[0][l] * t2[0][l] - y1 * y2, t1[0][l] * y2 + y1 * t2[0][l]);
                let (re, im) = (x12 * t3[0][l] - y12 * y3, x12 * y3 + y12 * t3[0][l]);
                out[0][l] += a * re;
                out[1][l] += cg[0] * im;
                out[2][l] += cg[1] * im;
                out[3][l] += cg[2] * im;
                out[4][l] += cl * re;
            }
        }
        let b2 = p.b * p.b;
        for l in 0..PB {
            (1..4).for_each(|c| out[c][l] *= p.b);
            out[4][l] *= b2;
        }
    }

    /// The pair function between r (of electron `me`'s spin) and electrons k0..k0+len, one lane each; P: whether
    /// the term is the p term (`by_term`).
    #[inline(always)]
    fn block<const P: bool>(&self, me: usize, r: [T; 3], pos: &[T], k0: usize, len: usize) -> Block<T> {
        let mut out = [[T::zero(); PB]; 5];
        if P {
            self.p_block(r, pos, k0, len, &mut out);
        } else {
            // the displacements and distances of every lane, then each run of lanes with one functor (electrons
            // below `up` are spin up, so a block changes functor at most once) evaluated across its lanes: the same
            // operations as `radial` (the one-body term), in loops without a choice per lane
            let n = pos.len() / 3;
            let (mut d, mut dist) = ([[T::zero(); PB]; 3], [T::zero(); PB]);
            for l in 0..len {
                let x = self.disp(r, at(pos, n, k0 + l));
                (0..3).for_each(|k| d[k][l] = x[k]);
                dist[l] = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
            }
            let split = self.j.up.clamp(k0, k0 + len) - k0;
            let me_up = me < self.j.up;
            for (lanes, same) in [(0..split, me_up), (split..len, !me_up)] {
                let f = &self.j.pair[if same { 0 } else { 1 }];
                for l in lanes {
                    let (u, du, d2u) = f.eval(dist[l]);
                    let dr = du / dist[l];
                    out[0][l] = u;
                    (0..3).for_each(|k| out[1 + k][l] = d[k][l] * dr);
                    out[4][l] = d2u + T::of(2.0) * dr;
                }
            }
        }
        out
    }
}

/// Pairs per block: 16 lanes (one AVX-512 register of f32, two of f64).
const PB: usize = 16;
/// Value, gradient x y z, Laplacian of each lane's pair.
type Block<T> = [[T; PB]; 5];

/// `$e` with the constant `$p` whether the Jastrow's term is the p term, so that each walker's loops hold one term's
/// code: with the p term and the radial terms in one function, a change to either moved the other's speed by 10-20%
/// on this suite's 2-core machine (code placement, the instructions unchanged).
macro_rules! by_term {
    ($f:expr, $p:ident => $e:expr) => {
        if $f.j.term == Term::P {
            const $p: bool = true;
            $e
        } else {
            const $p: bool = false;
            $e
        }
    };
}

/// `range` in blocks of at most PB: (start, length).
fn blocks(range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, usize)> {
    range.clone().step_by(PB).map(move |k0| (k0, PB.min(range.end - k0)))
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
        crate::dispatch!(by_term!(f, P => vgl_walker::<T, A, P>(f, pos, st)))
    });
}

#[inline(always)]
fn vgl_walker<T: Real, A: Real, const P: bool>(f: &Fast<T>, pos: &[T], st: &mut [A]) {
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
        for (k0, len) in blocks(i + 1..n) {
            let b = f.block::<P>(i, ri, pos, k0, len);
            for q in 0..len {
                let k = k0 + q;
                let (pv, pl) = (a::<A, T>(b[0][q]), a::<A, T>(b[4][q]));
                let pg: [A; 3] = [a(b[1][q]), a(b[2][q]), a(b[3][q])];
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
fn row<T: Real, A: Real, const P: bool>(f: &Fast<T>, pos: &[T], r: [T; 3], skip: usize) -> (A, [A; 3], A) {
    let n = pos.len() / 3;
    let mut s = (A::zero(), [A::zero(); 3], A::zero());
    for (k0, len) in blocks(0..skip).chain(blocks(skip + 1..n)) {
        let b = f.block::<P>(skip, r, pos, k0, len);
        for q in 0..len {
            s.0 += a(b[0][q]);
            (0..3).for_each(|d| s.1[d] += a(b[1 + d][q]));
            s.2 += a(b[4][q]);
        }
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
            crate::dispatch!(by_term!(f, P => ratio_walker::<T, A, P>(f, pos, st, m, w, walkers)))
        })
        .collect();
    for (w, r) in per.iter().enumerate() {
        for mi in 0..m.electrons.len() {
            out[(mi * walkers + w) * 4..][..4].copy_from_slice(&r[mi * 4..][..4]);
        }
    }
}

#[inline(always)]
fn ratio_walker<T: Real, A: Real, const P: bool>(f: &Fast<T>, pos: &[T], st: &[A], m: &MovesT<T>, w: usize, walkers: usize) -> Vec<A> {
    let n = pos.len() / 3;
    let mut out = Vec::with_capacity(4 * m.electrons.len());
    for (mi, &k) in m.electrons.iter().enumerate() {
        let rn: [T; 3] = m.pos[(mi * walkers + w) * 3..][..3].try_into().unwrap();
        let (v, g, _) = row::<T, A, P>(f, pos, rn, k);
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
        crate::dispatch!(by_term!(f, P => accept_walker::<T, A, P>(f, pos, st, m, w, walkers)))
    });
}

#[inline(always)]
fn accept_walker<T: Real, A: Real, const P: bool>(f: &Fast<T>, pos: &mut [T], st: &mut [A], m: &MovesT<T>, w: usize, walkers: usize) {
    let n = pos.len() / 3;
    for (mi, &k) in m.electrons.iter().enumerate() {
        let rn: [T; 3] = m.pos[(mi * walkers + w) * 3..][..3].try_into().unwrap();
        let ro = at(pos, n, k);
        let (mut v, mut g, mut l) = (A::zero(), [A::zero(); 3], A::zero());
        for (k0, len) in blocks(0..k).chain(blocks(k + 1..n)) {
            let bn = f.block::<P>(k, rn, pos, k0, len);
            let bo = f.block::<P>(k, ro, pos, k0, len);
            for q in 0..len {
                let j = k0 + q;
                st[j] += a::<A, T>(bn[0][q]) - a(bo[0][q]);
                st[5 * n + j] += a::<A, T>(bn[4][q]) - a(bo[4][q]);
                for d in 0..3 {
                    // grad_j f(r_j - r_k) = -(grad f)(r_k - r_j)
                    st[(2 + d) * n + j] -= a::<A, T>(bn[1 + d][q]) - a(bo[1 + d][q]);
                }
                v += a(bn[0][q]);
                l += a(bn[4][q]);
                (0..3).for_each(|d| g[d] += a(bn[1 + d][q]));
            }
        }
        let (iv, ig, il) = f.ions(rn);
        st[k] = v;
        st[n + k] = a(iv);
        (0..3).for_each(|d| st[(2 + d) * n + k] = g[d] + a(ig[d]));
        st[5 * n + k] = l + a(il);
        (0..3).for_each(|d| pos[d * n + k] = rn[d]);
    }
}
