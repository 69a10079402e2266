// Orbitals of a Gaussian basis (paper 004): basis-function values, gradients and Laplacians, then the product of
// that stacked matrix with the shared coefficients, in naive single, Kahan-compensated single (Algorithm 2), double
// and mixed precision. All matrices row-major: C (m x n) = A (m x k) B (k x n).
//
// The module is compiled with -fmad=true like every kernel. The Kahan steps therefore use the round-to-nearest
// intrinsics __fmul_rn/__fadd_rn/__fsub_rn, which the compiler never contracts into an FMA nor reassociates: each
// step is rounded exactly as Algorithm 2 writes it. The naive kernel keeps `s += a * b`, which the compiler fuses
// into an FMA, as any modern naive GEMM is.

// ---------------------------------------------------------------------------------------------------------------
// GEMM: one 64 x 64 tile of C per block of 256 threads, each thread a 4 x 4 block of entries strided by 16 (so a
// warp reads consecutive B entries from shared memory and writes consecutive C entries), k in slices of 16.
#define BM 64
#define BN 64
#define BK 16
#define TPB 256

enum Mode { PLAIN = 0, KAHAN = 1 };

// One product accumulated into s (with compensation c for Kahan).
template <typename T, typename A, int MODE> struct Step;

template <typename T, typename A> struct Step<T, A, PLAIN> {
    static __device__ __forceinline__ void add(A& s, A&, T a, T b) { s += A(a) * A(b); }
};

// Algorithm 2 of the paper, one Kahan step: Y = a*b - C; T = S + Y; C = (T - S) - Y; S = T.
template <> struct Step<float, float, KAHAN> {
    static __device__ __forceinline__ void add(float& s, float& c, float a, float b) {
        const float y = __fsub_rn(__fmul_rn(a, b), c);
        const float t = __fadd_rn(s, y);
        c = __fsub_rn(__fsub_rn(t, s), y);
        s = t;
    }
};

template <typename T, typename A, int MODE>
__device__ void gemm_tiled(int m, int n, int k, const T* __restrict__ a, const T* __restrict__ b,
                           A* __restrict__ c) {
    __shared__ T as[BM][BK + 1]; // +1: the 16 rows a warp stores fall in distinct banks
    __shared__ T bs[BK][BN];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const long row0 = (long)blockIdx.x * BM, col0 = (long)blockIdx.y * BN;
    A s[4][4], comp[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) s[i][j] = comp[i][j] = A(0);

    for (int k0 = 0; k0 < k; k0 += BK) {
        // Stage the A tile (BM x BK) and the B tile (BK x BN); entries outside the matrices are zero.
        for (int i = threadIdx.x; i < BM * BK; i += TPB) {
            const int r = i / BK, q = i % BK;
            const long gr = row0 + r;
            const int gk = k0 + q;
            as[r][q] = (gr < m && gk < k) ? a[gr * k + gk] : T(0);
        }
        for (int i = threadIdx.x; i < BK * BN; i += TPB) {
            const int q = i / BN, col = i % BN;
            const int gk = k0 + q;
            const long gc = col0 + col;
            bs[q][col] = (gk < k && gc < n) ? b[(long)gk * n + gc] : T(0);
        }
        __syncthreads();
        // Only the real k entries are summed, so a padded slice never feeds a Kahan step (which would apply the
        // pending compensation early and make results depend on the tiling). Full slices unroll completely.
        const int kmax = min(BK, k - k0);
#pragma unroll BK
        for (int q = 0; q < kmax; q++)
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    Step<T, A, MODE>::add(s[i][j], comp[i][j], as[ty + 16 * i][q], bs[q][tx + 16 * j]);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const long r = row0 + ty + 16 * i;
        if (r >= m) continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const long col = col0 + tx + 16 * j;
            if (col < n) c[r * n + col] = s[i][j];
        }
    }
}

#define GEMM_ENTRY(NAME, T, A, MODE)                                                                             \
    extern "C" __global__ void __launch_bounds__(TPB) NAME(int m, int n, int k, const T* __restrict__ a,          \
                                                           const T* __restrict__ b, A* __restrict__ c) {        \
        gemm_tiled<T, A, MODE>(m, n, k, a, b, c);                                                                \
    }

GEMM_ENTRY(gemm_naive_f32, float, float, PLAIN)
GEMM_ENTRY(gemm_kahan_f32, float, float, KAHAN)
GEMM_ENTRY(gemm_f64, double, double, PLAIN)
GEMM_ENTRY(gemm_mixed, float, double, PLAIN)

// ---------------------------------------------------------------------------------------------------------------
// Contracted Cartesian Gaussians: one thread per (basis function, electron row); threads of a block take
// consecutive functions, so the output row (basis index fastest) is written coalesced.
//
// With P = x^k y^l z^m and the three contracted sums S_q = sum_n a_n b_n^q exp(-b_n r^2):
//   value = P S0,   d/dx = k x^(k-1) y^l z^m S0 - 2 x P S1,
//   Laplacian = (k(k-1) x^(k-2) y^l z^m + ...) S0 - 2 (2L + 3) P S1 + 4 r^2 P S2.

struct BasisParams {
    int functions;  // basis functions (row length of the output)
    int rows;       // walkers x electrons
};

// T: arithmetic, O: stored output.
template <typename T, typename O>
__device__ void basis_eval(const BasisParams p,
                           const double* __restrict__ centers,  // [center][xyz]
                           const int* __restrict__ fn,          // [function][center, k, l, m, first primitive, end]
                           const T* __restrict__ exps,          // [primitive]
                           const T* __restrict__ coefs,         // [primitive]
                           const double* __restrict__ pos,      // [row][xyz]
                           O* __restrict__ out)                 // [row][5][functions]
{
    const int j = blockIdx.y * blockDim.x + threadIdx.x;
    const long row = blockIdx.x;
    if (j >= p.functions || row >= p.rows) return;
    const int* f = fn + 6 * j;
    const int ctr = f[0], kx = f[1], ky = f[2], kz = f[3];
    // The displacement is taken in double (positions are double in every mode), then rounded once.
    const T x = T(pos[3 * row] - centers[3 * ctr]);
    const T y = T(pos[3 * row + 1] - centers[3 * ctr + 1]);
    const T z = T(pos[3 * row + 2] - centers[3 * ctr + 2]);
    const T r2 = x * x + y * y + z * z;
    T s0 = T(0), s1 = T(0), s2 = T(0);
    for (int q = f[4]; q < f[5]; q++) {
        const T b = exps[q];
        const T g = coefs[q] * qmc_exp<T>(-b * r2);
        s0 += g;
        s1 += b * g;
        s2 += b * b * g;
    }
    const T px = qmc_ipow(x, kx), py = qmc_ipow(y, ky), pz = qmc_ipow(z, kz);
    const T P = px * py * pz;
    const T dx = T(kx) * qmc_ipow(x, kx - 1), dy = T(ky) * qmc_ipow(y, ky - 1), dz = T(kz) * qmc_ipow(z, kz - 1);
    const T d2 = T(kx * (kx - 1)) * qmc_ipow(x, kx - 2) * py * pz + T(ky * (ky - 1)) * px * qmc_ipow(y, ky - 2) * pz +
                 T(kz * (kz - 1)) * px * py * qmc_ipow(z, kz - 2);
    const int L = kx + ky + kz;
    O* dst = out + row * 5 * (long)p.functions + j;
    const long st = p.functions;
    dst[0] = O(P * s0);
    dst[st] = O(dx * py * pz * s0 - T(2) * x * P * s1);
    dst[2 * st] = O(px * dy * pz * s0 - T(2) * y * P * s1);
    dst[3 * st] = O(px * py * dz * s0 - T(2) * z * P * s1);
    dst[4 * st] = O(d2 * s0 - T(2 * (2 * L + 3)) * P * s1 + T(4) * r2 * P * s2);
}

#define BASIS_ENTRY(NAME, T, O)                                                                                \
    extern "C" __global__ void NAME(const BasisParams p, const double* __restrict__ centers,                    \
                                    const int* __restrict__ fn, const T* __restrict__ exps,                     \
                                    const T* __restrict__ coefs, const double* __restrict__ pos,                \
                                    O* __restrict__ out) {                                                      \
        basis_eval<T, O>(p, centers, fn, exps, coefs, pos, out);                                                \
    }

BASIS_ENTRY(basis_f64, double, double)
BASIS_ENTRY(basis_f32, float, float)
BASIS_ENTRY(basis_mixed, double, float)
