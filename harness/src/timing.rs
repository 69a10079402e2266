//! Timing: warm up, then time each repetition on the host clock (CPU variants) or between CUDA events on the
//! stream (GPU variants, so only device work is counted and the host never races the device).

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
}

impl Stats {
    /// From samples in seconds (at least one).
    pub fn from_samples(samples: &[f64]) -> Stats {
        assert!(!samples.is_empty(), "no timing samples");
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let median = if n % 2 == 1 { s[n / 2] } else { 0.5 * (s[n / 2 - 1] + s[n / 2]) };
        Stats { min: s[0], median, max: s[n - 1] }
    }
}

/// How many times each timed repetition runs its work: 1, or `QMC_PLANT_SLOWDOWN` (an integer) so that CI can prove
/// the regression check catches a real slowdown (the work is really done that many times, on the real clock).
pub fn work_per_rep() -> usize {
    std::env::var("QMC_PLANT_SLOWDOWN").ok().and_then(|v| v.parse().ok()).filter(|&k: &usize| k >= 1).unwrap_or(1)
}

/// Run `f` `warmup` times untimed, then `reps` times timed with `clock`.
pub fn measure<E, F>(clock: Clock, warmup: usize, reps: usize, mut f: F) -> Result<Stats, E>
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
    let mut samples = Vec::with_capacity(reps);
    let k = work_per_rep();
    for _ in 0..reps.max(1) {
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
        assert_eq!(s, Stats { min: 1.0, median: 2.0, max: 3.0 });
        let s = Stats::from_samples(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!(s.median, 2.5);
    }

    #[test]
    fn measure_runs_warmup_and_reps() {
        let mut calls = 0;
        let s = measure::<GpuError, _>(Clock::Host, 2, 5, || {
            calls += 1;
            std::thread::sleep(std::time::Duration::from_millis(1));
            Ok(())
        })
        .unwrap();
        assert_eq!(calls, 7);
        assert!(s.min >= 1e-3 && s.min <= s.median && s.median <= s.max);
    }

    #[test]
    fn measure_passes_errors_through() {
        let r = measure::<GpuError, _>(Clock::Host, 0, 3, || Err(GpuError::NoDriver));
        assert!(matches!(r, Err(GpuError::NoDriver)));
    }
}
