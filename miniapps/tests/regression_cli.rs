//! The regression checks of issue #23 as their scripts meet them, on synthetic records and tables (no GPU, no
//! valgrind): the planted slowdown's variable (`QMC_PLANT_SLOWDOWN`), `qmcbench compare --stat mean` in the GPU host's
//! `regression` stage (noise of two unchanged runs, the planted kernel caught) with `qmcbench compare-history` (each case
//! against its history in the device's committed records) and
//! `qmcbench compare-instructions` of `scripts/instr-check.sh`.

mod common;
use common::qmcbench;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qmc-regression-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A folder of GPU records (the test record of an H100), one per (kernel, mean time); `None`: a record written
/// before the mean existed.
fn folder(dir: &Path, cases: &[(&str, Option<f64>)]) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let template: serde_json::Value = serde_json::from_str(include_str!("data/record.json")).unwrap();
    for (kernel, mean) in cases {
        let mut r = template.clone();
        r["kernel"] = (*kernel).into();
        match mean {
            Some(m) => r["time"]["mean"] = (*m).into(),
            None => {
                r["time"].as_object_mut().unwrap().remove("mean");
            }
        }
        let file = dir.join(format!("{kernel}.jsonl"));
        let mut old = std::fs::read_to_string(&file).unwrap_or_default();
        old.push_str(&format!("{r}\n"));
        std::fs::write(file, old).unwrap();
    }
    dir.display().to_string()
}

#[test]
fn a_bad_planted_slowdown_is_one_clear_error() {
    let run = |plant: &str| {
        Command::new(env!("CARGO_BIN_EXE_qmcbench"))
            .args(["run", "bspline", "--grid", "8", "--orbitals", "8", "--walkers", "1", "--variants", "cpu", "--precision", "double", "--reps", "1", "--quiet"])
            .env("QMC_PLANT_SLOWDOWN", plant)
            .output()
            .unwrap()
    };
    for (plant, says) in [("bspline:abc", "the factor is not a number"), ("bspline:0.5", "at least 1"), ("bspline", "not a number"), ("nosuch:1.05", "unknown kernel 'nosuch'")] {
        let o = run(plant);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{plant}: {err}");
        assert!(err.contains("QMC_PLANT_SLOWDOWN") && err.contains(says) && !err.contains("panicked"), "{plant}: {err}");
        assert_eq!(err.lines().count(), 1, "{plant}: one line: {err}");
    }
    // a plant in another kernel changes nothing here; the old integer form plants in every kernel
    for plant in ["gemm:1.05", "2", ""] {
        assert!(run(plant).status.success(), "{plant}: {}", text(&run(plant)));
    }
}

#[test]
fn the_regression_stage_sees_noise_catches_the_plant_and_reads_committed_records() {
    let d = scratch("stage");
    let kernels = ["bspline", "jastrow", "gemm"];
    let at = |f: [f64; 3]| -> Vec<(&str, Option<f64>)> { kernels.iter().zip(f).map(|(k, m)| (*k, Some(m))).collect() };
    let u1 = folder(&d.join("u1"), &at([1.0e-3, 2.0e-3, 3.0e-3]));
    let u2 = folder(&d.join("u2"), &at([1.002e-3, 1.997e-3, 3.001e-3]));
    // (a) the noise of two unchanged runs, per case, and the tolerance from it (at least 1%)
    let o = qmcbench(&["compare", &u1, &u2, "--stat", "mean", "--noise"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("0.20%") && out.contains("0.15%") && out.contains("largest difference of the two unchanged runs: 0.20% (bspline/"), "{out}");
    assert!(out.trim_end().ends_with("tolerance=0.0100"), "{out}");
    // runs 3% apart cannot resolve a 5% slowdown: said, exit 1
    let noisy = folder(&d.join("noisy"), &at([1.03e-3, 2.0e-3, 3.0e-3]));
    let o = qmcbench(&["compare", &u1, &noisy, "--stat", "mean", "--noise"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("cannot catch a 5% slowdown") && text(&o).contains("tolerance=0.0900"), "{}", text(&o));
    // (b) 5% planted in jastrow: caught in jastrow, and a check for another kernel's plant fails
    let planted = folder(&d.join("planted"), &at([1.001e-3, 2.1e-3, 3.0e-3]));
    let o = qmcbench(&["compare", &u1, &planted, "--stat", "mean", "--tolerance", "0.01", "--planted", "jastrow"]);
    assert!(o.status.success() && text(&o).contains("the slowdown planted in jastrow was caught"), "{}", text(&o));
    let o = qmcbench(&["compare", &u1, &planted, "--stat", "mean", "--tolerance", "0.01", "--planted", "gemm"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("NOT caught") && text(&o).contains("planted in gemm"), "{}", text(&o));
    // a plant hidden by a tolerance wider than it: not caught, exit 1
    let o = qmcbench(&["compare", &u1, &planted, "--stat", "mean", "--tolerance", "0.06", "--planted", "jastrow"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // (c) each case against its history in the device's committed records (compare-history): the median of its
    // records, at the larger of the within-session tolerance and three times the history's spread
    let committed = folder(
        &d.join("committed"),
        &[("bspline", Some(0.99e-3)), ("bspline", None), ("bspline", Some(1.0e-3)), ("bspline", Some(1.01e-3)), ("jastrow", Some(2.0e-3)), ("jastrow", Some(2.0e-3)), ("solid", Some(1.0))],
    );
    let o = qmcbench(&["compare-history", &committed, &u1, "--tolerance", "0.01"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    // bspline: 3 records with a mean (the one without is no history), spread 1%, tolerance 3%; jastrow (2 records)
    // and gemm (none) are listed, not judged
    assert!(out.contains("1.00%") && out.contains("3.0%") && out.contains("2 of 3 cases not judged") && out.contains("1 cases judged, none slower"), "{out}");
    let slower = folder(&d.join("slower"), &at([1.04e-3, 4.0e-3, 3.0e-3]));
    let o = qmcbench(&["compare-history", &committed, &slower, "--tolerance", "0.01"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("SLOWER") && text(&o).contains("1 of 1 judged cases slower"), "{}", text(&o));
    // a change meant to alter bspline's cost starts its history anew: then nothing judges it
    let o = qmcbench(&["history-rebase", &committed, "bspline", "--reason", "a faster kernel", "--since", "2099-01-01T00:00:00Z"]);
    assert!(o.status.success() && text(&o).contains("bspline\t2099-01-01T00:00:00Z\ta faster kernel"), "{}", text(&o));
    let o = qmcbench(&["compare-history", &committed, &slower, "--tolerance", "0.01"]);
    assert!(o.status.success() && text(&o).contains("3 of 3 cases not judged"), "{}", text(&o));
    for bad in [["history-rebase", &committed, "BSpline", "--reason", "x"], ["history-rebase", &committed, "bspline", "--reason", " "]] {
        let o = qmcbench(&bad);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(!text(&o).contains("panicked"), "{}", text(&o));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn compare_instructions_fails_on_a_change_and_refuses_a_bad_baseline() {
    let d = scratch("instr");
    let write = |name: &str, body: &str| {
        let p = d.join(name);
        std::fs::write(&p, body).unwrap();
        p.display().to_string()
    };
    let base = write("base.tsv", "# counts\nbspline/vgh/double\t1000.0\njastrow/vgl/double\t2000.0\n");
    let same = write("same.tsv", "bspline/vgh/double\t1019.0\njastrow/vgl/double\t1990.0\n");
    let o = qmcbench(&["compare-instructions", &base, &same]);
    assert!(o.status.success() && text(&o).contains("2 cases within the tolerance"), "{}", text(&o));
    let more = write("more.tsv", "bspline/vgh/double\t1021.0\njastrow/vgl/double\t2000.0\n");
    let o = qmcbench(&["compare-instructions", &base, &more]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("MORE") && text(&o).contains("bspline/vgh/double: +2.10%"), "{}", text(&o));
    // the self-test's verdict: the planted kernel's cases over, the others within
    let o = qmcbench(&["compare-instructions", &base, &more, "--planted", "bspline"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = qmcbench(&["compare-instructions", &base, &more, "--planted", "jastrow"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // a case missing from the new table fails the check (not with --subset)
    let part = write("part.tsv", "bspline/vgh/double\t1000.0\n");
    assert_eq!(qmcbench(&["compare-instructions", &base, &part]).status.code(), Some(1));
    assert!(qmcbench(&["compare-instructions", &base, &part, "--subset"]).status.success());
    // a zero or NaN count is refused in one line, exit 2
    for bad in ["bspline/vgh/double\t0\n", "bspline/vgh/double\tNaN\n"] {
        let b = write("bad.tsv", bad);
        let o = qmcbench(&["compare-instructions", &b, &same]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stderr).contains("must be a positive number"), "{}", text(&o));
    }
    std::fs::remove_dir_all(&d).unwrap();
}
