use super::*;

fn checks<A: Copy + Into<f64>>(fast: &[A], reference: &[f64], output: Output, stride: usize, tol: f64) {
    let nc = output.components();
    for (name, range) in output.quantities() {
        let pick = |v: &[f64]| -> Vec<f64> {
            v.chunks(nc * stride).flat_map(|w| w[range.start * stride..range.end * stride].to_vec()).collect()
        };
        let fast: Vec<f64> = fast.iter().map(|&x| x.into()).collect();
        let c = crate::Check::compare(name, &pick(&fast), &pick(reference), tol);
        assert!(c.passed(), "{name}: error {:.3e} over tolerance {:.3e}", c.error, c.tolerance);
    }
}

#[test]
fn weights_partition_unity() {
    for t in [0.0, 0.25, 0.5, 0.999] {
        let (a, da, d2a) = weights(t);
        assert!((a.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        assert!(da.iter().sum::<f64>().abs() < 1e-15);
        assert!(d2a.iter().sum::<f64>().abs() < 1e-14);
    }
}

#[test]
fn cpu_matches_reference_in_every_precision() {
    // odd grid, orbitals not a multiple of the block, points anywhere (also outside the cell: periodic)
    let grid = Grid { n: [5, 6, 7], cell: [2.0, 3.0, 2.5] };
    let t64 = random_table::<f64>(grid, 37, Basis::BSpline, 11);
    let mut pos = random_positions(9, &grid, 12);
    pos[0] = -0.3;
    pos[4] = 7.1;
    for output in [Output::V, Output::Vgl, Output::Vgh] {
        let reference = reference::evaluate(&t64, &pos, output);
        let n = reference.len();
        let mut out = vec![f64::NAN; n];
        cpu::evaluate::<f64, f64>(&t64, &pos, output, &mut out);
        checks(&out, &reference, output, t64.stride, 1e-13);
        let t32 = t64.convert::<f32>();
        let mut out = vec![f32::NAN; n];
        cpu::evaluate::<f32, f32>(&t32, &pos, output, &mut out);
        checks(&out, &reference, output, t64.stride, 1e-5);
        let mut out = vec![f64::NAN; n];
        cpu::evaluate::<f32, f64>(&t32, &pos, output, &mut out);
        checks(&out, &reference, output, t64.stride, 1e-6);
    }
}

#[test]
fn reference_detects_a_wrong_kernel() {
    // A check that cannot fail proves nothing: perturb one coefficient and the comparison must fail.
    let grid = Grid::cubic(6, 1.0);
    let table = random_table::<f64>(grid, 8, Basis::BSpline, 3);
    let pos = random_positions(4, &grid, 4);
    let reference = reference::evaluate(&table, &pos, Output::V);
    let mut bad = table.clone();
    bad.coefs.iter_mut().for_each(|c| *c *= 1.0 + 1e-6);
    let mut out = vec![0.0; reference.len()];
    cpu::evaluate::<f64, f64>(&bad, &pos, Output::V, &mut out);
    let c = crate::Check::compare("value", &out, &reference, 1e-12);
    assert!(!c.passed());
}

#[test]
fn blip_is_a_rescaled_bspline() {
    let grid = Grid::cubic(8, 3.0);
    let waves = [PlaneWave { m: [1, 0, 2], phase: 0.3 }, PlaneWave { m: [0, -1, 1], phase: 1.1 }];
    let pos = random_positions(5, &grid, 9);
    let a = reference::evaluate(&plane_wave_table(grid, &waves, Basis::BSpline), &pos, Output::Vgh);
    let b = reference::evaluate(&plane_wave_table(grid, &waves, Basis::Blip), &pos, Output::Vgh);
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-12);
    }
}

/// Max error of value, gradient and Hessian of the spline of a few plane waves against the waves themselves.
fn plane_wave_errors(points: usize) -> [f64; 3] {
    let grid = Grid { n: [points; 3], cell: [4.0, 4.0, 5.0] };
    let waves = [PlaneWave { m: [1, 2, 0], phase: 0.2 }, PlaneWave { m: [-1, 1, 1], phase: 2.0 }];
    let table = plane_wave_table(grid, &waves, Basis::BSpline);
    let pos = random_positions(40, &grid, 5);
    let mut out = vec![0.0; 40 * 10 * table.stride];
    cpu::evaluate::<f64, f64>(&table, &pos, Output::Vgh, &mut out);
    let mut err = [0.0f64; 3];
    for p in 0..40 {
        for (o, w) in waves.iter().enumerate() {
            let exact = w.vgh(&grid, [pos[3 * p], pos[3 * p + 1], pos[3 * p + 2]]);
            for c in 0..10 {
                let e = (out[(p * 10 + c) * table.stride + o] - exact[c]).abs();
                let q = match c {
                    0 => 0,
                    1..=3 => 1,
                    _ => 2,
                };
                err[q] = err[q].max(e);
            }
        }
    }
    err
}

#[test]
fn spline_of_plane_waves_converges_as_h4() {
    // Interpolation error of a cubic spline: O(h^4) for the value, O(h^3) gradient, O(h^2) second derivatives.
    let coarse = plane_wave_errors(16);
    let fine = plane_wave_errors(32);
    let orders: Vec<f64> = (0..3).map(|q| (coarse[q] / fine[q]).log2()).collect();
    assert!(orders[0] > 3.7, "value converges with order {:.2}, expected 4", orders[0]);
    assert!(orders[1] > 2.7, "gradient converges with order {:.2}, expected 3", orders[1]);
    assert!(orders[2] > 1.7, "hessian converges with order {:.2}, expected 2", orders[2]);
    assert!(fine[0] < 1e-4, "value error {:.2e} at 32 points a side", fine[0]);
}

#[test]
fn gpu_matches_reference_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let grid = Grid { n: [7, 5, 6], cell: [2.0, 2.0, 3.0] };
    let t64 = random_table::<f64>(grid, 70, Basis::Blip, 1);
    let pos = random_positions(3, &grid, 2);
    let reference = reference::evaluate(&t64, &pos, Output::Vgh);
    for per_thread in [1, 2] {
        let mut g = gpu::GpuSpline::<f64, f64>::new(&gpu, &t64, 3, Output::Vgh, per_thread).unwrap();
        g.poison().unwrap();
        g.set_positions(&pos).unwrap();
        g.launch().unwrap();
        checks(&g.outputs().unwrap(), &reference, Output::Vgh, t64.stride, 1e-13);
    }
    let t32 = t64.convert::<f32>();
    for per_thread in [1, 2, 4] {
        let mut g = gpu::GpuSpline::<f32, f32>::new(&gpu, &t32, 3, Output::Vgh, per_thread).unwrap();
        g.poison().unwrap();
        g.set_positions(&pos).unwrap();
        g.launch().unwrap();
        checks(&g.outputs().unwrap(), &reference, Output::Vgh, t64.stride, 1e-4);
    }
}

#[test]
fn stencil_rows_count_shared_rows_once() {
    let g = Grid::cubic(16, 4.0);
    assert_eq!(stencil_rows(&g, &[1.0, 2.0, 3.0]), 64);
    assert_eq!(stencil_rows(&g, &[1.0, 2.0, 3.0, 1.01, 2.01, 3.01]), 64, "same cell: same rows");
    // one cell apart along x: 3 of the 4 x planes are shared
    assert_eq!(stencil_rows(&g, &[1.0, 2.0, 3.0, 1.25, 2.0, 3.0]), 80);
    // a 4^3 grid has 64 rows: any number of points touches all of them, no more
    let small = Grid::cubic(4, 1.0);
    assert_eq!(stencil_rows(&small, &random_positions(50, &small, 3)), 64);
    // 4 x 4 x 6: each point touches 4 of the 6 z planes; many points touch all 96 rows
    let slab = Grid { n: [4, 4, 6], cell: [1.0, 1.0, 1.5] };
    assert_eq!(stencil_rows(&slab, &random_positions(200, &slab, 3)), 96);
}

/// Points sorted by cell with runs of several points in one cell, a run cut by a block's end, lone points, a last
/// block not full, then the same points unsorted: the grouped kernel matches the per-point kernel bit for bit (a
/// point's sums run in the same order whatever run it is in) and the reference, in every precision it serves.
#[test]
fn gpu_grouped_kernel_matches_the_per_point_kernel_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let grid = Grid { n: [7, 5, 6], cell: [2.0, 2.0, 3.0] };
    let t64 = random_table::<f64>(grid, 70, Basis::BSpline, 5);
    let h = [2.0 / 7.0, 2.0 / 5.0, 3.0 / 6.0];
    // points jittered inside chosen cells: 11 in cell (1, 2, 3) (a group of 8 and 3 more), 1 in (4, 0, 5), 5 in
    // (6, 4, 0), 2 in (1, 2, 4): 19 points, the last group not full
    let mut pos = Vec::new();
    let mut jitter = crate::rng::rng(7, 0);
    for (cell, count) in [([1, 2, 3], 11), ([4, 0, 5], 1), ([6, 4, 0], 5), ([1, 2, 4], 2)] {
        for _ in 0..count {
            for d in 0..3 {
                pos.push((cell[d] as f64 + 0.05 + 0.9 * rand::Rng::random::<f64>(&mut jitter)) * h[d]);
            }
        }
    }
    let n = pos.len() / 3;
    let mut shuffled: Vec<f64> = (0..n).rev().flat_map(|p| pos[3 * p..3 * p + 3].to_vec()).collect();
    shuffled.swap(0, 30);
    let t32 = t64.convert::<f32>();
    for output in [Output::V, Output::Vgl] {
        for points in [&pos, &shuffled] {
            let reference = reference::evaluate(&t64, points, output);
            for per_thread in [1, 2] {
                let mut g = gpu::GpuSpline::<f64, f64>::new(&gpu, &t64, n, output, per_thread).unwrap().for_sorted_points().unwrap();
                let plain = evaluated(&mut g, points, false);
                let grouped = evaluated(&mut g, points, true);
                assert!(plain.iter().zip(&grouped).all(|(a, b)| a.to_bits() == b.to_bits()), "{output:?} x{per_thread}: grouped differs from per-point");
                checks(&grouped, &reference, output, t64.stride, 1e-13);
            }
            for per_thread in [2, 4] {
                let mut g = gpu::GpuSpline::<f32, f32>::new(&gpu, &t32, n, output, per_thread).unwrap().for_sorted_points().unwrap();
                checks(&evaluated(&mut g, points, true), &reference, output, t64.stride, 1e-4);
            }
            // mixed: one orbital a thread is what the pseudopotential uses (pseudopotential/gpu.rs sorted_per_thread)
            for per_thread in [1, 2] {
                let mut g = gpu::GpuSpline::<f32, f64>::new(&gpu, &t32, n, output, per_thread).unwrap().for_sorted_points().unwrap();
                checks(&evaluated(&mut g, points, true), &reference, output, t64.stride, 1e-5);
            }
        }
    }
}

/// The outputs of one launch at `points` (the grouped kernel where `sorted`), over poisoned buffers.
fn evaluated<S: crate::Real, A: crate::Real>(g: &mut gpu::GpuSpline<S, A>, points: &[f64], sorted: bool) -> Vec<A> {
    g.poison().unwrap();
    g.set_positions(points).unwrap();
    if sorted { g.launch_sorted() } else { g.launch() }.unwrap();
    g.outputs().unwrap()
}
