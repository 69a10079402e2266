//! Regression checks. Timings: match the cases of a new record set with a baseline and flag every case whose time
//! (median, or mean over the repetitions) grew by more than a tolerance; used by `qmcbench compare`, the GPU host's
//! `regression` stage and the old time-based CI check. Instruction counts: the tables of `scripts/instr-check.sh`,
//! compared case by case (`qmcbench compare-instructions`).

use crate::record::Record;
use std::collections::BTreeMap;

/// The extra a record of a planted slowdown carries (the factor): such a record is never a baseline.
pub const PLANTED_EXTRA: &str = "planted_factor";

/// Which time of a record is compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Stat {
    /// The median repetition: steady against single slow repetitions.
    Median,
    /// The mean over the repetitions: shifted by exactly the factor of a slowdown that makes every k-th
    /// repetition do more work (a planted fractional slowdown), which the median need not see.
    Mean,
}

impl Stat {
    /// The record's time of this kind, if it has one (records written before `mean` existed have none).
    pub fn of(self, r: &Record) -> Option<f64> {
        match self {
            Stat::Median => Some(r.time.median),
            Stat::Mean => r.time.mean,
        }
    }
}

/// One matched case.
#[derive(Clone, Debug)]
pub struct Row {
    pub key: String,
    pub base: f64,
    pub new: f64,
    /// new / base time (> 1 is slower).
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
    /// Records left out: failed or unchecked validation (either side), a planted slowdown (baseline side), no time of
    /// the kind compared (e.g. no mean).
    pub skipped: usize,
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

    /// The repeat-run noise of two unchanged runs: the largest |new/base - 1| over the matched cases, and its case.
    pub fn noise(&self) -> Option<(f64, &str)> {
        self.rows.iter().map(|r| ((r.ratio - 1.0).abs(), r.key.as_str())).max_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// The verdict of a slowdown planted in `kernel`: caught when every matched case of that kernel is slower than
    /// the tolerance allows and no case of another kernel is. `Err` lists why not.
    pub fn caught(&self, kernel: &str) -> Result<(), Vec<String>> {
        let mut why = vec![];
        let of = |r: &&Row| kernel_of_record_key(&r.key) == kernel;
        if !self.rows.iter().any(|r| of(&r)) {
            why.push(format!("no case of {kernel} was compared"));
        }
        for r in self.rows.iter().filter(of).filter(|r| !r.slower) {
            why.push(format!("{}: x{:.4}: the planted slowdown was NOT caught", r.key, r.ratio));
        }
        for r in self.rows.iter().filter(|r| !of(r) && r.slower) {
            why.push(format!("{}: x{:.4}: slower, but the slowdown was planted in {kernel}", r.key, r.ratio));
        }
        if why.is_empty() {
            Ok(())
        } else {
            Err(why)
        }
    }
}

/// The tolerance a check of GPU times takes from the noise of two unchanged runs: three times the largest
/// difference between them, at least 1% (two runs agreeing by chance do not make a check that fails on nothing).
pub fn tolerance_from_noise(noise: f64) -> f64 {
    (3.0 * noise).max(0.01)
}

/// The kernel of a record key (`kernel/op variant ...`).
pub fn kernel_of_record_key(key: &str) -> &str {
    key.split(['/', ' ']).next().unwrap_or(key)
}

/// Compare medians per case key (latest record of each key wins). `time_of` picks the time to compare, so callers
/// can normalise (e.g. by a ceiling measured in the same process).
pub fn compare(base: &[Record], new: &[Record], tolerance: f64, time_of: impl Fn(&Record) -> f64) -> Comparison {
    compare_by(base, new, tolerance, |r| Some(time_of(r)))
}

/// Compare per case key the time `time_of` gives (records for which it gives none are skipped), from the latest
/// usable record of each key: records that failed or were not checked are left out on both sides, and records of a
/// planted slowdown on the baseline side.
pub fn compare_by(base: &[Record], new: &[Record], tolerance: f64, time_of: impl Fn(&Record) -> Option<f64>) -> Comparison {
    let mut skipped = 0;
    let mut index = |rs: &[Record], is_base: bool| -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        for r in rs {
            let bad = r.validation.failed() || r.validation.is_unchecked() || (is_base && r.extra.contains_key(PLANTED_EXTRA));
            match time_of(r) {
                Some(t) if !bad && t.is_finite() && t > 0.0 => {
                    m.insert(r.key(), t);
                }
                _ => skipped += 1,
            }
        }
        m
    };
    let (b, n) = (index(base, true), index(new, false));
    let mut c = Comparison { skipped, ..Default::default() };
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

/// Instruction counts per repetition (`scripts/instr-check.sh`): a table of case key, instructions and an optional
/// tolerance of its own, one case a line, tab- or space-separated; blank lines and lines starting with `#` are
/// comments.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// (key, instructions, tolerance of the case if it has one), in file order.
    pub cases: Vec<(String, f64, Option<f64>)>,
}

impl Counts {
    /// Parse a table; `what` names it in errors. Refused: a line without a count, a count that is not a positive
    /// finite number (a zero or NaN baseline would pass or fail everything), a bad tolerance, a key given twice.
    pub fn parse(text: &str, what: &str) -> Result<Counts, String> {
        let mut cases: Vec<(String, f64, Option<f64>)> = vec![];
        for (no, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = || format!("{what}, line {}", no + 1);
            let f: Vec<&str> = line.split_whitespace().collect();
            if !(2..=3).contains(&f.len()) {
                return Err(format!("{}: expected `case instructions [tolerance]`, got {line:?}", at()));
            }
            let count: f64 = f[1].parse().map_err(|_| format!("{}: the count of {} is not a number: {:?}", at(), f[0], f[1]))?;
            if !(count.is_finite() && count > 0.0) {
                return Err(format!("{}: the count of {} must be a positive number, got {}", at(), f[0], f[1]));
            }
            let tol = match f.get(2) {
                Some(t) => match t.parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => Some(v),
                    _ => return Err(format!("{}: the tolerance of {} must be a non-negative number, got {t:?}", at(), f[0])),
                },
                None => None,
            };
            if cases.iter().any(|c| c.0 == f[0]) {
                return Err(format!("{}: case {} is given twice", at(), f[0]));
            }
            cases.push((f[0].to_string(), count, tol));
        }
        Ok(Counts { cases })
    }

    fn get(&self, key: &str) -> Option<&(String, f64, Option<f64>)> {
        self.cases.iter().find(|c| c.0 == key)
    }
}

/// One case of an instruction comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct CountRow {
    pub key: String,
    pub base: f64,
    pub new: f64,
    /// new / base.
    pub ratio: f64,
    /// The tolerance applied (the case's own, else the default).
    pub tolerance: f64,
    /// |ratio - 1| > tolerance: the count changed, either way (a drop left in the baseline would hide a later rise).
    pub changed: bool,
}

/// The comparison of two instruction tables, case by case.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CountComparison {
    pub rows: Vec<CountRow>,
    pub only_base: Vec<String>,
    pub only_new: Vec<String>,
}

/// Compare instruction counts per case: a case changed when new/base differs from 1 by more than its tolerance
/// (the baseline's own for the case, else `tolerance`).
pub fn compare_counts(base: &Counts, new: &Counts, tolerance: f64) -> CountComparison {
    let mut c = CountComparison::default();
    for (key, b, own) in &base.cases {
        match new.get(key) {
            Some(&(_, n, _)) => {
                let tol = own.unwrap_or(tolerance);
                let ratio = n / b;
                c.rows.push(CountRow { key: key.clone(), base: *b, new: n, ratio, tolerance: tol, changed: (ratio - 1.0).abs() > tol });
            }
            None => c.only_base.push(key.clone()),
        }
    }
    c.only_new = new.cases.iter().filter(|n| base.get(&n.0).is_none()).map(|n| n.0.clone()).collect();
    c
}

/// The kernel of a case key (`kernel/op/precision`).
pub fn kernel_of(key: &str) -> &str {
    key.split('/').next().unwrap_or(key)
}

impl CountComparison {
    /// The verdict of a check: every case measured (unless `subset`: cases of the baseline left out are allowed),
    /// none new to the baseline, none changed. `Err` lists why not, one line each.
    pub fn check(&self, subset: bool) -> Result<(), Vec<String>> {
        let mut why: Vec<String> = self.rows.iter().filter(|r| r.changed).map(|r| format!("{}: {:+.2}% (tolerance {:.1}%)", r.key, 100.0 * (r.ratio - 1.0), 100.0 * r.tolerance)).collect();
        why.extend(self.only_new.iter().map(|k| format!("{k}: not in the baseline (record it)")));
        if !subset {
            why.extend(self.only_base.iter().map(|k| format!("{k}: in the baseline but not measured")));
        }
        if self.rows.is_empty() {
            why.push("no case of the new table is in the baseline".into());
        }
        if why.is_empty() {
            Ok(())
        } else {
            Err(why)
        }
    }

    /// The verdict of a planted slowdown in `kernel`: it is caught when every measured case of that kernel grew
    /// beyond its tolerance and every case of the other kernels stayed within (and at least one case of the kernel
    /// was measured). `Err` lists why not.
    pub fn caught(&self, kernel: &str) -> Result<(), Vec<String>> {
        let mut why = vec![];
        let mine: Vec<&CountRow> = self.rows.iter().filter(|r| kernel_of(&r.key) == kernel).collect();
        if mine.is_empty() {
            why.push(format!("no case of {kernel} was compared"));
        }
        for r in mine {
            if !(r.changed && r.ratio > 1.0) {
                why.push(format!("{}: {:+.2}%: the planted slowdown was NOT caught (tolerance {:.1}%)", r.key, 100.0 * (r.ratio - 1.0), 100.0 * r.tolerance));
            }
        }
        for r in self.rows.iter().filter(|r| kernel_of(&r.key) != kernel && r.changed) {
            why.push(format!("{}: {:+.2}%: changed, but the slowdown was planted in {kernel}", r.key, 100.0 * (r.ratio - 1.0)));
        }
        why.extend(self.only_new.iter().map(|k| format!("{k}: not in the baseline")));
        if why.is_empty() {
            Ok(())
        } else {
            Err(why)
        }
    }
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

    fn with_mean(kernel: &str, orbitals: u64, median: f64, mean: Option<f64>) -> Record {
        let mut r = sample(kernel, Variant::Gpu, orbitals, median);
        r.time.mean = mean;
        r
    }

    #[test]
    fn the_mean_is_compared_when_asked_and_records_without_one_are_skipped() {
        let base = vec![with_mean("k", 1, 1.0, Some(1.0)), with_mean("k", 2, 1.0, None)];
        // the median unchanged, the mean 5% up: a planted 1.05 in every 20th repetition
        let new = vec![with_mean("k", 1, 1.0, Some(1.05)), with_mean("k", 2, 1.0, Some(1.0))];
        let by_median = compare_by(&base, &new, 0.02, |r| Stat::Median.of(r));
        assert_eq!(by_median.regressions().count(), 0);
        let by_mean = compare_by(&base, &new, 0.02, |r| Stat::Mean.of(r));
        assert_eq!((by_mean.rows.len(), by_mean.skipped, by_mean.regressions().count()), (1, 1, 1));
        assert_eq!(by_mean.only_new.len(), 1, "the case whose baseline has no mean is new to the comparison");
    }

    #[test]
    fn failed_and_planted_records_are_no_baseline_and_the_latest_passed_one_is() {
        let mut failed = with_mean("k", 1, 0.5, Some(0.5));
        failed.validation.add(&kernels::Check::finite("e", &[f64::NAN]));
        let mut planted = with_mean("k", 1, 0.6, Some(0.6));
        planted.extra.insert(PLANTED_EXTRA.into(), 1.05);
        // in file order: an old passed record, then a later one, then a failed and a planted one
        let base = vec![with_mean("k", 1, 2.0, Some(2.0)), with_mean("k", 1, 1.0, Some(1.0)), failed.clone(), planted.clone()];
        let c = compare_by(&base, &[with_mean("k", 1, 1.0, Some(1.0))], 0.02, |r| Stat::Mean.of(r));
        assert_eq!((c.rows[0].base, c.skipped), (1.0, 2), "the latest passed record");
        // a planted record is fine on the new side (the self-test), a failed one is not
        assert_eq!(compare_by(&base, &[planted], 0.02, |r| Stat::Mean.of(r)).rows[0].ratio, 0.6);
        assert!(compare_by(&base, &[failed], 0.02, |r| Stat::Mean.of(r)).rows.is_empty());
    }

    #[test]
    fn noise_sets_the_tolerance_and_a_plant_is_caught_in_its_kernel_only() {
        let u1 = vec![with_mean("a", 1, 1.0, Some(1.0)), with_mean("b", 1, 1.0, Some(2.0))];
        let u2 = vec![with_mean("a", 1, 1.0, Some(1.004)), with_mean("b", 1, 1.0, Some(1.99))];
        let c = compare_by(&u1, &u2, 0.0, |r| Stat::Mean.of(r));
        let (noise, case) = c.noise().unwrap();
        assert!((noise - 0.005).abs() < 1e-12 && case.starts_with("b/"), "{noise} {case}");
        let tol = tolerance_from_noise(noise);
        assert!((tol - 0.015).abs() < 1e-12);
        assert_eq!(tolerance_from_noise(0.001), 0.01, "at least 1%");
        let planted = vec![with_mean("a", 1, 1.0, Some(1.05)), with_mean("b", 1, 1.0, Some(2.01))];
        assert_eq!(compare_by(&u1, &planted, tol, |r| Stat::Mean.of(r)).caught("a"), Ok(()));
        let why = compare_by(&u1, &planted, tol, |r| Stat::Mean.of(r)).caught("b").unwrap_err();
        assert!(why.iter().any(|w| w.contains("NOT caught")) && why.iter().any(|w| w.contains("planted in b")), "{why:?}");
        // a 5% slowdown inside a noise of 2% (tolerance 6%) is not caught: the verdict says so
        assert!(compare_by(&u1, &planted, tolerance_from_noise(0.02), |r| Stat::Mean.of(r)).caught("a").is_err());
    }

    fn counts(rows: &[(&str, f64)]) -> Counts {
        Counts { cases: rows.iter().map(|(k, v)| (k.to_string(), *v, None)).collect() }
    }

    #[test]
    fn instruction_counts_parse_with_comments_and_own_tolerances() {
        let t = Counts::parse("# header\n\nbspline/vgh/double\t91417.5\nqmc/vmc/double 50882 0.05\n", "base").unwrap();
        assert_eq!(t.cases, vec![("bspline/vgh/double".into(), 91417.5, None), ("qmc/vmc/double".into(), 50882.0, Some(0.05))]);
    }

    #[test]
    fn a_zero_nan_or_malformed_baseline_is_refused() {
        for (text, says) in [
            ("k 0\n", "positive"),
            ("k NaN\n", "positive"),
            ("k nan\n", "positive"),
            ("k inf\n", "positive"),
            ("k -5\n", "positive"),
            ("k x\n", "not a number"),
            ("k\n", "expected"),
            ("k 1 2 3\n", "expected"),
            ("k 1 -0.1\n", "tolerance"),
            ("k 1 nan\n", "tolerance"),
            ("k 1\nk 2\n", "twice"),
        ] {
            let e = Counts::parse(text, "results/ci-baseline/instructions.tsv").expect_err(text);
            assert!(e.contains(says) && e.contains("instructions.tsv, line"), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_case_2_1_percent_over_fails_at_2_percent_and_1_9_passes() {
        let base = counts(&[("a/x/double", 1000.0), ("b/x/double", 1000.0), ("c/x/double", 1000.0)]);
        let new = counts(&[("a/x/double", 1021.0), ("b/x/double", 1019.0), ("c/x/double", 979.0)]);
        let c = compare_counts(&base, &new, 0.02);
        let changed: Vec<&str> = c.rows.iter().filter(|r| r.changed).map(|r| r.key.as_str()).collect();
        assert_eq!(changed, ["a/x/double", "c/x/double"], "2.1% more and 2.1% fewer change; 1.9% does not");
        let why = c.check(false).unwrap_err();
        assert!(why.len() == 2 && why[0].contains("+2.10%") && why[1].contains("-2.10%"), "{why:?}");
        let ok = compare_counts(&base, &counts(&[("a/x/double", 1019.0), ("b/x/double", 981.0), ("c/x/double", 1000.0)]), 0.02);
        assert_eq!(ok.check(false), Ok(()));
        // a case's own tolerance wins over the default
        let own = Counts { cases: vec![("a/x/double".into(), 1000.0, Some(0.03))] };
        assert_eq!(compare_counts(&own, &counts(&[("a/x/double", 1021.0)]), 0.02).check(false), Ok(()));
    }

    #[test]
    fn missing_cases_on_either_side_are_reported() {
        let base = counts(&[("a/x/double", 1000.0), ("b/x/double", 1000.0)]);
        let new = counts(&[("a/x/double", 1000.0), ("n/x/double", 5.0)]);
        let c = compare_counts(&base, &new, 0.02);
        assert_eq!((c.only_base.clone(), c.only_new.clone()), (vec!["b/x/double".to_string()], vec!["n/x/double".to_string()]));
        let why = c.check(false).unwrap_err();
        assert!(why.iter().any(|w| w.contains("b/x/double") && w.contains("not measured")), "{why:?}");
        assert!(why.iter().any(|w| w.contains("n/x/double") && w.contains("not in the baseline")), "{why:?}");
        // a subset run may leave baseline cases out, never bring unknown ones
        let why = c.check(true).unwrap_err();
        assert_eq!(why.len(), 1, "{why:?}");
        assert_eq!(compare_counts(&base, &counts(&[("a/x/double", 1000.0)]), 0.02).check(true), Ok(()));
        assert!(compare_counts(&base, &counts(&[("z/x/double", 1.0)]), 0.02).check(true).is_err());
    }

    #[test]
    fn a_planted_slowdown_is_caught_only_in_its_kernel() {
        let base = counts(&[("k/a/double", 1000.0), ("k/b/single", 2000.0), ("other/a/double", 1000.0)]);
        let planted = counts(&[("k/a/double", 1050.0), ("k/b/single", 2100.0), ("other/a/double", 1000.5)]);
        assert_eq!(compare_counts(&base, &planted, 0.02).caught("k"), Ok(()));
        // one case of the kernel not slower: not caught
        let half = counts(&[("k/a/double", 1050.0), ("k/b/single", 2000.0), ("other/a/double", 1000.0)]);
        let why = compare_counts(&base, &half, 0.02).caught("k").unwrap_err();
        assert!(why.len() == 1 && why[0].contains("k/b/single") && why[0].contains("NOT caught"), "{why:?}");
        // another kernel moved: not a clean catch
        let leak = counts(&[("k/a/double", 1050.0), ("k/b/single", 2100.0), ("other/a/double", 1050.0)]);
        assert!(compare_counts(&base, &leak, 0.02).caught("k").unwrap_err()[0].contains("other/a/double"));
        // faster is not a caught slowdown; no case of the kernel at all is not caught either
        assert!(compare_counts(&base, &counts(&[("k/a/double", 900.0)]), 0.02).caught("k").is_err());
        assert!(compare_counts(&base, &counts(&[("other/a/double", 1000.0)]), 0.02).caught("k").is_err());
        assert_eq!(kernel_of("pseudopotential/energy/mixed"), "pseudopotential");
    }
}
