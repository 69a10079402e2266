//! The fast CPU Ewald kernels: rayon over walkers and, within a walker, over blocks of real-space rows and of
//! reciprocal-space runs (so a few walkers still fill all cores); structure of arrays of fractional coordinates so a
//! displacement is wrapped with one rounding per axis; hot loops over fixed-width lane arrays compiled for
//! AVX-512/AVX2 by `crate::dispatch!`.
//!
//! Real space. A displacement is wrapped in fractional coordinates and flipped into the half cell g_0 >= 0 (the
//! sums depend on |d - R| over images symmetric under R -> -R), and only the images within r_c of that half cell are
//! tried (6 of the 19 within r_c + the longest wrapped displacement for the fcc suite). When r_c is below half the
//! shortest lattice vector (the suite's sizes from ~100 electrons up), at most one image lies within r_c: the kernel
//! takes the minimum of |d - R|^2 over the images for W partners at once and evaluates erfc(alpha r) / r for every
//! pair, keeping those inside r_c by a select. Most pairs are inside (58-69% at the suite's large sizes), so
//! evaluating erfc everywhere costs less than packing the inside pairs would. erfc runs over E lanes at a time
//! (several independent vectors hide the latency of its polynomial chains). Cells smaller than 2 r_c (a few
//! electrons) keep several images per pair within r_c: there the distances within r_c are packed first and erfc
//! runs over the packed list.
//!
//! Reciprocal space. The structure factor by CASINO's power trick (Eq. 8): per particle the per-axis powers
//! e^{i n b_k . r} built by a complex recurrence in f64 from one sine and cosine per axis (no sin/cos per G),
//! so e^{iG.r} costs one complex product per G, the product of the first two axes being shared by a run of G vectors
//! with the same (m1, m2); S(G) is then a complex dot product over particles per G, terms in S and multiply-adds
//! into lanes of A. A move's change is vectorised over each run's consecutive m3.
//!
//! Sums: terms in lanes of A (16 to 32 partial sums per row or G), rows and blocks combined with a compensated sum.
//! In double, lanes of at most a few hundred terms each round far below the 1e-8 Ha accuracy; in single the
//! compensation across rows keeps the error near the terms' own rounding. Results do not depend on the thread count
//! (blocks are summed in order).
//!
//! The moves use the S(G) and the particles (structure of arrays) kept by the last energy of the same walkers, as a
//! QMC code keeps them between moves.

use super::{Ewald, Move};
use crate::Real;
use rayon::prelude::*;

#[path = "erfc.rs"]
pub mod erfc;

/// Lanes of the vector loops: partners of a real-space block, partial sums (one 512-bit register of f32, two of f64).
const W: usize = 16;
/// Partners of the one-image path whose terms are evaluated together.
const B: usize = 64;
/// Lanes of one erfc evaluation: enough independent vectors to hide the latency of its polynomial chains.
const E: usize = 32;
/// Partners packed at a time in the several-images path.
const CHUNK: usize = 64;
/// Pairs per parallel task of the real-space energy (rows are grouped to about this many).
const PAIRS_PER_TASK: usize = 32768;
/// (Particle, G) terms per parallel task of the structure factor.
const TERMS_PER_TASK: usize = 1 << 17;

/// The particles of a walker as structure of arrays: fractional coordinates in S and the weight of each pair term
/// with an electron (electrons +1, ions -Z, since an electron has q = -1); electrons first, then ions, then B
/// zero-weight entries so a block of partners can always be read whole.
#[derive(Clone, Default)]
struct Others<S> {
    f: [Vec<S>; 3],
    w: Vec<S>,
}

/// Compensated (Kahan) sum in A: the careful accumulation of single precision, harmless in double.
#[derive(Clone, Copy, Default)]
pub struct Kahan<A> {
    s: A,
    c: A,
}

impl<A: Real> Kahan<A> {
    #[inline(always)]
    pub fn add(&mut self, x: A) {
        let y = x - self.c;
        let t = self.s + y;
        self.c = (t - self.s) - y;
        self.s = t;
    }
    pub fn value(&self) -> A {
        self.s
    }
}

/// Sum of lane partial sums.
#[inline(always)]
fn fold<A: Real>(s: &[A]) -> A {
    s.iter().fold(A::zero(), |t, &x| t + x)
}

/// The set-up of an [`Ewald`] system in precision S (terms) and A (sums), and the state of every walker after the
/// last energy (the moves need it): S(G) and the particles in structure of arrays.
pub struct CpuEwald<S: Real, A: Real> {
    n: usize,
    alpha: S,
    rc2: S,
    a: [[S; 3]; 3],
    images: Vec<[S; 3]>,
    /// At most one image of any displacement within r_c (r_c < half the shortest lattice vector).
    single_image: bool,
    ion_frac: Vec<[f64; 3]>,
    ion_q: Vec<S>,
    gvecs: Vec<[i32; 3]>,
    /// Ranges of `gvecs` that share (m1, m2); within one, m3 runs over consecutive integers.
    runs: Vec<std::ops::Range<usize>>,
    nmax: [i32; 3],
    coef: Vec<A>,
    ion_sf: Vec<[A; 2]>,
    constant: A,
    system: Ewald,
    /// S(G) = S_ion - sum_electrons e^{iG.r}, `[walker][G]`.
    sf: Vec<[A; 2]>,
    /// Particles of each walker of the last energy.
    walkers: Vec<Others<S>>,
}

/// e^{i m 2 pi f} for m = 0..=nmax, by the recurrence e^{i m t} = e^{i (m-1) t} e^{i t} in f64 (error ~m f64
/// epsilons), over a slice of fractional coordinates f: row m of `re`/`im` holds particle j at m * f.len() + j.
#[inline(always)]
fn power_rows(f: &[f64], nmax: i32, re: &mut [f64], im: &mut [f64]) {
    let n = f.len();
    for (j, &x) in f.iter().enumerate() {
        let (s, c) = (std::f64::consts::TAU * x).sin_cos();
        re[j] = 1.0;
        im[j] = 0.0;
        if nmax > 0 {
            re[n + j] = c;
            im[n + j] = s;
        }
    }
    for m in 2..=nmax as usize {
        let (done_re, rest_re) = re.split_at_mut(m * n);
        let (done_im, rest_im) = im.split_at_mut(m * n);
        let (c1, s1) = (&done_re[n..2 * n], &done_im[n..2 * n]);
        let (pr, pi) = (&done_re[(m - 1) * n..m * n], &done_im[(m - 1) * n..m * n]);
        for j in 0..n {
            rest_re[j] = pr[j].mul_add(c1[j], -(pi[j] * s1[j]));
            rest_im[j] = pr[j].mul_add(s1[j], pi[j] * c1[j]);
        }
    }
}

/// Per-axis tables e^{i m 2 pi f_k} for m in -nmax_k..=nmax_k, each `[k][m][particle]` as separate re and im in S,
/// rows padded with zeros to a multiple of the complex dot's lanes (no scalar remainder; zeros add nothing).
struct Powers<S> {
    re: Vec<S>,
    im: Vec<S>,
    /// Row length: the particles rounded up to 2W.
    n: usize,
    offset: [usize; 3],
    nmax: [i32; 3],
}

impl<S: Real> Powers<S> {
    #[inline(always)]
    fn new(frac: &[[f64; 3]], nmax: [i32; 3]) -> Powers<S> {
        let n = frac.len();
        let stride = n.div_ceil(2 * W) * 2 * W;
        let rows: usize = nmax.iter().map(|m| 2 * *m as usize + 1).sum();
        let mut p = Powers { re: vec![S::zero(); rows * stride], im: vec![S::zero(); rows * stride], n: stride, offset: [0; 3], nmax };
        let mut row = 0;
        for k in 0..3 {
            p.offset[k] = row;
            let m = nmax[k] as usize;
            let f: Vec<f64> = frac.iter().map(|x| x[k]).collect();
            let (mut re, mut im) = (vec![0.0; (m + 1) * n], vec![0.0; (m + 1) * n]);
            power_rows(&f, nmax[k], &mut re, &mut im);
            // row m at nmax + m, and its conjugate at nmax - m
            for i in 0..=m {
                let (up, down) = ((row + m + i) * stride, (row + m - i) * stride);
                for j in 0..n {
                    let (c, s) = (S::of(re[i * n + j]), S::of(im[i * n + j]));
                    p.re[up + j] = c;
                    p.im[up + j] = s;
                    p.re[down + j] = c;
                    p.im[down + j] = -s;
                }
            }
            row += 2 * m + 1;
        }
        p
    }

    #[inline(always)]
    fn row(&self, k: usize, m: i32) -> (&[S], &[S]) {
        let at = (self.offset[k] + (m + self.nmax[k]) as usize) * self.n;
        (&self.re[at..at + self.n], &self.im[at..at + self.n])
    }
}

/// erfc(alpha r) / r of L lanes of r^2 in S (the erfc module's f32 or f64 code; the conversions vanish).
#[inline(always)]
fn erfc_over_r<S: Real, const L: usize>(alpha: S, r2: &[S; L]) -> [S; L] {
    // plain loops: array::map would not be inlined into the vector-ISA copies
    let mut out = [S::zero(); L];
    if std::mem::size_of::<S>() == 4 {
        // one lane at a time, which the compiler vectorises across lanes (faster here than the lane arrays in f32)
        for l in 0..L {
            out[l] = S::of(erfc::erfc_over_r(alpha.f64() as f32, &[r2[l].f64() as f32])[0] as f64);
        }
    } else {
        let mut x = [0.0f64; L];
        for l in 0..L {
            x[l] = r2[l].f64();
        }
        let v = erfc::erfc_over_r(alpha.f64(), &x);
        for l in 0..L {
            out[l] = S::of(v[l]);
        }
    }
    out
}

/// Whole blocks of L entries (as arrays, so the lane loops have no bounds checks).
#[inline(always)]
fn blocks<S, const L: usize>(x: &[S]) -> impl Iterator<Item = &[S; L]> {
    x.chunks_exact(L).map(|c| c.try_into().unwrap())
}

/// sum_j (pr + i pi)_j (er + i ei)_j in lanes of A (vectorisable, and a pairwise-like error growth): the terms
/// in S, widened to A for the fused multiply-adds into the sums. Four separate sums of 2W lanes (the four real
/// products) keep enough independent multiply-add chains in flight to run at the units' throughput, not latency.
#[inline(always)]
fn complex_dot<S: Real, A: Real>(pr: &[S], pi: &[S], er: &[S], ei: &[S]) -> (A, A) {
    const L: usize = 2 * W;
    // four separate arrays (not one 2D array), which the compiler keeps in registers
    let (mut ax, mut by, mut ay, mut bx) = ([A::zero(); L], [A::zero(); L], [A::zero(); L], [A::zero(); L]);
    for (((a, b), x), y) in blocks::<S, L>(pr).zip(blocks::<S, L>(pi)).zip(blocks::<S, L>(er)).zip(blocks::<S, L>(ei)) {
        for l in 0..L {
            let (a, b, x, y) = (A::of(a[l].f64()), A::of(b[l].f64()), A::of(x[l].f64()), A::of(y[l].f64()));
            ax[l] = a.mul_add(x, ax[l]);
            by[l] = b.mul_add(y, by[l]);
            ay[l] = a.mul_add(y, ay[l]);
            bx[l] = b.mul_add(x, bx[l]);
        }
    }
    let (mut re, mut im) = (fold(&ax) - fold(&by), fold(&ay) + fold(&bx));
    for j in pr.len() / L * L..pr.len() {
        re += A::of((pr[j] * er[j] - pi[j] * ei[j]).f64());
        im += A::of((pr[j] * ei[j] + pi[j] * er[j]).f64());
    }
    (re, im)
}

/// Distance from the point `r` to the half parallelepiped H = { sum_k g_k a_k : g_0 in [0, 1/2], g_k in
/// [-1/2, 1/2] } (g_2 = 0 in 2D): the least-squares minimum over g in that box, found exactly by trying every
/// pattern of each g_k free or at one of its bounds (the minimiser is a Karush-Kuhn-Tucker point of one of them).
fn distance_to_half_cell(a: &[[f64; 3]; 3], dim: usize, r: [f64; 3]) -> f64 {
    let lo = [0.0, -0.5, if dim == 3 { -0.5 } else { 0.0 }];
    let hi = [0.5, 0.5, if dim == 3 { 0.5 } else { 0.0 }];
    let dot = super::cell::dot;
    let mut best = f64::INFINITY;
    for pattern in 0..27 {
        // per axis: 0 free, 1 at lo, 2 at hi
        let state = [pattern % 3, pattern / 3 % 3, pattern / 9];
        let mut g = [0.0; 3];
        let mut target = r;
        let mut free = vec![];
        for k in 0..3 {
            match state[k] {
                0 => free.push(k),
                s => {
                    g[k] = if s == 1 { lo[k] } else { hi[k] };
                    (0..3).for_each(|x| target[x] -= g[k] * a[k][x]);
                }
            }
        }
        // normal equations of the free axes, by Cramer's rule (at most 3 x 3)
        let m = free.len();
        let gram: Vec<Vec<f64>> = free.iter().map(|&i| free.iter().map(|&j| dot(a[i], a[j])).collect()).collect();
        let rhs: Vec<f64> = free.iter().map(|&i| dot(a[i], target)).collect();
        let det = |c: &dyn Fn(usize, usize) -> f64| match m {
            1 => c(0, 0),
            2 => c(0, 0) * c(1, 1) - c(0, 1) * c(1, 0),
            _ => {
                c(0, 0) * (c(1, 1) * c(2, 2) - c(1, 2) * c(2, 1)) - c(0, 1) * (c(1, 0) * c(2, 2) - c(1, 2) * c(2, 0))
                    + c(0, 2) * (c(1, 0) * c(2, 1) - c(1, 1) * c(2, 0))
            }
        };
        if m > 0 {
            let d0 = det(&|i, j| gram[i][j]);
            for (col, &k) in free.iter().enumerate() {
                g[k] = det(&|i, j| if j == col { rhs[i] } else { gram[i][j] }) / d0;
            }
        }
        if (0..3).all(|k| g[k] >= lo[k] - 1e-12 && g[k] <= hi[k] + 1e-12) {
            let p = [0, 1, 2].map(|x| r[x] - (g[0] * a[0][x] + g[1] * a[1][x] + g[2] * a[2][x]));
            best = best.min(dot(p, p).sqrt());
        }
    }
    best
}

impl<S: Real, A: Real> CpuEwald<S, A> {
    pub fn new(e: &Ewald) -> CpuEwald<S, A> {
        let s3 = |v: [f64; 3]| v.map(S::of);
        let mut runs = vec![];
        let mut start = 0;
        for i in 1..=e.gvecs.len() {
            if i == e.gvecs.len() || e.gvecs[i][..2] != e.gvecs[start][..2] {
                runs.push(start..i);
                start = i;
            }
        }
        let nmax = [0, 1, 2].map(|k| e.gvecs.iter().map(|m| m[k].abs()).max().unwrap_or(0));
        // two images within r_c of one point would be two lattice points closer than 2 r_c
        let single_image = e.cell.lattice_points(2.0 * e.params.rc).len() == 1;
        CpuEwald {
            n: e.electrons,
            alpha: S::of(e.params.alpha),
            rc2: S::of(e.params.rc * e.params.rc),
            a: e.cell.a.map(s3),
            // a displacement is flipped into the half cell H (|d - R| = |-d + R| and the images come in pairs +-R),
            // so only images within r_c of H can matter; a relative margin covers the rounding of d in S
            images: e
                .images
                .iter()
                .filter(|r| distance_to_half_cell(&e.cell.a, e.cell.dim, **r) < e.params.rc * (1.0 + 1e-4) + 1e-4 * super::cell::norm(**r))
                .map(|r| s3(*r))
                .collect(),
            single_image,
            ion_frac: e.ions.pos.iter().map(|r| e.cell.frac(*r)).collect(),
            ion_q: e.ions.charge.iter().map(|&z| S::of(z)).collect(),
            gvecs: e.gvecs.clone(),
            runs,
            nmax,
            coef: e.coef.iter().map(|&c| A::of(c)).collect(),
            ion_sf: e.ion_sf.iter().map(|s| s.map(A::of)).collect(),
            constant: A::of(e.constant),
            system: e.clone(),
            sf: vec![],
            walkers: vec![],
        }
    }

    /// Whether the real-space sum takes the one-image path (see the module docs).
    pub fn single_image(&self) -> bool {
        self.single_image
    }

    /// Lattice images each real-space pair tries.
    pub fn images(&self) -> usize {
        self.images.len()
    }

    /// Fractional coordinates in [0, 1).
    fn fractional(&self, r: [f64; 3]) -> [f64; 3] {
        self.system.cell.frac(r).map(|f| f - f.floor())
    }

    /// The particles of a walker (its electrons at `frac`, then the ions, then W padding entries).
    fn others(&self, frac: &[[f64; 3]]) -> Others<S> {
        let pad = [[0.0; 3]; B];
        let all = || frac.iter().chain(&self.ion_frac).chain(&pad);
        Others {
            f: [0, 1, 2].map(|k| all().map(|f| S::of(f[k])).collect()),
            w: frac.iter().map(|_| S::one()).chain(self.ion_q.iter().map(|&z| -z)).chain([S::zero(); B]).collect(),
        }
    }

    /// Cartesian minimum-parallelepiped displacements r_i - r_j of W partners from fractional coordinates.
    #[inline(always)]
    fn displacements(&self, fi: [S; 3], o: &Others<S>, j0: usize) -> [[S; W]; 3] {
        let a = &self.a;
        // |x| < 1 here, far inside `nearest`'s range
        let wrap = |x: S| x - crate::maths::nearest(x);
        let (fx, fy, fz) = (&o.f[0][j0..j0 + W], &o.f[1][j0..j0 + W], &o.f[2][j0..j0 + W]);
        let mut d = [[S::zero(); W]; 3];
        for l in 0..W {
            let g = [wrap(fi[0] - fx[l]), wrap(fi[1] - fy[l]), wrap(fi[2] - fz[l])];
            // into the half cell g_0 >= 0 (the sums depend on |d - R| with R over a set symmetric under R -> -R)
            let g = if g[0] < S::zero() { g.map(|x| -x) } else { g };
            for x in 0..3 {
                d[x][l] = g[2].mul_add(a[2][x], g[1].mul_add(a[1][x], g[0] * a[0][x]));
            }
        }
        d
    }

    /// One-image path: sum of w_j erfc(alpha r) / r over partners j in lo..hi except `skip`, r the distance to the
    /// nearest image, terms beyond r_c (and r = 0) dropped by a select. Distances go W partners at a time into a
    /// buffer of up to B, and erfc then runs over the buffer: several independent vectors in flight hide the
    /// latency of its long polynomial chains.
    #[inline(always)]
    fn row_single(&self, fi: [S; 3], o: &Others<S>, lo: usize, hi: usize, skip: usize) -> A {
        let mut acc = [A::zero(); W];
        let mut j0 = lo;
        while j0 < hi {
            let len = B.min((hi - j0).div_ceil(E) * E);
            // squared distances to the nearest image, 0 for partners not wanted (beyond r_c, outside lo..hi, skip)
            let mut r2 = [S::zero(); B];
            for (b, r2) in r2[..len].chunks_exact_mut(W).enumerate() {
                let jb = j0 + b * W;
                let d = self.displacements(fi, o, jb);
                let mut m = [S::infinity(); W];
                for r in &self.images {
                    for l in 0..W {
                        let (x, y, z) = (d[0][l] - r[0], d[1][l] - r[1], d[2][l] - r[2]);
                        let s = z.mul_add(z, y.mul_add(y, x * x));
                        m[l] = if s < m[l] { s } else { m[l] };
                    }
                }
                for l in 0..W {
                    let j = jb + l;
                    r2[l] = if m[l] < self.rc2 && j < hi && j != skip { m[l] } else { S::zero() };
                }
            }
            // erfc runs on every lane (a select keeps the wanted ones); r_c where unwanted keeps it finite
            let mut t = [S::zero(); B];
            for ((t, r2), w) in t[..len].chunks_exact_mut(E).zip(r2[..len].chunks_exact(E)).zip(o.w[j0..j0 + len].chunks_exact(E)) {
                let mut x = [S::zero(); E];
                for l in 0..E {
                    x[l] = if r2[l] > S::zero() { r2[l] } else { self.rc2 };
                }
                let v = erfc_over_r(self.alpha, &x);
                for l in 0..E {
                    t[l] = if r2[l] > S::zero() { w[l] * v[l] } else { S::zero() };
                }
            }
            for c in blocks::<S, W>(&t[..len]) {
                for l in 0..W {
                    acc[l] += A::of(c[l].f64());
                }
            }
            j0 += len;
        }
        fold(&acc)
    }

    /// Several-images path: sum of w_j phi(r_i - r_j) over partners j in `range`, the distances within r_c of all
    /// images packed first (branch-free: always store, advance only when inside) and erfc run over the packed list.
    #[inline(always)]
    fn row_images(&self, fi: [S; 3], o: &Others<S>, range: std::ops::Range<usize>, near: &mut (Vec<S>, Vec<S>)) -> A {
        near.0.resize(W * self.images.len(), S::zero());
        near.1.resize(W * self.images.len(), S::zero());
        let (near_r2, near_w) = (&mut near.0[..], &mut near.1[..]);
        let mut acc = [A::zero(); W];
        let mut j0 = range.start;
        while j0 < range.end {
            let m = W.min(range.end - j0);
            let d = self.displacements(fi, o, j0);
            let mut k = 0;
            for r in &self.images {
                for l in 0..m {
                    let (x, y, z) = (d[0][l] - r[0], d[1][l] - r[1], d[2][l] - r[2]);
                    near_r2[k] = x * x + y * y + z * z;
                    near_w[k] = o.w[j0 + l];
                    k += (near_r2[k] < self.rc2) as usize;
                }
            }
            // the terms of a chunk first go to a buffer by a plain map (no reduction in the loop, so erfc vectorises)
            for (r2c, wc) in near_r2[..k].chunks(CHUNK).zip(near_w[..k].chunks(CHUNK)) {
                let mut t = [S::zero(); CHUNK];
                for ((t, &r2), &w) in t.iter_mut().zip(r2c).zip(wc) {
                    *t = w * erfc_over_r(self.alpha, &[r2])[0];
                }
                for (i, &x) in t[..r2c.len()].iter().enumerate() {
                    acc[i % W] += A::of(x.f64());
                }
            }
            j0 += m;
        }
        fold(&acc)
    }

    /// Real-space terms of a particle at fractional `f` with the partners lo..hi other than `skip`.
    #[inline(always)]
    fn row(&self, f: [f64; 3], o: &Others<S>, lo: usize, hi: usize, skip: usize, near: &mut (Vec<S>, Vec<S>)) -> A {
        let fi = f.map(S::of);
        if self.single_image {
            self.row_single(fi, o, lo, hi, skip)
        } else if skip < hi && skip >= lo {
            self.row_images(fi, o, lo..skip, near) + self.row_images(fi, o, skip + 1..hi, near)
        } else {
            self.row_images(fi, o, lo..hi, near)
        }
    }

    /// Real-space energy of a walker's rows `rows` (pairs i < j, electron i with every ion).
    #[inline(always)]
    fn real_rows(&self, frac: &[[f64; 3]], o: &Others<S>, rows: std::ops::Range<usize>) -> A {
        let all = self.n + self.ion_q.len();
        let mut near = (vec![], vec![]);
        let mut sum = Kahan::<A>::default();
        for i in rows {
            sum.add(self.row(frac[i], o, i + 1, all, usize::MAX, &mut near));
        }
        sum.value()
    }

    /// S(G) of the runs `runs` (their G vectors are consecutive from `g0`) into `sf`, and their energy.
    #[inline(always)]
    fn structure_factor(&self, p: &Powers<S>, runs: &[std::ops::Range<usize>], sf: &mut [[A; 2]]) -> A {
        let g0 = runs[0].start;
        let mut pr = vec![S::zero(); p.n];
        let mut pi = vec![S::zero(); p.n];
        let mut sum = Kahan::<A>::default();
        for run in runs {
            let [m1, m2, _] = self.gvecs[run.start];
            let ((r1, i1), (r2, i2)) = (p.row(0, m1), p.row(1, m2));
            for j in 0..p.n {
                pr[j] = r1[j].mul_add(r2[j], -(i1[j] * i2[j]));
                pi[j] = r1[j].mul_add(i2[j], i1[j] * r2[j]);
            }
            for g in run.clone() {
                let (er, ei) = p.row(2, self.gvecs[g][2]);
                let (re, im): (A, A) = complex_dot::<S, A>(&pr, &pi, er, ei);
                let s = [self.ion_sf[g][0] - re, self.ion_sf[g][1] - im];
                sf[g - g0] = s;
                sum.add(self.coef[g] * (s[0] * s[0] + s[1] * s[1]));
            }
        }
        sum.value()
    }

    /// The energy of one walker, writing its S(G) into `sf` and its particles into `o`; rows of the real-space sum
    /// and runs of the structure factor in parallel tasks.
    fn walker_energy(&self, pos: &[[f64; 3]], sf: &mut [[A; 2]], o: &mut Others<S>) -> A {
        let frac: Vec<[f64; 3]> = pos.iter().map(|r| self.fractional(*r)).collect();
        *o = self.others(&frac);
        let o = &*o;
        let n = self.n;
        let all = n + self.ion_q.len();
        let rows = PAIRS_PER_TASK.div_ceil(all).max(1);
        let real: Vec<A> = (0..n.div_ceil(rows))
            .into_par_iter()
            .map(|b| crate::dispatch!(self.real_rows(&frac, o, b * rows..n.min((b + 1) * rows))))
            .collect();
        let p = crate::dispatch!(Powers::<S>::new(&frac, self.nmax));
        // runs grouped into tasks of about TERMS_PER_TASK (particle, G) terms
        let per = (TERMS_PER_TASK / n.max(1)).max(1);
        let mut tasks = vec![];
        let mut first = 0;
        for (i, run) in self.runs.iter().enumerate() {
            if run.end - self.runs[first].start >= per || i + 1 == self.runs.len() {
                tasks.push(first..i + 1);
                first = i + 1;
            }
        }
        let recip: Vec<(A, Vec<[A; 2]>)> = tasks
            .into_par_iter()
            .map(|t| {
                let runs = &self.runs[t];
                let mut part = vec![[A::zero(); 2]; runs[runs.len() - 1].end - runs[0].start];
                let e = crate::dispatch!(self.structure_factor(&p, runs, &mut part));
                (e, part)
            })
            .collect();
        let mut total = Kahan::<A>::default();
        total.add(self.constant);
        real.iter().for_each(|&x| total.add(x));
        let mut g = 0;
        for (e, part) in recip {
            total.add(e);
            sf[g..g + part.len()].copy_from_slice(&part);
            g += part.len();
        }
        total.value()
    }

    /// Full energy of every walker (`pos` is `[walker][electron]`), into `out`; keeps S(G) and the particles for
    /// [`CpuEwald::moves`].
    pub fn energy(&mut self, pos: &[[f64; 3]], out: &mut [A]) {
        let walkers = out.len();
        assert_eq!(pos.len(), walkers * self.n, "ewald cpu: positions length");
        // rows of at least one entry, so each walker has one even without G vectors
        let (ng, stride) = (self.gvecs.len(), self.gvecs.len().max(1));
        let mut sf = std::mem::take(&mut self.sf);
        sf.resize(walkers * stride, [A::zero(); 2]);
        let mut state = std::mem::take(&mut self.walkers);
        state.resize(walkers, Others::default());
        let me = &*self;
        out.par_iter_mut().zip(sf.par_chunks_mut(stride)).zip(state.par_iter_mut()).enumerate().for_each(|(w, ((o, rows), st))| {
            *o = me.walker_energy(&pos[w * me.n..(w + 1) * me.n], &mut rows[..ng], st);
        });
        self.sf = sf;
        self.walkers = state;
    }

    /// Full energy of one configuration, leaving no state behind (a driver's per-walker call; `energy` is the
    /// batched one).
    pub fn energy_one(&self, pos: &[[f64; 3]]) -> A {
        assert_eq!(pos.len(), self.n, "ewald cpu: positions length");
        let mut rows = vec![[A::zero(); 2]; self.gvecs.len()];
        self.walker_energy(pos, &mut rows, &mut Others::default())
    }

    /// Energy change of one move per walker, from the S(G) and particles of the last [`CpuEwald::energy`] on these
    /// positions.
    pub fn moves(&self, pos: &[[f64; 3]], moves: &[Move], out: &mut [A]) {
        let walkers = out.len();
        assert_eq!(pos.len(), walkers * self.n, "ewald cpu: positions length");
        assert_eq!(moves.len(), walkers, "ewald cpu: one move per walker");
        assert!(
            self.sf.len() == walkers * self.gvecs.len().max(1) && self.walkers.len() == walkers,
            "ewald cpu: moves need the energy of these walkers first"
        );
        let (ng, stride) = (self.gvecs.len(), self.gvecs.len().max(1));
        out.par_iter_mut().enumerate().for_each(|(w, o)| {
            let (old, mv) = (pos[w * self.n + moves[w].electron], &moves[w]);
            *o = crate::dispatch!(self.walker_move(old, mv, &self.sf[w * stride..w * stride + ng], &self.walkers[w]));
        });
    }

    /// Change of energy when electron `mv.electron`, now at `old`, moves to `mv.to`.
    #[inline(always)]
    fn walker_move(&self, old: [f64; 3], mv: &Move, sf: &[[A; 2]], o: &Others<S>) -> A {
        let all = self.n + self.ion_q.len();
        let (from, to) = (self.fractional(old), self.fractional(mv.to));
        let k = mv.electron;
        let mut near = (vec![], vec![]);
        let mut d = Kahan::<A>::default();
        d.add(self.row(to, o, 0, all, k, &mut near));
        d.add(-self.row(from, o, 0, all, k, &mut near));
        d.add(self.recip_move(from, to, sf));
        d.value()
    }

    /// Reciprocal-space change of a move: moving an electron (q = -1) adds delta = e^{iG.r_old} - e^{iG.r_new} to
    /// S(G), so the energy changes by c(G) (|delta|^2 + 2 Re(S* delta)). Phases per run: the (m1, m2) product once,
    /// then one complex product per G over the run's consecutive m3.
    #[inline(always)]
    fn recip_move(&self, from: [f64; 3], to: [f64; 3], sf: &[[A; 2]]) -> A {
        // per axis, for the old and the new point (as particles 0 and 1): e^{i m 2 pi f_k}, m = 0..=nmax_k, in S
        let tables = [0, 1, 2].map(|k| {
            let m = self.nmax[k] as usize;
            let (mut re, mut im) = (vec![0.0; 2 * (m + 1)], vec![0.0; 2 * (m + 1)]);
            power_rows(&[from[k], to[k]], self.nmax[k], &mut re, &mut im);
            (re, im)
        });
        // e^{i m 2 pi f_k} of point p for any sign of m
        let phase = |k: usize, p: usize, m: i32| {
            let (re, im) = &tables[k];
            let at = 2 * m.unsigned_abs() as usize + p;
            (re[at], if m < 0 { -im[at] } else { im[at] })
        };
        let m3max = self.nmax[2];
        let width = 2 * m3max as usize + 1;
        let row3 = |p: usize| -> (Vec<S>, Vec<S>) {
            (-m3max..=m3max).map(|m| phase(2, p, m)).map(|(c, s)| (S::of(c), S::of(s))).unzip()
        };
        let ((o3r, o3i), (n3r, n3i)) = (row3(0), row3(1));
        let mut dre = vec![A::zero(); self.gvecs.len()];
        let mut dim = vec![A::zero(); self.gvecs.len()];
        for run in &self.runs {
            let [m1, m2, lo] = self.gvecs[run.start];
            let cmul = |x: (f64, f64), y: (f64, f64)| (x.0 * y.0 - x.1 * y.1, x.0 * y.1 + x.1 * y.0);
            let po = cmul(phase(0, 0, m1), phase(1, 0, m2));
            let pn = cmul(phase(0, 1, m1), phase(1, 1, m2));
            let (por, poi, pnr, pni) = (S::of(po.0), S::of(po.1), S::of(pn.0), S::of(pn.1));
            let at = (lo + m3max) as usize;
            let len = run.len();
            debug_assert!(at + len <= width);
            let (o3r, o3i, n3r, n3i) = (&o3r[at..at + len], &o3i[at..at + len], &n3r[at..at + len], &n3i[at..at + len]);
            let (dr, di) = (&mut dre[run.clone()], &mut dim[run.clone()]);
            for t in 0..len {
                let (or, oi) = (por * o3r[t] - poi * o3i[t], por * o3i[t] + poi * o3r[t]);
                let (nr, ni) = (pnr * n3r[t] - pni * n3i[t], pnr * n3i[t] + pni * n3r[t]);
                dr[t] = A::of((or - nr).f64());
                di[t] = A::of((oi - ni).f64());
            }
        }
        let mut acc = [A::zero(); W];
        let two = A::of(2.0);
        for (g, ((&dr, &di), (s, &c))) in dre.iter().zip(&dim).zip(sf.iter().zip(&self.coef)).enumerate() {
            acc[g % W] += c * (dr * dr + di * di + two * (s[0] * dr + s[1] * di));
        }
        fold(&acc)
    }
}
