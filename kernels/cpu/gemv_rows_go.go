package cpu

import "math"

// f32RowsGo is the plain-Go form of f32Rows:
//
//	out[n*ldo+o] = Σ_c x[n*C+c]·w[o*C+c]   for n < N, o < len(w)/C
//
// C must be ≥ 1 (callers clear out themselves when C = 0).
func f32RowsGo(out []float32, ldo int, x []float32, N, C int, w []float32) {
	for o := range len(w) / C {
		row := w[o*C : (o+1)*C]
		for n := range N {
			var s float32
			for c, xc := range x[n*C : (n+1)*C] {
				s += xc * row[c]
			}
			out[n*ldo+o] = s
		}
	}
}

// bf16RowsGo is the plain-Go form of bf16Rows.
func bf16RowsGo(out []float32, ldo int, x []float32, N, C int, w []uint16) {
	for o := range len(w) / C {
		row := w[o*C : (o+1)*C]
		for n := range N {
			var s float32
			for c, xc := range x[n*C : (n+1)*C] {
				s += xc * math.Float32frombits(uint32(row[c])<<16)
			}
			out[n*ldo+o] = s
		}
	}
}
