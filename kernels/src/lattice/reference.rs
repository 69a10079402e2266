//! The f64 reference: the thesis' CPU algorithm written plainly, one chain at a time. Ratios by DetPByDet, the
//! inverse by UpdateConfig (Sherman-Morrison), a swap as a tentative move of one electron, the ratio of the other,
//! and a restore from a saved copy when rejected (CopyConfig); the exchange energy the same way, bond by bond.
//! The fast variants use a different swap formula (no tentative update), so agreement checks both.
//!
//! Also the exact expectation value by enumeration, with H applied in second quantization (fermion signs counted
//! from the operator order), independent of the determinant-ratio formulas.

use super::{tally, ChainResult, Config, Model, Stream, DN, HL, UP};
use std::collections::HashMap;

/// One chain of the reference.
pub struct Chain<'a> {
    m: &'a Model,
    c: Config,
    occ: Vec<u32>,
    which: Vec<u32>,
    /// W = M^-1, `[b][a]`.
    w: Vec<f64>,
    rng: Stream,
    tally: [f64; tally::LEN],
    cond_max: f64,
    growth_max: f64,
}

impl<'a> Chain<'a> {
    pub fn new(m: &'a Model, c: Config, w: Vec<f64>, rng: Stream) -> Chain<'a> {
        let (occ, which) = c.occupation(m.sites);
        Chain { m, c, occ, which, w, rng, tally: [0.0; tally::LEN], cond_max: 0.0, growth_max: 0.0 }
    }

    /// DetPByDet: det M'/det M when electron `i` of `spin` moves to `s`.
    pub fn ratio(&self, spin: u32, i: usize, s: usize) -> f64 {
        let np = self.m.pairs;
        if spin == UP {
            (0..np).map(|b| self.m.phi(s, self.c.dn[b] as usize) * self.w[b * np + i]).sum()
        } else {
            (0..np).map(|a| self.w[i * np + a] * self.m.phi(self.c.up[a] as usize, s)).sum()
        }
    }

    /// UpdateConfig: move electron `i` of `spin` to `s` given its ratio `r`; Sherman-Morrison on W.
    pub fn update(&mut self, spin: u32, i: usize, s: usize, r: f64) {
        let np = self.m.pairs;
        self.growth_max = self.growth_max.max(1.0 / r.abs());
        let w = &mut self.w;
        if spin == UP {
            // Row i of M becomes phi(s, d_b): f_a = sum_b phi(s, d_b) W_ba, then column i of W / r.
            let f: Vec<f64> = (0..np).map(|a| (0..np).map(|b| self.m.phi(s, self.c.dn[b] as usize) * w[b * np + a]).sum()).collect();
            for b in 0..np {
                w[b * np + i] /= r;
            }
            for a in (0..np).filter(|&a| a != i) {
                for b in 0..np {
                    w[b * np + a] -= f[a] * w[b * np + i];
                }
            }
            self.c.up[i] = s as u32;
        } else {
            let g: Vec<f64> = (0..np).map(|b| (0..np).map(|a| w[b * np + a] * self.m.phi(self.c.up[a] as usize, s)).sum()).collect();
            for a in 0..np {
                w[i * np + a] /= r;
            }
            for b in (0..np).filter(|&b| b != i) {
                for a in 0..np {
                    w[b * np + a] -= g[b] * w[i * np + a];
                }
            }
            self.c.dn[i] = s as u32;
        }
    }

    /// Two-step swap ratio: electron `i` of `spin` moves to the site of the opposite-spin electron `j`, which moves
    /// to i's old site. Leaves W as it found it unless `keep` holds a uniform number below |R|^2, in which case the
    /// swap is committed. When the first single-move ratio vanishes (the intermediate matrix is singular: it
    /// happens on small symmetric clusters) the other electron moves first, and if both vanish the ratio is taken
    /// from LU determinants.
    pub fn swap_ratio(&mut self, spin: u32, i: usize, j: usize, keep: Option<f64>) -> f64 {
        if let Some(r) = self.two_step(spin, i, j, keep) {
            return r;
        }
        if let Some(r) = self.two_step(1 - spin, j, i, keep) {
            return r;
        }
        let np = self.m.pairs;
        let mut c2 = self.c.clone();
        let (si, sj) = (self.site(spin, i), self.site(1 - spin, j));
        if spin == UP {
            (c2.up[i], c2.dn[j]) = (sj as u32, si as u32);
        } else {
            (c2.dn[i], c2.up[j]) = (sj as u32, si as u32);
        }
        let d0 = super::invert(&self.m.matrix(&self.c), np).map_or(0.0, |x| x.1);
        let (w2, d1) = super::invert(&self.m.matrix(&c2), np).unwrap_or((vec![], 0.0));
        let r = d1 / d0;
        if matches!(keep, Some(u) if u < r * r) {
            (self.w, self.c) = (w2, c2);
        }
        r
    }

    fn two_step(&mut self, spin: u32, i: usize, j: usize, keep: Option<f64>) -> Option<f64> {
        let other = 1 - spin;
        let (si, sj) = (self.site(spin, i), self.site(other, j));
        let r1 = self.ratio(spin, i, sj);
        if r1.abs() < 1e-8 {
            return None;
        }
        let saved = (self.w.clone(), self.c.clone());
        self.update(spin, i, sj, r1);
        let r2 = self.ratio(other, j, si);
        let r = r1 * r2;
        match keep {
            Some(u) if u < r * r => self.update(other, j, si, r2),
            _ => (self.w, self.c) = saved,
        }
        Some(r)
    }

    fn site(&self, spin: u32, i: usize) -> usize {
        (if spin == UP { self.c.up[i] } else { self.c.dn[i] }) as usize
    }

    /// One Metropolis move (ElectronMove + PerformMonteCarloSweep).
    pub fn step(&mut self) {
        let (np, ns) = (self.m.pairs, self.m.sites);
        let i = self.rng.below(np);
        let spin = self.rng.below(2) as u32;
        let old = self.site(spin, i);
        let new = loop {
            let s = self.rng.below(ns);
            if self.occ[s] != spin {
                break s;
            }
        };
        let u = self.rng.uniform();
        if self.occ[new] == HL {
            self.tally[tally::HOPS] += 1.0;
            let r = self.ratio(spin, i, new);
            if u < r * r {
                self.update(spin, i, new, r);
                self.occ[old] = HL;
                self.occ[new] = spin;
                self.which[new] = i as u32;
                self.tally[tally::HOPS_ACCEPTED] += 1.0;
            }
        } else {
            self.tally[tally::SWAPS] += 1.0;
            let j = self.which[new] as usize;
            let r = self.swap_ratio(spin, i, j, Some(u));
            if u < r * r {
                self.occ[old] = 1 - spin;
                self.occ[new] = spin;
                self.which[old] = j as u32;
                self.which[new] = i as u32;
                self.tally[tally::SWAPS_ACCEPTED] += 1.0;
            }
        }
    }

    /// Local energy per site of the current configuration (EnergyOfConfig).
    pub fn energy(&mut self) -> f64 {
        let m = self.m;
        let mut ekin = 0.0;
        for spin in [UP, DN] {
            for i in 0..m.pairs {
                let s = self.site(spin, i);
                for jn in 0..4 {
                    let t = m.nbr[4 * s + jn] as usize;
                    if self.occ[t] == HL {
                        ekin += m.hop[4 * s + jn] * self.ratio(spin, i, t);
                        self.tally[tally::KIN_RATIOS] += 1.0;
                    }
                }
            }
        }
        let mut ej = 0.0;
        for (x, y) in m.bonds() {
            if self.occ[x] != HL && self.occ[y] != HL && self.occ[x] != self.occ[y] {
                let (x, y) = if self.occ[x] == UP { (x, y) } else { (y, x) };
                let r = self.swap_ratio(UP, self.which[x] as usize, self.which[y] as usize, None);
                ej -= 0.5 * m.j * (1.0 + r);
                self.tally[tally::BONDS] += 1.0;
            }
        }
        (ekin + ej) / m.sites as f64
    }

    /// `equil` sweeps without measurement, then `sweeps` sweeps each followed by a measurement.
    pub fn run(&mut self, equil: usize, sweeps: usize) {
        for k in 0..equil + sweeps {
            for _ in 0..2 * self.m.pairs {
                self.step();
            }
            if k >= equil {
                let mat = self.m.matrix(&self.c);
                self.cond_max = self.cond_max.max(1.0 / crate::linalg::rcond(&mat, &self.w, self.m.pairs));
                let e = self.energy();
                self.tally[tally::E_SUM] += e;
                self.tally[tally::E2_SUM] += e * e;
                self.tally[tally::MEASUREMENTS] += 1.0;
            }
        }
    }

    pub fn result(self) -> ChainResult {
        ChainResult { config: self.c, w: self.w, tally: self.tally, cond_max: self.cond_max, growth_max: self.growth_max }
    }
}

/// Run every chain from its start (chain c uses stream `Stream::new(seed, c)`), one after another.
pub fn run(m: &Model, starts: &[(Config, Vec<f64>)], seed: u64, equil: usize, sweeps: usize) -> Vec<ChainResult> {
    run_chains(m, starts, &(0..starts.len()).collect::<Vec<_>>(), seed, equil, sweeps)
}

/// Run the chains `chains` of `starts` (chain c from `starts[c]` with stream `Stream::new(seed, c)`, as every
/// variant runs it), one after another; results in the order given.
pub fn run_chains(m: &Model, starts: &[(Config, Vec<f64>)], chains: &[usize], seed: u64, equil: usize, sweeps: usize) -> Vec<ChainResult> {
    chains
        .iter()
        .map(|&c| {
            let (cfg, w) = &starts[c];
            let mut ch = Chain::new(m, cfg.clone(), w.clone(), Stream::new(seed, c as u64));
            ch.run(equil, sweeps);
            ch.result()
        })
        .collect()
}

/// One configuration of an enumeration: its canonical (sorted) sites, amplitude and local energy from H.
pub struct Exact {
    pub energy: f64,
    pub configs: Vec<(Config, f64, f64)>,
}

/// Apply fermion operators (right to left as listed: the last acts first) to occupation bits; mode k < 64.
/// Each operator takes the sign (-1)^(occupied modes below k). None when the state is annihilated.
fn apply(mut bits: u128, ops: &[(bool, usize)]) -> Option<(u128, f64)> {
    let mut sign = 1.0;
    for &(create, k) in ops.iter().rev() {
        let occupied = bits >> k & 1 == 1;
        if occupied == create {
            return None;
        }
        if (bits & ((1u128 << k) - 1)).count_ones() % 2 == 1 {
            sign = -sign;
        }
        bits ^= 1 << k;
    }
    Some((bits, sign))
}

/// Every projected configuration of a small cluster (N_S <= 64): <H> = <Psi|H|Psi> / <Psi|Psi>.
/// Modes: up electron on site s is mode s, down is mode N_S + s; basis states list creators in mode order.
pub fn exact(m: &Model) -> Exact {
    let (ns, np) = (m.sites, m.pairs);
    assert!(2 * ns <= 128, "exact enumeration needs at most 64 sites");
    let subsets = |from: &[usize], k: usize| -> Vec<Vec<usize>> {
        let mut out = vec![];
        let mut pick = vec![];
        fn rec(from: &[usize], k: usize, start: usize, pick: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
            if pick.len() == k {
                out.push(pick.clone());
                return;
            }
            for i in start..from.len() {
                pick.push(from[i]);
                rec(from, k, i + 1, pick, out);
                pick.pop();
            }
        }
        rec(from, k, 0, &mut pick, &mut out);
        out
    };
    let all: Vec<usize> = (0..ns).collect();
    let mut psi: HashMap<u128, f64> = HashMap::new();
    let mut configs = vec![];
    for up in subsets(&all, np) {
        let rest: Vec<usize> = all.iter().copied().filter(|s| !up.contains(s)).collect();
        for dn in subsets(&rest, np) {
            let c = Config { up: up.iter().map(|&s| s as u32).collect(), dn: dn.iter().map(|&s| s as u32).collect() };
            let det = super::invert(&m.matrix(&c), np).map_or(0.0, |(_, d)| d);
            let bits = up.iter().fold(0u128, |b, &s| b | 1 << s) | dn.iter().fold(0u128, |b, &s| b | 1 << (ns + s));
            psi.insert(bits, det);
            configs.push((c, bits, det));
        }
    }
    // H as a list of operator strings with amplitudes.
    let mut terms: Vec<(f64, Vec<(bool, usize)>)> = vec![];
    for (x, y) in m.bonds() {
        let h = (0..4).find(|&jn| m.nbr[4 * x + jn] as usize == y).map(|jn| m.hop[4 * x + jn]).unwrap();
        for off in [0, ns] {
            terms.push((h, vec![(true, off + y), (false, off + x)]));
            terms.push((h, vec![(true, off + x), (false, off + y)]));
        }
        // (J/2)(S+_x S-_y + S-_x S+_y) and the diagonal J (Sz Sz - n n / 4), handled below.
        terms.push((0.5 * m.j, vec![(true, x), (false, ns + x), (true, ns + y), (false, y)]));
        terms.push((0.5 * m.j, vec![(true, y), (false, ns + y), (true, ns + x), (false, x)]));
    }
    let mut num = 0.0;
    let mut den = 0.0;
    let mut out = vec![];
    for (c, bits, det) in configs {
        // <C|H|Psi> = sum over terms of <Psi|term|C> (H is real symmetric).
        let mut hpsi = 0.0;
        for (amp, ops) in &terms {
            if let Some((b2, sign)) = apply(bits, ops) {
                // The projection: a hop may not create a double occupancy.
                let ok = (0..ns).all(|s| !(b2 >> s & 1 == 1 && b2 >> (ns + s) & 1 == 1));
                if ok {
                    hpsi += amp * sign * psi.get(&b2).copied().unwrap_or(0.0);
                }
            }
        }
        for (x, y) in m.bonds() {
            let spin_of = |s: usize| if bits >> s & 1 == 1 { Some(UP) } else if bits >> (ns + s) & 1 == 1 { Some(DN) } else { None };
            if let (Some(a), Some(b)) = (spin_of(x), spin_of(y)) {
                let szsz = if a == b { 0.25 } else { -0.25 };
                hpsi += m.j * (szsz - 0.25) * det;
            }
        }
        num += det * hpsi;
        den += det * det;
        let eloc = if det != 0.0 { hpsi / det / ns as f64 } else { 0.0 };
        out.push((c, det, eloc));
    }
    Exact { energy: num / den / ns as f64, configs: out }
}
