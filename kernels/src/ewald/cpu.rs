//! The fast CPU Ewald kernels: rayon over walkers (all cores), fractional coordinates so a displacement is wrapped
//! with one rounding per axis, and the structure factor by CASINO's power trick (Eq. 8): per particle a table of
//! e^{i n b_k . r} for each axis, so e^{iG.r} costs two complex products, and one when G vectors share (m1, m2)
//! (the list is grouped that way). Storage and evaluation in S, sums in A with compensation (see `mod.rs`).

use super::{Ewald, Move};
use crate::Real;
use rayon::prelude::*;

#[path = "erfc.rs"]
pub mod erfc;

/// Partners of a real-space row handled together: their displacements and image distances fill short arrays the
/// vector loops run over.
const CHUNK: usize = 64;
/// Lanes of the vector sums.
const LANES: usize = 8;

/// The other particles of a walker as structure of arrays: fractional coordinates in S and the weight of each pair
/// term (electrons +1, ions -Z, since an electron has q = -1); electrons first, then ions.
struct Others<S> {
    f: [Vec<S>; 3],
    w: Vec<S>,
}

/// Per-task scratch of the real-space rows: Cartesian displacements of a chunk, and the squared distances within r_c
/// (with their weights) packed together so erfc is evaluated only where needed, in full vectors.
struct Scratch<S> {
    d: [[S; CHUNK]; 3],
    r2: [S; CHUNK],
    near_r2: Vec<S>,
    near_w: Vec<S>,
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

/// The set-up of an [`Ewald`] system in precision S (terms) and A (sums), and S(G) of every walker after the last
/// energy (the moves need it).
pub struct CpuEwald<S: Real, A: Real> {
    n: usize,
    alpha: S,
    rc2: S,
    a: [[S; 3]; 3],
    images: Vec<[S; 3]>,
    ion_frac: Vec<[f64; 3]>,
    ion_q: Vec<S>,
    gvecs: Vec<[i32; 3]>,
    /// Ranges of `gvecs` that share (m1, m2).
    runs: Vec<std::ops::Range<usize>>,
    nmax: [i32; 3],
    coef: Vec<A>,
    ion_sf: Vec<[A; 2]>,
    constant: A,
    system: Ewald,
    /// S(G) = S_ion - sum_electrons e^{iG.r}, `[walker][G]`.
    sf: Vec<[A; 2]>,
}

/// Per-axis tables e^{i n 2 pi f_k} for n in -nmax_k..=nmax_k, each `[k][n][particle]` as separate re and im.
struct Powers<S> {
    re: Vec<S>,
    im: Vec<S>,
    n: usize,
    offset: [usize; 3],
    nmax: [i32; 3],
}

impl<S: Real> Powers<S> {
    fn new(frac: &[[f64; 3]], nmax: [i32; 3]) -> Powers<S> {
        let n = frac.len();
        let rows: usize = nmax.iter().map(|m| 2 * *m as usize + 1).sum();
        let mut p = Powers { re: vec![S::zero(); rows * n], im: vec![S::zero(); rows * n], n, offset: [0; 3], nmax };
        let mut row = 0;
        for k in 0..3 {
            p.offset[k] = row;
            for m in -nmax[k]..=nmax[k] {
                for (j, f) in frac.iter().enumerate() {
                    // the phase reduced to one turn in f64 before the sine, so S only rounds the result
                    let t = m as f64 * f[k];
                    let (s, c) = (std::f64::consts::TAU * (t - t.round())).sin_cos();
                    p.re[row * n + j] = S::of(c);
                    p.im[row * n + j] = S::of(s);
                }
                row += 1;
            }
        }
        p
    }

    #[inline(always)]
    fn row(&self, k: usize, m: i32) -> (&[S], &[S]) {
        let at = (self.offset[k] + (m + self.nmax[k]) as usize) * self.n;
        (&self.re[at..at + self.n], &self.im[at..at + self.n])
    }

    /// e^{iG.r} of particle j for Miller indices m.
    fn phase(&self, j: usize, m: [i32; 3]) -> (S, S) {
        let mut e = (S::one(), S::zero());
        for (k, &mk) in m.iter().enumerate() {
            let (re, im) = self.row(k, mk);
            e = (e.0 * re[j] - e.1 * im[j], e.0 * im[j] + e.1 * re[j]);
        }
        e
    }
}

/// sum_j (pr + i pi)_j (er + i ei)_j in 8 lanes of A (vectorisable, and a pairwise-like error growth).
#[inline(always)]
fn complex_dot<S: Real, A: Real>(pr: &[S], pi: &[S], er: &[S], ei: &[S]) -> (A, A) {
    const L: usize = 8;
    let mut sr = [A::zero(); L];
    let mut si = [A::zero(); L];
    let n = pr.len();
    let full = n / L * L;
    for c in (0..full).step_by(L) {
        for l in 0..L {
            let (a, b, x, y) = (pr[c + l], pi[c + l], er[c + l], ei[c + l]);
            sr[l] += A::of((a * x - b * y).f64());
            si[l] += A::of((a * y + b * x).f64());
        }
    }
    for j in full..n {
        sr[0] += A::of((pr[j] * er[j] - pi[j] * ei[j]).f64());
        si[0] += A::of((pr[j] * ei[j] + pi[j] * er[j]).f64());
    }
    (sr.iter().fold(A::zero(), |s, &x| s + x), si.iter().fold(A::zero(), |s, &x| s + x))
}

/// Raw pointer to S(G) rows shared by tasks writing disjoint walkers.
#[derive(Clone, Copy)]
struct SfPtr<A>(*mut [A; 2]);
// SAFETY: each task writes only its own walker's row of S(G).
unsafe impl<A> Send for SfPtr<A> {}
unsafe impl<A> Sync for SfPtr<A> {}

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
        CpuEwald {
            n: e.electrons,
            alpha: S::of(e.params.alpha),
            rc2: S::of(e.params.rc * e.params.rc),
            a: e.cell.a.map(s3),
            images: e.images.iter().map(|r| s3(*r)).collect(),
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
        }
    }

    #[inline(always)]
    fn fractional(&self, pos: &[[f64; 3]]) -> Vec<[f64; 3]> {
        pos.iter().map(|r| self.system.cell.frac(*r).map(|f| f - f.floor())).collect()
    }

    /// The other particles of a walker (its electrons at `frac`, then the ions) for [`CpuEwald::row`].
    fn others(&self, frac: &[[f64; 3]]) -> Others<S> {
        let all = || frac.iter().chain(&self.ion_frac);
        Others {
            f: [0, 1, 2].map(|k| all().map(|f| S::of(f[k])).collect()),
            w: frac.iter().map(|_| S::one()).chain(self.ion_q.iter().map(|&z| -z)).collect(),
        }
    }

    fn scratch(&self) -> Scratch<S> {
        let cap = CHUNK * self.images.len();
        Scratch { d: [[S::zero(); CHUNK]; 3], r2: [S::zero(); CHUNK], near_r2: vec![S::zero(); cap], near_w: vec![S::zero(); cap] }
    }

    /// Sum of the real-space terms w_j phi(r_i - r_j) of a particle at fractional `f` with the others in `range`.
    #[inline(always)]
    fn row(&self, f: [f64; 3], o: &Others<S>, range: std::ops::Range<usize>, sc: &mut Scratch<S>) -> A {
        let fi = f.map(S::of);
        let a = &self.a;
        // nearest integer, ties to even, by adding and removing 1.5 * 2^p (|x| < 1 here): exact, branch-free and
        // vectorisable, where round() is a library call
        let magic = S::of(1.5) * (S::one() / S::epsilon());
        let wrap = |x: S| x - ((x + magic) - magic);
        let mut acc = Kahan::<A>::default();
        let mut start = range.start;
        while start < range.end {
            let m = CHUNK.min(range.end - start);
            let (fx, fy, fz) = (&o.f[0][start..start + m], &o.f[1][start..start + m], &o.f[2][start..start + m]);
            let w = &o.w[start..start + m];
            for l in 0..m {
                let g = [wrap(fi[0] - fx[l]), wrap(fi[1] - fy[l]), wrap(fi[2] - fz[l])];
                for x in 0..3 {
                    sc.d[x][l] = g[0] * a[0][x] + g[1] * a[1][x] + g[2] * a[2][x];
                }
            }
            // distances to every image in vectors, then those within r_c packed (branch-free: always store, advance
            // only when inside)
            let mut k = 0;
            for r in &self.images {
                for l in 0..m {
                    let (x, y, z) = (sc.d[0][l] - r[0], sc.d[1][l] - r[1], sc.d[2][l] - r[2]);
                    sc.r2[l] = x * x + y * y + z * z;
                }
                for l in 0..m {
                    sc.near_r2[k] = sc.r2[l];
                    sc.near_w[k] = w[l];
                    k += (sc.r2[l] < self.rc2) as usize;
                }
            }
            acc.add(self.terms(&sc.near_r2[..k], &sc.near_w[..k]));
            start += m;
        }
        acc.value()
    }

    /// sum_k w_k erfc(alpha r_k) / r_k in LANES lanes of A. The terms are first written to a buffer by a plain map
    /// (no reduction in the loop, so the compiler vectorises erfc across the chunk), then summed in lanes.
    #[inline(always)]
    fn terms(&self, r2: &[S], w: &[S]) -> A {
        const CHUNK: usize = 64;
        let mut t = [S::zero(); CHUNK];
        let mut s = [A::zero(); LANES];
        for (r2c, wc) in r2.chunks(CHUNK).zip(w.chunks(CHUNK)) {
            let n = r2c.len();
            for ((t, &r2), &w) in t[..n].iter_mut().zip(r2c).zip(wc) {
                let r = r2.sqrt();
                *t = w * erfc::erfc(self.alpha * r) / r;
            }
            for (i, &x) in t[..n].iter().enumerate() {
                s[i % LANES] += A::of(x.f64());
            }
        }
        s.iter().fold(A::zero(), |t, &x| t + x)
    }

    /// The energy of one walker, writing its S(G) into `sf`.
    #[inline(always)]
    fn walker_energy(&self, pos: &[[f64; 3]], sf: &mut [[A; 2]]) -> A {
        let frac = self.fractional(pos);
        let o = self.others(&frac);
        let mut sc = self.scratch();
        let all = o.w.len();
        let mut total = Kahan::<A>::default();
        total.add(self.constant);
        for (i, f) in frac.iter().enumerate() {
            // pairs (i, j > i) and electron i with every ion
            total.add(self.row(*f, &o, i + 1..all, &mut sc));
        }
        let p = Powers::<S>::new(&frac, self.nmax);
        let mut pr = vec![S::zero(); self.n];
        let mut pi = vec![S::zero(); self.n];
        for run in &self.runs {
            let [m1, m2, _] = self.gvecs[run.start];
            let ((r1, i1), (r2, i2)) = (p.row(0, m1), p.row(1, m2));
            for j in 0..self.n {
                pr[j] = r1[j] * r2[j] - i1[j] * i2[j];
                pi[j] = r1[j] * i2[j] + i1[j] * r2[j];
            }
            for g in run.clone() {
                let (er, ei) = p.row(2, self.gvecs[g][2]);
                let (re, im): (A, A) = crate::dispatch!(complex_dot::<S, A>(&pr, &pi, er, ei));
                let s = [self.ion_sf[g][0] - re, self.ion_sf[g][1] - im];
                sf[g] = s;
                total.add(self.coef[g] * (s[0] * s[0] + s[1] * s[1]));
            }
        }
        total.value()
    }

    /// Full energy of every walker (`pos` is `[walker][electron]`), into `out`; keeps S(G) for [`CpuEwald::moves`].
    pub fn energy(&mut self, pos: &[[f64; 3]], out: &mut [A]) {
        let walkers = out.len();
        assert_eq!(pos.len(), walkers * self.n, "ewald cpu: positions length");
        let ng = self.gvecs.len();
        let mut sf = std::mem::take(&mut self.sf);
        sf.resize(walkers * ng, [A::zero(); 2]);
        let ptr = SfPtr(sf.as_mut_ptr());
        let me = &*self;
        out.par_iter_mut().enumerate().for_each(|(w, o)| {
            let p = ptr;
            // SAFETY: walker w's rows w*ng..(w+1)*ng lie inside `sf` (resized above) and only this task writes them.
            let rows = unsafe { std::slice::from_raw_parts_mut(p.0.add(w * ng), ng) };
            *o = crate::dispatch!(me.walker_energy(&pos[w * me.n..(w + 1) * me.n], rows));
        });
        self.sf = sf;
    }

    /// Full energy of one configuration, leaving no state behind (a driver's per-walker call; `energy` is the
    /// batched one).
    pub fn energy_one(&self, pos: &[[f64; 3]]) -> A {
        assert_eq!(pos.len(), self.n, "ewald cpu: positions length");
        let mut rows = vec![[A::zero(); 2]; self.gvecs.len()];
        crate::dispatch!(self.walker_energy(pos, &mut rows))
    }

    /// Energy change of one move per walker, from the S(G) of the last [`CpuEwald::energy`] on these positions.
    pub fn moves(&self, pos: &[[f64; 3]], moves: &[Move], out: &mut [A]) {
        let walkers = out.len();
        assert_eq!(pos.len(), walkers * self.n, "ewald cpu: positions length");
        assert_eq!(moves.len(), walkers, "ewald cpu: one move per walker");
        assert_eq!(self.sf.len(), walkers * self.gvecs.len(), "ewald cpu: moves need the energy of these walkers first");
        out.par_iter_mut().enumerate().for_each(|(w, o)| {
            *o = crate::dispatch!(self.walker_move(&pos[w * self.n..(w + 1) * self.n], &moves[w], &self.sf[w * self.gvecs.len()..]));
        });
    }

    #[inline(always)]
    fn walker_move(&self, pos: &[[f64; 3]], mv: &Move, sf: &[[A; 2]]) -> A {
        let frac = self.fractional(pos);
        let o = self.others(&frac);
        let mut sc = self.scratch();
        let all = o.w.len();
        let to = self.fractional(&[mv.to])[0];
        let k = mv.electron;
        let mut d = Kahan::<A>::default();
        // every other particle: electrons before and after k, then the ions
        for (from, sign) in [(to, A::one()), (frac[k], -A::one())] {
            d.add(sign * self.row(from, &o, 0..k, &mut sc));
            d.add(sign * self.row(from, &o, k + 1..all, &mut sc));
        }
        // e^{iG.r} of the old and new position by the power tables of those two points
        let p = Powers::<S>::new(&[frac[k], to], self.nmax);
        for (g, &m) in self.gvecs.iter().enumerate() {
            let (o, n) = (p.phase(0, m), p.phase(1, m));
            // moving an electron (q = -1) adds e^{iG.r_old} - e^{iG.r_new} to S
            let delta = [A::of((o.0 - n.0).f64()), A::of((o.1 - n.1).f64())];
            let s = sf[g];
            let change = delta[0] * delta[0] + delta[1] * delta[1] + A::of(2.0) * (s[0] * delta[0] + s[1] * delta[1]);
            d.add(self.coef[g] * change);
        }
        d.value()
    }
}
