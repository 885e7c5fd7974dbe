package cpu

import "math"

// bf16GemvGo is the plain-Go form of bf16Gemv:
//
//	out[o] = Σ_c x[c]·F32(w[o*C+c])   for o < len(out)
//
// with four partial sums per row so the loop is not one long dependency chain.
func bf16GemvGo(out, x []float32, w []uint16, C int) {
	x = x[:C]
	for o := range out {
		row := w[o*C : (o+1)*C]
		var s0, s1, s2, s3 float32
		c := 0
		for ; c+4 <= C; c += 4 {
			s0 += x[c] * math.Float32frombits(uint32(row[c])<<16)
			s1 += x[c+1] * math.Float32frombits(uint32(row[c+1])<<16)
			s2 += x[c+2] * math.Float32frombits(uint32(row[c+2])<<16)
			s3 += x[c+3] * math.Float32frombits(uint32(row[c+3])<<16)
		}
		for ; c < C; c++ {
			s0 += x[c] * math.Float32frombits(uint32(row[c])<<16)
		}
		out[o] = (s0 + s1) + (s2 + s3)
	}
}

// f32GemvGo is the plain-Go form of f32Gemv:
//
//	out[o] = Σ_c x[c]·w[o*C+c]   for o < len(out)
func f32GemvGo(out, x, w []float32, C int) {
	x = x[:C]
	for o := range out {
		row := w[o*C : (o+1)*C]
		var s0, s1, s2, s3 float32
		c := 0
		for ; c+4 <= C; c += 4 {
			s0 += x[c] * row[c]
			s1 += x[c+1] * row[c+1]
			s2 += x[c+2] * row[c+2]
			s3 += x[c+3] * row[c+3]
		}
		for ; c < C; c++ {
			s0 += x[c] * row[c]
		}
		out[o] = (s0 + s1) + (s2 + s3)
	}
}
