//! A new run against the committed history of its device (`qmcbench compare-history`, the GPU host's `regression`
//! stage, check (c)).
//!
//! Why not the latest committed record: between machine sessions a case's time drifts more than between two runs in
//! one session (the synthetic solid's step, which does host work, read 2.2-2.8% slower than the previous session's
//! record while two back-to-back runs agreed within 0.7%; results/nvidia-h100-80gb-hbm3/log-20261126T141500-*). A
//! tolerance taken from one session's pair of runs then fails unchanged code. So each case is judged against the
//! median of its history, with a tolerance that covers the spread the history itself shows: at least the
//! within-session tolerance, and three times the largest distance of a committed record from that median (the rule
//! the within-session noise uses, `compare::tolerance_from_noise`).
//!
//! A case's history: its committed records with the same key, the same work per repetition (a lattice record of
//! 2 sweeps is not one of 16) and the same repetitions (a mean of 2 is not a mean of 20), passed, not planted, with
//! the compared time; the latest [`HISTORY_LEN`] of them, from the kernel's start in `history-since.tsv` on (set by
//! `qmcbench history-rebase` when a change is meant to alter its cost). A case with fewer than [`MIN_HISTORY`] such
//! records is reported, not judged: its spread is not known yet.

use crate::compare::{Stat, PLANTED_EXTRA};
use crate::record::Record;
use std::collections::BTreeMap;
use std::path::Path;

/// Records a case needs before its spread is trusted enough to judge it (the regression stage adds two a session).
pub const MIN_HISTORY: usize = 3;
/// The latest records of a case that make its history (older ones describe older code and machines).
pub const HISTORY_LEN: usize = 10;
/// The file in a device's results folder that starts a kernel's history anew.
pub const SINCE_FILE: &str = "history-since.tsv";

/// The work one repetition of a record does, in its throughput's unit (`throughput` is work per second at the
/// median time).
fn work_per_rep(r: &Record) -> f64 {
    r.throughput * r.time.median
}

fn same_work(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs())
}

/// One case of the new run against its history.
#[derive(Clone, Debug)]
pub struct HistoryRow {
    pub key: String,
    /// Records in the history.
    pub n: usize,
    /// Median of the history's times.
    pub median: f64,
    /// Largest |t / median - 1| over the history.
    pub spread: f64,
    /// The new run's time.
    pub new: f64,
    /// new / median.
    pub ratio: f64,
    /// The tolerance the case was judged at; `None`: too short a history to judge.
    pub tolerance: Option<f64>,
    pub slower: bool,
}

/// The tolerance of a case with history spread `spread`, given the within-session tolerance.
pub fn tolerance_of(spread: f64, within: f64) -> f64 {
    within.max(3.0 * spread)
}

/// Starts of kernels' histories: `kernel<TAB>timestamp<TAB>reason` lines (`#` comments), from `dir/SINCE_FILE` if it
/// exists. A kernel's records before its timestamp are not its history.
pub fn read_since(dir: &Path) -> Result<BTreeMap<String, String>, String> {
    let path = dir.join(SINCE_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() < 3 || f[0].is_empty() || f[1].len() < 10 || f[2].trim().is_empty() {
            return Err(format!("{}, line {}: expected `kernel<TAB>timestamp<TAB>reason`, got {line:?}", path.display(), i + 1));
        }
        m.insert(f[0].to_string(), f[1].to_string());
    }
    Ok(m)
}

/// The line `qmcbench history-rebase` appends: the kernel's history starts at `timestamp`, for `reason`.
pub fn since_line(kernel: &str, timestamp: &str, reason: &str) -> Result<String, String> {
    let reason = reason.trim();
    if kernel.is_empty() || !kernel.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
        return Err(format!("{kernel:?} is not a kernel's name (like bspline)"));
    }
    let b = timestamp.as_bytes();
    let shape = b.len() == 20 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':' && b[16] == b':' && b[19] == b'Z';
    if !shape || !timestamp.chars().filter(|c| !"-T:Z".contains(*c)).all(|c| c.is_ascii_digit()) {
        return Err(format!("{timestamp:?} is not a record's timestamp (like 2026-11-26T14:00:00Z)"));
    }
    if reason.is_empty() || reason.contains(['\t', '\n']) {
        return Err("the reason must be one line of text (say why the kernel's cost was meant to change)".into());
    }
    Ok(format!("{kernel}\t{timestamp}\t{reason}\n"))
}

/// Each case of `new` against its history in `committed` (times by `stat`), at least at tolerance `within`.
pub fn compare_history(committed: &[Record], since: &BTreeMap<String, String>, new: &[Record], within: f64, stat: Stat) -> Vec<HistoryRow> {
    let usable = |r: &Record| !r.validation.failed() && !r.validation.is_unchecked() && stat.of(r).is_some_and(|t| t.is_finite() && t > 0.0);
    let mut rows = vec![];
    for r in new.iter().filter(|r| usable(r)) {
        let key = r.key();
        let start = since.get(&r.kernel).map(String::as_str).unwrap_or("");
        let mut h: Vec<&Record> = committed
            .iter()
            .filter(|c| usable(c) && !c.extra.contains_key(PLANTED_EXTRA) && c.timestamp.as_str() >= start)
            .filter(|c| c.reps == r.reps && same_work(work_per_rep(c), work_per_rep(r)) && c.key() == key)
            .collect();
        h.sort_by(|a, b| a.timestamp.cmp(&b.timestamp));
        let h: Vec<f64> = h.iter().rev().take(HISTORY_LEN).map(|c| stat.of(c).expect("usable")).collect();
        let t = stat.of(r).expect("usable");
        let (median, spread) = if h.is_empty() {
            (f64::NAN, f64::NAN)
        } else {
            let mut s = h.clone();
            s.sort_by(f64::total_cmp);
            let m = if s.len() % 2 == 1 { s[s.len() / 2] } else { 0.5 * (s[s.len() / 2 - 1] + s[s.len() / 2]) };
            (m, s.iter().map(|x| (x / m - 1.0).abs()).fold(0.0, f64::max))
        };
        let tolerance = (h.len() >= MIN_HISTORY).then(|| tolerance_of(spread, within));
        let ratio = t / median;
        rows.push(HistoryRow { key, n: h.len(), median, spread, new: t, ratio, tolerance, slower: tolerance.is_some_and(|tol| ratio > 1.0 + tol) });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::sample;
    use crate::record::Variant;

    fn rec(mean: f64, work: f64, stamp: &str) -> Record {
        let mut r = sample("jastrow", Variant::Gpu, 1, 1.0);
        r.time.median = mean;
        r.time.mean = Some(mean);
        r.throughput = work / mean;
        r.timestamp = stamp.into();
        r
    }

    fn history(means: &[f64]) -> Vec<Record> {
        means.iter().enumerate().map(|(i, &m)| rec(m, 100.0, &format!("2026-11-2{i}T10:00:00Z"))).collect()
    }

    #[test]
    fn a_case_is_judged_against_the_median_at_three_times_the_spread_of_its_history() {
        // spread 2% around a median of 1.0: tolerance 6%; 5.9% slower passes, 6.1% fails
        let h = history(&[0.98, 1.0, 1.02]);
        for (t, slower) in [(1.059, false), (1.061, true)] {
            let rows = compare_history(&h, &BTreeMap::new(), &[rec(t, 100.0, "2026-11-29T00:00:00Z")], 0.022, Stat::Mean);
            assert_eq!(rows.len(), 1);
            let r = &rows[0];
            assert_eq!((r.n, r.median), (3, 1.0));
            assert!((r.spread - 0.02).abs() < 1e-12 && (r.tolerance.unwrap() - 0.06).abs() < 1e-12, "{r:?}");
            assert_eq!(r.slower, slower, "{t}");
        }
        // a quiet history keeps the within-session tolerance: a 5% slowdown is caught
        let quiet = history(&[1.0, 1.001, 0.999, 1.0]);
        let r = &compare_history(&quiet, &BTreeMap::new(), &[rec(1.05, 100.0, "2026-11-29T00:00:00Z")], 0.022, Stat::Mean)[0];
        assert_eq!((r.tolerance, r.slower), (Some(0.022), true));
    }

    #[test]
    fn a_short_history_is_reported_not_judged() {
        let r = &compare_history(&history(&[1.0, 1.0]), &BTreeMap::new(), &[rec(2.0, 100.0, "2026-11-29T00:00:00Z")], 0.02, Stat::Mean)[0];
        assert_eq!((r.n, r.tolerance, r.slower), (2, None, false));
    }

    #[test]
    fn other_work_per_repetition_planted_failed_and_old_records_are_not_history() {
        let mut h = history(&[1.0, 1.0, 1.0]);
        h.push(rec(9.0, 200.0, "2026-11-28T00:00:00Z")); // twice the work a repetition (e.g. more sweeps)
        let mut fewer = rec(9.0, 100.0, "2026-11-28T00:00:03Z");
        fewer.reps = 2;
        h.push(fewer);
        let mut planted = rec(9.0, 100.0, "2026-11-28T00:00:01Z");
        planted.extra.insert(PLANTED_EXTRA.into(), 1.05);
        let mut failed = rec(9.0, 100.0, "2026-11-28T00:00:02Z");
        failed.validation = crate::record::Validation::from_checks(&[kernels::Check::scalar("x", 1.0, 2.0, 0.0)]);
        h.extend([planted, failed]);
        let r = &compare_history(&h, &BTreeMap::new(), &[rec(1.0, 100.0, "2026-11-29T00:00:00Z")], 0.02, Stat::Mean)[0];
        assert_eq!((r.n, r.median, r.slower), (3, 1.0, false), "{r:?}");
        // a rebase after the first two records leaves one: not judged
        let since = BTreeMap::from([("jastrow".to_string(), "2026-11-22T00:00:00Z".to_string())]);
        let r = &compare_history(&h, &since, &[rec(1.0, 100.0, "2026-11-29T00:00:00Z")], 0.02, Stat::Mean)[0];
        assert_eq!((r.n, r.tolerance), (1, None));
    }

    #[test]
    fn the_since_file_is_read_and_its_lines_checked() {
        let dir = std::env::temp_dir().join(format!("qmc-since-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(read_since(&dir).unwrap().is_empty(), "no file: every record is history");
        let line = since_line("lattice", "2026-11-26T15:00:00Z", "look-ahead kernel").unwrap();
        std::fs::write(dir.join(SINCE_FILE), format!("# kernel\tsince\treason\n{line}")).unwrap();
        assert_eq!(read_since(&dir).unwrap()["lattice"], "2026-11-26T15:00:00Z");
        std::fs::write(dir.join(SINCE_FILE), "lattice 2026-11-26\n").unwrap();
        assert!(read_since(&dir).unwrap_err().contains("line 1"));
        assert!(since_line("Lattice!", "2026-11-26T15:00:00Z", "x").is_err());
        assert!(since_line("lattice", "2026-11-26T15:00:00Z", " ").is_err());
        assert!(since_line("lattice", "2026-11-26 15:00", "x").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
