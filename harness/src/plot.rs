//! Charts drawn from records only: speedup of each fast variant over a baseline vs a size, and throughput vs a
//! size; the papers' figures (miniapps::figures) build their charts with the same types. Every chart is laid out
//! first (`layout`: panels, ticks, texts and the legend, each with its box, checked by `Layout::problems`), then
//! drawn exactly there (`render`) as PNG and SVG. The font is embedded (DejaVu Sans), so plotting needs no system
//! fonts.

pub mod layout;
mod render;
pub mod style;
pub mod ticks;

use crate::output::write_atomic;
use crate::record::{Record, Variant};
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use layout::{layout, Layout};

/// One line of a chart (or, in a bar chart, one stacked share: point (i, v) is its value in bar i).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// What identifies it, e.g. [("precision", "mixed"), ("walkers", "1024")]: the chart shows these by meaning
    /// (colour for the precision, line style for the variant, marker for a size) and splits panels by them.
    pub attrs: Vec<(String, String)>,
    pub points: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(attrs: Vec<(String, String)>, points: Vec<(f64, f64)>) -> Series {
        Series { attrs, points }
    }
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
    /// "gpu mixed walkers=1024": precision and variant bare, other attributes as name=value.
    pub fn label(&self) -> String {
        self.attrs.iter().map(|(k, v)| layout::attr_label(k, v)).collect::<Vec<_>>().join(" ")
    }
    /// The value at x (bar charts: the share in bar x), 0 where there is none.
    pub fn at(&self, x: f64) -> f64 {
        self.points.iter().find(|p| p.0 == x).map_or(0.0, |p| p.1)
    }
}

/// Numbers a paper printed, drawn in one style in every chart: hollow markers at its points, or a shaded band
/// across the panel for a range it gives without an x (a single level when both ends are equal).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PaperMark {
    /// Names the paper, the quantity and the paper's hardware.
    pub label: String,
    /// What it is comparable with (e.g. precision=single): its colour, and the panels it appears in.
    pub attrs: Vec<(String, String)>,
    pub points: Vec<(f64, f64)>,
    pub band: Option<(f64, f64)>,
}

impl PaperMark {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

/// A labelled horizontal line: the break-even of a speedup, a bandwidth ceiling, a goal.
#[derive(Clone, Debug, PartialEq)]
pub struct RefLine {
    pub y: f64,
    pub label: String,
}

/// One bar of a stacked-bar chart: the panel it stands in and its name under it.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    pub panel: String,
    pub label: String,
}

/// A chart: log-log lines (split into panels of at most six series), or, with `bars`, stacked shares on a linear
/// axis, one panel per distinct `Bar::panel`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Chart {
    /// File stem (no extension), e.g. "bspline-vgh-speedup-orbitals".
    pub name: String,
    pub title: String,
    /// Under the title: the machine and the commits the records came from.
    pub subtitle: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub paper: Vec<PaperMark>,
    pub lines: Vec<RefLine>,
    pub bars: Vec<Bar>,
    /// Under the chart: what a reader must know to read it (e.g. how the CPU side was timed).
    pub notes: Vec<String>,
}

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("the embedded DejaVu font is valid"));
    });
}

fn pixels(l: &Layout) -> (u32, u32) {
    (l.width as u32, l.height as u32)
}

/// Draw `chart` into `<dir>/<name>.png` and `.svg` (each written to a temporary name, then renamed).
pub fn draw(chart: &Chart, dir: &Path) -> Result<Vec<PathBuf>> {
    register_font();
    std::fs::create_dir_all(dir).map_err(|e| anyhow!("cannot create {}: {e}", dir.display()))?;
    let l = layout(chart);
    let png = dir.join(format!("{}.png", chart.name));
    let svg = dir.join(format!("{}.svg", chart.name));
    let tmp_png = dir.join(format!(".{}.{}.png", chart.name, std::process::id()));
    render::render(BitMapBackend::new(&tmp_png, pixels(&l)).into_drawing_area(), chart, &l)?;
    std::fs::rename(&tmp_png, &png).map_err(|e| anyhow!("cannot write {}: {e}", png.display()))?;
    write_atomic(&svg, svg_text(chart)?.as_bytes())?;
    Ok(vec![png, svg])
}

/// The chart as SVG text (for pages that embed their charts).
pub fn svg_text(chart: &Chart) -> Result<String> {
    register_font();
    let l = layout(chart);
    let mut text = String::new();
    render::render(SVGBackend::with_string(&mut text, pixels(&l)).into_drawing_area(), chart, &l)?;
    Ok(text)
}

/// A record a chart may draw: one that passed its check, or the reference itself (the baseline of the checks).
pub fn usable(r: &Record) -> bool {
    r.validation.status == "passed" || r.variant == Variant::CpuRef
}

/// Of records sharing a key, the latest (by time stamp; the later in the list on a tie).
pub fn latest<'a, K: Ord>(recs: impl IntoIterator<Item = &'a Record>, key: impl Fn(&Record) -> K) -> BTreeMap<K, &'a Record> {
    let mut out: BTreeMap<K, &Record> = BTreeMap::new();
    for r in recs {
        let k = key(r);
        if out.get(&k).is_none_or(|o| o.timestamp <= r.timestamp) {
            out.insert(k, r);
        }
    }
    out
}

/// A commit as charts and tables print it: its first 7 hex digits.
pub fn short_commit(commit: &str) -> &str {
    commit.get(..7).unwrap_or(commit)
}

/// "commit abc1234" or "commits abc1234, def5678" ([`short_commit`] each).
pub fn commits_phrase<'a>(commits: impl IntoIterator<Item = &'a str>) -> String {
    let set: BTreeSet<&str> = commits.into_iter().map(short_commit).collect();
    let list: Vec<&str> = set.into_iter().collect();
    match list.len() {
        0 => "no records".into(),
        1 => format!("commit {}", list[0]),
        _ => format!("commits {}", list.join(", ")),
    }
}

/// At most this many panels in one generic chart; more are split into charts of their own.
const MAX_PANELS: usize = 12;

/// A generic chart whose series need more than `MAX_PANELS` panels, split into one chart per value of the panel
/// attribute with the fewest values (recursively): records of many experiments under one kernel and operation read
/// better as several charts than as one of hundreds of panels.
fn split_panels(c: Chart) -> Vec<Chart> {
    let enc = layout::encode(&c.series);
    if layout::panel_count(&c.series, &enc.facets) <= MAX_PANELS {
        return vec![c];
    }
    let values = |k: &String| c.series.iter().map(|s| s.get(k).unwrap_or("")).collect::<BTreeSet<_>>().len();
    let Some(key) = enc.facets.iter().filter(|k| values(k) > 1).min_by_key(|k| values(k)).cloned() else { return vec![c] };
    let mut parts: BTreeMap<String, Vec<Series>> = BTreeMap::new();
    for s in &c.series {
        parts.entry(s.get(&key).unwrap_or("").to_string()).or_default().push(s.clone());
    }
    let safe = |v: &str| if v.is_empty() { "none".to_string() } else { v.chars().map(|ch| if ch.is_ascii_alphanumeric() || ch == '-' || ch == '.' { ch } else { '_' }).collect() };
    parts
        .into_iter()
        .flat_map(|(v, series)| {
            split_panels(Chart {
                name: format!("{}-{key}-{}", c.name, safe(&v)),
                title: format!("{}, {}", c.title, layout::attr_label(&key, &v)),
                series,
                ..c.clone()
            })
        })
        .collect()
}

/// The size parameter with the most distinct values among `recs` (the natural x axis).
pub fn default_x(recs: &[&Record]) -> Option<String> {
    let mut distinct: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for r in recs {
        for (k, v) in &r.sizes {
            distinct.entry(k).or_default().insert(*v);
        }
    }
    distinct.into_iter().max_by_key(|(_, s)| s.len()).map(|(k, _)| k.to_string())
}

/// What identifies a series (see `Series::attrs`).
type Attrs = Vec<(String, String)>;

/// Everything that identifies a series: the variant, the precision, and all sizes and parameters except `x`.
fn series_attrs(r: &Record, x: &str) -> Attrs {
    let mut attrs = vec![("variant".to_string(), r.variant.name().to_string()), ("precision".to_string(), r.precision.clone())];
    attrs.extend(r.sizes.iter().filter(|(k, _)| k.as_str() != x).map(|(k, v)| (k.clone(), v.to_string())));
    attrs.extend(r.params.iter().map(|(k, v)| (k.clone(), v.clone())));
    attrs
}

fn groups(records: &[Record]) -> BTreeMap<(String, String), Vec<&Record>> {
    let mut g: BTreeMap<(String, String), Vec<&Record>> = BTreeMap::new();
    for r in records.iter().filter(|r| usable(r)) {
        g.entry((r.kernel.clone(), r.op.clone())).or_default().push(r);
    }
    g
}

fn sorted(m: BTreeMap<Attrs, BTreeMap<u64, f64>>) -> Vec<Series> {
    m.into_iter().map(|(attrs, p)| Series::new(attrs, p.into_iter().map(|(x, y)| (x as f64, y)).collect())).collect()
}

/// Speedup charts: for each kernel/op, each variant other than `baseline` over `baseline` at the same case and
/// commit (passed records only; of several commits, each point from the latest pair). With no baseline given: `cpu`
/// when there are GPU records, else `cpu-ref`.
pub fn speedup_charts(records: &[Record], x: Option<&str>, baseline: Option<Variant>) -> Vec<Chart> {
    let mut charts = vec![];
    for ((kernel, op), recs) in groups(records) {
        let has_gpu = recs.iter().any(|r| r.variant == Variant::Gpu);
        let base_v = baseline.unwrap_or(if has_gpu { Variant::Cpu } else { Variant::CpuRef });
        let Some(x) = x.map(String::from).or_else(|| default_x(&recs)) else { continue };
        let base = latest(recs.iter().copied().filter(|r| r.variant == base_v), |r| (r.commit.clone(), r.case_key()));
        // per series and x, the pair of the latest commit
        let mut best: BTreeMap<(Attrs, u64), (&str, f64, &str)> = BTreeMap::new();
        for r in recs.iter().filter(|r| r.variant != base_v) {
            let (Some(b), Some(&xv)) = (base.get(&(r.commit.clone(), r.case_key())), r.sizes.get(&x)) else { continue };
            let stamp = r.timestamp.as_str().max(b.timestamp.as_str());
            let key = (series_attrs(r, &x), xv);
            if best.get(&key).is_none_or(|o| o.0 <= stamp) {
                best.insert(key, (stamp, b.time.median / r.time.median, r.commit.as_str()));
            }
        }
        if best.is_empty() {
            continue;
        }
        let commits = commits_phrase(best.values().map(|v| v.2));
        let mut series: BTreeMap<Attrs, BTreeMap<u64, f64>> = BTreeMap::new();
        for ((attrs, xv), (_, y, _)) in best {
            series.entry(attrs).or_default().insert(xv, y);
        }
        let host = recs.iter().find(|r| r.variant == base_v).map(|r| r.system.label(false)).unwrap_or_default();
        let dev = recs.iter().find(|r| r.variant == Variant::Gpu).map(|r| r.system.label(true));
        let subtitle = match dev {
            Some(d) => format!("{d} against {} on {host}; passed records of {commits}", base_v.name()),
            None => format!("{host}; passed records of {commits}"),
        };
        charts.extend(split_panels(Chart {
            name: format!("{kernel}-{op}-speedup-{x}"),
            title: format!("{kernel} {op}: speedup over {}", base_v.name()),
            subtitle,
            x_label: x.clone(),
            y_label: format!("speedup over {}", base_v.name()),
            series: sorted(series),
            lines: vec![RefLine { y: 1.0, label: "break-even (1x)".into() }],
            ..Default::default()
        }));
    }
    charts
}

/// Throughput charts: for each kernel/op, throughput vs `x`, one series per variant, precision and fixed sizes
/// (passed records only, the latest of each case).
pub fn throughput_charts(records: &[Record], x: Option<&str>) -> Vec<Chart> {
    let mut charts = vec![];
    for ((kernel, op), recs) in groups(records) {
        let Some(x) = x.map(String::from).or_else(|| default_x(&recs)) else { continue };
        let chosen = latest(recs.iter().copied(), |r| r.key());
        let mut series: BTreeMap<Attrs, BTreeMap<u64, f64>> = BTreeMap::new();
        for r in chosen.values() {
            if let Some(&xv) = r.sizes.get(&x) {
                series.entry(series_attrs(r, &x)).or_default().insert(xv, r.throughput);
            }
        }
        let unit = recs[0].throughput_unit.clone();
        let machine = recs.iter().find(|r| r.variant == Variant::Gpu).map(|r| format!("{} + {}", r.system.label(true), r.system.label(false)));
        let machine = machine.unwrap_or_else(|| recs[0].system.label(false));
        charts.extend(split_panels(Chart {
            name: format!("{kernel}-{op}-throughput-{x}"),
            title: format!("{kernel} {op}: throughput"),
            subtitle: format!("{machine}; passed records of {}", commits_phrase(chosen.values().map(|r| r.commit.as_str()))),
            x_label: x,
            y_label: unit,
            series: sorted(series),
            ..Default::default()
        }));
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;

    fn passed(mut r: Record) -> Record {
        r.validation.status = "passed".into();
        r
    }

    #[test]
    fn speedup_pairs_matching_cases() {
        let recs: Vec<Record> = vec![
            sample("bspline", Variant::Cpu, 64, 1e-3),
            sample("bspline", Variant::Gpu, 64, 1e-4),
            sample("bspline", Variant::Cpu, 256, 4e-3),
            sample("bspline", Variant::Gpu, 256, 2e-4),
        ]
        .into_iter()
        .map(passed)
        .collect();
        let charts = speedup_charts(&recs, None, None);
        assert_eq!(charts.len(), 1);
        let s = &charts[0].series;
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].points.len(), 2);
        assert!((s[0].points[0].1 - 10.0).abs() < 1e-9);
        assert!((s[0].points[1].1 - 20.0).abs() < 1e-9);
        assert_eq!(s[0].get("walkers"), Some("8"));
        assert!(charts[0].subtitle.contains("commit abc"), "{}", charts[0].subtitle);
    }

    #[test]
    fn ratios_pair_passed_records_of_one_commit() {
        let at = |v: Variant, orbitals: u64, median: f64, commit: &str, stamp: &str| {
            let mut r = passed(sample("bspline", v, orbitals, median));
            r.commit = commit.into();
            r.timestamp = stamp.into();
            r
        };
        let mut recs = vec![
            at(Variant::Cpu, 64, 1e-3, "old", "2026-01-01T00:00:00Z"),
            at(Variant::Gpu, 64, 1e-4, "old", "2026-01-01T00:00:01Z"),
            // a later GPU run whose commit has no CPU record: it pairs with nothing (the old code divided it by
            // the old commit's CPU time)
            at(Variant::Gpu, 64, 1e-5, "new", "2026-01-02T00:00:00Z"),
            // a failed record is never drawn, however late
            at(Variant::Cpu, 64, 1.0, "old", "2026-01-03T00:00:00Z"),
        ];
        recs[3].validation.status = "failed".into();
        let charts = speedup_charts(&recs, Some("orbitals"), None);
        assert_eq!(charts[0].series[0].points, vec![(64.0, 10.0)]);
        assert!(charts[0].subtitle.contains("commit old"), "{}", charts[0].subtitle);
        // once the new commit has its CPU record, its pair is the later one
        recs.push(at(Variant::Cpu, 64, 2e-4, "new", "2026-01-02T00:00:01Z"));
        let charts = speedup_charts(&recs, Some("orbitals"), None);
        assert!((charts[0].series[0].points[0].1 - 20.0).abs() < 1e-9, "{:?}", charts[0].series);
        // a record not yet checked ("unchecked", "skipped") is not drawn either
        let mut r = at(Variant::Gpu, 128, 1e-6, "new", "2026-01-04T00:00:00Z");
        r.validation.status = "unchecked".into();
        recs.push(r);
        recs.push(at(Variant::Cpu, 128, 1e-3, "new", "2026-01-04T00:00:00Z"));
        assert_eq!(speedup_charts(&recs, Some("orbitals"), None)[0].series[0].points.len(), 1);
        assert!(throughput_charts(&recs, Some("orbitals"))[0].series.iter().all(|s| s.points.iter().all(|p| p.0 != 128.0 || s.get("variant") == Some("cpu"))));
    }

    #[test]
    fn charts_of_many_experiments_split_into_charts_of_few_panels() {
        // 3 precisions x 2 variants x 4 walker counts x 5 molecules x 3 algorithms: far more than 12 panels
        let mut series = vec![];
        for p in ["double", "single", "mixed"] {
            for v in ["cpu", "gpu"] {
                for w in ["1", "4", "16", "128"] {
                    for m in ["a", "b", "c", "d", "e"] {
                        for a in ["x", "y", "z"] {
                            let attrs = [("variant", v), ("precision", p), ("walkers", w), ("molecule", m), ("algo", a)];
                            series.push(Series::new(attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), vec![(1.0, 1.0), (2.0, 2.0)]));
                        }
                    }
                }
            }
        }
        let c = Chart { name: "g".into(), title: "g".into(), series, ..Default::default() };
        let parts = split_panels(c.clone());
        assert!(parts.len() > 1);
        assert_eq!(parts.iter().map(|p| p.series.len()).sum::<usize>(), c.series.len(), "every series in one chart");
        for p in &parts {
            let l = layout(p);
            assert!(l.panels.len() <= MAX_PANELS, "{}: {} panels", p.name, l.panels.len());
            assert!(p.name.starts_with("g-") && p.title.starts_with("g, "), "{} / {}", p.name, p.title);
        }
    }

    #[test]
    fn draws_png_and_svg() {
        let recs: Vec<Record> = vec![
            sample("k", Variant::CpuRef, 64, 1e-3),
            sample("k", Variant::Cpu, 64, 1e-4),
            sample("k", Variant::Cpu, 128, 1e-4),
            sample("k", Variant::CpuRef, 128, 2e-3),
        ]
        .into_iter()
        .map(|r| if r.variant == Variant::Cpu { passed(r) } else { r })
        .collect();
        let dir = std::env::temp_dir().join(format!("qmc-plot-{}", std::process::id()));
        let charts = speedup_charts(&recs, None, None);
        assert_eq!(charts.len(), 1, "cpu over cpu-ref when there is no GPU");
        let files = draw(&charts[0], &dir).unwrap();
        for f in &files {
            assert!(std::fs::metadata(f).unwrap().len() > 1000, "{} too small", f.display());
        }
        let svg = std::fs::read_to_string(&files[1]).unwrap();
        assert!(svg.contains("<svg") && svg.contains("speedup"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stacked_bars_stand_in_panels_and_name_each_bar() {
        let share = |name: &str, v: [f64; 4]| Series::new(vec![("share".into(), name.into())], v.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect());
        let bar = |panel: &str, label: &str| Bar { panel: panel.into(), label: label.into() };
        let chart = Chart {
            name: "shares".into(),
            title: "time per class".into(),
            x_label: "variant".into(),
            y_label: "fraction".into(),
            series: vec![share("orbitals", [0.25, 0.5, 0.1, 0.2]), share("determinant", [0.75, 0.5, 0.9, 0.8])],
            bars: vec![bar("128 electrons", "cpu d"), bar("128 electrons", "gpu d"), bar("256 electrons", "cpu d"), bar("256 electrons", "gpu d")],
            ..Default::default()
        };
        let l = layout(&chart);
        assert_eq!(l.panels.len(), 2);
        assert_eq!(l.panels[1].bars, vec![2, 3]);
        assert_eq!((l.y.lo, l.y.hi), (0.0, 1.0), "fractions that end at 1 on an axis that ends at 1");
        assert_eq!((l.y.ticks.first(), l.y.ticks.last()), (Some(&0.0), Some(&1.0)), "{:?}", l.y.ticks);
        assert!(l.problems(&chart).is_empty(), "{:#?}", l.problems(&chart));
        let svg = svg_text(&chart).unwrap();
        for name in ["cpu d", "gpu d", "128 electrons", "orbitals", "determinant"] {
            assert!(svg.contains(name), "{name} missing from the chart");
        }
    }
}
