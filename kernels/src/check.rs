//! Validation of a fast result against the f64 reference.
//!
//! The error measure is normwise: max |fast - ref| / max |ref| over one quantity (values, gradients, ...). It is
//! well defined where single entries of the reference pass through zero, and it is what a user of the numbers
//! cares about. Any NaN or infinity in the fast result makes the error infinite, so it always fails.

/// Outcome of one comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// What was compared ("value", "gradient", "ratio", ...).
    pub quantity: String,
    /// max |fast - ref| / max |ref|; infinite when the fast result is not finite.
    pub error: f64,
    /// The largest error that passes.
    pub tolerance: f64,
}

impl Check {
    /// Compare `fast` with `reference` (same length) under `tolerance`.
    pub fn compare<A: Copy + Into<f64>>(quantity: &str, fast: &[A], reference: &[f64], tolerance: f64) -> Check {
        assert_eq!(fast.len(), reference.len(), "compare: {quantity} lengths differ");
        let scale = reference.iter().fold(0.0f64, |m, r| m.max(r.abs()));
        let mut worst = 0.0f64;
        for (&a, &r) in fast.iter().zip(reference) {
            let a: f64 = a.into();
            if !a.is_finite() {
                worst = f64::INFINITY;
                break;
            }
            worst = worst.max((a - r).abs());
        }
        let error = if scale > 0.0 { worst / scale } else { worst };
        Check { quantity: quantity.to_string(), error, tolerance }
    }

    /// A check on a single scalar with a given absolute scale (e.g. an energy against an exact value).
    pub fn scalar(quantity: &str, fast: f64, reference: f64, tolerance: f64) -> Check {
        let error = if fast.is_finite() {
            (fast - reference).abs() / reference.abs().max(f64::MIN_POSITIVE)
        } else {
            f64::INFINITY
        };
        Check { quantity: quantity.to_string(), error, tolerance }
    }

    /// True when the error is within tolerance (never for NaN).
    pub fn passed(&self) -> bool {
        self.error <= self.tolerance
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_always_fails() {
        let c = Check::compare("v", &[1.0f64, f64::NAN], &[1.0, 2.0], 1e300);
        assert!(!c.passed());
        assert!(c.error.is_infinite());
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
    fn worst_picks_largest_ratio() {
        let a = Check { quantity: "a".into(), error: 1e-3, tolerance: 1e-2 };
        let b = Check { quantity: "b".into(), error: 1e-6, tolerance: 1e-7 };
        assert_eq!(worst(&[a, b.clone()]).unwrap().quantity, "b");
    }
}
