// Ewald sums for a batch of walkers (see mod.rs). Storage and evaluation type S, accumulation type A.
// Positions are fractional coordinates, [walker][axis][electron]: adjacent threads read adjacent electrons.
// Energy: real-space pairs and reciprocal-space structure factors are separate kernels writing per-block partial
// sums; a combine kernel adds them and the constant per walker. A move: the same three steps for the change.

struct EwaldParams {
    int n;         // electrons per walker
    int ions;
    int images;    // real-space lattice points to try for a wrapped displacement
    int gvecs;     // half-space G vectors
    int walkers;
    int pad;
    double alpha;  // erfc(alpha r) / r
    double rc2;    // real-space cutoff squared
    double a[9];   // lattice vectors a_k = (a[3k], a[3k+1], a[3k+2])
};

// e^{2 pi i t} for t reduced to [-1/2, 1/2]: the reduction is exact, so only the product m.f rounds.
__device__ __forceinline__ void ew_cis(float t, float* s, float* c) { sincospif(2.0f * (t - rintf(t)), s, c); }
__device__ __forceinline__ void ew_cis(double t, double* s, double* c) { sincospi(2.0 * (t - rint(t)), s, c); }

// Compensated sum for single precision (its careful accumulation), plain sum for double.
template <typename A> struct Acc {
    A s = A(0);
    __device__ __forceinline__ void add(A x) { s += x; }
    __device__ __forceinline__ A value() const { return s; }
};
template <> struct Acc<float> {
    float s = 0.0f, c = 0.0f;
    __device__ __forceinline__ void add(float x) {
        float y = x - c;
        float t = s + y;
        c = (t - s) - y;
        s = t;
    }
    __device__ __forceinline__ float value() const { return s; }
};

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in thread 0.
template <typename A> __device__ A block_sum(A v) {
    __shared__ A warps[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    v = threadIdx.x < (blockDim.x >> 5) ? warps[lane] : A(0);
    if (warp == 0) v = warp_sum(v);
    return v;
}

// Lattice vectors and constants converted once per thread.
template <typename S> struct Lattice {
    S a[9], alpha, rc2, rc;
    __device__ explicit Lattice(const EwaldParams& p) {
#pragma unroll
        for (int k = 0; k < 9; k++) a[k] = S(p.a[k]);
        alpha = S(p.alpha);
        rc2 = S(p.rc2);
        rc = S(sqrt(p.rc2));
    }
    // sum over images R (x, y, z, |R|; sorted by |R|) within r_c of erfc(alpha |d - R|) / |d - R|, d the wrapped fractional displacement f
    __device__ S phi(const S* __restrict__ images, int count, S fx, S fy, S fz) const {
        fx -= qmc_rint(fx);
        fy -= qmc_rint(fy);
        fz -= qmc_rint(fz);
        const S dx = fx * a[0] + fy * a[3] + fz * a[6];
        const S dy = fx * a[1] + fy * a[4] + fz * a[7];
        const S dz = fx * a[2] + fy * a[5] + fz * a[8];
        // |d - R| >= |R| - |d|: images (sorted by length) beyond |d| + r_c cannot contribute
        const S reach = qmc_sqrt(dx * dx + dy * dy + dz * dz) + rc;
        S s = S(0);
        for (int m = 0; m < count; m++) {
            if (images[4 * m + 3] > reach) break;
            const S x = dx - images[4 * m], y = dy - images[4 * m + 1], z = dz - images[4 * m + 2];
            const S r2 = x * x + y * y + z * z;
            if (r2 < rc2) {
                const S r = qmc_sqrt(r2);
                s += qmc_erfc(alpha * r) / r;
            }
        }
        return s;
    }
};

// Real space, energy: thread per (electron i, walker). Electron i takes the pairs (i, i + d mod n) for
// d = 1..n/2 (the pair at d = n/2 of an even n is met twice, so it counts half): every pair once, equal work per
// thread, and a warp reads consecutive electrons. Then electron i with every ion (electrons have charge -1).
template <typename S, typename A>
__device__ void real_energy(const EwaldParams p, const S* __restrict__ frac, const S* __restrict__ ion_frac,
                            const S* __restrict__ ion_q, const S* __restrict__ images, A* __restrict__ partial) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, w = blockIdx.y;
    const Lattice<S> L(p);
    Acc<A> acc;
    if (i < p.n) {
        const S* f = frac + (size_t)w * 3 * p.n;
        const S xi = f[i], yi = f[p.n + i], zi = f[2 * p.n + i];
        const int half = p.n / 2;
        for (int d = 1; d <= half; d++) {
            int j = i + d;
            if (j >= p.n) j -= p.n;
            S v = L.phi(images, p.images, xi - f[j], yi - f[p.n + j], zi - f[2 * p.n + j]);
            if (2 * d == p.n) v *= S(0.5);
            acc.add(A(v));
        }
        for (int I = 0; I < p.ions; I++) {
            const S v = L.phi(images, p.images, xi - ion_frac[I], yi - ion_frac[p.ions + I], zi - ion_frac[2 * p.ions + I]);
            acc.add(-A(ion_q[I]) * A(v));
        }
    }
    const A s = block_sum(acc.value());
    if (threadIdx.x == 0) partial[(size_t)w * gridDim.x + blockIdx.x] = s;
}

// Reciprocal space, energy: thread per (G, walker). S(G) = S_ion(G) - sum_j e^{iG.r_j}, kept for the moves
// ([walker][re|im][G]); the block's sum of c(G) |S(G)|^2 goes to `partial`. All threads of a block read the same
// electron at a time (a broadcast).
template <typename S, typename A>
__device__ void recip_energy(const EwaldParams p, const S* __restrict__ frac, const int* __restrict__ gm,
                             const A* __restrict__ coef, const A* __restrict__ ion_sf, A* __restrict__ sf,
                             A* __restrict__ partial) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x, w = blockIdx.y;
    A val = A(0);
    if (g < p.gvecs) {
        const S m0 = S(gm[g]), m1 = S(gm[p.gvecs + g]), m2 = S(gm[2 * p.gvecs + g]);
        const S* f = frac + (size_t)w * 3 * p.n;
        Acc<A> re, im;
        for (int j = 0; j < p.n; j++) {
            S s, c;
            ew_cis(m0 * f[j] + m1 * f[p.n + j] + m2 * f[2 * p.n + j], &s, &c);
            re.add(A(c));
            im.add(A(s));
        }
        const A sr = ion_sf[g] - re.value(), si = ion_sf[p.gvecs + g] - im.value();
        A* out = sf + (size_t)w * 2 * p.gvecs;
        out[g] = sr;
        out[p.gvecs + g] = si;
        val = coef[g] * (sr * sr + si * si);
    }
    const A s = block_sum(val);
    if (threadIdx.x == 0) partial[(size_t)w * gridDim.x + blockIdx.x] = s;
}

// Real space, one move per walker: block per walker, threads over the other particles.
template <typename S, typename A>
__device__ void real_move(const EwaldParams p, const S* __restrict__ frac, const S* __restrict__ ion_frac,
                          const S* __restrict__ ion_q, const S* __restrict__ images, const int* __restrict__ move_k,
                          const S* __restrict__ move_to, A* __restrict__ partial) {
    const int w = blockIdx.x, k = move_k[w];
    const Lattice<S> L(p);
    const S* f = frac + (size_t)w * 3 * p.n;
    const S nx = move_to[3 * w], ny = move_to[3 * w + 1], nz = move_to[3 * w + 2];
    const S ox = f[k], oy = f[p.n + k], oz = f[2 * p.n + k];
    Acc<A> acc;
    for (int j = threadIdx.x; j < p.n; j += blockDim.x) {
        if (j == k) continue;
        const S x = f[j], y = f[p.n + j], z = f[2 * p.n + j];
        acc.add(A(L.phi(images, p.images, nx - x, ny - y, nz - z)) - A(L.phi(images, p.images, ox - x, oy - y, oz - z)));
    }
    for (int I = threadIdx.x; I < p.ions; I += blockDim.x) {
        const S x = ion_frac[I], y = ion_frac[p.ions + I], z = ion_frac[2 * p.ions + I];
        acc.add(-A(ion_q[I]) * (A(L.phi(images, p.images, nx - x, ny - y, nz - z)) -
                                A(L.phi(images, p.images, ox - x, oy - y, oz - z))));
    }
    const A s = block_sum(acc.value());
    if (threadIdx.x == 0) partial[w] = s;
}

// Reciprocal space, one move per walker: S changes by delta = e^{iG.r_old} - e^{iG.r_new} (charge -1), the energy
// by c(G) (|delta|^2 + 2 Re(conj(S) delta)). Block per walker, threads over G.
template <typename S, typename A>
__device__ void recip_move(const EwaldParams p, const S* __restrict__ frac, const int* __restrict__ gm,
                           const A* __restrict__ coef, const A* __restrict__ sf, const int* __restrict__ move_k,
                           const S* __restrict__ move_to, A* __restrict__ partial) {
    const int w = blockIdx.x, k = move_k[w];
    const S* f = frac + (size_t)w * 3 * p.n;
    const S nx = move_to[3 * w], ny = move_to[3 * w + 1], nz = move_to[3 * w + 2];
    const S ox = f[k], oy = f[p.n + k], oz = f[2 * p.n + k];
    const A* s = sf + (size_t)w * 2 * p.gvecs;
    Acc<A> acc;
    for (int g = threadIdx.x; g < p.gvecs; g += blockDim.x) {
        const S m0 = S(gm[g]), m1 = S(gm[p.gvecs + g]), m2 = S(gm[2 * p.gvecs + g]);
        S so, co, sn, cn;
        ew_cis(m0 * ox + m1 * oy + m2 * oz, &so, &co);
        ew_cis(m0 * nx + m1 * ny + m2 * nz, &sn, &cn);
        const A dr = A(co) - A(cn), di = A(so) - A(sn);
        acc.add(coef[g] * (dr * dr + di * di + A(2) * (s[g] * dr + s[p.gvecs + g] * di)));
    }
    const A t = block_sum(acc.value());
    if (threadIdx.x == 0) partial[w] = t;
}

// Combine: per walker, the constant plus the real- and reciprocal-space partial sums.
template <typename A>
__device__ void combine(int walkers, int nr, int ng, double constant, const A* __restrict__ real,
                        const A* __restrict__ recip, A* __restrict__ out) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= walkers) return;
    Acc<A> acc;
    acc.add(A(constant));
    for (int r = 0; r < nr; r++) acc.add(real[(size_t)w * nr + r]);
    for (int g = 0; g < ng; g++) acc.add(recip[(size_t)w * ng + g]);
    out[w] = acc.value();
}

#define EWALD_ENTRIES(SUFFIX, S, A)                                                                              \
    extern "C" __global__ void ewald_real_##SUFFIX(const EwaldParams p, const S* frac, const S* ion_frac,         \
                                                   const S* ion_q, const S* images, A* partial) {                \
        real_energy<S, A>(p, frac, ion_frac, ion_q, images, partial);                                            \
    }                                                                                                            \
    extern "C" __global__ void ewald_recip_##SUFFIX(const EwaldParams p, const S* frac, const int* gm,           \
                                                    const A* coef, const A* ion_sf, A* sf, A* partial) {         \
        recip_energy<S, A>(p, frac, gm, coef, ion_sf, sf, partial);                                              \
    }                                                                                                            \
    extern "C" __global__ void ewald_move_real_##SUFFIX(const EwaldParams p, const S* frac, const S* ion_frac,   \
                                                        const S* ion_q, const S* images, const int* move_k,      \
                                                        const S* move_to, A* partial) {                          \
        real_move<S, A>(p, frac, ion_frac, ion_q, images, move_k, move_to, partial);                             \
    }                                                                                                            \
    extern "C" __global__ void ewald_move_recip_##SUFFIX(const EwaldParams p, const S* frac, const int* gm,      \
                                                         const A* coef, const A* sf, const int* move_k,          \
                                                         const S* move_to, A* partial) {                         \
        recip_move<S, A>(p, frac, gm, coef, sf, move_k, move_to, partial);                                       \
    }

EWALD_ENTRIES(f64, double, double)
EWALD_ENTRIES(f32, float, float)
EWALD_ENTRIES(mixed, float, double)

extern "C" __global__ void ewald_combine_f64(int walkers, int nr, int ng, double constant, const double* real,
                                             const double* recip, double* out) {
    combine<double>(walkers, nr, ng, constant, real, recip, out);
}
extern "C" __global__ void ewald_combine_f32(int walkers, int nr, int ng, double constant, const float* real,
                                             const float* recip, float* out) {
    combine<float>(walkers, nr, ng, constant, real, recip, out);
}
