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
    rejects(&solid(&["--electrons", "4096"]), "more than 2048");
    rejects(&solid(&["--walkers", "100000"]), "more than 4096");
    rejects(&solid(&["--tau", "0"]), "--tau 0 must be in (0, 1]");
    rejects(&solid(&["--electrons", "2048", "--walkers", "1024"]), "GB of walker state");
    rejects(&solid(&["--method", "rmc"]), "invalid value 'rmc' for '--method");
}

#[test]
fn a_tiny_run_passes_and_writes_records() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-solid-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = solid(&["--electrons", "64", "--walkers", "2,4", "--cpu-walkers", "2", "--variants", "cpu", "--precision", "double,mixed", "--reps", "1", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("solid.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // one timing per precision, recorded for each walker count
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines.iter().all(|l| l.contains("passed") && l.contains("\"frac_orbitals\"") && l.contains("\"electron_moves_per_s\"")), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
