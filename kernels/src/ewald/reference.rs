//! The f64 reference, written from CASINO's Eqs. 2-4 and independently of the fast set-up: its own real-space
//! image box (every lattice point that can come within r_c of a wrapped displacement), every G vector of the full
//! sphere (not one of each pair), v_E and v_M term by term, and the energy split into its electron-electron,
//! electron-ion and ion-ion parts. Moves are evaluated pairwise from v_E, not from structure factors.

use super::cell::{dot, norm, Cell};
use super::{background, coefficient, Ions, Move, Params};
use std::f64::consts::{PI, TAU};

/// Energy of one configuration by parts (Ha).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Energy {
    pub ee: f64,
    pub ei: f64,
    pub ii: f64,
}

impl Energy {
    pub fn total(&self) -> f64 {
        self.ee + self.ei + self.ii
    }
}

/// Lattice points and G vectors of the reference sums.
pub struct Reference {
    pub cell: Cell,
    pub params: Params,
    box_points: Vec<[f64; 3]>,
    /// (G, c(G)) for every 0 < |G| <= G_c.
    gs: Vec<([f64; 3], f64)>,
}

impl Reference {
    pub fn new(cell: &Cell, params: Params) -> Reference {
        // A wrapped displacement has fractional coordinates in [-1/2, 1/2]; a point within r_c of it differs by at
        // most r_c |b_k| / 2 pi in coordinate k; a G vector of length G_c has |m_k| <= G_c |a_k| / 2 pi.
        let real_n = [0, 1, 2].map(|k| if k < cell.dim { (0.5 + params.rc * norm(cell.b[k]) / TAU).ceil() as i32 } else { 0 });
        let recip_n = [0, 1, 2].map(|k| if k < cell.dim { (params.gc * norm(cell.a[k]) / TAU).ceil() as i32 } else { 0 });
        let mut box_points = vec![];
        let mut gs = vec![];
        for i in -real_n[0]..=real_n[0] {
            for j in -real_n[1]..=real_n[1] {
                for k in -real_n[2]..=real_n[2] {
                    box_points.push(cell.cart([i as f64, j as f64, k as f64]));
                }
            }
        }
        for i in -recip_n[0]..=recip_n[0] {
            for j in -recip_n[1]..=recip_n[1] {
                for k in -recip_n[2]..=recip_n[2] {
                    let g = [0, 1, 2].map(|x| i as f64 * cell.b[0][x] + j as f64 * cell.b[1][x] + k as f64 * cell.b[2][x]);
                    let len = norm(g);
                    if len > 0.0 && len <= params.gc {
                        gs.push((g, coefficient(cell, params.alpha, len)));
                    }
                }
            }
        }
        Reference { cell: cell.clone(), params, box_points, gs }
    }

    /// Flops of [`Reference::energy`] plus [`Reference::move_change`] for one configuration of `electrons` electrons
    /// and `ions` ions (about 25 per real-space image term and per G-vector term): what checking a walker costs.
    pub fn cost(&self, electrons: usize, ions: usize) -> f64 {
        let (ne, ni, nb, ng) = (electrons as f64, ions as f64, self.box_points.len() as f64, self.gs.len() as f64);
        let pairs = ne * (ne - 1.0) / 2.0 + ne * ni + ni * (ni - 1.0) / 2.0;
        let energy = 25.0 * (pairs * nb + (ne + ni) * ng);
        let moves = 25.0 * 2.0 * (ne - 1.0 + ni) * (nb + ng);
        energy + moves
    }

    /// sum over lattice points R of erfc(alpha |d + R|) / |d + R| for |d + R| < r_c (R = -d left out).
    fn real(&self, d: [f64; 3]) -> f64 {
        let f = self.cell.frac(d).map(|x| x - x.round());
        let d = self.cell.cart(f);
        let mut s = 0.0;
        for r in &self.box_points {
            let x = norm([d[0] + r[0], d[1] + r[1], d[2] + r[2]]);
            if x > 0.0 && x < self.params.rc {
                s += libm::erfc(self.params.alpha * x) / x;
            }
        }
        s
    }

    fn background(&self) -> f64 {
        background(&self.cell, self.params.alpha)
    }

    /// The Ewald pair potential v_E(r) (Eq. 3; 2D analogue in 2D).
    pub fn v_e(&self, r: [f64; 3]) -> f64 {
        let recip: f64 = self.gs.iter().map(|(g, c)| c * dot(*g, r).cos()).sum();
        recip + self.real(r) - self.background()
    }

    /// The Madelung term v_M (Eq. 4).
    pub fn v_m(&self) -> f64 {
        let recip: f64 = self.gs.iter().map(|(_, c)| c).sum();
        recip + self.real([0.0; 3]) - 2.0 * self.params.alpha / PI.sqrt() - self.background()
    }

    /// Structure factor sum_i q e^{iG.r_i} of points with equal charge q, for every G.
    fn structure(&self, pos: &[[f64; 3]], q: &[f64]) -> Vec<[f64; 2]> {
        self.gs
            .iter()
            .map(|(g, _)| {
                pos.iter().zip(q).fold([0.0, 0.0], |s, (r, q)| {
                    let (sn, cs) = dot(*g, *r).sin_cos();
                    [s[0] + q * cs, s[1] + q * sn]
                })
            })
            .collect()
    }

    /// sum_G c(G) Re(S1(G) conj(S2(G))) over the full sphere.
    fn recip(&self, s1: &[[f64; 2]], s2: &[[f64; 2]]) -> f64 {
        self.gs.iter().zip(s1.iter().zip(s2)).map(|((_, c), (a, b))| c * (a[0] * b[0] + a[1] * b[1])).sum()
    }

    /// Energy of electrons (charge -1) at `electrons` and `ions`, by parts.
    pub fn energy(&self, electrons: &[[f64; 3]], ions: &Ions) -> Energy {
        let (n, bg, vm) = (electrons.len() as f64, self.background(), self.v_m());
        let qe = vec![-1.0; electrons.len()];
        let se = self.structure(electrons, &qe);
        let si = self.structure(&ions.pos, &ions.charge);
        let diff = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        // electron-electron: pairs in real space, sum_{i<j} cos = (|S|^2 - N) / 2 in reciprocal space
        let mut ee = 0.0;
        for i in 0..electrons.len() {
            for j in 0..i {
                ee += self.real(diff(electrons[i], electrons[j])) - bg;
            }
        }
        ee += 0.5 * (self.recip(&se, &se) - n * self.gs.iter().map(|(_, c)| c).sum::<f64>()) + 0.5 * n * vm;
        // electron-ion
        let (qi, z2): (f64, f64) = (ions.charge.iter().sum(), ions.charge.iter().map(|z| z * z).sum());
        let mut ei = 0.0;
        for e in electrons {
            for (r, z) in ions.pos.iter().zip(&ions.charge) {
                ei -= z * self.real(diff(*e, *r));
            }
        }
        ei += self.recip(&se, &si) + bg * n * qi;
        // ion-ion
        let mut ii = 0.0;
        for i in 0..ions.len() {
            for j in 0..i {
                ii += ions.charge[i] * ions.charge[j] * (self.real(diff(ions.pos[i], ions.pos[j])) - bg);
            }
        }
        ii += 0.5 * (self.recip(&si, &si) - z2 * self.gs.iter().map(|(_, c)| c).sum::<f64>()) + 0.5 * z2 * vm;
        Energy { ee, ei, ii }
    }

    /// The same energy as the plain pair sum of Eq. 2 (v_E for every pair): slow, for small tests.
    pub fn energy_pairwise(&self, electrons: &[[f64; 3]], ions: &Ions) -> f64 {
        let mut pos: Vec<[f64; 3]> = electrons.to_vec();
        pos.extend(&ions.pos);
        let mut q = vec![-1.0; electrons.len()];
        q.extend(&ions.charge);
        let mut e = 0.5 * q.iter().map(|x| x * x).sum::<f64>() * self.v_m();
        for i in 0..pos.len() {
            for j in 0..i {
                e += q[i] * q[j] * self.v_e([0, 1, 2].map(|x| pos[i][x] - pos[j][x]));
            }
        }
        e
    }

    /// Energy change when electron `mv.electron` moves to `mv.to`, from v_E pair by pair.
    pub fn move_change(&self, electrons: &[[f64; 3]], ions: &Ions, mv: &Move) -> f64 {
        let (old, new) = (electrons[mv.electron], mv.to);
        let pair = |a: [f64; 3], b: [f64; 3]| self.v_e([0, 1, 2].map(|x| a[x] - b[x]));
        let mut d = 0.0;
        for (j, r) in electrons.iter().enumerate() {
            if j != mv.electron {
                d += pair(new, *r) - pair(old, *r);
            }
        }
        for (r, z) in ions.pos.iter().zip(&ions.charge) {
            d -= z * (pair(new, *r) - pair(old, *r));
        }
        d
    }
}
