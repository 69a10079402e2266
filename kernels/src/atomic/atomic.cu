// Atomic orbitals VGL at a batch of points (kernels::atomic::AtomicOrbitals::evaluate_point, in the arithmetic type
// A): one block per point. Its threads first evaluate the basis functions (one each, strided) into shared memory
// ([component][function] in A), then run over the orbitals of the row (the orbital index fastest: each thread
// writes its entries of the five component rows, coalesced across the block), each summing C_jf chi_f over the
// functions in order, as the CPU does. Output in the B-spline kernel's layout out [point][5][stride] (value, gx, gy,
// gz, Laplacian), entries from `orbitals` to `stride` zero, so a consumer of any orbital kernel reads whole rows.
// tab: AtomicOrbitals::packed (f64): functions [function][BASIS_RECORD] (kernels::basis::pack), primitives at
// prims_at [primitive][exponent, coefficient], coefficients at coef_at [orbital][function], restored cusps at cusp_at
// [cusp][11] (common.cuh atomic_cusp_vgl); pos [point][3] f64. Dynamic shared memory: 5 * functions values of A.
// The basis functions are the prelude's atomic_function_vgl.

struct AtomicParams {
    int orbitals, functions, stride, points;
    int prims_at, coef_at, cusp_at, cusps;
};

template <typename A>
__device__ void atomic_vgl(const AtomicParams p, const double* __restrict__ tab, const double* __restrict__ pos, A* __restrict__ out) {
    extern __shared__ __align__(8) unsigned char atomic_shared[];
    A* chi = (A*)atomic_shared; // [5][functions]
    const int pt = blockIdx.x;
    if (pt >= p.points) return; // the whole block: no barrier is left waiting
    const double r[3] = {pos[3 * (size_t)pt], pos[3 * (size_t)pt + 1], pos[3 * (size_t)pt + 2]};
    for (int f = threadIdx.x; f < p.functions; f += blockDim.x) {
        A c[5];
        atomic_function_vgl<A>(tab + BASIS_RECORD * (size_t)f, tab + p.prims_at, r, c);
        for (int k = 0; k < 5; k++) chi[k * p.functions + f] = c[k];
    }
    __syncthreads();
    A* o = out + (size_t)pt * 5 * p.stride;
    for (int j = threadIdx.x; j < p.stride; j += blockDim.x) {
        A v[5] = {A(0), A(0), A(0), A(0), A(0)};
        if (j < p.orbitals) {
            const double* c = tab + p.coef_at + (size_t)j * p.functions;
            for (int f = 0; f < p.functions; f++) {
                const A cf = (A)c[f];
                for (int k = 0; k < 5; k++) v[k] += cf * chi[k * p.functions + f];
            }
            // a restored cusp replaces the sum inside its sphere
            for (int q = 0; q < p.cusps; q++) {
                const double* c = tab + p.cusp_at + 11 * (size_t)q;
                if ((int)c[0] == j) atomic_cusp_vgl<A>(c, r, v);
            }
        }
        for (int k = 0; k < 5; k++) o[k * (size_t)p.stride + j] = v[k];
    }
}

extern "C" __global__ void atomic_vgl_f64(const AtomicParams p, const double* tab, const double* pos, double* out) {
    atomic_vgl<double>(p, tab, pos, out);
}
extern "C" __global__ void atomic_vgl_f32(const AtomicParams p, const double* tab, const double* pos, float* out) {
    atomic_vgl<float>(p, tab, pos, out);
}
