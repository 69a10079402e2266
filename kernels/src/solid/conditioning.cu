// 1-norms of the Slater matrices and their inverses at an f64 re-inversion (solid::conditioning): the condition
// number ||A||_1 ||A^-1||_1 that decides how often a mixed-precision walker is re-inverted; with a shift, the
// residual ||I - A X||_1 of the Newton-Schulz refinement (solid/gpu.rs reinvert) from its 2 I - A X.

// 1-norm (largest column sum of |x - shift I|) of each of `count` packed column-major n x n f64 matrices (m holds
// count n^2 entries): out[b] for matrix b; one block per matrix, one warp per column at a time (a column is
// contiguous).
// The larger of a and b, NaN if either is (fmax would drop a NaN column and pass a broken matrix as well-conditioned).
__device__ __forceinline__ double max_nan(double a, double b) { return a != a || b != b ? a + b : fmax(a, b); }

extern "C" __global__ void solid_norm1(int n, int count, double shift, const double* __restrict__ m, double* __restrict__ out) {
    __shared__ double best_of[32];
    const int b = blockIdx.x;
    if (b >= count) return;
    const double* x = m + (size_t)b * n * n;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    double best = 0.0;
    for (int j = warp; j < n; j += warps) {
        double s = 0.0;
        for (int i = lane; i < n; i += 32) s += fabs(x[(size_t)j * n + i] - (i == j ? shift : 0.0));
        best = max_nan(best, warp_sum(s));
    }
    if (lane == 0) best_of[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) {
        double r = 0.0;
        for (int k = 0; k < warps; k++) r = max_nan(r, best_of[k]);
        out[b] = r;
    }
}
