package ref_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// These tests check ref's backward ops against central finite differences of
// its forward ops: L = Σ_i w_i·out_i in float64 with fixed random w, so
// dL/dout = w is the dout fed to the backward op.

var b = ref.New()

func randn(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

func weighted(w, out []float32) float64 {
	var s float64
	for i := range out {
		s += float64(w[i]) * float64(out[i])
	}
	return s
}

// gradcheck compares analytic (dL/dx, accumulated from zero) with central
// differences of loss over every element of x (x is restored afterwards).
func gradcheck(t *testing.T, what string, x, analytic []float32, loss func() float64) {
	t.Helper()
	const h = 1e-3
	var ss float64
	for _, a := range analytic {
		ss += float64(a) * float64(a)
	}
	rms := math.Sqrt(ss / float64(len(analytic)))
	for i := range x {
		x0 := x[i]
		x[i] = x0 + h
		up, xp := loss(), x[i]
		x[i] = x0 - h
		down, xm := loss(), x[i]
		x[i] = x0
		num := (up - down) / float64(xp-xm)
		if e := math.Abs(num - float64(analytic[i])); e > 1e-2*(math.Abs(num)+rms)+1e-4 {
			t.Errorf("%s[%d]: analytic %g, finite difference %g", what, i, analytic[i], num)
			return
		}
	}
}

func TestGradLinear(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	N, C, OC := 3, 5, 4
	inp, w, bias := randn(r, N*C, 1), randn(r, OC*C, 1), randn(r, OC, 1)
	wo := randn(r, N*OC, 1)
	out := make([]float32, N*OC)
	loss := func() float64 { b.LinearForward(out, inp, w, bias, N, C, OC); return weighted(wo, out) }
	di, dw, db := make([]float32, N*C), make([]float32, OC*C), make([]float32, OC)
	b.LinearBackward(di, dw, db, wo, inp, w, N, C, OC)
	gradcheck(t, "dinp", inp, di, loss)
	gradcheck(t, "dweight", w, dw, loss)
	gradcheck(t, "dbias", bias, db, loss)

	wh := make([]uint16, len(w))
	kernels.ToBF16(wh, w)
	di16 := make([]float32, N*C)
	b.LinearBackwardBF16(di16, wo, wh, N, C, OC)
	loss16 := func() float64 { b.LinearForwardBF16(out, inp, wh, nil, N, C, OC); return weighted(wo, out) }
	gradcheck(t, "dinp (bf16)", inp, di16, loss16)
}

func TestGradRMSNorm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, C := range []int{1, 2, 9} {
		t.Run(fmt.Sprintf("C=%d", C), func(t *testing.T) {
			N := 3
			inp, w := randn(r, N*C, 1), randn(r, C, 1)
			wo := randn(r, N*C, 1)
			out, rstd := make([]float32, N*C), make([]float32, N)
			loss := func() float64 { b.RMSNormForward(out, rstd, inp, w, N, C, 1e-5); return weighted(wo, out) }
			loss()
			di, dw := make([]float32, N*C), make([]float32, C)
			b.RMSNormBackward(di, dw, wo, rstd, inp, w, N, C)
			gradcheck(t, "dinp", inp, di, loss)
			gradcheck(t, "dweight", w, dw, loss)
		})
	}
}

func TestGradRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	N, H, D := 3, 2, 10
	inv, err := kernels.RoPEInvFreq(kernels.RoPEConfig{Theta: 10000, HeadDim: D, RotaryDim: 6})
	if err != nil {
		t.Fatal(err)
	}
	pos := []int32{0, 7, 123}
	inp, wo := randn(r, N*H*D, 1), randn(r, N*H*D, 1)
	out := make([]float32, N*H*D)
	loss := func() float64 { b.RoPEForward(out, inp, pos, inv, N, H, D); return weighted(wo, out) }
	di := make([]float32, N*H*D)
	b.RoPEBackward(di, wo, pos, inv, N, H, D)
	gradcheck(t, "dinp", inp, di, loss)
}

func TestGradSwiGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	n := 20
	g, u, wo := randn(r, n, 3), randn(r, n, 1), randn(r, n, 1)
	out := make([]float32, n)
	loss := func() float64 { b.SwiGLUForward(out, g, u, n); return weighted(wo, out) }
	dg, du := make([]float32, n), make([]float32, n)
	b.SwiGLUBackward(dg, du, wo, g, u, n)
	gradcheck(t, "dgate", g, dg, loss)
	gradcheck(t, "dup", u, du, loss)
}

// TestGradGeGLU checks GeGLUBackward against finite differences of
// GeGLUForward, and the value at 1 against PyTorch.
func TestGradGeGLU(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	n := 20
	g, u, wo := randn(r, n, 3), randn(r, n, 1), randn(r, n, 1)
	out := make([]float32, n)
	loss := func() float64 { b.GeGLUForward(out, g, u, n); return weighted(wo, out) }
	dg, du := make([]float32, n), make([]float32, n)
	b.GeGLUBackward(dg, du, wo, g, u, n)
	gradcheck(t, "dgate", g, dg, loss)
	gradcheck(t, "dup", u, du, loss)

	// gelu_tanh(1)·1 = 0.8411920 (PyTorch: F.gelu(torch.tensor(1.), approximate="tanh")).
	one := make([]float32, 1)
	b.GeGLUForward(one, []float32{1}, []float32{1}, 1)
	if s := fmt.Sprintf("%.6f", one[0]); s != "0.841192" {
		t.Errorf("gelu_tanh(1) = %s, want 0.841192", s)
	}
}

// TestGradAttentionWindow checks the sliding-window attention's gradients
// on windows that mask.
func TestGradAttentionWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	for _, c := range []struct {
		seqOff       []int32
		H, KVH, D, W int
	}{{[]int32{0, 6}, 2, 1, 3, 2}, {[]int32{0, 4, 9}, 4, 2, 3, 3}, {[]int32{0, 5}, 1, 1, 2, 1}} {
		N := int(c.seqOff[len(c.seqOff)-1])
		H, KVH, D, W := c.H, c.KVH, c.D, c.W
		t.Run(fmt.Sprintf("seqOff=%v,H=%d,KVH=%d,W=%d", c.seqOff, H, KVH, W), func(t *testing.T) {
			q, k, v := randn(r, N*H*D, 1), randn(r, N*KVH*D, 1), randn(r, N*KVH*D, 1)
			wo := randn(r, N*H*D, 1)
			out, lse := make([]float32, N*H*D), make([]float32, N*H)
			scale := float32(0.7)
			loss := func() float64 {
				b.AttentionWindowForward(out, lse, q, k, v, c.seqOff, N, H, KVH, D, W, scale)
				return weighted(wo, out)
			}
			loss()
			dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
			b.AttentionWindowBackward(dq, dk, dv, wo, out, lse, q, k, v, c.seqOff, N, H, KVH, D, W, scale)
			gradcheck(t, "dq", q, dq, loss)
			gradcheck(t, "dk", k, dk, loss)
			gradcheck(t, "dv", v, dv, loss)
		})
	}
}

func TestGradAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		seqOff    []int32
		H, KVH, D int
	}{{[]int32{0, 1}, 1, 1, 3}, {[]int32{0, 4, 7}, 4, 2, 3}, {[]int32{0, 5}, 3, 1, 2}} {
		N := int(c.seqOff[len(c.seqOff)-1])
		H, KVH, D := c.H, c.KVH, c.D
		t.Run(fmt.Sprintf("seqOff=%v,H=%d,KVH=%d", c.seqOff, H, KVH), func(t *testing.T) {
			q, k, v := randn(r, N*H*D, 1), randn(r, N*KVH*D, 1), randn(r, N*KVH*D, 1)
			wo := randn(r, N*H*D, 1)
			out, lse := make([]float32, N*H*D), make([]float32, N*H)
			scale := float32(0.7)
			loss := func() float64 {
				b.AttentionForward(out, lse, q, k, v, c.seqOff, N, H, KVH, D, scale)
				return weighted(wo, out)
			}
			loss()
			dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
			b.AttentionBackward(dq, dk, dv, wo, out, lse, q, k, v, c.seqOff, N, H, KVH, D, scale)
			gradcheck(t, "dq", q, dq, loss)
			gradcheck(t, "dk", k, dk, loss)
			gradcheck(t, "dv", v, dv, loss)
		})
	}
}

func TestGradEmbedding(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	N, C, V := 5, 3, 4
	table, wo := randn(r, V*C, 1), randn(r, N*C, 1)
	ids := []int32{1, 3, 1, 0, 1}
	out := make([]float32, N*C)
	loss := func() float64 { b.EmbeddingForward(out, ids, table, N, C, V); return weighted(wo, out) }
	dt := make([]float32, V*C)
	b.EmbeddingBackward(dt, wo, ids, N, C, V)
	gradcheck(t, "dtable", table, dt, loss)
}

func TestGradSoftmaxFamily(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	N, V := 3, 6
	inp := randn(r, N*V, 2)
	wo, we := randn(r, N*V, 1), randn(r, N, 1)
	out, ent := make([]float32, N*V), make([]float32, N)
	loss := func() float64 { b.LogSoftmaxForward(out, inp, N, V); return weighted(wo, out) }
	loss()
	di := make([]float32, N*V)
	b.LogSoftmaxBackward(di, wo, out, N, V)
	gradcheck(t, "log-softmax dinp", inp, di, loss)

	lossE := func() float64 { b.EntropyForward(ent, inp, N, V); return weighted(we, ent) }
	de := make([]float32, N*V)
	b.EntropyBackward(de, we, inp, N, V)
	gradcheck(t, "entropy dinp", inp, de, lossE)
}

func TestGradLogprob(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	N, C, V := 4, 3, 7
	hid, w := randn(r, N*C, 1), randn(r, V*C, 1)
	tg := []int32{2, -1, 6, 0}
	a, e := randn(r, N, 1), randn(r, N, 1) // L = Σ a·logprob + e·entropy
	lp, ent, lse := make([]float32, N), make([]float32, N), make([]float32, N)
	loss := func() float64 {
		b.LogprobForward(lp, ent, lse, nil, hid, w, tg, N, C, V, 0)
		return weighted(a, lp) + weighted(e, ent)
	}
	loss()
	dh, dw := make([]float32, N*C), make([]float32, V*C)
	b.LogprobBackward(dh, dw, a, e, lse, ent, hid, w, tg, N, C, V, 0)
	gradcheck(t, "dhidden", hid, dh, loss)
	gradcheck(t, "dweight", w, dw, loss)
}

// TestGradLogprobExpect checks the one-pass gradient of Σ a·logprob: the
// forward's expected lm_head row, then LogprobBackwardExpect.
func TestGradLogprobExpect(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	N, C, V := 4, 3, 7
	hid, w := randn(r, N*C, 1), randn(r, V*C, 1)
	tg := []int32{5, 0, -1, 3}
	a := randn(r, N, 1)
	lp, ent, lse, ex := make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N*C)
	loss := func() float64 {
		b.LogprobForward(lp, ent, lse, ex, hid, w, tg, N, C, V, 0)
		return weighted(a, lp)
	}
	loss()
	dh := make([]float32, N*C)
	b.LogprobBackwardExpect(dh, a, ex, w, tg, N, C, V)
	gradcheck(t, "dhidden", hid, dh, loss)
}
