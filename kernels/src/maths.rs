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

#[cfg(test)]
mod tests {
    use super::*;

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
