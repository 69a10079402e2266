//! The `lattice` program: bad input gets one clear line and exit 2; a tiny run passes its validation and writes
//! records.

use std::process::Command;

fn lattice(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lattice")).args(args).args(["--quiet", "--variants", "cpu-ref,cpu"]).output().unwrap()
}

/// The records of a run that must succeed, written to a folder of its own (`tag`), which is removed.
fn records(tag: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let dir = std::env::temp_dir().join(format!("lattice-cli-{tag}-{}", std::process::id()));
    let out = lattice(&[args, &["--out", dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.join("lattice.jsonl")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn bad_input_is_refused_with_a_sentence() {
    for (args, needle) in [
        (vec!["--lattice", "4"], "odd L"),
        (vec!["--chains", "0"], "--chains must be positive"),
        (vec!["--lattice", "5", "--sweeps", "0"], "must be positive"),
        (vec!["--lattice", "5", "--doping", "1.5"], "doping"),
        (vec!["--lattice", "5", "--chains", "1"], "at least 2"),
        (vec!["--lattice", "5", "--bfactor", "12"], "use 8, 16 or 32"),
        (vec!["--lattice", "5", "--registers", "96"], "use 128, 80 or 64"),
        (vec!["--lattice", "5", "--residual-limit", "-0.1"], "not a number >= 0"),
        (vec!["--lattice", "5", "--residual-limit", "nan"], "not a number >= 0"),
    ] {
        let out = lattice(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn tiny_run_passes_and_writes_records() {
    let recs = records("tiny", &[
        "--lattice", "5", "--chains", "4", "--sweeps", "2", "--equil", "1", "--reps", "1", "--warmup", "0",
        "--precision", "double,single",
    ]);
    // One reference record, then serial and parallel cpu in each of two precisions.
    assert_eq!(recs.len(), 1 + 2 * 2);
    for r in recs.iter().filter(|r| r["variant"] == "cpu") {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
        assert!(r["extra"]["sweeps_per_s"].as_f64().unwrap() > 0.0);
    }
    assert!(recs.iter().any(|r| r["params"]["mode"] == "serial" && r["system"]["threads_used"] == 1));
    // Single: by default at L = 5 the inverse is rebuilt on the residual check alone (kernels::lattice::
    // default_recompute and default_residual_limit), and the statistical energy check instead of path identity.
    for r in recs.iter().filter(|r| r["variant"] == "cpu" && r["precision"] == "single") {
        assert_eq!(r["extra"]["recompute_sweeps"], 0.0);
        assert_eq!(r["extra"]["residual_limit"], kernels::lattice::RESIDUAL_LIMIT);
        let checks = r["validation"]["checks"].as_array().unwrap();
        assert!(checks.iter().any(|c| c["quantity"] == "energy (error bars)" && c["passed"] == true), "{r}");
        assert!(!checks.iter().any(|c| c["quantity"] == "diverged chains"), "{r}");
    }
}

#[test]
fn records_of_enough_chains_check_that_their_error_bar_converged() {
    let recs = records("kurtosis", &[
        "--lattice", "5", "--chains", "40", "--sweeps", "4", "--equil", "1", "--reps", "1", "--warmup", "0",
        "--precision", "double", "--serial-max-chains", "0", "--check-chains", "2",
    ]);
    let cpu: Vec<&serde_json::Value> = recs.iter().filter(|r| r["variant"] == "cpu").collect();
    assert_eq!(cpu.len(), 1);
    let checks = cpu[0]["validation"]["checks"].as_array().unwrap();
    let conv = checks.iter().find(|c| c["quantity"] == "error bar converged (kurtosis of chain means)").expect("the check");
    assert_eq!((conv["passed"].as_bool(), conv["compared"].as_u64()), (Some(true), Some(40)), "{conv}");
    let k = cpu[0]["extra"]["chain_kurtosis"].as_f64().unwrap();
    assert!(k > 1.0 && k < kernels::lattice::KURTOSIS_MAX, "{k}");
    assert!(cpu[0]["extra"]["farthest_chain"].as_f64().unwrap() < 40.0);
}

/// Mixed on the CPU updates W in f32 up to L = 9 (the GPU's scheme, with the residual check) and runs double's chains
/// screened in f32 above (`kernels::lattice::screens_mixed`); each record says which, and both pass their checks.
#[test]
fn cpu_mixed_is_screened_only_above_l9() {
    let recs = records("mixed", &[
        "--lattice", "5,11", "--chains", "4", "--sweeps", "2", "--equil", "1", "--reps", "1", "--warmup", "0",
        "--precision", "mixed", "--serial-max-chains", "0",
    ]);
    let cpu: Vec<&serde_json::Value> = recs.iter().filter(|r| r["variant"] == "cpu").collect();
    assert_eq!(cpu.len(), 2, "{recs:?}");
    for r in cpu {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
        let (l, pairs) = (r["sizes"]["L"].as_f64().unwrap(), r["sizes"]["pairs"].as_f64().unwrap() as usize);
        let screened = l > 9.0;
        assert_eq!(kernels::lattice::screens_mixed(pairs), screened, "L = {l}, {pairs} pairs");
        assert_eq!(r["extra"]["f64_decisions"], if screened { 1.0 } else { 0.0 }, "{r}");
        // screened chains are double's: no residual check; W in f32 up to L = 9 rebuilds on it
        let limit = if screened { 0.0 } else { kernels::lattice::RESIDUAL_LIMIT };
        assert_eq!(r["extra"]["residual_limit"], limit, "{r}");
        let checks = r["validation"]["checks"].as_array().unwrap();
        let path = checks.iter().any(|c| c["quantity"] == "diverged chains");
        assert_eq!(path, screened, "path identity is checked exactly where the chains are double's: {r}");
    }
}
