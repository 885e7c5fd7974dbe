package cpu

import "math"

// exp32 returns e^x for x ≤ 0 (arguments of a softmax after subtracting the
// row maximum), within about 2 ulp of math.Exp, several times faster: the
// vocabulary softmax evaluates it N·V times. x = k·ln2 + r with |r| ≤ ln2/2,
// e^r by a degree-6 Taylor polynomial (truncation < 3e-8 relative), 2^k by
// building the exponent bits. Below −87 it returns 0 (e^−87 ≈ 1.6e−38, the
// smallest normal float32 is 1.2e−38).
func exp32(x float32) float32 {
	if x < -87 {
		return 0
	}
	const ln2Hi, ln2Lo = 0.693145751953125, 1.428606765330187045e-06
	// Truncating a negative y−0.5 rounds y = x/ln2 to nearest: |r| ≤ ln2/2.
	k := float32(int32(x*1.4426950408889634 - 0.5))
	r := x - k*ln2Hi - k*ln2Lo
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720))))))
	return p * math.Float32frombits(uint32(int32(k)+127)<<23)
}
