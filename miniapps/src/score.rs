//! The scoring workload, version v1: what `qmcbench suite --score` runs and `qmcbench score` requires, case by case.
//! Each kernel's command line is its `suite(Level::Score)`; this module lists the cases those lines must produce
//! (the suite checks its own records against it at the end) and says why each is there.
//!
//! Every case runs on the GPU and on all cores of the host CPU (variants `gpu` and `cpu`; the plain reference only
//! checks, it is not timed), at sizes that fit one GPU of 40 GB (the largest, the B-spline table in double, is
//! 5 GB), in the precisions a user runs: double and mixed (QMCPACK's two builds; single storage and evaluation with
//! double accumulation, inversion and sums), and for the Gaussian-basis GEMM double and single (paper 004's choice;
//! its "mixed" is a hand-written kernel no code would call in place of the library). Repetitions per case: 5 (the
//! mini-apps cap the slow ones: the solid at 3, the determinant inversion at 5, a CPU GEMM over 20 GFLOP at 1).
//!
//! | kernel | cases | why |
//! | --- | --- | --- |
//! | `bspline` | VGL, 64^3 grid, 2048 orbitals, 1024 walkers | the orbital evaluation of every move; a 4.9 GB (double) table read at random: bandwidth-bound (90% of the copy bandwidth on the H100 GPU) |
//! | `determinant` | a 128-move loop at N = 1024 electrons per spin, 32 walkers, Sherman-Morrison (delay 1) and delayed rank-16 updates; the LU inversion | rank-1 updates stream the inverse (bandwidth); delayed updates are GEMMs (arithmetic); inversion is LAPACK (cuSOLVER, faer) |
//! | `jastrow` | CASINO's u (polynomial) and p (plane-wave) two-body terms, 1030 electrons, 32 walkers: full VGL, move ratios, accepts | the other half of a move's work; arithmetic-bound (the p term's sines and cosines above all) |
//! | `ewald` | fcc electron gas, 678 electrons, 64 walkers: full energy and one-electron move | the Coulomb sum of periodic systems; arithmetic-bound (erfc, plane waves) |
//! | `pseudopotential` | 128-atom carbon cell (512 electrons), 256 walkers, 12-point quadrature with the Jastrow ratio | the nonlocal energy of every measurement; arithmetic-bound |
//! | `gemm` | Gaussian-basis orbitals of HMX (152 electrons, 516 functions), 1024 walkers: the basis and the library orbital GEMM; a 4096 square library GEMM | molecular orbitals as a product (paper 004); the square GEMM is the machine's arithmetic rate |
//! | `solid` | whole DMC steps of the synthetic carbon solid, 512 electrons, 512 walkers | the whole QMC step (paper 000 Fig. 3): every kernel above in one loop, with branching |
//!
//! Left out: `lattice` (the t-J model is a lattice model, not the continuum QMC whose kernels the rest of the
//! workload are) and `qmc` (the driver's runs are timed once whole, their length set by the error bars they need,
//! and its atoms do not fill a GPU; the solid is the whole step).
//!
//! How long: each case estimated from the committed H100-host records (`results/nvidia-h100-80gb-hbm3`: medians of
//! the same or the nearest sizes, times 5 repetitions and 2 warm-ups, plus the setup and checks seen as the gaps
//! between the records' time stamps in the full-suite runs), in seconds of one run on the H100 host (16 cores):
//!
//! | kernel | s | from |
//! | --- | --- | --- |
//! | `bspline` | 7 | table building about 1.5 ms per orbital and precision (the 64^3 sweeps took 19-31 s for 256+1024+4096 orbitals in 3 precisions); VGL at 1024 orbitals 7.8 ms (CPU), 0.2 ms (GPU), twice that at 2048 |
//! | `determinant` | 12 | CPU moves 0.165 / 0.042 s (double, delay 1 / 16), 0.070 / 0.027 s (f32 storage), inversion 0.23 / 0.17 s; GPU 26 / 6 ms and 91 ms; 7 runs each, then the checks |
//! | `jastrow` | 8 | p term CPU VGL 0.30 s (double), 0.20 s (f32), ratios and accepts 7-18 ms; u term 57 ms; GPU 0.2-9 ms; the 1030-electron blocks of the full suite took 4-5 s (p) and 1-2 s (u) |
//! | `ewald` | 3 | the 678-electron block of the full suite took 1-2 s in three precisions |
//! | `pseudopotential` | 8 | CPU 0.33-0.44 s at 128 atoms and 256 walkers, 7 runs per precision, 12 ms on the GPU; the reference walker |
//! | `gemm` | 12 | CPU basis about 0.3 s (one core: 0.47 s at 128 walkers), 7 runs per precision; CPU products 0.11-0.29 s, one repetition and 2 warm-ups; the HMX and square blocks of the full suite 4-5 s and 2 s |
//! | `solid` | 28 | 512 electrons: CPU 0.39 s a step (32 walkers), 5 steps plus building and the reference check about 4 s a precision; GPU trajectory check and the 512-walker engine 9-11 s a precision |
//! | NVRTC | 25 | `compile_s` of the records: solid 8-13 s, jastrow 5 s, determinant 2 s, ewald 1.3 s, gemm 1.2 s, the others under 3 s |
//! | one run | about 105 | three runs (`scripts/gpu-host.sh score`) about 5.3 minutes |
//!
//! A new workload version is a new list (and new presets): records of different versions are never compared.

use harness::score::{CaseSpec, Workload};

/// The workload `qmcbench suite --score` runs and `qmcbench score` scores.
pub const WORKLOAD: Workload = Workload { version: "v1", cases: CASES };

/// Timed repetitions of every case (the mini-apps cap the slow ones).
pub const REPS: usize = 5;

const fn case(kernel: &'static str, op: &'static str, precision: &'static str, sizes: &'static [(&'static str, u64)], params: &'static [(&'static str, &'static str)]) -> CaseSpec {
    CaseSpec { kernel, op, precision, sizes, params }
}

const BSPLINE: &[(&str, u64)] = &[("grid", 64), ("orbitals", 2048), ("walkers", 1024)];
const DET: &[(&str, u64)] = &[("n", 1024), ("walkers", 32)];
const JASTROW: &[(&str, u64)] = &[("electrons", 1030), ("walkers", 32)];
const EWALD: &[(&str, u64)] = &[("electrons", 678), ("walkers", 64)];
const PP: &[(&str, u64)] = &[("atoms", 128), ("walkers", 256)];
const HMX: &[(&str, u64)] = &[("walkers", 1024)];
const SQUARE: &[(&str, u64)] = &[("m", 4096), ("k", 4096), ("n", 4096)];
const SOLID: &[(&str, u64)] = &[("electrons", 512), ("walkers", 512)];

const CASES: &[CaseSpec] = &[
    case("bspline", "vgl", "double", BSPLINE, &[("basis", "bspline")]),
    case("bspline", "vgl", "mixed", BSPLINE, &[("basis", "bspline")]),
    case("determinant", "moves", "double", DET, &[("delay", "1")]),
    case("determinant", "moves", "double", DET, &[("delay", "16")]),
    case("determinant", "invert", "double", DET, &[]),
    case("determinant", "moves", "mixed", DET, &[("delay", "1")]),
    case("determinant", "moves", "mixed", DET, &[("delay", "16")]),
    case("determinant", "invert", "mixed", DET, &[]),
    case("jastrow", "vgl", "double", JASTROW, &[("term", "u")]),
    case("jastrow", "ratio", "double", JASTROW, &[("term", "u")]),
    case("jastrow", "accept", "double", JASTROW, &[("term", "u")]),
    case("jastrow", "vgl", "mixed", JASTROW, &[("term", "u")]),
    case("jastrow", "ratio", "mixed", JASTROW, &[("term", "u")]),
    case("jastrow", "accept", "mixed", JASTROW, &[("term", "u")]),
    case("jastrow", "vgl", "double", JASTROW, &[("term", "p")]),
    case("jastrow", "ratio", "double", JASTROW, &[("term", "p")]),
    case("jastrow", "accept", "double", JASTROW, &[("term", "p")]),
    case("jastrow", "vgl", "mixed", JASTROW, &[("term", "p")]),
    case("jastrow", "ratio", "mixed", JASTROW, &[("term", "p")]),
    case("jastrow", "accept", "mixed", JASTROW, &[("term", "p")]),
    case("ewald", "energy", "double", EWALD, &[("lattice", "fcc")]),
    case("ewald", "move", "double", EWALD, &[("lattice", "fcc")]),
    case("ewald", "energy", "mixed", EWALD, &[("lattice", "fcc")]),
    case("ewald", "move", "mixed", EWALD, &[("lattice", "fcc")]),
    case("pseudopotential", "energy", "double", PP, &[("jastrow", "on")]),
    case("pseudopotential", "energy", "mixed", PP, &[("jastrow", "on")]),
    case("gemm", "basis", "double", HMX, &[("molecule", "hmx")]),
    case("gemm", "basis", "single", HMX, &[("molecule", "hmx")]),
    case("gemm", "gemm", "double", HMX, &[("molecule", "hmx"), ("algo", "blas-f64")]),
    case("gemm", "gemm", "single", HMX, &[("molecule", "hmx"), ("algo", "blas-f32")]),
    case("gemm", "gemm", "double", SQUARE, &[("molecule", "square"), ("algo", "blas-f64")]),
    case("gemm", "gemm", "single", SQUARE, &[("molecule", "square"), ("algo", "blas-f32")]),
    case("solid", "dmc", "double", SOLID, &[]),
    case("solid", "dmc", "mixed", SOLID, &[]),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{self, Level};

    #[test]
    fn every_kernel_of_the_workload_and_no_other_has_a_preset_that_parses() {
        for k in registry::kernels() {
            let flags = (k.suite)(Level::Score);
            assert_eq!(WORKLOAD.kernels().contains(&k.name), !flags.is_empty(), "{}: a preset exactly for the workload's kernels", k.name);
            // a mistyped flag would otherwise show first on the GPU host
            (k.parses)(flags).unwrap();
        }
        assert!((registry::find("bspline").unwrap().parses)(&["--orbitals", "many"]).is_err(), "the check can fail");
    }

    #[test]
    fn every_case_is_named_once() {
        let labels: Vec<String> = WORKLOAD.cases.iter().map(|c| c.label()).collect();
        let mut unique = labels.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), labels.len(), "{labels:?}");
    }
}
