//! Timing: warm up, then time each repetition on the host clock (CPU variants) or between CUDA events on the
//! stream (GPU variants, so only device work is counted and the host never races the device).
//!
//! A planted slowdown (`QMC_PLANT_SLOWDOWN`, see [`Plant`]) makes the timed repetitions of one kernel really do more
//! work, so the regression checks can prove they catch a slowdown of that size.

use kernels::gpu::{Gpu, GpuError};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Which clock times a repetition.
#[derive(Clone, Copy)]
pub enum Clock<'a> {
    Host,
    Gpu(&'a Gpu),
}

/// Summary of repeated timings, in seconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// Mean over the repetitions: what a planted fractional slowdown shifts by exactly its factor (the median need
    /// not move). Absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
}

impl Stats {
    /// From samples in seconds (at least one).
    pub fn from_samples(samples: &[f64]) -> Stats {
        assert!(!samples.is_empty(), "no timing samples");
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let median = if n % 2 == 1 { s[n / 2] } else { 0.5 * (s[n / 2 - 1] + s[n / 2]) };
        let mean = s.iter().sum::<f64>() / n as f64;
        Stats { min: s[0], median, max: s[n - 1], mean: Some(mean) }
    }

    /// One value for every statistic (a measurement taken once).
    pub fn constant(secs: f64) -> Stats {
        Stats { min: secs, median: secs, max: secs, mean: Some(secs) }
    }

    /// Every statistic times `f` (a time per walker scaled to another walker count).
    pub fn scaled(self, f: f64) -> Stats {
        Stats { min: self.min * f, median: self.median * f, max: self.max * f, mean: self.mean.map(|m| m * f) }
    }
}

/// The environment variable of the planted slowdown.
pub const PLANT_VAR: &str = "QMC_PLANT_SLOWDOWN";

/// A planted slowdown: the timed repetitions of `kernel` (every kernel when `None`) run their work `factor` times
/// in all, really (see [`Credit`]). Set as `QMC_PLANT_SLOWDOWN=<kernel>:<factor>` (e.g. `bspline:1.05`) or
/// `QMC_PLANT_SLOWDOWN=<factor>` for every kernel (e.g. `16`); the factor is a real number of at least 1.
#[derive(Clone, Debug, PartialEq)]
pub struct Plant {
    pub kernel: Option<String>,
    pub factor: f64,
}

impl Plant {
    /// Parse the variable's value.
    pub fn parse(text: &str) -> Result<Plant, String> {
        let bad = |why: &str| format!("{PLANT_VAR}={text:?}: {why}; expected <kernel>:<factor> (e.g. bspline:1.05) or <factor> for every kernel (e.g. 16), a factor of at least 1");
        let (kernel, factor) = match text.trim().split_once(':') {
            Some((k, f)) => (Some(k.trim()), f.trim()),
            None => (None, text.trim()),
        };
        if let Some(k) = kernel {
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-') {
                return Err(bad("the kernel name must be a kernel's name, like bspline"));
            }
        }
        let factor: f64 = factor.parse().map_err(|_| bad("the factor is not a number"))?;
        if !(factor.is_finite() && factor >= 1.0) {
            return Err(bad("the factor must be a finite number of at least 1"));
        }
        Ok(Plant { kernel: kernel.map(str::to_string), factor })
    }

    /// The plant the environment asks for: `None` when the variable is unset or empty, an error when it is set
    /// but does not parse.
    pub fn from_env() -> Result<Option<Plant>, String> {
        match std::env::var(PLANT_VAR) {
            Ok(v) if !v.trim().is_empty() => Plant::parse(&v).map(Some),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(format!("{PLANT_VAR} is not valid text")),
        }
    }

    /// The factor for the work of `kernel`: the plant's where it names that kernel (or every kernel), else 1.
    pub fn factor_for(plant: Option<&Plant>, kernel: Option<&str>) -> f64 {
        match plant {
            Some(p) if p.kernel.is_none() || p.kernel.as_deref() == kernel => p.factor,
            _ => 1.0,
        }
    }
}

/// How many times each repetition runs its work under a factor `f >= 1`: repetition i (from 1) runs it
/// round(i f) - round((i - 1) f) times, at least once, so R repetitions run it round(R f) times in all (a credit
/// of f per repetition, spent in whole runs; exact in the sum, whatever the rounding of the single steps).
#[derive(Clone, Debug)]
pub struct Credit {
    factor: f64,
    reps: u64,
    runs: u64,
}

impl Credit {
    pub fn new(factor: f64) -> Credit {
        Credit { factor, reps: 0, runs: 0 }
    }

    /// Runs of the work for the next repetition.
    pub fn next_runs(&mut self) -> u64 {
        self.reps += 1;
        let total = (self.reps as f64 * self.factor).round() as u64;
        let n = total.saturating_sub(self.runs).max(1);
        self.runs += n;
        n
    }

    /// Runs of `n` units of work in all (for a driver whose work is a count of steps rather than repetitions).
    pub fn total(factor: f64, n: u64) -> u64 {
        let mut c = Credit::new(factor);
        (0..n).map(|_| c.next_runs()).sum()
    }
}

/// How the timed repetitions are laid out in time: back to back, or in bursts with idle pauses between them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spread {
    BackToBack,
    /// `bursts` groups of repetitions (as equal as the count allows), each followed but the last by a pause of
    /// `idle` times the burst's own duration, and at least `min_pause` seconds. For a one-core baseline on a host
    /// whose cores are shared: there the speed one thread gets moves from second to second (the lattice's serial L =
    /// 15 case on the H200 host, 1e583b1: the median of 20 back-to-back repetitions ranged 143 to 180 ms over six 3-s
    /// runs, with no steal time), so repetitions within half a second all sample one state of the host.
    Bursts { bursts: usize, idle: f64, min_pause: f64 },
}

/// A one-core baseline's repetitions ([`crate::Runner::one_core_spread`]): five bursts, each followed by a pause four
/// times its length and at least a second, so they sample the host over 4 s or more rather than a few tenths of a
/// second. Measured with the lattice's serial mode on the H200 host (a KVM guest on a shared socket, no steal time;
/// pinned to one core the same: gpu-host.sh serial-baseline at b0bd25f and 1e583b1): L = 15 double ran 1,387 to
/// 2,399 chain sweeps/s over five calls of the same code, each run's three back-to-back repetitions within 3%, and
/// the medians of six back-to-back runs of 20 repetitions ranged 143 to 180 ms; spread over about 6 s, six runs'
/// medians ranged 172 to 184 ms (6a69a2e), and the suite's L = 15 runs of three calls gave 1,875, 2,101 and 1,954
/// (6a69a2e, 05b91f1, 25b52a7). Without the one-second floor L = 9's window was about a second, and two calls
/// differed by 45% (22.4k and 32.5k; 23.5k with the floor at 25b52a7). All cores spread in time (05b91f1) showed no
/// gain: two runs of one call still differed by up to 20% (the lattice's mixed L = 15: 35.2k and 29.0k; 26.1k and
/// 29.9k back to back at 6a69a2e), so an all-core run times back to back. Spread, a record's min..max shows the
/// host's moves: the basis evaluation on one core (gemm --op basis --threads 1, three repetitions, f9af401) spanned a
/// median 1.44x (at most 1.90x) within a record, against 1.02-1.04x back to back in five earlier calls; so a one-core
/// baseline wants many repetitions.
pub const ONE_CORE: Spread = Spread::Bursts { bursts: 5, idle: 4.0, min_pause: 1.0 };

/// Run `f` `warmup` times untimed, then `reps` times timed with `clock`, laid out as `spread` says; each timed
/// repetition runs `f` as often as a [`Credit`] of `factor` says (1: once).
pub fn measure<E, F>(clock: Clock, warmup: usize, reps: usize, factor: f64, spread: Spread, mut f: F) -> Result<Stats, E>
where
    F: FnMut() -> Result<(), E>,
    E: From<GpuError>,
{
    for _ in 0..warmup {
        f()?;
    }
    if let Clock::Gpu(g) = clock {
        g.sync()?;
    }
    let reps = reps.max(1);
    // a pause comes before each repetition in `ends`, `idle` times the burst just timed and at least `min_pause`
    let (bursts, idle, min_pause) = match spread {
        Spread::BackToBack => (1, 0.0, 0.0),
        Spread::Bursts { bursts, idle, min_pause } => (bursts.clamp(1, reps), idle.max(0.0), min_pause.max(0.0)),
    };
    let ends: Vec<usize> = (1..bursts).map(|b| b * reps / bursts).collect();
    let mut burst = Instant::now();
    let mut samples = Vec::with_capacity(reps);
    let mut credit = Credit::new(factor);
    for i in 0..reps {
        if ends.contains(&i) {
            std::thread::sleep(burst.elapsed().mul_f64(idle).max(std::time::Duration::from_secs_f64(min_pause)));
            burst = Instant::now();
        }
        let k = credit.next_runs();
        let secs = match clock {
            Clock::Host => {
                let t = Instant::now();
                (0..k).try_for_each(|_| f())?;
                t.elapsed().as_secs_f64()
            }
            Clock::Gpu(g) => {
                let start = g.mark()?;
                (0..k).try_for_each(|_| f())?;
                g.seconds_since(&start)?
            }
        };
        samples.push(secs);
    }
    Ok(Stats::from_samples(&samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_samples() {
        let s = Stats::from_samples(&[3.0, 1.0, 2.0]);
        assert_eq!(s, Stats { min: 1.0, median: 2.0, max: 3.0, mean: Some(2.0) });
        let s = Stats::from_samples(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!((s.median, s.mean), (2.5, Some(2.5)));
        // one slow repetition in twenty moves the mean, not the median
        let mut v = vec![1.0; 20];
        v[9] = 2.0;
        let s = Stats::from_samples(&v);
        assert_eq!((s.median, s.mean), (1.0, Some(1.05)));
    }

    /// Bursts: every repetition timed, in the given count of bursts with untimed pauses between them. Sleeps never
    /// return early, so with the pauses outside the samples the wall time is at least the samples' sum plus the
    /// pauses' lower bound (idle x the repetitions of the first two bursts x the shortest sample); a pause timed
    /// inside a sample would leave the wall time at about the samples' sum.
    #[test]
    fn bursts_pause_between_groups_of_repetitions() {
        let work = || -> Result<(), GpuError> {
            std::thread::sleep(std::time::Duration::from_millis(4));
            Ok(())
        };
        let t = Instant::now();
        let s = measure(Clock::Host, 0, 6, 1.0, Spread::Bursts { bursts: 3, idle: 2.0, min_pause: 0.0 }, work).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let sum = 6.0 * s.mean.unwrap();
        assert!(s.min >= 0.004, "{s:?}");
        assert!(wall >= sum + 2.0 * 4.0 * s.min, "wall {wall} s, samples {sum} s: the pauses were timed or missing");
        // the floor: two pauses of at least 50 ms, far longer than idle x the bursts here
        let t = Instant::now();
        let s = measure(Clock::Host, 0, 3, 1.0, Spread::Bursts { bursts: 3, idle: 0.5, min_pause: 0.05 }, work).unwrap();
        let wall = t.elapsed().as_secs_f64();
        assert!(wall >= 3.0 * s.mean.unwrap() + 0.1, "wall {wall} s: the pauses' floor was not kept");
        // more bursts than repetitions: one repetition a burst, each run once
        let mut n = 0;
        measure(Clock::Host, 1, 2, 1.0, Spread::Bursts { bursts: 9, idle: 0.0, min_pause: 0.0 }, || -> Result<(), GpuError> {
            n += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 3, "one warm-up and two timed repetitions");
    }

    #[test]
    fn a_record_without_a_mean_still_reads() {
        let s: Stats = serde_json::from_str(r#"{"min":1.0,"median":2.0,"max":3.0}"#).unwrap();
        assert_eq!(s.mean, None);
        let back: Stats = serde_json::from_str(&serde_json::to_string(&Stats::constant(2.0)).unwrap()).unwrap();
        assert_eq!(back.mean, Some(2.0));
    }

    #[test]
    fn plants_parse() {
        assert_eq!(Plant::parse("bspline:1.05"), Ok(Plant { kernel: Some("bspline".into()), factor: 1.05 }));
        assert_eq!(Plant::parse(" qmc : 2 "), Ok(Plant { kernel: Some("qmc".into()), factor: 2.0 }));
        assert_eq!(Plant::parse("16"), Ok(Plant { kernel: None, factor: 16.0 }), "the plain number: every kernel");
        assert_eq!(Plant::parse("1"), Ok(Plant { kernel: None, factor: 1.0 }));
        for bad in ["", "bspline", "bspline:", ":1.05", "bspline:0.9", "bspline:0", "bspline:-1", "bspline:nan", "bspline:inf", "bspline:x", "B-Spline:1.1", "a b:1.1", "bspline:1.05:2", "0.5"] {
            let e = Plant::parse(bad).expect_err(bad);
            assert!(e.starts_with("QMC_PLANT_SLOWDOWN=") && e.contains("<kernel>:<factor>"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_plant_applies_to_its_kernel_only() {
        let p = Plant::parse("jastrow:1.05").unwrap();
        assert_eq!(Plant::factor_for(Some(&p), Some("jastrow")), 1.05);
        assert_eq!(Plant::factor_for(Some(&p), Some("bspline")), 1.0);
        assert_eq!(Plant::factor_for(Some(&p), None), 1.0);
        assert_eq!(Plant::factor_for(None, Some("jastrow")), 1.0);
        let all = Plant::parse("16").unwrap();
        assert_eq!(Plant::factor_for(Some(&all), Some("gemm")), 16.0);
    }

    #[test]
    fn the_credit_runs_round_r_times_factor() {
        let runs = |f: f64, r: u64| Credit::total(f, r);
        assert_eq!(runs(1.05, 20), 21);
        assert_eq!(runs(1.0, 20), 20);
        assert_eq!(runs(1.05, 1), 1);
        assert_eq!(runs(1.05, 3), 3);
        assert_eq!(runs(1.05, 23), 24, "23 + 1 extra: the difference of 3 and 23 repetitions is 21 runs for 20");
        assert_eq!(runs(16.0, 9), 144);
        assert_eq!(runs(1.5, 4), 6);
        for r in 1..200u64 {
            for f in [1.0, 1.01, 1.05, 1.1, 1.333, 2.5] {
                assert_eq!(runs(f, r), (r as f64 * f).round() as u64, "R = {r}, factor {f}");
            }
        }
        // every repetition runs its work at least once
        let mut c = Credit::new(1.05);
        assert!((0..100).all(|_| c.next_runs() >= 1));
    }

    #[test]
    fn measure_runs_warmup_and_reps() {
        let mut calls = 0;
        let s = measure::<GpuError, _>(Clock::Host, 2, 5, 1.0, Spread::BackToBack, || {
            calls += 1;
            std::thread::sleep(std::time::Duration::from_millis(1));
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 7);
        assert!(s.min >= 1e-3 && s.min <= s.median && s.median <= s.max);
    }

    #[test]
    fn a_planted_factor_really_runs_the_work_more_often() {
        let mut calls = 0;
        measure::<GpuError, _>(Clock::Host, 1, 20, 1.05, Spread::BackToBack, || {
            calls += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 1 + 21, "one warm-up, then 21 runs for 20 repetitions");
    }

    #[test]
    fn measure_passes_errors_through() {
        let r = measure::<GpuError, _>(Clock::Host, 0, 3, 1.0, Spread::BackToBack, || Err(GpuError::NoDriver));
        assert!(matches!(r, Err(GpuError::NoDriver)));
    }
}
