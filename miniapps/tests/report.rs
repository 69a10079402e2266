//! `qmcbench report` as a reader meets it: the page is opened in headless Chromium and every chart must be in the
//! rendered document. Skipped without Chromium unless QMC_REQUIRE_CHROMIUM is set (CI installs it and sets it).

mod common;

use std::process::Command;

#[test]
fn report_opens_in_a_browser_with_every_chart() {
    let dir = std::env::temp_dir().join(format!("qmc-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = Command::new(env!("CARGO_BIN_EXE_bspline"))
        .args(["--grid", "8", "--orbitals", "64,128", "--walkers", "2,4", "--variants", "cpu-ref,cpu", "--reps", "1", "--quiet", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let page = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_qmcbench")).arg("report").arg(&dir).arg("--out").arg(&page).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    let charts = html.matches("<figure").count();
    assert!(charts >= 2, "a speedup and a throughput chart at least, found {charts}");

    let Some(dom) = common::browser_dom(&page, &dir.join("chromium-profile")) else { return };
    // The browser parsed the page into a document holding every figure with its SVG chart and the record table.
    assert_eq!(dom.matches("<figure").count(), charts, "figures in the rendered document");
    assert_eq!(dom.matches("<svg").count(), charts, "inline SVG charts in the rendered document");
    assert!(dom.contains("bspline-vgh-speedup-"), "the speedup chart is there");
    assert!(dom.contains("Every record passed"));
    std::fs::remove_dir_all(&dir).unwrap();
}
