//! Where everything of a chart goes, computed before anything is drawn, so that it can be checked: the panels (small
//! multiples when one panel would hold more than six series), how each series looks (by meaning, see `style`),
//! the axes and their ticks, every text with its box, and the legend beside the panels (never over the data).
//! `render` draws exactly this; `Layout::problems` checks it.

use super::style::{self, value_order, Dash, Look, Marker, Rgb, MARKERS};
use super::ticks::{self, Axis};
use super::{Chart, Series};
use plotters::style::{FontDesc, FontFamily, FontStyle};
use std::collections::BTreeSet;

/// At most this many series in one panel; more are split into panels.
pub const MAX_SERIES: usize = 6;

const MARGIN: f64 = 16.0;
pub const TITLE: f64 = 19.0;
const SUBTITLE: f64 = 13.0;
const AXIS: f64 = 14.0;
pub const TICK: f64 = 12.0;
const LEGEND: f64 = 12.0;
const PANEL_TITLE: f64 = 13.0;
const NOTE: f64 = 11.5;
const LINE_LABEL: f64 = 11.0;
/// Radius of a data marker; the paper's hollow markers are larger.
pub const MARKER_R: f64 = 4.0;
pub const PAPER_R: f64 = 5.5;
const GAP_X: f64 = 18.0;
const GAP_Y: f64 = 12.0;
const LEGEND_GAP: f64 = 24.0;
const SWATCH_W: f64 = 30.0;
const LEGEND_PAD: f64 = 8.0;
const LEGEND_MAX_TEXT: f64 = 250.0;

/// A box in pixels, y down.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
    pub fn contains(&self, (x, y): (f64, f64)) -> bool {
        x >= self.x0 && x <= self.x1 && y >= self.y0 && y <= self.y1
    }
    pub fn within(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 && self.x1 <= o.x1 && self.y0 >= o.y0 && self.y1 <= o.y1
    }
    pub fn grow(&self, d: f64) -> Rect {
        Rect { x0: self.x0 - d, y0: self.y0 - d, x1: self.x1 + d, y1: self.y1 + d }
    }
    pub fn width(&self) -> f64 {
        self.x1 - self.x0
    }
    pub fn height(&self) -> f64 {
        self.y1 - self.y0
    }
}

/// What a text is, for the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Title,
    Subtitle,
    Note,
    AxisLabel,
    PanelTitle,
    XTick,
    YTick,
    Legend,
    LineLabel,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    Left,
    Center,
    Right,
}

/// One line of text: drawn with its top at `y` and `x` at its left, centre or right (`anchor`); rotated text reads
/// upwards and is centred on (x, y) along its length.
#[derive(Clone, Debug, PartialEq)]
pub struct Text {
    pub text: String,
    pub x: f64,
    pub y: f64,
    pub size: f64,
    pub anchor: Anchor,
    pub rotated: bool,
    pub role: Role,
    pub color: Rgb,
    /// Advance width in pixels, measured with the embedded font.
    pub width: f64,
}

impl Text {
    fn new(role: Role, text: &str, (x, y): (f64, f64), size: f64, anchor: Anchor) -> Text {
        let color = match role {
            Role::Subtitle | Role::Note | Role::LineLabel => style::MUTED,
            _ => style::INK,
        };
        Text { text: text.to_string(), x, y, size, anchor, rotated: false, role, color, width: text_width(text, size) }
    }

    /// The box the glyphs can cover: the ink of the embedded font drawn by the bitmap backend runs from 0.17 size
    /// above the top to 0.72 below it, the SVG's (font-size size/1.24, dy 0.76em) from 0 to 0.8; this covers both.
    pub fn bbox(&self) -> Rect {
        let (up, down) = (0.18 * self.size, 0.82 * self.size);
        if self.rotated {
            return Rect { x0: self.x - up, x1: self.x + down, y0: self.y - self.width / 2.0, y1: self.y + self.width / 2.0 };
        }
        let x0 = match self.anchor {
            Anchor::Left => self.x,
            Anchor::Center => self.x - self.width / 2.0,
            Anchor::Right => self.x - self.width,
        };
        Rect { x0, x1: x0 + self.width, y0: self.y - up, y1: self.y + down }
    }
}

/// The advance width of `text` in the embedded font at `size`, as the bitmap backend draws it.
pub fn text_width(text: &str, size: f64) -> f64 {
    super::register_font();
    FontDesc::new(FontFamily::SansSerif, size, FontStyle::Normal).box_size(text).map(|(w, _)| w as f64 + 1.0).unwrap_or(0.6 * size * text.chars().count() as f64)
}

/// `text` broken into lines no wider than `width` (a single word wider than that gets a line of its own).
pub fn wrap(text: &str, size: f64, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = vec![];
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() { word.to_string() } else { format!("{line} {word}") };
        if !line.is_empty() && text_width(&candidate, size) > width {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// What a legend entry shows beside its text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Swatch {
    /// A line in a colour and style, with or without a marker.
    Line { color: Rgb, dash: Dash, marker: Option<Marker> },
    /// A marker alone (a size).
    Marker(Marker),
    /// The paper's hollow markers.
    Paper(Look),
    /// A shaded band (a range the paper gives).
    Band(Rgb),
    /// A filled box (a stacked share).
    Fill(Rgb),
}

#[derive(Clone, Debug, PartialEq)]
pub struct LegendEntry {
    pub swatch: Swatch,
    /// Centre of the swatch.
    pub at: (f64, f64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Legend {
    pub rect: Rect,
    pub entries: Vec<LegendEntry>,
}

/// One panel of small multiples: its plot area and what it draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    pub rect: Rect,
    /// Indices into `Chart::series`.
    pub series: Vec<usize>,
    /// Indices into `Chart::paper`.
    pub paper: Vec<usize>,
    /// Indices into `Chart::bars`, left to right.
    pub bars: Vec<usize>,
    /// Whether this panel prints the x (bottom) and y (left) tick labels; the others share them.
    pub x_labels: bool,
    pub y_labels: bool,
}

/// A reference line (break-even, a ceiling, a goal) where it is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub y: f64,
    /// Index into `texts` of its label, when the label sits on the line (else the legend names it).
    pub label: Option<usize>,
}

/// Everything's place.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    pub x: Axis,
    pub y: Axis,
    pub panels: Vec<Panel>,
    /// Per series: how it is drawn (line charts), or its fill colour in `color` (bar charts).
    pub looks: Vec<Look>,
    /// Per set of the paper's numbers.
    pub paper_looks: Vec<Look>,
    pub rules: Vec<Rule>,
    pub texts: Vec<Text>,
    pub legend: Option<Legend>,
}

/// Which attribute each channel shows, and which split the series into panels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Encoding {
    pub hue: Option<String>,
    pub dash: Option<String>,
    pub mark: Option<String>,
    pub facets: Vec<String>,
}

fn keys(series: &[Series]) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    for s in series {
        for (k, _) in &s.attrs {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    out
}

/// The distinct values of attribute `key` (absent counts as ""), in value order.
fn values(series: &[Series], key: &str) -> Vec<String> {
    let set: BTreeSet<String> = series.iter().map(|s| s.get(key).unwrap_or("").to_string()).collect();
    let mut v: Vec<String> = set.into_iter().collect();
    v.sort_by(|a, b| value_order(a, b));
    v
}

fn facet_value(s: &Series, facets: &[String]) -> Vec<String> {
    facets.iter().map(|k| s.get(k).unwrap_or("").to_string()).collect()
}

/// Panels of series sharing the facet values, in value order of the facets.
fn panels_of(series: &[Series], facets: &[String]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Vec<String>, Vec<usize>)> = vec![];
    for (i, s) in series.iter().enumerate() {
        let v = facet_value(s, facets);
        match groups.iter_mut().find(|g| g.0 == v) {
            Some(g) => g.1.push(i),
            None => groups.push((v, vec![i])),
        }
    }
    groups.sort_by(|a, b| a.0.iter().zip(&b.0).map(|(x, y)| value_order(x, y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal));
    groups.into_iter().map(|g| g.1).collect()
}

/// How many panels `series` take when split by `facets`.
pub fn panel_count(series: &[Series], facets: &[String]) -> usize {
    panels_of(series, facets).len()
}

/// Assign channels by meaning: hue to the precision (or, without one, to an algorithm-like attribute, else the
/// variant), line style to the variant, marker and shade to the size with most values; every other attribute that
/// varies splits panels, and so do the encoded ones (precision first) while a panel would hold more than six series.
pub fn encode(series: &[Series]) -> Encoding {
    let keys = keys(series);
    let varying: Vec<String> = keys.iter().filter(|k| values(series, k).len() > 1).cloned().collect();
    let numeric = |k: &str| values(series, k).iter().all(|v| v.parse::<f64>().is_ok());
    let hue = if keys.iter().any(|k| k == "precision") {
        Some("precision".to_string())
    } else {
        varying.iter().find(|k| *k != "variant" && !numeric(k)).or(varying.iter().find(|k| *k == "variant")).or(varying.first()).cloned()
    };
    let dash = varying.iter().find(|k| *k == "variant" && Some(*k) != hue.as_ref()).cloned();
    let mark = varying
        .iter()
        .filter(|k| Some(*k) != hue.as_ref() && Some(*k) != dash.as_ref())
        .max_by(|a, b| values(series, a).len().cmp(&values(series, b).len()).then(numeric(a).cmp(&numeric(b))).then(b.cmp(a)))
        .cloned();
    let mut facets: Vec<String> =
        varying.iter().filter(|k| Some(*k) != hue.as_ref() && Some(*k) != dash.as_ref() && Some(*k) != mark.as_ref()).cloned().collect();
    let most = |f: &[String]| panels_of(series, f).iter().map(|p| p.len()).max().unwrap_or(0);
    if most(&facets) > MAX_SERIES {
        // split by the encoded attributes in this order of preference (the size last: its markers say most within a
        // panel), the variant before the precision where both split, so that rows are variants
        let enc: Vec<&String> = [&dash, &hue, &mark].into_iter().flatten().filter(|k| varying.contains(k)).collect();
        let (d, h, m) = (dash.as_ref(), hue.as_ref(), mark.as_ref());
        let tries: [Vec<Option<&String>>; 7] = [vec![h], vec![d], vec![d, h], vec![m], vec![h, m], vec![d, m], vec![d, h, m]];
        for t in tries {
            let extra: Vec<String> = t.into_iter().flatten().filter(|k| enc.contains(k)).cloned().collect();
            if extra.is_empty() {
                continue;
            }
            let mut f = extra;
            f.extend(facets.iter().cloned());
            if most(&f) <= MAX_SERIES {
                facets = f;
                break;
            }
        }
    }
    Encoding { hue, dash, mark, facets }
}

/// The looks of every series under `enc`.
fn looks(series: &[Series], enc: &Encoding) -> Vec<Look> {
    let hues = enc.hue.as_deref().map(|k| values(series, k)).unwrap_or_default();
    let dashes = enc.dash.as_deref().map(|k| values(series, k)).unwrap_or_default();
    let marks = enc.mark.as_deref().map(|k| values(series, k)).unwrap_or_default();
    let rank = |vals: &[String], key: &Option<String>, s: &Series| key.as_deref().and_then(|k| vals.iter().position(|v| v == s.get(k).unwrap_or("")));
    series
        .iter()
        .map(|s| {
            let h = rank(&hues, &enc.hue, s);
            let base = match (&enc.hue, h) {
                (Some(k), Some(r)) => style::hue(s.get(k).unwrap_or(""), r),
                _ => style::hue("double", 0),
            };
            let m = rank(&marks, &enc.mark, s);
            let color = m.map_or(base, |r| style::size_shade(base, r, marks.len()));
            let dash = match (&enc.dash, rank(&dashes, &enc.dash, s)) {
                (Some(k), Some(r)) => style::dash(s.get(k).unwrap_or(""), r),
                _ => Dash::Solid,
            };
            Look { color, dash, marker: m.map_or(Marker::Circle, |r| MARKERS[r % MARKERS.len()]), hollow: false }
        })
        .collect()
}

/// Label of an attribute value in legends and panel titles: precision and variant bare, others "name=value".
pub fn attr_label(key: &str, value: &str) -> String {
    match key {
        "precision" | "variant" | "share" | "quantity" | "" => value.to_string(),
        _ if value.is_empty() => format!("no {key}"),
        _ => format!("{key}={value}"),
    }
}

/// Panel geometry: plot-area width and height for `cols` columns.
fn panel_size(cols: usize) -> (f64, f64) {
    match cols {
        1 => (620.0, 400.0),
        2 => (400.0, 280.0),
        3 => (300.0, 230.0),
        _ => (250.0, 200.0),
    }
}

fn columns(panels: usize) -> usize {
    match panels {
        0 | 1 => 1,
        2 | 4 => 2,
        3 | 5 | 6 | 9 => 3,
        _ => 4,
    }
}

/// Compute the layout of `c`.
pub fn layout(c: &Chart) -> Layout {
    let bars = !c.bars.is_empty();
    // panels and looks
    let (enc, groups) = if bars {
        let mut names: Vec<String> = vec![];
        for b in &c.bars {
            if !names.contains(&b.panel) {
                names.push(b.panel.clone());
            }
        }
        let groups: Vec<Vec<usize>> = names.iter().map(|n| (0..c.bars.len()).filter(|&i| &c.bars[i].panel == n).collect()).collect();
        (Encoding::default(), groups)
    } else {
        let enc = encode(&c.series);
        let g = panels_of(&c.series, &enc.facets);
        (enc, g)
    };
    let looks: Vec<Look> = if bars {
        c.series
            .iter()
            .enumerate()
            .map(|(i, s)| Look { color: style::share_color(s.get("share").unwrap_or(""), i), dash: Dash::Solid, marker: Marker::Square, hollow: false })
            .collect()
    } else {
        looks(&c.series, &enc)
    };
    let paper_looks: Vec<Look> = c
        .paper
        .iter()
        .enumerate()
        .map(|(i, p)| Look {
            color: p.get("precision").map_or(style::PAPER, |v| style::hue(v, 0)),
            dash: Dash::Dotted,
            marker: [Marker::Circle, Marker::Square, Marker::Diamond, Marker::TriangleUp][i % 4],
            hollow: true,
        })
        .collect();
    let n = groups.len().max(1);
    let cols = columns(n);
    let rows = n.div_ceil(cols);
    let (mut pw, ph) = panel_size(cols);
    if bars {
        let most = groups.iter().map(|g| g.len()).max().unwrap_or(1) as f64;
        let widest = c.bars.iter().map(|b| text_width(&b.label, TICK)).fold(0.0, f64::max);
        pw = (most * (widest + 14.0)).max(160.0);
    }
    let faceted = groups.len() > 1;
    // panel titles: the facet values (absent ones left out), wrapped to the panel's width
    let titles: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            let title = if bars {
                c.bars[g[0]].panel.clone()
            } else {
                let s = &c.series[g[0]];
                enc.facets.iter().filter_map(|k| s.get(k).filter(|v| !v.is_empty()).map(|v| attr_label(k, v))).collect::<Vec<_>>().join(", ")
            };
            if faceted { wrap(&title, PANEL_TITLE, pw) } else { vec![] }
        })
        .collect();
    let title_lines = titles.iter().map(|t| t.len()).max().unwrap_or(0);

    // axes from the data, ticks by the room their labels need
    let (mut x, mut y) = if bars {
        let top = c.bars.iter().enumerate().map(|(i, _)| c.series.iter().map(|s| s.at(i as f64).max(0.0)).sum::<f64>()).fold(1.0, f64::max);
        (Axis::new(0.0, 1.0, false), Axis::new(0.0, top, false))
    } else {
        let xs = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).chain(c.paper.iter().flat_map(|p| p.points.iter().map(|q| q.0)));
        let ys = c
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(c.paper.iter().flat_map(|p| p.points.iter().map(|q| q.1).chain(p.band.into_iter().flat_map(|b| [b.0, b.1]))))
            .chain(c.lines.iter().map(|l| l.y));
        let (x0, x1) = ticks::log_range(xs);
        let (y0, y1) = ticks::log_range(ys);
        (Axis::new(x0, x1, true), Axis::new(y0, y1, true))
    };
    if !bars {
        let mut data_x: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        data_x.sort_by(f64::total_cmp);
        data_x.dedup();
        let preferred = (data_x.len() <= 10 && data_x.iter().all(|v| v.fract() == 0.0)).then_some(data_x);
        let xr = x.clone();
        ticks::choose(&mut x, preferred, 10, |_| true, |t, l| {
            let boxes: Vec<(f64, f64)> = t.iter().zip(l).map(|(v, s)| (xr.frac(*v) * pw, text_width(s, TICK))).collect();
            // apart from each other, and from the next panel's labels and the y labels at the corner
            let inside = boxes.iter().all(|(x, w)| x - w / 2.0 >= 6.0 - GAP_X / 2.0 && x + w / 2.0 <= pw + GAP_X / 2.0 - 6.0);
            inside && boxes.windows(2).all(|w| w[1].0 - w[1].1 / 2.0 - (w[0].0 + w[0].1 / 2.0) >= 10.0)
        });
    }
    let yr = y.clone();
    // apart from each other, and (lines; bar labels stand clear of the corner) none hanging over the panel's bottom
    // or top edge onto the x labels or a title
    let clear = |v: f64| bars || (yr.frac(v) * ph >= 0.6 * TICK && (1.0 - yr.frac(v)) * ph >= 0.6 * TICK);
    ticks::choose(&mut y, None, 11, clear, |t, _| t.windows(2).all(|w| (yr.frac(w[1]) - yr.frac(w[0])) * ph >= TICK + 4.0));
    let ytick_w = y.labels.iter().map(|l| text_width(l, TICK)).fold(0.0, f64::max);

    // the legend's entries (text wrapped later, once its width is known)
    let mut entries: Vec<(Swatch, String)> = vec![];
    if bars {
        for (s, l) in c.series.iter().zip(&looks).rev() {
            entries.push((Swatch::Fill(l.color), s.label()));
        }
    } else {
        legend_entries(c, &enc, &looks, &mut entries);
    }
    for (p, l) in c.paper.iter().zip(&paper_looks) {
        let sw = match p.band {
            Some((lo, hi)) if hi > lo => Swatch::Band(l.color),
            Some(_) => Swatch::Line { color: l.color, dash: Dash::Dotted, marker: None },
            None => Swatch::Paper(*l),
        };
        entries.push((sw, p.label.clone()));
    }
    let text_w = entries.iter().map(|e| text_width(&e.1, LEGEND)).fold(0.0, f64::max).min(LEGEND_MAX_TEXT);

    // geometry, left to right and top to bottom
    let left = MARGIN + AXIS + 8.0 + ytick_w + 8.0;
    let grid_w = cols as f64 * pw + (cols - 1) as f64 * GAP_X;
    let last_x_half = x.labels.last().map_or(0.0, |l| text_width(l, TICK) / 2.0);
    let legend_x = left + grid_w + LEGEND_GAP.max(last_x_half + 10.0);
    let legend_w = if entries.is_empty() { 0.0 } else { 2.0 * LEGEND_PAD + SWATCH_W + 6.0 + text_w };
    let width = (legend_x + legend_w + MARGIN).max(left + grid_w + MARGIN + last_x_half).ceil();
    let mut texts: Vec<Text> = vec![];
    let mut top = MARGIN;
    for line in wrap(&c.title, TITLE, width - 2.0 * MARGIN) {
        texts.push(Text::new(Role::Title, &line, (MARGIN, top), TITLE, Anchor::Left));
        top += TITLE * 1.3;
    }
    for line in wrap(&c.subtitle, SUBTITLE, width - 2.0 * MARGIN) {
        texts.push(Text::new(Role::Subtitle, &line, (MARGIN, top), SUBTITLE, Anchor::Left));
        top += SUBTITLE * 1.35;
    }
    let grid_y0 = top + 10.0;
    let ptitle_h = if faceted { PANEL_TITLE * (0.2 + 1.3 * title_lines as f64) } else { 0.0 };
    let xtick_h = 6.0 + TICK + 6.0;
    let row_h = ptitle_h + ph + xtick_h + GAP_Y;
    let mut panels = vec![];
    for (i, g) in groups.iter().enumerate() {
        let (r, col) = (i / cols, i % cols);
        let x0 = left + col as f64 * (pw + GAP_X);
        let y0 = grid_y0 + r as f64 * row_h + ptitle_h;
        let rect = Rect { x0, y0, x1: x0 + pw, y1: y0 + ph };
        let (series, bar_idx) = if bars { ((0..c.series.len()).collect(), g.clone()) } else { (g.clone(), vec![]) };
        let paper = if bars {
            vec![]
        } else {
            let fv = facet_value(&c.series[g[0]], &enc.facets);
            (0..c.paper.len())
                .filter(|&p| enc.facets.iter().zip(&fv).all(|(k, v)| c.paper[p].get(k).is_none_or(|pv| pv == v)))
                .collect()
        };
        for (k, line) in titles[i].iter().enumerate() {
            let ty = y0 - ptitle_h + 2.0 + k as f64 * PANEL_TITLE * 1.3;
            texts.push(Text::new(Role::PanelTitle, line, ((x0 + pw / 2.0).round(), ty.round()), PANEL_TITLE, Anchor::Center));
        }
        panels.push(Panel { rect, series, paper, bars: bar_idx, x_labels: i + cols >= groups.len(), y_labels: col == 0 });
    }
    if panels.is_empty() {
        let rect = Rect { x0: left, y0: grid_y0, x1: left + pw, y1: grid_y0 + ph };
        panels.push(Panel { rect, series: vec![], paper: vec![], bars: vec![], x_labels: true, y_labels: true });
    }
    let grid_y1 = grid_y0 + rows as f64 * row_h - GAP_Y;

    // tick labels
    for p in &panels {
        if p.x_labels {
            if bars {
                for (k, &b) in p.bars.iter().enumerate() {
                    let cx = p.rect.x0 + (k as f64 + 0.5) * p.rect.width() / p.bars.len() as f64;
                    texts.push(Text::new(Role::XTick, &c.bars[b].label, (cx.round(), p.rect.y1 + 6.0), TICK, Anchor::Center));
                }
            } else {
                for (v, l) in x.ticks.iter().zip(&x.labels) {
                    let px = p.rect.x0 + x.frac(*v) * p.rect.width();
                    texts.push(Text::new(Role::XTick, l, (px.round(), p.rect.y1 + 6.0), TICK, Anchor::Center));
                }
            }
        }
        if p.y_labels {
            for (v, l) in y.ticks.iter().zip(&y.labels) {
                let py = p.rect.y1 - y.frac(*v) * p.rect.height();
                texts.push(Text::new(Role::YTick, l, (p.rect.x0 - 8.0, (py - 0.32 * TICK).round()), TICK, Anchor::Right));
            }
        }
    }
    // axis labels
    let grid_cx = left + grid_w / 2.0;
    let mut bottom = grid_y1;
    for line in wrap(&c.x_label, AXIS, grid_w.max(300.0)) {
        texts.push(Text::new(Role::AxisLabel, &line, (grid_cx.round(), bottom + 4.0), AXIS, Anchor::Center));
        bottom += AXIS * 1.3;
    }
    let y_label_h = (grid_y1 - grid_y0).max(100.0);
    let ylab = wrap(&c.y_label, AXIS, y_label_h);
    for (k, line) in ylab.iter().enumerate() {
        let mut t = Text::new(Role::AxisLabel, line, (MARGIN + 0.18 * AXIS + k as f64 * AXIS * 1.3, ((grid_y0 + grid_y1) / 2.0).round()), AXIS, Anchor::Center);
        t.rotated = true;
        texts.push(t);
    }
    // the y label may have wrapped to several lines: shift everything right of it
    let extra = (ylab.len().max(1) - 1) as f64 * AXIS * 1.3;
    let legend_x = legend_x + extra;
    let width = width + extra;
    if extra > 0.0 {
        for t in texts.iter_mut().filter(|t| !matches!(t.role, Role::Title | Role::Subtitle) && !t.rotated) {
            t.x += extra;
        }
        for p in panels.iter_mut() {
            p.rect.x0 += extra;
            p.rect.x1 += extra;
        }
    }
    // notes
    bottom += 6.0;
    for note in &c.notes {
        for line in wrap(note, NOTE, width - 2.0 * MARGIN) {
            texts.push(Text::new(Role::Note, &line, (MARGIN, bottom), NOTE, Anchor::Left));
            bottom += NOTE * 1.35;
        }
    }

    let mut layout = Layout { width, height: 0.0, x, y, panels, looks, paper_looks, rules: vec![], texts, legend: None };

    // reference lines: the label on the line where it covers no data point, else in the legend
    for line in &c.lines {
        let label = layout.place_line_label(c, line.y, &line.label);
        if label.is_none() {
            entries.push((Swatch::Line { color: style::MUTED, dash: Dash::Dashed, marker: None }, line.label.clone()));
        }
        layout.rules.push(Rule { y: line.y, label });
    }

    // the legend, beside the panels
    let mut legend_bottom = grid_y0;
    if !entries.is_empty() {
        let text_w = entries.iter().map(|e| text_width(&e.1, LEGEND)).fold(0.0, f64::max).min(LEGEND_MAX_TEXT);
        let legend_w = 2.0 * LEGEND_PAD + SWATCH_W + 6.0 + text_w;
        layout.width = layout.width.max((legend_x + legend_w + MARGIN).ceil());
        let mut yy = grid_y0 + ptitle_h + LEGEND_PAD;
        let mut placed = vec![];
        for (sw, text) in &entries {
            let lines = wrap(text, LEGEND, text_w);
            let h = lines.len() as f64 * LEGEND * 1.3;
            placed.push(LegendEntry { swatch: *sw, at: (legend_x + LEGEND_PAD + SWATCH_W / 2.0, yy + 0.32 * LEGEND) });
            for (k, l) in lines.iter().enumerate() {
                layout.texts.push(Text::new(Role::Legend, l, (legend_x + LEGEND_PAD + SWATCH_W + 6.0, yy + k as f64 * LEGEND * 1.3), LEGEND, Anchor::Left));
            }
            yy += h + 4.0;
        }
        let rect = Rect { x0: legend_x, y0: grid_y0 + ptitle_h, x1: legend_x + legend_w, y1: yy + LEGEND_PAD - 4.0 };
        legend_bottom = rect.y1;
        layout.legend = Some(Legend { rect, entries: placed });
    }
    layout.height = (bottom.max(legend_bottom) + MARGIN).ceil();
    layout.width = layout.width.ceil();
    layout
}

/// Legend entries of a line chart: one per colour (precision or what the hue shows), per line style (variant), per
/// marker (size), in value order; with nothing encoded, one per series.
fn legend_entries(c: &Chart, enc: &Encoding, looks: &[Look], out: &mut Vec<(Swatch, String)>) {
    let s = &c.series;
    if enc.hue.is_none() && enc.dash.is_none() && enc.mark.is_none() {
        for (x, l) in s.iter().zip(looks) {
            out.push((Swatch::Line { color: l.color, dash: l.dash, marker: Some(l.marker) }, x.label()));
        }
        return;
    }
    let sole_marker = enc.mark.is_none().then_some(Marker::Circle);
    if let Some(k) = &enc.hue {
        for (r, v) in values(s, k).iter().enumerate() {
            let dash = if enc.dash.is_none() { looks.iter().zip(s).find(|(_, x)| x.get(k) == Some(v)).map_or(Dash::Solid, |(l, _)| l.dash) } else { Dash::Solid };
            out.push((Swatch::Line { color: style::hue(v, r), dash, marker: sole_marker }, attr_label(k, v)));
        }
    }
    if let Some(k) = &enc.dash {
        for (r, v) in values(s, k).iter().enumerate() {
            out.push((Swatch::Line { color: style::INK, dash: style::dash(v, r), marker: None }, attr_label(k, v)));
        }
    }
    if let Some(k) = &enc.mark {
        for (r, v) in values(s, k).iter().enumerate() {
            out.push((Swatch::Marker(MARKERS[r % MARKERS.len()]), attr_label(k, v)));
        }
    }
}

impl Layout {
    /// Pixel position of data point `p` in panel `panel` (line charts).
    pub fn at(&self, panel: &Panel, (x, y): (f64, f64)) -> (f64, f64) {
        (panel.rect.x0 + self.x.frac(x) * panel.rect.width(), panel.rect.y1 - self.y.frac(y) * panel.rect.height())
    }

    /// The pixel y of value `v` in `panel`.
    pub fn y_at(&self, panel: &Panel, v: f64) -> f64 {
        panel.rect.y1 - self.y.frac(v) * panel.rect.height()
    }

    /// Every drawn data point (measured and the paper's) with the radius of its marker, per panel.
    pub fn points(&self, c: &Chart) -> Vec<(usize, (f64, f64), f64)> {
        let mut out = vec![];
        for (k, p) in self.panels.iter().enumerate() {
            if !p.bars.is_empty() {
                continue;
            }
            for &i in &p.series {
                out.extend(c.series[i].points.iter().map(|q| (k, self.at(p, *q), MARKER_R)));
            }
            for &i in &p.paper {
                out.extend(c.paper[i].points.iter().map(|q| (k, self.at(p, *q), PAPER_R)));
            }
        }
        out
    }

    /// Put a reference line's label on the line in the first panel where it fits inside the panel and covers no data
    /// point or other text: right end above, left end above, right below, left below.
    fn place_line_label(&mut self, c: &Chart, y: f64, label: &str) -> Option<usize> {
        let points = self.points(c);
        for (k, p) in self.panels.iter().enumerate() {
            let py = self.y_at(p, y);
            let w = text_width(label, LINE_LABEL);
            for (right, above) in [(true, true), (false, true), (true, false), (false, false)] {
                let tx = if right { p.rect.x1 - 4.0 - w } else { p.rect.x0 + 4.0 };
                let ty = if above { py - 3.0 - 0.82 * LINE_LABEL } else { py + 3.0 + 0.18 * LINE_LABEL };
                let t = Text::new(Role::LineLabel, label, (tx.round(), ty.round()), LINE_LABEL, Anchor::Left);
                let b = t.bbox();
                let clear = b.within(&p.rect.grow(-1.0))
                    && points.iter().filter(|q| q.0 == k).all(|q| !b.grow(q.2 + 1.0).contains(q.1))
                    && self.texts.iter().all(|o| !o.bbox().overlaps(&b));
                if clear {
                    self.texts.push(t);
                    return Some(self.texts.len() - 1);
                }
            }
        }
        None
    }

    /// What a reader would trip over, checked mechanically: a text outside the canvas, two texts overlapping, a text
    /// or the legend over a data point, the legend over a panel, a data point outside its panel, more than six series
    /// in a panel. Empty when the chart is clean.
    pub fn problems(&self, c: &Chart) -> Vec<String> {
        let mut out = vec![];
        let canvas = Rect { x0: 0.0, y0: 0.0, x1: self.width, y1: self.height };
        for t in &self.texts {
            if !t.bbox().within(&canvas) {
                out.push(format!("text '{}' ({:?}) runs outside the {}x{} canvas: {:?}", t.text, t.role, self.width, self.height, t.bbox()));
            }
        }
        for (i, a) in self.texts.iter().enumerate() {
            for b in &self.texts[i + 1..] {
                if a.bbox().overlaps(&b.bbox()) {
                    out.push(format!("texts '{}' ({:?}) and '{}' ({:?}) overlap", a.text, a.role, b.text, b.role));
                }
            }
        }
        let points = self.points(c);
        for (k, q, r) in &points {
            if !self.panels[*k].rect.contains(*q) {
                out.push(format!("a data point at {q:?} lies outside its panel {:?}", self.panels[*k].rect));
            }
            for t in &self.texts {
                if t.bbox().grow(*r).contains(*q) {
                    out.push(format!("text '{}' ({:?}) covers a data point at {q:?}", t.text, t.role));
                }
            }
            if let Some(l) = &self.legend {
                if l.rect.grow(*r).contains(*q) {
                    out.push(format!("the legend covers a data point at {q:?}"));
                }
            }
        }
        if let Some(l) = &self.legend {
            if !l.rect.within(&canvas) {
                out.push(format!("the legend {:?} runs outside the canvas", l.rect));
            }
            for p in &self.panels {
                if l.rect.overlaps(&p.rect) {
                    out.push(format!("the legend {:?} overlaps the panel {:?}", l.rect, p.rect));
                }
            }
        }
        for (k, p) in self.panels.iter().enumerate() {
            if p.series.len() > MAX_SERIES {
                out.push(format!("panel {k} holds {} series (at most {MAX_SERIES})", p.series.len()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::{PaperMark, RefLine};

    fn s(attrs: &[(&str, &str)], points: &[(f64, f64)]) -> Series {
        Series::new(attrs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(), points.to_vec())
    }

    fn chart(series: Vec<Series>) -> Chart {
        Chart { name: "t".into(), title: "a title".into(), x_label: "x".into(), y_label: "y".into(), series, ..Default::default() }
    }

    /// Fig. 3's shape: two precisions times four walker counts.
    fn fig3() -> Vec<Series> {
        let mut out = vec![];
        for p in ["double", "mixed"] {
            for (k, w) in ["32", "128", "512", "1024"].iter().enumerate() {
                let y = (k + 1) as f64 * if p == "mixed" { 12.0 } else { 9.0 };
                out.push(s(&[("precision", p), ("walkers", w)], &[(128.0, y), (256.0, 1.5 * y), (512.0, 1.3 * y), (1024.0, y), (2048.0, 0.7 * y)]));
            }
        }
        out
    }

    #[test]
    fn more_than_six_series_split_into_panels_by_meaning() {
        let e = encode(&fig3());
        assert_eq!(e.hue.as_deref(), Some("precision"));
        assert_eq!(e.mark.as_deref(), Some("walkers"));
        assert_eq!(e.facets, ["precision"], "two panels of four beat four panels of two");
        let l = layout(&chart(fig3()));
        assert_eq!(l.panels.len(), 2);
        assert!(l.panels.iter().all(|p| p.series.len() == 4));
        // one hue per precision, one marker per walker count, in every panel
        let look = |p: &str, w: &str| l.looks[fig3().iter().position(|x| x.get("precision") == Some(p) && x.get("walkers") == Some(w)).unwrap()];
        assert_eq!(look("double", "32").marker, look("mixed", "32").marker);
        assert_ne!(look("double", "32").marker, look("double", "1024").marker);
        assert_ne!(look("double", "1024").color, look("mixed", "1024").color);
        assert!(l.problems(&chart(fig3())).is_empty(), "{:#?}", l.problems(&chart(fig3())));
    }

    #[test]
    fn the_legend_sits_beside_the_panels_in_numeric_order() {
        let c = chart(fig3());
        let l = layout(&c);
        let legend = l.legend.as_ref().unwrap();
        assert!(l.panels.iter().all(|p| p.rect.x1 < legend.rect.x0));
        let texts: Vec<&str> = l.texts.iter().filter(|t| t.role == Role::Legend).map(|t| t.text.as_str()).collect();
        assert_eq!(texts, ["double", "mixed", "walkers=32", "walkers=128", "walkers=512", "walkers=1024"]);
    }

    #[test]
    fn ticks_never_collide_and_titles_stay_inside() {
        let mut c = chart(fig3());
        c.title = "Synthetic carbon solid, DMC steps: GPU (double and mixed) over all CPU cores in double vs electrons, a title long enough to wrap twice over".into();
        // x values crowding at the top of a log axis (the old 900/1000 collision)
        c.series = vec![s(&[("precision", "double")], &[(54.0, 1.0), (114.0, 2.0), (682.0, 3.0), (900.0, 3.5), (1000.0, 4.0), (1030.0, 4.0), (1642.0, 5.0), (2058.0, 5.5), (3000.0, 4.0), (4000.0, 3.0), (5000.0, 2.0)])];
        let l = layout(&c);
        assert!(l.problems(&c).is_empty(), "{:#?}", l.problems(&c));
        assert!(l.texts.iter().filter(|t| t.role == Role::Title).count() >= 2, "the title wraps");
        assert!(l.x.ticks.len() >= 2);
    }

    #[test]
    fn the_paper_and_reference_lines_are_drawn_and_labelled() {
        let mut c = chart(vec![s(&[("precision", "double")], &[(54.0, 3.0), (2058.0, 9.0)]), s(&[("precision", "single")], &[(54.0, 3.6), (2058.0, 11.0)])]);
        c.paper = vec![
            PaperMark { label: "paper 003: SP (V100 vs POWER9)".into(), attrs: vec![("precision".into(), "single".into())], points: vec![(678.0, 2.82), (1290.0, 3.15)], band: None },
            PaperMark { label: "paper 000: 10-15x".into(), attrs: vec![], points: vec![], band: Some((10.0, 15.0)) },
        ];
        c.lines = vec![RefLine { y: 1.0, label: "break-even".into() }];
        let l = layout(&c);
        assert!(l.problems(&c).is_empty(), "{:#?}", l.problems(&c));
        assert!(l.y.lo < 1.0 && l.y.hi > 15.0, "the range holds the band and the line");
        assert_eq!(l.paper_looks[0].color, style::hue("single", 0), "the paper's SP in single's hue");
        assert!(l.paper_looks.iter().all(|p| p.hollow));
        let legend: Vec<&str> = l.texts.iter().filter(|t| t.role == Role::Legend).map(|t| t.text.as_str()).collect();
        assert!(legend.iter().any(|t| t.contains("paper 003")) && legend.iter().any(|t| t.contains("10-15x")), "{legend:?}");
        assert!(l.rules[0].label.is_some() || legend.contains(&"break-even"), "the line is named somewhere");
    }

    #[test]
    fn the_checks_catch_a_bad_layout() {
        let c = chart(fig3());
        let mut l = layout(&c);
        assert!(l.problems(&c).is_empty());
        // a legend moved over the first panel, a tick label pushed onto its neighbour, a title off the canvas
        let mut bad = l.clone();
        let r = bad.panels[0].rect;
        bad.legend.as_mut().unwrap().rect = Rect { x0: r.x0, y0: r.y0, x1: r.x1, y1: r.y1 };
        assert!(bad.problems(&c).iter().any(|p| p.contains("legend covers a data point")));
        let mut bad = l.clone();
        let i = bad.texts.iter().position(|t| t.role == Role::XTick).unwrap();
        bad.texts[i + 1].x = bad.texts[i].x + 2.0;
        assert!(bad.problems(&c).iter().any(|p| p.contains("overlap")));
        l.texts[0].x = -50.0;
        assert!(l.problems(&c).iter().any(|p| p.contains("outside")));
        // seven series in a panel
        let mut bad = layout(&c);
        bad.panels[0].series = (0..7).collect();
        assert!(bad.problems(&c).iter().any(|p| p.contains("7 series")));
    }
}
