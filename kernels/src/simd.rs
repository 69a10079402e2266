//! Run-time choice of the x86 vector instruction set for the hot loops of the CPU kernels.
//!
//! The release binary is built for baseline x86-64 (so it runs on any host, with no hidden `target-cpu=native`),
//! which would leave a benchmark's CPU side on 128-bit SSE2. Kernels instead wrap their inner function in
//! [`dispatch!`]: it is compiled three times (AVX-512, AVX2+FMA, baseline) and the best the CPU supports is called.
//! The instruction set used is recorded (`isa()`), so a comparison names what the CPU side ran.
//!
//! Only code inlined into the body gets the chosen set. An array's `.map` (`[0, 1, 2].map(|d| ..)`) is not: core's
//! `try_map` stays out of line, compiled for baseline x86-64, with whatever the closure does (a dot product in SSE2,
//! a rounding as a call to libm's `roundf`: 16% of the Jastrow ratio's samples before it was written out). In a hot
//! body, write such arrays out; `objdump -d` of the clones (`..::avx512`) lists any `try_map` they still call.

/// The environment variable that lowers the instruction set: `QMC_SIMD=avx2` times an AVX-512 machine's CPU side as
/// an AVX2-only core would run it (the code an older or smaller server gets), `QMC_SIMD=baseline` as plain x86-64. It
/// can only lower: asking for what the CPU lacks is an error, not a silent fallback.
pub const SIMD_VAR: &str = "QMC_SIMD";

/// The instruction sets, best first.
const ORDER: [&str; 3] = ["avx512", "avx2", "baseline"];

/// The best instruction set the CPU supports.
pub fn detected() -> &'static str {
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

/// The set to run: `detected`, or `asked` (the variable's value) where it names one no better than it.
pub fn choose(detected: &'static str, asked: Option<&str>) -> Result<&'static str, String> {
    let Some(asked) = asked.map(str::trim).filter(|a| !a.is_empty()) else { return Ok(detected) };
    let rank = |name: &str| ORDER.iter().position(|&o| o == name);
    let want = rank(asked).ok_or_else(|| format!("{SIMD_VAR}={asked:?}: not an instruction set; expected one of {}", ORDER.join(", ")))?;
    if want < rank(detected).unwrap_or(ORDER.len()) {
        return Err(format!("{SIMD_VAR}={asked}: this CPU supports {detected} at best; the variable can only lower the instruction set"));
    }
    Ok(ORDER[want])
}

/// The instruction set the environment asks for on this CPU: the error says what is wrong with the variable. Programs
/// call it before they run anything (`harness::cli::main_with`), so [`isa`] never meets a bad value.
pub fn from_env() -> Result<&'static str, String> {
    match std::env::var(SIMD_VAR) {
        Ok(v) => choose(detected(), Some(&v)),
        Err(std::env::VarError::NotPresent) => Ok(detected()),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{SIMD_VAR} is not valid text")),
    }
}

/// Vector instruction set of the CPU kernels on this machine: the best the CPU supports, or the lower one `QMC_SIMD`
/// names. Chosen once, at the first call.
pub fn isa() -> &'static str {
    static CHOSEN: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    CHOSEN.get_or_init(|| from_env().unwrap_or_else(|e| panic!("{e}")))
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
                // SAFETY: the CPU supports the features (isa() never names more than detected).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variable_only_lowers_the_instruction_set() {
        assert_eq!(choose("avx512", None), Ok("avx512"));
        assert_eq!(choose("avx512", Some(" ")), Ok("avx512"));
        assert_eq!(choose("avx512", Some("avx2")), Ok("avx2"));
        assert_eq!(choose("avx512", Some("baseline")), Ok("baseline"));
        assert_eq!(choose("avx2", Some("avx2")), Ok("avx2"));
        let up = choose("avx2", Some("avx512")).unwrap_err();
        assert!(up.contains("supports avx2 at best"), "{up}");
        let up = choose("baseline", Some("avx2")).unwrap_err();
        assert!(up.contains("supports baseline at best"), "{up}");
        let bad = choose("avx512", Some("sse9")).unwrap_err();
        assert!(bad.starts_with("QMC_SIMD=\"sse9\"") && bad.contains("avx512, avx2, baseline"), "{bad}");
    }
}
