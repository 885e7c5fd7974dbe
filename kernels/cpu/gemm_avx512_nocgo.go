//go:build !cgo

package cpu

// avx512 needs cgo (C intrinsics): without it pickGEMM never offers it.
var (
	avx512    sgemmFunc
	avx512B16 sgemmB16Func
)

// vec is empty without cgo: the element-wise ops use their Go loops.
var vec vecKernels

type vecKernels struct {
	swigluFwd   func(out, gate, up []float32)
	swigluBwd   func(dgate, dup, dout, gate, up []float32)
	rowMax      func(x []float32) float32
	expSums     func(x []float32, mu float32) (s, t float64)
	logprobGrad func(row []float32, l, dl, de, H float32)
	expShift    func(dst, x []float32, mu, scale float32) float64
}
