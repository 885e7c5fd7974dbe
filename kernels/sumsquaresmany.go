package kernels

import "fmt"

// SumSquaresManyer is implemented by a backend that computes the sums of
// squares of many tensors with fewer waits than one SumSquares a tensor:
// kernels/cuda queues every reduction and brings the results to the host
// by one copy, where each SumSquares waits for the device (the trainer's
// gradient norm and weight check ask for one a LoRA tensor: 784 on the 7B
// shape). Host backends (ref, cpu) do not implement it: the function
// SumSquaresMany loops over SumSquares for them.
type SumSquaresManyer interface {
	// SumSquaresMany sets dst[i] to SumSquares(xs[i], len(xs[i])), bit for
	// bit, for every i; len(dst) == len(xs), or it panics naming itself.
	SumSquaresMany(dst []float64, xs [][]float32)
}

// SumSquaresMany sets dst[i] = b.SumSquares(xs[i], len(xs[i])) for every i:
// with b's SumSquaresManyer when b is one (the same bits, fewer waits),
// else one SumSquares a tensor, in order.
func SumSquaresMany(b Backend, dst []float64, xs [][]float32) {
	NeedSumSquaresMany(dst, xs)
	if m, ok := b.(SumSquaresManyer); ok {
		m.SumSquaresMany(dst, xs)
		return
	}
	for i, x := range xs {
		dst[i] = b.SumSquares(x, len(x))
	}
}

// NeedSumSquaresMany panics unless dst holds one value for each of xs: the
// size check of SumSquaresMany, for its implementations.
func NeedSumSquaresMany(dst []float64, xs [][]float32) {
	if len(dst) != len(xs) {
		panic(fmt.Sprintf("kernels.SumSquaresMany: dst holds %d values for %d tensors", len(dst), len(xs)))
	}
}
