//! Which items of a batch (walkers, rows, chains) a check compares with the f64 reference.
//!
//! The references are plain scalar f64 code, too slow to recompute every item of a large case, so a check looks at
//! a sample. The sample covers the whole range, so that a fault confined to one part of it (the last walker, one
//! GPU launch of several, a middle row) cannot hide behind the items that happen to come first: it holds the first
//! and the last item, at least one item of every chunk the fast code works in (a launch, a batch), and a uniform
//! random rest, drawn from a seed the caller derives from the run's recorded seed. Its size is what the reference
//! can afford: [`affordable`] items of a given cost within the [`budget`], all of them when they are cheap. Each
//! item's reference is plain single-threaded code; the items are independent, so the mini-apps compute them in
//! parallel and the budget grows with the threads.

use crate::rng;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::ops::Range;

/// Reference work one check may spend, in flops of the plain f64 reference code: about a second on one core of
/// the 2-core build machine (its scalar references run at 0.5 to 2 GFLOP/s), so the references stay a small part
/// of the quick suite and of each full-suite case.
pub const BUDGET_FLOPS: f64 = 1e9;

/// The reference work of one check on this machine: [`BUDGET_FLOPS`] per thread of the pool, for references
/// computed over the sampled items in parallel (about a second of wall time whatever the core count).
pub fn budget() -> f64 {
    BUDGET_FLOPS * rayon::current_num_threads() as f64
}

/// How many items a reference of `cost` flops per item affords within `budget`: at least the first and the last
/// (whatever they cost), at most all `total`.
pub fn affordable(total: usize, cost: f64, budget: f64) -> usize {
    let n = if cost > 0.0 { (budget / cost).floor() } else { f64::INFINITY };
    // NaN (a zero budget over a zero cost) affords the minimum
    let n = if n.is_nan() { 0 } else if n >= total as f64 { total } else { n as usize };
    n.max(2).min(total)
}

/// Consecutive chunks of `len` items covering `0..total` (the last one shorter): the ranges a fast code that works
/// in fixed-size pieces processes one at a time.
pub fn chunks(total: usize, len: usize) -> Vec<Range<usize>> {
    assert!(len > 0, "sample: chunks of no items");
    (0..total).step_by(len).map(|s| s..(s + len).min(total)).collect()
}

/// Distinct indices into `0..total`, ascending.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub items: Vec<usize>,
    pub total: usize,
}

impl Sample {
    /// Every item.
    pub fn all(total: usize) -> Sample {
        Sample { items: (0..total).collect(), total }
    }

    /// `count` items of `0..total` (all when `count >= total`): the first, the last (from a count of 2), one drawn
    /// in each of `chunks` that holds neither (more than `count` when there are many chunks: every chunk is
    /// covered), and the rest uniformly at random without repetition. The same arguments give the same sample.
    pub fn new(total: usize, count: usize, chunks: &[Range<usize>], seed: u64) -> Sample {
        if count >= total {
            return Sample::all(total);
        }
        let mut r = rng::rng(seed, 0x5A3B1E);
        let mut chosen = BTreeSet::new();
        chosen.extend([0, total - 1].into_iter().take(count));
        for c in chunks {
            let c = c.start.min(total)..c.end.min(total);
            if !c.is_empty() && chosen.range(c.clone()).next().is_none() {
                chosen.insert(rand::Rng::random_range(&mut r, c));
            }
        }
        // `count` distinct draws hold at least `count - chosen` new ones
        let extra = count.saturating_sub(chosen.len());
        if extra > 0 {
            let draws = rand::seq::index::sample(&mut r, total, count.min(total));
            let fresh: Vec<usize> = draws.into_iter().filter(|i| !chosen.contains(i)).take(extra).collect();
            chosen.extend(fresh);
        }
        Sample { items: chosen.into_iter().collect(), total }
    }

    /// [`Sample::new`] with `count` items, or as many as a reference of `cost` flops each affords within the
    /// [`budget`] when `count` is None (a user's --check-... flag overrides the budget).
    pub fn budgeted(total: usize, cost: f64, count: Option<usize>, chunks: &[Range<usize>], seed: u64) -> Sample {
        let count = count.unwrap_or_else(|| affordable(total, cost, budget()));
        Sample::new(total, count, chunks, seed)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `f` of every sampled item (its reference, say), in parallel, concatenated in sample order.
    pub fn par_flat_map<T: Send>(&self, f: impl Fn(usize) -> Vec<T> + Sync + Send) -> Vec<T> {
        self.items.par_iter().flat_map_iter(|&i| f(i)).collect()
    }

    /// The sampled items' blocks of an array laid out `[item][per]`, in sample order.
    pub fn gather<T: Copy>(&self, v: &[T], per: usize) -> Vec<T> {
        assert!(v.len() >= self.total * per, "sample: an array of {} entries holds fewer than {} items of {per}", v.len(), self.total);
        self.items.iter().flat_map(|&i| v[i * per..(i + 1) * per].iter().copied()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_first_last_and_count_distinct_sorted_items() {
        let s = Sample::new(1000, 10, &[], 7);
        assert_eq!(s.len(), 10);
        assert_eq!((s.items[0], *s.items.last().unwrap()), (0, 999));
        assert!(s.items.windows(2).all(|w| w[0] < w[1]));
        // reproducible from its seed; another seed draws another middle
        assert_eq!(s, Sample::new(1000, 10, &[], 7));
        assert_ne!(s, Sample::new(1000, 10, &[], 8));
        assert_eq!(Sample::new(5, 9, &[], 1).items, vec![0, 1, 2, 3, 4]);
        assert_eq!(Sample::new(5, 1, &[], 1).items, vec![0]);
        assert_eq!(Sample::new(5, 2, &[], 1).items, vec![0, 4]);
        assert!(Sample::new(0, 3, &[], 1).is_empty());
    }

    #[test]
    fn covers_every_chunk_even_beyond_the_count() {
        let ch = chunks(1000, 64);
        assert_eq!(ch.len(), 16);
        assert_eq!(ch[15], 960..1000);
        let s = Sample::new(1000, 4, &ch, 3);
        for c in &ch {
            assert!(s.items.iter().any(|i| c.contains(i)), "chunk {c:?} has no item in {:?}", s.items);
        }
        assert!(s.len() >= 16);
    }

    #[test]
    fn random_items_spread_over_the_middle() {
        // over many seeds, the middle items are drawn about uniformly: each decile gets its share
        let mut per_decile = [0usize; 10];
        for seed in 0..400 {
            for &i in &Sample::new(10_000, 12, &[], seed).items[1..11] {
                per_decile[i / 1000] += 1;
            }
        }
        // 4000 draws, 400 expected per decile, standard deviation 19
        assert!(per_decile.iter().all(|&c| (320..480).contains(&c)), "{per_decile:?}");
    }

    #[test]
    fn budget_sets_the_count() {
        assert_eq!(affordable(1000, 1e6, 1e9), 1000);
        assert_eq!(affordable(1000, 1e7, 1e9), 100);
        assert_eq!(affordable(1000, 1e12, 1e9), 2);
        assert_eq!(affordable(1, 1e12, 1e9), 1);
        assert_eq!(affordable(7, 0.0, 1e9), 7);
        let threads = rayon::current_num_threads();
        assert_eq!(Sample::budgeted(1000, 1e8, None, &[], 1).len(), (10 * threads).min(1000));
        assert_eq!(Sample::budgeted(1000, 1e8, Some(3), &[], 1).len(), 3);
    }

    #[test]
    fn gather_picks_blocks() {
        let s = Sample { items: vec![0, 2], total: 3 };
        assert_eq!(s.gather(&[1, 2, 3, 4, 5, 6], 2), vec![1, 2, 5, 6]);
        assert_eq!(Sample::all(300).par_flat_map(|i| vec![i, i]), (0..600).map(|i| i / 2).collect::<Vec<_>>());
    }
}
