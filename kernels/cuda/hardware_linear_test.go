package cuda_test

import (
	"math/rand/v2"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
)

// deviceBackend's ops of ops_misc.go, ops_linear.go and ops_logprob.go
// (TestKernelsOnHardware): bfloat16 weights go up with UploadBF16, in the
// precision b.ops was set to; deviceBF16 reports kernels.PrecisionBF16 for
// an Ops set to it, so that kerneltest checks that mode's bounds.

type deviceBF16 struct{ deviceBackend }

func (deviceBF16) Precision() kernels.Precision { return kernels.PrecisionBF16 }

// bf16Buf uploads bfloat16 values to a fresh buffer; free it after.
func (b deviceBackend) bf16Buf(x []uint16) *cuda.Buffer {
	d, err := b.dev.Alloc(max(1, (len(x)+1)/2))
	if err != nil {
		panic(err)
	}
	if len(x) > 0 {
		if err := d.UploadBF16(x); err != nil {
			panic(err)
		}
	}
	return d
}

type bufs = func([]float32) *cuda.Buffer
type ibufs = func([]int32) *cuda.Buffer

func (b deviceBackend) GeGLUForward(out, gate, up []float32, n int) {
	b.call("GeGLUForward", func(buf bufs, _ ibufs) error { return b.ops.GeGLUForward(buf(out), buf(gate), buf(up), n) })
}

func (b deviceBackend) GeGLUBackward(dgate, dup, dout, gate, up []float32, n int) {
	b.call("GeGLUBackward", func(buf bufs, _ ibufs) error {
		return b.ops.GeGLUBackward(buf(dgate), buf(dup), buf(dout), buf(gate), buf(up), n)
	})
}

func (b deviceBackend) AddScalar(out, a []float32, s float32, n int) {
	b.call("AddScalar", func(buf bufs, _ ibufs) error { return b.ops.AddScalar(buf(out), buf(a), s, n) })
}

func (b deviceBackend) Copy(dst, src []float32, n int) {
	b.call("Copy", func(buf bufs, _ ibufs) error { return b.ops.Copy(buf(dst), buf(src), n) })
}

func (b deviceBackend) Zero(x []float32, n int) {
	b.call("Zero", func(buf bufs, _ ibufs) error { return b.ops.Zero(buf(x), n) })
}

func (b deviceBackend) LinearForward(out, inp, weight, bias []float32, N, C, OC int) {
	b.call("LinearForward", func(buf bufs, _ ibufs) error {
		return b.ops.LinearForward(buf(out), buf(inp), buf(weight), buf(bias), N, C, OC)
	})
}

func (b deviceBackend) LinearBackward(dinp, dweight, dbias, dout, inp, weight []float32, N, C, OC int) {
	b.call("LinearBackward", func(buf bufs, _ ibufs) error {
		return b.ops.LinearBackward(buf(dinp), buf(dweight), buf(dbias), buf(dout), buf(inp), buf(weight), N, C, OC)
	})
}

func (b deviceBackend) LinearForwardBF16(out, inp []float32, weight []uint16, bias []float32, N, C, OC int) {
	w := b.bf16Buf(weight)
	defer w.Free()
	b.call("LinearForwardBF16", func(buf bufs, _ ibufs) error {
		return b.ops.LinearForwardBF16(buf(out), buf(inp), w, buf(bias), N, C, OC)
	})
}

func (b deviceBackend) LinearBackwardBF16(dinp, dout []float32, weight []uint16, N, C, OC int) {
	w := b.bf16Buf(weight)
	defer w.Free()
	b.call("LinearBackwardBF16", func(buf bufs, _ ibufs) error {
		return b.ops.LinearBackwardBF16(buf(dinp), buf(dout), w, N, C, OC)
	})
}

func (b deviceBackend) LogprobForward(logprob, entropy, lse, expect, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	b.call("LogprobForward", func(buf bufs, ibuf ibufs) error {
		return b.ops.LogprobForward(buf(logprob), buf(entropy), buf(lse), buf(expect), buf(hidden), buf(weight), ibuf(targets), N, C, V, chunk)
	})
}

func (b deviceBackend) LogprobForwardBF16(logprob, entropy, lse, expect, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	w := b.bf16Buf(weight)
	defer w.Free()
	b.call("LogprobForwardBF16", func(buf bufs, ibuf ibufs) error {
		return b.ops.LogprobForwardBF16(buf(logprob), buf(entropy), buf(lse), buf(expect), buf(hidden), w, ibuf(targets), N, C, V, chunk)
	})
}

func (b deviceBackend) LogprobBackward(dhidden, dweight, dlogprob, dentropy, lse, entropy, hidden, weight []float32, targets []int32, N, C, V, chunk int) {
	b.call("LogprobBackward", func(buf bufs, ibuf ibufs) error {
		return b.ops.LogprobBackward(buf(dhidden), buf(dweight), buf(dlogprob), buf(dentropy), buf(lse), buf(entropy), buf(hidden), buf(weight), ibuf(targets), N, C, V, chunk)
	})
}

func (b deviceBackend) LogprobBackwardBF16(dhidden, dlogprob, dentropy, lse, entropy, hidden []float32, weight []uint16, targets []int32, N, C, V, chunk int) {
	w := b.bf16Buf(weight)
	defer w.Free()
	b.call("LogprobBackwardBF16", func(buf bufs, ibuf ibufs) error {
		return b.ops.LogprobBackwardBF16(buf(dhidden), buf(dlogprob), buf(dentropy), buf(lse), buf(entropy), buf(hidden), w, ibuf(targets), N, C, V, chunk)
	})
}

func (b deviceBackend) LogprobBackwardExpect(dhidden, dlogprob, expect, weight []float32, targets []int32, N, C, V int) {
	b.call("LogprobBackwardExpect", func(buf bufs, ibuf ibufs) error {
		return b.ops.LogprobBackwardExpect(buf(dhidden), buf(dlogprob), buf(expect), buf(weight), ibuf(targets), N, C, V)
	})
}

func (b deviceBackend) LogprobBackwardExpectBF16(dhidden, dlogprob, expect []float32, weight []uint16, targets []int32, N, C, V int) {
	w := b.bf16Buf(weight)
	defer w.Free()
	b.call("LogprobBackwardExpectBF16", func(buf bufs, ibuf ibufs) error {
		return b.ops.LogprobBackwardExpectBF16(buf(dhidden), buf(dlogprob), buf(expect), w, ibuf(targets), N, C, V)
	})
}

// TestLinearOnHardware runs the ops of ops_misc.go, ops_linear.go and
// ops_logprob.go (cuBLAS GEMMs, GemmEx in the bf16 precision, and their
// kernels' embedded PTX) through kerneltest's conformance cases for them,
// in both precisions (AddScalar is in TestKernelsOnHardware's Elementwise
// group); then, unless -test.short (run.sh's memcheck step), the Linear
// ops on a 7B-shaped layer (C = 3584, so the exact mode's bfloat16 weight
// takes two chunks of widened rows) and the chunked logprob backward over
// Qwen's vocabulary, against kernels/ref.
func TestLinearOnHardware(t *testing.T) {
	dev := openHardware(t)
	defer dev.Close()
	r := rand.New(rand.NewPCG(28, 14))
	for _, prec := range []kernels.Precision{kernels.PrecisionF32, kernels.PrecisionBF16} {
		t.Run(prec.String(), func(t *testing.T) {
			ops, err := dev.LoadOps()
			if err != nil {
				t.Fatal(err)
			}
			defer ops.Unload()
			if err := ops.SetPrecision(prec); err != nil {
				t.Fatal(err)
			}
			b := deviceBackend{dev: dev, ops: ops}
			if prec == kernels.PrecisionF32 {
				kerneltest.RunOps(t, b, "GeGLU", "CopyZero", "Linear", "LinearBF16", "Logprob", "LogprobBF16")
			} else {
				kerneltest.RunOps(t, deviceBF16{b}, "LinearBF16", "LogprobBF16")
			}
			if testing.Short() {
				return // the conformance cases only
			}
			act := func(x []float32) []float32 {
				if prec == kernels.PrecisionF32 {
					return x
				}
				y := make([]float32, len(x))
				for i, v := range x {
					y[i] = kernels.F32(kernels.BF16(v))
				}
				return y
			}
			const N, C, OC = 16, 3584, 2*3584 + 17 // 8192·1024 floats of scratch hold 2340 rows of 3584
			if cuda.BF16ChunkRows(C) >= OC {
				t.Fatalf("%d rows a chunk: the shape no longer takes several", cuda.BF16ChunkRows(C))
			}
			inp, w, bias, dout := randnPar(r, N*C, 1), randnPar(r, OC*C, 0.02), randnPar(r, OC, 1), randnPar(r, N*OC, 1)
			wh := make([]uint16, OC*C)
			kernels.ToBF16(wh, w)
			want, got := make([]float32, N*OC), make([]float32, N*OC)
			ref.New().LinearForwardBF16(want, act(inp), wh, bias, N, C, OC)
			b.LinearForwardBF16(got, inp, wh, bias, N, C, OC)
			near(t, "LinearForwardBF16", got, want, kerneltest.F32Tol)
			wdi, gdi := make([]float32, N*C), make([]float32, N*C)
			ref.New().LinearBackwardBF16(wdi, act(dout), wh, N, C, OC)
			b.LinearBackwardBF16(gdi, dout, wh, N, C, OC)
			near(t, "LinearBackwardBF16", gdi, wdi, kerneltest.F32Tol)

			const LN, LC, V = 4, 128, 151936 // Qwen's vocabulary, 4096-column chunks
			hidden, lw := randnPar(r, LN*LC, 1), randnPar(r, V*LC, 1)
			lwh := make([]uint16, V*LC)
			kernels.ToBF16(lwh, lw)
			targets := logprobTargets(r, LN, V)
			lp, ent, lse := make([]float32, LN), make([]float32, LN), make([]float32, LN)
			ref.New().LogprobForwardBF16(lp, ent, lse, nil, act(hidden), lwh, targets, LN, LC, V, 0)
			dlp, dent := randn(r, LN), randn(r, LN)
			wdh, gdh := make([]float32, LN*LC), make([]float32, LN*LC)
			ref.New().LogprobBackwardBF16(wdh, dlp, dent, lse, ent, act(hidden), lwh, targets, LN, LC, V, 0)
			b.LogprobBackwardBF16(gdh, dlp, dent, lse, ent, hidden, lwh, targets, LN, LC, V, 0)
			tol := 1e-4
			if prec == kernels.PrecisionBF16 { // dz is rounded to bfloat16 too
				_, tol = prec.Tolerance()
			}
			near(t, "LogprobBackwardBF16 dhidden", gdh, wdh, tol)
			if prec == kernels.PrecisionF32 {
				dw, gdw := make([]float32, V*LC), make([]float32, V*LC)
				wdh, gdh = make([]float32, LN*LC), make([]float32, LN*LC)
				ref.New().LogprobBackward(wdh, dw, dlp, dent, lse, ent, hidden, lw, targets, LN, LC, V, 0)
				b.LogprobBackward(gdh, gdw, dlp, dent, lse, ent, hidden, lw, targets, LN, LC, V, 0)
				near(t, "LogprobBackward dhidden", gdh, wdh, 1e-4)
				near(t, "LogprobBackward dweight", gdw, dw, 1e-4)
			}
		})
	}
}
