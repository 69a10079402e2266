// Jastrow factors for a batch of walkers: two-body radial functors (B-spline, CASINO u, Padé) or CASINO's p term,
// plus the one-body term. T: positions and pair evaluation; A: sums over pairs and stored quantities.
// Layouts (electron index fastest, so neighbouring threads read neighbouring words):
//   pos [walker][xyz][electron], state [walker][6][electron] (U2, U1, grad xyz, lap), ions [xyz][ion],
//   newpos [move][walker][xyz], ratio [move][walker][4] (log ratio, new gradient).
// vgl: one thread per (electron, walker), the other electrons streamed through shared-memory tiles.
// ratio, accept: one block per walker, threads stride over the other electrons, block reduction for electron k.
// p term: each thread keeps its powers of exp(i b d_k) (paper 003 Eq. 8) in shared memory, indexed by the G vector's
// integer coordinates (a per-thread array indexed at run time would live in local memory, the paper's first pitfall).

#define JBLOCK 128
#define MAXC 34   // radial parameters: cutoff, 1/h, then up to 32 coefficients
#define MAXG 128  // G vectors of the p term
#define MAXP 4    // largest |n_k|

struct RadialP {
    int form;   // RADIAL_BSPLINE, RADIAL_CASINO, RADIAL_PADE (kernels::maths::Form)
    int power;  // C of CASINO, numerator terms of Padé
    int ncoef;
    int pad;
    double d[MAXC];
    float f[MAXC];
};

struct JParams {
    int n, up, ions, periodic;
    int ng, nmax, pad0, pad1;
    double cd[4];  // side, 1/side, b = 2 pi / side
    float cf[4];
    RadialP rad[3];  // same spin, opposite spin, electron-ion
    double a[MAXG];
    float af[MAXG];
    signed char gn[MAXG][4];
};

template <typename T> __device__ __forceinline__ const T* rcoef(const RadialP* r);
template <> __device__ __forceinline__ const double* rcoef<double>(const RadialP* r) { return r->d; }
template <> __device__ __forceinline__ const float* rcoef<float>(const RadialP* r) { return r->f; }
template <typename T> __device__ __forceinline__ const T* cellc(const JParams* p);
template <> __device__ __forceinline__ const double* cellc<double>(const JParams* p) { return p->cd; }
template <> __device__ __forceinline__ const float* cellc<float>(const JParams* p) { return p->cf; }
template <typename T> __device__ __forceinline__ const T* pcoef(const JParams* p);
template <> __device__ __forceinline__ const double* pcoef<double>(const JParams* p) { return p->a; }
template <> __device__ __forceinline__ const float* pcoef<float>(const JParams* p) { return p->af; }

template <typename T> __device__ __forceinline__ T wrap(const JParams* P, T d) {
    if (!P->periodic) return d;
    const T* c = cellc<T>(P);
    return d - c[0] * qmc_rint(d * c[1]);
}

// A RadialP as common.cuh's radial_functor reads it: the parameters in T, cutoff, 1/h, then the coefficients.
template <typename T> struct RadialView {
    static __device__ __forceinline__ int form(const RadialP& R, int) { return R.form; }
    static __device__ __forceinline__ int power(const RadialP& R, int) { return R.power; }
    static __device__ __forceinline__ int ncoef(const RadialP& R, int) { return R.ncoef; }
    static __device__ __forceinline__ T cutoff(const RadialP& R, int) { return rcoef<T>(&R)[0]; }
    static __device__ __forceinline__ T inv_h(const RadialP& R, int) { return rcoef<T>(&R)[1]; }
    static __device__ __forceinline__ T coef(const RadialP& R, int, int k) { return (rcoef<T>(&R) + 2)[k]; }
};

template <typename T> __device__ __forceinline__ void radial(const RadialP* R, T r, T& u, T& du, T& d2u) {
    radial_functor<RadialView<T>>(*R, 0, r, u, du, d2u);
}

// value, gradient, Laplacian of a radial functor of |d|
template <typename T>
__device__ __forceinline__ void radial_vgl(const RadialP* R, T dx, T dy, T dz, T& v, T& gx, T& gy, T& gz, T& l) {
    const T r = qmc_sqrt(dx * dx + dy * dy + dz * dz);
    T du, d2u;
    radial(R, r, v, du, d2u);
    const T dr = du / r;
    gx = dx * dr;
    gy = dy * dr;
    gz = dz * dr;
    l = d2u + T(2) * dr;
}

// p term at displacement d; pw points at this thread's slot of the power tables, entries JBLOCK apart
template <typename T>
__device__ __forceinline__ void p_pair(const JParams* P, T dx, T dy, T dz, T* pw, T& v, T& gx, T& gy, T& gz, T& l) {
    const T b = cellc<T>(P)[2];
    const T d[3] = {dx, dy, dz};
    const int nmax = P->nmax;
#pragma unroll
    for (int k = 0; k < 3; k++) {
        T s, c;
        qmc_sincos(b * d[k], &s, &c);
        T x = T(1), y = T(0);
        T* row = pw + k * (MAXP + 1) * 2 * JBLOCK;
        row[0] = x;
        row[JBLOCK] = y;
        for (int m = 1; m <= nmax; m++) {
            const T xn = x * c - y * s;
            y = x * s + y * c;
            x = xn;
            row[2 * m * JBLOCK] = x;
            row[(2 * m + 1) * JBLOCK] = y;
        }
    }
    const T* a = pcoef<T>(P);
    T sv = T(0), sx = T(0), sy = T(0), sz = T(0), sl = T(0);
    const int ng = P->ng;
    for (int g = 0; g < ng; g++) {
        const char4 n = *reinterpret_cast<const char4*>(P->gn[g]);
        T re, im;
        {
            const int m0 = n.x < 0 ? -n.x : n.x, m1 = n.y < 0 ? -n.y : n.y, m2 = n.z < 0 ? -n.z : n.z;
            const T x1 = pw[2 * m0 * JBLOCK], y1 = n.x < 0 ? -pw[(2 * m0 + 1) * JBLOCK] : pw[(2 * m0 + 1) * JBLOCK];
            const T* r1 = pw + (MAXP + 1) * 2 * JBLOCK;
            const T x2 = r1[2 * m1 * JBLOCK], y2 = n.y < 0 ? -r1[(2 * m1 + 1) * JBLOCK] : r1[(2 * m1 + 1) * JBLOCK];
            const T* r2 = pw + 2 * (MAXP + 1) * 2 * JBLOCK;
            const T x3 = r2[2 * m2 * JBLOCK], y3 = n.z < 0 ? -r2[(2 * m2 + 1) * JBLOCK] : r2[(2 * m2 + 1) * JBLOCK];
            const T x12 = x1 * x2 - y1 * y2, y12 = x1 * y2 + y1 * x2;
            re = x12 * x3 - y12 * y3;
            im = x12 * y3 + y12 * x3;
        }
        const T ag = a[g];
        const T nn = T(n.x * n.x + n.y * n.y + n.z * n.z);
        sv += ag * re;
        sl -= ag * nn * re;
        const T ai = ag * im;
        sx -= ai * T(n.x);
        sy -= ai * T(n.y);
        sz -= ai * T(n.z);
    }
    v = sv;
    gx = sx * b;
    gy = sy * b;
    gz = sz * b;
    l = sl * b * b;
}

template <typename T, bool PT>
__device__ __forceinline__ void pair(const JParams* P, bool same, T dx, T dy, T dz, T* pw, T& v, T& gx, T& gy, T& gz, T& l) {
    dx = wrap(P, dx);
    dy = wrap(P, dy);
    dz = wrap(P, dz);
    if (PT) p_pair(P, dx, dy, dz, pw, v, gx, gy, gz, l);
    else radial_vgl(&P->rad[same ? 0 : 1], dx, dy, dz, v, gx, gy, gz, l);
}

// sums over ions of the one-body term at (x, y, z), ions strided over the block's threads
template <typename T, typename A>
__device__ __forceinline__ void ions_sum(const JParams* P, const T* ions, T x, T y, T z, int first, int step, A* acc) {
    const int m = P->ions;
    for (int q = first; q < m; q += step) {
        T v, gx, gy, gz, l;
        radial_vgl(&P->rad[2], wrap(P, x - ions[q]), wrap(P, y - ions[m + q]), wrap(P, z - ions[2 * m + q]), v, gx, gy, gz, l);
        acc[0] += A(v);
        acc[1] += A(gx);
        acc[2] += A(gy);
        acc[3] += A(gz);
        acc[4] += A(l);
    }
}

// block-wide sums of NV values; the result is valid in thread 0, which adds the JBLOCK / 32 warps' sums in a row. The
// solid's tree in every warp with a barrier after it (1b03c27, 2026-12-06) ran the ratio and accept kernels 0.2% to
// 4.4% slower on the H100 in 23 of 24 cases (p and u terms, 114 to 2058 electrons, double and single, against d4818fd
// interleaved P A C C A P; the other, 114 electrons' u ratio in single, within its runs' 8% spread).
template <typename A, int NV> __device__ __forceinline__ void block_sum(A* v) {
    __shared__ A red[NV][JBLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int c = 0; c < NV; c++) {
        v[c] = warp_sum(v[c]);
        if (lane == 0) red[c][warp] = v[c];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
#pragma unroll
        for (int c = 0; c < NV; c++) {
            A s = A(0);
            for (int q = 0; q < JBLOCK / 32; q++) s += red[c][q];
            v[c] = s;
        }
    }
}

template <typename T> __device__ __forceinline__ T* power_slot() {
    extern __shared__ unsigned char jastrow_smem[];
    return reinterpret_cast<T*>(jastrow_smem) + threadIdx.x;
}

template <typename T, typename A, bool PT>
__device__ void vgl(const JParams* __restrict__ P, const T* __restrict__ pos, const T* __restrict__ ions, A* __restrict__ state) {
    __shared__ T tile[3][JBLOCK];
    const int n = P->n, w = blockIdx.y, i = blockIdx.x * JBLOCK + threadIdx.x;
    const bool active = i < n;
    const T* p = pos + (size_t)w * 3 * n;
    const T xi = active ? p[i] : T(0), yi = active ? p[n + i] : T(0), zi = active ? p[2 * n + i] : T(0);
    const bool up = i < P->up;
    T* pw = power_slot<T>();
    A acc[5] = {A(0), A(0), A(0), A(0), A(0)};
    for (int base = 0; base < n; base += JBLOCK) {
        const int jl = base + threadIdx.x;
        if (jl < n) {
            tile[0][threadIdx.x] = p[jl];
            tile[1][threadIdx.x] = p[n + jl];
            tile[2][threadIdx.x] = p[2 * n + jl];
        }
        __syncthreads();
        const int count = min(JBLOCK, n - base);
        if (active) {
            for (int q = 0; q < count; q++) {
                const int j = base + q;
                if (j == i) continue;
                T v, gx, gy, gz, l;
                pair<T, PT>(P, up == (j < P->up), xi - tile[0][q], yi - tile[1][q], zi - tile[2][q], pw, v, gx, gy, gz, l);
                acc[0] += A(v);
                acc[1] += A(gx);
                acc[2] += A(gy);
                acc[3] += A(gz);
                acc[4] += A(l);
            }
        }
        __syncthreads();
    }
    if (!active) return;
    A one[5] = {A(0), A(0), A(0), A(0), A(0)};
    ions_sum<T, A>(P, ions, xi, yi, zi, 0, 1, one);
    A* s = state + (size_t)w * 6 * n + i;
    s[0] = acc[0];
    s[n] = one[0];
    s[2 * n] = acc[1] + one[1];
    s[3 * n] = acc[2] + one[2];
    s[4 * n] = acc[3] + one[3];
    s[5 * n] = acc[4] + one[4];
}

template <typename T, typename A, bool PT>
__device__ void ratio(const JParams* __restrict__ P, const T* __restrict__ pos, const T* __restrict__ ions, const A* __restrict__ state,
                      const T* __restrict__ newpos, int k, int move, int walkers, A* __restrict__ out) {
    const int n = P->n, w = blockIdx.x;
    const T* p = pos + (size_t)w * 3 * n;
    const T* r = newpos + ((size_t)move * walkers + w) * 3;
    const T x = r[0], y = r[1], z = r[2];
    const bool up = k < P->up;
    T* pw = power_slot<T>();
    A acc[5] = {A(0), A(0), A(0), A(0), A(0)};
    for (int j = threadIdx.x; j < n; j += JBLOCK) {
        if (j == k) continue;
        T v, gx, gy, gz, l;
        pair<T, PT>(P, up == (j < P->up), x - p[j], y - p[n + j], z - p[2 * n + j], pw, v, gx, gy, gz, l);
        acc[0] += A(v);
        acc[1] += A(gx);
        acc[2] += A(gy);
        acc[3] += A(gz);
    }
    ions_sum<T, A>(P, ions, x, y, z, threadIdx.x, JBLOCK, acc);
    block_sum<A, 4>(acc);
    if (threadIdx.x == 0) {
        const A* s = state + (size_t)w * 6 * n + k;
        A* o = out + ((size_t)move * walkers + w) * 4;
        o[0] = acc[0] - s[0] - s[n];
        o[1] = acc[1];
        o[2] = acc[2];
        o[3] = acc[3];
    }
}

template <typename T, typename A, bool PT>
__device__ void accept(const JParams* __restrict__ P, T* __restrict__ pos, const T* __restrict__ ions, A* __restrict__ state,
                       const T* __restrict__ newpos, int k, int move, int walkers) {
    const int n = P->n, w = blockIdx.x;
    T* p = pos + (size_t)w * 3 * n;
    A* s = state + (size_t)w * 6 * n;
    const T* r = newpos + ((size_t)move * walkers + w) * 3;
    const T x = r[0], y = r[1], z = r[2];
    const T xo = p[k], yo = p[n + k], zo = p[2 * n + k];
    const bool up = k < P->up;
    T* pw = power_slot<T>();
    // acc[0..5]: U2, gradient, Laplacian of k at its new place (two-body); acc[5..10]: the same of the one-body term
    A acc[10];
#pragma unroll
    for (int c = 0; c < 10; c++) acc[c] = A(0);
    for (int j = threadIdx.x; j < n; j += JBLOCK) {
        if (j == k) continue;
        const T xj = p[j], yj = p[n + j], zj = p[2 * n + j];
        const bool same = up == (j < P->up);
        T v, gx, gy, gz, l, ov, ogx, ogy, ogz, ol;
        pair<T, PT>(P, same, x - xj, y - yj, z - zj, pw, v, gx, gy, gz, l);
        pair<T, PT>(P, same, xo - xj, yo - yj, zo - zj, pw, ov, ogx, ogy, ogz, ol);
        s[j] += A(v) - A(ov);
        // grad_j f(r_j - r_k) = -(grad f)(r_k - r_j)
        s[2 * n + j] -= A(gx) - A(ogx);
        s[3 * n + j] -= A(gy) - A(ogy);
        s[4 * n + j] -= A(gz) - A(ogz);
        s[5 * n + j] += A(l) - A(ol);
        acc[0] += A(v);
        acc[1] += A(gx);
        acc[2] += A(gy);
        acc[3] += A(gz);
        acc[4] += A(l);
    }
    ions_sum<T, A>(P, ions, x, y, z, threadIdx.x, JBLOCK, acc + 5);
    block_sum<A, 10>(acc);
    if (threadIdx.x == 0) {
        s[k] = acc[0];
        s[n + k] = acc[5];
        s[2 * n + k] = acc[1] + acc[6];
        s[3 * n + k] = acc[2] + acc[7];
        s[4 * n + k] = acc[3] + acc[8];
        s[5 * n + k] = acc[4] + acc[9];
        p[k] = x;
        p[n + k] = y;
        p[2 * n + k] = z;
    }
}

#define JASTROW_ENTRIES(KIND, PT, T, A, SUF)                                                                          \
    extern "C" __global__ void jastrow_vgl_##KIND##_##SUF(const JParams* __restrict__ P, const T* __restrict__ pos,    \
                                                           const T* __restrict__ ions, A* __restrict__ state) {       \
        vgl<T, A, PT>(P, pos, ions, state);                                                                           \
    }                                                                                                                 \
    extern "C" __global__ void jastrow_ratio_##KIND##_##SUF(const JParams* __restrict__ P, const T* __restrict__ pos,  \
                                                             const T* __restrict__ ions, const A* __restrict__ state, \
                                                             const T* __restrict__ newpos, int k, int move,           \
                                                             int walkers, A* __restrict__ out) {                      \
        ratio<T, A, PT>(P, pos, ions, state, newpos, k, move, walkers, out);                                          \
    }                                                                                                                 \
    extern "C" __global__ void jastrow_accept_##KIND##_##SUF(const JParams* __restrict__ P, T* __restrict__ pos,      \
                                                              const T* __restrict__ ions, A* __restrict__ state,      \
                                                              const T* __restrict__ newpos, int k, int move,          \
                                                              int walkers) {                                          \
        accept<T, A, PT>(P, pos, ions, state, newpos, k, move, walkers);                                              \
    }

JASTROW_ENTRIES(radial, false, double, double, f64)
JASTROW_ENTRIES(radial, false, float, float, f32)
JASTROW_ENTRIES(radial, false, float, double, mixed)
JASTROW_ENTRIES(p, true, double, double, f64)
JASTROW_ENTRIES(p, true, float, float, f32)
JASTROW_ENTRIES(p, true, float, double, mixed)
