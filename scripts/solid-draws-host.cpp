// draws.cu's per-walker draw compiled for the host against the Rust solid::draws (see scripts/cu-on-host.sh): the
// device's streams, uniforms, ranges, rejection loop and rotation formulas checked bit for bit without a GPU.
// Box-Muller's normals go through log, sin and cos, where CUDA's math library and glibc may differ by ulps: they must
// agree to a relative 1e-15 (here, glibc on both sides, they are expected to be exact).
#include "cu-host.h"
#include "../kernels/src/solid/draws.cu"

static unsigned long long bits(double x) {
    unsigned long long b;
    memcpy(&b, &x, sizeof b);
    return b;
}

int main(int argc, char** argv) {
    std::string d = argv[1];
    std::ifstream cases(d + "/cases.txt");
    unsigned long long seed, step, walker;
    int ne, ni, i = 0, bad = 0;
    long long exact = 0, normals = 0, others = 0;
    double worst = 0;
    for (; cases >> seed >> step >> walker >> ne >> ni; i++) {
        const std::vector<double> expect = load<double>(d + "/case-" + std::to_string(i) + ".bin");
        if (expect.size() != 4 * (size_t)ne + 9 * (size_t)ni) {
            printf("case %d: %zu numbers in the dump, %d electrons and %d ions need %d\n", i, expect.size(), ne, ni, 4 * ne + 9 * ni);
            return 1;
        }
        std::vector<double> got(expect.size(), -7.0);
        solid_walker_draws(seed, step, walker, ne, ni, got.data(), got.data() + 4 * ne);
        for (size_t k = 0; k < got.size(); k++) {
            const bool normal = k < 4 * (size_t)ne && k % 4 != 3;
            const double rel = fabs(got[k] - expect[k]) / fabs(expect[k]);
            const bool same = bits(got[k]) == bits(expect[k]);
            if (normal) {
                normals++, exact += same;
                if (!same) worst = fmax(worst, rel);
            } else {
                others++;
            }
            if (normal ? !(same || rel <= 1e-15) : !same) {
                if (bad++ < 5)
                    printf("  case %d (seed %llu step %llu walker %llu) %s %zu: rust %.17e host-built %.17e\n", i, seed, step, walker,
                           normal ? "normal" : (k < 4 * (size_t)ne ? "uniform" : "rotation entry"), k < 4 * (size_t)ne ? k : k - 4 * ne,
                           expect[k], got[k]);
            }
        }
    }
    if (i == 0) {
        printf("no cases in %s/cases.txt\n", d.c_str());
        return 1;
    }
    printf("solid draws: %d cases: %lld uniforms and rotation entries (bit for bit required), %lld normals (%lld bit for bit, "
           "largest relative difference %.2e); %d mismatches\n",
           i, others, normals, exact, worst, bad);
    return bad ? 1 : 0;
}
