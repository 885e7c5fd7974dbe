// The gated unit's forward fused with the down projection's LoRA A
// product (kernels.GatedLoRAForwarder, Ops.GatedLoRAForward): for gate and
// up [N, I] float32, A [R, I] float32,
//
//	act    = a(gate)·up                  (never stored as float32)
//	act_bf = act rounded to bfloat16     [N, I]  (the down projection's base product reads it)
//	u      = scale·(act·Aᵀ)              [N, R]  float32 (the LoRA update's first factor)
//
// with a = silu (gated_lora_forward_swiglu) or the tanh GELU
// (gated_lora_forward_geglu). Unfused, the gated unit writes act as
// float32 and bfloat16 and the LoRA product (an exact float32 GEMM) reads
// the float32 act back: on the 7B shape (8192 × 18944) 0.62 GB written and
// 0.62 GB read a layer that this kernel does not move.
//
// Numerics: act and act_bf are the bits swiglu_forward_bf16 /
// geglu_forward_bf16 write (the one expression of gated.cuh, then
// bf16Round). u is an exact float32 product, as LinearForward's
// cublasSgemm is (no TF32, no bfloat16): each thread sums the k ≡ phase
// (mod GL_PHASES) terms of its row in order with fused multiply-adds, the
// GL_PHASES partial sums are added in phase order, then multiplied by
// scale once (as Scale does after the GEMM). The order of that sum is not
// cuBLAS's, so u's last bits may differ from LinearForward then Scale.
//
// Launch: grid ceil(N / GL_ROWS), block GL_THREADS. A block takes
// GL_ROWS rows and walks I in chunks of GL_KC columns: each thread loads
// GL_ROWS·GL_KC/GL_THREADS values of gate and up (coalesced: a warp reads
// one row's 32 consecutive columns), computes act, writes act_bf and
// stores act in shared memory; A's chunk goes to shared memory transposed
// (a column's GL_RT ranks side by side, read as broadcast 16-byte loads). Then
// thread (warp w, lane l) adds act[l][k]·A[r][k] for its GL_RT ranks r
// and the chunk's columns k ≡ w (mod GL_PHASES), while the next chunk's
// loads are in flight in registers. Ranks beyond GL_RT take further
// passes over I, which recompute act (not writing act_bf again): the
// backend fuses only small ranks (kernels.GatedLoRAForwarder's
// FusesGatedLoRA). Rows, columns and ranks past N, I and R read as zero
// and are not written. Every barrier is reached by the whole block.
//
// The _bf16in kernels take gate and up as bfloat16 (kernels.GateUpRounder:
// the gate and up projections' GEMMs store their outputs rounded, and the
// model holds them so, half the bytes of float32), widened exactly as they
// are loaded: the bits the float32 kernels write for the widened values.
//
// Not run on a GPU yet: tested on the CPU through cpushim/cuda_cpu.h
// against kernels/ref and against the unfused kernels' bits.
#include "bf16round.cuh"
#include "gated.cuh"

#define GL_ROWS 32                           // rows of a block (a warp's lanes)
#define GL_KC 32                             // columns of a chunk
#define GL_RT 16                             // ranks of a pass
#define GL_THREADS 256                       // threads of a block
#define GL_PHASES (GL_THREADS / GL_ROWS)     // warps: the column phases of a chunk
#define GL_LOADS (GL_ROWS * GL_KC / GL_THREADS)  // gate (and up) values a thread loads a chunk
#define GL_ALOADS (GL_RT * GL_KC / GL_THREADS)   // A values a thread loads a chunk
#define GL_ATLD (GL_RT + 4)                  // row stride of the transposed A tile (16-byte rows, fewer bank conflicts)

#ifdef __CUDACC__
#define GL_UNROLL _Pragma("unroll")
#else
#define GL_UNROLL
#endif

// glIn is element i of a gate or up tensor as float32: a float32 one's
// value, a bfloat16 one's widened (exact).
__device__ __forceinline__ float glIn(const float *__restrict__ p, long long i) { return p[i]; }
__device__ __forceinline__ float glIn(const unsigned short *__restrict__ p, long long i) { return bf16Widen(p[i]); }

// glF4 is four ranks of a transposed A column, read together (one 16-byte
// shared-memory load, the same address for the whole warp).
struct __align__(16) glF4 {
	float x, y, z, w;
};

// glValue is the gated unit's act from gate value g and up value u.
template <bool GELU>
__device__ __forceinline__ float glValue(float g, float u) {
	return GELU ? gegluValue(g, u) : swigluValue(g, u);
}

// glLoad loads the chunk at column k0 of pass r0 into registers: gate and
// up values e = threadIdx.x + j·GL_THREADS (row e / GL_KC, column
// e % GL_KC) and A values (rank e / GL_KC, column e % GL_KC), zero out of
// range.
template <typename In>
__device__ __forceinline__ void glLoad(float *gv, float *uv, float *av, const In *__restrict__ gate,
                                       const In *__restrict__ up, const float *__restrict__ A, long long row0,
                                       int k0, int r0, int N, int I, int R) {
	const int col = threadIdx.x % GL_KC, k = k0 + col;
	GL_UNROLL for (int j = 0; j < GL_LOADS; j++) {
		const long long row = row0 + threadIdx.x / GL_KC + j * (GL_THREADS / GL_KC);
		const bool in = row < N && k < I;
		gv[j] = in ? glIn(gate, row * I + k) : 0.0f;
		uv[j] = in ? glIn(up, row * I + k) : 0.0f;
	}
	GL_UNROLL for (int j = 0; j < GL_ALOADS; j++) {
		const int r = r0 + threadIdx.x / GL_KC + j * (GL_THREADS / GL_KC);
		av[j] = r < R && k < I ? A[(long long)r * I + k] : 0.0f;
	}
}

template <bool GELU, typename In>
__device__ __forceinline__ void gatedLoRAForward(unsigned short *__restrict__ act_bf, float *__restrict__ u,
                                                 const In *__restrict__ gate, const In *__restrict__ up,
                                                 const float *__restrict__ A, int N, int I, int R, float scale) {
	__shared__ float actS[GL_ROWS][GL_KC + 1];
	__shared__ __align__(16) float at[GL_KC][GL_ATLD];
	__shared__ float part[GL_PHASES][GL_ROWS][GL_RT + 1];
	const long long row0 = (long long)blockIdx.x * GL_ROWS;
	const int lane = threadIdx.x % GL_ROWS, phase = threadIdx.x / GL_ROWS;
	float gv[GL_LOADS], uv[GL_LOADS], av[GL_ALOADS];
	for (int r0 = 0; r0 < R; r0 += GL_RT) {
		float acc[GL_RT];
		GL_UNROLL for (int r = 0; r < GL_RT; r++) acc[r] = 0.0f;
		glLoad(gv, uv, av, gate, up, A, row0, 0, r0, N, I, R);
		for (int k0 = 0; k0 < I; k0 += GL_KC) {
			const int col = threadIdx.x % GL_KC;
			GL_UNROLL for (int j = 0; j < GL_LOADS; j++) {
				const int lr = threadIdx.x / GL_KC + j * (GL_THREADS / GL_KC);
				const long long row = row0 + lr;
				const float v = glValue<GELU>(gv[j], uv[j]);
				actS[lr][col] = v;
				if (r0 == 0 && row < N && k0 + col < I) act_bf[row * I + k0 + col] = bf16Round(v);
			}
			GL_UNROLL for (int j = 0; j < GL_ALOADS; j++) at[col][threadIdx.x / GL_KC + j * (GL_THREADS / GL_KC)] = av[j];
			__syncthreads();
			if (k0 + GL_KC < I) glLoad(gv, uv, av, gate, up, A, row0, k0 + GL_KC, r0, N, I, R);
			GL_UNROLL for (int i = 0; i < GL_KC / GL_PHASES; i++) {
				const int k = phase + i * GL_PHASES;
				const float x = actS[lane][k];
				GL_UNROLL for (int r = 0; r < GL_RT; r += 4) {
					const glF4 a = *(const glF4 *)&at[k][r];
					acc[r] = fmaf(x, a.x, acc[r]);
					acc[r + 1] = fmaf(x, a.y, acc[r + 1]);
					acc[r + 2] = fmaf(x, a.z, acc[r + 2]);
					acc[r + 3] = fmaf(x, a.w, acc[r + 3]);
				}
			}
			__syncthreads();
		}
		GL_UNROLL for (int r = 0; r < GL_RT; r++) part[phase][lane][r] = acc[r];
		__syncthreads();
		for (int o = threadIdx.x; o < GL_ROWS * GL_RT; o += GL_THREADS) {
			const int lr = o / GL_RT, r = o % GL_RT;
			const long long row = row0 + lr;
			float s = part[0][lr][r];
			for (int p = 1; p < GL_PHASES; p++) s += part[p][lr][r];
			if (row < N && r0 + r < R) u[row * R + r0 + r] = scale * s;
		}
		__syncthreads();
	}
}

extern "C" __global__ void gated_lora_forward_swiglu(unsigned short *__restrict__ act_bf, float *__restrict__ u,
                                                     const float *__restrict__ gate, const float *__restrict__ up,
                                                     const float *__restrict__ A, int N, int I, int R, float scale) {
	gatedLoRAForward<false>(act_bf, u, gate, up, A, N, I, R, scale);
}

extern "C" __global__ void gated_lora_forward_geglu(unsigned short *__restrict__ act_bf, float *__restrict__ u,
                                                    const float *__restrict__ gate, const float *__restrict__ up,
                                                    const float *__restrict__ A, int N, int I, int R, float scale) {
	gatedLoRAForward<true>(act_bf, u, gate, up, A, N, I, R, scale);
}

extern "C" __global__ void gated_lora_forward_swiglu_bf16in(unsigned short *__restrict__ act_bf, float *__restrict__ u,
                                                            const unsigned short *__restrict__ gate,
                                                            const unsigned short *__restrict__ up,
                                                            const float *__restrict__ A, int N, int I, int R, float scale) {
	gatedLoRAForward<false>(act_bf, u, gate, up, A, N, I, R, scale);
}

extern "C" __global__ void gated_lora_forward_geglu_bf16in(unsigned short *__restrict__ act_bf, float *__restrict__ u,
                                                           const unsigned short *__restrict__ gate,
                                                           const unsigned short *__restrict__ up,
                                                           const float *__restrict__ A, int N, int I, int R, float scale) {
	gatedLoRAForward<true>(act_bf, u, gate, up, A, N, I, R, scale);
}

// The gated unit's backward fused with the down projection's LoRA DA
// product (kernels.GatedLoRABackwarder, Ops.GatedLoRABackward): for gate,
// up [N, I] float32, dact [N, I] (float32 dout, or its bfloat16 dout_bf,
// widened exactly), g [N, R] float32 (R ≤ GB_RT) and da [R, I] float32,
//
//	dgate_bf, dup_bf = the gradients rounded to bfloat16, the bits
//	                   swiglu_backward_set_bf16 (geglu_…) writes there
//	da              += round(g)ᵀ·round(act), float32 sums, act = a(gate)·up
//
// where the unfused backward writes act's rounding [N, I] for the DA
// product (a bf16 GEMM on the roundings of g and act) to read it back: on
// the 7B shape 0.62 GB a layer that this kernel does not move. The
// products of two bfloat16 values are exact in float32, as on the tensor
// cores; the sums run in this kernel's order: each thread adds its
// column's and ranks' terms row after row, from row 0 to N − 1, onto 0,
// and then onto da (as a GEMM's epilogue adds beta·C).
//
// Launch: grid ceil(I / GB_COLS), block GB_THREADS. A block owns GB_COLS
// columns of da and walks all N rows in tiles of GB_ROWS: each thread
// computes GB_ROWS·GB_COLS/GB_THREADS elements (a warp 32 consecutive
// columns of a row: coalesced), writes the two roundings and stores act's
// rounding in shared memory, beside g's rounded tile; then thread (column
// t % GB_COLS, ranks 4·(t / GB_COLS) …) adds the tile's rows, while the
// next tile's loads are in flight. No block writes another's columns:
// deterministic without atomics. Not run on a GPU yet.
#define GB_COLS 64
#define GB_ROWS 16
#define GB_THREADS 256
#define GB_RT 16                                      // ranks (R ≤ GB_RT)
#define GB_LOADS (GB_ROWS * GB_COLS / GB_THREADS)     // elements a thread takes a tile
#define GB_RANKS (GB_RT * GB_COLS / GB_THREADS)       // ranks a thread sums
static_assert(GB_RANKS == 4, "gatedLoRABackward sums 4 ranks a thread (one 16-byte load of g's tile)");

// gbLoad loads tile n0's gate, up and dout values of this thread (element
// e = threadIdx.x + j·GB_THREADS: row n0 + e / GB_COLS, column c0 +
// e % GB_COLS), zero out of range, and its g value (row n0 + t / GB_RT,
// rank t % GB_RT).
template <typename In>
__device__ __forceinline__ void gbLoad(float *gv, float *uv, float *dv, float &gr, const In *__restrict__ gate,
                                       const In *__restrict__ up, const float *__restrict__ dout,
                                       const unsigned short *__restrict__ dout_bf, const float *__restrict__ g,
                                       long long n0, int c0, int N, int I, int R) {
	const int c = c0 + threadIdx.x % GB_COLS;
	GL_UNROLL for (int j = 0; j < GB_LOADS; j++) {
		const long long n = n0 + threadIdx.x / GB_COLS + j * (GB_THREADS / GB_COLS);
		const bool in = n < N && c < I;
		const long long i = n * I + c;
		gv[j] = in ? glIn(gate, i) : 0.0f;
		uv[j] = in ? glIn(up, i) : 0.0f;
		dv[j] = !in ? 0.0f : dout_bf != nullptr ? bf16Widen(dout_bf[i]) : dout[i];
	}
	const long long n = n0 + threadIdx.x / GB_RT;
	const int r = threadIdx.x % GB_RT;
	gr = n < N && r < R ? g[n * R + r] : 0.0f;
}

template <bool GELU, typename In>
__device__ __forceinline__ void gatedLoRABackward(unsigned short *__restrict__ dgate_bf, unsigned short *__restrict__ dup_bf,
                                                  float *__restrict__ da, const float *__restrict__ g,
                                                  const float *__restrict__ dout, const unsigned short *__restrict__ dout_bf,
                                                  const In *__restrict__ gate, const In *__restrict__ up, int N, int I,
                                                  int R) {
	__shared__ float actS[GB_ROWS][GB_COLS];
	__shared__ __align__(16) float gS[GB_ROWS][GB_RT];
	const int c0 = blockIdx.x * GB_COLS, col = threadIdx.x % GB_COLS, rg = threadIdx.x / GB_COLS;
	float gv[GB_LOADS], uv[GB_LOADS], dv[GB_LOADS], gr;
	float acc[GB_RANKS];
	GL_UNROLL for (int i = 0; i < GB_RANKS; i++) acc[i] = 0.0f;
	gbLoad(gv, uv, dv, gr, gate, up, dout, dout_bf, g, 0, c0, N, I, R);
	for (long long n0 = 0; n0 < N; n0 += GB_ROWS) {
		GL_UNROLL for (int j = 0; j < GB_LOADS; j++) {
			const int lr = threadIdx.x / GB_COLS + j * (GB_THREADS / GB_COLS);
			const long long n = n0 + lr;
			float dg, du, a;
			if (GELU) {
				gegluGrads(gv[j], uv[j], dv[j], dg, du, a);
			} else {
				swigluGrads(gv[j], uv[j], dv[j], dg, du, a);
			}
			if (n < N && c0 + col < I) {
				dgate_bf[n * I + c0 + col] = bf16Round(dg);
				dup_bf[n * I + c0 + col] = bf16Round(du);
			}
			actS[lr][col] = bf16Widen(bf16Round(a));
		}
		gS[threadIdx.x / GB_RT][threadIdx.x % GB_RT] = bf16Widen(bf16Round(gr));
		__syncthreads();
		if (n0 + GB_ROWS < N) gbLoad(gv, uv, dv, gr, gate, up, dout, dout_bf, g, n0 + GB_ROWS, c0, N, I, R);
		GL_UNROLL for (int lr = 0; lr < GB_ROWS; lr++) {
			const float x = actS[lr][col];
			const glF4 w = *(const glF4 *)&gS[lr][rg * GB_RANKS];
			acc[0] = fmaf(x, w.x, acc[0]);
			acc[1] = fmaf(x, w.y, acc[1]);
			acc[2] = fmaf(x, w.z, acc[2]);
			acc[3] = fmaf(x, w.w, acc[3]);
		}
		__syncthreads();
	}
	GL_UNROLL for (int i = 0; i < GB_RANKS; i++) {
		const int r = rg * GB_RANKS + i;
		if (r < R && c0 + col < I) da[(long long)r * I + c0 + col] += acc[i];
	}
}

extern "C" __global__ void gated_lora_backward_swiglu(unsigned short *__restrict__ dgate_bf, unsigned short *__restrict__ dup_bf,
                                                      float *__restrict__ da, const float *__restrict__ g,
                                                      const float *__restrict__ dout,
                                                      const unsigned short *__restrict__ dout_bf,
                                                      const float *__restrict__ gate, const float *__restrict__ up, int N,
                                                      int I, int R) {
	gatedLoRABackward<false>(dgate_bf, dup_bf, da, g, dout, dout_bf, gate, up, N, I, R);
}

extern "C" __global__ void gated_lora_backward_geglu(unsigned short *__restrict__ dgate_bf, unsigned short *__restrict__ dup_bf,
                                                     float *__restrict__ da, const float *__restrict__ g,
                                                     const float *__restrict__ dout,
                                                     const unsigned short *__restrict__ dout_bf,
                                                     const float *__restrict__ gate, const float *__restrict__ up, int N,
                                                     int I, int R) {
	gatedLoRABackward<true>(dgate_bf, dup_bf, da, g, dout, dout_bf, gate, up, N, I, R);
}

extern "C" __global__ void gated_lora_backward_swiglu_bf16in(unsigned short *__restrict__ dgate_bf,
                                                             unsigned short *__restrict__ dup_bf, float *__restrict__ da,
                                                             const float *__restrict__ g, const float *__restrict__ dout,
                                                             const unsigned short *__restrict__ dout_bf,
                                                             const unsigned short *__restrict__ gate,
                                                             const unsigned short *__restrict__ up, int N, int I, int R) {
	gatedLoRABackward<false>(dgate_bf, dup_bf, da, g, dout, dout_bf, gate, up, N, I, R);
}

extern "C" __global__ void gated_lora_backward_geglu_bf16in(unsigned short *__restrict__ dgate_bf,
                                                            unsigned short *__restrict__ dup_bf, float *__restrict__ da,
                                                            const float *__restrict__ g, const float *__restrict__ dout,
                                                            const unsigned short *__restrict__ dout_bf,
                                                            const unsigned short *__restrict__ gate,
                                                            const unsigned short *__restrict__ up, int N, int I, int R) {
	gatedLoRABackward<true>(dgate_bf, dup_bf, da, g, dout, dout_bf, gate, up, N, I, R);
}
