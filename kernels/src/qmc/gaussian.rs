//! Hartree-Fock orbitals of an atom in a Gaussian basis, from a quantum-chemistry code: the Be atom's RHF/cc-pVTZ
//! 1s and 2s from PySCF (`scripts/pyscf-orbitals.py` writes `data/be-hf.txt`, included at compile time).
//!
//! The basis functions are the gemm kernel's contracted Cartesian Gaussians ([`BasisSet`], evaluated with value,
//! gradient and Laplacian by `gemm::cpu::basis` in the run's precision); an orbital is phi_k = sum_f C_kf chi_f, the product that
//! the gemm kernel batches over walkers, done here one electron at a time (one point, n x nf: a dot product each).
//!
//! Gaussians have zero slope at the nucleus, so these orbitals miss Kato's cusp: alone, E_L diverges like -Z/r there.
//! The trial function restores the cusp with a one-body Jastrow term of slope -Z at r = 0 (see `System::beryllium`).

use super::slater::Orbitals;
use super::V3;
use crate::gemm::basis::{BasisSet, Function};
use crate::gemm::{cpu, COMPONENTS};
use crate::Real;
use std::sync::Arc;

/// The committed PySCF output for Be.
pub const BE_HF: &str = include_str!("data/be-hf.txt");

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

/// Cartesian powers of shell l, in PySCF's (and the gemm kernel's) order.
fn cartesians(l: u32) -> Result<&'static [[u32; 3]], String> {
    match l {
        0 => Ok(&[[0, 0, 0]]),
        1 => Ok(&[[1, 0, 0], [0, 1, 0], [0, 0, 1]]),
        2 => Ok(&[[2, 0, 0], [1, 1, 0], [1, 0, 1], [0, 2, 0], [0, 1, 1], [0, 0, 2]]),
        _ => Err(format!("shell of angular momentum {l}: only s, p and d are supported")),
    }
}

fn numbers<const N: usize>(words: &[&str], line: usize) -> Result<[f64; N], String> {
    let v: Vec<f64> = words.iter().map(|w| w.parse::<f64>()).collect::<Result<_, _>>().map_err(|e| format!("line {line}: {e}"))?;
    v.try_into().map_err(|v: Vec<f64>| format!("line {line}: expected {N} numbers, found {}", v.len()))
}

impl HfAtom {
    /// Parse the orbital file format of `scripts/pyscf-orbitals.py`. Err: one sentence naming the line.
    pub fn parse(text: &str) -> Result<HfAtom, String> {
        let mut basis = BasisSet { centers: vec![[0.0; 3]], functions: vec![], exps: vec![], coefs: vec![] };
        let (mut energy, mut nucleus, mut coef, mut checks) = (None, None, vec![], vec![]);
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.split_whitespace().collect::<Vec<_>>()));
        while let Some((n, w)) = lines.next() {
            match w.first().copied() {
                None => {}
                Some(c) if c.starts_with('#') => {}
                Some("energy") => energy = Some(numbers::<3>(&w[1..], n)?),
                Some("nucleus") => nucleus = Some(numbers::<4>(&w[1..], n)?),
                Some("shell") => {
                    let [l, prims] = numbers::<2>(&w[1..], n)?;
                    let start = basis.exps.len();
                    for _ in 0..prims as usize {
                        let (m, p) = lines.next().ok_or(format!("line {n}: the file ends inside a shell"))?;
                        let [e, c] = numbers::<2>(&p, m)?;
                        if !(e > 0.0 && c.is_finite()) {
                            return Err(format!("line {m}: a primitive needs a positive exponent and a finite coefficient"));
                        }
                        basis.exps.push(e);
                        basis.coefs.push(c);
                    }
                    for &powers in cartesians(l as u32)? {
                        basis.functions.push(Function { center: 0, powers, prims: start..basis.exps.len() });
                    }
                }
                Some("orbital") => {
                    let c: Vec<f64> = w[1..].iter().map(|x| x.parse::<f64>()).collect::<Result<_, _>>().map_err(|e| format!("line {n}: {e}"))?;
                    coef.push(c);
                }
                Some("check") => {
                    let v: Vec<f64> = w[1..].iter().map(|x| x.parse::<f64>()).collect::<Result<_, _>>().map_err(|e| format!("line {n}: {e}"))?;
                    if v.len() < 4 {
                        return Err(format!("line {n}: a check needs a point and orbital values"));
                    }
                    checks.push(([v[0], v[1], v[2]], v[3..].to_vec()));
                }
                Some(k) => return Err(format!("line {n}: unknown keyword '{k}'")),
            }
        }
        let [energy, kinetic, potential] = energy.ok_or("no 'energy' line")?;
        let [z, x, y, zc] = nucleus.ok_or("no 'nucleus' line")?;
        basis.centers[0] = [x, y, zc];
        if coef.is_empty() {
            return Err("no 'orbital' lines".into());
        }
        if let Some(c) = coef.iter().find(|c| c.len() != basis.len()) {
            return Err(format!("an orbital has {} coefficients for {} basis functions", c.len(), basis.len()));
        }
        Ok(HfAtom { z, center: [x, y, zc], energy, kinetic, potential, orbitals: GaussianOrbitals { basis: Arc::new(basis), coef: Arc::new(coef) }, checks })
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
