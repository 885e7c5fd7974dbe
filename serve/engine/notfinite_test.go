package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hone-rl/hone/format/tokenizer"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/kerneltest"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
)

// notFiniteRows are logits rows of V = 1300 (three of sampleAll's blocks)
// holding NaN or +Inf: NaN at 0 and in every block, +Inf twice after a
// NaN, +Inf at 0, every entry NaN, NaN and −Inf; and a finite row.
func notFiniteRows() map[string][]float32 {
	const V = 1300
	nan, inf, ninf := float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))
	r := rand.New(rand.NewPCG(28, 1))
	normal := func() []float32 {
		x := make([]float32, V)
		for i := range x {
			x[i] = float32(r.NormFloat64() * 2)
		}
		return x
	}
	rows := map[string][]float32{"finite": normal()}
	rows["NaN at 0"] = normal()
	rows["NaN at 0"][0] = nan
	rows["NaN in every block"] = normal()
	for _, i := range []int{5, 600, 1100, V - 1} {
		rows["NaN in every block"][i] = nan
	}
	rows["+Inf after NaN"] = normal()
	rows["+Inf after NaN"][100], rows["+Inf after NaN"][900], rows["+Inf after NaN"][1200] = nan, inf, inf
	rows["+Inf at 0"] = normal()
	rows["+Inf at 0"][0], rows["+Inf at 0"][700] = inf, inf
	allNaN, nanInf := make([]float32, V), make([]float32, V)
	for i := range allNaN {
		allNaN[i], nanInf[i] = nan, ninf
		if i%5 == 2 {
			nanInf[i] = nan
		}
	}
	rows["all NaN"], rows["NaN and -Inf"] = allNaN, nanInf
	return rows
}

// ruleChoice is kernels.RowChooser's rule for row where it decides the
// token whatever the draw: the first +Inf (logprob 0), or −1 for a row
// with no candidate; ok false for a row that has a distribution.
func ruleChoice(row []float32) (id int32, ok bool) {
	best := int32(-1)
	for i, v := range row {
		if math.IsInf(float64(v), 1) {
			return int32(i), true
		}
		if v > float32(math.Inf(-1)) {
			best = int32(i)
		}
	}
	return -1, best < 0
}

// TestNotFiniteRows: on rows holding NaN or +Inf, the host's sampler (pick,
// on the reference backend and on the CPU's vectorised row ops, whose
// exponential lets NaN through) and a device's choice (fromDevice of
// ref.ChooseRows, the oracle of kernels/cuda's, at the uniform the
// sequence's stream gives it) make the same choice with the same logprob,
// greedy and sampled at two temperatures, over several seeds; and both
// follow kernels.RowChooser's rule, as the host's top_k and top_p
// choices and top_logprobs do: NaN never chosen nor ranked, greedy the
// largest other entry, the first +Inf with logprob 0, −1 for a row of
// NaN and −Inf.
func TestNotFiniteRows(t *testing.T) {
	rows := notFiniteRows()
	bes := map[string]kernels.Backend{"ref": ref.New(), "cpu": rowBackend(t)}
	params := []Params{
		{Logprobs: true},
		{Temperature: 1, Logprobs: true},
		{Temperature: 0.7, Logprobs: true},
		{Temperature: 1, TopK: 5, Logprobs: true}, // the host's only, from here
		{Temperature: 1, TopK: 600, Logprobs: true},
		{Temperature: 0.8, TopP: 0.9, Logprobs: true},
		{Logprobs: true, TopLogprobs: 3},
	}
	for beName, be := range bes {
		for name, row := range rows {
			V := len(row)
			forced, isForced := ruleChoice(row)
			argmax := int32(-1)
			for i, v := range row {
				if v > float32(math.Inf(-1)) && (argmax < 0 || v > row[argmax]) {
					argmax = int32(i)
				}
			}
			for _, p := range params {
				for seed := range uint64(6) {
					p.Seed, p.HasSeed = seed, true
					what := fmt.Sprintf("%s, %s, T %g top_k %d top_p %g top_logprobs %d, seed %d",
						beName, name, p.Temperature, p.TopK, p.TopP, p.TopLogprobs, seed)
					host := newSampler(be, p, 0)
					id, lp, top := host.pick(slices.Clone(row), nil)
					switch {
					case isForced:
						if id != forced || id >= 0 && lp != 0 {
							t.Errorf("%s: token %d logprob %g, want %d and 0", what, id, lp, forced)
						}
					case id < 0 || int(id) >= V || math.IsNaN(float64(row[id])):
						t.Errorf("%s: token %d", what, id)
						continue
					case p.Temperature == 0 && id != argmax:
						t.Errorf("%s: greedy token %d, want %d", what, id, argmax)
					case math.IsNaN(float64(lp)) || lp > 0:
						t.Errorf("%s: token %d logprob %g", what, id, lp)
					}
					for _, tp := range top {
						if math.IsNaN(float64(tp.Logprob)) || math.IsNaN(float64(row[tp.ID])) {
							t.Errorf("%s: top logprob %+v", what, tp)
						}
					}
					dev := newSampler(be, p, 0)
					inv, ok := dev.deviceInv(nil, V)
					if !ok {
						continue
					}
					res := make([]kernels.RowChoice, 1)
					ref.ChooseRows(res, row, V, []int32{0}, []float32{inv}, []float64{dev.deviceU(inv)})
					pk := dev.fromDevice(res[0])
					if pk.id != id || !(pk.lp == lp || math.Abs(float64(pk.lp-lp)) <= 1e-6*math.Max(1, math.Abs(float64(lp)))) {
						t.Errorf("%s: the device's choice %d logprob %g, the host's %d and %g", what, pk.id, pk.lp, id, lp)
					}
					if a, b := host.rng.Uint64(), dev.rng.Uint64(); a != b {
						t.Errorf("%s: the streams part after the choice", what)
					}
				}
			}
		}
	}
}

// nanChooser is residentChooser with the rows it chooses from turned to
// NaN first: a model whose numerics blew up, seen by a device's choice.
type nanChooser struct{ *residentChooser }

func (c nanChooser) ChooseRows(dst []kernels.RowChoice, logits []float32, V int, rows []int32, invTemp []float32, u []float64) {
	for _, r := range rows {
		for i := range logits[int(r)*V : (int(r)+1)*V] {
			logits[int(r)*V+i] = float32(math.NaN())
		}
	}
	c.residentChooser.ChooseRows(dst, logits, V, rows, invTemp, u)
}

// maskNaN is a constraint that turns every logit to NaN.
type maskNaN struct{}

func (maskNaN) Mask(l []float32) {
	for i := range l {
		l[i] = float32(math.NaN())
	}
}
func (maskNaN) Accept(int32) error { return nil }

// TestNoCandidate: a sequence whose row has no candidate ends with a
// NoCandidateError (errors.Is ErrNoCandidate) naming its choice, the
// tokens it had and the cause, and no token: through the host's sampler
// (a constraint's mask that leaves NaN, the model's cause; one that
// allows nothing, after two tokens it allowed, the constraint's) and
// through a device's choice (the backend's rows turned to NaN), while a
// request beside it in the same batch, on the other path, completes.
func TestNoCandidate(t *testing.T) {
	dir := filepath.Join("..", "testdata", "tiny")
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{104, 101, 108, 108, 111}
	for _, c := range []struct {
		name        string
		onDevice    bool
		cons        func(int) Constraint
		tokens      int
		constrained bool
	}{
		{"device, NaN rows", true, nil, 0, false},
		{"host, NaN mask", false, func(int) Constraint { return maskNaN{} }, 0, false},
		{"host, mask of nothing", false, func(int) Constraint { return &allowThen{ids: []int32{'a', 'b'}} }, 2, true},
	} {
		var be kernels.Backend = ref.New()
		if c.onDevice {
			be = nanChooser{&residentChooser{hostRows: &hostRows{ResidentBackend: kerneltest.Resident(ref.New())}}}
		}
		m, err := model.Load(dir, be)
		if err != nil {
			t.Fatal(err)
		}
		e := New(m, Config{Tokenizer: tok, PrefillTokens: 8, EOS: []int32{258}})
		bad := &Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: 4, Logprobs: true, IgnoreEOS: true}, Constraint: c.cons}
		good := &Request{Prompt: prompt, N: 1, Params: Params{MaxTokens: 4, Logprobs: true, IgnoreEOS: true}}
		if c.onDevice {
			good.Constraint = func(int) Constraint { return maskTo{'x'} } // the host's sampler
		}
		hb, err := e.Submit(bad)
		if err != nil {
			t.Fatal(err)
		}
		hg, err := e.Submit(good)
		if err != nil {
			t.Fatal(err)
		}
		var got error
		tokens := 0
		for done := false; !done; {
			var evs []Event
			evs, done, err = hb.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				if ev.Token >= 0 {
					tokens++
				}
				if ev.Err != nil {
					got = ev.Err
				}
			}
		}
		var nc *NoCandidateError
		if !errors.Is(got, ErrNoCandidate) || !errors.As(got, &nc) || tokens != c.tokens {
			t.Errorf("%s: %d tokens, error %v; want %d and ErrNoCandidate", c.name, tokens, got, c.tokens)
		} else if *nc != (NoCandidateError{Choice: 0, Tokens: c.tokens, Constrained: c.constrained}) {
			t.Errorf("%s: %+v, want %d tokens, constrained %v", c.name, *nc, c.tokens, c.constrained)
		}
		if res := wait(t, hg, 1); len(res[0].ids) != 4 || res[0].finish != "length" {
			t.Errorf("%s: the request beside it gave %v (%s), want 4 tokens", c.name, res[0].ids, res[0].finish)
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		m.Close()
	}
}

// allowThen is a constraint that allows ids in turn, then no token at all.
type allowThen struct {
	ids []int32
	pos int
}

func (c *allowThen) Mask(l []float32) {
	for i := range l {
		if c.pos >= len(c.ids) || int32(i) != c.ids[c.pos] {
			l[i] = float32(math.Inf(-1))
		}
	}
}

func (c *allowThen) Accept(int32) error {
	c.pos++
	return nil
}
