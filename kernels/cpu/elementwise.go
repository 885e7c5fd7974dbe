package cpu

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// RMSNormForward: rstd [N], out [N,C] = inp·rstd·weight (row sums in float64).
func (b *Backend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	op := "RMSNormForward"
	kernels.NeedRMSNorm(op, out, rstd, inp, weight, N, C)
	w := weight[:C]
	b.parallel(N, C, func(lo, hi int) {
		if b.vec.rmsFwd != nil {
			b.vec.rmsFwd(out[lo*C:hi*C], rstd[lo:hi], inp[lo*C:hi*C], w, C, eps)
			return
		}
		for n := lo; n < hi; n++ {
			x := inp[n*C : (n+1)*C]
			var ss float64
			for _, v := range x {
				ss += float64(v * v)
			}
			r := float32(1 / math.Sqrt(ss/float64(C)+float64(eps)))
			rstd[n] = r
			o := out[n*C : (n+1)*C]
			for c, v := range x {
				o[c] = v * r * w[c]
			}
		}
	})
}

// RMSNormBackward accumulates dinp [N,C] and dweight [C] (nil: skipped).
func (b *Backend) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	op := "RMSNormBackward"
	kernels.NeedRMSNormBackward(op, dinp, dweight, dout, rstd, inp, weight, N, C)
	w := weight[:C]
	b.parallel(N, C, func(lo, hi int) {
		if b.vec.rmsBwd != nil {
			b.vec.rmsBwd(dinp[lo*C:hi*C], dout[lo*C:hi*C], rstd[lo:hi], inp[lo*C:hi*C], w, C)
			return
		}
		for n := lo; n < hi; n++ {
			x, d, di := inp[n*C:(n+1)*C], dout[n*C:(n+1)*C], dinp[n*C:(n+1)*C]
			r := rstd[n]
			var dot float64
			for c := range x {
				dot += float64(d[c] * w[c] * x[c])
			}
			m := float32(dot*float64(r)/float64(C)) * r // mean(g·x̂)·rstd
			for c := range x {
				di[c] += r * (d[c]*w[c] - x[c]*m)
			}
		}
	})
	if dweight != nil {
		// Split over channels so no two workers write the same dweight[c].
		b.parallel(C, N, func(lo, hi int) {
			for n := 0; n < N; n++ {
				r := rstd[n]
				x, d := inp[n*C:(n+1)*C], dout[n*C:(n+1)*C]
				for c := lo; c < hi; c++ {
					dweight[c] += d[c] * x[c] * r
				}
			}
		})
	}
}

// ropeTable fills cos and sin [R/2] for one position, angles in float32 as
// Hugging Face computes them.
func ropeTable(cos, sin []float32, pos int32, invFreq []float32) {
	for i, f := range invFreq {
		s, c := math.Sincos(float64(float32(pos) * f))
		cos[i], sin[i] = float32(c), float32(s)
	}
}

// RoPEForward rotates pairs (i, i+R/2) of each head (see kernels.Backend);
// the angles of a token are computed once and applied to all its heads.
func (b *Backend) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.rope("RoPEForward", out, inp, pos, invFreq, N, H, D, false)
}

// RoPEBackward accumulates dinp [N,H,D] += rotation of dout by −θ.
func (b *Backend) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	b.rope("RoPEBackward", dinp, dout, pos, invFreq, N, H, D, true)
}

func (b *Backend) rope(op string, out, inp []float32, pos []int32, invFreq []float32, N, H, D int, backward bool) {
	kernels.NeedRoPE(op, backward, out, inp, pos, invFreq, N, H, D)
	half := len(invFreq)
	b.parallel(N, H*D, func(lo, hi int) {
		cos, sin := make([]float32, half), make([]float32, half)
		for n := lo; n < hi; n++ {
			ropeTable(cos, sin, pos[n], invFreq)
			for h := 0; h < H; h++ {
				x := inp[(n*H+h)*D : (n*H+h+1)*D]
				y := out[(n*H+h)*D : (n*H+h+1)*D]
				for i := 0; i < half; i++ {
					x1, x2 := x[i], x[i+half]
					c, s := cos[i], sin[i]
					if backward {
						y[i] += x1*c + x2*s
						y[i+half] += x2*c - x1*s
					} else {
						y[i] = x1*c - x2*s
						y[i+half] = x2*c + x1*s
					}
				}
				for d := 2 * half; d < D; d++ {
					if backward {
						y[d] += x[d]
					} else {
						y[d] = x[d]
					}
				}
			}
		}
	})
}

func sigmoid32(x float32) float32 {
	if x >= 0 {
		return 1 / (1 + exp32(-x))
	}
	e := exp32(x)
	return e / (1 + e)
}

// SwiGLUForward: out = silu(gate)·up over n values.
func (b *Backend) SwiGLUForward(out, gate, up []float32, n int) {
	op := "SwiGLUForward"
	kernels.NeedGatedForward(op, out, gate, up, n)
	b.parallel(n, 8, func(lo, hi int) {
		if b.vec.swigluFwd != nil {
			b.vec.swigluFwd(out[lo:hi], gate[lo:hi], up[lo:hi])
			return
		}
		for i := lo; i < hi; i++ {
			g := gate[i]
			out[i] = g * sigmoid32(g) * up[i]
		}
	})
}

// SwiGLUBackward accumulates dgate and dup over n values.
func (b *Backend) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	op := "SwiGLUBackward"
	kernels.NeedGatedBackward(op, dgate, dup, dout, gate, up, n)
	b.parallel(n, 8, func(lo, hi int) {
		if b.vec.swigluBwd != nil {
			b.vec.swigluBwd(dgate[lo:hi], dup[lo:hi], dout[lo:hi], gate[lo:hi], up[lo:hi])
			return
		}
		for i := lo; i < hi; i++ {
			g, d := gate[i], dout[i]
			s := sigmoid32(g)
			dgate[i] += d * up[i] * s * (1 + g*(1-s))
			dup[i] += d * g * s
		}
	})
}

// geluK is √(2/π), the tanh approximation's constant.
const geluK = 0.7978845608028654

// GeGLUForward: out = gelu_tanh(gate)·up over n values, in float64 per
// value (math.Tanh).
func (b *Backend) GeGLUForward(out, gate, up []float32, n int) {
	op := "GeGLUForward"
	kernels.NeedGatedForward(op, out, gate, up, n)
	b.parallel(n, 32, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := float64(gate[i])
			t := math.Tanh(geluK * (x + 0.044715*x*x*x))
			out[i] = float32(0.5 * x * (1 + t) * float64(up[i]))
		}
	})
}

// GeGLUBackward accumulates dgate and dup over n values.
func (b *Backend) GeGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	op := "GeGLUBackward"
	kernels.NeedGatedBackward(op, dgate, dup, dout, gate, up, n)
	b.parallel(n, 32, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			x := float64(gate[i])
			t := math.Tanh(geluK * (x + 0.044715*x*x*x))
			g := 0.5 * x * (1 + t)
			dg := 0.5*(1+t) + 0.5*x*(1-t*t)*geluK*(1+3*0.044715*x*x)
			d := float64(dout[i])
			dgate[i] += float32(d * float64(up[i]) * dg)
			dup[i] += float32(d * g)
		}
	})
}

// EmbeddingForward gathers out [N,C] = table [V,C] rows ids [N].
func (b *Backend) EmbeddingForward(out []float32, ids []int32, table []float32, N, C, V int) {
	op := "EmbeddingForward"
	kernels.NeedEmbedding(op, out, ids, len(table), N, C, V)
	b.parallel(N, C, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			id := int(ids[n])
			copy(out[n*C:(n+1)*C], table[id*C:(id+1)*C])
		}
	})
}

// EmbeddingForwardBF16 gathers from a bfloat16 table [V,C].
func (b *Backend) EmbeddingForwardBF16(out []float32, ids []int32, table []uint16, N, C, V int) {
	op := "EmbeddingForwardBF16"
	kernels.NeedEmbedding(op, out, ids, len(table), N, C, V)
	b.parallel(N, C, func(lo, hi int) {
		for n := lo; n < hi; n++ {
			id := int(ids[n])
			kernels.FromBF16(out[n*C:(n+1)*C], table[id*C:(id+1)*C])
		}
	})
}

// EmbeddingBackward scatter-adds dout [N,C] into dtable [V,C]; split over
// channels so that repeated ids never race.
func (b *Backend) EmbeddingBackward(dtable, dout []float32, ids []int32, N, C, V int) {
	op := "EmbeddingBackward"
	kernels.NeedSizes(op, N, C, V)
	kernels.Need(op, "dtable", len(dtable), V*C)
	kernels.Need(op, "dout", len(dout), N*C)
	kernels.Need(op, "ids", len(ids), N)
	kernels.NeedIDs(op, ids[:N], 0, V)
	b.parallel(C, N, func(lo, hi int) {
		for n := 0; n < N; n++ {
			id := int(ids[n])
			dst, src := dtable[id*C+lo:id*C+hi], dout[n*C+lo:n*C+hi]
			for c := range dst {
				dst[c] += src[c]
			}
		}
	})
}

// AdamW: one torch.optim.AdamW step on param, m, v [n] (see kernels.Backend).
func (b *Backend) AdamW(param, grad, m, v []float32, n, step int, h kernels.AdamWParams) {
	op := "AdamW"
	kernels.NeedAdamW(op, param, grad, m, v, n, step)
	b1, b2 := h.Beta1, h.Beta2
	decay := 1 - h.LR*h.WeightDecay
	stepSize := float32(float64(h.LR) / (1 - math.Pow(float64(b1), float64(step))))
	bc2Sqrt := float32(math.Sqrt(1 - math.Pow(float64(b2), float64(step))))
	b.parallel(n, 8, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			g := grad[i]
			mi := b1*m[i] + (1-b1)*g
			vi := b2*v[i] + (1-b2)*g*g
			denom := float32(math.Sqrt(float64(vi)))/bc2Sqrt + h.Eps
			param[i] = param[i]*decay - stepSize*mi/denom
			m[i], v[i] = mi, vi
		}
	})
}

// Add: out [n] = a + b.
func (b *Backend) Add(out, a, bb []float32, n int) {
	kernels.NeedSizes("Add", n)
	kernels.Need("Add", "out", len(out), n)
	kernels.Need("Add", "a", len(a), n)
	kernels.Need("Add", "b", len(bb), n)
	b.parallel(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = a[i] + bb[i]
		}
	})
}

// Scale: out [n] = s·a.
func (b *Backend) Scale(out, a []float32, s float32, n int) {
	kernels.NeedSizes("Scale", n)
	kernels.Need("Scale", "out", len(out), n)
	kernels.Need("Scale", "a", len(a), n)
	b.parallel(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = s * a[i]
		}
	})
}

// AXPY: out [n] += s·a.
func (b *Backend) AXPY(out, a []float32, s float32, n int) {
	kernels.NeedSizes("AXPY", n)
	kernels.Need("AXPY", "out", len(out), n)
	kernels.Need("AXPY", "a", len(a), n)
	b.parallel(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] += s * a[i]
		}
	})
}

// AddScalar: out [n] = a + s.
func (b *Backend) AddScalar(out, a []float32, s float32, n int) {
	kernels.NeedSizes("AddScalar", n)
	kernels.Need("AddScalar", "out", len(out), n)
	kernels.Need("AddScalar", "a", len(a), n)
	b.parallel(n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = a[i] + s
		}
	})
}

// SumSquares returns Σ x[i]² in float64, on the calling goroutine in four
// interleaved partial sums (i mod 4) added at the end: the same order for
// any number of workers, so a resumed run reproduces its clipping.
func (b *Backend) SumSquares(x []float32, n int) float64 {
	kernels.NeedSizes("SumSquares", n)
	kernels.Need("SumSquares", "x", len(x), n)
	x = x[:n]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= n; i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < n; i++ {
		v := float64(x[i])
		s0 += v * v
	}
	return (s0 + s1) + (s2 + s3)
}

// Copy: dst [n] = src (Go's copy, split across the workers when large).
func (b *Backend) Copy(dst, src []float32, n int) {
	kernels.NeedSizes("Copy", n)
	kernels.Need("Copy", "dst", len(dst), n)
	kernels.Need("Copy", "src", len(src), n)
	b.parallel(n, 1, func(lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}

// Zero: x [n] = 0 (Go's clear, split across the workers when large).
func (b *Backend) Zero(x []float32, n int) {
	kernels.NeedSizes("Zero", n)
	kernels.Need("Zero", "x", len(x), n)
	b.parallel(n, 1, func(lo, hi int) { clear(x[lo:hi]) })
}
