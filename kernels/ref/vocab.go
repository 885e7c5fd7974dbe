package ref

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// EmbeddingForward gathers out [N,C] = table [V,C] rows ids [N].
func (Backend) EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int) {
	embedding("EmbeddingForward", out, ids, func(i int) float32 { return table[i] }, len(table), N, C, V)
}

// EmbeddingForwardBF16 gathers from a bfloat16 table [V,C].
func (Backend) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	embedding("EmbeddingForwardBF16", out, ids, func(i int) float32 { return kernels.F32(table[i]) }, len(table), N, C, V)
}

func embedding(op string, out []float32, ids []int32, table func(int) float32, nt, N, C, V int) {
	kernels.NeedEmbedding(op, out, ids, nt, N, C, V)
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			out[n*C+c] = table(int(ids[n])*C + c)
		}
	}
}

// EmbeddingBackward scatter-adds dout [N,C] into dtable [V,C].
func (Backend) EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int) {
	op := "EmbeddingBackward"
	kernels.NeedSizes(op, N, C, V)
	kernels.Need(op, "dtable", len(dtable), V*C)
	kernels.Need(op, "dout", len(dout), N*C)
	kernels.Need(op, "ids", len(ids), N)
	kernels.NeedIDs(op, ids[:N], 0, V)
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			dtable[int(ids[n])*C+c] += dout[n*C+c]
		}
	}
}

// logsumexp of one row, in float64.
func logsumexp(x []float32) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// LogSoftmaxForward: out [N,V] = inp − logsumexp(inp row).
func (Backend) LogSoftmaxForward(out, inp []float32, N, V int) {
	op := "LogSoftmaxForward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "out", len(out), N*V)
	kernels.Need(op, "inp", len(inp), N*V)
	for n := 0; n < N; n++ {
		l := logsumexp(inp[n*V : (n+1)*V])
		for j := 0; j < V; j++ {
			out[n*V+j] = float32(float64(inp[n*V+j]) - l)
		}
	}
}

// LogSoftmaxBackward accumulates dinp [N,V] from dout and out (log-probs) [N,V].
func (Backend) LogSoftmaxBackward(dinp, dout, out []float32, N, V int) {
	op := "LogSoftmaxBackward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "dinp", len(dinp), N*V)
	kernels.Need(op, "dout", len(dout), N*V)
	kernels.Need(op, "out", len(out), N*V)
	for n := 0; n < N; n++ {
		var s float64
		for j := 0; j < V; j++ {
			s += float64(dout[n*V+j])
		}
		for j := 0; j < V; j++ {
			dinp[n*V+j] += float32(float64(dout[n*V+j]) - math.Exp(float64(out[n*V+j]))*s)
		}
	}
}

// rowEntropy returns the entropy of softmax(x) and its logsumexp. A term
// with p = 0 (a masked, −Inf logit) adds nothing, 0·log 0 = 0: written out
// it would be 0·(−Inf) = NaN. A NaN logit still makes the entropy NaN.
func rowEntropy(x []float32) (ent, lse float64) {
	lse = logsumexp(x)
	for _, v := range x {
		lp := float64(v) - lse
		if p := math.Exp(lp); p != 0 {
			ent -= p * lp
		}
	}
	return ent, lse
}

// EntropyForward: ent [N] of softmax(inp [N,V]) rows.
func (Backend) EntropyForward(ent, inp []float32, N, V int) {
	op := "EntropyForward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "ent", len(ent), N)
	kernels.Need(op, "inp", len(inp), N*V)
	for n := 0; n < N; n++ {
		e, _ := rowEntropy(inp[n*V : (n+1)*V])
		ent[n] = float32(e)
	}
}

// EntropyBackward accumulates dinp [N,V] from dent [N].
func (Backend) EntropyBackward(dinp, dent, inp []float32, N, V int) {
	op := "EntropyBackward"
	kernels.NeedSizes(op, N, V)
	kernels.Need(op, "dinp", len(dinp), N*V)
	kernels.Need(op, "dent", len(dent), N)
	kernels.Need(op, "inp", len(inp), N*V)
	for n := 0; n < N; n++ {
		e, l := rowEntropy(inp[n*V : (n+1)*V])
		for j := 0; j < V; j++ {
			lp := float64(inp[n*V+j]) - l
			if p := math.Exp(lp); p != 0 { // a masked logit has no gradient (0·(−Inf) would be NaN)
				dinp[n*V+j] += float32(-float64(dent[n]) * p * (lp + e))
			}
		}
	}
}

// LogprobForward: the reference computes the full logits row (it is the
// oracle, memory is not its concern) and ignores chunk.
func (Backend) LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	logprobForward("LogprobForward", logprob, entropy, lse, expect, hidden, func(i int) float32 { return weight[i] }, len(weight), targets, N, C, V)
}

// LogprobForwardBF16 is LogprobForward with a bfloat16 weight [V,C].
func (Backend) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	logprobForward("LogprobForwardBF16", logprob, entropy, lse, expect, hidden, func(i int) float32 { return kernels.F32(weight[i]) }, len(weight), targets, N, C, V)
}

// logits computes z [V] = h [C] · weight [V,C]ᵀ in float64.
func logits(z []float64, h []float32, w func(int) float32, C int) {
	for j := range z {
		var s float64
		for c := 0; c < C; c++ {
			s += float64(h[c]) * float64(w(j*C+c))
		}
		z[j] = s
	}
}

func logprobForward(op string, logprob, entropy, lse, expect, hidden []float32, w func(int) float32, nw int, targets []int32, N, C, V int) {
	kernels.NeedLogprobForward(op, logprob, entropy, lse, expect, hidden, nw, targets, N, C, V)
	z := make([]float64, V) // one row of logits
	for n := 0; n < N; n++ {
		logits(z, hidden[n*C:(n+1)*C], w, C)
		m := math.Inf(-1)
		for _, v := range z {
			m = math.Max(m, v)
		}
		var s float64
		for _, v := range z {
			s += math.Exp(v - m)
		}
		l := m + math.Log(s)
		var pz float64 // Σ p_j z_j
		for _, v := range z {
			pz += math.Exp(v-l) * v
		}
		lse[n] = float32(l)
		entropy[n] = float32(l - pz)
		logprob[n] = 0
		if t := targets[n]; t >= 0 {
			logprob[n] = float32(z[t] - l)
		}
		if expect != nil {
			for c := 0; c < C; c++ {
				var e float64
				for j, v := range z {
					e += math.Exp(v-l) * float64(w(j*C+c))
				}
				expect[n*C+c] = float32(e)
			}
		}
	}
}

// LogprobBackward accumulates dhidden [N,C] and dweight [V,C] (may be nil).
func (Backend) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	logprobBackward("LogprobBackward", dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, func(i int) float32 { return weight[i] }, len(weight), targets, N, C, V)
}

// LogprobBackwardBF16 accumulates dhidden [N,C] through a frozen bfloat16 weight.
func (Backend) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	logprobBackward("LogprobBackwardBF16", dhidden, nil, dlogprob, dentropy, lse, entropy, hidden, func(i int) float32 { return kernels.F32(weight[i]) }, len(weight), targets, N, C, V)
}

func logprobBackward(op string, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden []float32, w func(int) float32, nw int, targets []int32, N, C, V int) {
	kernels.NeedLogprobBackward(op, dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, nw, targets, N, C, V)
	z := make([]float64, V) // one row of logits, then its gradient
	for n := 0; n < N; n++ {
		h := hidden[n*C : (n+1)*C] // [C]
		logits(z, h, w, C)
		var dl, de float64
		if dlogprob != nil && targets[n] >= 0 {
			dl = float64(dlogprob[n])
		}
		if dentropy != nil {
			de = float64(dentropy[n])
		}
		l, H := float64(lse[n]), float64(entropy[n])
		for j := range z {
			p := math.Exp(z[j] - l)
			g := -dl*p - de*p*(z[j]-l+H)
			if int32(j) == targets[n] {
				g += dl
			}
			z[j] = g
		}
		for c := 0; c < C; c++ {
			var s float64
			for j := 0; j < V; j++ {
				s += z[j] * float64(w(j*C+c))
			}
			dhidden[n*C+c] += float32(s)
		}
		if dweight != nil {
			for j := 0; j < V; j++ {
				for c := 0; c < C; c++ {
					dweight[j*C+c] += float32(z[j] * float64(h[c]))
				}
			}
		}
	}
}

// LogprobBackwardExpect accumulates dhidden [N,C] from the forward's expect.
func (Backend) LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int) {
	logprobBackwardExpect("LogprobBackwardExpect", dhidden, dlogprob, expect, func(i int) float32 { return weight[i] }, len(weight), targets, N, C, V)
}

// LogprobBackwardExpectBF16 is LogprobBackwardExpect with a bfloat16 weight [V,C].
func (Backend) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	logprobBackwardExpect("LogprobBackwardExpectBF16", dhidden, dlogprob, expect, func(i int) float32 { return kernels.F32(weight[i]) }, len(weight), targets, N, C, V)
}

func logprobBackwardExpect(op string, dhidden, dlogprob, expect []float32, w func(int) float32, nw int, targets []int32, N, C, V int) {
	kernels.NeedLogprobBackwardExpect(op, dhidden, dlogprob, expect, nw, targets, N, C, V)
	for n := 0; n < N; n++ {
		t := int(targets[n])
		if t < 0 {
			continue
		}
		dl := float64(dlogprob[n])
		for c := 0; c < C; c++ {
			dhidden[n*C+c] += float32(dl * (float64(w(t*C+c)) - float64(expect[n*C+c])))
		}
	}
}

// ---- optimizer and elementwise ------------------------------------------

// AdamW: one torch.optim.AdamW step on param, m, v [n] given grad [n].
func (Backend) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	op := "AdamW"
	kernels.NeedAdamW(op, param, grad, m, v, n, step)
	lr, b1, b2 := float64(h.LR), float64(h.Beta1), float64(h.Beta2)
	bc1 := 1 - math.Pow(b1, float64(step))
	bc2 := 1 - math.Pow(b2, float64(step))
	for i := 0; i < n; i++ {
		g := float64(grad[i])
		p := float64(param[i]) * (1 - lr*float64(h.WeightDecay))
		mi := b1*float64(m[i]) + (1-b1)*g
		vi := b2*float64(v[i]) + (1-b2)*g*g
		p -= lr / bc1 * mi / (math.Sqrt(vi)/math.Sqrt(bc2) + float64(h.Eps))
		param[i], m[i], v[i] = float32(p), float32(mi), float32(vi)
	}
}

// Add: out [n] = a + b.
func (Backend) Add(out, a, b []float32, n int) {
	kernels.NeedSizes("Add", n)
	kernels.Need("Add", "out", len(out), n)
	kernels.Need("Add", "a", len(a), n)
	kernels.Need("Add", "b", len(b), n)
	for i := 0; i < n; i++ {
		out[i] = a[i] + b[i]
	}
}

// Scale: out [n] = s·a.
func (Backend) Scale(out, a []float32, s float32, n int) {
	kernels.NeedSizes("Scale", n)
	kernels.Need("Scale", "out", len(out), n)
	kernels.Need("Scale", "a", len(a), n)
	for i := 0; i < n; i++ {
		out[i] = s * a[i]
	}
}

// AXPY: out [n] += s·a.
func (Backend) AXPY(out, a []float32, s float32, n int) {
	kernels.NeedSizes("AXPY", n)
	kernels.Need("AXPY", "out", len(out), n)
	kernels.Need("AXPY", "a", len(a), n)
	for i := 0; i < n; i++ {
		out[i] += s * a[i]
	}
}

// AddScalar: out [n] = a + s.
func (Backend) AddScalar(out, a []float32, s float32, n int) {
	kernels.NeedSizes("AddScalar", n)
	kernels.Need("AddScalar", "out", len(out), n)
	kernels.Need("AddScalar", "a", len(a), n)
	for i := 0; i < n; i++ {
		out[i] = a[i] + s
	}
}

// SumSquares returns Σ x[i]² in float64, summed in index order.
func (Backend) SumSquares(x []float32, n int) float64 {
	kernels.NeedSizes("SumSquares", n)
	kernels.Need("SumSquares", "x", len(x), n)
	s := 0.0
	for _, v := range x[:n] {
		s += float64(v) * float64(v)
	}
	return s
}

// Copy: dst [n] = src.
func (Backend) Copy(dst, src []float32, n int) {
	kernels.NeedSizes("Copy", n)
	kernels.Need("Copy", "dst", len(dst), n)
	kernels.Need("Copy", "src", len(src), n)
	for i := 0; i < n; i++ {
		dst[i] = src[i]
	}
}

// Zero: x [n] = 0.
func (Backend) Zero(x []float32, n int) {
	kernels.NeedSizes("Zero", n)
	kernels.Need("Zero", "x", len(x), n)
	for i := 0; i < n; i++ {
		x[i] = 0
	}
}
