//! The `ewald` binary: bad input gives exit 2 and one clear sentence; a tiny valid run passes and writes records.

use std::process::Command;

fn ewald(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ewald")).args(args).arg("--quiet").output().expect("ewald runs")
}

#[test]
fn bad_input_is_refused_with_a_sentence() {
    for (args, words) in [
        (vec!["--electrons", "0"], "must be positive"),
        (vec!["--rs=-1"], "--rs must be a positive"),
        (vec!["--electrons", "10", "--ions", "3"], "does not divide"),
        (vec!["--alpha", "0"], "--alpha must be a positive"),
        (vec!["--walkers", "70000"], "more than one launch"),
        (vec!["--ops", "force"], "unknown operation"),
    ] {
        let out = ewald(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn tiny_runs_pass_and_write_records() {
    let dir = std::env::temp_dir().join(format!("ewald-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    // 3D with ions, and 2D with a user alpha (checked against the automatic choice)
    let runs: [&[&str]; 2] = [
        &["--lattice", "bcc", "--electrons", "8", "--ions", "2", "--walkers", "3", "--reps", "2", "--out", d],
        &["--lattice", "triangular", "--electrons", "12", "--walkers", "2", "--alpha", "0.5", "--reps", "2", "--out", d],
    ];
    for args in runs {
        let out = ewald(args);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let text = std::fs::read_to_string(dir.join("ewald.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for lattice in ["bcc", "triangular"] {
        for op in ["energy", "move"] {
            for prec in ["double", "single", "mixed"] {
                let found = records.iter().any(|r| {
                    r["params"]["lattice"] == lattice && r["op"] == op && r["precision"] == prec && r["variant"] == "cpu" && r["validation"]["status"] == "passed"
                });
                assert!(found, "no passed cpu record for {lattice} {op} {prec}");
            }
        }
    }
    assert!(text.contains("energy vs automatic alpha"), "the given alpha is checked against the automatic one");
    let _ = std::fs::remove_dir_all(&dir);
}
