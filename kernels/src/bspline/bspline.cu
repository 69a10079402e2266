// 3D tricubic B-spline evaluation for a batch of points (one per walker).
// One thread per (group of adjacent orbitals, walker): the 64 stencil rows are read with the orbital index fastest,
// so a warp reads 512 consecutive bytes of one row (coalesced, 16-byte loads). Storage type S, arithmetic and output type A.

struct SplineParams {
    int nx, ny, nz;          // grid points per side
    int stride;              // padded orbitals per row
    int orbitals;            // real orbitals (threads beyond write nothing)
    int walkers;
    double cell[3];          // cell sides
    double scale;            // basis factor per dimension (1 for B-splines, 1.5 for blips)
};

template <typename A>
__device__ __forceinline__ void weights(A t, A* a, A* da, A* d2a) {
    const A s = A(1) / A(6);
    A t2 = t * t, t3 = t2 * t, u = A(1) - t;
    a[0] = u * u * u * s; a[1] = (A(3) * t3 - A(6) * t2 + A(4)) * s;
    a[2] = (A(-3) * t3 + A(3) * t2 + A(3) * t + A(1)) * s; a[3] = t3 * s;
    da[0] = A(-0.5) * u * u; da[1] = A(1.5) * t2 - A(2) * t; da[2] = A(-1.5) * t2 + t + A(0.5); da[3] = A(0.5) * t2;
    d2a[0] = u; d2a[1] = A(3) * t - A(2); d2a[2] = A(1) - A(3) * t; d2a[3] = t;
}

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

// NC = 1 (V), 5 (VGL), 10 (VGH).
template <typename S, typename A, int NC, int N>
__device__ void evaluate(const SplineParams p,
                         const S* __restrict__ coefs,    // [nx][ny][nz][stride]
                         const double* __restrict__ pos, // [walkers][3]
                         A* __restrict__ out)            // [walkers][NC][stride]
{
    typedef typename VecN<S, N>::T V;
    const int o = (blockIdx.x * blockDim.x + threadIdx.x) * N; // first of this thread's N orbitals
    const int w = blockIdx.y;
    if (o >= p.stride || w >= p.walkers) return;
    const int n[3] = {p.nx, p.ny, p.nz};
    int idx[3][4];
    A wv[3][4], wd[3][4], w2[3][4];
#pragma unroll
    for (int d = 0; d < 3; d++) {
        double u = pos[3 * w + d] / p.cell[d];
        u -= floor(u);
        double t = u * n[d];
        int i = min((int)floor(t), n[d] - 1);
        A a[4], da[4], d2a[4];
        weights<A>(A(t - i), a, da, d2a);
        A inv_h = A(n[d] / p.cell[d]);
#pragma unroll
        for (int q = 0; q < 4; q++) {
            idx[d][q] = (i + n[d] + q - 1) % n[d];
            wv[d][q] = a[q] * A(p.scale);
            wd[d][q] = da[q] * A(p.scale) * inv_h;
            w2[d][q] = d2a[q] * A(p.scale) * inv_h * inv_h;
        }
    }
    A acc[NC][N];
#pragma unroll
    for (int c = 0; c < NC; c++)
#pragma unroll
        for (int v = 0; v < N; v++) acc[c][v] = A(0);
    const size_t stride = p.stride;
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const size_t plane = ((size_t)idx[0][i] * p.ny + idx[1][j]) * p.nz;
            // the 16 products of x and y weights this (i, j) needs, formed once for the 4 z points
            const A xy = wv[0][i] * wv[1][j], dxy = wd[0][i] * wv[1][j], xdy = wv[0][i] * wd[1][j];
            const A d2xy = w2[0][i] * wv[1][j], dxdy = wd[0][i] * wd[1][j], xd2y = wv[0][i] * w2[1][j];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                union { V v; S s[N]; } c;
                c.v = __ldg(reinterpret_cast<const V*>(coefs + (plane + idx[2][k]) * stride + o));
                A wc[NC];
                wc[0] = xy * wv[2][k];
                if (NC >= 5) {
                    wc[1] = dxy * wv[2][k];
                    wc[2] = xdy * wv[2][k];
                    wc[3] = xy * wd[2][k];
                }
                if (NC == 5) wc[4] = (d2xy + xd2y) * wv[2][k] + xy * w2[2][k];
                if (NC == 10) {
                    wc[4] = d2xy * wv[2][k];
                    wc[5] = dxdy * wv[2][k];
                    wc[6] = dxy * wd[2][k];
                    wc[7] = xd2y * wv[2][k];
                    wc[8] = xdy * wd[2][k];
                    wc[9] = xy * w2[2][k];
                }
#pragma unroll
                for (int cc = 0; cc < NC; cc++)
#pragma unroll
                    for (int v = 0; v < N; v++) acc[cc][v] += wc[cc] * A(c.s[v]);
            }
        }
    }
    A* dst = out + (size_t)w * NC * stride + o;
#pragma unroll
    for (int c = 0; c < NC; c++)
#pragma unroll
        for (int v = 0; v < N; v++) dst[c * stride + v] = acc[c][v];
}

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

SPLINE_OUTPUTS(f64, double, double, 1)
SPLINE_OUTPUTS(f64, double, double, 2)
SPLINE_OUTPUTS(f32, float, float, 1)
SPLINE_OUTPUTS(f32, float, float, 2)
SPLINE_OUTPUTS(f32, float, float, 4)
SPLINE_OUTPUTS(mixed, float, double, 1)
SPLINE_OUTPUTS(mixed, float, double, 2)
SPLINE_OUTPUTS(mixed, float, double, 4)
