//! `qmcbench report` as a reader meets it: every chart is in the page, each paper figure beside its reading and its
//! table, and the page opens in headless Chromium with all of it in the rendered document. The browser part is
//! skipped without Chromium unless QMC_REQUIRE_CHROMIUM is set (CI installs it and sets it).

mod common;

use std::process::Command;

/// The `<section class="pair">` that holds figure `id`.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no figure {id}"));
    let start = html[..at].rfind("<section").expect("the figure sits in a section");
    let end = html[at..].find("</section>").expect("a closed section") + at;
    &html[start..end]
}

#[test]
fn report_opens_in_a_browser_with_every_chart_and_each_figure_beside_its_table() {
    let dir = std::env::temp_dir().join(format!("qmc-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let runs: [(&str, &[&str]); 2] = [
        (env!("CARGO_BIN_EXE_bspline"), &["--grid", "8", "--orbitals", "64,128", "--walkers", "2,4", "--variants", "cpu-ref,cpu"]),
        // records of the pseudopotential figures (64 walkers, Jastrow on, 12-point rule), CPU only
        (env!("CARGO_BIN_EXE_pseudopotential"), &["--pairs", "8:64,16:64", "--variants", "cpu"]),
    ];
    for (bin, args) in runs {
        let run = Command::new(bin).args(args).args(["--reps", "1", "--quiet", "--out"]).arg(&dir).output().unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    }
    let page = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_qmcbench")).arg("report").arg(&dir).arg("--out").arg(&page).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    let charts = html.matches("<figure").count();
    assert!(charts >= 4, "a speedup and a throughput chart and the pseudopotential figures at least, found {charts}");
    let s = section(&html, "000-pseudopotential-ratios");
    assert!(s.contains("<svg") && s.contains("class=\"reading\"") && s.contains("<table>"), "chart, reading and table together: {s}");
    assert!(s.contains("Wavefunction ratios per second") && s.contains("<th>measured</th>") && s.contains("<th>commit</th>"), "{s}");

    let Some(dom) = common::browser_dom(&page, &dir.join("chromium-profile")) else { return };
    // The browser parsed the page into a document holding every figure with its SVG chart and the record table, and
    // each paper figure in one section with its reading and table.
    assert_eq!(dom.matches("<figure").count(), charts, "figures in the rendered document");
    assert_eq!(dom.matches("<svg").count(), charts, "inline SVG charts in the rendered document");
    assert!(dom.contains("bspline-vgh-speedup-"), "the speedup chart is there");
    let s = section(&dom, "000-pseudopotential-ratios");
    assert!(s.contains("<svg") && s.contains("class=\"reading\"") && s.contains("<table>"), "in the document too: {s}");
    assert!(dom.contains("Every record passed"));
    std::fs::remove_dir_all(&dir).unwrap();
}
