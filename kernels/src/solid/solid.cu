// Whole QMC step of the synthetic solid, every walker at once (paper 000's loop interchange): the kernels of the
// sweep (one launch per stage per electron, all walkers) and of the measurement, around the bspline kernel (orbitals),
// the ewald kernel (Coulomb) and the pseudopotential kernel (nonlocal energy), which the Rust side launches.
// Walker data: each walker's arrays in its slab (`walkers`, layout p.slab, see pseudopotential/slab.rs): pos [e][3]
// f64; rot [ion][9] f64 (quadrature rotations); inv [e][stride] S (transposed inverse rows, spin blocks of n rows);
// dpsi [e][3][stride] S (orbital gradients at the current positions). Per step: moves [w][e][4] f64 (3 normals,
// 1 uniform, drawn with the rotations by solid_draws in the CPU engine's order); phi [point][5][stride] A (bspline
// VGL output).
// S: storage type, A: arithmetic type (double/double, or float/double for "mixed"). Each kernel mirrors a line of
// solid/cpu.rs, in the same arithmetic, so a double run follows the CPU engine's trajectory.

#define SOLID_MAX_JC 16

struct SolidParams {
    int walkers, electrons, n, stride, ions, dmc;
    double tau;
    double cell[3];
    // near_image's 1 / side of each axis (0 for an open one: pseudopotential::inv_side), worked out on the host: three
    // f64 divisions in every thread of every Jastrow sum were 5% of the window kernel's instructions (Nsight Compute,
    // H100, 7e75edc)
    double inv_cell[3];
    int jn[3];          // coefficients of the functors: same spin, opposite spin, electron-ion
    int pad;
    double jcut[3], jinvh[3];
    double jcoef[3][SOLID_MAX_JC];
    WalkerSlab slab;
};

template <typename T, typename B> __device__ __forceinline__ T* pos_of(const SolidParams& p, B* walkers, long long w) {
    return slab_at<T>(walkers, p.slab, w, p.slab.pos);
}
template <typename T, typename B> __device__ __forceinline__ T* inv_of(const SolidParams& p, B* walkers, long long w) {
    return slab_at<T>(walkers, p.slab, w, p.slab.inv);
}
template <typename T, typename B> __device__ __forceinline__ T* dpsi_of(const SolidParams& p, B* walkers, long long w) {
    return slab_at<T>(walkers, p.slab, w, p.slab.dpsi);
}
// Walker w's draws for electron e's move, moves [walker][electron][4]: chi, then the Metropolis uniform.
__device__ __forceinline__ const double* draws_of(const SolidParams& p, const double* moves, int w, int e) {
    return moves + ((size_t)w * p.electrons + e) * 4;
}

// Sum of N values over the block (a multiple of 32 threads, at most 1024); thread 0 gets the sums. The warps' partial
// sums are added by warp 0 as a tree (a lane each, then warp_sum): thread 0 adding them one after another took 16
// dependent shared-memory loads and adds a value at 512 threads, and a move has four of these sums, 17 values, on
// its critical path at every walker count (issue #24: the fixed cost per move). Measured on the H200 (gpu-host.sh
// solid-fixed, 256 electrons, mixed, the build before interleaved P C C P, 60ce681): the step 7% faster at 32 to 128
// walkers, 4% at 256, 2% at 512; the fixed cost a move (the time's intercept over walkers) from 26.0 to 24.0 us.
// `active`: the threads that may hold a value (the caller's loop bound). The warps past them hold zeros, whose partial
// sums are zeros without a shuffle: at 256 electrons and 512 threads a walker, the determinant's sums run over 128
// entries, so 12 of the 16 warps shuffled zeros (Nsight Compute, H100, the window kernel at 7e75edc: warp_sum 18% of
// its instructions). The sums are the same bit for bit (a warp of +0 values sums to +0). With inv_cell from the host
// (f8cab3e; H100, against 7e75edc interleaved P C C P, mixed, each build's two runs within 0.2%): the window kernel's
// instructions a block-move 27.5k -> 24.9k, the step at 256 electrons 1.7% faster at 32 to 256 walkers and 0.6% at
// 512, the fixed cost a move 16.6 -> 16.2 us, one GPU's half-batch bound (t(512) / 2 t(256)) 0.813 -> 0.822.
// With K > 0 the first K values have a bound of their own, `lo` (move_begin's determinant values beside the Jastrow's).
// Tried and not kept (1b03c27, 2026-12-06): every warp adding the tree, and delayed_z's and delayed_grow's dot products
// in rounds every warp runs through, so that no shuffle sits in a branch on the warp (ptxas gives each such shuffle an
// out-of-line path for diverged lanes: the window kernel's instructions, mixed, 7755 -> 6091, static). On the H100
// (solid-fixed, against d4818fd interleaved P A C C A P) the step at 256 electrons ran 2.5% to 5.4% slower at 32 to 512
// walkers, and 1.8% to 5.8% slower with the `active` bound dropped as well: the other warps' redundant shuffles take
// issue slots from warp 0's, and the out-of-line paths are never taken.
template <typename A, int N, int K = 0> __device__ void block_sum(A v[N], int active, int lo = 0) {
    __shared__ A sh[N][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (warp * 32 < active)
#pragma unroll
        for (int c = 0; c < N; c++)
            if (c >= K || warp * 32 < lo) v[c] = warp_sum(v[c]);
    if (lane == 0)
#pragma unroll
        for (int c = 0; c < N; c++) sh[c][warp] = v[c];
    __syncthreads();
    if (warp == 0) {
        const bool held = lane < (int)(blockDim.x >> 5);
#pragma unroll
        for (int c = 0; c < N; c++) v[c] = warp_sum(held ? sh[c][lane] : A(0));
    }
    __syncthreads();
}

// u, u', u'' of functor f at r (common.cuh radial_functor: jastrow::Radial, Form::BSpline), in A.
template <typename A> __device__ __forceinline__ void functor(const SolidParams& p, int f, A r, A out[3]) {
    bspline_functor<BSplineTables<A>>(p, f, r, out[0], out[1], out[2]);
}

// The threads of jastrow_terms that hold a term (a particle each: the electrons, then the ions), block_sum's bound.
__device__ __forceinline__ int jastrow_items(const SolidParams& p) { return p.electrons + p.ions; }

// This thread's share of sum_{j != e} u(|at - r_j|) + sum_I chi(|at - R_I|): value, gradient, Laplacian.
template <typename A>
__device__ void jastrow_terms(const SolidParams& p, const double* __restrict__ pw, const double* __restrict__ ions,
                              int e, const double at[3], A acc[5]) {
    const int half = p.n;
    const int total = jastrow_items(p);
    // Most pairs lie beyond the functors' cutoff (half a diamond cell's side; 1536 electrons fill 48 cells): they are
    // screened out (common.cuh near_image, past_cutoff). The pairs kept take near_image's image: it agrees with a
    // division's except within an ulp of half a side, which lies beyond the cutoff (at most half the smallest side).
    const double* inv_cell = p.inv_cell;
    for (int o = threadIdx.x; o < total; o += blockDim.x) {
        if (o == e) continue;
        const double* b = o < p.electrons ? pw + 3 * (size_t)o : ions + 3 * (size_t)(o - p.electrons);
        const int f = o < p.electrons ? ((o < half) != (e < half)) : 2;
        double d[3];
        const double r2 = near_image(p.cell, inv_cell, at, b, d);
        if (past_cutoff(r2, p.jcut[f])) continue;
        const double r = sqrt(r2);
        A u[3];
        functor<A>(p, f, (A)r, u);
        const A dr = u[1] / (A)r;
        acc[0] += u[0];
#pragma unroll
        for (int k = 0; k < 3; k++) acc[1 + k] += dr * (A)d[k];
        acc[4] += u[2] + A(2) * dr;
    }
}

// solid::cpu::accept: Metropolis-Hastings with the drift-diffusion Green's functions.
__device__ bool mh_accept(double ratio, int fixed_node, const double old[3], const double nw[3], const double chi[3],
                          const double g_new[3], double tau, double u) {
    if (!isfinite(ratio) || ratio == 0.0 || (fixed_node && ratio < 0.0)) return false;
    double dn[3], back[3];
    drift(g_new, tau, dn);
    for (int k = 0; k < 3; k++) back[k] = old[k] - nw[k] - dn[k];
    const double c2 = chi[0] * chi[0] + chi[1] * chi[1] + chi[2] * chi[2];
    const double b2 = back[0] * back[0] + back[1] * back[1] + back[2] * back[2];
    const double log_accept = 2.0 * log(fabs(ratio)) + (c2 - b2) / (2.0 * tau);
    return log_accept >= 0.0 || u < exp(log_accept);
}

// grad ln D of electron e at its position: the stored gradient rows dotted with the inverse row -> g[w][1..3].
// det_grad_terms: this thread's share of the sums (block_sum's bound p.stride).
template <typename S, typename A>
__device__ void det_grad_terms(const SolidParams& p, int e, const unsigned char* __restrict__ walkers, A acc[3]) {
    const int w = blockIdx.x;
    const S* row = inv_of<const S>(p, walkers, w) + (size_t)e * p.stride;
    const S* d = dpsi_of<const S>(p, walkers, w) + (size_t)e * 3 * p.stride;
    for (int i = threadIdx.x; i < p.stride; i += blockDim.x) {
        const A r = (A)row[i];
#pragma unroll
        for (int k = 0; k < 3; k++) acc[k] += (A)d[(size_t)k * p.stride + i] * r;
    }
}
template <typename S, typename A>
__device__ void det_grad(const SolidParams p, int e, const unsigned char* __restrict__ walkers, double* __restrict__ g) {
    A acc[3] = {A(0), A(0), A(0)};
    det_grad_terms<S, A>(p, e, walkers, acc);
    block_sum<A, 3>(acc, p.stride);
    if (threadIdx.x == 0)
        for (int k = 0; k < 3; k++) g[4 * blockIdx.x + 1 + k] = (double)acc[k];
}

// Thread 0 of jastrow_move: the proposal (phase 0) or the decision (phase 1) from the block's Jastrow sums s.
template <typename A>
__device__ void jastrow_decide(const SolidParams& p, int e, int phase, double* __restrict__ pw, const double* __restrict__ mv,
                               const double at[3], const A s[5], const double* g, double* __restrict__ jold,
                               double* __restrict__ newpos, double* __restrict__ spline_pos, int* __restrict__ accept,
                               double* __restrict__ tally) {
    const int w = blockIdx.x;
    const double st = sqrt(p.tau);
    const double chi[3] = {st * mv[0], st * mv[1], st * mv[2]};
    double grad[3];
    for (int k = 0; k < 3; k++) grad[k] = g[4 * w + 1 + k] + (double)s[1 + k];
    if (phase == 0) {
        double dr[3];
        drift(grad, p.tau, dr);
        jold[6 * w] = (double)s[0];
        for (int k = 0; k < 3; k++) {
            const double x = at[k] + dr[k] + chi[k];
            newpos[3 * w + k] = x;
            spline_pos[3 * w + k] = x;
        }
    } else {
        const double old[3] = {pw[3 * e], pw[3 * e + 1], pw[3 * e + 2]};
        const double ratio = g[4 * w] * exp((double)s[0] - jold[6 * w]);
        const bool a = mh_accept(ratio, p.dmc, old, at, chi, grad, p.tau, mv[3]);
        accept[w] = a;
        // the tally [walker][3]: accepted moves, sum |r' - r|^2 over proposals and over accepted ones (tau_eff)
        double dr2 = 0.0;
        for (int k = 0; k < 3; k++) dr2 += (at[k] - old[k]) * (at[k] - old[k]);
        tally[3 * w + 1] += dr2;
        if (a) {
            for (int k = 0; k < 3; k++) pw[3 * e + k] = at[k];
            tally[3 * w] += 1.0;
            tally[3 * w + 2] += dr2;
        }
    }
}

// The rest of phase 0 from the Jastrow sums at the old position, s (thread 0's, after block_sum): thread 0 proposes
// the move, then the block sums the Jastrow at the proposal.
template <typename A>
__device__ void jastrow_propose(const SolidParams& p, int e, double* __restrict__ pw, const double* __restrict__ ions,
                                const double* __restrict__ mv, const double at[3], const A s[5], const double* g,
                                double* __restrict__ jold, double* __restrict__ newpos, double* __restrict__ spline_pos) {
    const int w = blockIdx.x;
    // thread 0's proposal reaches the block through shared memory: read back from newpos (a __restrict__ pointer
    // here, which lets the compiler order its loads against the barrier) in the window's loop of moves (move_window),
    // every thread but thread 0 summed the Jastrow at the previous contents (solid::tests: the window's moves against
    // the three launches')
    __shared__ double proposal[3];
    if (threadIdx.x == 0) {
        jastrow_decide<A>(p, e, 0, pw, mv, at, s, g, jold, newpos, spline_pos, nullptr, nullptr);
        for (int k = 0; k < 3; k++) proposal[k] = newpos[3 * w + k];
    }
    __syncthreads();
    const double to[3] = {proposal[0], proposal[1], proposal[2]};
    A t[5] = {A(0), A(0), A(0), A(0), A(0)};
    jastrow_terms<A>(p, pw, ions, e, to, t);
    block_sum<A, 5>(t, jastrow_items(p));
    if (threadIdx.x == 0)
        for (int k = 0; k < 5; k++) jold[6 * w + 1 + k] = (double)t[k];
}

// Phase 0: Jastrow at the old position, the proposal r' = r + drift(grad ln Psi) + sqrt(tau) chi, then the Jastrow at
// r' into jold [w][6] (entry 0 the old value, 1..5 the proposal's sums): the walker's positions are read twice in a
// row, the second time from cache. Apart, the two passes sat on either side of the orbitals' evaluation, whose table
// rows pushed the positions (46 KB a walker at 1536 electrons) out of L2 between them, so each pass read them from
// memory. Phase 1: the ratio with the proposal's sums, Metropolis-Hastings; on accept the position moves; the tally of
// moves and displacements grows (thread 0 alone). The same sums as computing them in phase 1, bit for bit.
template <typename A>
__device__ void jastrow_move(const SolidParams p, int e, int phase, unsigned char* __restrict__ walkers, const double* __restrict__ ions,
                             const double* __restrict__ moves, const double* g, double* __restrict__ jold,
                             double* __restrict__ newpos, double* __restrict__ spline_pos, int* __restrict__ accept,
                             double* __restrict__ tally) {
    const int w = blockIdx.x;
    double* pw = pos_of<double>(p, walkers, w);
    const double* mv = draws_of(p, moves, w, e);
    if (phase == 1) {
        // the rest is thread 0's; the others carry on (the fused kernels below synchronise after it)
        if (threadIdx.x == 0) {
            const double at[3] = {newpos[3 * w], newpos[3 * w + 1], newpos[3 * w + 2]};
            A s[5];
            for (int k = 0; k < 5; k++) s[k] = (A)jold[6 * w + 1 + k];
            jastrow_decide<A>(p, e, 1, pw, mv, at, s, g, jold, newpos, spline_pos, accept, tally);
        }
        return;
    }
    const double at[3] = {pw[3 * e], pw[3 * e + 1], pw[3 * e + 2]};
    A s[5] = {A(0), A(0), A(0), A(0), A(0)};
    jastrow_terms<A>(p, pw, ions, e, at, s);
    block_sum<A, 5>(s, jastrow_items(p));
    jastrow_propose<A>(p, e, pw, ions, mv, at, s, g, jold, newpos, spline_pos);
}

// Ratio det(A')/det(A) and grad ln D' at the proposal: the VGL rows (rounded to S, the row the update writes) dotted
// with column q of the inverse -> g[w][0] = ratio, g[w][1..3] = gradient; the S rows are kept in urow [w][4][stride].
// Rank-1 path: the column is the inverse row itself, saved in tk [w][stride] (Sherman-Morrison's pivot row, which its
// own update overwrites). Delayed path: the column against the pending moves, which det_column left in tk.
template <typename S, typename A, bool DELAYED>
__device__ void det_ratio(const SolidParams p, int e, const A* __restrict__ phi, const unsigned char* __restrict__ walkers,
                          S* __restrict__ urow, double* __restrict__ g, A* __restrict__ tk) {
    const int w = blockIdx.x;
    const S* row = inv_of<const S>(p, walkers, w) + (size_t)e * p.stride;
    const A* ph = phi + (size_t)w * 5 * p.stride;
    S* u = urow + (size_t)w * 4 * p.stride;
    A acc[4] = {A(0), A(0), A(0), A(0)};
    for (int i = threadIdx.x; i < p.stride; i += blockDim.x) {
        // (entries of the column past n are zero: never written)
        const A r = DELAYED ? tk[(size_t)w * p.stride + i] : (A)row[i];
        if (!DELAYED) tk[(size_t)w * p.stride + i] = r;
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const S x = (S)ph[(size_t)c * p.stride + i];
            u[(size_t)c * p.stride + i] = x;
            acc[c] += (A)x * r;
        }
    }
    block_sum<A, 4>(acc, p.stride);
    if (threadIdx.x == 0) {
        g[4 * w] = (double)acc[0];
        for (int k = 0; k < 3; k++) g[4 * w + 1 + k] = (double)(acc[1 + k] / acc[0]);
    }
}

// ---- delayed updates (solid::Params::delay > 1): the electrons of a spin in windows of kmax; slot = the electron's
// place in its window. Pending moves per walker: v, ut [w][kmax][stride] in S (the new value rows, rounded to S as
// the update writes them, and the inverse rows they started from: both exact in S, so f32 rows in mixed precision
// lose nothing and halve the bytes each move reads), binv [w][kmax][kmax] and pbuf [w][kmax] in A (computed, f64 in
// mixed precision too: determinant::delayed says why), rep [w][kmax] (the row each slot replaces, -1 empty); the
// steps themselves are common.cuh's delayed_z, delayed_entry and delayed_grow, the apply cuBLAS's (solid/gpu.rs).

// grad ln D of electron e at its position: column q of the current inverse against the window's pending moves into
// col [w][stride] (A), the stored gradient rows dotted with it -> g[w][1..3].
// det_column_terms: this thread's share of the sums (block_sum's bound p.n), after delayed_z (barriers inside).
template <typename S, typename A>
__device__ void det_column_terms(const SolidParams& p, int e, int slot, int kmax, const unsigned char* __restrict__ walkers,
                                 const S* __restrict__ v, const S* __restrict__ ut, const A* __restrict__ binv,
                                 const int* __restrict__ rep, A* __restrict__ pbuf, A* __restrict__ col, A acc[3]) {
    __shared__ A sp[64], sz[64];
    const int w = blockIdx.x, q = e % p.n;
    const size_t ks = (size_t)kmax * p.stride;
    const S* tq = inv_of<const S>(p, walkers, w) + (size_t)e * p.stride;
    const S* uw = ut + w * ks;
    delayed_z<S, S, A>(slot, p.n, q, tq, v + w * ks, uw, p.stride, binv + (size_t)w * kmax * kmax, kmax, rep + (size_t)w * kmax,
                    pbuf + (size_t)w * kmax, sp, sz);
    const S* d = dpsi_of<const S>(p, walkers, w) + (size_t)e * 3 * p.stride;
    for (int i = threadIdx.x; i < p.n; i += blockDim.x) {
        const A c = delayed_entry<S, S, A>(i, slot, tq, uw, p.stride, sz);
        col[(size_t)w * p.stride + i] = c;
#pragma unroll
        for (int k = 0; k < 3; k++) acc[k] += (A)d[(size_t)k * p.stride + i] * c;
    }
}
template <typename S, typename A>
__device__ void det_column(const SolidParams p, int e, int slot, int kmax, const unsigned char* __restrict__ walkers,
                           const S* __restrict__ v, const S* __restrict__ ut, const A* __restrict__ binv,
                           const int* __restrict__ rep, A* __restrict__ pbuf, A* __restrict__ col, double* __restrict__ g) {
    A acc[3] = {A(0), A(0), A(0)};
    det_column_terms<S, A>(p, e, slot, kmax, walkers, v, ut, binv, rep, pbuf, col, acc);
    block_sum<A, 3>(acc, p.n);
    if (threadIdx.x == 0)
        for (int k = 0; k < 3; k++) g[4 * blockIdx.x + 1 + k] = (double)acc[k];
}

// The new value row of an accept (urow's first row).
template <typename S> struct NewRow {
    const S* u;
    __device__ S operator()(int i) const { return u[i]; }
};

// An accepted move of electron e into its slot: its new value row replaces row q (delayed_grow), its new gradient
// rows are stored. One block per walker; nothing for the walkers that rejected.
template <typename S, typename A>
__device__ void det_accept(const SolidParams p, int e, int slot, int kmax, unsigned char* __restrict__ walkers, const S* urow,
                           const int* accept, S* __restrict__ v, S* __restrict__ ut, A* __restrict__ binv,
                           int* __restrict__ rep, const A* __restrict__ pbuf) {
    const int w = blockIdx.x;
    if (!accept[w]) return;
    const S* u = urow + (size_t)w * 4 * p.stride;
    S* d = dpsi_of<S>(p, walkers, w) + (size_t)e * 3 * p.stride;
    for (int i = threadIdx.x; i < 3 * p.stride; i += blockDim.x) d[i] = u[p.stride + i];
    const size_t ks = (size_t)kmax * p.stride;
    delayed_grow<S, S, A>(NewRow<S>{u}, p.n, slot, kmax, e % p.n, inv_of<const S>(p, walkers, w) + (size_t)e * p.stride, v + w * ks,
                       ut + w * ks, p.stride, binv + (size_t)w * kmax * kmax, rep + (size_t)w * kmax, pbuf + (size_t)w * kmax);
}

// The moves' fused launches, which the timed sweep's graph replays (a profiled step keeps the separate ones, whose
// events time each class): begin = the determinant's gradient (det_grad, or det_column with delayed updates), then
// the Jastrow at the old position, the proposal and the Jastrow at the proposal; end = the ratio (det_ratio), the
// decision, and with delayed updates the accept into the window (det_accept). One block per walker, as each part:
// three or four launches an electron fewer, a few microseconds each, which at a few hundred walkers is much of a
// move. What one part hands the next in memory (g and the accept flag from thread 0, urow from every thread) is read
// after a barrier through plain pointers: data written in the same launch must not come through the read-only cache.
// In move_begin the determinant's gradient and the Jastrow at the old position, which do not depend on each other,
// are one pass and one block sum of 8 values (d: the determinant's 3, then the Jastrow's 5) instead of two passes, two
// sums and a barrier between (jastrow_move's phase 0 after det_column or det_grad): the same sums bit for bit (each
// value's partial sums and their order are as before; a warp past a value's bound adds +0s). Measured on the H100
// (interleaved P C C P against 48e9305, each build's two runs within 0.5%), with f32 storage's VGL addresses
// (spline_vgl_block): at 4297f3f mixed 0.8% to 2.3% faster at every size (256 electrons at 32 to 512 walkers, 512 and
// 1024 at 32 and 512) and double -0.6% to +0.8%, slower at 512 and 1024 electrons with 512 walkers. So f64 storage
// keeps the two passes: at d4818fd mixed 0.8% to 2.7% faster, double within -0.2% to +0.6% (its runs' own spread), the
// fixed cost a move (solid-fixed, 256 electrons, mixed) 16.5 -> 16.1 us.
template <typename S, typename A, bool DELAYED>
__device__ void move_begin(const SolidParams& p, int e, int slot, int kmax, unsigned char* walkers, const double* ions,
                           const double* moves, const S* v, const S* ut, const A* binv, const int* rep, A* pbuf, A* col,
                           double* g, double* jold, double* newpos, double* spline_pos) {
    if constexpr (sizeof(S) == 8) {
        if (DELAYED) det_column<S, A>(p, e, slot, kmax, walkers, v, ut, binv, rep, pbuf, col, g);
        else det_grad<S, A>(p, e, walkers, g);
        __syncthreads();
        // phase 0 writes neither the accept flags nor the counts
        jastrow_move<A>(p, e, 0, walkers, ions, moves, g, jold, newpos, spline_pos, nullptr, nullptr);
    } else {
        const int w = blockIdx.x;
        double* pw = pos_of<double>(p, walkers, w);
        const double at[3] = {pw[3 * e], pw[3 * e + 1], pw[3 * e + 2]};
        A d[8] = {A(0), A(0), A(0), A(0), A(0), A(0), A(0), A(0)};
        if (DELAYED) det_column_terms<S, A>(p, e, slot, kmax, walkers, v, ut, binv, rep, pbuf, col, d);
        else det_grad_terms<S, A>(p, e, walkers, d);
        jastrow_terms<A>(p, pw, ions, e, at, d + 3);
        const int det_items = DELAYED ? p.n : p.stride;
        block_sum<A, 8, 3>(d, max(det_items, jastrow_items(p)), det_items);
        if (threadIdx.x == 0)
            for (int k = 0; k < 3; k++) g[4 * w + 1 + k] = (double)d[k];
        jastrow_propose<A>(p, e, pw, ions, draws_of(p, moves, w, e), at, d + 3, g, jold, newpos, spline_pos);
    }
}

template <typename S, typename A, bool DELAYED>
__device__ void move_end(const SolidParams& p, int e, int slot, int kmax, const A* phi, unsigned char* walkers,
                         const double* ions, const double* moves, S* urow, double* g, A* tk, double* jold, double* newpos,
                         int* accept, double* tally, S* v, S* ut, A* binv, int* rep, const A* pbuf) {
    det_ratio<S, A, DELAYED>(p, e, phi, walkers, urow, g, tk);
    __syncthreads();
    // phase 1 does not write the spline's positions
    jastrow_move<A>(p, e, 1, walkers, ions, moves, g, jold, newpos, nullptr, accept, tally);
    if (DELAYED) {
        __syncthreads();
        det_accept<S, A>(p, e, slot, kmax, walkers, urow, accept, v, ut, binv, rep, pbuf);
    }
}

// The VGL rows [5][stride] of the point whose stencil `st` (shared memory) holds into dst, by the whole block (one
// walker's proposal; a multiple of 32 threads): four lanes an orbital, each one x-plane of the stencil (16 rows: one
// round trip of loads in flight), their sums added by two shuffles. A thread taking all 64 rows of an orbital
// (bspline.cu, where threads are many) kept 64 loads in flight in 128 registers, which halved the blocks an SM holds
// here. A warp reads, per row, 8 consecutive orbitals of each of its 4 planes. The sums of bspline.cu's spline_sum (z
// first, then the x-y weights), with the planes' partial sums added last: the same values up to rounding.
template <typename S, typename A>
__device__ void spline_vgl_block(const SplineParams& sp, const S* __restrict__ coefs, const SplineStencil<A>& st, A* dst) {
    const int lane = threadIdx.x & 31, i = lane >> 3;
    const size_t stride = sp.stride;
    // A load's address. In f32 storage (single, mixed) from the grid row's index in 32 bits (below nx ny nz), widened
    // by its product with the row's bytes: one IMAD.WIDE.U32 a load, where size_t arithmetic took eight or nine integer
    // instructions a load, whose registers spilled in this loop (ptxas 13.0, sm_90, 64 registers a thread: the window
    // kernel's 547 instructions here -> 449 in mixed, spills 27 -> 24). In f64 storage the cheap addresses let ptxas
    // issue all 16 loads before using any, and their 32 registers spilled more (12 -> 26): it keeps size_t.
    constexpr bool narrow = sizeof(S) == 4;
    const unsigned ny = sp.ny, nz = sp.nz, row_bytes = sp.stride * sizeof(S);
    // stride is a multiple of 64: every lane of a warp has an orbital, and all of them take part in the shuffles
    for (int o = (threadIdx.x >> 5) * 8 + (lane & 7); o < sp.stride; o += (blockDim.x >> 5) * 8) {
        const char* col = reinterpret_cast<const char*>(coefs + o);
        A acc[5] = {A(0), A(0), A(0), A(0), A(0)};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const unsigned plane32 = ((unsigned)st.idx[0][i] * ny + (unsigned)st.idx[1][j]) * nz;
            const size_t plane = ((size_t)st.idx[0][i] * sp.ny + st.idx[1][j]) * sp.nz;
            A sz[3] = {A(0), A(0), A(0)};
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const unsigned r = plane32 + (unsigned)st.idx[2][k];
                const S* at = narrow ? reinterpret_cast<const S*>(col + (unsigned long long)r * row_bytes)
                                     : coefs + (plane + st.idx[2][k]) * stride + o;
                const A x = A(__ldg(at));
                sz[0] += st.wv[2][k] * x;
                sz[1] += st.wd[2][k] * x;
                sz[2] += st.w2[2][k] * x;
            }
            const A xy = st.wv[0][i] * st.wv[1][j];
            const A dxy = st.wd[0][i] * st.wv[1][j], xdy = st.wv[0][i] * st.wd[1][j];
            const A d2xy = st.w2[0][i] * st.wv[1][j], xd2y = st.wv[0][i] * st.w2[1][j];
            acc[0] += xy * sz[0];
            acc[1] += dxy * sz[0];
            acc[2] += xdy * sz[0];
            acc[3] += xy * sz[1];
            acc[4] += (d2xy + xd2y) * sz[0] + xy * sz[2];
        }
#pragma unroll
        for (int c = 0; c < 5; c++) {
            acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], 8);
            acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], 16);
        }
        if (i == 0)
#pragma unroll
            for (int c = 0; c < 5; c++) dst[c * stride + o] = acc[c];
    }
}

// The B-spline orbitals' moves in one launch, `count` electrons from e0, one block a walker: for each, move_begin, the
// VGL at the walker's proposal by this block's threads (the stencil by three, then spline_vgl_block), move_end. With
// delayed updates e0 starts a window and its moves fill slots 0 .. count - 1, the apply following the launch; without,
// count is 1 and Sherman-Morrison's launch follows.
// A move was three launches (move_begin, bspline, move_end), a window 3k: the gaps between dependent launches in the
// sweep's graph were part of the fixed cost a move that bounds strong scaling (issue #24). phi [w][5][stride] holds the
// proposal's VGL rows, written and read by the walker's own block between barriers (through plain pointers, as
// everything one move hands the next: no read-only cache), and `spline_pos` still receives the proposals (unread here).
template <typename S, typename A, bool DELAYED>
__device__ void move_window(const SolidParams& p, int e0, int count, int kmax, const SplineParams& sp, const S* coefs,
                            A* phi, double* spline_pos, unsigned char* walkers, const double* ions, const double* draws,
                            S* v, S* ut, A* binv, int* rep, A* pbuf, A* tk, S* urow, double* g, double* jold,
                            double* newpos, int* accept, double* tally) {
    __shared__ SplineStencil<A> stencil;
    const int w = blockIdx.x;
    A* ph = phi + (size_t)w * 5 * p.stride;
    for (int m = 0; m < count; m++) {
        const int e = e0 + m;
        move_begin<S, A, DELAYED>(p, e, m, kmax, walkers, ions, draws, v, ut, binv, rep, pbuf, tk, g, jold, newpos, spline_pos);
        __syncthreads();
        if (threadIdx.x < 3) spline_axis<A>(sp, threadIdx.x, newpos[3 * w + threadIdx.x], stencil);
        __syncthreads();
        spline_vgl_block<S, A>(sp, coefs, stencil, ph);
        __syncthreads();
        move_end<S, A, DELAYED>(p, e, m, kmax, phi, walkers, ions, draws, urow, g, tk, jold, newpos, accept, tally, v, ut,
                                binv, rep, pbuf);
        __syncthreads();
    }
}

// Between the apply's products (W^T = t V^T, then Y): W[l][rep_l] -= 1 for the slots holding a new row (the delta
// a_q . t[j] = delta_qj, determinant::delayed), and the window's slots emptied for the next (rep -1, B^-1 zero).
// W^T is column-major n x kmax per walker (w [walker][kmax][n]). One block per walker.
template <typename A>
__device__ void delayed_fix(int n, int kmax, int slots, int* __restrict__ rep, A* __restrict__ w, A* __restrict__ binv) {
    const size_t b = blockIdx.x;
    if ((int)threadIdx.x < slots) {
        int* r = rep + b * kmax + threadIdx.x;
        if (*r >= 0) w[b * kmax * n + (size_t)threadIdx.x * n + *r] -= A(1);
        *r = -1;
    }
    for (int i = threadIdx.x; i < kmax * kmax; i += blockDim.x) binv[b * kmax * kmax + i] = A(0);
}

// The rank-k apply where the inverse is stored narrower than its products (mixed: S = float, A = double), in two
// kernels that read the f32 spin blocks in the slabs directly, convert to f64 on the way to the FP64 tensor cores and
// do every product there in f64: solid_delayed_w (W = V t^T) before solid_delayed_fix, solid_delayed_update (t -= W^T
// Y, rounded to S once, as Sherman-Morrison rounds its rows) after it; Y = B^-T U^T stays cuBLAS's DGEMM on the pending
// moves (solid/gpu.rs). Each t entry is read twice and written once per apply (12 n^2 bytes per spin block), against
// the 48 n^2 of the former dense f64 copies (f32 -> f64 copy, the DGEMMs' three passes, the copy back). The same
// mathematics as determinant::gpu::delayed_gemms: W[l][j] = v_l . t[j] (row j of t, i < n), w [walker][kmax][n] as
// cuBLAS writes W^T (n x kmax column-major); t[j][i] -= sum_{l < slots} W[l][j] Y[l][i], y [walker][kmax][n] likewise.
// No double instantiation: double applies through cuBLAS on its slabs.
//
// Both products are warps of mma.m8n8k4 (f64): the SIMT kernels they replace were estimated at 5-8 TFLOP/s on the H100,
// a fraction of its FP64 SIMT peak (34) and of the tensor cores' (67), where cuBLAS's DGEMM runs the double apply at
// about 60 (3072 electrons, 64 slots: the mixed step's determinant 0.97 s of 2.04, double's 0.72). A warp holds a
// 32 x 32 tile of the output (at most; 16 fragments of 8 x 8, two doubles a lane each), so each step of 4 in the sum
// loads 4 + 4 fragments from shared memory for 16 products: 96-128 bytes of shared loads a product of 512 flops, within
// the 128 bytes a clock an SM's shared memory serves for the ~0.5 product a clock its tensor cores retire. Each kernel
// pads its shared tiles so that the 32 lanes of a fragment load hit distinct banks (the pitches below), and zero-fills
// them past n and past the slots: nothing is read that may not be (a NaN times a zero is a NaN), and the zeros add
// nothing to the sums.
//
// Fragments (PTX ISA, mma.m8n8k4 .f64), lane = 4 g + c (g = lane >> 2, c = lane & 3): A (8 x 4, row-major) a = A[g][c];
// B (4 x 8, column-major) b = B[c][g]; C and D (8 x 8) d = {D[g][2c], D[g][2c + 1]}; D = A B + C. sm_80 and later;
// below (sm_75, the oldest CUDA 13 compiles for) the product traps, and the engine refuses a mixed delayed run there
// before launching (solid/gpu.rs), so the module still loads for every other kernel.
__device__ __forceinline__ void mma_f64(double d[2], double a, double b) {
#if __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
                 : "+d"(d[0]), "+d"(d[1])
                 : "d"(a), "d"(b));
#else
    __trap();
#endif
}

// W = V t^T: a block of SOLID_W_BLOCK threads takes SOLID_W_ROWS rows j of one walker's spin block and every slot l
// (8 TN >= kmax: TN fragments of 8 slots), the sum over i in SOLID_W_COLS-column stages. Per product, M = rows j, N =
// slots l, K = columns i: A[m][k] = t[j0 + m][i0 + k], B[k][n] = V[l0 + n][i0 + k], so both operands load alike, entry
// (g, c) of a rows x columns tile (ts[j][i], vs[l][i]). 8 warps: 4 of 32 rows by 2 of 4 TN slots (4 x TN / 2 fragments
// each); a warp skips the fragments of slots past `slots` (uniform). Stages double-buffered in shared memory: the next
// stage's entries are loaded into registers while this one is multiplied, then stored into the other buffer, one
// barrier a stage; t stays f32 there (each lane converts its A fragments: 8 KB a stage instead of 16, so that both
// buffers of both tiles take 40 KB, within the 48 KB of static shared memory), V (f32 in memory) is staged in f64.
// Pitch SOLID_W_PITCH = 20 = 4 x 5: the 8 rows g of a fragment start 20 g words apart, 0, 20, 8, 28, 16, 4, 24, 12 mod 32, and c adds 0-3: 32
// distinct banks for the f32 tile; for the f64 one a half-warp (g < 4, or g >= 4) covers 20 g + c mod 16 = 4 g + c: 16
// distinct double banks. A stage reads 8 KB of t from memory (rows of 64 contiguous bytes) and 4 KB of V (w8; 2 KB w4)
// from L2 for 262,144 flops (w8): 32 flops a byte of t, 16 a byte staged. Each t entry is read from memory once (512 n
// bytes a block).
#define SOLID_W_BLOCK 256
#define SOLID_W_ROWS 128
#define SOLID_W_COLS 16
#define SOLID_W_PITCH 20
template <typename S, int TN>
__device__ void delayed_w(const SolidParams p, int spin, int slots, int kmax, const unsigned char* __restrict__ walkers,
                          const S* __restrict__ v, double* __restrict__ w) {
    constexpr int SLOTS = 8 * TN, FN = TN / 2;
    constexpr int TPER = SOLID_W_ROWS * SOLID_W_COLS / SOLID_W_BLOCK, VPER = SLOTS * SOLID_W_COLS / SOLID_W_BLOCK;
    __shared__ S ts[2][SOLID_W_ROWS][SOLID_W_PITCH];
    __shared__ double vs[2][SLOTS][SOLID_W_PITCH];
    const int n = p.n, st = p.stride, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
    // the warp's first row (of the block's) and first slot
    const int wr = 32 * (warp & 3), wl = SLOTS / 2 * (warp >> 2);
    const int row0 = blockIdx.x * SOLID_W_ROWS;
    const long long wk = blockIdx.y;
    const S* t = inv_of<const S>(p, walkers, wk) + (size_t)spin * n * st;
    const S* vw = v + (size_t)wk * kmax * st;
    // thread x holds column x % SOLID_W_COLS of the next stage's rows x / SOLID_W_COLS + R u (R = SOLID_W_BLOCK /
    // SOLID_W_COLS), of t's and of V's (coalesced: a warp reads two rows' 64 contiguous bytes of t and of V)
    constexpr int R = SOLID_W_BLOCK / SOLID_W_COLS;
    const int r0 = threadIdx.x / SOLID_W_COLS, cc = threadIdx.x % SOLID_W_COLS;
    t += (size_t)(row0 + r0) * st + cc;
    vw += (size_t)r0 * st + cc;
    S tr[TPER];
    S vr[VPER];
    auto fetch = [&](int i0) {
        const bool in = i0 + cc < n;
#pragma unroll
        for (int u = 0; u < TPER; u++) tr[u] = in && row0 + r0 + R * u < n ? t[(size_t)(R * u) * st + i0] : S(0);
#pragma unroll
        for (int u = 0; u < VPER; u++) vr[u] = in && r0 + R * u < slots ? vw[(size_t)(R * u) * st + i0] : S(0);
    };
    auto stage = [&](int buf) {
#pragma unroll
        for (int u = 0; u < TPER; u++) ts[buf][r0 + R * u][cc] = tr[u];
#pragma unroll
        for (int u = 0; u < VPER; u++) vs[buf][r0 + R * u][cc] = (double)vr[u];
    };
    double acc[4][FN][2];
#pragma unroll
    for (int fm = 0; fm < 4; fm++)
#pragma unroll
        for (int fn = 0; fn < FN; fn++) acc[fm][fn][0] = acc[fm][fn][1] = 0.0;
    fetch(0);
    stage(0);
    __syncthreads();
    for (int i0 = 0, buf = 0; i0 < n; i0 += SOLID_W_COLS, buf ^= 1) {
        const bool next = i0 + SOLID_W_COLS < n;
        if (next) fetch(i0 + SOLID_W_COLS);
#pragma unroll
        for (int k = 0; k < SOLID_W_COLS; k += 4) {
            double a[4], b[FN];
#pragma unroll
            for (int fm = 0; fm < 4; fm++) a[fm] = (double)ts[buf][wr + 8 * fm + g][k + c];
#pragma unroll
            for (int fn = 0; fn < FN; fn++) b[fn] = vs[buf][wl + 8 * fn + g][k + c];
#pragma unroll
            for (int fn = 0; fn < FN; fn++)
                if (wl + 8 * fn < slots)
#pragma unroll
                    for (int fm = 0; fm < 4; fm++) mma_f64(acc[fm][fn], a[fm], b[fn]);
        }
        // the other buffer was last read before the previous barrier
        if (next) stage(buf ^ 1);
        __syncthreads();
    }
    // d = W at (row wr + 8 fm + g, slots wl + 8 fn + 2 c and the next): a warp's store, 4 slots' 8 consecutive rows
    double* ww = w + (size_t)wk * kmax * n;
#pragma unroll
    for (int fm = 0; fm < 4; fm++) {
        const int j = row0 + wr + 8 * fm + g;
#pragma unroll
        for (int fn = 0; fn < FN; fn++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int l = wl + 8 * fn + 2 * c + h;
                if (j < n && l < slots) ww[(size_t)l * n + j] = acc[fm][fn][h];
            }
    }
}

// t -= W^T Y: a block of SOLID_U_BLOCK threads takes a tile of SOLID_U_ROWS x SOLID_U_COLS of one walker's spin block,
// the sum over the slots in stages of SOLID_U_SLOTS. Per product, M = rows j, N = columns i, K = slots l: A[m][k] =
// W[l0 + k][j0 + m], B[k][n] = Y[l0 + k][i0 + n], both staged as they lie in memory (ws[l][j], ys[l][i]: rows of 64 and
// 128 doubles read whole) and loaded as entry (c, g) of a slots x rows tile. 8 warps: 2 of 32 rows by 4 of 32 columns,
// 16 fragments each. Pitches of 68 and 132 doubles (4 mod 16): a half-warp's fragment load covers 4 c + g mod 16, 16
// distinct double banks. The stages double-buffered as in delayed_w (one barrier a stage). K is at most 64, so there is
// no long sum to hide t's latency behind: once the sums are done, the block reads its t tile (a warp one row's 128
// contiguous bytes at a time; each thread 32 entries in two halves of 16 loads in flight together: all 32 at once
// pushed the kernel past its 128 registers into spills, ptxas -v) into shared memory where the stages were, each lane
// updates its accumulators' entries there (f64, rounded to S once), and the tile goes back the way it came; the other
// block on the SM multiplies meanwhile. The tile's pitch, 136 f32, puts pair (g, c) of a fragment at 8-byte word
// 68 g + c: 4 g + c mod 16, conflict-free too. A block moves 32 KB of t each way and reads 64 + 128 doubles a slot from
// L2 (96 KB at 64 slots) for 16,384 flops a slot: 16 flops a byte of t at 64 slots, so at the H100's 3.35 TB/s the
// update needs about 54 TFLOP/s, which only the tensor cores give; it is bound by memory, as it should be.
#define SOLID_U_BLOCK 256
#define SOLID_U_ROWS 64
#define SOLID_U_COLS 128
#define SOLID_U_SLOTS 8
template <typename S> struct __align__(2 * sizeof(S)) SolidPair {
    S x, y;
};
template <typename S> union SolidUpdateTiles {
    struct {
        double w[2][SOLID_U_SLOTS][SOLID_U_ROWS + 4];
        double y[2][SOLID_U_SLOTS][SOLID_U_COLS + 4];
    } k;
    S t[SOLID_U_ROWS][SOLID_U_COLS + 8];
};
template <typename S>
__device__ void delayed_update(const SolidParams p, int spin, int slots, int kmax, unsigned char* __restrict__ walkers,
                               const double* __restrict__ w, const double* __restrict__ y) {
    constexpr int WPER = SOLID_U_SLOTS * SOLID_U_ROWS / SOLID_U_BLOCK, YPER = SOLID_U_SLOTS * SOLID_U_COLS / SOLID_U_BLOCK,
                  TPER = SOLID_U_ROWS * SOLID_U_COLS / SOLID_U_BLOCK;
    __shared__ SolidUpdateTiles<S> sh;
    const int n = p.n, st = p.stride, lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, c = lane & 3;
    // the warp's first row and column (of the block's)
    const int wr = 32 * (warp >> 2), wc = 32 * (warp & 3);
    const int col0 = blockIdx.x * SOLID_U_COLS, row0 = blockIdx.y * SOLID_U_ROWS;
    const long long wk = blockIdx.z;
    const double* ww = w + (size_t)wk * kmax * n;
    const double* yw = y + (size_t)wk * kmax * n;
    // thread x holds entry (x / SOLID_U_ROWS + WS u, x % SOLID_U_ROWS) of the next stage's W and
    // (x / SOLID_U_COLS + YS u, x % SOLID_U_COLS) of its Y (a warp reads 32 consecutive doubles of a row of either)
    constexpr int WS = SOLID_U_BLOCK / SOLID_U_ROWS, YS = SOLID_U_BLOCK / SOLID_U_COLS;
    const int wl0 = threadIdx.x / SOLID_U_ROWS, wj = threadIdx.x % SOLID_U_ROWS;
    const int yl0 = threadIdx.x / SOLID_U_COLS, yi = threadIdx.x % SOLID_U_COLS;
    const bool in_w = row0 + wj < n, in_y = col0 + yi < n;
    ww += (size_t)wl0 * n + row0 + wj;
    yw += (size_t)yl0 * n + col0 + yi;
    double wv[WPER], yv[YPER];
    auto fetch = [&](int l0) {
#pragma unroll
        for (int u = 0; u < WPER; u++) wv[u] = in_w && l0 + wl0 + WS * u < slots ? ww[(size_t)(l0 + WS * u) * n] : 0.0;
#pragma unroll
        for (int u = 0; u < YPER; u++) yv[u] = in_y && l0 + yl0 + YS * u < slots ? yw[(size_t)(l0 + YS * u) * n] : 0.0;
    };
    auto stage = [&](int buf) {
#pragma unroll
        for (int u = 0; u < WPER; u++) sh.k.w[buf][wl0 + WS * u][wj] = wv[u];
#pragma unroll
        for (int u = 0; u < YPER; u++) sh.k.y[buf][yl0 + YS * u][yi] = yv[u];
    };
    double acc[4][4][2];
#pragma unroll
    for (int fm = 0; fm < 4; fm++)
#pragma unroll
        for (int fn = 0; fn < 4; fn++) acc[fm][fn][0] = acc[fm][fn][1] = 0.0;
    fetch(0);
    stage(0);
    __syncthreads();
    for (int l0 = 0, buf = 0; l0 < slots; l0 += SOLID_U_SLOTS, buf ^= 1) {
        const bool next = l0 + SOLID_U_SLOTS < slots;
        if (next) fetch(l0 + SOLID_U_SLOTS);
#pragma unroll
        for (int k = 0; k < SOLID_U_SLOTS; k += 4) {
            // a step wholly past the slots adds zeros (uniform)
            if (l0 + k >= slots) break;
            double a[4], b[4];
#pragma unroll
            for (int fm = 0; fm < 4; fm++) a[fm] = sh.k.w[buf][k + c][wr + 8 * fm + g];
#pragma unroll
            for (int fn = 0; fn < 4; fn++) b[fn] = sh.k.y[buf][k + c][wc + 8 * fn + g];
#pragma unroll
            for (int fm = 0; fm < 4; fm++)
#pragma unroll
                for (int fn = 0; fn < 4; fn++) mma_f64(acc[fm][fn], a[fm], b[fn]);
        }
        if (next) stage(buf ^ 1);
        __syncthreads();
    }
    // (the last barrier above: every warp is done with the stages, whose space the t tile takes)
    // thread x holds column x % SOLID_U_COLS of the tile's rows x / SOLID_U_COLS + R u (coalesced: a warp reads and
    // writes 128 contiguous bytes of a row)
    constexpr int R = SOLID_U_BLOCK / SOLID_U_COLS;
    const int r0 = threadIdx.x / SOLID_U_COLS, cc = threadIdx.x % SOLID_U_COLS, i = col0 + cc;
    S* t = inv_of<S>(p, walkers, wk) + ((size_t)spin * n + row0 + r0) * st + i;
#pragma unroll 1
    for (int h = 0; h < TPER; h += TPER / 2) {
        S old[TPER / 2];
#pragma unroll
        for (int u = 0; u < TPER / 2; u++)
            old[u] = row0 + r0 + R * (h + u) < n && i < n ? t[(size_t)(R * (h + u)) * st] : S(0);
#pragma unroll
        for (int u = 0; u < TPER / 2; u++) sh.t[r0 + R * (h + u)][cc] = old[u];
    }
    __syncthreads();
    // d = the sum at (row wr + 8 fm + g, columns wc + 8 fn + 2 c and the next): one pair of the tile
#pragma unroll
    for (int fm = 0; fm < 4; fm++)
#pragma unroll
        for (int fn = 0; fn < 4; fn++) {
            SolidPair<S>& e = *reinterpret_cast<SolidPair<S>*>(&sh.t[wr + 8 * fm + g][wc + 8 * fn + 2 * c]);
            e.x = (S)((double)e.x - acc[fm][fn][0]);
            e.y = (S)((double)e.y - acc[fm][fn][1]);
        }
    __syncthreads();
#pragma unroll
    for (int u = 0; u < TPER; u++)
        if (row0 + r0 + R * u < n && i < n) t[(size_t)(R * u) * st] = sh.t[r0 + R * u][cc];
}

extern "C" __global__ void __launch_bounds__(SOLID_W_BLOCK, 2) solid_delayed_w4_mixed(const SolidParams p, int spin, int slots, int kmax,
                                                                                const unsigned char* walkers, const float* v, double* w) {
    delayed_w<float, 4>(p, spin, slots, kmax, walkers, v, w);
}
extern "C" __global__ void __launch_bounds__(SOLID_W_BLOCK, 2) solid_delayed_w8_mixed(const SolidParams p, int spin, int slots, int kmax,
                                                                                const unsigned char* walkers, const float* v, double* w) {
    delayed_w<float, 8>(p, spin, slots, kmax, walkers, v, w);
}
extern "C" __global__ void __launch_bounds__(SOLID_U_BLOCK, 2) solid_delayed_update_mixed(const SolidParams p, int spin, int slots, int kmax,
                                                                                    unsigned char* walkers, const double* w, const double* y) {
    delayed_update<float>(p, spin, slots, kmax, walkers, w, y);
}

// The first `slots` rows of every walker's pending inverse rows ut (f32, [walker][kmax][stride]) widened to f64 into
// u64 ([walker][kmax][n]), for cuBLAS's Y = B^-T U^T: exact, so Y is what it was when ut was kept in f64. One block
// per walker.
extern "C" __global__ void solid_widen_ut(int n, int stride, int kmax, int slots, const float* __restrict__ ut,
                                          double* __restrict__ u64) {
    const size_t b = blockIdx.x;
    for (int idx = threadIdx.x; idx < slots * n; idx += blockDim.x) {
        const int l = idx / n, i = idx % n;
        u64[(b * kmax + l) * n + i] = (double)ut[(b * kmax + l) * stride + i];
    }
}

// Sherman-Morrison for the accepted walkers, one warp per row j of the spin block: coef_j = (t[j] . u - delta_jk) /
// ratio, then t[j] -= coef_j t[k] with t[k] as det_ratio saved it (tk), in one launch, each row read for its
// coefficient and again, from cache, for its update. Block 0 also stores the new gradient rows of electron e.
// Measured on the H100 (results/nvidia-h100-80gb-hbm3, runs 14, 15, 18): one launch is 1.04-1.39x faster per step
// than two (coefficients, then updates, which read the spin block from memory twice). Holding the row in registers
// between the two passes gains another 1.1x for 4 KB rows (512 doubles, 1024 electrons), where the cache lets the row
// go; compiled into the same kernel it made every other case up to 20% slower (its registers cut the occupancy), and
// f32 rows of 2 KB held that way ran 1.64 s against 1.36 s (occupancy and hold not told apart). So it is a kernel of
// its own, solid_sm_update_held_*, used for rows of more than 2 KB (SM_CACHED_BYTES in gpu.rs) and at most
// 32 SOLID_SM_HELD entries.
#define SOLID_SM_HELD 16
template <typename S, typename A, bool HELD>
__device__ void sm_update(const SolidParams p, int e, unsigned char* __restrict__ walkers, const S* __restrict__ urow,
                          const int* __restrict__ accept, const double* __restrict__ g, const A* __restrict__ tk) {
    const int w = blockIdx.y;
    if (!accept[w]) return;
    const int s = e / p.n, k = e % p.n;
    const S* u = urow + (size_t)w * 4 * p.stride;
    if (blockIdx.x == 0) {
        S* d = dpsi_of<S>(p, walkers, w) + (size_t)e * 3 * p.stride;
        for (int i = threadIdx.x; i < 3 * p.stride; i += blockDim.x) d[i] = u[p.stride + i];
    }
    const int lane = threadIdx.x & 31;
    const int j = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (j >= p.n) return;
    S* t = inv_of<S>(p, walkers, w) + ((size_t)s * p.n + j) * p.stride;
    const A* x = tk + (size_t)w * p.stride;
    A c = A(0);
    if (HELD) {
        // the row held in registers between its dot product and its update: read from memory once
        S held[SOLID_SM_HELD];
#pragma unroll
        for (int r = 0; r < SOLID_SM_HELD; r++) {
            const int i = lane + 32 * r;
            held[r] = i < p.stride ? t[i] : S(0);
            if (i < p.stride) c += (A)held[r] * (A)u[i];
        }
        c = warp_sum(c);
        c = __shfl_sync(0xffffffffu, c, 0);
        if (j == k) c -= A(1);
        c /= (A)g[4 * w];
#pragma unroll
        for (int r = 0; r < SOLID_SM_HELD; r++) {
            const int i = lane + 32 * r;
            if (i < p.stride) t[i] = (S)((A)held[r] - c * x[i]);
        }
        return;
    }
    for (int i = lane; i < p.stride; i += 32) c += (A)t[i] * (A)u[i];
    c = warp_sum(c);
    c = __shfl_sync(0xffffffffu, c, 0);
    if (j == k) c -= A(1);
    c /= (A)g[4 * w];
    for (int i = lane; i < p.stride; i += 32) t[i] = (S)((A)t[i] - c * x[i]);
}

// Measurement of points first .. first + count - 1 of the walkers in `list` (point = position in list * electrons +
// electron), one block each; with `order` (not null) the points at those positions of the order instead (mode 0: the
// points sorted by B-spline cell, so that the grouped B-spline kernel shares stencil rows among them). mode 0 (list:
// every walker in order): refresh the gradient rows and det4[point] = (grad D / D, lap D / D) from the inverse row; mode 1 (list: the walkers that re-invert): write the Slater
// matrices' values (rounded to S) column-major into work, matrix 2 j + spin for the j-th walker of the list (the
// re-inversion's matrices packed in list order, so cuBLAS's strided batches reach them).
template <typename S, typename A>
__device__ void measure_det(const SolidParams p, long long first, int mode, const int* __restrict__ list, const int* __restrict__ order,
                            const A* __restrict__ phi, unsigned char* __restrict__ walkers, double* __restrict__ det4,
                            double* __restrict__ work) {
    const long long pt = order ? (long long)order[first + blockIdx.x] : first + blockIdx.x;
    const long long j = pt / p.electrons;
    const int w = list[j], e = (int)(pt % p.electrons);
    const A* ph = phi + (size_t)blockIdx.x * 5 * p.stride;
    if (mode == 1) {
        const int s = e / p.n, i = e % p.n;
        double* m = work + ((size_t)j * 2 + s) * p.n * p.n;
        for (int j = threadIdx.x; j < p.n; j += blockDim.x) m[i + (size_t)j * p.n] = (double)(S)ph[j];
        return;
    }
    const S* row = inv_of<const S>(p, walkers, w) + (size_t)e * p.stride;
    S* d = dpsi_of<S>(p, walkers, w) + (size_t)e * 3 * p.stride;
    A acc[4] = {A(0), A(0), A(0), A(0)};
    for (int i = threadIdx.x; i < p.stride; i += blockDim.x) {
        const A r = (A)row[i];
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const S x = (S)ph[(size_t)(c + 1) * p.stride + i];
            if (c < 3) d[(size_t)c * p.stride + i] = x;
            acc[c] += (A)x * r;
        }
    }
    block_sum<A, 4>(acc, p.stride);
    if (threadIdx.x == 0)
        for (int c = 0; c < 4; c++) det4[4 * pt + c] = (double)acc[c];
}

// The re-inversion's matrices (work, out, and the refinement's r and t) are packed in list order: matrix q is spin
// q % 2 of walker list[q / 2], column-major n x n, q n^2 entries in.

// The inverses (column-major A^-1 = row-major transposed inverse) of the `count` walkers in `list` back into their
// strided rows, in S.
template <typename S>
__device__ void from_inverse(const SolidParams p, const int* __restrict__ list, int count, const double* __restrict__ out,
                             unsigned char* __restrict__ walkers) {
    const size_t nn = (size_t)p.n * p.n, total = (size_t)count * 2 * nn;
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < total; x += (size_t)gridDim.x * blockDim.x) {
        const size_t q = x / nn, r = x % nn, w = list[q / 2], s = q % 2, k = r / p.n, m = r % p.n;
        inv_of<S>(p, walkers, w)[(s * p.n + k) * p.stride + m] = (S)out[x];
    }
}

// from_inverse's converse: the walkers' current inverse rows (S) into out in f64, the start of the Newton-Schulz
// refinement (solid/gpu.rs reinvert).
template <typename S>
__device__ void to_inverse(const SolidParams p, const int* __restrict__ list, int count, const unsigned char* __restrict__ walkers,
                           double* __restrict__ out) {
    const size_t nn = (size_t)p.n * p.n, total = (size_t)count * 2 * nn;
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < total; x += (size_t)gridDim.x * blockDim.x) {
        const size_t q = x / nn, r = x % nn, w = list[q / 2], s = q % 2, k = r / p.n, m = r % p.n;
        out[x] = (double)inv_of<const S>(p, walkers, w)[(s * p.n + k) * p.stride + m];
    }
}

// diag times the identity in `count` packed n x n matrices of out (cuSOLVER's right-hand sides: 1; the refinement's
// 2 I - A X starts from 2).
extern "C" __global__ void solid_identity(int n, int count, double diag, double* __restrict__ out) {
    const size_t nn = (size_t)n * n, total = (size_t)count * nn;
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < total; x += (size_t)gridDim.x * blockDim.x) {
        const size_t r = x % nn;
        out[x] = r / n == r % n ? diag : 0.0;
    }
}

// Addresses of the `count` packed matrices of work, then of out, for cuBLAS's batched LU.
extern "C" __global__ void solid_matrix_ptrs(int n, int count, u64 work, u64 out, u64* __restrict__ ptrs) {
    const int q = blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= count) return;
    const u64 at = (u64)q * n * n * sizeof(double);
    ptrs[q] = work + at;
    ptrs[count + q] = out + at;
}

// Kinetic term of electron blockIdx.x of walker blockIdx.y: -1/2 (lap ln Psi + |grad ln Psi|^2) (solid::cpu::kinetic_term).
template <typename A>
__device__ void kinetic(const SolidParams p, const unsigned char* __restrict__ walkers, const double* __restrict__ ions,
                        const double* __restrict__ det4, double* __restrict__ term) {
    const int e = blockIdx.x, w = blockIdx.y;
    const double* pw = pos_of<const double>(p, walkers, w);
    const double at[3] = {pw[3 * e], pw[3 * e + 1], pw[3 * e + 2]};
    A s[5] = {A(0), A(0), A(0), A(0), A(0)};
    jastrow_terms<A>(p, pw, ions, e, at, s);
    block_sum<A, 5>(s, jastrow_items(p));
    if (threadIdx.x != 0) return;
    const double* d = det4 + 4 * ((size_t)w * p.electrons + e);
    double g[3], g2 = 0.0, gd2 = 0.0;
    for (int k = 0; k < 3; k++) {
        g[k] = d[k] + (double)s[1 + k];
        g2 += g[k] * g[k];
        gd2 += d[k] * d[k];
    }
    const double lap = d[3] - gd2 + (double)s[4];
    term[(size_t)w * p.electrons + e] = -0.5 * (lap + g2);
}

// Sum of each walker's row of `len` values (one block per walker).
extern "C" __global__ void solid_row_sum(int len, const double* __restrict__ x, double* __restrict__ out) {
    double v[1] = {0.0};
    for (int i = threadIdx.x; i < len; i += blockDim.x) v[0] += x[(size_t)blockIdx.x * len + i];
    block_sum<double, 1>(v, len);
    if (threadIdx.x == 0) out[blockIdx.x] = v[0];
}

// Fractional coordinates for the ewald kernel, [w][xyz][e] in S, wrapped into [0, 1).
template <typename S> __device__ void fractions(const SolidParams p, const unsigned char* __restrict__ walkers, S* __restrict__ frac) {
    const size_t total = (size_t)p.walkers * p.electrons;
    for (size_t x = blockIdx.x * (size_t)blockDim.x + threadIdx.x; x < total; x += (size_t)gridDim.x * blockDim.x) {
        const size_t w = x / p.electrons, e = x % p.electrons;
        for (int k = 0; k < 3; k++) {
            const double f = pos_of<const double>(p, walkers, w)[3 * e + k] / p.cell[k];
            frac[(w * 3 + k) * p.electrons + e] = (S)(f - floor(f));
        }
    }
}

// The Coulomb energy in open boundaries of every walker (ewald/open.rs, the atoms): sum_{i<j} 1/r_ij
// - sum_{i,I} Z_I/r_iI in A, each displacement formed in A from the f64 positions as the CPU's, plus the
// nucleus-nucleus constant (f64, added last); block w sums walker w's pairs, a thread an electron i with every j > i.
// nuclei: [I][4] (x, y, z, Z).
template <typename A>
__device__ void open_coulomb(const SolidParams p, const unsigned char* __restrict__ walkers, const double* __restrict__ nuclei,
                             int count, double constant, A* __restrict__ out) {
    const double* r = pos_of<const double>(p, walkers, blockIdx.x);
    A v[1] = {A(0)};
    for (int i = threadIdx.x; i < p.electrons; i += blockDim.x) {
        const A ri[3] = {(A)r[3 * i], (A)r[3 * i + 1], (A)r[3 * i + 2]};
        for (int j = i + 1; j < p.electrons; j++) {
            const A d[3] = {ri[0] - (A)r[3 * j], ri[1] - (A)r[3 * j + 1], ri[2] - (A)r[3 * j + 2]};
            v[0] += A(1) / sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        }
        for (int n = 0; n < count; n++) {
            const double* c = nuclei + 4 * n;
            const A d[3] = {ri[0] - (A)c[0], ri[1] - (A)c[1], ri[2] - (A)c[2]};
            v[0] -= (A)c[3] / sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        }
    }
    block_sum<A, 1>(v, p.electrons);
    if (threadIdx.x == 0) out[blockIdx.x] = v[0] + (A)constant;
}

// Every electron of every walker (point = walker * electrons + electron) keyed by its B-spline cell for the sort
// (bspline/gpu.rs CellSort: counts zeroed before); n, cell: the spline's grid.
extern "C" __global__ void solid_cell_keys(const SolidParams p, int nx, int ny, int nz, double cx, double cy, double cz,
                                           const unsigned char* __restrict__ walkers, int* __restrict__ key,
                                           int* __restrict__ rank, int* __restrict__ counts) {
    const long long pt = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (pt >= (long long)p.walkers * p.electrons) return;
    const int n[3] = {nx, ny, nz};
    const double cell[3] = {cx, cy, cz};
    const int k = spline_cell(pos_of<const double>(p, walkers, pt / p.electrons) + 3 * (pt % p.electrons), n, cell);
    key[pt] = k;
    rank[pt] = atomicAdd(counts + k, 1);
}

// Positions of points first .. first + count - 1 of the walkers in `list` (with `order`, of the order: as
// measure_det) for the B-spline kernel.
extern "C" __global__ void solid_gather_positions(const SolidParams p, long long first, int count, const int* __restrict__ list,
                                                  const int* __restrict__ order, const unsigned char* __restrict__ walkers,
                                                  double* __restrict__ out) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= count) return;
    const long long pt = order ? (long long)order[first + t] : first + t;
    const double* r = pos_of<const double>(p, walkers, list[pt / p.electrons]) + 3 * (pt % p.electrons);
    for (int k = 0; k < 3; k++) out[3 * (size_t)t + k] = r[k];
}

#define SOLID_ENTRIES(SUF, S, A)                                                                                       \
    extern "C" __global__ void solid_det_grad_##SUF(const SolidParams p, int e, const unsigned char* walkers, double* g) { \
        det_grad<S, A>(p, e, walkers, g);                                                                                \
    }                                                                                                                    \
    extern "C" __global__ void solid_jastrow_move_##SUF(const SolidParams p, int e, int phase, unsigned char* walkers,  \
                                                        const double* ions, const double* moves, const double* g,        \
                                                        double* jold, double* newpos, double* spline_pos, int* accept,   \
                                                        double* tally) {                                                 \
        jastrow_move<A>(p, e, phase, walkers, ions, moves, g, jold, newpos, spline_pos, accept, tally);                  \
    }                                                                                                                    \
    extern "C" __global__ void solid_det_ratio_##SUF(const SolidParams p, int e, const A* phi, const unsigned char* walkers, \
                                                     S* urow, double* g, A* tk) {                                        \
        det_ratio<S, A, false>(p, e, phi, walkers, urow, g, tk);                                                         \
    }                                                                                                                    \
    extern "C" __global__ void solid_det_ratio_delayed_##SUF(const SolidParams p, int e, const A* phi,                  \
                                                             const unsigned char* walkers, S* urow, double* g, A* tk) {  \
        det_ratio<S, A, true>(p, e, phi, walkers, urow, g, tk);                                                          \
    }                                                                                                                    \
    extern "C" __global__ void solid_det_column_##SUF(const SolidParams p, int e, int slot, int kmax,                   \
                                                      const unsigned char* walkers, const S* v, const S* ut,             \
                                                      const A* binv, const int* rep, A* pbuf, A* col, double* g) {       \
        det_column<S, A>(p, e, slot, kmax, walkers, v, ut, binv, rep, pbuf, col, g);                                     \
    }                                                                                                                    \
    extern "C" __global__ void solid_det_accept_##SUF(const SolidParams p, int e, int slot, int kmax, unsigned char* walkers, \
                                                      const S* urow, const int* accept, S* v, S* ut, A* binv, int* rep,  \
                                                      const A* pbuf) {                                                   \
        det_accept<S, A>(p, e, slot, kmax, walkers, urow, accept, v, ut, binv, rep, pbuf);                               \
    }                                                                                                                    \
    extern "C" __global__ void __launch_bounds__(512) solid_move_begin_##SUF(const SolidParams p, int e, unsigned char* walkers,               \
                                                      const double* ions, const double* moves, double* g, double* jold,  \
                                                      double* newpos, double* spline_pos) {                              \
        move_begin<S, A, false>(p, e, 0, 0, walkers, ions, moves, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, \
                                g, jold, newpos, spline_pos);                                                            \
    }                                                                                                                    \
    extern "C" __global__ void __launch_bounds__(512) solid_move_begin_delayed_##SUF(const SolidParams p, int e, int slot, int kmax,           \
                                                              unsigned char* walkers, const double* ions,                \
                                                              const double* moves, const S* v, const S* ut,              \
                                                              const A* binv, const int* rep, A* pbuf, A* col, double* g, \
                                                              double* jold, double* newpos, double* spline_pos) {        \
        move_begin<S, A, true>(p, e, slot, kmax, walkers, ions, moves, v, ut, binv, rep, pbuf, col, g, jold, newpos,    \
                               spline_pos);                                                                              \
    }                                                                                                                    \
    extern "C" __global__ void __launch_bounds__(512) solid_move_end_##SUF(const SolidParams p, int e, const A* phi, unsigned char* walkers,   \
                                                    const double* ions, const double* moves, S* urow, double* g, A* tk,  \
                                                    double* jold, double* newpos, int* accept, double* tally) {          \
        move_end<S, A, false>(p, e, 0, 0, phi, walkers, ions, moves, urow, g, tk, jold, newpos, accept, tally, nullptr,  \
                              nullptr, nullptr, nullptr, nullptr);                                                       \
    }                                                                                                                    \
    extern "C" __global__ void __launch_bounds__(512) solid_move_end_delayed_##SUF(const SolidParams p, int e, int slot, int kmax,             \
                                                            const A* phi, unsigned char* walkers, const double* ions,    \
                                                            const double* moves, S* urow, double* g, A* tk,              \
                                                            double* jold, double* newpos, int* accept, double* tally, S* v, \
                                                            S* ut, A* binv, int* rep, const A* pbuf) {                   \
        move_end<S, A, true>(p, e, slot, kmax, phi, walkers, ions, moves, urow, g, tk, jold, newpos, accept, tally, v, ut, \
                             binv, rep, pbuf);                                                                           \
    }                                                                                                                    \
    extern "C" __global__ void __launch_bounds__(512, 2) solid_moves_##SUF(const SolidParams p, int e0, const SplineParams sp, \
                                                 const S* coefs, A* phi, double* spline_pos, unsigned char* walkers,     \
                                                 const double* ions, const double* moves, A* tk, S* urow, double* g,     \
                                                 double* jold, double* newpos, int* accept, double* tally) {             \
        move_window<S, A, false>(p, e0, 1, 0, sp, coefs, phi, spline_pos, walkers, ions, moves, nullptr, nullptr, nullptr,      \
                           nullptr, nullptr, tk, urow, g, jold, newpos, accept, tally);                                  \
    }                                                                                                                    \
    extern "C" __global__ void __launch_bounds__(512, 2) solid_moves_delayed_##SUF(const SolidParams p, int e0, int count,  \
                                                 int kmax, const SplineParams sp, const S* coefs, A* phi,                \
                                                 double* spline_pos, unsigned char* walkers, const double* ions,         \
                                                 const double* moves, S* v, S* ut, A* binv, int* rep, A* pbuf, A* tk,    \
                                                 S* urow, double* g, double* jold, double* newpos, int* accept,          \
                                                 double* tally) {                                                        \
        move_window<S, A, true>(p, e0, count, kmax, sp, coefs, phi, spline_pos, walkers, ions, moves, v, ut, binv, rep, pbuf,  \
                          tk, urow, g, jold, newpos, accept, tally);                                                     \
    }                                                                                                                    \
    extern "C" __global__ void solid_delayed_fix_##SUF(int n, int kmax, int slots, int* rep, A* w, A* binv) {          \
        delayed_fix<A>(n, kmax, slots, rep, w, binv);                                                                    \
    }                                                                                                                    \
    extern "C" __global__ void solid_sm_update_##SUF(const SolidParams p, int e, unsigned char* walkers, const S* urow, \
                                                     const int* accept, const double* g, const A* tk) {                  \
        sm_update<S, A, false>(p, e, walkers, urow, accept, g, tk);                                                      \
    }                                                                                                                    \
    extern "C" __global__ void solid_sm_update_held_##SUF(const SolidParams p, int e, unsigned char* walkers,          \
                                                          const S* urow, const int* accept, const double* g, const A* tk) { \
        sm_update<S, A, true>(p, e, walkers, urow, accept, g, tk);                                                       \
    }                                                                                                                    \
    extern "C" __global__ void solid_measure_det_##SUF(const SolidParams p, long long first, int mode, const int* list, \
                                                       const int* order,                                               \
                                                       const A* phi, unsigned char* walkers, double* det4, double* work) { \
        measure_det<S, A>(p, first, mode, list, order, phi, walkers, det4, work);                                        \
    }                                                                                                                    \
    extern "C" __global__ void solid_from_inverse_##SUF(const SolidParams p, const int* list, int count, const double* out, \
                                                        unsigned char* walkers) {                                        \
        from_inverse<S>(p, list, count, out, walkers);                                                                   \
    }                                                                                                                    \
    extern "C" __global__ void solid_to_inverse_##SUF(const SolidParams p, const int* list, int count, const unsigned char* walkers, \
                                                      double* out) {                                                     \
        to_inverse<S>(p, list, count, walkers, out);                                                                     \
    }                                                                                                                    \
    extern "C" __global__ void solid_kinetic_##SUF(const SolidParams p, const unsigned char* walkers, const double* ions, \
                                                   const double* det4, double* term) {                                   \
        kinetic<A>(p, walkers, ions, det4, term);                                                                        \
    }                                                                                                                    \
    extern "C" __global__ void solid_fractions_##SUF(const SolidParams p, const unsigned char* walkers, S* frac) { \
        fractions<S>(p, walkers, frac);                                                                                  \
    }                                                                                                                    \
    extern "C" __global__ void solid_open_coulomb_##SUF(const SolidParams p, const unsigned char* walkers,             \
                                                        const double* nuclei, int count, double constant, A* out) {      \
        open_coulomb<A>(p, walkers, nuclei, count, constant, out);                                                       \
    }

SOLID_ENTRIES(f64, double, double)
SOLID_ENTRIES(f32, float, float)
SOLID_ENTRIES(mixed, float, double)
