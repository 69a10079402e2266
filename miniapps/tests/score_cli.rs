//! `qmcbench score` and `qmcbench suite --score` as a buyer meets them: two results folders of scoring records of
//! workload v1 (synthetic machines: the second has 1.4x the first's bandwidth and the same arithmetic), scored,
//! refused when the rules are broken, and the procurement page opened in headless Chromium (skipped without it
//! unless QMC_REQUIRE_CHROMIUM is set; CI installs it and sets it).

mod common;

use common::{rejects, scratch};
use harness::score::testing::{record, Measured};
use harness::machine::slug as folder_name;
use harness::score::VARIANTS;
use harness::{Record, Variant};
use miniapps::score::WORKLOAD;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The cases that stream memory in the synthetic machines: the B-spline table and the rank-1 determinant updates.
fn bandwidth_bound(kernel: &str, params: &[(&str, &str)]) -> bool {
    kernel == "bspline" || (kernel == "determinant" && params.contains(&("delay", "1")))
}

struct Machine {
    gpu: &'static str,
    cpu: &'static str,
    /// Copy bandwidth of GPU and host (GB/s) and the time factor of bandwidth-bound cases.
    bw: (f64, f64),
    time_bw: f64,
}

const H100: Machine = Machine { gpu: "NVIDIA H100 80GB HBM3", cpu: "Intel(R) Xeon(R) Processor", bw: (2800.0, 100.0), time_bw: 1.0 };
const H200: Machine = Machine { gpu: "NVIDIA H200", cpu: "Intel(R) Xeon(R) Platinum", bw: (3920.0, 140.0), time_bw: 1.0 / 1.4 };

/// `runs` whole scoring runs of a machine, run `k` off by `1 + 0.01 k` in every case.
fn records(m: &Machine, runs: usize) -> Vec<Record> {
    let commit = if m.gpu.contains("H200") { "bbbbbb0000000000" } else { "aaaaaa0000000000" };
    let mut out = vec![];
    for run in 0..runs {
        for v in VARIANTS {
            for (i, c) in WORKLOAD.cases.iter().enumerate() {
                let bound = bandwidth_bound(c.kernel, c.params);
                let base = 1e-3 * (1 + i % 4) as f64;
                let median = base * if bound { m.time_bw } else { 1.0 } * (1.0 + 0.01 * run as f64);
                let (ceiling, reference) = if v == Variant::Gpu { (m.bw.0, H100.bw.0) } else { (m.bw.1, H100.bw.1) };
                // the same work on both machines: 90% or 5% of the reference's copy bandwidth
                let bytes = if bound { 0.9 } else { 0.05 } * reference * 1e9 * base;
                out.push(record(c, v, WORKLOAD.version, &Measured { gpu: m.gpu, cpu: m.cpu, commit, run, median, spread: 0.01, bytes, ceiling }));
            }
        }
    }
    out
}

/// `<scratch>/<folder named for the machine>` holding `recs`, written as the runs write them.
fn folder(test: &str, m: &Machine, recs: &[Record]) -> PathBuf {
    let d = scratch(test).join(folder_name(m.gpu));
    harness::output::append(&d, recs).unwrap();
    d
}

/// `<scratch>/<name>` holding `recs` written past the writer, which refuses to file a record in another machine's
/// folder (harness::machine): how such a folder looks when it was filled before that rule or by hand.
fn plant(test: &str, name: &str, recs: &[Record]) -> PathBuf {
    let d = scratch(test).join(name);
    std::fs::create_dir_all(&d).unwrap();
    let lines: String = recs.iter().map(|r| serde_json::to_string(r).unwrap() + "\n").collect();
    std::fs::write(d.join("records.jsonl"), lines).unwrap();
    d
}

fn score(new: &Path, reference: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_qmcbench")).arg("score").arg(new).arg("--reference").arg(reference).args(extra).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn score_gives_both_parts_with_intervals_and_the_bandwidth_split() {
    let reference = folder("score-ok-ref", &H100, &records(&H100, 3));
    let new = folder("score-ok-new", &H200, &records(&H200, 3));
    let o = score(&new, &reference, &["--combined"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let t = stdout(&o);
    for want in ["score v1", "NVIDIA H200 + Intel(R) Xeon(R) Platinum", "commit bbbbbb0000", "commit aaaaaa0000", "3 run(s)", "GPU SCORE", "HOST SCORE", "COMBINED", "ratio 1.40", "bootstrap draws of whole runs"] {
        assert!(t.contains(want), "lacks '{want}':\n{t}");
    }
    // per kernel: bspline streams (1.4x, bandwidth-bound), gemm computes (1.0x)
    let row = |kernel: &str| t.lines().find(|l| l.trim_start().starts_with(kernel)).unwrap().to_string();
    assert!(row("bspline").contains("1.400") && row("bspline").contains("bandwidth"), "{}", row("bspline"));
    assert!(row("gemm").contains("1.000") && row("gemm").contains("arithmetic or latency"), "{}", row("gemm"));
    // determinant: one bandwidth-bound case of three per precision: (1.4)^(1/3)
    assert!(row("determinant").contains(&format!("{:.3}", 1.4f64.powf(1.0 / 3.0))), "{}", row("determinant"));
}

#[test]
fn score_refuses_another_machines_records_an_incomplete_run_and_an_unpassed_record() {
    let reference = folder("score-bad-ref", &H100, &records(&H100, 3));
    // the H200 folder holding a CPU record of the build machine (what issue 27 found)
    let mut all = records(&H200, 1);
    all.iter_mut().find(|r| r.variant == Variant::Cpu).unwrap().system.cpu_model = "AMD EPYC 7B13 (build machine)".into();
    rejects(&score(&plant("score-mixed", &folder_name(H200.gpu), &all), &reference, &[]), "mixes records of 2 CPUs");
    // a run cut short: the solid's GPU cases never ran
    let mut short = records(&H200, 1);
    short.retain(|r| !(r.kernel == "solid" && r.variant == Variant::Gpu));
    let o = score(&folder("score-short", &H200, &short), &reference, &[]);
    rejects(&o, "incomplete scoring run: 2 of the workload's 68 cases are missing");
    assert!(common::stderr(&o).contains("solid/dmc double [electrons=512,walkers=512] gpu"));
    assert_eq!(common::stderr(&o).lines().count(), 1, "one sentence");
    // a record whose check did not pass: failed, or not made
    for status in ["failed", "unchecked"] {
        let mut bad = records(&H200, 1);
        bad[5].validation.status = status.into();
        rejects(&score(&folder(&format!("score-{status}"), &H200, &bad), &reference, &[]), &format!("is {status}"));
    }
    // the reference in a folder named for another machine
    let renamed = plant("score-renamed", "nvidia-a100", &records(&H100, 1));
    rejects(&score(&folder("score-ok2", &H200, &records(&H200, 1)), &renamed, &[]), "not named for the machine");
}

#[test]
fn suite_score_refuses_to_be_changed() {
    let o = Command::new(env!("CARGO_BIN_EXE_qmcbench")).args(["suite", "--score", "--reps", "2", "--quiet"]).output().unwrap();
    rejects(&o, "--score runs the workload as defined");
    let o = Command::new(env!("CARGO_BIN_EXE_qmcbench")).args(["suite", "--score", "--kernels", "bspline"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "clap refuses --kernels with --score");
}

#[test]
fn procurement_page_opens_in_a_browser() {
    let reference = folder("score-page-ref", &H100, &records(&H100, 3));
    let new = folder("score-page-new", &H200, &records(&H200, 3));
    let page = scratch("score-page").join("score.html");
    let o = score(&new, &reference, &["--html", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("NVIDIA H200") && html.contains("95% interval"));
    let Some(dom) = common::browser_dom(&page, &scratch("score-page-chromium")) else { return };
    // the browser parsed the page into a document with both parts' charts and tables and the machines
    assert_eq!(dom.matches("<svg").count(), 2, "one chart per part");
    assert_eq!(dom.matches("class=\"kernels\"").count(), 2, "a kernel table per part");
    for want in ["NVIDIA H200", "NVIDIA H100 80GB HBM3", "score v1", "GPU score", "host score", "bandwidth", "1.40"] {
        assert!(dom.contains(want), "the rendered page lacks '{want}'");
    }
}
