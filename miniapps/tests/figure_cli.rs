//! `qmcbench figure` draws what the records hold and measures nothing unless asked (`--measure`).

use std::process::Command;

#[test]
fn figure_without_records_says_so_and_measures_nothing() {
    let dir = std::env::temp_dir().join(format!("qmc-figure-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qmcbench")).args(["figure", "003-ewald", "--records"]).arg(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no passed records for 003-ewald") && err.contains("--measure"), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "nothing written: no records, no figure");
    // records that do not pass their check do not count either
    let rec = include_str!("data/record.json").replace("\"passed\"", "\"failed\"").replace('\n', "");
    std::fs::write(dir.join("bspline.jsonl"), format!("{rec}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_qmcbench")).args(["figure", "000-bspline-bandwidth", "--records"]).arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.join("figures").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
