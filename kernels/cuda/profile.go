package cuda

import (
	"sort"
	"strconv"
	"time"
)

// OpTime is what one kind of op cost while a profile ran: how many calls,
// and their wall time on the host from the op's entry to the device having
// finished it (every op ends synchronized, so that is the op's whole cost:
// argument checks, int32 edge copies, launches and the kernels themselves),
// and the floating-point operations its products counted over those calls
// (Flops; 0 for an op without products; see StartProfile for what counts).
type OpTime struct {
	Op    string
	Calls int
	Total time.Duration
	Flops int64
}

// opProfile accumulates OpTime by op name; nil when no profile runs.
type opProfile map[string]*OpTime

// StartProfile starts (or restarts, from zero) timing every op by name
// (kernels.Backend's method; the training attention ops with the kernels
// they ran: "AttentionBackward (tc2)", "(tc3)", "(tc3k64)", "(gemm)", "(tc1)" or
// "(f32)"). It
// is for finding where a step's time goes on a device (modelbench's
// --profile-ops); a profile costs one clock read, the op's count of its
// products (a few integer products, a short string for the shape) and a
// map update per op, and nothing runs for it when no profile does.
//
// The ops with products split their name by shape and count their FLOPs
// (OpTime.Flops: 2 per multiply-add, from the op's arguments, not from
// what cuBLAS was asked; the bias adds, roundings and softmaxes around
// the products are not counted):
//
//   - Matmul "Matmul M×N×K" (c [M,N] = op(a) [M,K] · op(b) [K,N], row-major
//     as the op sees it), 2·M·N·K, and MatmulBF16 and MatmulBF16To the
//     same under their names; MatmulBatched "MatmulBatched B×M×N×K",
//     2·B·M·N·K.
//   - The linear ops by their weight's shape [OC,C] as "wOC×C", e.g.
//     "LinearForwardBF16 w18944×3584" (so q, k, v, o, gate, up and down
//     stand apart; the token count N is not in the name): LinearForward,
//     LinearForwardBF16, LinearBackwardBF16, LinearBackwardBF16Rounded and
//     LinearBackwardBF16To 2·N·C·OC; LinearBackward 2·N·C·OC for each of dinp and dweight it
//     computes. LinearForwardBF16Many "wOC1+OC2+…×C", Σ 2·N·C·OCᵢ, and
//     LinearForwardBF16ManyAdd and LinearForwardBF16Rounded the same (the
//     former's products' adds onto their outputs are not counted).
//   - LoRABackwardMany by its projections' shapes and rank, "wOut1+…×In
//     rR": Σ 4·N·R·Outᵢ (dB and g) + 2·N·k·R·In (dA) + the same again
//     for dx when asked for (k projections).
//   - The logprob ops (one lm_head: not split) count their products on
//     the [V,C] weight, 2·N·C·V each: the forward's logits (and with
//     expect a second); the backward's logits recomputed and dhidden (and
//     LogprobBackward's dweight when asked for). LogprobBackwardExpect has
//     none.
//   - The training attention ops (named by their kernels, not split)
//     count the conventional causal FLOPs, not what their kernels execute
//     (the GEMM attention computes whole blocks past the diagonal, the f32
//     and tensor-core kernels skip them): QKᵀ and PV, 4·T²·D·H for a
//     sequence of T tokens (H query heads of dim D), halved for the causal
//     mask, so 2·T²·D·H forward; the backward 2.5× the forward,
//     5·T²·D·H. With a window W < T the band's share instead of the
//     triangle: T² − (T−W)² in place of T².
//
// Decode's attention and every other op count none. Not run on a GPU yet.
func (b *Backend) StartProfile() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prof = opProfile{}
}

// StopProfile ends the profile and returns its figures, the costliest op
// first (nil when none ran).
func (b *Backend) StopProfile() []OpTime {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.prof
	b.prof = nil
	out := make([]OpTime, 0, len(p))
	for _, t := range p {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Op < out[j].Op
	})
	return out
}

// record adds one call of op that started at t0 and counted flops; b.mu
// is held.
func (p opProfile) record(op string, t0 time.Time, flops int64) {
	if p == nil {
		return
	}
	t := p[op]
	if t == nil {
		t = &OpTime{Op: op}
		p[op] = t
	}
	t.Calls++
	t.Total += time.Since(t0)
	t.Flops += flops
}

// opCost is what one call of an op does in products, for the profile:
// flops (StartProfile's count) and shape, the text its name is split by
// ("" for none). The ops compute it from their arguments, in one function
// each below, only while a profile runs.
type opCost struct {
	flops int64
	shape string
}

// dims joins the sizes by ×, after prefix.
func dims(prefix string, n ...int) string {
	s := make([]byte, 0, 32)
	s = append(s, prefix...)
	for i, v := range n {
		if i > 0 {
			s = append(s, "×"...)
		}
		s = strconv.AppendInt(s, int64(v), 10)
	}
	return string(s)
}

// matmulCost is Matmul's: c [M,N] = op(a) [M,K] · op(b) [K,N].
func matmulCost(M, N, K int) opCost {
	return opCost{2 * int64(M) * int64(N) * int64(K), dims("", M, N, K)}
}

// matmulBatchedCost is MatmulBatched's: batch products of matmulCost's.
func matmulBatchedCost(batch, M, N, K int) opCost {
	return opCost{2 * int64(batch) * int64(M) * int64(N) * int64(K), dims("", batch, M, N, K)}
}

// linearCost is a linear op's with products GEMMs of the tokens [N,C] or
// [N,OC] by its weight [OC,C] (LinearBackward's dinp and dweight: 2).
func linearCost(products, N, C, OC int) opCost {
	return opCost{2 * int64(products) * int64(N) * int64(C) * int64(OC), dims("w", OC, C)}
}

// linearManyCost is LinearForwardBF16Many's and LinearForwardBF16ManyAdd's:
// one linearCost a weight [OCs[i],C], named by the weights stacked,
// "wOC1+OC2+…×C".
func linearManyCost(N, C int, OCs []int) opCost {
	var f int64
	s := []byte{'w'}
	for i, oc := range OCs {
		f += 2 * int64(N) * int64(C) * int64(oc)
		if i > 0 {
			s = append(s, '+')
		}
		s = strconv.AppendInt(s, int64(oc), 10)
	}
	return opCost{f, string(s) + dims("×", C)}
}

// loraManyCost is LoRABackwardMany's (planLoRABackwardMany's products):
// per projection dB [Out,R] += doutᵀ·u and g [N,R] = dout·B, then dA
// [k·R,In] = gᵀ·x and, withDx, dx [N,In] (+)= g·A.
func loraManyCost(N, In, R int, Outs []int, withDx bool) opCost {
	sum, name := loraOuts(Outs)
	products := int64(1)
	if withDx {
		products = 2
	}
	kR := int64(len(Outs)) * int64(R)
	f := 4*int64(N)*int64(R)*sum + products*2*int64(N)*kR*int64(In)
	return opCost{f, name + dims("×", In) + dims(" r", R)}
}

// loraOuts returns the sum of a LoRA op's output sizes Outs and the
// profile's name of them, w<Out>+<Out>….
func loraOuts(Outs []int) (sum int64, name string) {
	s := []byte{'w'}
	for i, o := range Outs {
		sum += int64(o)
		if i > 0 {
			s = append(s, '+')
		}
		s = strconv.AppendInt(s, int64(o), 10)
	}
	return sum, string(s)
}

// logprobCost is a logprob op's: products GEMMs of hidden [N,C] (or the
// logits' gradient [N,V]) by the lm_head weight [V,C]; not split by shape.
func logprobCost(products, N, C, V int) opCost {
	return opCost{2 * int64(products) * int64(N) * int64(C) * int64(V), ""}
}

// attnCost is a training attention op's conventional count (StartProfile):
// per sequence of T = seqOff[s+1]−seqOff[s] tokens, 2·q·D·H forward and
// 5·q·D·H backward, q = T² − max(T−W, 0)² (W ≥ T: T², the causal half of
// 4·T²·D·H). Not split by shape: the op keeps its kernels' name.
func attnCost(seqOff []int32, H, D, W int, backward bool) opCost {
	var q int64
	for s := 0; s+1 < len(seqOff); s++ {
		T := int64(seqOff[s+1] - seqOff[s])
		q += T * T
		if out := T - int64(W); out > 0 {
			q -= out * out
		}
	}
	per := int64(2)
	if backward {
		per = 5
	}
	return opCost{per * q * int64(D) * int64(H), ""}
}

// linearBackwardProducts is how many products LinearBackward runs: dinp's
// and dweight's, each when asked for (dbias is a column sum, no product).
func linearBackwardProducts(dinp, dweight []float32) int {
	n := 0
	if dinp != nil {
		n++
	}
	if dweight != nil {
		n++
	}
	return n
}

// logprobForwardProducts is how many products on the lm_head a logprob
// forward runs: the logits', and expect's when asked for.
func logprobForwardProducts(expect []float32) int {
	if expect != nil {
		return 2
	}
	return 1
}

// logprobBackwardProducts is LogprobBackward's: the logits recomputed,
// dhidden, and dweight when asked for (LogprobBackwardBF16: 2, no dweight).
func logprobBackwardProducts(dweight []float32) int {
	if dweight != nil {
		return 3
	}
	return 2
}
