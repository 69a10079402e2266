//! The synthetic solid's CPU engine in double against the f64 reference, walker by walker and part by part, for the
//! mini-app's trajectory check (seed and parameters of `qmcbench run solid` with the default seed): which engine
//! parts from the other when the GPU-CPU trajectory check fails. Usage:
//!   cargo run --release -p kernels --example solid_double_check -- 2048 4 2
//! (electrons, walkers, steps).

use kernels::solid::{compare, cpu::CpuEngine, default_delay, Params, Solid};
use rayon::prelude::*;

fn main() {
    let arg = |i: usize, d: &str| std::env::args().nth(i).unwrap_or_else(|| d.to_string());
    let (ne, walkers, steps): (usize, usize, usize) = (arg(1, "2048").parse().unwrap(), arg(2, "4").parse().unwrap(), arg(3, "2").parse().unwrap());
    // the mini-app's seeds for its first size: Runner::seed(i) = 20261122 + i * 1000003
    let seed = |i: u64| 20261122u64.wrapping_add(i.wrapping_mul(1_000_003));
    let sys = Solid::carbon(ne / 4, seed(1)).unwrap();
    let p = Params { tau: 0.02, dmc: true, recompute: 2, seed: seed(100), first: 0, delay: default_delay(ne / 2, kernels::Precision::Double) };
    let mut e = CpuEngine::<f64, f64>::new(&sys, walkers, p).unwrap();
    let (ni, st) = (sys.setup.ion_count(), sys.setup.table.stride);
    for step in 0..steps {
        e.step().unwrap();
        let lines: Vec<String> = (0..walkers)
            .into_par_iter()
            .map(|k| {
                let pos = &e.w.pos[3 * k * ne..3 * (k + 1) * ne];
                let rot = &e.w.rot[9 * k * ni..9 * (k + 1) * ni];
                let inv = &e.w.inv[k * ne * st..(k + 1) * ne * st];
                let c = compare(&sys, pos, rot, e.parts[k], inv).unwrap();
                let (r, m) = (c.reference, e.parts[k]);
                format!(
                    "step {step} walker {k}: cond {:.2e} energy error {:.2e} inverse {:.2e}\n  engine    kinetic {:.12e} coulomb {:.12e} nonlocal {:.12e}\n  reference kinetic {:.12e} coulomb {:.12e} nonlocal {:.12e}",
                    c.cond, c.energy, c.inverse, m.kinetic, m.coulomb, m.nonlocal, r.kinetic, r.coulomb, r.nonlocal
                )
            })
            .collect();
        lines.iter().for_each(|l| println!("{l}"));
    }
}
