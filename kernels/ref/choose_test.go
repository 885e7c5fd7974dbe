package ref_test

import (
	"math"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestChooseRowsNotFinite: ChooseRows follows kernels.RowChooser's rule
// for rows that are not finite, greedy and drawn at two temperatures and
// at u = 0 and just below 1: NaN entries are never chosen and leave Max
// and LSE as the row without them (at entry 0 too); a +Inf entry is the
// choice (the lowest of several), with Logit, Max and LSE +Inf and
// logprob 0, NaN or not beside it; a row of NaN and −Inf has no candidate
// (ID −1, Logit and Max −Inf, LSE 0).
func TestChooseRowsNotFinite(t *testing.T) {
	nan, inf, ninf := float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	lse := func(x ...float32) float32 { // of the finite entries, in float64
		m, s := math.Inf(-1), 0.0
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		return float32(m + math.Log(s))
	}
	cases := []struct {
		name   string
		row    []float32
		greedy int32 // the token of every choice when draw is false
		draw   bool  // a draw takes any token but the NaN ones
		max    float32
		lse    float32
	}{
		{"NaN at 0", []float32{nan, 1, 3, 2}, 2, true, 3, lse(1, 3, 2)},
		{"NaN inside", []float32{1, nan, 3, nan}, 2, true, 3, lse(1, 3)},
		{"+Inf", []float32{1, 5, inf, 2}, 2, false, inf, inf},
		{"two +Inf", []float32{1, inf, 9, inf}, 1, false, inf, inf},
		{"+Inf after NaN", []float32{nan, -2, ninf, inf, nan}, 3, false, inf, inf},
		{"+Inf and -Inf", []float32{ninf, inf}, 1, false, inf, inf},
		{"all NaN", []float32{nan, nan, nan}, -1, false, ninf, 0},
		{"NaN and -Inf", []float32{ninf, nan, ninf}, -1, false, ninf, 0},
		{"all -Inf", []float32{ninf, ninf}, -1, false, ninf, 0},
	}
	for _, c := range cases {
		V := len(c.row)
		for _, it := range []float32{0, 1, 1 / 0.7} {
			for _, u := range []float64{0, math.Nextafter(1, 0)} {
				dst := make([]kernels.RowChoice, 1)
				ref.ChooseRows(dst, c.row, V, []int32{0}, []float32{it}, []float64{u})
				g := dst[0]
				if g.Max != c.max || !(g.LSE == c.lse || math.Abs(float64(g.LSE-c.lse)) <= 1e-6*math.Abs(float64(c.lse))) {
					t.Errorf("%s, invTemp %g, u %g: Max %g LSE %g, want %g and %g", c.name, it, u, g.Max, g.LSE, c.max, c.lse)
				}
				switch {
				case it != 0 && c.draw:
					if g.ID < 0 || int(g.ID) >= V || math.IsNaN(float64(c.row[g.ID])) {
						t.Errorf("%s, invTemp %g, u %g: drew %d", c.name, it, u, g.ID)
					}
				case g.ID != c.greedy:
					t.Errorf("%s, invTemp %g, u %g: token %d, want %d", c.name, it, u, g.ID, c.greedy)
				}
				switch {
				case g.ID < 0:
					if g.Logit != ninf {
						t.Errorf("%s, invTemp %g, u %g: no token, Logit %g, want -Inf", c.name, it, u, g.Logit)
					}
				case g.Logit != c.row[g.ID]:
					t.Errorf("%s, invTemp %g, u %g: Logit %g, the row holds %g at %d", c.name, it, u, g.Logit, c.row[g.ID], g.ID)
				case math.IsInf(float64(c.max), 1) && g.Logprob() != 0:
					t.Errorf("%s, invTemp %g, u %g: logprob %g, want 0", c.name, it, u, g.Logprob())
				}
			}
		}
	}
	// A draw at u = 0 and just below 1 on "NaN at 0": the first and the
	// last token of the row without its NaN.
	dst := make([]kernels.RowChoice, 2)
	ref.ChooseRows(dst, []float32{nan, 1, 3, 2}, 4, []int32{0, 0}, []float32{1, 1}, []float64{0, math.Nextafter(1, 0)})
	if dst[0].ID != 1 || dst[1].ID != 3 {
		t.Errorf("NaN at 0, drawn at u = 0 and below 1: tokens %d and %d, want 1 and 3", dst[0].ID, dst[1].ID)
	}
}
