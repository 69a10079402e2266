// Prelude of every qmc-bench kernel (prepended by the GPU layer before NVRTC compiles a module).
// NVRTC has no standard headers: the few things kernels share are defined here.
#pragma once

typedef unsigned long long u64;

// Real-number helpers that pick the float or double intrinsic from the type.
template <typename T> __device__ __forceinline__ T qmc_sqrt(T x);
template <> __device__ __forceinline__ float qmc_sqrt<float>(float x) { return sqrtf(x); }
template <> __device__ __forceinline__ double qmc_sqrt<double>(double x) { return sqrt(x); }

template <typename T> __device__ __forceinline__ T qmc_floor(T x);
template <> __device__ __forceinline__ float qmc_floor<float>(float x) { return floorf(x); }
template <> __device__ __forceinline__ double qmc_floor<double>(double x) { return floor(x); }

template <typename T> __device__ __forceinline__ T qmc_erfc(T x);
template <> __device__ __forceinline__ float qmc_erfc<float>(float x) { return erfcf(x); }
template <> __device__ __forceinline__ double qmc_erfc<double>(double x) { return erfc(x); }

// Nearest integer, ties to even.
template <typename T> __device__ __forceinline__ T qmc_rint(T x);
template <> __device__ __forceinline__ float qmc_rint<float>(float x) { return rintf(x); }
template <> __device__ __forceinline__ double qmc_rint<double>(double x) { return rint(x); }

template <typename T> __device__ __forceinline__ T qmc_exp(T x);
template <> __device__ __forceinline__ float qmc_exp<float>(float x) { return expf(x); }
template <> __device__ __forceinline__ double qmc_exp<double>(double x) { return exp(x); }

// Warp-wide sum with shuffles: no reliance on lockstep warps.
template <typename T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Device-to-device copy used to measure the bandwidth ceiling (16-byte accesses, grid-stride).
extern "C" __global__ void qmc_copy_f4(const float4* __restrict__ src, float4* __restrict__ dst, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) dst[i] = src[i];
}

// Paper 000's walker layout (pseudopotential/slab.rs): each walker's arrays in one slab, all slabs in one allocation;
// walker w's array at base + w * bytes + offset (byte offsets, multiples of 256).
struct WalkerSlab { long long bytes, pos, rot, inv, dpsi; };
template <typename T>
__device__ __forceinline__ T* slab_at(unsigned char* base, const WalkerSlab& s, long long w, long long offset) {
    return (T*)(base + w * s.bytes + offset);
}
// The same for kernels that only read the slabs (a const base gives const arrays, read through the read-only path).
template <typename T>
__device__ __forceinline__ const T* slab_at(const unsigned char* base, const WalkerSlab& s, long long w, long long offset) {
    return (const T*)(base + w * s.bytes + offset);
}
