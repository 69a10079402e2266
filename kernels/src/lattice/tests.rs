use super::*;

fn small() -> Model {
    // L = 3: 10 sites, 4 pairs at x = 0.2 (3,150 configurations).
    Model::new(3, Params { doping: 0.2, ..Params::default() }).unwrap()
}

fn det(m: &Model, c: &Config) -> f64 {
    invert(&m.matrix(c), m.pairs).unwrap().1
}

#[test]
fn cluster_sizes_and_pair_function_follow_the_thesis() {
    for (l, ns, np) in [(5, 26, 12), (9, 82, 37), (15, 226, 102)] {
        let m = Model::new(l, Params::default()).unwrap();
        assert_eq!((m.sites, m.pairs), (ns, np));
        for i in 0..ns {
            for j in 0..ns {
                assert!((m.phi(i, j) - m.phi(j, i)).abs() < 1e-12, "phi symmetric");
            }
            // Each site has 4 distinct neighbours and the links are symmetric with the same hopping sign.
            for jn in 0..4 {
                let n = m.nbr[4 * i + jn] as usize;
                let back = (0..4).find(|&k| m.nbr[4 * n + k] as usize == i).unwrap();
                assert_eq!(m.hop[4 * i + jn], m.hop[4 * n + back]);
            }
        }
    }
    assert!(Model::new(4, Params::default()).is_err());
    assert!(Model::new(1, Params::default()).is_err());
}

#[test]
fn ratios_match_lu_determinants_and_swap_is_symmetric() {
    let m = Model::new(5, Params::default()).unwrap();
    let (c, w) = initial_state(&m, 5, 0).unwrap();
    let d0 = det(&m, &c);
    let (occ, which) = c.occupation(m.sites);
    let ch = reference::Chain::new(&m, c.clone(), w.clone(), Stream::new(1, 0));
    let mut ens = cpu::Ensemble::<f64>::new(&m, &[(c.clone(), w.clone())], 1);
    let hole = occ.iter().position(|&o| o == HL).unwrap();
    // Hops of every electron to a hole.
    for i in 0..m.pairs {
        let mut c2 = c.clone();
        c2.up[i] = hole as u32;
        assert!((ch.ratio(UP, i, hole) - det(&m, &c2) / d0).abs() < 1e-9);
        let mut c2 = c.clone();
        c2.dn[i] = hole as u32;
        assert!((ch.ratio(DN, i, hole) - det(&m, &c2) / d0).abs() < 1e-9);
    }
    // Swaps of every up electron with every down electron: two-step (both orders) and fast formula vs LU.
    let mut rch = ch;
    for a in 0..m.pairs {
        for b in 0..m.pairs {
            let mut c2 = c.clone();
            std::mem::swap(&mut c2.up[a], &mut c2.dn[b]);
            let lu = det(&m, &c2) / d0;
            let r_up = rch.swap_ratio(UP, a, b, None);
            let r_dn = rch.swap_ratio(DN, b, a, None);
            let fast = ens.swap_ratio::<f64>(0, a, b);
            let tol = 1e-9 * lu.abs().max(1.0);
            assert!((r_up - lu).abs() < tol && (r_dn - lu).abs() < tol && (fast - lu).abs() < tol, "a {a} b {b}: {r_up} {r_dn} {fast} vs {lu}");
            let single = ens.swap_ratio::<f32>(0, a, b);
            assert!((single - lu).abs() < 1e-3 * lu.abs().max(1.0));
        }
    }
    let _ = which;
    ens.run::<f64>(0, 0);
}

#[test]
fn inverse_after_many_updates_matches_a_fresh_inverse() {
    let m = Model::new(5, Params::default()).unwrap();
    let starts = initial_states(&m, 9, 2).unwrap();
    let drift = |cfg: &Config, w: &[f64]| {
        let fresh = invert(&m.matrix(cfg), m.pairs).unwrap().0;
        crate::Check::compare("inverse", w, &fresh, 0.0).error
    };
    let r = reference::run(&m, &starts, 3, 200, 0);
    let mut e64 = cpu::Ensemble::<f64>::new(&m, &starts, 3);
    e64.run::<f64>(200, 0);
    let mut e32 = cpu::Ensemble::<f32>::new(&m, &starts, 3);
    e32.run::<f32>(200, 0);
    for c in 0..2 {
        let accepted = r[c].tally[tally::HOPS_ACCEPTED] + r[c].tally[tally::SWAPS_ACCEPTED];
        assert!(accepted > 500.0, "only {accepted} accepted moves");
        assert!(drift(&r[c].config, &r[c].w) < 1e-9);
        let ch = &e64.chains[c];
        let w: Vec<f64> = ch.w.clone();
        assert!(drift(&ch.config(), &w) < 1e-9);
        let ch = &e32.chains[c];
        let w: Vec<f64> = ch.w.iter().map(|&x| x as f64).collect();
        let d = drift(&ch.config(), &w);
        assert!(d < 1e-2, "f32 drift {d}");
    }
}

#[test]
fn fast_chains_follow_the_reference_chain() {
    let m = Model::new(5, Params::default()).unwrap();
    let starts = initial_states(&m, 21, 4).unwrap();
    let r = reference::run(&m, &starts, 8, 2, 6);
    let mut e = cpu::Ensemble::<f64>::new(&m, &starts, 8);
    e.run::<f64>(2, 6);
    let mut mixed = cpu::Ensemble::<f32>::new(&m, &starts, 8);
    mixed.run::<f64>(2, 6);
    for c in 0..4 {
        assert_eq!(e.chains[c].config(), r[c].config, "chain {c} left the reference path");
        let (x, y) = (e.chains[c].tally, r[c].tally);
        assert!((x[tally::E_SUM] - y[tally::E_SUM]).abs() < 1e-10 * y[tally::E_SUM].abs());
        for k in [tally::HOPS, tally::HOPS_ACCEPTED, tally::SWAPS, tally::SWAPS_ACCEPTED, tally::BONDS, tally::KIN_RATIOS] {
            assert_eq!(x[k], y[k], "tally {k}");
        }
        let y = mixed.chains[c].tally;
        assert!((y[tally::E_SUM] - r[c].tally[tally::E_SUM]).abs() < 1e-4 * r[c].tally[tally::E_SUM].abs());
    }
}

#[test]
fn local_energy_matches_h_applied_in_second_quantization() {
    let m = small();
    let ex = reference::exact(&m);
    assert_eq!(ex.configs.len(), 3150);
    let mut checked = 0;
    for (c, psi, eloc) in ex.configs.iter().step_by(7) {
        let Some((w, _)) = invert(&m.matrix(c), m.pairs) else { continue };
        if psi.abs() < 1e-8 {
            continue;
        }
        let mut ch = reference::Chain::new(&m, c.clone(), w, Stream::new(0, 0));
        let e = ch.energy();
        assert!((e - eloc).abs() < 1e-9 * eloc.abs().max(1.0), "config {c:?}: {e} vs {eloc}");
        checked += 1;
    }
    assert!(checked > 300);
    // A variational energy per site of a t-J state at J = 0.3: negative, and above -t * 4 (the hop bound).
    assert!(ex.energy < 0.0 && ex.energy > -4.0, "{}", ex.energy);
}

/// Mean and error bar of the VMC energy of `chains` chains of the fast f64 code.
fn vmc(m: &Model, chains: usize, sweeps: usize) -> (f64, f64) {
    let starts = initial_states(m, 77, chains).unwrap();
    let mut e = cpu::Ensemble::<f64>::new(m, &starts, 77);
    e.run::<f64>(50, sweeps);
    let means: Vec<f64> = e.chains.iter().map(|c| c.tally[tally::E_SUM] / c.tally[tally::MEASUREMENTS]).collect();
    let n = means.len() as f64;
    let mean = means.iter().sum::<f64>() / n;
    let var = means.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

#[test]
fn vmc_energy_agrees_with_exact_enumeration() {
    let m = small();
    let exact = reference::exact(&m).energy;
    let (mean, err) = vmc(&m, 16, 1500);
    assert!(err > 0.0 && err < 5e-3, "error bar {err}");
    assert!((mean - exact).abs() < 4.0 * err, "VMC {mean} +- {err} vs exact {exact}");
    // The comparison has power: the exact energy of a different wavefunction is many error bars away.
    let other = Model::new(3, Params { doping: 0.2, j: 0.4, ..Params::default() }).unwrap();
    let e_other = reference::exact(&other).energy;
    assert!((e_other - mean).abs() > 8.0 * err, "J = 0.4 gives {e_other}, J = 0.3 gives {mean} +- {err}");
}

#[test]
fn gpu_matches_reference_when_present() {
    let gpu = match crate::gpu::Gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            assert!(std::env::var("QMC_REQUIRE_GPU").is_err(), "QMC_REQUIRE_GPU set but: {e}");
            eprintln!("SKIPPED: {e}");
            return;
        }
    };
    let m = Model::new(5, Params::default()).unwrap();
    let starts = initial_states(&m, 21, 4).unwrap();
    let r = reference::run(&m, &starts, 8, 2, 6);
    let mut g = gpu::GpuEnsemble::<f64, f64>::new(&gpu, &m, &starts, 8).unwrap();
    g.run(2, 6).unwrap();
    for (c, x) in g.results(4).unwrap().iter().enumerate() {
        assert_eq!(x.config, r[c].config, "chain {c} left the reference path");
        assert!((x.tally[tally::E_SUM] - r[c].tally[tally::E_SUM]).abs() < 1e-10 * r[c].tally[tally::E_SUM].abs());
    }
}
