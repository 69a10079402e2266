// CUDA's device vocabulary for g++, then the kernels' prelude (common.cuh, its defines given with g++ -include as
// scripts/cu-on-host.sh does): lets the host checks compile device
// code unchanged and run it one thread at a time (scripts/cu-on-host.sh). g++ in ISO C++ mode does not contract
// a * b + c, and the host's rounding is IEEE: the rounding intrinsics are plain operations here.
#pragma once
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#define __device__
#define __global__
#define __forceinline__ inline
#define __restrict__ __restrict
// one thread at a time: block-shared arrays are the function's own, a barrier has nothing to wait for
#define __shared__ static
inline void __syncthreads() {}
struct Idx { unsigned x = 0, y = 0, z = 0; };
static Idx threadIdx, blockIdx, blockDim, gridDim;
template <typename T> T __shfl_down_sync(unsigned, T v, int) { return v; }
struct float4 { float x, y, z, w; };
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __longlong_as_double(long long x) {
    double d;
    memcpy(&d, &x, sizeof d);
    return d;
}
#include "../kernels/src/common.cuh"
#include "host-dump.h"

