//! The synthetic solid's DMC weak scaling projected to many GPUs from a folder's records (`qmcbench project`, and
//! the README's table under each folder's scaling table): [`kernels::ensemble::projection`]'s model fitted to the
//! newest commit's runs over several GPUs (their per-generation time, sum over ranks and migration), divided into
//! the one-rank run of the same walkers a rank, commit and host.

use crate::figures::{gen_time, OneRank};
use harness::Record;
use kernels::ensemble::projection::{fit, Fit, Measured, Network};
use std::collections::BTreeMap;

/// The GPU counts the README projects to.
pub const GPUS: &[usize] = &[16, 128, 1024, 4096];

/// One series: a case (system, electrons, precision), how walkers moved (transport, cargo, path) and the walkers a rank,
/// with its one-rank generation, its measured runs and their fit.
#[derive(Clone, Debug)]
pub struct Series {
    /// The record's `params.system`: C64, C128 (the synthetic solid), gas.
    pub system: String,
    pub electrons: u64,
    pub precision: String,
    pub transport: String,
    pub migrate: String,
    pub via: String,
    pub per_rank: u64,
    pub one_rank_s: f64,
    pub runs: Vec<Measured>,
    pub fit: Fit,
    /// The model checked where it can be: fitted without the run over the most GPUs, its projection there beside
    /// the measured efficiency (GPUs, projected, measured); None with runs over one GPU count only.
    pub check: Option<(usize, f64, f64)>,
    pub commit: String,
}

impl Series {
    /// Measured weak efficiency at `ranks`, where a run has it.
    pub fn measured(&self, ranks: usize) -> Option<f64> {
        self.runs.iter().find(|m| m.ranks == ranks).map(|m| self.one_rank_s / m.gen_s)
    }
    /// Projected weak efficiency at `p` GPUs.
    pub fn projected(&self, p: usize, net: &Network) -> f64 {
        self.one_rank_s / self.fit.gen_s(p, net)
    }
}

/// The weak-scaling series of the newest commit that ran the solid's DMC on several GPUs (passed records only; the
/// caller gives one machine's), one per host and series key; none where no one-rank run matches.
pub fn series(recs: &[&Record]) -> Vec<Series> {
    let dmc = |r: &&&Record| r.kernel == "solid" && r.op == "dmc" && r.variant == harness::Variant::Gpu && r.validation.status == "passed";
    let several = |r: &Record| r.sizes.get("ranks").is_some_and(|&n| n > 1) && r.params.contains_key("migrate");
    let Some(newest) = recs.iter().filter(dmc).filter(|r| several(r)).max_by(|a, b| a.timestamp.cmp(&b.timestamp)).map(|r| r.commit.clone()) else {
        return vec![];
    };
    let here: Vec<&Record> = recs.iter().filter(dmc).filter(|r| r.commit == newest).copied().collect();
    let electrons = |r: &Record| r.sizes.get("electrons").copied().unwrap_or(0);
    let param = |r: &Record, k: &str| r.params.get(k).cloned().unwrap_or_default();
    // the one-rank baselines as the scaling figure pairs them (the mean of repeated ones)
    let one = OneRank::of(&here);
    // each series' runs, and its one-rank baseline (from any of its runs: they share the case)
    let mut groups: BTreeMap<(String, String, u64, String, String, String, String, u64), (Option<f64>, Vec<Measured>)> = BTreeMap::new();
    for r in here.iter().filter(|r| several(r)) {
        let (Some(&ranks), Some(&w), Some(t)) = (r.sizes.get("ranks"), r.sizes.get("walkers"), gen_time(r)) else { continue };
        if w % ranks != 0 {
            continue;
        }
        let m = Measured {
            ranks: ranks as usize,
            gen_s: t,
            reduce_s: r.extra.get("reduce_per_gen_s").copied().unwrap_or(f64::NAN),
            migrate_s: r.extra.get("migrate_per_gen_s").copied().unwrap_or(f64::NAN),
        };
        let key = (r.system.machine(), param(r, "system"), electrons(r), r.precision.clone(), param(r, "transport"), param(r, "migrate"), param(r, "migrate_via"), w / ranks);
        let (base, runs) = groups.entry(key).or_default();
        *base = base.or(one.of_run(r, w / ranks).map(|b| b.0));
        runs.retain(|o| o.ranks != m.ranks); // a later run of the same point replaces an earlier one
        runs.push(m);
    }
    let mut out = vec![];
    for ((_, system, e, precision, transport, migrate, via, per_rank), (base, mut runs)) in groups {
        let (Some(one_rank_s), Ok(f)) = (base, fit(&runs)) else { continue };
        runs.sort_by_key(|m| m.ranks);
        let check = match runs.split_last() {
            Some((last, fewer)) if !fewer.is_empty() => fit(fewer).ok().map(|g| (last.ranks, one_rank_s / g.gen_s(last.ranks, &Network { latency_s: 0.0, bandwidth: f64::INFINITY }), one_rank_s / last.gen_s)),
            _ => None,
        };
        out.push(Series { system, electrons: e, precision, transport, migrate, via, per_rank, one_rank_s, runs, fit: f, check, commit: newest.clone() });
    }
    out
}

/// A Markdown table of `series`: the measured weak efficiency at each GPU count measured, the fitted terms, and
/// the projection at `gpus` over `net`.
pub fn table(series: &[Series], gpus: &[usize], net: &Network) -> String {
    let mut measured: Vec<usize> = series.iter().flat_map(|s| s.runs.iter().map(|m| m.ranks)).collect();
    measured.sort();
    measured.dedup();
    let mut head = vec!["system", "electrons", "precision", "walkers a GPU", "transport", "migrate", "via"].into_iter().map(String::from).collect::<Vec<_>>();
    head.extend(measured.iter().map(|p| format!("{p} GPUs measured")));
    head.extend(["own ms", "migrate ms", "sigma ms", "check: fewer GPUs' fit at the most, projected / measured"].map(String::from));
    head.extend(gpus.iter().map(|p| format!("{p} GPUs")));
    head.push("commit".into());
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), " --- |".repeat(head.len()));
    for s in series {
        let mut cells = vec![s.system.clone(), s.electrons.to_string(), s.precision.clone(), s.per_rank.to_string(), s.transport.clone(), s.migrate.clone(), s.via.clone()];
        cells.extend(measured.iter().map(|&p| s.measured(p).map_or("-".into(), |e| format!("{e:.3}"))));
        cells.extend([s.fit.own_s, s.fit.migrate_s, s.fit.sigma_s].map(|t| format!("{:.2}", t * 1e3)));
        cells.push(s.check.map_or("-".into(), |(p, proj, meas)| format!("{p} GPUs: {proj:.3} / {meas:.3}")));
        cells.extend(gpus.iter().map(|&p| format!("{:.3}", s.projected(p, net))));
        cells.push(s.commit.chars().take(7).collect());
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The README's projection under a folder's scaling table: the default cargo and path (inverse rows through the
/// host) at the default network, with the sentence that says what it assumes; empty without series.
pub fn readme_section(recs: &[&Record]) -> String {
    let s: Vec<Series> = series(recs).into_iter().filter(|s| s.migrate == "inverse" && s.via == "host").collect();
    if s.is_empty() {
        return String::new();
    }
    let net = Network::default();
    let mut out = String::from("\nThe same weak scaling projected to many GPUs (`qmcbench project`, `kernels::ensemble::projection`): each series' ");
    out.push_str("generation split into a rank's own work, its migration and the wait for the slowest rank, fitted to the runs over ");
    out.push_str("several GPUs (the wait as independent stragglers of spread sigma, growing as the expected largest of P normal ");
    out.push_str(&format!("deviates), plus an all-reduce across nodes of {:.0} us a stage and {:.0} GB/s; over the one-rank run of the same walkers a GPU. ", net.latency_s * 1e6, net.bandwidth / 1e9));
    out.push_str("Where runs over several GPU counts exist, the check column fits all but the largest and projects it: how far the model is from a measurement it did not see (within one host, so without the fabric's term).\n\n");
    out.push_str(&table(&s, GPUS, &net));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use harness::Stats;

    fn run(ranks: u64, walkers: u64, gen: f64, reduce: f64, migrate: f64, transport: &str) -> Record {
        let mut r: Record = serde_json::from_str(include_str!("../tests/data/record.json")).unwrap();
        (r.kernel, r.op, r.variant, r.precision) = ("solid".into(), "dmc".into(), harness::Variant::Gpu, "mixed".into());
        r.validation.status = "passed".into();
        r.sizes = [("electrons".to_string(), 256), ("ranks".to_string(), ranks), ("walkers".to_string(), walkers)].into();
        r.params.insert("transport".into(), transport.into());
        r.params.insert("system".into(), "C64".into());
        if ranks > 1 {
            r.params.insert("migrate".into(), "inverse".into());
            r.params.insert("migrate_via".into(), "host".into());
        }
        r.time = Stats { min: gen * 50.0, median: gen * 50.0, max: gen * 50.0, mean: None };
        r.extra = [("generations_run".to_string(), 50.0), ("reduce_per_gen_s".to_string(), reduce), ("migrate_per_gen_s".to_string(), migrate)].into();
        r.commit = "c0ffee0".into();
        r
    }

    /// Runs over 2 and 4 GPUs against the one-rank run of their walkers a GPU: the measured efficiencies, the fit,
    /// and a projection that falls with the GPUs; a run without its one-rank run makes no series.
    #[test]
    fn the_series_pairs_its_runs_with_the_one_rank_run_and_projects_them() {
        let recs = [
            run(1, 256, 0.0140, 0.0, 0.0, "solo"),
            run(2, 512, 0.0145, 0.0001, 0.0003, "threads"),
            run(4, 1024, 0.0150, 0.0003, 0.0005, "threads"),
            run(2, 1024, 0.0300, 0.0001, 0.0003, "threads"), // 512 a GPU: no one-rank run of 512
        ];
        let refs: Vec<&Record> = recs.iter().collect();
        let s = series(&refs);
        assert_eq!(s.len(), 1, "{s:?}");
        let s = &s[0];
        assert_eq!((s.per_rank, s.runs.len()), (256, 2));
        assert!((s.measured(2).unwrap() - 0.0140 / 0.0145).abs() < 1e-12);
        assert!((s.measured(4).unwrap() - 0.0140 / 0.0150).abs() < 1e-12);
        assert!((s.fit.migrate_s - 0.0005).abs() < 1e-15);
        let net = Network::default();
        let e: Vec<f64> = GPUS.iter().map(|&p| s.projected(p, &net)).collect();
        assert!(e.windows(2).all(|w| w[1] < w[0]) && e[0] < s.measured(4).unwrap() + 0.01, "{e:?}");
        let t = table(&[s.clone()], GPUS, &net);
        assert!(t.contains("| C64 | 256 | mixed | 256 | threads | inverse | host | 0.966 | 0.933 |"), "{t}");
        // the check: fitted to the 2-GPU run alone (sigma = 0.1 ms / e(2)), projected to 4 GPUs
        let (p, proj, meas) = s.check.unwrap();
        let want = 0.0140 / (0.0145 - 0.0001 - 0.0003 + 0.0003 + 0.0001 * kernels::ensemble::projection::expected_max(4) / kernels::ensemble::projection::expected_max(2));
        assert_eq!(p, 4);
        assert!((proj - want).abs() < 1e-12 && (meas - 0.0140 / 0.0150).abs() < 1e-12, "{proj} {want} {meas}");
        assert!(t.contains("4 GPUs: "), "{t}");
        assert!(readme_section(&refs).contains("4096 GPUs"));
        assert!(readme_section(&refs[..1]).is_empty(), "no multi-GPU run, no section");
    }
}
