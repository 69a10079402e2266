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
// consecutive functions, so the output row (basis index fastest) is written coalesced. Each function is the
// prelude's atomic_function_vgl (kernels::basis::vgl on the host: one evaluation for this kernel and the atomic
// orbitals), reading kernels::basis::pack's records [function][BASIS_RECORD] and its primitives [primitive][exponent,
// coefficient], these in the arithmetic type (rounded once on the host: gpu.rs GpuBasis::new).

struct BasisParams {
    int functions;  // basis functions (row length of the output)
    int rows;       // walkers x electrons
};

// T: arithmetic, O: stored output.
template <typename T, typename O>
__device__ void basis_eval(const BasisParams p,
                           const double* __restrict__ tab,  // kernels::basis::pack's records
                           const T* __restrict__ prims,     // and its primitives, in T
                           const double* __restrict__ pos,  // [row][xyz]
                           O* __restrict__ out)             // [row][5][functions]
{
    const int j = blockIdx.y * blockDim.x + threadIdx.x;
    const long row = blockIdx.x;
    if (j >= p.functions || row >= p.rows) return;
    const double r[3] = {pos[3 * row], pos[3 * row + 1], pos[3 * row + 2]};
    T chi[5];
    atomic_function_vgl<T, T>(tab + BASIS_RECORD * (long)j, prims, r, chi);
    O* dst = out + row * 5 * (long)p.functions + j;
    for (int k = 0; k < 5; k++) dst[k * (long)p.functions] = O(chi[k]);
}

#define BASIS_ENTRY(NAME, T, O)                                                                                \
    extern "C" __global__ void NAME(const BasisParams p, const double* __restrict__ tab,                       \
                                    const T* __restrict__ prims, const double* __restrict__ pos,               \
                                    O* __restrict__ out) {                                                      \
        basis_eval<T, O>(p, tab, prims, pos, out);                                                              \
    }

BASIS_ENTRY(basis_f64, double, double)
BASIS_ENTRY(basis_f32, float, float)
BASIS_ENTRY(basis_mixed, double, float)
