// Atomic orbitals VGL at a batch of points (kernels::atomic::AtomicOrbitals::evaluate_point, in the arithmetic type
// A): one block per point. Its threads first evaluate the basis functions (one each, strided) into shared memory
// ([component][function] in A), then run over the orbitals of the row (the orbital index fastest: each thread
// writes its entries of the five component rows, coalesced across the block), each summing C_jf chi_f over the
// functions in order, as the CPU does. Output in the B-spline kernel's layout out [point][5][stride] (value, gx, gy,
// gz, Laplacian), entries from `orbitals` to `stride` zero, so a consumer of any orbital kernel reads whole rows.
// tab: AtomicOrbitals::packed (f64): functions [function][9] (centre x, y, z, powers k, l, m, slater, first and end
// primitive), primitives at prims_at [primitive][exponent, coefficient], coefficients at coef_at [orbital][function];
// pos [point][3] f64. Dynamic shared memory: 5 * functions values of A.

struct AtomicParams {
    int orbitals, functions, stride, points;
    int prims_at, coef_at, pad0, pad1;
};

// Basis function f's value, gradient and Laplacian at r in A (AtomicOrbitals::function): chi = P R with
// P = x^k y^l z^m of degree L; grad chi = R grad P + P (R'/r) d; lap chi = R lap P + P (R'' + 2 (L + 1) R'/r).
template <typename A>
__device__ __forceinline__ void atomic_function_vgl(const double* __restrict__ f, const double* __restrict__ prims, const double* r, A* chi) {
    const A d[3] = {(A)(r[0] - f[0]), (A)(r[1] - f[1]), (A)(r[2] - f[2])};
    const int e[3] = {(int)f[3], (int)f[4], (int)f[5]};
    const A r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    const A l = A(e[0] + e[1] + e[2]);
    // the radial part: R, R'/r and R'' + 2 (L + 1) R'/r over the primitives' exponentials of argument x r^2
    // (Gaussian) or x r (Slater), x the exponent, r clamped to the smallest normal number as qmc orbitals.rs
    // Lcao::vgl clamps it; t sums x^2 g (Gaussian), or the Laplacian's radial term g (x^2 - 2 (L + 1) x / r) (Slater,
    // term by term as Lcao::vgl)
    const bool gauss = f[6] == 0.0;
    const A tiny = sizeof(A) == 4 ? A(1.17549435e-38f) : A(2.2250738585072014e-308);
    A rr = r2; // r^2 or r
    if (!gauss) {
        rr = qmc_sqrt(r2);
        rr = rr > tiny ? rr : tiny;
    }
    A rv = A(0), s1 = A(0), t = A(0);
    for (int n = (int)f[7]; n < (int)f[8]; n++) {
        const A x = (A)prims[2 * n];
        const A g = (A)prims[2 * n + 1] * qmc_exp(-x * rr);
        rv += g;
        s1 += x * g;
        t += gauss ? x * x * g : g * (x * x - A(2) * (l + A(1)) * x / rr);
    }
    const A slope = gauss ? -A(2) * s1 : -(s1 / rr);
    const A w = gauss ? A(4) * r2 * t - A(2) * (A(2) * l + A(3)) * s1 : t;
    A p0[3], p1[3], p2[3];
    for (int k = 0; k < 3; k++) {
        p0[k] = qmc_ipow(d[k], e[k]);
        p1[k] = A(e[k]) * qmc_ipow(d[k], e[k] - 1);
        p2[k] = A(e[k] * (e[k] - 1)) * qmc_ipow(d[k], e[k] - 2);
    }
    const A p = p0[0] * p0[1] * p0[2];
    chi[0] = p * rv;
    chi[1] = p1[0] * p0[1] * p0[2] * rv + d[0] * p * slope;
    chi[2] = p0[0] * p1[1] * p0[2] * rv + d[1] * p * slope;
    chi[3] = p0[0] * p0[1] * p1[2] * rv + d[2] * p * slope;
    chi[4] = (p2[0] * p0[1] * p0[2] + p0[0] * p2[1] * p0[2] + p0[0] * p0[1] * p2[2]) * rv + p * w;
}

template <typename A>
__device__ void atomic_vgl(const AtomicParams p, const double* __restrict__ tab, const double* __restrict__ pos, A* __restrict__ out) {
    extern __shared__ __align__(8) unsigned char atomic_shared[];
    A* chi = (A*)atomic_shared; // [5][functions]
    const int pt = blockIdx.x;
    if (pt >= p.points) return; // the whole block: no barrier is left waiting
    const double r[3] = {pos[3 * (size_t)pt], pos[3 * (size_t)pt + 1], pos[3 * (size_t)pt + 2]};
    for (int f = threadIdx.x; f < p.functions; f += blockDim.x) {
        A c[5];
        atomic_function_vgl<A>(tab + 9 * (size_t)f, tab + p.prims_at, r, c);
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
