// Plane-wave orbitals VGL at a batch of points (kernels::planewave::PlaneWaves::evaluate_point, in the arithmetic
// type A): one block per point, its threads over the orbitals of the row (the orbital index fastest: each thread
// writes its entries of the five component rows, coalesced across the block). Output in the B-spline kernel's layout
// out [point][5][stride] (value, gx, gy, gz, Laplacian), entries from `orbitals` to `stride` zero, so a consumer of
// either kernel reads whole rows. k [orbital][4] f64 (kx, ky, kz, sine), pos [point][3] f64.

struct WaveParams {
    int orbitals, stride, points, pad;
};

template <typename A>
__device__ void planewave_vgl(const WaveParams p, const double* __restrict__ k, const double* __restrict__ pos, A* __restrict__ out) {
    const int pt = blockIdx.x;
    if (pt >= p.points) return;
    const A x = (A)pos[3 * (size_t)pt], y = (A)pos[3 * (size_t)pt + 1], z = (A)pos[3 * (size_t)pt + 2];
    A* o = out + (size_t)pt * 5 * p.stride;
    for (int j = threadIdx.x; j < p.stride; j += blockDim.x) {
        A v = A(0), gx = A(0), gy = A(0), gz = A(0), l = A(0);
        if (j < p.orbitals) plane_wave_vgl<A>(k + 4 * (size_t)j, x, y, z, v, gx, gy, gz, l);
        o[j] = v;
        o[(size_t)p.stride + j] = gx;
        o[2 * (size_t)p.stride + j] = gy;
        o[3 * (size_t)p.stride + j] = gz;
        o[4 * (size_t)p.stride + j] = l;
    }
}

extern "C" __global__ void planewave_vgl_f64(const WaveParams p, const double* k, const double* pos, double* out) {
    planewave_vgl<double>(p, k, pos, out);
}
extern "C" __global__ void planewave_vgl_f32(const WaveParams p, const double* k, const double* pos, float* out) {
    planewave_vgl<float>(p, k, pos, out);
}
