// CUDA's device vocabulary for g++ with a whole thread block of real host threads: __syncthreads is a barrier of
// the block and a shuffle exchanges values through per-warp slots between two warp barriers. Lets a host check run
// block-cooperative device code (lattice.cu's Gauss-Jordan rebuild, and its whole kernel) unchanged, one block at a
// time; see scripts/cu-on-host.sh.
#pragma once
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <algorithm>
#include <barrier>
#include <thread>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
struct Idx { unsigned x = 0, y = 0, z = 0; };
static thread_local Idx threadIdx;
static Idx blockIdx, blockDim, gridDim;
static std::barrier<>* g_block;
static std::barrier<>* g_warp[32];
static double g_slot[32][32];
static long g_block_barriers; // counted by thread 0
inline void __syncthreads() {
    if (threadIdx.x == 0) g_block_barriers++;
    g_block->arrive_and_wait();
}
inline void __syncwarp(unsigned = 0xffffffffu) { g_warp[threadIdx.x >> 5]->arrive_and_wait(); }
template <typename T> T shfl_from(T v, int src) {
    const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
    static_assert(sizeof(T) <= 8);
    double d = 0; memcpy(&d, &v, sizeof(T));
    g_slot[w][l] = d;
    __syncwarp();
    T r; double s = g_slot[w][src]; memcpy(&r, &s, sizeof(T));
    __syncwarp();
    return r;
}
template <typename T> T __shfl_sync(unsigned, T v, int src) { return shfl_from(v, src & 31); }
template <typename T> T __shfl_down_sync(unsigned, T v, int o, int width = 32) {
    const int l = threadIdx.x & 31, base = l / width * width;
    return shfl_from(v, l + o < base + width ? l + o : l);
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int o) { return shfl_from(v, (threadIdx.x & 31) ^ o); }
// redux.sync (sm_80): every lane gets the max (min) of the 32 lanes' values
inline unsigned reduce_from(unsigned v, bool max) {
    const int w = threadIdx.x >> 5;
    g_slot[w][threadIdx.x & 31] = v;
    __syncwarp();
    unsigned r = v;
    for (int l = 0; l < 32; l++) r = max ? std::max(r, (unsigned)g_slot[w][l]) : std::min(r, (unsigned)g_slot[w][l]);
    __syncwarp();
    return r;
}
inline unsigned __reduce_max_sync(unsigned, unsigned v) { return reduce_from(v, true); }
inline unsigned __reduce_min_sync(unsigned, unsigned v) { return reduce_from(v, false); }
// the mask of the lanes whose predicate holds (each lane of the warp calls it)
inline unsigned __ballot_sync(unsigned, int pred) {
    const int w = threadIdx.x >> 5;
    g_slot[w][threadIdx.x & 31] = pred ? 1.0 : 0.0;
    __syncwarp();
    unsigned m = 0;
    for (int l = 0; l < 32; l++) m |= (g_slot[w][l] != 0.0 ? 1u : 0u) << l;
    __syncwarp();
    return m;
}
inline int __ffs(unsigned x) { return x ? __builtin_ctz(x) + 1 : 0; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
using std::max;
using std::min;
#define __launch_bounds__(...)
inline unsigned __float_as_uint(float x) { unsigned u; memcpy(&u, &x, sizeof u); return u; }
inline long long __double_as_longlong(double x) { long long u; memcpy(&u, &x, sizeof u); return u; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __longlong_as_double(long long x) { double d; memcpy(&d, &x, sizeof d); return d; }
struct float4 { float x, y, z, w; };
struct double2 { double x, y; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
#define __align__(x) alignas(x)
#include "../kernels/src/common.cuh"
