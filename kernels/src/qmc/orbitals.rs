//! Orbitals for the small validation systems: sums of 1s Slater-type functions exp(-zeta |r - A|) (one term: the
//! atomic 1s; two terms on two nuclei: the LCAO sigma_g of H2), and the orbital part of psi_T as a product of one
//! orbital per electron. With one electron per spin channel that product IS the Slater determinant (1x1 per spin);
//! atoms with more electrons per spin need the `determinant` kernel, which replaces [`OrbitalProduct`].
//! Normalisation is left out: QMC needs psi only up to a constant.

use super::{add, dot, norm, scale, sub, Component, V3};

/// sum_k c_k exp(-zeta_k |r - A_k|).
#[derive(Clone, Debug)]
pub struct Lcao {
    pub terms: Vec<(f64, f64, V3)>,
}

impl Lcao {
    /// The 1s Slater-type orbital exp(-zeta |r - center|).
    pub fn slater_1s(zeta: f64, center: V3) -> Lcao {
        Lcao { terms: vec![(1.0, zeta, center)] }
    }

    /// The bonding combination of two 1s functions of exponent zeta on two centres.
    pub fn sigma_g(zeta: f64, a: V3, b: V3) -> Lcao {
        Lcao { terms: vec![(1.0, zeta, a), (1.0, zeta, b)] }
    }

    /// Value, gradient and Laplacian of the orbital at r: for one term, grad = -zeta e r_hat and
    /// lap = e (zeta^2 - 2 zeta / |r - A|).
    pub fn vgl(&self, r: V3) -> (f64, V3, f64) {
        let (mut v, mut g, mut l) = (0.0, [0.0; 3], 0.0);
        for &(c, z, a) in &self.terms {
            let d = sub(r, a);
            let dist = norm(d).max(1e-300);
            let e = c * (-z * dist).exp();
            v += e;
            g = add(g, scale(-z * e / dist, d));
            l += e * (z * z - 2.0 * z / dist);
        }
        (v, g, l)
    }

    pub fn value(&self, r: V3) -> f64 {
        self.terms.iter().map(|&(c, z, a)| c * (-z * norm(sub(r, a))).exp()).sum()
    }
}

/// psi = prod_i phi_{o(i)}(r_i): one orbital per electron.
#[derive(Clone, Debug)]
pub struct OrbitalProduct {
    pub orbitals: Vec<Lcao>,
}

impl Component for OrbitalProduct {
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        let (mut log, mut sign) = (0.0, 1.0);
        for (i, o) in self.orbitals.iter().enumerate() {
            let (v, g, l) = o.vgl(r[i]);
            let gl = scale(1.0 / v, g);
            log += v.abs().ln();
            sign *= v.signum();
            grad[i] = add(grad[i], gl);
            // lap ln phi = lap phi / phi - |grad ln phi|^2
            lap[i] += l / v - dot(gl, gl);
        }
        (log, sign)
    }

    fn grad(&self, r: &[V3], i: usize) -> V3 {
        let (v, g, _) = self.orbitals[i].vgl(r[i]);
        scale(1.0 / v, g)
    }

    fn ratio_grad(&self, r: &[V3], i: usize, new: V3) -> (f64, V3) {
        let (v, g, _) = self.orbitals[i].vgl(new);
        (v / self.orbitals[i].value(r[i]), scale(1.0 / v, g))
    }

    fn box_clone(&self) -> Box<dyn Component> {
        Box::new(self.clone())
    }
}
