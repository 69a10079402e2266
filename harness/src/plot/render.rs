//! Draw a `Layout` through plotters, in pixels: everything goes exactly where the layout put it (nothing is placed by
//! plotters itself), so the layout's checks hold for the PNG and the SVG.

use super::layout::{Anchor, Layout, Swatch, Text, MARKER_R, PAPER_R};
use super::style::{self, Dash, Look, Marker, Rgb};
use super::Chart;
use anyhow::{anyhow, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn px((x, y): (f64, f64)) -> (i32, i32) {
    (x.round() as i32, y.round() as i32)
}

/// The pieces of a polyline drawn in `dash` (on/off lengths in pixels).
fn dashed(points: &[(f64, f64)], dash: Dash) -> Vec<Vec<(f64, f64)>> {
    let (on, off): (f64, f64) = match dash {
        Dash::Solid => return vec![points.to_vec()],
        Dash::Dashed => (7.0, 4.0),
        Dash::Dotted => (2.0, 3.0),
    };
    let mut out = vec![];
    let mut cur: Vec<(f64, f64)> = vec![];
    let (mut drawing, mut left) = (true, on);
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let mut t = 0.0;
        while t < len {
            let step = left.min(len - t);
            let p0 = (a.0 + (b.0 - a.0) * t / len, a.1 + (b.1 - a.1) * t / len);
            let p1 = (a.0 + (b.0 - a.0) * (t + step) / len, a.1 + (b.1 - a.1) * (t + step) / len);
            if drawing {
                if cur.is_empty() {
                    cur.push(p0);
                }
                cur.push(p1);
            }
            t += step;
            left -= step;
            if left <= 1e-9 {
                if drawing && !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                drawing = !drawing;
                left = if drawing { on } else { off };
            }
        }
    }
    if cur.len() > 1 {
        out.push(cur);
    }
    out
}

struct Painter<'a, DB: DrawingBackend> {
    root: &'a DrawingArea<DB, Shift>,
    name: &'a str,
}

impl<DB: DrawingBackend> Painter<'_, DB>
where
    DB::ErrorType: 'static,
{
    fn err(&self, e: DrawingAreaErrorKind<DB::ErrorType>) -> anyhow::Error {
        anyhow!("drawing {}: {e:?}", self.name)
    }

    fn line(&self, points: &[(f64, f64)], color: Rgb, width: u32, dash: Dash) -> Result<()> {
        for piece in dashed(points, dash) {
            let pts: Vec<(i32, i32)> = piece.into_iter().map(px).collect();
            self.root.draw(&PathElement::new(pts, rgb(color).stroke_width(width))).map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn rect(&self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), style: ShapeStyle) -> Result<()> {
        self.root.draw(&Rectangle::new([px((x0, y0)), px((x1, y1))], style)).map_err(|e| self.err(e))
    }

    /// A marker at `at`: filled, or (hollow) white inside a 2-pixel outline.
    fn marker(&self, at: (f64, f64), marker: Marker, color: Rgb, r: f64, hollow: bool) -> Result<()> {
        let (x, y) = at;
        let c = rgb(color);
        let outline: Vec<(f64, f64)> = match marker {
            Marker::Circle => {
                let (cx, cy) = px(at);
                if hollow {
                    self.root.draw(&Circle::new((cx, cy), r as i32, WHITE.filled())).map_err(|e| self.err(e))?;
                    return self.root.draw(&Circle::new((cx, cy), r as i32, c.stroke_width(2))).map_err(|e| self.err(e));
                }
                return self.root.draw(&Circle::new((cx, cy), r as i32, c.filled())).map_err(|e| self.err(e));
            }
            Marker::Square => vec![(x - r, y - r), (x + r, y - r), (x + r, y + r), (x - r, y + r)],
            Marker::TriangleUp => vec![(x, y - 1.25 * r), (x + 1.15 * r, y + 0.85 * r), (x - 1.15 * r, y + 0.85 * r)],
            Marker::TriangleDown => vec![(x, y + 1.25 * r), (x + 1.15 * r, y - 0.85 * r), (x - 1.15 * r, y - 0.85 * r)],
            Marker::Diamond => vec![(x, y - 1.3 * r), (x + 1.1 * r, y), (x, y + 1.3 * r), (x - 1.1 * r, y)],
            Marker::Cross => {
                self.line(&[(x - r, y - r), (x + r, y + r)], color, 2, Dash::Solid)?;
                return self.line(&[(x - r, y + r), (x + r, y - r)], color, 2, Dash::Solid);
            }
            Marker::Plus => {
                let r = 1.3 * r;
                self.line(&[(x - r, y), (x + r, y)], color, 2, Dash::Solid)?;
                return self.line(&[(x, y - r), (x, y + r)], color, 2, Dash::Solid);
            }
            Marker::Pentagon => (0..5)
                .map(|k| {
                    let a = std::f64::consts::PI * (2.0 * k as f64 / 5.0 - 0.5);
                    (x + 1.2 * r * a.cos(), y + 1.2 * r * a.sin())
                })
                .collect(),
        };
        let pts: Vec<(i32, i32)> = outline.iter().copied().map(px).collect();
        if hollow {
            self.root.draw(&Polygon::new(pts.clone(), WHITE.filled())).map_err(|e| self.err(e))?;
            let mut closed = pts;
            closed.push(closed[0]);
            self.root.draw(&PathElement::new(closed, c.stroke_width(2))).map_err(|e| self.err(e))
        } else {
            self.root.draw(&Polygon::new(pts, c.filled())).map_err(|e| self.err(e))
        }
    }

    fn text(&self, t: &Text) -> Result<()> {
        let h = match t.anchor {
            Anchor::Left => HPos::Left,
            Anchor::Center => HPos::Center,
            Anchor::Right => HPos::Right,
        };
        let font = ("sans-serif", t.size).into_font();
        let color = rgb(t.color);
        let mut style = TextStyle::from(font).color(&color).pos(Pos::new(h, VPos::Top));
        if t.rotated {
            style = style.transform(FontTransform::Rotate270);
        }
        self.root.draw(&plotters::element::Text::new(t.text.clone(), px((t.x, t.y)), style)).map_err(|e| self.err(e))
    }

    fn swatch(&self, sw: &Swatch, (x, y): (f64, f64)) -> Result<()> {
        let half = 13.0;
        match *sw {
            Swatch::Line { color, dash, marker } => {
                self.line(&[(x - half, y), (x + half, y)], color, 2, dash)?;
                if let Some(m) = marker {
                    self.marker((x, y), m, color, MARKER_R, false)?;
                }
            }
            Swatch::Marker(m) => self.marker((x, y), m, style::MUTED, MARKER_R, false)?,
            Swatch::Paper(look) => {
                self.line(&[(x - half, y), (x + half, y)], look.color, 1, Dash::Dotted)?;
                self.marker((x, y), look.marker, look.color, PAPER_R, true)?;
            }
            Swatch::Band(color) => self.rect((x - half, y - 6.0), (x + half, y + 6.0), rgb(color).mix(0.18).filled())?,
            Swatch::Fill(color) => self.rect((x - 8.0, y - 6.0), (x + 8.0, y + 6.0), rgb(color).filled())?,
        }
        Ok(())
    }
}

/// Draw chart `c` as laid out in `l`.
pub fn render<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &Chart, l: &Layout) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let p = Painter { root: &root, name: &c.name };
    root.fill(&WHITE).map_err(|e| p.err(e))?;
    for panel in &l.panels {
        let r = panel.rect;
        // grid at the ticks, then the frame
        for v in &l.y.ticks {
            let y = l.y_at(panel, *v);
            p.line(&[(r.x0, y), (r.x1, y)], style::GRID, 1, Dash::Solid)?;
            p.line(&[(r.x0 - 4.0, y), (r.x0, y)], style::FRAME, 1, Dash::Solid)?;
        }
        if panel.bars.is_empty() {
            for v in &l.x.ticks {
                let x = r.x0 + l.x.frac(*v) * r.width();
                p.line(&[(x, r.y0), (x, r.y1)], style::GRID, 1, Dash::Solid)?;
                p.line(&[(x, r.y1), (x, r.y1 + 4.0)], style::FRAME, 1, Dash::Solid)?;
            }
        }
        p.rect((r.x0, r.y0), (r.x1, r.y1), rgb(style::FRAME).stroke_width(1))?;
        // the paper's ranges under everything
        for &i in &panel.paper {
            if let Some((lo, hi)) = c.paper[i].band {
                let color = l.paper_looks[i].color;
                if hi > lo {
                    p.rect((r.x0 + 1.0, l.y_at(panel, hi)), (r.x1 - 1.0, l.y_at(panel, lo)), rgb(color).mix(0.18).filled())?;
                } else {
                    p.line(&[(r.x0, l.y_at(panel, lo)), (r.x1, l.y_at(panel, lo))], color, 2, Dash::Dotted)?;
                }
            }
        }
        for rule in &l.rules {
            let y = l.y_at(panel, rule.y);
            p.line(&[(r.x0, y), (r.x1, y)], style::MUTED, 1, Dash::Dashed)?;
        }
        // stacked bars
        let n = panel.bars.len();
        for (k, &b) in panel.bars.iter().enumerate() {
            let slot = r.width() / n as f64;
            let (x0, x1) = (r.x0 + (k as f64 + 0.15) * slot, r.x0 + (k as f64 + 0.85) * slot);
            let mut base = 0.0;
            for (s, look) in c.series.iter().zip(&l.looks) {
                let v = s.at(b as f64).max(0.0);
                if v > 0.0 {
                    p.rect((x0, l.y_at(panel, base + v)), (x1, l.y_at(panel, base)), rgb(look.color).filled())?;
                }
                base += v;
            }
        }
        if n > 0 {
            continue;
        }
        // series: lines, then markers on top
        for &i in &panel.series {
            let look: &Look = &l.looks[i];
            let pts: Vec<(f64, f64)> = c.series[i].points.iter().map(|q| l.at(panel, *q)).collect();
            p.line(&pts, look.color, 2, look.dash)?;
        }
        for &i in &panel.series {
            let look = &l.looks[i];
            for q in &c.series[i].points {
                p.marker(l.at(panel, *q), look.marker, look.color, MARKER_R, false)?;
            }
        }
        for &i in &panel.paper {
            let look = &l.paper_looks[i];
            let pts: Vec<(f64, f64)> = c.paper[i].points.iter().map(|q| l.at(panel, *q)).collect();
            if pts.len() > 1 {
                p.line(&pts, look.color, 1, Dash::Dotted)?;
            }
            for q in pts {
                p.marker(q, look.marker, look.color, PAPER_R, true)?;
            }
        }
    }
    if let Some(legend) = &l.legend {
        let r = legend.rect;
        p.rect((r.x0, r.y0), (r.x1, r.y1), rgb(style::GRID).stroke_width(1))?;
        for e in &legend.entries {
            p.swatch(&e.swatch, e.at)?;
        }
    }
    for t in &l.texts {
        p.text(t)?;
    }
    root.present().map_err(|e| p.err(e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dashes_cover_about_their_share_of_the_line() {
        let pieces = dashed(&[(0.0, 0.0), (110.0, 0.0)], Dash::Dashed);
        assert_eq!(pieces.len(), 10, "7 on, 4 off over 110 pixels");
        let drawn: f64 = pieces.iter().map(|p| p.last().unwrap().0 - p[0].0).sum();
        assert!((drawn - 70.0).abs() < 1e-9, "{drawn}");
        assert_eq!(dashed(&[(0.0, 0.0), (5.0, 5.0)], Dash::Solid).len(), 1);
    }
}
