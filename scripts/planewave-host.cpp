// planewave.cu compiled for the host against the Rust planewave::PlaneWaves::evaluate (see scripts/cu-on-host.sh):
// every block (point) and thread (orbital entries of the row, padding included) run one at a time over the dumped
// cases, in double and in float. Both sides evaluate sincos of the same argument in the same type with glibc and no
// contraction, so the values must agree to a relative 1e-15 (double) and 1e-6 (float) of the largest entry, and every
// padding entry must be exactly 0.
#include "cu-host.h"
#include "../kernels/src/planewave/planewave.cu"

template <typename A> int check(const std::string& d, int i, int orbitals, int stride, int points, const char* name, double tol) {
    const std::vector<double> k = load<double>(d + "/k-" + std::to_string(i) + ".bin");
    const std::vector<double> pos = load<double>(d + "/pos-" + std::to_string(i) + ".bin");
    const std::vector<A> expect = load<A>(d + "/" + name + "-" + std::to_string(i) + ".bin");
    const size_t n = (size_t)points * 5 * stride;
    if (k.size() != 4 * (size_t)orbitals || pos.size() != 3 * (size_t)points || expect.size() != n) {
        printf("case %d %s: dump sizes do not match the case\n", i, name);
        return 1;
    }
    std::vector<A> got(n, (A)-7);
    const WaveParams p = {orbitals, stride, points, 0};
    blockDim.x = 64;
    for (unsigned b = 0; b < (unsigned)points; b++)
        for (unsigned t = 0; t < blockDim.x; t++) {
            blockIdx.x = b, threadIdx.x = t;
            planewave_vgl<A>(p, k.data(), pos.data(), got.data());
        }
    double scale = 0, worst = 0;
    int bad = 0;
    for (size_t e = 0; e < n; e++) {
        scale = fmax(scale, fabs((double)expect[e]));
        worst = fmax(worst, fabs((double)got[e] - (double)expect[e]));
        if ((int)(e % stride) >= orbitals && got[e] != (A)0) bad++;
    }
    const double rel = worst / scale;
    printf("planewave case %d %s: largest relative difference %.2e, %d padding entries not zero\n", i, name, rel, bad);
    return !(rel <= tol) || bad > 0;
}

int main(int argc, char** argv) {
    const std::string d = argv[1];
    std::ifstream cases(d + "/cases.txt");
    int orbitals, stride, points, i = 0, status = 0;
    for (; cases >> orbitals >> stride >> points; i++) {
        status |= check<double>(d, i, orbitals, stride, points, "f64", 1e-15);
        status |= check<float>(d, i, orbitals, stride, points, "f32", 1e-6);
    }
    if (i == 0) {
        printf("planewave: no cases in %s\n", d.c_str());
        return 1;
    }
    return status;
}
