//! Branch-free erfc for the vector loops of the real-space sum (libm's erfc is a scalar call with branches, which
//! keeps the loop scalar). erfc(x) = e^{-x^2} g(t) / (K + x) with t = (x - K) / (x + K), K = 4: g is smooth on the
//! whole of x >= 0 (t in [-1, 1)), from K at x = 0 to 1/sqrt(pi) at infinity, so one Chebyshev series in t gives a
//! uniform relative error. The coefficients were fitted (at 64 Chebyshev nodes, with erfcx evaluated in 60+ digit
//! decimal arithmetic) for this project; 22 terms reach 5e-15 relative (the fit's noise floor) and 13 terms ~1e-8. e^{-x^2} uses x^2 split into
//! its rounded value and the exact remainder (by a fused multiply-add), so the rounding of x^2 (relative 1e-16 times
//! x^2) does not show. Fused multiply-adds throughout: the callers compile these for AVX2/AVX-512 with FMA
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

/// erfc(x) for x >= 0 in f64 (relative error below 5.2e-15 on [0, 12]; x is clamped at 26, where erfc is 1e-296).
#[inline(always)]
pub fn erfc_f64(x: f64) -> f64 {
    let x = x.min(26.0);
    let q = 1.0 / (x + K);
    scaled_f64(x, q) * q
}

/// erfc(alpha r) / r from r^2 in f64, with one division (for 1 / (K + x) and 1 / r together).
#[inline(always)]
pub fn erfc_over_r_f64(alpha: f64, r2: f64) -> f64 {
    let r = r2.sqrt();
    let x = (alpha * r).min(26.0);
    let inv = 1.0 / ((x + K) * r);
    scaled_f64(x, inv * r) * inv
}

/// erfc(x) (K + x) = e^{-x^2} g(t) for x in [0, 26], given q = 1 / (K + x).
#[inline(always)]
fn scaled_f64(x: f64, q: f64) -> f64 {
    let t = (x - K) * q;
    let t2 = t + t;
    let (mut b1, mut b2) = (0.0, 0.0);
    for &c in C64[1..].iter().rev() {
        let b = t2.mul_add(b1, c - b2);
        b2 = b1;
        b1 = b;
    }
    let g = t.mul_add(b1, C64[0] - b2);
    // x^2 = hi + lo exactly (the fused multiply-add gives the rounding error of x * x)
    let hi = x * x;
    let lo = x.mul_add(x, -hi);
    exp_neg_f64(hi) * (1.0 - lo) * g
}

/// e^{-y} for 0 <= y <= 700: y ln2-reduced by rounding with a magic constant (no float-to-int conversion, which
/// AVX-512F lacks for 64-bit integers), a degree-13 Taylor polynomial, and 2^n built in the exponent bits.
#[inline(always)]
fn exp_neg_f64(y: f64) -> f64 {
    const MAGIC: f64 = 6755399441055744.0; // 1.5 * 2^52: adding it rounds to an integer held in the low bits
    const LN2_HI: f64 = 0.693_147_180_369_123_816_49; // 32 significant bits, so n * LN2_HI is exact
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let big = -y * std::f64::consts::LOG2_E + MAGIC;
    let n = big - MAGIC;
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, -y));
    let mut p = INV_FACT[13];
    for &c in INV_FACT[..13].iter().rev() {
        p = p.mul_add(r, c);
    }
    p * f64::from_bits(big.to_bits().wrapping_add(1023) << 52)
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

/// erfc(x) for x >= 0 in f32 (relative error ~1e-7; x is clamped at 9, where erfc is 4e-37).
#[inline(always)]
pub fn erfc_f32(x: f32) -> f32 {
    let x = x.min(9.0);
    let q = 1.0 / (x + K as f32);
    scaled_f32(x, q) * q
}

/// erfc(alpha r) / r from r^2 in f32, with one division.
#[inline(always)]
pub fn erfc_over_r_f32(alpha: f32, r2: f32) -> f32 {
    let r = r2.sqrt();
    let x = (alpha * r).min(9.0);
    let inv = 1.0 / ((x + K as f32) * r);
    scaled_f32(x, inv * r) * inv
}

/// erfc(x) (K + x) for x in [0, 9] in f32, given q = 1 / (K + x).
#[inline(always)]
fn scaled_f32(x: f32, q: f32) -> f32 {
    let t = (x - K as f32) * q;
    let t2 = t + t;
    let (mut b1, mut b2) = (0.0f32, 0.0f32);
    for &c in C32[1..].iter().rev() {
        let b = t2.mul_add(b1, c - b2);
        b2 = b1;
        b1 = b;
    }
    let g = t.mul_add(b1, C32[0] - b2);
    let hi = x * x;
    let lo = x.mul_add(x, -hi);
    exp_neg_f32(hi) * (1.0 - lo) * g
}

/// e^{-y} for 0 <= y <= 85 in f32, as [`exp_neg_f64`] with a degree-7 polynomial.
#[inline(always)]
fn exp_neg_f32(y: f32) -> f32 {
    const MAGIC: f32 = 12582912.0; // 1.5 * 2^23
    const LN2_HI: f32 = 0.693_145_751_953_125;
    const LN2_LO: f32 = 1.428_606_765_330_187e-6;
    let big = -y * std::f32::consts::LOG2_E + MAGIC;
    let n = big - MAGIC;
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, -y));
    const INV: [f32; 8] = [1.0, 1.0, 1.0 / 2.0, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];
    let mut p = INV[7];
    for &c in INV[..7].iter().rev() {
        p = p.mul_add(r, c);
    }
    p * f32::from_bits(big.to_bits().wrapping_add(127) << 23)
}

/// erfc in the precision S (f32 or f64), dispatched at compile time.
#[inline(always)]
pub fn erfc<S: crate::Real>(x: S) -> S {
    if std::mem::size_of::<S>() == 4 {
        S::of(erfc_f32(x.f64() as f32) as f64)
    } else {
        S::of(erfc_f64(x.f64()))
    }
}

/// erfc(alpha r) / r from r^2 in the precision S.
#[inline(always)]
pub fn erfc_over_r<S: crate::Real>(alpha: S, r2: S) -> S {
    if std::mem::size_of::<S>() == 4 {
        S::of(erfc_over_r_f32(alpha.f64() as f32, r2.f64() as f32) as f64)
    } else {
        S::of(erfc_over_r_f64(alpha.f64(), r2.f64()))
    }
}
