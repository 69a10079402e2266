//! Seeded random numbers. Every input of every kernel is drawn from a stream named by a seed and a purpose, so a
//! run is reproducible from its recorded seed and large inputs can be filled in parallel chunk by chunk.

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

/// The generator every kernel uses.
pub type Rng64 = Xoshiro256PlusPlus;

/// A generator for (seed, stream): distinct streams give independent sequences.
pub fn rng(seed: u64, stream: u64) -> Rng64 {
    // splitmix-style mixing so that nearby (seed, stream) pairs do not give correlated states
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    Rng64::seed_from_u64(z ^ (z >> 31))
}

/// The random stream of walker k at step s (purpose `tag`), independent of how walkers are spread over threads or
/// ranks: the per-walker streams every driver draws its moves, branching and start positions from.
pub fn stream(seed: u64, tag: u64, step: usize, k: usize) -> Rng64 {
    rng(seed ^ tag.wrapping_mul(0xA24B_AED4_963E_E407), ((step as u64) << 24) ^ k as u64)
}

/// Three independent standard normal numbers (Box-Muller).
pub fn gaussian3(rng: &mut Rng64) -> [f64; 3] {
    let mut pair = || {
        let u1: f64 = 1.0 - rng.random::<f64>(); // in (0, 1]: ln is finite
        let u2: f64 = rng.random::<f64>();
        let r = (-2.0 * u1.ln()).sqrt();
        let t = std::f64::consts::TAU * u2;
        (r * t.cos(), r * t.sin())
    };
    let (a, b) = pair();
    let (c, _) = pair();
    [a, b, c]
}

/// Fill `out` with uniform numbers in [lo, hi), in parallel, deterministically for a given seed.
pub fn fill_uniform<T: Send>(out: &mut [T], seed: u64, lo: f64, hi: f64, conv: impl Fn(f64) -> T + Sync) {
    const CHUNK: usize = 1 << 16;
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, chunk)| {
        let mut r = rng(seed, i as u64 + 1);
        for x in chunk {
            *x = conv(r.random_range(lo..hi));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_is_reproducible_and_in_range() {
        let mut a = vec![0.0f64; 200_000];
        let mut b = vec![0.0f64; 200_000];
        fill_uniform(&mut a, 7, -1.0, 1.0, |x| x);
        fill_uniform(&mut b, 7, -1.0, 1.0, |x| x);
        assert_eq!(a, b);
        assert!(a.iter().all(|x| (-1.0..1.0).contains(x)));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        fill_uniform(&mut b, 8, -1.0, 1.0, |x| x);
        assert_ne!(a, b);
    }
}
