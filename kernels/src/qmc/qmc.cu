// The VMC/DMC driver's walkers on the GPU: one thread per walker runs the whole step of its walker (a sweep of
// single-electron drift-diffusion moves with Metropolis-Hastings and Sherman-Morrison updates, then the full
// evaluation: Slater inverses from scratch, grad and Laplacian of ln psi, the local kinetic energy and, in open
// boundaries, the Coulomb potential). The arithmetic mirrors the CPU driver (kernels/src/qmc: walker.rs, slater.rs,
// orbitals.rs, systems.rs, the atomic kernel's orbitals, jastrow.rs, coulomb.rs; the electron gas's plane waves in kernels/src/planewave)
// operation by operation, and the random numbers are the CPU's (common.cuh: xoshiro256++ seeded as crate::rng::rng and
// rng::stream), so in double a walker follows the CPU trajectory.
//
// Layout: every per-walker array is element-major, walker-minor (x[elem * capacity + w]): a warp reads consecutive
// addresses. Positions f64 [3 * electron + axis]; the transposed inverses t = Ainv^T of both spins in T (spin up's
// n_up^2 entries, then spin down's); the inversion workspace in R (n^2 of the larger spin).
// Precisions: T the wavefunction (orbitals, inverses, Sherman-Morrison, ratios, Jastrow), R the full inversion,
// E the per-walker local energy (kinetic sum and Coulomb): double <f64, f64, f64>, mixed <f32, f64, f64>,
// single <f32, f32, f32>.

#define QMC_MAXN 32   // electrons per spin
#define QMC_MAXC 16   // coefficients of a radial functor
#define QMC_MAXNUC 4  // nuclei of an open system

// Mirrors `Radial` in gpu.rs: form RADIAL_BSPLINE or RADIAL_PADE (kernels::maths::Form; power = number of numerator
// coefficients of a Padé).
struct QmcRadial {
    int form, power, ncoef, pad;
    double cutoff, inv_h;
    double coef[QMC_MAXC];
};

// Mirrors `Params` in gpu.rs.
struct QmcParams {
    int walkers, capacity, electrons, n_up;
    int orbitals, jastrow, periodic, nuclei;  // orbitals: 0 LCAO of 1s Slater functions, 1 atomic orbitals, 2 plane waves
    int nf, coef_off, fixed_node, sweep;      // atomic orbitals (dtab = AtomicOrbitals::packed): basis functions, where
    int prims_at, cusp_at, cusps, pad;        // the coefficients, primitives and cusps start, how many cusps
    double tau, side, inv_side, nuclear_repulsion;
    double nuc[QMC_MAXNUC * 4];                // charge, x, y, z
    QmcRadial pair[2];                         // like spins, opposite spins
    unsigned long long seed_mix, step, first;  // rng::stream's seed ^ tag * C, the step, the global index of walker 0
};

template <typename T> struct Lim;
template <> struct Lim<double> {
    static __device__ __forceinline__ double tiny() { return 2.2250738585072014e-308; }
    static __device__ __forceinline__ double eps() { return 2.220446049250313e-16; }
};
template <> struct Lim<float> {
    static __device__ __forceinline__ float tiny() { return 1.17549435e-38f; }
    static __device__ __forceinline__ float eps() { return 1.1920929e-7f; }
};

// ---- orbitals: values, gradients and Laplacians of the n orbitals of one spin at r, in T ----
template <typename T> struct Vgl {
    T v[QMC_MAXN], gx[QMC_MAXN], gy[QMC_MAXN], gz[QMC_MAXN], l[QMC_MAXN];
};

template <typename T>
__device__ void orbitals(const QmcParams& P, const int* __restrict__ itab, const double* __restrict__ dtab, int spin, int n, const double* r,
                         Vgl<T>& o) {
    if (P.orbitals == 0) {
        // orbitals.rs Lcao::vgl: orbital j of this spin is the product's orbital of electron spin * n_up + j
        for (int j = 0; j < n; j++) {
            int idx = spin * P.n_up + j;
            T v = 0, gx = 0, gy = 0, gz = 0, l = 0;
            for (int q = itab[idx]; q < itab[idx + 1]; q++) {
                const double* c5 = dtab + 5 * q;
                T c = (T)c5[0], z = (T)c5[1];
                T dx = (T)r[0] - (T)c5[2], dy = (T)r[1] - (T)c5[3], dz = (T)r[2] - (T)c5[4];
                T dist = qmc_sqrt<T>(dx * dx + dy * dy + dz * dz);
                dist = dist > Lim<T>::tiny() ? dist : Lim<T>::tiny();
                T e = c * qmc_exp<T>(-z * dist);
                v += e;
                gx -= z * e / dist * dx;
                gy -= z * e / dist * dy;
                gz -= z * e / dist * dz;
                l += e * (z * z - (T)2 * z / dist);
            }
            o.v[j] = v, o.gx[j] = gx, o.gy[j] = gy, o.gz[j] = gz, o.l[j] = l;
        }
    } else if (P.orbitals == 1) {
        // atomic orbitals (AtomicOrbitals::vgl): the prelude's basis functions accumulated into phi_j = sum_f C_jf chi_f
        // in f order, then the restored cusps in place of the sums inside their spheres
        for (int j = 0; j < n; j++) o.v[j] = 0, o.gx[j] = 0, o.gy[j] = 0, o.gz[j] = 0, o.l[j] = 0;
        for (int f = 0; f < P.nf; f++) {
            T chi[5];
            atomic_function_vgl<T>(dtab + BASIS_RECORD * f, dtab + P.prims_at, r, chi);
            for (int j = 0; j < n; j++) {
                const T c = (T)dtab[P.coef_off + j * P.nf + f];
                o.v[j] += c * chi[0], o.gx[j] += c * chi[1], o.gy[j] += c * chi[2], o.gz[j] += c * chi[3], o.l[j] += c * chi[4];
            }
        }
        for (int q = 0; q < P.cusps; q++) {
            const double* c = dtab + P.cusp_at + 11 * q;
            const int j = (int)c[0];
            T x[5];
            if (j < n && atomic_cusp_vgl<T>(c, r, x)) o.v[j] = x[0], o.gx[j] = x[1], o.gy[j] = x[2], o.gz[j] = x[3], o.l[j] = x[4];
        }
    } else {
        // planewave::PlaneWaves::each: cos(k.r) or sin(k.r) (common.cuh)
        T x = (T)r[0], y = (T)r[1], z = (T)r[2];
        for (int j = 0; j < n; j++) plane_wave_vgl<T>(dtab + 4 * j, x, y, z, o.v[j], o.gx[j], o.gy[j], o.gz[j], o.l[j]);
    }
}

// ---- the Jastrow factor (jastrow.rs TwoBody with jastrow::Radial functors) ----
// QmcParams' functor f (0 like spins, 1 opposite) as common.cuh's radial_functor reads it, in T.
template <typename T> struct RadialView {
    static __device__ __forceinline__ int form(const QmcParams& P, int f) { return P.pair[f].form; }
    static __device__ __forceinline__ int power(const QmcParams& P, int f) { return P.pair[f].power; }
    static __device__ __forceinline__ int ncoef(const QmcParams& P, int f) { return P.pair[f].ncoef; }
    static __device__ __forceinline__ T cutoff(const QmcParams& P, int f) { return (T)P.pair[f].cutoff; }
    static __device__ __forceinline__ T inv_h(const QmcParams& P, int f) { return (T)P.pair[f].inv_h; }
    static __device__ __forceinline__ T coef(const QmcParams& P, int f, int k) { return (T)P.pair[f].coef[k]; }
};

__device__ __forceinline__ double px(const double* __restrict__ pos, int cap, int w, int e, int k) { return pos[(3 * e + k) * cap + w]; }

// Every pair term of electron i placed at p: sum of u, gradient, Laplacian (TwoBody::terms).
template <typename T>
__device__ void jastrow_terms(const QmcParams& P, const double* __restrict__ pos, int w, int i, const double* p, T& u, T* g, T& l) {
    u = 0, g[0] = 0, g[1] = 0, g[2] = 0, l = 0;
    const T side = (T)P.side, inv = (T)P.inv_side, two = 2;
    for (int j = 0; j < P.electrons; j++) {
        if (j == i) continue;
        T d[3];
        for (int k = 0; k < 3; k++) {
            T x = (T)p[k] - (T)px(pos, P.capacity, w, j, k);
            d[k] = P.periodic ? x - side * qmc_round(x * inv) : x;
        }
        T dist = qmc_sqrt<T>(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        dist = dist > Lim<T>::tiny() ? dist : Lim<T>::tiny();
        T v, dv, d2v;
        radial_functor<RadialView<T>>(P, ((i < P.n_up) != (j < P.n_up)) ? 1 : 0, dist, v, dv, d2v);
        u += v;
        for (int k = 0; k < 3; k++) g[k] += dv / dist * d[k];
        l += d2v + two * dv / dist;
    }
}

template <typename T> __device__ __forceinline__ T trow_dot(const T* x, const T* __restrict__ t, int base, int n, int cap, int w) {
    T s = 0;
    for (int j = 0; j < n; j++) s += x[j] * t[(base + j) * cap + w];
    return s;
}

// In-place Gauss-Jordan inversion with partial pivoting of the n x n matrix m[(i * n + j) * cap + w]; false when a
// pivot is below tol (determinant::cpu::invert_in's singularity rule).
template <typename R> __device__ bool invert(R* __restrict__ m, int n, int cap, int w, R tol) {
    int piv[QMC_MAXN];
#define M(i, j) m[((i) * n + (j)) * cap + w]
    for (int k = 0; k < n; k++) {
        int p = k;
        R best = qmc_fabs(M(k, k));
        for (int i = k + 1; i < n; i++) {
            R a = qmc_fabs(M(i, k));
            if (a > best) best = a, p = i;
        }
        if (!(best > tol)) return false;
        piv[k] = p;
        if (p != k)
            for (int j = 0; j < n; j++) {
                R x = M(k, j);
                M(k, j) = M(p, j);
                M(p, j) = x;
            }
        R d = (R)1 / M(k, k);
        M(k, k) = 1;
        for (int j = 0; j < n; j++) M(k, j) *= d;
        for (int i = 0; i < n; i++) {
            if (i == k) continue;
            R f = M(i, k);
            M(i, k) = 0;
            for (int j = 0; j < n; j++) M(i, j) -= f * M(k, j);
        }
    }
    for (int k = n - 1; k >= 0; k--)
        if (piv[k] != k)
            for (int i = 0; i < n; i++) {
                R x = M(i, k);
                M(i, k) = M(i, piv[k]);
                M(i, piv[k]) = x;
            }
#undef M
    return true;
}

template <typename T, typename R, typename E>
__device__ void step(const QmcParams P, const int* __restrict__ itab, const double* __restrict__ dtab, double* __restrict__ pos, T* __restrict__ t,
                     R* __restrict__ work, double* __restrict__ kin, double* __restrict__ pot, int* __restrict__ counts, double* __restrict__ r2) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= P.walkers) return;
    const int cap = P.capacity, ne = P.electrons;
    const int nspin[2] = {P.n_up, ne - P.n_up}, tbase[2] = {0, P.n_up * P.n_up};
    Vgl<T> o;
    T c[QMC_MAXN];
    int attempted = 0, accepted = 0;
    double r2p = 0.0, r2a = 0.0;
    if (P.sweep) {
        Xoshiro rng = rng_seed(P.seed_mix, (P.step << 24) ^ (P.first + (u64)w));
        const double tau = P.tau, st = sqrt(P.tau);
        for (int i = 0; i < ne; i++) {
            const int s = i < P.n_up ? 0 : 1, n = nspin[s], q = i - s * P.n_up, tq = tbase[s] + q * n;
            double old[3] = {px(pos, cap, w, i, 0), px(pos, cap, w, i, 1), px(pos, cap, w, i, 2)};
            // grad ln psi at the old position: determinant + Jastrow
            orbitals<T>(P, itab, dtab, s, n, old, o);
            double grad[3] = {(double)trow_dot<T>(o.gx, t, tq, n, cap, w), (double)trow_dot<T>(o.gy, t, tq, n, cap, w),
                              (double)trow_dot<T>(o.gz, t, tq, n, cap, w)};
            T u_old = 0, gj[3], lj;
            if (P.jastrow) {
                jastrow_terms<T>(P, pos, w, i, old, u_old, gj, lj);
                for (int k = 0; k < 3; k++) grad[k] += (double)gj[k];
            }
            double chi[3], dr[3], nw[3];
            gaussian3(rng, chi);
            drift(grad, tau, dr);
            for (int k = 0; k < 3; k++) {
                chi[k] = st * chi[k];
                nw[k] = old[k] + dr[k] + chi[k];
            }
            // ratio and grad ln psi at the new position
            orbitals<T>(P, itab, dtab, s, n, nw, o);
            T rs = trow_dot<T>(o.v, t, tq, n, cap, w);
            double ratio = (double)rs;
            double gnew[3] = {(double)(trow_dot<T>(o.gx, t, tq, n, cap, w) / rs), (double)(trow_dot<T>(o.gy, t, tq, n, cap, w) / rs),
                              (double)(trow_dot<T>(o.gz, t, tq, n, cap, w) / rs)};
            if (P.jastrow) {
                T u_new;
                jastrow_terms<T>(P, pos, w, i, nw, u_new, gj, lj);
                ratio = ratio * (double)qmc_exp<T>(u_new - u_old);
                for (int k = 0; k < 3; k++) gnew[k] += (double)gj[k];
            }
            double d[3] = {nw[0] - old[0], nw[1] - old[1], nw[2] - old[2]};
            double dr2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            attempted++;
            r2p += dr2;
            if (!(isfinite(ratio) && ratio != 0.0) || (P.fixed_node && ratio < 0.0)) continue;
            double db[3], back[3];
            drift(gnew, tau, db);
            for (int k = 0; k < 3; k++) back[k] = (old[k] - nw[k]) - db[k];
            double log_green = ((chi[0] * chi[0] + chi[1] * chi[1] + chi[2] * chi[2]) - (back[0] * back[0] + back[1] * back[1] + back[2] * back[2])) / (2.0 * tau);
            double log_accept = 2.0 * log(fabs(ratio)) + log_green;
            if (log_accept >= 0.0 || uniform(rng) < exp(log_accept)) {
                // Sherman-Morrison (determinant::cpu::rank1_row) with the orbital values at the new position (o.v)
                for (int j = 0; j < n; j++) c[j] = t[(tq + j) * cap + w];
                T rr = 0;
                for (int j = 0; j < n; j++) rr += o.v[j] * c[j];
                for (int j = 0; j < n; j++) {
                    const int row = tbase[s] + j * n;
                    T coef = trow_dot<T>(o.v, t, row, n, cap, w);
                    if (j == q) coef -= (T)1;
                    coef = coef / rr;
                    for (int k = 0; k < n; k++) t[(row + k) * cap + w] -= coef * c[k];
                }
                for (int k = 0; k < 3; k++) pos[(3 * i + k) * cap + w] = nw[k];
                accepted++;
                r2a += dr2;
            }
        }
    }
    // full evaluation: each spin's inverse from scratch (M = A^T in R, inverted; t = M^-1 in T)
    bool ok[2] = {true, true};
    for (int s = 0; s < 2; s++) {
        const int n = nspin[s];
        if (n == 0) continue;
        double amax = 0.0;
        for (int q = 0; q < n; q++) {
            const int e = s * P.n_up + q;
            double r[3] = {px(pos, cap, w, e, 0), px(pos, cap, w, e, 1), px(pos, cap, w, e, 2)};
            orbitals<T>(P, itab, dtab, s, n, r, o);
            for (int j = 0; j < n; j++) {
                work[(j * n + q) * cap + w] = (R)o.v[j];
                amax = fmax(amax, fabs((double)o.v[j]));
            }
        }
        ok[s] = invert<R>(work, n, cap, w, (R)(n * (double)Lim<R>::eps() * amax));
        if (ok[s])
            for (int k = 0; k < n * n; k++) t[(tbase[s] + k) * cap + w] = (T)work[k * cap + w];
    }
    // the local kinetic energy -1/2 sum_i (lap_i + |grad_i|^2), electron by electron (mod.rs kinetic)
    E sum = 0;
    for (int i = 0; i < ne; i++) {
        const int s = i < P.n_up ? 0 : 1, n = nspin[s], tq = tbase[s] + (i - s * P.n_up) * n;
        double r[3] = {px(pos, cap, w, i, 0), px(pos, cap, w, i, 1), px(pos, cap, w, i, 2)};
        double g[3] = {0.0, 0.0, 0.0}, l = 0.0;
        if (ok[s]) {
            orbitals<T>(P, itab, dtab, s, n, r, o);
            T gq[3] = {trow_dot<T>(o.gx, t, tq, n, cap, w), trow_dot<T>(o.gy, t, tq, n, cap, w), trow_dot<T>(o.gz, t, tq, n, cap, w)};
            T lq = trow_dot<T>(o.l, t, tq, n, cap, w) - (gq[0] * gq[0] + gq[1] * gq[1] + gq[2] * gq[2]);
            for (int k = 0; k < 3; k++) g[k] = (double)gq[k];
            l = (double)lq;
        }
        if (P.jastrow) {
            T u, gj[3], lj;
            jastrow_terms<T>(P, pos, w, i, r, u, gj, lj);
            for (int k = 0; k < 3; k++) g[k] += (double)gj[k];
            l += (double)lj;
        }
        sum += (E)l + ((E)g[0] * (E)g[0] + (E)g[1] * (E)g[1] + (E)g[2] * (E)g[2]);
    }
    kin[w] = (double)((E)-0.5 * sum);
    // Coulomb in open boundaries (coulomb.rs); the electron gas's Ewald energy is added on the host
    E v = 0;
    if (!P.periodic) {
        v = (E)P.nuclear_repulsion;
        for (int i = 0; i < ne; i++) {
            E xi = (E)px(pos, cap, w, i, 0), yi = (E)px(pos, cap, w, i, 1), zi = (E)px(pos, cap, w, i, 2);
            for (int a = 0; a < P.nuclei; a++) {
                const double* nu = P.nuc + 4 * a;
                E dx = xi - (E)nu[1], dy = yi - (E)nu[2], dz = zi - (E)nu[3];
                v -= (E)nu[0] / qmc_sqrt<E>(dx * dx + dy * dy + dz * dz);
            }
            for (int j = i + 1; j < ne; j++) {
                E dx = xi - (E)px(pos, cap, w, j, 0), dy = yi - (E)px(pos, cap, w, j, 1), dz = zi - (E)px(pos, cap, w, j, 2);
                v += (E)1 / qmc_sqrt<E>(dx * dx + dy * dy + dz * dz);
            }
        }
    }
    pot[w] = (double)v;
    counts[w] = attempted;
    counts[cap + w] = accepted;
    r2[w] = r2p;
    r2[cap + w] = r2a;
}

#define QMC_STEP(SUF, T, R, E)                                                                                                 \
    extern "C" __global__ void qmc_step_##SUF(const QmcParams P, const int* itab, const double* dtab, double* pos, T* t, R* work, \
                                              double* kin, double* pot, int* counts, double* r2) {                            \
        step<T, R, E>(P, itab, dtab, pos, t, work, kin, pot, counts, r2);                                                      \
    }
QMC_STEP(f64, double, double, double)
QMC_STEP(mixed, float, double, double)
QMC_STEP(f32, float, float, float)

// Branching: slot w of the new population is a copy of walker parent[w] of the old (elements of U: 8 or 4 bytes;
// strides the capacities of the two buffers).
template <typename U>
__device__ void copy(const U* __restrict__ src, U* __restrict__ dst, const int* __restrict__ parent, int elems, int count, int src_cap, int dst_cap) {
    const u64 total = (u64)elems * count;
    for (u64 x = blockIdx.x * (u64)blockDim.x + threadIdx.x; x < total; x += (u64)gridDim.x * blockDim.x) {
        const int e = (int)(x / count), w = (int)(x % count);
        dst[(u64)e * dst_cap + w] = src[(u64)e * src_cap + parent[w]];
    }
}
extern "C" __global__ void qmc_copy_u64(const u64* src, u64* dst, const int* parent, int elems, int count, int src_cap, int dst_cap) {
    copy<u64>(src, dst, parent, elems, count, src_cap, dst_cap);
}
extern "C" __global__ void qmc_copy_u32(const unsigned* src, unsigned* dst, const int* parent, int elems, int count, int src_cap, int dst_cap) {
    copy<unsigned>(src, dst, parent, elems, count, src_cap, dst_cap);
}

// Fractional coordinates for the ewald kernel ([w][xyz][e] in S, wrapped into [0, 1)): Cell::frac = b_k . r / 2 pi.
template <typename S> __device__ void fractions(const double* __restrict__ pos, S* __restrict__ frac, const double* b, int ne, int count, int cap) {
    const u64 total = (u64)ne * count;
    for (u64 x = blockIdx.x * (u64)blockDim.x + threadIdx.x; x < total; x += (u64)gridDim.x * blockDim.x) {
        const int e = (int)(x / count), w = (int)(x % count);
        double r[3] = {pos[(3 * e) * cap + w], pos[(3 * e + 1) * cap + w], pos[(3 * e + 2) * cap + w]};
        for (int k = 0; k < 3; k++) {
            double f = (b[3 * k] * r[0] + b[3 * k + 1] * r[1] + b[3 * k + 2] * r[2]) / 6.283185307179586;
            frac[((u64)w * 3 + k) * ne + e] = (S)(f - floor(f));
        }
    }
}
struct QmcCell {
    double b[9];
};
extern "C" __global__ void qmc_fractions_f64(const QmcCell c, const double* pos, double* frac, int ne, int count, int cap) { fractions<double>(pos, frac, c.b, ne, count, cap); }
extern "C" __global__ void qmc_fractions_f32(const QmcCell c, const double* pos, float* frac, int ne, int count, int cap) { fractions<float>(pos, frac, c.b, ne, count, cap); }
