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

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_copy_bandwidth_is_plausible() {
        let bw = super::cpu_copy_bandwidth(64 << 20);
        // between 100 MB/s and 10 TB/s on any machine that runs the tests
        assert!(bw > 1e8 && bw < 1e13, "{bw}");
    }
}
