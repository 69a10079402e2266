//! Criterion micro-benchmarks of the fast CPU kernels at one representative size each, for profiling a change to a
//! kernel's inner loop (`cargo bench -p kernels`). The suite's records (`qmcbench`) remain the measurements of record.

use criterion::{criterion_group, criterion_main, Criterion};
use kernels::bspline::{self as bs, Basis, Grid, Output};

fn bspline(c: &mut Criterion) {
    let grid = Grid::cubic(32, 8.0);
    let t64 = bs::random_table::<f64>(grid, 256, Basis::BSpline, 1);
    let t32 = t64.convert::<f32>();
    let pos = bs::random_positions(64, &grid, 2);
    let mut out64 = vec![0.0f64; 64 * 10 * t64.stride];
    let mut out32 = vec![0.0f32; 64 * 10 * t64.stride];
    let mut g = c.benchmark_group("bspline_vgh_256orb_64walkers");
    g.bench_function("double", |b| b.iter(|| bs::cpu::evaluate::<f64, f64>(&t64, &pos, Output::Vgh, &mut out64)));
    g.bench_function("single", |b| b.iter(|| bs::cpu::evaluate::<f32, f32>(&t32, &pos, Output::Vgh, &mut out32)));
    g.bench_function("mixed", |b| b.iter(|| bs::cpu::evaluate::<f32, f64>(&t32, &pos, Output::Vgh, &mut out64)));
    g.finish();
}

criterion_group!(benches, bspline);
criterion_main!(benches);
