package cuda_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cuda"
	"github.com/hone-rl/hone/kernels/ref"
)

// TestChooseRowsOnHardware: a decode step's token choice for [32, 151936]
// logits that a device op just wrote (Scale by 1, as the lm_head writes
// them), three ways: ChooseRows on the device (sample.cu, each row split
// into ChooseChunks' chunks over several blocks; 4 values a row come
// back), the same kernels with one block a row (ChooseRowsChunked with
// chunks of V, the geometry before the split), and what serve/engine and
// modelbench did before it, CopyToHost of the whole logits into
// page-locked memory and the host's argmax of each row. It checks the
// device's choices against ref.ChooseRows on the host copy (greedy: the
// same tokens; draws at temperature 1: the oracle's token or one at a CDF
// boundary within 1e-6·Σe; LSE within 1e-5) and the one-block choices'
// greedy tokens and maxima against the split's, logs the chunks and the
// median and best time of each way over 7 rounds, and fails when the
// split choice is not faster than the host's (it exists for that). With
// -test.short (under compute-sanitizer) it chooses from 4 rows of 4096
// once and times nothing. Not run on a GPU yet with the split kernels.
func TestChooseRowsOnHardware(t *testing.T) {
	b := hardwareBackend(t, kernels.PrecisionF32)
	S, V, rounds := 32, 151936, 7
	if testing.Short() {
		S, V, rounds = 4, 4096, 1
	}
	n := S * V
	x, err := b.AllocF32(n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeF32(x)
	r := rand.New(rand.NewPCG(28, 19))
	fillNormal(r, x, 3)
	x[V+5], x[V+V/2] = 30, 30 // a tie in row 1
	host, err := b.AllocHostF32(n)
	if err != nil {
		t.Fatal(err)
	}
	defer b.FreeHostF32(host)
	// Half the rows greedy, half drawn at temperature 1.
	rows, inv, u := make([]int32, S), make([]float32, S), make([]float64, S)
	for s := range rows {
		rows[s] = int32(s)
		if s%2 == 1 {
			inv[s], u[s] = 1, r.Float64()
		}
	}
	got := make([]kernels.RowChoice, S)
	one := make([]kernels.RowChoice, S)
	ids := make([]int32, S)
	var dt, ot, ht []time.Duration
	for range rounds {
		b.Scale(x, x, 1, n)
		t0 := time.Now()
		b.ChooseRows(got, x, V, rows, inv, u)
		dt = append(dt, time.Since(t0))

		b.Scale(x, x, 1, n)
		t0 = time.Now()
		b.ChooseRowsChunked(one, x, V, rows, inv, u, V)
		ot = append(ot, time.Since(t0))

		b.Scale(x, x, 1, n)
		t0 = time.Now()
		kernels.CopyToHost(b, host, x, n)
		for s := range ids {
			row := host[s*V : (s+1)*V]
			best := 0
			for i, v := range row {
				if v > row[best] {
					best = i
				}
			}
			ids[s] = int32(best)
		}
		ht = append(ht, time.Since(t0))
	}
	want := make([]kernels.RowChoice, S)
	ref.ChooseRows(want, host, V, rows, inv, u)
	for s := range got {
		g, w := got[s], want[s]
		if g.Max != w.Max || !sameF32(g.LSE, w.LSE, 1e-5) {
			t.Errorf("row %d: Max %g LSE %g, want %g and %g", s, g.Max, g.LSE, w.Max, w.LSE)
		}
		switch {
		case inv[s] == 0 && (g.ID != w.ID || g.ID != ids[s]):
			t.Errorf("row %d greedy: token %d, want %d (the host's argmax: %d)", s, g.ID, w.ID, ids[s])
		case inv[s] != 0 && g.ID != w.ID:
			e, sum := expTerms(host[s*V:(s+1)*V], w.Max, 1)
			if !drawHolds(e, u[s]*sum, 1e-6*sum, g.ID) {
				t.Errorf("row %d drawn at u %g: token %d, want %d", s, u[s], g.ID, w.ID)
			}
		}
		if g.ID >= 0 && int(g.ID) < V && math.Float32bits(g.Logit) != math.Float32bits(host[s*V+int(g.ID)]) {
			t.Errorf("row %d: Logit %g, the row holds %g", s, g.Logit, host[s*V+int(g.ID)])
		}
		if o := one[s]; o.Max != g.Max || inv[s] == 0 && o.ID != g.ID {
			t.Errorf("row %d: one block a row gives token %d, max %g; split %d and %g", s, o.ID, o.Max, g.ID, g.Max)
		}
	}
	if testing.Short() {
		return
	}
	L, B := cuda.ChooseChunks(S, V, 1024)
	t.Logf("CHOOSEROWS [%d, %d]: ChooseRows on the device (%d chunks of %d a row, %d blocks) median %v, best %v; one block a row median %v, best %v (%.1f×); CopyToHost + host argmax median %v, best %v (%.1f×)",
		S, V, B, L, S*B, median(dt), slices.Min(dt), median(ot), slices.Min(ot), median(ot).Seconds()/median(dt).Seconds(),
		median(ht), slices.Min(ht), median(ht).Seconds()/median(dt).Seconds())
	if median(dt) >= median(ht) {
		t.Errorf("ChooseRows (median %v) is not faster than CopyToHost and the host's argmax (median %v)", median(dt), median(ht))
	}
}
