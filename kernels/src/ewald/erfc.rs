//! Branch-free erfc for the vector loops of the real-space sum (libm's erfc is a scalar call with branches, which
//! keeps the loop scalar). erfc(x) = e^{-x^2} g(t) / (K + x) with t = (x - K) / (x + K), K = 4: g is smooth on the
//! whole of x >= 0 (t in [-1, 1)), from K at x = 0 to 1/sqrt(pi) at infinity, so one Chebyshev series in t gives a
//! uniform relative error. The coefficients were fitted (at 64 Chebyshev nodes, with erfcx evaluated in 60+ digit
//! decimal arithmetic) for this project; 22 terms reach 5e-15 relative (the fit's noise floor) and 13 terms ~1e-8. e^{-x^2} uses x^2 split into
//! its rounded value and the exact remainder (by a fused multiply-add), so the rounding of x^2 (relative 1e-16 times
//! x^2) does not show. One generic code for f32 and f64 ([`Lane`] holds the constants), over arrays of lanes so the
//! vector loops keep several polynomial chains in flight. Fused multiply-adds throughout: the callers compile these for AVX2/AVX-512 with FMA
//! (`crate::dispatch!`); on a CPU without FMA they would be slow library calls, but still right.

const K: f64 = 4.0;

const C64: [f64; 22] = [
    1.63209787819652585e+00, -1.50543294270546957e+00, 5.90321418288894173e-01, -1.98285271720110040e-01,
    5.69084302284683305e-02, -1.37739730508699074e-02, 2.72901673313507035e-03, -4.13618079029987940e-04,
    3.89141838076465126e-05, 4.79548549444567949e-07, -8.69910708740712326e-07, 1.21167072079714997e-07,
    3.79196713354670223e-09, -3.45336581425256136e-09, 2.74885942359797578e-10, 6.81406832826182085e-11,
    -1.35698816786540462e-11, -1.04674681773425951e-12, 4.85545494250454176e-13, 9.20177478623468048e-15,
    -1.63248107775208675e-14, 9.98020454771839448e-16,
];

const C32: [f32; 13] = [
    1.632097878e+00, -1.505432943e+00, 5.903214183e-01, -1.982852717e-01, 5.690843023e-02, -1.377397305e-02,
    2.729016733e-03, -4.136180790e-04, 3.891418381e-05, 4.795485494e-07, -8.699107087e-07, 1.211670721e-07,
    3.791967134e-09,
];

/// The constants of one precision: the Chebyshev series of g, the clamp of x, and e^{-y}'s reduction and Taylor
/// polynomial (degree 13 in f64, 7 in f32).
pub trait Lane: crate::Real {
    const CHEB: &'static [Self];
    const CLAMP: Self;
    /// 1.5 * 2^p: adding it rounds to an integer held in the low bits (no float-to-int conversion, which AVX-512F
    /// lacks for 64-bit integers).
    const MAGIC: Self;
    /// ln 2 in two parts, the first with few enough bits that n * LN2_HI is exact.
    const LN2_HI: Self;
    const LN2_LO: Self;
    /// 1/k!, k = 0..=degree.
    const TAYLOR: &'static [Self];
    /// 2^n for the integer n held in the low bits of `big` (= n + MAGIC), built in the exponent bits.
    fn pow2(big: Self) -> Self;
}

impl Lane for f64 {
    const CHEB: &'static [f64] = &C64;
    const CLAMP: f64 = 26.0;
    const MAGIC: f64 = 6755399441055744.0;
    const LN2_HI: f64 = 0.693_147_180_369_123_816_49; // 32 significant bits
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const TAYLOR: &'static [f64] = &INV_FACT;
    #[inline(always)]
    fn pow2(big: f64) -> f64 {
        f64::from_bits(big.to_bits().wrapping_add(1023) << 52)
    }
}

impl Lane for f32 {
    const CHEB: &'static [f32] = &C32;
    const CLAMP: f32 = 9.0;
    const MAGIC: f32 = 12582912.0;
    const LN2_HI: f32 = 0.693_145_751_953_125;
    const LN2_LO: f32 = 1.428_606_765_330_187e-6;
    const TAYLOR: &'static [f32] = &[1.0, 1.0, 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];
    #[inline(always)]
    fn pow2(big: f32) -> f32 {
        f32::from_bits(big.to_bits().wrapping_add(127) << 23)
    }
}

/// erfc(x) (K + x) = e^{-x^2} g(t) for L lanes of x in [0, CLAMP], given q = 1 / (K + x). The loops over the
/// coefficients are outside the loops over lanes, so L independent multiply-add chains run side by side (one lane
/// alone would wait on each step's latency).
#[inline(always)]
fn scaled<T: Lane, const L: usize>(x: &[T; L], q: &[T; L]) -> [T; L] {
    // (plain loops over lanes: array::from_fn would not be inlined into the vector-ISA copies of the callers)
    let k = T::of(K);
    let mut t = [T::zero(); L];
    for l in 0..L {
        t[l] = (x[l] - k) * q[l];
    }
    let (mut b1, mut b2) = ([T::zero(); L], [T::zero(); L]);
    for &c in T::CHEB[1..].iter().rev() {
        for l in 0..L {
            let b = (t[l] + t[l]).mul_add(b1[l], c - b2[l]);
            b2[l] = b1[l];
            b1[l] = b;
        }
    }
    // e^{-y}, y = x^2 = hi + lo exactly (the fused multiply-add gives the rounding error of x * x): y ln2-reduced,
    // a Taylor polynomial, and 2^n in the exponent bits; the exact remainder lo by e^{-lo} = 1 - lo
    let (mut hi, mut big, mut r) = ([T::zero(); L], [T::zero(); L], [T::zero(); L]);
    for l in 0..L {
        hi[l] = x[l] * x[l];
        big[l] = (-hi[l]).mul_add(T::of(std::f64::consts::LOG2_E), T::MAGIC);
        let n = big[l] - T::MAGIC;
        r[l] = n.mul_add(-T::LN2_LO, n.mul_add(-T::LN2_HI, -hi[l]));
    }
    let degree = T::TAYLOR.len() - 1;
    let mut p = [T::TAYLOR[degree]; L];
    for &c in T::TAYLOR[..degree].iter().rev() {
        for l in 0..L {
            p[l] = p[l].mul_add(r[l], c);
        }
    }
    for l in 0..L {
        let g = t[l].mul_add(b1[l], T::CHEB[0] - b2[l]);
        let lo = x[l].mul_add(x[l], -hi[l]);
        p[l] = p[l] * T::pow2(big[l]) * (T::one() - lo) * g;
    }
    p
}

/// erfc(x) for x >= 0 (f64: relative error below 5.2e-15 on [0, 12], x clamped at 26 where erfc is 1e-296;
/// f32: ~1e-7, clamped at 9 where erfc is 4e-37).
#[inline(always)]
pub fn erfc<T: Lane>(x: T) -> T {
    let x = x.min(T::CLAMP);
    let q = T::one() / (x + T::of(K));
    scaled(&[x], &[q])[0] * q
}

pub fn erfc_f64(x: f64) -> f64 {
    erfc(x)
}

pub fn erfc_f32(x: f32) -> f32 {
    erfc(x)
}

/// erfc(alpha r) / r of L lanes of r^2, with one division per lane (for 1 / (K + x) and 1 / r together).
#[inline(always)]
pub fn erfc_over_r<T: Lane, const L: usize>(alpha: T, r2: &[T; L]) -> [T; L] {
    let (mut x, mut inv, mut q) = ([T::zero(); L], [T::zero(); L], [T::zero(); L]);
    for l in 0..L {
        let r = r2[l].sqrt();
        x[l] = (alpha * r).min(T::CLAMP);
        inv[l] = T::one() / ((x[l] + T::of(K)) * r);
        q[l] = inv[l] * r;
    }
    let mut s = scaled(&x, &q);
    for l in 0..L {
        s[l] = s[l] * inv[l];
    }
    s
}

/// 1/k! for k = 0..=13.
const INV_FACT: [f64; 14] = {
    let mut c = [1.0; 14];
    let mut k = 1;
    while k < 14 {
        c[k] = c[k - 1] / k as f64;
        k += 1;
    }
    c
};
