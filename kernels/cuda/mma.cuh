// Warp-level tensor-core operations on register fragments, for
// attention_mma.cu ("tc3"): the PTX instructions
//
//	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32   (mmaBf16)
//	ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16       (ldmatrixX4, ldmatrixX4Trans)
//
// as inline asm under nvcc, and, under g++ with cpushim/cuda_cpu.h, an
// emulation that follows the fragment layouts the PTX ISA documents
// ("Matrix Fragments for mma.m16n8k16 with floating point type", "Warp-level
// matrix load instruction: ldmatrix"). With g = lane/4 and t = lane%4:
//
//   - A (16×16, row-major, bf16): a[0] holds (g, 2t) in its low half and
//     (g, 2t+1) in its high half; a[1] the same columns of row g+8; a[2]
//     and a[3] the columns 2t+8, 2t+9 of rows g and g+8;
//   - B (16×8, "col": k down, n across, bf16): b[0] holds (k = 2t, n = g)
//     low and (2t+1, g) high; b[1] the rows 2t+8, 2t+9;
//   - C and D (16×8, f32): c[0], c[1] are (g, 2t), (g, 2t+1); c[2], c[3]
//     the same columns of row g+8;
//   - ldmatrix .x4: lanes 8i … 8i+7 give the addresses of the 8 rows (16
//     bytes each, 16-byte aligned) of matrix i; lane l receives in r[i]
//     row l/4, columns 2(l%4) (low) and 2(l%4)+1 (high) of matrix i, or
//     with .trans its column l/4, rows 2(l%4) and 2(l%4)+1.
//
// A 16-row bf16 tile in shared memory loaded with ldmatrixX4 from the
// addresses of its rows l%16 at column 8·(l/16) is an A fragment; a tile
// of 16 keys × 16 dims, rows (l%8) + 8·(l/16) at column 8·((l/8)%2), gives
// the B fragments (b[0], b[1] in r[0], r[1] and r[2], r[3]) of two 8-key
// column blocks of Kᵀ; with ldmatrixX4Trans, rows (l%8) + 8·((l/8)%2) at
// column 8·(l/16), the B fragments of two 8-column blocks of a row-major
// V (k the key). An accumulator's pairs (c[0], c[1]) and (c[2], c[3]) of
// two adjacent 8-column blocks are an A fragment's a[0], a[1] and a[2],
// a[3] once packed to bf16 (mmaPack): P = softmax(S) goes from the scores'
// accumulators into the next product without leaving registers.
//
// The emulation (cpushim): every one of these calls is a warp barrier like
// a shuffle, which every lane of a full warp must reach at the same place
// in the source (divergence fails the launch, naming the place). Each lane
// publishes the address of its operands (mmaBf16) or of its row
// (ldmatrix) through the shim's per-warp exchange; after a barrier each
// lane forms its own outputs from the other lanes' by the layouts above,
// and a second barrier keeps the exchange until all have read it. The
// k-sum runs in order in float after c (the device's order and rounding
// inside the sum are unspecified). TestShim's "mma" cases check the
// emulation against a plain loop and the documented layouts.
//
// cp.async is not used: Hone's attention operands are float32 in memory
// and are rounded to bf16 as they are staged, which a byte copy cannot do.
#pragma once

#ifdef __CUDACC__
#include <cuda_bf16.h>
#define MMA_AT
#else
#include <cstdint>
// The call site (the shim's divergence messages name it).
#define MMA_AT , const char *file = __builtin_FILE(), int line = __builtin_LINE()
#endif

// mmaPack returns lo and hi rounded to bfloat16 (nearest even) as one
// register: lo in the low half, hi in the high half (a fragment's element
// pair).
__device__ __forceinline__ unsigned mmaPack(float lo, float hi) {
#ifdef __CUDACC__
	const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
	return *reinterpret_cast<const unsigned *>(&h);
#else
	return (unsigned)__float2bfloat16_rn(lo).bits | (unsigned)__float2bfloat16_rn(hi).bits << 16;
#endif
}

#ifdef __CUDACC__

// mmaBf16 is d = a·b + c on one m16n8k16 tile: bf16 operands, float
// accumulation (fragments as the header says); d may be c.
__device__ __forceinline__ void mmaBf16(float d[4], const unsigned a[4], const unsigned b[2], const float c[4]) {
	asm volatile(
	    "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"
	    : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// ldmatrixX4 loads four 8×8 bf16 matrices from shared memory, row
// addresses from every lane (see the header).
__device__ __forceinline__ void ldmatrixX4(unsigned r[4], const void *row) {
	const unsigned a = (unsigned)__cvta_generic_to_shared(row);
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
	             : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	             : "r"(a));
}

// ldmatrixX4Trans is ldmatrixX4 with each matrix transposed.
__device__ __forceinline__ void ldmatrixX4Trans(unsigned r[4], const void *row) {
	const unsigned a = (unsigned)__cvta_generic_to_shared(row);
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
	             : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	             : "r"(a));
}

#else

namespace hone_mma {

// publish puts the calling lane's pointer p into its warp's exchange and
// waits for the whole warp; it returns the 32 lanes' pointers (valid until
// done). op names the operation in a failure.
inline const uint64_t *publish(const void *p, const char *op, const char *file, int line) {
	hone_cuda::Bookkeeping ignore;  // the exchange slots (ThreadSanitizer)
	hone_cuda::Block &b = *hone_cuda::current;
	const unsigned lane = hone_cuda::flatThread() % warpSize, w = hone_cuda::flatThread() / warpSize;
	hone_cuda::Barrier &bar = b.warps[w];
	if (bar.members != warpSize) {
		b.fail(std::string(op) + " at " + file + ":" + std::to_string(line) + ": a partial warp of " + std::to_string(bar.members) + " lanes");
		throw hone_cuda::Diverged{};
	}
	b.exchange[w][lane] = (uint64_t)(uintptr_t)p;
	b.wait(bar, file, line, false);  // every lane has published
	return b.exchange[w].data();
}

// done waits until every lane of the warp has read the exchange.
inline void done(const char *file, int line) {
	hone_cuda::Block &b = *hone_cuda::current;
	b.wait(b.warps[hone_cuda::flatThread() / warpSize], file, line, false);
}

// half is the bf16 in the low (h = 0) or high half of r, widened.
inline float half(unsigned r, int h) { return __uint_as_float((h ? r >> 16 : r & 0xffffu) << 16); }

// Operands is what a lane publishes for mmaBf16.
struct Operands {
	unsigned a[4], b[2];
};

// elemA is A's element (row m, column k) from the lanes' operands ops.
inline float elemA(const uint64_t *ops, int m, int k) {
	const int lane = 4 * (m % 8) + (k % 8) / 2, reg = (m >= 8) + 2 * (k >= 8);
	return half(((const Operands *)(uintptr_t)ops[lane])->a[reg], k % 2);
}

// elemB is B's element (row k, column n).
inline float elemB(const uint64_t *ops, int k, int n) {
	const int lane = 4 * n + (k % 8) / 2, reg = k >= 8;
	return half(((const Operands *)(uintptr_t)ops[lane])->b[reg], k % 2);
}

// ldmatrix is ldmatrixX4 (trans false) and ldmatrixX4Trans.
inline void ldmatrix(unsigned r[4], const void *row, bool trans, const char *file, int line) {
	const char *op = trans ? "ldmatrixX4Trans" : "ldmatrixX4";
	if ((uintptr_t)row % 16 != 0) {
		hone_cuda::current->fail(std::string(op) + " at " + file + ":" + std::to_string(line) + ": a row address not 16-byte aligned");
		throw hone_cuda::Diverged{};
	}
	const uint64_t *rows = publish(row, op, file, line);
	const int lane = hone_cuda::flatThread() % warpSize;
	unsigned out[4];
	for (int i = 0; i < 4; i++) {
		unsigned short e[2];
		for (int h = 0; h < 2; h++) {
			// Not transposed: row lane/4, column 2·(lane%4)+h; transposed:
			// row 2·(lane%4)+h, column lane/4.
			const int rr = trans ? 2 * (lane % 4) + h : lane / 4, cc = trans ? lane / 4 : 2 * (lane % 4) + h;
			e[h] = ((const unsigned short *)(uintptr_t)rows[8 * i + rr])[cc];
		}
		out[i] = (unsigned)e[0] | (unsigned)e[1] << 16;
	}
	done(file, line);
	for (int i = 0; i < 4; i++) r[i] = out[i];
}

}  // namespace hone_mma

// mmaBf16 is d = a·b + c on one m16n8k16 tile: bf16 operands, float
// accumulation (fragments as the header says); d may be c.
inline void mmaBf16(float d[4], const unsigned a[4], const unsigned b[2], const float c[4] MMA_AT) {
	hone_mma::Operands mine = {{a[0], a[1], a[2], a[3]}, {b[0], b[1]}};
	const uint64_t *ops = hone_mma::publish(&mine, "mmaBf16", file, line);
	const int lane = hone_cuda::flatThread() % warpSize, g = lane / 4, t = lane % 4;
	float out[4];
	{
		// The other lanes' operands: registers on a GPU, the lanes' stacks
		// here, which the warp barrier does not order (ThreadSanitizer).
		hone_cuda::Bookkeeping ignore;
		for (int e = 0; e < 4; e++) {
			const int m = g + 8 * (e / 2), n = 2 * t + e % 2;
			float acc = c[e];
			for (int k = 0; k < 16; k++) acc += hone_mma::elemA(ops, m, k) * hone_mma::elemB(ops, k, n);
			out[e] = acc;
		}
	}
	hone_mma::done(file, line);
	for (int e = 0; e < 4; e++) d[e] = out[e];
}

// ldmatrixX4 loads four 8×8 bf16 matrices from shared memory, row
// addresses from every lane (see the header).
inline void ldmatrixX4(unsigned r[4], const void *row MMA_AT) { hone_mma::ldmatrix(r, row, false, file, line); }

// ldmatrixX4Trans is ldmatrixX4 with each matrix transposed.
inline void ldmatrixX4Trans(unsigned r[4], const void *row MMA_AT) { hone_mma::ldmatrix(r, row, true, file, line); }

#endif
