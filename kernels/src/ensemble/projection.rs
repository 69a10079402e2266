//! DMC's weak scaling projected to many ranks from runs over a few (issue #24, item 4): the model of
//! [`population`](super::population)'s cost per generation with its terms fitted to the records' measured ones.
//!
//! In weak scaling every rank keeps its share of walkers, so a generation on P ranks costs
//!
//!   t(P) = t_own + t_migrate + sigma e(P) + t_net(P),
//!
//! - t_own: what a rank does alone (its walkers' moves, measurement, branching and copies): the measured generation
//!   time less its sum over ranks and its migration, the same at every P;
//! - t_migrate: migration per generation. Under the global comb a rank sends or receives its own surplus, about
//!   sqrt(N / P) walkers, which does not grow with P at a fixed share; the projection takes the value measured at the
//!   most ranks (it grew a little from 2 to 4 GPUs on one host, so the largest is the cautious choice);
//! - sigma e(P): the wait for the slowest rank in the sum. Each rank's time per generation is taken as its mean plus
//!   independent noise of spread sigma, so the mean wait is E[max of P] - mean = sigma e(P), with e(P) the expected
//!   largest of P standard normal deviates ([`expected_max`]: e(2) = 1/sqrt(pi), e(1000) = 3.24). sigma is fitted
//!   to the measured sum times of every multi-rank run by least squares through the origin; the whole sum time is
//!   counted as wait (the sum's own latency, microseconds within a host, goes into sigma: an overestimate, which errs
//!   toward a lower projected efficiency);
//! - t_net(P): the all-reduce across nodes that one host does not show: ceil(log2 P) stages, each a latency plus the
//!   message over the link ([`Network`]); the message holds the generation's scalars and three vectors of P entries
//!   (populations, compute times, waits), 8 (3 P + 16) bytes.
//!
//! The efficiency is t(1) / t(P), t(1) the one-rank run's generation with the same walkers a rank.
//! Assumptions the records cannot check: independent stragglers (a shared cause, such as one slow node, is worse),
//! the network's numbers, and a population per rank large enough that the comb's surplus stays a few walkers.
//! What they can: on the H200 records of f6bd8fa (the solid, mixed, 256 walkers a GPU, 2, 3 and 4 GPUs of one host,
//! threads) the fit of 2 and 3 GPUs projected 4 GPUs within 0.03 of the measured efficiency in seven of eight
//! series, above it in five (the wait grew faster than e(P): at 256 electrons 0.06 and 0.12 ms in two runs over 2
//! GPUs, 0.25 over 4), and missed the device path's 4-GPU slump at 256 electrons (0.916 projected, 0.743 measured); the README's check
//! column repeats this on the newest records.

/// The all-reduce between nodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Network {
    /// Seconds a stage of the all-reduce costs before its bytes (a small-message round over the fabric).
    pub latency_s: f64,
    /// Bytes per second a stage moves.
    pub bandwidth: f64,
}

impl Default for Network {
    /// An InfiniBand-class fabric: 5 us a stage, 25 GB/s (200 Gb/s) a link.
    fn default() -> Self {
        Network { latency_s: 5e-6, bandwidth: 25e9 }
    }
}

impl Network {
    /// Seconds of the sum over `p` ranks between nodes.
    pub fn sum_s(&self, p: usize) -> f64 {
        if p < 2 {
            return 0.0;
        }
        let stages = (p as f64).log2().ceil();
        stages * (self.latency_s + 8.0 * (3.0 * p as f64 + 16.0) / self.bandwidth)
    }
}

/// One measured run over `ranks` ranks: seconds per generation, means over ranks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub ranks: usize,
    /// The whole generation (the run's time over its generations).
    pub gen_s: f64,
    /// In the sum over ranks (mostly the wait for the slowest).
    pub reduce_s: f64,
    /// In migration.
    pub migrate_s: f64,
}

/// The fitted terms of the model (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    pub own_s: f64,
    pub migrate_s: f64,
    pub sigma_s: f64,
    /// The most ranks measured.
    pub ranks: usize,
}

/// Fit the model to runs over two ranks or more (at least one). Err: none given, or a time that is not finite.
pub fn fit(runs: &[Measured]) -> Result<Fit, String> {
    let runs: Vec<&Measured> = runs.iter().filter(|m| m.ranks >= 2).collect();
    let Some(last) = runs.iter().max_by_key(|m| m.ranks) else { return Err("no run over two ranks or more to fit".into()) };
    if runs.iter().any(|m| ![m.gen_s, m.reduce_s, m.migrate_s].iter().all(|t| t.is_finite() && *t >= 0.0)) {
        return Err("a run's times per generation are not finite and non-negative".into());
    }
    let own_s = runs.iter().map(|m| m.gen_s - m.reduce_s - m.migrate_s).sum::<f64>() / runs.len() as f64;
    let (re, ee) = runs.iter().fold((0.0, 0.0), |(re, ee), m| {
        let e = expected_max(m.ranks);
        (re + m.reduce_s * e, ee + e * e)
    });
    Ok(Fit { own_s, migrate_s: last.migrate_s, sigma_s: re / ee, ranks: last.ranks })
}

impl Fit {
    /// Projected seconds a generation on `p` ranks.
    pub fn gen_s(&self, p: usize, net: &Network) -> f64 {
        if p < 2 {
            return self.own_s;
        }
        self.own_s + self.migrate_s + self.sigma_s * expected_max(p) + net.sum_s(p)
    }
}

/// The expected largest of `p` independent standard normal deviates, E[max] = int x p phi(x) Phi(x)^(p-1) dx
/// (Simpson's rule on [-12, 12]; accurate to about 1e-7 from libm's erfc): 0 for one, 1/sqrt(pi) for two, about
/// sqrt(2 ln p) for many.
pub fn expected_max(p: usize) -> f64 {
    if p < 2 {
        return 0.0;
    }
    let (a, b, n) = (-12.0f64, 12.0f64, 24_000usize);
    let h = (b - a) / n as f64;
    let pf = p as f64;
    let f = |x: f64| {
        let phi = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let cdf = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
        if cdf <= 0.0 {
            0.0
        } else {
            x * pf * phi * ((pf - 1.0) * cdf.ln()).exp()
        }
    };
    let inner: f64 = (1..n).map(|i| f(a + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 }).sum();
    (f(a) + f(b) + inner) * h / 3.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Known values: e(2) = 1/sqrt(pi), e(3) = 3 / (2 sqrt(pi)) exactly; e(4), e(5), e(10), e(100) from tables of
    /// normal order statistics (Harter 1961).
    #[test]
    fn expected_maxima_match_the_tables() {
        let pi = std::f64::consts::PI;
        assert_eq!(expected_max(1), 0.0);
        for (p, want) in [(2, 1.0 / pi.sqrt()), (3, 1.5 / pi.sqrt()), (4, 1.029375), (5, 1.162964), (10, 1.538753), (100, 2.507594)] {
            let got = expected_max(p);
            assert!((got - want).abs() < 2e-6, "e({p}) = {got}, want {want}");
        }
        // growing, and about sqrt(2 ln p) far out
        let e = expected_max(4096);
        assert!(e > expected_max(1024) && e < (2.0 * (4096f64).ln()).sqrt(), "{e}");
    }

    /// Runs made by the model are fitted back to its terms, and the fit reproduces every run.
    #[test]
    fn the_fit_recovers_the_terms_it_was_made_from() {
        let truth = Fit { own_s: 0.045, migrate_s: 0.0012, sigma_s: 0.0004, ranks: 4 };
        let runs: Vec<Measured> = (2..=4)
            .map(|p| Measured { ranks: p, gen_s: truth.gen_s(p, &Network { latency_s: 0.0, bandwidth: f64::INFINITY }), reduce_s: truth.sigma_s * expected_max(p), migrate_s: truth.migrate_s })
            .collect();
        let got = fit(&runs).unwrap();
        assert!((got.own_s - truth.own_s).abs() < 1e-15 && (got.sigma_s - truth.sigma_s).abs() < 1e-15, "{got:?}");
        assert_eq!((got.migrate_s, got.ranks), (truth.migrate_s, 4));
        for m in &runs {
            let lan = Network { latency_s: 0.0, bandwidth: f64::INFINITY };
            assert!((got.gen_s(m.ranks, &lan) - m.gen_s).abs() < 1e-15);
        }
    }

    /// The wait and the fabric add up with P; migration is taken from the most ranks measured; one rank's runs and
    /// broken times are refused.
    #[test]
    fn projections_grow_with_the_ranks_and_bad_runs_are_refused() {
        let runs = [
            Measured { ranks: 2, gen_s: 0.0460, reduce_s: 0.0002, migrate_s: 0.0010 },
            Measured { ranks: 4, gen_s: 0.0466, reduce_s: 0.0007, migrate_s: 0.0013 },
        ];
        let f = fit(&runs).unwrap();
        assert_eq!(f.migrate_s, 0.0013);
        let net = Network::default();
        let t: Vec<f64> = [2, 16, 128, 1024, 4096].iter().map(|&p| f.gen_s(p, &net)).collect();
        assert!(t.windows(2).all(|w| w[1] > w[0]), "{t:?}");
        // the fabric's part at 4096 ranks: 12 stages of 5 us and 98 KB at 25 GB/s
        let sum = net.sum_s(4096);
        assert!((sum - 12.0 * (5e-6 + 8.0 * (3.0 * 4096.0 + 16.0) / 25e9)).abs() < 1e-15, "{sum}");
        assert_eq!(net.sum_s(1), 0.0);
        assert!(fit(&[Measured { ranks: 1, gen_s: 0.04, reduce_s: 0.0, migrate_s: 0.0 }]).is_err());
        assert!(fit(&[Measured { ranks: 2, gen_s: f64::NAN, reduce_s: 0.0, migrate_s: 0.0 }]).is_err());
    }
}
