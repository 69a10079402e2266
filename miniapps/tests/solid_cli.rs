//! The `solid` program as a user meets it: bad input gets one clear line and exit status 2, a valid quick run exits
//! 0 and writes validated records with the per-class time fractions.

mod common;

use common::*;
use std::process::{Command, Output};

fn solid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_solid")).args(args).output().expect("solid runs")
}

#[test]
fn bad_input_is_rejected_with_a_sentence() {
    rejects(&solid(&["--electrons", "0"]), "--electrons must be positive");
    rejects(&solid(&["--electrons", "100"]), "not a multiple of 32");
    rejects(&solid(&["--electrons", "8192"]), "more than 4096");
    rejects(&solid(&["--delay", "65"]), "--delay 65 is more than 64");
    rejects(&solid(&["--walkers", "100000"]), "more than 4096");
    rejects(&solid(&["--tau", "0"]), "--tau 0 must be in (0, 1]");
    rejects(&solid(&["--electrons", "4096", "--walkers", "1024"]), "GB of walker state");
    rejects(&solid(&["--method", "rmc"]), "invalid value 'rmc' for '--method");
    rejects(&solid(&["--ranks", "0"]), "--ranks must be at least 1");
    rejects(&solid(&["--check-steps", "0"]), "--check-steps must be at least 1");
    rejects(&solid(&["--ranks", "3", "--walkers", "8,2", "--variants", "cpu"]), "--walkers 2 is fewer than the 3 ranks: every rank needs walkers");
    rejects(&solid(&["--ranks", "2", "--method", "vmc", "--variants", "cpu"]), "--ranks runs DMC");
    rejects(&solid(&["--sync", "later"]), "invalid value 'later' for '--sync");
    rejects(&solid(&["--ranks", "2", "--variants", "cpu", "--lag", "2"]), "--lag and --spread tune lagged ranks: add --ranks and --sync lagged");
    rejects(&solid(&["--ranks", "2", "--variants", "cpu", "--sync", "lagged", "--lag", "0"]), "--lag 0 would finish a sum before it is started");
    rejects(&solid(&["--ranks", "2", "--variants", "cpu", "--sync", "lagged", "--spread", "1"]), "--spread 1 is not a ratio above 1");
    rejects(&solid(&["--ranks", "2", "--variants", "cpu", "--sync", "lagged", "--spread", "NaN"]), "--spread NaN is not a ratio above 1");
    // the electron gas: closed shells only, its own flags only with it
    rejects(&solid(&["--system", "gas", "--electrons", "16"]), "--electrons 16 is not a closed shell of the electron gas: use one of 2, 14, 38, 54, 66, 114, 162, 186, 246, 294, 342, ...");
    rejects(&solid(&["--system", "gas", "--electrons", "15"]), "not a closed shell");
    rejects(&solid(&["--system", "gas", "--rs", "0"]), "--rs 0 must be a positive number of bohr");
    rejects(&solid(&["--rs", "2"]), "--rs applies to --system gas only");
    rejects(&solid(&["--jastrow", "off"]), "--jastrow applies to --system gas only");
    rejects(&solid(&["--system", "gas", "--jastrow", "maybe"]), "invalid value 'maybe' for '--jastrow");
    rejects(&solid(&["--system", "metal"]), "invalid value 'metal' for '--system");
}

/// The gas over two thread ranks: the same population control and migration as the carbon solid's, the record keyed
/// by the gas's system, r_s and Jastrow beside the ranks' keys, validated (sampled walkers against the reference on
/// every rank, one trial energy on all ranks). Carbon's ranks records keep their cell's name.
#[test]
fn the_gas_runs_over_ranks() {
    let dir = scratch("solid-gas-ranks");
    let o = solid(&["--system", "gas", "--electrons", "14", "--walkers", "8", "--ranks", "2", "--steps", "3", "--tau", "0.05", "--variants", "cpu", "--precision", "double", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("solid.jsonl")).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    for want in ["passed", "\"system\":\"gas\"", "\"rs\":\"1\"", "\"jastrow\":\"on\"", "\"ranks\":2", "\"transport\":\"threads\"", "\"generations_run\":3", "E_est spread", "sampled walkers' local energy vs reference"] {
        assert!(text.contains(want), "{want} missing: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Lagged ranks (--sync lagged): the gas over two thread ranks runs, passes its checks and records params.sync and
/// the share of generations that combed over all ranks; every generation is in the record; with --lag and --spread
/// too, which the record names (and only then), and with shares by speed (params.balance).
#[test]
fn the_gas_runs_over_lagged_ranks() {
    let dir = scratch("solid-gas-lagged");
    let base = ["--system", "gas", "--electrons", "14", "--walkers", "8", "--ranks", "2", "--steps", "6", "--tau", "0.05", "--variants", "cpu", "--precision", "double", "--sync", "lagged", "--quiet", "--out", dir.to_str().unwrap()];
    for (more, named) in [(&[][..], false), (&["--lag", "2", "--spread", "1.5"][..], true), (&["--balance", "speed"][..], false)] {
        let o = solid(&[&base[..], more].concat());
        assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
        let text = std::fs::read_to_string(dir.join("solid.jsonl")).unwrap();
        let last = text.lines().last().unwrap();
        for want in ["passed", "\"sync\":\"lagged\"", "\"ranks\":2", "\"generations_run\":6", "\"rebalances_per_gen\"", "E_est spread"] {
            assert!(last.contains(want), "{more:?}: {want} missing: {last}");
        }
        assert_eq!(last.contains("\"lag\":\"2\"") && last.contains("\"spread\":\"1.5\""), named, "{more:?}: {last}");
        assert_eq!(last.contains("\"balance\":\"speed\""), more.contains(&"speed"), "{more:?}: {last}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The gas without the Jastrow in VMC: every walker's kinetic energy is T_0 at every step (a check of the record),
/// the record carries its system, r_s and Jastrow and the energies E_VMC, its error bar and E_HF; the few steps of
/// this run leave the blocking analysis unconverged, which the record says (hf_converged 0) without a check.
#[test]
fn a_gas_run_records_its_exact_checks() {
    let dir = scratch("solid-gas");
    let o = solid(&["--system", "gas", "--electrons", "14", "--jastrow", "off", "--method", "vmc", "--walkers", "4", "--cpu-walkers", "4", "--steps", "20", "--variants", "cpu", "--precision", "double,mixed", "--reps", "1", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("solid.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for l in &lines {
        for want in ["passed", "\"system\":\"gas\"", "\"rs\":\"1\"", "\"jastrow\":\"off\"", "kinetic energy = T_0", "\"e_vmc\"", "\"e_vmc_error\"", "\"e_hf\"", "\"hf_converged\":0.0"] {
            assert!(l.contains(want), "{want} missing: {l}");
        }
        // no ions: no pseudopotential time, floor or work
        assert!(l.contains("\"frac_pseudopotential\":0.0") && !l.contains("floor_s_pseudopotential"), "{l}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The gas in DMC: the record carries E_DMC, its error bar and E_HF; the few generations of this run leave the
/// blocking analysis unconverged, which the record says (dmc_converged 0) without a check against E_HF.
#[test]
fn a_gas_dmc_run_records_its_energy() {
    let dir = scratch("solid-gas-dmc");
    let o = solid(&["--system", "gas", "--electrons", "14", "--method", "dmc", "--walkers", "4", "--cpu-walkers", "4", "--steps", "20", "--tau", "0.05", "--variants", "cpu", "--precision", "double", "--reps", "1", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("solid.jsonl")).unwrap();
    for want in ["passed", "\"system\":\"gas\"", "\"e_dmc\"", "\"e_dmc_error\"", "\"e_hf\"", "\"dmc_converged\":0.0"] {
        assert!(text.contains(want), "{want} missing: {text}");
    }
    assert!(!text.contains("\"e_vmc\"") && !text.contains("below the Hartree-Fock energy"), "{text}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("not checked against E_HF: the blocking analysis did not converge"), "the run says why it made no energy check");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Two thread ranks of the cpu variant: one record per precision with the scaling extras, validated (walker 0 and
/// migrated walkers against the reference on every rank, one trial energy on all ranks).
#[test]
fn a_two_rank_run_records_the_scaling_extras() {
    let dir = scratch("solid-ranks");
    let o = solid(&["--electrons", "64", "--walkers", "6", "--ranks", "2", "--steps", "3", "--tau", "0.3", "--variants", "cpu", "--precision", "double,mixed", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("solid.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    for l in &lines {
        for want in ["passed", "\"ranks\":2", "\"system\":\"C16\"", "\"transport\":\"threads\"", "\"compute_per_gen_s\"", "\"migrate_per_gen_s\"", "\"generations_run\":3", "E_est spread"] {
            assert!(l.contains(want), "{want} missing: {l}");
        }
        // who the ranks waited for: each generation's largest compute, at least the slowest rank's own, at least
        // the mean over ranks
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        let x = |k: &str| r["extra"][k].as_f64().unwrap_or_else(|| panic!("{k} missing: {l}"));
        assert!(x("compute_max_per_gen_s") >= x("compute_slowest_rank_per_gen_s") && x("compute_slowest_rank_per_gen_s") >= x("compute_per_gen_s") && x("compute_per_gen_s") > 0.0, "{l}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tiny_run_passes_and_writes_records() {
    let dir = scratch("solid");
    let o = solid(&["--electrons", "64", "--walkers", "2,4", "--cpu-walkers", "2", "--variants", "cpu", "--precision", "double,single,mixed", "--reps", "1", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("solid.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // one timing per precision, recorded for each walker count
    assert_eq!(lines.len(), 6, "{text}");
    for p in ["double", "single", "mixed"] {
        assert_eq!(lines.iter().filter(|l| l.contains(&format!("\"precision\":\"{p}\""))).count(), 2, "{p}: {text}");
    }
    assert!(lines.iter().all(|l| l.contains("passed") && l.contains("\"frac_orbitals\"") && l.contains("\"electron_moves_per_s\"")), "{text}");
    // the delay chosen by size (32 per spin: 8; single: rank-1 updates, `delay` says why) and the floor of a step
    // beside it
    for l in &lines {
        let delay = if l.contains("\"precision\":\"single\"") { "1" } else { "8" };
        assert!(l.contains(&format!("\"delay\":\"{delay}\"")) && l.contains("\"floor_s_step\"") && l.contains("\"floor_s_determinant\""), "{l}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
