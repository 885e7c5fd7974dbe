package cuda_test

import (
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
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
