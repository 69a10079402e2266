use super::cpu::CpuEngine;
use super::*;

fn params(dmc: bool) -> Params {
    Params { tau: 0.02, dmc, recompute: 0, seed: 11, first: 0 }
}

/// Every walker's energies and inverse against the reference; returns the worst errors.
fn worst<S: crate::determinant::cpu::Scalar, A: Real>(e: &CpuEngine<S, A>) -> (f64, f64) {
    let sys = e.ctx.sys;
    let (ne, ni, st) = (sys.electrons(), sys.setup.ion_count(), sys.setup.table.stride);
    let mut out = (0.0f64, 0.0f64);
    for k in 0..e.count() {
        let inv: Vec<f64> = e.w.inv[k * ne * st..(k + 1) * ne * st].iter().map(|x| x.f64()).collect();
        let (_, de, di) = compare(sys, &e.w.pos[3 * k * ne..3 * (k + 1) * ne], &e.w.rot[9 * k * ni..9 * (k + 1) * ni], e.parts[k], &inv).unwrap();
        out = (out.0.max(de), out.1.max(di));
    }
    out
}

#[test]
fn branch_comb_copies_in_place() {
    assert_eq!(branch(&[1.0; 5], 0.5), vec![0, 1, 2, 3, 4]);
    // walker 1 carries most weight: it keeps its slot and fills the slots of walkers that die
    let p = branch(&[0.01, 3.0, 0.01, 1.0], 0.5);
    assert_eq!(p.len(), 4);
    assert_eq!(p[1], 1);
    assert_eq!(p[3], 3);
    assert_eq!(p.iter().filter(|&&x| x == 1).count(), 3);
    // no slot that is a source is overwritten
    for (slot, &from) in p.iter().enumerate() {
        assert!(from == slot || p[from] == from);
    }
}

#[test]
fn cpu_double_matches_reference_each_step() {
    let sys = Solid::carbon(8, 3).unwrap();
    for dmc in [false, true] {
        let mut e = CpuEngine::<f64, f64>::new(&sys, 2, params(dmc)).unwrap();
        let (de, di) = worst(&e);
        assert!(de < 1e-10 && di < 1e-10, "initial: energy {de:e}, inverse {di:e}");
        for step in 0..3 {
            e.step().unwrap();
            let (de, di) = worst(&e);
            assert!(de < 1e-8, "dmc {dmc} step {step}: energy error {de:e}");
            assert!(di < 1e-9, "dmc {dmc} step {step}: inverse drift {di:e}");
        }
        assert!(e.moves.acceptance() > 0.3 && e.moves.acceptance() < 1.0, "acceptance {}", e.moves.acceptance());
        assert!(e.timers.total() > 0.0 && e.timers.0[Class::Orbitals as usize] > 0.0);
    }
}

#[test]
fn cpu_mixed_within_tolerance_and_reinverts() {
    let sys = Solid::carbon(8, 4).unwrap();
    let mut p = params(true);
    p.recompute = 2;
    let mut e = CpuEngine::<f32, f64>::new(&sys, 2, p).unwrap();
    for step in 0..3 {
        e.step().unwrap();
        let (de, di) = worst(&e);
        assert!(de < MIXED_TOLERANCE, "step {step}: energy error {de:e}");
        assert!(di < 1e-3, "step {step}: inverse error {di:e}");
    }
}

#[test]
fn corrupted_inverse_is_detected() {
    let sys = Solid::carbon(8, 5).unwrap();
    let mut e = CpuEngine::<f64, f64>::new(&sys, 1, params(false)).unwrap();
    e.step().unwrap();
    e.w.inv[3] += 1e-4;
    let (_, di) = worst(&e);
    assert!(di > 1e-6, "inverse error {di:e}");
    // a wrong energy part is caught too
    e.w.inv[3] -= 1e-4;
    e.parts[0].nonlocal += 1e-6 * e.parts[0].nonlocal.abs().max(1.0);
    let (de, _) = worst(&e);
    assert!(de > 1e-8, "energy error {de:e}");
}

/// The GPU engine follows the CPU engine (same start, same random numbers): identical acceptances and local
/// energies within 1e-9 in double; mixed within its tolerance of the reference, through a re-inversion.
#[test]
fn gpu_matches_cpu_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    let sys = Solid::carbon(16, 6).unwrap();
    let mut p = params(true);
    p.recompute = 2;
    let mut cpu = CpuEngine::<f64, f64>::new(&sys, 3, p).unwrap();
    let mut g = gpu::GpuEngine::<f64, f64>::new(&gpu, &sys, &sys.setup, 3, p).unwrap();
    for (k, (a, b)) in g.energies().unwrap().iter().zip(cpu.energies()).enumerate() {
        assert!((a - b).abs() <= 1e-10 * cpu.parts[k].magnitude(), "start walker {k}: gpu {a} cpu {b}");
    }
    g.profile = true;
    for step in 0..3 {
        cpu.step().unwrap();
        g.step().unwrap();
        assert_eq!(g.accepted().unwrap(), cpu.accepted, "step {step}");
        for (k, (a, b)) in g.energies().unwrap().iter().zip(cpu.energies()).enumerate() {
            assert!((a - b).abs() <= 1e-9 * cpu.parts[k].magnitude(), "step {step} walker {k}: gpu {a} cpu {b}");
        }
    }
    assert!(g.timers.0[Class::Orbitals as usize] > 0.0 && g.timers.0[Class::Branching as usize] > 0.0);
    // to the host only energies, accepted counts, the job count and the re-inversion's status flags (step 1)
    let w = 3u64;
    assert_eq!(g.traffic().to_host, 3 * (8 * w + 8 * w + 4 * w + 8 * (w + 1)) + 4 * 2 * w, "bytes to the host in 3 steps");
    let mut g = gpu::GpuEngine::<f32, f64>::new(&gpu, &sys, &sys.setup.convert(), 2, p).unwrap();
    for _ in 0..3 {
        g.step().unwrap();
    }
    let (pos, rot, parts, inv) = g.walker(1).unwrap();
    let inv: Vec<f64> = inv.iter().map(|x| x.f64()).collect();
    let (_, de, di) = compare(&sys, &pos, &rot, parts, &inv).unwrap();
    assert!(de < MIXED_TOLERANCE && di < 1e-3, "mixed gpu: energy {de:e}, inverse {di:e}");
}
