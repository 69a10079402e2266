// Lattice VMC of the t-J model (paper 001): one thread block per Markov chain, the whole run (equilibration and
// accumulation sweeps) in one launch, as the thesis' k_sysAve. Same algorithm and random-number order as cpu.rs.
// Storage S (W, phi), arithmetic A (the rebuild); the moves' ratios, the f and g vectors of the rank-1 updates and the
// measurement's terms are evaluated in S, as cpu.rs (mixed: single-precision evaluation, the inversion in double;
// until 2026-11-27 every dot product of mixed ran in f64 from f32 data: twice the shared memory for the batch's
// vectors, a conversion per W entry read, and f64 FMAs at half the f32 rate; until 2026-12-01 the accepted hops' f and
// g vectors still did, 1.9 KB of shared memory at L = 15 that kept mixed from four chains an SM); energies in double.
//
// On chip. A sweep is 2 N_P moves and a measurement; most moves are swaps, whose ratio needs f = phi(y, d) W, a pass
// over the whole N_P x N_P inverse W (83 KB in double at L = 15), and are rejected (about 95%). So the chain's W lives
// in shared memory for the whole launch (copied in at the start, out at the end) whenever it fits (`p.on_chip`: up to
// 227 KB per block on Hopper): no device-memory round trip per move; the only global reads are gathers from the pair
// function phi, which L2 holds. Where it does not fit, the same code works on a per-chain global buffer (`M_all`),
// compiled apart (LATTICE_W_OFF_CHIP, run's WOFF: gpu.rs builds a second module for it) so that the entries of W on
// chip address it as shared memory.
// The working buffer holds W (type S, rows of stride ld) and, during a rebuild, M (type A, same rows, same memory):
// W is replaced by the rebuild, so M needs no space of its own. ld = N_P rounded up to odd: a warp walking down a
// column of W (b varies) hits 32 different banks. Third placement (`p.on_chip` 2, from 2026-12-01): W on chip in S,
// and of M (A) the rows W's memory holds over it (all in single and double, the first N_P / 2 in mixed), the rest and
// the panels' pivot rows R in the chain's M_all slice (Chain::Rows, Chain::mat). Where A is wider than S (mixed) the
// chain's shared memory then holds W in S, not A: at L = 15 it falls from 99 KB (two chains an SM) to single's 55 KB
// (four), at the price of a rebuild that reads and writes half its rows in device memory (L1 and L2 hold most of
// them).
//
// Look-ahead. A move changes W only when it is accepted, so the ratios of the next LOOK moves can all be computed
// against the current W as if every earlier one were rejected, and the decisions then taken in order: the moves up to
// the first accepted one are exactly the sequential chain's (same draws, same ratios, same decisions); the rest of
// the batch is dropped and drawn again after the update. The random stream is SplitMix64, whose m-th output is a
// function of (state + m gamma), so warp 0 evaluates a window of 64 outputs in parallel and lane 0 walks through them
// drawing the moves; the state then advances by exactly the outputs the kept moves consumed. One batch is four block
// barriers: the draws; the gathers of every move's phi vectors from global memory, all in flight at once; the f
// vectors of all its swaps in one pass over W (LOOK products per element read, instead of one pass per move: W's
// shared-memory traffic, the limit, falls LOOK-fold); and the short dot products, a warp per move. The measurement's
// exchange term goes the same way: the f vectors of LOOK down electrons per pass over W.
//
// Recompute: every p.recompute sweeps (0: never), after a sweep whose residual check exceeds p.residual_limit, and
// after a degenerate accepted swap, W is rebuilt from scratch:
// M is built in the working buffer (A: f64 in double and mixed, f32 in single) and inverted in place by Gauss-Jordan
// with partial pivoting (pivots as cpu.rs's gauss_jordan), then narrowed to S in place row by row. Blocked (from
// 2026-11-28, issue #26): PANEL = 8 pivots at a time, warp 0 factoring the panel's columns alone, then the whole block
// carrying the panel's 8 steps to every other column in one pass over the matrix (Chain::panel_factor and
// panel_update say how): the same pivots and the same W bit for bit as one pivot at a time (each entry gets the same
// operations in the same order; scripts/lattice-reinvert-host.cpp checks it against the plain algorithm), with the
// matrix read and written once per panel instead of once per pivot and 2 or 3 barriers per panel instead of 2 per
// pivot.
//
// Screened mixed (run's SCR, from 2026-12-05; mixed above L = 9, as cpu.rs Screened on the CPU): the chain is double's,
// W in f64 in its device buffer, and a copy of W rounded to f32 on chip screens each batch: the f32 f vectors in one
// pass over the copy (with the sums that bound their errors), each move's f32 ratio and a rigorous bound on its
// distance from the f64 ratio double computes, and only the moves whose sqrt(u) the bound does not put above the f32
// ratio take double's pass over W in f64 and their f64 ratios (none where no swap is among them). Decisions, W and the
// path are double's bit for bit; the measurement is f32 from the copy, which each accepted move's last rank-1 update
// writes beside W. Until then the GPU's mixed updated W in f32 at every size, and at L = 15 its chains left the
// distribution in about half the suite's runs (mod.rs).

#define OCC_DN 0
#define OCC_UP 1
#define OCC_HL 2
#define TALLY_LEN 13
#define TALLY_RECOMPUTES 10
#define TALLY_CONFIRMED_HOPS 11 // mod.rs tally: moves screened mixed decided on an f64 ratio
#define TALLY_CONFIRMED_SWAPS 12
#define NARROW_MAX 2  // columns per thread when a rebuilt W is narrowed to f32 (gpu.rs: threads >= pairs / 2)
#define NARROW_ROWS 8 // rows narrowed between two barriers
// Threads per chain at most (gpu.rs max_block_threads reads it back): the compiler keeps to 128 registers a thread so
// that 512 launch (N_P up to 1024 needs N_P / 2 for the rebuild's narrowing) and more blocks fit an SM: unbounded, the
// f64 kernel took 132, so 7 chains of 64 threads per SM at L = 9 instead of 8 (2048 chains in three waves, not two)
// and one chain of 256 threads at L = 15.
#define MAX_THREADS 512
#define LOOK 8         // moves evaluated per batch (gpu.rs LOOK): the f vectors computed per pass over W
#define WINDOW 64      // random-number outputs evaluated in parallel per batch (two per lane of warp 0)
// Pivots per panel of the blocked rebuild (Chain::reinvert). The matrix is read and written once per panel instead of
// once per pivot, and the block meets 2 or 3 barriers a panel instead of 2 a pivot: more is better, up to what fits.
// The scratch (PANEL N_P + PANEL entries of A, the panel's multipliers and pivots' inverses, and PANEL N_P more, the
// pivot rows R, where M is on chip or S and A are one type) takes the sweep's vectors, free during a rebuild (4 N_P +
// 64 and 3 LOOK N_P entries of S); the host sizes that region for the larger of the two (gpu.rs vec_bytes,
// p.vec_bytes); each column's recurrence holds PANEL values of A in registers (16 in f64, within the 64- and
// 80-register entries); and warp 0 alone factors the panel, PANEL entries a row a step, while the other warps wait.
#define PANEL 8
// Where every entry keeps W (run's WOFF): 0 in shared memory, 1 in each chain's device buffer (gpu.rs builds the
// module of Placement::OffChip with it defined 1: W too large for shared memory). Screened mixed's W is off chip in
// either module.
#ifndef LATTICE_W_OFF_CHIP
#define LATTICE_W_OFF_CHIP 0
#endif
static_assert(PANEL == LOOK, "reinvert loads a row of multipliers with load_look");
static_assert(PANEL <= 64, "one warp factors a panel");
#define SM_GAMMA 0x9E3779B97F4A7C15ull
// A site or pair index, as the configuration (up, dn: each electron's site; occ, which: each site's occupation and
// electron) and the rebuild's pivots hold them in shared memory: 16 bits (gpu.rs refuses 32768 sites or more). At
// L = 15 in single, the 1.5 KB this saves over ints brings a chain's shared memory under the 56 KB that lets four
// chains share an SM's 228 KB (three before).
typedef short idx_t;

struct LatticeParams {
    int sites, pairs, chains, equil, sweeps, recompute;
    int bfactor; // threads per row of the down-electron dot products (gvec): 8, 16 or 32 (the thesis' blocking factor)
    int ld;      // row stride of the working copy of W (pairs rounded up to odd)
    int on_chip; // 1: the working copy (W and M) lives in shared memory; 0: in M_all; 2: W in shared memory, M in M_all
    int vec_bytes; // bytes of shared memory from the vectors (f) to the configuration (up): the larger of the vectors
                   // and reinvert's scratch (gpu.rs vector_bytes)
    double j;
    double degenerate; // both intermediate ratios of an accepted swap below it: rebuild W (mod.rs degenerate_ratio)
    double residual_limit; // rebuild W after a sweep whose max_a |(M W)_aa - 1| exceeds it (0: no check; cpu.rs)
    int window;        // random outputs a batch draws from (WINDOW; a test makes it small to reach the fallback)
};

// SplitMix64 (cpu.rs Stream): the state advances by gamma per output, and the output is a mix of the state, so the
// m-th output after state s is sm_mix(s + m gamma).
__device__ __forceinline__ u64 sm_mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
__device__ __forceinline__ int sm_below_of(u64 z, int n) { return (int)(((z >> 32) * (u64)n) >> 32); }
__device__ __forceinline__ double sm_uniform_of(u64 z) { return (double)(z >> 11) * (1.0 / 9007199254740992.0); }

// Vector loads of LOOK (= 8) consecutive entries from shared memory, 16 bytes at a time (a broadcast when every lane
// of a warp reads the same address); p 16-byte aligned.
__device__ __forceinline__ void load_look(const double* p, double (&v)[LOOK]) {
#pragma unroll
    for (int k = 0; k < LOOK / 2; k++) {
        const double2 t = reinterpret_cast<const double2*>(p)[k];
        v[2 * k] = t.x;
        v[2 * k + 1] = t.y;
    }
}
__device__ __forceinline__ void load_look(const float* p, float (&v)[LOOK]) {
#pragma unroll
    for (int k = 0; k < LOOK / 4; k++) {
        const float4 t = reinterpret_cast<const float4*>(p)[k];
        v[4 * k] = t.x;
        v[4 * k + 1] = t.y;
        v[4 * k + 2] = t.z;
        v[4 * k + 3] = t.w;
    }
}

// Block-wide sums of x and y, returned to every thread (all threads add the warp sums in the same order).
template <typename T> __device__ void block_sum2(T& x, T& y, T* scratch) {
    x = warp_sum(x);
    y = warp_sum(y);
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads(); // earlier readers of scratch are done
    if (lane == 0) { scratch[wid] = x; scratch[32 + wid] = y; }
    __syncthreads();
    T sx = T(0), sy = T(0);
#pragma unroll 1 // a few warps (2 at L = 9): unrolled it was 87 instructions a call in the sweep's hot code
    for (int k = 0; k < nw; k++) { sx += scratch[k]; sy += scratch[32 + k]; }
    x = sx;
    y = sy;
}

// The pivot row of a Gauss-Jordan step from each lane's candidate (best: the largest |value| among its rows, -1 where
// it has none; row: the first of its rows with that value, n where none), to every lane: the largest |value| over the
// warp, the first row among equal values (the choice of cpu.rs's gauss_jordan); n where no lane has a candidate (a
// NaN never is one: |NaN| > best fails). Called by a whole warp. The order (|value| down, row up) is total, so any
// reduction gives the one answer: a butterfly of shuffles, five dependent rounds; on sm_80 and later two or three
// redux.sync of the order's keys (|value|'s bits plus one, a monotonic map of the non-negative values: -1 maps to 0).
template <typename T> __device__ __forceinline__ int warp_pivot_shfl(T best, int row) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const T b = __shfl_xor_sync(0xffffffffu, best, o);
        const int r = __shfl_xor_sync(0xffffffffu, row, o);
        if (b > best || (b == best && r < row)) { best = b; row = r; }
    }
    return row;
}
// redux.sync needs sm_80; the host check (scripts/cu-block-host.h) emulates it and also tests the shuffles against it
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define PIVOT_REDUX 0
#else
#define PIVOT_REDUX 1
#endif
__device__ __forceinline__ int warp_pivot(float best, int row) {
#if PIVOT_REDUX
    const unsigned key = best < 0.0f ? 0u : __float_as_uint(best) + 1u;
    const unsigned top = __reduce_max_sync(0xffffffffu, key);
    return (int)__reduce_min_sync(0xffffffffu, key == top ? (unsigned)row : 0xffffffffu);
#else
    return warp_pivot_shfl(best, row);
#endif
}
__device__ __forceinline__ int warp_pivot(double best, int row) {
#if PIVOT_REDUX
    const u64 key = best < 0.0 ? 0ull : (u64)__double_as_longlong(best) + 1ull;
    const unsigned hi = (unsigned)(key >> 32), lo = (unsigned)key;
    const unsigned th = __reduce_max_sync(0xffffffffu, hi);
    const unsigned tl = __reduce_max_sync(0xffffffffu, hi == th ? lo : 0u);
    return (int)__reduce_min_sync(0xffffffffu, hi == th && lo == tl ? (unsigned)row : 0xffffffffu);
#else
    return warp_pivot_shfl(best, row);
#endif
}

// Sum over the 32 lanes of a warp, to every lane (called by a whole warp).
template <typename T> __device__ __forceinline__ T warp_allsum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// The inner loops as functions with restrict-qualified arguments: inlined, they tell the compiler that W, the
// vectors and the gathered phi values do not alias, so each thread's loads can run ahead of its stores.

// Rows of W a thread loads ahead in the loops below where W is in device memory (screened mixed's f64 W, run with
// SCR): PF loads in flight before the first is used, instead of a device-memory round trip (hundreds of cycles) a
// row; 1 where W is on chip, the loops as they were. Each entry gets the same operations in the same order either way.
#define PF_DEVICE 8

// out[a] = sum_b v[b] W[b ld + a] for the columns a of this thread (PF: PF_DEVICE above).
template <int PF = 1, typename S, typename A>
__device__ __forceinline__ void col_dots(const S* __restrict__ W, const A* __restrict__ v, A* __restrict__ out, int n,
                                         int ld) {
    static_assert(PF == 1 || PF % 2 == 0, "rows alternate between the two sums");
    for (int a = threadIdx.x; a < n; a += blockDim.x) {
        A acc0 = A(0), acc1 = A(0);
        int b = 0;
        if constexpr (PF > 1) {
            for (; b + PF <= n; b += PF) {
                A w[PF];
#pragma unroll
                for (int u = 0; u < PF; u++) w[u] = A(W[(b + u) * ld + a]);
#pragma unroll
                for (int u = 0; u < PF; u += 2) {
                    acc0 += v[b + u] * w[u];
                    acc1 += v[b + u + 1] * w[u + 1];
                }
            }
        }
        for (; b + 1 < n; b += 2) {
            acc0 += v[b] * A(W[b * ld + a]);
            acc1 += v[b + 1] * A(W[(b + 1) * ld + a]);
        }
        if (b < n) acc0 += v[b] * A(W[b * ld + a]);
        out[a] = acc0 + acc1;
    }
}

// The rank-1 updates below give each thread a column and a group of rows: blockDim / n groups of consecutive rows
// where the block has 2 n threads or more, else 2 blockDim / n (at least one). A thread per column alone left the
// threads past n idle (154 of 256 at L = 15, where each of the others walked all 102 rows in turn; at L = 9, 64
// threads and 37 columns, the second warp ran 5 lanes of 32 through all 37 rows): with three groups of 13 rows at
// L = 9 both warps take two (column, group) items, 52 rows of instructions a warp-pass instead of 74, and the longest
// thread walks 26 rows instead of 37. Measured (7e75edc, mod.rs): fewer instructions, no faster at L = 9, where the
// kernel waits on fetches, dependences and barriers rather than on issue. Every entry is still updated by the same
// single operation, so W rounds exactly as with a thread per column (scripts/lattice-reinvert-host.cpp).
__device__ __forceinline__ int row_groups(int n) {
    const int t = blockDim.x;
    return t >= 2 * n ? t / n : (2 * t / n > 1 ? 2 * t / n : 1);
}

// The entries of column c of W from row lo to hi - 1 replaced by nw(row, old entry), and with MIR (screened mixed,
// below) each rounded to f32 into mir (same stride); PF rows loaded ahead (PF_DEVICE), then the rest row by row. The
// rank-1 updates below walk every column this way (an nw that ignores the old entry leaves its loads dead).
template <bool MIR, int PF, typename S, typename N>
__device__ __forceinline__ void update_span(S* __restrict__ W, float* __restrict__ mir, int ld, int c, int lo, int hi,
                                            N&& nw) {
    int r = lo;
    if constexpr (PF > 1) {
        for (; r + PF <= hi; r += PF) {
            S w[PF];
#pragma unroll
            for (int u = 0; u < PF; u++) w[u] = W[(r + u) * ld + c];
#pragma unroll
            for (int u = 0; u < PF; u++) {
                const S x = nw(r + u, w[u]);
                W[(r + u) * ld + c] = x;
                if constexpr (MIR) mir[(r + u) * ld + c] = float(x);
            }
        }
    }
#pragma unroll 4
    for (; r < hi; r++) {
        const S x = nw(r, W[r * ld + c]);
        W[r * ld + c] = x;
        if constexpr (MIR) mir[r * ld + c] = float(x);
    }
}

// W[b][c] -= col[b] f[c] for every (b, c), column `a` replaced by col (Sherman-Morrison of an up electron a), in S.
// With MIR every new entry is also rounded to f32 into mir: the update writes every entry of W, so the copy is W's
// after it.
template <bool MIR, int PF, typename S, typename A>
__device__ __forceinline__ void update_cols(S* __restrict__ W, const A* __restrict__ f, const A* __restrict__ col, int a,
                                            int n, int ld, float* __restrict__ mir) {
    const int groups = row_groups(n), span = (n + groups - 1) / groups;
    for (int t = threadIdx.x; t < n * groups; t += blockDim.x) {
        const int c = t % n, b0 = (t / n) * span, b1 = b0 + span < n ? b0 + span : n;
        const S fc = S(f[c]);
        if (c == a) update_span<MIR, PF>(W, mir, ld, c, b0, b1, [&](int b, S) { return S(col[b]); });
        else update_span<MIR, PF>(W, mir, ld, c, b0, b1, [&](int b, S w) { return w - fc * S(col[b]); });
    }
}

// W[r][a] -= g[r] row[a] for every (r, a), row `b` replaced by row (Sherman-Morrison of a down electron b), in S;
// MIR as update_cols.
template <bool MIR, int PF, typename S, typename A>
__device__ __forceinline__ void update_rows(S* __restrict__ W, const A* __restrict__ g, const A* __restrict__ row, int b,
                                            int n, int ld, float* __restrict__ mir) {
    const int groups = row_groups(n), span = (n + groups - 1) / groups;
    for (int t = threadIdx.x; t < n * groups; t += blockDim.x) {
        const int a = t % n, r0 = (t / n) * span, r1 = r0 + span < n ? r0 + span : n;
        const S ra = S(row[a]);
        update_span<MIR, PF>(W, mir, ld, a, r0, r1, [&](int r, S w) { return r == b ? ra : w - S(g[r]) * ra; });
    }
}

// F[j][a] = sum_b PVT[b LOOK + j] W[b ld + a] for every j < LOOK and column a: the f vectors of LOOK moves in one
// pass over W (each W entry read once, LOOK products with 16-byte broadcast loads of PVT's row); F rows n apart. Every
// thread of the block calls it; a barrier ends it. In double, where the block has 2 n threads or more (L = 15: 256
// threads, 102 columns), two threads share a column, one the first half of the rows and one the rest, and F = first
// + rest: a thread per column left 154 of the 256 idle while each of the others walked all 102 rows (Nsight Compute at
// 508c7fb: 17% of the double kernel's stall samples at L = 15, 11% of single's). Measured on the H200 (2048 chains,
// L = 15; a build with it in every precision and the decisions by ballot, (5) in run, against one with neither):
// double 467k -> 485k chain sweeps/s, single 589k -> 605k. Not in single and mixed: in their 64-register entries
// (their defaults) the first halves' sums held across the barrier added spills (ptxas 13.0, sm_90: stack 8 -> 32
// bytes in single, 88 -> 136 in mixed), and that build ran 3% (single) and 7% (mixed) slower at L = 9, where the
// path is not taken, and mixed 3% slower at L = 15; pairing the lanes of a warp instead (a shuffle, no barrier) or
// splitting the moves instead of the rows spilled as much. MANY: rows four at a time where a thread walks more than
// 64 (below).
template <int PF = 1, bool MANY = false, typename S, typename A>
__device__ __forceinline__ void col_dots_look(const S* __restrict__ W, const A* __restrict__ PVT, A* __restrict__ F, int n,
                                              int ld) {
    const bool two = sizeof(S) == 8 && (int)blockDim.x >= 2 * n; // at most one (column, half) a thread then
    const int half = two ? (n + 1) / 2 : n;
    A acc[LOOK];
    bool keep = false; // this thread holds the first half of its column's sums, to add to the rest after the barrier
    for (int t = threadIdx.x; t < (two ? 2 * n : n); t += blockDim.x) {
        const bool rest = t >= n;
        const int a = rest ? t - n : t;
#pragma unroll
        for (int j = 0; j < LOOK; j++) acc[j] = A(0);
        int b = rest ? half : 0;
        const int b1 = rest ? n : half;
        if constexpr (PF > 1) { // PF_DEVICE: the same sums, PF rows' loads in flight at once
            for (; b + PF <= b1; b += PF) {
                A w[PF];
#pragma unroll
                for (int u = 0; u < PF; u++) w[u] = A(W[(b + u) * ld + a]);
#pragma unroll
                for (int u = 0; u < PF; u++) {
                    A v[LOOK];
                    load_look(PVT + (b + u) * LOOK, v);
#pragma unroll
                    for (int j = 0; j < LOOK; j++) acc[j] += v[j] * w[u];
                }
            }
        }
        const auto row = [&](int b) {
            const A w = A(W[b * ld + a]);
            A v[LOOK];
            load_look(PVT + b * LOOK, v);
#pragma unroll
            for (int j = 0; j < LOOK; j++) acc[j] += v[j] * w;
        };
        // With MANY (run's pass in single), rows four at a time where a thread walks many (L = 15: 102); else one at
        // a time, where the 2.3 KB of code the unrolled loop takes in each copy of the f32 entries cost more in
        // instruction fetch than its loads in flight saved (H100 at c6537f5, 2048 chains, interleaved: unrolled at
        // every size, single ran 661k chain sweeps/s at L = 15 against 625k, and 5.17M at L = 9 against 5.69M; double
        // was no faster at L = 15, where its halves are 51 rows). Not compiled into mixed, which never takes it (L = 9:
        // 37 rows; screened above) and whose 64-register entry then spilled in the sweep's loops (ptxas 13.0, sm_90:
        // 32 / 164 bytes, stores / loads, against 24 / 36). Where W was generic memory the compiler never unrolled it.
        if constexpr (MANY) {
            if (b1 - b > 64) {
#pragma unroll 4
                for (; b < b1; b++) row(b);
            }
        }
#pragma unroll 1
        for (; b < b1; b++) row(b);
        keep = two && !rest;
        if (!keep) {
#pragma unroll
            for (int j = 0; j < LOOK; j++) F[j * n + a] = acc[j];
        }
    }
    if (two) {
        __syncthreads();
        const int a = threadIdx.x;
        if (keep) {
#pragma unroll
            for (int j = 0; j < LOOK; j++) F[j * n + a] = acc[j] + F[j * n + a];
        }
    }
    __syncthreads();
}

// Screened mixed's pass over the f32 copy of W (run, step 3'): for every j < LOOK and column a, F[j][a] = sum_b
// PVT[b][j] W[b][a] in f32 (PVT the batch's phi vectors rounded to f32), summed in blocks of 16 rows, each block's sum
// then added to the total, and FA[j][a] = sum_b |PVT[b][j]| |W[b][a]|, which bounds F's error entry by entry (cpu.rs
// fvec_with). Where the block has 2 n threads or more two threads share a column, the first half of the rows and the
// rest, as col_dots_look in double (a thread per column left 154 of 256 idle at L = 15). A term meets at most 16 +
// ceil(n / 16) + 2 roundings instead of n: the bound in run is four times tighter at L = 15, as cpu.rs's blocked f
// vector. Every thread of the block calls it; a barrier ends it.
__device__ __forceinline__ void col_dots_screen(const float* __restrict__ W, const float* __restrict__ PVT,
                                                float* __restrict__ F, float* __restrict__ FA, int n, int ld) {
    const bool two = (int)blockDim.x >= 2 * n; // at most one (column, half) a thread then
    const int half = two ? (n + 1) / 2 : n;
    float acc[LOOK], blk[LOOK], ab[LOOK];
    bool keep = false; // this thread holds the first half of its column's sums, to add to the rest after the barrier
    for (int t = threadIdx.x; t < (two ? 2 * n : n); t += blockDim.x) {
        const bool rest = t >= n;
        const int a = rest ? t - n : t;
#pragma unroll
        for (int j = 0; j < LOOK; j++) acc[j] = blk[j] = ab[j] = 0.0f;
        for (int b = rest ? half : 0, b1 = rest ? n : half, q = 1; b < b1; b++, q++) {
            const float w = W[b * ld + a], aw = fabsf(w);
            float v[LOOK];
            load_look(PVT + b * LOOK, v);
#pragma unroll
            for (int j = 0; j < LOOK; j++) {
                blk[j] += v[j] * w;
                ab[j] += fabsf(v[j]) * aw;
            }
            if ((q & 15) == 0) {
#pragma unroll
                for (int j = 0; j < LOOK; j++) { acc[j] += blk[j]; blk[j] = 0.0f; }
            }
        }
#pragma unroll
        for (int j = 0; j < LOOK; j++) acc[j] += blk[j];
        keep = two && !rest;
        if (!keep) {
#pragma unroll
            for (int j = 0; j < LOOK; j++) { F[j * n + a] = acc[j]; FA[j * n + a] = ab[j]; }
        }
    }
    if (two) {
        __syncthreads();
        const int a = threadIdx.x;
        if (keep) {
#pragma unroll
            for (int j = 0; j < LOOK; j++) { F[j * n + a] = acc[j] + F[j * n + a]; FA[j * n + a] = ab[j] + FA[j * n + a]; }
        }
    }
    __syncthreads();
}

// Moves whose ratio sums a warp takes at once (run, step 4; ratio_sums).
#define RATIO_MOVES 4
// Sums for the ratios of RATIO_MOVES moves at once, by one warp (run, step 4; measure): for each move m with bit m of
// `live`, h = sum_c w(m, c) q(m, c) and, with KK, kk = sum_c F[fo[m] + c] q(m, c), each lane over its columns c = lane,
// lane + 32, ..., the loads of all the moves in flight together; then the sums reduced over the warp in five rounds of
// shuffles: in the first two each lane keeps the half of its values that its lane bit (16, then 8) names and adds its
// partner's copy of that half, in the last three what is left is summed over 8 lanes, so that lanes 8 m to 8 m + 7
// return move m's h and kk (the same values in each). Every sum takes five additions after its lane's, as
// warp_allsum's. A warp per move, as until 2026-12-07, took each move's sums through five dependent rounds of their
// own, one move after another (at L = 9, 2 warps, four moves a warp: 20 rounds and 40 shuffles, against 5 and 12).
template <bool KK, typename S, typename Wf, typename Qf>
__device__ __forceinline__ void ratio_sums(unsigned live, const S* __restrict__ F, int n, const int (&fo)[RATIO_MOVES],
                                           Wf&& w, Qf&& q, S& h, S& kk) {
    static_assert(RATIO_MOVES == 4, "two halving rounds leave one move a lane");
    constexpr int NV = KK ? 2 : 1; // sums a move: h at NV m, kk at NV m + 1
    const int lane = threadIdx.x & 31;
    S v[NV * RATIO_MOVES];
#pragma unroll
    for (int j = 0; j < NV * RATIO_MOVES; j++) v[j] = S(0);
#pragma unroll 1
    for (int c = lane; c < n; c += 32) {
#pragma unroll
        for (int m = 0; m < RATIO_MOVES; m++) {
            if (!(live >> m & 1)) continue;
            const S x = q(m, c);
            v[NV * m] += w(m, c) * x;
            if constexpr (KK) v[NV * m + 1] += F[fo[m] + c] * x;
        }
    }
#pragma unroll
    for (int o = 16, half = NV * RATIO_MOVES / 2; o >= 8; o >>= 1, half >>= 1) {
        const bool hi = lane & o;
#pragma unroll
        for (int j = 0; j < half; j++) {
            const S keep = hi ? v[j + half] : v[j], give = hi ? v[j] : v[j + half];
            v[j] = keep + __shfl_xor_sync(0xffffffffu, give, o);
        }
    }
#pragma unroll
    for (int o = 4; o > 0; o >>= 1)
#pragma unroll
        for (int j = 0; j < NV; j++) v[j] += __shfl_xor_sync(0xffffffffu, v[j], o);
    h = v[0];
    kk = KK ? v[NV - 1] : S(0);
}

// Of a warp's RATIO_MOVES values (one a move), lane 8 m's: move m's (ratio_sums), picked out without indexing the
// array by a variable, which would put it in local memory.
template <typename T> __device__ __forceinline__ T of_my_move(const T (&x)[RATIO_MOVES]) {
    const int lane = threadIdx.x & 31;
    T r = x[0];
#pragma unroll
    for (int m = 1; m < RATIO_MOVES; m++)
        if (lane >> 3 == m) r = x[m];
    return r;
}

// The gathers of a batch: PVT[t][k] (the f vectors' inputs, LOOK a row) and Q[k][t] for every pair t and entry
// k < LOOK, as entry(k, up site of t, down site of t, p, q) gives them (p: PVT's value; q: Q's where it returns
// true). Spread over the block as the rank-1 updates (row_groups): a thread per pair and group g of entries k = g,
// g + groups, ..., every load of a thread issued before its first store. Written one entry after another, each store
// waited for its own load (PVT, Q and the site lists share memory, so the compiler could not move a load above an
// earlier store): 16 L1/L2 round trips in a row for each thread, 21% of the double kernel's stall samples at L = 15
// and 23% of single's at L = 9 (Nsight Compute at 508c7fb).
template <typename S, typename E>
__device__ __forceinline__ void gather_look(int n, const idx_t* up, const idx_t* dn, S* PVT, S* Q, E&& entry) {
    // entries a round, their loads (up to 4) in flight together: 4 or 8 a round added spills at the 64-register cap
    // (ptxas 13.0, sm_90: single 8 -> 32 to 40 bytes of stack, mixed 80 -> 96 to 112), 2 none in single
    constexpr int ROUND = 2;
    const int groups = row_groups(n);
    for (int tt = threadIdx.x; tt < n * groups; tt += blockDim.x) {
        const int t = tt % n, g = tt / n, ut = up[t], dt = dn[t];
        for (int j0 = 0; g + j0 * groups < LOOK; j0 += ROUND) {
            S pv[ROUND], qv[ROUND];
            int hq = 0; // bit j: Q's value of entry j0 + j
#pragma unroll
            for (int j = 0; j < ROUND; j++) {
                const int k = g + (j0 + j) * groups;
                pv[j] = S(0);
                if (k < LOOK && entry(k, ut, dt, pv[j], qv[j])) hq |= 1 << j;
            }
#pragma unroll
            for (int j = 0; j < ROUND; j++) {
                const int k = g + (j0 + j) * groups;
                if (k < LOOK) PVT[t * LOOK + k] = pv[j];
                if (hq >> j & 1) Q[k * n + t] = qv[j];
            }
        }
    }
}

// PF: rows of W loaded ahead in its passes (PF_DEVICE where W is in device memory: screened mixed).
// The rebuild out of line (Chain::rebuild says why); g++ (the host checks, scripts/cu-on-host.sh) inlines as it likes,
// which changes no result.
#ifdef __CUDACC__
#define OUT_OF_LINE __noinline__
#else
#define OUT_OF_LINE
#endif
template <typename S, typename A, int PF> __device__ OUT_OF_LINE int rebuild_out_of_line(
    const LatticeParams p, const S* __restrict__ phi, S* W, S* f, S* g, S* pv, S* buf, double* dscratch, idx_t* up,
    idx_t* dn, idx_t* occ, idx_t* which, idx_t* piv, int* iscratch, float* W32);
// The chain's M_all slice (run's slice()), which the rebuild forms M in where it is off chip: set once by run, read by
// rebuild_out_of_line. Passed to the call instead, its address was held across the whole move loop (single's entry
// never forms it, and dropped the argument): at 64 registers a thread (ptxas 13.0, sm_90) mixed's entry spilled 60 /
// 272 bytes (stores / loads) and its 80-register entry 12 / 32; from here 44 / 44 and none, single's and double's
// unchanged.
__shared__ void* m_slice;
template <typename S, typename A, int PF = 1> struct Chain {
    const LatticeParams& p;
    const S* __restrict__ phi;
    S* W; // the working copy: rows of stride ld; aliases M (no restrict)
    A* M; // over W: M during a rebuild (its rows below Rows::h; Chain::mat)
    S *f, *g, *pv, *buf; // in S, the evaluation type (cpu.rs: mixed evaluates its vectors in f32 too)
    double* dscratch;
    idx_t *up, *dn, *occ, *which, *piv;
    int* iscratch;
    A* work; // reinvert's scratch: L (PANEL N_P) and dv (PANEL), 16-byte aligned (run: the vectors from f on)
    float* W32; // screened mixed: W rounded to f32, on chip (stride ld), which the updates with MIR keep; else null

    // Where M's rows are during a rebuild: below h at M (over W), the rest at off (the chain's M_all slice, same row
    // numbers): every row at M (h = N_P) in placements 0 and 1 and wherever S and A are one type; in placement 2 in
    // mixed the first N_P / 2 rows, which W's shared memory holds in f64. Made by reinvert from its argument, not held
    // by the chain across the sweep, and entries indexed by one 32-bit offset (mat), not through a row pointer: at 64
    // registers a thread (ptxas 13.0, sm_90) the single entry spilled 4 bytes at 6c9e622, 44 with the chain holding
    // two more pointers (29dfa74), 56 with row pointers and the choice per access (9fd1daf: single at L = 15 ran 478k
    // chain sweeps/s against double's 400k on the H200, 540k against 411k at 29dfa74), 8 now; mixed's 64-register
    // entry 116 (224 at 29dfa74). Where S and A are one type no choice is made per access.
    struct Rows {
        A* off;
        int h;
    };
    __device__ __forceinline__ A& mat(const Rows& m, int i, int j) const {
        if constexpr (sizeof(S) == sizeof(A)) return M[i * p.ld + j];
        else return (i < m.h ? M : m.off)[i * p.ld + j];
    }
    // pv[i] = phi(y, sites[i]) for i < n (phi is symmetric: row y gathered).
    __device__ void gather(int y, const idx_t* sites) {
        const S* row = phi + (size_t)y * p.sites;
#pragma unroll 2
        for (int i = threadIdx.x; i < p.pairs; i += blockDim.x) pv[i] = row[sites[i]];
    }
    // f_a = sum_b phi(y, d_b) W_ba for every a (thread per column).
    __device__ void fvec(int y) {
        gather(y, dn);
        __syncthreads();
        col_dots<PF>(W, pv, f, p.pairs, p.ld);
        __syncthreads();
    }
    // g_b = sum_a W_ba phi(u_a, x) for every b: bfactor threads per row, over a, with a shuffle sum inside each group
    // of bfactor lanes (the thesis' blocking factor). Every lane of a warp runs the same number of rounds (blockDim is
    // whole warps), so the full-mask shuffles are safe.
    __device__ void gvec(int x) {
        gather(x, up);
        __syncthreads();
        const int np = p.pairs, ld = p.ld, bf = p.bfactor, lane = threadIdx.x % bf, rows = blockDim.x / bf;
        for (int b0 = 0; b0 < np; b0 += rows) {
            const int b = b0 + threadIdx.x / bf;
            S acc = S(0);
            if (b < np)
                for (int a = lane; a < np; a += bf) acc += W[b * ld + a] * pv[a];
            for (int o = bf >> 1; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o, bf);
            if (lane == 0 && b < np) g[b] = acc;
        }
        __syncthreads();
    }
    // Sherman-Morrison: up electron a moves to s; f holds the new row times W (f_a the ratio).
    template <bool MIR = false> __device__ void update_up(int a, int s) {
        const int np = p.pairs, ld = p.ld;
        const S inv_r = S(1) / f[a];
        for (int b = threadIdx.x; b < np; b += blockDim.x) buf[b] = W[b * ld + a] * inv_r;
        __syncthreads();
        update_cols<MIR, PF>(W, f, buf, a, np, ld, W32);
        if (threadIdx.x == 0) up[a] = s;
        __syncthreads();
    }
    // Sherman-Morrison: down electron b moves to s; g holds W times the new column (g_b the ratio).
    template <bool MIR = false> __device__ void update_dn(int b, int s) {
        const int np = p.pairs, ld = p.ld;
        const S inv_r = S(1) / g[b];
        for (int a = threadIdx.x; a < np; a += blockDim.x) buf[a] = W[b * ld + a] * inv_r;
        __syncthreads();
        update_rows<MIR, PF>(W, g, buf, b, np, ld, W32);
        if (threadIdx.x == 0) dn[b] = s;
        __syncthreads();
    }
    // The blocked rebuild (reinvert) factors the columns of one panel, PANEL pivots, at a time. It computes W bit for
    // bit as the Gauss-Jordan of one pivot at a time with partial pivoting in place (cpu.rs gauss_jordan_one: step k
    // swaps rows k and its pivot row, scales row k by d = 1 / pivot with column k replaced by d, and takes
    // m_i x row k from every other row i, m_i its column-k value, column k replaced by -m_i d): every entry receives
    // the same operations in the same order and expression shapes (x - m r, t d), only grouped differently.
    // Outside the panel's columns an entry of step k's pivot row is t d, t as the earlier steps of the panel left it;
    // an entry of any other row is x - m r, r that pivot row's entry: so once the panel's multipliers m and pivots are
    // known, each column outside the panel is a recurrence of PANEL steps, needing the matrix only once per panel.
    // Rows a thread handles at once in both (RU), all loaded before any is stored (the rows share M, so the compiler
    // cannot overlap them itself): two independent chains of loads and FMAs in f32. More do not fit the 64- and
    // 80-register entries without spills in these loops (ptxas 13.0, sm_90: 4 rows in f32, 2 in f64 and mixed).
    static constexpr int RU = sizeof(A) == 4 ? 2 : 1;
    //
    // panel_factor, by warp 0 alone (no block barrier; __syncwarp between its writes and other lanes' reads): the
    // panel's steps on the panel's columns, every row, exactly as one pivot at a time: the pivot from the candidates
    // (warp_pivot), rows k and pr swapped in the panel's columns (lane c: column k0 + c) and the pivot row scaled
    // there (every lane also keeps the scaled entries, s), then the elimination, lanes over rows i = lane + 32 q, which
    // also finds the next step's candidates among the values it writes. Each row's multiplier of each step goes to L
    // (L's rows swapped with M's); the pivots to piv, 1 / pivot to dv. The rest of the rows' swaps is panel_update's.
    // Its lanes over rows write L[i][m] with a stride of PANEL, a bank conflict (8-way in f32, 16-way in f64) that the
    // warp does not wait for.
    __device__ void panel_factor(const Rows mr, int k0, int bp, A* __restrict__ L, A* __restrict__ dv, int* failed) {
        const int n = p.pairs, ld = p.ld, lane = threadIdx.x & 31;
        // the first pivot's candidates: column k0, rows k0 on (the others' come with the eliminations)
        A best = A(-1);
        int pr = n;
        for (int i = k0 + lane; i < n; i += 32) {
            const A a = fabs(mat(mr, i, k0));
            if (a > best) { best = a; pr = i; }
        }
        int bad = 0;
        for (int m = 0; m < bp; m++) {
            const int k = k0 + m;
            pr = warp_pivot(best, pr);
            const A pval = pr < n ? mat(mr, pr, k) : A(0);
            if (pval == A(0)) { // zero or NaN column (no candidate): every lane takes the same decision
                if (lane == 0) *failed = 1;
                bad = 1;
                break;
            }
            // the pivot row in the panel (every lane: s; lane c: its entry c, and row k's), and the rows of L to swap
            A s[PANEL];
#pragma unroll
            for (int c = 0; c < PANEL; c++) s[c] = c < bp ? mat(mr, pr, k0 + c) : A(0);
            const A tc = lane < bp ? mat(mr, pr, k0 + lane) : A(0), uc = lane < bp ? mat(mr, k, k0 + lane) : A(0);
            const A lk = lane < m ? L[k * PANEL + lane] : A(0), lp = lane < m ? L[pr * PANEL + lane] : A(0);
            const A d = A(1) / pval;
#pragma unroll
            for (int c = 0; c < PANEL; c++) s[c] = (c == m ? A(1) : s[c]) * d;
            __syncwarp();
            if (lane < bp) {
                if (pr != k) mat(mr, pr, k0 + lane) = uc;
                mat(mr, k, k0 + lane) = (lane == m ? A(1) : tc) * d; // = s[lane]
            }
            if (pr != k && lane < m) { L[k * PANEL + lane] = lp; L[pr * PANEL + lane] = lk; }
            if (lane == 0) { piv[k] = pr; dv[m] = d; }
            __syncwarp();
            // the elimination in the panel's columns, and the next step's candidates (rows below k, in order)
            best = A(-1);
            pr = n;
            for (int i0 = lane; i0 < n; i0 += 32 * RU) {
                A bi[RU], v[RU][PANEL];
#pragma unroll
                for (int u = 0; u < RU; u++) {
                    const int i = i0 + 32 * u;
                    const bool live = i < n && i != k;
                    bi[u] = live ? mat(mr, i, k) : A(0);
#pragma unroll
                    for (int c = 0; c < PANEL; c++) v[u][c] = live && c < bp ? mat(mr, i, k0 + c) : A(0);
                }
#pragma unroll
                for (int u = 0; u < RU; u++) {
                    const int i = i0 + 32 * u;
                    if (i >= n || i == k) continue;
                    L[i * PANEL + m] = bi[u];
#pragma unroll
                    for (int c = 0; c < PANEL; c++) {
                        if (c >= bp) break;
                        const A x = (c == m ? A(0) : v[u][c]) - bi[u] * s[c];
                        mat(mr, i, k0 + c) = x;
                        if (c == m + 1 && i > k) {
                            const A a = fabs(x);
                            if (a > best) { best = a; pr = i; }
                        }
                    }
                }
            }
            __syncwarp();
        }
        if (lane == 0) iscratch[0] = bad;
    }
    // panel_update, after panel_factor, for nc columns outside the panel: column j = cj < jlo ? cj : cj + ex for cj <
    // nc (every one outside the panel: jlo = k0, ex = bp), by the nt threads from t0. First the panel's row swaps
    // there, in order, a thread per column, each pivot row's entry as chosen kept in R; then a thread per column and
    // group of rows (as update_cols: nt / nc groups; one group: no barrier between the two, the only way where nt is
    // not the block) works out the panel's pivot rows in its column in registers, r_l = (R[l][j] - m_l0 r_0 - ... -
    // m_l,l-1 r_l-1) d_l, each group alike, and takes x = x - L[i][l] r_l, l = 0, 1, ..., from each of its n - bp rows
    // (L's row in 16-byte loads, one address over the warp); the last group writes the pivot rows, r_l - m_l,l+1
    // r_l+1 - ....
    __device__ void panel_update(const Rows mr, int k0, int bp, const A* __restrict__ L, A* __restrict__ R,
                                 const A* __restrict__ dv, int jlo, int nc, int ex, int t0, int nt) {
        const int n = p.pairs, ld = p.ld, nr = n - bp;
        if (nc <= 0) return;
        const int groups = nt == (int)blockDim.x && nt >= 2 * nc ? nt / nc : 1, span = (nr + groups - 1) / groups;
        const int tid = (int)threadIdx.x - t0;
        auto swaps = [&](int j) {
            for (int m = 0; m < bp; m++) {
                const int k = k0 + m, q = piv[k];
                const A t = mat(mr, q, j);
                if (q != k) mat(mr, q, j) = mat(mr, k, j);
                R[m * n + j] = t;
            }
        };
        if (groups > 1) {
            for (int cj = tid; cj < nc; cj += nt) swaps(cj < jlo ? cj : cj + ex);
            __syncthreads();
        }
        for (int t = tid; t < nc * groups; t += nt) {
            const int cj = t % nc, g = t / nc, j = cj < jlo ? cj : cj + ex;
            if (groups == 1) swaps(j);
            A r[PANEL];
#pragma unroll
            for (int l = 0; l < PANEL; l++) {
                r[l] = A(0);
                if (l < bp) {
                    A x = R[l * n + j];
#pragma unroll
                    for (int c = 0; c < l; c++) x = x - L[(k0 + l) * PANEL + c] * r[c];
                    r[l] = x * dv[l];
                }
            }
            const int q1 = (g + 1) * span < nr ? (g + 1) * span : nr;
            for (int q = g * span; q < q1; q += RU) {
                A x[RU], lv[RU][PANEL];
#pragma unroll
                for (int u = 0; u < RU; u++) {
                    const int i = q + u < k0 ? q + u : q + u + bp;
                    x[u] = A(0);
#pragma unroll
                    for (int c = 0; c < PANEL; c++) lv[u][c] = A(0);
                    if (q + u < q1) {
                        load_look(L + i * PANEL, lv[u]);
                        x[u] = mat(mr, i, j);
                    }
                }
#pragma unroll
                for (int u = 0; u < RU; u++) {
                    const int i = q + u < k0 ? q + u : q + u + bp;
                    if (q + u >= q1) break;
                    A y = x[u];
#pragma unroll
                    for (int c = 0; c < PANEL; c++)
                        if (c < bp) y = y - lv[u][c] * r[c];
                    mat(mr, i, j) = y;
                }
            }
            if (g == groups - 1) {
#pragma unroll
                for (int l = 0; l < PANEL; l++) {
                    if (l >= bp) break;
                    A x = r[l];
#pragma unroll
                    for (int c = l + 1; c < PANEL; c++)
                        if (c < bp) x = x - L[(k0 + l) * PANEL + c] * r[c];
                    mat(mr, k0 + l, j) = x;
                }
            }
        }
    }
    // W = M^-1 from scratch (see the head of the file). M is built over W (the rebuild replaces it); a zero pivot
    // (never, for a configuration of nonzero weight) leaves W unusable, so it sets *failed and the chain's energy
    // sum becomes NaN at the end of the launch: the record fails instead of carrying on with a wrong W.
    // Blocked: per panel of PANEL pivots panel_factor (warp 0) and panel_update (the block; looking ahead, part of it
    // beside panel_factor, below), two or three barriers; the scratch (L, dv: PANEL n + PANEL entries of A) is
    // `work`, the sweep's vectors, free during a rebuild, and R (PANEL n) follows dv there or M in M_all.
    // reinvert, called out of line. Rare (double: degenerate swaps; single and mixed up to L = 9: the residual check,
    // a few in a thousand chain sweeps), yet inlined its registers were the move loop's: at 64 a thread (ptxas 13.0,
    // sm_90) mixed's entry spilled 124 / 536 bytes (stores / loads), most reloaded in the move loop, and single's
    // 12 / 20; out of line 60 / 276 and none. The call takes the chain's members by value and builds its own Chain
    // (the chain in run stays in registers: taking its address, as a member call would, puts it in local memory for
    // the whole kernel, which made the outlined vector steps of 7dab107 slower, mod.rs) and a copy of the params; the
    // M_all slice it reads from m_slice.
    __device__ __forceinline__ void rebuild(int* failed) const {
        if (rebuild_out_of_line<S, A, PF>(p, phi, W, f, g, pv, buf, dscratch, up, dn, occ, which, piv, iscratch, W32))
            *failed = 1;
    }
    __device__ void reinvert(int* failed, A* Mg) {
        const int n = p.pairs, ld = p.ld;
        // R follows dv where M is on chip and wherever S and A are one type (the vectors leave room: gpu.rs vec_bytes),
        // so that single and double never form Mg
        const Rows mr{Mg, p.on_chip == 2 ? (int)((size_t)n * sizeof(S) / sizeof(A)) : n};
        A* const R = sizeof(S) == sizeof(A) || p.on_chip == 1 ? work + n * PANEL + PANEL : Mg + (size_t)n * ld;
        __syncthreads(); // up, dn final; readers of W and of the vectors under `work` are done
        // a warp per row, lanes over columns: no index division, conflict-free rows
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
        for (int i = warp; i < n; i += warps) {
            const S* prow = phi + (size_t)up[i] * p.sites;
            for (int j = lane; j < n; j += 32) mat(mr, i, j) = A(prow[dn[j]]);
        }
        __syncthreads();
        A* L = work;             // [n][PANEL], 16-byte aligned rows: row i's multiplier of each step of the panel
        A* dv = L + n * PANEL;   // [PANEL]: 1 / pivot
        // R, [PANEL][n]: the pivot rows outside the panel, as chosen (panel_update)
        // Look-ahead, where S and A are one type and the block has more than one warp: the update of panel p + 1's
        // columns by panel p first, by the block; then warp 0 factors panel p + 1 while the other warps apply panel p
        // to the rest of the columns (a thread a column), where the whole block waited at a barrier for warp 0 (Nsight
        // Compute at 65b0113, H100, L = 15, single: 16.5% of the entry's stall samples, the rebuild every sweep there).
        // Each entry still receives the same operations in the same order. Panels alternate between two sets of L
        // and dv, the second after R (3 PANEL n + 2 PANEL entries of A in all, within the vectors: gpu.rs vec_bytes).
        const bool ahead = sizeof(S) == sizeof(A) && warps > 1;
        A* const L2 = work + 2 * n * PANEL + PANEL;
        A* const dv2 = L2 + n * PANEL;
        // k: the panel warp 0 factors (while, looking ahead, the other warps apply panel k - PANEL to the columns
        // outside both); then (upd) the block applies panel k to the next panel's columns (looking ahead) or to all
        // of its columns. One call site each, so that the entries hold one copy of each (two of panel_update spilled
        // in single's 64-register entry).
        for (int k = 0, odd = 0, upd = 0;; upd = !upd) {
            const int bk = n - k < PANEL ? n - k : PANEL, k1 = k + bk, bq = n - k1 < PANEL ? n - k1 : PANEL;
            const bool prev = !upd && ahead && k > 0; // the other warps' share beside panel_factor
            if (!upd && warp == 0) {
                panel_factor(mr, k, bk, odd ? L2 : L, odd ? dv2 : dv, failed);
            } else if (upd || prev) {
                const bool next = upd && ahead && bq > 0; // the next panel's columns only
                const bool in2 = upd == odd; // L2: panel k's where odd, else panel k - PANEL's
                panel_update(mr, upd ? k : k - PANEL, upd ? bk : PANEL, in2 ? L2 : L, R, in2 ? dv2 : dv,
                             next ? 0 : upd ? k : k - PANEL, next ? bq : upd ? n - bk : n - PANEL - bk,
                             next ? k1 : upd ? bk : PANEL + bk, upd ? 0 : 32, upd ? blockDim.x : blockDim.x - 32);
            }
            __syncthreads(); // after upd: the next panel's columns, and every row, final before warp 0 goes on
            if (!upd && iscratch[0]) return; // a zero pivot (*failed set)
            if (upd) {
                if (bq == 0) break;
                k = k1;
                odd = ahead && !odd;
            }
        }
        if constexpr (sizeof(S) == sizeof(A)) {
            // Undo the row interchanges as column interchanges in reverse order, in place (W is M); a thread owns
            // whole rows.
            for (int i = threadIdx.x; i < n; i += blockDim.x) {
                A* row = M + (size_t)i * ld; // every row at M (Rows)
                for (int k = n - 1; k >= 0; k--) {
                    const int q = piv[k];
                    if (q != k) { const A t = row[k]; row[k] = row[q]; row[q] = t; }
                }
            }
            __syncthreads();
        } else {
            // The column interchanges (the row interchanges undone in reverse order) as one permutation, col[j]: the
            // column of M that ends in column j; then M (A) narrowed to W (S), each entry read from its column and
            // rounded once: the values of interchanging in place, then narrowing. In W's memory, NARROW_ROWS rows
            // at a time upwards: S rows [r0, r1) lie in A rows below r0 once r0 > 0 (S row i ends at byte 4 (i + 1)
            // ld, A row r0 starts at 8 r0 ld), read by then; the first chunk's S rows lie in its own A rows, read
            // into registers before the barrier; rows at Rows::off (placement 2) are not in W's memory. The host launches
            // at least n / NARROW_MAX threads (gpu.rs).
            idx_t* col = (idx_t*)work; // L is done
            if (threadIdx.x == 0) {
                for (int j = 0; j < n; j++) col[j] = j;
                for (int k = n - 1; k >= 0; k--) {
                    const int q = piv[k];
                    const idx_t t = col[k]; col[k] = col[q]; col[q] = t;
                }
            }
            __syncthreads();
            for (int r0 = 0; r0 < n; r0 += NARROW_ROWS) {
                A v[NARROW_ROWS][NARROW_MAX];
#pragma unroll
                for (int r = 0; r < NARROW_ROWS; r++)
#pragma unroll
                    for (int c = 0; c < NARROW_MAX; c++) {
                        const int i = r0 + r, j = threadIdx.x + c * blockDim.x;
                        v[r][c] = i < n && j < n ? mat(mr, i, col[j]) : A(0);
                    }
                __syncthreads();
#pragma unroll
                for (int r = 0; r < NARROW_ROWS; r++)
#pragma unroll
                    for (int c = 0; c < NARROW_MAX; c++) {
                        const int i = r0 + r, j = threadIdx.x + c * blockDim.x;
                        if (i < n && j < n) W[i * ld + j] = S(v[r][c]);
                    }
                __syncthreads(); // also: col read before the sweep's vectors (over it) are written
            }
        }
    }
};

template <typename S, typename A, int PF> __device__ OUT_OF_LINE int rebuild_out_of_line(
    const LatticeParams p, const S* __restrict__ phi, S* W, S* f, S* g, S* pv, S* buf, double* dscratch, idx_t* up,
    idx_t* dn, idx_t* occ, idx_t* which, idx_t* piv, int* iscratch, float* W32) {
    Chain<S, A, PF> ch{p, phi, W, (A*)W, f, g, pv, buf, dscratch, up, dn, occ, which, piv, iscratch, (A*)f, W32};
    int failed = 0;
    ch.reinvert(&failed, (A*)m_slice);
    return failed;
}

// A measurement of the local energy per site after a sweep, from W and phi in T (the evaluation type; f32 in screened
// mixed: its copy of W), into the tally (thread 0), each term's sum in f64. PVT, F and Q are the batch's arrays in T;
// piv (free outside a rebuild) lists the down electrons with an up neighbour, batch[0] how many.
template <typename T>
__device__ void measure(const LatticeParams& p, const T* __restrict__ phi, const T* W, T* PVT, T* F, T* Q,
                        const idx_t* up, const idx_t* dn, const idx_t* occ, const idx_t* which, idx_t* piv,
                        const int* __restrict__ nbr, const double* __restrict__ hop, double* dscratch, int* batch,
                        double* tl) {
    const int np = p.pairs, ns = p.sites, ld = p.ld, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5,
              warps = blockDim.x >> 5;
    // Energy: kinetic hops of every electron to an empty neighbour (the up electron e < np: down column e of W; the
    // down electron e - np: along its row). Each warp takes 32 electrons at a time, a lane an electron and a bit of
    // `holes` an empty neighbour, and their hops RATIO_MOVES at a time (ratio_sums), the first left of each of the
    // first lanes that have any. A thread per electron, as until 2026-12-07, walked each of its hops' np terms in
    // turn, a gather from phi in global memory each, while the rest of the block waited at the next barrier.
    double ekin = 0.0, nkin = 0.0;
    for (int e0 = 32 * warp; e0 < 2 * np; e0 += 32 * warps) {
        const int e = e0 + lane;
        const int s = e < np ? up[e] : e < 2 * np ? dn[e - np] : 0;
        unsigned holes = 0;
        if (e < 2 * np)
            for (int jn = 0; jn < 4; jn++) holes |= (unsigned)(occ[nbr[4 * s + jn]] == OCC_HL) << jn;
        for (unsigned left = __ballot_sync(0xffffffffu, holes != 0); left != 0;
             left = __ballot_sync(0xffffffffu, holes != 0)) {
            int at[RATIO_MOVES], step[RATIO_MOVES], row[RATIO_MOVES], bond[RATIO_MOVES];
            unsigned live = 0, upm = 0;
#pragma unroll
            for (int m = 0; m < RATIO_MOVES; m++) {
                at[m] = row[m] = bond[m] = 0;
                step[m] = 1;
                if (left != 0) {
                    const int src = __ffs(left) - 1; // the same in every lane
                    left &= left - 1;
                    const unsigned hs = __shfl_sync(0xffffffffu, holes, src);
                    const int ss = __shfl_sync(0xffffffffu, s, src), es = e0 + src, jn = __ffs(hs) - 1;
                    if (lane == src) holes &= holes - 1;
                    live |= 1u << m;
                    if (es < np) { upm |= 1u << m; at[m] = es; step[m] = ld; }
                    else at[m] = (es - np) * ld;
                    bond[m] = 4 * ss + jn;
                    row[m] = nbr[bond[m]] * ns;
                }
            }
            T r, none;
            ratio_sums<false>(live, F, np, at, [&](int m, int c) { return W[at[m] + c * step[m]]; },
                              [&](int m, int c) { return phi[(size_t)row[m] + (upm >> m & 1 ? dn : up)[c]]; }, r, none);
            if ((lane & 7) == 0 && (live >> (lane >> 3) & 1)) {
                ekin += hop[of_my_move(bond)] * (double)r;
                nkin += 1.0;
            }
        }
    }
    block_sum2(ekin, nkin, dscratch);
    // Exchange: the down electrons with an up neighbour listed (in piv, free outside a rebuild) by warp 0, 32 at a
    // time by a ballot (thread 0 alone walked them one after another), their f vectors LOOK per pass over W, then the
    // bonds' sums RATIO_MOVES at a time a warp (ratio_sums).
    if (warp == 0) {
        int cnt = 0;
        for (int b0 = 0; b0 < np; b0 += 32) {
            const int b = b0 + lane;
            bool any = false;
            if (b < np) {
                const int y = dn[b];
                for (int jn = 0; jn < 4; jn++) any |= occ[nbr[4 * y + jn]] == OCC_UP;
            }
            const unsigned bal = __ballot_sync(0xffffffffu, any);
            if (any) piv[cnt + __popc(bal & ((1u << lane) - 1))] = b;
            cnt += __popc(bal);
        }
        if (lane == 0) batch[0] = cnt;
    }
    __syncthreads();
    const int listed = batch[0];
    double ej = 0.0, bonds = 0.0;
    for (int g0 = 0; g0 < listed; g0 += LOOK) {
        const int kn = min(LOOK, listed - g0);
        gather_look(np, up, dn, PVT, Q, [&](int k, int, int dt, T& pk, T&) {
            if (k < kn) pk = phi[(size_t)dn[piv[g0 + k]] * ns + dt];
            return false;
        });
        __syncthreads();
        col_dots_look(W, PVT, F, np, ld);
        // the bonds (k, jn): down electron piv[g0 + k] on y and its neighbour jn, x, where an up electron is
        for (int w0 = warp; w0 < 4 * kn; w0 += RATIO_MOVES * warps) {
            int at[RATIO_MOVES], fo[RATIO_MOVES], xs[RATIO_MOVES], ys[RATIO_MOVES];
            unsigned live = 0;
#pragma unroll
            for (int m = 0; m < RATIO_MOVES; m++) {
                const int w = w0 + m * warps;
                at[m] = fo[m] = xs[m] = ys[m] = 0;
                if (w < 4 * kn) {
                    const int k = w >> 2, b = piv[g0 + k], y = dn[b], x = nbr[4 * y + (w & 3)];
                    if (occ[x] == OCC_UP) {
                        live |= 1u << m;
                        at[m] = b * ld;
                        fo[m] = k * np;
                        xs[m] = x;
                        ys[m] = y;
                    }
                }
            }
            T h, kk;
            ratio_sums<true>(live, F, np, fo, [&](int m, int c) { return W[at[m] + c]; },
                             [&](int m, int c) { return phi[(size_t)xs[m] * ns + up[c]]; }, h, kk);
            if ((lane & 7) == 0 && (live >> (lane >> 3) & 1)) {
                const int x = of_my_move(xs), a = which[x];
                const T r = W[of_my_move(at) + a] * (phi[(size_t)of_my_move(ys) * ns + x] - kk) + F[of_my_move(fo) + a] * h;
                ej -= 0.5 * p.j * (1.0 + (double)r);
                bonds += 1.0;
            }
        }
        __syncthreads(); // the readers of F are done before the next gathers
    }
    block_sum2(ej, bonds, dscratch);
    const double fvecs = listed;
    if (tid == 0) {
        const double e = (ekin + ej) / ns;
        tl[0] += e; tl[1] += e * e; tl[2] += 1.0;
        tl[7] += nkin; tl[8] += bonds; tl[9] += fvecs;
    }
    __syncthreads();
}

// A chain's whole run. SCR (screened mixed, S = A = double; issue #26): W in f64 in the chain's device buffer
// (p.on_chip 0) is the state and changes only as double's would, and a copy rounded to f32 (phi32 the pair function
// rounded to f32) held on chip where W would be screens every proposal: its f32 ratio and a bound on the distance from
// the f64 ratio double computes (cpu.rs screen: the same bound, with this kernel's summation paths). Moves the bound
// shows to be rejected are rejected; the batch's others take double's f64 ratio and decision. So the chain is double's,
// W bit for bit, while most ratios and every measurement are f32 from the copy, which the last rank-1 update of each
// accepted move writes beside W (update_cols, update_rows with MIR).
//
// WOFF: W in the chain's device buffer (p.on_chip 0) rather than in shared memory, fixed at compile time. Chosen at
// run time, W was a generic pointer (shared or device memory) and every access to it a generic load or store with
// 64-bit address arithmetic; known to be in shared memory, they are LDS / STS with 32-bit addresses. ptxas 13.0,
// sm_90 (scripts/ptxas-info.sh): double's entry 153.9 -> 121.1 KB of code, 16 / 28 -> 0 / 0 bytes of spills
// (stores / loads), single's 64-register entry 99.4 -> 96.1 KB, mixed's 118.1 -> 111.5 KB and 84 / 108 -> 24 / 36,
// with rng (below) in shared memory (c6537f5; mod.rs has the speeds).
template <typename S, typename A, bool SCR = false, bool WOFF = SCR>
__device__ void run(const LatticeParams p, const S* __restrict__ phi, const float* __restrict__ phi32, const int* __restrict__ nbr,
                    const double* __restrict__ hop, S* __restrict__ W_all, A* __restrict__ M_all, int* __restrict__ up_all,
                    int* __restrict__ dn_all, u64* __restrict__ rng_all, double* __restrict__ tally_all) {
    const int c = blockIdx.x;
    if (c >= p.chains) return; // whole block
    if ((p.on_chip == 0) != WOFF) { // launched from the other placement's module: a NaN energy fails the record
        if (threadIdx.x == 0) tally_all[(size_t)c * TALLY_LEN] = __longlong_as_double(0x7ff8000000000000ll);
        return;
    }
    const int np = p.pairs, ns = p.sites, ld = p.ld, tid = threadIdx.x, lane = tid & 31;
#ifdef LATTICE_HOST_SMEM // the host check (scripts/lattice-run-host.cpp) hands each block its dynamic shared memory
    unsigned char* const smem = LATTICE_HOST_SMEM;
#else
    extern __shared__ __align__(16) unsigned char smem[];
#endif
    double* dscratch = (double*)smem; // 64 doubles first: every later array stays aligned
    // the vectors in S, the evaluation type: f, g, pv, buf, 64 spare entries, then the batch's (16-byte aligned: 512 +
    // (4 np + 64) sizeof(S) bytes in); reinvert's scratch (A) over them, p.vec_bytes for the larger
    S* f = (S*)(dscratch + 64);
    S* g = f + np;
    S* pv = g + np;
    S* buf = pv + np;
    S* PVT = buf + np + 64;      // [np][LOOK] (16-byte aligned rows): the vectors phi(y, d) of LOOK swaps, interleaved
    S* F = PVT + LOOK * np;      // [LOOK][np]: their f vectors
    S* Q = F + LOOK * np;        // [LOOK][np]: the phi vector of each move's short dot products
    idx_t* up = (idx_t*)((unsigned char*)f + p.vec_bytes);
    idx_t* dn = up + np;
    idx_t* occ = dn + np;
    idx_t* which = occ + ns;
    idx_t* piv = which + ns;
    // the working copy of W (and M): after the vectors, 16-byte aligned, when on chip; else this chain's M_all slice:
    // np ld entries of M, PANEL np of R (gpu.rs allocates them where placement is 0 or 2), formed where used, not
    // held across the sweep (Chain::Rows)
    // (rounded up as an offset from smem, which is 16-byte aligned: rounding the address itself, through an integer,
    // hid from the compiler that it is in shared memory)
    unsigned char* const tail = smem + (((unsigned char*)(piv + np) - smem + 15) & ~(ptrdiff_t)15);
    const auto slice = [&]() { return M_all + (size_t)c * ((size_t)np * ld + PANEL * np); };
    S* W = WOFF ? (S*)slice() : (S*)tail;
    // screened mixed: W's f32 copy where W would be on chip; the batch's f32 f vectors and their error sums over F (the
    // f64 f vectors overwrite them after the screen); each move's f32 ratio and bound, and the batch's masks, in
    // dscratch (the measurement's, free during a batch)
    float* const W32 = SCR ? (float*)tail : nullptr;
    float* const F32 = (float*)F;
    float* const FA = F32 + LOOK * np;
    double* const mv_r32 = dscratch;
    double* const mv_band = dscratch + LOOK;
    unsigned* const smask = (unsigned*)(dscratch + 2 * LOOK);
    const auto round_all = [&]() { // W32 from W, every entry; a barrier ends it
        for (int e = tid; e < np * np; e += blockDim.x) W32[(e / np) * ld + e % np] = float(W[(e / np) * ld + e % np]);
        __syncthreads();
    };
    __shared__ int iscratch[32];
    // the batch: per move the electron, its spin, old and new site, hop (1) or swap (0), the partner electron of a
    // swap, the random outputs consumed up to and including it; uniform, ratio, h and phi(y, x) of a swap
    __shared__ int mv_i[LOOK], mv_spin[LOOK], mv_old[LOOK], mv_nw[LOOK], mv_hop[LOOK], mv_j[LOOK], mv_cnt[LOOK];
    // and the rows of phi the batch's gathers read: y ns + 1 for a swap's phi(y, d) (0 for a hop) in the low half;
    // the row of Q's phi ((x or the new site) ns) twice, plus 1 where it is read at the up sites, in the high half
    __shared__ u64 mv_gat[LOOK];
    __shared__ double mv_u[LOOK], mv_pyx[LOOK];
    __shared__ A mv_r[LOOK], mv_h[LOOK];
    __shared__ u64 win[WINDOW];
    __shared__ int batch[3]; // moves drawn, moves kept, the accepted one (-1: none)

    Chain<S, A, SCR ? PF_DEVICE : 1> ch{p, phi, W, (A*)W, f, g, pv, buf, dscratch, up, dn, occ, which, piv, iscratch, (A*)f, W32};
    for (int k = tid; k < ns; k += blockDim.x) occ[k] = OCC_HL;
    for (int k = tid; k < np; k += blockDim.x) {
        up[k] = up_all[(size_t)c * np + k];
        dn[k] = dn_all[(size_t)c * np + k];
    }
    for (int e = tid; e < np * np; e += blockDim.x) W[(e / np) * ld + e % np] = W_all[(size_t)c * np * np + e];
    __shared__ int failed;
    if (tid == 0) { failed = 0; m_slice = slice(); }
    __syncthreads();
    if constexpr (SCR) round_all();
    // the chain's random-number state, read by warp 0 and advanced by thread 0: in shared memory, not in a register
    // pair of every thread across the whole sweep (ptxas 13.0, sm_90: mixed's 64-register entry spilled it there,
    // 48 / 60 bytes of spills, stores / loads, against 24 / 36)
    __shared__ u64 rng;
    __shared__ double tl[TALLY_LEN]; // thread 0 only: in shared memory, not in every thread's registers
    if (tid == 0) {
        for (int a = 0; a < np; a++) { occ[up[a]] = OCC_UP; which[up[a]] = a; }
        for (int b = 0; b < np; b++) { occ[dn[b]] = OCC_DN; which[dn[b]] = b; }
        rng = rng_all[c];
        for (int k = 0; k < TALLY_LEN; k++) tl[k] = tally_all[(size_t)c * TALLY_LEN + k];
    }
    __syncthreads();

    const int warp = tid >> 5, warps = blockDim.x >> 5;
    for (int sweep = 0; sweep < p.equil + p.sweeps; sweep++) {
        for (int move = 0; move < 2 * np;) {
            // (1) warp 0 draws up to LOOK moves as if all were rejected (the configuration as it is now). A move that
            // starts after output o takes outputs o + 1, ... (win[o], ...): electron, spin, new site (again while the
            // same spin holds it), uniform. Each lane works out the moves that would start at o = lane and lane + 32,
            // packed as (outputs taken | spin << 7 | electron << 8 | site << 18; 0 where it runs past the window:
            // L <= 41 keeps electron < 1024 and site < 2048); shuffles then chain them, move k + 1 starting where
            // move k ended, and lane k fills in move k.
            if (tid < 32) {
                const u64 s0 = rng;
                win[lane] = sm_mix(s0 + (u64)(lane + 1) * SM_GAMMA);
                win[lane + 32] = sm_mix(s0 + (u64)(lane + 33) * SM_GAMMA);
                __syncwarp();
                int pk[2];
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int o = lane + 32 * h;
                    pk[h] = 0;
                    if (o + 3 < p.window) {
                        const int i = sm_below_of(win[o], np), spin = sm_below_of(win[o + 1], 2);
                        for (int c = o + 2; c < p.window - 1; c++) {
                            const int nw = sm_below_of(win[c], ns);
                            if (occ[nw] != spin) {
                                pk[h] = (c + 2 - o) | spin << 7 | i << 8 | nw << 18;
                                break;
                            }
                        }
                    }
                }
                const int kmax = min(LOOK, 2 * np - move);
                int o = 0, kn = 0, mine = 0, mine_o = 0;
                for (int k = 0; k < kmax && o < WINDOW; k++) {
                    const int v = __shfl_sync(0xffffffffu, o < 32 ? pk[0] : pk[1], o & 31);
                    if (v == 0) break; // runs past the window: the batch ends before it
                    if (lane == k) { mine = v; mine_o = o; }
                    o += v & 127;
                    kn++;
                }
                if (kn == 0) {
                    // the first move needs more than the window (a long run of occupied sites): drawn one output at
                    // a time, as cpu.rs
                    if (lane == 0) {
                        int used = 0;
                        auto next = [&]() { used++; return sm_mix(s0 + (u64)used * SM_GAMMA); };
                        const int i = sm_below_of(next(), np);
                        const int spin = sm_below_of(next(), 2);
                        int nw;
                        do { nw = sm_below_of(next(), ns); } while (occ[nw] == spin);
                        mine = (spin << 7) | (i << 8) | (nw << 18);
                        mine_o = used; // the uniform's output: mine_o + 1
                        mv_u[0] = sm_uniform_of(next());
                        mv_cnt[0] = used;
                    }
                    kn = 1;
                } else if (lane < kn) {
                    const int len = mine & 127;
                    mv_u[lane] = sm_uniform_of(win[mine_o + len - 1]);
                    mv_cnt[lane] = mine_o + len;
                }
                if (lane < kn) {
                    const int spin = (mine >> 7) & 1, i = (mine >> 8) & 1023, nw = mine >> 18;
                    const int old = spin == OCC_UP ? up[i] : dn[i];
                    const bool hop = occ[nw] == OCC_HL;
                    mv_i[lane] = i; mv_spin[lane] = spin; mv_old[lane] = old; mv_nw[lane] = nw;
                    mv_hop[lane] = hop; mv_j[lane] = which[nw];
                    // the gathers' rows of phi (2), worked out once a move here rather than by each of the np threads
                    // of every entry (at L = 9 the entries' index work was a tenth of the f32 kernel's instructions)
                    const int x = spin == OCC_UP ? old : nw, y = spin == OCC_UP ? nw : old;
                    const unsigned qrow = (unsigned)((hop ? nw : x) * ns) << 1 | (!hop || spin == OCC_DN);
                    mv_gat[lane] = (u64)(hop ? 0u : (unsigned)(y * ns) + 1u) | (u64)qrow << 32;
                }
                if (lane == 0) batch[0] = kn;
            }
            __syncthreads();
            const int kn = batch[0];
            // (2) the gathers, all moves at once. Swap of up a on x and down b on y: PVT[.][k] = phi(y, d), Q[k] =
            // phi(x, u), phi(y, x). Hop of up i to s: Q[k] = phi(s, d); of down i to s: Q[k] = phi(s, u); PVT[.][k] = 0.
            gather_look(np, up, dn, PVT, Q, [&](int k, int ut, int dt, S& pk, S& qk) {
                if (k >= kn) return false;
                const u64 rows = mv_gat[k];
                const unsigned prow = (unsigned)rows, qrow = (unsigned)(rows >> 32);
                if (prow) pk = phi[(size_t)(prow - 1) + dt];
                qk = phi[(size_t)(qrow >> 1) + (qrow & 1 ? ut : dt)];
                return true;
            });
            if (tid < kn && !mv_hop[tid]) {
                const int spin = mv_spin[tid], old = mv_old[tid], nw = mv_nw[tid];
                const int x = spin == OCC_UP ? old : nw, y = spin == OCC_UP ? nw : old;
                mv_pyx[tid] = (double)phi[(size_t)y * ns + x];
            }
            __syncthreads();
            // Screened mixed: (3') the f32 f vectors and their error sums from the copy, (4') each move's f32 ratio and
            // the bound on its distance from double's f64 ratio (cpu.rs screen), a warp per move, and (5') the moves
            // whose sqrt(u) the bound does not put above the f32 ratio: only these take (3) and (4) in f64.
            unsigned only = ~0u; // the moves whose f64 ratio (3, 4) computes: all but in screened mixed
            if constexpr (SCR) {
                constexpr double U32 = 5.9604644775390625e-8; // 2^-24
                // (d + 2) u, d the roundings on a sum's longest path: a warp's lanes then its butterfly; the blocked f
                // vector; 2 for the rounding of each factor to f32; 1.01 covers f64's own error and the abs sums'
                const double lanes = 1.01 * ((np + 31) / 32 + 5 + 2) * U32;
                const double blocked = 1.01 * (16 + (np + 15) / 16 + 2 + 2) * U32;
                // the batch's phi vectors rounded to f32 once, into f, g, pv and buf (free until a commit): converted
                // in col_dots_screen's loop, each was converted by every one of its threads, and an SM converts from
                // f64 at a sixteenth of its f32 FMA rate (H100 at 46466bd: screened mixed 256k chain sweeps/s at L =
                // 15)
                float* const PVT32 = (float*)f;
                for (int e = tid; e < np * LOOK; e += blockDim.x) PVT32[e] = float(PVT[e]);
                __syncthreads();
                col_dots_screen(W32, PVT32, F32, FA, np, ld);
                for (int k = warp; k < kn; k += warps) {
                    const double* q = Q + k * np;
                    const int i = mv_i[k];
                    float r = 0.0f, h = 0.0f, kk = 0.0f, sw = 0.0f, sf = 0.0f, sa = 0.0f;
                    double band;
                    if (mv_hop[k]) {
                        const bool upm = mv_spin[k] == OCC_UP;
                        for (int c = lane; c < np; c += 32) {
                            const float x = float(q[c]), w = upm ? W32[c * ld + i] : W32[i * ld + c];
                            r += x * w;
                            sw += fabsf(x) * fabsf(w);
                        }
                        r = warp_allsum(r);
                        band = lanes * warp_allsum(sw);
                    } else {
                        const int a = mv_spin[k] == OCC_UP ? i : mv_j[k], b = mv_spin[k] == OCC_UP ? mv_j[k] : i;
                        const float* fk = F32 + k * np;
                        const float* ak = FA + k * np;
                        for (int c = lane; c < np; c += 32) {
                            const float x = float(q[c]), ax = fabsf(x), w = W32[b * ld + c], fc = fk[c];
                            h += w * x;
                            kk += fc * x;
                            sw += fabsf(w) * ax;
                            sf += fabsf(fc) * ax;
                            sa += ak[c] * ax;
                        }
                        h = warp_allsum(h);
                        kk = warp_allsum(kk);
                        sw = warp_allsum(sw);
                        sf = warp_allsum(sf);
                        sa = warp_allsum(sa);
                        const float pyx = float(mv_pyx[k]), wba = W32[b * ld + a], fa = fk[a];
                        r = wba * (pyx - kk) + fa * h;
                        // bounds on the errors of k, of phi(y, x) - k (d bounds it, computed or exact), f_a and h; then
                        // the two products' errors (each factor's error times the other's bound), their roundings and
                        // the sum's (cpu.rs screen)
                        const double e_k = blocked * sa + lanes * sf, d = fabs(pyx) + sf + e_k;
                        const double e_d = e_k + U32 * (fabs(pyx) + d), e_fa = blocked * ak[a], e_h = lanes * sw;
                        const double awba = fabs(wba), afa = fabs(fa), ah = fabs(h);
                        band = awba * e_d + U32 * awba * d + afa * e_h + e_fa * (ah + e_h) + 2.0 * U32 * (awba * d + afa * ah);
                    }
                    if (lane == 0) { mv_r32[k] = r; mv_band[k] = 1.01 * band + 1e-30; }
                }
                __syncthreads();
                if (tid < 32) {
                    const bool live = lane < kn;
                    const double hi = live ? fabs(mv_r32[lane]) + mv_band[lane] : 0.0;
                    const unsigned cm = __ballot_sync(0xffffffffu, live && mv_u[lane] < hi * hi);
                    const unsigned sm = __ballot_sync(0xffffffffu, live && !mv_hop[lane]);
                    if (lane == 0) { smask[0] = cm; smask[1] = cm & sm; }
                }
                __syncthreads();
                only = smask[0];
            }
            // (3) the f vectors of every swap of the batch in one pass over W (screened: where a swap needs them)
            if (!SCR || smask[1]) col_dots_look<SCR ? PF_DEVICE : 1, sizeof(S) == 4 && sizeof(A) == 4>(W, PVT, F, np, ld);
            // (4) each move's ratio. Where a warp has more than one move of the batch (L = 9: 2 warps, LOOK 8), warp w
            // takes moves w, w + warps, ..., RATIO_MOVES at once (ratio_sums); else (L = 15: 8 warps) a warp a move,
            // whose sums need no halving rounds nor F's row for a hop. H100, 2048 chains, interleaved (P C C P), chain
            // sweeps/s: ratio_sums everywhere (5646367) against a warp a move everywhere (65b0113), L = 9 double
            // 4.07M / 4.03M against 3.97M / 3.90M, single 5.83M / 5.79M against 5.69M / 5.71M, mixed 5.91M / 5.87M
            // against 5.78M / 5.71M; L = 15 double 526k / 527k against 539k / 543k, single 656k / 653k against 672k /
            // 676k, screened mixed 334k / 332k against 351k / 352k. Screened mixed runs at L = 15 and keeps its entry's
            // code (and spills) without the other path.
            if (!SCR && kn > warps) {
                for (int k0 = warp; k0 < kn; k0 += RATIO_MOVES * warps) {
                    int at[RATIO_MOVES], step[RATIO_MOVES], k[RATIO_MOVES], fo[RATIO_MOVES];
                    unsigned live = 0; // the moves past the batch, or not to be computed (screened mixed), take no sums
#pragma unroll
                    for (int m = 0; m < RATIO_MOVES; m++) {
                        k[m] = k0 + m * warps;
                        fo[m] = k[m] * np; // the move's rows of Q and F
                        at[m] = 0;
                        step[m] = 1;
                        if (k[m] < kn && (only >> k[m] & 1)) {
                            live |= 1u << m;
                            // a hop: down column i of W (up) or along row i (down); a swap: along row b
                            const int i = mv_i[k[m]];
                            const bool upm = mv_spin[k[m]] == OCC_UP, hopm = mv_hop[k[m]];
                            at[m] = hopm ? (upm ? i : i * ld) : (upm ? mv_j[k[m]] : i) * ld;
                            if (hopm && upm) step[m] = ld;
                        }
                    }
                    S h, kk;
                    ratio_sums<true>(live, F, np, fo, [&](int m, int c) { return W[at[m] + c * step[m]]; },
                                     [&](int m, int c) { return Q[fo[m] + c]; }, h, kk);
                    const int km = of_my_move(k);
                    if ((lane & 7) == 0 && (live >> (lane >> 3) & 1)) {
                        S r = h;
                        if (!mv_hop[km]) {
                            const int a = mv_spin[km] == OCC_UP ? mv_i[km] : mv_j[km];
                            r = W[of_my_move(at) + a] * (S(mv_pyx[km]) - kk) + F[km * np + a] * h;
                        }
                        mv_r[km] = A(r);
                        mv_h[km] = A(h);
                    }
                }
            } else {
                for (int k = warp; k < kn; k += warps) {
                    if (!(only >> k & 1)) continue;
                    const S* q = Q + k * np;
                    const int i = mv_i[k];
                    S r = S(0), h = S(0), kk = S(0);
                    if (mv_hop[k]) {
                        // down column i of W (an up electron) or along row i (a down one), in one loop: two took
                        // about 400 of the f32 64-register entry's 7,300 instructions (the same FMAs: a product's
                        // rounding does not depend on its factors' order)
                        const bool upm = mv_spin[k] == OCC_UP;
                        const int at = upm ? i : i * ld, step = upm ? ld : 1;
                        for (int c = lane; c < np; c += 32) r += q[c] * W[at + c * step];
                        r = warp_allsum(r);
                    } else {
                        const int a = mv_spin[k] == OCC_UP ? i : mv_j[k], b = mv_spin[k] == OCC_UP ? mv_j[k] : i;
                        const S* fk = F + k * np;
                        for (int c = lane; c < np; c += 32) {
                            h += W[b * ld + c] * q[c];
                            kk += fk[c] * q[c];
                        }
                        h = warp_allsum(h);
                        kk = warp_allsum(kk);
                        r = W[b * ld + a] * (S(mv_pyx[k]) - kk) + fk[a] * h;
                    }
                    if (lane == 0) { mv_r[k] = A(r); mv_h[k] = A(h); }
                }
            }
            __syncthreads();
            // (5) the decisions in order, up to the first accepted move; the stream advances past the kept moves. Warp
            // 0 takes them all at once (lane k: move k), the first accepted one by a ballot: thread 0 walked the moves
            // one after another, three dependent shared-memory loads each.
            if (tid < 32) {
                const bool live = lane < kn;
                const double r = live ? (double)mv_r[lane] : 0.0;
                const unsigned am = __ballot_sync(0xffffffffu, live && (only >> lane & 1) && mv_u[lane] < r * r);
                const unsigned hm = __ballot_sync(0xffffffffu, live && mv_hop[lane]);
                const int acc = am ? __ffs(am) - 1 : -1, kept = am ? acc + 1 : kn;
                if (lane == 0) {
                    const int hops = __popc(hm & ((1u << kept) - 1)); // kept <= LOOK < 32
                    tl[3] += hops;
                    tl[5] += kept - hops;
                    if (acc >= 0) {
                        if (hm >> acc & 1) tl[4] += 1; else tl[6] += 1;
                    }
                    if constexpr (SCR) {
                        const unsigned cc = only & ((1u << kept) - 1);
                        tl[TALLY_CONFIRMED_HOPS] += __popc(cc & hm);
                        tl[TALLY_CONFIRMED_SWAPS] += __popc(cc & ~hm);
                    }
                    rng += (u64)mv_cnt[kept - 1] * SM_GAMMA;
                    batch[1] = kept;
                    batch[2] = acc;
                }
            }
            __syncthreads();
            move += batch[1];
            const int k = batch[2];
            if (k < 0) continue; // every move rejected: W unchanged
            const int i = mv_i[k], spin = mv_spin[k], old = mv_old[k], nw = mv_nw[k];
            const bool hop = mv_hop[k];
            // The accepted move as one or two single-electron Sherman-Morrison steps: an up step (the f vector of the
            // new row, unless the swap's own from F is at hand, then update_up) and a down step (g, then update_dn).
            // A hop is one step (a = b = i, x = y = nw), a swap both, in the order that divides by the larger of f_a
            // and h (plan, below).
            const int a = hop || spin == OCC_UP ? i : mv_j[k], b = hop || spin == OCC_DN ? i : mv_j[k];
            const int x = hop || spin == OCC_DN ? nw : old, y = hop || spin == OCC_UP ? nw : old;
            // the occupation first: the steps read the electrons' sites (up, dn), not occ or which
            if (tid == 0) {
                if (hop) { occ[old] = OCC_HL; occ[nw] = spin; which[nw] = i; }
                else { occ[x] = OCC_DN; occ[y] = OCC_UP; which[x] = b; which[y] = a; }
            }
            // the steps in order, two bits each from the low end: 1 the up step with its f vector, 2 with the swap's
            // (F), 3 the down step; 0 none
            int plan = hop ? (spin == OCC_UP ? 1 : 3) : 0;
            if (!hop) {
                // f of this swap (computed against the W it was accepted on) into f, as the updates read it
                for (int c = tid; c < np; c += blockDim.x) f[c] = F[k * np + c];
                __syncthreads();
                const A h = mv_h[k];
                if (fmax(fabs((double)f[a]), fabs((double)h)) < p.degenerate) {
                    // Both single moves pass through a nearly singular matrix: rebuild W (as cpu.rs).
                    if (tid == 0) { up[a] = y; dn[b] = x; tl[TALLY_RECOMPUTES] += 1; }
                    ch.rebuild(&failed);
                    if constexpr (SCR) round_all();
                } else {
                    plan = fabs((double)f[a]) >= fabs((double)h) ? 2 | 3 << 2 : 3 | 1 << 2;
                }
            }
            // step 1 or 2 the up step (1: with its f vector), 3 the down step; the move's last update also writes W's
            // f32 copy (screened mixed)
            const auto step = [&](int st, bool last) {
                const bool mir = SCR && last;
                if (st == 3) {
                    ch.gvec(x);
                    if (mir) ch.template update_dn<SCR>(b, x);
                    else ch.update_dn(b, x);
                } else {
                    if (st == 1) ch.fvec(y);
                    if (mir) ch.template update_up<SCR>(a, y);
                    else ch.update_up(a, y);
                }
            };
            if constexpr (sizeof(S) == 4) {
                // Single and mixed: each step once, in a loop. Inlined per case (hop up, hop down, a swap either way
                // round, as double below) the f32 entries held 3 copies of each update and of gvec and 2 of fvec,
                // and at L = 9, 16 chains an SM in different phases, their warps waited on instruction fetch (Nsight
                // Compute, H100, 5dfe220: 28% of single's stall samples, 17% of double's). The loop took the
                // 64-register entry's code from 133 to 115 KB (ptxas 13.0, sm_90; scripts/ptxas-info.sh) and single
                // ran 4.78M / 4.80M -> 5.08M / 5.05M chain sweeps/s (H100, 2048 chains, interleaved), mixed 4.71M /
                // 4.76M -> 4.97M / 5.00M.
#pragma unroll 1
                for (; plan != 0; plan >>= 2) step(plan & 3, plan < 4);
            } else {
                // Double: each plan with its own inlined steps. The loop ran it 2% slower at L = 15 (494k -> 484k;
                // L = 9 +1.5%), where two chains an SM leave the instruction cache to spare.
                switch (plan) {
                case 1: step(1, true); break;
                case 3: step(3, true); break;
                case 2 | 3 << 2: step(2, false); step(3, true); break;
                case 3 | 1 << 2: step(3, false); step(1, true); break;
                default: break; // 0: the swap rebuilt W
                }
            }
            __syncthreads(); // the new occupation before warp 0 draws the next batch
        }
        bool due = p.recompute > 0 && (sweep + 1) % p.recompute == 0;
        if (!due && p.residual_limit > 0.0) {
            // The residual check (cpu.rs residual_diag): a thread per up electron, in f64 (products of S values are
            // exact); any entry past the limit, or NaN, rebuilds. Its own flag: batch[0] is rewritten by warp 0
            // before the slowest warp would have read it.
            __shared__ int over;
            if (tid == 0) over = 0;
            __syncthreads();
            for (int a = tid; a < np; a += blockDim.x) {
                const S* row = phi + (size_t)up[a] * ns;
                double r = 0.0;
#pragma unroll 4
                for (int b = 0; b < np; b++) r += (double)row[dn[b]] * (double)W[b * ld + a];
                if (!(fabs(r - 1.0) <= p.residual_limit)) over = 1;
            }
            __syncthreads();
            due = over != 0;
        }
        if (due) {
            if (tid == 0) tl[TALLY_RECOMPUTES] += 1;
            ch.rebuild(&failed);
            if constexpr (SCR) round_all();
        }
        if (sweep < p.equil) continue;

        if constexpr (SCR) measure<float>(p, phi32, W32, (float*)PVT, (float*)F, (float*)Q, up, dn, occ, which, piv, nbr, hop, dscratch, batch, tl);
        else measure<S>(p, phi, W, PVT, F, Q, up, dn, occ, which, piv, nbr, hop, dscratch, batch, tl);
    }

    for (int k = tid; k < np; k += blockDim.x) {
        up_all[(size_t)c * np + k] = up[k];
        dn_all[(size_t)c * np + k] = dn[k];
    }
    for (int e = tid; e < np * np; e += blockDim.x) W_all[(size_t)c * np * np + e] = W[(e / np) * ld + e % np];
    if (tid == 0) {
        rng_all[c] = rng;
        if (failed) tl[0] = __longlong_as_double(0x7ff8000000000000ll); // NaN energy: see reinvert
        for (int k = 0; k < TALLY_LEN; k++) tally_all[(size_t)c * TALLY_LEN + k] = tl[k];
    }
}

// Each precision at three register caps (gpu.rs REGISTER_CAPS): the launch bounds alone (MAX_THREADS: up to 128
// registers a thread, what ptxas takes: 110-128), 80 (__launch_bounds__(384, 2); blocks of at most 384 threads) and 64
// (__launch_bounds__(MAX_THREADS, 2)). The sweep is latency-bound and its blocks per SM are set by registers wherever
// W leaves shared memory to spare (L = 9 at 64 threads: 8 blocks at 128 registers, 12 at 80, 16 at 64; L = 15 at 256
// threads in f32: 2, 3, 4, the last since the 16-bit indices), so fewer registers buy more chains in flight at the
// price of spills (ptxas 13.0 for sm_90, bytes stored / loaded, at 5dfe220: at 128 none but f64's 16 / 28 and the
// screened entry's 20 / 48; at 80 none in f32 and mixed, 112 / 472 in f64; at 64 none in f32, 44 / 44 in mixed,
// 1076 / 1176 in f64; scripts/ptxas-info.sh prints them).
#define LATTICE_ENTRY(NAME, S, A, SCR, THREADS, BLOCKS)                                                        \
    extern "C" __global__ void __launch_bounds__(THREADS, BLOCKS) NAME(const LatticeParams p, const S* __restrict__ phi, const float* __restrict__ phi32, const int* __restrict__ nbr, \
                                    const double* __restrict__ hop, S* __restrict__ W, A* __restrict__ M,         \
                                    int* __restrict__ up, int* __restrict__ dn, u64* __restrict__ rng,            \
                                    double* __restrict__ tally) {                                                  \
        run<S, A, SCR, SCR || LATTICE_W_OFF_CHIP>(p, phi, phi32, nbr, hop, W, M, up, dn, rng, tally);          \
    }
#define LATTICE_ENTRIES(SUF, S, A)                                        \
    LATTICE_ENTRY(lattice_sweeps_##SUF, S, A, false, MAX_THREADS, 1)      \
    LATTICE_ENTRY(lattice_sweeps_##SUF##_r80, S, A, false, 384, 2)        \
    LATTICE_ENTRY(lattice_sweeps_##SUF##_r64, S, A, false, MAX_THREADS, 2)

LATTICE_ENTRIES(f64, double, double)
LATTICE_ENTRIES(f32, float, float)
LATTICE_ENTRIES(mixed, float, double)
// screened mixed (run's SCR; gpu.rs GpuEnsemble::screened), at the launch bounds alone: it holds W in f64 off chip, its
// copy in f32 on chip, three chains an SM at L = 15 by shared memory
LATTICE_ENTRY(lattice_sweeps_screened, double, double, true, MAX_THREADS, 1)
