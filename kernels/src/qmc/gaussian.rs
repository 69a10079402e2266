//! Hartree-Fock orbitals of an atom in a Gaussian basis, from a quantum-chemistry code: the Be atom's RHF/cc-pVTZ
//! 1s and 2s from PySCF. The file (`scripts/pyscf-orbitals.py` writes it) and its parser are the atomic kernel's
//! ([`crate::atomic::hf`], its data `atomic/data/be-hf.txt`, included at compile time); this driver takes the
//! parsed orbitals into its own form here.
//!
//! The basis functions are the gemm kernel's contracted Cartesian Gaussians ([`BasisSet`], evaluated with value,
//! gradient and Laplacian by `gemm::cpu::basis` in the run's precision); an orbital is phi_k = sum_f C_kf chi_f, the product that
//! the gemm kernel batches over walkers, done here one electron at a time (one point, n x nf: a dot product each).
//!
//! Gaussians have zero slope at the nucleus, so these orbitals miss Kato's cusp: alone, E_L diverges like -Z/r there.
//! The trial function restores the cusp with a one-body Jastrow term of slope -Z at r = 0 (see `System::beryllium`).

use super::slater::Orbitals;
use super::V3;
use crate::atomic::hf::HfOrbitals;
use crate::atomic::{AtomicOrbitals, Radial};
use crate::gemm::basis::{BasisSet, Function};
use crate::gemm::{cpu, COMPONENTS};
use crate::Real;
use std::sync::Arc;

/// The committed PySCF output for Be (the atomic kernel's file).
pub use crate::atomic::hf::BE_HF;

/// An atom's occupied HF orbitals and the energies PySCF reported.
#[derive(Clone, Debug)]
pub struct HfAtom {
    pub z: f64,
    pub center: V3,
    /// E_HF, <T> and <V> in Ha.
    pub energy: f64,
    pub kinetic: f64,
    pub potential: f64,
    pub orbitals: GaussianOrbitals,
    /// (point, orbital values there) as PySCF evaluated them.
    pub checks: Vec<(V3, Vec<f64>)>,
}

/// Orbitals phi_k = sum_f coef[k][f] chi_f over a Gaussian basis (shared between walkers).
#[derive(Clone, Debug)]
pub struct GaussianOrbitals {
    pub basis: Arc<BasisSet>,
    pub coef: Arc<Vec<Vec<f64>>>,
}

impl GaussianOrbitals {
    /// The same orbitals over the gemm kernel's basis set: the functions, primitives and coefficients as they are.
    /// None if a function is not a Gaussian (a Slater function has no place in a `BasisSet`).
    pub fn from_atomic(o: &AtomicOrbitals) -> Option<GaussianOrbitals> {
        let functions = o.functions.iter().map(|f| (f.radial == Radial::Gaussian).then(|| Function { center: f.center, powers: f.powers, prims: f.prims.clone() }));
        let basis = BasisSet { centers: o.centers.clone(), functions: functions.collect::<Option<_>>()?, exps: o.exps.clone(), coefs: o.coefs.clone() };
        Some(GaussianOrbitals { basis: Arc::new(basis), coef: Arc::new(o.coef.clone()) })
    }
}

impl HfAtom {
    /// Parse the orbital file format of `scripts/pyscf-orbitals.py` (the atomic kernel's parser). Err: one sentence
    /// naming the line.
    pub fn parse(text: &str) -> Result<HfAtom, String> {
        let hf = HfOrbitals::parse(text)?;
        let orbitals = GaussianOrbitals::from_atomic(&hf.orbitals).expect("an orbital file holds Gaussians only");
        Ok(HfAtom { z: hf.z, center: hf.center, energy: hf.energy, kinetic: hf.kinetic, potential: hf.potential, orbitals, checks: hf.checks })
    }
}

impl Orbitals for GaussianOrbitals {
    fn len(&self) -> usize {
        self.coef.len()
    }
    fn vgl<T: Real>(&self, r: V3, v: &mut [T], g: &mut [T], l: &mut [T]) {
        let n = self.coef.len();
        let nf = self.basis.len();
        // [component][function] at this one point, by the gemm kernel's CPU basis in T
        let mut chi = vec![T::zero(); COMPONENTS * nf];
        cpu::basis::<T, T>(&self.basis, &r, &mut chi);
        let dot = |k: usize, comp: usize| -> T { self.coef[k].iter().zip(&chi[comp * nf..(comp + 1) * nf]).map(|(&c, &x)| T::of(c) * x).sum() };
        for k in 0..n {
            v[k] = dot(k, 0);
            for d in 0..3 {
                g[d * n + k] = dot(k, 1 + d);
            }
            l[k] = dot(k, 4);
        }
    }
}

/// The atomic kernel's orbital sets are this driver's orbitals: He's and H2's `Lcao`s and Be's Gaussian orbitals,
/// values, gradients and Laplacians at random points (where the driver's trial functions run, 0.05 to 5 bohr from a
/// nucleus), to 1e-12 of each component's largest value.
#[cfg(test)]
mod tests {
    use super::super::systems::{OrbitalSet, System, H2_BOND, H2_JASTROW_B, H2_ZETA, HE_JASTROW_B};
    use super::*;
    use crate::Check;

    fn points(centers: &[[f64; 3]], count: usize) -> Vec<V3> {
        use rand::Rng;
        let mut r = crate::rng::rng(7, 0xA70);
        (0..count)
            .map(|i| {
                let (c, g) = (centers[i % centers.len()], crate::rng::gaussian3(&mut r));
                let s = r.random_range(0.05f64.ln()..5.0f64.ln()).exp() / (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
                [c[0] + s * g[0], c[1] + s * g[1], c[2] + s * g[2]]
            })
            .collect()
    }

    /// Each component of `ours` against the driver's `theirs`, both `[point][component][orbital]`.
    fn agree(name: &str, ours: &[f64], theirs: &[f64], n: usize) {
        for c in 0..5 {
            let pick = |v: &[f64]| v.chunks_exact(n).skip(c).step_by(5).flatten().copied().collect::<Vec<_>>();
            let check = Check::compare(&format!("{name} component {c}"), &pick(ours), &pick(theirs), 1e-12);
            assert!(check.passed(), "{check:?}");
        }
    }

    /// The driver's own systems, through their blueprints (the orbitals its engines run), so a change of an
    /// exponent or a bond in `systems` fails here.
    #[test]
    fn atomic_orbitals_equal_the_drivers() {
        let product = |sys: System| match sys.blueprint.orbitals {
            OrbitalSet::Product(o) => o,
            other => panic!("{}: {other:?}", sys.name),
        };
        let (he, h2) = (product(System::helium(HE_JASTROW_B)), product(System::h2(H2_BOND, H2_ZETA, H2_JASTROW_B)));
        for (name, ours, theirs) in [("he", AtomicOrbitals::helium(), he), ("h2", AtomicOrbitals::h2(H2_BOND, H2_ZETA), h2)] {
            // one orbital per electron, the same for both spins, whose centres are ours
            assert_eq!(theirs.len(), 2, "{name}");
            assert_eq!(ours.centers, theirs[0].terms.iter().map(|t| t.2).collect::<Vec<_>>(), "{name}");
            for orbital in &theirs {
                let (mut mine, mut driver) = (vec![], vec![]);
                for r in points(&ours.centers, 50) {
                    let mut out = vec![0.0; 5 * 64];
                    ours.evaluate_point::<f64>(r, 64, &mut out);
                    mine.extend(out.chunks_exact(64).map(|row| row[0]));
                    let (v, g, l) = orbital.vgl::<f64>(r);
                    driver.extend([v, g[0], g[1], g[2], l]);
                }
                agree(name, &mine, &driver, 1);
            }
        }
        let ours = AtomicOrbitals::beryllium();
        let OrbitalSet::Gaussian(theirs) = System::beryllium(None).blueprint.orbitals else { panic!("be: not a Gaussian basis") };
        let n = theirs.len();
        let (mut mine, mut driver) = (vec![], vec![]);
        for r in points(&ours.centers, 50) {
            let mut out = vec![0.0; 5 * 64];
            ours.evaluate_point::<f64>(r, 64, &mut out);
            mine.extend(out.chunks_exact(64).flat_map(|row| row[..n].to_vec()));
            let (mut v, mut g, mut l) = (vec![0.0; n], vec![0.0; 3 * n], vec![0.0; n]);
            theirs.vgl::<f64>(r, &mut v, &mut g, &mut l);
            driver.extend(v.iter().chain(&g).chain(&l));
        }
        agree("be", &mine, &driver, n);
        // and the driver's basis is the kernel's, function by function
        assert_eq!(theirs.basis.functions.len(), ours.functions.len());
        assert!(ours.functions.iter().zip(&theirs.basis.functions).all(|(f, g)| f.powers == g.powers && f.prims == g.prims && f.center == g.center));
        assert_eq!((&theirs.basis.exps, &theirs.basis.coefs, theirs.coef.as_ref()), (&ours.exps, &ours.coefs, &ours.coef));
    }
}
