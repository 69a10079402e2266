//! The `determinant` binary: bad input gets one clear message and exit 2; a tiny valid case writes records that
//! passed validation.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_determinant")).args(args).arg("--quiet").output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    for (args, needle) in [
        (vec!["--n", "0"], "--n must be positive"),
        (vec!["--n", "8", "--delay", "65"], "--delay 65 is too large"),
        (vec!["--n", "8", "--accept", "1.5"], "not a probability"),
        (vec!["--n", "8", "--ops", "ratio,fly"], "unknown op 'fly'"),
    ] {
        let (code, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: expected '{needle}' in: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn tiny_case_writes_passing_records() {
    let dir = std::env::temp_dir().join(format!("qmc-determinant-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (code, err) = run(&[
        "--n", "12", "--walkers", "3", "--delay", "1,4", "--steps", "10", "--recompute", "5", "--drift-updates", "8",
        "--reps", "2", "--variants", "cpu", "--out", dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("determinant.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // 3 precisions x (ratio, update, delayed k=4, invert, moves k=1 and 4), plus drift in single and mixed
    assert_eq!(recs.len(), 3 * 6 + 2, "{text}");
    for op in ["ratio", "update", "delayed", "invert", "moves", "drift"] {
        assert!(recs.iter().any(|r| r["op"] == op), "no {op} record");
    }
    for r in &recs {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
