// Nonlocal pseudopotential, paper 000's two GPU phases. The walkers' positions, rotations and inverse rows lie in
// their slabs (`walkers`, layout p.slab: see slab.rs and WalkerSlab in common.cuh).
// Phase 1: pp_count (one thread per walker-electron: ions within r_c), the exclusive scan on the device
//          (pp_scan_walkers: one block per walker over its electrons' counts, leaving each walker's total in
//          wbase[w]; pp_scan_totals: one block over the walker totals, in place, wbase[walkers] = all jobs), pp_fill
//          (the same threads write their jobs at wbase[w] + offset, so the list is ordered by walker, electron, ion;
//          jobs at or beyond the capacity `cap` are dropped: the host sees the total and runs again with more room).
// Phase 2: pp_old_* once (with the Jastrow: one warp per walker-electron with jobs, its current sum); the points
//          sorted by B-spline grid cell (a counting sort: pp_keys, one thread per point, its cell and its rank among
//          the cell's points by an atomic; then bspline/gpu.rs CellSort's scan and scatter into perm, sorted
//          position -> point), so that the grouped B-spline kernel reads each stencil row once for all the points of
//          a cell in a block (about 80 points a cell at 1536 electrons: the points crowd the ions); then per chunk of
//          sorted positions up to
//          the capacity (the host does not know the total yet): pp_points (one thread per point: position and
//          channel weight), the B-spline kernel (orbital values at all points), pp_ratio_* (one warp per point: dot
//          product of the values with the electron's transposed-inverse row, times the Jastrow ratio, times the
//          weight); positions at or beyond the device's total return. Every result is stored at its point's own
//          index and a point's value does not depend on where the sort put it, so the atomic ranks (whose order
//          varies from run to run) change no bit of the energies.
// Then pp_energies: one block per walker sums its points' contributions in a fixed order (f64), and writes the
// total job count after the energies, so one download brings both.
// Jastrow ratio: exp(new - old), new = sum_{j != i} u(|r' - r_j|) + sum_I chi(|r' - R_I|) summed by the point's warp,
// old the same at r_i from pp_old (an electron's jobs share it: computed once, not at each of its points), with the
// prelude's radial functor (common.cuh radial_functor, jastrow::Radial, Form::BSpline) in A.

#define PP_MAX_Q 50
#define PP_MAX_L 4
#define PP_MAX_TERMS 4
#define PP_MAX_JC 16 // B-spline coefficients of a Jastrow functor

struct PPParams {
    int walkers, electrons, ions, stride, nq, nl;
    int nterms[PP_MAX_L];
    int npow[PP_MAX_L][PP_MAX_TERMS];
    double coef[PP_MAX_L][PP_MAX_TERMS];
    double expo[PP_MAX_L][PP_MAX_TERMS];
    double cell[3];
    // 1 / side (0 for an open axis) for near_image, from the host (pseudopotential::inv_side): worked out in jastrow_sum
    // it took three f64 divisions in every lane of every sum. H100, 7c9d973 against f8cab3e interleaved P C C P (stage
    // pp-ab): the energies 0.8% to 4.1% faster, double and mixed, 8 to 256 atoms
    double inv_cell[3];
    double rc;
    double quad[PP_MAX_Q][4]; // x, y, z, weight
    int jastrow;               // 0: determinant ratios only
    int jn[3];                 // coefficients of the functors: same spin, opposite spin, electron-ion
    double jcut[3], jinvh[3];
    double jcoef[3][PP_MAX_JC];
    WalkerSlab slab; // positions, rotations and inverse rows of each walker
    double grid_cell[3]; // the B-spline grid's cell and points per side (and a pad), to sort points by cell
    int grid[4];
};

struct PPJob { int walker, electron, ion, pad; };

__device__ __forceinline__ void min_image(const PPParams& p, const double* a, const double* b, double* d) {
#pragma unroll
    for (int k = 0; k < 3; k++) {
        double x = a[k] - b[k];
        d[k] = x - p.cell[k] * rint(x / p.cell[k]);
    }
}

// Walker-electron t's position in the slabs.
__device__ __forceinline__ const double* electron_at(const PPParams& p, const unsigned char* walkers, int t) {
    return slab_at<const double>(walkers, p.slab, t / p.electrons, p.slab.pos) + 3 * (t % p.electrons);
}

extern "C" __global__ void pp_count(const PPParams p, const unsigned char* __restrict__ walkers, const double* __restrict__ ions,
                                    int* __restrict__ counts) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.walkers * p.electrons) return;
    const double* r = electron_at(p, walkers, t);
    int c = 0;
    for (int i = 0; i < p.ions; i++) {
        double d[3];
        min_image(p, r, ions + 3 * i, d);
        c += (d[0] * d[0] + d[1] * d[1] + d[2] * d[2] < p.rc * p.rc);
    }
    counts[t] = c;
}

// Block w: offsets[w E + e] = jobs of walker w's electrons before e; wbase[w] = walker w's jobs.
extern "C" __global__ void pp_scan_walkers(const PPParams p, const int* __restrict__ counts, int* __restrict__ offsets,
                                           long long* __restrict__ wbase) {
    const size_t o = (size_t)blockIdx.x * p.electrons;
    // at most electrons x ions jobs per walker: int is enough within a walker
    const int total = block_scan<int, int>(counts + o, offsets + o, p.electrons);
    if (threadIdx.x == 0) wbase[blockIdx.x] = total;
}

// One block: wbase[0..walkers) from walker totals to the index of each walker's first job; wbase[walkers] = all jobs.
extern "C" __global__ void pp_scan_totals(const PPParams p, long long* wbase) {
    const long long total = block_scan<long long, long long>(wbase, wbase, p.walkers);
    if (threadIdx.x == 0) wbase[p.walkers] = total;
}

// Jobs the list holds: all of them unless the capacity cut it.
__device__ __forceinline__ long long jobs_held(const PPParams& p, const long long* wbase, long long cap) {
    return min(wbase[p.walkers], cap);
}

extern "C" __global__ void pp_fill(const PPParams p, const unsigned char* __restrict__ walkers, const double* __restrict__ ions,
                                   const int* __restrict__ offsets, const long long* __restrict__ wbase, long long cap,
                                   PPJob* __restrict__ jobs, double* __restrict__ disp) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.walkers * p.electrons) return;
    const double* r = electron_at(p, walkers, t);
    long long o = wbase[t / p.electrons] + offsets[t];
    for (int i = 0; i < p.ions && o < cap; i++) {
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

// Unit vector u (rotated node q) and position of point pt; returns the job's |d|.
__device__ __forceinline__ double point_at(const PPParams& p, const double* ions, const unsigned char* walkers, const PPJob& j,
                                           const double* d, int q, double* u, double* at) {
    const double* R = slab_at<const double>(walkers, p.slab, j.walker, p.slab.rot) + 9 * j.ion;
    const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
#pragma unroll
    for (int k = 0; k < 3; k++) u[k] = R[3 * k] * p.quad[q][0] + R[3 * k + 1] * p.quad[q][1] + R[3 * k + 2] * p.quad[q][2];
#pragma unroll
    for (int k = 0; k < 3; k++) at[k] = ions[3 * j.ion + k] + r * u[k];
    return r;
}

// One thread per point of the capacity: the cell of each point the list holds and its rank among the cell's
// points (bspline/gpu.rs CellSort: counts zeroed before), -1 for the room beyond.
extern "C" __global__ void pp_keys(const PPParams p, const double* __restrict__ ions, const unsigned char* __restrict__ walkers,
                                   const PPJob* __restrict__ jobs, const double* __restrict__ disp,
                                   const long long* __restrict__ wbase, long long cap, int* __restrict__ key,
                                   int* __restrict__ rank, int* __restrict__ counts) {
    const long long pt = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (pt >= cap * p.nq) return;
    if (pt >= jobs_held(p, wbase, cap) * p.nq) {
        key[pt] = -1;
        return;
    }
    const long long jb = pt / p.nq;
    double u[3], at[3];
    point_at(p, ions, walkers, jobs[jb], disp + 3 * jb, (int)(pt % p.nq), u, at);
    const int k = spline_cell(at, p.grid, p.grid_cell);
    key[pt] = k;
    rank[pt] = atomicAdd(counts + k, 1);
}

// Value of Jastrow functor f at the minimum-image distance between a and b, in A. Most pairs lie beyond the functor's
// cutoff (at 1536 electrons a point is within it of a few dozen of the 1920 particles): they are screened out
// (common.cuh near_image, past_cutoff). The pairs kept take min_image's image by division as before, so the sums
// are the same bits.
template <typename A>
__device__ __forceinline__ A jastrow_u(const PPParams& p, int f, const double* a, const double* b) {
    double d[3];
    if (past_cutoff(near_image(p.cell, p.inv_cell, a, b, d), p.jcut[f])) return A(0);
    min_image(p, a, b, d);
    const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    A u, du, d2u;
    bspline_functor<BSplineTables<A>>(p, f, (A)r, u, du, d2u);
    return u;
}

// The points at sorted positions first .. first + count - 1 (point = job * nq + q) that the list holds: positions
// into `pts` (chunk-relative), weights into `factor` (the point's index). The B-spline kernel evaluates the rest of
// the chunk at stale positions.
extern "C" __global__ void pp_points(const PPParams p, const double* __restrict__ ions, const unsigned char* __restrict__ walkers,
                                     const PPJob* __restrict__ jobs, const double* __restrict__ disp, long long first,
                                     int count, const long long* __restrict__ wbase, long long cap,
                                     const int* __restrict__ perm, double* __restrict__ pts, double* __restrict__ factor) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count || first + t >= jobs_held(p, wbase, cap) * p.nq) return;
    const long long pt = perm[first + t];
    const long long jb = pt / p.nq;
    const int q = (int)(pt % p.nq);
    const PPJob j = jobs[jb];
    const double* d = disp + 3 * jb;
    double u[3];
    const double r = point_at(p, ions, walkers, j, d, q, u, pts + 3 * (size_t)t);
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

// log J terms of electron e of walker w placed at `at`: sum_{o != e} u(|at - r_o|) + sum_I chi(|at - R_I|), summed by
// the lanes of a warp (the total is in lane 0).
template <typename A>
__device__ __forceinline__ A jastrow_sum(const PPParams& p, const unsigned char* __restrict__ walkers, const double* __restrict__ ions,
                                         int w, int e, const double* at, int lane) {
    const int half = p.electrons / 2;
    const double* pos = slab_at<const double>(walkers, p.slab, w, p.slab.pos);
    A s = A(0);
    for (int o = lane; o < p.electrons; o += 32) {
        if (o == e) continue;
        s += jastrow_u<A>(p, (o < half) != (e < half), at, pos + 3 * o);
    }
    for (int i = lane; i < p.ions; i += 32) s += jastrow_u<A>(p, 2, at, ions + 3 * i);
    return warp_sum(s);
}

// One warp per walker-electron t < walkers * electrons: old[t] = its Jastrow sum at its own position, for those with
// jobs (counts[t] > 0; the others are never read).
template <typename A>
__device__ void old_sum(const PPParams p, const unsigned char* __restrict__ walkers, const double* __restrict__ ions,
                        const int* __restrict__ counts, double* __restrict__ old) {
    const int lane = threadIdx.x & 31;
    const long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    // whole warps leave together: t and counts[t] are the same across a warp
    if (t >= (long long)p.walkers * p.electrons || counts[t] == 0) return;
    const int w = (int)(t / p.electrons), e = (int)(t % p.electrons);
    const A s = jastrow_sum<A>(p, walkers, ions, w, e, electron_at(p, walkers, (int)t), lane);
    if (lane == 0) old[t] = (double)s;
}

// One warp per sorted position in the chunk: ratio = phi(point) . inv_row(electron) * J(r')/J(r_i); contrib = factor * ratio.
template <typename S, typename A>
__device__ void ratio(const PPParams p, const A* __restrict__ phi, const unsigned char* __restrict__ walkers,
                      const PPJob* __restrict__ jobs, const double* __restrict__ factor, long long first, int count,
                      const long long* __restrict__ wbase, long long cap, const int* __restrict__ perm,
                      const double* __restrict__ ions, const double* __restrict__ disp, const double* __restrict__ old,
                      double* __restrict__ ratios, double* __restrict__ contrib) {
    const int lane = threadIdx.x & 31;
    const long long t = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    // whole warps leave together: t is the same across a warp
    if (t >= count || first + t >= jobs_held(p, wbase, cap) * p.nq) return;
    const long long pt = perm[first + t];
    const PPJob j = jobs[pt / p.nq];
    const A* v = phi + (size_t)t * p.stride;
    const size_t me = (size_t)j.walker * p.electrons + j.electron;
    const S* row = slab_at<const S>(walkers, p.slab, j.walker, p.slab.inv) + (size_t)j.electron * p.stride;
    A acc = A(0);
    for (int k = lane; k < p.stride; k += 32) acc += v[k] * A(row[k]);
    acc = warp_sum(acc);
    double jr = 1.0;
    if (p.jastrow) {
        double u[3], at[3];
        point_at(p, ions, walkers, j, disp + 3 * (pt / p.nq), (int)(pt % p.nq), u, at);
        jr = exp((double)jastrow_sum<A>(p, walkers, ions, j.walker, j.electron, at, lane) - old[me]);
    }
    if (lane == 0) {
        const double rho = (double)acc * jr;
        ratios[pt] = rho;
        contrib[pt] = factor[pt] * rho;
    }
}

#define PP_RATIO(NAME, S, A)                                                                                      \
    extern "C" __global__ void NAME(const PPParams p, const A* __restrict__ phi,                                  \
                                    const unsigned char* __restrict__ walkers, const PPJob* __restrict__ jobs,         \
                                    const double* __restrict__ factor, long long first, int count,               \
                                    const long long* __restrict__ wbase, long long cap,                          \
                                    const int* __restrict__ perm,                                                \
                                    const double* __restrict__ ions, const double* __restrict__ disp,            \
                                    const double* __restrict__ old, double* __restrict__ ratios,                 \
                                    double* __restrict__ contrib) {                                              \
        ratio<S, A>(p, phi, walkers, jobs, factor, first, count, wbase, cap, perm, ions, disp, old, ratios, contrib); \
    }

PP_RATIO(pp_ratio_f64, double, double)
PP_RATIO(pp_ratio_f32, float, float)
PP_RATIO(pp_ratio_mixed, float, double)

#define PP_OLD(NAME, A)                                                                                           \
    extern "C" __global__ void NAME(const PPParams p, const unsigned char* __restrict__ walkers,                      \
                                    const double* __restrict__ ions, const int* __restrict__ counts,             \
                                    double* __restrict__ old) {                                                  \
        old_sum<A>(p, walkers, ions, counts, old);                                                               \
    }

// the Jastrow's arithmetic type: f32 in single, f64 in double and mixed
PP_OLD(pp_old_f64, double)
PP_OLD(pp_old_f32, float)
PP_OLD(pp_old_mixed, double)

// Block w (128 threads): out[w] = the sum of walker w's contributions, in a fixed order (each thread a fixed stride,
// then the warps, then the four warp sums in turn), so a run repeats to the bit. Block 0 writes the total job count
// (exact in a double) to out[walkers]. With the list cut by the capacity the energies are wrong and the host runs
// again with more room.
extern "C" __global__ void pp_energies(const PPParams p, const long long* __restrict__ wbase, long long cap,
                                       const double* __restrict__ contrib, double* __restrict__ out) {
    __shared__ double sh[32];
    const int w = blockIdx.x, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const long long a = min(wbase[w], cap) * p.nq, b = min(wbase[w + 1], cap) * p.nq;
    double s = 0.0;
    for (long long x = a + threadIdx.x; x < b; x += blockDim.x) s += contrib[x];
    s = warp_sum(s);
    if (lane == 0) sh[warp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0.0;
        for (int k = 0; k < (int)(blockDim.x >> 5); k++) t += sh[k];
        out[w] = t;
        if (w == 0) out[p.walkers] = (double)wbase[p.walkers];
    }
}
