//! The GPU engine: its random numbers (a Rust transliteration of qmc.cu's generator against rand_xoshiro and the
//! CPU's draws, so the constants and the draw order the device uses are checked without a device), and, on a
//! machine with a GPU, its trajectories against the CPU walkers.

use crate::ensemble::balance::Balance;
use super::dmc::{self, DmcParams};
use super::engine::{infallible, Population};
use super::gpu::{trajectory_check, GpuWalkers};
use super::systems::Setup;
use super::vmc::{initial_walkers, start_positions};
use crate::rng::stream;
use crate::rng::gaussian3;
use super::System;
use crate::Precision;
use rand::{Rng, RngCore};

/// qmc.cu's `rng_seed`, line by line.
fn twin_seed(seed: u64, stream: u64) -> [u64; 4] {
    let mut z = seed ^ stream.wrapping_mul(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
    let mut x = z ^ (z >> 31);
    let mut next = || {
        x = x.wrapping_add(0x9e3779b97f4a7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    };
    [next(), next(), next(), next()]
}

/// qmc.cu's `next_u64` (xoshiro256++).
fn twin_next(s: &mut [u64; 4]) -> u64 {
    let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
    let t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = s[3].rotate_left(45);
    out
}

/// qmc.cu's `uniform`.
fn twin_uniform(s: &mut [u64; 4]) -> f64 {
    (twin_next(s) >> 11) as f64 * 1.1102230246251565e-16
}

#[test]
fn the_device_generator_is_the_cpu_stream() {
    for (seed, tag, step, k) in [(1u64, 2u64, 0usize, 0usize), (12345, 3, 7, 4095), (u64::MAX, 4, 100_000, 1 << 20), (0, 1, 0, 0)] {
        let mut cpu = stream(seed, tag, step, k);
        // the device gets seed ^ tag * C from the host and forms the stream index itself
        let mut dev = twin_seed(seed ^ tag.wrapping_mul(0xA24B_AED4_963E_E407), ((step as u64) << 24) ^ k as u64);
        for _ in 0..50 {
            assert_eq!(cpu.next_u64(), twin_next(&mut dev));
        }
        for _ in 0..50 {
            assert_eq!(cpu.random::<f64>(), twin_uniform(&mut dev));
        }
        // Box-Muller as rng::gaussian3 draws it: four uniforms, in this order
        let g = gaussian3(&mut cpu);
        let (u1, u2, u3, u4) = (1.0 - twin_uniform(&mut dev), twin_uniform(&mut dev), 1.0 - twin_uniform(&mut dev), twin_uniform(&mut dev));
        let (r1, r2) = ((-2.0 * u1.ln()).sqrt(), (-2.0 * u3.ln()).sqrt());
        let tau = std::f64::consts::TAU;
        assert_eq!(g, [r1 * (tau * u2).cos(), r1 * (tau * u2).sin(), r2 * (tau * u4).cos()]);
        assert_eq!(cpu.next_u64(), twin_next(&mut dev));
    }
    // a wrong constant is seen
    let mut off = twin_seed(1 ^ 1, 0);
    assert_ne!(stream(1, 0, 0, 0).next_u64(), twin_next(&mut off));
}

fn system(name: &str, precision: Precision) -> System {
    System::by_name_with(name, &Setup { electrons: 14, rs: 1.0, precision, atom: None }).unwrap()
}

#[test]
fn gpu_matches_cpu_when_present() {
    let Some(gpu) = crate::gpu::for_test() else { return };
    // double: the CPU trajectories, every system
    for name in System::NAMES {
        let (check, note) = trajectory_check(&gpu, &system(name, Precision::Double), 8, 5, 17, 1e-9).unwrap();
        assert!(check.passed(), "{note}");
    }
    // single and mixed: the first measurement equals the CPU's of the same precision to f32 rounding
    for p in [Precision::Single, Precision::Mixed] {
        for name in ["he", "be", "heg"] {
            let sys = system(name, p);
            let cpu = infallible(initial_walkers(&sys, 8, 3).energies());
            let dev = GpuWalkers::new(&gpu, &sys, &start_positions(&sys, 0..8, 3)).unwrap().energies().unwrap();
            let c = crate::Check::compare(&format!("{name} {p}"), &dev, &cpu, 1e-4);
            assert!(c.passed(), "{name} {p}: {dev:?} vs {cpu:?}");
        }
    }
    // DMC: branching on the device (copies, growth beyond the start capacity) follows the CPU run in double
    let sys = system("he", Precision::Double);
    let p = DmcParams { walkers: 16, steps: 64, equil: 0, tau: 0.1, seed: 5, feedback: 10.0, balance: Balance::Equal };
    let cpu = dmc::run(&sys, &p, initial_walkers(&sys, 16, 5)).unwrap();
    let mut dev = GpuWalkers::new(&gpu, &sys, &start_positions(&sys, 0..16, 5)).unwrap();
    let rep = dmc::run_with(&sys, &p, &crate::ensemble::comm::Solo, &mut dev, None, None, "he").unwrap();
    let g = rep.estimate.unwrap();
    assert!((g.energy - cpu.energy).abs() < 1e-9 * cpu.energy.abs() && g.population == cpu.population, "{g:?} vs {cpu:?}");
    // and a wrong energy is detected by the check
    assert!(!crate::Check::compare("e", &[g.energy + 1e-6], &[cpu.energy], 1e-9).passed());
}

/// What `scripts/cu-on-host.sh` needs to run qmc.cu's step kernel compiled for the host (one walker at a time)
/// against the CPU driver without a GPU: per system the kernel parameters, the orbital tables, the start positions
/// of 8 walkers and the CPU's kinetic and local energies and accepted moves at the start and after each of 5 VMC
/// steps (seed 17, tau 0.3); in single and mixed precision the start only (f32 rounding lets trajectories part).
/// Run by the script (`QMC_HOST_DUMP=dir cargo test ... -- --ignored`).
#[test]
#[ignore]
fn dump_for_the_host_build() {
    use super::gpu::host_plan;
    let Ok(dir) = std::env::var("QMC_HOST_DUMP") else { return };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    // the defines the GPU layer puts before the prelude, for g++ (-include)
    std::fs::write(dir.join("prelude-defines.h"), crate::maths::prelude_defines()).unwrap();
    let (walkers, seed) = (8, 17u64);
    for (name, p) in System::NAMES.iter().flat_map(|n| [Precision::Double, Precision::Single, Precision::Mixed].map(|p| (*n, p))) {
        let sys = system(name, p);
        let (params, itab, dtab) = host_plan(&sys).unwrap();
        let d = dir.join(format!("{name}-{p}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("params.bin"), params).unwrap();
        std::fs::write(d.join("itab.bin"), itab.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        std::fs::write(d.join("dtab.bin"), dtab.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let pos = start_positions(&sys, 0..walkers, seed);
        let ne = sys.n_electrons;
        let mut em = vec![0.0f64; 3 * ne * walkers];
        for (w, r) in pos.iter().enumerate() {
            for (e, x) in r.iter().enumerate() {
                for k in 0..3 {
                    em[(3 * e + k) * walkers + w] = x[k];
                }
            }
        }
        std::fs::write(d.join("pos.bin"), em.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
        let mut cpu = initial_walkers(&sys, walkers, seed);
        let steps = if p == Precision::Double { 5 } else { 0 };
        let mut lines = vec![format!("{} {} {} {p} {steps}", ne, sys.n_up, seed ^ 2u64.wrapping_mul(0xA24B_AED4_963E_E407))];
        let mut emit = |step: i64, cpu: &Vec<super::walker::Walker>, acc: &[u64]| {
            for (w, x) in cpu.iter().enumerate() {
                lines.push(format!("{step} {w} {:.17e} {:.17e} {}", x.kinetic(&sys), x.e_local, acc[w]));
            }
        };
        emit(-1, &cpu, &[0; 8]);
        for step in 0..steps {
            let out = infallible(cpu.advance(&sys, 0.3, false, seed, 2, step, 0));
            let acc: Vec<u64> = out.iter().map(|o| o.0.accepted).collect();
            emit(step as i64, &cpu, &acc);
        }
        std::fs::write(d.join("expect.txt"), lines.join("\n") + "\n").unwrap();
    }
}
