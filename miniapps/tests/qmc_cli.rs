//! The `qmc` driver as a user meets it: bad input gets one clear line and exit status 2, a short valid run exits 0
//! and writes VMC and DMC records whose energies passed the check against the exact He energy.

mod common;

use common::*;
use std::process::{Command, Output};

fn qmc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qmc")).args(args).output().expect("qmc runs")
}

#[test]
fn bad_input_is_rejected_with_a_sentence() {
    rejects(&qmc(&["--system", "ne"]), "unknown system 'ne': known systems are h, he, h2, be, be-hf, heg, heg-hf");
    rejects(&qmc(&["--system", "heg", "--electrons", "16"]), "16 electrons do not fill closed shells: use one of 2, 14, 38");
    rejects(&qmc(&["--system", "heg", "--rs", "0"]), "--rs must be positive, got 0");
    rejects(&qmc(&["--system", "heg", "--gas-walkers", "0"]), "--walkers must be positive");
    rejects(&qmc(&["--system", "heg", "--gas-steps", "10"]), "at least 64");
    rejects(&qmc(&["--tau", "0"]), "time steps must be positive, got 0");
    rejects(&qmc(&["--tau=-0.01"]), "time steps must be positive");
    rejects(&qmc(&["--vmc-tau", "nan"]), "time steps must be positive");
    rejects(&qmc(&["--tau", "0.5"]), "too large for DMC");
    rejects(&qmc(&["--walkers", "0"]), "--walkers must be positive");
    rejects(&qmc(&["--steps", "10"]), "at least 64");
    rejects(&qmc(&["--method", "afqmc"]), "invalid value 'afqmc'");
    rejects(&qmc(&["--balance", "fast"]), "invalid value 'fast' for '--balance <BALANCE>'");
    rejects(&qmc(&["--system", "be", "--atom-walkers", "0"]), "--walkers must be positive");
    rejects(&qmc(&["--system", "be", "--atom-steps", "10"]), "at least 64");
    rejects(&qmc(&["--variants", "cpu-ref"]), "qmc runs the cpu and gpu variants");
    rejects(&qmc(&["--method", "dmc", "--walkers", "1", "--feedback", "1e12", "--steps", "100000", "--tau", "0.05", "--variants", "cpu"]), "DMC population");
    rejects(&qmc(&["--dmc-time", "0"]), "--dmc-time must be positive, got 0");
    rejects(&qmc(&["--dmc-time", "nan"]), "--dmc-time must be positive");
    rejects(&qmc(&["--dmc-time", "1", "--tau", "0.02"]), "--dmc-time 1 at tau 0.02 is 50 generations, too few for a blocking error bar: use at least 64");
    rejects(&qmc(&["--tau-fit", "cubic"]), "unknown time-step fit 'cubic': use linear or quadratic");
    rejects(&qmc(&["--coverage", "5"]), "--coverage 5 is too few runs");
    rejects(&qmc(&["--coverage", "100", "--system", "be", "--variants", "cpu"]), "--coverage compares DMC with an exact energy: be has none that DMC reaches");
    rejects(&qmc(&["--coverage", "100", "--system", "heg", "--variants", "cpu"]), "heg has none");
    rejects(&qmc(&["--coverage", "100", "--variants", "cpu", "--checkpoint", "x.ckpt"]), "--coverage runs many independent DMC runs: drop --checkpoint and --restart");
}

#[test]
fn a_missing_or_malformed_orbital_file_is_rejected_with_a_sentence() {
    let dir = scratch("orbitals");
    let missing = dir.join("none.txt");
    rejects(&qmc(&["--system", "be", "--orbitals", missing.to_str().unwrap()]), &format!("cannot read the orbital file {}", missing.display()));
    // the committed file with one coefficient cut off the first orbital line
    let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/src/atomic/data/be-hf.txt")).unwrap();
    let mut cut = false;
    let bad: String = good
        .lines()
        .map(|l| {
            if l.starts_with("orbital") && !cut {
                cut = true;
                return l.rsplit_once(' ').unwrap().0.to_string() + "\n";
            }
            l.to_string() + "\n"
        })
        .collect();
    let path = dir.join("cut.txt");
    std::fs::write(&path, bad).unwrap();
    rejects(&qmc(&["--system", "be", "--orbitals", path.to_str().unwrap()]), "is malformed: an orbital has");
    std::fs::write(&path, "energy 1 2\n").unwrap();
    rejects(&qmc(&["--system", "be-hf", "--orbitals", path.to_str().unwrap()]), "is malformed: line 1: expected 3 numbers, found 2");
    // a well-formed file of another atom: He-like, Z = 2 with one orbital
    let he = good.replace("nucleus 4", "nucleus 2");
    std::fs::write(&path, he).unwrap();
    let o = qmc(&["--system", "be", "--orbitals", path.to_str().unwrap()]);
    rejects(&o, "be needs Z = 4 with 2");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn single_and_mixed_precision_equal_double_within_error_bars() {
    let dir = scratch("precision");
    let o = qmc(&[
        "--system", "he,heg-hf", "--walkers", "64", "--steps", "4000", "--equil", "50", "--tau", "0.04", "--gas-walkers", "8",
        "--gas-steps", "1000", "--method", "vmc", "--precision", "double,single,mixed", "--quiet", "--variants", "cpu", "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("qmc.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let got: Vec<(&str, &str)> = recs.iter().map(|r| (r["params"]["system"].as_str().unwrap(), r["precision"].as_str().unwrap())).collect();
    assert_eq!(got, [("he", "double"), ("he", "single"), ("he", "mixed"), ("heg-hf", "double"), ("heg-hf", "single"), ("heg-hf", "mixed")], "{text}");
    for r in &recs {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
        // single and mixed carry the comparison with double; the gas also its Hartree-Fock checks in that precision;
        // every error bar converged
        let checks = r["validation"].to_string();
        assert!(checks.contains("blocking converged") && r["extra"]["blocking_converged"] == 1.0, "{r}");
        assert_eq!(checks.contains("vs double"), r["precision"] != "double", "{r}");
        if r["params"]["system"] == "heg-hf" {
            assert!(checks.contains("kinetic - sum k^2/2") && checks.contains("vmc vs hf"), "{r}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_short_run_writes_validated_vmc_and_dmc_records() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-run-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = qmc(&[
        "--system", "he", "--walkers", "64", "--steps", "4000", "--equil", "50", "--tau", "0.04", "--dmc-time", "500", "--precision",
        "double", "--quiet", "--out", dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // the gpu variant, asked for implicitly, runs after the cpu one where there is a GPU and is skipped with one line
    // where there is none
    let gpu = kernels::gpu::Gpu::open(0).is_ok();
    assert!(gpu || stderr(&o).contains("GPU variants skipped"), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("qmc.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let runs: Vec<(&str, &str)> = recs.iter().map(|r| (r["variant"].as_str().unwrap(), r["op"].as_str().unwrap())).collect();
    let want: &[(&str, &str)] = if gpu { &[("cpu", "vmc"), ("cpu", "dmc"), ("gpu", "vmc"), ("gpu", "dmc")] } else { &[("cpu", "vmc"), ("cpu", "dmc")] };
    assert_eq!(runs, want, "{text}");
    for r in &recs {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
        assert_eq!(r["params"]["system"], "he");
        assert_eq!(r["throughput_unit"], "walker steps/s");
        let e = r["extra"]["energy"].as_f64().unwrap();
        let err = r["extra"]["error"].as_f64().unwrap();
        assert!(e > -2.95 && e < -2.85 && err > 0.0 && err < 0.02, "{r}");
        assert!(r["extra"]["population"].as_f64().unwrap() > 40.0);
        assert_eq!(r["extra"]["blocking_converged"], 1.0, "{r}");
    }
    // DMC at tau = 0.04 for 500/Ha: 12500 generations
    assert_eq!(recs[1]["sizes"]["steps"], 12500, "{}", recs[1]);
    assert!(recs[1]["extra"]["energy"].as_f64() < recs[0]["extra"]["energy"].as_f64(), "DMC below VMC: {text}");
    // one time step: no extrapolation, and the log says why there is no comparison with the exact energy
    assert!(String::from_utf8_lossy(&o.stdout).contains("no linear extrapolation to tau = 0"), "{}", String::from_utf8_lossy(&o.stdout));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_electron_gas_without_jastrow_gives_hartree_fock_and_with_it_lies_below() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-heg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = qmc(&[
        "--system", "heg-hf,heg", "--method", "vmc", "--gas-walkers", "8", "--gas-steps", "1000", "--equil", "30", "--quiet", "--precision", "double",
        "--variants", "cpu", "--out", dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("qmc.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let systems: Vec<&str> = recs.iter().map(|r| r["params"]["system"].as_str().unwrap()).collect();
    assert_eq!(systems, ["heg-hf", "heg"], "{text}");
    for r in &recs {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
        assert_eq!(r["sizes"]["electrons"], 14, "{r}");
        // E_HF of 14 electrons at r_s = 1: 8.49148 Ha (kinetic 15.7286, Madelung -5.1179, exchange -2.1192)
        assert!((r["extra"]["hf"].as_f64().unwrap() - 8.49148).abs() < 1e-4, "{r}");
    }
    let checks = recs[0]["validation"].to_string();
    assert!(checks.contains("kinetic - sum k^2/2") && checks.contains("vmc vs hf"), "{checks}");
    assert!(recs[1]["validation"].to_string().contains("vmc below hf"), "{}", recs[1]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_short_be_vmc_matches_hartree_fock_and_lies_above_the_exact_energy() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-be-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = qmc(&["--system", "be-hf,be", "--method", "vmc", "--walkers", "32", "--steps", "4000", "--equil", "50", "--quiet", "--precision", "double", "--variants", "cpu", "--out", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("qmc.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let systems: Vec<&str> = recs.iter().map(|r| r["params"]["system"].as_str().unwrap()).collect();
    assert_eq!(systems, ["be-hf", "be"], "{text}");
    for r in &recs {
        // be-hf: E_VMC = E_HF of the PySCF file within 3 sigma; be: above the exact -14.66736 and below E_HF
        assert_eq!(r["validation"]["status"], "passed", "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A time-step series: one DMC record per tau and one extrapolated to tau = 0, checked against the exact energy with
/// the fit's error bar and no allowance.
#[test]
fn a_time_step_series_is_extrapolated_and_checked_against_the_exact_energy() {
    let dir = scratch("series");
    let o = qmc(&[
        "--system", "he", "--method", "dmc", "--walkers", "32", "--tau", "0.04,0.02", "--dmc-time", "500", "--precision", "double",
        "--variants", "cpu", "--quiet", "--out", dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    let recs = records(&dir);
    let ops: Vec<(&str, &str)> = recs.iter().map(|r| (r["op"].as_str().unwrap(), r["params"]["tau"].as_str().unwrap())).collect();
    assert_eq!(ops, [("dmc", "0.04"), ("dmc", "0.02"), ("dmc-extrapolated", "0")]);
    let fit = &recs[2];
    assert_eq!(fit["validation"]["status"], "passed", "{fit}");
    let checks = fit["validation"].to_string();
    assert!(checks.contains("dmc(tau->0) vs exact") && checks.contains("unconverged"), "{fit}");
    // two points: the line passes through both, E_0 = 2 E(0.02) - E(0.04), sigma_0^2 = 4 sigma(0.02)^2 + sigma(0.04)^2
    let es = |r: &serde_json::Value| (r["extra"]["energy"].as_f64().unwrap(), r["extra"]["error"].as_f64().unwrap());
    let ((e1, s1), (e2, s2), (e0, s0)) = (es(&recs[0]), es(&recs[1]), es(fit));
    assert!((e0 - (2.0 * e2 - e1)).abs() < 1e-9 && (s0 - (4.0 * s2 * s2 + s1 * s1).sqrt()).abs() < 1e-9, "{fit}");
    assert_eq!(fit["extra"]["dof"], 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The electron gas's DMC alone (as the scaling runs have it) is checked: a converged error bar and below
/// Hartree-Fock; a run too short for its error bar fails and says why.
#[test]
fn the_electron_gas_dmc_is_checked_and_fails_when_its_error_bar_does_not_converge() {
    let dir = scratch("gas-dmc");
    let args = |time: &'static str| {
        ["--system", "heg", "--method", "dmc", "--gas-walkers", "8", "--tau", "0.04", "--dmc-time", time, "--precision", "double", "--variants", "cpu", "--quiet", "--out"]
    };
    let o = qmc(&[&args("150")[..], &[dir.join("long").to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    let r = &records(&dir.join("long"))[0];
    assert_eq!(r["validation"]["status"], "passed", "{r}");
    let checks = r["validation"].to_string();
    assert!(checks.contains("blocking converged") && checks.contains("dmc below hf"), "{r}");
    let o = qmc(&[&args("3")[..], &[dir.join("short").to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("the blocking analysis did not converge") && out.contains("run longer (--dmc-time)"), "{out}");
    let r = &records(&dir.join("short"))[0];
    assert_eq!(r["validation"]["status"], "failed", "{r}");
    assert_eq!(r["extra"]["blocking_converged"], 0.0, "{r}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The coverage test, small enough for CI: 40 independent He DMC runs of 16 walkers (seeded apart), each a
/// tau = 0.04, 0.02 series of 500/Ha per step extrapolated to tau = 0, and the fractions of runs whose error bar
/// covers the exact energy within one and two error bars against a normal distribution's 68.3% and 95.4%
/// (`kernels::qmc::coverage`: bands of 4 binomial standard deviations, +-29% and +-13% at 40 runs, widened below for
/// the Student t of 16 blocks and a bias of a quarter error bar); the pooled mean bounds the bias. Only gross
/// failures show at 40 runs (error bars half their size), and 16 walkers carry a population-control bias of about
/// 0.4 error bars (+2.8(13) mHa measured over these 40 runs) that only more runs would resolve; the GPU host's
/// `qmc-coverage` stage runs 300 of 64 walkers (0.24 error bars of bias). Release build: 45 s of CPU.
#[test]
fn he_dmc_error_bars_cover_the_exact_energy() {
    let dir = scratch("coverage");
    let o = qmc(&[
        "--coverage", "40", "--system", "he", "--method", "dmc", "--walkers", "16", "--tau", "0.04,0.02", "--dmc-time", "500", "--equil",
        "100", "--precision", "double", "--variants", "cpu", "--quiet", "--out", dir.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let r = &records(&dir)[0];
    assert_eq!((r["op"].as_str(), r["validation"]["status"].as_str()), (Some("dmc-coverage"), Some("passed")), "{r}");
    assert_eq!((r["sizes"]["runs"].as_u64(), r["params"]["tau"].as_str()), (Some(40), Some("0")), "{r}");
    assert!(r["extra"]["converged_runs"].as_f64().unwrap() >= 38.0, "{r}");
    assert!(out.contains("within 1 error bar") && out.contains("pooled"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The records of a run in `dir`, as JSON values.
fn records(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("qmc.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// A short He DMC in double (the scale-out tests compare runs of one precision): 500/Ha at tau = 0.04, long enough
/// for a converged error bar.
const HE_DMC: [&str; 16] = ["--method", "dmc", "--system", "he", "--walkers", "32", "--steps", "12500", "--tau", "0.04", "--precision", "double", "--quiet", "--variants", "cpu", "--out"];

#[test]
fn two_thread_ranks_run_dmc_and_record_their_traffic() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-ranks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = qmc(&[&HE_DMC[..], &[dir.to_str().unwrap(), "--ranks", "2"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = records(&dir);
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r["validation"]["status"], "passed", "{r}");
    assert_eq!(r["sizes"]["ranks"], 2, "{r}");
    assert_eq!(r["params"]["transport"], "threads", "{r}");
    assert!(r["extra"]["migrated_per_gen"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["extra"]["compute_per_gen_s"].as_f64().unwrap() > 0.0, "{r}");
    waits_recorded(r, 0.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Who the ranks waited for: each generation's largest compute and wait at least the means over ranks, and the
/// slowest rank's own compute between the two.
fn waits_recorded(r: &serde_json::Value, balance_speed: f64) {
    let x = |k: &str| r["extra"][k].as_f64().unwrap_or_else(|| panic!("{k} missing: {r}"));
    assert!(x("compute_max_per_gen_s") >= x("compute_slowest_rank_per_gen_s"), "{r}");
    assert!(x("compute_slowest_rank_per_gen_s") >= x("compute_per_gen_s"), "{r}");
    assert!(x("reduce_max_per_gen_s") >= x("reduce_per_gen_s") && x("reduce_per_gen_s") > 0.0, "{r}");
    assert_eq!(x("balance_speed"), balance_speed, "{r}");
}

#[test]
fn two_thread_ranks_sharing_walkers_by_speed_pass_the_energy_check() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-speed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = qmc(&[&HE_DMC[..], &[dir.to_str().unwrap(), "--ranks", "2", "--balance", "speed"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let recs = records(&dir);
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["validation"]["status"], "passed", "{}", recs[0]);
    waits_recorded(&recs[0], 1.0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_run_stopped_at_a_checkpoint_and_restarted_ends_where_an_unstopped_one_does() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (whole, part, ck) = (dir.join("whole"), dir.join("part"), dir.join("he.ckpt"));
    let (ws, ps) = (whole.to_str().unwrap(), part.to_str().unwrap());
    let o = qmc(&[&HE_DMC[..], &[ws]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let o = qmc(&[&HE_DMC[..], &[ps, "--checkpoint", ck.to_str().unwrap(), "--checkpoint-every", "100", "--stop-after", "300"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(ck.exists() && !part.join("qmc.jsonl").exists(), "a stopped run writes its checkpoint and no record");
    let o = qmc(&[&HE_DMC[..], &[ps, "--restart", ck.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (&records(&whole)[0], &records(&part)[0]);
    assert_eq!(b["validation"]["status"], "passed", "{b}");
    assert_eq!(a["extra"]["energy"], b["extra"]["energy"], "bit-identical energies:\n{a}\n{b}");
    assert_eq!(a["extra"]["error"], b["extra"]["error"]);
    // a checkpoint of He refused for H2, for another tau, and a non-checkpoint refused: exit 2, file untouched
    let before = std::fs::read(&ck).unwrap();
    let c = ck.to_str().unwrap();
    rejects(&qmc(&["--method", "dmc", "--system", "h2", "--walkers", "32", "--tau", "0.04", "--precision", "double", "--variants", "cpu", "--restart", c]), "belongs to another run: it was written with system he double, this run has h2 double");
    rejects(&qmc(&["--method", "dmc", "--walkers", "32", "--tau", "0.04", "--precision", "mixed", "--variants", "cpu", "--restart", c]), "system he double, this run has he mixed");
    rejects(&qmc(&["--method", "dmc", "--walkers", "32", "--tau", "0.02", "--precision", "double", "--variants", "cpu", "--restart", c]), "tau 0.04, this run has 0.02");
    std::fs::write(dir.join("cut.ckpt"), &before[..before.len() - 10]).unwrap();
    rejects(&qmc(&["--method", "dmc", "--walkers", "32", "--tau", "0.04", "--precision", "double", "--variants", "cpu", "--restart", dir.join("cut.ckpt").to_str().unwrap()]), "truncated or damaged");
    rejects(&qmc(&["--method", "dmc", "--walkers", "32", "--tau", "0.04", "--precision", "double", "--variants", "cpu", "--restart", "Cargo.toml"]), "is not a qmc DMC checkpoint");
    assert_eq!(std::fs::read(&ck).unwrap(), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_gpu_variant_needs_a_gpu_and_one_rank_without_checkpoints() {
    if kernels::gpu::Gpu::open(0).is_err() {
        rejects(&qmc(&["--variants", "gpu"]), "the gpu variant was asked for, but");
        rejects(&qmc(&["--variants", "cpu,gpu", "--method", "vmc", "--steps", "64"]), "the gpu variant was asked for, but");
    } else {
        rejects(&qmc(&["--variants", "gpu", "--ranks", "2"]), "the gpu variant runs one rank without checkpoints");
        rejects(&qmc(&["--variants", "gpu", "--precision", "double", "--checkpoint", "x.ckpt"]), "the gpu variant runs one rank without checkpoints");
        rejects(&qmc(&["--variants", "gpu", "--system", "heg", "--gas-walkers", "40000"]), "more than the gpu variant holds for the electron gas");
    }
}

#[test]
fn scale_out_options_reject_what_they_cannot_do() {
    rejects(&qmc(&["--ranks", "0"]), "--ranks must be at least 1");
    rejects(&qmc(&["--walkers", "2", "--ranks", "3"]), "fewer than the 3 ranks");
    rejects(&qmc(&["--system", "he,h2", "--checkpoint", "x.ckpt"]), "one --system, one --tau");
    rejects(&qmc(&["--tau", "0.02,0.01", "--restart", "x.ckpt"]), "one --system, one --tau");
    rejects(&qmc(&["--precision", "double,mixed", "--checkpoint", "x.ckpt"]), "one --precision");
    rejects(&qmc(&["--precision", "double", "--checkpoint", "x.ckpt", "--checkpoint-every", "0"]), "--checkpoint-every must be at least 1");
    rejects(&qmc(&["--stop-after", "10"]), "--checkpoint");
}

#[test]
fn a_population_that_dies_out_leaves_its_last_good_generation_in_the_checkpoint() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-death-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ck = dir.join("dying.ckpt");
    let o = qmc(&["--method", "dmc", "--walkers", "1", "--feedback", "1e12", "--steps", "100000", "--tau", "0.05", "--precision", "double", "--variants", "cpu", "--checkpoint", ck.to_str().unwrap()]);
    rejects(&o, "died out");
    assert!(stderr(&o).contains(&format!("is saved in {}", ck.display())), "{}", stderr(&o));
    assert!(std::fs::metadata(&ck).unwrap().len() > 100);
    std::fs::remove_dir_all(&dir).unwrap();
}
