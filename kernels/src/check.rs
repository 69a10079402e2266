//! Validation of a fast result against the f64 reference.
//!
//! The error measure is normwise: max |fast - ref| / max |ref| over one quantity (values, gradients, ...). It is
//! well defined where single entries of the reference pass through zero, and it is what a user of the numbers
//! cares about.
//!
//! A check cannot pass by accident: a NaN or infinity anywhere, in the fast result or in the reference, makes the
//! error infinite; a comparison of nothing (`compared == 0`) fails; slices of different lengths give a failing check
//! that says so (never a panic: a failed validation is a result). Every check says how many items it compared, so
//! a record shows whether its verdict rests on one walker or on all of them. Where errors of several items are
//! folded into one, use [`worse`]: `f64::max` drops a NaN.

use crate::rng::rng;
use rand::Rng;

/// Outcome of one comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What was compared ("value", "gradient", "ratio", ...).
    pub quantity: String,
    /// max |fast - ref| / max |ref|; infinite when either side is not finite.
    pub error: f64,
    /// The largest error that passes.
    pub tolerance: f64,
    /// Items compared (entries, walkers, walker-steps: the quantity says which); 0 never passes.
    pub compared: usize,
}

impl Check {
    /// Compare `fast` with `reference` under `tolerance`. Different lengths give a failing check naming them.
    pub fn compare<A: Copy + Into<f64>>(quantity: &str, fast: &[A], reference: &[f64], tolerance: f64) -> Check {
        if fast.len() != reference.len() {
            let quantity = format!("{quantity} (lengths differ: {} fast, {} reference)", fast.len(), reference.len());
            return Check { quantity, error: f64::INFINITY, tolerance, compared: 0 };
        }
        let (mut scale, mut worst) = (0.0f64, 0.0f64);
        for (&a, &r) in fast.iter().zip(reference) {
            let a: f64 = a.into();
            if !(a.is_finite() && r.is_finite()) {
                worst = f64::INFINITY;
                break;
            }
            scale = scale.max(r.abs());
            worst = worst.max((a - r).abs());
        }
        let error = if scale > 0.0 { worst / scale } else { worst };
        Check { quantity: quantity.to_string(), error, tolerance, compared: fast.len() }
    }

    /// A check on a single scalar, relative to the reference (e.g. an energy against an exact value).
    pub fn scalar(quantity: &str, fast: f64, reference: f64, tolerance: f64) -> Check {
        let error = if fast.is_finite() && reference.is_finite() {
            (fast - reference).abs() / reference.abs().max(f64::MIN_POSITIVE)
        } else {
            f64::INFINITY
        };
        Check { quantity: quantity.to_string(), error, tolerance, compared: 1 }
    }

    /// Every one of `values` is finite (error 0), or not (infinite). For measured results with no reference to
    /// compare with, such as every walker's energy and weight at every step.
    pub fn finite(quantity: &str, values: &[f64]) -> Check {
        let error = if values.iter().all(|x| x.is_finite()) { 0.0 } else { f64::INFINITY };
        Check { quantity: quantity.to_string(), error, tolerance: 0.0, compared: values.len() }
    }

    /// True when something was compared and the error is within tolerance (never for NaN or infinity, never for a
    /// NaN tolerance).
    pub fn passed(&self) -> bool {
        self.compared > 0 && self.error.is_finite() && self.error <= self.tolerance
    }
}

/// The larger of two errors, a NaN counting as infinitely large (`f64::max` returns the other operand).
pub fn worse(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::INFINITY
    } else {
        a.max(b)
    }
}

/// The worst of several checks (largest error relative to its tolerance), for a one-line verdict.
pub fn worst(checks: &[Check]) -> Option<&Check> {
    checks.iter().max_by(|a, b| {
        let ra = a.error / a.tolerance;
        let rb = b.error / b.tolerance;
        ra.partial_cmp(&rb).unwrap_or(std::cmp::Ordering::Greater)
    })
}

/// Indices to check out of `len` items: the first, the last, and `random` more drawn without repetition from the
/// rest with `seed` (fewer when there are not that many), in increasing order. Errors that grow along an array
/// (the last chunk, a late walker) and errors anywhere (the random ones) both get a chance to show.
pub fn sample(len: usize, random: usize, seed: u64) -> Vec<usize> {
    if len <= random + 2 {
        return (0..len).collect();
    }
    let mut picked = vec![0, len - 1];
    let mut r = rng(seed, 0x005A_4D1E);
    while picked.len() < random + 2 {
        let k = r.random_range(1..len - 1);
        if !picked.contains(&k) {
            picked.push(k);
        }
    }
    picked.sort_unstable();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_always_fails() {
        let c = Check::compare("v", &[1.0f64, f64::NAN], &[1.0, 2.0], 1e300);
        assert!(!c.passed());
        assert!(c.error.is_infinite());
    }

    /// The old fold took the scale with f64::max, which drops a NaN: a NaN or infinity in the reference passed.
    #[test]
    fn a_non_finite_reference_fails() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let c = Check::compare("v", &[1.0f64, 2.0], &[1.0, bad], 1e300);
            assert!(!c.passed() && c.error.is_infinite(), "reference {bad}: {c:?}");
            let c = Check::compare("v", &[1.0f64, 2.0], &[bad, 2.0], 1e300);
            assert!(!c.passed(), "reference {bad} first: {c:?}");
        }
        assert!(!Check::scalar("e", 1.0, f64::NAN, 1e300).passed());
        assert!(!Check::scalar("e", f64::INFINITY, 1.0, 1e300).passed());
        assert!(Check::scalar("e", 1.0 + 1e-12, 1.0, 1e-10).passed());
    }

    #[test]
    fn an_empty_comparison_fails() {
        let c = Check::compare::<f64>("v", &[], &[], 1.0);
        assert_eq!(c.compared, 0);
        assert!(!c.passed(), "nothing compared must not pass: {c:?}");
        assert!(!Check::finite("e", &[]).passed());
    }

    #[test]
    fn different_lengths_fail_with_a_reason_not_a_panic() {
        let c = Check::compare("rows", &[1.0f64, 2.0, 3.0], &[1.0, 2.0], 1.0);
        assert!(!c.passed());
        assert!(c.quantity.contains("lengths differ: 3 fast, 2 reference"), "{}", c.quantity);
    }

    #[test]
    fn every_check_counts_what_it_compared() {
        assert_eq!(Check::compare("v", &[1.0f32; 7], &[1.0; 7], 0.0).compared, 7);
        assert_eq!(Check::scalar("e", 1.0, 1.0, 0.0).compared, 1);
        let f = Check::finite("e", &[1.0, 2.0, f64::NAN]);
        assert_eq!(f.compared, 3);
        assert!(!f.passed());
        assert!(Check::finite("e", &[1.0, -2.0]).passed());
    }

    #[test]
    fn a_nan_tolerance_never_passes() {
        let c = Check { quantity: "e".into(), error: 0.0, tolerance: f64::NAN, compared: 1 };
        assert!(!c.passed());
    }

    #[test]
    fn error_is_normwise() {
        let c = Check::compare("v", &[1.0f32, 0.0, 2.001], &[1.0, 0.0, 2.0], 1e-3);
        assert!((c.error - 0.001 / 2.0).abs() < 1e-6);
        assert!(c.passed());
        let c = Check::compare("v", &[1.1f64], &[1.0], 1e-3);
        assert!(!c.passed());
    }

    #[test]
    fn worse_keeps_nan_as_infinite() {
        assert_eq!(worse(1.0, 2.0), 2.0);
        assert_eq!(worse(0.0, f64::NAN), f64::INFINITY);
        assert_eq!(worse(f64::NAN, 0.0), f64::INFINITY);
        assert_eq!([0.5, f64::NAN, 0.1].into_iter().fold(0.0, worse), f64::INFINITY);
        assert_eq!([0.5, f64::NAN, 0.1].into_iter().fold(0.0, f64::max), 0.5, "what the old folds did");
    }

    #[test]
    fn worst_picks_largest_ratio() {
        let a = Check { quantity: "a".into(), error: 1e-3, tolerance: 1e-2, compared: 1 };
        let b = Check { quantity: "b".into(), error: 1e-6, tolerance: 1e-7, compared: 1 };
        assert_eq!(worst(&[a, b.clone()]).unwrap().quantity, "b");
    }

    #[test]
    fn the_sample_holds_first_last_and_distinct_seeded_picks() {
        let s = sample(1000, 6, 42);
        assert_eq!(s.len(), 8);
        assert_eq!((s[0], s[7]), (0, 999));
        assert!(s.windows(2).all(|w| w[0] < w[1]), "sorted and distinct: {s:?}");
        assert_eq!(s, sample(1000, 6, 42), "the same seed, the same sample");
        assert_ne!(s, sample(1000, 6, 43));
        assert_eq!(sample(4, 2, 1), [0, 1, 2, 3]);
        assert_eq!(sample(3, 2, 1), [0, 1, 2]);
        assert_eq!(sample(1, 2, 1), [0]);
        assert!(sample(0, 2, 1).is_empty());
        // over many seeds every interior index turns up
        let mut seen = [false; 10];
        for seed in 0..200 {
            for k in sample(10, 1, seed) {
                seen[k] = true;
            }
        }
        assert!(seen.iter().all(|&x| x), "{seen:?}");
    }
}
