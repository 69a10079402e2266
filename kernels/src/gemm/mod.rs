//! Gaussian-basis molecular orbitals as a matrix product, and the precision of that product (paper 004).
//!
//! Stage 1 (`basis`): contracted Cartesian Gaussians chi_j(r - R_j) = x^k y^l z^m sum_n a_nj exp(-b_nj r^2), with
//! value, gradient and Laplacian, for every electron of every walker. Output `[walker][electron][component][basis]`
//! (5 components: value, d/dx, d/dy, d/dz, Laplacian), basis index fastest.
//!
//! Stage 2 (`gemm`): that output *is* a row-major matrix A of (walkers x electrons x 5) rows and N_bf columns, and
//! the orbitals (and their derivatives) are one product C = A B with the coefficient matrix B (N_bf x N_orb), shared
//! by all walkers and all five components (the paper's reused "multiplicand"). RHF: N_orb = electrons / 2.
//! All matrices are row-major. The same GEMM code also runs square shapes for a roofline.
//!
//! GEMM algorithms ([`Algo`]): `naive-f32` (one f32 accumulator per entry), `kahan-f32` (Algorithm 2: Kahan
//! summation of the rounded f32 products, each step rounded separately), `f64`, `mixed` (f32 inputs, f64 products
//! and accumulation, f64 output), and the vendor library: `blas-f32`, `blas-f64`, `blas-tf32` (cuBLAS on the GPU,
//! with TF32 tensor cores for the last; faer on the CPU, where there is no TF32). The library variants keep one name
//! on both sides so that the CPU and GPU records of a case pair up.
//!
//! Precision: `single` runs naive-f32, kahan-f32, blas-f32, blas-tf32; `double` runs f64, blas-f64; `mixed` runs
//! mixed. For the basis kernel, `mixed` means f64 evaluation stored as f32 (the input a single-precision GEMM takes).

pub mod basis;
pub mod cpu;
pub mod gpu;
pub mod reference;

use crate::{rng, Precision};

/// One molecule of the paper's Fig. 7 table: all-electron counts and basis sizes as printed (lysine and arginine
/// electron counts do not match their formulas; they are kept as printed, being only sizes here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Molecule {
    pub name: &'static str,
    pub electrons: usize,
    pub basis: usize,
}

impl Molecule {
    /// Occupied RHF orbitals: one per electron pair (shared by both spins).
    pub fn orbitals(&self) -> usize {
        self.electrons / 2
    }
}

/// The seven molecules of Fig. 7, smallest first.
pub const MOLECULES: [Molecule; 7] = [
    Molecule { name: "acetic-acid", electrons: 32, basis: 80 },
    Molecule { name: "benzaldehyde", electrons: 56, basis: 150 },
    Molecule { name: "annulene", electrons: 70, basis: 200 },
    Molecule { name: "diazobenzene", electrons: 96, basis: 326 },
    Molecule { name: "lysine", electrons: 102, basis: 280 },
    Molecule { name: "arginine", electrons: 116, basis: 387 },
    Molecule { name: "hmx", electrons: 152, basis: 516 },
];

/// Find a molecule by name (case-insensitive), with the known names in the error.
pub fn molecule(name: &str) -> Result<Molecule, String> {
    let lower = name.to_ascii_lowercase();
    MOLECULES.iter().find(|m| m.name == lower).copied().ok_or_else(|| {
        let names: Vec<&str> = MOLECULES.iter().map(|m| m.name).collect();
        format!("unknown molecule '{name}': expected one of {}", names.join(", "))
    })
}

/// Components per electron and basis function: value, gradient (3), Laplacian.
pub const COMPONENTS: usize = 5;

/// A GEMM shape C (m x n) = A (m x k) B (k x n).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

impl Shape {
    /// The orbital product of `walkers` walkers of a molecule: all components of all electrons stacked.
    pub fn orbitals(mol: Molecule, walkers: usize) -> Shape {
        Shape { m: walkers * mol.electrons * COMPONENTS, k: mol.basis, n: mol.orbitals() }
    }
    pub fn square(s: usize) -> Shape {
        Shape { m: s, k: s, n: s }
    }
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.k as f64 * self.n as f64
    }
    /// Fewest bytes: read A and B once, write C once.
    pub fn bytes(&self, in_bytes: usize, out_bytes: usize) -> f64 {
        ((self.m * self.k + self.k * self.n) * in_bytes + self.m * self.n * out_bytes) as f64
    }
}

/// A GEMM algorithm (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algo {
    NaiveF32,
    KahanF32,
    F64,
    Mixed,
    BlasF32,
    BlasF64,
    BlasTf32,
}

impl Algo {
    pub const ALL: [Algo; 7] = [Algo::NaiveF32, Algo::KahanF32, Algo::BlasF32, Algo::BlasTf32, Algo::F64, Algo::BlasF64, Algo::Mixed];

    pub fn name(self) -> &'static str {
        match self {
            Algo::NaiveF32 => "naive-f32",
            Algo::KahanF32 => "kahan-f32",
            Algo::F64 => "f64",
            Algo::Mixed => "mixed",
            Algo::BlasF32 => "blas-f32",
            Algo::BlasF64 => "blas-f64",
            Algo::BlasTf32 => "blas-tf32",
        }
    }

    /// The precision mode an algorithm belongs to.
    pub fn precision(self) -> Precision {
        match self {
            Algo::NaiveF32 | Algo::KahanF32 | Algo::BlasF32 | Algo::BlasTf32 => Precision::Single,
            Algo::F64 | Algo::BlasF64 => Precision::Double,
            Algo::Mixed => Precision::Mixed,
        }
    }

    /// The algorithms of one precision mode.
    pub fn of(p: Precision) -> Vec<Algo> {
        Algo::ALL.into_iter().filter(|a| a.precision() == p).collect()
    }

    /// Does the CPU have this algorithm? (No TF32 on the CPU.)
    pub fn on_cpu(self) -> bool {
        self != Algo::BlasTf32
    }

    /// Inputs are f64 (else f32).
    pub fn f64_inputs(self) -> bool {
        matches!(self, Algo::F64 | Algo::BlasF64)
    }

    /// Output is f64 (else f32).
    pub fn f64_output(self) -> bool {
        matches!(self, Algo::F64 | Algo::BlasF64 | Algo::Mixed)
    }

    /// Tolerance of the normwise error against the f64 reference, for inner dimension k. Inputs are rounded to the
    /// storage precision first (a relative error of eps per entry, which the reference does not see), then the sum
    /// adds its own: up to k eps for one accumulator (about sqrt(k) eps / 3 at random for positive terms; 4 sqrt(k)
    /// leaves room for the largest of many entries), a few eps for Kahan and f64 accumulation. TF32 keeps 10
    /// mantissa bits of each input (unit roundoff 2^-11), an error that averages down over the k terms.
    pub fn tolerance(self, k: usize) -> f64 {
        let e32 = f32::EPSILON as f64;
        let sum = 8.0 + 4.0 * (k as f64).sqrt();
        match self {
            Algo::NaiveF32 | Algo::BlasF32 => e32 * sum,
            Algo::KahanF32 | Algo::Mixed => 8.0 * e32,
            Algo::BlasTf32 => 8.0 * 2f64.powi(-11) + e32 * sum,
            Algo::F64 | Algo::BlasF64 => f64::EPSILON * sum,
        }
    }
}

impl std::fmt::Display for Algo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Algo {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        // cuBLAS names are accepted for the library variants (the GPU side of them).
        let lower = lower.strip_prefix("cu").unwrap_or(&lower);
        Algo::ALL.into_iter().find(|a| a.name() == lower).ok_or_else(|| {
            let names: Vec<&str> = Algo::ALL.iter().map(|a| a.name()).collect();
            format!("unknown algo '{s}': expected one of {}", names.join(", "))
        })
    }
}

/// Operands of one product, in f64 (the reference's) with their f32 roundings.
#[derive(Clone, Debug)]
pub struct Operands {
    pub shape: Shape,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub a32: Vec<f32>,
    pub b32: Vec<f32>,
}

impl Operands {
    /// Uniform operands on [0, 1), as in the paper's Fig. 5: all terms positive, so the rounding error of a naive
    /// sum grows with the inner dimension instead of cancelling.
    pub fn uniform(shape: Shape, seed: u64) -> Operands {
        let mut a = vec![0.0; shape.m * shape.k];
        let mut b = vec![0.0; shape.k * shape.n];
        rng::fill_uniform(&mut a, seed, 0.0, 1.0, |x| x);
        rng::fill_uniform(&mut b, seed ^ 0xB0B, 0.0, 1.0, |x| x);
        Operands::from_f64(shape, a, b)
    }

    /// Operands from given f64 matrices (e.g. basis values as A).
    pub fn from_f64(shape: Shape, a: Vec<f64>, b: Vec<f64>) -> Operands {
        assert_eq!(a.len(), shape.m * shape.k, "gemm: A has the wrong length");
        assert_eq!(b.len(), shape.k * shape.n, "gemm: B has the wrong length");
        let a32 = a.iter().map(|&x| x as f32).collect();
        let b32 = b.iter().map(|&x| x as f32).collect();
        Operands { shape, a, b, a32, b32 }
    }
}

/// Pick `rows` of a row-major matrix with `n` columns, widened to f64.
pub fn pick_rows<T: Copy + Into<f64>>(c: &[T], n: usize, rows: &[usize]) -> Vec<f64> {
    rows.iter().flat_map(|&r| c[r * n..(r + 1) * n].iter().map(|&x| x.into())).collect()
}

#[cfg(test)]
mod tests;
