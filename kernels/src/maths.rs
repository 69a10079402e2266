//! The maths several kernels share, on the host side of the CUDA prelude (`common.cuh`, whose device twins are named
//! here): the cubic B-spline weights (the orbitals of `bspline`, the radial functors of `jastrow`) and the forms of
//! the radial functors with the one numbering every `.cu` file reads (the GPU layer writes it into the prelude's
//! defines, [`prelude_defines`]).

use crate::Real;

/// Functional form of a radial functor (`jastrow::Radial`). The discriminant is the number the device code compares
/// `form` against (`RADIAL_BSPLINE`, ... in the prelude's defines): every kernel's parameter struct takes it from
/// [`Form::number`], never from a number of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Form {
    BSpline = 0,
    Casino = 1,
    Pade = 2,
}

impl Form {
    pub const ALL: [Form; 3] = [Form::BSpline, Form::Casino, Form::Pade];

    /// The form's number on the device.
    pub fn number(self) -> i32 {
        self as i32
    }

    /// The name of its define in the prelude.
    pub fn define(self) -> &'static str {
        match self {
            Form::BSpline => "RADIAL_BSPLINE",
            Form::Casino => "RADIAL_CASINO",
            Form::Pade => "RADIAL_PADE",
        }
    }
}

/// The defines put before the prelude (`gpu::compile`; scripts/cu-on-host.sh passes them to g++): the radial
/// functors' form numbers and the length of a basis function's record (`BASIS_RECORD`, [`crate::basis::RECORD`]).
pub fn prelude_defines() -> String {
    let forms: String = Form::ALL.iter().map(|f| format!("#define {} {}\n", f.define(), f.number())).collect();
    format!("{forms}#define BASIS_RECORD {}\n", crate::basis::RECORD)
}

/// Cubic B-spline weights of the 4 coefficients around fraction t in [0, 1): value, first and second derivative with
/// respect to t, as polynomials (the fast kernels' form; the bspline reference evaluates b(x) directly). The device
/// twin is the prelude's `bspline_weights`.
#[inline(always)]
pub fn bspline_weights<T: Real>(t: T) -> ([T; 4], [T; 4], [T; 4]) {
    let c = |x: f64| T::of(x);
    let (t2, u) = (t * t, T::one() - t);
    let t3 = t2 * t;
    let s = c(1.0 / 6.0);
    (
        [u * u * u * s, (c(3.0) * t3 - c(6.0) * t2 + c(4.0)) * s, (c(-3.0) * t3 + c(3.0) * t2 + c(3.0) * t + c(1.0)) * s, t3 * s],
        [c(-0.5) * u * u, c(1.5) * t2 - c(2.0) * t, c(-1.5) * t2 + t + c(0.5), c(0.5) * t2],
        [u, c(3.0) * t - c(2.0), c(1.0) - c(3.0) * t, t],
    )
}

/// The integer nearest x, ties to even, for |x| < 2^51 in f64 (2^22 in f32): adding and removing 1.5 / eps rounds in
/// the FPU's own mode. Exact, branch-free and vectorisable, where `round()` is a library call below SSE4.1 (and
/// wherever the code is not inlined into a `dispatch!` body).
#[inline(always)]
pub fn nearest<T: Real>(x: T) -> T {
    let magic = T::of(1.5 / T::EPS);
    (x + magic) - magic
}

/// Largest |t| `sin_cos` takes: k = t / (pi / 2) rounded must stay below 2^12, so that k times each leading part of
/// pi / 2 (`pio2_parts`) is exact.
pub const SIN_COS_MAX: f64 = 4096.0;

/// sin t and cos t for |t| <= [`SIN_COS_MAX`], in plain arithmetic without branches or calls, so that a loop over
/// arguments vectorises (the library's `sin_cos` is a call per argument: the CPU p term of the Jastrow factor spent
/// half its time in it). Reduction by the nearest multiple k of pi / 2 in three parts, the first two products exact
/// (Cody and Waite), then the minimax polynomials of fdlibm's kernels on [-pi / 4, pi / 4] and the quadrant's swap
/// and signs. Its error against the library is measured by the test `sin_cos_matches_the_library`.
#[inline(always)]
pub fn sin_cos<T: Real>(t: T) -> (T, T) {
    let c = |x: f64| T::of(x);
    // k = round(t 2 / pi)
    let k = nearest(t * c(std::f64::consts::FRAC_2_PI));
    let (p1, p2, p3) = pio2_parts::<T>();
    let r = ((t - k * p1) - k * p2) - k * p3;
    let z = r * r;
    let sin = r + r * z * (c(-1.66666666666666324348e-01)
        + z * (c(8.33333333332248946124e-03)
            + z * (c(-1.98412698298579493134e-04) + z * (c(2.75573137070700676789e-06) + z * (c(-2.50507602534068634195e-08) + z * c(1.58969099521155010221e-10))))));
    let cos = c(1.0) - c(0.5) * z
        + z * z * (c(4.16666666666666019037e-02)
            + z * (c(-1.38888888888741095749e-03)
                + z * (c(2.48015872894767294178e-05) + z * (c(-2.75573143513906633035e-07) + z * (c(2.08757232129817482790e-09) + z * c(-1.13596475577881948265e-11))))));
    // the quadrant q = k mod 4: sin t = (s, c, -s, -c)[q], cos t = (c, -s, -c, s)[q]
    let q = k - c(4.0) * (k * c(0.25)).floor();
    let odd = q == c(1.0) || q == c(3.0);
    let (s, co) = if odd { (cos, sin) } else { (sin, cos) };
    let s = if q >= c(2.0) { -s } else { s };
    let co = if q == c(1.0) || q == c(2.0) { -co } else { co };
    (s, co)
}

/// pi / 2 in three parts for `sin_cos`'s reduction: the first two each hold 12 bits fewer than T's significand (41 in
/// f64, 12 in f32), so k times either is exact for |k| < 2^12; the third is the rest, rounded to T. Integer
/// operations on constants: the compiler folds them.
#[inline(always)]
fn pio2_parts<T: Real>() -> (T, T, T) {
    // pi / 2 - FRAC_PI_2, the f64 value's error
    const TAIL: f64 = 6.123233995736766e-17;
    let cleared = if T::BYTES == 4 { 53 - 12 } else { 12 };
    let lead = |x: f64| f64::from_bits(x.to_bits() & !((1u64 << cleared) - 1));
    let p1 = lead(std::f64::consts::FRAC_PI_2);
    let rest = std::f64::consts::FRAC_PI_2 - p1;
    let p2 = lead(rest);
    (T::of(p1), T::of(p2), T::of((rest - p2) + TAIL))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sin_cos` against the library over [-SIN_COS_MAX, SIN_COS_MAX] (dense near zero and near the multiples of
    /// pi / 2, where the reduction cancels), the largest error in ulps of 1 of each type.
    #[test]
    fn sin_cos_matches_the_library() {
        fn worst<T: Real>(ts: &[f64]) -> f64 {
            let mut w = 0.0f64;
            for &t in ts {
                let t = T::of(t);
                let (s, c) = sin_cos(t);
                let (s0, c0) = t.f64().sin_cos();
                w = w.max((s.f64() - s0).abs()).max((c.f64() - c0).abs());
            }
            w / T::EPS
        }
        let mut ts: Vec<f64> = (-20000..=20000).map(|i| i as f64 * 1e-4 * std::f64::consts::PI).collect();
        ts.extend((-4000..=4000).map(|i| i as f64 * 1.0237));
        for m in -2600..=2600 {
            let x = m as f64 * std::f64::consts::FRAC_PI_2;
            ts.extend([x, x + 1e-9, x - 3e-7, x + 0.7]);
        }
        ts.extend([SIN_COS_MAX, -SIN_COS_MAX, 1e-300, -0.0]);
        let (w64, w32) = (worst::<f64>(&ts), worst::<f32>(&ts));
        assert!(w64 < 1.5, "f64: {w64} ulp");
        assert!(w32 < 1.5, "f32: {w32} ulp");
    }

    #[test]
    fn form_numbers_are_distinct_and_defined_once() {
        let d = prelude_defines();
        for f in Form::ALL {
            assert_eq!(d.matches(&format!("#define {} {}\n", f.define(), f.number())).count(), 1, "{d}");
        }
        let mut n: Vec<i32> = Form::ALL.iter().map(|f| f.number()).collect();
        n.dedup();
        assert_eq!(n.len(), 3);
    }

    #[test]
    fn weights_sum_to_one_and_match_in_both_precisions() {
        for k in 0..=16 {
            let t = k as f64 / 16.0;
            let (a, da, d2a) = bspline_weights(t);
            assert!((a.iter().sum::<f64>() - 1.0).abs() < 1e-15);
            assert!(da.iter().sum::<f64>().abs() < 1e-15 && d2a.iter().sum::<f64>().abs() < 1e-15);
            let (af, _, _) = bspline_weights(t as f32);
            for (x, y) in a.iter().zip(af) {
                assert!((x - y as f64).abs() < 1e-6);
            }
        }
    }
}
