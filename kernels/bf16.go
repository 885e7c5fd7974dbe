package kernels

import "math"

// BF16 returns the bfloat16 bits of f, rounded to nearest even (NaN stays a
// quiet NaN). bfloat16 is the upper half of an IEEE float32.
func BF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 { // NaN: keep it NaN after truncation
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// F32 returns the float32 value of bfloat16 bits h (exact).
func F32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// ToBF16 converts src into dst (len(dst) ≥ len(src)).
func ToBF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, f := range src {
		dst[i] = BF16(f)
	}
}

// FromBF16 converts src into dst (len(dst) ≥ len(src)).
func FromBF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = F32(h)
	}
}
