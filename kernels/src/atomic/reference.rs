//! The f64 reference, written apart from the fast code: every primitive on its own, a_n P(d) g(r) with g = exp(-zeta r)
//! or exp(-b r^2), differentiated by the product rule with the gradient of g written out (-zeta g d / r, or -2 b g d)
//! and the Laplacian as g lap P + 2 grad P . grad g + P lap g (lap g = g (zeta^2 - 2 zeta / r), or g (4 b^2 r^2 -
//! 6 b)), then summed over primitives and functions with the orbital coefficients (the fast code sums the
//! exponentials of a function first and uses d . grad P = L P). Inside a restored cusp's sphere the orbital is
//! s exp(p(r)) instead, p from explicit powers of r, differentiated axis by axis (d/dx_k = p' x_k / r, and
//! d^2/dx_k^2 summed over the axes; the fast code uses the radial form p'' + p'^2 + 2 p' / r and Horner).

use super::{AtomicOrbitals, Radial};

/// x^e, and 0 for e < 0.
fn pw(x: f64, e: i32) -> f64 {
    if e < 0 {
        0.0
    } else {
        x.powi(e)
    }
}

/// VGL of every orbital at every point of `pos` (`[point][xyz]`), `[point][5][stride]` (value, gx, gy, gz,
/// Laplacian; entries past the orbitals zero), in f64.
pub fn evaluate(orbs: &AtomicOrbitals, pos: &[f64], stride: usize) -> Vec<f64> {
    assert!(orbs.len() <= stride, "atomic reference: stride below the orbitals");
    let mut out = vec![0.0; pos.len() / 3 * 5 * stride];
    for (r, o) in pos.chunks_exact(3).zip(out.chunks_exact_mut(5 * stride)) {
        for (j, row) in orbs.coef.iter().enumerate() {
            let mut acc = [0.0f64; 5];
            for (f, &c) in orbs.functions.iter().zip(row) {
                let a = orbs.centers[f.center];
                let d = [r[0] - a[0], r[1] - a[1], r[2] - a[2]];
                let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                let dist = r2.sqrt().max(f64::MIN_POSITIVE);
                let e = f.powers.map(|x| x as i32);
                // P, its gradient and its Laplacian
                let p = pw(d[0], e[0]) * pw(d[1], e[1]) * pw(d[2], e[2]);
                let dp = [0, 1, 2].map(|k| {
                    let mut v = e[k] as f64 * pw(d[k], e[k] - 1);
                    for m in (0..3).filter(|&m| m != k) {
                        v *= pw(d[m], e[m]);
                    }
                    v
                });
                let lap_p: f64 = (0..3)
                    .map(|k| {
                        let mut v = (e[k] * (e[k] - 1)) as f64 * pw(d[k], e[k] - 2);
                        for m in (0..3).filter(|&m| m != k) {
                            v *= pw(d[m], e[m]);
                        }
                        v
                    })
                    .sum();
                for q in f.prims.clone() {
                    let (x, w) = (orbs.exps[q], c * orbs.coefs[q]);
                    // g, grad g = slope d, lap g
                    let (g, slope, lap_g) = match f.radial {
                        Radial::Slater => {
                            let g = (-x * dist).exp();
                            (g, -x * g / dist, g * (x * x - 2.0 * x / dist))
                        }
                        Radial::Gaussian => {
                            let g = (-x * r2).exp();
                            (g, -2.0 * x * g, g * (4.0 * x * x * r2 - 6.0 * x))
                        }
                    };
                    acc[0] += w * p * g;
                    for k in 0..3 {
                        acc[1 + k] += w * (dp[k] * g + p * slope * d[k]);
                    }
                    let cross = dp[0] * d[0] + dp[1] * d[1] + dp[2] * d[2];
                    acc[4] += w * (g * lap_p + 2.0 * slope * cross + p * lap_g);
                }
            }
            for c in orbs.cusps.iter().filter(|c| c.orbital == j) {
                let d = [r[0] - c.at[0], r[1] - c.at[1], r[2] - c.at[2]];
                let dist = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                if dist >= c.rc {
                    continue;
                }
                let dist = dist.max(f64::MIN_POSITIVE);
                let term = |i: usize, order: usize| -> f64 {
                    let falling = (0..order).map(|m| i as f64 - m as f64).product::<f64>();
                    if i < order { 0.0 } else { c.p[i] * falling * dist.powi((i - order) as i32) }
                };
                let [p, dp, d2p] = [0, 1, 2].map(|order| (0..5).map(|i| term(i, order)).sum::<f64>());
                let v = c.sign * p.exp();
                acc[0] = v;
                for k in 0..3 {
                    acc[1 + k] = v * dp * d[k] / dist;
                }
                acc[4] = (0..3).map(|k| {
                    let x2 = d[k] * d[k] / (dist * dist);
                    v * ((dp * dp + d2p) * x2 + dp * (1.0 - x2) / dist)
                }).sum();
            }
            for (k, v) in acc.iter().enumerate() {
                o[k * stride + j] = *v;
            }
        }
    }
    out
}
