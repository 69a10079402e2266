//! Compile every `.cu` file of the crate with NVRTC, exactly as the GPU layer does at run time. Needs libnvrtc
//! (the `nvidia-cuda-nvrtc` wheel gives it without a GPU) but no device, so a broken kernel fails CI.
//! Without libnvrtc the test is skipped, unless QMC_REQUIRE_NVRTC is set (as CI sets it).

use kernels::gpu;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn cu_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            cu_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "cu") {
            found.push(path);
        }
    }
}

#[test]
fn every_cu_file_compiles_for_hopper() {
    if !gpu::nvrtc_available() {
        assert!(std::env::var("QMC_REQUIRE_NVRTC").is_err(), "QMC_REQUIRE_NVRTC is set but libnvrtc is not loadable");
        eprintln!("SKIPPED: libnvrtc not found (pip install nvidia-cuda-nvrtc==13.0.* and add its lib folder to LD_LIBRARY_PATH)");
        return;
    }
    let mut files = Vec::new();
    cu_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(!files.is_empty());
    // (what, module, source, arch): every file for both architectures; the prelude alone (the copy kernel of the
    // bandwidth ceiling); a module the GPU layer builds from several files, whole; one built with a define
    let mut jobs: Vec<(String, String, String, &'static str)> = vec![];
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        for arch in [gpu::arch_name(9, 0), gpu::arch_name(8, 0)] {
            jobs.push((f.display().to_string(), name.clone(), src.clone(), arch));
        }
    }
    jobs.push(("the prelude alone".into(), "qmc_common".into(), String::new(), gpu::arch_name(9, 0)));
    for arch in [gpu::arch_name(9, 0), gpu::arch_name(8, 0)] {
        jobs.push(("the solid module (draws.cu and solid.cu)".into(), "solid".into(), kernels::solid::gpu::SRC.into(), arch));
    }
    // the lattice kernel with W off chip (its own module: lattice.cu LATTICE_W_OFF_CHIP), for Hopper
    jobs.push(("lattice.cu with W off chip".into(), "lattice_w_off_chip".into(), kernels::lattice::gpu::SRC_W_OFF_CHIP.into(), gpu::arch_name(9, 0)));
    // NVRTC compiles separate programs concurrently: one job a core (about 100 s one after another on the 2-core CI)
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(jobs.len());
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut failed = vec![];
                    while let Some((what, module, src, arch)) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                        match gpu::compile(module, src, arch) {
                            Ok(_) => eprintln!("compiled {what} for {arch}"),
                            Err(e) => failed.push(format!("{what} does not compile for {arch}: {e}")),
                        }
                    }
                    failed
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_broken_kernel_reports_the_nvrtc_log() {
    if !gpu::nvrtc_available() {
        eprintln!("SKIPPED: libnvrtc not found");
        return;
    }
    let err = gpu::compile("broken", "extern \"C\" __global__ void k() { undeclared = 1; }", gpu::arch_name(9, 0))
        .unwrap_err()
        .to_string();
    assert!(err.contains("broken") && err.contains("undeclared"), "{err}");
}

#[test]
fn nvrtc_reports_its_version() {
    if !gpu::nvrtc_available() {
        assert!(std::env::var("QMC_REQUIRE_NVRTC").is_err(), "QMC_REQUIRE_NVRTC is set but libnvrtc is not loadable");
        eprintln!("SKIPPED: libnvrtc not found");
        assert_eq!(gpu::nvrtc_version(), None);
        return;
    }
    let v = gpu::nvrtc_version().expect("a loadable NVRTC says its version");
    let (major, minor) = v.split_once('.').expect("major.minor");
    assert!(major.parse::<u32>().unwrap() >= 12 && minor.parse::<u32>().is_ok(), "{v}");
}

/// Every module the GPU layer builds, compiled to PTX exactly as at run time, written to $QMC_PTX_DUMP/<module>.ptx:
/// `QMC_PTX_DUMP=dir cargo test --release -p kernels --test nvrtc -- --ignored ptx_of_every_module`, then diff two
/// trees' dumps to see whether a change to the device code changes what the GPU runs.
#[test]
#[ignore]
fn ptx_of_every_module() {
    let Ok(dir) = std::env::var("QMC_PTX_DUMP") else { return };
    assert!(gpu::nvrtc_available(), "QMC_PTX_DUMP is set but libnvrtc is not loadable");
    let dir = PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let modules: [(&str, &str); 13] = [
        ("qmc_common", ""),
        ("atomic", kernels::atomic::gpu::SRC),
        ("bspline", kernels::bspline::gpu::SRC),
        ("determinant", kernels::determinant::gpu::SRC),
        ("ewald", kernels::ewald::gpu::SRC),
        ("gemm", kernels::gemm::gpu::SRC),
        ("jastrow", kernels::jastrow::gpu::SRC),
        ("lattice", kernels::lattice::gpu::SRC),
        ("planewave", kernels::planewave::gpu::SRC),
        ("pseudopotential", kernels::pseudopotential::gpu::SRC),
        ("qmc", kernels::qmc::gpu::SRC),
        ("solid", kernels::solid::gpu::SRC),
        ("solid_conditioning", kernels::solid::conditioning::SRC),
    ];
    for (name, src) in modules {
        let ptx = gpu::compile(name, src, gpu::arch_name(9, 0)).unwrap_or_else(|e| panic!("{name}: {e}"));
        std::fs::write(dir.join(format!("{name}.ptx")), ptx.to_src()).unwrap();
    }
}
