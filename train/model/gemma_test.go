package model

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The sliding-window attention's Go path, given a window no shorter than
// any sequence (so it masks nothing), computes what the backend's causal
// attention computes: outputs, log-sum-exps and all three gradients. The
// golden and finite-difference tests cover windows that do mask.
func TestWindowAttentionMatchesBackend(t *testing.T) {
	const H, KVH, D = 4, 2, 8
	seqOff := []int32{0, 7, 12, 21}
	N := int(seqOff[len(seqOff)-1])
	rng := rand.New(rand.NewPCG(3, 5))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	q, k, v, dout := fill(N*H*D), fill(N*KVH*D), fill(N*KVH*D), fill(N*H*D)
	const scale = 0.3
	for _, be := range testBackends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			if needsWindow(seqOff, 9) || !needsWindow(seqOff, 8) {
				t.Fatal("needsWindow: the longest sequence has 9 tokens")
			}
			out, lse := make([]float32, N*H*D), make([]float32, N*H)
			wout, wlse := make([]float32, N*H*D), make([]float32, N*H)
			be.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
			windowForward(wout, wlse, q, k, v, seqOff, H, KVH, D, 9, scale)
			grads := func(window bool) [3][]float32 {
				g := [3][]float32{make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)}
				if window {
					windowBackward(g[0], g[1], g[2], dout, wout, wlse, q, k, v, seqOff, H, KVH, D, 9, scale)
				} else {
					be.AttentionBackward(g[0], g[1], g[2], dout, out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
				}
				return g
			}
			want, got := grads(false), grads(true)
			for i, c := range []struct {
				name      string
				got, want []float32
			}{{"out", wout, out}, {"lse", wlse, lse}, {"dq", got[0], want[0]}, {"dk", got[1], want[1]}, {"dv", got[2], want[2]}} {
				if d := maxRelDiff(c.got, c.want); d > 1e-5 {
					t.Errorf("%d %s: window path differs from the backend by %.3g", i, c.name, d)
				}
			}
		})
	}
}

// geluGLUBackward is the derivative of geluGLUForward (central differences
// in float64 around float32 inputs).
func TestGELUGLUGradient(t *testing.T) {
	gate := []float32{-4, -1.5, -0.3, 0, 0.2, 1, 2.5, 6}
	up := []float32{0.7, -1.2, 2, 0.5, -0.4, 1.1, 0.9, -2}
	n := len(gate)
	dact := make([]float32, n)
	for i := range dact {
		dact[i] = 1
	}
	dg, du := make([]float32, n), make([]float32, n)
	geluGLUBackward(dg, du, dact, gate, up)
	const h = 1e-3
	at := func(g, u float32) float64 {
		out := make([]float32, 1)
		geluGLUForward(out, []float32{g}, []float32{u})
		return float64(out[0])
	}
	for i := range gate {
		fdg := (at(gate[i]+h, up[i]) - at(gate[i]-h, up[i])) / (2 * h)
		fdu := (at(gate[i], up[i]+h) - at(gate[i], up[i]-h)) / (2 * h)
		for _, c := range []struct {
			name    string
			got, fd float64
		}{{"dgate", float64(dg[i]), fdg}, {"dup", float64(du[i]), fdu}} {
			if d := c.got - c.fd; d > 2e-3 || d < -2e-3 {
				t.Errorf("%s at gate %v up %v: %v, finite difference %v", c.name, gate[i], up[i], c.got, c.fd)
			}
		}
	}
	// gelu_tanh(1)·1 = 0.8411920 (PyTorch: F.gelu(torch.tensor(1.), approximate="tanh")).
	out := make([]float32, 1)
	geluGLUForward(out, []float32{1}, []float32{1})
	if s := fmt.Sprintf("%.6f", out[0]); s != "0.841192" {
		t.Errorf("gelu_tanh(1) = %s, want 0.841192", s)
	}
}

// BenchmarkWindowAttention times the sliding-window attention's Go path,
// forward and backward, on one Gemma-3-1B-shaped layer (4 query heads, 1
// key/value head, head dim 256, window 512) over one 1024-token sequence.
func BenchmarkWindowAttention(b *testing.B) {
	const H, KVH, D, W, N = 4, 1, 256, 512, 1024
	seqOff := []int32{0, N}
	rng := rand.New(rand.NewPCG(1, 2))
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	q, k, v, dout := fill(N*H*D), fill(N*KVH*D), fill(N*KVH*D), fill(N*H*D)
	out, lse := make([]float32, N*H*D), make([]float32, N*H)
	dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
	b.ResetTimer()
	for range b.N {
		windowForward(out, lse, q, k, v, seqOff, H, KVH, D, W, 0.0625)
		windowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, H, KVH, D, W, 0.0625)
	}
}
