//! The `bspline` and `qmcbench` programs as a user meets them: bad input gets one clear line and exit status 2
//! (never a panic), a valid quick run exits 0 and writes validated records, and plot/compare read only records.

mod common;

use common::*;
use std::process::{Command, Output};

fn bspline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bspline")).args(args).output().expect("bspline runs")
}

#[test]
fn bad_sizes_are_rejected_with_a_sentence() {
    rejects(&bspline(&["--orbitals", "0"]), "--orbitals must be positive");
    rejects(&bspline(&["--walkers", "-3"]), "error");
    rejects(&bspline(&["--grid", "3"]), "at least 4 points");
    rejects(&bspline(&["--walkers", "70000", "--variants", "cpu"]), "65535");
}

#[test]
fn unknown_precision_variant_and_output_are_rejected() {
    rejects(&bspline(&["--precision", "quad"]), "unknown precision 'quad'");
    rejects(&bspline(&["--variants", "fpga"]), "unknown variant 'fpga'");
    rejects(&bspline(&["--output", "vghh"]), "unknown output");
    rejects(&bspline(&["--per-thread", "3"]), "1, 2 or 4");
    rejects(&bspline(&["--per-thread", "4", "--precision", "double"]), "at most 16");
    rejects(&qmcbench(&["run", "nosuchkernel"]), "unknown kernel 'nosuchkernel'");
}

#[test]
fn a_table_too_large_for_memory_is_refused_before_allocating() {
    rejects(&bspline(&["--grid", "4096", "--orbitals", "4096", "--variants", "cpu"]), "host memory");
}

#[test]
fn gpu_demanded_without_a_gpu_is_an_error() {
    if kernels::gpu::Gpu::open(0).is_ok() {
        return; // this machine has a GPU: the demand is met
    }
    rejects(&bspline(&["--variants", "gpu", "--orbitals", "64", "--walkers", "1"]), "the gpu variant was asked for");
}

#[test]
fn a_quick_run_writes_validated_records() {
    let dir = scratch("run");
    let o = bspline(&[
        "--grid", "8", "--orbitals", "64", "--walkers", "3", "--variants", "cpu-ref,cpu", "--reps", "2", "--quiet",
        "--out", dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(dir.join("bspline.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // cpu-ref in double, cpu in each of the three precisions
    assert_eq!(recs.len(), 4, "{text}");
    for r in recs.iter().filter(|r| r["variant"] == "cpu") {
        assert_eq!(r["validation"]["status"], "passed", "{r}");
        assert!(r["time"]["median"].as_f64().unwrap() > 0.0);
        assert_eq!(r["sizes"]["orbitals"], 64);
    }
    assert!(dir.join("bspline.csv").exists());
    // plotting those records draws the CPU-over-reference speedup and the throughput charts
    let plots = dir.join("plots");
    let o = qmcbench(&["plot", dir.to_str().unwrap(), "--out", plots.to_str().unwrap(), "--x", "walkers"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(plots.join("bspline-vgh-throughput-walkers.png").exists());
    // a run compared with itself has no regression
    let o = qmcbench(&["compare", dir.to_str().unwrap(), dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn plot_and_compare_reject_unreadable_or_malformed_records() {
    let dir = scratch("bad");
    let bad = dir.join("bad.jsonl");
    std::fs::write(&bad, "{\"schema\": 1, \"kernel\": \n").unwrap();
    rejects(&qmcbench(&["plot", bad.to_str().unwrap()]), "bad.jsonl");
    rejects(&qmcbench(&["compare", bad.to_str().unwrap(), bad.to_str().unwrap()]), "bad.jsonl");
    let missing = dir.join("missing.jsonl");
    rejects(&qmcbench(&["plot", missing.to_str().unwrap()]), "missing.jsonl");
    rejects(&qmcbench(&["compare", "--tolerance=-1", missing.to_str().unwrap(), missing.to_str().unwrap()]), "tolerance");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_fails_on_a_slowdown() {
    let dir = scratch("cmp");
    let o = bspline(&[
        "--grid", "8", "--orbitals", "64", "--walkers", "2", "--variants", "cpu", "--precision", "double", "--reps", "1",
        "--quiet", "--out", dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let base = std::fs::read_to_string(dir.join("bspline.jsonl")).unwrap();
    // the same case, ten times slower
    let mut rec: serde_json::Value = serde_json::from_str(base.lines().next().unwrap()).unwrap();
    let m = rec["time"]["median"].as_f64().unwrap();
    rec["time"]["median"] = serde_json::json!(m * 10.0);
    let slow = dir.join("slow.jsonl");
    std::fs::write(&slow, format!("{rec}\n")).unwrap();
    let o = qmcbench(&["compare", dir.join("bspline.jsonl").to_str().unwrap(), slow.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("SLOWER"));
    std::fs::remove_dir_all(&dir).unwrap();
}
