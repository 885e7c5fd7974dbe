package ref

import (
	"math"

	"github.com/hone-rl/hone/kernels"
)

// ChooseRows is kernels.RowChooser's ChooseRows, the oracle of its device
// implementations, written as serve/engine's host sampler chooses: greedy
// by the scan `if v > max { best, max = i, v }` from max = −Inf (the
// lowest id of the largest entry, NaN passed over; none for a row of NaN
// and −Inf, which gives −1); a row holding +Inf its first +Inf; a draw by
// the cumulative sums of e_j = float32(e^((row[j]−max)·invTemp)) (the
// argument formed in float32, 0 below −87, as ExpShift) added in id order
// in float64, the first j with e_j ≠ 0 whose sum passes u·Σe (the last
// such j when rounding leaves the target past the end). It is a function,
// not a method of Backend: ref is a host backend, and serve/engine keeps
// its host sampler for the backends that are not RowChoosers.
func ChooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	kernels.NeedChooseRows(dst, logits, V, rows, invTemp, u)
	for i := range dst {
		row := logits[int(rows[i])*V : (int(rows[i])+1)*V]
		dst[i] = chooseRow(row, invTemp[i], u[i])
	}
}

// chooseRow is one choice of ChooseRows.
func chooseRow(row []float32, inv float32, u float64) kernels.RowChoice {
	best := -1
	m := float32(math.Inf(-1))
	for i, v := range row {
		if v > m { // never for NaN
			best, m = i, v
		}
	}
	c := kernels.RowChoice{ID: int32(best), Max: m}
	switch {
	case best < 0: // every entry NaN or −Inf: no candidate
		c.Logit = m
		return c
	case math.IsInf(float64(m), 1): // its first +Inf, greedy or drawn
		c.Logit, c.LSE = m, m
		return c
	}
	// A NaN entry's term is 0: (NaN − m)·inv ≥ −87 is false.
	c.LSE = m + float32(math.Log(expSum(row, m, 1, nil)))
	if inv != 0 {
		e := make([]float32, len(row))
		target := u * expSum(row, m, inv, e)
		acc, last := 0.0, -1
		c.ID = -1
		for j, v := range e {
			if v == 0 {
				continue
			}
			last = j
			if acc += float64(v); acc > target {
				c.ID = int32(j)
				break
			}
		}
		if c.ID < 0 {
			c.ID = int32(max(last, 0))
		}
	}
	c.Logit = row[c.ID]
	return c
}

// expSum returns Σ_j float32(e^((row[j]−m)·inv)) in float64, in id order,
// each term as ExpShift forms it; e, when not nil, receives the terms.
func expSum(row []float32, m, inv float32, e []float32) float64 {
	s := 0.0
	for j, v := range row {
		a := (v - m) * inv
		t := float32(0)
		if a >= -87 {
			t = float32(math.Exp(float64(a)))
		}
		if e != nil {
			e[j] = t
		}
		s += float64(t)
	}
	return s
}
