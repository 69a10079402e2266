//! The `jastrow` binary: bad input exits 2 with one clear sentence; a tiny valid run exits 0 and writes records
//! that passed validation.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_jastrow")).args(args).arg("--quiet").output().expect("run jastrow");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_inputs_exit_2_with_a_clear_message() {
    let (code, err) = run(&["--electrons", "1", "--variants", "cpu"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--electrons 1 is too few"), "{err}");
    let (code, err) = run(&["--term", "p", "--open", "--variants", "cpu"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs the periodic cell"), "{err}");
    let (code, err) = run(&["--term", "p", "--stars", "40", "--variants", "cpu"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--stars 40 is out of range"), "{err}");
    let (code, err) = run(&["--term", "q", "--variants", "cpu"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown term 'q'"), "{err}");
}

#[test]
fn a_tiny_run_passes_and_writes_records() {
    let dir = std::env::temp_dir().join(format!("jastrow-cli-{}", std::process::id()));
    let (code, err) = run(&[
        "--term", "bspline,p", "--electrons", "10", "--walkers", "3", "--moves", "3", "--ions", "2",
        "--variants", "cpu-ref,cpu", "--reps", "1", "--warmup", "0", "--out", dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("jastrow.jsonl")).expect("records written");
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // two terms x three ops x three precisions on cpu, plus vgl and ratio of the reference in double per term
    assert_eq!(recs.len(), 2 * (9 + 2), "{text}");
    for op in ["vgl", "ratio", "accept"] {
        for term in ["bspline", "p"] {
            let cpu: Vec<_> = recs.iter().filter(|r| r["op"] == op && r["variant"] == "cpu" && r["params"]["term"] == term).collect();
            assert_eq!(cpu.len(), 3, "{op} {term}");
            assert!(cpu.iter().all(|r| r["validation"]["status"] == "passed"), "{op} {term}: {cpu:?}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `QMC_SIMD` lowers the CPU side's instruction set (to time what a smaller core runs), and the records say so; a
/// value that names no set, or more than the CPU has, is refused before anything runs.
#[test]
fn qmc_simd_lowers_the_instruction_set_and_the_records_say_so() {
    let jastrow = |simd: &str, dir: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_jastrow"))
            .env("QMC_SIMD", simd)
            .args(["--term", "u", "--electrons", "10", "--walkers", "2", "--moves", "2", "--variants", "cpu", "--precision", "double"])
            .args(["--reps", "1", "--warmup", "0", "--quiet", "--out", dir.to_str().unwrap()])
            .output()
            .expect("run jastrow");
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let dir = std::env::temp_dir().join(format!("jastrow-simd-{}", std::process::id()));
    let (code, err) = jastrow("baseline", &dir);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.join("jastrow.jsonl")).expect("records written");
    let best = kernels::simd::detected();
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["validation"]["status"], "passed", "{line}");
        assert_eq!(r["system"]["cpu_isa"], "baseline", "{line}");
        let lowered = r["system"].get("cpu_isa_lowered_from").and_then(|v| v.as_str());
        assert_eq!(lowered, (best != "baseline").then_some(best), "{line}");
    }
    std::fs::remove_dir_all(&dir).ok();
    let (code, err) = jastrow("sse9", &dir);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
    assert!(err.contains("QMC_SIMD=\"sse9\": not an instruction set"), "{err}");
    assert!(!dir.exists(), "nothing written");
}
