package model

import (
	"math"
	"runtime"
	"sync"
)

// Gemma 3's pieces the kernels package has no operation for: the GeGLU
// activation and sliding-window attention. Both run here as plain Go over
// the backend's host slices, split across goroutines.

// geluK is √(2/π), the tanh approximation's constant.
const geluK = 0.7978845608028654

// parallel runs fn over [0, n) in up to GOMAXPROCS contiguous pieces.
func parallel(n, minPiece int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/max(1, minPiece)))
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(n, lo+per))
	}
	wg.Wait()
}

// geluGLUForward writes act = gelu_tanh(gate)·up, where gelu_tanh(x) =
// x/2·(1 + tanh(√(2/π)·(x + 0.044715x³))) (PyTorch's gelu(approximate="tanh"),
// transformers' "gelu_pytorch_tanh").
func geluGLUForward(act, gate, up []float32) {
	parallel(len(act), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := float64(gate[i])
			t := math.Tanh(geluK * (x + 0.044715*x*x*x))
			act[i] = float32(0.5 * x * (1 + t) * float64(up[i]))
		}
	})
}

// geluGLUBackward writes dgate and dup, the gradients of act =
// gelu_tanh(gate)·up given dact.
func geluGLUBackward(dgate, dup, dact, gate, up []float32) {
	parallel(len(dact), 1<<14, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := float64(gate[i])
			t := math.Tanh(geluK * (x + 0.044715*x*x*x))
			g := 0.5 * x * (1 + t)
			dg := 0.5*(1+t) + 0.5*x*(1-t*t)*geluK*(1+3*0.044715*x*x)
			d := float64(dact[i])
			dgate[i] = float32(d * float64(up[i]) * dg)
			dup[i] = float32(d * g)
		}
	})
}

// needsWindow reports whether a window of W keys masks anything in the
// packed sequences seqOff: only a sequence longer than W has a query that
// cannot see all the keys before it.
func needsWindow(seqOff []int32, W int) bool {
	if W <= 0 {
		return false
	}
	for s := 1; s < len(seqOff); s++ {
		if int(seqOff[s]-seqOff[s-1]) > W {
			return true
		}
	}
	return false
}

// windowUnits calls fn for every (sequence, key/value head) pair of the
// packed batch, in parallel: no two pairs write the same rows of dk and dv.
func windowUnits(seqOff []int32, KVH int, fn func(lo, hi, g int)) {
	S := len(seqOff) - 1
	parallel(S*KVH, 1, func(a, b int) {
		for u := a; u < b; u++ {
			s, g := u/KVH, u%KVH
			fn(int(seqOff[s]), int(seqOff[s+1]), g)
		}
	})
}

// windowForward is causal grouped-query attention within each packed
// sequence where query i sees only keys j with i−W < j ≤ i (indices within
// its sequence), as transformers' sliding-window mask (kv_idx > q_idx −
// sliding_window). It writes out [N,H,D] and lse [N,H], the natural
// log-sum-exp of each query's scaled scores, for windowBackward.
func windowForward(out, lse, q, k, v []float32, seqOff []int32, H, KVH, D, W int, scale float32) {
	rep := H / KVH
	windowUnits(seqOff, KVH, func(lo, hi, g int) {
		p := make([]float64, W)
		acc := make([]float64, D)
		for i := lo; i < hi; i++ {
			from := max(lo, i-W+1)
			for h := g * rep; h < (g+1)*rep; h++ {
				qi := q[(i*H+h)*D : (i*H+h+1)*D]
				mx := math.Inf(-1)
				for j := from; j <= i; j++ {
					kj := k[(j*KVH+g)*D : (j*KVH+g+1)*D]
					var dot float64
					for d, x := range qi {
						dot += float64(x) * float64(kj[d])
					}
					p[j-from] = dot * float64(scale)
					mx = max(mx, p[j-from])
				}
				var sum float64
				clear(acc)
				for j := from; j <= i; j++ {
					e := math.Exp(p[j-from] - mx)
					sum += e
					vj := v[(j*KVH+g)*D : (j*KVH+g+1)*D]
					for d, x := range vj {
						acc[d] += e * float64(x)
					}
				}
				o := out[(i*H+h)*D : (i*H+h+1)*D]
				for d := range o {
					o[d] = float32(acc[d] / sum)
				}
				lse[i*H+h] = float32(mx + math.Log(sum))
			}
		}
	})
}

// windowBackward accumulates dq, dk, dv of windowForward given dout, from
// its out and lse.
func windowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, H, KVH, D, W int, scale float32) {
	rep := H / KVH
	sc := float64(scale)
	windowUnits(seqOff, KVH, func(lo, hi, g int) {
		for i := lo; i < hi; i++ {
			from := max(lo, i-W+1)
			for h := g * rep; h < (g+1)*rep; h++ {
				row := (i*H + h) * D
				qi, doi, oi, dqi := q[row:row+D], dout[row:row+D], out[row:row+D], dq[row:row+D]
				var di float64 // dout·out
				for d := range doi {
					di += float64(doi[d]) * float64(oi[d])
				}
				l := float64(lse[i*H+h])
				for j := from; j <= i; j++ {
					kr := (j*KVH + g) * D
					kj, vj, dkj, dvj := k[kr:kr+D], v[kr:kr+D], dk[kr:kr+D], dv[kr:kr+D]
					var s, dp float64
					for d := range qi {
						s += float64(qi[d]) * float64(kj[d])
						dp += float64(doi[d]) * float64(vj[d])
					}
					pj := math.Exp(s*sc - l)
					ds := pj * (dp - di) * sc
					for d := range qi {
						dqi[d] += float32(ds * float64(kj[d]))
						dkj[d] += float32(ds * float64(qi[d]))
						dvj[d] += float32(pj * float64(doi[d]))
					}
				}
			}
		}
	})
}
