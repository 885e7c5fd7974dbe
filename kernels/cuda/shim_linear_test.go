package cuda_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// The ops of ops_misc.go, ops_linear.go and ops_logprob.go on the CPU
// shim: shimBackend's methods below run their plans, kernels on the shim
// and GEMMs from the BLAS definition (hostGemm), in the exact precision;
// shimBF16 runs the bfloat16-weight products in kernels.PrecisionBF16.

// shimChunkRows is the exact mode's weight rows a chunk on the shim: small,
// so that kerneltest's shapes take several chunks, and a last short one.
const shimChunkRows = 16

// hostGemm is one GEMM of a plan on host slices (Batch of them at their
// strides), from the definition
// (float64 sums rounded once, as the fake cuBLAS computes it), bfloat16
// operands ([]uint16) widened exactly, TF32 ones rounded as the fake
// rounds them (cudafake.RoundTF32); a bfloat16 C (CBF16, []uint16) read
// widened and stored rounded by kernels.BF16 from the float32 result.
func hostGemm(g cuda.Mm) {
	lda, ldb, ldc := cuda.MmLDs(g)
	at := func(x any, off, i int) float64 {
		if g.BF16 {
			return float64(kernels.F32(x.([]uint16)[off+i]))
		}
		if g.TF32 {
			return float64(cudafake.RoundTF32(x.([]float32)[off+i]))
		}
		return float64(x.([]float32)[off+i])
	}
	cat := func(k int) float64 {
		if g.CBF16 {
			return float64(kernels.F32(g.C.([]uint16)[k]))
		}
		return float64(g.C.([]float32)[k])
	}
	cset := func(k int, v float32) {
		if g.CBF16 {
			g.C.([]uint16)[k] = kernels.BF16(v)
			return
		}
		g.C.([]float32)[k] = v
	}
	for b := range max(g.Batch, 1) {
		offA, offB, offC := g.OffA+b*g.StrideA, g.OffB+b*g.StrideB, g.OffC+b*g.StrideC
		for i := range g.M {
			for j := range g.N {
				var s float64
				for l := range g.K {
					ai, bi := i*lda+l, l*ldb+j
					if g.TransA {
						ai = l*lda + i
					}
					if g.TransB {
						bi = j*ldb + l
					}
					s += at(g.A, offA, ai) * at(g.B, offB, bi)
				}
				k := offC + i*ldc + j
				if g.Beta != 0 {
					s += float64(g.Beta) * cat(k)
				}
				cset(k, float32(s))
			}
		}
	}
}

// runX runs a plan of ops_linear.go or ops_logprob.go; a failure panics.
func (h shimHarness) runX(steps []cuda.XStep) {
	for _, s := range steps {
		k, g := cuda.StepParts(s)
		if g != nil {
			hostGemm(*g)
			continue
		}
		if err := h.run(*k); err != nil {
			panic("CUDA kernel on the CPU shim: " + err.Error())
		}
	}
}

func (b shimBackend) GeGLUForward(out, gate, up []float32, n int) {
	b.h.runPlan(cuda.PlanFlat("geglu_forward", n, out, gate, up, n))
}

func (b shimBackend) GeGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	b.h.runPlan(cuda.PlanFlat("geglu_backward", n, dgate, dup, dout, gate, up, n))
}

func (b shimBackend) AddScalar(out, a []float32, s float32, n int) {
	b.h.runPlan(cuda.PlanFlat("add_scalar", n, out, a, s, n))
}

func (b shimBackend) Copy(dst, src []float32, n int) {
	b.h.runPlan(cuda.PlanFlat("copy_f32", n, dst, src, n))
}

func (b shimBackend) Zero(x []float32, n int) {
	b.h.runPlan(cuda.PlanFlat("zero_f32", n, x, n))
}

func (b shimBackend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	b.h.runX(cuda.PlanLinearForward(out, inp, weight, bias, bias != nil, N, C, OC))
}

func (b shimBackend) LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	b.h.runX(cuda.PlanLinearBackward(dinp, dweight, dbias, dout, inp, weight, dinp != nil, dweight != nil, dbias != nil, N, C, OC))
}

func (b shimBackend) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	linearForwardBF16(b.h, kernels.PrecisionF32, out, inp, weight, bias, N, C, OC)
}

func (b shimBackend) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	linearBackwardBF16(b.h, kernels.PrecisionF32, dinp, dout, weight, N, C, OC)
}

func linearForwardBF16(h shimHarness, p kernels.Precision, out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	wf, xb := make([]float32, min(shimChunkRows, OC)*C), make([]uint16, N*C)
	h.runX(cuda.PlanLinearForwardBF16(out, inp, weight, bias, wf, xb, bias != nil, 0, p, N, C, OC, shimChunkRows))
}

func linearBackwardBF16(h shimHarness, p kernels.Precision, dinp, dout []float32, weight []uint16, N, C, OC int) {
	wf, db := make([]float32, min(shimChunkRows, OC)*C), make([]uint16, N*OC)
	h.runX(cuda.PlanLinearBackwardBF16(dinp, dout, weight, wf, db, p, N, C, OC, shimChunkRows))
}

// lmScratch makes a logprob plan's scratch on the host (all of it, used or
// not): z [N, chunk], state [5N], and the bfloat16 modes' buffers.
func lmScratch(N, C, V, chunk int) (z, state []float32, sc cuda.LMScratch) {
	cl := cuda.LogprobChunk(chunk, V)
	return make([]float32, N*cl), make([]float32, 5*N), cuda.NewLMScratch(make([]float32, cl*C), make([]uint16, N*C), make([]uint16, N*cl))
}

func (b shimBackend) LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	z, state, _ := lmScratch(N, C, V, chunk)
	b.h.runPlan(cuda.PlanLogprob(hostView, logprob, entropy, lse, expect, hidden, weight, targets, z, state, expect != nil, N, C, V, chunk))
}

func (b shimBackend) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	logprobForwardBF16(b.h, kernels.PrecisionF32, logprob, entropy, lse, expect, hidden, weight, targets, N, C, V, chunk)
}

func logprobForwardBF16(h shimHarness, p kernels.Precision, logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	z, state, sc := lmScratch(N, C, V, chunk)
	h.runX(cuda.PlanLogprobW(cuda.LMWeight(true, p), logprob, entropy, lse, expect, hidden, weight, targets, z, state, sc, expect != nil, N, C, V, chunk))
}

func (b shimBackend) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	z, _, sc := lmScratch(N, C, V, chunk)
	b.h.runX(cuda.PlanLogprobBackward(cuda.LMWeight(false, kernels.PrecisionF32), dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight, targets, z, sc, dweight != nil, N, C, V, chunk))
}

func (b shimBackend) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	logprobBackwardBF16(b.h, kernels.PrecisionF32, dhidden, dlogprob, dentropy, lse, entropy, hidden, weight, targets, N, C, V, chunk)
}

func logprobBackwardBF16(h shimHarness, p kernels.Precision, dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	z, _, sc := lmScratch(N, C, V, chunk)
	h.runX(cuda.PlanLogprobBackward(cuda.LMWeight(true, p), dhidden, nil, dlogprob, dentropy, lse, entropy, hidden, weight, targets, z, sc, false, N, C, V, chunk))
}

func (b shimBackend) LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int) {
	b.h.runPlan(cuda.PlanRows("logprob_backward_expect", N, C, dhidden, dlogprob, expect, weight, targets, C, V))
}

func (b shimBackend) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	b.h.runPlan(cuda.PlanRows("logprob_bwd_expect_bf16", N, C, dhidden, dlogprob, expect, weight, targets, C, V))
}

// shimBF16 is shimBackend with the products on bfloat16 weights in
// kernels.PrecisionBF16: kerneltest checks them against ref on the
// rounded activation and against the float32 op at the mode's bound.
type shimBF16 struct{ shimBackend }

func (shimBF16) Precision() kernels.Precision { return kernels.PrecisionBF16 }

func (b shimBF16) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	linearForwardBF16(b.h, kernels.PrecisionBF16, out, inp, weight, bias, N, C, OC)
}

func (b shimBF16) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	linearBackwardBF16(b.h, kernels.PrecisionBF16, dinp, dout, weight, N, C, OC)
}

func (b shimBF16) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	logprobForwardBF16(b.h, kernels.PrecisionBF16, logprob, entropy, lse, expect, hidden, weight, targets, N, C, V, chunk)
}

func (b shimBF16) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	logprobBackwardBF16(b.h, kernels.PrecisionBF16, dhidden, dlogprob, dentropy, lse, entropy, hidden, weight, targets, N, C, V, chunk)
}

// logprobBF16OnShim runs the bfloat16-weight logprob ops in the exact
// precision (the weight chunks widened for a float32 GEMM) against
// kernels/ref on a few of the logprob shapes (kerneltest's LogprobBF16
// group runs them all in the bf16 precision; its exact run here would
// repeat the Logprob group's launches at twice the time).
func logprobBF16OnShim(t *testing.T, h shimHarness) {
	b := shimBackend{h: h}
	r := rand.New(rand.NewPCG(28, 13))
	for _, s := range [][4]int{{1, 4, 7, 0}, {2, 8, 100, 16}, {3, 8, 50, 50}} {
		N, C, V, chunk := s[0], s[1], s[2], s[3]
		t.Run(fmt.Sprintf("N=%d,C=%d,V=%d,chunk=%d", N, C, V, chunk), func(t *testing.T) {
			hidden, w := randn(r, N*C), randn(r, V*C)
			wh := make([]uint16, V*C)
			kernels.ToBF16(wh, w)
			targets := logprobTargets(r, N, V)
			want := [4][]float32{make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N*C)}
			ref.New().LogprobForwardBF16(want[0], want[1], want[2], want[3], hidden, wh, targets, N, C, V, chunk)
			got := [4][]float32{make([]float32, N), make([]float32, N), make([]float32, N), make([]float32, N*C)}
			b.LogprobForwardBF16(got[0], got[1], got[2], got[3], hidden, wh, targets, N, C, V, chunk)
			for i, what := range []string{"logprob", "entropy", "lse", "expect"} {
				near(t, what, got[i], want[i], kerneltest.F32Tol)
			}
			dlp, dent, dh := randn(r, N), randn(r, N), randn(r, N*C)
			wdh, gdh := append([]float32(nil), dh...), append([]float32(nil), dh...)
			ref.New().LogprobBackwardBF16(wdh, dlp, dent, want[2], want[1], hidden, wh, targets, N, C, V, chunk)
			b.LogprobBackwardBF16(gdh, dlp, dent, want[2], want[1], hidden, wh, targets, N, C, V, chunk)
			near(t, "dhidden", gdh, wdh, 1e-4)
			wdh, gdh = append([]float32(nil), dh...), append([]float32(nil), dh...)
			ref.New().LogprobBackwardExpectBF16(wdh, dlp, want[3], wh, targets, N, C, V)
			b.LogprobBackwardExpectBF16(gdh, dlp, want[3], wh, targets, N, C, V)
			near(t, "dhidden from expect", gdh, wdh, kerneltest.F32Tol)
		})
	}
}
