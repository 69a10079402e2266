//! Radial channels of a semi-local pseudopotential in the Gaussian-expansion (GAMESS "GEN") form: the nonlocal
//! part of channel l is dV_l(r) = V_l(r) - V_loc(r) = sum_k c_k r^(n_k - 2) exp(-a_k r^2).
//!
//! Default: carbon from Burkatzki, Filippi and Dolg, "Energy-consistent pseudopotentials for quantum Monte Carlo
//! calculations", J. Chem. Phys. 126, 234105 (2007) (BFD). Its GAMESS card, as distributed with QMCPACK's Nexus
//! (file `C.BFD.gms`, quoted in nexus/tests/unit/test_pseudopotential.py):
//!
//! ```text
//! C-QMC GEN 2 1          2 core electrons, local channel l = 1
//! 3                      local channel: 4/r e^{-8.36 r^2} + 33.44 r e^{-4.48 r^2} - 19.18 e^{-3.94 r^2} (- 4/r)
//! 4.00000000 1 8.35973821
//! 33.43895285 3 4.48361888
//! -19.17537323 2 3.93831258
//! 1                      s channel minus local: 22.55 e^{-5.03 r^2}
//! 22.55164191 2 5.02991637
//! ```
//!
//! (Consistency check: 33.43895285 = 4 x 8.35973821, the Z alpha of the BFD local form.) Carbon has one nonlocal
//! channel (l = 0); the kernel supports l = 0..3, which `test_channels` exercises with representative (not
//! published) d and f channels.

/// One Gaussian term c r^(n-2) exp(-a r^2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Term {
    pub c: f64,
    pub n: i32,
    pub a: f64,
}

/// Most channels (l = 0..3) and terms per channel the GPU kernel takes.
pub const MAX_L: usize = 3;
pub const MAX_TERMS: usize = 4;

/// The nonlocal channels dV_l for l = 0..lmax and the cutoff beyond which all are negligible.
#[derive(Clone, Debug, PartialEq)]
pub struct Channels {
    pub name: &'static str,
    pub l: Vec<Vec<Term>>,
    pub rc: f64,
}

/// |dV_l(r)| below this (Hartree) counts as zero: QMCPACK likewise truncates the tabulated channels.
pub const CUTOFF_HARTREE: f64 = 1e-5;

impl Channels {
    fn new(name: &'static str, l: Vec<Vec<Term>>) -> Channels {
        assert!(!l.is_empty() && l.len() <= MAX_L + 1 && l.iter().all(|t| t.len() <= MAX_TERMS));
        let mut ch = Channels { name, l, rc: 0.0 };
        // outermost radius on a fine grid where some channel still exceeds the threshold
        let mut rc: f64 = 0.0;
        for i in 1..=20000 {
            let r = i as f64 * 1e-3;
            if (0..ch.l.len()).any(|l| ch.value(l, r).abs() > CUTOFF_HARTREE) {
                rc = r + 1e-3;
            }
        }
        ch.rc = rc;
        ch
    }

    /// BFD carbon (see module docs).
    pub fn carbon_bfd() -> Channels {
        Channels::new("C-BFD", vec![vec![Term { c: 22.55164191, n: 2, a: 5.02991637 }]])
    }

    /// Channels l = 0..3 of BFD-like shape for tests of the l > 0 projections: the carbon s channel plus
    /// representative p, d, f channels (not from a published pseudopotential).
    pub fn test_channels() -> Channels {
        Channels::new(
            "test-spdf",
            vec![
                vec![Term { c: 22.55164191, n: 2, a: 5.02991637 }],
                vec![Term { c: -6.0, n: 2, a: 3.0 }, Term { c: 4.0, n: 3, a: 4.0 }],
                vec![Term { c: 3.0, n: 2, a: 2.5 }],
                vec![Term { c: -1.5, n: 4, a: 3.5 }],
            ],
        )
    }

    pub fn lmax(&self) -> usize {
        self.l.len() - 1
    }

    /// dV_l(r).
    pub fn value(&self, l: usize, r: f64) -> f64 {
        self.l[l].iter().map(|t| t.c * r.powi(t.n - 2) * (-t.a * r * r).exp()).sum()
    }
}
