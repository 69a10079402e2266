//! The `gemm` program: bad input exits 2 with one clear sentence; a tiny valid run exits 0 and writes passing
//! records for every case asked for.

use std::process::Command;

fn gemm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gemm")).args(args).arg("--quiet").output().expect("gemm runs")
}

fn assert_bad(args: &[&str], words: &[&str]) {
    let out = gemm(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    for w in words {
        assert!(err.contains(w), "{args:?}: message lacks '{w}': {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_input_is_refused_clearly() {
    assert_bad(&["--walkers", "0"], &["--walkers", "positive"]);
    assert_bad(&["--molecules", "water"], &["unknown molecule 'water'", "hmx"]);
    assert_bad(&["--op", "fft"], &["unknown --op 'fft'"]);
    assert_bad(&["--square", "100000"], &["--square 100000 is too large"]);
    assert_bad(&["--inner", "0"], &["--inner must be positive"]);
    assert_bad(&["--algo", "f64", "--precision", "single"], &["none of the --algo values"]);
    assert_bad(&["--algo", "kahan"], &["unknown algo 'kahan'"]);
}

#[test]
fn a_tiny_run_writes_passing_records() {
    let dir = std::env::temp_dir().join(format!("gemm-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = gemm(&[
        "--molecules", "acetic-acid", "--walkers", "2", "--square", "33", "--inner", "40", "--reps", "1", "--warmup", "0",
        "--variants", "cpu-ref,cpu", "--check-rows", "8", "--out", dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(dir.join("gemm.jsonl")).expect("records written");
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let count = |op: &str, variant: &str| recs.iter().filter(|r| r["op"] == op && r["variant"] == variant).count();
    // basis: one reference (double) and three CPU precisions; gemm: six CPU algorithms on each of three shapes.
    assert_eq!(count("basis", "cpu-ref"), 1);
    assert_eq!(count("basis", "cpu"), 3);
    assert_eq!(count("gemm", "cpu"), 18);
    let fig5 = recs.iter().find(|r| r["params"]["molecule"] == "fig5").unwrap();
    assert_eq!((fig5["sizes"]["m"].as_u64(), fig5["sizes"]["k"].as_u64()), (Some(1024), Some(40)));
    for r in recs.iter().filter(|r| r["variant"] == "cpu") {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
    }
    let kahan = recs.iter().find(|r| r["params"]["algo"] == "kahan-f32" && r["params"]["molecule"] == "acetic-acid").unwrap();
    assert_eq!(kahan["sizes"]["m"], 2 * 32 * 5);
    let _ = std::fs::remove_dir_all(&dir);
}
