// Slater-determinant kernels for a batch of walkers: ratio (with the delayed-update correction), Sherman-Morrison
// rank-1 update, delayed-update accept (Schur growth of B^-1), and the layout/determinant steps around cuBLAS's
// batched LU inversion.
// Layouts (all walkers in one allocation, column index fastest, so adjacent threads read adjacent entries):
//   a, t, prop: [walker][n][n]   (t = transposed inverse, prop row q = proposed row for electron q)
//   grad: [walker][3][n]; v, ut: [walker][kmax][n]; binv: [walker][kmax][kmax]; p: [walker][kmax]
// S: storage type, A: accumulation type (double, float, or float storage with double sums for "mixed").

// Sum of 4 values over the block (blockDim.x a multiple of 32, at most 1024); every thread gets the sums.
template <typename A> __device__ void block_sum4(A v[4], A* sh /* [4][32] */) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int c = 0; c < 4; c++) v[c] = warp_sum(v[c]);
    if (lane == 0)
        for (int c = 0; c < 4; c++) sh[c * 32 + warp] = v[c];
    __syncthreads();
    if (warp == 0) {
        for (int c = 0; c < 4; c++) {
            A x = lane < nw ? sh[c * 32 + lane] : A(0);
            x = warp_sum(x);
            if (lane == 0) sh[c * 32] = x;
        }
    }
    __syncthreads();
#pragma unroll
    for (int c = 0; c < 4; c++) v[c] = sh[c * 32];
}

// One block per walker. With m pending delayed moves: p = V t[q] and z = B^-1 p (delayed_z, common.cuh), column q
// of the current inverse c = t[q] - U^T z (delayed_entry); then ratio = u . c and gradient ratios = (grad . c) / ratio.
template <typename S, typename A>
__device__ void ratio(int n, int kmax, int q, const S* __restrict__ t, const S* __restrict__ prop,
                      const S* __restrict__ grad, const S* __restrict__ v, const S* __restrict__ ut,
                      const S* __restrict__ binv, const int* __restrict__ count, A* __restrict__ p,
                      A* __restrict__ ratio_out, A* __restrict__ grad_out) {
    __shared__ A sp[64], sz[64], sh[4 * 32];
    const int w = blockIdx.x;
    const size_t nn = (size_t)n * n;
    const S* tq = t + w * nn + (size_t)q * n;
    const S* u = prop + w * nn + (size_t)q * n;
    const S* g = grad + (size_t)w * 3 * n;
    const S* uw = ut + (size_t)w * kmax * n;
    const int m = count[w];
    delayed_z<S, S, A>(m, n, q, tq, v + (size_t)w * kmax * n, uw, n, binv + (size_t)w * kmax * kmax, kmax, (const int*)0,
                    p + (size_t)w * kmax, sp, sz);
    A acc[4] = {A(0), A(0), A(0), A(0)};
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const A c = delayed_entry<S, S, A>(i, m, tq, uw, n, sz);
        acc[0] += A(u[i]) * c;
        acc[1] += A(g[i]) * c;
        acc[2] += A(g[n + i]) * c;
        acc[3] += A(g[2 * n + i]) * c;
    }
    block_sum4(acc, sh);
    if (threadIdx.x == 0) {
        ratio_out[w] = acc[0];
        for (int d = 0; d < 3; d++) grad_out[3 * w + d] = acc[d + 1] / acc[0];
    }
}

// Sherman-Morrison, step 1: wv[j] = t[j] . u for every row j (one warp per row); the warp of row q also saves
// c = t[q] (read by step 2 while row q is rewritten) and sets A's row q to u. Grid (ceil(n/8), walkers), 256 threads.
template <typename S, typename A>
__device__ void gemv(int n, int q, int step, int walkers, const S* __restrict__ t, const S* __restrict__ prop,
                     const int* __restrict__ flags, S* __restrict__ a, A* __restrict__ wv, S* __restrict__ c) {
    const int w = blockIdx.y;
    if (!flags[(size_t)step * walkers + w]) return;
    const int lane = threadIdx.x & 31;
    const int j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (j >= n) return;
    const size_t nn = (size_t)n * n;
    const S* row = t + w * nn + (size_t)j * n;
    const S* u = prop + w * nn + (size_t)q * n;
    A s = A(0);
    for (int i = lane; i < n; i += 32) s += A(row[i]) * A(u[i]);
    s = warp_sum(s);
    if (lane == 0) wv[(size_t)w * n + j] = s;
    if (j == q) {
        for (int i = lane; i < n; i += 32) {
            c[(size_t)w * n + i] = row[i];
            a[w * nn + (size_t)q * n + i] = u[i];
        }
    }
}

// Sherman-Morrison, step 2: t[j][i] -= ((wv[j] - delta_jq) / wv[q]) c[i]. Grid (ceil(n/256), n, walkers).
template <typename S, typename A>
__device__ void rank1(int n, int q, int step, int walkers, S* __restrict__ t, const int* __restrict__ flags,
                      const A* __restrict__ wv, const S* __restrict__ c) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y, w = blockIdx.z;
    if (i >= n || !flags[(size_t)step * walkers + w]) return;
    const A* ww = wv + (size_t)w * n;
    A coef = ww[j];
    if (j == q) coef -= A(1);
    coef /= ww[q];
    t[(size_t)w * n * n + (size_t)j * n + i] -= S(coef) * c[(size_t)w * n + i];
}

// The row change of an accept, u - a[q], rounded to S.
template <typename S> struct RowChange {
    const S* u;
    const S* aq;
    __device__ S operator()(int i) const { return S(u[i] - aq[i]); }
};

// Delayed update, accept: the row change v = u - a[q] into slot count[w] (delayed_grow, common.cuh: B^-1 grows by
// its Schur complement, V and U^T gain v and t[q]); A's row q becomes u. One block per walker (p is from the ratio
// of this step).
template <typename S, typename A>
__device__ void delay_accept(int n, int kmax, int q, int step, int walkers, const S* __restrict__ t,
                             const S* __restrict__ prop, const int* __restrict__ flags, S* __restrict__ a,
                             S* __restrict__ v, S* __restrict__ ut, S* __restrict__ binv, int* __restrict__ count,
                             const A* __restrict__ p) {
    const int w = blockIdx.x;
    if (!flags[(size_t)step * walkers + w]) return;
    const int m = count[w];
    const size_t nn = (size_t)n * n;
    const S* u = prop + w * nn + (size_t)q * n;
    S* aq = a + w * nn + (size_t)q * n;
    const RowChange<S> change{u, aq};
    delayed_grow<S, S, A>(change, n, m, kmax, -1, t + w * nn + (size_t)q * n, v + (size_t)w * kmax * n, ut + (size_t)w * kmax * n, n,
                       binv + (size_t)w * kmax * kmax, (int*)0, p + (size_t)w * kmax);
    // each thread rewrites the entries of a[q] it alone read last (delayed_grow's final loop)
    for (int i = threadIdx.x; i < n; i += blockDim.x) aq[i] = u[i];
    if (threadIdx.x == 0) count[w] = m + 1;
}

// Inversion, step 0: work = R(a)^T row-major (32 x 32 tiles through shared memory), which is A itself to
// column-major cuBLAS; its column-major inverse Ainv is then, row-major, t = Ainv^T: the stored layout.
// Grid (ceil(n/32), ceil(n/32), walkers), block (32, 8).
template <typename S, typename R>
__device__ void to_work(int n, const S* __restrict__ a, R* __restrict__ work) {
    __shared__ R tile[32][33];
    const size_t off = (size_t)blockIdx.z * n * n;
    const int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int r = by + k, c = bx + threadIdx.x;
        if (r < n && c < n) tile[k][threadIdx.x] = R(a[off + (size_t)r * n + c]);
    }
    __syncthreads();
    for (int k = threadIdx.y; k < 32; k += 8) {
        const int r = bx + k, c = by + threadIdx.x;
        if (r < n && c < n) work[off + (size_t)r * n + c] = tile[threadIdx.x][k];
    }
}

// After cuBLAS getrfBatched (column-major LU of work, in place; 1-based pivots piv): log|det| = sum log|U_jj|, the
// sign from the negative pivots and the row interchanges, and singular[w] = 1 + the first column whose pivot is not
// above tol (or not finite), or getrf's info (the first exact zero pivot). One block per walker.
template <typename R>
__device__ void lu_logdet(int n, double tol, const R* __restrict__ lu, const int* __restrict__ piv,
                          const int* __restrict__ info, double* __restrict__ logdet, int* __restrict__ neg,
                          int* __restrict__ singular) {
    __shared__ double sh[4 * 32];
    __shared__ int bad;
    const int w = blockIdx.x;
    if (threadIdx.x == 0) bad = info[w] > 0 ? info[w] : n + 1;
    __syncthreads();
    const R* m = lu + (size_t)w * n * n;
    double acc[4] = {0.0, 0.0, 0.0, 0.0};
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
        const double d = double(m[(size_t)j * n + j]);
        if (!(fabs(d) > tol) || !isfinite(d)) atomicMin(&bad, j + 1);
        acc[0] += log(fabs(d));
        acc[1] += double((d < 0.0) + (piv[(size_t)w * n + j] != j + 1));
    }
    block_sum4(acc, sh);  // its barriers also order the atomicMin before the read below
    if (threadIdx.x == 0) {
        logdet[w] = acc[0];
        neg[w] = int(acc[1]);
        singular[w] = bad <= n ? bad : 0;
    }
}

template <typename R, typename S>
__device__ void from_work(u64 total, const R* __restrict__ work, S* __restrict__ t) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x)
        t[i] = S(work[i]);
}

#define DET_UPDATE_ENTRIES(SUF, S, A)                                                                          \
    extern "C" __global__ void det_ratio_##SUF(int n, int kmax, int q, const S* t, const S* prop, const S* grad, \
        const S* v, const S* ut, const S* binv, const int* count, A* p, A* r, A* g) {                          \
        ratio<S, A>(n, kmax, q, t, prop, grad, v, ut, binv, count, p, r, g);                                   \
    }                                                                                                          \
    extern "C" __global__ void det_gemv_##SUF(int n, int q, int step, int walkers, const S* t, const S* prop,   \
        const int* flags, S* a, A* wv, S* c) {                                                                 \
        gemv<S, A>(n, q, step, walkers, t, prop, flags, a, wv, c);                                             \
    }                                                                                                          \
    extern "C" __global__ void det_rank1_##SUF(int n, int q, int step, int walkers, S* t, const int* flags,     \
        const A* wv, const S* c) {                                                                             \
        rank1<S, A>(n, q, step, walkers, t, flags, wv, c);                                                     \
    }                                                                                                          \
    extern "C" __global__ void det_accept_##SUF(int n, int kmax, int q, int step, int walkers, const S* t,      \
        const S* prop, const int* flags, S* a, S* v, S* ut, S* binv, int* count, const A* p) {                 \
        delay_accept<S, A>(n, kmax, q, step, walkers, t, prop, flags, a, v, ut, binv, count, p);               \
    }                                                                                                          \
    extern "C" __global__ void det_to_work_##SUF(int n, const S* a, A* work) { to_work<S, A>(n, a, work); }    \
    extern "C" __global__ void det_from_work_##SUF(u64 total, const A* work, S* t) {                            \
        from_work<A, S>(total, work, t);                                                                       \
    }

// The right-hand side of the per-matrix solve: `walkers` n x n identities. Grid-stride loop.
template <typename R>
__device__ void identity(int n, u64 total, R* __restrict__ out) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
        const u64 e = i % ((u64)n * n);
        out[i] = R(e / n == e % n ? 1 : 0);
    }
}

#define DET_INVERT_ENTRIES(SUF, R)                                                                             \
    extern "C" __global__ void det_identity_##SUF(int n, u64 total, R* out) { identity<R>(n, total, out); }     \
    extern "C" __global__ void det_lu_logdet_##SUF(int n, double tol, const R* lu, const int* piv,             \
        const int* info, double* logdet, int* neg, int* singular) {                                            \
        lu_logdet<R>(n, tol, lu, piv, info, logdet, neg, singular);                                            \
    }

DET_UPDATE_ENTRIES(f64, double, double)
DET_UPDATE_ENTRIES(f32, float, float)
DET_UPDATE_ENTRIES(mixed, float, double)
DET_INVERT_ENTRIES(f64, double)
DET_INVERT_ENTRIES(f32, float)
