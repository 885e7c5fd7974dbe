// The small elementwise ops and copies (kernels.Backend.AddScalar, Copy and
// Zero's contracts), over n values:
//
//	add_scalar: out = a + s    (out may be a)
//	copy_f32:   dst = src      (no overlap)
//	zero_f32:   x = 0          (NaN or not: the old values are not read)
//
// all exact. out may alias a, so add_scalar's pointers are not
// __restrict__. Launch: any 1-D geometry (a grid-stride loop, 64-bit
// index). Never run on a GPU: tested on the CPU through cpushim/cuda_cpu.h
// against kernels/ref.

extern "C" __global__ void add_scalar(float *out, const float *a, float s, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = a[i] + s;
}

extern "C" __global__ void copy_f32(float *__restrict__ dst, const float *__restrict__ src, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) dst[i] = src[i];
}

extern "C" __global__ void zero_f32(float *__restrict__ x, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) x[i] = 0.0f;
}
