//! The procurement page: `qmcbench score NEW --reference REF --html FILE` writes one self-contained HTML page (inline
//! style and SVG, no scripts, nothing fetched) with the two machines and their commits, the workload version, the
//! GPU and host scores with their 95% intervals, and per kernel the ratio with its interval beside the roofline
//! side (the fraction of the copy bandwidth each machine reached, and the ratio of the two copy ceilings that a
//! bandwidth-bound kernel should follow), then every case. Everything comes from [`crate::score::Scores`].

use crate::report::{esc, STYLE};
use crate::score::{pct, short, Estimate, Part, Scores, Side};
use std::fmt::Write;

const EXTRA_STYLE: &str = ".score{font-size:28px;font-weight:bold}.interval{color:#555}\
.parts{display:flex;gap:3em;flex-wrap:wrap}.note{color:#555;font-size:13px;max-width:900px}";

/// The page.
pub fn html(s: &Scores, combined: bool) -> String {
    let title = format!("Procurement score: {} against {}", s.new.machine.gpu, s.reference.machine.gpu);
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>{}</h1><p>Workload <b>score {}</b>: {} cases, each measured on the GPU and on all cores of the host, \
         every record checked against the f64 reference. A ratio above 1 is faster than the reference.</p>",
        esc(&title),
        esc(s.version),
        s.gpu.cases.len()
    );
    let _ = write!(body, "<h2>Machines</h2><table><tr><th></th><th>GPU</th><th>host CPU</th><th>records</th><th>commit</th><th>runs</th></tr>{}{}</table>", machine_row("machine", &s.new), machine_row("reference", &s.reference));
    body.push_str("<h2>Scores</h2><div class=\"parts\">");
    for p in [&s.gpu, &s.host] {
        let _ = write!(body, "<div><div>{} score</div>{}</div>", p.name(), big(&p.score));
    }
    if combined {
        let _ = write!(body, "<div><div>combined (geometric mean of the two)</div>{}</div>", big(&s.combined));
    }
    let _ = write!(body, "</div><p class=\"note\">{}.</p>", esc(&s.interval_note()));
    for p in [&s.gpu, &s.host] {
        part(&mut body, p);
    }
    body.push_str(
        "<h2>Reading the ratios</h2><p class=\"note\">A kernel that reaches half or more of the copy bandwidth on the \
         reference machine is bandwidth-bound: moving a machine's memory bandwidth moves its ratio, and it should sit \
         near the ratio of the two copy ceilings. The others are bound by arithmetic or latency and follow the \
         arithmetic rate: an H200 against an H100 (1.4x the memory bandwidth, about the same arithmetic) should show \
         about 1.4 on the first kind and about 1.0 on the second. Each score is the geometric mean over kernels of \
         each kernel's geometric mean over its cases, so every kernel weighs the same.</p>",
    );
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}{EXTRA_STYLE}</style></head><body>{body}</body></html>\n",
        t = esc(&title)
    )
}

fn machine_row(what: &str, x: &Side) -> String {
    let commits: Vec<String> = x.commits.iter().map(|c| short(c)).collect();
    format!(
        "<tr><th>{what}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(&x.machine.gpu),
        esc(&x.machine.cpu),
        esc(&x.path.display().to_string()),
        esc(&commits.join(", ")),
        x.runs
    )
}

fn big(e: &Estimate) -> String {
    format!("<div class=\"score\">{:.3}</div><div class=\"interval\">95% interval {:.3} - {:.3}</div>", e.value, e.lo, e.hi)
}

/// One part: the chart of kernel ratios, the kernel table and the case table.
fn part(body: &mut String, p: &Part) {
    let _ = write!(body, "<h2>{} kernels</h2>", esc(p.name()));
    if let (Some(r), Some(n), Some(x)) = (p.ceiling_ref, p.ceiling_new, p.ceiling_ratio()) {
        let _ = write!(body, "<p>Copy bandwidth measured with the records: {n:.0} GB/s against {r:.0} GB/s, a ratio of <b>{x:.2}</b>.</p>");
    }
    body.push_str(&chart(p));
    let mut rows = String::new();
    for k in &p.kernels {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td><b>{:.3}</b></td><td>{:.3} - {:.3}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(k.kernel),
            k.cases,
            k.ratio.value,
            k.ratio.lo,
            k.ratio.hi,
            pct(k.fraction_ref),
            pct(k.fraction_new),
            k.bound()
        );
    }
    let _ = write!(
        body,
        "<table class=\"kernels\"><tr><th>kernel</th><th>cases</th><th>ratio</th><th>95% interval</th><th>% of copy bandwidth, reference</th>\
         <th>% of copy bandwidth, machine</th><th>bound by</th></tr>{rows}</table>"
    );
    let mut rows = String::new();
    for c in &p.cases {
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{:.3}</td><td>{:.3} - {:.3}</td><td>{}</td><td>{}</td></tr>",
            esc(&c.label),
            c.ratio.value,
            c.ratio.lo,
            c.ratio.hi,
            pct(c.fraction_ref),
            pct(c.fraction_new)
        );
    }
    let _ = write!(
        body,
        "<details><summary>every case</summary><table class=\"cases\"><tr><th>case</th><th>ratio</th><th>95% interval</th>\
         <th>% bw, reference</th><th>% bw, machine</th></tr>{rows}</table></details>"
    );
}

/// Horizontal bars of the kernels' ratios with their intervals, a line at 1 and one at the copy-ceiling ratio.
fn chart(p: &Part) -> String {
    let (w, row, left, right) = (640.0, 26.0, 150.0, 40.0);
    let h = row * (p.kernels.len() as f64 + 1.0) + 10.0;
    let max = p.kernels.iter().map(|k| k.ratio.hi).chain([1.0, p.ceiling_ratio().unwrap_or(1.0)]).fold(0.0f64, f64::max) * 1.1;
    let x = |v: f64| left + (w - left - right) * v / max;
    let mut svg = format!("<svg class=\"ratios\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-size=\"12\" font-family=\"sans-serif\">");
    for (i, k) in p.kernels.iter().enumerate() {
        let y = 5.0 + row * i as f64;
        let color = if k.bandwidth_bound() { "#3a6ea5" } else { "#c0772a" };
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect x=\"{left}\" y=\"{}\" width=\"{:.1}\" height=\"{}\" fill=\"{color}\"/>\
             <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{}\" y2=\"{}\" stroke=\"#000\" stroke-width=\"1.5\"/><text x=\"{:.1}\" y=\"{}\">{:.2}</text>",
            left - 6.0,
            y + row * 0.6,
            esc(k.kernel),
            y + 4.0,
            x(k.ratio.value) - left,
            row - 8.0,
            x(k.ratio.lo),
            x(k.ratio.hi),
            y + row / 2.0,
            y + row / 2.0,
            x(k.ratio.hi) + 4.0,
            y + row * 0.6,
            k.ratio.value
        );
    }
    let base = 5.0 + row * p.kernels.len() as f64;
    let mut mark = |v: f64, label: &str, dash: &str| {
        let _ = write!(
            svg,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"2\" y2=\"{base}\" stroke=\"#444\" stroke-dasharray=\"{dash}\"/><text x=\"{0:.1}\" y=\"{1}\" text-anchor=\"middle\">{2}</text>",
            x(v),
            base + 14.0,
            esc(label)
        );
    };
    mark(1.0, "1 (reference)", "2,2");
    if let Some(c) = p.ceiling_ratio() {
        mark(c, &format!("{c:.2} (copy bandwidth)"), "6,3");
    }
    svg.push_str("</svg>");
    format!("<figure>{svg}<figcaption>{} ratio per kernel (bar) with its 95% interval (whisker); blue: bandwidth-bound, orange: bound by arithmetic or latency</figcaption></figure>", esc(p.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::score::synthetic::*;

    #[test]
    fn page_holds_machines_scores_intervals_and_bounds_and_fetches_nothing() {
        let s = scored("page", (&H200, runs(&H200, &[0.0, 0.01, -0.01], 0.005)), (&H100, runs(&H100, &[0.0, -0.01, 0.01], 0.005)));
        let page = html(&s, true);
        for want in ["NVIDIA H200", "Xeon B", "NVIDIA H100 80GB HBM3", "Xeon A", "score v1", "0123456789", "GPU score", "host score", "combined", "1.119", "95% interval", "bandwidth", "arithmetic or latency", "stream/copy mixed [n=1]", "a ratio of <b>1.40</b>"] {
            assert!(page.contains(want), "lacks '{want}'");
        }
        assert_eq!(page.matches("<svg").count(), 2, "one chart per part");
        assert_eq!(page.matches("<table class=\"kernels\"").count(), 2);
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("<script"), "nothing to fetch or run");
        assert!(!html(&s, false).contains("combined (geometric mean"));
    }
}
