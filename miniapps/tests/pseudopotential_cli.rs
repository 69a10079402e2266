//! The `pseudopotential` program as a user meets it: bad input gets one clear line and exit status 2, a valid
//! quick run exits 0 and writes validated records.

mod common;

use common::*;
use std::process::{Command, Output};

fn pp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pseudopotential")).args(args).output().expect("pseudopotential runs")
}

#[test]
fn bad_input_is_rejected_with_a_sentence() {
    rejects(&pp(&["--atoms", "0"]), "--atoms must be positive");
    rejects(&pp(&["--atoms", "12"]), "not a multiple of 8");
    rejects(&pp(&["--atoms", "4096"]), "more than 1024");
    rejects(&pp(&["--walkers", "0"]), "--walkers must be positive");
    rejects(&pp(&["--walkers", "100000"]), "more than 4096");
    rejects(&pp(&["--quadrature", "7"]), "unknown quadrature '7'");
    rejects(&pp(&["--precision", "quad"]), "unknown precision 'quad'");
    rejects(&pp(&["--jastrow", "maybe"]), "invalid value 'maybe' for '--jastrow");
    rejects(&pp(&["--pairs", "8x4"]), "'8x4' is not ATOMS:WALKERS");
    rejects(&pp(&["--pairs", "12:4"]), "not a multiple of 8");
    rejects(&pp(&["--pairs", "8:0"]), "--walkers must be positive");
    rejects(&pp(&["--pairs", "8:4", "--walkers", "2"]), "cannot be used with");
}

#[test]
fn pairs_run_exactly_the_cases_given() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-pseudopotential-pairs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = pp(&["--pairs", "16:1,8:3,8:1,8:3", "--variants", "cpu", "--precision", "double", "--reps", "1", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("pseudopotential.jsonl")).unwrap();
    let cases: Vec<(&str, &str)> = text
        .lines()
        .map(|l| {
            assert!(l.contains("passed"), "{l}");
            let size = |k: &str| l.split(&format!("\"{k}\":")).nth(1).and_then(|r| r.split([',', '}']).next()).unwrap();
            (size("atoms"), size("walkers"))
        })
        .collect();
    // cells in the order given, each cell's walker counts ascending and once
    assert_eq!(cases, [("16", "1"), ("8", "1"), ("8", "3")], "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tiny_run_passes_and_writes_records() {
    let dir = std::env::temp_dir().join(format!("qmc-cli-pseudopotential-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = pp(&["--atoms", "8", "--walkers", "2", "--check-walkers", "2", "--quadrature", "26", "--variants", "cpu-ref,cpu", "--reps", "1", "--quiet", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(dir.join("pseudopotential.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // cpu-ref once (double), cpu in three precisions
    assert_eq!(lines.len(), 4, "{text}");
    let cpu: Vec<&&str> = lines.iter().filter(|l| l.contains("\"cpu\"")).collect();
    assert_eq!(cpu.len(), 3, "{text}");
    assert!(cpu.iter().all(|l| l.contains("passed") && l.contains("\"atoms\"") && l.contains("\"jastrow\"")), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
