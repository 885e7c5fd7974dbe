package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// TestDecodeResident: continuous batching (several requests in flight, a
// chunked prefill, n = 3 sharing a prompt, prefix caching across turns,
// an adapter next to the base model) behind kerneltest.Resident, which
// panics when an op sees memory the backend did not allocate (a device
// backend's rule), gives the reference backend's tokens and logprobs; and
// once the engine is shut down and the model, the adapter and the logits
// are freed, the backend holds nothing: the KV cache (live and kept rows)
// gave all of its memory back. The sampler reads the logits from host
// memory (Step's copy, kernels.HostCopier), never the backend's in place
// (a device backend's managed memory would migrate page by page).
func TestDecodeResident(t *testing.T) {
	run := func(be kernels.Backend) [][]result { return decodeTurns(t, be) }
	want := run(ref.New())
	res := &hostRows{ResidentBackend: kerneltest.Resident(ref.New())}
	got := run(res)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("behind Resident the engine generated\n%v\nthe reference backend\n%v", got, want)
	}
	if res.rows.Load() == 0 {
		t.Error("the sampler's row ops never ran")
	}
	if n := res.inPlace.Load(); n > 0 {
		t.Errorf("%d of the sampler's %d row ops read the backend's memory in place, not a host copy of the logits", n, res.rows.Load())
	}
	if n := res.Live(); n != 0 {
		t.Errorf("%d allocations (%d bytes) live after Shutdown, Close and Free, want 0", n, res.LiveBytes())
	}
}

// decodeTurns is TestDecodeResident's run on be: the requests in flight at
// once, then the next turn from the first's kept rows; it shuts the engine
// down and frees the model and the adapter.
func decodeTurns(t *testing.T, be kernels.Backend) [][]result {
	t.Helper()
	dir := filepath.Join("..", "testdata", "tiny")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	turn1 := []int32{104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10}
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 4, Targets: model.AllModules()}, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr != nil {
				for i := range lr.B {
					lr.B[i] = float32(i%5-2) * 0.05
				}
			}
		}
	}
	if err := ad.Place(be); err != nil {
		t.Fatal(err)
	}
	defer ad.Free()
	e := New(m, Config{Tokenizer: tok, PrefillTokens: 4, PrefixCaching: true})
	greedy := Params{MaxTokens: 6, Logprobs: true, TopLogprobs: 2, IgnoreEOS: true}
	seeded := Params{Temperature: 1, TopK: 40, TopP: 0.9, MaxTokens: 5, Seed: 7, HasSeed: true, IgnoreEOS: true, Logprobs: true}
	reqs := []*Request{
		{Prompt: turn1, N: 1, Params: greedy},
		{Prompt: turn1[:5], N: 3, Params: seeded},
		{Prompt: turn1[3:], N: 1, Params: greedy, Adapter: ad},
	}
	var hs []*Handle
	for _, r := range reqs { // all in flight at once
		h, err := e.Submit(r)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	var out [][]result
	for i, h := range hs {
		out = append(out, wait(t, h, reqs[i].N))
	}
	// The next turn extends the first: it starts from the kept rows.
	next := append(append(append([]int32(nil), turn1...), out[0][0].ids...), 72, 105)
	out = append(out, run(t, e, &Request{Prompt: next, N: 1, Params: greedy}))
	if e.Stats().PrefixHit == 0 {
		t.Error("the second turn did not start from the first's kept rows")
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// hostRows is kerneltest.Resident counting the sampler's row ops (RowMax,
// ExpShift) and those of them given memory the backend allocated.
type hostRows struct {
	*kerneltest.ResidentBackend
	rows, inPlace atomic.Int64
}

func (h *hostRows) RowMax(x []float32) float32 {
	h.count(x, nil)
	return h.ResidentBackend.RowMax(x)
}

func (h *hostRows) ExpShift(dst, x []float32, mu, scale float32) float64 {
	h.count(x, dst)
	return h.ResidentBackend.ExpShift(dst, x, mu, scale)
}

func (h *hostRows) count(x, dst []float32) {
	h.rows.Add(1)
	if h.Overlaps(x) || h.Overlaps(dst) {
		h.inPlace.Add(1)
	}
}

// oomAt is kerneltest.Resident whose AllocF32 fails once, at the failIn-th
// call from when it is armed: a device out of memory.
type oomAt struct {
	*kerneltest.ResidentBackend
	failIn atomic.Int64
}

func (b *oomAt) AllocF32(n int) ([]float32, error) {
	if b.failIn.Load() > 0 && b.failIn.Add(-1) == 0 {
		return nil, errors.New("out of memory")
	}
	return b.ResidentBackend.AllocF32(n)
}

// TestSeedOutOfMemory: when the device runs out of memory while a prompt's
// rows are copied from the prefix cache, the request prefills its whole
// prompt and answers as a cold engine does, and the cache gives back all
// it allocated. The copy had replaced the first layer's key buffer before
// the value buffer failed, so the prefill that followed judged every layer
// large enough by the first and wrote past the value buffer it never got
// (a panic here; memory it does not own on a device).
func TestSeedOutOfMemory(t *testing.T) {
	dir := filepath.Join("..", "testdata", "tiny")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	be := &oomAt{ResidentBackend: kerneltest.Resident(ref.New())}
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cold, _ := tiny(t)
	ce := New(cold, Config{Tokenizer: tok})
	defer ce.Shutdown(context.Background())

	e := New(m, Config{Tokenizer: tok, PrefixCaching: true})
	greedy := Params{MaxTokens: 4, Logprobs: true, IgnoreEOS: true}
	turn1 := []int32{104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10}
	run(t, e, &Request{Prompt: turn1, N: 1, Params: greedy})
	// A branch shares 10 of the kept rows, which are copied (not taken
	// over): the copy's first allocation succeeds, the second fails. The
	// engine is idle, so the copy is the next thing to allocate.
	branch := append(append([]int32(nil), turn1[:10]...), 33, 33)
	be.failIn.Store(2)
	got := run(t, e, &Request{Prompt: branch, N: 1, Params: greedy})[0]
	if be.failIn.Load() != 0 {
		t.Fatal("the armed allocation failure never happened")
	}
	sameOutput(t, "after the failed copy", run(t, ce, &Request{Prompt: branch, N: 1, Params: greedy})[0], got)
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if n := be.Live(); n != 0 {
		t.Errorf("%d allocations (%d bytes) live after Shutdown and Close, want 0", n, be.LiveBytes())
	}
}
