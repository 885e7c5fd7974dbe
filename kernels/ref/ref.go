package ref

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// Backend is the reference backend. The zero value is ready to use.
type Backend struct{}

var _ kernels.Backend = Backend{}

// New returns the reference backend.
func New() Backend { return Backend{} }

// Name returns "ref".
func (Backend) Name() string { return "ref" }

// Close does nothing: ref owns no resources.
func (Backend) Close() error { return nil }

// ---- matrix products ----------------------------------------------------

// Matmul: c [M,N] = op(a)·op(b) + beta·c.
func (Backend) Matmul(c, a, b []float32, M, N, K int, transA, transB bool, beta float32) {
	kernels.NeedSizes("Matmul", M, N, K)
	kernels.Need("Matmul", "c", len(c), M*N)
	kernels.Need("Matmul", "a", len(a), M*K)
	kernels.Need("Matmul", "b", len(b), K*N)
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var s float64
			for p := 0; p < K; p++ {
				av := a[i*K+p] // a [M, K]
				if transA {
					av = a[p*M+i] // a [K, M]
				}
				bv := b[p*N+j] // b [K, N]
				if transB {
					bv = b[j*K+p] // b [N, K]
				}
				s += float64(av) * float64(bv)
			}
			if beta != 0 {
				s += float64(beta) * float64(c[i*N+j])
			}
			c[i*N+j] = float32(s)
		}
	}
}

// MatmulBatched: batch Matmuls on consecutive blocks.
func (r Backend) MatmulBatched(c, a, b []float32, batch, M, N, K int, transA, transB bool, beta float32) {
	kernels.NeedSizes("MatmulBatched", batch, M, N, K)
	kernels.Need("MatmulBatched", "c", len(c), batch*M*N)
	kernels.Need("MatmulBatched", "a", len(a), batch*M*K)
	kernels.Need("MatmulBatched", "b", len(b), batch*K*N)
	for i := 0; i < batch; i++ {
		r.Matmul(c[i*M*N:(i+1)*M*N], a[i*M*K:(i+1)*M*K], b[i*K*N:(i+1)*K*N], M, N, K, transA, transB, beta)
	}
}

// LinearForward: out [N,OC] = inp [N,C] · weight [OC,C]ᵀ + bias [OC].
func (Backend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	linearForward("LinearForward", out, inp, func(i int) float32 { return weight[i] }, len(weight), bias, N, C, OC)
}

// LinearForwardBF16 is LinearForward with a bfloat16 weight [OC,C].
func (Backend) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	linearForward("LinearForwardBF16", out, inp, func(i int) float32 { return kernels.F32(weight[i]) }, len(weight), bias, N, C, OC)
}

func linearForward(op string, out, inp []float32, w func(int) float32, nw int, bias []float32, N, C, OC int) {
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "out", len(out), N*OC)
	kernels.Need(op, "inp", len(inp), N*C)
	kernels.Need(op, "weight", nw, OC*C)
	if bias != nil {
		kernels.Need(op, "bias", len(bias), OC)
	}
	for n := 0; n < N; n++ {
		for o := 0; o < OC; o++ {
			var s float64
			if bias != nil {
				s = float64(bias[o])
			}
			for c := 0; c < C; c++ {
				s += float64(inp[n*C+c]) * float64(w(o*C+c))
			}
			out[n*OC+o] = float32(s)
		}
	}
}

// LinearBackward accumulates dinp, dweight, dbias (each may be nil).
func (Backend) LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	op := "LinearBackward"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dout", len(dout), N*OC)
	if dinp != nil {
		kernels.Need(op, "dinp", len(dinp), N*C)
		kernels.Need(op, "weight", len(weight), OC*C)
		for n := 0; n < N; n++ {
			for c := 0; c < C; c++ {
				var s float64
				for o := 0; o < OC; o++ {
					s += float64(dout[n*OC+o]) * float64(weight[o*C+c])
				}
				dinp[n*C+c] += float32(s)
			}
		}
	}
	if dweight != nil {
		kernels.Need(op, "dweight", len(dweight), OC*C)
		kernels.Need(op, "inp", len(inp), N*C)
		for o := 0; o < OC; o++ {
			for c := 0; c < C; c++ {
				var s float64
				for n := 0; n < N; n++ {
					s += float64(dout[n*OC+o]) * float64(inp[n*C+c])
				}
				dweight[o*C+c] += float32(s)
			}
		}
	}
	if dbias != nil {
		kernels.Need(op, "dbias", len(dbias), OC)
		for o := 0; o < OC; o++ {
			var s float64
			for n := 0; n < N; n++ {
				s += float64(dout[n*OC+o])
			}
			dbias[o] += float32(s)
		}
	}
}

// LinearBackwardBF16 accumulates dinp [N,C] += dout [N,OC] · weight [OC,C] (bf16).
func (Backend) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	op := "LinearBackwardBF16"
	kernels.NeedSizes(op, N, C, OC)
	kernels.Need(op, "dinp", len(dinp), N*C)
	kernels.Need(op, "dout", len(dout), N*OC)
	kernels.Need(op, "weight", len(weight), OC*C)
	for n := 0; n < N; n++ {
		for c := 0; c < C; c++ {
			var s float64
			for o := 0; o < OC; o++ {
				s += float64(dout[n*OC+o]) * float64(kernels.F32(weight[o*C+c]))
			}
			dinp[n*C+c] += float32(s)
		}
	}
}

// ---- normalisation, position, activation --------------------------------

// RMSNormForward: out [N,C], rstd [N] from inp [N,C], weight [C].
func (Backend) RMSNormForward(out, rstd, inp, weight []float32, N, C int, eps float32) {
	op := "RMSNormForward"
	kernels.NeedRMSNorm(op, out, rstd, inp, weight, N, C)
	for n := 0; n < N; n++ {
		x := inp[n*C : (n+1)*C] // [C]
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		r := 1 / math.Sqrt(ss/float64(C)+float64(eps))
		rstd[n] = float32(r)
		for c := range x {
			out[n*C+c] = float32(float64(x[c]) * r * float64(weight[c]))
		}
	}
}

// RMSNormBackward accumulates dinp [N,C] and dweight [C] (may be nil).
func (Backend) RMSNormBackward(dinp, dweight, dout, rstd, inp, weight []float32, N, C int) {
	op := "RMSNormBackward"
	kernels.NeedRMSNormBackward(op, dinp, dweight, dout, rstd, inp, weight, N, C)
	for n := 0; n < N; n++ {
		r := float64(rstd[n])
		var dot float64 // Σ_c g·x̂
		for c := 0; c < C; c++ {
			xh := float64(inp[n*C+c]) * r
			g := float64(dout[n*C+c]) * float64(weight[c])
			dot += g * xh
		}
		mean := dot / float64(C)
		for c := 0; c < C; c++ {
			xh := float64(inp[n*C+c]) * r
			g := float64(dout[n*C+c]) * float64(weight[c])
			dinp[n*C+c] += float32(r * (g - xh*mean))
			if dweight != nil {
				dweight[c] += float32(float64(dout[n*C+c]) * xh)
			}
		}
	}
}

// ropeAngle is the angle of rotary pair i at position pos, computed in float32
// as Hugging Face does (inv_freq ⊗ position_ids in float32), then cos/sin.
func ropeAngle(pos int32, invFreq float32) (cos, sin float64) {
	theta := float32(pos) * invFreq
	return math.Cos(float64(theta)), math.Sin(float64(theta))
}

// RoPEForward rotates the first R = 2·len(invFreq) dims of each head of inp
// [N,H,D] (rotate_half pairs (i, i+R/2)) into out [N,H,D]; out may equal inp.
func (Backend) RoPEForward(out, inp []float32, pos []int32, invFreq []float32, N, H, D int) {
	rope("RoPEForward", out, inp, pos, invFreq, N, H, D, 1, false)
}

// RoPEBackward accumulates dinp [N,H,D] += rotation by −θ of dout.
func (Backend) RoPEBackward(dinp, dout []float32, pos []int32, invFreq []float32, N, H, D int) {
	rope("RoPEBackward", dinp, dout, pos, invFreq, N, H, D, -1, true)
}

func rope(op string, out, inp []float32, pos []int32, invFreq []float32, N, H, D int, sign float64, accumulate bool) {
	kernels.NeedRoPE(op, sign < 0, out, inp, pos, invFreq, N, H, D)
	half := len(invFreq)
	x := make([]float64, D) // one head of inp, copied so out may alias inp
	for n := 0; n < N; n++ {
		for h := 0; h < H; h++ {
			base := (n*H + h) * D
			for d := 0; d < D; d++ {
				x[d] = float64(inp[base+d])
			}
			for d := 0; d < D; d++ {
				var y float64
				switch {
				case d < half:
					cos, sin := ropeAngle(pos[n], invFreq[d])
					y = x[d]*cos - sign*x[d+half]*sin
				case d < 2*half:
					cos, sin := ropeAngle(pos[n], invFreq[d-half])
					y = x[d]*cos + sign*x[d-half]*sin
				default:
					y = x[d]
				}
				if accumulate {
					out[base+d] += float32(y)
				} else {
					out[base+d] = float32(y)
				}
			}
		}
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// SwiGLUForward: out = silu(gate)·up over n values.
func (Backend) SwiGLUForward(out, gate, up []float32, n int) {
	op := "SwiGLUForward"
	kernels.NeedGatedForward(op, out, gate, up, n)
	for i := 0; i < n; i++ {
		g := float64(gate[i])
		out[i] = float32(g * sigmoid(g) * float64(up[i]))
	}
}

// SwiGLUBackward accumulates dgate and dup over n values.
func (Backend) SwiGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	op := "SwiGLUBackward"
	kernels.NeedGatedBackward(op, dgate, dup, dout, gate, up, n)
	for i := 0; i < n; i++ {
		g, u, d := float64(gate[i]), float64(up[i]), float64(dout[i])
		s := sigmoid(g)
		dgate[i] += float32(d * u * s * (1 + g*(1-s)))
		dup[i] += float32(d * g * s)
	}
}

// geluK is √(2/π), the tanh approximation's constant.
const geluK = 0.7978845608028654

// GeGLUForward: out = gelu_tanh(gate)·up over n values.
func (Backend) GeGLUForward(out, gate, up []float32, n int) {
	op := "GeGLUForward"
	kernels.NeedGatedForward(op, out, gate, up, n)
	for i := 0; i < n; i++ {
		x := float64(gate[i])
		t := math.Tanh(geluK * (x + 0.044715*x*x*x))
		out[i] = float32(0.5 * x * (1 + t) * float64(up[i]))
	}
}

// GeGLUBackward accumulates dgate and dup over n values.
func (Backend) GeGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	op := "GeGLUBackward"
	kernels.NeedGatedBackward(op, dgate, dup, dout, gate, up, n)
	for i := 0; i < n; i++ {
		x := float64(gate[i])
		t := math.Tanh(geluK * (x + 0.044715*x*x*x))
		g := 0.5 * x * (1 + t)
		dg := 0.5*(1+t) + 0.5*x*(1-t*t)*geluK*(1+3*0.044715*x*x)
		d := float64(dout[i])
		dgate[i] += float32(d * float64(up[i]) * dg)
		dup[i] += float32(d * g)
	}
}
