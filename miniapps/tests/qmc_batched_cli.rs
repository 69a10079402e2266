//! `qmc --engine batched` as a user meets it: He's VMC and DMC run end to end on the solid's batched CPU engine,
//! pass the driver's own checks and write records that say engine=batched (so they never share a key with the
//! per-walker engine's); what the batched engines cannot do is refused in one sentence.

mod common;

use common::*;
use std::process::{Command, Output};

fn qmc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qmc")).args(args).output().expect("qmc runs")
}

/// He, 32 walkers: VMC of 4000 steps and DMC of 500/Ha at tau = 0.04 (12750 generations with the equilibration),
/// about 2 s on 2 cores.
#[test]
fn he_runs_on_the_batched_cpu_engine_and_its_records_say_so() {
    let dir = scratch("batched");
    let o = qmc(&[
        "--engine", "batched", "--system", "he", "--walkers", "32", "--steps", "4000", "--equil", "50", "--tau", "0.04", "--dmc-time", "500",
        "--precision", "double", "--variants", "cpu", "--quiet", "--out", dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    let text = std::fs::read_to_string(dir.join("qmc.jsonl")).unwrap();
    let recs: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ops: Vec<&str> = recs.iter().map(|r| r["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["vmc", "dmc"], "{text}");
    for r in &recs {
        assert_eq!(r["params"]["engine"], "batched", "{r}");
        assert_eq!(r["validation"]["status"], "passed", "{r}");
        let e = r["extra"]["energy"].as_f64().unwrap();
        assert!(e > -2.95 && e < -2.80 && r["extra"]["error"].as_f64().unwrap() < 0.02, "{r}");
    }
    assert_eq!(recs[1]["sizes"]["steps"], 12500, "{}", recs[1]);
    assert_eq!(recs[1]["extra"]["population"], 32.0, "the comb's fixed population: {}", recs[1]);
    assert!(recs[1]["extra"]["energy"].as_f64() < recs[0]["extra"]["energy"].as_f64(), "DMC below VMC: {text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_the_batched_engines_cannot_do_is_refused_with_a_sentence() {
    rejects(&qmc(&["--engine", "batched", "--system", "h"]), "--engine batched: h has one electron");
    rejects(&qmc(&["--engine", "batched", "--restart", "x"]), "--engine batched writes and reads no checkpoints");
    rejects(&qmc(&["--engine", "batched", "--checkpoint", "x"]), "--engine batched writes and reads no checkpoints");
    rejects(&qmc(&["--engine", "batched", "--ranks", "2"]), "--engine batched runs one engine of all the walkers");
    rejects(&qmc(&["--engine", "batched", "--coverage", "100", "--variants", "cpu"]), "--engine batched does not run --coverage");
    rejects(&qmc(&["--engine", "batched", "--system", "be", "--orbitals", "be.txt"]), "--engine batched runs be and be-hf with the committed orbitals");
    rejects(&qmc(&["--engine", "gpu"]), "invalid value 'gpu' for '--engine <ENGINE>'");
}
