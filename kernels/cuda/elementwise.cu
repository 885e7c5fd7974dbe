// The elementwise ops (kernels.Backend.Add, Scale and AXPY's contracts),
// over n values:
//
//	add:   out = a + b      (out may be a or b)
//	scale: out = s·a        (out may be a)
//	axpy:  out += s·a
//
// each rounded as kernels/ref rounds it: axpy's product is rounded before
// the add (__fmul_rn: no fused multiply-add), so all three are exact
// matches of ref's float32 arithmetic. out may alias an input, so the
// pointers are not __restrict__. Launch: any 1-D geometry (a grid-stride
// loop, 64-bit index).
//
// scale_cols is scale of a block of columns, over n = N·R values:
//
//	scale_cols: dst [N, R] = s·(src's R columns from off)   (src [N, ld])
//
// each value's one product as scale rounds it; dst and src do not overlap
// (the LoRA forward of several projections, ops_loraforward.go: each
// projection's u from the product over the concatenated rank). Launch:
// any 1-D geometry, as above. Never run on a GPU: tested on the CPU through cpushim/cuda_cpu.h
// against kernels/ref.

extern "C" __global__ void add(float *out, const float *a, const float *b, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = a[i] + b[i];
}

extern "C" __global__ void scale(float *out, const float *a, float s, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = s * a[i];
}

extern "C" __global__ void axpy(float *out, const float *a, float s, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) out[i] = out[i] + __fmul_rn(s, a[i]);
}

extern "C" __global__ void scale_cols(float *__restrict__ dst, const float *__restrict__ src, float s, int R, int ld, int off, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) dst[i] = s * src[(i / R) * ld + off + i % R];
}
