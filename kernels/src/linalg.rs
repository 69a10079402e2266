//! Dense linear algebra that the checks of several kernels share (base layer: no kernel imports another for it).

/// Reciprocal condition number in the 1-norm, 1 / (|M|_1 |M^-1|_1), of the row-major n x n matrix `m` given its
/// inverse `inv`.
pub fn rcond(m: &[f64], inv: &[f64], n: usize) -> f64 {
    let norm1 = |x: &[f64]| (0..n).map(|c| (0..n).map(|r| x[r * n + c].abs()).sum::<f64>()).fold(0.0, f64::max);
    1.0 / (norm1(m) * norm1(inv))
}

#[cfg(test)]
mod tests {
    #[test]
    fn rcond_of_a_two_by_two() {
        // [[2, 1], [1, 1]]: |M|_1 = 3, M^-1 = [[1, -1], [-1, 2]], |M^-1|_1 = 3
        let (m, inv) = ([2.0, 1.0, 1.0, 1.0], [1.0, -1.0, -1.0, 2.0]);
        assert!((super::rcond(&m, &inv, 2) - 1.0 / 9.0).abs() < 1e-15);
    }
}
