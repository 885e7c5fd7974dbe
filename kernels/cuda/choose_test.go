package cuda_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/cuda/cudafake"
	"github.com/hone-rl/hone/kernels/ref"
)

// chooseRowsCase is one logits row of TestChooseRows.
type chooseRowsCase struct {
	name string
	row  []float32
}

// chooseRowsCases are rows of V values: random logits, ties of the largest
// entry (first at the row's start, in the middle and across warps'
// segments), −Inf entries, one finite entry among −Inf, no finite entry,
// a row of equal values, NaN at 0 and elsewhere, +Inf (two, late in the
// row after a NaN; and at 0), and rows of NaN and of NaN and −Inf (no
// candidate).
func chooseRowsCases(r *rand.Rand, V int) []chooseRowsCase {
	ninf := float32(math.Inf(-1))
	nan := float32(math.NaN())
	normal := func(scale float64) []float32 {
		x := make([]float32, V)
		for i := range x {
			x[i] = float32(r.NormFloat64() * scale)
		}
		return x
	}
	var cs []chooseRowsCase
	cs = append(cs, chooseRowsCase{"normal×3", normal(3)}, chooseRowsCase{"normal×0.5", normal(0.5)})
	ties := normal(2)
	for _, i := range []int{V - 1, V / 2, V / 3, 2 * V / 3} {
		ties[i] = 9
	}
	cs = append(cs, chooseRowsCase{"ties", ties})
	masked := normal(2)
	for i := range masked {
		if r.IntN(3) > 0 {
			masked[i] = ninf
		}
	}
	masked[V-1] = 1
	cs = append(cs, chooseRowsCase{"-Inf entries", masked})
	one := make([]float32, V)
	for i := range one {
		one[i] = ninf
	}
	lone := slices.Clone(one)
	lone[(V*7)/11] = -3
	cs = append(cs, chooseRowsCase{"one finite", lone}, chooseRowsCase{"all -Inf", one})
	flat := make([]float32, V)
	for i := range flat {
		flat[i] = 0.25
	}
	cs = append(cs, chooseRowsCase{"flat", flat})
	if V > 2 {
		nan0 := normal(1)
		nan0[0] = nan
		nanMid := normal(1)
		nanMid[V/2] = nan
		cs = append(cs, chooseRowsCase{"NaN at 0", nan0}, chooseRowsCase{"NaN inside", nanMid})
		inf := float32(math.Inf(1))
		infLate := normal(1)
		infLate[V/5], infLate[2*V/3], infLate[V-1] = nan, inf, inf
		inf0 := normal(1)
		inf0[0], inf0[V/2] = inf, inf
		allNaN, nanInf := make([]float32, V), make([]float32, V)
		for i := range allNaN {
			allNaN[i], nanInf[i] = nan, ninf
			if i%3 == 1 {
				nanInf[i] = nan
			}
		}
		cs = append(cs, chooseRowsCase{"+Inf late", infLate}, chooseRowsCase{"+Inf at 0", inf0},
			chooseRowsCase{"all NaN", allNaN}, chooseRowsCase{"NaN and -Inf", nanInf})
	}
	return cs
}

// expTerms returns the terms e_j the draw's CDF is made of (ref.ChooseRows'
// and sample.cu's: ExpShift's float32 exponential) and their float64 sum.
func expTerms(row []float32, m, inv float32) ([]float32, float64) {
	e := make([]float32, len(row))
	s := 0.0
	for j, v := range row {
		if a := (v - m) * inv; a >= -87 {
			e[j] = float32(math.Exp(float64(a)))
		}
		s += float64(e[j])
	}
	return e, s
}

// drawHolds reports whether token id's interval of the CDF of e (in id
// order, float64 sums) holds target, within tol of its ends, and has
// probability.
func drawHolds(e []float32, target, tol float64, id int32) bool {
	if id < 0 || int(id) >= len(e) || e[id] == 0 {
		return false
	}
	lo := 0.0
	for _, v := range e[:id] {
		lo += float64(v)
	}
	return lo-tol <= target && target <= lo+float64(e[id])+tol
}

// checkChoice checks one choice g of the device against the oracle's w on
// its row (temperature inverse inv, uniform u), and again, the same choice
// from a second call: the same bits twice, the oracle's Max, its LSE
// within float32 rounding, the row's own logit at the token; greedy (inv
// 0) and rows without a finite entry the oracle's token; a draw the
// oracle's token or one whose interval of the CDF holds u·Σe within
// 1e-6·Σe of its ends; rows holding +Inf, and rows with no candidate (ID
// −1, Logit −Inf), the oracle's token whatever inv. It reports whether
// the choice was a draw, and whether it differed from the oracle's at
// such a boundary.
func checkChoice(t *testing.T, what string, g, again, w kernels.RowChoice, row []float32, inv float32, u float64) (draw, atBoundary bool) {
	t.Helper()
	if again.ID != g.ID || math.Float32bits(again.Logit) != math.Float32bits(g.Logit) ||
		math.Float32bits(again.Max) != math.Float32bits(g.Max) || math.Float32bits(again.LSE) != math.Float32bits(g.LSE) {
		t.Errorf("%s: %+v, then %+v", what, g, again)
	}
	if g.Max != w.Max || !sameF32(g.LSE, w.LSE, 1e-5) {
		t.Errorf("%s: Max %g LSE %g, want %g and %g", what, g.Max, g.LSE, w.Max, w.LSE)
	}
	if w.ID == -1 {
		if g.ID != -1 || !math.IsInf(float64(g.Logit), -1) {
			t.Errorf("%s: token %d, Logit %g; want no candidate (-1, -Inf)", what, g.ID, g.Logit)
		}
		return false, false
	}
	if g.ID < 0 || int(g.ID) >= len(row) {
		t.Errorf("%s: token %d outside [0, %d)", what, g.ID, len(row))
		return false, false
	}
	if math.Float32bits(g.Logit) != math.Float32bits(row[g.ID]) {
		t.Errorf("%s: Logit %g, the row holds %g at %d", what, g.Logit, row[g.ID], g.ID)
	}
	if inv == 0 || math.IsInf(float64(w.Max), 0) {
		if g.ID != w.ID {
			t.Errorf("%s: token %d, want %d", what, g.ID, w.ID)
		}
		return false, false
	}
	if g.ID == w.ID {
		return true, false
	}
	e, sum := expTerms(row, w.Max, inv)
	if !drawHolds(e, u*sum, 1e-6*sum, g.ID) {
		t.Errorf("%s: drew %d (interval without u·Σe = %g of %g), want %d", what, g.ID, u*sum, sum, w.ID)
		return true, false
	}
	t.Logf("%s: drew %d, the oracle %d: u·Σe at their boundary", what, g.ID, w.ID)
	return true, true
}

// TestChooseRows runs sample.cu on the emulated device through
// Backend.ChooseRows against ref.ChooseRows (a float64 host computation,
// the host sampler's definitions): on rows of V = 1 to 151,936 (Qwen's
// vocabulary) with ties, −Inf entries, a single finite entry, no finite
// entry, NaNs and +Inf, with blocks of 1024 threads (Ops' launch) and of 64
// (two warps, so segments of several steps). Greedy: the same token,
// Logit and Max bit for bit, LSE within float32 rounding. A draw (at
// temperatures 1, 0.7 and 1.6, uniforms including 0 and the largest below
// 1): the oracle's token, or one whose interval of the CDF holds u·Σe
// within 1e-6·Σe of its ends (the device's expf and order of additions
// against the oracle's), counted, and not more than one in 20. Several
// choices share a row, and a second call gives the same bits (on the
// larger rows: each 1024-thread block is slow to emulate).
func TestChooseRows(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	r := rand.New(rand.NewPCG(28, 17))
	type shape struct{ V, threads int }
	shapes := []shape{{1, 1024}, {7, 1024}, {33, 64}, {259, 1024}, {1000, 64}, {5000, 64}, {5000, 1024}, {151936, 1024}}
	if testing.Short() {
		shapes = shapes[:len(shapes)-1]
	}
	boundary, draws := 0, 0
	for _, sh := range shapes {
		V := sh.V
		b.SetChooseThreads(sh.threads)
		cases := chooseRowsCases(r, V)
		if V == 151936 { // a few rows: each is 1024 fibers' work on the emulator
			cases = []chooseRowsCase{cases[0], cases[2], cases[3], cases[4]}
		}
		R := len(cases)
		logits, err := b.AllocF32(R * V)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range cases {
			copy(logits[i*V:], c.row)
		}
		// Each row: greedy, then draws at three temperatures and several u.
		var rows []int32
		var inv []float32
		var u []float64
		for i := range cases {
			rows, inv, u = append(rows, int32(i)), append(inv, 0), append(u, 0)
			us := []float64{0, math.Nextafter(1, 0), r.Float64()}
			if sh.threads < 1024 { // more draws where a block is cheap to emulate
				us = append(us, r.Float64(), r.Float64())
			}
			for _, it := range []float32{1, 1 / 0.7, 1 / 1.6} {
				for _, x := range us {
					rows, inv, u = append(rows, int32(i)), append(inv, it), append(u, x)
				}
			}
		}
		got := make([]kernels.RowChoice, len(rows))
		want := make([]kernels.RowChoice, len(rows))
		b.ChooseRows(got, logits, V, rows, inv, u)
		ref.ChooseRows(want, logits, V, rows, inv, u)
		again := got
		if V >= 5000 {
			again = make([]kernels.RowChoice, len(rows))
			b.ChooseRows(again, logits, V, rows, inv, u)
		}
		for k := range rows {
			c := cases[rows[k]]
			what := fmt.Sprintf("V=%d, %d threads, %s, invTemp %g, u %g", V, sh.threads, c.name, inv[k], u[k])
			draw, atBoundary := checkChoice(t, what, got[k], again[k], want[k], c.row, inv[k], u[k])
			if draw {
				draws++
			}
			if atBoundary {
				boundary++
			}
		}
		b.FreeF32(logits)
	}
	if boundary > draws/20 {
		t.Errorf("%d of %d draws differ from the oracle's at a boundary: more than rounding explains", boundary, draws)
	}
	t.Logf("%d draws, %d at a boundary of the oracle's", draws, boundary)
}

// sameF32 reports whether a and b agree within rel·max(1, |b|) (both NaN,
// or the same infinity, agree).
func sameF32(a, b float32, rel float64) bool {
	if a == b || math.IsNaN(float64(a)) && math.IsNaN(float64(b)) {
		return true
	}
	return math.Abs(float64(a)-float64(b)) <= rel*math.Max(1, math.Abs(float64(b)))
}

// TestChooseRowsCDF: on a row of 40 tokens with probabilities from 1e-6
// to 0.3 (some masked), a uniform at the middle of each token's interval
// of the CDF (computed in float64 on the host) draws that token exactly,
// at two temperatures and both block sizes; uniforms just inside an
// interval's ends draw it or its neighbour with probability.
func TestChooseRowsCDF(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	const V = 40
	logits, err := b.AllocF32(V)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(logits)
	r := rand.New(rand.NewPCG(28, 18))
	for i := range logits {
		logits[i] = float32(r.Float64()*12 - 8)
		if i%7 == 3 {
			logits[i] = float32(math.Inf(-1))
		}
	}
	for _, threads := range []int{64, 1024} {
		b.SetChooseThreads(threads)
		for _, it := range []float32{1, 1 / 0.8} {
			m := ref.New().RowMax(logits)
			e, sum := expTerms(logits, m, it)
			var rows []int32
			var inv []float32
			var u []float64
			var want []int32
			lo := 0.0
			for j, v := range e {
				if v == 0 {
					continue
				}
				hi := lo + float64(v)
				ends := []float64{(lo + hi) / 2, lo + 1e-9*sum, hi - 1e-9*sum}
				if threads == 1024 { // the middle only: a 1024-thread block is slow to emulate
					ends = ends[:1]
				}
				for _, x := range ends {
					rows, inv, u = append(rows, 0), append(inv, it), append(u, x/sum)
					want = append(want, int32(j))
				}
				lo = hi
			}
			got := make([]kernels.RowChoice, len(rows))
			b.ChooseRows(got, logits, V, rows, inv, u)
			for k, g := range got {
				mid := threads == 1024 || k%3 == 0
				if g.ID == want[k] {
					continue
				}
				if mid || !drawHolds(e, u[k]*sum, 1e-7*sum, g.ID) {
					t.Errorf("%d threads, invTemp %g, u %.17g (token %d's interval, at its %s): drew %d", threads, it, u[k], want[k],
						map[bool]string{true: "middle", false: "end"}[mid], g.ID)
				}
			}
		}
	}
}

// TestChooseRowsStreamOrdered: in the stream-ordered mode on the deferred
// device, ChooseRows sees the logits an op queued before it wrote (the
// host wrote the row, a queued Scale by −1 turned its argmax into the
// row's argmin), and waits twice — its upload and its download — with no
// cuCtxSynchronize.
func TestChooseRowsStreamOrdered(t *testing.T) {
	b, drv := streamBackend(t)
	defer b.Close()
	const V = 300
	x := allocIota(t, b, 2*V, 0.01, -1) // both rows ascending: argmax at their ends
	defer b.FreeF32(x)
	dst := make([]kernels.RowChoice, 2)
	b.ChooseRows(dst, x, V, []int32{0, 1}, []float32{0, 0}, []float64{0, 0}) // grows the scratch
	b.Scale(x, x, -1, 2*V)                                                   // queued: rows descending
	syncs, copies := drv.Calls("cuCtxSynchronize"), drv.Calls("cuMemcpyHtoD_v2")+drv.Calls("cuMemcpyDtoH_v2")
	b.ChooseRows(dst, x, V, []int32{1, 0}, []float32{0, 1}, []float64{0, 0})
	if dst[0].ID != 0 || dst[0].Max != 1-0.01*V {
		t.Errorf("row 1 after the queued Scale: token %d, max %g; want 0 and %g", dst[0].ID, dst[0].Max, 1-0.01*V)
	}
	if dst[1].ID != 0 || dst[1].Max != 1 {
		t.Errorf("row 0 after the queued Scale, drawn at u = 0: token %d, max %g; want 0 and 1", dst[1].ID, dst[1].Max)
	}
	if s, c := drv.Calls("cuCtxSynchronize")-syncs, drv.Calls("cuMemcpyHtoD_v2")+drv.Calls("cuMemcpyDtoH_v2")-copies; s != 0 || c != 2 {
		t.Errorf("ChooseRows waited with %d cuCtxSynchronize and %d copies, want 0 and 2", s, c)
	}
}

// TestChooseRowsArguments: ChooseRows panics naming itself on a row
// outside the logits, a negative or infinite invTemp, a u outside [0, 1)
// for a draw, short inputs and logits not whole rows; on logits that are
// not the backend's memory it panics naming the argument.
func TestChooseRowsArguments(t *testing.T) {
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	x, err := b.AllocF32(20)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(x)
	dst := make([]kernels.RowChoice, 1)
	cases := []struct {
		name   string
		call   func()
		substr string
	}{
		{"row out of range", func() { b.ChooseRows(dst, x, 10, []int32{2}, []float32{0}, []float64{0}) }, "rows[0] = 2"},
		{"negative row", func() { b.ChooseRows(dst, x, 10, []int32{-1}, []float32{0}, []float64{0}) }, "rows[0] = -1"},
		{"negative invTemp", func() { b.ChooseRows(dst, x, 10, []int32{0}, []float32{-1}, []float64{0}) }, "invTemp[0]"},
		{"infinite invTemp", func() { b.ChooseRows(dst, x, 10, []int32{0}, []float32{float32(math.Inf(1))}, []float64{0}) }, "invTemp[0]"},
		{"u = 1", func() { b.ChooseRows(dst, x, 10, []int32{0}, []float32{1}, []float64{1}) }, "u[0]"},
		{"short u", func() { b.ChooseRows(dst, x, 10, []int32{0}, []float32{1}, nil) }, "u has 0"},
		{"not whole rows", func() { b.ChooseRows(dst, x, 7, []int32{0}, []float32{0}, []float64{0}) }, "not whole rows"},
		{"host logits", func() { b.ChooseRows(dst, make([]float32, 20), 10, []int32{0}, []float32{0}, []float64{0}) }, "logits"},
	}
	for _, c := range cases {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.Contains(msg, "ChooseRows") || !strings.Contains(msg, c.substr) {
					t.Errorf("%s: panic %q, want one naming ChooseRows and %q", c.name, msg, c.substr)
				}
			}()
			c.call()
		}()
	}
}

var _ kernels.RowChooser = (*cuda.Backend)(nil)

// TestChooseRowsChunkGeometry: the chunks ChooseRows cuts a row into cover
// it exactly (B·L ≥ V > (B−1)·L), start at multiples of 128 entries, and
// at decode batch 32 of Qwen's vocabulary give at least two blocks an SM
// of an H200 (264 in all); a single choice of a short row is one chunk.
func TestChooseRowsChunkGeometry(t *testing.T) {
	for _, c := range []struct{ n, V, threads, minBlocks int }{
		{32, 151936, 1024, 264}, {1, 151936, 1024, 20}, {4, 151936, 1024, 66}, {256, 151936, 1024, 256},
		{1, 1, 1024, 1}, {3, 4095, 1024, 3}, {40, 1000, 64, 120}, {1, 1000, 64, 3},
	} {
		L, B := cuda.ChooseChunks(c.n, c.V, c.threads)
		if L <= 0 || L%128 != 0 || B*L < c.V || (B-1)*L >= c.V || c.n*B < c.minBlocks {
			t.Errorf("n %d, V %d, %d threads: chunks of %d, %d a row (%d blocks); want multiples of 128 covering V, at least %d blocks",
				c.n, c.V, c.threads, L, B, c.n*B, c.minBlocks)
		}
	}
}

// TestChooseRowsChunks: rows cut into several chunks (ChooseChunks: 3 of
// 384 for V = 1000 with blocks of 64 threads, the last 232 long; 2 for
// V = 9000 with 1024; and 4 of 300, the last 100 long, through
// ChooseRowsChunked) against ref.ChooseRows, as TestChooseRows checks
// them: ties of the largest entry at either side of a chunk boundary,
// chunks of −Inf only (leading, in the middle, all but one entry at a
// boundary), NaN in a later chunk (and at 0 with the max in a later
// chunk), a row of −Inf, and draws whose u lands in the last chunk (near
// 1, and at the middle of the first token with mass there) or at the
// start of a chunk. A second call gives the same bits (V = 1000).
func TestChooseRowsChunks(t *testing.T) {
	t.Parallel()
	b, _, _ := emulatedBackend(t)
	defer b.Close()
	r := rand.New(rand.NewPCG(28, 20))
	ninf, nan := float32(math.Inf(-1)), float32(math.NaN())
	boundary, draws := 0, 0
	// L > 0: chunks of L (ChooseRowsChunked), not a multiple of 128.
	for _, sh := range []struct{ V, threads, L, chunks int }{{1000, 64, 0, 3}, {1000, 64, 300, 4}, {9000, 1024, 0, 2}} {
		V := sh.V
		b.SetChooseThreads(sh.threads)
		normal := func() []float32 {
			x := make([]float32, V)
			for i := range x {
				x[i] = float32(r.NormFloat64() * 2)
			}
			return x
		}
		fill := func(x []float32, lo, hi int, v float32) []float32 {
			for i := lo; i < min(hi, V); i++ {
				x[i] = v
			}
			return x
		}
		// The number of choices below (rows × 11) decides the chunks: the
		// rows are built for the chunk length it gives.
		const perRow = 11
		const nRows = 11
		L, B := cuda.ChooseChunks(nRows*perRow, V, sh.threads)
		if sh.L > 0 {
			L, B = sh.L, (V+sh.L-1)/sh.L
		}
		if B != sh.chunks {
			t.Fatalf("V %d, %d threads: %d chunks of %d, want %d", V, sh.threads, B, L, sh.chunks)
		}
		last := (B - 1) * L
		tieBefore := normal() // the max at both sides of the first boundary: the lower id
		tieBefore[L-1], tieBefore[L], tieBefore[last] = 9, 9, 9
		tieAfter := normal() // the max at a chunk's first entries only
		tieAfter[L], tieAfter[last] = 9, 9
		leading := fill(normal(), 0, L, ninf) // chunk 0 has no finite entry
		middle := fill(normal(), L, 2*L, ninf)
		if B == 2 {
			middle = fill(normal(), L/2, L+L/2, ninf) // across the boundary
		}
		lone := fill(make([]float32, V), 0, V, ninf) // one finite entry, a chunk's first
		lone[L] = -2
		nanLater := normal()
		nanLater[last+5] = nan
		nanZero := normal()
		nanZero[0], nanZero[last+1] = nan, 12
		lastHeavy := normal() // most of the mass in the last chunk
		fill(lastHeavy, last, V, 3)
		allInf := fill(make([]float32, V), 0, V, ninf)
		rowsData := []chooseRowsCase{{"ties before the boundary", tieBefore}, {"ties at chunk starts", tieAfter},
			{"-Inf chunk 0", leading}, {"-Inf middle", middle}, {"one finite at a chunk start", lone},
			{"NaN in the last chunk", nanLater}, {"NaN at 0, max in the last chunk", nanZero},
			{"mass in the last chunk", lastHeavy}, {"all -Inf", allInf}, {"normal", normal()}, {"flat", fill(make([]float32, V), 0, V, 0.5)}}
		if len(rowsData) != nRows {
			t.Fatalf("%d rows, the chunks were chosen for %d", len(rowsData), nRows)
		}
		logits, err := b.AllocF32(nRows * V)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range rowsData {
			copy(logits[i*V:], c.row)
		}
		var rows []int32
		var inv []float32
		var u []float64
		for i, c := range rowsData {
			rows, inv, u = append(rows, int32(i)), append(inv, 0), append(u, 0)
			for _, it := range []float32{1, 1 / 0.7} {
				// u: 0 (0.999 at the second temperature), the largest below
				// 1, a random one, the middle of the last chunk's first
				// token with mass and of chunk 1's.
				m := ref.New().RowMax(c.row)
				e, sum := expTerms(c.row, m, it)
				at := func(j0 int) float64 {
					lo := 0.0
					for j, v := range e {
						if j >= j0 && v != 0 {
							return (lo + float64(v)/2) / sum
						}
						lo += float64(v)
					}
					return 0.5
				}
				us := []float64{0, math.Nextafter(1, 0), r.Float64(), 0.5, 0.25}
				if it != 1 {
					us[0] = 0.999
				}
				if sum > 0 {
					us[3], us[4] = at(last), at(L)
				}
				for _, x := range us {
					rows, inv, u = append(rows, int32(i)), append(inv, it), append(u, x)
				}
			}
		}
		if len(rows) != nRows*perRow {
			t.Fatalf("%d choices, the chunks were chosen for %d", len(rows), nRows*perRow)
		}
		got := make([]kernels.RowChoice, len(rows))
		want := make([]kernels.RowChoice, len(rows))
		choose := func(dst []kernels.RowChoice) {
			if sh.L > 0 {
				b.ChooseRowsChunked(dst, logits, V, rows, inv, u, sh.L)
			} else {
				b.ChooseRows(dst, logits, V, rows, inv, u)
			}
		}
		choose(got)
		again := got
		if sh.threads < 1024 { // a 1024-thread block is slow to emulate
			again = make([]kernels.RowChoice, len(rows))
			choose(again)
		}
		ref.ChooseRows(want, logits, V, rows, inv, u)
		for k := range rows {
			c := rowsData[rows[k]]
			what := fmt.Sprintf("V=%d, %d threads, %d chunks of %d, %s, invTemp %g, u %g", V, sh.threads, B, L, c.name, inv[k], u[k])
			draw, atBoundary := checkChoice(t, what, got[k], again[k], want[k], c.row, inv[k], u[k])
			if draw {
				draws++
			}
			if atBoundary {
				boundary++
			}
		}
		// The cases hold what they were built for.
		wantGreedy := map[string]int32{"ties before the boundary": int32(L - 1), "ties at chunk starts": int32(L),
			"one finite at a chunk start": int32(L), "NaN at 0, max in the last chunk": int32(last + 1), "all -Inf": -1}
		for k := range rows {
			if id, ok := wantGreedy[rowsData[rows[k]].name]; ok && inv[k] == 0 && got[k].ID != id {
				t.Errorf("%s greedy: token %d, want %d", rowsData[rows[k]].name, got[k].ID, id)
			}
			if rowsData[rows[k]].name == "mass in the last chunk" && inv[k] != 0 && u[k] > 0.999 && int(got[k].ID) < last {
				t.Errorf("%s at u %g: token %d, before the last chunk (%d)", rowsData[rows[k]].name, u[k], got[k].ID, last)
			}
		}
		b.FreeF32(logits)
	}
	if boundary > draws/20 {
		t.Errorf("%d of %d draws differ from the oracle's at a boundary: more than rounding explains", boundary, draws)
	}
	t.Logf("%d draws, %d at a boundary of the oracle's", draws, boundary)
}

// TestChooseRowsLaunches: Ops.ChooseRows' launches on the fake driver — at
// decode batch 32 of Qwen's vocabulary 9 chunks a row (288 blocks of 1024
// for the two chunk kernels, then one block a choice), for a single choice
// 36 chunks, and one chunk a row for a short row.
func TestChooseRowsLaunches(t *testing.T) {
	choose := func(n, V int) func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
		return func(o *cuda.Ops, b func(int) *cuda.Buffer) error {
			_, err := o.ChooseRows(b(n*V), V, make([]int32, n), make([]float32, n), make([]float64, n))
			return err
		}
	}
	geometry := func(n, B int) []cudafake.Launch {
		return []cudafake.Launch{
			launch("choose_rows_max", dim(n*B, 1, 1), dim(1024, 1, 1), 7),
			launch("choose_rows_sum", dim(n*B, 1, 1), dim(1024, 1, 1), 10),
			launch("choose_rows", dim(n, 1, 1), dim(1024, 1, 1), 14),
		}
	}
	runOpsCases(t, []opsCase{
		{"batch 32 of 151936", choose(32, 151936), geometry(32, 9)},
		{"one choice of 151936", choose(1, 151936), geometry(1, 36)},
		{"3 choices of 4095", choose(3, 4095), geometry(3, 1)},
	})
}
