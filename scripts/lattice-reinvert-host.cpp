// lattice.cu's Chain::reinvert (the GPU rebuild of W: blocked Gauss-Jordan with partial pivoting over a thread block,
// PANEL pivots a panel) run by a block of host threads (scripts/cu-block-host.h) and compared with the plain
// one-pivot algorithm in the same precision (cpu.rs gauss_jordan_one): the same pivots and, without contraction
// (-ffp-contract=off), the same inverse bit for bit, in double, single and mixed (the narrowing), for one to sixteen
// warps and N from 1 to 1024 (N a multiple of PANEL or not, one panel or many). Matrices: random; a cyclic shift of a
// diagonally dominant one (a row swap at every step but the last); entries +-1 (exact ties of |pivot| between rows
// of different lanes, at many steps: the first row must win); and singular ones (a zero column 1 or n - 1: the
// failure flag at the first or the last panel). The rebuild's scratch must stay inside the sweep's vectors it borrows
// (a guard past them), and the two pivot reductions of warp_pivot (redux.sync and shuffles) must agree. Each case in
// both placements of M: over W (p.on_chip 1) and placement 2 (the rows of M that W's memory holds in A over W, the
// rest and the pivot rows R in the chain's device buffer: in mixed, rows from N_P / 2 on). Also prints the rebuild's
// block barriers. lattice.cu's kernel (run) is compiled here, not run (scripts/lattice-run-host.cpp runs it).
#include "cu-block-host.h"
static unsigned char* g_smem;
#define LATTICE_HOST_SMEM g_smem
#include "../kernels/src/lattice/lattice.cu"
#include <limits>
#include <random>
// The plain one-pivot Gauss-Jordan (cpu.rs gauss_jordan_one) in T; counts the steps whose largest |pivot candidate|
// is taken by more than one row (ties) and the steps that swap rows.
template <typename T> bool gj(std::vector<T>& m, int n, std::vector<int>& piv, int& ties, int& swaps) {
    std::vector<T> r(n);
    ties = swaps = 0;
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++) if (fabs((double)m[i * n + k]) > fabs((double)m[p * n + k])) p = i;
        if (m[p * n + k] == T(0)) return false;
        int eq = 0;
        for (int i = k; i < n; i++) eq += fabs((double)m[i * n + k]) == fabs((double)m[p * n + k]);
        ties += eq > 1;
        swaps += p != k;
        piv[k] = p;
        if (p != k) for (int j = 0; j < n; j++) std::swap(m[p * n + j], m[k * n + j]);
        T d = T(1) / m[k * n + k];
        m[k * n + k] = T(1);
        for (int j = 0; j < n; j++) { m[k * n + j] *= d; r[j] = m[k * n + j]; }
        for (int i = 0; i < n; i++) {
            if (i == k) continue;
            T f = m[i * n + k];
            m[i * n + k] = T(0);
            for (int j = 0; j < n; j++) m[i * n + j] -= f * r[j];
        }
    }
    for (int k = n - 1; k >= 0; k--)
        if (piv[k] != k) for (int i = 0; i < n; i++) std::swap(m[i * n + k], m[i * n + piv[k]]);
    return true;
}
enum Kind { RANDOM, SHIFTED, TIES, ZERO_COLUMN, ZERO_LAST_COLUMN };
const char* kind_name[] = {"random", "shifted", "ties", "zero column 1", "zero last column"};
// M (n x n, as the chain builds it: M[i][j] = phi(up_i, dn_j) with up_i = i, dn_j = n + j) of each kind, in double.
std::vector<double> matrix(int n, Kind kind, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    std::vector<double> m(n * n);
    for (auto& x : m) x = u(rng);
    if (kind == SHIFTED) {
        // D column diagonally dominant (partial pivoting picks D's rows in order), rows shifted by one: D row k sits
        // at position k - 1 (D row 0 at n - 1), so step k swaps rows k and n - 1 for every k < n - 1
        std::vector<double> d = m;
        for (int k = 0; k < n; k++) d[k * n + k] = (k & 1 ? -1.0 : 1.0) * (n + 1.0);
        for (int p = 0; p < n; p++) for (int j = 0; j < n; j++) m[p * n + j] = d[((p + 1) % n) * n + j];
    } else if (kind == TIES) {
        // +-1: every row ties at step 0, and the dyadic values that follow stay exact and tie often for many steps
        for (auto& x : m) x = rng() & 1 ? 1.0 : -1.0;
    } else if (kind == ZERO_COLUMN) {
        for (int i = 0; i < n; i++) m[i * n + (n > 1)] = 0.0;
    } else if (kind == ZERO_LAST_COLUMN) {
        for (int i = 0; i < n; i++) m[i * n + n - 1] = 0.0; // stays exactly zero until the last step
    }
    return m;
}
template <typename S, typename A> int check(int n, int threads, Kind kind, unsigned seed, int placement) {
    const int ns = 2 * n, ld = n | 1;
    const std::vector<double> m0 = matrix(n, kind, seed);
    std::vector<S> phi(ns * ns, S(0));
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) phi[i * ns + n + j] = S(m0[i * n + j]);
    LatticeParams p{};
    p.sites = ns; p.pairs = n; p.ld = ld; p.on_chip = placement;
    const bool apart = placement == 2;
    // W's memory (n ld entries of S, as on chip in placement 2; n ld of A in placement 1), the device buffer's rows
    std::vector<A> M(apart ? (n * ld * sizeof(S) + sizeof(A) - 1) / sizeof(A) : n * ld), Mdev(n * ld + PANEL * n);
    std::vector<S> f(n), g(n), pv(n), buf(n);
    std::vector<double> dscratch(64);
    std::vector<idx_t> up(n), dn(n), occ(ns), which(ns), piv(n);
    std::vector<int> iscratch(32);
    for (int i = 0; i < n; i++) { up[i] = i; dn[i] = n + i; }
    // the scratch of reinvert: on the GPU the sweep's vectors from f on, the larger of (4 n + 64 + 3 LOOK n) S and
    // the rebuild's PANEL n + PANEL A (twice where S and A are one type: the look-ahead's next panel), PANEL n more
    // where R is on chip (M on chip, or S and A one type: gpu.rs vec_bytes); here as many bytes, 16-byte aligned,
    // with a guard after them that must stay untouched
    const bool r_on_chip = !apart || sizeof(S) == sizeof(A);
    const size_t panels = sizeof(S) == sizeof(A) ? 2 : 1;
    const size_t vectors = (4 * n + 64 + 3 * LOOK * n) * sizeof(S),
                 rebuild = (panels * (PANEL * n + PANEL) + (r_on_chip ? PANEL * n : 0)) * sizeof(A);
    const size_t work_bytes = std::max(vectors, rebuild), guard = 4096;
    std::vector<unsigned char> work_mem(work_bytes + guard + 16, 0xa5);
    unsigned char* work = (unsigned char*)(((size_t)work_mem.data() + 15) & ~(size_t)15);
    std::fill(work, work + work_bytes, 0x5a);
    S* const W0 = (S*)M.data();
    Chain<S, A> ch{p, phi.data(), W0, M.data(), f.data(), g.data(), pv.data(), buf.data(), dscratch.data(), up.data(),
                   dn.data(), occ.data(), which.data(), piv.data(), iscratch.data(), (A*)work};
    blockDim.x = threads;
    std::barrier<> block(threads);
    g_block = &block;
    for (int w = 0; w < threads / 32; w++) g_warp[w] = new std::barrier<>(32);
    int failed = 0;
    g_block_barriers = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) ts.emplace_back([&, t] { threadIdx.x = t; ch.reinvert(&failed, Mdev.data()); });
    for (auto& t : ts) t.join();
    for (int w = 0; w < threads / 32; w++) delete g_warp[w];
    long guard_hit = 0;
    for (size_t b = 0; b < guard; b++) guard_hit += work[work_bytes + b] != 0xa5;
    // the reference in A from the same M
    std::vector<A> ref(n * n);
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) ref[i * n + j] = A(phi[i * ns + n + j]);
    std::vector<int> rpiv(n);
    int ties = 0, swaps = 0;
    const bool ok = gj(ref, n, rpiv, ties, swaps);
    if (!ok) {
        printf("n=%d threads=%d S=%zu A=%zu placement %d %s (singular): failed=%d (reference refuses) guard %ld\n", n,
               threads, sizeof(S), sizeof(A), placement, kind_name[kind], failed, guard_hit);
        return failed && !guard_hit ? 0 : 1;
    }
    int bad_piv = 0; for (int k = 0; k < n; k++) bad_piv += piv[k] != rpiv[k];
    long diff = 0; double maxrel = 0, scale = 0;
    const S* W = W0;
    for (int i = 0; i < n * n; i++) scale = std::max(scale, fabs((double)ref[i]));
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
        const double w = (double)W[i * ld + j], r = (double)S(ref[i * n + j]);
        diff += !(w == r || (w != w && r != r));
        maxrel = std::max(maxrel, fabs(w - r) / scale);
    }
    printf("n=%d threads=%d S=%zu A=%zu placement %d %s: swaps %d ties %d barriers %ld failed=%d pivots differing %d, entries differing %ld, max |diff|/max|W| %.2e guard %ld\n",
           n, threads, sizeof(S), sizeof(A), placement, kind_name[kind], swaps, ties, g_block_barriers, failed, bad_piv, diff, maxrel, guard_hit);
    const bool must_swap = kind == SHIFTED && swaps != n - 1, must_tie = kind == TIES && n >= 8 && ties == 0;
    if (must_swap || must_tie) printf("  the matrix does not do what it is for (swaps %d, ties %d)\n", swaps, ties);
    return failed || bad_piv || diff || guard_hit || must_swap || must_tie ? 1 : 0;
}
// warp_pivot (redux.sync where the GPU has it, as the host build) against warp_pivot_shfl (the sm_75 path) and the
// rule itself, for one warp of candidates with ties, sentinels (-1, row n), zeros, subnormals and infinities.
template <typename T> int check_pivot(unsigned seed) {
    std::mt19937_64 rng(seed);
    const int n = 1000;
    int bad = 0;
    for (int trial = 0; trial < 300; trial++) {
        const T pool[] = {T(-1), T(0), T(1), T(2), T(0.5), std::numeric_limits<T>::denorm_min(), T(INFINITY), T(3)};
        T best[32];
        int row[32];
        for (int l = 0; l < 32; l++) {
            best[l] = pool[rng() % (trial % 3 == 0 ? 2 : 8)];
            row[l] = best[l] < T(0) ? n : (int)(rng() % n);
        }
        int want = n;
        T top = T(-1);
        for (int l = 0; l < 32; l++)
            if (best[l] > top || (best[l] == top && row[l] < want)) { top = best[l]; want = row[l]; }
        int got[2][32];
        g_warp[0] = new std::barrier<>(32);
        std::vector<std::thread> ts;
        for (int t = 0; t < 32; t++)
            ts.emplace_back([&, t] {
                threadIdx.x = t;
                got[0][t] = warp_pivot(best[t], row[t]);
                got[1][t] = warp_pivot_shfl(best[t], row[t]);
            });
        for (auto& t : ts) t.join();
        delete g_warp[0];
        for (int l = 0; l < 32; l++) bad += got[0][l] != want || got[1][l] != want;
    }
    printf("warp_pivot (%zu bytes): %d lanes off\n", sizeof(T), bad);
    return bad ? 1 : 0;
}
// update_cols and update_rows (lattice.cu: a thread per column and group of rows) by a block of host threads against
// the plain loops (every column over every row): the same W bit for bit, for one to six row groups; and with the f32
// mirror and the rows loaded ahead (screened mixed: MIR, PF_DEVICE), the same W and a mirror that is W rounded to f32,
// every entry.
template <typename S, typename A> int check_updates(int n, int threads, unsigned seed) {
    const int ld = n | 1, a = n / 3;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    std::vector<S> w0(n * ld);
    for (auto& x : w0) x = S(u(rng));
    std::vector<A> f(n), v(n);
    for (int i = 0; i < n; i++) { f[i] = A(u(rng)); v[i] = A(u(rng)); }
    std::vector<S> rc = w0, rr = w0, wc = w0, wr = w0, mc = w0, mr = w0;
    std::vector<float> fc(n * ld, -1.0f), fr(n * ld, -1.0f);
    for (int c = 0; c < n; c++)
        for (int b = 0; b < n; b++) rc[b * ld + c] = c == a ? S(v[b]) : S(rc[b * ld + c] - S(f[c]) * S(v[b]));
    for (int c = 0; c < n; c++)
        for (int r = 0; r < n; r++) rr[r * ld + c] = r == a ? S(v[c]) : S(rr[r * ld + c] - S(f[r]) * S(v[c]));
    blockDim.x = threads;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            threadIdx.x = t;
            update_cols<false, 1, S, A>(wc.data(), f.data(), v.data(), a, n, ld, nullptr);
            update_rows<false, 1, S, A>(wr.data(), f.data(), v.data(), a, n, ld, nullptr);
            update_cols<true, PF_DEVICE, S, A>(mc.data(), f.data(), v.data(), a, n, ld, fc.data());
            update_rows<true, PF_DEVICE, S, A>(mr.data(), f.data(), v.data(), a, n, ld, fr.data());
        });
    for (auto& t : ts) t.join();
    long diff = 0;
    for (int i = 0; i < n * ld; i++) diff += (wc[i] != rc[i]) + (wr[i] != rr[i]) + (mc[i] != rc[i]) + (mr[i] != rr[i]);
    for (int b = 0; b < n; b++)
        for (int c = 0; c < n; c++) diff += (fc[b * ld + c] != float(rc[b * ld + c])) + (fr[b * ld + c] != float(rr[b * ld + c]));
    printf("updates n=%d threads=%d (row groups %d) S=%zu A=%zu: entries differing %ld\n", n, threads, row_groups(n), sizeof(S), sizeof(A), diff);
    return diff ? 1 : 0;
}
template <typename S, typename A> int check_all(int n, int t, Kind kind) {
    return check<S, A>(n, t, kind, n * 7 + t + 1000 * kind, 1) + check<S, A>(n, t, kind, n * 7 + t + 1000 * kind, 2);
}
int main() {
    int bad = 0;
    for (auto [n, t] : std::vector<std::pair<int, int>>{{5, 32}, {37, 64}, {37, 96}, {37, 160}, {102, 64}, {102, 256}, {130, 256}, {102, 512}}) {
        bad += check_updates<double, double>(n, t, n * 5 + t);
        bad += check_updates<float, float>(n, t, n * 5 + t);
        bad += check_updates<float, double>(n, t, n * 5 + t);
    }
    bad += check_pivot<float>(1);
    bad += check_pivot<double>(2);
    // sizes and blocks as the GPU launches them (threads a multiple of 32, at least n / NARROW_MAX), and more
    const std::vector<std::pair<int, int>> shapes{{1, 32}, {2, 32}, {2, 64}, {5, 32}, {8, 64}, {9, 32}, {31, 64}, {32, 64},
                                                  {33, 32}, {33, 128}, {37, 64}, {37, 96}, {37, 128}, {37, 256}, {37, 512},
                                                  {64, 64}, {64, 128}, {64, 512}, {102, 64}, {102, 128}, {102, 256},
                                                  {102, 512}, {130, 96}, {130, 256}, {130, 512}, {300, 160},
                                                  {1024, 512}}; // the largest N_P (W off chip: the same code on M_all)
    for (auto [n, t] : shapes) {
        bad += check_all<double, double>(n, t, RANDOM);
        bad += check_all<float, float>(n, t, RANDOM);
        bad += check_all<float, double>(n, t, RANDOM);
    }
    for (auto [n, t] : std::vector<std::pair<int, int>>{{2, 32}, {9, 32}, {33, 64}, {37, 64}, {102, 256}, {130, 512}}) {
        for (Kind kind : {SHIFTED, TIES}) {
            bad += check_all<double, double>(n, t, kind);
            bad += check_all<float, float>(n, t, kind);
            bad += check_all<float, double>(n, t, kind);
        }
    }
    for (auto [n, t] : std::vector<std::pair<int, int>>{{1, 32}, {3, 32}, {37, 64}, {102, 256}}) {
        for (Kind kind : {ZERO_COLUMN, ZERO_LAST_COLUMN}) {
            bad += check_all<double, double>(n, t, kind);
            bad += check_all<float, double>(n, t, kind);
            bad += check_all<float, float>(n, t, kind);
        }
    }
    printf(bad ? "FAILED %d\n" : "all passed\n", bad);
    return bad != 0;
}
