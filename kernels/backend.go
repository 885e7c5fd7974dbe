package kernels

// Backend is the set of operations the transformer needs. Implementations:
// kernels/ref (plain loops, the oracle), kernels/cpu (OpenBLAS via cgo, pure Go
// without cgo), and kernels/kerneltest checks any implementation against ref.
//
// A Backend value is safe for concurrent use by several goroutines. Close
// releases its workers; ops must not be called after Close.
type Backend interface {
	// Name identifies the backend in logs and benchmarks ("ref", "cpu/openblas", "cpu/gonum").
	Name() string
	// Close releases worker goroutines (and, later, device memory).
	Close() error

	// ---- matrix products ------------------------------------------------

	// Matmul computes c = op(a)·op(b) + beta·c for dense row-major matrices.
	//
	//	c [M, N]
	//	a [M, K], or [K, M] when transA (op(a) = aᵀ)
	//	b [K, N], or [N, K] when transB (op(b) = bᵀ)
	//
	// beta is 0 (overwrite; c's old contents are ignored, even NaN) or any
	// other value to scale and accumulate.
	Matmul(c, a, b []float32, M, N, K int, transA, transB bool, beta float32)

	// MatmulBatched is Matmul on batch independent products stored one after
	// the other: operand i starts at i·M·N in c, i·M·K in a, i·K·N in b.
	MatmulBatched(c, a, b []float32, batch, M, N, K int, transA, transB bool, beta float32)

	// LinearForward computes out = inp·weightᵀ + bias (the nn.Linear layer).
	//
	//	out    [N, OC]
	//	inp    [N, C]
	//	weight [OC, C]
	//	bias   [OC] or nil
	LinearForward(out, inp, weight, bias []float32, N, C, OC int)

	// LinearForwardBF16 is LinearForward with weight stored as bfloat16 bits
	// (weight [OC, C] uint16), converted inside the kernel: the memory-bound
	// decode path reads half the bytes.
	LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int)

	// LinearBackward accumulates the gradients of LinearForward:
	//
	//	dinp    [N, C]  += dout·weight         (nil: skipped)
	//	dweight [OC, C] += doutᵀ·inp           (nil: skipped, frozen weight)
	//	dbias   [OC]    += Σ_n dout[n, :]      (nil: skipped)
	//	dout    [N, OC]
	//	inp     [N, C]
	//	weight  [OC, C]
	LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int)

	// LinearBackwardBF16 accumulates dinp [N, C] += dout [N, OC] · weight
	// [OC, C] with a frozen bfloat16 weight (LoRA training over a bf16 base).
	LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int)

	// ---- normalisation, position, activation ----------------------------

	// RMSNormForward: rstd[n] = 1/sqrt(mean_c(inp[n,c]²) + eps),
	// out[n,c] = inp[n,c]·rstd[n]·weight[c].
	//
	//	out    [N, C]
	//	rstd   [N]    saved for backward
	//	inp    [N, C]
	//	weight [C]
	//
	// Per-head norms (Qwen3 q_norm/k_norm) use N = tokens·heads, C = D.
	RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32)

	// RMSNormBackward accumulates, with x̂ = inp·rstd and g = dout·weight:
	//
	//	dinp    [N, C] += rstd·(g − x̂·mean_c(g·x̂))
	//	dweight [C]    += Σ_n dout·x̂          (nil: skipped)
	RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int)

	// RoPEForward rotates the first R = 2·len(invFreq) dims of every head by
	// the angle pos[n]·invFreq[i], in Hugging Face's rotate_half convention
	// (pairs are (i, i+R/2), not interleaved): for i < R/2, θ = pos[n]·invFreq[i]
	// computed in float32,
	//
	//	out[i]     = x[i]·cos θ − x[i+R/2]·sin θ
	//	out[i+R/2] = x[i+R/2]·cos θ + x[i]·sin θ
	//
	// and copies dims R..D−1 unchanged (partial rotary). out may equal inp.
	//
	//	out, inp [N, H, D]
	//	pos      [N]       position of each token in its sequence (packed
	//	                   sequences restart at 0; decode passes cache offsets)
	//	invFreq  [R/2]     from RoPEInvFreq
	RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int)

	// RoPEBackward accumulates dinp [N, H, D] += Rᵀ·dout (rotation by −θ).
	RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int)

	// SwiGLUForward: out = silu(gate)·up, silu(x) = x·σ(x), elementwise over n values.
	SwiGLUForward(out, gate, up []float32, n int)

	// SwiGLUBackward accumulates
	//
	//	dgate += dout·up·σ(gate)·(1 + gate·(1 − σ(gate)))
	//	dup   += dout·silu(gate)
	SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int)

	// GeGLUForward: out = gelu(gate)·up, elementwise over n values, with
	// gelu(x) = x/2·(1 + tanh(√(2/π)·(x + 0.044715x³))) (the tanh
	// approximation: PyTorch's gelu(approximate="tanh"), Gemma's
	// "gelu_pytorch_tanh").
	GeGLUForward(out, gate, up []float32, n int)

	// GeGLUBackward accumulates, with t = tanh(√(2/π)·(gate + 0.044715gate³)):
	//
	//	dgate += dout·up·(½(1 + t) + ½gate·(1 − t²)·√(2/π)·(1 + 3·0.044715gate²))
	//	dup   += dout·gelu(gate)
	GeGLUBackward(dgate, dup, dout, gate, up []float32, n int)

	// ---- attention ------------------------------------------------------

	// AttentionForward is causal grouped-query attention over packed
	// sequences. Sequence s holds tokens seqOff[s] ≤ n < seqOff[s+1]; a token
	// attends to the tokens of its own sequence at or before it. Query head h
	// reads key/value head h / (H/KVH). With S_ij = scale·q_i·k_j:
	//
	//	lse[i,h] = log Σ_j exp(S_ij)           (saved for backward)
	//	out[i,h] = Σ_j exp(S_ij − lse[i,h])·v_j
	//
	//	out    [N, H, D]
	//	lse    [N, H]
	//	q      [N, H, D]
	//	k, v   [N, KVH, D]
	//	seqOff [S+1], seqOff[0] = 0, non-decreasing, seqOff[S] = N
	//
	// Padded batches (B×T with shorter sequences) pass the padding as its own
	// segment(s): its outputs are finite and meaningless; mask them in the loss.
	// scale is usually 1/sqrt(D).
	AttentionForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32)

	// AttentionBackward accumulates dq [N,H,D], dk and dv [N,KVH,D] given
	// dout [N,H,D] and the forward's out and lse, recomputing the scores:
	//
	//	P_ij = exp(S_ij − lse_i),  δ_i = dout_i·out_i
	//	dv_j += Σ_i P_ij·dout_i,  dS_ij = P_ij·(dout_i·v_j − δ_i)
	//	dq_i += scale·Σ_j dS_ij·k_j,  dk_j += scale·Σ_i dS_ij·q_i
	AttentionBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int, scale float32)

	// AttentionWindowForward is AttentionForward with a sliding window of W
	// keys (Gemma 3's local layers): query i of a sequence sees only the
	// keys j of its sequence with i − W < j ≤ i (positions within the
	// sequence), as transformers' mask kv_idx > q_idx − sliding_window.
	// W ≥ 1; with W no shorter than every sequence it equals AttentionForward.
	//
	//	out [N, H, D], lse [N, H], q [N, H, D], k, v [N, KVH, D], seqOff [S+1]
	AttentionWindowForward(out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32)

	// AttentionWindowBackward accumulates dq, dk, dv of AttentionWindowForward
	// (AttentionBackward's formulas, P_ij = 0 outside the window).
	AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D, W int, scale float32)

	// AttentionDecode lets Tq new tokens of ONE sequence attend to its KV
	// cache, which already holds their own keys and values at its end: query
	// i (0 ≤ i < Tq) sees cache rows 0 … Tk−Tq+i.
	//
	//	out            [Tq, H, D]
	//	q              [Tq, H, D]
	//	kCache, vCache [Tk, KVH, D] (only the first Tk rows are read)
	//
	// With Tq = Tk it equals AttentionForward on one sequence.
	AttentionDecode(out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int, scale float32)

	// AttentionDecodeBatch is one decode step of S sequences at once, each
	// with its own KV cache: it appends every sequence's new keys and values
	// to its cache, then lets its new queries attend to that cache. The new
	// tokens are packed: sequence s holds rows seqOff[s] ≤ n < seqOff[s+1]
	// (Tq_s of them) of q, k, v and out. Its cache kCache[s], vCache[s] is
	// [Tk_s, KVH, D], Tk_s = len(kCache[s])/(KVH·D) ≥ Tq_s rows (the same
	// for vCache[s]), whose last Tq_s rows receive the new ones:
	//
	//	kCache[s][Tk_s−Tq_s+t] = k[seqOff[s]+t],  vCache[s] likewise (t < Tq_s)
	//
	// and query t of sequence s, at cache row p = Tk_s−Tq_s+t, sees the rows
	// j ≤ p, or with a sliding window W > 0 only p−W < j ≤ p (AttentionDecode
	// on each sequence; with W, AttentionWindowForward's mask). W = 0: no
	// window.
	//
	//	out [N, H, D], q [N, H, D], k, v [N, KVH, D]
	//	seqOff [S+1], from 0 to N, non-decreasing; len(kCache) = len(vCache) = S
	//
	// The caches must not overlap each other or the other operands. A model
	// decoding many sequences makes one call a layer instead of S appends and
	// S decodes.
	AttentionDecodeBatch(out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int, scale float32)

	// ---- embedding ------------------------------------------------------

	// EmbeddingForward gathers out[n, :] = table[ids[n], :].
	//
	//	out   [N, C]
	//	ids   [N]   0 ≤ id < V
	//	table [V, C]
	EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int)
	// EmbeddingForwardBF16 is EmbeddingForward from a bfloat16 table [V, C].
	EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int)
	// EmbeddingBackward scatter-adds dtable[ids[n], :] += dout[n, :].
	EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int)

	// ---- softmax family over a full row --------------------------------

	// LogSoftmaxForward: out[n, j] = inp[n, j] − log Σ_k exp(inp[n, k]); out, inp [N, V].
	LogSoftmaxForward(out, inp []float32, N, V int)
	// LogSoftmaxBackward accumulates dinp[n, j] += dout[n, j] − p_j·Σ_k dout[n, k],
	// p = exp(out); dinp, dout, out [N, V].
	LogSoftmaxBackward(dinp, dout, out []float32, N, V int)
	// EntropyForward: ent[n] = −Σ_j p_j·log p_j, p = softmax(inp[n, :]); ent [N], inp [N, V].
	EntropyForward(ent, inp []float32, N, V int)
	// EntropyBackward accumulates dinp[n, j] += −dent[n]·p_j·(log p_j + ent[n]).
	EntropyBackward(dinp, dent, inp []float32, N, V int)

	// ---- fused lm_head + log-softmax, chunked over the vocabulary ------

	// LogprobForward computes, for each row, the logits z = hidden[n]·weightᵀ
	// chunk columns at a time (never a [N, V] tensor), with an online
	// logsumexp:
	//
	//	lse[n]     = log Σ_j exp(z_j)
	//	logprob[n] = z_{targets[n]} − lse[n]    (0 when targets[n] < 0: ignored)
	//	entropy[n] = lse[n] − Σ_j softmax(z)_j·z_j
	//
	//	logprob, entropy, lse [N]
	//	hidden  [N, C]  (final-norm output; divide by the temperature first if
	//	                 sampling used one — logits are linear in hidden)
	//	weight  [V, C]  lm_head (or the tied embedding table)
	//	targets [N]     −1 ≤ t < V
	//	chunk   vocabulary columns per block; ≤ 0 picks the backend's default
	//
	// expect [N, C] may be nil. Otherwise it receives
	//
	//	expect[n] = Σ_j softmax(z)_j·weight[j]
	//
	// the lm_head row the model's distribution expects. The logprob's
	// gradient is then a row operation (LogprobBackwardExpect) instead of a
	// second pass over the vocabulary, for one more [N, chunk]·[chunk, C]
	// product per chunk here.
	LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int)
	// LogprobForwardBF16 is LogprobForward with a bfloat16 weight [V, C].
	LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int)

	// LogprobBackward recomputes the logits chunk by chunk and accumulates,
	// with p = softmax(z), H = entropy[n], t = targets[n]:
	//
	//	dz_j = dlogprob[n]·([j = t] − p_j) − dentropy[n]·p_j·(z_j − lse[n] + H)
	//	dhidden [N, C] += dz·weight
	//	dweight [V, C] += dzᵀ·hidden            (nil: skipped, frozen lm_head)
	//
	// dlogprob [N] and dentropy [N] may be nil (zero). Rows with t < 0 get no
	// logprob gradient.
	LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int)
	// LogprobBackwardBF16 is LogprobBackward (dhidden only) with a frozen bfloat16 weight.
	LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int)
	// LogprobBackwardExpect accumulates the logprob's gradient from the
	// forward's expect [N, C], with t = targets[n]:
	//
	//	dhidden[n] += dlogprob[n]·(weight[t] − expect[n])    (rows with t < 0: nothing)
	//
	// which is LogprobBackward's dhidden with dentropy and dweight nil
	// (Σ_j dz_j·weight[j] with dz_j = dlogprob·([j = t] − p_j)).
	LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int)
	// LogprobBackwardExpectBF16 is LogprobBackwardExpect with a bfloat16 weight [V, C].
	LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int)

	// ---- sampling rows: one row, on the calling goroutine ---------------
	//
	// These two are the host's: the sampler reads logits rows and keeps
	// its scratch in Go memory, so they take any slice, also on a backend
	// that is an Allocator (which runs them on the host).

	// RowMax returns the largest entry of x that is not NaN (−Inf when
	// there is none, x empty included): NaN entries are passed over
	// wherever they stand, as the sampler's rule for them (RowChooser)
	// needs. With ExpShift it is the softmax a sampler takes of each
	// logits row, many sequences at once from their own goroutines: these
	// two run on the caller's goroutine, never on the backend's workers.
	RowMax(x []float32) float32
	// ExpShift writes dst[i] = e^((x[i]−mu)·scale), the argument formed in
	// float32, for each i < len(x), and returns the sum of the values
	// written, accumulated in float64: the exponent pass of a softmax at
	// temperature 1/scale. With mu the maximum of x and scale > 0 every
	// argument is ≤ 0, the range it is accurate for (within a few ulp);
	// arguments below −87, −Inf among them, give 0 (a NaN argument gives
	// NaN or 0, as the backend's exponential does). dst may be x; it must
	// hold len(x) values, or be nil when only the sum is wanted (a
	// log-sum-exp).
	ExpShift(dst, x []float32, mu, scale float32) float64

	// ---- optimizer and elementwise -------------------------------------

	// AdamW takes one step on n parameters, as torch.optim.AdamW (decoupled
	// weight decay, bias correction); step is the 1-based step number after
	// this update:
	//
	//	param *= 1 − lr·wd
	//	m = β1·m + (1−β1)·grad;  v = β2·v + (1−β2)·grad²
	//	param −= lr/(1−β1^step) · m / (sqrt(v)/sqrt(1−β2^step) + eps)
	//
	//	param, grad, m, v [n]; m and v start at zero.
	AdamW(param, grad, m, v []float32, n, step int, h AdamWParams)

	// Add: out = a + b over n values (out may alias a or b).
	Add(out, a, b []float32, n int)
	// Scale: out = s·a over n values (out may alias a).
	Scale(out, a []float32, s float32, n int)
	// AXPY: out += s·a over n values.
	AXPY(out, a []float32, s float32, n int)
	// AddScalar: out = a + s over n values (out may alias a): Gemma's norm
	// weights 1 + w.
	AddScalar(out, a []float32, s float32, n int)
	// SumSquares returns Σ x[i]² over n values, each square and the sum in
	// float64: the squared L2 norm the optimizer clips the gradient by. It
	// is also the finiteness check of a buffer: a NaN or ±Inf among the
	// values makes the result NaN or +Inf, while finite float32 values
	// cannot overflow a float64 sum. The order of the additions is the
	// backend's (results may differ in the last bits between backends) but
	// fixed for a given backend and n.
	SumSquares(x []float32, n int) float64

	// ---- copies ---------------------------------------------------------

	// Copy overwrites dst [n] with src [n]; the two must not overlap. The
	// model's activation copies (a residual's gradient, new keys and values
	// into the KV cache) go through it, so that they stay where the backend
	// keeps its buffers.
	Copy(dst, src []float32, n int)
	// Zero overwrites x [n] with zeros: the gradient buffers the backward
	// ops accumulate into are cleared with it. (A gather of whole rows, such
	// as each sequence's last hidden row, is EmbeddingForward with the rows
	// as the table.)
	Zero(x []float32, n int)
}

// AdamWParams are the hyperparameters of one AdamW step.
type AdamWParams struct {
	LR          float32 // learning rate
	Beta1       float32 // e.g. 0.9
	Beta2       float32 // e.g. 0.999
	Eps         float32 // e.g. 1e-8
	WeightDecay float32 // decoupled: param *= 1 − LR·WeightDecay
}

// DefaultAdamW returns torch.optim.AdamW's defaults for the given learning rate.
func DefaultAdamW(lr float32) AdamWParams {
	return AdamWParams{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
}

// DefaultLogprobChunk is the vocabulary block a backend uses when chunk ≤ 0.
const DefaultLogprobChunk = 4096
