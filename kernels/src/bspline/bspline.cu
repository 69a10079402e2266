// 3D tricubic B-spline evaluation for a batch of points (one per walker): each thread's orbitals by spline_sum.
// One thread per (group of adjacent orbitals, walker): the 64 stencil rows are read with the orbital index fastest,
// so a warp reads 512 consecutive bytes of one row (coalesced, 16-byte loads). Storage type S, arithmetic and output type A.

// NC = 1 (V), 5 (VGL), 10 (VGH).
// Each thread evaluates N adjacent orbitals with one N-wide load per stencil row (N = 1, 2 or 4, at most 16 bytes):
// wider loads keep more bytes in flight per instruction, narrower ones leave more threads to hide latency. Which wins
// is the hardware's business, so N is a run-time choice (`--per-thread`) measured rather than assumed. Rows are padded
// to 64 entries (ROW_ALIGN), so every vector is aligned and whole.
template <typename S, int N> struct VecN;
template <> struct VecN<float, 1> { typedef float T; };
template <> struct VecN<float, 2> { typedef float2 T; };
template <> struct VecN<float, 4> { typedef float4 T; };
template <> struct VecN<double, 1> { typedef double T; };
template <> struct VecN<double, 2> { typedef double2 T; };

// NC = 1 (V), 5 (VGL), 10 (VGH): orbitals o .. o + N - 1 at the point of stencil `st` (common.cuh) into dst
// [NC][stride] (the point's rows).
template <typename S, typename A, int NC, int N>
__device__ __forceinline__ void spline_sum(const SplineParams& p, const S* __restrict__ coefs, const SplineStencil<A>& st,
                                           int o, A* dst) {
    typedef typename VecN<S, N>::T V;
    const auto& idx = st.idx;
    const auto& wv = st.wv;
    const auto& wd = st.wd;
    const auto& w2 = st.w2;
    A acc[NC][N];
#pragma unroll
    for (int c = 0; c < NC; c++)
#pragma unroll
        for (int v = 0; v < N; v++) acc[c][v] = A(0);
    const size_t stride = p.stride;
    // z first: for each (i, j) the 4 rows along z are reduced with the z weights (value, first and second
    // derivative: 3 FMAs per coefficient, 1 for V), and only then spread over the NC outputs with the x-y weight
    // products (NC FMAs per 4 coefficients). Weighting each coefficient for every output directly costs NC FMAs per
    // coefficient plus the weight products, which left single precision issue-bound (ncu on an H100: SM 71%,
    // DRAM 65%) where double was memory-bound.
    constexpr int NZ = NC == 1 ? 1 : 3;
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const size_t plane = ((size_t)idx[0][i] * p.ny + idx[1][j]) * p.nz;
            A sz[NZ][N];
#pragma unroll
            for (int q = 0; q < NZ; q++)
#pragma unroll
                for (int v = 0; v < N; v++) sz[q][v] = A(0);
#pragma unroll
            for (int k = 0; k < 4; k++) {
                union { V v; S s[N]; } c;
                c.v = __ldg(reinterpret_cast<const V*>(coefs + (plane + idx[2][k]) * stride + o));
#pragma unroll
                for (int v = 0; v < N; v++) {
                    const A x = A(c.s[v]);
                    sz[0][v] += wv[2][k] * x;
                    if (NZ == 3) {
                        sz[1][v] += wd[2][k] * x;
                        sz[2][v] += w2[2][k] * x;
                    }
                }
            }
            const A xy = wv[0][i] * wv[1][j];
#pragma unroll
            for (int v = 0; v < N; v++) {
                acc[0][v] += xy * sz[0][v];
                if (NC >= 5) {
                    const A dxy = wd[0][i] * wv[1][j], xdy = wv[0][i] * wd[1][j];
                    acc[1][v] += dxy * sz[0][v];
                    acc[2][v] += xdy * sz[0][v];
                    acc[3][v] += xy * sz[1 % NZ][v];
                    const A d2xy = w2[0][i] * wv[1][j], xd2y = wv[0][i] * w2[1][j];
                    if (NC == 5) acc[4][v] += (d2xy + xd2y) * sz[0][v] + xy * sz[2 % NZ][v];
                    if (NC == 10) {
                        acc[4][v] += d2xy * sz[0][v];
                        acc[5][v] += wd[0][i] * wd[1][j] * sz[0][v];
                        acc[6][v] += dxy * sz[1 % NZ][v];
                        acc[7][v] += xd2y * sz[0][v];
                        acc[8][v] += xdy * sz[1 % NZ][v];
                        acc[9][v] += xy * sz[2 % NZ][v];
                    }
                }
            }
        }
    }
    dst += o;
#pragma unroll
    for (int c = 0; c < NC; c++)
#pragma unroll
        for (int v = 0; v < N; v++) dst[c * stride + v] = acc[c][v];
}

// One thread per (group of N adjacent orbitals, walker), blockIdx.y the walker.
template <typename S, typename A, int NC, int N>
__device__ void evaluate(const SplineParams p,
                         const S* __restrict__ coefs,    // [nx][ny][nz][stride]
                         const double* __restrict__ pos, // [walkers][3]
                         A* __restrict__ out)            // [walkers][NC][stride]
{
    const int o = (blockIdx.x * blockDim.x + threadIdx.x) * N; // first of this thread's N orbitals
    const int w = blockIdx.y;
    if (o >= p.stride || w >= p.walkers) return;
    SplineStencil<A> st;
#pragma unroll
    for (int d = 0; d < 3; d++) spline_axis<A>(p, d, pos[3 * w + d], st);
    spline_sum<S, A, NC, N>(p, coefs, st, o, out + (size_t)w * NC * p.stride);
}

// The same outputs for points that arrive sorted by grid cell (the pseudopotential's quadrature points: thousands
// around each ion, tens in each cell). Block (x, y) takes points y*G .. y*G+G-1; a run of consecutive points in one
// cell shares its 64 stencil rows, so each row is read once per run instead of once per point: a row read from L2
// or DRAM serves up to G points, and the kernel moves from the memory's limit (every point reading 64 rows of the
// whole orbital set) towards the FMA units'. Each point's sums run in the same order as in `evaluate`, whatever
// run it falls in, so its values do not depend on the order or the company it arrives in. Unsorted points are
// still right, at the per-point kernel's cost (a run of one).
template <typename S, typename A, int NC, int N, int G>
__device__ void evaluate_grouped(const SplineParams p, const S* __restrict__ coefs, const double* __restrict__ pos,
                                 A* __restrict__ out) {
    typedef typename VecN<S, N>::T V;
    constexpr int NZ = NC == 1 ? 1 : 3;
    __shared__ int cell[G];     // linear cell index; -1 beyond the points
    __shared__ int idx[G][3][4];
    __shared__ A wt[G][NZ][3][4]; // per point: value (and first, second derivative) weights per dimension
    const int first = blockIdx.y * G;
    if (threadIdx.x < G) {
        const int w = first + threadIdx.x;
        const int n[3] = {p.nx, p.ny, p.nz};
        int c = -1;
        if (w < p.walkers) {
            c = 0;
#pragma unroll
            for (int d = 0; d < 3; d++) {
                double t;
                const int i = spline_interval(pos[3 * w + d], p.cell[d], n[d], t);
                c = c * n[d] + i;
                A a[4], da[4], d2a[4];
                bspline_weights<A>(A(t - i), a, da, d2a);
                A inv_h = A(n[d] / p.cell[d]);
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    idx[threadIdx.x][d][q] = (i + n[d] + q - 1) % n[d];
                    wt[threadIdx.x][0][d][q] = a[q] * A(p.scale);
                    if (NZ == 3) {
                        wt[threadIdx.x][1 % NZ][d][q] = da[q] * A(p.scale) * inv_h;
                        wt[threadIdx.x][2 % NZ][d][q] = d2a[q] * A(p.scale) * inv_h * inv_h;
                    }
                }
            }
        }
        cell[threadIdx.x] = c;
    }
    __syncthreads();
    const int o = (blockIdx.x * blockDim.x + threadIdx.x) * N;
    if (o >= p.stride) return;
    const size_t stride = p.stride;
    for (int s = 0; s < G && cell[s] >= 0;) {
        int e = s + 1;
        while (e < G && cell[e] == cell[s]) e++;
        A acc[G][NC][N] = {};
#pragma unroll
        for (int i = 0; i < 4; i++) {
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const size_t plane = ((size_t)idx[s][0][i] * p.ny + idx[s][1][j]) * p.nz;
                A sz[G][NZ][N] = {};
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    union { V v; S s[N]; } c;
                    c.v = __ldg(reinterpret_cast<const V*>(coefs + (plane + idx[s][2][k]) * stride + o));
#pragma unroll
                    for (int g = 0; g < G; g++) {
                        if (g < s || g >= e) continue;
#pragma unroll
                        for (int v = 0; v < N; v++) {
                            const A x = A(c.s[v]);
                            sz[g][0][v] += wt[g][0][2][k] * x;
                            if (NZ == 3) {
                                sz[g][1 % NZ][v] += wt[g][1 % NZ][2][k] * x;
                                sz[g][2 % NZ][v] += wt[g][2 % NZ][2][k] * x;
                            }
                        }
                    }
                }
#pragma unroll
                for (int g = 0; g < G; g++) {
                    if (g < s || g >= e) continue;
                    const A xy = wt[g][0][0][i] * wt[g][0][1][j];
#pragma unroll
                    for (int v = 0; v < N; v++) {
                        acc[g][0][v] += xy * sz[g][0][v];
                        if (NC == 5) {
                            const A dxy = wt[g][1 % NZ][0][i] * wt[g][0][1][j], xdy = wt[g][0][0][i] * wt[g][1 % NZ][1][j];
                            const A d2xy = wt[g][2 % NZ][0][i] * wt[g][0][1][j], xd2y = wt[g][0][0][i] * wt[g][2 % NZ][1][j];
                            acc[g][1 % NC][v] += dxy * sz[g][0][v];
                            acc[g][2 % NC][v] += xdy * sz[g][0][v];
                            acc[g][3 % NC][v] += xy * sz[g][1 % NZ][v];
                            acc[g][4 % NC][v] += (d2xy + xd2y) * sz[g][0][v] + xy * sz[g][2 % NZ][v];
                        }
                    }
                }
            }
        }
#pragma unroll
        for (int g = 0; g < G; g++) {
            if (g < s || g >= e) continue;
            A* dst = out + (size_t)(first + g) * NC * stride + o;
#pragma unroll
            for (int c = 0; c < NC; c++)
#pragma unroll
                for (int v = 0; v < N; v++) dst[c * stride + v] = acc[g][c][v];
        }
        s = e;
    }
}

// Points per block of the grouped kernels: V keeps G x N x 2 sums in registers, VGL G x N x 8.
#define SPLINE_GROUP_V 8
#define SPLINE_GROUP_VGL 4

#define SPLINE_ENTRY(NAME, S, A, NC, N)                                                                 \
    extern "C" __global__ void NAME(const SplineParams p, const S* __restrict__ coefs,                  \
                                    const double* __restrict__ pos, A* __restrict__ out) {              \
        evaluate<S, A, NC, N>(p, coefs, pos, out);                                                      \
    }
// bspline_<output>_<precision>_x<orbitals per thread>
#define SPLINE_OUTPUTS(P, S, A, N)                      \
    SPLINE_ENTRY(bspline_v_##P##_x##N, S, A, 1, N)      \
    SPLINE_ENTRY(bspline_vgl_##P##_x##N, S, A, 5, N)    \
    SPLINE_ENTRY(bspline_vgh_##P##_x##N, S, A, 10, N)

#define SPLINE_GROUPED_ENTRY(NAME, S, A, NC, N, G)                                                      \
    extern "C" __global__ void NAME(const SplineParams p, const S* __restrict__ coefs,                  \
                                    const double* __restrict__ pos, A* __restrict__ out) {              \
        evaluate_grouped<S, A, NC, N, G>(p, coefs, pos, out);                                           \
    }
// bspline_<output>_<precision>_x<orbitals per thread>_sorted: the grouped kernels, for points sorted by cell
#define SPLINE_SORTED(P, S, A, N)                                                          \
    SPLINE_GROUPED_ENTRY(bspline_v_##P##_x##N##_sorted, S, A, 1, N, SPLINE_GROUP_V)        \
    SPLINE_GROUPED_ENTRY(bspline_vgl_##P##_x##N##_sorted, S, A, 5, N, SPLINE_GROUP_VGL)

SPLINE_SORTED(f64, double, double, 1)
SPLINE_SORTED(f64, double, double, 2)
SPLINE_SORTED(f32, float, float, 1)
SPLINE_SORTED(f32, float, float, 2)
SPLINE_SORTED(f32, float, float, 4)
SPLINE_SORTED(mixed, float, double, 1)
SPLINE_SORTED(mixed, float, double, 2)
SPLINE_SORTED(mixed, float, double, 4)

SPLINE_OUTPUTS(f64, double, double, 1)
SPLINE_OUTPUTS(f64, double, double, 2)
SPLINE_OUTPUTS(f32, float, float, 1)
SPLINE_OUTPUTS(f32, float, float, 2)
SPLINE_OUTPUTS(f32, float, float, 4)
SPLINE_OUTPUTS(mixed, float, double, 1)
SPLINE_OUTPUTS(mixed, float, double, 2)
SPLINE_OUTPUTS(mixed, float, double, 4)

// ---- points sorted by cell for the grouped kernels (bspline/gpu.rs CellSort) ----
// The caller's kernel writes each point's cell (common.cuh spline_cell; -1 where there is no point) and its rank
// among the cell's points (an atomic on the counts); cell_scan turns the counts into each cell's first sorted
// position, cell_scatter writes perm[sorted position] = point.
extern "C" __global__ void cell_scan(int cells, int* counts) {
    block_scan<int, int>(counts, counts, cells);
}

extern "C" __global__ void cell_scatter(long long count, const int* __restrict__ key, const int* __restrict__ rank,
                                        const int* __restrict__ first, int* __restrict__ perm) {
    const long long pt = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (pt >= count || key[pt] < 0) return;
    perm[first[key[pt]] + rank[pt]] = (int)pt;
}
