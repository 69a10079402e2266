//! Time-step extrapolation: DMC energies at several time steps fitted by weighted least squares to
//! E(tau) = E_0 + b tau (linear) or E_0 + b tau + c tau^2 (quadratic), and E_0 with the fit's error bar.
//!
//! DMC's short-time Green's function makes the energy biased by O(tau) (Reynolds et al. 1982; with the drift and
//! energy limits of Umrigar, Nightingale and Runge 1993 the bias of small systems is close to linear over the
//! time steps used here). A bias is removed, not allowed for: runs at several tau, each with a converged blocking
//! error bar sigma_i, weigh 1 / sigma_i^2; E_0 and its error come from the normal equations and their inverse
//! (the covariance of the coefficients). A fit that does not describe the points (chi^2 above its 99.9% quantile
//! for n - p degrees of freedom) is reported as such, not used: its error bar would be too small for the curvature
//! it misses (fit quadratically, or drop the largest tau).

/// The model of E(tau).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    Linear,
    Quadratic,
}

impl std::str::FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> Result<Model, String> {
        match s {
            "linear" => Ok(Model::Linear),
            "quadratic" => Ok(Model::Quadratic),
            _ => Err(format!("unknown time-step fit '{s}': use linear or quadratic")),
        }
    }
}

impl Model {
    /// Its command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Model::Linear => "linear",
            Model::Quadratic => "quadratic",
        }
    }

    /// Coefficients fitted.
    pub fn parameters(self) -> usize {
        match self {
            Model::Linear => 2,
            Model::Quadratic => 3,
        }
    }
}

/// A weighted fit of E(tau).
#[derive(Clone, Copy, Debug)]
pub struct Fit {
    /// E at tau = 0, and its error.
    pub energy: f64,
    pub error: f64,
    /// dE/dtau at tau = 0, and its error.
    pub slope: f64,
    pub slope_error: f64,
    pub chi2: f64,
    /// Points minus coefficients.
    pub dof: usize,
}

impl Fit {
    /// chi^2 at or below its 99.9% quantile (always true without degrees of freedom: the fit then passes through
    /// every point and its error bar is the propagated one).
    pub fn plausible(&self) -> bool {
        self.dof == 0 || self.chi2 <= chi2_quantile_999(self.dof)
    }
}

/// The 99.9% quantile of chi^2 with `dof` degrees of freedom, by the Wilson-Hilferty cube-root normal
/// approximation (3.090 is the normal 99.9% quantile): 11.16, 14.14, 16.45 for 1, 2, 3 against the exact 10.83,
/// 13.82, 16.27 (a little above: a fit is rejected slightly less often than 0.1% of the time).
pub fn chi2_quantile_999(dof: usize) -> f64 {
    let k = dof as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + 3.090 * h.sqrt()).powi(3)
}

/// Fit `points` (tau, E, sigma) with `model`. Errors: fewer distinct time steps than coefficients, or an error bar
/// that is not positive and finite.
pub fn fit(points: &[(f64, f64, f64)], model: Model) -> Result<Fit, String> {
    let p = model.parameters();
    let mut taus: Vec<f64> = points.iter().map(|q| q.0).collect();
    taus.sort_by(f64::total_cmp);
    taus.dedup();
    if taus.len() < p {
        return Err(format!("a {} time-step fit needs {p} distinct time steps, got {}", model.name(), taus.len()));
    }
    if let Some(q) = points.iter().find(|q| !(q.2.is_finite() && q.2 > 0.0 && q.1.is_finite() && q.0.is_finite())) {
        return Err(format!("the time-step fit got E = {} +- {} at tau = {}", q.1, q.2, q.0));
    }
    // normal equations A c = r, A = X^T W X, r = X^T W E, with X_ik = tau_i^k and W = 1 / sigma^2; tau is scaled
    // by the largest time step so that A is well conditioned
    let scale = taus[taus.len() - 1];
    let mut a = vec![vec![0.0; p]; p];
    let mut r = vec![0.0; p];
    for &(tau, e, s) in points {
        let w = 1.0 / (s * s);
        let x: Vec<f64> = (0..p).map(|k| (tau / scale).powi(k as i32)).collect();
        for i in 0..p {
            r[i] += w * x[i] * e;
            for j in 0..p {
                a[i][j] += w * x[i] * x[j];
            }
        }
    }
    let cov = invert(&a).ok_or("the time-step fit is singular")?;
    let c: Vec<f64> = (0..p).map(|i| (0..p).map(|j| cov[i][j] * r[j]).sum()).collect();
    let chi2 = points
        .iter()
        .map(|&(tau, e, s)| {
            let model: f64 = (0..p).map(|k| c[k] * (tau / scale).powi(k as i32)).sum();
            ((e - model) / s).powi(2)
        })
        .sum();
    Ok(Fit { energy: c[0], error: cov[0][0].sqrt(), slope: c[1] / scale, slope_error: cov[1][1].sqrt() / scale, chi2, dof: points.len() - p })
}

/// The inverse of a small symmetric positive definite matrix by Gauss-Jordan elimination with partial pivoting;
/// None when it is singular.
fn invert(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut m: Vec<Vec<f64>> = a.iter().enumerate().map(|(i, row)| row.iter().copied().chain((0..n).map(|j| (i == j) as u8 as f64)).collect()).collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| m[i][col].abs().total_cmp(&m[j][col].abs()))?;
        if m[pivot][col].abs() < 1e-300 {
            return None;
        }
        m.swap(col, pivot);
        let d = m[col][col];
        m[col].iter_mut().for_each(|v| *v /= d);
        for row in 0..n {
            if row != col {
                let f = m[row][col];
                let pr = m[col].clone();
                m[row].iter_mut().zip(&pr).for_each(|(v, p)| *v -= f * p);
            }
        }
    }
    Some(m.into_iter().map(|row| row[n..].to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::gaussian3;
    use crate::rng::rng;

    #[test]
    fn a_line_through_exact_points_gives_its_intercept_and_the_propagated_error() {
        // E = -14.6572 - 0.4 tau at 0.005, 0.01, 0.02, each +- 1 mHa: intercept exact, error from the covariance:
        // var(E_0) = sigma^2 (1/n + tau_mean^2 / S_tt) = 1e-6 (1/3 + 0.0116667^2 / 1.1667e-4) = 1.5e-6
        let pts: Vec<(f64, f64, f64)> = [0.005, 0.01, 0.02].iter().map(|&t| (t, -14.6572 - 0.4 * t, 1e-3)).collect();
        let f = fit(&pts, Model::Linear).unwrap();
        assert!((f.energy + 14.6572).abs() < 1e-12 && (f.slope + 0.4).abs() < 1e-9, "{f:?}");
        assert!((f.error - 1.5e-6f64.sqrt()).abs() < 1e-9, "{f:?}");
        assert!(f.chi2 < 1e-18 && f.dof == 1 && f.plausible());
        // the quadratic through three points has no degrees of freedom left, and a larger error at tau = 0
        let q = fit(&pts, Model::Quadratic).unwrap();
        assert!((q.energy + 14.6572).abs() < 1e-10 && q.dof == 0 && q.error > f.error, "{q:?}");
    }

    /// The fit's error bar is honest: 4000 series of three points scattered with their error bars around a line;
    /// the intercept's z must have mean square 1 (within 4 x sqrt(2 / 4000)), and chi^2 must be rejected about 0.1%
    /// of the time. A curved truth (E = E_0 + 10 tau^2: residuals of a line 2-5 error bars, chi^2 = 64) is rejected.
    #[test]
    fn the_fit_error_covers_the_intercept_and_chi2_rejects_curvature() {
        let mut r = rng(17, 3);
        let (runs, e0, b) = (4000, -2.9037, 0.03);
        let (mut z2, mut rejected) = (0.0, 0);
        for _ in 0..runs {
            let pts: Vec<(f64, f64, f64)> = [(0.01, 4e-4), (0.02, 3e-4), (0.04, 2e-4)].iter().map(|&(t, s)| (t, e0 + b * t + s * gaussian3(&mut r)[0], s)).collect();
            let f = fit(&pts, Model::Linear).unwrap();
            z2 += ((f.energy - e0) / f.error).powi(2) / runs as f64;
            rejected += !f.plausible() as usize;
        }
        assert!((z2 - 1.0).abs() < 4.0 * (2.0 / runs as f64).sqrt(), "mean z^2 = {z2}");
        assert!(rejected < 15, "{rejected} of {runs} plausible lines rejected");
        let curved: Vec<(f64, f64, f64)> = [0.01, 0.02, 0.04].iter().map(|&t| (t, e0 + 10.0 * t * t, 2e-4)).collect();
        assert!(!fit(&curved, Model::Linear).unwrap().plausible());
        assert!(fit(&curved, Model::Quadratic).unwrap().plausible());
    }

    #[test]
    fn too_few_time_steps_or_bad_error_bars_are_refused() {
        assert!(fit(&[(0.01, -1.0, 1e-3), (0.01, -1.1, 1e-3)], Model::Linear).unwrap_err().contains("2 distinct time steps, got 1"));
        assert!(fit(&[(0.01, -1.0, 1e-3), (0.02, -1.1, 1e-3)], Model::Quadratic).unwrap_err().contains("3 distinct"));
        assert!(fit(&[(0.01, -1.0, f64::NAN), (0.02, -1.1, 1e-3)], Model::Linear).unwrap_err().contains("NaN"));
        assert!(fit(&[(0.01, f64::NAN, 1e-3), (0.02, -1.1, 1e-3)], Model::Linear).is_err());
        assert!(fit(&[(0.01, -1.0, 0.0), (0.02, -1.1, 1e-3)], Model::Linear).is_err());
    }

    #[test]
    fn chi2_quantiles_are_close_to_the_tables() {
        for (k, exact) in [(1, 10.828), (2, 13.816), (3, 16.266), (5, 20.515), (10, 29.588)] {
            let q = chi2_quantile_999(k);
            assert!(q >= exact * 0.99 && q < exact * 1.04, "{k}: {q} vs {exact}");
        }
    }
}
