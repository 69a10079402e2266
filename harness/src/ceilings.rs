//! Bandwidth ceilings measured in the same process as the kernels, so each bandwidth-bound kernel can print the
//! fraction of what this machine can actually move (DESIGN.md: every record measures its own ceilings).

use rayon::prelude::*;
use std::time::Instant;

/// CPU copy bandwidth in bytes/s (bytes read plus bytes written) on all threads of the pool: median of several
/// parallel copies of a buffer far larger than the caches.
pub fn cpu_copy_bandwidth(bytes: usize) -> f64 {
    let n = bytes / 8;
    let src: Vec<f64> = (0..n).into_par_iter().map(|i| i as f64).collect();
    let mut dst = vec![0.0f64; n];
    let chunk = (n / (4 * rayon::current_num_threads())).max(1 << 14);
    let mut copy = || {
        let t = Instant::now();
        dst.par_chunks_mut(chunk).zip(src.par_chunks(chunk)).for_each(|(d, s)| d.copy_from_slice(s));
        t.elapsed().as_secs_f64()
    };
    copy(); // first touch of dst
    let mut times: Vec<f64> = (0..7).map(|_| copy()).collect();
    times.sort_by(|a, b| a.total_cmp(b));
    std::hint::black_box(&dst);
    2.0 * (n * 8) as f64 / times[times.len() / 2]
}

/// CPU arithmetic ceiling in flop/s (an FMA is 2) on all threads of the pool, in f64 (`double`) or f32: per thread
/// 64 independent FMA chains (enough to fill every FMA pipe of an AVX-512 core), compiled for the best vector ISA
/// ([`kernels::dispatch!`]), median of several runs.
pub fn cpu_fma_rate(double: bool) -> f64 {
    #[inline(always)]
    fn chains<T: kernels::Real>(rounds: usize, seed: f64) -> f64 {
        let (a, b) = (T::of(0.999_999), T::of(1e-7));
        let mut x: [T; 64] = std::array::from_fn(|k| T::of(seed + k as f64 * 1e-3));
        for _ in 0..rounds {
            for v in x.iter_mut() {
                *v = v.mul_add(a, b);
            }
        }
        x.iter().map(|v| v.f64()).sum()
    }
    let threads = rayon::current_num_threads();
    let rounds = 1 << 18;
    let run = || {
        let t = Instant::now();
        let s: f64 = (0..threads)
            .into_par_iter()
            .map(|i| if double { kernels::dispatch!(chains::<f64>(rounds, i as f64)) } else { kernels::dispatch!(chains::<f32>(rounds, i as f64)) })
            .sum();
        std::hint::black_box(s);
        t.elapsed().as_secs_f64()
    };
    run();
    let mut times: Vec<f64> = (0..5).map(|_| run()).collect();
    times.sort_by(|a, b| a.total_cmp(b));
    2.0 * 64.0 * rounds as f64 * threads as f64 / times[times.len() / 2]
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_copy_bandwidth_is_plausible() {
        let bw = super::cpu_copy_bandwidth(64 << 20);
        // between 100 MB/s and 10 TB/s on any machine that runs the tests
        assert!(bw > 1e8 && bw < 1e13, "{bw}");
    }

    #[test]
    fn cpu_fma_rate_is_plausible() {
        let (d, s) = (super::cpu_fma_rate(true), super::cpu_fma_rate(false));
        // between 100 Mflop/s and 100 Tflop/s on any machine that runs the tests
        assert!(d > 1e8 && d < 1e14, "{d}");
        assert!(s > 1e8 && s < 2e14, "{s}");
    }
}
