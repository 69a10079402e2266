//! Periodic cells: lattice vectors, reciprocal vectors, wrapping of displacements, and the lattice points the Ewald
//! sums run over. A 2D cell lives in the xy plane; its third lattice vector is a dummy unit z vector that no sum uses.

use std::f64::consts::{PI, TAU};

/// The lattices the mini-app offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lattice {
    Sc,
    Fcc,
    Bcc,
    /// A general cell: no two lattice vectors orthogonal, sides of different lengths.
    Triclinic,
    Square,
    Triangular,
}

impl Lattice {
    pub const ALL: [Lattice; 6] = [Lattice::Sc, Lattice::Fcc, Lattice::Bcc, Lattice::Triclinic, Lattice::Square, Lattice::Triangular];

    pub fn name(self) -> &'static str {
        match self {
            Lattice::Sc => "sc",
            Lattice::Fcc => "fcc",
            Lattice::Bcc => "bcc",
            Lattice::Triclinic => "triclinic",
            Lattice::Square => "square",
            Lattice::Triangular => "triangular",
        }
    }

    pub fn dim(self) -> usize {
        match self {
            Lattice::Square | Lattice::Triangular => 2,
            _ => 3,
        }
    }

    /// Primitive vectors of the lattice at an arbitrary scale.
    fn shape(self) -> [[f64; 3]; 3] {
        let h = 0.5;
        match self {
            Lattice::Sc => [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            Lattice::Fcc => [[0.0, h, h], [h, 0.0, h], [h, h, 0.0]],
            Lattice::Bcc => [[-h, h, h], [h, -h, h], [h, h, -h]],
            Lattice::Triclinic => [[1.0, 0.0, 0.0], [0.31, 1.07, 0.0], [-0.23, 0.41, 0.93]],
            Lattice::Square => [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            Lattice::Triangular => [[1.0, 0.0, 0.0], [0.5, 0.75f64.sqrt(), 0.0], [0.0, 0.0, 1.0]],
        }
    }

    /// The cell of this lattice with volume (area in 2D) `volume`.
    pub fn cell(self, volume: f64) -> Cell {
        let unit = Cell::new(self.dim(), self.shape());
        let s = (volume / unit.volume).powf(1.0 / self.dim() as f64);
        let mut a = self.shape();
        for v in a.iter_mut().take(self.dim()) {
            v.iter_mut().for_each(|x| *x *= s);
        }
        Cell::new(self.dim(), a)
    }
}

impl std::str::FromStr for Lattice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Lattice::ALL
            .into_iter()
            .find(|l| l.name() == s.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown lattice '{s}': expected sc, fcc, bcc, triclinic, square or triangular"))
    }
}

/// A periodic simulation cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// 2 or 3.
    pub dim: usize,
    /// Lattice vectors a_k (rows).
    pub a: [[f64; 3]; 3],
    /// Reciprocal vectors b_k with a_j . b_k = 2 pi delta_jk (rows).
    pub b: [[f64; 3]; 3],
    /// Volume (area in 2D).
    pub volume: f64,
}

pub fn dot(x: [f64; 3], y: [f64; 3]) -> f64 {
    x[0] * y[0] + x[1] * y[1] + x[2] * y[2]
}

fn cross(x: [f64; 3], y: [f64; 3]) -> [f64; 3] {
    [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]]
}

pub fn norm(x: [f64; 3]) -> f64 {
    dot(x, x).sqrt()
}

impl Cell {
    /// The cell with lattice vectors `a` (in 2D, a[2] must be the unit z vector).
    pub fn new(dim: usize, a: [[f64; 3]; 3]) -> Cell {
        let vol = dot(a[0], cross(a[1], a[2]));
        let b = [0, 1, 2].map(|k| cross(a[(k + 1) % 3], a[(k + 2) % 3]).map(|x| TAU * x / vol));
        Cell { dim, a, b, volume: vol.abs() }
    }

    /// Fractional coordinates of a Cartesian vector.
    pub fn frac(&self, r: [f64; 3]) -> [f64; 3] {
        [0, 1, 2].map(|k| dot(self.b[k], r) / TAU)
    }

    /// Cartesian vector of fractional coordinates.
    pub fn cart(&self, f: [f64; 3]) -> [f64; 3] {
        [0, 1, 2].map(|x| f[0] * self.a[0][x] + f[1] * self.a[1][x] + f[2] * self.a[2][x])
    }

    /// The periodic image of `d` with fractional coordinates in [-1/2, 1/2].
    pub fn wrap(&self, d: [f64; 3]) -> [f64; 3] {
        self.cart(self.frac(d).map(|f| f - f.round()))
    }

    /// Largest length of a wrapped displacement: half the longest diagonal of the cell.
    pub fn max_wrapped(&self) -> f64 {
        let signs = [1.0, -1.0];
        let mut m = 0.0f64;
        for s1 in signs {
            for s2 in signs {
                let s3 = if self.dim == 3 { 1.0 } else { 0.0 };
                m = m.max(0.5 * norm(self.cart([1.0, s1, s2 * s3])));
            }
        }
        m
    }

    /// Radius of the largest sphere (disc) inside the cell: the nearest-image distance is at least twice it.
    pub fn inscribed_radius(&self) -> f64 {
        (0..self.dim).map(|k| PI / norm(self.b[k])).fold(f64::INFINITY, f64::min)
    }

    /// Integer bound on index k for vectors of length at most `radius`: |n_k| <= radius |b_k| / 2 pi for lattice
    /// points (and radius |a_k| / 2 pi for reciprocal points).
    fn bounds(&self, radius: f64, reciprocal: bool) -> [i32; 3] {
        [0, 1, 2].map(|k| {
            if k >= self.dim {
                0
            } else {
                let len = if reciprocal { norm(self.a[k]) } else { norm(self.b[k]) };
                (radius * len / TAU).floor() as i32
            }
        })
    }

    /// Lattice points R with |R| <= radius, R = 0 included, shortest first.
    pub fn lattice_points(&self, radius: f64) -> Vec<[f64; 3]> {
        let n = self.bounds(radius, false);
        let mut out = vec![];
        for i in -n[0]..=n[0] {
            for j in -n[1]..=n[1] {
                for k in -n[2]..=n[2] {
                    let r = self.cart([i as f64, j as f64, k as f64]);
                    if norm(r) <= radius {
                        out.push(r);
                    }
                }
            }
        }
        out.sort_by(|x, y| norm(*x).total_cmp(&norm(*y)));
        out
    }

    /// Reciprocal lattice vector of Miller indices m.
    pub fn g(&self, m: [i32; 3]) -> [f64; 3] {
        [0, 1, 2].map(|x| m[0] as f64 * self.b[0][x] + m[1] as f64 * self.b[1][x] + m[2] as f64 * self.b[2][x])
    }

    /// Miller indices of the reciprocal vectors 0 < |G| <= radius in one half space (of each pair +-G, the one whose
    /// first non-zero index is positive), ordered by (m1, m2, m3) so that runs share m1 and m2.
    pub fn half_reciprocal(&self, radius: f64) -> Vec<[i32; 3]> {
        let n = self.bounds(radius, true);
        let mut out = vec![];
        for i in 0..=n[0] {
            for j in -n[1]..=n[1] {
                for k in -n[2]..=n[2] {
                    let positive = i > 0 || (i == 0 && (j > 0 || (j == 0 && k > 0)));
                    if positive && norm(self.g([i, j, k])) <= radius {
                        out.push([i, j, k]);
                    }
                }
            }
        }
        out
    }
}
