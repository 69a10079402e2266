//! The fast CPU chains: one Markov chain per task (rayon over chains: one chain per core, the MPI code's layout;
//! run inside a one-thread pool it is the thesis' one-core baseline). Storage S, arithmetic A.
//!
//! Differences from the reference (and the thesis' CPU code), all exact in exact arithmetic:
//! - A swap ratio without a tentative update (the thesis' streamlined GPU function, simplified): for the up
//!   electron a on x and the down electron b on y,
//!     f_a' = sum_b' phi(y, d_b') W_b'a',  h = sum_a' W_ba' phi(u_a', x),  k = sum_a' f_a' phi(u_a', x),
//!     R = W_ba (phi(y, x) - k) + f_a h,
//!   i.e. N_P^2 for f and O(N_P) for the rest; nothing is written unless the swap is accepted, so no CopyConfig.
//! - In the exchange energy f depends only on the down electron, so it is computed once per down electron with
//!   an antiparallel neighbour and reused for its (up to 4) bonds.
//! - An accepted swap is committed as two Sherman-Morrison updates, in the order whose first ratio (f_a or h) is
//!   larger in magnitude.
//! W is `[b][a]` row-major: the f vector and the updates stream whole rows (vectorised by `dispatch!`).
//!
//! Recompute: every `recompute` sweeps (0: never) W is rebuilt from scratch by `reinvert`, Gauss-Jordan with
//! partial pivoting in the arithmetic type A (f64 in double and mixed, f32 in single), the same algorithm, pivot
//! choice and operation order as `reinvert` in lattice.cu. A degenerate accepted swap (both intermediate ratios
//! nearly zero) takes the same path.

use super::{tally, Config, Model, Stream, HL, UP};
use crate::Real;
use rayon::prelude::*;

#[inline(always)]
fn ld<S: Real, A: Real>(x: S) -> A {
    A::of(x.f64())
}

/// The state of one chain.
#[derive(Clone, Debug)]
pub struct Chain<S> {
    pub w: Vec<S>,
    pub up: Vec<u32>,
    pub dn: Vec<u32>,
    pub occ: Vec<u32>,
    pub which: Vec<u32>,
    pub rng: Stream,
    pub tally: [f64; tally::LEN],
}

/// All chains and the shared tables.
pub struct Ensemble<S> {
    pub sites: usize,
    pub pairs: usize,
    pub j: f64,
    pub nbr: Vec<u32>,
    pub hop: Vec<f64>,
    pub phi: Vec<S>,
    pub chains: Vec<Chain<S>>,
    /// Sweeps between rebuilds of W from scratch (0: never, the thesis' algorithm).
    pub recompute: usize,
    /// Intermediate-ratio magnitude below which an accepted swap rebuilds W; None: `degenerate_ratio` of A.
    pub degenerate: Option<f64>,
}

impl<S: Real> Ensemble<S> {
    /// Chains from their starts; chain c draws from `Stream::new(seed, c)`.
    pub fn new(m: &Model, starts: &[(Config, Vec<f64>)], seed: u64) -> Self {
        let chains = starts
            .iter()
            .enumerate()
            .map(|(c, (cfg, w))| {
                let (occ, which) = cfg.occupation(m.sites);
                Chain {
                    w: w.iter().map(|&x| S::of(x)).collect(),
                    up: cfg.up.clone(),
                    dn: cfg.dn.clone(),
                    occ,
                    which,
                    rng: Stream::new(seed, c as u64),
                    tally: [0.0; tally::LEN],
                }
            })
            .collect();
        Ensemble {
            sites: m.sites,
            pairs: m.pairs,
            j: m.j,
            nbr: m.nbr.clone(),
            hop: m.hop.clone(),
            phi: m.phi.iter().map(|&x| S::of(x)).collect(),
            chains,
            recompute: 0,
            degenerate: None,
        }
    }

    /// Run every chain on the current rayon pool: `equil` sweeps, then `sweeps` sweeps with a measurement each.
    pub fn run<A: Real>(&mut self, equil: usize, sweeps: usize) {
        let (tables, chains) = self.split::<A>();
        chains.par_iter_mut().for_each(|c| {
            crate::dispatch!(run_chain::<S, A>(&tables, c, equil, sweeps));
        });
    }

    /// The shared tables and the chains, borrowed apart.
    fn split<A: Real>(&mut self) -> (Tables<'_, S>, &mut [Chain<S>]) {
        let degenerate = self.degenerate.unwrap_or(super::degenerate_ratio(A::EPS));
        let t = Tables { sites: self.sites, pairs: self.pairs, j: self.j, recompute: self.recompute, degenerate, nbr: &self.nbr, hop: &self.hop, phi: &self.phi };
        (t, &mut self.chains)
    }
}

struct Tables<'a, S> {
    sites: usize,
    pairs: usize,
    j: f64,
    recompute: usize,
    degenerate: f64,
    nbr: &'a [u32],
    hop: &'a [f64],
    phi: &'a [S],
}

/// Scratch vectors of one chain.
struct Scratch<S, A> {
    f: Vec<A>,
    g: Vec<A>,
    p: Vec<A>,
    /// Scratch of `gauss_jordan` (3 N_P).
    row: Vec<A>,
    /// The update's vector rounded to the storage type (the rank-1 updates run in S).
    vs: Vec<S>,
    /// M, then its inverse, for `reinvert`.
    m: Vec<A>,
    piv: Vec<usize>,
}

impl<S: Real, A: Real> Scratch<S, A> {
    fn new(np: usize) -> Self {
        let v = vec![A::zero(); np];
        Scratch { f: v.clone(), g: v.clone(), p: v.clone(), row: vec![A::zero(); 3 * np], vs: vec![S::zero(); np], m: vec![A::zero(); np * np], piv: vec![0; np] }
    }
}

#[inline(always)]
fn run_chain<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, equil: usize, sweeps: usize) {
    let np = t.pairs;
    let mut s = Scratch::<S, A>::new(np);
    for k in 0..equil + sweeps {
        for _ in 0..2 * np {
            step(t, c, &mut s);
        }
        if t.recompute > 0 && (k + 1) % t.recompute == 0 {
            reinvert(t, c, &mut s);
        }
        if k >= equil {
            let e = energy(t, c, &mut s);
            c.tally[tally::E_SUM] += e;
            c.tally[tally::E2_SUM] += e * e;
            c.tally[tally::MEASUREMENTS] += 1.0;
        }
    }
}

/// f_a = sum_b phi(y, d_b) W_ba for all a (row-vector times W, row by row). Four rows of W per pass over f, each
/// entry a chain of fused multiply-adds in row order (b = 0, 1, ...; one rounding per term, as lattice.cu's FMA-
/// contracted sums): f is read and written once per four rows instead of once per row, so the loop is bound by the
/// loads of W and the FMAs, not by f's loads and stores.
#[inline(always)]
fn fvec<S: Real, A: Real>(t: &Tables<S>, c: &Chain<S>, y: usize, f: &mut [A]) {
    let np = t.pairs;
    let f = &mut f[..np];
    f.iter_mut().for_each(|x| *x = A::zero());
    let row_y = &t.phi[y * t.sites..(y + 1) * t.sites];
    let coef = |b: usize| -> A { ld(row_y[c.dn[b] as usize]) };
    let mut b = 0;
    while b + 4 <= np {
        let (c0, c1, c2, c3) = (coef(b), coef(b + 1), coef(b + 2), coef(b + 3));
        let w = &c.w[b * np..(b + 4) * np];
        let (w0, w1, w2, w3) = (&w[..np], &w[np..2 * np], &w[2 * np..3 * np], &w[3 * np..4 * np]);
        for a in 0..np {
            let x = c0.mul_add(ld::<S, A>(w0[a]), f[a]);
            let x = c1.mul_add(ld::<S, A>(w1[a]), x);
            let x = c2.mul_add(ld::<S, A>(w2[a]), x);
            f[a] = c3.mul_add(ld::<S, A>(w3[a]), x);
        }
        b += 4;
    }
    for b in b..np {
        let cb = coef(b);
        for (fa, &w) in f.iter_mut().zip(&c.w[b * np..(b + 1) * np]) {
            *fa = cb.mul_add(ld::<S, A>(w), *fa);
        }
    }
}

/// p_a = phi(u_a, x) (phi is symmetric: row x gathered at the up sites).
#[inline(always)]
fn gather<S: Real, A: Real>(t: &Tables<S>, c: &Chain<S>, x: usize, p: &mut [A]) {
    let row_x = &t.phi[x * t.sites..(x + 1) * t.sites];
    for (pa, &u) in p.iter_mut().zip(&c.up) {
        *pa = ld(row_x[u as usize]);
    }
}

/// sum_a w_a p_a over eight partial sums of fused multiply-adds: a serial fold is one long chain of dependent additions that the compiler
/// may not reorder (no fast-math), so it neither vectorises nor overlaps; eight lanes do both. `w` and `p` have the
/// same length.
#[inline(always)]
fn dot_row<S: Real, A: Real>(w: &[S], p: &[A]) -> A {
    let mut acc = [A::zero(); 8];
    let (wc, pc) = (w.chunks_exact(8), p.chunks_exact(8));
    let (wr, pr) = (wc.remainder(), pc.remainder());
    for (x, y) in wc.zip(pc) {
        for k in 0..8 {
            acc[k] = ld::<S, A>(x[k]).mul_add(y[k], acc[k]);
        }
    }
    for (k, (&x, &y)) in wr.iter().zip(pr).enumerate() {
        acc[k] = ld::<S, A>(x).mul_add(y, acc[k]);
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// Sherman-Morrison for up electron a moving to s, given f (with f_a the ratio). The update itself runs in the
/// storage type S (f and the column rounded to S once): in mixed precision the matrix is f32 and so is its rank-1
/// update, as lattice.cu's `update_cols`; ratios and dot products stay in A. Each entry is updated by one fused
/// multiply-add (one rounding, as on the GPU): the `dispatch!` builds have FMA instructions.
#[inline(always)]
fn update_up<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, a: usize, s: usize, f: &[A], fs: &mut [S]) {
    let np = t.pairs;
    let inv_r = A::one() / f[a];
    for (x, &y) in fs.iter_mut().zip(f) {
        *x = S::of(y.f64());
    }
    for b in 0..np {
        let row = &mut c.w[b * np..(b + 1) * np];
        let col = ld::<S, A>(row[a]) * inv_r;
        let col_s = S::of(col.f64());
        for (x, &fa) in row.iter_mut().zip(fs.iter()) {
            *x = (-fa).mul_add(col_s, *x);
        }
        row[a] = col_s;
    }
    c.up[a] = s as u32;
}

/// Sherman-Morrison for down electron b moving to s, given g (with g_b the ratio); in S, as `update_up`.
#[inline(always)]
fn update_dn<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, b: usize, s: usize, g: &[A], row: &mut [S]) {
    let np = t.pairs;
    let inv_r = A::one() / g[b];
    for (r, &x) in row.iter_mut().zip(&c.w[b * np..(b + 1) * np]) {
        *r = S::of((ld::<S, A>(x) * inv_r).f64());
    }
    for bb in 0..np {
        let gb = S::of(g[bb].f64());
        for (x, &r) in c.w[bb * np..(bb + 1) * np].iter_mut().zip(row.iter()) {
            *x = (-gb).mul_add(r, *x);
        }
    }
    c.w[b * np..(b + 1) * np].copy_from_slice(row);
    c.dn[b] = s as u32;
}

/// Swap ratio of up electron a on x with down electron b on y; leaves f and p (the gather at x) in scratch and
/// returns (R, h).
#[inline(always)]
fn swap_ratio<S: Real, A: Real>(t: &Tables<S>, c: &Chain<S>, a: usize, x: usize, b: usize, y: usize, s: &mut Scratch<S, A>) -> (A, A) {
    let np = t.pairs;
    fvec(t, c, y, &mut s.f);
    gather(t, c, x, &mut s.p);
    let wrow = &c.w[b * np..(b + 1) * np];
    let h = dot_row(wrow, &s.p);
    let k = dot_row(&s.f, &s.p);
    let wba: A = ld(wrow[a]);
    (wba * (ld::<S, A>(t.phi[y * t.sites + x]) - k) + s.f[a] * h, h)
}

#[inline(always)]
fn step<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, s: &mut Scratch<S, A>) {
    let np = t.pairs;
    let i = c.rng.below(np);
    let spin = c.rng.below(2) as u32;
    let old = if spin == UP { c.up[i] } else { c.dn[i] } as usize;
    let new = loop {
        let n = c.rng.below(t.sites);
        if c.occ[n] != spin {
            break n;
        }
    };
    let u = c.rng.uniform();
    if c.occ[new] == HL {
        c.tally[tally::HOPS] += 1.0;
        let r: A = if spin == UP {
            let row = &t.phi[new * t.sites..(new + 1) * t.sites];
            (0..np).fold(A::zero(), |acc, b| acc + ld::<S, A>(row[c.dn[b] as usize]) * ld::<S, A>(c.w[b * np + i]))
        } else {
            gather(t, c, new, &mut s.p);
            dot_row(&c.w[i * np..(i + 1) * np], &s.p)
        };
        let r = r.f64();
        if u < r * r {
            if spin == UP {
                fvec(t, c, new, &mut s.f);
                update_up(t, c, i, new, &s.f, &mut s.vs);
            } else {
                for bb in 0..np {
                    s.g[bb] = dot_row(&c.w[bb * np..(bb + 1) * np], &s.p);
                }
                update_dn(t, c, i, new, &s.g, &mut s.vs);
            }
            c.occ[old] = HL;
            c.occ[new] = spin;
            c.which[new] = i as u32;
            c.tally[tally::HOPS_ACCEPTED] += 1.0;
        }
    } else {
        c.tally[tally::SWAPS] += 1.0;
        let j = c.which[new] as usize;
        // The up electron a on x, the down electron b on y.
        let (a, x, b, y) = if spin == UP { (i, old, j, new) } else { (j, new, i, old) };
        let (r, h) = swap_ratio(t, c, a, x, b, y, s);
        let r = r.f64();
        if u < r * r {
            commit_swap(t, c, a, x, b, y, h, s);
            c.occ[x] = super::DN;
            c.occ[y] = UP;
            c.which[x] = b as u32;
            c.which[y] = a as u32;
            c.tally[tally::SWAPS_ACCEPTED] += 1.0;
        }
    }
}

/// Commit an accepted swap (f and p of `swap_ratio` still in scratch) as two rank-1 updates.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn commit_swap<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, a: usize, x: usize, b: usize, y: usize, h: A, s: &mut Scratch<S, A>) {
    let np = t.pairs;
    if s.f[a].abs().max(h.abs()).f64() < t.degenerate {
        // Both single moves pass through a (nearly) singular matrix: Sherman-Morrison would divide W by the small
        // ratio and amplify its rounding error by as much, so W is rebuilt from scratch instead.
        c.up[a] = y as u32;
        c.dn[b] = x as u32;
        reinvert(t, c, s);
        return;
    }
    if s.f[a].abs() >= h.abs() {
        update_up(t, c, a, y, &s.f, &mut s.vs);
        gather(t, c, x, &mut s.p);
        for bb in 0..np {
            s.g[bb] = dot_row(&c.w[bb * np..(bb + 1) * np], &s.p);
        }
        update_dn(t, c, b, x, &s.g, &mut s.vs);
    } else {
        for bb in 0..np {
            s.g[bb] = dot_row(&c.w[bb * np..(bb + 1) * np], &s.p);
        }
        update_dn(t, c, b, x, &s.g, &mut s.vs);
        fvec(t, c, y, &mut s.f);
        update_up(t, c, a, y, &s.f, &mut s.vs);
    }
}

/// Local energy per site.
#[inline(always)]
fn energy<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, s: &mut Scratch<S, A>) -> f64 {
    let (np, ns) = (t.pairs, t.sites);
    let mut ekin = 0.0f64;
    let mut nkin = 0.0;
    for a in 0..np {
        let site = c.up[a] as usize;
        for jn in 0..4 {
            let n = t.nbr[4 * site + jn] as usize;
            if c.occ[n] == HL {
                let row = &t.phi[n * ns..(n + 1) * ns];
                let r = (0..np).fold(A::zero(), |acc, b| acc + ld::<S, A>(row[c.dn[b] as usize]) * ld::<S, A>(c.w[b * np + a]));
                ekin += t.hop[4 * site + jn] * r.f64();
                nkin += 1.0;
            }
        }
    }
    for b in 0..np {
        let site = c.dn[b] as usize;
        for jn in 0..4 {
            let n = t.nbr[4 * site + jn] as usize;
            if c.occ[n] == HL {
                gather(t, c, n, &mut s.p);
                ekin += t.hop[4 * site + jn] * dot_row(&c.w[b * np..(b + 1) * np], &s.p).f64();
                nkin += 1.0;
            }
        }
    }
    let mut ej = 0.0f64;
    let (mut bonds, mut fvecs) = (0.0, 0.0);
    for b in 0..np {
        let y = c.dn[b] as usize;
        if !(0..4).any(|jn| c.occ[t.nbr[4 * y + jn] as usize] == UP) {
            continue;
        }
        fvec(t, c, y, &mut s.f);
        fvecs += 1.0;
        for jn in 0..4 {
            let x = t.nbr[4 * y + jn] as usize;
            if c.occ[x] != UP {
                continue;
            }
            let a = c.which[x] as usize;
            gather(t, c, x, &mut s.p);
            let wrow = &c.w[b * np..(b + 1) * np];
            let h = dot_row(wrow, &s.p);
            let k = dot_row(&s.f, &s.p);
            let r = ld::<S, A>(wrow[a]) * (ld::<S, A>(t.phi[y * ns + x]) - k) + s.f[a] * h;
            ej -= 0.5 * t.j * (1.0 + r.f64());
            bonds += 1.0;
        }
    }
    c.tally[tally::KIN_RATIOS] += nkin;
    c.tally[tally::BONDS] += bonds;
    c.tally[tally::FVECS] += fvecs;
    (ekin + ej) / ns as f64
}

/// Rebuild W = M^-1 of the chain's configuration from scratch in A: M_ab = phi(u_a, d_b), Gauss-Jordan in place
/// with partial pivoting (the first row of largest |pivot|), then the row interchanges undone as column interchanges
/// in reverse order. Leaves W as it was if M is exactly singular (it cannot be for a configuration of nonzero
/// weight). Operation order as in lattice.cu's `reinvert`.
#[inline(always)]
fn reinvert<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, s: &mut Scratch<S, A>) {
    let np = t.pairs;
    c.tally[tally::RECOMPUTES] += 1.0;
    for (a, row) in s.m.chunks_exact_mut(np).enumerate() {
        let phi_u = &t.phi[c.up[a] as usize * t.sites..(c.up[a] as usize + 1) * t.sites];
        for (x, &d) in row.iter_mut().zip(&c.dn) {
            *x = ld(phi_u[d as usize]);
        }
    }
    if gauss_jordan(&mut s.m, np, &mut s.piv, &mut s.row) {
        c.w.iter_mut().zip(&s.m).for_each(|(w, &x)| *w = S::of(x.f64()));
    }
}

/// In-place inverse of the n x n row-major `m` by Gauss-Jordan with partial pivoting; false if a pivot is zero
/// (then `m` is garbage). `scratch` has length 3 n.
///
/// Two pivots per pass over the matrix: the one-pivot algorithm (`gauss_jordan_one`, the operation order of
/// lattice.cu's `reinvert`) reads and writes the whole matrix once per pivot, 2 n^3 bytes of traffic per rebuild
/// that do not fit the core's L1 (83 KB in f64 at L = 15), and that traffic, not the arithmetic, bound it. Here the
/// pivot of step k + 1 is chosen from column k + 1 as step k leaves it (computed apart, O(n)), both pivot rows are
/// formed first, and every other row then takes both eliminations in one pass: the same pivots and the same
/// roundings, entry by entry, as `gauss_jordan_one` (each entry x -> (x - f1 r1) - f2 r2 with unfused products, as
/// the two steps one after the other; a test compares them bit for bit).
#[inline(always)]
pub fn gauss_jordan<T: Real>(m: &mut [T], n: usize, piv: &mut [usize], scratch: &mut [T]) -> bool {
    let (r1, rest) = scratch.split_at_mut(n);
    let (r2, c) = rest.split_at_mut(n);
    let (r1, r2, c) = (&mut r1[..n], &mut r2[..n], &mut c[..n]);
    let argmax = |m: &[T], k: usize, col: &dyn Fn(&[T], usize) -> T| -> usize {
        let mut p = k;
        for i in k + 1..n {
            if col(m, i).abs() > col(m, p).abs() {
                p = i;
            }
        }
        p
    };
    let swap_rows = |m: &mut [T], p: usize, k: usize| {
        if p != k {
            for j in 0..n {
                m.swap(p * n + j, k * n + j);
            }
        }
    };
    let mut k = 0;
    while k < n {
        // step k: pivot, swap, scaled pivot row r1 (row k of the result before step k + 1)
        let p = argmax(m, k, &|m, i| m[i * n + k]);
        let pivot = m[p * n + k];
        if pivot == T::zero() || pivot.is_nan() {
            return false;
        }
        piv[k] = p;
        swap_rows(m, p, k);
        let d = T::one() / m[k * n + k];
        m[k * n + k] = T::one();
        for (x, r) in m[k * n..(k + 1) * n].iter_mut().zip(r1.iter_mut()) {
            *x *= d;
            *r = *x;
        }
        if k + 1 == n {
            eliminate_one(m, n, k, r1);
            break;
        }
        // column k + 1 as step k leaves it, and the pivot of step k + 1 from it
        let k1 = k + 1;
        for i in (0..n).filter(|&i| i != k) {
            c[i] = m[i * n + k1] - m[i * n + k] * r1[k1];
        }
        let p2 = argmax(m, k1, &|_, i| c[i]);
        if c[p2] == T::zero() || c[p2].is_nan() {
            return false;
        }
        piv[k1] = p2;
        swap_rows(m, p2, k1);
        c.swap(p2, k1);
        // row k + 1 after step k, scaled: the pivot row r2 of step k + 1
        let f1 = m[k1 * n + k];
        m[k1 * n + k] = T::zero();
        for (x, &r) in m[k1 * n..(k1 + 1) * n].iter_mut().zip(r1.iter()) {
            *x -= f1 * r;
        }
        let d2 = T::one() / m[k1 * n + k1];
        m[k1 * n + k1] = T::one();
        for (x, r) in m[k1 * n..(k1 + 1) * n].iter_mut().zip(r2.iter_mut()) {
            *x *= d2;
            *r = *x;
        }
        // row k: step k + 1's elimination
        let f = m[k * n + k1];
        m[k * n + k1] = T::zero();
        for (x, &r) in m[k * n..(k + 1) * n].iter_mut().zip(r2.iter()) {
            *x -= f * r;
        }
        // every other row: both eliminations in one pass. Entry k starts at 0 (step k zeroes it); entry k + 1 starts
        // at f1 r1[k + 1], so that step k leaves it at exactly 0, as step k + 1 sets it before subtracting.
        for i in (0..n).filter(|&i| i != k && i != k1) {
            let row = &mut m[i * n..(i + 1) * n];
            let (f1, f2) = (row[k], c[i]);
            row[k] = T::zero();
            row[k1] = f1 * r1[k1];
            for ((x, &a), &b) in row.iter_mut().zip(r1.iter()).zip(r2.iter()) {
                *x = (*x - f1 * a) - f2 * b;
            }
        }
        k += 2;
    }
    for k in (0..n).rev() {
        if piv[k] != k {
            for row in m.chunks_exact_mut(n) {
                row.swap(k, piv[k]);
            }
        }
    }
    true
}

/// Step k's elimination of every row but k with the scaled pivot row `r` (x -> x - row[k] r, entry k from 0).
#[inline(always)]
fn eliminate_one<T: Real>(m: &mut [T], n: usize, k: usize, r: &[T]) {
    for i in (0..n).filter(|&i| i != k) {
        let row = &mut m[i * n..(i + 1) * n];
        let f = row[k];
        row[k] = T::zero();
        for (x, &r) in row.iter_mut().zip(r.iter()) {
            *x -= f * r;
        }
    }
}

/// Gauss-Jordan one pivot per pass (lattice.cu's `reinvert`'s operation order): the model `gauss_jordan` keeps to.
/// `pivot_row` is scratch of length n.
pub fn gauss_jordan_one<T: Real>(m: &mut [T], n: usize, piv: &mut [usize], pivot_row: &mut [T]) -> bool {
    for k in 0..n {
        let mut p = k;
        for i in k + 1..n {
            if m[i * n + k].abs() > m[p * n + k].abs() {
                p = i;
            }
        }
        let pivot = m[p * n + k];
        if pivot == T::zero() || pivot.is_nan() {
            return false;
        }
        piv[k] = p;
        if p != k {
            for j in 0..n {
                m.swap(p * n + j, k * n + j);
            }
        }
        let d = T::one() / m[k * n + k];
        m[k * n + k] = T::one();
        for (x, r) in m[k * n..(k + 1) * n].iter_mut().zip(pivot_row.iter_mut()) {
            *x *= d;
            *r = *x;
        }
        eliminate_one(m, n, k, pivot_row);
    }
    for k in (0..n).rev() {
        if piv[k] != k {
            for row in m.chunks_exact_mut(n) {
                row.swap(k, piv[k]);
            }
        }
    }
    true
}

impl<S: Real> Chain<S> {
    /// The configuration as the reference reports it.
    pub fn config(&self) -> Config {
        Config { up: self.up.clone(), dn: self.dn.clone() }
    }
}

impl<S: Real> Ensemble<S> {
    /// The fast swap ratio of chain `c` for its up electron `a` and down electron `b` (for tests).
    pub fn swap_ratio<A: Real>(&mut self, c: usize, a: usize, b: usize) -> f64 {
        let np = self.pairs;
        let (t, chains) = self.split::<A>();
        let mut s = Scratch::<S, A>::new(np);
        let ch = &chains[c];
        swap_ratio(&t, ch, a, ch.up[a] as usize, b, ch.dn[b] as usize, &mut s).0.f64()
    }
}
