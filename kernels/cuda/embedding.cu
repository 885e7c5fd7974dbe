// Token embedding, forward and scatter-add backward
// (kernels.Backend.EmbeddingForward, EmbeddingForwardBF16 and
// EmbeddingBackward's contracts):
//
//	out[n,:]          = table[ids[n],:]
//	dtable[ids[n],:] += dout[n,:]
//
// out, dout [N,C]; ids [N]; table, dtable [V,C] (the bf16 table as its
// bits, converted exactly to f32). The ids live on the device, so the host
// cannot check them: a row whose id is outside [0, V) comes out NaN in the
// forward and adds nothing in the backward.
//
// Launch: grid N (one block per row), block of any size. The backward adds
// with atomicAdd, as rows with the same id add into the same table row: its
// float sums are in no fixed order (not bit-reproducible run to run). Never
// run on a GPU: tested on the CPU through cpushim/cuda_cpu.h against
// kernels/ref.

extern "C" __global__ void embedding_forward(float *__restrict__ out, const int *__restrict__ ids,
                                             const float *__restrict__ table, int C, int V) {
	const int n = blockIdx.x, id = ids[n];
	float *o = out + (long long)n * C;
	const bool ok = id >= 0 && id < V;
	const float *row = table + (long long)(ok ? id : 0) * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = ok ? row[c] : __uint_as_float(0x7fc00000u);
}

extern "C" __global__ void embedding_forward_bf16(float *__restrict__ out, const int *__restrict__ ids,
                                                  const unsigned short *__restrict__ table, int C, int V) {
	const int n = blockIdx.x, id = ids[n];
	float *o = out + (long long)n * C;
	const bool ok = id >= 0 && id < V;
	const unsigned short *row = table + (long long)(ok ? id : 0) * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) o[c] = __uint_as_float(ok ? (unsigned)row[c] << 16 : 0x7fc00000u);
}

extern "C" __global__ void embedding_backward(float *dtable, const float *__restrict__ dout,
                                              const int *__restrict__ ids, int C, int V) {
	const int n = blockIdx.x, id = ids[n];
	if (id < 0 || id >= V) return;  // the whole block: no barrier follows
	const float *d = dout + (long long)n * C;
	float *row = dtable + (long long)id * C;
	for (int c = threadIdx.x; c < C; c += blockDim.x) atomicAdd(&row[c], d[c]);
}
