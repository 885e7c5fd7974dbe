package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
)

// rowBackend is the CPU backend whose vectorised row ops (RowMax,
// ExpShift) the sampler runs on in hone-serve.
func rowBackend(t testing.TB) kernels.Backend {
	t.Helper()
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// refProbs is the distribution choose must draw from, computed the slow,
// obvious way in float64: sort everything, cut to top_k, softmax at the
// temperature, cut to the smallest prefix holding top_p, renormalise.
func refProbs(row []float32, p Params) []float64 {
	var ids []int
	for i, v := range row {
		if !math.IsInf(float64(v), -1) {
			ids = append(ids, i)
		}
	}
	sort.SliceStable(ids, func(a, b int) bool { return row[ids[a]] > row[ids[b]] })
	if p.TopK > 0 && p.TopK < len(ids) {
		ids = ids[:p.TopK]
	}
	w := make([]float64, len(ids))
	var sum float64
	for j, i := range ids {
		w[j] = math.Exp((float64(row[i]) - float64(row[ids[0]])) / p.Temperature)
		sum += w[j]
	}
	if p.TopP > 0 && p.TopP < 1 {
		acc := 0.0
		for j := range w {
			acc += w[j] / sum
			if acc >= p.TopP {
				ids, w = ids[:j+1], w[:j+1]
				break
			}
		}
		sum = 0
		for _, x := range w {
			sum += x
		}
	}
	out := make([]float64, len(row))
	for j, i := range ids {
		out[i] = w[j] / sum
	}
	return out
}

// TestChooseDistribution: the frequencies of many draws match refProbs
// within a few standard errors, and tokens outside top_k / top_p / the
// mask are never drawn, for plain sampling over rows of several blocks,
// top_k alone (heap and sort paths), top_p alone (threshold path) and both.
func TestChooseDistribution(t *testing.T) {
	be := rowBackend(t)
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name string
		V    int
		std  float64 // of the logits
		p    Params
	}{
		{"plain", 1300, 1, Params{Temperature: 0.7}},
		{"plain-peaked", 40, 4, Params{Temperature: 2}},
		{"top_k-heap", 1000, 2, Params{Temperature: 1, TopK: 7}},
		{"top_k-sort", 20, 1, Params{Temperature: 1, TopK: 12}},
		{"top_p-flat", 300, 0.5, Params{Temperature: 0.8, TopP: 0.6}},
		{"top_p-peaked", 1000, 3, Params{Temperature: 0.8, TopP: 0.6}},
		{"top_p-wide", 50, 1, Params{Temperature: 3, TopP: 0.95}},
		{"top_k+top_p", 1000, 1, Params{Temperature: 1, TopK: 20, TopP: 0.7}},
	}
	const draws = 40000
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			row := make([]float32, c.V)
			for i := range row {
				row[i] = float32(rng.NormFloat64() * c.std)
			}
			for i := 0; i < c.V; i += 9 {
				row[i] = float32(math.Inf(-1)) // masked
			}
			want := refProbs(row, c.p)
			c.p.Seed, c.p.HasSeed = 11, true
			s := newSampler(be, c.p, 0)
			counts := make([]int, c.V)
			buf := make([]float32, c.V)
			for range draws {
				copy(buf, row)
				counts[s.choose(buf)]++
			}
			for i, n := range counts {
				got := float64(n) / draws
				if want[i] == 0 {
					if n > 0 {
						t.Fatalf("token %d (probability 0) drawn %d times", i, n)
					}
					continue
				}
				if se := math.Sqrt(want[i] * (1 - want[i]) / draws); math.Abs(got-want[i]) > 5*se+1e-4 {
					t.Errorf("token %d: frequency %.5f, probability %.5f (±%.5f)", i, got, want[i], se)
				}
			}
		})
	}
}

// TestChooseSeedStable: the same seed draws the same tokens whatever the
// path, and greedy picks the first best id.
func TestChooseSeedStable(t *testing.T) {
	be := rowBackend(t)
	row := []float32{1, 3, 3, float32(math.Inf(-1)), 2}
	if got := newSampler(be, Params{}, 0).choose(append([]float32(nil), row...)); got != 1 {
		t.Fatalf("greedy picked %d, want 1", got)
	}
	for _, p := range []Params{{Temperature: 1}, {Temperature: 1, TopK: 2}, {Temperature: 1, TopP: 0.5}} {
		p.Seed, p.HasSeed = 5, true
		a, b := newSampler(be, p, 3), newSampler(be, p, 3)
		for range 50 {
			x, y := a.choose(append([]float32(nil), row...)), b.choose(append([]float32(nil), row...))
			if x != y || x == 3 {
				t.Fatalf("%+v: draws %d and %d (3 is masked)", p, x, y)
			}
		}
	}
}

// TestCandidates: the k best unmasked ids, best first, ties to the lower
// id, on both the heap and the sort path, with many ties and with fewer
// unmasked entries than k.
func TestCandidates(t *testing.T) {
	be := rowBackend(t)
	rng := rand.New(rand.NewPCG(9, 9))
	for _, c := range []struct{ V, k, every int }{
		{1000, 7, 3}, {1000, 50, 1}, {1000, 7, 400}, {20, 12, 4}, {5000, 1, 2}, {64, 0, 5},
	} {
		row := make([]float32, c.V)
		for i := range row {
			row[i] = float32(rng.IntN(6)) // few distinct values: many ties
			if i%c.every != 0 {
				row[i] = float32(math.Inf(-1))
			}
		}
		var want []int32
		for i, v := range row {
			if !math.IsInf(float64(v), -1) {
				want = append(want, int32(i))
			}
		}
		sort.SliceStable(want, func(a, b int) bool { return row[want[a]] > row[want[b]] })
		if c.k > 0 && c.k < len(want) {
			want = want[:c.k]
		}
		got := newSampler(be, Params{}, 0).candidates(row, c.k)
		if !slices.Equal(got, want) {
			t.Errorf("V=%d k=%d every=%d: candidates %v, want %v", c.V, c.k, c.every, got, want)
		}
	}
}

// TestLogSoftmax: against float64 math over a Qwen-sized row with masked
// entries, into a caller's buffer; a row with nothing finite stays as it is.
func TestLogSoftmax(t *testing.T) {
	be := rowBackend(t)
	rng := rand.New(rand.NewPCG(7, 7))
	row := make([]float32, 151936)
	for i := range row {
		row[i] = float32(6 * rng.NormFloat64())
	}
	row[3], row[99] = float32(math.Inf(-1)), float32(math.Inf(-1))
	m := math.Inf(-1)
	for _, v := range row {
		m = max(m, float64(v))
	}
	var s float64
	for _, v := range row {
		s += math.Exp(float64(v) - m)
	}
	lse := m + math.Log(s)
	got := logSoftmaxInto(be, make([]float32, len(row)+5), row) // a longer buffer is cut to the row
	if len(got) != len(row) {
		t.Fatalf("got %d values for a row of %d", len(got), len(row))
	}
	for i, v := range row {
		want := float64(v) - lse
		if math.IsInf(want, -1) {
			if !math.IsInf(float64(got[i]), -1) {
				t.Fatalf("[%d] masked: got %g, want -Inf", i, got[i])
			}
			continue
		}
		if math.Abs(float64(got[i])-want) > 1e-5*max(1, math.Abs(want)) {
			t.Fatalf("[%d] = %g, want %g", i, got[i], want)
		}
	}
	if a := LogSoftmax(be, row); a[7] != got[7] {
		t.Fatalf("LogSoftmax and logSoftmaxInto differ: %g vs %g", a[7], got[7])
	}
	masked := []float32{float32(math.Inf(-1)), float32(math.Inf(-1))}
	if out := LogSoftmax(be, masked); !math.IsInf(float64(out[0]), -1) || !math.IsInf(float64(out[1]), -1) {
		t.Fatalf("all-masked row gave %v", out)
	}
	// kernels.RowChooser's rule: NaN is −Inf, and a +Inf entry has logprob 0.
	nan, inf, ninf := float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	ln2 := -float32(math.Ln2)
	for _, c := range []struct{ row, want []float32 }{
		{[]float32{nan, 0, 0}, []float32{ninf, ln2, ln2}},
		{[]float32{0, nan, 0, nan}, []float32{ln2, ninf, ln2, ninf}},
		{[]float32{nan, 5, inf, ninf}, []float32{ninf, ninf, 0, ninf}},
	} {
		for _, b := range []kernels.Backend{be, ref.New()} {
			got := LogSoftmax(b, c.row)
			for i := range got {
				if !(got[i] == c.want[i] || math.Abs(float64(got[i]-c.want[i])) < 1e-6) {
					t.Errorf("%T: LogSoftmax(%v) = %v, want %v", b, c.row, got, c.want)
					break
				}
			}
		}
	}
}

// TestPickLogprobs: the chosen token's logprob and the top alternatives
// that pick reports are those of the log-softmax of the raw row, bit for
// bit, whatever the choice does to the row (temperature, top_k, top_p,
// penalties, a constraint that leaves one token).
func TestPickLogprobs(t *testing.T) {
	be := rowBackend(t)
	rng := rand.New(rand.NewPCG(9, 9))
	for _, p := range []Params{
		{Temperature: 0, Logprobs: true},
		{Temperature: 1, Logprobs: true, TopLogprobs: 5},
		{Temperature: 0.7, TopK: 40, Logprobs: true, TopLogprobs: 3, FrequencyPenalty: 0.5},
		{Temperature: 1.3, TopP: 0.8, Logprobs: true, TopLogprobs: 20, PresencePenalty: 1},
	} {
		s := newSampler(be, p, 0)
		for step := range 8 {
			row := make([]float32, 5003)
			for i := range row {
				row[i] = float32(4 * rng.NormFloat64())
			}
			row[17] = float32(math.Inf(-1))
			ref := LogSoftmax(be, row)
			var c Constraint
			if step == 5 {
				c = maskTo{id: 4000}
			}
			id, lp, top := s.pick(append([]float32(nil), row...), c)
			if c != nil && id != 4000 {
				t.Fatalf("%+v step %d: constraint to 4000 picked %d", p, step, id)
			}
			if lp != ref[id] {
				t.Fatalf("%+v step %d: logprob of %d = %g, log-softmax %g", p, step, id, lp, ref[id])
			}
			if want := TopN(ref, p.TopLogprobs); !slices.Equal(top, want) {
				t.Fatalf("%+v step %d: top %v, want %v", p, step, top, want)
			}
		}
	}
}

// benchRow is a Qwen-sized logits row of standard normal values.
func benchRow() []float32 {
	rng := rand.New(rand.NewPCG(1, 1))
	row := make([]float32, 151936)
	for i := range row {
		row[i] = float32(rng.NormFloat64())
	}
	return row
}

func BenchmarkChoose(b *testing.B) {
	be := rowBackend(b)
	row := benchRow()
	buf := make([]float32, len(row))
	for _, p := range []Params{{Temperature: 1}, {Temperature: 1, TopK: 50}, {Temperature: 1, TopP: 0.9},
		{Temperature: 0.7, TopK: 50, TopP: 0.95}} {
		b.Run(fmt.Sprintf("T=%g,k=%d,p=%g", p.Temperature, p.TopK, p.TopP), func(b *testing.B) {
			s := newSampler(be, p, 0)
			for range b.N {
				copy(buf, row)
				s.choose(buf)
			}
		})
	}
}

// BenchmarkPick is one sequence's whole per-step sampling work over a
// Qwen-sized row, with and without the logprobs RL rollouts ask for (ART
// asks for the chosen token's only; top=5 adds alternatives).
func BenchmarkPick(b *testing.B) {
	be := rowBackend(b)
	row := benchRow()
	buf := make([]float32, len(row))
	for _, p := range []Params{{Temperature: 1}, {Temperature: 1, Logprobs: true}, {Temperature: 1, Logprobs: true, TopLogprobs: 5}} {
		b.Run(fmt.Sprintf("logprobs=%v/top=%d", p.Logprobs, p.TopLogprobs), func(b *testing.B) {
			s := newSampler(be, p, 0)
			for range b.N {
				copy(buf, row)
				s.pick(buf, nil)
			}
		})
	}
}
