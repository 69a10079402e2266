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
