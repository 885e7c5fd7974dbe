// Token embedding, forward and backward
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
// Forward launch: grid N (one block per row), block of any size.
//
// The backward is deterministic, without atomics, in two launches over a
// work array of 2N ints (perm, then the sorted ids):
//   - embedding_sort: a rank sort of the keys (ids[n], n), which are
//     distinct: thread n counts the keys below its own, ids staged through
//     shared memory a tile at a time, and writes perm[rank] = n and
//     sorted[rank] = ids[n]. Grid ⌈N/EMB_SORT_THREADS⌉, block
//     EMB_SORT_THREADS. N² comparisons from shared memory: at N = 8192
//     tokens 67M, a few tens of µs on an H100-class GPU, and no sort
//     library;
//   - embedding_backward: one block per sorted position i and column chunk
//     (grid N × ⌈C/blockDim.x⌉, block of any size): the block at the first
//     position of a run of equal ids walks the run (the id's tokens in
//     increasing n) and adds its rows to the table row, column by column in
//     a register, starting from the row's value; every other block returns
//     at once. So each table element is summed in the order kernels/ref
//     sums it (n ascending), by one thread: the result is bit for bit ref's
//     and the same run after run. The traffic is the atomic version's (each
//     dout row read once, each touched table row read and written once);
//     the cost of a frequent id is its run's length in dependent adds on one
//     column chunk, the run's loads four at a time so that several are in
//     flight (a run of 1000 tokens, one in eight of a batch, is 1000 adds
//     per thread).
// Never run on a GPU: tested on the CPU through cpushim/cuda_cpu.h against
// kernels/ref, blocks in shuffled orders too.

#define EMB_SORT_THREADS 128

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

// embedding_sort writes work[0, N) = perm and work[N, 2N) = the ids in
// sorted order, (ids[n], n) ascending.
extern "C" __global__ void embedding_sort(int *__restrict__ work, const int *__restrict__ ids, int N) {
	__shared__ int tile[EMB_SORT_THREADS];
	const int n = blockIdx.x * EMB_SORT_THREADS + threadIdx.x;
	const int id = n < N ? ids[n] : 0;
	int rank = 0;
	for (int t0 = 0; t0 < N; t0 += EMB_SORT_THREADS) {  // the same trips in every thread
		__syncthreads();
		if (t0 + (int)threadIdx.x < N) tile[threadIdx.x] = ids[t0 + threadIdx.x];
		__syncthreads();
		const int m = N - t0 < EMB_SORT_THREADS ? N - t0 : EMB_SORT_THREADS;
		for (int j = 0; j < m; j++) {
			const int o = tile[j];
			rank += o < id || (o == id && t0 + j < n);
		}
	}
	if (n < N) {
		work[rank] = n;
		work[N + rank] = id;
	}
}

// embedding_backward adds dout's rows into dtable from embedding_sort's work.
extern "C" __global__ void embedding_backward(float *dtable, const float *__restrict__ dout,
                                              const int *__restrict__ work, int N, int C, int V) {
	const int i = blockIdx.x, id = work[N + i];
	if ((i > 0 && work[N + i - 1] == id) || id < 0 || id >= V) return;  // the whole block: no barrier follows
	int end = i + 1;
	while (end < N && work[N + end] == id) end++;
	const int c = blockIdx.y * blockDim.x + threadIdx.x;
	if (c >= C) return;
	float *row = dtable + (long long)id * C + c;
	float acc = *row;
	int j = i;
	for (; j + 4 <= end; j += 4) {  // four loads in flight, added in order
		const float d0 = dout[(long long)work[j] * C + c], d1 = dout[(long long)work[j + 1] * C + c];
		const float d2 = dout[(long long)work[j + 2] * C + c], d3 = dout[(long long)work[j + 3] * C + c];
		acc += d0;
		acc += d1;
		acc += d2;
		acc += d3;
	}
	for (; j < end; j++) acc += dout[(long long)work[j] * C + c];
	*row = acc;
}
