package engine

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// residentChooser is hostRows (kerneltest.Resident counting the host
// sampler's row ops) as a kernels.RowChooser by ref.ChooseRows, the
// oracle of kernels/cuda's, counting the choices it makes: a device
// backend's shape without a device.
type residentChooser struct {
	*hostRows
	chosen atomic.Int64
}

func (c *residentChooser) ChooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	c.chosen.Add(int64(len(dst)))
	ref.ChooseRows(dst, logits, V, rows, invTemp, u)
}

// choiceRequests are requests whose tokens a kernels.RowChooser chooses
// (the first onDevice of them: greedy with logprobs, n = 3 sampled at
// temperature 1 with logprobs, whose siblings' first tokens come from the
// leader's row, and temperature 0.7 with a top_k no smaller than the
// vocabulary) and requests the host's sampler keeps: top_p, top_logprobs,
// a presence penalty, a constraint, top_k below the vocabulary.
func choiceRequests() (reqs []*Request, onDevice int) {
	prompt := []int32{104, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33, 10}
	seeded := func(p Params, seed uint64) Params {
		p.Seed, p.HasSeed, p.IgnoreEOS = seed, true, true
		return p
	}
	reqs = []*Request{
		{Prompt: prompt, N: 1, Params: seeded(Params{MaxTokens: 6, Logprobs: true}, 1)},
		{Prompt: prompt[:5], N: 3, Params: seeded(Params{Temperature: 1, MaxTokens: 5, Logprobs: true}, 7)},
		{Prompt: prompt[2:], N: 1, Params: seeded(Params{Temperature: 0.7, TopK: 1000, MaxTokens: 5}, 3)},

		{Prompt: prompt[1:], N: 2, Params: seeded(Params{Temperature: 1, TopP: 0.9, MaxTokens: 4, Logprobs: true}, 5)},
		{Prompt: prompt, N: 1, Params: seeded(Params{MaxTokens: 4, Logprobs: true, TopLogprobs: 2}, 1)},
		{Prompt: prompt[3:], N: 1, Params: seeded(Params{Temperature: 1, PresencePenalty: 0.5, MaxTokens: 4, Logprobs: true}, 9)},
		{Prompt: prompt[4:], N: 1, Params: seeded(Params{Temperature: 1, MaxTokens: 3, Logprobs: true}, 11),
			Constraint: func(int) Constraint { return maskTo{'x'} }},
		{Prompt: prompt[:7], N: 1, Params: seeded(Params{Temperature: 1, TopK: 40, MaxTokens: 4, Logprobs: true}, 13)},
	}
	return reqs, 3
}

// chooseTurns runs choiceRequests on be, all in flight at once, and
// returns their results, the engine's Stats after its Shutdown, and the
// tokens of the requests a RowChooser may choose.
func chooseTurns(t *testing.T, be kernels.Backend) (out [][]result, st Stats, devTokens int) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "tiny")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(dir, be)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e := New(m, Config{Tokenizer: tok, PrefillTokens: 8, EOS: []int32{258}})
	reqs, onDevice := choiceRequests()
	var hs []*Handle
	for _, r := range reqs {
		h, err := e.Submit(r)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	for i, h := range hs {
		res := wait(t, h, reqs[i].N)
		if i < onDevice {
			for _, r := range res {
				devTokens += len(r.ids)
			}
		}
		out = append(out, res)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out, e.Stats(), devTokens
}

// sameResults compares choiceRequests' results on two backends: the same
// tokens and finish reasons, the logprobs within rel of want's.
func sameResults(t *testing.T, got, want [][]result, rel float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d requests' results, want %d", len(got), len(want))
	}
	for i := range want {
		for j, w := range want[i] {
			g := got[i][j]
			if !slices.Equal(g.ids, w.ids) || g.finish != w.finish || g.text != w.text {
				t.Errorf("request %d choice %d: tokens %v (%s), want %v (%s)", i, j, g.ids, g.finish, w.ids, w.finish)
				continue
			}
			for k := range w.lps {
				if d := math.Abs(float64(g.lps[k] - w.lps[k])); !(d <= rel*math.Max(1, math.Abs(float64(w.lps[k])))) {
					t.Errorf("request %d choice %d token %d: logprob %v, want %v", i, j, k, g.lps[k], w.lps[k])
				}
			}
		}
	}
}

// TestDeviceChoice: on a backend that is a kernels.RowChooser (here
// ref.ChooseRows behind kerneltest.Resident), the engine has it choose
// exactly the tokens of the requests that need nothing but the row's
// distribution (greedy, plain temperature sampling, top_k ≥ V), forked
// siblings included, and keeps the host's sampler for top_p, top_k < V,
// top_logprobs, penalties and constraints, in the same batch; the tokens,
// finish reasons and texts are the host sampler's on the reference
// backend (the draws take the same uniforms of each sequence's stream),
// the logprobs within float32 rounding; the host's sampler reads only
// host copies of the rows it needs, and nothing is left allocated.
func TestDeviceChoice(t *testing.T) {
	want, wst, _ := chooseTurns(t, ref.New())
	if wst.DevicePicks != 0 {
		t.Errorf("the reference backend (no RowChooser) had %d tokens chosen on the device", wst.DevicePicks)
	}
	be := &residentChooser{hostRows: &hostRows{ResidentBackend: kerneltest.Resident(ref.New())}}
	got, st, dev := chooseTurns(t, be)
	sameResults(t, got, want, 1e-6)
	if st.DevicePicks != int64(dev) || be.chosen.Load() != int64(dev) {
		t.Errorf("%d tokens chosen by the backend (Stats %d), want the %d of the requests it covers", be.chosen.Load(), st.DevicePicks, dev)
	}
	if host := st.GenTokens - st.DevicePicks; host == 0 || be.rows.Load() == 0 {
		t.Errorf("%d tokens and %d row ops on the host: the host's sampler never ran", host, be.rows.Load())
	}
	t.Logf("%d tokens: %d chosen by the backend, %d row ops of the host's sampler", st.GenTokens, st.DevicePicks, be.rows.Load())
	if n := be.inPlace.Load(); n > 0 {
		t.Errorf("%d of the host sampler's %d row ops read the backend's memory in place", n, be.rows.Load())
	}
	if n := be.Live(); n != 0 {
		t.Errorf("%d allocations (%d bytes) live after Shutdown and Close, want 0", n, be.LiveBytes())
	}
}

// TestDeviceInv: which Params a RowChooser covers, and at which inverse
// temperature.
func TestDeviceInv(t *testing.T) {
	const V = 100
	cases := []struct {
		p    Params
		cons bool
		inv  float32
		ok   bool
	}{
		{Params{}, false, 0, true},
		{Params{Logprobs: true}, false, 0, true},
		{Params{TopP: 0.5, TopK: 3}, false, 0, true}, // greedy ignores them
		{Params{Temperature: 1}, false, 1, true},
		{Params{Temperature: 0.5, TopK: V, TopP: 1}, false, 2, true},
		{Params{Temperature: 1, TopLogprobs: 3}, false, 1, true}, // no logprobs asked: no top ones either
		{Params{Temperature: 1, TopK: V - 1}, false, 0, false},
		{Params{Temperature: 1, TopP: 0.9}, false, 0, false},
		{Params{Logprobs: true, TopLogprobs: 1}, false, 0, false},
		{Params{FrequencyPenalty: 0.1}, false, 0, false},
		{Params{Temperature: 1, PresencePenalty: -0.1}, false, 0, false},
		{Params{}, true, 0, false},
		// min_p cuts a sampled row only; the repetition penalty and
		// min_tokens change a greedy one too.
		{Params{Temperature: 1, MinP: 0.1}, false, 0, false},
		{Params{MinP: 0.1}, false, 0, true},
		{Params{RepetitionPenalty: 1}, false, 0, true},
		{Params{RepetitionPenalty: 1.2}, false, 0, false},
		{Params{Temperature: 1, MinTokens: 2}, false, 0, false},
		{Params{Temperature: 1e300}, false, 0, false}, // 1/T is 0 in float32: not greedy
	}
	for _, c := range cases {
		var cons Constraint
		if c.cons {
			cons = maskTo{1}
		}
		inv, ok := newSampler(ref.New(), c.p, 0).deviceInv(cons, V)
		if inv != c.inv || ok != c.ok {
			t.Errorf("%+v (constraint %v): %g %v, want %g %v", c.p, c.cons, inv, ok, c.inv, c.ok)
		}
	}
}
