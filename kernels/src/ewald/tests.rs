use super::*;
use reference::Reference;

/// v_M of one charge per primitive cell of the lattice at density r_s = 1, times r_s / 2: the Wigner-crystal
/// Madelung energy per particle in units of 1/r_s.
fn madelung(lattice: Lattice, alpha_scale: f64) -> f64 {
    let cell = electron_gas_cell(lattice, 1, 1.0);
    let alpha = alpha_scale / cell.volume.powf(1.0 / cell.dim as f64);
    let e = Ewald::with_alpha(cell.clone(), alpha, 1, Ions::default(), 1e-13);
    Reference::new(&cell, e.params).v_m() / 2.0
}

#[test]
fn madelung_constants_of_five_lattices() {
    let known = [
        (Lattice::Sc, -0.8800594421),
        (Lattice::Fcc, -0.8958736152),
        (Lattice::Bcc, -0.8959292557),
        (Lattice::Square, -1.1002444205),
        (Lattice::Triangular, -1.1061025867),
    ];
    for (lattice, value) in known {
        for scale in [2.0, 5.0] {
            let m = madelung(lattice, scale);
            assert!((m - value).abs() < 2e-10, "{}: {m:.10} vs {value} (alpha L = {scale})", lattice.name());
        }
    }
    // the simple cubic constant of DESIGN.md: v_M = -2.837297479 / L
    let cell = Lattice::Sc.cell(1.0);
    let e = Ewald::with_alpha(cell.clone(), 3.0, 1, Ions::default(), 1e-13);
    assert!((Reference::new(&cell, e.params).v_m() + 2.837297479481).abs() < 1e-10);
}

/// A small neutral system: 8 electrons and 4 ions of charge 2 in a cell of the lattice at r_s = 1.5.
fn small(lattice: Lattice, walkers: usize, seed: u64) -> (Cell, Ions, Vec<[f64; 3]>) {
    let cell = electron_gas_cell(lattice, 8, 1.5);
    let ions = Ions::random(&cell, 4, 2.0, seed);
    let pos = random_configs(&cell, walkers, 8, seed + 1);
    (cell, ions, pos)
}

#[test]
fn energy_does_not_depend_on_alpha() {
    for lattice in [Lattice::Triclinic, Lattice::Fcc, Lattice::Triangular] {
        let (cell, ions, pos) = small(lattice, 1, 3);
        let length = cell.volume.powf(1.0 / cell.dim as f64);
        let energies: Vec<f64> = [2.5, 4.0, 7.0]
            .iter()
            .map(|s| {
                let e = Ewald::with_alpha(cell.clone(), s / length, 8, ions.clone(), 1e-12);
                Reference::new(&cell, e.params).energy(&pos, &ions).total()
            })
            .collect();
        for e in &energies {
            assert!((e - energies[0]).abs() < 1e-10 * 12.0, "{}: {energies:?}", lattice.name());
        }
    }
}

#[test]
fn structure_factor_energy_equals_pair_sum() {
    // the reference's structure-factor form against Eq. 2 summed pair by pair with v_E and v_M
    let (cell, ions, pos) = small(Lattice::Bcc, 1, 5);
    let e = Ewald::auto(cell.clone(), 8, ions.clone(), 1e-10);
    let r = Reference::new(&cell, e.params);
    let parts = r.energy(&pos, &ions);
    assert!((parts.total() - r.energy_pairwise(&pos, &ions)).abs() < 1e-10);
    // the ion-ion part alone does not depend on the electrons; the electron-ion part changes sign with the ions
    let flipped = Ions { pos: ions.pos.clone(), charge: ions.charge.iter().map(|z| -z).collect() };
    let f = r.energy(&pos, &flipped);
    assert!((f.ii - parts.ii).abs() < 1e-10 && (f.ei + parts.ei).abs() < 1e-10);
}

#[test]
fn spherical_direct_sum_agrees_with_ewald_plus_dipole_term() {
    // A neutral cubic cell summed directly over whole cells within a growing sphere converges to the Ewald energy
    // plus the surface term 2 pi / (3 V) |sum q r|^2 (de Leeuw, Perram and Smith); slowly, so two radii show it.
    let cell = Lattice::Sc.cell(1.0);
    let ions = Ions { pos: vec![[0.1, 0.2, 0.3], [0.6, 0.7, 0.2]], charge: vec![1.0, 1.0] };
    let electrons = [[0.4, 0.1, 0.8], [0.9, 0.5, 0.45]];
    let mut pos: Vec<[f64; 3]> = electrons.to_vec();
    pos.extend(&ions.pos);
    let q = [-1.0, -1.0, 1.0, 1.0];
    let direct = |radius: i32| {
        let mut e = 0.0;
        for i in -radius..=radius {
            for j in -radius..=radius {
                for k in -radius..=radius {
                    if i * i + j * j + k * k > radius * radius {
                        continue;
                    }
                    for a in 0..4 {
                        for b in 0..4 {
                            let d = [pos[a][0] - pos[b][0] + i as f64, pos[a][1] - pos[b][1] + j as f64, pos[a][2] - pos[b][2] + k as f64];
                            let r = cell::norm(d);
                            if r > 0.0 {
                                e += 0.5 * q[a] * q[b] / r;
                            }
                        }
                    }
                }
            }
        }
        e
    };
    let dipole: [f64; 3] = [0, 1, 2].map(|x| (0..4).map(|a| q[a] * pos[a][x]).sum());
    let surface = 2.0 * std::f64::consts::PI / 3.0 * cell::dot(dipole, dipole);
    let e = Ewald::auto(cell.clone(), 2, ions.clone(), 1e-12);
    let ewald = Reference::new(&cell, e.params).energy(&electrons, &ions).total() + surface;
    let (near, far) = ((direct(24) - ewald).abs(), (direct(48) - ewald).abs());
    assert!(far < 2e-7 && far < near, "direct sum misses Ewald + surface by {near:.2e} (R = 24), {far:.2e} (R = 48)");
    assert!(surface > 0.1, "the surface term must matter for the test to mean something");
}

/// Reference energies and move changes of every walker.
fn reference_results(e: &Ewald, pos: &[[f64; 3]], moves: &[Move]) -> (Vec<f64>, Vec<f64>) {
    let r = Reference::new(&e.cell, e.params);
    let n = e.electrons;
    let energies = (0..moves.len()).map(|w| r.energy(&pos[w * n..(w + 1) * n], &e.ions).total()).collect();
    let changes = moves.iter().enumerate().map(|(w, m)| r.move_change(&pos[w * n..(w + 1) * n], &e.ions, m)).collect();
    (energies, changes)
}

fn cpu_results<S: Real, A: Real>(e: &Ewald, pos: &[[f64; 3]], moves: &[Move]) -> (Vec<f64>, Vec<f64>) {
    let mut c = cpu::CpuEwald::<S, A>::new(e);
    let mut energy = vec![A::nan(); moves.len()];
    let mut change = vec![A::nan(); moves.len()];
    c.energy(pos, &mut energy);
    c.moves(pos, moves, &mut change);
    (energy.iter().map(|x| x.f64()).collect(), change.iter().map(|x| x.f64()).collect())
}

use crate::Real;

fn assert_close(what: &str, fast: &[f64], reference: &[f64], tol: f64) {
    let c = crate::Check::compare(what, fast, reference, tol);
    assert!(c.passed(), "{what}: error {:.3e} over {tol:.1e}: {fast:?} vs {reference:?}", c.error);
}

#[test]
fn cpu_matches_reference_in_every_precision() {
    for lattice in [Lattice::Triclinic, Lattice::Fcc, Lattice::Square] {
        let (cell, ions, pos) = small(lattice, 5, 11);
        let e = Ewald::auto(cell.clone(), 8, ions, 1e-8);
        let moves = random_moves(&cell, &pos, 5, 0.7, 12);
        let (re, rm) = reference_results(&e, &pos, &moves);
        let (ce, cm) = cpu_results::<f64, f64>(&e, &pos, &moves);
        assert_close("energy f64", &ce, &re, 1e-12);
        assert_close("move f64", &cm, &rm, 1e-11);
        let (ce, cm) = cpu_results::<f32, f32>(&e, &pos, &moves);
        assert_close("energy f32", &ce, &re, 2e-5);
        assert_close("move f32", &cm, &rm, 2e-4);
        let (ce, cm) = cpu_results::<f32, f64>(&e, &pos, &moves);
        assert_close("energy mixed", &ce, &re, 2e-5);
        assert_close("move mixed", &cm, &rm, 2e-4);
    }
}

#[test]
fn cpu_one_image_path_matches_reference() {
    // Cells larger than 2 r_c take the one-image real-space path (nearest image, erfc over every pair with a
    // select); the small cells of the other tests take the several-images path. Both must match the reference.
    let (cell, ions, _) = small(Lattice::Fcc, 1, 61);
    assert!(!cpu::CpuEwald::<f64, f64>::new(&Ewald::auto(cell, 8, ions, 1e-8)).single_image());
    for lattice in [Lattice::Fcc, Lattice::Triclinic, Lattice::Triangular] {
        let n = 40;
        let cell = electron_gas_cell(lattice, n, 2.0);
        let ions = Ions::random(&cell, 2, n as f64 / 2.0, 62);
        let pos = random_configs(&cell, 3, n, 63);
        // a large alpha: r_c well below half the cell (the automatic choice gets there from ~100 electrons)
        let e = Ewald::with_alpha(cell.clone(), 10.0 / cell.volume.powf(1.0 / cell.dim as f64), n, ions, 1e-8);
        assert!(cpu::CpuEwald::<f64, f64>::new(&e).single_image(), "{} with {n} electrons", lattice.name());
        let moves = random_moves(&cell, &pos, 3, 1.0, 64);
        let (re, rm) = reference_results(&e, &pos, &moves);
        let (ce, cm) = cpu_results::<f64, f64>(&e, &pos, &moves);
        assert_close("energy f64", &ce, &re, 1e-11);
        assert_close("move f64", &cm, &rm, 1e-10);
        for (ce, cm) in [cpu_results::<f32, f32>(&e, &pos, &moves), cpu_results::<f32, f64>(&e, &pos, &moves)] {
            assert_close("energy f32", &ce, &re, 5e-5);
            assert_close("move f32", &cm, &rm, 5e-4);
        }
    }
}

#[test]
fn move_change_is_the_difference_of_two_energies() {
    for lattice in [Lattice::Bcc, Lattice::Triangular] {
        let (cell, ions, pos) = small(lattice, 3, 21);
        let e = Ewald::auto(cell.clone(), 8, ions, 1e-9);
        let moves = random_moves(&cell, &pos, 3, 1.0, 22);
        let mut after = pos.clone();
        for (w, m) in moves.iter().enumerate() {
            after[w * 8 + m.electron] = m.to;
        }
        let (before, change) = cpu_results::<f64, f64>(&e, &pos, &moves);
        let (after, _) = cpu_results::<f64, f64>(&e, &after, &moves);
        let diff: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        assert_close("move", &change, &diff, 1e-10);
        assert!(diff.iter().all(|d| d.abs() > 1e-3), "moves should change the energy: {diff:?}");
    }
}

#[test]
fn automatic_cutoffs_reach_the_requested_accuracy() {
    // Energies at the default 1e-8 Ha per particle against far tighter sums, for the automatic alpha and a user
    // alpha at either end of the useful range: the same energy within the accuracy.
    for lattice in [Lattice::Fcc, Lattice::Square] {
        let n = 38;
        let cell = electron_gas_cell(lattice, n, 2.0);
        let pos = random_configs(&cell, 1, n, 31);
        let length = cell.volume.powf(1.0 / cell.dim as f64);
        let exact = {
            let e = Ewald::with_alpha(cell.clone(), 5.0 / length, n, Ions::default(), 1e-14);
            Reference::new(&cell, e.params).energy(&pos, &Ions::default()).total()
        };
        let auto = Ewald::auto(cell.clone(), n, Ions::default(), 1e-8);
        for e in [auto.clone(), Ewald::with_alpha(cell.clone(), 3.0 / length, n, Ions::default(), 1e-8), Ewald::with_alpha(cell.clone(), 9.0 / length, n, Ions::default(), 1e-8)] {
            let (energy, _) = cpu_results::<f64, f64>(&e, &pos, &[Move { electron: 0, to: [0.0; 3] }]);
            let err = (energy[0] - exact).abs() / n as f64;
            assert!(err < 1e-8, "{}: alpha {:.3}: error {err:.2e} per particle", lattice.name(), e.params.alpha);
        }
        // and the accuracy is not bought with absurd cutoffs: a looser request gives fewer terms
        let loose = Ewald::auto(cell.clone(), n, Ions::default(), 1e-4);
        assert!(loose.gvecs.len() < auto.gvecs.len() || loose.images.len() < auto.images.len());
    }
}

#[test]
fn reference_detects_a_wrong_kernel() {
    // a system built with a slightly wrong cutoff (terms missing) must fail the double-precision check
    let (cell, ions, pos) = small(Lattice::Sc, 2, 41);
    let e = Ewald::auto(cell.clone(), 8, ions, 1e-8);
    let moves = random_moves(&cell, &pos, 2, 0.5, 42);
    let (re, _) = reference_results(&e, &pos, &moves);
    let mut bad = e.clone();
    bad.gvecs.pop();
    bad.coef.pop();
    let (be, _) = cpu_results::<f64, f64>(&bad, &pos, &moves);
    assert!(!crate::Check::compare("energy", &be, &re, 1e-12).passed());
}

#[test]
fn gpu_matches_reference_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    fn run<S: Real, A: Real>(gpu: &std::sync::Arc<crate::gpu::Gpu>, e: &Ewald, pos: &[[f64; 3]], moves: &[Move]) -> (Vec<f64>, Vec<f64>) {
        let mut g = gpu::GpuEwald::<S, A>::new(gpu, e, moves.len() + 2).unwrap();
        g.set_positions(pos).unwrap();
        g.poison().unwrap();
        g.launch_energy().unwrap();
        let energy = g.outputs().unwrap().iter().map(|x| x.f64()).collect();
        g.set_moves(moves).unwrap();
        g.poison().unwrap();
        g.launch_move().unwrap();
        (energy, g.outputs().unwrap().iter().map(|x| x.f64()).collect())
    }
    for lattice in [Lattice::Triclinic, Lattice::Triangular] {
        let (cell, ions, pos) = small(lattice, 5, 51);
        let e = Ewald::auto(cell.clone(), 8, ions, 1e-8);
        let moves = random_moves(&cell, &pos, 5, 0.7, 52);
        let (re, rm) = reference_results(&e, &pos, &moves);
        let (ge, gm) = run::<f64, f64>(&gpu, &e, &pos, &moves);
        assert_close("gpu energy f64", &ge, &re, 1e-12);
        assert_close("gpu move f64", &gm, &rm, 1e-11);
        for (ge, gm) in [run::<f32, f32>(&gpu, &e, &pos, &moves), run::<f32, f64>(&gpu, &e, &pos, &moves)] {
            assert_close("gpu energy f32", &ge, &re, 2e-5);
            assert_close("gpu move f32", &gm, &rm, 2e-4);
        }
    }
}

/// The vectorisable erfc against libm over the range the real-space sum uses (alpha r < alpha r_c, about 4-6) and
/// beyond: relative error below 8e-15 in f64 (measured 5.2e-15), ~1e-7 in f32.
#[test]
fn fast_erfc_matches_libm() {
    use super::cpu::erfc::{erfc_f32, erfc_f64};
    let (mut e64, mut e32) = (0.0f64, 0.0f64);
    for i in 0..=20000 {
        let x = i as f64 * 12.0 / 20000.0;
        let want = libm::erfc(x);
        e64 = e64.max(((erfc_f64(x) - want) / want).abs());
        if x < 9.0 {
            let xf = x as f32;
            let want = libm::erfc(xf as f64);
            e32 = e32.max(((erfc_f32(xf) as f64 - want) / want).abs());
        }
    }
    assert!(e64 < 8e-15, "f64 erfc relative error {e64:e}");
    assert!(e32 < 4e-7, "f32 erfc relative error {e32:e}");
    // a wrong value is seen: erfc(1) is not erfc(1.001)
    assert!((erfc_f64(1.001) - libm::erfc(1.0)).abs() / libm::erfc(1.0) > 1e-4);
}
