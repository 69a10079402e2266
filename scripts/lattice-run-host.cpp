// lattice.cu's whole kernel (a chain's run: the look-ahead draws, the batch's ratios and decisions, the rank-1
// updates, the rebuilds, the residual check and the measurements) run by a block of host threads
// (scripts/cu-block-host.h), one chain after another, on the inputs a Rust test wrote (kernels lattice::tests
// dump_runs_for_the_host_build, LATTICE_RUN_DUMP); the chains' final state goes back beside them for the Rust check
// (check_runs_of_the_host_build), which holds them to the reference path, the inverse and the energy. So the kernel
// is run, not only compiled, on a machine without a GPU. The block's dynamic shared memory is a buffer of exactly
// the bytes gpu.rs gives the launch, filled with a pattern first (no read before a write may matter) and followed by
// a guard that must stay untouched; so is each chain's device buffer (M_all) where the rebuild uses it.
// Usage: lattice-run-host <dump folder>   (scripts/cu-on-host.sh)
#include "cu-block-host.h"
#include "host-dump.h"
#include <chrono>
static unsigned char* g_smem;
#define LATTICE_HOST_SMEM g_smem
#include "../kernels/src/lattice/lattice.cu"
static_assert(sizeof(LatticeParams) == 72, "LatticeParams' layout changed: update gpu.rs host::write and this check");

const size_t GUARD = 4096;
const unsigned char FILL = 0x7f, GUARD_BYTE = 0xa5; // 0x7f7f...: a NaN in f32, 3.4e305 in f64: garbage that shows

template <typename S, typename A, bool SCR = false> int run_case(const std::string& dir, int threads, size_t shared, size_t scratch) {
    auto pv = load<LatticeParams>(dir + "/params.bin");
    if (pv.size() != 1) { fprintf(stderr, "%s: params.bin is not one LatticeParams\n", dir.c_str()); return 1; }
    const LatticeParams p = pv[0];
    auto phi = load<S>(dir + "/phi.bin");
    // screened mixed: the pair function rounded to f32 besides (gpu.rs host::write)
    const auto phi32 = SCR ? load<float>(dir + "/phi32.bin") : std::vector<float>();
    auto nbr = load<int>(dir + "/nbr.bin");
    auto hop = load<double>(dir + "/hop.bin");
    auto W = load<S>(dir + "/w.bin");
    auto up = load<int>(dir + "/up.bin");
    auto dn = load<int>(dir + "/dn.bin");
    auto rng = load<u64>(dir + "/rng.bin");
    const size_t chains = p.chains, np = p.pairs, ns = p.sites;
    if (phi.size() != ns * ns || (SCR && phi32.size() != ns * ns) || nbr.size() != 4 * ns || hop.size() != 4 * ns || W.size() != chains * np * np ||
        up.size() != chains * np || dn.size() != chains * np || rng.size() != chains) {
        fprintf(stderr, "%s: inputs of the wrong sizes\n", dir.c_str());
        return 1;
    }
    std::vector<double> tally(chains * TALLY_LEN, 0.0);
    std::vector<A> M(chains * scratch + GUARD / sizeof(A), A(0));
    std::vector<unsigned char> mem(shared + GUARD + 16);
    g_smem = (unsigned char*)(((size_t)mem.data() + 15) & ~(size_t)15);
    unsigned char* const guard = g_smem + shared;
    blockDim.x = threads;
    gridDim.x = chains;
    int bad = 0;
    g_block_barriers = 0;
    for (size_t c = 0; c < chains; c++) {
        memset(g_smem, FILL, shared);
        memset(guard, GUARD_BYTE, GUARD);
        blockIdx.x = c;
        std::barrier<> block(threads);
        g_block = &block;
        for (int w = 0; w < threads / 32; w++) g_warp[w] = new std::barrier<>(32);
        std::vector<std::thread> ts;
        for (int t = 0; t < threads; t++)
            ts.emplace_back([&, t] {
                threadIdx.x = t;
                // W's placement is compile-time on the GPU (gpu.rs builds a module of each); here both are in one build.
                // Screened mixed keeps W off chip (the kernel's WOFF is SCR or LATTICE_W_OFF_CHIP): the else branch
                // there is double's kernel, which a screened case never takes
                if (SCR || p.on_chip == 0)
                    run<S, A, SCR, true>(p, phi.data(), SCR ? phi32.data() : nullptr, nbr.data(), hop.data(), W.data(), M.data(), up.data(), dn.data(),
                                         rng.data(), tally.data());
                else
                    run<S, A, false, false>(p, phi.data(), nullptr, nbr.data(), hop.data(), W.data(), M.data(), up.data(), dn.data(),
                                            rng.data(), tally.data());
            });
        for (auto& t : ts) t.join();
        for (int w = 0; w < threads / 32; w++) delete g_warp[w];
        for (size_t b = 0; b < GUARD; b++)
            if (guard[b] != GUARD_BYTE) { fprintf(stderr, "%s: chain %zu wrote past its shared memory\n", dir.c_str(), c); bad = 1; break; }
    }
    const unsigned char* mg = (const unsigned char*)(M.data() + chains * scratch);
    for (size_t b = 0; b < GUARD - GUARD % sizeof(A); b++)
        if (mg[b] != 0) { fprintf(stderr, "%s: a chain wrote past the device buffers\n", dir.c_str()); bad = 1; break; }
    save(dir + "/out-w.bin", W);
    save(dir + "/out-up.bin", up);
    save(dir + "/out-dn.bin", dn);
    save(dir + "/out-tally.bin", tally);
    // the kernel waits more than it computes (lattice.cu): its block barriers a chain sweep are one measure of that
    printf("  %s: %.0f block barriers a chain sweep\n", dir.c_str(), (double)g_block_barriers / (chains * (p.equil + p.sweeps)));
    return bad;
}

int main(int argc, char** argv) {
    if (argc != 2) { fprintf(stderr, "usage: lattice-run-host <dump folder>\n"); return 2; }
    const std::string root = argv[1];
    std::ifstream cases(root + "/cases.txt");
    std::string name, precision;
    int threads = 0, runs = 0, bad = 0;
    size_t shared = 0, scratch = 0;
    // a line per case: its folder, precision (as the kernel's entries name it: f64, f32, mixed, screened), threads per
    // block, dynamic shared bytes, device-buffer entries a chain
    while (cases >> name >> precision >> threads >> shared >> scratch) {
        const std::string dir = root + "/" + name;
        const auto t0 = std::chrono::steady_clock::now();
        int r = 1;
        if (precision == "f64") r = run_case<double, double>(dir, threads, shared, scratch);
        else if (precision == "f32") r = run_case<float, float>(dir, threads, shared, scratch);
        else if (precision == "mixed") r = run_case<float, double>(dir, threads, shared, scratch);
        else if (precision == "screened") r = run_case<double, double, true>(dir, threads, shared, scratch);
        else fprintf(stderr, "%s: unknown precision %s\n", name.c_str(), precision.c_str());
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        printf("lattice run on the host: %s (%s, %d threads, %zu bytes of shared memory): %s in %.1f s\n",
               name.c_str(), precision.c_str(), threads, shared, r ? "FAILED" : "ran", secs);
        bad += r;
        runs++;
    }
    if (runs == 0) { fprintf(stderr, "lattice-run-host: no cases in %s/cases.txt\n", root.c_str()); return 1; }
    return bad != 0;
}
