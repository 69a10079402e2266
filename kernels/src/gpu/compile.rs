//! NVRTC compilation, in one place: the options every kernel is built with and the common prelude (with the defines
//! generated from the host's one source of the numbers the device maths compare against, `crate::maths`).
//!
//! Kernels are compiled at run time for the device's compute capability. IEEE division and square root, no
//! fast-math, no flush-to-zero: the suite measures accurate kernels, and any relaxation would be a named variant.
//! These functions need libnvrtc but no GPU, so CI compiles every `.cu` file with them.

use super::GpuError;
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

/// Text placed before every kernel source (after `crate::maths::prelude_defines`): the helpers and device maths
/// shared by the `.cu` files.
pub const PRELUDE: &str = include_str!("../common.cuh");

/// The compile options, as recorded in every GPU record.
pub const OPTIONS_TEXT: &str = "nvrtc -arch=compute_XY --std=c++17 -prec-div=true -prec-sqrt=true -ftz=false -fmad=true";

/// Virtual architecture name for a compute capability, e.g. (9, 0) -> "compute_90".
pub fn arch_name(major: i32, minor: i32) -> &'static str {
    // CompileOptions wants a &'static str; the set of real architectures is small, so leak once per value.
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashMap<(i32, i32), &'static str>>> = OnceLock::new();
    let mut map = NAMES.get_or_init(Default::default).lock().unwrap();
    map.entry((major, minor))
        .or_insert_with(|| Box::leak(format!("compute_{major}{minor}").into_boxed_str()))
}

/// Is libnvrtc loadable on this machine?
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to dlopen the library; no symbol is called.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The version of the NVRTC library this process loads ("13.0"), or None where it cannot be loaded. Records carry it:
/// the PTX a kernel runs is NVRTC's, so a different NVRTC can change the timings.
pub fn nvrtc_version() -> Option<String> {
    if !nvrtc_available() {
        return None;
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: libnvrtc is loadable (checked above); both pointers are to live locals.
    let r = unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
    (r == cudarc::nvrtc::sys::nvrtcResult::NVRTC_SUCCESS).then(|| format!("{major}.{minor}"))
}

/// Compile `src` (with the prelude) to PTX for `arch`.
pub fn compile(module: &str, src: &str, arch: &'static str) -> Result<Ptx, GpuError> {
    if !nvrtc_available() {
        return Err(GpuError::NoNvrtc);
    }
    let opts = CompileOptions {
        ftz: Some(false),
        prec_sqrt: Some(true),
        prec_div: Some(true),
        fmad: Some(true),
        use_fast_math: Some(false),
        arch: Some(arch),
        options: vec!["--std=c++17".into()],
        name: Some(format!("{module}.cu")),
        ..Default::default()
    };
    let full = format!("{}#line 1 \"common.cuh\"\n{PRELUDE}\n#line 1 \"{module}.cu\"\n{src}", crate::maths::prelude_defines());
    cudarc::nvrtc::compile_ptx_with_opts(full, opts).map_err(|e| match e {
        CompileError::CompileError { log, .. } => {
            GpuError::Compile { module: module.to_string(), log: log.to_string_lossy().into_owned() }
        }
        other => GpuError::Compile { module: module.to_string(), log: format!("{other:?}") },
    })
}
