// 3D tricubic B-spline evaluation for a batch of points (one per walker).
// One thread per (orbital, walker): the 64 stencil rows are read with the orbital index fastest, so a warp reads
// 32 consecutive coefficients of one row (coalesced). Storage type S, arithmetic and output type A.

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
template <typename S, typename A, int NC>
__device__ void evaluate(const SplineParams p,
                         const S* __restrict__ coefs,    // [nx][ny][nz][stride]
                         const double* __restrict__ pos, // [walkers][3]
                         A* __restrict__ out)            // [walkers][NC][stride]
{
    const int o = blockIdx.x * blockDim.x + threadIdx.x;
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
    A acc[NC];
#pragma unroll
    for (int c = 0; c < NC; c++) acc[c] = A(0);
    const size_t stride = p.stride;
#pragma unroll
    for (int i = 0; i < 4; i++) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const size_t plane = ((size_t)idx[0][i] * p.ny + idx[1][j]) * p.nz;
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const A c = A(coefs[(plane + idx[2][k]) * stride + o]);
                const A xy = wv[0][i] * wv[1][j];
                acc[0] += xy * wv[2][k] * c;
                if (NC >= 5) {
                    acc[1] += wd[0][i] * wv[1][j] * wv[2][k] * c;
                    acc[2] += wv[0][i] * wd[1][j] * wv[2][k] * c;
                    acc[3] += xy * wd[2][k] * c;
                }
                if (NC == 5) {
                    acc[4] += (w2[0][i] * wv[1][j] * wv[2][k] + wv[0][i] * w2[1][j] * wv[2][k] + xy * w2[2][k]) * c;
                }
                if (NC == 10) {
                    acc[4] += w2[0][i] * wv[1][j] * wv[2][k] * c;
                    acc[5] += wd[0][i] * wd[1][j] * wv[2][k] * c;
                    acc[6] += wd[0][i] * wv[1][j] * wd[2][k] * c;
                    acc[7] += wv[0][i] * w2[1][j] * wv[2][k] * c;
                    acc[8] += wv[0][i] * wd[1][j] * wd[2][k] * c;
                    acc[9] += xy * w2[2][k] * c;
                }
            }
        }
    }
    A* dst = out + (size_t)w * NC * stride + o;
#pragma unroll
    for (int c = 0; c < NC; c++) dst[c * stride] = acc[c];
}

#define SPLINE_ENTRY(NAME, S, A, NC)                                                                    \
    extern "C" __global__ void NAME(const SplineParams p, const S* __restrict__ coefs,                  \
                                    const double* __restrict__ pos, A* __restrict__ out) {              \
        evaluate<S, A, NC>(p, coefs, pos, out);                                                         \
    }

SPLINE_ENTRY(bspline_v_f64, double, double, 1)
SPLINE_ENTRY(bspline_vgl_f64, double, double, 5)
SPLINE_ENTRY(bspline_vgh_f64, double, double, 10)
SPLINE_ENTRY(bspline_v_f32, float, float, 1)
SPLINE_ENTRY(bspline_vgl_f32, float, float, 5)
SPLINE_ENTRY(bspline_vgh_f32, float, float, 10)
SPLINE_ENTRY(bspline_v_mixed, float, double, 1)
SPLINE_ENTRY(bspline_vgl_mixed, float, double, 5)
SPLINE_ENTRY(bspline_vgh_mixed, float, double, 10)
