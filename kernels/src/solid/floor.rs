//! The floor of one walker step, kernel class by kernel class: the fewest bytes each class must move and the flops
//! it must do, and the time they take at the machine's measured copy bandwidth and GEMM rate (the larger of the
//! two: a roofline with the best dense rate as its flop ceiling). Beside the measured time of each class it says how
//! far the step is from its limit and which class holds it.
//!
//! What is counted (per walker step, n electrons per spin, `stride` orbitals padded, e bytes per stored element):
//! - orbitals: the VGL spline at every proposal and again at every electron in the measurement (64 table rows of
//!   `stride` each per point, `bspline::flops`); plane waves read no table: their five output rows written per
//!   point (in f64) and `planewave::flops`;
//! - determinant: per move the gradient, ratio and gradient-ratio dots against the inverse row (or, delayed, its
//!   column against the pending moves: 3 slot n more), per accept Sherman-Morrison (4 n^2 flops, the spin's inverse
//!   read and written) or, per window of k moves, the apply (4 k n^2 flops, the inverse read twice and written once
//!   in its stored precision: in double by cuBLAS's W = V t^T and t -= W^T Y, in mixed by solid.cu's delayed_w and
//!   delayed_update on the f32 entries), the measurement's 4 dots per electron, and an f64 re-inversion
//!   (4 n^3 flops per spin) every `recompute` steps;
//! - Jastrow: 3 passes over all electrons and ions per electron (both ends of a move, the measurement), 12 flops a
//!   distance and the functor within its cutoff; the positions once (they stay in cache);
//! - Coulomb: the Ewald energy (`ewald::Ewald::energy_flops`, `energy_bytes`);
//! - pseudopotential: the expected jobs' quadrature points (`pseudopotential::flops`, `bytes`); nothing without ions.

use super::{expected_jobs, Class, Orbitals, Solid};
use crate::bspline::{self, Output};
use crate::gemm::{Operands, Shape};
use crate::pseudopotential::{self as pp, Jastrow};
use crate::planewave;
use std::time::Instant;

/// Bytes and flops of one walker step per class (`Class as usize`), for stored elements of `e` bytes, acceptance
/// `acc`, delay `k` (1: Sherman-Morrison) and a re-inversion every `recompute` steps (0: never).
pub fn class_work(sys: &Solid, e: usize, acc: f64, k: usize, recompute: usize) -> [(f64, f64); 7] {
    let s = &sys.setup;
    let (ne, n, ni, st) = (s.electrons as f64, s.per_spin() as f64, s.ion_count() as f64, s.table.stride as f64);
    let (ef, row) = (e as f64, st * e as f64);
    let mut w = [(0.0, 0.0); 7];
    w[Class::Orbitals as usize] = match &sys.orbitals {
        Orbitals::Table => (2.0 * ne * 64.0 * row, 2.0 * ne * bspline::flops(1, s.per_spin(), Output::Vgl)),
        Orbitals::PlaneWaves(_) => (2.0 * ne * 5.0 * st * 8.0, 2.0 * ne * planewave::flops(1, s.per_spin())),
        Orbitals::Atomic(o) => (2.0 * ne * 5.0 * st * 8.0, 2.0 * ne * o.flops(1)),
    };
    // per move: 3 gradient dots, 4 ratio dots (the rows read: inverse row, 3 gradient rows, 4 proposal rows)
    let mut det = (ne * 8.0 * row, ne * 14.0 * st);
    if k <= 1 {
        det.0 += acc * ne * 3.0 * n * n * ef;
        det.1 += acc * ne * 4.0 * n * n;
    } else {
        let kf = k as f64;
        let windows = ne / kf;
        // the pending moves: about (k - 1) / 2 slots on average, 3 passes of n over them, rows in the stored precision
        // (a new row rounded to it, a row of the stored inverse: exact; the GPU keeps them so, the CPU in f64)
        det.0 += ne * 3.0 * (kf - 1.0) / 2.0 * n * ef;
        det.1 += ne * 6.0 * (kf - 1.0) / 2.0 * n;
        det.0 += windows * 3.0 * n * n * ef;
        det.1 += windows * (4.0 * kf * n * n + 2.0 * kf * kf * n);
    }
    // the measurement: 4 dots per electron, gradient rows written
    det.0 += ne * 8.0 * row;
    det.1 += ne * 8.0 * st;
    if recompute > 0 {
        det.0 += 2.0 * 3.0 * n * n * 8.0 / recompute as f64;
        det.1 += 2.0 * 4.0 * n * n * n / recompute as f64;
    }
    w[Class::Determinant as usize] = det;
    let vol: f64 = s.cell.iter().product();
    let cutoff = sys.jastrow().pair[0].cutoff;
    // (open boundaries: no volume, and every pair inside)
    let inside = if vol > 0.0 { (4.0 / 3.0 * std::f64::consts::PI * cutoff.powi(3) / vol).min(1.0) } else { 1.0 };
    w[Class::Jastrow as usize] = (24.0 * (ne + ni), 3.0 * ne * (ne + ni) * (12.0 + inside * Jastrow::PAIR_FLOPS));
    w[Class::Coulomb as usize] = match &sys.coulomb {
        super::Coulomb::Ewald(x) => (x.energy_bytes(e, 8), x.energy_flops()),
        // the positions read once, each pair's terms
        super::Coulomb::Open(o) => (24.0 * ne, o.energy_flops(s.electrons)),
    };
    if sys.has_ions() {
        let jobs = expected_jobs(sys).round() as usize;
        let rows = jobs.min(s.electrons);
        w[Class::Pseudopotential as usize] = (pp::bytes(jobs * s.rule.points(), s.table.bytes(), rows, st as usize * e, s.electrons), pp::flops(s, jobs, rows, 1));
    }
    w
}

/// Seconds of each class's work at `copy` bytes/s and `gemm` flops/s: the larger of its bytes and its flops time.
pub fn floor(work: &[(f64, f64); 7], copy: f64, gemm: f64) -> [f64; 7] {
    work.map(|(b, f)| (b / copy).max(f / gemm))
}

/// Whether a class's floor is its bytes (true) or its flops.
pub fn bytes_bound(work: (f64, f64), copy: f64, gemm: f64) -> bool {
    work.0 / copy >= work.1 / gemm
}

/// f64 GEMM rate of the CPU pool in flops/s: faer on all its threads, square 1024, the best of 5.
pub fn cpu_gemm_rate() -> f64 {
    let shape = Shape::square(1024);
    let ops = Operands::uniform(shape, 7);
    let mut c = vec![0.0f64; shape.m * shape.n];
    let best = (0..6)
        .map(|_| {
            let t = Instant::now();
            crate::gemm::cpu::gemm_blas(&ops.a, &ops.b, &mut c, shape);
            t.elapsed().as_secs_f64()
        })
        .skip(1)
        .fold(f64::INFINITY, f64::min);
    std::hint::black_box(&c);
    2.0 * (shape.m * shape.n * shape.k) as f64 / best
}

/// f64 GEMM rate of the GPU in flops/s: cuBLAS DGEMM, square 4096, the best of 5.
pub fn gpu_gemm_rate(gpu: &std::sync::Arc<crate::gpu::Gpu>) -> Result<f64, crate::gpu::GpuError> {
    use crate::gemm::{gpu::GpuGemm, Algo};
    let shape = Shape::square(4096);
    let mut g = GpuGemm::new(gpu, &Operands::uniform(shape, 7), &[Algo::BlasF64])?;
    g.launch(Algo::BlasF64)?;
    gpu.sync()?;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        g.launch(Algo::BlasF64)?;
        gpu.sync()?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok(2.0 * (shape.m * shape.n * shape.k) as f64 / best)
}
