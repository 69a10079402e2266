//! Hartree-Fock orbitals of an atom in a Gaussian basis, from a quantum-chemistry code: the Be atom's RHF/cc-pVTZ
//! 1s and 2s from PySCF (`scripts/pyscf-orbitals.py` writes `data/be-hf.txt`, included at compile time), and the
//! parser of that file format. Both drivers (the qmc driver's per-walker engines and the batched engines) run the
//! [`AtomicOrbitals`] this returns.
//!
//! Gaussians have zero slope at the nucleus, so these orbitals miss Kato's cusp: [`super::cusp`] restores it (the
//! `be` systems of both drivers; `be-hf` keeps the orbitals as they are, so its VMC energy is E_HF).

use super::{AtomicOrbitals, Function, Radial};

/// The committed PySCF output for Be.
pub const BE_HF: &str = include_str!("data/be-hf.txt");

/// An atom's occupied HF orbitals, its nucleus, and what PySCF reported.
#[derive(Clone, Debug)]
pub struct HfOrbitals {
    pub z: f64,
    pub center: [f64; 3],
    /// E_HF, `<T>` and `<V>` in Ha.
    pub energy: f64,
    pub kinetic: f64,
    pub potential: f64,
    /// The occupied orbitals over the file's contracted Cartesian Gaussians, all on the nucleus.
    pub orbitals: AtomicOrbitals,
    /// (point, orbital values there) as PySCF evaluated them.
    pub checks: Vec<([f64; 3], Vec<f64>)>,
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

impl HfOrbitals {
    /// The orbitals with the nucleus's cusp restored inside [`super::cusp::BE_RADIUS`]: both drivers' `be` (the
    /// qmc driver's from this file or a user's, the batched engines' from the committed one). Err: one sentence, if
    /// an orbital cannot take the correction ([`AtomicOrbitals::cusp_corrected`]).
    pub fn cusped(&self) -> Result<AtomicOrbitals, String> {
        self.orbitals.cusp_corrected(0, self.z, super::cusp::BE_RADIUS)
    }

    /// Parse the orbital file format of `scripts/pyscf-orbitals.py`. Err: one sentence naming the line.
    pub fn parse(text: &str) -> Result<HfOrbitals, String> {
        let (mut functions, mut exps, mut coefs) = (vec![], vec![], vec![]);
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
                    let start = exps.len();
                    for _ in 0..prims as usize {
                        let (m, p) = lines.next().ok_or(format!("line {n}: the file ends inside a shell"))?;
                        let [e, c] = numbers::<2>(&p, m)?;
                        if !(e > 0.0 && c.is_finite()) {
                            return Err(format!("line {m}: a primitive needs a positive exponent and a finite coefficient"));
                        }
                        exps.push(e);
                        coefs.push(c);
                    }
                    for &powers in cartesians(l as u32)? {
                        functions.push(Function { center: 0, powers, radial: Radial::Gaussian, prims: start..exps.len() });
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
        if coef.is_empty() {
            return Err("no 'orbital' lines".into());
        }
        if let Some(c) = coef.iter().find(|c| c.len() != functions.len()) {
            return Err(format!("an orbital has {} coefficients for {} basis functions", c.len(), functions.len()));
        }
        let orbitals = AtomicOrbitals::new(vec![[x, y, zc]], functions, exps, coefs, coef)?;
        Ok(HfOrbitals { z, center: [x, y, zc], energy, kinetic, potential, orbitals, checks })
    }
}
