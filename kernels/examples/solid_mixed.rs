//! The mixed-precision error of the synthetic solid's CPU engine against the f64 reference, per energy part, as
//! a function of the steps since the last f64 re-inversion, with the 1-norm condition number of each walker's
//! Slater matrices (the worse spin, from the reference's f64 inverse). Issue 10's measurement, rerun with
//!   cargo run -p kernels --example solid_mixed -- 256,512,1024 2 4 0
//! (electrons, walkers, steps, delay of the inverse updates (0: `default_delay`, 1: Sherman-Morrison); with 0
//! steps only the condition numbers of the start). Per walker and step it prints two lines: `drift` (the engine as it runs, never
//! re-inverted after the start) and `fresh` (the same configuration just after an f64 re-inversion), and the
//! part of the error that the f32 table alone causes (the reference with the table rounded to f32).

use kernels::solid::{compare, cpu::CpuEngine, default_delay, Params, Solid};
use kernels::Real;
use rayon::prelude::*;

fn main() {
    let arg = |i: usize, d: &str| std::env::args().nth(i).unwrap_or_else(|| d.to_string());
    let sizes: Vec<usize> = arg(1, "256,512,1024").split(',').map(|x| x.parse().unwrap()).collect();
    let (walkers, steps): (usize, usize) = (arg(2, "2").parse().unwrap(), arg(3, "4").parse().unwrap());
    let delay: usize = arg(4, "0").parse().unwrap();
    println!("electrons walker step since cond eps32*cond kinetic coulomb nonlocal inverse table_only_energy");
    for ne in sizes {
        let sys = Solid::carbon(ne / 4, 1).unwrap();
        // the same solid with the table the mixed engine reads: f32-rounded orbitals are a different wavefunction
        let mut sys32 = sys.clone();
        sys32.setup.table = sys.setup.table.convert::<f32>().convert::<f64>();
        let delay = if delay == 0 { default_delay(ne / 2, kernels::Precision::Mixed) } else { delay };
        println!("# delay {delay}");
        let p = Params { tau: 0.02, dmc: false, recompute: 0, seed: 100, first: 0, delay };
        let mut e = CpuEngine::<f32, f64>::new(&sys, walkers, p).unwrap();
        let mut cond = e.cond.clone();
        cond.sort_by(f64::total_cmp);
        let cond: Vec<String> = cond.iter().map(|c| format!("{c:.2e}")).collect();
        println!("# {ne} electrons: condition numbers of the {walkers} walkers at the start (sorted): {}", cond.join(" "));
        if steps == 0 {
            continue;
        }
        let report = |e: &CpuEngine<f32, f64>, step: usize, since: &str| {
            let (ni, st) = (sys.setup.ion_count(), sys.setup.table.stride);
            let lines: Vec<String> = (0..walkers)
                .into_par_iter()
                .map(|k| {
                    let pos = &e.w.pos[3 * k * ne..3 * (k + 1) * ne];
                    let rot = &e.w.rot[9 * k * ni..9 * (k + 1) * ni];
                    let inv: Vec<f64> = e.w.inv[k * ne * st..(k + 1) * ne * st].iter().map(|x| x.f64()).collect();
                    let c = compare(&sys, pos, rot, e.parts[k], &inv).unwrap();
                    let t = compare(&sys, pos, rot, compare(&sys32, pos, rot, e.parts[k], &inv).unwrap().reference, &inv).unwrap();
                    format!(
                        "{ne} {k} {step} {since} {:.3e} {:.2e} {:.2e} {:.2e} {:.2e} {:.2e} {:.2e}",
                        c.cond,
                        f32::EPSILON as f64 * c.cond,
                        c.parts[0],
                        c.parts[1],
                        c.parts[2],
                        c.inverse,
                        t.energy
                    )
                })
                .collect();
            lines.iter().for_each(|l| println!("{l}"));
        };
        report(&e, 0, "0");
        for step in 1..=steps {
            e.step().unwrap();
            report(&e, step, &step.to_string());
            let saved = (e.w.inv.clone(), e.dpsi.clone(), e.parts.clone());
            e.remeasure(true).unwrap();
            report(&e, step, "fresh");
            (e.w.inv, e.dpsi, e.parts) = saved;
        }
    }
}
