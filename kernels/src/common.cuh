// Prelude of every qmc-bench kernel (prepended by the GPU layer before NVRTC compiles a module).
// NVRTC has no standard headers: the few things kernels share are defined here, the device maths that several kernels
// use among them (precision overloads, cubic B-spline weights, radial functors, drift), each once:
// kernels/tests/prelude.rs fails when a kernel's .cu file defines one of them again.
// The GPU layer puts generated defines before this text (kernels::maths::prelude_defines: the radial functors' form
// numbers, from kernels::maths::Form); the host build of scripts/cu-on-host.sh passes the same file to g++.
#pragma once
#ifndef RADIAL_BSPLINE
#error "the prelude's defines are missing (kernels::maths::prelude_defines, put before common.cuh)"
#endif

typedef unsigned long long u64;

// Real-number helpers that pick the float or double intrinsic from the type.
template <typename T> __device__ __forceinline__ T qmc_sqrt(T x);
template <> __device__ __forceinline__ float qmc_sqrt<float>(float x) { return sqrtf(x); }
template <> __device__ __forceinline__ double qmc_sqrt<double>(double x) { return sqrt(x); }

template <typename T> __device__ __forceinline__ T qmc_floor(T x);
template <> __device__ __forceinline__ float qmc_floor<float>(float x) { return floorf(x); }
template <> __device__ __forceinline__ double qmc_floor<double>(double x) { return floor(x); }

template <typename T> __device__ __forceinline__ T qmc_erfc(T x);
template <> __device__ __forceinline__ float qmc_erfc<float>(float x) { return erfcf(x); }
template <> __device__ __forceinline__ double qmc_erfc<double>(double x) { return erfc(x); }

// Nearest integer, ties to even.
template <typename T> __device__ __forceinline__ T qmc_rint(T x);
template <> __device__ __forceinline__ float qmc_rint<float>(float x) { return rintf(x); }
template <> __device__ __forceinline__ double qmc_rint<double>(double x) { return rint(x); }

template <typename T> __device__ __forceinline__ T qmc_exp(T x);
template <> __device__ __forceinline__ float qmc_exp<float>(float x) { return expf(x); }
template <> __device__ __forceinline__ double qmc_exp<double>(double x) { return exp(x); }

// Nearest integer, halfway cases away from zero (Rust's f64::round).
template <typename T> __device__ __forceinline__ T qmc_round(T x);
template <> __device__ __forceinline__ float qmc_round<float>(float x) { return roundf(x); }
template <> __device__ __forceinline__ double qmc_round<double>(double x) { return round(x); }

template <typename T> __device__ __forceinline__ T qmc_fabs(T x);
template <> __device__ __forceinline__ float qmc_fabs<float>(float x) { return fabsf(x); }
template <> __device__ __forceinline__ double qmc_fabs<double>(double x) { return fabs(x); }

template <typename T> __device__ __forceinline__ void qmc_sincos(T x, T* s, T* c);
template <> __device__ __forceinline__ void qmc_sincos<float>(float x, float* s, float* c) { sincosf(x, s, c); }
template <> __device__ __forceinline__ void qmc_sincos<double>(double x, double* s, double* c) { sincos(x, s, c); }

// x^e for small e >= 0 by repeated products, and 0 for e < 0 (the derivative of x^0).
template <typename T> __device__ __forceinline__ T qmc_ipow(T x, int e) {
    if (e < 0) return T(0);
    T p = T(1);
    for (int i = 0; i < e; i++) p *= x;
    return p;
}

// ---- cubic B-splines ----
// The weights of the four coefficients around fraction t in [0, 1): a = ((1 - t)^3, 3t^3 - 6t^2 + 4,
// -3t^3 + 3t^2 + 3t + 1, t^3) s, and their first and second derivatives in t (da, d2a, which the scale leaves out).
// s = 1/6 gives the weights (the host's twin: kernels::maths::bspline_weights); s = 1 the basis times 6 (the
// product by 1 folds away), for a sum that scales once at the end.
template <typename T> __device__ __forceinline__ void bspline_weights(T t, T* a, T* da, T* d2a, T s = T(1) / T(6)) {
    const T t2 = t * t, t3 = t2 * t, u = T(1) - t;
    a[0] = u * u * u * s; a[1] = (T(3) * t3 - T(6) * t2 + T(4)) * s;
    a[2] = (T(-3) * t3 + T(3) * t2 + T(3) * t + T(1)) * s; a[3] = t3 * s;
    da[0] = T(-0.5) * u * u; da[1] = T(1.5) * t2 - T(2) * t; da[2] = T(-1.5) * t2 + t + T(0.5); da[3] = T(0.5) * t2;
    d2a[0] = u; d2a[1] = T(3) * t - T(2); d2a[2] = T(1) - T(3) * t; d2a[3] = t;
}

// The grid interval of coordinate x on a periodic axis of n points over `side`: i = floor(n x wrapped fraction),
// and t, the position in grid units (t - i in [0, 1)). The one place the B-spline kernels (bspline.cu) and the sort
// of points by cell find a point's cell. (No min(): the prelude also builds on the host, scripts/cu-host.h.)
__device__ __forceinline__ int spline_interval(double x, double side, int n, double& t) {
    double u = x / side;
    u -= floor(u);
    t = u * n;
    const int i = (int)floor(t);
    return i < n - 1 ? i : n - 1;
}

// The B-spline grid cell holding `at`, as the linear index (i n[1] + j) n[2] + k of its intervals.
__device__ __forceinline__ int spline_cell(const double* at, const int* n, const double* cell) {
    int c = 0;
#pragma unroll
    for (int d = 0; d < 3; d++) {
        double t;
        c = c * n[d] + spline_interval(at[d], cell[d], n[d], t);
    }
    return c;
}

// Tricubic B-spline orbitals at a point: the table's parameters (the host's bspline::gpu::SplineParams) and the point's
// stencil, shared by bspline.cu's kernels and solid.cu's moves (which evaluate one walker's proposal in its block).
struct SplineParams {
    int nx, ny, nz;          // grid points per side
    int stride;              // padded orbitals per row
    int orbitals;            // real orbitals (threads beyond write nothing)
    int walkers;
    double cell[3];          // cell sides
    double scale;            // basis factor per dimension (1 for B-splines, 1.5 for blips)
};

// The stencil of a point: per axis the 4 grid indices around it and the weights of value, first and second derivative
// (scaled, in cell units). The same for every orbital: a block that evaluates one point (solid.cu spline_vgl_block)
// holds it once in shared memory, where bspline.cu's per-thread kernels keep it in registers. A the arithmetic type.
template <typename A> struct SplineStencil {
    int idx[3][4];
    A wv[3][4], wd[3][4], w2[3][4];
};

// Axis d of the stencil of coordinate x.
template <typename A>
__device__ __forceinline__ void spline_axis(const SplineParams& p, int d, double x, SplineStencil<A>& s) {
    const int n = d == 0 ? p.nx : d == 1 ? p.ny : p.nz;
    double t;
    const int i = spline_interval(x, p.cell[d], n, t);
    A a[4], da[4], d2a[4];
    bspline_weights<A>(A(t - i), a, da, d2a);
    A inv_h = A(n / p.cell[d]);
#pragma unroll
    for (int q = 0; q < 4; q++) {
        s.idx[d][q] = (i + n + q - 1) % n;
        s.wv[d][q] = a[q] * A(p.scale);
        s.wd[d][q] = da[q] * A(p.scale) * inv_h;
        s.w2[d][q] = d2a[q] * A(p.scale) * inv_h * inv_h;
    }
}

// ---- radial functors u(r) of the Jastrow factors (the host's kernels::jastrow::Radial) ----
// Each kernel keeps the parameters of functor f in its own layout P and names a view V that reads them, with static
// functions of (const P& p, int f):
//   int form(), int power(), int ncoef(): the form, RADIAL_BSPLINE, RADIAL_CASINO or RADIAL_PADE (generated from
//     kernels::maths::Form, the one numbering), C of CASINO or the numerator terms of Pade, the coefficients;
//   T cutoff(), T inv_h(): r_c (L of CASINO; Pade: infinite), 1/h of the B-spline grid, in T;
//   T coef(k): coefficient c_k in T.
// (Static functions of the parameters returning values, not a view object holding their address nor a pointer into
// them: NVRTC then copies a kernel parameter struct whole to local memory.) B-spline: c_k weighs basis function k around x = r inv_h, the last interval
// kept for r just below the cutoff; CASINO: (r - L)^C sum_l c_l r^l below L; Pade: r (a_1 + a_2 r + ...) /
// (1 + r (b_1 + ...)), a's then b's. Zero at and beyond the cutoff. Each parameter is read where its form needs it.

// sum_l c_{first + l} r^l over l < len and its first two derivatives (Horner), coefficients of functor f of prm
template <typename V, typename T, typename P>
__device__ __forceinline__ void horner(const P& prm, int f, int first, int len, T r, T& p, T& p1, T& p2) {
    p = p1 = p2 = T(0);
    for (int l = len - 1; l >= 0; l--) {
        p2 = p2 * r + p1;
        p1 = p1 * r + p;
        p = p * r + V::coef(prm, f, first + l);
    }
    p2 *= T(2);
}

// Screening pairs by a radial functor's cutoff, which past it is an exact zero: most pairs of a large cell lie there
// and are skipped before the square root. near_image: the minimum image d of a - b found with a product by inv_cell
// (1 / cell) instead of a division, and |d|^2. The two images differ only where a coordinate lies within an ulp of
// half a side, and there both |d|^2 agree to an ulp; past_cutoff's margin of ulps covers that, so no pair the functor
// weighs is screened out.
// inv_cell: 1 / side, and 0 for an open axis (side 0), from the host (pseudopotential::inv_side): near_image's image is
// then d itself.
__device__ __forceinline__ double near_image(const double cell[3], const double inv_cell[3], const double* a, const double* b,
                                             double d[3]) {
#pragma unroll
    for (int k = 0; k < 3; k++) {
        const double x = a[k] - b[k];
        d[k] = x - cell[k] * rint(x * inv_cell[k]);
    }
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
}
__device__ __forceinline__ bool past_cutoff(double r2, double cut) { return r2 > cut * cut * (1.0 + 1e-12); }

// u, u' and u'' of B-spline functor f of parameters prm at r, in T.
template <typename V, typename T, typename P>
__device__ __forceinline__ void bspline_functor(const P& prm, int f, T r, T& u, T& du, T& d2u) {
    u = du = d2u = T(0);
    if (r >= V::cutoff(prm, f)) return;
    const T ih = V::inv_h(prm, f);
    const T x = r * ih;
    T fi = qmc_floor(x);
    const T last = T(V::ncoef(prm, f) - 4);
    fi = fi < last ? fi : last;
    const int i = (int)fi;
    const T t = x - fi, s = T(1) / T(6), v = T(1) - t;
    const T q[4] = {V::coef(prm, f, i), V::coef(prm, f, i + 1), V::coef(prm, f, i + 2), V::coef(prm, f, i + 3)};
    T b[4], db[4], d2b[4];
    bspline_weights(t, b, db, d2b, T(1));
    // sum c_k b_k, then over 6, with c_0 (1 - t)^3 taken factor by factor (the Jastrow kernel's rounding)
    u = (q[0] * v * v * v + q[1] * b[1] + q[2] * b[2] + q[3] * b[3]) * s;
    du = (q[0] * db[0] + q[1] * db[1] + q[2] * db[2] + q[3] * db[3]) * ih;
    d2u = (q[0] * d2b[0] + q[1] * d2b[1] + q[2] * d2b[2] + q[3] * d2b[3]) * ih * ih;
}

// The same for a functor of any form: form() picks one of the three.
template <typename V, typename T, typename P>
__device__ __forceinline__ void radial_functor(const P& prm, int f, T r, T& u, T& du, T& d2u) {
    u = du = d2u = T(0);
    if (V::form(prm, f) == RADIAL_BSPLINE) {
        bspline_functor<V>(prm, f, r, u, du, d2u);
    } else if (V::form(prm, f) == RADIAL_CASINO) {
        const T cutoff = V::cutoff(prm, f);
        if (r >= cutoff) return;
        T g, g1, g2;
        horner<V>(prm, f, 0, V::ncoef(prm, f), r, g, g1, g2);
        const T t = r - cutoff;
        T tc2 = T(1);
        for (int q = 2; q < V::power(prm, f); q++) tc2 *= t;
        const T tc1 = tc2 * t, tc = tc1 * t, C = T(V::power(prm, f));
        u = tc * g;
        du = C * tc1 * g + tc * g1;
        d2u = C * (C - T(1)) * tc2 * g + T(2) * C * tc1 * g1 + tc * g2;
    } else {
        const int na = V::power(prm, f), nb = V::ncoef(prm, f) - na;
        T p, p1, p2, q = T(0), q1 = T(0), q2 = T(0);
        horner<V>(prm, f, 0, na, r, p, p1, p2);
        if (nb > 0) horner<V>(prm, f, na, nb, r, q, q1, q2);
        const T a = r * p, a1 = p + r * p1, a2 = T(2) * p1 + r * p2;
        const T b = T(1) + r * q, b1 = q + r * q1, b2 = T(2) * q1 + r * q2;
        const T ib = T(1) / b;
        u = a * ib;
        du = (a1 - u * b1) * ib;
        d2u = (a2 - u * b2 - T(2) * du * b1) * ib;
    }
}

// The view of B-spline functor f (0 same spin, 1 opposite spins, 2 electron-ion) of parameter tables P with the
// fields jn[3] (coefficients), jcut[3], jinvh[3] and jcoef[3][..] in double, as the solid and pseudopotential kernels
// keep them (jastrow_tables in solid/gpu.rs), read in T; for bspline_functor (these tables hold no other form).
template <typename T> struct BSplineTables {
    template <typename P> static __device__ __forceinline__ int ncoef(const P& p, int f) { return p.jn[f]; }
    template <typename P> static __device__ __forceinline__ T cutoff(const P& p, int f) { return (T)p.jcut[f]; }
    template <typename P> static __device__ __forceinline__ T inv_h(const P& p, int f) { return (T)p.jinvh[f]; }
    template <typename P> static __device__ __forceinline__ T coef(const P& p, int f, int k) { return (T)p.jcoef[f][k]; }
};

// ---- plane waves ----
// Orbital j of the electron gas (kernels::planewave::PlaneWaves::each): k4 = (kx, ky, kz, sine), the orbital
// cos(k.r), or sin(k.r) where sine != 0, with k and r rounded to T and everything in T: value, gradient and
// Laplacian (-k^2 times the value). Shared by planewave.cu and qmc.cu.
template <typename T>
__device__ __forceinline__ void plane_wave_vgl(const double* k4, T x, T y, T z, T& v, T& gx, T& gy, T& gz, T& l) {
    const T kx = (T)k4[0], ky = (T)k4[1], kz = (T)k4[2];
    T s, c;
    qmc_sincos(kx * x + ky * y + kz * z, &s, &c);
    const T val = k4[3] != 0.0 ? s : c, dval = k4[3] != 0.0 ? c : -s;
    v = val, gx = dval * kx, gy = dval * ky, gz = dval * kz;
    l = -(kx * kx + ky * ky + kz * kz) * val;
}

// ---- basis functions on centres (kernels::basis) and atomic orbitals (kernels::atomic::AtomicOrbitals) ----
// Basis function f's value, gradient and Laplacian at r in A (kernels::basis::vgl), from its record of
// BASIS_RECORD words f = (centre x, y, z, powers k, l, m, 1 if Slater else 0, first and end primitive; the integers
// as f64: carried in the f64s' bits instead, f9af401, they changed no time beyond the H200's run-to-run spread) and
// the primitives prims[2 n] = exponent, prims[2 n + 1] = coefficient (kernels::basis::pack): chi = P R with
// P = x^k y^l z^m of degree L; grad chi = R grad P + P (R'/r) d; lap chi = R lap P + P (R'' + 2 (L + 1) R'/r).
// Shared by atomic.cu (the batched engines), qmc.cu (the driver's walker per thread) and gemm.cu (paper 004's basis
// evaluation). The primitives may come in P = A (gemm.cu's f32 kernel: a cvt.rn.f32.f64 per exponent and
// coefficient runs on sm_90's 64-bit conversion pipe, 16 a clock per SM against 128 f32 operations; without them the
// f32 kernel ran 1-5% faster on the H200, b0bd25f); rounding them once on the host gives the same values.
template <typename A, typename P = double>
__device__ __forceinline__ void atomic_function_vgl(const double* __restrict__ f, const P* __restrict__ prims, const double* r, A* chi) {
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

// A restored nuclear cusp (kernels::atomic::cusp::Cusp::vgl) from its record c = (orbital, centre x, y, z, r_c, sign,
// a0..a4): inside r_c of the centre, out = [value, gx, gy, gz, Laplacian] of s exp(p(r)), p = a0 + a1 r + ... + a4 r^4,
// in A (Horner), and true; false (out untouched) outside. grad = v p' d / r, lap = v (p'' + p'^2 + 2 p' / r).
template <typename A>
__device__ __forceinline__ bool atomic_cusp_vgl(const double* __restrict__ c, const double* r, A* out) {
    const A d[3] = {(A)(r[0] - c[1]), (A)(r[1] - c[2]), (A)(r[2] - c[3])};
    const A r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    if (r2 >= (A)(c[4] * c[4])) return false;
    const A tiny = sizeof(A) == 4 ? A(1.17549435e-38f) : A(2.2250738585072014e-308);
    A dist = qmc_sqrt(r2);
    dist = dist > tiny ? dist : tiny;
    const A a0 = (A)c[6], a1 = (A)c[7], a2 = (A)c[8], a3 = (A)c[9], a4 = (A)c[10];
    const A p = a0 + dist * (a1 + dist * (a2 + dist * (a3 + dist * a4)));
    const A d1 = a1 + dist * (A(2) * a2 + dist * (A(3) * a3 + dist * A(4) * a4));
    const A d2 = A(2) * a2 + dist * (A(6) * a3 + dist * A(12) * a4);
    const A v = (A)c[5] * qmc_exp(p);
    const A s = v * d1 / dist;
    out[0] = v, out[1] = s * d[0], out[2] = s * d[1], out[3] = s * d[2];
    out[4] = v * (d2 + d1 * d1 + A(2) * d1 / dist);
    return true;
}

// ---- drift-diffusion ----
// The drift displacement tau v_bar of velocity v (grad ln psi), v limited as Umrigar, Nightingale and Runge
// (qmc::walker::drift), in double.
__device__ __forceinline__ void drift(const double* v, double tau, double* out) {
    const double v2t = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) * tau;
    const double f = v2t < 1e-8 ? 1.0 - 0.5 * v2t : (sqrt(1.0 + 2.0 * v2t) - 1.0) / v2t;
    for (int k = 0; k < 3; k++) out[k] = f * tau * v[k];
}

// Warp-wide sum with shuffles: no reliance on lockstep warps.
template <typename T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Exclusive scan of x[0..n) into y[0..n) by one block (blockDim.x a multiple of 32, at most 1024) in tiles of
// blockDim.x, in T; returns the sum of all n to every thread. y may be x (each thread reads its entry before writing
// it, and only its own).
template <typename In, typename T> __device__ T block_scan(const In* x, T* y, int n) {
    __shared__ T warps[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    T carry = T(0);
    for (int base = 0; base < n; base += blockDim.x) { // the same trip count in every thread
        const int i = base + threadIdx.x;
        const T v = i < n ? (T)x[i] : T(0);
        T inc = v;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const T u = __shfl_up_sync(0xffffffffu, inc, o);
            if (lane >= o) inc += u;
        }
        if (lane == 31) warps[warp] = inc;
        __syncthreads();
        if (warp == 0) {
            T s = lane < nw ? warps[lane] : T(0);
#pragma unroll
            for (int o = 1; o < 32; o <<= 1) {
                const T u = __shfl_up_sync(0xffffffffu, s, o);
                if (lane >= o) s += u;
            }
            if (lane < nw) warps[lane] = s;
        }
        __syncthreads();
        if (i < n) y[i] = carry + (warp > 0 ? warps[warp - 1] : T(0)) + inc - v;
        carry += warps[nw - 1];
        __syncthreads(); // everyone has read warps before the next tile writes it
    }
    return carry;
}

// Device-to-device copy used to measure the bandwidth ceiling (16-byte accesses, grid-stride).
extern "C" __global__ void qmc_copy_f4(const float4* __restrict__ src, float4* __restrict__ dst, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) dst[i] = src[i];
}

// Arithmetic ceiling: `rounds` x 16 independent FMA chains per thread (one FMA = 2 flops); the result is stored so
// the compiler keeps every chain. Launched over all SMs by Gpu::fma_rate.
template <typename T> __device__ void qmc_fma_body(T* out, int rounds) {
    T x[16];
#pragma unroll
    for (int k = 0; k < 16; k++) x[k] = T(threadIdx.x + k) * T(1e-3);
    const T a = T(0.999999), b = T(1e-7);
    for (int r = 0; r < rounds; r++) {
#pragma unroll
        for (int k = 0; k < 16; k++) x[k] = fma(x[k], a, b);
    }
    T s = T(0);
#pragma unroll
    for (int k = 0; k < 16; k++) s += x[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
extern "C" __global__ void qmc_fma_f64(double* out, int rounds) { qmc_fma_body<double>(out, rounds); }
extern "C" __global__ void qmc_fma_f32(float* out, int rounds) { qmc_fma_body<float>(out, rounds); }

// Shared-memory ceiling: each block streams its 32 KB of shared memory `rounds` times with 16-byte loads (the reads
// of a kernel that keeps its working set on chip, e.g. the lattice chains' W); the sum is stored so nothing is
// optimised away. Bytes read = rounds x 32 KB per block. Launched by Gpu::shared_bandwidth.
extern "C" __global__ void qmc_shared_read(float* out, int rounds) {
    __shared__ float4 buf[2048];
    for (int i = threadIdx.x; i < 2048; i += blockDim.x) buf[i] = make_float4(i, i + 1, i + 2, i + 3);
    __syncthreads();
    float4 acc = make_float4(0, 0, 0, 0);
    for (int r = 0; r < rounds; r++) {
#pragma unroll 4
        for (int i = threadIdx.x; i < 2048; i += blockDim.x) {
            const float4 v = buf[(i + r) & 2047];
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}

// Paper 000's walker layout (pseudopotential/slab.rs): each walker's arrays in one slab, all slabs in one allocation;
// walker w's array at base + w * bytes + offset (byte offsets, multiples of 256).
struct WalkerSlab { long long bytes, pos, rot, inv, dpsi; };
template <typename T>
__device__ __forceinline__ T* slab_at(unsigned char* base, const WalkerSlab& s, long long w, long long offset) {
    return (T*)(base + w * s.bytes + offset);
}
// The same for kernels that only read the slabs (a const base gives const arrays, read through the read-only path).
template <typename T>
__device__ __forceinline__ const T* slab_at(const unsigned char* base, const WalkerSlab& s, long long w, long long offset) {
    return (const T*)(base + w * s.bytes + offset);
}

// ---- random numbers: the host's streams on the device, bit for bit ----
// rand_xoshiro's Xoshiro256PlusPlus seeded as crate::rng::rng(seed, stream), and the draws of rand 0.9 the kernels'
// CPU twins make, so a double-precision GPU run follows the CPU trajectory. NVRTC contracts a * b + c into an FMA
// (-fmad=true); Rust never does: where that could change the bits, the roundings are spelled out (__dmul_rn ...).
struct Xoshiro {
    u64 s[4];
};
__device__ __forceinline__ u64 rotl(u64 x, int k) { return (x << k) | (x >> (64 - k)); }
__device__ __forceinline__ u64 splitmix_next(u64* x) {
    *x += 0x9e3779b97f4a7c15ull;
    u64 z = *x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
// crate::rng::rng: mix (seed, stream), then seed_from_u64 (SplitMix64 fills the four words, little-endian).
__device__ Xoshiro rng_seed(u64 seed, u64 stream) {
    u64 z = seed ^ (stream * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    u64 x = z ^ (z >> 31);
    Xoshiro r;
    for (int k = 0; k < 4; k++) r.s[k] = splitmix_next(&x);
    if ((r.s[0] | r.s[1] | r.s[2] | r.s[3]) == 0) {  // rand_xoshiro's zero-seed rule: seed_from_u64(0)
        u64 y = 0;
        for (int k = 0; k < 4; k++) r.s[k] = splitmix_next(&y);
    }
    return r;
}
// rng::stream: walker k's stream at step `step` for purpose `tag` (the shift and xor wrap as in Rust's u64).
__device__ __forceinline__ Xoshiro walker_stream(u64 seed, u64 tag, u64 step, u64 k) {
    return rng_seed(seed ^ (tag * 0xA24BAED4963EE407ull), (step << 24) ^ k);
}
__device__ __forceinline__ u64 next_u64(Xoshiro& r) {
    u64 out = rotl(r.s[0] + r.s[3], 23) + r.s[0];
    u64 t = r.s[1] << 17;
    r.s[2] ^= r.s[0];
    r.s[3] ^= r.s[1];
    r.s[1] ^= r.s[2];
    r.s[0] ^= r.s[3];
    r.s[2] ^= t;
    r.s[3] = rotl(r.s[3], 45);
    return out;
}
// rand's StandardUniform f64: the top 53 bits times 2^-53, in [0, 1) (exact: a contraction cannot change it).
__device__ __forceinline__ double uniform(Xoshiro& r) { return (double)(next_u64(r) >> 11) * 1.1102230246251565e-16; }
// rand's random_range(lo..hi) for f64 (uniform_float.rs, sample_single): 52 random bits as the mantissa of a double
// in [1, 2), minus 1, times (hi - lo), plus lo; rounded after the product as Rust rounds it.
__device__ __forceinline__ double uniform_range(Xoshiro& r, double lo, double hi) {
    const double one_two = __longlong_as_double((long long)((next_u64(r) >> 12) | 0x3FF0000000000000ull));
    return __dadd_rn(__dmul_rn(one_two - 1.0, hi - lo), lo);
}
// rng::gaussian3: two Box-Muller pairs, the second's sine unused.
__device__ void gaussian3(Xoshiro& r, double* g) {
    const double tau = 6.283185307179586;
    double u1 = 1.0 - uniform(r), u2 = uniform(r);
    double rr = sqrt(-2.0 * log(u1)), t = tau * u2;
    g[0] = rr * cos(t);
    g[1] = rr * sin(t);
    u1 = 1.0 - uniform(r);
    u2 = uniform(r);
    rr = sqrt(-2.0 * log(u1));
    t = tau * u2;
    g[2] = rr * cos(t);
}
// pseudopotential::quadrature::random_rotation: a unit quaternion by rejection in the 4-ball, as a row-major 3x3
// rotation, every sum in Rust's order and rounding.
__device__ void random_rotation(Xoshiro& r, double* rot) {
    double q[4] = {0.0, 0.0, 0.0, 0.0}, n2 = 0.0;
    while (!(n2 >= 1e-6 && n2 <= 1.0)) {
        for (int k = 0; k < 4; k++) q[k] = uniform_range(r, -1.0, 1.0);
        n2 = 0.0;
        for (int k = 0; k < 4; k++) n2 = __dadd_rn(n2, __dmul_rn(q[k], q[k]));
    }
    const double n = sqrt(n2);
    const double a = q[0] / n, b = q[1] / n, c = q[2] / n, d = q[3] / n;
    const double aa = __dmul_rn(a, a), bb = __dmul_rn(b, b), cc = __dmul_rn(c, c), dd = __dmul_rn(d, d);
    const double ab = __dmul_rn(a, b), ac = __dmul_rn(a, c), ad = __dmul_rn(a, d);
    const double bc = __dmul_rn(b, c), bd = __dmul_rn(b, d), cd = __dmul_rn(c, d);
    rot[0] = __dsub_rn(__dsub_rn(__dadd_rn(aa, bb), cc), dd);
    rot[1] = 2.0 * __dsub_rn(bc, ad);
    rot[2] = 2.0 * __dadd_rn(bd, ac);
    rot[3] = 2.0 * __dadd_rn(bc, ad);
    rot[4] = __dsub_rn(__dadd_rn(__dsub_rn(aa, bb), cc), dd);
    rot[5] = 2.0 * __dsub_rn(cd, ab);
    rot[6] = 2.0 * __dsub_rn(bd, ac);
    rot[7] = 2.0 * __dadd_rn(cd, ab);
    rot[8] = __dadd_rn(__dsub_rn(__dsub_rn(aa, bb), cc), dd);
}

// ---- delayed (Woodbury rank-k) inverse updates: the per-walker steps shared by the determinant and solid kernels ----
// The GPU twin of determinant::delayed (see its docs). One matrix per block; the inverse's rows in S, its pending rows
// in P and B^-1 in B (deduced from binv; the determinant kernel: P = B = S; the solid: P = S, B = A, since its
// pending rows are new rows rounded to S and rows of the S inverse, exact in S, while B^-1 is computed) in slots
// l < m: v [slot][ld] (row changes, or the new rows of replaced rows), ut [slot][ld] (the rows t[q_l] of the inverse
// the delay started from), binv [slot][kmax] (B^-1, zero rows and columns for empty slots), p [slot] (V t[q] of the
// last column, A), rep [slot] (the row a slot's new row replaces, -1 where the slot holds a change or nothing; null:
// every slot holds a change). At most 64 slots.

// p_l = v_l . tq - [rep_l == q] for l < m (into p and sp), then sz = B^-1 p: what column q of the current inverse,
// tq[i] - sum_l ut[l][i] sz[l], needs (delayed_entry). Every thread of the block calls it (barriers inside).
template <typename S, typename P, typename A, typename B>
__device__ void delayed_z(int m, int n, int q, const S* __restrict__ tq, const P* __restrict__ v, const P* __restrict__ ut, size_t ld,
                          const B* __restrict__ binv, int kmax, const int* __restrict__ rep, A* __restrict__ p, A* sp, A* sz) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    if (m == 0) return;
    for (int j = warp; j < m; j += nw) {
        A s = A(0);
        for (int i = lane; i < n; i += 32) s += A(v[(size_t)j * ld + i]) * A(tq[i]);
        s = warp_sum(s);
        if (lane == 0) {
            if (rep && rep[j] == q) s -= A(1);
            sp[j] = s;
            p[j] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x < m) {
        const B* b = binv + (size_t)threadIdx.x * kmax;
        A s = A(0);
        for (int l = 0; l < m; l++) s += A(b[l]) * sp[l];
        sz[threadIdx.x] = s;
    }
    __syncthreads();
}

// Entry i of column q of the current inverse (after delayed_z).
template <typename S, typename P, typename A>
__device__ __forceinline__ A delayed_entry(int i, int m, const S* __restrict__ tq, const P* __restrict__ ut, size_t ld, const A* sz) {
    A c = A(tq[i]);
    for (int l = 0; l < m; l++) c -= A(ut[(size_t)l * ld + i]) * sz[l];
    return c;
}

// Accept the move whose column delayed_z gave (p: its V t[q]) into slot m: `row(i)` (in S) is the row change, or with
// `replaced` >= 0 the new row of row `replaced`. d_l = row . ut_l - [rep_l == replaced], beta = 1 + row . tq -
// [replaced >= 0], x = B^-1 p, y = d^T B^-1, s = beta - d . x: B^-1 grows to [[B^-1 + x y^T / s, -x / s],
// [-y^T / s, 1 / s]]; v and ut gain the rows `row` and tq. Every thread of the block calls it (barriers inside);
// on return each thread has written v[m][i] for its own i (i = threadIdx.x + k blockDim.x) and nothing after.
template <typename S, typename P, typename A, typename Row, typename B>
__device__ void delayed_grow(const Row& row, int n, int m, int kmax, int replaced, const S* __restrict__ tq, P* __restrict__ v,
                             P* __restrict__ ut, size_t ld, B* __restrict__ binv, int* __restrict__ rep, const A* __restrict__ p) {
    __shared__ A sd[65], sx[64], sy[64];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    for (int j = warp; j <= m; j += nw) {
        A s = A(0);
        if (j < m)
            for (int i = lane; i < n; i += 32) s += A(row(i)) * A(ut[(size_t)j * ld + i]);
        else
            for (int i = lane; i < n; i += 32) s += A(row(i)) * A(tq[i]);
        s = warp_sum(s);
        if (lane == 0) {
            if (j < m ? (replaced >= 0 && rep && rep[j] == replaced) : replaced >= 0) s -= A(1);
            sd[j] = s;
        }
    }
    __syncthreads();
    if (threadIdx.x < m) {
        const int r = threadIdx.x;
        A x = A(0), y = A(0);
        for (int l = 0; l < m; l++) {
            x += A(binv[(size_t)r * kmax + l]) * p[l];
            y += sd[l] * A(binv[(size_t)l * kmax + r]);
        }
        sx[r] = x;
        sy[r] = y;
    }
    __syncthreads();
    A s = A(1) + sd[m];
    for (int l = 0; l < m; l++) s -= sd[l] * sx[l];
    const int m1 = m + 1;
    for (int idx = threadIdx.x; idx < m1 * m1; idx += blockDim.x) {
        const int i = idx / m1, j = idx % m1;
        A val;
        if (i < m && j < m) val = A(binv[(size_t)i * kmax + j]) + sx[i] * sy[j] / s;
        else if (i < m) val = -sx[i] / s;
        else if (j < m) val = -sy[j] / s;
        else val = A(1) / s;
        binv[(size_t)i * kmax + j] = B(val);
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        v[(size_t)m * ld + i] = P(row(i));
        ut[(size_t)m * ld + i] = P(tq[i]);
    }
    if (rep && threadIdx.x == 0) rep[m] = replaced;
}
