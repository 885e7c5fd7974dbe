package kernels

import "fmt"

// Need panics when a buffer is shorter than its shape requires; backends call
// it before touching memory so a wrong size names the op and the buffer
// instead of corrupting memory or failing deep in a loop.
func Need(op, name string, have, want int) {
	if want < 0 {
		panic(fmt.Sprintf("kernels.%s: negative size for %s (%d)", op, name, want))
	}
	if have < want {
		panic(fmt.Sprintf("kernels.%s: %s has %d elements, shape needs %d", op, name, have, want))
	}
}

// NeedSizes panics when any size is negative.
func NeedSizes(op string, sizes ...int) {
	for _, s := range sizes {
		if s < 0 {
			panic(fmt.Sprintf("kernels.%s: negative size %d", op, s))
		}
	}
}

// NeedHeads panics unless H, KVH > 0 and KVH divides H.
func NeedHeads(op string, H, KVH int) {
	if H <= 0 || KVH <= 0 || H%KVH != 0 {
		panic(fmt.Sprintf("kernels.%s: %d query heads not a multiple of %d kv heads", op, H, KVH))
	}
}

// NeedSeqOff panics unless seqOff starts at 0, never decreases and ends at N.
func NeedSeqOff(op string, seqOff []int32, N int) {
	if len(seqOff) == 0 || seqOff[0] != 0 || int(seqOff[len(seqOff)-1]) != N {
		panic(fmt.Sprintf("kernels.%s: seqOff must run from 0 to N=%d, got %v", op, N, seqOff))
	}
	for s := 1; s < len(seqOff); s++ {
		if seqOff[s] < seqOff[s-1] {
			panic(fmt.Sprintf("kernels.%s: seqOff decreases at %d: %v", op, s, seqOff))
		}
	}
}

// NeedIDs panics unless every id is in [lo, V).
func NeedIDs(op string, ids []int32, lo, V int) {
	for n, id := range ids {
		if int(id) < lo || int(id) >= V {
			panic(fmt.Sprintf("kernels.%s: id %d at row %d outside [%d, %d)", op, id, n, lo, V))
		}
	}
}

// NeedWindow panics unless a sliding window W holds at least one key.
func NeedWindow(op string, W int) {
	if W < 1 {
		panic(fmt.Sprintf("kernels.%s: window W must be at least 1", op))
	}
}

// NeedGatedForward checks a gated unit's forward (SwiGLU, GeGLU): out, gate
// and up each hold n values.
func NeedGatedForward(op string, out, gate, up []float32, n int) {
	NeedSizes(op, n)
	Need(op, "out", len(out), n)
	Need(op, "gate", len(gate), n)
	Need(op, "up", len(up), n)
}

// NeedGatedBackward checks a gated unit's backward: every buffer holds n
// values.
func NeedGatedBackward(op string, dgate, dup, dout, gate, up []float32, n int) {
	NeedSizes(op, n)
	Need(op, "dgate", len(dgate), n)
	Need(op, "dup", len(dup), n)
	Need(op, "dout", len(dout), n)
	Need(op, "gate", len(gate), n)
	Need(op, "up", len(up), n)
}

// NeedAttentionForward checks the sizes and buffers of AttentionForward
// (and of its windowed form, which also calls NeedWindow).
func NeedAttentionForward(op string, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int) {
	NeedSizes(op, N, D)
	NeedHeads(op, H, KVH)
	NeedSeqOff(op, seqOff, N)
	Need(op, "out", len(out), N*H*D)
	Need(op, "lse", len(lse), N*H)
	Need(op, "q", len(q), N*H*D)
	Need(op, "k", len(k), N*KVH*D)
	Need(op, "v", len(v), N*KVH*D)
}

// NeedAttentionBackward checks the sizes and buffers of AttentionBackward:
// NeedAttentionForward's, and the gradients dq, dk, dv and dout.
func NeedAttentionBackward(op string, dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, N, H, KVH, D int) {
	NeedAttentionForward(op, out, lse, q, k, v, seqOff, N, H, KVH, D)
	Need(op, "dq", len(dq), N*H*D)
	Need(op, "dk", len(dk), N*KVH*D)
	Need(op, "dv", len(dv), N*KVH*D)
	Need(op, "dout", len(dout), N*H*D)
}

// NeedAttentionDecode checks the sizes and buffers of AttentionDecode:
// out and q [Tq,H,D], the caches [Tk,KVH,D], no more new tokens than
// cache rows.
func NeedAttentionDecode(op string, out, q, kCache, vCache []float32, Tq, Tk, H, KVH, D int) {
	NeedSizes(op, Tq, Tk, D)
	NeedHeads(op, H, KVH)
	if Tq > Tk {
		panic("kernels." + op + ": more new tokens than cache rows")
	}
	Need(op, "out", len(out), Tq*H*D)
	Need(op, "q", len(q), Tq*H*D)
	Need(op, "kCache", len(kCache), Tk*KVH*D)
	Need(op, "vCache", len(vCache), Tk*KVH*D)
}

// NeedAttentionDecodeBatch checks the sizes and buffers of
// AttentionDecodeBatch and returns each sequence's cache rows Tk_s: one
// cache per sequence, each a whole number of [KVH, D] rows, the same for
// keys and values, at least the sequence's new tokens; W ≥ 0.
func NeedAttentionDecodeBatch(op string, out, q, k, v []float32, kCache, vCache [][]float32, seqOff []int32, N, H, KVH, D, W int) []int {
	NeedSizes(op, N, D)
	NeedHeads(op, H, KVH)
	NeedSeqOff(op, seqOff, N)
	if W < 0 {
		panic(fmt.Sprintf("kernels.%s: window W = %d: want 0 (none) or at least 1", op, W))
	}
	Need(op, "out", len(out), N*H*D)
	Need(op, "q", len(q), N*H*D)
	Need(op, "k", len(k), N*KVH*D)
	Need(op, "v", len(v), N*KVH*D)
	S := len(seqOff) - 1
	if len(kCache) != S || len(vCache) != S {
		panic(fmt.Sprintf("kernels.%s: %d key and %d value caches for %d sequences", op, len(kCache), len(vCache), S))
	}
	kvd := KVH * D
	tk := make([]int, S)
	for s := range S {
		n, tq := len(kCache[s]), int(seqOff[s+1]-seqOff[s])
		switch {
		case len(vCache[s]) != n:
			panic(fmt.Sprintf("kernels.%s: sequence %d: key cache of %d values, value cache of %d", op, s, n, len(vCache[s])))
		case kvd > 0 && n%kvd != 0:
			panic(fmt.Sprintf("kernels.%s: sequence %d: cache of %d values is not whole rows of KVH·D = %d", op, s, n, kvd))
		}
		if kvd > 0 {
			tk[s] = n / kvd
		}
		if tk[s] < tq && D > 0 {
			panic(fmt.Sprintf("kernels.%s: sequence %d: %d new tokens over a cache of %d rows", op, s, tq, tk[s]))
		}
	}
	return tk
}

// NeedLogprobForward checks the sizes and buffers of LogprobForward and its
// bfloat16 variant, whose weight holds weightLen values: expect may be nil,
// targets lie in [−1, V).
func NeedLogprobForward(op string, logprob, entropy, lse, expect, hidden []float32, weightLen int, targets []int32, N, C, V int) {
	NeedSizes(op, N, C, V)
	Need(op, "logprob", len(logprob), N)
	Need(op, "entropy", len(entropy), N)
	Need(op, "lse", len(lse), N)
	if expect != nil {
		Need(op, "expect", len(expect), N*C)
	}
	Need(op, "hidden", len(hidden), N*C)
	Need(op, "weight", weightLen, V*C)
	Need(op, "targets", len(targets), N)
	NeedIDs(op, targets[:N], -1, V)
}

// NeedRMSNorm checks the sizes and buffers of RMSNormForward: out and inp
// [N,C], rstd [N], weight [C].
func NeedRMSNorm(op string, out, rstd, inp, weight []float32, N, C int) {
	NeedSizes(op, N, C)
	Need(op, "out", len(out), N*C)
	Need(op, "rstd", len(rstd), N)
	Need(op, "inp", len(inp), N*C)
	Need(op, "weight", len(weight), C)
}

// NeedRMSNormBackward checks the sizes and buffers of RMSNormBackward:
// dinp, dout and inp [N,C], rstd [N], weight and dweight (when given) [C].
func NeedRMSNormBackward(op string, dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	NeedSizes(op, N, C)
	Need(op, "dinp", len(dinp), N*C)
	Need(op, "dout", len(dout), N*C)
	Need(op, "rstd", len(rstd), N)
	Need(op, "inp", len(inp), N*C)
	Need(op, "weight", len(weight), C)
	if dweight != nil {
		Need(op, "dweight", len(dweight), C)
	}
}

// NeedRoPE checks the sizes and buffers of RoPEForward (out, inp) and
// its backwards (dinp, dout, named so where backward): the rotated dims
// 2·len(invFreq) within the head dim D, pos one per token. It returns the
// two buffers' names, for the caller's own messages.
func NeedRoPE(op string, backward bool, out, inp []float32, pos []int32, invFreq []float32, N, H, D int) (names [2]string) {
	NeedSizes(op, N, H, D)
	if 2*len(invFreq) > D {
		panic("kernels." + op + ": rotary dims 2·len(invFreq) exceed head dim")
	}
	names = [2]string{"out", "inp"}
	if backward {
		names = [2]string{"dinp", "dout"}
	}
	Need(op, names[0], len(out), N*H*D)
	Need(op, names[1], len(inp), N*H*D)
	Need(op, "pos", len(pos), N)
	return names
}

// NeedAdamW checks the sizes and buffers of AdamW: param, grad and both
// moments of n values, step from 1.
func NeedAdamW(op string, param, grad, m, v []float32, n, step int) {
	NeedSizes(op, n)
	if step < 1 {
		panic("kernels." + op + ": step must be ≥ 1")
	}
	Need(op, "param", len(param), n)
	Need(op, "grad", len(grad), n)
	Need(op, "m", len(m), n)
	Need(op, "v", len(v), n)
}

// NeedEmbedding checks the sizes and buffers of EmbeddingForward and its
// bfloat16 variant, whose table holds tableLen values: ids lie in [0, V).
func NeedEmbedding(op string, out []float32, ids []int32, tableLen, N, C, V int) {
	NeedSizes(op, N, C, V)
	Need(op, "out", len(out), N*C)
	Need(op, "ids", len(ids), N)
	Need(op, "table", tableLen, V*C)
	NeedIDs(op, ids[:N], 0, V)
}

// NeedLogprobBackwardExpect checks the sizes and buffers of
// LogprobBackwardExpect and its bfloat16 variant, whose weight holds
// weightLen values: targets lie in [−1, V).
func NeedLogprobBackwardExpect(op string, dhidden, dlogprob, expect []float32, weightLen int, targets []int32, N, C, V int) {
	NeedSizes(op, N, C, V)
	Need(op, "dhidden", len(dhidden), N*C)
	Need(op, "dlogprob", len(dlogprob), N)
	Need(op, "expect", len(expect), N*C)
	Need(op, "weight", weightLen, V*C)
	Need(op, "targets", len(targets), N)
	NeedIDs(op, targets[:N], -1, V)
}

// NeedLogprobBackward checks the sizes and buffers of LogprobBackward and
// its bfloat16 variant, whose weight holds weightLen values: dweight,
// dlogprob and dentropy may be nil, targets lie in [−1, V).
func NeedLogprobBackward(op string, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden []float32, weightLen int, targets []int32, N, C, V int) {
	NeedSizes(op, N, C, V)
	Need(op, "dhidden", len(dhidden), N*C)
	if dweight != nil {
		Need(op, "dweight", len(dweight), V*C)
	}
	if dlogprob != nil {
		Need(op, "dlogprob", len(dlogprob), N)
	}
	if dentropy != nil {
		Need(op, "dentropy", len(dentropy), N)
	}
	Need(op, "lse", len(lse), N)
	Need(op, "entropy", len(entropy), N)
	Need(op, "hidden", len(hidden), N*C)
	Need(op, "weight", weightLen, V*C)
	Need(op, "targets", len(targets), N)
	NeedIDs(op, targets[:N], -1, V)
}
