// Lattice VMC of the t-J model (paper 001): one thread block per Markov chain, the whole run (equilibration and
// accumulation sweeps) in one launch, as the thesis' k_sysAve. Same algorithm and random-number order as cpu.rs.
// Storage S (W, phi), arithmetic A (ratios, updates); energies in double.
//
// Thread 0 draws the random numbers and does the bookkeeping; results go to the block through shared memory and
// __syncthreads. Reductions use warp shuffles (warp_sum) and a shared array behind __syncthreads: nothing assumes
// lockstep warps. Block size is a multiple of 32, so every warp is full when it shuffles.
// W of a chain is [b][a] row-major; a thread owns columns a (coalesced rows) in the f vector and the updates, a
// warp owns rows b in the g vector.
//
// Recompute: every p.recompute sweeps (0: never) and after a degenerate accepted swap, W is rebuilt from scratch:
// M is built in the chain's slice of a global scratch array (A: f64 in double and mixed, f32 in single) and
// inverted in place by Gauss-Jordan with partial pivoting, the block working on it together (threads over the
// elements of a row, coalesced); pivots and operation order as cpu.rs's gauss_jordan.

#define OCC_DN 0
#define OCC_UP 1
#define OCC_HL 2
#define TALLY_LEN 11
#define TALLY_RECOMPUTES 10

struct LatticeParams {
    int sites, pairs, chains, equil, sweeps, recompute;
    int bfactor; // threads per row of the down-electron dot products (gvec): 8, 16 or 32 (the thesis' blocking factor)
    double j;
    double degenerate; // both intermediate ratios of an accepted swap below it: rebuild W (mod.rs degenerate_ratio)
};

__device__ __forceinline__ u64 sm_next(u64& s) {
    s += 0x9E3779B97F4A7C15ull;
    u64 z = s;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
__device__ __forceinline__ int sm_below(u64& s, int n) { return (int)(((sm_next(s) >> 32) * (u64)n) >> 32); }
__device__ __forceinline__ double sm_uniform(u64& s) { return (double)(sm_next(s) >> 11) * (1.0 / 9007199254740992.0); }

// Block-wide sums of x and y, returned to every thread (all threads add the warp sums in the same order).
template <typename T> __device__ void block_sum2(T& x, T& y, T* scratch) {
    x = warp_sum(x);
    y = warp_sum(y);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads(); // earlier readers of scratch are done
    if (lane == 0) { scratch[wid] = x; scratch[32 + wid] = y; }
    __syncthreads();
    T sx = T(0), sy = T(0);
    for (int k = 0; k < nw; k++) { sx += scratch[k]; sy += scratch[32 + k]; }
    x = sx;
    y = sy;
}

// Largest x and its index over the block, the first index among equal values; to every thread.
__device__ void block_argmax(double& x, int& i, double* dscratch, int* iscratch) {
    for (int o = 16; o > 0; o >>= 1) {
        const double y = __shfl_down_sync(0xffffffffu, x, o);
        const int j = __shfl_down_sync(0xffffffffu, i, o);
        if (y > x || (y == x && j < i)) { x = y; i = j; }
    }
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads(); // earlier readers of the scratch are done
    if (lane == 0) { dscratch[wid] = x; iscratch[wid] = i; }
    __syncthreads();
    x = dscratch[0];
    i = iscratch[0];
    for (int k = 1; k < nw; k++)
        if (dscratch[k] > x || (dscratch[k] == x && iscratch[k] < i)) { x = dscratch[k]; i = iscratch[k]; }
}

template <typename S, typename A> struct Chain {
    const LatticeParams& p;
    const S* __restrict__ phi;
    S* __restrict__ W;
    A* __restrict__ M; // this chain's n x n scratch for reinvert
    A *f, *g, *buf, *scratch;
    double* dscratch;
    int *up, *dn, *occ, *which, *piv, *iscratch;

    // f_a = sum_b phi(y, d_b) W_ba for every a (thread per column).
    __device__ void fvec(int y) {
        const int np = p.pairs;
        const S* row = phi + (size_t)y * p.sites;
        for (int a = threadIdx.x; a < np; a += blockDim.x) {
            A acc = A(0);
            for (int b = 0; b < np; b++) acc += A(row[dn[b]]) * A(W[b * np + a]);
            f[a] = acc;
        }
        __syncthreads();
    }
    // g_b = sum_a W_ba phi(u_a, x) for every b: bfactor threads per row, over a, with a shuffle sum inside each group
    // of bfactor lanes (the thesis' blocking factor: 8 threads read 64 contiguous bytes of a row in double, 32 read
    // 256). Every lane of a warp runs the same number of rounds (blockDim is whole warps), so the full-mask
    // shuffles are safe.
    __device__ void gvec(int x) {
        const int np = p.pairs, bf = p.bfactor, lane = threadIdx.x % bf, rows = blockDim.x / bf;
        const S* row = phi + (size_t)x * p.sites;
        for (int b0 = 0; b0 < np; b0 += rows) {
            const int b = b0 + threadIdx.x / bf;
            A acc = A(0);
            if (b < np)
                for (int a = lane; a < np; a += bf) acc += A(W[b * np + a]) * A(row[up[a]]);
            for (int o = bf >> 1; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o, bf);
            if (lane == 0 && b < np) g[b] = acc;
        }
        __syncthreads();
    }
    // Sherman-Morrison: up electron a moves to s; f holds the new row times W (f_a the ratio).
    __device__ void update_up(int a, int s) {
        const int np = p.pairs;
        const A inv_r = A(1) / f[a];
        for (int b = threadIdx.x; b < np; b += blockDim.x) buf[b] = A(W[b * np + a]) * inv_r;
        __syncthreads();
        for (int c = threadIdx.x; c < np; c += blockDim.x) {
            if (c == a) {
                for (int b = 0; b < np; b++) W[b * np + c] = S(buf[b]);
            } else {
                const A fc = f[c];
                for (int b = 0; b < np; b++) W[b * np + c] = S(A(W[b * np + c]) - fc * buf[b]);
            }
        }
        if (threadIdx.x == 0) up[a] = s;
        __syncthreads();
    }
    // Sherman-Morrison: down electron b moves to s; g holds W times the new column (g_b the ratio).
    __device__ void update_dn(int b, int s) {
        const int np = p.pairs;
        const A inv_r = A(1) / g[b];
        for (int a = threadIdx.x; a < np; a += blockDim.x) buf[a] = A(W[b * np + a]) * inv_r;
        __syncthreads();
        for (int a = threadIdx.x; a < np; a += blockDim.x) {
            const A ba = buf[a];
            for (int r = 0; r < np; r++) W[r * np + a] = r == b ? S(ba) : S(A(W[r * np + a]) - g[r] * ba);
        }
        if (threadIdx.x == 0) dn[b] = s;
        __syncthreads();
    }
    // h = sum_a' W_ba' phi(u_a', x) and k = sum_a' f_a' phi(u_a', x), to every thread (f must be ready).
    __device__ void hk(int b, int x, A& h, A& k) {
        const int np = p.pairs;
        const S* row = phi + (size_t)x * p.sites;
        h = A(0);
        k = A(0);
        for (int a = threadIdx.x; a < np; a += blockDim.x) {
            const A ph = A(row[up[a]]);
            h += A(W[b * np + a]) * ph;
            k += f[a] * ph;
        }
        block_sum2(h, k, scratch);
    }
    // W = M^-1 from scratch (see the head of the file). Leaves W unchanged if a pivot is exactly zero.
    __device__ void reinvert() {
        const int n = p.pairs, nn = n * n;
        __syncthreads(); // up, dn final; readers of buf and dscratch are done
        for (int e = threadIdx.x; e < nn; e += blockDim.x) M[e] = A(phi[(size_t)up[e / n] * p.sites + dn[e % n]]);
        __syncthreads();
        bool ok = true;
        for (int k = 0; k < n; k++) {
            double best = -1.0;
            int pr = n;
            for (int i = k + threadIdx.x; i < n; i += blockDim.x) {
                const double v = fabs((double)M[i * n + k]);
                if (v > best) { best = v; pr = i; }
            }
            block_argmax(best, pr, dscratch, iscratch);
            if (!(best > 0.0)) { ok = false; break; } // zero or NaN column; every thread takes the same decision
            if (threadIdx.x == 0) piv[k] = pr;
            if (pr != k)
                for (int j = threadIdx.x; j < n; j += blockDim.x) {
                    const A t = M[pr * n + j];
                    M[pr * n + j] = M[k * n + j];
                    M[k * n + j] = t;
                }
            __syncthreads();
            for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = M[i * n + k];
            __syncthreads();
            const A d = A(1) / buf[k];
            for (int j = threadIdx.x; j < n; j += blockDim.x) M[k * n + j] = (j == k ? A(1) : M[k * n + j]) * d;
            __syncthreads();
            for (int e = threadIdx.x; e < nn; e += blockDim.x) {
                const int i = e / n, j = e - i * n;
                if (i != k) M[e] = (j == k ? A(0) : M[e]) - buf[i] * M[k * n + j];
            }
            __syncthreads();
        }
        if (ok) {
            // Undo the row interchanges as column interchanges in reverse order; a thread owns whole rows.
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                A* row = M + (size_t)i * n;
                for (int k = n - 1; k >= 0; k--) {
                    const int q = piv[k];
                    if (q != k) { const A t = row[k]; row[k] = row[q]; row[q] = t; }
                }
                for (int j = 0; j < n; j++) W[i * n + j] = S(row[j]);
            }
        }
        __syncthreads();
    }
    // Swap ratio of up electron a on x with down electron b on y (leaves f for y in shared memory).
    __device__ A swap_ratio(int a, int x, int b, int y, A& h) {
        __syncthreads(); // readers of f are done
        fvec(y);
        A k;
        hk(b, x, h, k);
        return A(W[b * p.pairs + a]) * (A(phi[(size_t)y * p.sites + x]) - k) + f[a] * h;
    }
};

template <typename S, typename A>
__device__ void run(const LatticeParams p, const S* __restrict__ phi, const int* __restrict__ nbr,
                    const double* __restrict__ hop, S* __restrict__ W_all, A* __restrict__ M_all, int* __restrict__ up_all,
                    int* __restrict__ dn_all, u64* __restrict__ rng_all, double* __restrict__ tally_all) {
    const int c = blockIdx.x;
    if (c >= p.chains) return; // whole block
    const int np = p.pairs, ns = p.sites, tid = threadIdx.x;
    extern __shared__ __align__(16) unsigned char smem[];
    double* dscratch = (double*)smem; // 64 doubles first: every later array stays aligned
    A* f = (A*)(dscratch + 64);
    A* g = f + np;
    A* buf = g + np;
    A* scratch = buf + np;
    int* up = (int*)(scratch + 64);
    int* dn = up + np;
    int* occ = dn + np;
    int* which = occ + ns;
    int* piv = which + ns;
    __shared__ int iscratch[32];
    __shared__ int mv[6];
    __shared__ double mv_u;

    Chain<S, A> ch{p,   phi, W_all + (size_t)c * np * np, M_all + (size_t)c * np * np, f, g, buf, scratch, dscratch,
                   up,  dn,  occ, which, piv, iscratch};
    for (int k = tid; k < ns; k += blockDim.x) occ[k] = OCC_HL;
    for (int k = tid; k < np; k += blockDim.x) {
        up[k] = up_all[(size_t)c * np + k];
        dn[k] = dn_all[(size_t)c * np + k];
    }
    __syncthreads();
    u64 rng = 0;
    double tl[TALLY_LEN];
    if (tid == 0) {
        for (int a = 0; a < np; a++) { occ[up[a]] = OCC_UP; which[up[a]] = a; }
        for (int b = 0; b < np; b++) { occ[dn[b]] = OCC_DN; which[dn[b]] = b; }
        rng = rng_all[c];
        for (int k = 0; k < TALLY_LEN; k++) tl[k] = tally_all[(size_t)c * TALLY_LEN + k];
    }
    __syncthreads();

    for (int sweep = 0; sweep < p.equil + p.sweeps; sweep++) {
        for (int move = 0; move < 2 * np; move++) {
            if (tid == 0) {
                const int i = sm_below(rng, np), spin = sm_below(rng, 2);
                const int old = spin == OCC_UP ? up[i] : dn[i];
                int nw;
                do { nw = sm_below(rng, ns); } while (occ[nw] == spin);
                mv_u = sm_uniform(rng);
                mv[0] = i; mv[1] = spin; mv[2] = old; mv[3] = nw; mv[4] = occ[nw] == OCC_HL; mv[5] = which[nw];
            }
            __syncthreads();
            const int i = mv[0], spin = mv[1], old = mv[2], nw = mv[3], j = mv[5];
            const double u = mv_u;
            if (mv[4]) {
                A r = A(0), none = A(0);
                const S* row = phi + (size_t)nw * ns;
                if (spin == OCC_UP) {
                    for (int b = tid; b < np; b += blockDim.x) r += A(row[dn[b]]) * A(ch.W[b * np + i]);
                } else {
                    for (int a = tid; a < np; a += blockDim.x) r += A(ch.W[i * np + a]) * A(row[up[a]]);
                }
                block_sum2(r, none, scratch);
                const bool accept = u < (double)r * (double)r;
                if (tid == 0) { tl[3] += 1; tl[4] += accept; }
                if (accept) {
                    if (spin == OCC_UP) {
                        ch.fvec(nw);
                        ch.update_up(i, nw);
                    } else {
                        ch.gvec(nw);
                        ch.update_dn(i, nw);
                    }
                    if (tid == 0) { occ[old] = OCC_HL; occ[nw] = spin; which[nw] = i; }
                }
            } else {
                const int a = spin == OCC_UP ? i : j, b = spin == OCC_UP ? j : i;
                const int x = spin == OCC_UP ? old : nw, y = spin == OCC_UP ? nw : old;
                A h;
                const A r = ch.swap_ratio(a, x, b, y, h);
                const bool accept = u < (double)r * (double)r;
                if (tid == 0) { tl[5] += 1; tl[6] += accept; }
                if (accept) {
                    if (fmax(fabs((double)f[a]), fabs((double)h)) < p.degenerate) {
                        // Both single moves pass through a nearly singular matrix: rebuild W (as cpu.rs).
                        if (tid == 0) { up[a] = y; dn[b] = x; tl[TALLY_RECOMPUTES] += 1; }
                        ch.reinvert();
                    } else if (fabs((double)f[a]) >= fabs((double)h)) {
                        ch.update_up(a, y);
                        ch.gvec(x);
                        ch.update_dn(b, x);
                    } else {
                        ch.gvec(x);
                        ch.update_dn(b, x);
                        ch.fvec(y);
                        ch.update_up(a, y);
                    }
                    if (tid == 0) { occ[x] = OCC_DN; occ[y] = OCC_UP; which[x] = b; which[y] = a; }
                }
            }
            __syncthreads();
        }
        if (p.recompute > 0 && (sweep + 1) % p.recompute == 0) {
            if (tid == 0) tl[TALLY_RECOMPUTES] += 1;
            ch.reinvert();
        }
        if (sweep < p.equil) continue;

        // Energy: kinetic hops of every electron to empty neighbours.
        double ekin = 0.0, nkin = 0.0;
        for (int a = tid; a < np; a += blockDim.x) {
            const int s = up[a];
            for (int jn = 0; jn < 4; jn++) {
                const int n = nbr[4 * s + jn];
                if (occ[n] != OCC_HL) continue;
                const S* row = phi + (size_t)n * ns;
                A r = A(0);
                for (int b = 0; b < np; b++) r += A(row[dn[b]]) * A(ch.W[b * np + a]);
                ekin += hop[4 * s + jn] * (double)r;
                nkin += 1.0;
            }
        }
        for (int b = tid; b < np; b += blockDim.x) {
            const int s = dn[b];
            for (int jn = 0; jn < 4; jn++) {
                const int n = nbr[4 * s + jn];
                if (occ[n] != OCC_HL) continue;
                const S* row = phi + (size_t)n * ns;
                A r = A(0);
                for (int a = 0; a < np; a++) r += A(ch.W[b * np + a]) * A(row[up[a]]);
                ekin += hop[4 * s + jn] * (double)r;
                nkin += 1.0;
            }
        }
        block_sum2(ekin, nkin, dscratch);
        // Exchange: f once per down electron with an up neighbour, then O(N_P) per bond.
        double ej = 0.0, bonds = 0.0, fvecs = 0.0;
        for (int b = 0; b < np; b++) {
            const int y = dn[b];
            bool any = false;
            for (int jn = 0; jn < 4; jn++) any |= occ[nbr[4 * y + jn]] == OCC_UP;
            if (!any) continue;
            __syncthreads(); // readers of f are done
            ch.fvec(y);
            fvecs += 1.0;
            for (int jn = 0; jn < 4; jn++) {
                const int x = nbr[4 * y + jn];
                if (occ[x] != OCC_UP) continue;
                const int a = which[x];
                A h, k;
                ch.hk(b, x, h, k);
                const A r = A(ch.W[b * np + a]) * (A(phi[(size_t)y * ns + x]) - k) + f[a] * h;
                ej -= 0.5 * p.j * (1.0 + (double)r);
                bonds += 1.0;
            }
        }
        if (tid == 0) {
            const double e = (ekin + ej) / ns;
            tl[0] += e; tl[1] += e * e; tl[2] += 1.0;
            tl[7] += nkin; tl[8] += bonds; tl[9] += fvecs;
        }
        __syncthreads();
    }

    for (int k = tid; k < np; k += blockDim.x) {
        up_all[(size_t)c * np + k] = up[k];
        dn_all[(size_t)c * np + k] = dn[k];
    }
    if (tid == 0) {
        rng_all[c] = rng;
        for (int k = 0; k < TALLY_LEN; k++) tally_all[(size_t)c * TALLY_LEN + k] = tl[k];
    }
}

#define LATTICE_ENTRY(NAME, S, A)                                                                              \
    extern "C" __global__ void NAME(const LatticeParams p, const S* __restrict__ phi, const int* __restrict__ nbr, \
                                    const double* __restrict__ hop, S* __restrict__ W, A* __restrict__ M,         \
                                    int* __restrict__ up, int* __restrict__ dn, u64* __restrict__ rng,            \
                                    double* __restrict__ tally) {                                                  \
        run<S, A>(p, phi, nbr, hop, W, M, up, dn, rng, tally);                                                 \
    }

LATTICE_ENTRY(lattice_sweeps_f64, double, double)
LATTICE_ENTRY(lattice_sweeps_f32, float, float)
LATTICE_ENTRY(lattice_sweeps_mixed, float, double)
