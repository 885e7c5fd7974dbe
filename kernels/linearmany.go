package kernels

import "fmt"

// LinearManyBF16er is implemented by a backend that multiplies one input
// by several bfloat16 weights for less than one LinearForwardBF16 each:
// kernels/cuda's bf16 precision rounds the input to bfloat16 before every
// product, so q, k and v (and gate and up) rounded the same [N, C]
// activation three (two) times. Host backends do not implement it: the
// function LinearForwardBF16Many calls LinearForwardBF16 for them.
type LinearManyBF16er interface {
	// LinearForwardBF16Many sets, for every i, outs[i] [N, OCs[i]] to
	// LinearForwardBF16(outs[i], inp, weights[i], biases[i], N, C, OCs[i])
	// would give, bit for bit. The outputs must not overlap inp or each
	// other.
	LinearForwardBF16Many(outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int)
}

// LinearForwardBF16Many computes outs[i] = inp·weights[i]ᵀ + biases[i] for
// every i (biases[i] nil: none; biases itself nil: none at all), with b's
// LinearManyBF16er when b is one, else one LinearForwardBF16 each, in
// order.
func LinearForwardBF16Many(b Backend, outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int) {
	NeedLinearMany("LinearForwardBF16Many", len(outs), len(weights), len(biases), len(OCs))
	if m, ok := b.(LinearManyBF16er); ok {
		m.LinearForwardBF16Many(outs, inp, weights, biases, N, C, OCs)
		return
	}
	for i := range outs {
		var bias []float32
		if biases != nil {
			bias = biases[i]
		}
		b.LinearForwardBF16(outs[i], inp, weights[i], bias, N, C, OCs[i])
	}
}

// NeedLinearMany panics unless LinearForwardBF16Many's lists agree in
// length (biases may be nil).
func NeedLinearMany(op string, outs, weights, biases, ocs int) {
	if weights != outs || ocs != outs || (biases != 0 && biases != outs) {
		panic(fmt.Sprintf("kernels.%s: %d outputs, %d weights, %d biases, %d output sizes", op, outs, weights, biases, ocs))
	}
}

// LinearAdderBF16 is implemented by a backend whose bfloat16 linear
// products can add onto their outputs for no more than it costs to write
// them: on kernels/cuda every product is a GEMM, whose epilogue reads the
// output (beta 1) behind a compute-bound product (K = C, hundreds to
// thousands of multiply-adds an output value). The model's LoRA forward
// then writes the rank-r product out = u·Bᵀ first (a bandwidth-bound
// Matmul that only writes out) and lets the base product add onto it,
// rather than the rank-r product reading and writing the whole out after
// the base product wrote it (train/model's TestStepTraffic7B counts it).
// Host backends (ref, cpu), whose base products would read out again for
// the add, do not implement it.
//
// Bits: without a bias, an added output is fl(p + o) for the product p
// and the value o it held, the sum the other order (o added onto p by a
// beta-1 Matmul) forms, float32 addition being commutative, as long as
// each product's own sum is unchanged and its epilogue adds in float32,
// as cuBLAS's does (kernels/cuda's fake cuBLAS adds in float64 before its
// one rounding, so on the emulated device these bits move too). With a
// bias the sums associate the other way, ((o + p) + b) rather than
// ((p + b) + o): the last bits may differ.
type LinearAdderBF16 interface {
	// LinearForwardBF16ManyAdd is LinearForwardBF16Many whose products
	// add where add[i]: outs[i] [N, OCs[i]] += inp·weights[i]ᵀ, then
	// biases[i] (a nil biases or biases[i]: none); where not, outs[i] is
	// set, LinearForwardBF16Many's bits. The outputs must not overlap inp
	// or each other.
	LinearForwardBF16ManyAdd(outs [][]float32, inp []float32, weights [][]uint16, biases [][]float32, N, C int, OCs []int, add []bool)
}
