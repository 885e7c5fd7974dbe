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
//	out[o] = Σ_c x[c]·w[o*ldw+c]   for o < len(out), c < cols
func f32GemvGo(out, x, w []float32, cols, ldw int) {
	x = x[:cols]
	for o := range out {
		row := w[o*ldw : o*ldw+cols]
		var s float32
		for c, xc := range x {
			s += xc * row[c]
		}
		out[o] = s
	}
}

// f32GemvTGo is the plain-Go form of f32GemvT:
//
//	out[c] = Σ_r p[r]·v[r*ldv+c]   for c < len(out), r < len(p)
func f32GemvTGo(out, p, v []float32, ldv int) {
	clear(out)
	for r, pr := range p {
		row := v[r*ldv : r*ldv+len(out)]
		for c := range out {
			out[c] += pr * row[c]
		}
	}
}
