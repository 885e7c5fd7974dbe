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

// SumSquaresSegmenter is implemented by a backend that computes the sums
// of squares of many segments of one slice in one pass: kernels/cuda with
// one kernel launch for all (train/trainer's gradient norm and weight
// check over a flat adapter: 392 tensors on the 7B shape, where
// SumSquaresMany launches two kernels a tensor). Host backends (ref, cpu)
// do not implement it: the function SumSquaresSegments goes through
// SumSquaresMany for them.
type SumSquaresSegmenter interface {
	// SumSquaresSegments sets dst[i] to SumSquares(x[offs[i]:offs[i]+ns[i]],
	// ns[i]), bit for bit, for every i; the sizes are checked as
	// NeedSumSquaresSegments does.
	SumSquaresSegments(dst []float64, x []float32, offs, ns []int)
}

// SumSquaresSegments sets dst[i] = b.SumSquares(x[offs[i]:offs[i]+ns[i]],
// ns[i]) for every i: with b's SumSquaresSegmenter when b is one (the same
// bits, fewer launches), else by SumSquaresMany over the segments' views.
func SumSquaresSegments(b Backend, dst []float64, x []float32, offs, ns []int) {
	NeedSumSquaresSegments(dst, x, offs, ns)
	if s, ok := b.(SumSquaresSegmenter); ok {
		s.SumSquaresSegments(dst, x, offs, ns)
		return
	}
	xs := make([][]float32, len(offs))
	for i, off := range offs {
		xs[i] = x[off : off+ns[i] : off+ns[i]]
	}
	SumSquaresMany(b, dst, xs)
}

// NeedSumSquaresSegments panics, naming SumSquaresSegments, unless offs,
// ns and dst have one entry a segment and every segment lies within x:
// the size check of SumSquaresSegments, for its implementations.
func NeedSumSquaresSegments(dst []float64, x []float32, offs, ns []int) {
	if len(offs) != len(ns) || len(dst) != len(ns) {
		panic(fmt.Sprintf("kernels.SumSquaresSegments: %d offsets, %d lengths, dst holds %d values", len(offs), len(ns), len(dst)))
	}
	for i, off := range offs {
		if off < 0 || ns[i] < 0 || off > len(x) || ns[i] > len(x)-off {
			panic(fmt.Sprintf("kernels.SumSquaresSegments: segment %d (offset %d, %d values) outside x of %d", i, off, ns[i], len(x)))
		}
	}
}
