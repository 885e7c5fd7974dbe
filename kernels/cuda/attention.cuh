// The sequence arithmetic the attention kernels share (attention.cu's f32
// kernels and attention_tc.cu's tensor-core ones): which keys a query of a
// packed batch sees, and which queries see a key. Every index is clamped,
// so that a bad seqOff (read on the device, unchecked) gives wrong values,
// never an access outside the buffers.
#pragma once

__device__ __forceinline__ int attMin(int a, int b) { return a < b ? a : b; }
__device__ __forceinline__ int attMax(int a, int b) { return a > b ? a : b; }

// attSeq returns the index s of the sequence holding token p: the largest
// s ≤ S with seqOff[s] ≤ p (seqOff[0] = 0 ≤ p).
__device__ __forceinline__ int attSeq(const int *__restrict__ seqOff, int S, int p) {
	int lo = 0, hi = S;
	while (lo < hi) {
		const int mid = (lo + hi + 1) / 2;
		if (seqOff[mid] <= p) lo = mid;
		else hi = mid - 1;
	}
	return lo;
}

// attFirstKey is the first key query position p sees: its sequence's
// start, or p − W + 1 when later; clamped to [0, p]. S = 0: one sequence
// from 0 (seqOff is not read).
__device__ __forceinline__ int attFirstKey(const int *__restrict__ seqOff, int S, int p, int W) {
	const int start = S > 0 ? seqOff[attSeq(seqOff, S, p)] : 0;
	return attMin(attMax(attMax(start, p - W + 1), 0), p);
}

// attLastQuery is the last query that sees key j: its sequence's last
// token, or j + W − 1 when earlier; clamped to [j, N − 1].
__device__ __forceinline__ int attLastQuery(const int *__restrict__ seqOff, int S, int j, int W, int N) {
	const int s = attSeq(seqOff, S, j);
	const int end = attMin(attMax(s < S ? seqOff[s + 1] : N, j + 1), N);  // in [j+1, N]
	return W >= end - j ? end - 1 : j + W - 1;  // j + W cannot overflow here
}
