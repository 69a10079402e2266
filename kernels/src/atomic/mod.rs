//! Atomic orbitals: linear combinations of basis functions on nuclei (LCAOs), the orbital set that runs He, H2 and Be
//! on the batched engines (issue #20: one QMC driver), beside the B-spline table of the carbon solid and the plane
//! waves of the electron gas. Until now those atoms ran only on the qmc driver's engines; this kernel holds their
//! orbitals in the planewave kernel's shape, so the solid engine can adopt them as it adopted plane waves.
//!
//! A basis function is chi(r) = x^k y^l z^m R(|r - A|), d = r - A from its centre A, with a radial part R that is a
//! contraction over primitives n of one kind ([`Radial`]):
//! - Slater: R = sum_n a_n exp(-zeta_n r), unnormalised (the coefficients a_n as given): the 1s functions of the
//!   qmc driver's `Lcao` (He: exp(-2 r); H2: exp(-zeta |r - A|) on each nucleus, coefficient 1);
//! - Gaussian: R = sum_n a_n exp(-b_n r^2), the contracted Cartesian Gaussians of quantum chemistry (any powers: s,
//!   p, d, ...), with the coefficients as the basis file gives them (Be: PySCF's RHF/cc-pVTZ, [`hf`], normalised as
//!   PySCF normalises its shells).
//!
//! Orbital j is phi_j = sum_f C_jf chi_f, except inside the sphere of a restored nuclear cusp ([`cusp`],
//! [`AtomicOrbitals::cusp_corrected`]: Be's `be` on both drivers), where it is that cusp's s exp(p(r)).
//! [`AtomicOrbitals::helium`], [`AtomicOrbitals::h2`] and
//! [`AtomicOrbitals::beryllium`] are the qmc driver's orbitals exactly: the same functions, exponents, centres and
//! coefficients, and the same normalisation (none for the Slater functions, the file's for the Gaussians); both
//! spins use the same set (one orbital for He and H2, 1s and 2s for Be).
//!
//! Each basis function's value, gradient and Laplacian is the base's one evaluation ([`crate::basis::vgl`], on the
//! GPU the prelude's `atomic_function_vgl`), which paper 004's basis evaluation ([`crate::gemm`]) calls too.
//!
//! Outputs: the planewave kernel's ([`AtomicOrbitals::evaluate_point`]: `[component][stride]`, components value, gx,
//! gy, gz, Laplacian, rows padded with zeros to `stride`), the layout the solid engine reads whichever orbitals it
//! runs, and the qmc driver's ([`AtomicOrbitals::vgl`]: `v[j]`, `g[d * n + j]`, `l[j]`). Cost per point: each basis
//! function once (an exponential per primitive), then 5 multiply-adds per orbital and function
//! ([`AtomicOrbitals::flops`]).
//!
//! Precision: the arithmetic type A evaluates the basis functions ([`crate::basis`]) and the sums over them.
//! [`reference`] is an independent f64
//! evaluation (each primitive's derivatives by the product rule, summed); [`gpu`] evaluates a batch of points in one
//! launch (atomic.cu) into the same layout.

pub mod cusp;
pub mod gpu;
pub mod hf;
pub mod reference;
#[cfg(test)]
mod tests;

pub use crate::basis::{Function, Radial};
use crate::Real;
use cusp::Cusp;

/// Orbitals phi_j = sum_f `coef[j][f]` chi_f over basis functions on centres (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct AtomicOrbitals {
    pub centers: Vec<[f64; 3]>,
    pub functions: Vec<Function>,
    /// Per primitive: the exponent (zeta of a Slater, b of a Gaussian primitive) and the contraction coefficient a.
    pub exps: Vec<f64>,
    pub coefs: Vec<f64>,
    /// `[orbital][function]`.
    pub coef: Vec<Vec<f64>>,
    /// Nuclear cusps restored inside small spheres ([`cusp`]; none unless [`AtomicOrbitals::cusp_corrected`] adds
    /// them): inside one, its orbital is its [`Cusp::vgl`] instead of the sum over basis functions.
    pub cusps: Vec<Cusp>,
}

impl AtomicOrbitals {
    /// The orbitals from their parts, checked ([`AtomicOrbitals::check`]). Err: one sentence saying what is wrong.
    pub fn new(centers: Vec<[f64; 3]>, functions: Vec<Function>, exps: Vec<f64>, coefs: Vec<f64>, coef: Vec<Vec<f64>>) -> Result<AtomicOrbitals, String> {
        let o = AtomicOrbitals { centers, functions, exps, coefs, coef, cusps: vec![] };
        o.check()?;
        Ok(o)
    }

    /// Whether the parts fit together: at least one orbital and one function, every coefficient row as long as the
    /// functions, centres and primitives in range, every function with a primitive, every exponent positive and every
    /// number finite (the GPU kernel reads the table by these indices). Err: one sentence saying what is wrong.
    pub fn check(&self) -> Result<(), String> {
        let (functions, exps) = (&self.functions, &self.exps);
        if functions.is_empty() || self.coef.is_empty() {
            return Err("atomic orbitals need at least one basis function and one orbital".into());
        }
        if exps.len() != self.coefs.len() {
            return Err(format!("{} exponents for {} contraction coefficients", exps.len(), self.coefs.len()));
        }
        if let Some(row) = self.coef.iter().find(|c| c.len() != functions.len()) {
            return Err(format!("an orbital has {} coefficients for {} basis functions", row.len(), functions.len()));
        }
        for (i, f) in functions.iter().enumerate() {
            if f.center >= self.centers.len() || f.prims.is_empty() || f.prims.end > exps.len() {
                return Err(format!("basis function {i}: its centre or primitives are out of range, or it has no primitive"));
            }
        }
        if !exps.iter().all(|&e| e > 0.0 && e.is_finite()) {
            return Err("every exponent must be positive and finite".into());
        }
        if !self.coefs.iter().chain(self.coef.iter().flatten()).chain(self.centers.iter().flatten()).all(|x| x.is_finite()) {
            return Err("every coefficient and centre must be finite".into());
        }
        if let Some(c) = self.cusps.iter().find(|c| c.orbital >= self.len() || !(c.rc > 0.0) || !c.p.iter().chain(&c.at).chain([&c.rc, &c.sign]).all(|x| x.is_finite())) {
            return Err(format!("a cusp of orbital {}: orbital out of range, or a radius or coefficient not positive and finite", c.orbital));
        }
        Ok(())
    }

    /// One orbital, the Slater function exp(-zeta |r - center|) (unnormalised, as the qmc driver's `Lcao::slater_1s`).
    pub fn slater_1s(zeta: f64, center: [f64; 3]) -> AtomicOrbitals {
        let f = Function { center: 0, powers: [0; 3], radial: Radial::Slater, prims: 0..1 };
        AtomicOrbitals { centers: vec![center], functions: vec![f], exps: vec![zeta], coefs: vec![1.0], coef: vec![vec![1.0]], cusps: vec![] }
    }

    /// He's orbital in the qmc driver (`System::helium`): exp(-2 r) on the nucleus at the origin, which has the exact
    /// nuclear cusp.
    pub fn helium() -> AtomicOrbitals {
        AtomicOrbitals::slater_1s(2.0, [0.0; 3])
    }

    /// H2's orbital in the qmc driver (`System::h2(bond, zeta, b)`, `Lcao::sigma_g`): sigma_g = exp(-zeta |r - A|) +
    /// exp(-zeta |r - B|), unnormalised, the nuclei at z = -bond/2 and +bond/2. The driver's validation run takes
    /// bond 1.4 bohr and zeta 1.19 (its `systems::H2_BOND` and `H2_ZETA`, the system's constants, passed here
    /// rather than copied into the kernel).
    pub fn h2(bond: f64, zeta: f64) -> AtomicOrbitals {
        let s = |center| Function { center, powers: [0; 3], radial: Radial::Slater, prims: center..center + 1 };
        let centers = vec![[0.0, 0.0, -0.5 * bond], [0.0, 0.0, 0.5 * bond]];
        AtomicOrbitals { centers, functions: vec![s(0), s(1)], exps: vec![zeta; 2], coefs: vec![1.0; 2], coef: vec![vec![1.0, 1.0]], cusps: vec![] }
    }

    /// Be's orbitals in the qmc driver (`System::beryllium`): the 1s and 2s of RHF/cc-pVTZ from PySCF, the committed
    /// file [`hf::BE_HF`].
    pub fn beryllium() -> AtomicOrbitals {
        hf::HfOrbitals::parse(hf::BE_HF).expect("the committed Be orbital file parses (a unit test checks it)").orbitals
    }

    pub fn len(&self) -> usize {
        self.coef.len()
    }

    pub fn is_empty(&self) -> bool {
        self.coef.is_empty()
    }

    /// Value, gradient and Laplacian of basis function `f` at r, in A: `[value, gx, gy, gz, Laplacian]` (the one
    /// evaluation, [`crate::basis::vgl`]).
    #[inline(always)]
    pub fn function<A: Real>(&self, f: &Function, r: [f64; 3]) -> [A; 5] {
        crate::basis::vgl(f, self.centers[f.center], &self.exps, &self.coefs, r)
    }

    /// The orbitals' VGL at r in A as their terms: `add(component, orbital, C_jf chi_f)` for each basis function f in
    /// order (computed once), each orbital j and component, so a sum from zero is the qmc driver's
    /// sum_f C_jf chi_f. Inline, so each layout's caller compiles to one loop.
    #[inline(always)]
    fn accumulate<A: Real>(&self, r: [f64; 3], mut add: impl FnMut(usize, usize, A)) {
        for (i, func) in self.functions.iter().enumerate() {
            let chi = self.function::<A>(func, r);
            for (j, row) in self.coef.iter().enumerate() {
                let c = A::of(row[i]);
                for (k, x) in chi.iter().enumerate() {
                    add(k, j, c * *x);
                }
            }
        }
    }

    /// Values `v[j]`, gradients `g[d * n + j]` and Laplacians `l[j]` of the n orbitals at r, in A (the qmc driver's
    /// layout).
    pub fn vgl<A: Real>(&self, r: [f64; 3], v: &mut [A], g: &mut [A], l: &mut [A]) {
        self.vgl_uncorrected(r, v, g, l);
        let n = self.len();
        self.corrected::<A>(r, |k, j, x| match k {
            0 => v[j] = x,
            4 => l[j] = x,
            d => g[(d - 1) * n + j] = x,
        });
    }

    /// As [`AtomicOrbitals::vgl`], the sums over basis functions without the cusps.
    pub fn vgl_uncorrected<A: Real>(&self, r: [f64; 3], v: &mut [A], g: &mut [A], l: &mut [A]) {
        let n = self.len();
        v[..n].fill(A::zero());
        g[..3 * n].fill(A::zero());
        l[..n].fill(A::zero());
        self.accumulate::<A>(r, |k, j, x| match k {
            0 => v[j] += x,
            4 => l[j] += x,
            d => g[(d - 1) * n + j] += x,
        });
    }

    /// `set(component, orbital, x)` for every component of each orbital whose cusp sphere holds r (after the sums
    /// over basis functions, which these values replace).
    #[inline(always)]
    fn corrected<A: Real>(&self, r: [f64; 3], mut set: impl FnMut(usize, usize, A)) {
        for c in &self.cusps {
            if let Some(x) = c.vgl::<A>(r) {
                for (k, x) in x.into_iter().enumerate() {
                    set(k, c.orbital, x);
                }
            }
        }
    }

    /// VGL at one point into `out`, `[component][stride]` (value, gx, gy, gz, Laplacian; entries from `len()` to
    /// `stride` zero): the B-spline kernel's output layout, on the calling thread, allocating nothing.
    #[inline(always)]
    pub fn evaluate_point<A: Real>(&self, r: [f64; 3], stride: usize, out: &mut [A]) {
        assert!(self.len() <= stride && out.len() == 5 * stride, "atomic: output length");
        out.fill(A::zero());
        self.accumulate::<A>(r, |k, j, x| out[k * stride + j] += x);
        self.corrected::<A>(r, |k, j, x| out[k * stride + j] = x);
    }

    /// VGL at every point of `pos` (`[point][xyz]`) into `out` (`[point][5][stride]`).
    pub fn evaluate<A: Real>(&self, pos: &[f64], stride: usize, out: &mut [A]) {
        assert!(pos.len().is_multiple_of(3) && out.len() == pos.len() / 3 * 5 * stride, "atomic: output length");
        for (p, o) in pos.chunks_exact(3).zip(out.chunks_exact_mut(5 * stride)) {
            self.evaluate_point(p.try_into().unwrap(), stride, o);
        }
    }

    /// Flops of a VGL evaluation at `points` points: per basis function 30 (the displacement, r^2, the powers and the
    /// five outputs, the gemm kernel's basis count), per primitive 8 for a Gaussian (the exponential counted as one,
    /// as there) and 12 for a Slater function (its Laplacian term has a division), and 10 per orbital and function
    /// (five multiply-adds).
    pub fn flops(&self, points: usize) -> f64 {
        (points * (crate::basis::flops(&self.functions) + 10 * self.len() * self.functions.len())) as f64
    }

    /// The orbitals as the GPU reads them, one f64 array: [`crate::basis::pack`]'s functions `[function][RECORD]`
    /// (centre x, y, z, powers k, l, m, 1 if Slater else 0, first and end primitive), then the primitives at
    /// [`AtomicOrbitals::prims_at`] (`[primitive][exponent, coefficient]`), then the orbital coefficients at
    /// [`AtomicOrbitals::coef_at`] (`[orbital][function]`), then the cusps at [`AtomicOrbitals::cusp_at`]
    /// (`[cusp][CUSP_RECORD]`: orbital, centre x, y, z, r_c, sign, a0..a4).
    pub fn packed(&self) -> Vec<f64> {
        let mut out = crate::basis::pack(&self.centers, &self.functions, &self.exps, &self.coefs);
        out.reserve(self.cusp_at() + Self::CUSP_RECORD * self.cusps.len() - out.len());
        out.extend(self.coef.iter().flatten());
        for c in &self.cusps {
            out.extend([c.orbital as f64, c.at[0], c.at[1], c.at[2], c.rc, c.sign]);
            out.extend(c.p);
        }
        out
    }

    /// Words of one cusp's record in [`AtomicOrbitals::packed`].
    pub const CUSP_RECORD: usize = 11;

    /// Where the cusps start in [`AtomicOrbitals::packed`].
    pub fn cusp_at(&self) -> usize {
        self.coef_at() + self.len() * self.functions.len()
    }

    /// Where the primitives start in [`AtomicOrbitals::packed`].
    pub fn prims_at(&self) -> usize {
        crate::basis::prims_at(self.functions.len())
    }

    /// Where the orbital coefficients start in [`AtomicOrbitals::packed`].
    pub fn coef_at(&self) -> usize {
        self.prims_at() + 2 * self.exps.len()
    }
}
