//! Charts drawn from records only: speedup of each fast variant over a baseline vs a size, and throughput vs a
//! size, one series per precision and fixed parameters (walkers, ...). Each chart is written as PNG and SVG, in one
//! plot style. The font is embedded (DejaVu Sans), so plotting needs no system fonts.

use crate::output::write_atomic;
use crate::record::{Record, Variant};
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart with log-scaled axes, or (with `bars`) stacked bars of shares.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File stem (no extension), e.g. "bspline-vgh-speedup-orbitals".
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// A dashed horizontal reference line (1 for speedups: the break-even).
    pub hline: Option<f64>,
    /// Stacked bars instead of lines where not empty: one bar per name here, left to right; a series point (i, v)
    /// is that series' share v in bar i, stacked in series order on a linear axis.
    pub bars: Vec<String>,
}

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .unwrap_or_else(|_| panic!("the embedded DejaVu font is valid"));
    });
}

/// Axis tick text with about three significant digits.
fn tick(v: f64) -> String {
    match v.abs() {
        a if a >= 1e5 || (a < 1e-2 && a > 0.0) => format!("{v:.1e}"),
        a if a >= 10.0 => format!("{v:.0}"),
        a if a >= 1.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.filter(|v| v.is_finite() && *v > 0.0).fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        (0.1, 10.0)
    } else {
        (lo / 1.3, hi * 1.3)
    }
}

/// Stacked bars (`Chart::bars`): each bar's shares from the bottom in series order, a legend of the series.
fn render_bars<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &Chart) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing {}: {e:?}", c.name);
    root.fill(&WHITE).map_err(e)?;
    let n = c.bars.len();
    let share = |s: &Series, i: usize| s.points.iter().find(|p| p.0 as usize == i).map_or(0.0, |p| p.1.max(0.0));
    let top = (0..n).map(|i| c.series.iter().map(|s| share(s, i)).sum::<f64>()).fold(1.0f64, f64::max);
    // room above the bars for the legend
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d((0..n as i32 - 1).into_segmented(), 0.0..top * 1.45)
        .map_err(e)?;
    let bars = c.bars.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .y_labels(10)
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 17))
        .x_label_formatter(&move |v| match v {
            SegmentValue::CenterOf(i) => bars.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(e)?;
    let mut base = vec![0.0; n];
    for (k, s) in c.series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let rects: Vec<_> = (0..n)
            .map(|i| {
                let (y0, y1) = (base[i], base[i] + share(s, i));
                base[i] = y1;
                let mut r = Rectangle::new([(SegmentValue::Exact(i as i32), y0), (SegmentValue::Exact(i as i32 + 1), y1)], color.filled());
                r.set_margin(0, 0, 6, 6);
                r
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(e)?
            .label(&s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

/// The corner of a log-log chart over `xr` x `yr` where the legend hides the fewest points: each corner's box
/// spans 40% of either axis (log scale); ties go to the upper left, then upper right.
fn legend_corner(series: &[Series], xr: (f64, f64), yr: (f64, f64)) -> SeriesLabelPosition {
    let at = |v: f64, (lo, hi): (f64, f64)| (v.ln() - lo.ln()) / (hi.ln() - lo.ln());
    let points: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.iter()).filter(|p| p.0 > 0.0 && p.1 > 0.0).map(|p| (at(p.0, xr), at(p.1, yr))).collect();
    let hidden = |left: bool, top: bool| {
        points.iter().filter(|(x, y)| (if left { *x < 0.4 } else { *x > 0.6 }) && (if top { *y > 0.6 } else { *y < 0.4 })).count()
    };
    [
        (SeriesLabelPosition::UpperLeft, hidden(true, true)),
        (SeriesLabelPosition::UpperRight, hidden(false, true)),
        (SeriesLabelPosition::LowerRight, hidden(false, false)),
        (SeriesLabelPosition::LowerLeft, hidden(true, false)),
    ]
    .into_iter()
    .min_by_key(|c| c.1)
    .map(|c| c.0)
    .unwrap_or(SeriesLabelPosition::UpperLeft)
}

fn render<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &Chart) -> Result<()>
where
    DB::ErrorType: 'static,
{
    if !c.bars.is_empty() {
        return render_bars(root, c);
    }
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing {}: {e:?}", c.name);
    root.fill(&WHITE).map_err(e)?;
    let (x0, x1) = range(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let (mut y0, mut y1) = range(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)));
    if let Some(h) = c.hline {
        y0 = y0.min(h / 1.3);
        y1 = y1.max(h * 1.3);
    }
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_labels(12)
        .y_labels(12)
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .x_label_formatter(&|v| tick(*v))
        .y_label_formatter(&|v| tick(*v))
        .draw()
        .map_err(e)?;
    if let Some(h) = c.hline {
        let dash = DashedLineSeries::new(vec![(x0, h), (x1, h)], 6, 4, BLACK.mix(0.5).stroke_width(1));
        chart.draw_series(dash).map_err(e)?;
    }
    for (i, s) in c.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
            .map_err(e)?
            .label(&s.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(2)));
        chart.draw_series(s.points.iter().map(|p| Circle::new(*p, 4, color.filled()))).map_err(e)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 14))
        .position(legend_corner(&c.series, (x0, x1), (y0, y1)))
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

/// Pixels of a chart: 960 x 640, wider where many bars need room for their names (72 px a bar).
fn size(chart: &Chart) -> (u32, u32) {
    (960.max(140 + 72 * chart.bars.len() as u32), 640)
}

/// Draw `chart` into `<dir>/<name>.png` and `.svg` (each written to a temporary name, then renamed).
pub fn draw(chart: &Chart, dir: &Path) -> Result<Vec<PathBuf>> {
    register_font();
    std::fs::create_dir_all(dir).map_err(|e| anyhow!("cannot create {}: {e}", dir.display()))?;
    let png = dir.join(format!("{}.png", chart.name));
    let svg = dir.join(format!("{}.svg", chart.name));
    let tmp_png = dir.join(format!(".{}.{}.png", chart.name, std::process::id()));
    render(BitMapBackend::new(&tmp_png, size(chart)).into_drawing_area(), chart)?;
    std::fs::rename(&tmp_png, &png).map_err(|e| anyhow!("cannot write {}: {e}", png.display()))?;
    write_atomic(&svg, svg_text(chart)?.as_bytes())?;
    Ok(vec![png, svg])
}

/// The chart as SVG text (for pages that embed their charts).
pub fn svg_text(chart: &Chart) -> Result<String> {
    register_font();
    let mut text = String::new();
    render(SVGBackend::with_string(&mut text, size(chart)).into_drawing_area(), chart)?;
    Ok(text)
}

/// The size parameter with the most distinct values among `recs` (the natural x axis).
pub fn default_x(recs: &[&Record]) -> Option<String> {
    let mut distinct: BTreeMap<&str, std::collections::BTreeSet<u64>> = BTreeMap::new();
    for r in recs {
        for (k, v) in &r.sizes {
            distinct.entry(k).or_default().insert(*v);
        }
    }
    distinct.into_iter().max_by_key(|(_, s)| s.len()).map(|(k, _)| k.to_string())
}

/// Label of everything that identifies a series: the precision and all sizes/params except `x`.
fn series_label(r: &Record, x: &str) -> String {
    let mut parts = vec![r.precision.clone()];
    parts.extend(r.sizes.iter().filter(|(k, _)| k.as_str() != x).map(|(k, v)| format!("{k}={v}")));
    parts.extend(r.params.iter().map(|(k, v)| format!("{k}={v}")));
    parts.join(" ")
}

fn groups(records: &[Record]) -> BTreeMap<(String, String), Vec<&Record>> {
    let mut g: BTreeMap<(String, String), Vec<&Record>> = BTreeMap::new();
    for r in records {
        g.entry((r.kernel.clone(), r.op.clone())).or_default().push(r);
    }
    g
}

fn sorted(mut m: BTreeMap<String, Vec<(f64, f64)>>) -> Vec<Series> {
    m.iter_mut().for_each(|(_, p)| p.sort_by(|a, b| a.0.total_cmp(&b.0)));
    m.into_iter().map(|(name, points)| Series { name, points }).collect()
}

/// Speedup charts: for each kernel/op, each variant other than `baseline` over `baseline` at the same case.
/// With no baseline given: `cpu` when there are GPU records, else `cpu-ref`.
pub fn speedup_charts(records: &[Record], x: Option<&str>, baseline: Option<Variant>) -> Vec<Chart> {
    let mut charts = vec![];
    for ((kernel, op), recs) in groups(records) {
        let has_gpu = recs.iter().any(|r| r.variant == Variant::Gpu);
        let base_v = baseline.unwrap_or(if has_gpu { Variant::Cpu } else { Variant::CpuRef });
        let Some(x) = x.map(String::from).or_else(|| default_x(&recs)) else { continue };
        // latest record of each (variant, case)
        let mut latest: BTreeMap<(Variant, String), &Record> = BTreeMap::new();
        for r in &recs {
            latest.insert((r.variant, r.case_key()), r);
        }
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for ((v, key), r) in &latest {
            if *v == base_v {
                continue;
            }
            let (Some(base), Some(&xv)) = (latest.get(&(base_v, key.clone())), r.sizes.get(&x)) else { continue };
            let label = format!("{} {}", v.name(), series_label(r, &x));
            series.entry(label).or_default().push((xv as f64, base.time.median / r.time.median));
        }
        if series.is_empty() {
            continue;
        }
        let host = recs.iter().find(|r| r.variant == base_v).map(|r| r.system.label(false)).unwrap_or_default();
        let dev = recs.iter().find(|r| r.variant == Variant::Gpu).map(|r| r.system.label(true));
        let title = match dev {
            Some(d) if base_v != Variant::Gpu => format!("{kernel} {op}: {d} vs {}", base_v.name()),
            _ => format!("{kernel} {op}: speedup over {}", base_v.name()),
        };
        charts.push(Chart {
            name: format!("{kernel}-{op}-speedup-{x}"),
            title,
            x_label: x.clone(),
            y_label: format!("speedup over {} on {host}", base_v.name()),
            series: sorted(series),
            hline: Some(1.0),
            bars: vec![],
        });
    }
    charts
}

/// Throughput charts: for each kernel/op, throughput vs `x`, one series per variant, precision and fixed sizes.
pub fn throughput_charts(records: &[Record], x: Option<&str>) -> Vec<Chart> {
    let mut charts = vec![];
    for ((kernel, op), recs) in groups(records) {
        let Some(x) = x.map(String::from).or_else(|| default_x(&recs)) else { continue };
        let mut latest: BTreeMap<String, &Record> = BTreeMap::new();
        for r in &recs {
            latest.insert(r.key(), r);
        }
        let mut series: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in latest.values() {
            if let Some(&xv) = r.sizes.get(&x) {
                series.entry(format!("{} {}", r.variant.name(), series_label(r, &x))).or_default().push((xv as f64, r.throughput));
            }
        }
        let unit = recs[0].throughput_unit.clone();
        charts.push(Chart {
            name: format!("{kernel}-{op}-throughput-{x}"),
            title: format!("{kernel} {op}: throughput"),
            x_label: x,
            y_label: unit,
            series: sorted(series),
            hline: None,
            bars: vec![],
        });
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;

    #[test]
    fn speedup_pairs_matching_cases() {
        let recs = vec![
            sample("bspline", Variant::Cpu, 64, 1e-3),
            sample("bspline", Variant::Gpu, 64, 1e-4),
            sample("bspline", Variant::Cpu, 256, 4e-3),
            sample("bspline", Variant::Gpu, 256, 2e-4),
        ];
        let charts = speedup_charts(&recs, None, None);
        assert_eq!(charts.len(), 1);
        let s = &charts[0].series;
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].points.len(), 2);
        assert!((s[0].points[0].1 - 10.0).abs() < 1e-9);
        assert!((s[0].points[1].1 - 20.0).abs() < 1e-9);
        assert!(s[0].name.contains("walkers=8"), "{}", s[0].name);
    }

    #[test]
    fn draws_png_and_svg() {
        let recs = vec![sample("k", Variant::CpuRef, 64, 1e-3), sample("k", Variant::Cpu, 64, 1e-4), sample("k", Variant::Cpu, 128, 1e-4), sample("k", Variant::CpuRef, 128, 2e-3)];
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
    fn stacked_bars_name_each_bar_and_widen_with_them() {
        let share = |name: &str, v: [f64; 3]| Series { name: name.into(), points: v.iter().enumerate().map(|(i, &y)| (i as f64, y)).collect() };
        let chart = Chart {
            name: "shares".into(),
            title: "time per class".into(),
            x_label: "bar".into(),
            y_label: "fraction".into(),
            series: vec![share("orbitals", [0.25, 0.5, 0.1]), share("determinant", [0.75, 0.5, 0.9])],
            hline: None,
            bars: vec!["cpu-d 128".into(), "gpu-d 128".into(), "gpu-m 128".into()],
        };
        let svg = svg_text(&chart).unwrap();
        for name in ["cpu-d 128", "gpu-d 128", "gpu-m 128", "orbitals", "determinant"] {
            assert!(svg.contains(name), "{name} missing from the chart");
        }
        // six stacked rectangles (two series x three bars) besides the legend's two
        assert!(svg.matches("<rect").count() >= 8, "{}", svg.matches("<rect").count());
        assert_eq!(size(&chart), (960, 640));
        let many = Chart { bars: (0..20).map(|i| format!("bar {i}")).collect(), ..chart };
        assert_eq!(size(&many), (140 + 72 * 20, 640));
    }

    #[test]
    fn the_legend_goes_where_the_fewest_points_are() {
        let s = |pts: &[(f64, f64)]| vec![Series { name: "a".into(), points: pts.to_vec() }];
        let (xr, yr) = ((1.0, 1000.0), (1.0, 1000.0));
        // points in the upper left: the legend moves to the upper right
        assert!(matches!(legend_corner(&s(&[(2.0, 500.0), (3.0, 600.0)]), xr, yr), SeriesLabelPosition::UpperRight));
        // both upper corners taken: lower right
        assert!(matches!(legend_corner(&s(&[(2.0, 500.0), (900.0, 900.0), (2.0, 2.0), (3.0, 3.0)]), xr, yr), SeriesLabelPosition::LowerRight));
        // nothing in the way: upper left, as before
        assert!(matches!(legend_corner(&s(&[(30.0, 30.0)]), xr, yr), SeriesLabelPosition::UpperLeft));
    }
}
