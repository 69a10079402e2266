//! Run-time choice of the x86 vector instruction set for the hot loops of the CPU kernels.
//!
//! The release binary is built for baseline x86-64 (so it runs on any host, with no hidden `target-cpu=native`),
//! which would leave a benchmark's CPU side on 128-bit SSE2. Kernels instead wrap their inner function in
//! [`dispatch!`]: it is compiled three times (AVX-512, AVX2+FMA, baseline) and the best the CPU supports is called.
//! The instruction set used is recorded (`isa()`), so a comparison names what the CPU side ran.

/// Vector instruction set of the CPU kernels on this machine.
pub fn isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("fma") {
            return "avx512";
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            return "avx2";
        }
    }
    "baseline"
}

/// `dispatch!(body)` runs `body` (an expression calling `#[inline(always)]` code) compiled for the best vector ISA.
#[macro_export]
macro_rules! dispatch {
    ($body:expr) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx512f,avx2,fma")]
            #[inline(never)]
            unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            #[target_feature(enable = "avx2,fma")]
            #[inline(never)]
            unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
                f()
            }
            // The closure must be inlined into the target-feature function, or its body (the hot loop) is compiled
            // for the baseline ISA and merely called from there: hence #[inline(always)] on the closure itself.
            match $crate::simd::isa() {
                // SAFETY: the CPU supports the features (checked by isa()).
                "avx512" => unsafe { avx512(#[inline(always)] || $body) },
                // SAFETY: as above.
                "avx2" => unsafe { avx2(#[inline(always)] || $body) },
                _ => $body,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $body
        }
    }};
}
