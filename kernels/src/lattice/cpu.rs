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
//!
//! W is `[b][a]` row-major: the f vector and the updates stream whole rows (vectorised by `dispatch!`). While a
//! chain runs, its W rows are padded with zeros to whole 64-byte vectors (16 f32, 8 f64; `Tables::ld`), so every row
//! loop is whole vectors: without the padding a row of N_P = 37 (L = 9) in f32 was 2 vectors and a 5-entry scalar
//! tail, and f32 gained little over f64. The zeros add exactly nothing, so the padding changes no rounding.
//!
//! Storage and evaluation are in S: moves, ratios, f, g and the updates (f32 in single and mixed, the paper's
//! single-precision evaluation); energies are accumulated in f64. A is the arithmetic of the rebuild only.
//!
//! Recompute: every `recompute` sweeps (0: never) W is rebuilt from scratch by `reinvert`, Gauss-Jordan with
//! partial pivoting in the arithmetic type A (f64 in double and mixed, f32 in single), the same algorithm, pivot
//! choice and operation order as `reinvert` in lattice.cu. A degenerate accepted swap (both intermediate ratios
//! nearly zero) takes the same path.

use super::{tally, Config, Model, Stream, HL, UP};
use crate::Real;
use rayon::prelude::*;

/// `$e` with the constant N the lanes of one 64-byte vector of S (16 f32, 8 f64), for the row kernels below.
macro_rules! by_lanes {
    ($s:ty, $n:ident => $e:expr) => {
        if std::mem::size_of::<$s>() == 4 {
            const $n: usize = 16;
            $e
        } else {
            const $n: usize = 8;
            $e
        }
    };
}

/// `$e` for each block of at most 8 vectors of a row of `$chunks` vectors: `$j` the block's first vector, the
/// constant `$q` its length (held in registers across the rows).
macro_rules! by_blocks {
    ($chunks:expr, $j:ident, $q:ident => $e:expr) => {{
        let chunks = $chunks;
        let mut $j = 0;
        while $j < chunks {
            let n = (chunks - $j).min(8);
            match n {
                1 => { const $q: usize = 1; $e }
                2 => { const $q: usize = 2; $e }
                3 => { const $q: usize = 3; $e }
                4 => { const $q: usize = 4; $e }
                5 => { const $q: usize = 5; $e }
                6 => { const $q: usize = 6; $e }
                7 => { const $q: usize = 7; $e }
                _ => { const $q: usize = 8; $e }
            }
            $j += n;
        }
    }};
}

#[inline(always)]
fn widen<S: Real, A: Real>(x: S) -> A {
    A::of(x.f64())
}

/// Row stride of W while a chain runs: N_P rounded up to whole 64-byte vectors of S.
pub fn stride<S>(pairs: usize) -> usize {
    pairs.next_multiple_of(64 / std::mem::size_of::<S>())
}

/// The dense N_P x N_P `w` with rows padded with zeros to stride `ld`.
fn padded<S: Real>(w: &[S], np: usize, ld: usize) -> Vec<S> {
    let mut out = vec![S::zero(); np * ld];
    for (pad, row) in out.chunks_exact_mut(ld).zip(w.chunks_exact(np)) {
        pad[..np].copy_from_slice(row);
    }
    out
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
    /// Rebuild W after a sweep whose residual check (`residual_diag`) exceeds this (0: no check).
    pub residual_limit: f64,
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
            residual_limit: 0.0,
            degenerate: None,
        }
    }

    /// Run every chain on the current rayon pool: `equil` sweeps, then `sweeps` sweeps with a measurement each.
    pub fn run<A: Real>(&mut self, equil: usize, sweeps: usize) {
        let (tables, chains) = self.split();
        chains.par_iter_mut().for_each(|c| {
            crate::dispatch!(run_chain::<S, A>(&tables, c, equil, sweeps));
        });
    }

    /// The shared tables and the chains, borrowed apart.
    fn split(&mut self) -> (Tables<'_, S>, &mut [Chain<S>]) {
        // the intermediate ratios are computed in S, so S's threshold (f32 in mixed too)
        let degenerate = self.degenerate.unwrap_or(super::degenerate_ratio(S::EPS));
        let t = Tables { sites: self.sites, pairs: self.pairs, ld: stride::<S>(self.pairs), j: self.j, recompute: self.recompute, residual_limit: self.residual_limit, degenerate, nbr: &self.nbr, hop: &self.hop, phi: &self.phi };
        (t, &mut self.chains)
    }
}

struct Tables<'a, S> {
    sites: usize,
    pairs: usize,
    /// Row stride of W during a run (`stride`).
    ld: usize,
    j: f64,
    recompute: usize,
    residual_limit: f64,
    degenerate: f64,
    nbr: &'a [u32],
    hop: &'a [f64],
    phi: &'a [S],
}

/// Scratch vectors of one chain: f, g, p and the update's row have the padded length `ld` (p's padding stays 0).
struct Scratch<S, A> {
    f: Vec<S>,
    /// F_a = sum_b |coef_b| |W_ba| beside f, for `screen`'s bound (`fvec_with` with ABS).
    fabs: Vec<S>,
    g: Vec<S>,
    p: Vec<S>,
    /// Scratch of `gauss_jordan_ld` (2 ld + 2 N_P in A).
    row: Vec<A>,
    /// The scaled row of `update_dn`.
    vs: Vec<S>,
    /// The coefficients of `fvec`, the column of `update_up`, -g of `update_dn` (N_P; length ld, zeros past N_P).
    q: Vec<S>,
    /// M, then its inverse, for `reinvert` (rows of stride `stride::<A>`, zeros past N_P).
    m: Vec<A>,
    piv: Vec<usize>,
    /// `column_order` of the rebuild.
    order: Vec<usize>,
}

impl<S: Real, A: Real> Scratch<S, A> {
    fn new(np: usize, ld: usize) -> Self {
        let v = vec![S::zero(); ld];
        let ld_a = stride::<A>(np);
        Scratch { f: v.clone(), fabs: v.clone(), g: v.clone(), p: v.clone(), row: vec![A::zero(); 2 * ld_a + 2 * np], vs: v.clone(), q: v, m: vec![A::zero(); np * ld_a], piv: vec![0; np], order: vec![0; np] }
    }
}

#[inline(always)]
fn run_chain<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, equil: usize, sweeps: usize) {
    let (np, ld) = (t.pairs, t.ld);
    let mut s = Scratch::<S, A>::new(np, ld);
    // W padded to stride ld for the run, dense again after it (2 N_P^2 copies against N_P^3 work per sweep)
    c.w = padded(&c.w, np, ld);
    for k in 0..equil + sweeps {
        for _ in 0..2 * np {
            step(t, c, &mut s);
        }
        rebuild_policy(t, c, &mut s, k);
        if k >= equil {
            let e = energy(t, c, &mut s);
            c.tally[tally::E_SUM] += e;
            c.tally[tally::E2_SUM] += e * e;
            c.tally[tally::MEASUREMENTS] += 1.0;
        }
    }
    c.w = dense(&c.w, np, ld);
}

/// Mixed precision on the CPU (from 2026-12-03, issue #26): double's chain with its decisions screened in f32. The
/// state (configuration, W in f64, random stream, tallies) is double's and changes only as double's would; a copy of
/// W rounded to f32 after every accepted move (and phi in f32) gives each proposal an f32 ratio and a bound on its
/// difference from the f64 ratio double computes (`screen`). A move the bound shows to be rejected is rejected; the
/// rest (the accepted ones and those near the line) take double's f64 ratio and decision. So the chains follow
/// double's path exactly, W bit for bit, while the other ratios (84% of the proposals at L = 9, 69% at L = 15, as
/// `screen_table` measured on 2026-12-03) and every measurement are evaluated in f32 from a W one rounding from
/// double's. The f32 chains of single (and of mixed before) decide on ratios from W updated in f32, whose error
/// after a few updates exceeds the ratios of moves into low-weight configurations: at L = 15 they left the
/// distribution in about half the suite's GPU runs (module docs).
pub struct Screened {
    /// The chains' state; `state.chains[i]` is chain i as double runs it, tallies included.
    pub state: Ensemble<f64>,
    /// phi in f32 and each chain's W rounded to f32, with the configuration mirrored.
    copy: Ensemble<f32>,
}

impl Screened {
    /// Chains from their starts, as `Ensemble::new`, with double's rebuild policy (never).
    pub fn new(m: &Model, starts: &[(Config, Vec<f64>)], seed: u64) -> Self {
        Screened { state: Ensemble::new(m, starts, seed), copy: Ensemble::new(m, starts, seed) }
    }

    /// Run every chain on the current rayon pool: `equil` sweeps, then `sweeps` sweeps with a measurement each.
    pub fn run(&mut self, equil: usize, sweeps: usize) {
        let (t, chains) = self.state.split();
        let (t32, copies) = self.copy.split();
        chains.par_iter_mut().zip(copies.par_iter_mut()).for_each(|(c, c32)| {
            crate::dispatch!(screened_chain::<false>(&t, c, &t32, c32, equil, sweeps, &mut vec![]));
        });
    }

    /// `run`, with the f64 ratio of every proposal computed too: each proposal's (swap, f32 ratio, f64 ratio, band,
    /// u), chain after chain. The decisions are `run`'s.
    #[cfg(test)]
    pub(super) fn run_audited(&mut self, equil: usize, sweeps: usize) -> Vec<Audit> {
        let (t, chains) = self.state.split();
        let (t32, copies) = self.copy.split();
        let mut out: Vec<Vec<Audit>> = vec![];
        chains.par_iter_mut().zip(copies.par_iter_mut()).map(|(c, c32)| {
            let mut a = vec![];
            crate::dispatch!(screened_chain::<true>(&t, c, &t32, c32, equil, sweeps, &mut a));
            a
        }).collect_into_vec(&mut out);
        out.concat()
    }
}

/// A proposal of an audited run (`Screened::run_audited`, a test hook).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(test), allow(dead_code))]
pub(super) struct Audit {
    pub swap: bool,
    pub r32: f64,
    pub r64: f64,
    pub band: f64,
    pub u: f64,
}

/// One chain of `Screened::run`; with AUDIT (the tests' hook), every proposal's f64 ratio is computed as well and
/// pushed to `audit`.
#[inline(always)]
fn screened_chain<const AUDIT: bool>(t: &Tables<f64>, c: &mut Chain<f64>, t32: &Tables<f32>, c32: &mut Chain<f32>, equil: usize, sweeps: usize, audit: &mut Vec<Audit>) {
    let (np, ld, ld32) = (t.pairs, t.ld, t32.ld);
    let mut s = Scratch::<f64, f64>::new(np, ld);
    let mut s32 = Scratch::<f32, f32>::new(np, ld32);
    c.w = padded(&c.w, np, ld);
    c32.w = vec![0.0; np * ld32];
    round_copy(t, c, c32, ld32);
    for k in 0..equil + sweeps {
        for _ in 0..2 * np {
            let (mv, u) = propose(t, c);
            let (r, band) = screen(t32, c32, &mut s32, mv);
            let hi = r.abs() + band;
            if AUDIT {
                let r64 = ratio(t, c, &mut s, mv).0;
                audit.push(Audit { swap: matches!(mv, Move::Swap { .. }), r32: r, r64, band, u });
            }
            if u < hi * hi {
                c.tally[if matches!(mv, Move::Hop { .. }) { tally::CONFIRMED_HOPS } else { tally::CONFIRMED_SWAPS }] += 1.0;
                let (r64, h) = ratio(t, c, &mut s, mv);
                if u < r64 * r64 {
                    commit(t, c, &mut s, mv, h, Some(&mut Mirror { w: &mut c32.w, ld: ld32 }));
                    mirror_config(c, c32);
                }
            }
        }
        let rebuilds = c.tally[tally::RECOMPUTES];
        rebuild_policy(t, c, &mut s, k);
        if c.tally[tally::RECOMPUTES] != rebuilds {
            round_copy(t, c, c32, ld32);
        }
        if k >= equil {
            let e = energy(t32, c32, &mut s32);
            c.tally[tally::E_SUM] += e;
            c.tally[tally::E2_SUM] += e * e;
            c.tally[tally::MEASUREMENTS] += 1.0;
        }
    }
    // the measurements' counts, made on the copy
    for k in [tally::KIN_RATIOS, tally::BONDS, tally::FVECS] {
        c.tally[k] += std::mem::take(&mut c32.tally[k]);
    }
    c.w = dense(&c.w, np, ld);
    c32.w = dense(&c32.w, np, ld32);
}

/// The copy made the state's again: configuration and W rounded to f32 (stride `ld32`). After a commit, the commit
/// writes W's copy (`Mirror`) and only the configuration is copied.
#[inline(always)]
fn round_copy(t: &Tables<f64>, c: &Chain<f64>, c32: &mut Chain<f32>, ld32: usize) {
    mirror_config(c, c32);
    mirror_all(&mut Mirror { w: &mut c32.w, ld: ld32 }, &c.w, t.ld);
}

/// The copy's configuration made the state's.
#[inline(always)]
fn mirror_config(c: &Chain<f64>, c32: &mut Chain<f32>) {
    c32.up.copy_from_slice(&c.up);
    c32.dn.copy_from_slice(&c.dn);
    c32.occ.copy_from_slice(&c.occ);
    c32.which.copy_from_slice(&c.which);
}

/// `Screened`'s f32 copy of W (rows of stride `ld`), which the last rank-1 update of each commit writes while the
/// new rows are in registers (`rank1`): a pass over W after the commit (`round_copy`, before 2026-12-03) cost more
/// than the update on the H200 host.
struct Mirror<'a> {
    w: &'a mut [f32],
    ld: usize,
}

/// Row b of the copy from the state's row `w` (its first entries; the copy's padding stays zero).
#[inline(always)]
fn mirror_row<S: Real>(m: &mut Mirror, b: usize, w: &[S]) {
    for (x, y) in m.w[b * m.ld..].iter_mut().zip(w) {
        *x = y.f64() as f32;
    }
}

/// Every row of the copy from the state's W (rows of stride `ld`).
#[inline(always)]
fn mirror_all<S: Real>(m: &mut Mirror, w: &[S], ld: usize) {
    for (b, w) in w.chunks_exact(ld).enumerate() {
        mirror_row(m, b, w);
    }
}

/// sum_a |x_a| |y_a| in 16 f32 lanes (its relative rounding error, below (n / 16 + 4) 2^-24, is covered by `screen`'s
/// factor 1.01).
#[inline(always)]
fn abs_dot(x: &[f32], y: &[f32]) -> f64 {
    let mut acc = [0.0f32; 16];
    for (x, y) in x.as_chunks::<16>().0.iter().zip(y.as_chunks::<16>().0) {
        for k in 0..16 {
            acc[k] = x[k].abs().mul_add(y[k].abs(), acc[k]);
        }
    }
    reduce(acc).f64()
}

/// sum_i |x(i)| for i < n, in four interleaved f32 sums: a serial sum waits on each addition, and these n terms
/// (strided, or a product with a table) do not load as vectors. Its relative error (a sum of nonnegative terms in
/// any order: below n 2^-24) is covered by `screen`'s factor 1.01.
#[inline(always)]
fn abs_sum(n: usize, x: impl Fn(usize) -> f32) -> f64 {
    let mut acc = [0.0f32; 4];
    let whole = n - n % 4;
    for i in (0..whole).step_by(4) {
        for k in 0..4 {
            acc[k] += x(i + k).abs();
        }
    }
    for i in whole..n {
        acc[i - whole] += x(i).abs();
    }
    ((acc[0] + acc[1]) + (acc[2] + acc[3])).f64()
}

/// Unit roundoff of f32 (2^-24).
const U32: f64 = f32::EPSILON as f64 / 2.0;

/// The f32 ratio of a proposal from the copy, and a bound on its distance from the f64 ratio double computes from
/// the state (both in f64). A sum of n products in f32 differs from the exact sum of the f64 data by at most
/// c sum |terms|, c = (d + 2) u with u = 2^-24 and d the roundings on the longest path of the sum (Higham, Accuracy
/// and Stability, section 3.1), the 2 for each factor's rounding to f32: d = n + 1 for a serial sum (an up
/// electron's hop), `f32_path` for the f vector's blocked sums (`gemv_t`) and n / 16 + 4 for `dot_row`'s 16 lanes
/// and their tree. Double's own f64 error, and the rounding of the absolute sums taken here, are below a thousandth
/// of that and covered by a factor 1.01. A swap's R = W_ba (phi(y, x) - k) + f_a h adds the factors' bounds by the
/// product rule; its k = f . p carries f's error, bounded componentwise by F_a' = sum_b' |phi(y, d_b')| |W_b'a'|,
/// which the f vector's pass over W computes beside f (`fvec_with`), so k's share is sum_a' |p_a'| F_a'. Until
/// 2026-12-04 that pass was f's alone and the bound took max |p| times sum_a' F_a', from row sums of |W| kept with the
/// copy: looser by the spread of |p|. A move whose sqrt(u) lies above the f32 ratio plus this band is rejected by
/// double too. The absolute sums are f32 sums in lanes (`abs_sum`, `abs_dot`: a serial sum waits on every addition,
/// and the bound cost more than the ratio at L = 9).
#[inline(always)]
fn screen(t: &Tables<f32>, c: &Chain<f32>, s: &mut Scratch<f32, f32>, mv: Move) -> (f64, f64) {
    let (np, ns, ld) = (t.pairs, t.sites, t.ld);
    let serial = 1.01 * (np + 3) as f64 * U32;
    let blocked = 1.01 * (f32_path(np) + 2) as f64 * U32;
    let lanes = 1.01 * (ld / 16 + 6) as f64 * U32;
    let (r, band) = match mv {
        Move::Hop { spin, i, new, .. } => {
            let r = ratio(t, c, s, mv).0;
            let band = if spin == UP {
                let phi = &t.phi[new * ns..(new + 1) * ns];
                serial * abs_sum(np, |b| phi[c.dn[b] as usize] * c.w[b * ld + i])
            } else {
                lanes * abs_dot(&c.w[i * ld..(i + 1) * ld], &s.p[..ld])
            };
            (r, band)
        }
        Move::Swap { a, x, b, y } => {
            let (r, h) = swap_ratio_with::<f32, f32, true>(t, c, a, x, b, y, s);
            // s.f = f, s.fabs = F and s.p = phi(x, u_a'), as `swap_ratio_with` left them
            let (p, f, fabs) = (&s.p[..ld], &s.f[..ld], &s.fabs[..ld]);
            let (h_abs, fp_abs) = (abs_dot(&c.w[b * ld..(b + 1) * ld], p), abs_dot(f, p));
            let (wba, fa, h) = (c.w[b * ld + a].f64().abs(), f[a].f64().abs(), h.f64().abs());
            let phi_yx = t.phi[y * ns + x].f64().abs();
            // bounds on the errors of k, of phi(y, x) - k (d bounds that difference, computed or exact), f_a and h
            let e_k = blocked * abs_dot(fabs, p) + lanes * fp_abs;
            let d = phi_yx + fp_abs + e_k;
            let (e_d, e_fa, e_h) = (e_k + U32 * (phi_yx + d), blocked * fabs[a].f64(), lanes * h_abs);
            // the two products' errors (each factor's error times the other's bound), then their roundings and the sum's
            (r.f64(), wba * e_d + U32 * wba * d + fa * e_h + e_fa * (h + e_h) + 2.0 * U32 * (wba * d + fa * h))
        }
    };
    (r, 1.01 * band + 1e-30)
}

/// W dense again (row stride N_P) from stride `ld`.
fn dense<S: Real>(w: &[S], np: usize, ld: usize) -> Vec<S> {
    w.chunks_exact(ld).flat_map(|row| row[..np].iter().copied()).collect()
}

/// After sweep k (0-based): rebuild W when the interval is due or the residual check fails.
#[inline(always)]
fn rebuild_policy<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, s: &mut Scratch<S, A>, k: usize) {
    let due = t.recompute > 0 && (k + 1) % t.recompute == 0;
    if due || (t.residual_limit > 0.0 && !(residual_diag(t, c) <= t.residual_limit)) {
        reinvert(t, c, s);
    }
}

#[cfg(test)]
impl<S: Real> Ensemble<S> {
    /// Chain 0's sweep k (0-based; its rebuild policy, no measurement) step by step, `each(before, after)` after
    /// every step (W dense in both): the tests' move-by-move traces.
    pub(super) fn traced_sweep<A: Real>(&mut self, k: usize, mut each: impl FnMut(&Chain<S>, &Chain<S>)) {
        let (t, chains) = self.split();
        let (np, ld) = (t.pairs, t.ld);
        let c = &mut chains[0];
        let mut s = Scratch::<S, A>::new(np, ld);
        let unpadded = |c: &Chain<S>| Chain { w: dense(&c.w, np, ld), ..c.clone() };
        c.w = padded(&c.w, np, ld);
        for _ in 0..2 * np {
            let before = unpadded(c);
            step(&t, c, &mut s);
            each(&before, &unpadded(c));
        }
        rebuild_policy(&t, c, &mut s, k);
        c.w = dense(&c.w, np, ld);
    }
}

#[cfg(test)]
impl Ensemble<f32> {
    /// Every chain run beside a shadow f64 chain (`shadow`, built from the same starts) that takes the same moves:
    /// a move whose sqrt(u) is below the f32 |ratio| + `band` (band 0: every move the f32 ratio accepts; infinite:
    /// every move) is decided by the shadow's f64 ratio instead; the rest are rejected. With `screen`, the f32 W
    /// is not updated itself but rounded from the shadow's after every accepted move (and never rebuilt), and only
    /// the f32 chain measures; otherwise both measure after every sweep, into their own tallies.
    pub(super) fn run_oracle<A: Real>(&mut self, shadow: &mut Ensemble<f64>, equil: usize, sweeps: usize, band: f64, screen: bool) -> OracleCounts {
        let (t, chains) = self.split();
        let (t64, chains64) = shadow.split();
        chains
            .par_iter_mut()
            .zip(chains64.par_iter_mut())
            .map(|(c, c64)| crate::dispatch!(oracle_chain::<A>(&t, c, &t64, c64, (equil, sweeps), band, screen)))
            .reduce(OracleCounts::default, OracleCounts::add)
    }
}

/// What `run_oracle` counted over all chains.
#[cfg(test)]
#[derive(Default)]
pub(super) struct OracleCounts {
    /// Moves decided by the shadow's f64 ratio.
    pub calls: u64,
    /// Of them, those the f32 ratio would have decided otherwise.
    pub flips: u64,
    /// By f32 updates since the last rebuild (0 to 15 and more): the steps before a sweep's first such move, and
    /// the sweeps whose first such move came there.
    pub steps: [u64; 16],
    pub first_flips: [u64; 16],
}

#[cfg(test)]
impl OracleCounts {
    fn add(mut self, o: OracleCounts) -> OracleCounts {
        self.calls += o.calls;
        self.flips += o.flips;
        self.steps.iter_mut().zip(o.steps).for_each(|(a, b)| *a += b);
        self.first_flips.iter_mut().zip(o.first_flips).for_each(|(a, b)| *a += b);
        self
    }
}

#[cfg(test)]
#[inline(always)]
fn oracle_chain<A: Real>(t: &Tables<f32>, c: &mut Chain<f32>, t64: &Tables<f64>, c64: &mut Chain<f64>, (equil, sweeps): (usize, usize), band: f64, screen: bool) -> OracleCounts {
    let (np, ld, ld64) = (t.pairs, t.ld, t64.ld);
    let mut n = OracleCounts::default();
    let mut s = Scratch::<f32, A>::new(np, ld);
    let mut s64 = Scratch::<f64, f64>::new(np, ld64);
    c.w = padded(&c.w, np, ld);
    c64.w = padded(&c64.w, np, ld64);
    for k in 0..equil + sweeps {
        let (mut updates, mut flipped) = (0, false);
        for _ in 0..2 * np {
            if !flipped {
                n.steps[updates.min(15)] += 1;
            }
            let (mv, u) = propose(t, c);
            let (r, h) = ratio(t, c, &mut s, mv);
            let mut accept = false;
            if u.sqrt() < r.abs() + band {
                n.calls += 1;
                let (r64, h64) = ratio(t64, c64, &mut s64, mv);
                accept = u < r64 * r64;
                if accept != (u < r * r) {
                    n.flips += 1;
                    n.first_flips[updates.min(15)] += u64::from(!flipped);
                    flipped = true;
                }
                if accept {
                    commit(t64, c64, &mut s64, mv, h64, None);
                }
            }
            if accept && screen {
                // the shadow's configuration and W (rounded); the tally as `commit` counts
                round_copy(t64, c64, c, ld);
                c.tally[if matches!(mv, Move::Hop { .. }) { tally::HOPS_ACCEPTED } else { tally::SWAPS_ACCEPTED }] += 1.0;
            } else if accept {
                commit(t, c, &mut s, mv, h, None);
                updates += 1;
            }
        }
        if !screen {
            rebuild_policy(t, c, &mut s, k);
        }
        rebuild_policy(t64, c64, &mut s64, k);
        if k >= equil {
            let e = energy(t, c, &mut s);
            let e64 = if screen { None } else { Some(energy(t64, c64, &mut s64)) };
            for (tally, e) in [(&mut c.tally, Some(e)), (&mut c64.tally, e64)] {
                if let Some(e) = e {
                    tally[tally::E_SUM] += e;
                    tally[tally::E2_SUM] += e * e;
                    tally[tally::MEASUREMENTS] += 1.0;
                }
            }
        }
    }
    c.w = dense(&c.w, np, ld);
    c64.w = dense(&c64.w, np, ld64);
    n
}

/// f_a = sum_b phi(y, d_b) W_ba for all a (row-vector times W), each entry a chain of fused multiply-adds in row
/// order (b = 0, 1, ...; one rounding per term, as lattice.cu's FMA-contracted sums), accumulated in registers over
/// all rows (`gemv_t`), so the loop is bound by the loads of W and the FMAs. `coef` is scratch of N_P.
#[inline(always)]
fn fvec<S: Real>(t: &Tables<S>, c: &Chain<S>, y: usize, f: &mut [S], coef: &mut [S]) {
    fvec_with::<S, false>(t, c, y, f, &mut [], coef);
}

/// `fvec`, and with ABS also F_a = sum_b |phi(y, d_b)| |W_ba| into `fabs` in the same pass (`screen`'s bound).
#[inline(always)]
fn fvec_with<S: Real, const ABS: bool>(t: &Tables<S>, c: &Chain<S>, y: usize, f: &mut [S], fabs: &mut [S], coef: &mut [S]) {
    let (np, ld) = (t.pairs, t.ld);
    let row_y = &t.phi[y * t.sites..(y + 1) * t.sites];
    for (q, &d) in coef[..np].iter_mut().zip(&c.dn) {
        *q = row_y[d as usize];
    }
    by_lanes!(S, N => by_blocks!(ld / N, j, Q => {
        let fabs = if ABS { &mut fabs[j * N..(j + Q) * N] } else { &mut [] };
        gemv_t::<S, N, Q, ABS>(&mut f[j * N..(j + Q) * N], fabs, &coef[..np], &c.w[j * N..], ld)
    }));
}

/// The row kernels: W's rows (stride ld, a multiple of N) in blocks of Q vectors of N that stay in registers while
/// the loop runs over the rows. Written as loops over the rows with the vectors of a block as fixed-size arrays, so
/// each block entry is one vector instruction. A plain loop along a row leaves the vectorising to LLVM, which unrolls
/// it four vectors deep and runs rows shorter than that (64 f32: all of L = 9's 37 or 48, 38 of L = 15's 102 or 112)
/// in half-width and scalar remainder loops, and loops with nothing carried from one chunk or row to the next are
/// vectorised across them with gathers and scatters: either way f32, of twice the entries per vector, lost most of
/// its advantage. Every entry is computed with the same operations in the same order as the plain loops
/// (an FMA chain over the rows in order), so f64 rounds as before.
///
/// f = sum_b coef_b W[b][..] over the Q vectors of a block (`w` starts at the block's first column). In f32 the rows
/// are summed in blocks of `F32_ROWS`, each an FMA chain from zero, the blocks' sums then added in order in
/// registers: the longest rounding path is `f32_path` instead of N_P, which makes `screen`'s bound on f's error four
/// times tighter at L = 15 for one addition per block (adding each block's sums into f in memory instead, at
/// 3f35f7e, ran single below the unblocked code at L = 15 on the H200 host's AVX-512). f64 sums all rows in one FMA
/// chain, as before.
#[inline(always)]
fn gemv_t<S: Real, const N: usize, const Q: usize, const ABS: bool>(f: &mut [S], fabs: &mut [S], coef: &[S], w: &[S], ld: usize) {
    let (sum, abs) = if std::mem::size_of::<S>() == 8 {
        sum_rows::<S, N, Q, ABS>(coef, w, ld)
    } else {
        let (mut sum, mut abs) = ([[S::zero(); N]; Q], [[S::zero(); N]; Q]);
        for (k, block) in coef.chunks(F32_ROWS).enumerate() {
            let (acc, acc_abs) = sum_rows::<S, N, Q, ABS>(block, &w[k * F32_ROWS * ld..], ld);
            for q in 0..Q {
                for j in 0..N {
                    sum[q][j] += acc[q][j];
                    if ABS {
                        abs[q][j] += acc_abs[q][j];
                    }
                }
            }
        }
        (sum, abs)
    };
    for (f, a) in f.as_chunks_mut::<N>().0.iter_mut().zip(&sum) {
        *f = *a;
    }
    if ABS {
        for (f, a) in fabs.as_chunks_mut::<N>().0.iter_mut().zip(&abs) {
            *f = *a;
        }
    }
}

/// sum_b coef_b W[b][..] over the Q vectors of a block, the rows b < coef.len() of `w` (stride ld) in one FMA chain
/// from zero, in registers; with ABS also sum_b |coef_b| |W[b][..]| from the same loads (zeros without). The lanes'
/// loop is outside the vectors' so that LLVM, which unrolls the inner loop first, is left with the lanes to vectorise:
/// with the vectors' loop inside, it unrolled the 16 lanes and vectorised across the Q vectors with gathers and
/// scatters (masked, 7 of 8 lanes at L = 15), and mixed ran 7x slower than double there (2026-12-04).
#[inline(always)]
fn sum_rows<S: Real, const N: usize, const Q: usize, const ABS: bool>(coef: &[S], w: &[S], ld: usize) -> ([[S; N]; Q], [[S; N]; Q]) {
    let (mut acc, mut abs) = ([[S::zero(); N]; Q], [[S::zero(); N]; Q]);
    for (b, &cb) in coef.iter().enumerate() {
        let row = &w[b * ld..b * ld + Q * N].as_chunks::<N>().0;
        for j in 0..N {
            for q in 0..Q {
                acc[q][j] = cb.mul_add(row[q][j], acc[q][j]);
                if ABS {
                    abs[q][j] = cb.abs().mul_add(row[q][j].abs(), abs[q][j]);
                }
            }
        }
    }
    (acc, abs)
}

/// Rows per block of the f vector's sums in f32 (`gemv_t`).
const F32_ROWS: usize = 16;

/// The roundings on the longest path of an f-vector entry in f32 (`gemv_t`): F32_ROWS in its block's FMA chain, and
/// one for each later block's addition.
fn f32_path(np: usize) -> usize {
    F32_ROWS + np.div_ceil(F32_ROWS) - 1
}

/// W[b][..] += u_b v over the Q vectors of a block (`w` and `v` start at the block's first column): one FMA per entry.
/// With a mirror (and the block's first column), each new row is also rounded into the mirror's copy (`Mirror`).
#[inline(always)]
fn rank1<S: Real, const N: usize, const Q: usize>(w: &mut [S], u: &[S], v: &[S], ld: usize, mirror: Option<(&mut Mirror, usize)>) {
    let v: [[S; N]; Q] = *<&[[S; N]; Q]>::try_from(v[..Q * N].as_chunks::<N>().0).unwrap();
    // The row through black_box, an opaque pointer: otherwise LLVM may vectorise this loop across the rows
    // (nothing is carried from one row to the next), with gathers and scatters that ran several times slower.
    let Some((m, j0)) = mirror else {
        for (b, &ub) in u.iter().enumerate() {
            let row = std::hint::black_box(&mut w[b * ld..b * ld + Q * N]).as_chunks_mut::<N>().0;
            for q in 0..Q {
                for k in 0..N {
                    row[q][k] = ub.mul_add(v[q][k], row[q][k]);
                }
            }
        }
        return;
    };
    // The new row is computed whole before either store: storing each entry to the row and its copy in turn, LLVM
    // (which cannot tell that the copy does not overlap the row) kept that order entry by entry, one scalar FMA,
    // conversion and two scalar stores each (perf on this machine, L = 15: 14% of mixed's samples, 2026-12-04).
    for (b, &ub) in u.iter().enumerate() {
        let row = std::hint::black_box(&mut w[b * ld..b * ld + Q * N]).as_chunks_mut::<N>().0;
        let mut x = [[S::zero(); N]; Q];
        for q in 0..Q {
            for k in 0..N {
                x[q][k] = ub.mul_add(v[q][k], row[q][k]);
            }
        }
        row.copy_from_slice(&x);
        let rounded: [[f32; N]; Q] = std::array::from_fn(|q| std::array::from_fn(|k| x[q][k].f64() as f32));
        m.w[b * m.ld + j0..b * m.ld + j0 + Q * N].as_chunks_mut::<N>().0.copy_from_slice(&rounded);
    }
}

/// W += u v^T on the padded W (u of length N_P, v of length ld), rounded into `mirror` as it goes (`rank1`).
#[inline(always)]
fn update_rank1<S: Real>(w: &mut [S], u: &[S], v: &[S], ld: usize, mut mirror: Option<&mut Mirror>) {
    by_lanes!(S, N => by_blocks!(ld / N, j, Q => rank1::<S, N, Q>(&mut w[j * N..], u, &v[j * N..], ld, mirror.as_deref_mut().map(|m| (m, j * N)))));
}

/// g_b = `dot_row`(W[b], p) for every row b, four rows per pass over p (four independent FMA chains instead of one
/// that waits on each FMA), each row's partial sums and their reduction exactly those of `dot_row`.
#[inline(always)]
fn dots<S: Real>(w: &[S], p: &[S], np: usize, ld: usize, g: &mut [S]) {
    let mut b = 0;
    while b + 4 <= np {
        by_lanes!(S, N => {
            let mut acc = [[S::zero(); N]; 4];
            let rows: [&[[S; N]]; 4] = std::array::from_fn(|r| w[(b + r) * ld..(b + r + 1) * ld].as_chunks::<N>().0);
            for (j, pj) in p[..ld].as_chunks::<N>().0.iter().enumerate() {
                for r in 0..4 {
                    for k in 0..N {
                        acc[r][k] = rows[r][j][k].mul_add(pj[k], acc[r][k]);
                    }
                }
            }
            for r in 0..4 {
                g[b + r] = reduce(acc[r]);
            }
        });
        b += 4;
    }
    for b in b..np {
        g[b] = dot_row(&w[b * ld..(b + 1) * ld], &p[..ld]);
    }
}

/// p_a = phi(u_a, x) (phi is symmetric: row x gathered at the up sites).
#[inline(always)]
fn gather<S: Real>(t: &Tables<S>, c: &Chain<S>, x: usize, p: &mut [S]) {
    let row_x = &t.phi[x * t.sites..(x + 1) * t.sites];
    for (pa, &u) in p.iter_mut().zip(&c.up) {
        *pa = row_x[u as usize];
    }
}

/// sum_a w_a p_a over one 64-byte vector of partial sums of fused multiply-adds (8 in f64, 16 in f32): a serial fold
/// is one long chain of dependent additions that the compiler may not reorder (no fast-math), so it neither
/// vectorises nor overlaps; a vector of lanes does both. Eight lanes in f32 (as before 2026-11-27) used half a
/// vector and a chain of twice as many dependent FMAs as f64 per element. `w` and `p` have the same length.
#[inline(always)]
fn dot_row<S: Real>(w: &[S], p: &[S]) -> S {
    if std::mem::size_of::<S>() == 4 {
        dot_lanes::<S, 16>(w, p)
    } else {
        dot_lanes::<S, 8>(w, p)
    }
}

/// `dot_row` with N (8 or 16) partial sums, folded in halves down to eight, then as a tree (for N = 8 the order of
/// the code before, so f64 rounds as it did).
#[inline(always)]
fn dot_lanes<S: Real, const N: usize>(w: &[S], p: &[S]) -> S {
    let mut acc = [S::zero(); N];
    let ((wc, wr), (pc, pr)) = (w.as_chunks::<N>(), p.as_chunks::<N>());
    for (x, y) in wc.iter().zip(pc) {
        for k in 0..N {
            acc[k] = x[k].mul_add(y[k], acc[k]);
        }
    }
    for (k, (&x, &y)) in wr.iter().zip(pr).enumerate() {
        acc[k] = x.mul_add(y, acc[k]);
    }
    reduce(acc)
}

/// The sum of `dot_lanes`' N partial sums: folded in halves down to eight, then as a tree.
#[inline(always)]
fn reduce<S: Real, const N: usize>(mut acc: [S; N]) -> S {
    let mut n = N;
    while n > 8 {
        n /= 2;
        for k in 0..n {
            acc[k] += acc[k + n];
        }
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

/// Sherman-Morrison for up electron a moving to s, given f (with f_a the ratio), in S: in mixed precision the
/// matrix is f32 and so is its rank-1 update, as lattice.cu's `update_cols`. Each entry is updated by one fused
/// multiply-add (one rounding, as on the GPU): the `dispatch!` builds have FMA instructions. f's padding is 0, so
/// W's stays 0.
#[inline(always)]
fn update_up<S: Real>(t: &Tables<S>, c: &mut Chain<S>, a: usize, s: usize, f: &[S], col: &mut [S], mut mirror: Option<&mut Mirror>) {
    let (np, ld) = (t.pairs, t.ld);
    let inv_r = S::one() / f[a];
    // -W_ba / r: each entry becomes (-col_b) f_a' + W_ba', the same single rounding as (-f_a') col_b + W_ba'
    for (b, x) in col[..np].iter_mut().enumerate() {
        *x = -(c.w[b * ld + a] * inv_r);
    }
    update_rank1(&mut c.w, &col[..np], &f[..ld], ld, mirror.as_deref_mut());
    for (b, &x) in col[..np].iter().enumerate() {
        c.w[b * ld + a] = -x;
    }
    if let Some(m) = mirror {
        for (b, &x) in col[..np].iter().enumerate() {
            m.w[b * m.ld + a] = -x.f64() as f32;
        }
    }
    c.up[a] = s as u32;
}

/// Sherman-Morrison for down electron b moving to s, given g (with g_b the ratio); in S, as `update_up`.
#[inline(always)]
fn update_dn<S: Real>(t: &Tables<S>, c: &mut Chain<S>, b: usize, s: usize, g: &[S], row: &mut [S], u: &mut [S], mut mirror: Option<&mut Mirror>) {
    let (np, ld) = (t.pairs, t.ld);
    let inv_r = S::one() / g[b];
    let row = &mut row[..ld];
    for (r, &x) in row.iter_mut().zip(&c.w[b * ld..(b + 1) * ld]) {
        *r = x * inv_r;
    }
    for (u, &x) in u[..np].iter_mut().zip(g) {
        *u = -x;
    }
    update_rank1(&mut c.w, &u[..np], row, ld, mirror.as_deref_mut());
    c.w[b * ld..(b + 1) * ld].copy_from_slice(row);
    if let Some(m) = mirror {
        mirror_row(m, b, row);
    }
    c.dn[b] = s as u32;
}

/// Swap ratio of up electron a on x with down electron b on y; leaves f and p (the gather at x) in scratch and
/// returns (R, h).
#[inline(always)]
fn swap_ratio<S: Real, A: Real>(t: &Tables<S>, c: &Chain<S>, a: usize, x: usize, b: usize, y: usize, s: &mut Scratch<S, A>) -> (S, S) {
    swap_ratio_with::<S, A, false>(t, c, a, x, b, y, s)
}

/// `swap_ratio`, with ABS also F of f (`fvec_with`) in scratch.
#[inline(always)]
fn swap_ratio_with<S: Real, A: Real, const ABS: bool>(t: &Tables<S>, c: &Chain<S>, a: usize, x: usize, b: usize, y: usize, s: &mut Scratch<S, A>) -> (S, S) {
    let ld = t.ld;
    fvec_with::<S, ABS>(t, c, y, &mut s.f, &mut s.fabs, &mut s.q);
    gather(t, c, x, &mut s.p);
    let wrow = &c.w[b * ld..(b + 1) * ld];
    let h = dot_row(wrow, &s.p);
    let k = dot_row(&s.f, &s.p);
    (wrow[a] * (t.phi[y * t.sites + x] - k) + s.f[a] * h, h)
}

/// A proposed move: electron i of `spin` hops from `old` to the empty site `new`, or the up electron a on x swaps
/// with the down electron b on y.
#[derive(Clone, Copy)]
enum Move {
    Hop { spin: u32, i: usize, old: usize, new: usize },
    Swap { a: usize, x: usize, b: usize, y: usize },
}

/// Draw a move and its uniform number (the thesis' ElectronMove), counting it in the tally.
#[inline(always)]
fn propose<S: Real>(t: &Tables<S>, c: &mut Chain<S>) -> (Move, f64) {
    let i = c.rng.below(t.pairs);
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
        (Move::Hop { spin, i, old, new }, u)
    } else {
        c.tally[tally::SWAPS] += 1.0;
        let j = c.which[new] as usize;
        let (a, x, b, y) = if spin == UP { (i, old, j, new) } else { (j, new, i, old) };
        (Move::Swap { a, x, b, y }, u)
    }
}

/// The move's ratio, and h of a swap (`swap_ratio`); leaves in scratch what `commit` needs.
#[inline(always)]
fn ratio<S: Real, A: Real>(t: &Tables<S>, c: &Chain<S>, s: &mut Scratch<S, A>, mv: Move) -> (f64, S) {
    let (np, ld) = (t.pairs, t.ld);
    match mv {
        Move::Hop { spin, i, new, .. } => {
            let r: S = if spin == UP {
                let row = &t.phi[new * t.sites..(new + 1) * t.sites];
                (0..np).fold(S::zero(), |acc, b| acc + row[c.dn[b] as usize] * c.w[b * ld + i])
            } else {
                gather(t, c, new, &mut s.p);
                dot_row(&c.w[i * ld..(i + 1) * ld], &s.p)
            };
            (r.f64(), S::zero())
        }
        Move::Swap { a, x, b, y } => {
            let (r, h) = swap_ratio(t, c, a, x, b, y, s);
            (r.f64(), h)
        }
    }
}

/// Apply an accepted move whose `ratio` was the last computed on this chain, rounding the new W into `mirror`.
#[inline(always)]
fn commit<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, s: &mut Scratch<S, A>, mv: Move, h: S, mirror: Option<&mut Mirror>) {
    let (np, ld) = (t.pairs, t.ld);
    match mv {
        Move::Hop { spin, i, old, new } => {
            if spin == UP {
                fvec(t, c, new, &mut s.f, &mut s.q);
                update_up(t, c, i, new, &s.f, &mut s.q, mirror);
            } else {
                dots(&c.w, &s.p, np, ld, &mut s.g);
                update_dn(t, c, i, new, &s.g, &mut s.vs, &mut s.q, mirror);
            }
            c.occ[old] = HL;
            c.occ[new] = spin;
            c.which[new] = i as u32;
            c.tally[tally::HOPS_ACCEPTED] += 1.0;
        }
        Move::Swap { a, x, b, y } => {
            commit_swap(t, c, a, x, b, y, h, s, mirror);
            c.occ[x] = super::DN;
            c.occ[y] = UP;
            c.which[x] = b as u32;
            c.which[y] = a as u32;
            c.tally[tally::SWAPS_ACCEPTED] += 1.0;
        }
    }
}

/// One Metropolis step.
#[inline(always)]
fn step<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, s: &mut Scratch<S, A>) {
    let (mv, u) = propose(t, c);
    let (r, h) = ratio(t, c, s, mv);
    if u < r * r {
        commit(t, c, s, mv, h, None);
    }
}

/// Commit an accepted swap (f and p of `swap_ratio` still in scratch) as two rank-1 updates, the second rounding the
/// new W into `mirror`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn commit_swap<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, a: usize, x: usize, b: usize, y: usize, h: S, s: &mut Scratch<S, A>, mirror: Option<&mut Mirror>) {
    let (np, ld) = (t.pairs, t.ld);
    if s.f[a].abs().max(h.abs()).f64() < t.degenerate {
        // Both single moves pass through a (nearly) singular matrix: Sherman-Morrison would divide W by the small
        // ratio and amplify its rounding error by as much, so W is rebuilt from scratch instead.
        c.up[a] = y as u32;
        c.dn[b] = x as u32;
        reinvert(t, c, s);
        if let Some(m) = mirror {
            mirror_all(m, &c.w, ld);
        }
        return;
    }
    if s.f[a].abs() >= h.abs() {
        update_up(t, c, a, y, &s.f, &mut s.q, None);
        gather(t, c, x, &mut s.p);
        dots(&c.w, &s.p, np, ld, &mut s.g);
        update_dn(t, c, b, x, &s.g, &mut s.vs, &mut s.q, mirror);
    } else {
        dots(&c.w, &s.p, np, ld, &mut s.g);
        update_dn(t, c, b, x, &s.g, &mut s.vs, &mut s.q, None);
        fvec(t, c, y, &mut s.f, &mut s.q);
        update_up(t, c, a, y, &s.f, &mut s.q, mirror);
    }
}

/// The residual check: max_a |(M W)_aa - 1|, M_ab = phi(u_a, d_b), in f64 (the products of S values are exact, and
/// an f32 sum would round at the level it measures); NaN if W holds one. N_P^2 gathers and products, a kinetic
/// term's work per electron, against the rebuild's 2 N_P^3 flops. The diagonal sees both ways a W goes wrong: a
/// rank-1 update whose ratio is off leaves its error in row a of the residual after an up electron's move (entry
/// (a, a) included) and in every row after a down electron's; rounding errors spread over all entries.
///
/// The sums run down W's rows, one lane per a: row b adds phi(d_b, u_a) W_ba to every (M W)_aa (phi is symmetric).
/// Each (M W)_aa is the same sum in the same order as one serial sum per a down W's column, the way this was
/// computed until 2026-12-04, bit for bit; but that serial sum waited on every addition. On this suite's 2-core
/// machine (L = 9, 512 chains, interleaved, three runs each) single went from 106k-108k to 110k-112k chain sweeps/s
/// and mixed from 110k-114k to 114k-119k.
#[inline(always)]
fn residual_diag<S: Real>(t: &Tables<S>, c: &Chain<S>) -> f64 {
    let (np, ns, ld) = (t.pairs, t.sites, t.ld);
    let mut diag = vec![0.0f64; np];
    for (&d, w) in c.dn.iter().zip(c.w.chunks_exact(ld)) {
        let row = &t.phi[d as usize * ns..(d as usize + 1) * ns];
        for ((x, &u), &w) in diag.iter_mut().zip(&c.up).zip(w) {
            *x += row[u as usize].f64() * w.f64();
        }
    }
    let mut worst = 0.0f64;
    for x in diag {
        let d = (x - 1.0).abs();
        if !(d <= worst) {
            worst = d; // NaN stays
            if d.is_nan() {
                break;
            }
        }
    }
    worst
}

/// Local energy per site.
#[inline(always)]
fn energy<S: Real, A: Real>(t: &Tables<S>, c: &mut Chain<S>, s: &mut Scratch<S, A>) -> f64 {
    let (np, ns, ld) = (t.pairs, t.sites, t.ld);
    let mut ekin = 0.0f64;
    let mut nkin = 0.0;
    for a in 0..np {
        let site = c.up[a] as usize;
        for jn in 0..4 {
            let n = t.nbr[4 * site + jn] as usize;
            if c.occ[n] == HL {
                let row = &t.phi[n * ns..(n + 1) * ns];
                let r = (0..np).fold(S::zero(), |acc, b| acc + row[c.dn[b] as usize] * c.w[b * ld + a]);
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
                ekin += t.hop[4 * site + jn] * dot_row(&c.w[b * ld..(b + 1) * ld], &s.p).f64();
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
        fvec(t, c, y, &mut s.f, &mut s.q);
        fvecs += 1.0;
        for jn in 0..4 {
            let x = t.nbr[4 * y + jn] as usize;
            if c.occ[x] != UP {
                continue;
            }
            let a = c.which[x] as usize;
            gather(t, c, x, &mut s.p);
            let wrow = &c.w[b * ld..(b + 1) * ld];
            let h = dot_row(wrow, &s.p);
            let k = dot_row(&s.f, &s.p);
            let r = wrow[a] * (t.phi[y * ns + x] - k) + s.f[a] * h;
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
    let ld = stride::<A>(np);
    c.tally[tally::RECOMPUTES] += 1.0;
    for (a, row) in s.m.chunks_exact_mut(ld).enumerate() {
        let phi_u = &t.phi[c.up[a] as usize * t.sites..(c.up[a] as usize + 1) * t.sites];
        for (x, &d) in row.iter_mut().zip(&c.dn) {
            *x = widen(phi_u[d as usize]);
        }
        // the padding zero (a failed rebuild leaves garbage there)
        row[np..].iter_mut().for_each(|x| *x = A::zero());
    }
    if gauss_jordan_ld(&mut s.m, np, ld, &mut s.piv, &mut s.row) {
        column_order(&s.piv, &mut s.order);
        for (w, m) in c.w.chunks_exact_mut(t.ld).zip(s.m.chunks_exact(ld)) {
            w[..np].iter_mut().zip(&s.order).for_each(|(w, &j)| *w = S::of(m[j].f64()));
        }
    }
}

/// In-place inverse of the n x n row-major `m` by Gauss-Jordan with partial pivoting; false if a pivot is zero
/// (then `m` is garbage). `scratch` has length 4 n.
pub fn gauss_jordan<T: Real>(m: &mut [T], n: usize, piv: &mut [usize], scratch: &mut [T]) -> bool {
    if !crate::dispatch!(gauss_jordan_ld(m, n, n, piv, scratch)) {
        return false;
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

/// The column of `gauss_jordan_ld`'s result that holds column a of the inverse: the row interchanges `piv` undone
/// as column interchanges in reverse order, as a gather (`reinvert` applies it in its copy to W, a pass over the
/// matrix fewer).
#[inline(always)]
fn column_order(piv: &[usize], order: &mut [usize]) {
    order.iter_mut().enumerate().for_each(|(a, x)| *x = a);
    for k in (0..piv.len()).rev() {
        order.swap(k, piv[k]);
    }
}

/// `gauss_jordan` of the n x n matrix in rows of stride `ld` >= n (entries past n in a row: zeros, kept zero), but
/// with the columns left in the pivots' order (`column_order` says where each column of the inverse is).
///
/// Two pivots per pass over the matrix: the one-pivot algorithm (`gauss_jordan_one`, the operation order of
/// lattice.cu's `reinvert`) reads and writes the whole matrix once per pivot, 2 n^3 bytes of traffic per rebuild
/// that do not fit the core's L1 (83 KB in f64 at L = 15), and that traffic, not the arithmetic, bound it. Here the
/// pivot of step k + 1 is chosen from column k + 1 as step k leaves it (computed apart, O(n)), both pivot rows are
/// formed first, and every other row then takes both eliminations in one pass: the same pivots and the same
/// roundings, entry by entry, as `gauss_jordan_one` (each entry x -> (x - f1 r1) - f2 r2 with unfused products, as
/// the two steps one after the other; a test compares them bit for bit). That pass runs as the row kernels do
/// (`elim2`: the two pivot rows in registers, whole vectors down the rows); f32, rebuilt every sweep, needs it most.
#[inline(always)]
fn gauss_jordan_ld<T: Real>(m: &mut [T], n: usize, ld: usize, piv: &mut [usize], scratch: &mut [T]) -> bool {
    let (r1, rest) = scratch.split_at_mut(ld.max(n));
    let (r2, rest) = rest.split_at_mut(ld.max(n));
    let (c, f1s) = rest.split_at_mut(n);
    let (r1, r2, c, f1s) = (&mut r1[..ld], &mut r2[..ld], &mut c[..n], &mut f1s[..n]);
    // the first i >= k of largest |x(i)|
    #[inline(always)]
    fn argmax<T: Real>(k: usize, n: usize, x: impl Fn(usize) -> T) -> usize {
        let (mut p, mut best) = (k, x(k).abs());
        for i in k + 1..n {
            let v = x(i).abs();
            if v > best {
                (p, best) = (i, v);
            }
        }
        p
    }
    let swap_rows = |m: &mut [T], p: usize, k: usize| {
        if p != k {
            let (lo, hi) = m.split_at_mut(p.max(k) * ld);
            lo[p.min(k) * ld..(p.min(k) + 1) * ld].swap_with_slice(&mut hi[..ld]);
        }
    };
    let mut k = 0;
    while k < n {
        // step k: pivot, swap, scaled pivot row r1 (row k of the result before step k + 1)
        let p = argmax(k, n, |i| m[i * ld + k]);
        let pivot = m[p * ld + k];
        if pivot == T::zero() || pivot.is_nan() {
            return false;
        }
        piv[k] = p;
        swap_rows(m, p, k);
        let d = T::one() / m[k * ld + k];
        m[k * ld + k] = T::one();
        for (x, r) in m[k * ld..(k + 1) * ld].iter_mut().zip(r1.iter_mut()) {
            *x *= d;
            *r = *x;
        }
        if k + 1 == n {
            eliminate_one(m, n, ld, k, r1);
            break;
        }
        // column k + 1 as step k leaves it, and the pivot of step k + 1 from it
        let k1 = k + 1;
        for i in (0..n).filter(|&i| i != k) {
            c[i] = m[i * ld + k1] - m[i * ld + k] * r1[k1];
        }
        let p2 = argmax(k1, n, |i| c[i]);
        if c[p2] == T::zero() || c[p2].is_nan() {
            return false;
        }
        piv[k1] = p2;
        swap_rows(m, p2, k1);
        c.swap(p2, k1);
        // row k + 1 after step k, scaled: the pivot row r2 of step k + 1
        let f1 = m[k1 * ld + k];
        m[k1 * ld + k] = T::zero();
        for (x, &r) in m[k1 * ld..(k1 + 1) * ld].iter_mut().zip(r1.iter()) {
            *x -= f1 * r;
        }
        let d2 = T::one() / m[k1 * ld + k1];
        m[k1 * ld + k1] = T::one();
        for (x, r) in m[k1 * ld..(k1 + 1) * ld].iter_mut().zip(r2.iter_mut()) {
            *x *= d2;
            *r = *x;
        }
        // row k: step k + 1's elimination
        let f = m[k * ld + k1];
        m[k * ld + k1] = T::zero();
        for (x, &r) in m[k * ld..(k + 1) * ld].iter_mut().zip(r2.iter()) {
            *x -= f * r;
        }
        // every other row: both eliminations in one pass. Entry k starts at 0 (step k zeroes it); entry k + 1 starts
        // at f1 r1[k + 1], so that step k leaves it at exactly 0, as step k + 1 sets it before subtracting.
        for i in (0..n).filter(|&i| i != k && i != k1) {
            let row = &mut m[i * ld..(i + 1) * ld];
            f1s[i] = row[k];
            row[k] = T::zero();
            row[k1] = f1s[i] * r1[k1];
        }
        elim2(m, n, ld, (k, k1), f1s, c, r1, r2);
        k += 2;
    }
    true
}

/// Row i of the n rows of stride ld, all but rows `skip`: x -> (x - f1_i r1) - f2_i r2, unfused, in blocks of whole
/// vectors with r1 and r2 in registers (`gemv_t`'s layout), then the entries past the last whole vector.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn elim2<T: Real>(m: &mut [T], n: usize, ld: usize, skip: (usize, usize), f1: &[T], f2: &[T], r1: &[T], r2: &[T]) {
    let rows = (0..n).filter(|&i| i != skip.0 && i != skip.1);
    by_lanes!(T, N => {
        by_blocks!(ld / N, j, Q => {
            let a: [[T; N]; Q] = *<&[[T; N]; Q]>::try_from(r1[j * N..(j + Q) * N].as_chunks::<N>().0).unwrap();
            let b: [[T; N]; Q] = *<&[[T; N]; Q]>::try_from(r2[j * N..(j + Q) * N].as_chunks::<N>().0).unwrap();
            for i in rows.clone() {
                let (g1, g2) = (f1[i], f2[i]);
                // black_box: see `rank1`
                let row = std::hint::black_box(&mut m[i * ld + j * N..i * ld + (j + Q) * N]).as_chunks_mut::<N>().0;
                for q in 0..Q {
                    for k in 0..N {
                        row[q][k] = (row[q][k] - g1 * a[q][k]) - g2 * b[q][k];
                    }
                }
            }
        });
        let tail = ld / N * N;
        if tail < ld {
            for i in rows {
                let (g1, g2) = (f1[i], f2[i]);
                for ((x, &a), &b) in m[i * ld + tail..(i + 1) * ld].iter_mut().zip(&r1[tail..ld]).zip(&r2[tail..ld]) {
                    *x = (*x - g1 * a) - g2 * b;
                }
            }
        }
    });
}

/// Step k's elimination of every row but k with the scaled pivot row `r` (x -> x - row[k] r, entry k from 0).
#[inline(always)]
fn eliminate_one<T: Real>(m: &mut [T], n: usize, ld: usize, k: usize, r: &[T]) {
    for i in (0..n).filter(|&i| i != k) {
        let row = &mut m[i * ld..(i + 1) * ld];
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
        eliminate_one(m, n, n, k, pivot_row);
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

    /// The chain as a fast variant reports it (W in f64; no condition or growth: those the reference computes).
    pub fn result(&self) -> super::ChainResult {
        super::ChainResult { config: self.config(), w: self.w.iter().map(|x| x.f64()).collect(), tally: self.tally, cond_max: f64::NAN, growth_max: f64::NAN }
    }
}

impl<S: Real> Ensemble<S> {
    /// The fast swap ratio of chain `c` for its up electron `a` and down electron `b` (for tests).
    pub fn swap_ratio(&mut self, c: usize, a: usize, b: usize) -> f64 {
        let (np, ld) = (self.pairs, stride::<S>(self.pairs));
        let (t, chains) = self.split();
        let mut s = Scratch::<S, S>::new(np, ld);
        // the chain's W padded, as `run_chain` holds it
        let mut ch = chains[c].clone();
        ch.w = padded(&ch.w, np, ld);
        swap_ratio(&t, &ch, a, ch.up[a] as usize, b, ch.dn[b] as usize, &mut s).0.f64()
    }
}
