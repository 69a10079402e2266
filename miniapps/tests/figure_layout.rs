//! Every figure and chart the committed records give, laid out and drawn, then checked as a reader would look at
//! it: no legend over a data point, no two texts (tick labels among them) overlapping, every text inside the canvas,
//! no text over a data point, at most six series per panel; and the SVG holds every text where the layout put it
//! (so the checks are of what is drawn, not of a plan).

use harness::plot::{self, layout, Chart};
use harness::{output, Record};
use miniapps::figures;
use std::path::PathBuf;

fn results() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no results folders under {}", root.display());
    dirs
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&apos;", "'").replace("&amp;", "&")
}

/// (x, y, text) of every `<text>` element of an SVG written by plotters.
fn svg_texts(svg: &str) -> Vec<(i64, i64, String)> {
    let attr = |tag: &str, name: &str| -> Option<i64> {
        let i = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        tag[i..].split('"').next()?.parse().ok()
    };
    svg.split("<text").skip(1).filter_map(|t| {
        let (tag, rest) = t.split_once('>')?;
        let body = rest.split("</text>").next()?;
        Some((attr(tag, "x")?, attr(tag, "y")?, unescape(body.trim())))
    })
    .collect()
}

/// The problems of one chart, with the SVG check.
fn check(where_: &str, c: &Chart) -> Vec<String> {
    let l = layout(c);
    let mut out: Vec<String> = l.problems(c).into_iter().map(|p| format!("{where_} {}: {p}", c.name)).collect();
    let svg = plot::svg_text(c).unwrap();
    let drawn = svg_texts(&svg);
    for t in &l.texts {
        let at = (t.x.round() as i64, t.y.round() as i64);
        if !drawn.iter().any(|d| d.0 == at.0 && d.1 == at.1 && d.2 == t.text) {
            out.push(format!("{where_} {}: text '{}' not drawn at {at:?}", c.name, t.text));
        }
    }
    out
}

#[test]
fn every_committed_figure_and_chart_passes_the_layout_checks() {
    let mut problems = vec![];
    let mut checked = 0;
    for dir in results() {
        let Ok(records): Result<Vec<Record>, _> = output::read_records(std::slice::from_ref(&dir)) else { continue };
        let here = dir.file_name().unwrap().to_string_lossy().to_string();
        for f in figures::all() {
            if let Some(s) = figures::section(&f, &records) {
                problems.extend(check(&here, &s.chart));
                checked += 1;
            }
        }
        for c in plot::speedup_charts(&records, None, None).iter().chain(&plot::throughput_charts(&records, None)) {
            problems.extend(check(&here, c));
            checked += 1;
        }
    }
    assert!(checked >= 40, "only {checked} charts drawn from the committed records");
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_readme_figures_come_from_the_h100_records() {
    // the README shows Fig. 3 and the B-spline figure from these records: both must draw, with the paper's numbers
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../results/nvidia-h100-80gb-hbm3");
    let records = output::read_records(&[dir]).unwrap();
    for name in ["000-fig3-gpu-over-double-cpu", "000-bspline-bandwidth"] {
        let s = figures::section(&figures::find(name).unwrap(), &records).unwrap_or_else(|| panic!("{name}: no records"));
        assert!(!s.chart.paper.is_empty(), "{name}: the paper's numbers are drawn");
        assert!(!s.chart.lines.is_empty(), "{name}: a labelled ceiling or break-even line");
        assert!(s.chart.subtitle.contains("commit"), "{name}: names its commits");
    }
}
