package cuda_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestEmbeddingBackwardOnHardware runs the deterministic EmbeddingBackward
// (embedding.cu: a rank sort of the ids, then one block per run of equal
// ids and column chunk) on the device: on an embeddingCase (600 tokens over
// 3 ids, 7 out of range) twice, each time kernels/ref's result bit for bit;
// then, unless -test.short (the memcheck step), on the 7B step's shape (N =
// 8192 tokens, C = 3584, Qwen's V = 151936; half the tokens on 50 frequent
// ids, so that runs are long, half spread over the vocabulary): two runs
// from a zeroed table give the same bits, every touched row is the sum of
// its tokens' rows in token order, and it logs the op's time a call. Not
// run yet.
func TestEmbeddingBackwardOnHardware(t *testing.T) {
	dev := openHardware(t)
	defer dev.Close()
	ops, err := dev.LoadOps()
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Unload()
	e := newEmbeddingCase(600, 600, 40, 5, []int32{0, 3, 4}, true)
	dout := upload(t, dev, e.dout)
	defer dout.Free()
	ids, err := dev.Alloc(e.N)
	if err != nil {
		t.Fatal(err)
	}
	defer ids.Free()
	if err := ids.UploadInt32(e.ids); err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		dtable := upload(t, dev, e.table0)
		if err := ops.EmbeddingBackward(dtable, dout, ids, e.N, e.C, e.V); err != nil {
			t.Fatal(err)
		}
		e.check(t, "run "+string(rune('0'+run)), download(t, dtable))
		dtable.Free()
	}
	if testing.Short() {
		return
	}

	const N, C, V = 8192, 3584, 151936
	r := rand.New(rand.NewPCG(28, 8192))
	hids := make([]int32, N)
	for n := range hids {
		if r.IntN(2) == 0 {
			hids[n] = int32(r.IntN(50)) * 997 % V
		} else {
			hids[n] = int32(r.IntN(V))
		}
	}
	hdout := make([]float32, N*C)
	fillUniform(r, hdout, 1)
	bd := upload(t, dev, hdout)
	defer bd.Free()
	bi, err := dev.Alloc(N)
	if err != nil {
		t.Fatal(err)
	}
	defer bi.Free()
	if err := bi.UploadInt32(hids); err != nil {
		t.Fatal(err)
	}
	dtable, err := dev.Alloc(V * C)
	if err != nil {
		t.Fatal(err)
	}
	defer dtable.Free()
	run := func() []float32 {
		if err := ops.Zero(dtable, V*C); err != nil {
			t.Fatal(err)
		}
		if err := ops.EmbeddingBackward(dtable, bd, bi, N, C, V); err != nil {
			t.Fatal(err)
		}
		return download(t, dtable)
	}
	first := run()
	if second := run(); !slices.Equal(first, second) {
		t.Fatal("two runs from a zeroed table differ")
	}
	want := map[int32][]float32{} // each touched row summed in token order
	for n, id := range hids {
		row := want[id]
		if row == nil {
			row = make([]float32, C)
			want[id] = row
		}
		for c := range C {
			row[c] += hdout[n*C+c]
		}
	}
	for id, row := range want {
		for c, w := range row {
			if g := first[int(id)*C+c]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("dtable[%d, %d] = %g, the token-order sum %g", id, c, g, w)
			}
		}
	}
	const reps = 5
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range reps {
		if err := ops.EmbeddingBackward(dtable, bd, bi, N, C, V); err != nil {
			t.Fatal(err)
		}
	}
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	per := time.Since(start) / reps
	t.Logf("EmbeddingBackward N=%d C=%d V=%d (%d distinct ids): %v a call, %.0f GB/s of dout read and rows updated",
		N, C, V, len(want), per, 4*float64(N*C+2*len(want)*C)/per.Seconds()/1e9)
}
