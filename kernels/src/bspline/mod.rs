//! 3D tricubic B-spline orbitals: the costliest kernel of QMCPACK (paper 000) and CASINO's blips (paper 003).
//!
//! An orbital on a periodic orthorhombic cell of sides (L_x, L_y, L_z) is represented on an n_x x n_y x n_z grid as
//!
//!   psi_o(r) = sum_{ijk} c[i,j,k,o] b(t_x - i) b(t_y - j) b(t_z - k),   t_d = n_d r_d / L_d,
//!
//! with b the cubic B-spline (or CASINO's blip, 1.5 times it). At any point only 4 x 4 x 4 = 64 coefficients per
//! orbital are non-zero. All orbitals live in one table with the orbital index fastest (`[ix][iy][iz][orbital]`,
//! rows padded to `stride`), so the 64 rows a point needs are read contiguously and, on the GPU, coalesced across
//! a warp: a point costs 64 x stride x sizeof(S) bytes of table reads, which makes the kernel bandwidth-bound.
//!
//! Outputs for a batch of points (one per walker), laid out `[walker][component][stride]`:
//! V (value), VGL (value, gradient, Laplacian) and VGH (value, gradient, Hessian xx xy xz yy yz zz).
//! Flops per point and orbital: 2 x 64 x components. Mirrors QMCPACK's `MultiBspline::evaluate_vgh`.
//!
//! Precision: `double` (f64 table and arithmetic), `single` (f32), `mixed` (f32 table, f64 weights and
//! accumulation: the bandwidth of single with most of the accuracy of double).

pub mod cpu;
pub mod gpu;
pub mod reference;

use crate::rng;
use crate::Real;
use rand::Rng;

/// Which basis function the table is expressed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// The cubic B-spline (QMCPACK, einspline).
    BSpline,
    /// CASINO's blip function, 1.5 times the cubic B-spline (Alfè and Gillan).
    Blip,
}

impl Basis {
    /// Factor applied to each one-dimensional weight.
    pub fn scale(self) -> f64 {
        match self {
            Basis::BSpline => 1.0,
            Basis::Blip => 1.5,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Basis::BSpline => "bspline",
            Basis::Blip => "blip",
        }
    }
}

impl std::str::FromStr for Basis {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "bspline" => Ok(Basis::BSpline),
            "blip" => Ok(Basis::Blip),
            _ => Err(format!("unknown basis '{s}': expected bspline or blip")),
        }
    }
}

/// What is evaluated at each point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    V,
    Vgl,
    Vgh,
}

impl Output {
    /// Number of components per orbital.
    pub fn components(self) -> usize {
        match self {
            Output::V => 1,
            Output::Vgl => 5,
            Output::Vgh => 10,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Output::V => "v",
            Output::Vgl => "vgl",
            Output::Vgh => "vgh",
        }
    }
    /// Names of the validated quantities and the component ranges they cover.
    pub fn quantities(self) -> &'static [(&'static str, std::ops::Range<usize>)] {
        match self {
            Output::V => &[("value", 0..1)],
            Output::Vgl => &[("value", 0..1), ("gradient", 1..4), ("laplacian", 4..5)],
            Output::Vgh => &[("value", 0..1), ("gradient", 1..4), ("hessian", 4..10)],
        }
    }
}

impl std::str::FromStr for Output {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "v" => Ok(Output::V),
            "vgl" => Ok(Output::Vgl),
            "vgh" => Ok(Output::Vgh),
            _ => Err(format!("unknown output '{s}': expected v, vgl or vgh")),
        }
    }
}

/// Orbital rows are padded to a multiple of this many entries: 64 f32 = 256 bytes, whole cache lines and whole
/// warps on the GPU, and the block width of the CPU kernel.
pub const ROW_ALIGN: usize = 64;

/// The periodic grid and the cell it spans.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    pub n: [usize; 3],
    pub cell: [f64; 3],
}

impl Grid {
    /// Fewest grid points per side: the 4-point stencil must not overlap itself.
    pub const MIN_POINTS: usize = 4;

    pub fn cubic(points: usize, side: f64) -> Grid {
        Grid { n: [points; 3], cell: [side; 3] }
    }

    pub fn points(&self) -> usize {
        self.n.iter().product()
    }

    /// The grid-coordinate of `r` along `d`, wrapped into [0, n_d): cell index and fraction.
    #[inline(always)]
    pub fn locate(&self, r: f64, d: usize) -> (usize, f64) {
        let n = self.n[d] as f64;
        let t = (r / self.cell[d]).rem_euclid(1.0) * n;
        let i = (t.floor() as usize).min(self.n[d] - 1);
        (i, t - i as f64)
    }
}

/// The coefficient table: `[ix][iy][iz][orbital]`, rows of `stride` entries.
#[derive(Clone, Debug)]
pub struct Table<S> {
    pub grid: Grid,
    pub orbitals: usize,
    pub stride: usize,
    pub basis: Basis,
    pub coefs: Vec<S>,
}

impl<S: Real> Table<S> {
    /// Bytes of coefficient storage.
    pub fn bytes(&self) -> usize {
        self.coefs.len() * std::mem::size_of::<S>()
    }

    /// Offset of grid point (i, j, k) in `coefs`.
    #[inline(always)]
    pub fn row(&self, i: usize, j: usize, k: usize) -> usize {
        ((i * self.grid.n[1] + j) * self.grid.n[2] + k) * self.stride
    }

    /// The same table in another precision.
    pub fn convert<T: Real>(&self) -> Table<T> {
        Table {
            grid: self.grid,
            orbitals: self.orbitals,
            stride: self.stride,
            basis: self.basis,
            coefs: self.coefs.iter().map(|&c| T::of(c.f64())).collect(),
        }
    }
}

/// Padded row length for `orbitals` orbitals.
pub fn stride_for(orbitals: usize) -> usize {
    orbitals.div_ceil(ROW_ALIGN) * ROW_ALIGN
}

/// Bytes of a table of this shape in precision S (to check sizes before allocating anything).
pub fn table_bytes(grid: &Grid, orbitals: usize, elem: usize) -> usize {
    grid.points() * stride_for(orbitals) * elem
}

/// A table of random coefficients in [-1, 1) (as miniqmc does: the cost is real, the orbitals are not).
/// Padding entries are zero. Generated in parallel directly in the storage precision.
pub fn random_table<S: Real>(grid: Grid, orbitals: usize, basis: Basis, seed: u64) -> Table<S> {
    let stride = stride_for(orbitals);
    let mut coefs = vec![S::zero(); grid.points() * stride];
    rng::fill_uniform(&mut coefs, seed, -1.0, 1.0, S::of);
    if stride > orbitals {
        for row in coefs.chunks_exact_mut(stride) {
            row[orbitals..].iter_mut().for_each(|c| *c = S::zero());
        }
    }
    Table { grid, orbitals, stride, basis, coefs }
}

/// A real plane wave cos(k . r + phase) with k = 2 pi (m_x / L_x, m_y / L_y, m_z / L_z).
#[derive(Clone, Copy, Debug)]
pub struct PlaneWave {
    pub m: [i32; 3],
    pub phase: f64,
}

impl PlaneWave {
    pub fn k(&self, grid: &Grid) -> [f64; 3] {
        let tau = std::f64::consts::TAU;
        [0, 1, 2].map(|d| tau * self.m[d] as f64 / grid.cell[d])
    }
    /// Value, gradient and Hessian (xx xy xz yy yz zz) of the wave at r.
    pub fn vgh(&self, grid: &Grid, r: [f64; 3]) -> [f64; 10] {
        let k = self.k(grid);
        let arg = k[0] * r[0] + k[1] * r[1] + k[2] * r[2] + self.phase;
        let (s, c) = arg.sin_cos();
        [c, -s * k[0], -s * k[1], -s * k[2], -c * k[0] * k[0], -c * k[0] * k[1], -c * k[0] * k[2], -c * k[1] * k[1], -c * k[1] * k[2], -c * k[2] * k[2]]
    }
}

/// The interpolating table of a set of plane waves, one orbital per wave. The interpolation coefficients of a
/// plane wave are known in closed form: c_j = f(r_j) / prod_d (2 + cos(k_d h_d)) / 3 for the B-spline (divided by
/// a further 1.5 per dimension for blips), because sum_m b(i - m) e^{i k h m} = e^{i k h i} (4 + 2 cos kh) / 6.
pub fn plane_wave_table(grid: Grid, waves: &[PlaneWave], basis: Basis) -> Table<f64> {
    let orbitals = waves.len();
    let stride = stride_for(orbitals);
    let mut coefs = vec![0.0; grid.points() * stride];
    let h = [0, 1, 2].map(|d| grid.cell[d] / grid.n[d] as f64);
    for (o, w) in waves.iter().enumerate() {
        let k = w.k(&grid);
        let denom: f64 = (0..3).map(|d| (2.0 + (k[d] * h[d]).cos()) / 3.0 * basis.scale()).product();
        for i in 0..grid.n[0] {
            for j in 0..grid.n[1] {
                for l in 0..grid.n[2] {
                    let r = [i as f64 * h[0], j as f64 * h[1], l as f64 * h[2]];
                    let idx = ((i * grid.n[1] + j) * grid.n[2] + l) * stride + o;
                    coefs[idx] = w.vgh(&grid, r)[0] / denom;
                }
            }
        }
    }
    Table { grid, orbitals, stride, basis, coefs }
}

/// Random points in the cell, `[walker][xyz]`, in f64 (positions stay double in every precision mode).
pub fn random_positions(walkers: usize, grid: &Grid, seed: u64) -> Vec<f64> {
    let mut r = rng::rng(seed, 0xB5);
    (0..walkers * 3).map(|i| r.random_range(0.0..grid.cell[i % 3])).collect()
}

/// Flops of one evaluation of `points` points, as the kernels do it (z first): for each of the 16 (x, y) stencil
/// points, the 4 z coefficients reduced once per z-derivative order needed (1 for V, 3 otherwise), then one FMA per
/// output (two for the VGL Laplacian, whose z part has its own term).
pub fn flops(points: usize, orbitals: usize, output: Output) -> f64 {
    let nc = output.components();
    let (nz, extra) = match nc {
        1 => (1, 0),
        5 => (3, 1),
        _ => (3, 0),
    };
    (points * orbitals * 16 * (4 * nz + nc + extra) * 2) as f64
}

/// Distinct table rows the stencils of all points at `pos` touch. Walkers whose stencils overlap share rows, and a
/// kernel that reads each shared row once (through the cache) moves only these: counting 64 rows per point would
/// credit a kernel with bandwidth it never used.
pub fn stencil_rows(grid: &Grid, pos: &[f64]) -> usize {
    let mut rows = std::collections::HashSet::new();
    for p in pos.chunks_exact(3) {
        // the 4 wrapped grid indices along each dimension, as the kernels compute them
        let idx = [0, 1, 2].map(|d| {
            let (i, _) = grid.locate(p[d], d);
            [0, 1, 2, 3].map(|q| (i + grid.n[d] + q - 1) % grid.n[d])
        });
        for i in idx[0] {
            for j in idx[1] {
                for k in idx[2] {
                    rows.insert((i * grid.n[1] + j) * grid.n[2] + k);
                }
            }
        }
    }
    rows.len()
}

/// Fewest bytes one evaluation of `points` points moves: each distinct table row read once (`rows`, from
/// [`stencil_rows`]), the outputs written once, the positions read.
pub fn bytes(points: usize, rows: usize, stride: usize, output: Output, s_bytes: usize, a_bytes: usize) -> f64 {
    (rows * stride * s_bytes + points * (output.components() * stride * a_bytes + 24)) as f64
}

/// The one-dimensional weights of the 4 grid points around fraction t in [0, 1): value, first and second
/// derivative with respect to t (the base's one copy, shared with the Jastrow's B-spline functors).
pub use crate::maths::bspline_weights as weights;

#[cfg(test)]
mod tests;
