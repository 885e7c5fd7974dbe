package grpo

import (
	"fmt"
	"math"
)

// Scale says how group advantages are divided after centring.
type Scale string

const (
	ScaleGroup Scale = "group" // A = (r − mean_g) / (std_g + 1e-6)
	ScaleBatch Scale = "batch" // A = (r − mean_g) / (std_batch + 1e-6)
	ScaleNone  Scale = "none"  // A = r − mean_g (Dr. GRPO)
)

// ParseScale checks a --scale-rewards value.
func ParseScale(s string) (Scale, error) {
	switch Scale(s) {
	case ScaleGroup, ScaleBatch, ScaleNone:
		return Scale(s), nil
	}
	return "", fmt.Errorf("grpo: scale-rewards %q: want group, batch or none", s)
}

// stdEps is added to the standard deviation before dividing (ART's value).
const stdEps = 1e-6

// Advantages returns A[g][i] for the rewards r[g][i] of each group g:
//
//	A = r − mean(r[g])                    (none)
//	A = (r − mean(r[g])) / (std(r[g]) + ε) (group)
//	A = (r − mean(r[g])) / (std(all) + ε)  (batch)
//
// with population standard deviations and ε = 1e-6. A group whose rewards
// are all equal gets exactly zero advantages (no rounding residue), so its
// trajectories are dropped by the caller.
func Advantages(r [][]float64, s Scale) [][]float64 {
	out := make([][]float64, len(r))
	batchStd := 0.0
	if s == ScaleBatch {
		var all []float64
		for _, g := range r {
			all = append(all, g...)
		}
		_, batchStd = meanStd(all)
	}
	for g, rs := range r {
		out[g] = make([]float64, len(rs))
		if allEqual(rs) {
			continue
		}
		mean, std := meanStd(rs)
		div := 1.0
		switch s {
		case ScaleGroup:
			div = std + stdEps
		case ScaleBatch:
			div = batchStd + stdEps
		}
		for i, x := range rs {
			out[g][i] = (x - mean) / div
		}
	}
	return out
}

func allEqual(xs []float64) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// meanStd returns the mean and the population standard deviation.
func meanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)))
}
