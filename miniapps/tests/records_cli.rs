//! Records as the commands that file them meet them: `qmcbench import` brings a GPU host's records into their GPU's
//! folder, and refuses, in one sentence with exit status 2 and nothing written, a record of another machine.

mod common;
use common::qmcbench;

use std::path::Path;

/// The test record (an H100 GPU run) and a CPU-only run of the 2-core build machine, as JSON lines.
fn records() -> (String, String) {
    let gpu: serde_json::Value = serde_json::from_str(include_str!("data/record.json")).unwrap();
    let mut cpu = gpu.clone();
    cpu["variant"] = "cpu".into();
    cpu["system"]["cpu_model"] = "AMD EPYC".into();
    cpu["system"]["cpu_logical"] = 2.into();
    cpu["system"]["cpu_physical"] = 2.into();
    cpu["system"].as_object_mut().unwrap().remove("gpu");
    (gpu.to_string(), cpu.to_string())
}

#[test]
fn import_files_a_gpu_hosts_records_and_refuses_another_machines() {
    let root = std::env::temp_dir().join(format!("qmc-import-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (gpu, build_machine) = records();
    let host = root.join("host");
    std::fs::create_dir_all(&host).unwrap();
    std::fs::write(host.join("bspline.jsonl"), format!("{gpu}\n")).unwrap();
    let dest = root.join("nvidia-h100-80gb-hbm3");
    let out = qmcbench(&["import", host.to_str().unwrap(), "--into", dest.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), dest.to_str().unwrap());
    let filed = std::fs::read_to_string(dest.join("bspline.jsonl")).unwrap();
    assert_eq!(filed.lines().count(), 1);

    // the misfiled case: the build machine's CPU run into the GPU folder
    std::fs::write(host.join("bspline.jsonl"), format!("{build_machine}\n")).unwrap();
    let out = qmcbench(&["import", host.to_str().unwrap(), "--into", dest.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "one sentence: {err}");
    assert!(err.contains("AMD EPYC (2 cores), a host without NVIDIA H100 80GB HBM3"), "{err}");
    assert_eq!(std::fs::read_to_string(dest.join("bspline.jsonl")).unwrap(), filed, "nothing written");

    // the GPU run into a folder named for another GPU
    std::fs::write(host.join("bspline.jsonl"), format!("{gpu}\n")).unwrap();
    let out = qmcbench(&["import", host.to_str().unwrap(), "--into", root.join("nvidia-h200").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("whose folder is nvidia-h100-80gb-hbm3/"));
    assert!(!Path::new(&root.join("nvidia-h200")).exists());
    std::fs::remove_dir_all(&root).unwrap();
}

/// `qmcbench project` on the committed records: the H200 folder's multi-GPU runs make a table to 4096 GPUs; the H100
/// folder, which has none (its rank runs are CPU ranks), and a GPU count below two are refused in one line, exit 2.
#[test]
fn project_tabulates_a_machines_multi_gpu_runs_and_refuses_a_folder_without_them() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let h200 = results.join("nvidia-h200");
    let out = qmcbench(&["project", h200.to_str().unwrap(), "--migrate", "inverse"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| 4096 GPUs |") && table.contains("| C128 | 512 | mixed | 256 | mpi | inverse | host |") && table.contains("| gas | 162 | mixed | 512 |"), "{table}");
    assert!(!table.contains("| whole |"), "--migrate keeps one cargo: {table}");
    for args in [vec!["project", results.join("nvidia-h100-80gb-hbm3").to_str().unwrap()], vec!["project", h200.to_str().unwrap(), "--gpus", "1"]] {
        let out = qmcbench(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: ") && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
}

/// A record path that does not exist is refused in one line naming it, its I/O error said once (it was said twice:
/// in the message and again as the message's source), exit 2, by each command that reads records.
#[test]
fn a_missing_record_path_is_refused_once() {
    let missing = std::env::temp_dir().join(format!("qmc-missing-{}", std::process::id())).join("none.jsonl");
    let m = missing.to_str().unwrap();
    for args in [vec!["plot", m], vec!["compare", m, m], vec!["headlines", m], vec!["import", m, "--into", m]] {
        let out = qmcbench(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(&format!("cannot read {m}")), "{args:?}: {err}");
        assert_eq!(err.matches("No such file or directory").count(), 1, "{args:?}: {err}");
    }
}
