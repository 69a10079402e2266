//! Regression check: match the cases of a new record set with a baseline and flag every case whose median time grew
//! by more than a tolerance. Used by `qmcbench compare` and the CI performance check.

use crate::record::Record;
use std::collections::BTreeMap;

/// One matched case.
#[derive(Clone, Debug)]
pub struct Row {
    pub key: String,
    pub base: f64,
    pub new: f64,
    /// new / base median time (> 1 is slower).
    pub ratio: f64,
    pub slower: bool,
}

/// The comparison of two record sets.
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    pub rows: Vec<Row>,
    /// Cases only in the baseline, or only in the new set.
    pub only_base: Vec<String>,
    pub only_new: Vec<String>,
}

impl Comparison {
    pub fn regressions(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| r.slower)
    }

    /// Geometric mean of new / base over the matched cases: the suite's overall slowdown, far steadier than any one
    /// case on a shared machine.
    pub fn geomean(&self) -> Option<f64> {
        (!self.rows.is_empty()).then(|| (self.rows.iter().map(|r| r.ratio.ln()).sum::<f64>() / self.rows.len() as f64).exp())
    }
}

/// Compare medians per case key (latest record of each key wins). `time_of` picks the time to compare, so callers
/// can normalise (e.g. by a ceiling measured in the same process).
pub fn compare(base: &[Record], new: &[Record], tolerance: f64, time_of: impl Fn(&Record) -> f64) -> Comparison {
    let index = |rs: &[Record]| -> BTreeMap<String, f64> { rs.iter().map(|r| (r.key(), time_of(r))).collect() };
    let (b, n) = (index(base), index(new));
    let mut c = Comparison::default();
    for (k, &tb) in &b {
        match n.get(k) {
            Some(&tn) => {
                let ratio = tn / tb;
                c.rows.push(Row { key: k.clone(), base: tb, new: tn, ratio, slower: ratio > 1.0 + tolerance });
            }
            None => c.only_base.push(k.clone()),
        }
    }
    c.only_new = n.keys().filter(|k| !b.contains_key(*k)).cloned().collect();
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;
    use crate::record::Variant;

    #[test]
    fn flags_only_slowdowns_beyond_tolerance() {
        let base = vec![sample("k", Variant::Cpu, 1, 1.0), sample("k", Variant::Cpu, 2, 1.0), sample("k", Variant::Cpu, 3, 1.0)];
        let new = vec![sample("k", Variant::Cpu, 1, 1.05), sample("k", Variant::Cpu, 2, 1.5), sample("k", Variant::Cpu, 4, 1.0)];
        let c = compare(&base, &new, 0.1, |r| r.time.median);
        assert_eq!(c.rows.len(), 2);
        let slow: Vec<_> = c.regressions().collect();
        assert_eq!(slow.len(), 1);
        assert!(slow[0].key.contains("orbitals=2"));
        assert_eq!(c.only_base.len(), 1);
        assert_eq!(c.only_new.len(), 1);
        // matched ratios 1.05 and 1.5
        assert!((c.geomean().unwrap() - (1.05f64 * 1.5).sqrt()).abs() < 1e-12);
    }
}

/// One kernel's part of a machine score.
#[derive(Clone, Debug)]
pub struct KernelScore {
    pub kernel: String,
    /// Geometric mean over the matched cases of new throughput / reference throughput.
    pub ratio: f64,
    pub cases: usize,
}

/// A single-number summary of a machine against a reference machine, as SPEC does: per kernel the geometric mean of
/// throughput ratios over the cases both record sets measured (same key: kernel, op, variant, precision, sizes,
/// parameters), then the geometric mean over kernels, so every kernel weighs the same however many cases it has.
/// Only trusted records count: passed, or measure-only; a failed or unchecked one is no number to buy by.
pub fn score(reference: &[Record], new: &[Record], variant: Option<crate::record::Variant>) -> (Option<f64>, Vec<KernelScore>) {
    let index = |rs: &[Record]| -> BTreeMap<String, (String, f64)> {
        rs.iter()
            .filter(|r| variant.is_none_or(|v| r.variant == v) && r.throughput > 0.0 && r.validation.trusted())
            .map(|r| (r.key(), (r.kernel.clone(), r.throughput)))
            .collect()
    };
    let (base, newi) = (index(reference), index(new));
    let mut logs: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (k, (kernel, t_new)) in &newi {
        if let Some((_, t_base)) = base.get(k) {
            logs.entry(kernel.clone()).or_default().push((t_new / t_base).ln());
        }
    }
    let per: Vec<KernelScore> = logs
        .into_iter()
        .map(|(kernel, l)| KernelScore { kernel, ratio: (l.iter().sum::<f64>() / l.len() as f64).exp(), cases: l.len() })
        .collect();
    let total = (!per.is_empty()).then(|| (per.iter().map(|k| k.ratio.ln()).sum::<f64>() / per.len() as f64).exp());
    (total, per)
}

#[cfg(test)]
mod score_tests {
    use super::*;
    use crate::output::sample;
    use crate::record::Variant;

    #[test]
    fn geometric_mean_per_kernel_then_over_kernels() {
        let base = vec![sample("a", Variant::Gpu, 1, 1.0), sample("a", Variant::Gpu, 2, 1.0), sample("b", Variant::Gpu, 1, 1.0)];
        // kernel a: 2x and 8x faster (geomean 4); kernel b: 4x slower (0.25); overall sqrt(4 * 0.25) = 1
        let new = vec![sample("a", Variant::Gpu, 1, 0.5), sample("a", Variant::Gpu, 2, 0.125), sample("b", Variant::Gpu, 1, 4.0)];
        let (total, per) = score(&base, &new, Some(Variant::Gpu));
        assert_eq!(per.len(), 2);
        assert!((per[0].ratio - 4.0).abs() < 1e-12 && per[0].cases == 2);
        assert!((per[1].ratio - 0.25).abs() < 1e-12);
        assert!((total.unwrap() - 1.0).abs() < 1e-12);
        let (none, _) = score(&base, &new, Some(Variant::Cpu));
        assert!(none.is_none(), "no CPU cases to score");
        // an unchecked record is left out as a failed one is (it used to count)
        let mut new = new;
        new[2].validation = crate::record::Validation::from_checks(&[]);
        let (_, per) = score(&base, &new, Some(Variant::Gpu));
        assert_eq!(per.len(), 1, "kernel b's only case was not checked");
    }
}
