// Rotary position embedding, forward and backward
// (kernels.Backend.RoPEForward and RoPEBackward's contracts): the first
// R = 2·half dims of every head are rotated in Hugging Face's rotate_half
// convention, pairs (i, i+half), by θ = pos[n]·invFreq[i] formed in f32:
//
//	forward:  out[i]      = x[i]·cos θ − x[i+half]·sin θ
//	          out[i+half] = x[i+half]·cos θ + x[i]·sin θ
//	backward: dinp[i]      += dout[i]·cos θ + dout[i+half]·sin θ
//	          dinp[i+half] += dout[i+half]·cos θ − dout[i]·sin θ
//
// and dims R..D−1 are copied (forward) or added (backward) unchanged.
// rope_backward_set writes dinp instead of adding to it
// (kernels.RoPESetter): the same expressions, so the values a zeroed dinp
// would get.
// out/dinp, inp/dout [N,H,D]; pos [N]; invFreq [half]. out may be inp (the
// forward in place: each thread reads its two values before writing them,
// so the pointers are not __restrict__).
//
// Launch: any 1-D geometry; each thread takes work items t, t + the grid's
// thread count, … of the N·H·(D−half) items: item j < half of a head is
// the pair (j, j+half), item j ≥ half the unrotated dim j+half. sin and cos
// are sincosf's (full range, not the fast intrinsics). Never run on a GPU:
// tested on the CPU through cpushim/cuda_cpu.h against kernels/ref.

template <bool backward, bool set = false>
__device__ __forceinline__ void rope(float *out, const float *inp, const int *__restrict__ pos,
                                     const float *__restrict__ invFreq, int N, int H, int D, int half) {
	const long long per = D - half, total = (long long)N * H * per;
	for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < total; t += (long long)gridDim.x * blockDim.x) {
		const long long head = t / per;
		const int j = (int)(t - head * per);
		const long long base = head * D;
		if (j < half) {
			const float theta = (float)pos[head / H] * invFreq[j];
			float s, c;
			sincosf(theta, &s, &c);
			const float x0 = inp[base + j], x1 = inp[base + j + half];
			if (backward && set) {
				out[base + j] = x0 * c + x1 * s;
				out[base + j + half] = x1 * c - x0 * s;
			} else if (backward) {
				out[base + j] += x0 * c + x1 * s;
				out[base + j + half] += x1 * c - x0 * s;
			} else {
				out[base + j] = x0 * c - x1 * s;
				out[base + j + half] = x1 * c + x0 * s;
			}
		} else {
			const long long d = base + j + half;
			if (backward && !set) {
				out[d] += inp[d];
			} else {
				out[d] = inp[d];
			}
		}
	}
}

extern "C" __global__ void rope_forward(float *out, const float *inp, const int *__restrict__ pos,
                                        const float *__restrict__ invFreq, int N, int H, int D, int half) {
	rope<false>(out, inp, pos, invFreq, N, H, D, half);
}

extern "C" __global__ void rope_backward(float *dinp, const float *dout, const int *__restrict__ pos,
                                         const float *__restrict__ invFreq, int N, int H, int D, int half) {
	rope<true>(dinp, dout, pos, invFreq, N, H, D, half);
}

extern "C" __global__ void rope_backward_set(float *dinp, const float *dout, const int *__restrict__ pos,
                                             const float *__restrict__ invFreq, int N, int H, int D, int half) {
	rope<true, true>(dinp, dout, pos, invFreq, N, H, D, half);
}
