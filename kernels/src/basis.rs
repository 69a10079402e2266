//! Basis functions on centres, the one evaluation that every Gaussian- or Slater-basis kernel shares: the atomic
//! orbitals of He, H2 and Be ([`crate::atomic`]) and paper 004's basis evaluation before the orbital GEMM
//! ([`crate::gemm`]). Its device side is the prelude's `atomic_function_vgl` (common.cuh), which reads
//! [`pack`]'s records and follows [`vgl`] operation for operation.
//!
//! A basis function is chi(r) = x^k y^l z^m R(|r - A|), d = r - A from its centre A, with a radial part R that is a
//! contraction over primitives n of one kind ([`Radial`]): Slater R = sum_n a_n exp(-zeta_n r), or Gaussian
//! R = sum_n a_n exp(-b_n r^2). With P = x^k y^l z^m of degree L = k + l + m (so d . grad P = L P):
//!   chi = P R,   grad chi = R grad P + P (R'/r) d,   lap chi = R lap P + P (R'' + 2 (L + 1) R'/r),
//! where for a Gaussian R'/r = -2 S1 and R'' + 2 (L + 1) R'/r = 4 r^2 S2 - 2 (2L + 3) S1, with the contracted sums
//! S_q = sum_n a_n b_n^q exp(-b_n r^2); and for a Slater function R'/r = -S1 / r with S_q = sum_n a_n zeta_n^q
//! exp(-zeta_n r), and R'' + 2 (L + 1) R'/r = sum_n a_n exp(-zeta_n r) (zeta_n^2 - 2 (L + 1) zeta_n / r): the qmc
//! driver's `Lcao::vgl` term by term, r clamped to the smallest normal number as there.
//!
//! Precision: the arithmetic type A takes the displacement from the centre (formed in f64, rounded once), the
//! exponents and the coefficients rounded to A, and evaluates everything in A.

use crate::Real;
use std::ops::Range;

/// The kind of a basis function's radial part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Radial {
    /// sum_n a_n exp(-zeta_n r)
    Slater,
    /// sum_n a_n exp(-b_n r^2)
    Gaussian,
}

/// One basis function: its centre, its Cartesian powers (k, l, m), its radial kind and its primitives `prims`
/// (indices into the exponents and contraction coefficients of its set).
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub center: usize,
    pub powers: [u32; 3],
    pub radial: Radial,
    pub prims: Range<usize>,
}

/// x^e and its first two derivatives, e x^(e-1) and e (e-1) x^(e-2), the powers by repeated products (the prelude's
/// `qmc_ipow`), zero where the power would be negative.
#[inline(always)]
pub(crate) fn power<A: Real>(x: A, e: u32) -> [A; 3] {
    let ipow = |n: i64| if n < 0 { A::zero() } else { (0..n).fold(A::one(), |p, _| p * x) };
    let e = e as i64;
    [ipow(e), A::of(e as f64) * ipow(e - 1), A::of((e * (e - 1)) as f64) * ipow(e - 2)]
}

/// Value, gradient and Laplacian of basis function `f` centred at `center` at r, in A: `[value, gx, gy, gz,
/// Laplacian]`; `exps` and `coefs` are its set's primitives (exponent, contraction coefficient), in f64.
#[inline(always)]
pub fn vgl<A: Real>(f: &Function, center: [f64; 3], exps: &[f64], coefs: &[f64], r: [f64; 3]) -> [A; 5] {
    let d = [0, 1, 2].map(|k| A::of(r[k] - center[k]));
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    let two = A::of(2.0);
    let l = A::of(f.powers.iter().sum::<u32>() as f64);
    // the radial part: R, R'/r and R'' + 2 (L + 1) R'/r over the primitives' exponentials of argument x r^2
    // (Gaussian) or x r (Slater), x the exponent, r clamped as `Lcao::vgl` clamps it; t sums x^2 g (Gaussian), or
    // the Laplacian's radial term g (x^2 - 2 (L + 1) x / r) (Slater, term by term as `Lcao::vgl`)
    let gauss = f.radial == Radial::Gaussian;
    let rr = if gauss { r2 } else { r2.sqrt().max(A::min_positive_value()) }; // r^2 or r
    let (mut rv, mut s1, mut t) = (A::zero(), A::zero(), A::zero());
    for n in f.prims.clone() {
        let x = A::of(exps[n]);
        let g = A::of(coefs[n]) * (-x * rr).exp();
        rv += g;
        s1 += x * g;
        t += if gauss { x * x * g } else { g * (x * x - two * (l + A::one()) * x / rr) };
    }
    let (slope, w) = if gauss { (-two * s1, A::of(4.0) * r2 * t - two * (two * l + A::of(3.0)) * s1) } else { (-(s1 / rr), t) };
    // the angular part: x^k, y^l, z^m and their derivatives along their own axes
    let [px, py, pz] = [0, 1, 2].map(|k| power(d[k], f.powers[k]));
    let p = px[0] * py[0] * pz[0];
    let grad = [px[1] * py[0] * pz[0], px[0] * py[1] * pz[0], px[0] * py[0] * pz[1]];
    let lap = px[2] * py[0] * pz[0] + px[0] * py[2] * pz[0] + px[0] * py[0] * pz[2];
    [p * rv, grad[0] * rv + d[0] * p * slope, grad[1] * rv + d[1] * p * slope, grad[2] * rv + d[2] * p * slope, lap * rv + p * w]
}

/// Words of one basis function's record in [`pack`] (the prelude's `BASIS_RECORD`, from
/// [`crate::maths::prelude_defines`]).
pub const RECORD: usize = 9;

/// Where the primitives start in [`pack`]'s array of `functions` functions.
pub fn prims_at(functions: usize) -> usize {
    RECORD * functions
}

/// The functions as the GPU reads them, one f64 array: `[function][RECORD]` (centre x, y, z, powers k, l, m, 1 if
/// Slater else 0, first and end primitive), then the primitives `[primitive][exponent, coefficient]` from
/// [`prims_at`] on.
pub fn pack(centers: &[[f64; 3]], functions: &[Function], exps: &[f64], coefs: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(prims_at(functions.len()) + 2 * exps.len());
    for f in functions {
        let [k, l, m] = f.powers.map(|x| x as f64);
        let slater = if f.radial == Radial::Slater { 1.0 } else { 0.0 };
        out.extend(centers[f.center]);
        out.extend([k, l, m, slater, f.prims.start as f64, f.prims.end as f64]);
    }
    out.extend(exps.iter().zip(coefs).flat_map(|(&e, &c)| [e, c]));
    out
}

/// Flops of evaluating `functions` once by [`vgl`]'s count: per function 30 (the displacement, r^2, the powers and
/// the five outputs), per primitive 8 for a Gaussian (the exponential counted as one) and 12 for a Slater function
/// (its Laplacian term has a division).
pub fn flops(functions: &[Function]) -> usize {
    functions.iter().map(|f| 30 + f.prims.len() * if f.radial == Radial::Gaussian { 8 } else { 12 }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each component against central differences of the value, in f64, for a d function of two Gaussian
    /// primitives and a p function of a Slater contraction: the one evaluation both kernels call.
    #[test]
    fn gradient_and_laplacian_are_the_values_derivatives() {
        let (exps, coefs) = (vec![1.3, 0.4, 0.9, 2.1], vec![0.7, 0.3, 1.0, -0.4]);
        let fs = [
            Function { center: 0, powers: [2, 0, 1], radial: Radial::Gaussian, prims: 0..2 },
            Function { center: 1, powers: [0, 1, 0], radial: Radial::Slater, prims: 2..4 },
        ];
        let centers = [[0.1, -0.2, 0.3], [-0.5, 0.4, 0.2]];
        let r = [0.6, 0.35, -0.45];
        let h = 1e-4;
        for f in &fs {
            let c = centers[f.center];
            let v = |r: [f64; 3]| vgl::<f64>(f, c, &exps, &coefs, r)[0];
            let at = vgl::<f64>(f, c, &exps, &coefs, r);
            let mut lap = 0.0;
            for k in 0..3 {
                let (mut a, mut b) = (r, r);
                a[k] += h;
                b[k] -= h;
                let g = (v(a) - v(b)) / (2.0 * h);
                assert!((g - at[1 + k]).abs() < 1e-7, "{f:?} gradient {k}: {g} vs {}", at[1 + k]);
                lap += (v(a) - 2.0 * at[0] + v(b)) / (h * h);
            }
            assert!((lap - at[4]).abs() < 1e-5, "{f:?} Laplacian: {lap} vs {}", at[4]);
        }
        // the packed records: the second function's centre, powers, kind and primitives, then the primitives
        let p = pack(&centers, &fs, &exps, &coefs);
        assert_eq!(&p[RECORD..2 * RECORD], &[-0.5, 0.4, 0.2, 0.0, 1.0, 0.0, 1.0, 2.0, 4.0]);
        assert_eq!(&p[2 * RECORD..], &[1.3, 0.7, 0.4, 0.3, 0.9, 1.0, 2.1, -0.4]);
        assert_eq!(flops(&fs), 30 + 16 + 30 + 24);
    }
}
