// The gated units' activation values, one expression each for every kernel
// that computes them (swiglu.cu, geglu.cu, gated_lora.cu), so that a fused
// kernel writes the bits the elementwise one does:
//
//	swigluValue(g, u) = silu(g)·u = g·σ(g)·u,  σ(x) = 1/(1 + e^−x)
//	gegluValue(x, u)  = gelu(x)·u = x/2·(1 + tanh(√(2/π)·(x + 0.044715x³)))·u
//
// expf and tanhf are the accurate ones (no fast-math).
#pragma once

#define GELU_K 0.7978845608028654f  // √(2/π)
#define GELU_C 0.044715f

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float geluTanh(float x) { return tanhf(GELU_K * (x + GELU_C * x * x * x)); }

__device__ __forceinline__ float swigluValue(float g, float u) { return g * sigmoid(g) * u; }

__device__ __forceinline__ float gegluValue(float x, float u) { return 0.5f * x * (1.0f + geluTanh(x)) * u; }
