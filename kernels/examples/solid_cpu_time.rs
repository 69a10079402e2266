//! On-CPU time of the synthetic solid's CPU engine per walker step (double), with the engine's time fractions per
//! kernel class: what a shared, loaded build machine can still compare between two versions of the code (the wall
//! time there depends on the other jobs; the time the process's threads spent on a core much less). Usage:
//!   RAYON_NUM_THREADS=1 cargo run --release -p kernels --example solid_cpu_time -- 384,768 2 4 0
//! (electrons, walkers, timed steps after one untimed, delay of the inverse updates: 0 by size, 1 Sherman-Morrison).
//! Prints per size the least and the median CPU seconds per walker step over the timed steps.

use kernels::solid::{cpu::CpuEngine, default_delay, Class, Params, Solid};

/// Nanoseconds the threads of this process have run on a CPU (the first field of each thread's schedstat).
fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn main() {
    let arg = |i: usize, d: &str| std::env::args().nth(i).unwrap_or_else(|| d.to_string());
    let sizes: Vec<usize> = arg(1, "384,768").split(',').map(|x| x.parse().unwrap()).collect();
    let (walkers, steps, delay): (usize, usize, usize) = (arg(2, "2").parse().unwrap(), arg(3, "4").parse().unwrap(), arg(4, "0").parse().unwrap());
    println!("electrons delay walkers threads min_cpu_s_per_walker_step median_cpu_s_per_walker_step fractions(orbitals determinant jastrow coulomb pseudopotential)");
    for ne in sizes {
        let sys = Solid::carbon(ne / 4, 1).unwrap();
        let k = if delay == 0 { default_delay(ne / 2, kernels::Precision::Double) } else { delay };
        let p = Params { tau: 0.02, dmc: true, recompute: 8, seed: 100, first: 0, delay: k };
        let mut e = CpuEngine::<f64, f64>::new(&sys, walkers, p).unwrap();
        e.step().unwrap();
        e.timers = Default::default();
        let mut per: Vec<f64> = (0..steps)
            .map(|_| {
                let t = cpu_ns();
                e.step().unwrap();
                (cpu_ns() - t) as f64 * 1e-9 / walkers as f64
            })
            .collect();
        per.sort_by(f64::total_cmp);
        let f = e.timers.fractions();
        let classes = [Class::Orbitals, Class::Determinant, Class::Jastrow, Class::Coulomb, Class::Pseudopotential];
        let fr: Vec<String> = classes.iter().map(|&c| format!("{:.3}", f[c as usize])).collect();
        println!("{ne} {k} {walkers} {} {:.4} {:.4} {}", rayon::current_num_threads(), per[0], per[per.len() / 2], fr.join(" "));
    }
}
