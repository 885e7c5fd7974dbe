// Helpers shared by the kernels (included by the .cu files; no kernels here).
// Every barrier and shuffle below is reached by the whole block, or by a
// whole warp, as kernels/cuda/cpushim requires and CUDA expects: call them
// from code every thread of the block runs.
#pragma once

// HONE_DYNAMIC_SHARED(type, name) declares the launch's dynamic shared
// memory (cuLaunchKernel's sharedMemBytes) as the array name, 16-byte
// aligned. The shim (cpushim/cuda_cpu.h) defines it first, as a pointer to
// a per-block buffer of exactly the launch's bytes.
#ifndef HONE_DYNAMIC_SHARED
#define HONE_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
#endif

// warpSum returns the sum of v over the 32 lanes of the warp in lane 0
// (the other lanes hold partial sums).
__device__ __forceinline__ float warpSum(float v) {
	for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
	return v;
}

// blockSum returns the sum of v over the threads of the block, to every
// thread. blockDim.x is a multiple of 32 (one-dimensional blocks) up to
// 1024; scratch is __shared__ float[32] of the caller, free again on return
// (a barrier ends the function, so back-to-back calls may share it).
__device__ __forceinline__ float blockSum(float v, float *scratch) {
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
	v = warpSum(v);
	if (lane == 0) scratch[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = warpSum(lane < warps ? scratch[lane] : 0.0f);
		if (lane == 0) scratch[0] = v;  // lane 0 read scratch[0] itself: no race
	}
	__syncthreads();
	v = scratch[0];
	__syncthreads();
	return v;
}

// warpMax returns the largest v over the 32 lanes of the warp in lane 0.
__device__ __forceinline__ float warpMax(float v) {
	for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
	return v;
}

// blockMax is blockSum with fmaxf: the largest v over the block, to every
// thread (−Inf when every v is).
__device__ __forceinline__ float blockMax(float v, float *scratch) {
	const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
	v = warpMax(v);
	if (lane == 0) scratch[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = warpMax(lane < warps ? scratch[lane] : -INFINITY);
		if (lane == 0) scratch[0] = v;  // lane 0 read scratch[0] itself: no race
	}
	__syncthreads();
	v = scratch[0];
	__syncthreads();
	return v;
}
