//! Axis ranges and ticks. Ranges come from the data (with a small margin); ticks are chosen by the room their labels
//! need: the densest candidate set whose labels do not collide (the caller says what collides).

/// An axis: its range, scale, and the chosen ticks with their labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
    pub ticks: Vec<f64>,
    pub labels: Vec<String>,
}

impl Axis {
    pub fn new(lo: f64, hi: f64, log: bool) -> Axis {
        Axis { lo, hi, log, ticks: vec![], labels: vec![] }
    }

    /// Where `v` lies along the axis, 0 at `lo` and 1 at `hi`.
    pub fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
}

/// The range of positive finite `values` on a log axis, widened by 6% of its span (in decades) on either side; a
/// single value gets a factor 2 either side.
pub fn log_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.filter(|v| v.is_finite() && *v > 0.0).fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        return (0.1, 10.0);
    }
    if hi / lo < 1.0 + 1e-9 {
        return (lo / 2.0, hi * 2.0);
    }
    let pad = (hi / lo).powf(0.06).max(1.06);
    (lo / pad, hi * pad)
}

/// Tick text: at most three significant digits, no trailing zeros; 10^5 and up with an SI prefix (250k, 10G),
/// below 0.01 in short scientific form (1e-8, 2.5e-5).
pub fn format_tick(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        return "0".into();
    }
    if a < 1e-2 {
        let e = a.log10().floor() as i32;
        let m = v / 10f64.powi(e);
        let m = trim(&format!("{m:.2}"));
        return if m == "1" { format!("1e{e}") } else { format!("{m}e{e}") };
    }
    for (scale, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e5, "k")] {
        if a >= scale {
            // k from 10^5, so that sizes up to 99999 (65536, 2048) print in full
            return format!("{}{suffix}", three_digits(v / if suffix == "k" { 1e3 } else { scale }));
        }
    }
    three_digits(v)
}

fn three_digits(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 { 0 } else if a >= 10.0 { 1 } else if a >= 1.0 { 2 } else { 3 };
    trim(&format!("{v:.decimals$}"))
}

fn trim(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// Candidate tick sets on a log axis from densest to sparsest: mantissas per decade, then every 2nd, 3rd, 5th, 10th
/// decade; where the range spans less than a decade, linear candidates inside it come after.
fn log_candidates(lo: f64, hi: f64) -> Vec<Vec<f64>> {
    let mut out = vec![];
    let (e0, e1) = (lo.log10().floor() as i32 - 1, hi.log10().ceil() as i32 + 1);
    let within = |v: &f64| *v >= lo * (1.0 - 1e-9) && *v <= hi * (1.0 + 1e-9);
    for ms in [&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0][..], &[1.0, 2.0, 3.0, 5.0], &[1.0, 2.0, 5.0], &[1.0, 3.0], &[1.0]] {
        out.push((e0..=e1).flat_map(|e| ms.iter().map(move |m| m * 10f64.powi(e))).filter(within).collect());
    }
    for stride in [2, 3, 5, 10] {
        out.push((e0..=e1).filter(|e| e.rem_euclid(stride) == 0).map(|e| 10f64.powi(e)).filter(within).collect());
    }
    out.extend(linear_candidates(lo, hi));
    out
}

/// Candidate tick sets on a linear axis: steps of 1, 2, 2.5 and 5 times a power of ten, densest first.
fn linear_candidates(lo: f64, hi: f64) -> Vec<Vec<f64>> {
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return vec![];
    }
    let e = span.log10().floor() as i32;
    let mut out = vec![];
    for k in e - 2..=e + 1 {
        for m in [1.0, 2.0, 2.5, 5.0] {
            let step = m * 10f64.powi(k);
            let first = (lo / step - 1e-9).ceil() as i64;
            let last = (hi / step + 1e-9).floor() as i64;
            if last - first > 40 {
                continue;
            }
            out.push((first..=last).map(|i| i as f64 * step).collect());
        }
    }
    out
}

/// Choose ticks: the first candidate (densest first), less the ticks `keep` refuses (e.g. too near an edge), with at
/// least two ticks, distinct labels, no more than `most` ticks, and labels that `fits` (no collisions); `preferred`
/// (e.g. the data's own x values) is tried first. With nothing that fits, the sparsest candidate with a tick, so the
/// axis is never bare.
pub fn choose(axis: &mut Axis, preferred: Option<Vec<f64>>, most: usize, keep: impl Fn(f64) -> bool, fits: impl Fn(&[f64], &[String]) -> bool) {
    let mut candidates: Vec<Vec<f64>> = preferred.into_iter().collect();
    candidates.extend(if axis.log { log_candidates(axis.lo, axis.hi) } else { linear_candidates(axis.lo, axis.hi) });
    for c in candidates.iter_mut() {
        c.retain(|v| keep(*v));
    }
    let labelled = |c: &Vec<f64>| -> Vec<String> { c.iter().map(|v| format_tick(*v)).collect() };
    let distinct = |l: &[String]| l.windows(2).all(|w| w[0] != w[1]);
    for c in &candidates {
        let l = labelled(c);
        if c.len() >= 2 && c.len() <= most && distinct(&l) && fits(c, &l) {
            axis.ticks = c.clone();
            axis.labels = l;
            return;
        }
    }
    let fallback = candidates.iter().filter(|c| !c.is_empty()).min_by_key(|c| c.len()).cloned().unwrap_or_else(|| vec![axis.lo]);
    axis.labels = labelled(&fallback);
    axis.ticks = fallback;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_text_is_short_and_exact_enough() {
        assert_eq!(format_tick(1000.0), "1000");
        assert_eq!(format_tick(2048.0), "2048");
        assert_eq!(format_tick(65536.0), "65536");
        assert_eq!(format_tick(250000.0), "250k");
        assert_eq!(format_tick(1.5e10), "15G");
        assert_eq!(format_tick(2.5), "2.5");
        assert_eq!(format_tick(0.2), "0.2");
        assert_eq!(format_tick(1e-8), "1e-8");
        assert_eq!(format_tick(2.5e-5), "2.5e-5");
        assert_eq!(format_tick(0.0), "0");
    }

    #[test]
    fn ticks_thin_out_until_they_fit() {
        // room for at most four labels
        let mut a = Axis::new(1.0, 1000.0, true);
        choose(&mut a, None, 20, |_| true, |t, _| t.len() <= 4);
        assert_eq!(a.ticks, vec![1.0, 10.0, 100.0, 1000.0]);
        // room for many: 1, 2, 5 per decade is not the densest; every mantissa is
        let mut a = Axis::new(1.0, 100.0, true);
        choose(&mut a, None, 30, |_| true, |_, _| true);
        assert_eq!(a.ticks.len(), 19);
        // the data's own values first when they fit
        let mut a = Axis::new(100.0, 3000.0, true);
        choose(&mut a, Some(vec![128.0, 256.0, 512.0, 1024.0, 2048.0]), 10, |_| true, |_, _| true);
        assert_eq!(a.labels, ["128", "256", "512", "1024", "2048"]);
        // less than a decade: linear ticks inside it
        let mut a = Axis::new(2.2, 3.3, true);
        choose(&mut a, None, 10, |_| true, |t, _| t.len() <= 4);
        assert!(a.ticks.len() >= 2 && a.ticks.iter().all(|t| (2.2..=3.3).contains(t)), "{:?}", a.ticks);
        // a tick refused (too near an edge) leaves the rest of its set
        let mut a = Axis::new(1.0, 1e4, true);
        choose(&mut a, None, 20, |v| v != 1e4, |t, _| t.len() <= 4);
        assert_eq!(a.ticks, vec![1.0, 10.0, 100.0, 1000.0]);
    }

    #[test]
    fn ranges_come_from_the_data() {
        let (lo, hi) = log_range([4.0, 96.0].into_iter());
        assert!(lo < 4.0 && lo > 3.0 && hi > 96.0 && hi < 130.0, "{lo} {hi}");
        assert_eq!(log_range([5.0].into_iter()), (2.5, 10.0));
        assert_eq!(log_range([f64::NAN, -1.0].into_iter()), (0.1, 10.0));
    }
}
