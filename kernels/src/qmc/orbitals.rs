//! Orbitals for the small validation systems: sums of 1s Slater-type functions exp(-zeta |r - A|) (one term: the
//! atomic 1s; two terms on two nuclei: the LCAO sigma_g of H2), and the orbital part of psi_T as a product of one
//! orbital per electron. With one electron per spin channel that product IS the Slater determinant (1x1 per spin);
//! atoms with more electrons per spin need the `determinant` kernel, which replaces [`OrbitalProduct`].
//! Normalisation is left out: QMC needs psi only up to a constant.

use super::{add, Component, V3};
use crate::Real;
use std::marker::PhantomData;

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

    /// Value, gradient and Laplacian of the orbital at r, computed in T: for one term, grad = -zeta e r_hat and
    /// lap = e (zeta^2 - 2 zeta / |r - A|).
    pub fn vgl<T: Real>(&self, r: V3) -> (T, [T; 3], T) {
        let (mut v, mut g, mut l) = (T::zero(), [T::zero(); 3], T::zero());
        for &(c, z, a) in &self.terms {
            let (c, z) = (T::of(c), T::of(z));
            let d = [0, 1, 2].map(|k| T::of(r[k]) - T::of(a[k]));
            let dist = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt().max(T::min_positive_value());
            let e = c * (-z * dist).exp();
            v += e;
            for k in 0..3 {
                g[k] -= z * e / dist * d[k];
            }
            l += e * (z * z - T::of(2.0) * z / dist);
        }
        (v, g, l)
    }
}

/// psi = prod_i phi_{o(i)}(r_i): one orbital per electron, evaluated in T.
#[derive(Clone, Debug)]
pub struct OrbitalProduct<T = f64> {
    pub orbitals: Vec<Lcao>,
    pub precision: PhantomData<T>,
}

impl<T: Real> OrbitalProduct<T> {
    pub fn new(orbitals: Vec<Lcao>) -> Self {
        OrbitalProduct { orbitals, precision: PhantomData }
    }

    /// grad ln phi = grad phi / phi, in T.
    fn grad_log(v: T, g: [T; 3]) -> [T; 3] {
        g.map(|x| x / v)
    }
}

impl<T: Real> Component for OrbitalProduct<T> {
    fn evaluate(&mut self, r: &[V3], grad: &mut [V3], lap: &mut [f64]) -> (f64, f64) {
        let (mut log, mut sign) = (T::zero(), 1.0);
        for (i, o) in self.orbitals.iter().enumerate() {
            let (v, g, l) = o.vgl::<T>(r[i]);
            let gl = Self::grad_log(v, g);
            log += v.abs().ln();
            sign *= v.signum().f64();
            grad[i] = add(grad[i], gl.map(|x| x.f64()));
            // lap ln phi = lap phi / phi - |grad ln phi|^2
            lap[i] += (l / v - gl.iter().map(|&x| x * x).sum::<T>()).f64();
        }
        (log.f64(), sign)
    }

    fn grad(&self, r: &[V3], i: usize) -> V3 {
        let (v, g, _) = self.orbitals[i].vgl::<T>(r[i]);
        Self::grad_log(v, g).map(|x| x.f64())
    }

    fn ratio_grad(&self, r: &[V3], i: usize, new: V3) -> (f64, V3) {
        let (v, g, _) = self.orbitals[i].vgl::<T>(new);
        let (v_old, _, _) = self.orbitals[i].vgl::<T>(r[i]);
        ((v / v_old).f64(), Self::grad_log(v, g).map(|x| x.f64()))
    }

    fn box_clone(&self) -> Box<dyn Component> {
        Box::new(self.clone())
    }
}
