// The solid's random numbers on the device (compiled in one module with solid.cu; a file of its own so that g++
// compiles it for the host check, scripts/solid-draws-host.cpp): walker `walker`'s numbers of step `step` exactly
// as solid::draws draws them on the host, from the same stream and in the same order: per electron three normals
// and one uniform into moves [electron][4], then one quadrature rotation per ion into rot [ion][9].
__device__ void solid_walker_draws(u64 seed, u64 step, u64 walker, int electrons, int ions, double* __restrict__ moves,
                                   double* __restrict__ rot) {
    Xoshiro r = walker_stream(seed, 0x501D, step, walker);
    for (int e = 0; e < electrons; e++) {
        gaussian3(r, moves + 4 * (size_t)e);
        moves[4 * (size_t)e + 3] = uniform(r);
    }
    for (int i = 0; i < ions; i++) random_rotation(r, rot + 9 * (size_t)i);
}

// The step's random numbers, one thread per walker: walker w's moves into moves [w][electron][4] (the layout
// solid_jastrow_move reads), its rotations into its slab (rot [ion][9] f64). The draws of a stream are sequential;
// launched thin (one warp per block) over many SMs, a thread's chain of dependent double operations is not slowed by
// its neighbours'.
extern "C" __global__ void solid_draws(int walkers, int electrons, int ions, const WalkerSlab slab, u64 seed, u64 step,
                                       u64 first, double* __restrict__ moves, unsigned char* __restrict__ slabs) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= walkers) return;
    solid_walker_draws(seed, step, first + w, electrons, ions, moves + (size_t)w * electrons * 4,
                       slab_at<double>(slabs, slab, w, slab.rot));
}
