// qmc.cu's step kernel compiled for the host, one walker at a time, against the CPU driver's energies (see
// scripts/cu-on-host.sh): a check of the device code's arithmetic and random numbers on a machine without a GPU.
#include "cu-host.h"
#include "../kernels/src/qmc/qmc.cu"

int main(int argc, char** argv) {
    std::string d = argv[1];
    auto pb = load<char>(d + "/params.bin");
    if (pb.size() != sizeof(QmcParams)) { printf("params: %zu bytes, the kernel's struct has %zu\n", pb.size(), sizeof(QmcParams)); return 1; }
    QmcParams P;
    memcpy(&P, pb.data(), sizeof P);
    auto itab = load<int>(d + "/itab.bin");
    auto dtab = load<double>(d + "/dtab.bin");
    auto pos = load<double>(d + "/pos.bin");
    std::ifstream ex(d + "/expect.txt");
    int ne, nup, steps;
    unsigned long long seed_mix;
    std::string precision;
    ex >> ne >> nup >> seed_mix >> precision >> steps;
    // f32 wavefunction in single and mixed: agreement to f32 rounding
    const bool dbl = precision == "double";
    const double tol = dbl ? 1e-9 : 1e-4;
    const int W = 8, ndn = ne - nup, nmax = nup > ndn ? nup : ndn;
    P.walkers = W, P.capacity = W;
    std::vector<double> t((nup * nup + ndn * ndn) * W + 1), work(nmax * nmax * W + 1), kin(W), pot(W), r2(2 * W);
    std::vector<float> tf(t.size()), workf(work.size());
    std::vector<int> counts(2 * W);
    double worst = 0;
    int bad = 0;
    for (int step = -1; step < steps; step++) {
        P.sweep = step >= 0, P.tau = 0.3, P.fixed_node = 0, P.seed_mix = seed_mix, P.step = step < 0 ? 0 : step, P.first = 0;
        blockDim.x = 1;
        for (int w = 0; w < W; w++) {
            blockIdx.x = w;
            if (dbl) qmc_step_f64(P, itab.data(), dtab.data(), pos.data(), t.data(), work.data(), kin.data(), pot.data(), counts.data(), r2.data());
            else if (precision == "mixed") qmc_step_mixed(P, itab.data(), dtab.data(), pos.data(), tf.data(), work.data(), kin.data(), pot.data(), counts.data(), r2.data());
            else qmc_step_f32(P, itab.data(), dtab.data(), pos.data(), tf.data(), workf.data(), kin.data(), pot.data(), counts.data(), r2.data());
        }
        for (int w = 0; w < W; w++) {
            int s, ww;
            double k, e;
            unsigned long long acc;
            ex >> s >> ww >> k >> e >> acc;
            // relative to the local energy's scale: the kinetic part alone may be a small difference of large terms
            double rel = fabs(kin[w] - k) / fmax(fmax(fabs(k), fabs(e)), 1e-300);
            if (!P.periodic) rel = fmax(rel, fabs(kin[w] + pot[w] - e) / fabs(e));
            worst = fmax(worst, rel);
            if (rel > tol || (step >= 0 && (unsigned long long)counts[W + w] != acc)) {
                if (bad++ < 5) printf("  step %d walker %d: cpu kinetic %.15e E_L %.15e accepted %llu; host-built kernel %.15e %.15e %d\n", step, w, k, e, acc, kin[w], kin[w] + pot[w], counts[W + w]);
            }
        }
    }
    printf("%s: largest relative difference %.2e, %d mismatches\n", d.c_str(), worst, bad);
    return bad ? 1 : 0;
}
