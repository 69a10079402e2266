// 1-norms of the Slater matrices and their inverses at an f64 re-inversion (solid::conditioning): the condition
// number ||A||_1 ||A^-1||_1 that decides how often a mixed-precision walker is re-inverted.

// 1-norm (largest column sum of |x|) of both spins' column-major n x n f64 matrices of each of the `count` walkers
// in `list` (m holds [walker][spin][n][n]): out[2 k + s] for spin s of walker list[k]; one block per matrix, one
// warp per column at a time (a column is contiguous).
extern "C" __global__ void solid_norm1(int n, const int* __restrict__ list, int count, const double* __restrict__ m, double* __restrict__ out) {
    __shared__ double best_of[32];
    const int b = blockIdx.x;
    if (b >= 2 * count) return;
    const double* x = m + (2 * (size_t)list[b / 2] + b % 2) * n * n;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    double best = 0.0;
    for (int j = warp; j < n; j += warps) {
        double s = 0.0;
        for (int i = lane; i < n; i += 32) s += fabs(x[(size_t)j * n + i]);
        best = fmax(best, warp_sum(s));
    }
    if (lane == 0) best_of[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
        double r = 0.0;
        for (int k = 0; k < warps; k++) r = fmax(r, best_of[k]);
        out[b] = r;
    }
}
