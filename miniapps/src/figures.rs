//! The papers' charts and tables, redrawn from records: `qmcbench figure <name>`.
//!
//! A figure names the records it needs (kernel, operation, the sizes and parameters that must match), what its y axis
//! measures (a speedup over all CPU cores or over one core, a fraction of the bandwidth ceiling, a throughput), the
//! mini-app command line that produces those records when they are missing, and the paper's own numbers with the
//! hardware they came from. The chart shows the measured series and the paper's points; the table beside it prints
//! both, so a reader sees at once how today's machine compares with the paper's.

use anyhow::{bail, Result};
use harness::plot::{Chart, Series};
use harness::{Record, Variant};
use std::collections::BTreeMap;

/// What a figure's y axis measures for one GPU or CPU record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// GPU median time over the all-core CPU median of the same case.
    SpeedupAllCores,
    /// GPU median time over the one-core CPU median (`threads=1`) of the same case.
    SpeedupOneCore,
    /// Achieved bandwidth as a percentage of the copy ceiling measured in the same process (GPU records).
    PercentOfCeiling,
    /// Throughput in the record's unit, every variant.
    Throughput,
}

impl Measure {
    fn label(self) -> &'static str {
        match self {
            Measure::SpeedupAllCores => "speedup over all CPU cores",
            Measure::SpeedupOneCore => "speedup over one CPU core",
            Measure::PercentOfCeiling => "% of measured copy bandwidth",
            Measure::Throughput => "throughput",
        }
    }
}

/// A number the paper printed, for the side-by-side table and the chart.
#[derive(Clone, Copy, Debug)]
pub struct PaperPoint {
    pub x: f64,
    pub y: f64,
    /// Which of the paper's rows or series (e.g. "DP", "bfactor=16").
    pub label: &'static str,
}

/// One paper chart or table.
pub struct Figure {
    pub name: &'static str,
    pub paper: &'static str,
    pub title: &'static str,
    pub kernel: &'static str,
    pub op: &'static str,
    /// The size on the x axis.
    pub x: &'static str,
    pub measure: Measure,
    /// Sizes or parameters a record must have (`name=value`), e.g. `walkers=1024`.
    pub select: &'static [&'static str],
    /// `qmcbench run <kernel>` flags that produce the records (each line one run).
    pub runs: &'static [&'static [&'static str]],
    pub paper_points: &'static [PaperPoint],
    /// The hardware of the paper's numbers.
    pub paper_hardware: &'static str,
}

/// `pt!(x, y, "label")`: a paper point, as a literal so figure tables stay `'static`.
macro_rules! pt {
    ($x:expr, $y:expr, $label:expr) => {
        PaperPoint { x: $x, y: $y, label: $label }
    };
}

/// Every figure the suite can draw.
pub fn all() -> Vec<Figure> {
    vec![Figure {
        name: "000-bspline-bandwidth",
        paper: "Esler et al., CiSE 2012 (paper 000), Sec. on B-spline evaluation",
        title: "B-spline VGH: fraction of the memory bandwidth reached",
        kernel: "bspline",
        op: "vgh",
        x: "walkers",
        measure: Measure::PercentOfCeiling,
        select: &["grid=64", "basis=bspline"],
        runs: &[&["--grid", "64", "--orbitals", "256,1024,4096", "--walkers", "16,128,1024", "--variants", "cpu,gpu"]],
        paper_points: &[pt!(128.0, 75.0, "B-spline, 75% of peak")],
        paper_hardware: "NVIDIA Tesla (GT200), percentage of peak bandwidth",
    }]
}

/// Find a figure by name, listing the names on failure.
pub fn find(name: &str) -> Result<Figure> {
    let figs = all();
    let names: Vec<&str> = figs.iter().map(|f| f.name).collect();
    match figs.into_iter().find(|f| f.name == name) {
        Some(f) => Ok(f),
        None => bail!("unknown figure '{name}': known figures are {}", names.join(", ")),
    }
}

fn has(r: &Record, sel: &str) -> bool {
    let (k, v) = sel.split_once('=').unwrap_or((sel, ""));
    r.sizes.get(k).map(|x| x.to_string() == v).unwrap_or(false) || r.params.get(k).map(|x| x == v).unwrap_or(false)
}

/// The records a figure draws on (latest per key).
pub fn select<'a>(f: &Figure, records: &'a [Record]) -> Vec<&'a Record> {
    let mut latest: BTreeMap<String, &Record> = BTreeMap::new();
    for r in records.iter().filter(|r| r.kernel == f.kernel && r.op == f.op && f.select.iter().all(|s| has(r, s))) {
        latest.insert(r.key(), r);
    }
    latest.into_values().collect()
}

/// A record's case key without its `threads` parameter: pairs a one-core CPU run with the GPU run of its case.
fn key_without_threads(r: &Record) -> String {
    let mut r = r.clone();
    r.params.remove("threads");
    r.case_key()
}

/// Label of a measured series: precision, variant where it matters, and the sizes and parameters that vary.
fn series_label(f: &Figure, r: &Record, varying: &[String]) -> String {
    let mut parts = vec![];
    if f.measure == Measure::Throughput || f.measure == Measure::PercentOfCeiling {
        parts.push(r.variant.name().to_string());
    }
    parts.push(r.precision.clone());
    for k in varying {
        if let Some(v) = r.sizes.get(k) {
            parts.push(format!("{k}={v}"));
        } else if let Some(v) = r.params.get(k) {
            parts.push(format!("{k}={v}"));
        }
    }
    parts.join(" ")
}

/// The measured series of a figure: (label, [(x, y)]) sorted by x.
pub fn series(f: &Figure, recs: &[&Record]) -> Vec<Series> {
    // sizes and params (other than x, threads and the selected ones) that take several values name the series
    let mut values: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for r in recs {
        for (k, v) in &r.sizes {
            values.entry(k.clone()).or_default().insert(v.to_string());
        }
        for (k, v) in &r.params {
            values.entry(k.clone()).or_default().insert(v.clone());
        }
    }
    let varying: Vec<String> = values.into_iter().filter(|(k, v)| v.len() > 1 && k != f.x && k != "threads").map(|(k, _)| k).collect();
    let all_cores: BTreeMap<String, f64> =
        recs.iter().filter(|r| r.variant == Variant::Cpu && !r.params.contains_key("threads")).map(|r| (r.case_key(), r.time.median)).collect();
    let one_core: BTreeMap<String, f64> = recs
        .iter()
        .filter(|r| r.variant == Variant::Cpu && r.params.get("threads").is_some_and(|t| t == "1"))
        .map(|r| (key_without_threads(r), r.time.median))
        .collect();
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in recs {
        let Some(&x) = r.sizes.get(f.x) else { continue };
        let y = match f.measure {
            Measure::SpeedupAllCores if r.variant == Variant::Gpu => all_cores.get(&r.case_key()).map(|c| c / r.time.median),
            Measure::SpeedupOneCore if r.variant == Variant::Gpu => one_core.get(&r.case_key()).map(|c| c / r.time.median),
            Measure::PercentOfCeiling if r.variant != Variant::CpuRef && !r.params.contains_key("threads") => {
                r.fraction_of_ceiling.map(|f| 100.0 * f)
            }
            Measure::Throughput => Some(r.throughput),
            _ => None,
        };
        if let Some(y) = y {
            out.entry(series_label(f, r, &varying)).or_default().push((x as f64, y));
        }
    }
    out.into_iter()
        .map(|(name, mut points)| {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series { name, points }
        })
        .collect()
}

/// The chart: measured series plus the paper's points as their own series.
pub fn chart(f: &Figure, measured: &[Series], hardware: &str) -> Chart {
    let mut s = measured.to_vec();
    let mut paper: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for p in f.paper_points {
        paper.entry(p.label).or_default().push((p.x, p.y));
    }
    for (label, points) in paper {
        s.push(Series { name: format!("paper: {label} ({})", f.paper_hardware), points });
    }
    Chart {
        name: f.name.to_string(),
        title: format!("{} ({hardware})", f.title),
        x_label: f.x.to_string(),
        y_label: f.measure.label().to_string(),
        series: s,
        hline: matches!(f.measure, Measure::SpeedupAllCores | Measure::SpeedupOneCore).then_some(1.0),
    }
}

/// The side-by-side table: each x with the paper's values and the measured ones.
pub fn table(f: &Figure, measured: &[Series], hardware: &str) -> String {
    let mut xs: Vec<f64> = measured.iter().flat_map(|s| s.points.iter().map(|p| p.0)).chain(f.paper_points.iter().map(|p| p.x)).collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    let mut t = format!("{}: {}\n{}\npaper: {}\nhere:  {hardware}\ny: {}\n", f.name, f.title, f.paper, f.paper_hardware, f.measure.label());
    t += &format!("{:>10}  {:<28} {:>10}  {:<40} {:>10}\n", f.x, "paper series", "paper", "measured series", "measured");
    for x in xs {
        let paper: Vec<&PaperPoint> = f.paper_points.iter().filter(|p| p.x == x).collect();
        let here: Vec<(&str, f64)> = measured.iter().filter_map(|s| s.points.iter().find(|p| p.0 == x).map(|p| (s.name.as_str(), p.1))).collect();
        for i in 0..paper.len().max(here.len()) {
            let (pl, pv) = paper.get(i).map(|p| (p.label.to_string(), format!("{:.3}", p.y))).unwrap_or_default();
            let (ml, mv) = here.get(i).map(|(l, v)| (l.to_string(), format!("{v:.3}"))).unwrap_or_default();
            let xl = if i == 0 { format!("{x}") } else { String::new() };
            t += &format!("{xl:>10}  {pl:<28} {pv:>10}  {ml:<40} {mv:>10}\n");
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(variant: Variant, walkers: u64, median: f64, threads: Option<&str>) -> Record {
        let mut r: Record = serde_json::from_str(include_str!("../tests/data/record.json")).unwrap();
        r.variant = variant;
        r.sizes.insert("walkers".into(), walkers);
        r.time.median = median;
        if let Some(t) = threads {
            r.params.insert("threads".into(), t.into());
        }
        r
    }

    #[test]
    fn speedups_pair_gpu_with_all_core_and_one_core_cpu() {
        let recs = vec![
            rec(Variant::Cpu, 16, 1.0, None),
            rec(Variant::Cpu, 16, 8.0, Some("1")),
            rec(Variant::Gpu, 16, 0.1, None),
            rec(Variant::Cpu, 128, 4.0, None),
            rec(Variant::Gpu, 128, 0.2, None),
        ];
        let mut f = find("000-bspline-bandwidth").unwrap();
        f.measure = Measure::SpeedupAllCores;
        let sel = select(&f, &recs);
        let s = series(&f, &sel);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].points, vec![(16.0, 10.0), (128.0, 20.0)]);
        f.measure = Measure::SpeedupOneCore;
        let s = series(&f, &sel);
        assert_eq!(s[0].points, vec![(16.0, 80.0)], "only the case with a one-core run");
        let t = table(&f, &s, "test machine");
        assert!(t.contains("80.000") && t.contains("75.000") && t.contains("test machine"), "{t}");
    }

    #[test]
    fn unknown_figure_lists_the_known_ones() {
        let e = find("nope").err().unwrap().to_string();
        assert!(e.contains("000-bspline-bandwidth"), "{e}");
    }

    #[test]
    fn every_figure_selects_a_registered_kernel() {
        let kernels: Vec<&str> = crate::registry::kernels().iter().map(|k| k.name).collect();
        for f in all() {
            assert!(kernels.contains(&f.kernel), "{} needs kernel {}", f.name, f.kernel);
            assert!(!f.runs.is_empty() && !f.paper_points.is_empty(), "{}", f.name);
        }
    }
}
