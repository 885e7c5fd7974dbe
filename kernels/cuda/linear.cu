// The kernels around the Linear ops' cuBLAS GEMMs (kernels.Backend.
// LinearForward, LinearBackward and their bfloat16-weight forms) and the
// bfloat16 conversions of the precision modes (kernels.Precision):
//
//	bias_forward:  out[n,o] += bias[o]                    out [N,OC]
//	bias_backward: dbias[o] += Σ_n dout[n,o]              dout [N,OC]
//	bf16_to_f32:   out[i] = w[off+i] widened (exact)      the exact mode's
//	               weight rows, a chunk at a time, for an f32 GEMM
//	f32_to_bf16:   out[i] = x[i] rounded to nearest even  the bf16 mode's
//	               activation operand (NaN stays NaN, as kernels.BF16)
//
// Never run on a GPU: tested on the CPU through cpushim/cuda_cpu.h (with
// the GEMMs from kernels/ref) against kernels/ref.

// bias_forward. Launch: any 1-D geometry (a grid-stride loop over N·OC,
// 64-bit index).
extern "C" __global__ void bias_forward(float *__restrict__ out, const float *__restrict__ bias, int N, int OC) {
	const long long total = (long long)N * OC;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total; i += (long long)gridDim.x * blockDim.x)
		out[i] += bias[i % OC];
}

// bias_backward accumulates dbias deterministically (no atomics): grid
// ceil(OC/32), block (32, 8). Thread (tx, ty) of block b sums column
// 32·b + tx over rows ty, ty+8, …; the 8 partial sums are then added in a
// fixed order through shared memory.
extern "C" __global__ void bias_backward(float *__restrict__ dbias, const float *__restrict__ dout, int N, int OC) {
	__shared__ float partial[8][32];
	const int o = blockIdx.x * 32 + threadIdx.x;
	float s = 0.0f;
	if (o < OC)
		for (int n = threadIdx.y; n < N; n += 8) s += dout[(long long)n * OC + o];
	partial[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y == 0 && o < OC) {
		float sum = 0.0f;
		for (int y = 0; y < 8; y++) sum += partial[y][threadIdx.x];
		dbias[o] += sum;
	}
}

// bf16_to_f32 widens n bfloat16 values from w + off. Launch: any 1-D
// geometry (a grid-stride loop, 64-bit index).
extern "C" __global__ void bf16_to_f32(float *__restrict__ out, const unsigned short *__restrict__ w, int off, int n) {
	const unsigned short *src = w + off;
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		out[i] = __uint_as_float((unsigned)src[i] << 16);
}

// f32_to_bf16 rounds n values to bfloat16 (nearest, ties to even; a NaN
// keeps its sign and becomes a quiet NaN), as kernels.BF16 does, bit for
// bit. Launch: any 1-D geometry (a grid-stride loop, 64-bit index).
extern "C" __global__ void f32_to_bf16(unsigned short *__restrict__ out, const float *__restrict__ x, int n) {
	for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		unsigned b = __float_as_uint(x[i]);
		if ((b & 0x7fffffffu) > 0x7f800000u) {
			out[i] = (unsigned short)((b >> 16) | 0x40u);
		} else {
			b += 0x7fffu + ((b >> 16) & 1u);
			out[i] = (unsigned short)(b >> 16);
		}
	}
}
