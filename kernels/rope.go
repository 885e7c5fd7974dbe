package kernels

import (
	"fmt"
	"math"
)

// RoPEConfig describes rotary position embedding as a Hugging Face config.json
// states it (rope_theta, partial_rotary_factor, rope_scaling).
type RoPEConfig struct {
	Theta     float64 // rope_theta, e.g. 1e6 (Qwen2.5) or 500000 (Llama 3)
	HeadDim   int     // D
	RotaryDim int     // R ≤ D, even; 0 means D (partial_rotary_factor·D otherwise)

	// Scaling is "" or "default" (none) or "llama3".
	Scaling string
	// llama3 fields (rope_scaling.factor, low_freq_factor, high_freq_factor,
	// original_max_position_embeddings).
	Factor         float64
	LowFreqFactor  float64
	HighFreqFactor float64
	OriginalMaxPos float64
}

// RoPEInvFreq returns invFreq [R/2] for RoPEForward:
//
//	invFreq_i = 1 / Theta^(2i/R)
//
// and, for Scaling "llama3" (transformers' _compute_llama3_parameters), with
// wavelength λ_i = 2π/invFreq_i, lowWL = OriginalMaxPos/LowFreqFactor,
// highWL = OriginalMaxPos/HighFreqFactor:
//
//	λ > lowWL:           invFreq_i / Factor
//	λ < highWL:          invFreq_i
//	otherwise, s = (OriginalMaxPos/λ − LowFreqFactor)/(HighFreqFactor − LowFreqFactor):
//	                     (1−s)·invFreq_i/Factor + s·invFreq_i
//
// Values are computed in float64 and rounded once to float32.
func RoPEInvFreq(c RoPEConfig) ([]float32, error) {
	r := c.RotaryDim
	if r == 0 {
		r = c.HeadDim
	}
	if c.HeadDim <= 0 || r <= 0 || r > c.HeadDim || r%2 != 0 {
		return nil, fmt.Errorf("rope: rotary dim %d must be even and in (0, head dim %d]", r, c.HeadDim)
	}
	if !(c.Theta > 0) {
		return nil, fmt.Errorf("rope: theta %v must be positive", c.Theta)
	}
	inv := make([]float64, r/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(c.Theta, float64(2*i)/float64(r))
	}
	switch c.Scaling {
	case "", "default":
	case "llama3":
		if !(c.Factor > 0) || !(c.OriginalMaxPos > 0) || !(c.LowFreqFactor > 0) || !(c.HighFreqFactor > c.LowFreqFactor) {
			return nil, fmt.Errorf("rope: llama3 scaling needs factor > 0, original_max_position_embeddings > 0 and high_freq_factor > low_freq_factor > 0 (got %v, %v, %v, %v)",
				c.Factor, c.OriginalMaxPos, c.LowFreqFactor, c.HighFreqFactor)
		}
		lowWL := c.OriginalMaxPos / c.LowFreqFactor
		highWL := c.OriginalMaxPos / c.HighFreqFactor
		for i, f := range inv {
			wl := 2 * math.Pi / f
			switch {
			case wl > lowWL:
				inv[i] = f / c.Factor
			case wl < highWL:
				// unchanged: high frequencies keep their resolution
			default:
				s := (c.OriginalMaxPos/wl - c.LowFreqFactor) / (c.HighFreqFactor - c.LowFreqFactor)
				inv[i] = (1-s)*f/c.Factor + s*f
			}
		}
	default:
		return nil, fmt.Errorf("rope: scaling type %q not supported (want default or llama3)", c.Scaling)
	}
	out := make([]float32, len(inv))
	for i, f := range inv {
		out[i] = float32(f)
	}
	return out, nil
}
