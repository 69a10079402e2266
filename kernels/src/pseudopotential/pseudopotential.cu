// Nonlocal pseudopotential, paper 000's two GPU phases.
// Phase 1: pp_count (one thread per walker-electron: ions within r_c), a scan on the host, pp_fill (the same
//          threads write their jobs at their offsets, so the list is ordered by walker, electron, ion).
// Phase 2, per chunk of quadrature points: pp_points (one thread per point: position and channel weight), the
//          B-spline kernel (orbital values at all points), pp_ratio_* (one warp per point: dot product of the values
//          with the electron's transposed-inverse row, times the weight).

#define PP_MAX_Q 50
#define PP_MAX_L 4
#define PP_MAX_TERMS 4

struct PPParams {
    int walkers, electrons, ions, stride, nq, nl;
    int nterms[PP_MAX_L];
    int npow[PP_MAX_L][PP_MAX_TERMS];
    double coef[PP_MAX_L][PP_MAX_TERMS];
    double expo[PP_MAX_L][PP_MAX_TERMS];
    double cell[3];
    double rc;
    double quad[PP_MAX_Q][4]; // x, y, z, weight
};

struct PPJob { int walker, electron, ion, pad; };

__device__ __forceinline__ void min_image(const PPParams& p, const double* a, const double* b, double* d) {
#pragma unroll
    for (int k = 0; k < 3; k++) {
        double x = a[k] - b[k];
        d[k] = x - p.cell[k] * rint(x / p.cell[k]);
    }
}

extern "C" __global__ void pp_count(const PPParams p, const double* __restrict__ pos, const double* __restrict__ ions,
                                    int* __restrict__ counts) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.walkers * p.electrons) return;
    const double* r = pos + 3 * (size_t)t;
    int c = 0;
    for (int i = 0; i < p.ions; i++) {
        double d[3];
        min_image(p, r, ions + 3 * i, d);
        c += (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < p.rc * p.rc);
    }
    counts[t] = c;
}

extern "C" __global__ void pp_fill(const PPParams p, const double* __restrict__ pos, const double* __restrict__ ions,
                                   const int* __restrict__ offsets, PPJob* __restrict__ jobs, double* __restrict__ disp) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.walkers * p.electrons) return;
    const double* r = pos + 3 * (size_t)t;
    int o = offsets[t];
    for (int i = 0; i < p.ions; i++) {
        double d[3];
        min_image(p, r, ions + 3 * i, d);
        if (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < p.rc * p.rc) {
            PPJob j;
            j.walker = t / p.electrons; j.electron = t % p.electrons; j.ion = i; j.pad = 0;
            jobs[o] = j;
            disp[3 * (size_t)o] = d[0]; disp[3 * (size_t)o + 1] = d[1]; disp[3 * (size_t)o + 2] = d[2];
            o++;
        }
    }
}

// Points first .. first + count - 1 (point = job * nq + q): positions into `pts` (chunk-relative), weights into
// `factor` (absolute index).
extern "C" __global__ void pp_points(const PPParams p, const double* __restrict__ ions, const double* __restrict__ rot,
                                     const PPJob* __restrict__ jobs, const double* __restrict__ disp, long long first,
                                     int count, double* __restrict__ pts, double* __restrict__ factor) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const long long pt = first + t;
    const long long jb = pt / p.nq;
    const int q = (int)(pt % p.nq);
    const PPJob j = jobs[jb];
    const double* d = disp + 3 * jb;
    const double* R = rot + 9 * ((size_t)j.walker * p.ions + j.ion);
    const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    double u[3];
#pragma unroll
    for (int k = 0; k < 3; k++) u[k] = R[3 * k] * p.quad[q][0] + R[3 * k + 1] * p.quad[q][1] + R[3 * k + 2] * p.quad[q][2];
#pragma unroll
    for (int k = 0; k < 3; k++) pts[3 * (size_t)t + k] = ions[3 * j.ion + k] + r * u[k];
    const double x = (u[0] * d[0] + u[1] * d[1] + u[2] * d[2]) / r;
    const double P[4] = {1.0, x, 0.5 * (3.0 * x * x - 1.0), 0.5 * (5.0 * x * x * x - 3.0 * x)};
    double f = 0.0;
    for (int l = 0; l < p.nl; l++) {
        double v = 0.0;
        for (int k = 0; k < p.nterms[l]; k++) {
            int n = p.npow[l][k] - 2;
            double rp = n == -1 ? 1.0 / r : n == 0 ? 1.0 : n == 1 ? r : n == 2 ? r * r : pow(r, (double)n);
            v += p.coef[l][k] * rp * exp(-p.expo[l][k] * r * r);
        }
        f += (2 * l + 1) * v * P[l];
    }
    factor[pt] = f * p.quad[q][3];
}

// One warp per point: ratio = phi(point) . inv_row(electron); contrib = factor * ratio.
template <typename S, typename A>
__device__ void ratio(const PPParams p, const A* __restrict__ phi, const S* __restrict__ inv, const PPJob* __restrict__ jobs,
                      const double* __restrict__ factor, long long first, int count, double* __restrict__ ratios,
                      double* __restrict__ contrib) {
    const int lane = threadIdx.x & 31;
    const int t = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (t >= count) return; // whole warps leave together: t is the same across a warp
    const long long pt = first + t;
    const PPJob j = jobs[pt / p.nq];
    const A* v = phi + (size_t)t * p.stride;
    const S* row = inv + ((size_t)j.walker * p.electrons + j.electron) * p.stride;
    A acc = A(0);
    for (int k = lane; k < p.stride; k += 32) acc += v[k] * A(row[k]);
    acc = warp_sum(acc);
    if (lane == 0) {
        ratios[pt] = (double)acc;
        contrib[pt] = factor[pt] * (double)acc;
    }
}

#define PP_RATIO(NAME, S, A)                                                                                      \
    extern "C" __global__ void NAME(const PPParams p, const A* __restrict__ phi, const S* __restrict__ inv,       \
                                    const PPJob* __restrict__ jobs, const double* __restrict__ factor,           \
                                    long long first, int count, double* __restrict__ ratios,                     \
                                    double* __restrict__ contrib) {                                              \
        ratio<S, A>(p, phi, inv, jobs, factor, first, count, ratios, contrib);                                   \
    }

PP_RATIO(pp_ratio_f64, double, double)
PP_RATIO(pp_ratio_f32, float, float)
PP_RATIO(pp_ratio_mixed, float, double)
