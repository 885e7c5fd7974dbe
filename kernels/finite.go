package kernels

import "math"

// FirstNonFinite returns the index of the first NaN or infinity in vals,
// or −1 when every value is finite.
func FirstNonFinite(vals []float32) int {
	for i, v := range vals {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return i
		}
	}
	return -1
}
