//! The f64 reference, written apart from the fast code: e^{ik.r} as the product of the three per-axis phases
//! e^{i k_d r_d} (complex products, not one sincos of the summed argument), its real part for a cosine orbital and
//! its imaginary part for a sine one; the gradient i k e^{ik.r} and the Laplacian as the sum of the three second
//! derivatives -k_d^2 e^{ik.r}.

use super::PlaneWaves;

/// VGL of every orbital at every point of `pos` (`[point][xyz]`), `[point][5][stride]` (value, gx, gy, gz,
/// Laplacian; entries past the orbitals zero), in f64.
pub fn evaluate(waves: &PlaneWaves, pos: &[f64], stride: usize) -> Vec<f64> {
    let n = waves.len();
    assert!(n <= stride, "planewave reference: stride below the orbitals");
    let mut out = vec![0.0; pos.len() / 3 * 5 * stride];
    for (r, o) in pos.chunks_exact(3).zip(out.chunks_exact_mut(5 * stride)) {
        for (j, &(k, sine)) in waves.k.iter().enumerate() {
            // e^{ik.r} = prod_d (cos k_d r_d + i sin k_d r_d)
            let (mut re, mut im) = (1.0f64, 0.0f64);
            for d in 0..3 {
                let (c, s) = ((k[d] * r[d]).cos(), (k[d] * r[d]).sin());
                (re, im) = (re * c - im * s, re * s + im * c);
            }
            // the orbital is Re or Im of e^{ik.r}; its derivative along d is Re or Im of i k_d e^{ik.r}
            let (value, slope) = if sine { (im, re) } else { (re, -im) };
            o[j] = value;
            for d in 0..3 {
                o[(1 + d) * stride + j] = k[d] * slope;
            }
            o[4 * stride + j] = (0..3).map(|d| -k[d] * k[d] * value).sum::<f64>();
        }
    }
    out
}
