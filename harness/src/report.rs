//! `qmcbench report`: one self-contained HTML page from any set of records. Everything is inline (styles and SVG
//! charts, no scripts, no links to fetch), so the page reads offline and can be mailed or archived with the records.
//! Sections: the machines, a per-kernel summary (cases, validation, best fraction of the bandwidth ceiling, best
//! GPU speedup over all CPU cores), the papers' figures (each chart beside its one-sentence reading and its table of
//! the paper's and the measured numbers), the generic charts, and every record.

use crate::output::{fmt_si, fmt_time};
use crate::plot::{self, Chart};
use crate::record::{Record, Variant};
use anyhow::Result;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Escape text for HTML.
pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// One row per distinct machine the records came from.
fn systems(records: &[Record]) -> String {
    let mut seen = BTreeMap::new();
    for r in records {
        let s = &r.system;
        let gpu = s.gpu.as_ref().map(|g| {
            format!("{} (cc {}, {} SMs, {:.0} GiB, driver {})", g.name, g.compute_capability, g.multiprocessors, g.memory_bytes as f64 / (1u64 << 30) as f64, g.driver)
        });
        let row = format!(
            "<tr><td>{}</td><td>{}</td><td>{} logical, {}</td><td>{:.0} GiB</td><td>{}</td></tr>",
            esc(&s.host),
            esc(&s.cpu_model),
            s.cpu_logical,
            esc(&s.cpu_isa),
            s.memory_bytes as f64 / (1u64 << 30) as f64,
            esc(gpu.as_deref().unwrap_or("-"))
        );
        seen.entry(row).or_insert(());
    }
    let rows: String = seen.into_keys().collect();
    format!("<table><tr><th>host</th><th>CPU</th><th>threads</th><th>memory</th><th>GPU</th></tr>{rows}</table>")
}

/// Per kernel: cases, validation counts, best ceiling fraction per variant, best GPU speedup over all CPU cores.
fn summary(records: &[Record]) -> String {
    let mut by_kernel: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
    for r in records {
        by_kernel.entry(&r.kernel).or_default().push(r);
    }
    let mut rows = String::new();
    for (kernel, recs) in by_kernel {
        let count = |f: fn(&crate::record::Validation) -> bool| recs.iter().filter(|r| f(&r.validation)).count();
        let best = |v: Variant| {
            recs.iter().filter(|r| r.variant == v).filter_map(|r| r.fraction_of_ceiling).fold(None, |m: Option<f64>, f| Some(m.map_or(f, |m| m.max(f))))
        };
        let pct = |x: Option<f64>| x.map(|f| format!("{:.0}%", 100.0 * f)).unwrap_or_else(|| "-".into());
        // a GPU record over the all-core CPU record of its case and commit, both passed
        let cpu = plot::latest(
            recs.iter().copied().filter(|r| plot::usable(r) && r.variant == Variant::Cpu && !r.params.contains_key("threads")),
            |r| (r.commit.clone(), r.case_key()),
        );
        let speedup = recs
            .iter()
            .filter(|r| plot::usable(r) && r.variant == Variant::Gpu)
            .filter_map(|r| cpu.get(&(r.commit.clone(), r.case_key())).map(|c| c.time.median / r.time.median))
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
        let (failed, unchecked) = (count(|v| v.failed()), count(|v| v.is_unchecked()));
        let _ = write!(
            rows,
            "<tr><td>{}</td><td>{}</td><td class=\"{}\">{} passed, {} failed, {} unchecked, {} measure-only</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(kernel),
            recs.len(),
            if failed + unchecked > 0 { "bad" } else { "good" },
            count(|v| v.passed()),
            failed,
            unchecked,
            count(|v| v.is_measure_only()),
            pct(best(Variant::Cpu)),
            pct(best(Variant::Gpu)),
            speedup.map(|s| format!("{s:.1}x")).unwrap_or_else(|| "-".into()),
        );
    }
    format!(
        "<table><tr><th>kernel</th><th>records</th><th>validation</th><th>best CPU % of copy bandwidth</th>\
         <th>best GPU % of copy bandwidth</th><th>best GPU speedup over all CPU cores</th></tr>{rows}</table>"
    )
}

/// Every record, one row each.
fn record_table(records: &[Record]) -> String {
    let mut rows = String::new();
    for r in records {
        let case: Vec<String> = r.sizes.iter().map(|(k, v)| format!("{k}={v}")).chain(r.params.iter().map(|(k, v)| format!("{k}={v}"))).collect();
        let v = &r.validation;
        let cls = if v.passed() {
            "good"
        } else if v.failed() || v.is_unchecked() {
            "bad"
        } else {
            ""
        };
        let _ = write!(
            rows,
            "<tr><td>{}/{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td class=\"{cls}\">{}</td><td>{}</td></tr>",
            esc(&r.kernel),
            esc(&r.op),
            r.variant.name(),
            esc(&r.precision),
            esc(&case.join(" ")),
            fmt_time(r.time.median),
            fmt_si(r.throughput),
            esc(&r.throughput_unit),
            r.gbytes_per_s,
            r.gflops,
            r.fraction_of_ceiling.map(|f| format!("{:.1}%", 100.0 * f)).unwrap_or_else(|| "-".into()),
            esc(&r.validation.summary()),
            esc(r.commit.get(..12).unwrap_or(&r.commit)),
        );
    }
    format!(
        "<table class=\"records\"><tr><th>kernel/op</th><th>variant</th><th>precision</th><th>case</th><th>median</th>\
         <th>throughput</th><th>GB/s</th><th>GFLOP/s</th><th>% ceiling</th><th>validation</th><th>commit</th></tr>{rows}</table>"
    )
}

pub(crate) const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1800px;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
th{background:#f0f0f0}.good{color:#176317}.bad{color:#b00;font-weight:bold}\
figure{display:inline-block;margin:0.5em;border:1px solid #ddd;vertical-align:top}figure svg{max-width:100%;height:auto}\
figcaption{font-size:12px;padding:4px;color:#555}\
.pair{display:flex;flex-wrap:wrap;align-items:flex-start;gap:1em;margin-bottom:2em}.pair figure{flex:0 1 900px;margin:0}\
.side{flex:1 1 420px;min-width:320px}.reading{font-size:15px;line-height:1.4}.side .rows{max-height:520px;overflow:auto}";

/// A paper's figure drawn from records, for the page: its chart, the one sentence that reads it (what it shows,
/// against which paper, what was measured) and its table of the paper's and the measured numbers.
#[derive(Clone, Debug)]
pub struct FigureSection {
    pub chart: Chart,
    pub reading: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One chart as an inline `<figure>` (the SVG without its XML prolog).
fn figure(c: &Chart) -> Result<String> {
    let svg = plot::svg_text(c)?;
    let svg = svg.find("<svg").map(|i| &svg[i..]).unwrap_or(&svg);
    Ok(format!("<figure id=\"{}\">{svg}<figcaption>{}</figcaption></figure>", esc(&c.name), esc(&c.title)))
}

/// A paper's figure beside its reading and its table.
fn figure_section(f: &FigureSection) -> Result<String> {
    let cells = |row: &[String], tag: &str| row.iter().map(|c| format!("<{tag}>{}</{tag}>", esc(c))).collect::<String>();
    let rows: String = f.rows.iter().map(|r| format!("<tr>{}</tr>", cells(r, "td"))).collect();
    Ok(format!(
        "<section class=\"pair\">{}<div class=\"side\"><p class=\"reading\">{}</p><div class=\"rows\"><table><tr>{}</tr>{rows}</table></div></div></section>",
        figure(&f.chart)?,
        esc(&f.reading),
        cells(&f.header, "th"),
    ))
}

/// The whole page: title, machines, summary, the papers' figures (each beside its reading and table), one
/// `<figure>` per generic chart (inline SVG), and the record table.
pub fn html(title: &str, records: &[Record], figures: &[FigureSection], charts: &[Chart]) -> Result<String> {
    let mut paper = String::new();
    for f in figures {
        paper += &figure_section(f)?;
    }
    let mut generic = String::new();
    for c in charts {
        generic += &figure(c)?;
    }
    let failed = records.iter().filter(|r| r.validation.failed()).count();
    let unchecked = records.iter().filter(|r| r.validation.is_unchecked()).count();
    let verdict = match (failed, unchecked) {
        (0, 0) => "<p class=\"good\">Every record passed its checks against the f64 reference (measure-only records, \
                   the reference itself and bandwidth ceilings, have none).</p>"
            .to_string(),
        _ => format!(
            "<p class=\"bad\">{failed} record(s) FAILED validation against the f64 reference; {unchecked} record(s) were \
             not checked at all; no chart draws either.</p>"
        ),
    };
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\
         <h1>{t}</h1><p>{n} records, {nf} paper figures, {k} charts. Drawn from records only, those that passed their check; \
         a ratio pairs records of one commit, and each chart names its commits.</p>{verdict}\
         <h2>Machines</h2>{sys}<h2>Summary</h2>{sum}<h2>The papers' figures</h2>{paper}<h2>Charts</h2><div class=\"charts\">{generic}</div>\
         <h2>Records</h2>{table}</body></html>\n",
        t = esc(title),
        n = records.len(),
        nf = figures.len(),
        k = charts.len(),
        sys = systems(records),
        sum = summary(records),
        table = record_table(records),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;

    #[test]
    fn page_holds_every_chart_inline_and_flags_failures() {
        let mut recs: Vec<Record> = vec![
            sample("bspline", Variant::Cpu, 64, 1e-3),
            sample("bspline", Variant::Gpu, 64, 1e-4),
            sample("bspline", Variant::Cpu, 256, 4e-3),
            sample("bspline", Variant::Gpu, 256, 2e-4),
        ]
        .into_iter()
        .map(|mut r| {
            r.validation.status = "passed".into();
            r
        })
        .collect();
        let charts: Vec<Chart> = plot::speedup_charts(&recs, None, None).into_iter().chain(plot::throughput_charts(&recs, None)).collect();
        assert_eq!(charts.len(), 2);
        let section = FigureSection {
            chart: charts[0].clone(),
            reading: "What it shows <against> a paper.".into(),
            header: vec!["walkers".into(), "measured".into()],
            rows: vec![vec!["8".into(), "20.0".into()]],
        };
        let page = html("test <report>", &recs, std::slice::from_ref(&section), &charts).unwrap();
        assert_eq!(page.matches("<svg").count(), 3);
        assert_eq!(page.matches("<figure").count(), 3);
        // the paper's figure beside its reading and table, in one section
        let sec = &page[page.find("<section class=\"pair\">").unwrap()..];
        let sec = &sec[..sec.find("</section>").unwrap()];
        assert!(sec.contains("<svg") && sec.contains("What it shows &lt;against&gt; a paper.") && sec.contains("<td>20.0</td>"), "{sec}");
        assert!(page.contains("test &lt;report&gt;"));
        assert!(page.contains("20.0x"), "best speedup 4e-3 / 2e-4");
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("<script"), "nothing to fetch or run");
        assert!(page.contains("Every record passed"));
        recs[1].validation.status = "failed".into();
        let page = html("t", &recs, &[], &[]).unwrap();
        assert!(page.contains("1 record(s) FAILED"));
        // a record without checks is not a pass, in the verdict or the summary
        recs[1].validation = crate::record::Validation::from_checks(&[]);
        let page = html("t", &recs, &[], &[]).unwrap();
        assert!(page.contains("1 record(s) were not checked") && !page.contains("Every record passed"), "{page}");
        assert!(page.contains("3 passed, 0 failed, 1 unchecked, 0 measure-only"));
        // a failed GPU record: flagged, and its ratio is no longer the best
        recs[1].validation.status = "passed".into();
        recs[3].validation.status = "failed".into();
        let page = html("t", &recs, &[], &[]).unwrap();
        assert!(page.contains("1 record(s) FAILED"));
        assert!(page.contains("10.0x") && !page.contains("20.0x"), "the best speedup of passed records only");
    }
}
