// The gated units' values, one expression each for every kernel that
// computes them (swiglu.cu, geglu.cu, gated_lora.cu), so that a fused
// kernel writes the bits the elementwise one does:
//
//	swigluValue(g, u) = silu(g)·u = g·σ(g)·u,  σ(x) = 1/(1 + e^−x)
//	gegluValue(x, u)  = gelu(x)·u = x/2·(1 + tanh(√(2/π)·(x + 0.044715x³)))·u
//
// and the backward's, given dout d (swigluGrads, gegluGrads: the forward's
// act again, as the backward recomputes it, and the two gradients):
//
//	SwiGLU: dgate = d·u·σ(g)·(1 + g·(1 − σ(g))), dup = d·g·σ(g), act = g·σ(g)·u
//	GeGLU:  dgate = d·u·(½(1 + t) + ½x·(1 − t²)·√(2/π)·(1 + 3·0.044715x²)),
//	        dup = d·x/2·(1 + t), act = x/2·(1 + t)·u,  t = tanh(√(2/π)·(x + 0.044715x³))
//
// expf and tanhf are the accurate ones (no fast-math).
#pragma once

#define GELU_K 0.7978845608028654f  // √(2/π)
#define GELU_C 0.044715f

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__device__ __forceinline__ float geluTanh(float x) { return tanhf(GELU_K * (x + GELU_C * x * x * x)); }

__device__ __forceinline__ float swigluValue(float g, float u) { return g * sigmoid(g) * u; }

__device__ __forceinline__ float gegluValue(float x, float u) { return 0.5f * x * (1.0f + geluTanh(x)) * u; }

__device__ __forceinline__ void swigluGrads(float g, float u, float d, float &dg, float &du, float &a) {
	const float s = sigmoid(g);
	dg = d * u * s * (1.0f + g * (1.0f - s));
	du = d * g * s;
	a = g * s * u;
}

__device__ __forceinline__ void gegluGrads(float x, float u, float d, float &dg, float &du, float &a) {
	const float t = geluTanh(x);
	dg = d * u * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * GELU_K * (1.0f + 3.0f * GELU_C * x * x));
	du = d * 0.5f * x * (1.0f + t);
	a = 0.5f * x * (1.0f + t) * u;
}
