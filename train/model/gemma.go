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

// windowBlock is how many consecutive rows (queries, or keys) one unit of
// parallel work of the window attention takes.
const windowBlock = 32

// windowUnits calls fn for every (sequence, key/value head, block of rows)
// of the packed batch, in parallel; fn gets the sequence's bounds [lo, hi),
// the head g and the rows [r0, r1) of the block.
func windowUnits(seqOff []int32, KVH int, fn func(lo, hi, g, r0, r1 int)) {
	type unit struct{ lo, hi, g, r0 int }
	var units []unit
	for s := 0; s+1 < len(seqOff); s++ {
		lo, hi := int(seqOff[s]), int(seqOff[s+1])
		for g := range KVH {
			for r := lo; r < hi; r += windowBlock {
				units = append(units, unit{lo, hi, g, r})
			}
		}
	}
	parallel(len(units), 1, func(a, b int) {
		for _, u := range units[a:b] {
			fn(u.lo, u.hi, u.g, u.r0, min(u.hi, u.r0+windowBlock))
		}
	})
}

// dot is x·y in float64.
func dot(x, y []float32) float64 {
	var s float64
	for i, v := range x {
		s += float64(v) * float64(y[i])
	}
	return s
}

// windowForward is causal grouped-query attention within each packed
// sequence where query i sees only keys j with i−W < j ≤ i (indices within
// its sequence), as transformers' sliding-window mask (kv_idx > q_idx −
// sliding_window). It writes out [N,H,D] and lse [N,H], the natural
// log-sum-exp of each query's scaled scores, for windowBackward. Units of
// work are blocks of queries: each writes only its own rows.
func windowForward(out, lse, q, k, v []float32, seqOff []int32, H, KVH, D, W int, scale float32) {
	rep := H / KVH
	windowUnits(seqOff, KVH, func(lo, hi, g, r0, r1 int) {
		p := make([]float64, W)
		acc := make([]float64, D)
		for i := r0; i < r1; i++ {
			from := max(lo, i-W+1)
			for h := g * rep; h < (g+1)*rep; h++ {
				qi := q[(i*H+h)*D : (i*H+h+1)*D]
				mx := math.Inf(-1)
				for j := from; j <= i; j++ {
					p[j-from] = dot(qi, k[(j*KVH+g)*D:(j*KVH+g+1)*D]) * float64(scale)
					mx = max(mx, p[j-from])
				}
				var sum float64
				clear(acc)
				for j := from; j <= i; j++ {
					e := math.Exp(p[j-from] - mx)
					sum += e
					for d, x := range v[(j*KVH+g)*D : (j*KVH+g+1)*D] {
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
// its out and lse. Two passes keep every unit's writes its own: blocks of
// queries accumulate dq, blocks of keys accumulate dk and dv (each
// recomputing the scores it needs from q, k and lse).
func windowBackward(dq, dk, dv, dout, out, lse, q, k, v []float32, seqOff []int32, H, KVH, D, W int, scale float32) {
	rep := H / KVH
	sc := float64(scale)
	N := int(seqOff[len(seqOff)-1])
	di := make([]float64, N*H) // dout·out of each query row
	parallel(N*H, 256, func(a, b int) {
		for r := a; r < b; r++ {
			di[r] = dot(dout[r*D:(r+1)*D], out[r*D:(r+1)*D])
		}
	})
	// grad returns, for query row r = i·H+h and key j, the softmax
	// probability p and the score gradient ds (scale included).
	grad := func(r, j, g int) (p, ds float64) {
		kr := (j*KVH + g) * D
		p = math.Exp(dot(q[r*D:(r+1)*D], k[kr:kr+D])*sc - float64(lse[r]))
		dp := dot(dout[r*D:(r+1)*D], v[kr:kr+D])
		return p, p * (dp - di[r]) * sc
	}
	windowUnits(seqOff, KVH, func(lo, hi, g, r0, r1 int) {
		for i := r0; i < r1; i++ {
			for h := g * rep; h < (g+1)*rep; h++ {
				r := i*H + h
				dqi := dq[r*D : (r+1)*D]
				for j := max(lo, i-W+1); j <= i; j++ {
					_, ds := grad(r, j, g)
					for d, x := range k[(j*KVH+g)*D : (j*KVH+g+1)*D] {
						dqi[d] += float32(ds * float64(x))
					}
				}
			}
		}
	})
	windowUnits(seqOff, KVH, func(lo, hi, g, r0, r1 int) {
		for j := r0; j < r1; j++ {
			kr := (j*KVH + g) * D
			dkj, dvj := dk[kr:kr+D], dv[kr:kr+D]
			for i := j; i < min(hi, j+W); i++ {
				for h := g * rep; h < (g+1)*rep; h++ {
					r := i*H + h
					p, ds := grad(r, j, g)
					qi, doi := q[r*D:(r+1)*D], dout[r*D:(r+1)*D]
					for d := range dkj {
						dkj[d] += float32(ds * float64(qi[d]))
						dvj[d] += float32(p * float64(doi[d]))
					}
				}
			}
		}
	})
}
