//! The references, plain and written apart from the fast code.
//!
//! GEMM: each entry is a dot product in twice the working precision (Ogita, Rump and Oishi's Dot2: every product
//! split exactly into value and error with an FMA, every addition with TwoSum, the errors summed alongside), so the
//! reference is accurate to about f64 epsilon whatever the inner dimension: it measures the f64 variants too.
//! Only chosen rows are computed, because a full tall product would take a single core far too long.
//!
//! Basis: each primitive's value, gradient and Laplacian from the textbook formulas of the paper's extract,
//! evaluated one primitive at a time and summed (the fast kernels sum the exponentials first).

use super::basis::BasisSet;
use super::COMPONENTS;

/// Dot2: sum of a_i b_i in about twice f64 precision.
pub fn dot2(a: impl Iterator<Item = f64>, b: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut err) = (0.0f64, 0.0f64);
    for (x, y) in a.zip(b) {
        let p = x * y;
        let ep = x.mul_add(y, -p); // exact error of the product
        let t = s + p;
        let z = t - s;
        let es = (s - (t - z)) + (p - z); // exact error of the sum (TwoSum)
        s = t;
        err += ep + es;
    }
    s + err
}

/// Rows `rows` of C = A B, A (m x k) and B (k x n) row-major; result `[row of rows][n]`.
pub fn gemm_rows(a: &[f64], b: &[f64], k: usize, n: usize, rows: &[usize]) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows.len() * n);
    for &r in rows {
        let arow = &a[r * k..(r + 1) * k];
        for col in 0..n {
            out.push(dot2(arow.iter().copied(), (0..k).map(|p| b[p * n + col])));
        }
    }
    out
}

/// x^e, and 0 for e < 0.
fn pw(x: f64, e: i32) -> f64 {
    if e < 0 {
        0.0
    } else {
        x.powi(e)
    }
}

/// Value, gradient and Laplacian of every function at each of `pos` (`[point][xyz]`);
/// result `[point][component][function]`.
pub fn basis(set: &BasisSet, pos: &[f64]) -> Vec<f64> {
    let nf = set.len();
    let points = pos.len() / 3;
    let mut out = vec![0.0; points * COMPONENTS * nf];
    for p in 0..points {
        for (j, f) in set.functions.iter().enumerate() {
            let c = set.centers[f.center];
            let (x, y, z) = (pos[3 * p] - c[0], pos[3 * p + 1] - c[1], pos[3 * p + 2] - c[2]);
            let r2 = x * x + y * y + z * z;
            let [k, l, m] = f.powers.map(|e| e as i32);
            let poly = pw(x, k) * pw(y, l) * pw(z, m);
            let big_l = (k + l + m) as f64;
            let mut v = [0.0f64; COMPONENTS];
            for q in f.prims.clone() {
                let (a, b) = (set.coefs[q], set.exps[q]);
                let g = a * (-b * r2).exp();
                // d/dx (P g) = [k x^(k-1) y^l z^m - 2 b x P] g, and likewise for y and z.
                v[0] += poly * g;
                v[1] += (k as f64 * pw(x, k - 1) * pw(y, l) * pw(z, m) - 2.0 * b * x * poly) * g;
                v[2] += (l as f64 * pw(x, k) * pw(y, l - 1) * pw(z, m) - 2.0 * b * y * poly) * g;
                v[3] += (m as f64 * pw(x, k) * pw(y, l) * pw(z, m - 1) - 2.0 * b * z * poly) * g;
                // Laplacian (P g) = g [k(k-1) x^(k-2) y^l z^m + (same for l, m) + P (4 b^2 r^2 - 2 b (2L + 3))].
                v[4] += g
                    * ((k * (k - 1)) as f64 * pw(x, k - 2) * pw(y, l) * pw(z, m)
                        + (l * (l - 1)) as f64 * pw(x, k) * pw(y, l - 2) * pw(z, m)
                        + (m * (m - 1)) as f64 * pw(x, k) * pw(y, l) * pw(z, m - 2)
                        + poly * (4.0 * b * b * r2 - 2.0 * b * (2.0 * big_l + 3.0)));
            }
            for (comp, val) in v.iter().enumerate() {
                out[(p * COMPONENTS + comp) * nf + j] = *val;
            }
        }
    }
    out
}
