//! `qmcbench report`: one self-contained HTML page from any set of records. Everything is inline (styles and SVG
//! charts, no scripts, no links to fetch), so the page reads offline and can be mailed or archived with the records.
//! Sections: the machines, a per-kernel summary (cases, validation, best fraction of the bandwidth ceiling, best
//! GPU speedup over all CPU cores), the charts, and every record.

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
        let cpu: BTreeMap<String, f64> = recs
            .iter()
            .filter(|r| r.variant == Variant::Cpu && !r.params.contains_key("threads"))
            .map(|r| (r.case_key(), r.time.median))
            .collect();
        let speedup = recs
            .iter()
            .filter(|r| r.variant == Variant::Gpu)
            .filter_map(|r| cpu.get(&r.case_key()).map(|c| c / r.time.median))
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

pub(crate) const STYLE: &str = "body{font-family:sans-serif;margin:2em;max-width:1400px;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
th{background:#f0f0f0}.good{color:#176317}.bad{color:#b00;font-weight:bold}\
figure{display:inline-block;margin:0.5em;border:1px solid #ddd}figure svg{width:640px;height:auto}\
figcaption{font-size:12px;padding:4px;color:#555}";

/// The whole page: title, machines, summary, one `<figure>` per chart (inline SVG), and the record table.
pub fn html(title: &str, records: &[Record], charts: &[Chart]) -> Result<String> {
    let mut figures = String::new();
    for c in charts {
        let svg = plot::svg_text(c)?;
        // drop the XML prolog: the SVG is inlined into HTML
        let svg = svg.find("<svg").map(|i| &svg[i..]).unwrap_or(&svg);
        let _ = write!(figures, "<figure id=\"{}\">{svg}<figcaption>{}</figcaption></figure>", esc(&c.name), esc(&c.title));
    }
    let failed = records.iter().filter(|r| r.validation.failed()).count();
    let unchecked = records.iter().filter(|r| r.validation.is_unchecked()).count();
    let verdict = match (failed, unchecked) {
        (0, 0) => "<p class=\"good\">Every record passed its checks against the f64 reference (measure-only records, \
                   the reference itself and bandwidth ceilings, have none).</p>"
            .to_string(),
        _ => format!(
            "<p class=\"bad\">{failed} record(s) FAILED validation against the f64 reference; {unchecked} record(s) were \
             not checked at all.</p>"
        ),
    };
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>{STYLE}</style></head><body>\
         <h1>{t}</h1><p>{n} records, {k} charts. Drawn from records only; each record names the commit that produced it.</p>{verdict}\
         <h2>Machines</h2>{sys}<h2>Summary</h2>{sum}<h2>Charts</h2><div class=\"charts\">{figures}</div>\
         <h2>Records</h2>{table}</body></html>\n",
        t = esc(title),
        n = records.len(),
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
        let mut recs = vec![
            sample("bspline", Variant::Cpu, 64, 1e-3),
            sample("bspline", Variant::Gpu, 64, 1e-4),
            sample("bspline", Variant::Cpu, 256, 4e-3),
            sample("bspline", Variant::Gpu, 256, 2e-4),
        ];
        let charts: Vec<Chart> = plot::speedup_charts(&recs, None, None).into_iter().chain(plot::throughput_charts(&recs, None)).collect();
        assert_eq!(charts.len(), 2);
        let page = html("test <report>", &recs, &charts).unwrap();
        assert_eq!(page.matches("<svg").count(), 2);
        assert_eq!(page.matches("<figure").count(), 2);
        assert!(page.contains("test &lt;report&gt;"));
        assert!(page.contains("20.0x"), "best speedup 4e-3 / 2e-4");
        assert!(!page.contains("src=\"http") && !page.contains("href=\"http") && !page.contains("<script"), "nothing to fetch or run");
        assert!(page.contains("Every record passed"));
        recs[1].validation.status = "failed".into();
        let page = html("t", &recs, &[]).unwrap();
        assert!(page.contains("1 record(s) FAILED"));
        // a record without checks is not a pass, in the verdict or the summary
        recs[1].validation = crate::record::Validation::from_checks(&[]);
        let page = html("t", &recs, &[]).unwrap();
        assert!(page.contains("1 record(s) were not checked") && !page.contains("Every record passed"), "{page}");
        assert!(page.contains("3 passed, 0 failed, 1 unchecked, 0 measure-only"));
    }
}
