//! Population control across ranks, generic over the walker type (the QMC driver's walkers, the synthetic solid's):
//! branching, and the load balancing of paper 000: "we redistribute walkers between nodes with point-to-point
//! transfers after each branching step".
//!
//! After branching, every rank knows every rank's population (the one-hot counts in the generation's sum). Each
//! rank has a goal: its equal [`share`](super::comm::share) of the total, or a share by measured speed ([`balance`](super::balance)).
//! Ranks above their goal send their last walkers to ranks below it, matched in rank order ([`plan_to`]): the
//! fewest walkers move, a rank either sends or receives, and since every rank takes its transfers in the same
//! global order, blocking sends cannot deadlock. Every rank computes the same plan from the same counts and goals.
//!
//! Cost per generation on P ranks, the model behind a projection to many GPUs ([`projection`](super::projection)
//! fits it to the DMC records, which carry each term, measured): t_gen = t_compute(N / P) + t_sum(P) + t_migrate.
//! t_compute is the walker moves of a rank's share; t_sum is one element-wise sum a generation (move statistics,
//! energies and weights, and three vectors of P entries: populations, compute times, waits; plus the checkpoint flag
//! when writing), a latency-bound all-reduce
//! of about alpha log2 P plus the wait for the slowest rank; t_migrate is the surplus walkers (branching changes a
//! rank's population by about sqrt(N / P) per generation, so a few walkers per rank) times the bytes of a walker
//! over the link bandwidth. The vectors grow with P; at thousands of ranks an all-gather, or a prefix sum of
//! surpluses, should replace sums of one-hot vectors.

use super::balance::equal;
use super::comm::Comm;
use super::pack::{frames, pack_all, unpack_all, Pack};
use rand::Rng;
use std::time::Instant;

/// Most copies one walker may make in one generation (a walker that would make more is a sign of trouble; the cap
/// bounds the damage).
pub const MAX_COPIES: usize = 4;

/// floor(w + xi) copies of a walker of weight w, xi uniform in [0, 1) and its own: the expected number is w. The
/// qmc driver's branching, walker by walker. (A comb of unit spacing, one xi for all walkers, was tried in its place
/// at e3d01da: with weights near 1 it kills and copies walkers only where the cumulative weight crosses a tooth, in
/// bursts among neighbours that are mostly relatives, and the DMC error bars of He and H2 on the GPU grew 1.5-2x at
/// the same imaginary time, Be's not, results/nvidia-h100-80gb-hbm3 log of 80019b5.)
pub fn copies(weight: f64, xi: f64) -> usize {
    ((weight + xi) as usize).min(MAX_COPIES)
}

/// The comb of a fixed population (the batched engines' population control, which keeps their sizes): one uniform
/// xi for all walkers, tooth k of n at (k + xi) W / n along the walkers' cumulative weight in the global walker order
/// (rank 0's first); each walker is copied once per tooth on its stretch of that line, so walker j gets about
/// w_j n / W copies. Over ranks the teeth split by each rank's weight total ([`teeth`]), so every rank derives every
/// rank's population after branching from the one sum of weight totals, and the copies do not depend on how the
/// walkers are split ([`comb_copies`]).
fn tooth(k: usize, n: usize, total: f64, xi: f64) -> f64 {
    (k as f64 + xi) * total / n as f64
}

/// The uniform offset xi of the comb of generation `gen` (the same on every rank).
pub fn comb_offset(seed: u64, gen: usize) -> f64 {
    crate::rng::stream(seed, 0xB4A9, gen, 0).random::<f64>()
}

/// For each rank, the range of the `n` teeth that fall on its walkers' weights, which lie after those of the ranks
/// before it (`totals`: every rank's weight total). The ranges partition 0..n exactly on every rank (they are
/// computed from the same numbers in the same order).
pub fn teeth(totals: &[f64], n: usize, xi: f64) -> Vec<std::ops::Range<usize>> {
    let total: f64 = totals.iter().sum();
    let below = |x: f64| (0..n).filter(|&k| tooth(k, n, total, xi) < x).count();
    let mut edge = 0.0;
    let mut lo = 0;
    (0..totals.len())
        .map(|r| {
            edge += totals[r];
            let hi = if r + 1 == totals.len() { n } else { below(edge).max(lo) };
            let range = lo..hi;
            lo = hi;
            range
        })
        .collect()
}

/// Copies of each of `weights` (one rank's walkers, whose weights start at `before` in the global order, the
/// global total `total`) under its teeth `mine` of the comb of `n` ([`teeth`]).
pub fn comb_copies(weights: &[f64], before: f64, total: f64, n: usize, xi: f64, mine: std::ops::Range<usize>) -> Vec<usize> {
    let mut c = vec![0usize; weights.len()];
    let (mut acc, mut j) = (before, 0usize);
    for k in mine {
        let tooth = tooth(k, n, total, xi);
        while j + 1 < weights.len() && acc + weights[j] <= tooth {
            acc += weights[j];
            j += 1;
        }
        c[j] += 1;
    }
    c
}

/// The cap on a local energy's distance from the estimate in the branching weight, in units of sqrt(N / tau)
/// (Zen, Sorella, Gillan, Michaelides and Alfe 2016): it stops a walker near a node from branching wildly.
pub const ENERGY_CAP: f64 = 0.2;

/// The cap of [`ENERGY_CAP`] for `electrons` electrons at time step `tau`, in Ha.
pub fn energy_cap(electrons: usize, tau: f64) -> f64 {
    ENERGY_CAP * (electrons as f64 / tau).sqrt()
}

/// The DMC branching weight of a walker whose local energy went from `old` to `new` over a step of (effective)
/// length `tau`: exp(tau [(s_old + s_new) / 2 + shift]), s = E_est - E_L limited to +-`cap`, `shift` = E_T - E_est.
/// Every driver's weight: the qmc driver's with its trial energy's feedback on the population, the solid's with
/// shift 0 (a fixed population needs no feedback).
pub fn weight(old: f64, new: f64, e_est: f64, shift: f64, tau: f64, cap: f64) -> f64 {
    let s = |e: f64| (e_est - e).clamp(-cap, cap);
    (tau * (0.5 * (s(old) + s(new)) + shift)).exp()
}

/// Replace each walker by `n[k]` copies of itself, in walker order (a dead walker leaves none).
pub fn branch<W: Clone>(walkers: Vec<W>, n: &[usize]) -> Vec<W> {
    let mut next = Vec::with_capacity(n.iter().sum());
    for (w, &c) in walkers.into_iter().zip(n) {
        for _ in 1..c {
            next.push(w.clone());
        }
        if c > 0 {
            next.push(w);
        }
    }
    next
}

/// One point-to-point transfer of `n` walkers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub from: usize,
    pub to: usize,
    pub n: usize,
}

/// The transfers that bring populations `counts` to each rank's equal share of their total.
pub fn plan(counts: &[usize]) -> Vec<Transfer> {
    plan_to(counts, &equal(counts.iter().sum(), counts.len()))
}

/// The transfers that bring populations `counts` to `goals` (the same total), surplus ranks matched with deficit
/// ranks in rank order: every walker above a goal moves once, none other moves, which is the fewest moves that
/// reach the goals.
pub fn plan_to(counts: &[usize], goals: &[usize]) -> Vec<Transfer> {
    debug_assert_eq!(counts.iter().sum::<usize>(), goals.iter().sum::<usize>(), "goals share out the walkers there are");
    let ranks = counts.iter().zip(goals).enumerate();
    let mut surplus: Vec<(usize, usize)> = ranks.clone().filter(|(_, (c, g))| c > g).map(|(r, (c, g))| (r, c - g)).collect();
    let mut deficit: Vec<(usize, usize)> = ranks.filter(|(_, (c, g))| c < g).map(|(r, (c, g))| (r, g - c)).collect();
    let (mut s, mut d, mut out) = (0, 0, vec![]);
    while s < surplus.len() && d < deficit.len() {
        let n = surplus[s].1.min(deficit[d].1);
        out.push(Transfer { from: surplus[s].0, to: deficit[d].0, n });
        surplus[s].1 -= n;
        deficit[d].1 -= n;
        s += (surplus[s].1 == 0) as usize;
        d += (deficit[d].1 == 0) as usize;
    }
    out
}

/// What one rank's migration moved and cost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Traffic {
    /// Walkers sent plus received by this rank.
    pub walkers: u64,
    /// Bytes sent plus received by this rank.
    pub bytes: u64,
    /// Seconds spent packing, exchanging and rebuilding walkers.
    pub seconds: f64,
}

/// Balance the populations to `goals[r]` walkers on rank r (the same on every rank, summing to the counts' total;
/// `balance::equal` for equal shares): `counts[r]` is rank r's population after branching (the same on every rank).
/// Sent walkers leave from the end of `walkers`; received ones are appended in sender order.
pub fn migrate_to<W: Pack + Send>(comm: &dyn Comm, walkers: &mut Vec<W>, counts: &[usize], goals: &[usize], ctx: &W::Context) -> Traffic {
    let t = Instant::now();
    let me = comm.rank();
    let mut traffic = Traffic::default();
    let moves = plan_to(counts, goals);
    // the walkers this rank sends, in transfer order, are the last ones it holds
    let outgoing: usize = moves.iter().filter(|m| m.from == me).map(|m| m.n).sum();
    let mut leaving = walkers.split_off(walkers.len() - outgoing).into_iter();
    for m in &moves {
        if m.from == me {
            let batch: Vec<W> = leaving.by_ref().take(m.n).collect();
            let bytes = pack_all(&batch);
            traffic.walkers += m.n as u64;
            traffic.bytes += bytes.len() as u64;
            comm.send(m.to, bytes);
        } else if m.to == me {
            let bytes = comm.recv(m.from);
            traffic.walkers += m.n as u64;
            traffic.bytes += bytes.len() as u64;
            match frames(&bytes).and_then(|f| unpack_all(ctx, &f)) {
                Ok(w) if w.len() == m.n => walkers.extend(w),
                _ => comm.abort(&format!("rank {me}: walkers from rank {} arrived damaged", m.from)),
            }
        }
    }
    traffic.seconds = t.elapsed().as_secs_f64();
    traffic
}

/// Every rank's population, from each rank's own (one sum of a one-hot vector, exact in f64 below 2^53). The DMC
/// loop puts its one-hot counts in the generation's one sum instead.
pub fn counts(comm: &dyn Comm, mine: usize) -> Vec<usize> {
    let mut v = vec![0.0; comm.size()];
    v[comm.rank()] = mine as f64;
    comm.sum(&mut v);
    v.into_iter().map(|c| c as usize).collect()
}

#[cfg(test)]
mod tests {
    use super::super::balance::goals;
    use super::super::comm::{share, Threads};
    use super::super::pack::{put_u64, Reader, Truncated};
    use super::*;

    #[test]
    fn the_plan_balances_with_the_fewest_moves() {
        for counts in [vec![10, 2, 6], vec![0, 0, 9], vec![5, 5], vec![7], vec![1, 8, 0, 3, 3], vec![0, 0, 0]] {
            let total: usize = counts.iter().sum();
            let moves = plan(&counts);
            let mut after = counts.clone();
            for m in &moves {
                assert!(m.n > 0 && counts[m.from] > share(total, m.from, counts.len()).1);
                after[m.from] -= m.n;
                after[m.to] += m.n;
            }
            for (r, a) in after.iter().enumerate() {
                assert_eq!(*a, share(total, r, counts.len()).1, "{counts:?} -> {after:?}");
            }
            // the minimum: every surplus walker moves once
            let moved: usize = moves.iter().map(|m| m.n).sum();
            let surplus: usize = (0..counts.len()).map(|r| counts[r].saturating_sub(share(total, r, counts.len()).1)).sum();
            assert_eq!(moved, surplus);
        }
    }

    #[test]
    fn a_plan_to_uneven_goals_reaches_them_with_the_fewest_moves() {
        // goals by speed (rank 1 three times as slow as the others in the first three cases), and arbitrary goals
        let cases = [
            (vec![48, 48, 48, 48], goals(192, &[1.0, 3.0, 1.0, 1.0])),
            (vec![30, 70, 45, 47], goals(192, &[1.0, 3.0, 1.0, 1.0])),
            (vec![0, 100, 0, 5], goals(105, &[1.0, 3.0, 1.0, 1.0])),
            (vec![10, 2, 6], vec![1, 15, 2]),
            (vec![3, 3], vec![3, 3]),
        ];
        for (counts, goals) in cases {
            assert_eq!(counts.iter().sum::<usize>(), goals.iter().sum::<usize>());
            let moves = plan_to(&counts, &goals);
            let mut after = counts.clone();
            for m in &moves {
                // only ranks above their goal send, only ranks below it receive
                assert!(m.n > 0 && counts[m.from] > goals[m.from] && counts[m.to] < goals[m.to], "{m:?}");
                after[m.from] -= m.n;
                after[m.to] += m.n;
            }
            assert_eq!(after, goals, "{counts:?}");
            // the fewest: any plan reaching the goals moves at least the surplus, and this one moves exactly that
            let moved: usize = moves.iter().map(|m| m.n).sum();
            let surplus: usize = counts.iter().zip(&goals).map(|(c, g)| c.saturating_sub(*g)).sum();
            assert_eq!(moved, surplus, "{counts:?} -> {goals:?}: {moves:?}");
        }
        assert!(plan_to(&[3, 3], &[3, 3]).is_empty());
        assert_eq!(goals(192, &[1.0, 3.0, 1.0, 1.0]), [58, 20, 57, 57]);
    }

    #[test]
    fn branching_makes_the_asked_copies_in_order() {
        assert_eq!(branch(vec!['a', 'b', 'c', 'd'], &[2, 0, 1, 3]), ['a', 'a', 'c', 'd', 'd', 'd']);
        assert_eq!(copies(0.3, 0.69), 0);
        assert_eq!(copies(0.3, 0.71), 1);
        assert_eq!(copies(1e9, 0.5), MAX_COPIES);
    }

    /// The comb over ranks gives every walker the copies of one comb over the whole population, however the walkers
    /// are split, and makes exactly n copies.
    #[test]
    fn the_comb_over_ranks_is_the_comb_over_the_population() {
        let weights = [0.3, 1.7, 0.9, 0.05, 2.2, 1.0, 0.6, 1.25];
        let total: f64 = weights.iter().sum();
        for n in [8, 5] {
            for xi in [0.0, 0.37, 0.999] {
                // one comb over the whole population, by hand
                let mut want = vec![0usize; weights.len()];
                for k in 0..n {
                    let at = tooth(k, n, total, xi);
                    let mut acc = 0.0;
                    let j = weights.iter().position(|w| {
                        acc += w;
                        acc > at
                    });
                    want[j.unwrap_or(weights.len() - 1)] += 1;
                }
                assert_eq!(want.iter().sum::<usize>(), n);
                for split in [vec![8], vec![3, 5], vec![1, 1, 6], vec![4, 0, 4]] {
                    let parts: Vec<&[f64]> = split.iter().scan(0, |at, &n| Some((*at, *at += n).0)).zip(&split).map(|(a, &n)| &weights[a..a + n]).collect();
                    let totals: Vec<f64> = parts.iter().map(|p| p.iter().sum()).collect();
                    let ranges = teeth(&totals, n, xi);
                    assert_eq!(ranges.iter().map(|r| r.len()).sum::<usize>(), n);
                    let got: Vec<usize> = (0..split.len()).flat_map(|r| comb_copies(parts[r], totals[..r].iter().sum(), totals.iter().sum(), n, xi, ranges[r].clone())).collect();
                    assert_eq!(got, want, "n {n} xi {xi} split {split:?}");
                }
            }
        }
    }

    /// A tagged item, to follow where each one goes.
    #[derive(Clone, Debug, PartialEq)]
    struct Item(u64);
    impl Pack for Item {
        type Context = ();
        fn pack(&self, out: &mut Vec<u8>) {
            put_u64(out, self.0);
        }
        fn unpack(_: &(), r: &mut Reader) -> Result<Item, Truncated> {
            Ok(Item(r.u64()?))
        }
    }

    #[test]
    fn migration_over_threads_loses_and_duplicates_nothing() {
        let start = [9usize, 0, 4, 1];
        let out = Threads::run(4, |c| {
            let mut items: Vec<Item> = (0..start[c.rank()]).map(|i| Item((c.rank() * 100 + i) as u64)).collect();
            let n = counts(c, items.len());
            assert_eq!(n, start);
            migrate_to(c, &mut items, &n, &equal(n.iter().sum(), n.len()), &());
            items
        });
        let sizes: Vec<usize> = out.iter().map(|v| v.len()).collect();
        assert_eq!(sizes, [4, 4, 3, 3]);
        let mut all: Vec<u64> = out.into_iter().flatten().map(|i| i.0).collect();
        all.sort();
        let mut want: Vec<u64> = (0..4).flat_map(|r| (0..start[r]).map(move |i| (r * 100 + i) as u64)).collect();
        want.sort();
        assert_eq!(all, want);
        // to uneven goals: the same items, each rank holding its goal
        let goal = [1usize, 6, 2, 5];
        let out = Threads::run(4, |c| {
            let mut items: Vec<Item> = (0..start[c.rank()]).map(|i| Item((c.rank() * 100 + i) as u64)).collect();
            migrate_to(c, &mut items, &start, &goal, &());
            items
        });
        assert_eq!(out.iter().map(|v| v.len()).collect::<Vec<_>>(), goal);
        let mut all: Vec<u64> = out.into_iter().flatten().map(|i| i.0).collect();
        all.sort();
        assert_eq!(all, want);
    }
}
