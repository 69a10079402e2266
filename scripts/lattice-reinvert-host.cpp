// lattice.cu's Chain::reinvert (the GPU rebuild of W: Gauss-Jordan with partial pivoting over a thread block) run by
// a block of host threads (scripts/cu-block-host.h) and compared with the plain one-pivot algorithm in the same
// precision (cpu.rs gauss_jordan_one): the same pivots and, without contraction (-ffp-contract=off), the same inverse
// bit for bit, in double, single and mixed, for one to ten warps, N up to 300 (every elimination variant), and a
// singular M refused. lattice-chain.inc is lattice.cu up to its kernel body (scripts/cu-on-host.sh cuts it).
#include "cu-block-host.h"
#include "lattice-chain.inc"
#include <random>
// The plain one-pivot Gauss-Jordan (cpu.rs gauss_jordan_one) in T.
template <typename T> bool gj(std::vector<T>& m, int n, std::vector<int>& piv) {
    std::vector<T> r(n);
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++) if (fabs((double)m[i * n + k]) > fabs((double)m[p * n + k])) p = i;
        if (m[p * n + k] == T(0)) return false;
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
template <typename S, typename A> int check(int n, int threads, unsigned seed, bool singular) {
    const int ns = 2 * n, ld = n | 1;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    std::vector<S> phi(ns * ns);
    for (auto& x : phi) x = S(u(rng));
    if (singular) for (int i = 0; i < n; i++) phi[i * ns + n + 1] = S(0); // column 1 of M zero
    LatticeParams p{};
    p.sites = ns; p.pairs = n; p.ld = ld; p.on_chip = 1;
    std::vector<A> M(n * ld + 64), f(n), g(n), pv(n), buf(n), scratch(64);
    std::vector<double> dscratch(64);
    std::vector<int> up(n), dn(n), occ(ns), which(ns), piv(n), iscratch(32);
    for (int i = 0; i < n; i++) { up[i] = i; dn[i] = n + i; }
    Chain<S, A> ch{p, phi.data(), (S*)M.data(), M.data(), f.data(), g.data(), pv.data(), buf.data(), scratch.data(),
                   dscratch.data(), up.data(), dn.data(), occ.data(), which.data(), piv.data(), iscratch.data()};
    blockDim.x = threads;
    std::barrier<> block(threads);
    g_block = &block;
    for (int w = 0; w < threads / 32; w++) g_warp[w] = new std::barrier<>(32);
    int failed = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++) ts.emplace_back([&, t] { threadIdx.x = t; ch.reinvert(&failed); });
    for (auto& t : ts) t.join();
    for (int w = 0; w < threads / 32; w++) delete g_warp[w];
    // the reference in A from the same M
    std::vector<A> ref(n * n);
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) ref[i * n + j] = A(phi[i * ns + n + j]);
    std::vector<int> rpiv(n);
    const bool ok = gj(ref, n, rpiv);
    if (singular) {
        printf("n=%d threads=%d S=%zu A=%zu singular: failed=%d (reference refuses: %d)\n", n, threads, sizeof(S), sizeof(A), failed, !ok);
        return failed && !ok ? 0 : 1;
    }
    int bad_piv = 0; for (int k = 0; k < n; k++) bad_piv += piv[k] != rpiv[k];
    long diff = 0; double maxrel = 0, scale = 0;
    const S* W = (const S*)M.data();
    for (int i = 0; i < n * n; i++) scale = std::max(scale, fabs((double)ref[i]));
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) {
        const double w = (double)W[i * ld + j], r = (double)S(ref[i * n + j]);
        diff += w != r;
        maxrel = std::max(maxrel, fabs(w - r) / scale);
    }
    printf("n=%d threads=%d S=%zu A=%zu failed=%d ok=%d pivots differing %d, entries differing %ld, max |diff|/max|W| %.2e\n", n, threads, sizeof(S), sizeof(A), failed, ok, bad_piv, diff, maxrel);
    return failed || !ok || bad_piv || diff ? 1 : 0;
}
// update_cols and update_rows (lattice.cu: a thread per column and group of rows) by a block of host threads against
// the plain loops (every column over every row): the same W bit for bit, for one to six row groups.
template <typename S, typename A> int check_updates(int n, int threads, unsigned seed) {
    const int ld = n | 1, a = n / 3;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    std::vector<S> w0(n * ld);
    for (auto& x : w0) x = S(u(rng));
    std::vector<A> f(n), v(n);
    for (int i = 0; i < n; i++) { f[i] = A(u(rng)); v[i] = A(u(rng)); }
    std::vector<S> rc = w0, rr = w0, wc = w0, wr = w0;
    for (int c = 0; c < n; c++)
        for (int b = 0; b < n; b++) rc[b * ld + c] = c == a ? S(v[b]) : S(rc[b * ld + c] - S(f[c]) * S(v[b]));
    for (int c = 0; c < n; c++)
        for (int r = 0; r < n; r++) rr[r * ld + c] = r == a ? S(v[c]) : S(rr[r * ld + c] - S(f[r]) * S(v[c]));
    blockDim.x = threads;
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            threadIdx.x = t;
            update_cols<S, A>(wc.data(), f.data(), v.data(), a, n, ld);
            update_rows<S, A>(wr.data(), f.data(), v.data(), a, n, ld);
        });
    for (auto& t : ts) t.join();
    long diff = 0;
    for (int i = 0; i < n * ld; i++) diff += (wc[i] != rc[i]) + (wr[i] != rr[i]);
    printf("updates n=%d threads=%d (row groups %d) S=%zu A=%zu: entries differing %ld\n", n, threads, std::max(1, threads / n), sizeof(S), sizeof(A), diff);
    return diff ? 1 : 0;
}
int main() {
    int bad = 0;
    for (auto [n, t] : std::vector<std::pair<int, int>>{{5, 32}, {37, 64}, {37, 96}, {37, 160}, {102, 64}, {102, 256}, {130, 256}, {102, 512}}) {
        bad += check_updates<double, double>(n, t, n * 5 + t);
        bad += check_updates<float, float>(n, t, n * 5 + t);
        bad += check_updates<float, double>(n, t, n * 5 + t);
    }
    for (auto [n, t] : std::vector<std::pair<int, int>>{{5, 32}, {37, 64}, {37, 96}, {102, 64}, {102, 256}, {130, 96}, {300, 160}}) {
        bad += check<double, double>(n, t, n * 7 + t, false);
        bad += check<float, float>(n, t, n * 7 + t, false);
        bad += check<float, double>(n, t, n * 7 + t, false);
    }
    bad += check<double, double>(37, 64, 3, true);
    bad += check<float, double>(102, 64, 3, true);
    printf(bad ? "FAILED %d\n" : "all passed\n", bad);
    return bad != 0;
}
