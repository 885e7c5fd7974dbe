package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The backends' sliding-window attention, given a window no shorter than
// any sequence (so it masks nothing), computes what their causal
// attention computes: outputs, log-sum-exps and all three gradients. The
// golden and finite-difference tests cover windows that do mask.
func TestWindowAttentionMatchesBackend(t *testing.T) {
	const H, KVH, D = 4, 2, 8
	seqOff := []int32{0, 70, 75, 225} // several query blocks per sequence
	N := int(seqOff[len(seqOff)-1])
	rng := rand.New(rand.NewPCG(3, 5))
	q, k, v, dout := normals(rng, N*H*D), normals(rng, N*KVH*D), normals(rng, N*KVH*D), normals(rng, N*H*D)
	const scale = 0.3
	for _, be := range kernelBackends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			out, lse := make([]float32, N*H*D), make([]float32, N*H)
			wout, wlse := make([]float32, N*H*D), make([]float32, N*H)
			be.AttentionForward(out, lse, q, k, v, seqOff, N, H, KVH, D, scale)
			be.AttentionWindowForward(wout, wlse, q, k, v, seqOff, N, H, KVH, D, 150, scale)
			grads := func(window bool) [3][]float32 {
				g := [3][]float32{make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)}
				if window {
					be.AttentionWindowBackward(g[0], g[1], g[2], dout, wout, wlse, q, k, v, seqOff, N, H, KVH, D, 150, scale)
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

// With a window that masks (20 keys, sequences up to 150 tokens, so query
// blocks start past the window), each backend's window attention agrees with the definition
// computed row by row in float64: softmax over keys j with i−20 < j ≤ i,
// and its gradients.
func TestWindowAttentionMasks(t *testing.T) {
	const H, KVH, D, W = 4, 2, 8, 20
	seqOff := []int32{0, 150, 161}
	N := int(seqOff[len(seqOff)-1])
	rng := rand.New(rand.NewPCG(7, 9))
	q, k, v, dout := normals(rng, N*H*D), normals(rng, N*KVH*D), normals(rng, N*KVH*D), normals(rng, N*H*D)
	const scale = 0.4
	// The definition, row by row.
	wantOut, wantLSE := make([]float32, N*H*D), make([]float32, N*H)
	wdq, wdk, wdv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
	for s := 0; s+1 < len(seqOff); s++ {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		for i := lo; i < hi; i++ {
			for h := range H {
				g := h / (H / KVH)
				r := i*H + h
				from := max(lo, i-W+1)
				sc := make([]float64, i+1-from)
				mx := math.Inf(-1)
				for j := from; j <= i; j++ {
					sc[j-from] = scale * dot(q[r*D:(r+1)*D], k[(j*KVH+g)*D:(j*KVH+g+1)*D])
					mx = max(mx, sc[j-from])
				}
				var sum float64
				for _, x := range sc {
					sum += math.Exp(x - mx)
				}
				lse := mx + math.Log(sum)
				wantLSE[r] = float32(lse)
				o := make([]float64, D)
				for j := from; j <= i; j++ {
					p := math.Exp(sc[j-from] - lse)
					for d := range D {
						o[d] += p * float64(v[(j*KVH+g)*D+d])
					}
				}
				var di float64
				for d := range D {
					wantOut[r*D+d] = float32(o[d])
					di += o[d] * float64(dout[r*D+d])
				}
				for j := from; j <= i; j++ {
					p := math.Exp(sc[j-from] - lse)
					dp := dot(dout[r*D:(r+1)*D], v[(j*KVH+g)*D:(j*KVH+g+1)*D])
					ds := p * (dp - di) * scale
					for d := range D {
						wdq[r*D+d] += float32(ds * float64(k[(j*KVH+g)*D+d]))
						wdk[(j*KVH+g)*D+d] += float32(ds * float64(q[r*D+d]))
						wdv[(j*KVH+g)*D+d] += float32(p * float64(dout[r*D+d]))
					}
				}
			}
		}
	}
	for _, be := range kernelBackends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			out, lse := make([]float32, N*H*D), make([]float32, N*H)
			be.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
			dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
			be.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, W, scale)
			for _, c := range []struct {
				name      string
				got, want []float32
			}{{"out", out, wantOut}, {"lse", lse, wantLSE}, {"dq", dq, wdq}, {"dk", dk, wdk}, {"dv", dv, wdv}} {
				if d := maxRelDiff(c.got, c.want); d > 1e-5 {
					t.Errorf("%s: window attention differs from the definition by %.3g", c.name, d)
				}
			}
		})
	}
}

// BenchmarkWindowAttention times the CPU backend's sliding-window attention,
// forward and backward, on one Gemma-3-1B-shaped layer (4 query heads, 1
// key/value head, head dim 256, window 512) over one 1024-token sequence.
func BenchmarkWindowAttention(b *testing.B) {
	const H, KVH, D, W, N = 4, 1, 256, 512, 1024
	seqOff := []int32{0, N}
	rng := rand.New(rand.NewPCG(1, 2))
	q, k, v, dout := normals(rng, N*H*D), normals(rng, N*KVH*D), normals(rng, N*KVH*D), normals(rng, N*H*D)
	out, lse := make([]float32, N*H*D), make([]float32, N*H)
	dq, dk, dv := make([]float32, N*H*D), make([]float32, N*KVH*D), make([]float32, N*KVH*D)
	be := testBackends(b)[1] // the CPU backend
	b.ResetTimer()
	for range b.N {
		be.AttentionWindowForward(out, lse, q, k, v, seqOff, N, H, KVH, D, W, 0.0625)
		be.AttentionWindowBackward(dq, dk, dv, dout, out, lse, q, k, v, seqOff, N, H, KVH, D, W, 0.0625)
	}
}

// dot is x·y in float64.
func dot(x, y []float32) float64 {
	var s float64
	for i, v := range x {
		s += float64(v) * float64(y[i])
	}
	return s
}

// normals draws n standard normal values from rng.
func normals(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}
