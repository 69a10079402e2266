//! Walker shares by measured speed (issue #24). Ranks in lock-step generations wait for the slowest: on a loaded
//! host (a core shared, a slower socket, turbo lost) one rank's generation can take 1.2-1.3x another's, and every
//! rank then waits that long in the generation's sum. With [`Balance::Speed`] each rank's goal after branching is a
//! share of the walkers proportional to its speed, so a slow rank holds fewer walkers and all finish together.
//!
//! Speed is measured, not assumed: each generation every rank's compute seconds reach every rank through the
//! generation's one sum (`dmc`), and [`Pace`] smooths seconds per walker over about [`MEMORY`] generations, so one
//! straggling generation (random, which no plan can foresee) moves the shares little while a rank slow generation
//! after generation loses walkers. Every rank folds the same numbers in the same order with the same IEEE
//! operations (+, -, *, /, round: no library maths), so every rank computes the same goals, bit for bit, and the
//! same migration plan.
//!
//! The fixed point equalises compute time, whatever a rank's cost model: goals proportional to n_r / t_r stop
//! changing only when every t_r is the same.

use super::comm::share;

/// How the walkers are spread over ranks after each generation's branching.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Balance {
    /// Every rank its equal share ([`share`]). A run's chains then depend only on the number of ranks: it is
    /// reproducible bit for bit, and a restart from a checkpoint continues it bit for bit.
    #[default]
    Equal,
    /// Shares proportional to each rank's measured speed ([`goals`]). Which walker a rank holds changes the global
    /// walker order, and so the random streams each walker draws; timings differ between runs, so two runs (or a
    /// run and its restart) agree statistically, not bit for bit.
    Speed,
}

/// Paces within this relative spread (slowest / fastest - 1) count as equal and keep equal shares: the noise of
/// smoothed timings of identical cores stays below it, and a plan that followed the noise would only move walkers.
pub const MARGIN: f64 = 0.05;

/// Generations over which paces are smoothed: each new measurement weighs 1/MEMORY (an exponential mean).
pub const MEMORY: f64 = 8.0;

/// Every rank's smoothed compute seconds per walker (0: not measured yet), the same on every rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Pace {
    pub per_walker: Vec<f64>,
}

impl Pace {
    pub fn new(ranks: usize) -> Pace {
        Pace { per_walker: vec![0.0; ranks] }
    }

    /// Fold in one generation: rank r computed `walkers[r]` walkers in `seconds[r]`. A rank without walkers, or
    /// without a positive finite time, tells nothing about its speed and keeps its pace.
    pub fn update(&mut self, seconds: &[f64], walkers: &[usize]) {
        for ((p, &s), &n) in self.per_walker.iter_mut().zip(seconds).zip(walkers) {
            if n == 0 || !(s.is_finite() && s > 0.0) {
                continue;
            }
            let x = s / n as f64;
            *p = if *p > 0.0 { *p + (x - *p) / MEMORY } else { x };
        }
    }

    /// The walkers each rank should hold of `total` under `mode`.
    pub fn goals(&self, total: usize, mode: Balance) -> Vec<usize> {
        match mode {
            Balance::Equal => equal(total, self.per_walker.len()),
            Balance::Speed => goals(total, &self.per_walker),
        }
    }
}

/// Equal shares of `total` over `ranks`.
pub fn equal(total: usize, ranks: usize) -> Vec<usize> {
    (0..ranks).map(|r| share(total, r, ranks).1).collect()
}

/// Shares of `total` proportional to the speeds 1 / `pace[r]`, every rank at least one walker; equal shares when
/// some pace is unknown (not positive and finite), when the paces agree within [`MARGIN`], or when there are fewer
/// walkers than ranks (one each is impossible then). The goals sum to `total`.
///
/// Rounding (largest remainders): one walker each, then of the rest, x_r = free v_r / V, every rank floor(x_r) and
/// the walkers left over one each to the largest fractions x_r - floor(x_r), ties to the lower rank. Each goal is
/// within one walker of its exact proportion, and a slower rank never gets more than a faster one.
pub fn goals(total: usize, pace: &[f64]) -> Vec<usize> {
    let n = pace.len();
    let known = pace.iter().all(|p| p.is_finite() && *p > 0.0);
    if n == 0 || total < n || !known {
        return equal(total, n);
    }
    let (slow, fast) = pace.iter().fold((0.0f64, f64::INFINITY), |(s, f), &p| (s.max(p), f.min(p)));
    if slow <= fast * (1.0 + MARGIN) {
        return equal(total, n);
    }
    let speed: Vec<f64> = pace.iter().map(|p| 1.0 / p).collect();
    let all: f64 = speed.iter().sum();
    let free = total - n;
    let x: Vec<f64> = speed.iter().map(|v| free as f64 * v / all).collect();
    let mut out: Vec<usize> = x.iter().map(|x| 1 + x.floor() as usize).collect();
    let placed: usize = out.iter().sum();
    // the fractions sum to less than n, so fewer than n walkers are left; a sum of floors above the total cannot
    // happen below 2^50 walkers, and would fall back to equal shares rather than lose walkers
    let Some(left) = total.checked_sub(placed).filter(|l| *l < n) else { return equal(total, n) };
    let mut order: Vec<usize> = (0..n).collect();
    // stable: equal fractions keep rank order
    order.sort_by(|&a, &b| (x[b] - x[b].floor()).total_cmp(&(x[a] - x[a].floor())));
    for &r in &order[..left] {
        out[r] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::comm::{Comm, Threads};
    use super::*;

    #[test]
    fn shares_follow_speed_and_keep_every_walker_and_every_rank() {
        // rank 1 twice as slow: half the speed, so 1/(1 + 1/2 + 1) of 250 = 50 of the walkers
        assert_eq!(goals(250, &[1.0, 2.0, 1.0]), [100, 50, 100]);
        // three times as slow, totals that do not divide: within one walker of the exact share, sum kept
        let g = goals(1001, &[3.0, 1.0, 1.0, 1.0]);
        assert_eq!(g.iter().sum::<usize>(), 1001);
        let exact = [1001.0 / 10.0, 3003.0 / 10.0, 3003.0 / 10.0, 3003.0 / 10.0];
        for (a, e) in g.iter().zip(exact) {
            assert!((*a as f64 - e).abs() <= 1.5, "{g:?}");
        }
        assert_eq!(g, [101, 300, 300, 300]);
        // a rank a thousand times slower still keeps a walker
        assert_eq!(goals(20, &[1000.0, 1.0, 1.0, 1.0]), [1, 7, 6, 6]);
        // fewer walkers than ranks, unknown paces, paces within the margin: equal shares
        assert_eq!(goals(2, &[5.0, 1.0, 1.0]), [1, 1, 0]);
        assert_eq!(goals(12, &[0.0, 1.0, 2.0]), [4, 4, 4]);
        assert_eq!(goals(12, &[f64::NAN, 1.0, 2.0]), [4, 4, 4]);
        assert_eq!(goals(12, &[1.0, 1.04, 0.995]), [4, 4, 4]);
        // beyond the margin: 3 + 9 x (1, 2/3, 1) / (8/3) = 3.375, 2.25, 3.375 plus one each, the one left over to
        // the first of the two largest fractions
        assert_eq!(goals(12, &[1.0, 1.5, 1.0]), [5, 3, 4]);
        assert_eq!(goals(0, &[]), Vec::<usize>::new());
    }

    #[test]
    fn paces_are_smoothed_and_ignore_ranks_without_walkers() {
        let mut p = Pace::new(3);
        p.update(&[2.0, 3.0, 1.0], &[4, 3, 0]);
        assert_eq!(p.per_walker, [0.5, 1.0, 0.0]);
        // one slow generation moves the pace by 1/MEMORY of the difference
        p.update(&[10.0, 3.0, f64::NAN], &[4, 3, 2]);
        assert_eq!(p.per_walker, [0.5 + (2.5 - 0.5) / MEMORY, 1.0, 0.0]);
        assert_eq!(p.goals(9, Balance::Equal), [3, 3, 3]);
        // rank 2 still unmeasured: equal shares
        assert_eq!(p.goals(9, Balance::Speed), [3, 3, 3]);
    }

    #[test]
    fn every_rank_computes_the_same_goals_from_the_exchanged_times() {
        // each rank knows only its own time; one sum of a one-hot vector gives every rank all of them, and from
        // them each computes the goals and the plan
        let walkers = [40usize, 37, 45, 38];
        let out = Threads::run(4, |c| {
            let mut pace = Pace::new(c.size());
            for gen in 0..20 {
                let mut t = vec![0.0; c.size()];
                // rank 2 slower, with an irregular jitter that no two ranks share
                t[c.rank()] = (1.0 + 0.7 * (c.rank() == 2) as u8 as f64) * walkers[c.rank()] as f64 * 1e-3 * (1.0 + 0.01 * ((gen * 7 + c.rank() * 3) % 5) as f64);
                c.sum(&mut t);
                pace.update(&t, &walkers);
            }
            let g = pace.goals(160, Balance::Speed);
            (pace, g.clone(), super::super::population::plan_to(&walkers, &g))
        });
        for o in &out[1..] {
            assert_eq!(o.0.per_walker.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), out[0].0.per_walker.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            assert_eq!((&o.1, &o.2), (&out[0].1, &out[0].2));
        }
        let g = &out[0].1;
        assert_eq!(g.iter().sum::<usize>(), 160);
        assert!(g[2] < g[0] && g[2] < g[1] && g[2] < g[3], "{g:?}");
    }
}
