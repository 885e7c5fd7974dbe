package trainer

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hone-rl/hone/format/layout"
	"github.com/hone-rl/hone/kernels"
	"github.com/hone-rl/hone/kernels/cpu"
	"github.com/hone-rl/hone/kernels/ref"
	"github.com/hone-rl/hone/train/model"
	"github.com/hone-rl/hone/train/tinymodel"
	"github.com/spf13/pflag"
)

func TestSchedule(t *testing.T) {
	s := Schedule{Kind: "cosine", LR: 1, Warmup: 2, Total: 6, MinLR: 0.2}
	// Warm-up 0.5, 1; then cosine over 4 updates: p = 0, .25, .5, .75, 1.
	want := []float64{0.5, 1, 1, 0.2 + 0.8*(1+math.Cos(math.Pi/4))/2, 0.6, 0.2 + 0.8*(1+math.Cos(3*math.Pi/4))/2, 0.2, 0.2}
	for k, w := range want {
		if got := s.At(k); math.Abs(got-w) > 1e-12 {
			t.Errorf("cosine At(%d) = %v, want %v", k, got, w)
		}
	}
	w := Schedule{Kind: "warmup", LR: 2, Warmup: 4}
	if w.At(0) != 0.5 || w.At(3) != 2 || w.At(100) != 2 {
		t.Errorf("warmup: %v %v %v", w.At(0), w.At(3), w.At(100))
	}
	if (Schedule{Kind: "constant", LR: 3, Warmup: 5}).At(0) != 3 {
		t.Error("constant schedule warmed up")
	}
	if (Schedule{Kind: "linear", LR: 1}).Validate() == nil {
		t.Error("unknown schedule kind validated")
	}
	// A cosine "decay" to a higher --min-lr would climb: refused (it ran).
	if err := (Schedule{Kind: "cosine", LR: 1e-4, MinLR: 1e-3}).Validate(); err == nil || !strings.Contains(err.Error(), "--min-lr") {
		t.Errorf("cosine with --min-lr above --lr: %v, want an error naming --min-lr", err)
	}
	if err := (Schedule{Kind: "cosine", LR: 1e-4, MinLR: 1e-4}).Validate(); err != nil {
		t.Errorf("cosine with --min-lr equal to --lr (a constant): %v", err)
	}
}

// TestOrderCoversEachEpoch: each epoch is a permutation of the items cut
// into steps, the last one smaller where PerStep does not divide N, so no
// step holds an item twice (the old order's step 2 held item 1 twice).
func TestOrderCoversEachEpoch(t *testing.T) {
	o := Order{N: 5, PerStep: 2, Seed: 7}
	if o.StepsFor(2) != 6 {
		t.Fatalf("StepsFor(2) = %d, want 6 (3 steps an epoch)", o.StepsFor(2))
	}
	for e := range 2 {
		seen := map[int]int{}
		for s := 3 * e; s < 3*(e+1); s++ {
			items := o.Items(s)
			if want := []int{2, 2, 1}[s%3]; len(items) != want {
				t.Errorf("step %d has %d items, want %d", s, len(items), want)
			}
			for _, i := range items {
				seen[i]++
			}
		}
		for i := range 5 {
			if seen[i] != 1 {
				t.Errorf("epoch %d: item %d seen %d times, want once", e, i, seen[i])
			}
		}
	}
	if o.StepsFor(1) != 3 || (Order{N: 4, PerStep: 2}).StepsFor(3) != 6 {
		t.Errorf("StepsFor(1) = %d, want 3; N 4 by 2 for 3 epochs: %d, want 6", o.StepsFor(1), (Order{N: 4, PerStep: 2}).StepsFor(3))
	}
}

// TestOrderCrossEpochsKept: the order of runs saved before epochs ended on
// their own step is the one those runs were trained on, item for item (the
// values the code of then gave), so they resume bit for bit.
func TestOrderCrossEpochsKept(t *testing.T) {
	o := Order{N: 5, PerStep: 2, Seed: 7, CrossEpochs: true}
	var got []string
	for s := range 6 {
		got = append(got, fmt.Sprint(o.Items(s)))
	}
	if want := "[2 4] [3 0] [1 1] [4 0] [2 3] [1 2]"; strings.Join(got, " ") != want {
		t.Errorf("items %s, want %s", strings.Join(got, " "), want)
	}
	if o.StepsFor(2) != 5 {
		t.Errorf("StepsFor(2) = %d, want 5", o.StepsFor(2))
	}
}

func seq(ids []int32, train []bool) layout.Sequence {
	lp := make([]float32, len(ids))
	for i := range lp {
		lp[i] = float32(math.NaN())
		if train[i] {
			lp[i] = -float32(i)
		}
	}
	return layout.Sequence{IDs: ids, Trainable: train, Logprobs: lp}
}

func TestPack(t *testing.T) {
	exs := []Example{
		{Seqs: []layout.Sequence{seq([]int32{1, 2, 3}, []bool{false, true, true})}, Adv: 1},
		{Seqs: []layout.Sequence{seq([]int32{4, 5}, []bool{false, true}), seq([]int32{6, 7, 8}, []bool{false, false, true})}, Adv: -1},
		{Seqs: []layout.Sequence{seq([]int32{9, 10, 11, 12, 13, 14}, []bool{true, false, false, false, true, true})}, Adv: 2},
	}
	mbs, err := Pack(exs, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(mbs) != 3 {
		t.Fatalf("%d micro-batches, want 3 (3 tokens, 5 tokens, 6 > budget alone)", len(mbs))
	}
	b := mbs[1].Batch
	if got := b.Targets; len(got) != 5 || got[0] != 5 || got[1] != -1 || got[2] != -1 || got[3] != 8 || got[4] != -1 {
		t.Errorf("targets %v, want [5 -1 -1 8 -1]", got)
	}
	if b.SeqOff[1] != 2 || b.Pos[2] != 0 || mbs[1].Pos[1] != 3 || mbs[1].Sampler[1] != -2 || mbs[1].Adv[0] != -1 {
		t.Errorf("micro-batch 1: %+v", mbs[1])
	}
	// Example 2's two sequences are two histories of one trainable token each.
	if h, n := mbs[1].Hist, mbs[1].HistTokens; len(h) != 2 || h[0] != 0 || h[1] != 1 || len(n) != 2 || n[0] != 1 || n[1] != 1 {
		t.Errorf("micro-batch 1: histories %v of %v tokens, want [0 1] of [1 1]", h, n)
	}
	// Position 0 of example 3 is marked trainable but nothing predicts it.
	if exs[2].Trainable() != 2 || len(mbs[2].Pos) != 2 {
		t.Errorf("example 3: %d trainable, %d positions", exs[2].Trainable(), len(mbs[2].Pos))
	}
}

// TestMicroBatchSplitKeepsGradient: the accumulated gradient does not
// depend on how the step is split into micro-batches (beyond float32
// rounding), because the loss normalizes by step-wide totals.
func TestMicroBatchSplitKeepsGradient(t *testing.T) {
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	m, err := tinymodel.New(tinymodel.Options{Hidden: 32, Layers: 2, Heads: 4, KVHeads: 2, Seed: 2}, be)
	if err != nil {
		t.Fatal(err)
	}
	ad, err := model.NewAdapter(&m.Config, model.AdapterConfig{Rank: 2, Alpha: 2, Targets: model.AllModules()}, 1)
	if err != nil {
		t.Fatal(err)
	}
	ad.Params(func(_ string, p, _ []float32) {
		for i := range p {
			p[i] += 0.01 * float32(i%7)
		}
	})
	var exs []Example
	T := 0
	for e := range 4 {
		n := 5 + 3*e
		ids, tr := make([]int32, n), make([]bool, n)
		for i := range ids {
			ids[i] = int32((e*31 + i*17) % 250)
			tr[i] = i >= 2
		}
		exs = append(exs, Example{Seqs: []layout.Sequence{seq(ids, tr)}})
		T += exs[e].Trainable()
	}
	loss := func(mb *MicroBatch, out Outputs) (map[string]float64, []float64, error) {
		g := make([]float64, len(out.Logprob))
		s := 0.0
		for i, lp := range out.Logprob {
			g[i] = -1 / float64(T)
			s -= float64(lp) / float64(T)
		}
		return map[string]float64{"loss": s}, g, nil
	}
	grads := func(budget int) ([]float32, float64, int) {
		mbs, err := Pack(exs, budget)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Accumulate(context.Background(), m, ad, &Job{MicroBatches: mbs, Loss: loss}, model.TrainOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var all []float32
		ad.Params(func(_ string, _, g []float32) { all = append(all, g...) })
		return all, s["loss"], len(mbs)
	}
	one, l1, n1 := grads(1000)
	many, l4, n4 := grads(1)
	if n1 != 1 || n4 != 4 {
		t.Fatalf("%d and %d micro-batches", n1, n4)
	}
	if math.Abs(l1-l4) > 1e-6*math.Abs(l1) {
		t.Errorf("loss %v vs %v", l1, l4)
	}
	maxAbs, maxDiff := 0.0, 0.0
	for i := range one {
		maxAbs = math.Max(maxAbs, math.Abs(float64(one[i])))
		maxDiff = math.Max(maxDiff, math.Abs(float64(one[i]-many[i])))
	}
	if maxAbs == 0 || maxDiff > 1e-4*maxAbs {
		t.Errorf("gradient differs by %g (max |g| %g)", maxDiff, maxAbs)
	}
}

func TestAdamWClipsGradNorm(t *testing.T) {
	be, ad := tinyQAdapter(t)
	ad.Params(func(_ string, _, g []float32) {
		for i := range g {
			g[i] = 3
		}
	})
	n := float64(len(ad.Layers[0][model.ModQ].DA) + len(ad.Layers[0][model.ModQ].DB))
	o := mustAdamW(t, ad, kernels.AdamWParams{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, 1)
	B := append([]float32(nil), ad.Layers[0][model.ModQ].B...)
	norm, err := o.Update(be, ad, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(norm-3*math.Sqrt(n)) > 1e-4 {
		t.Errorf("grad norm %v, want %v", norm, 3*math.Sqrt(n))
	}
	if g := GradNorm(be, ad); g > 1+1e-5 {
		t.Errorf("gradient not clipped to 1: %v", g)
	}
	// First Adam step moves each parameter by lr·sign(g) (bias-corrected).
	if d := ad.Layers[0][model.ModQ].B[0] - B[0]; math.Abs(float64(d)+0.1) > 1e-5 || o.Step != 1 {
		t.Errorf("first update moved B by %v, step %d", d, o.Step)
	}
}

// defaultOptions are the options with their flag defaults.
func defaultOptions() Options {
	var o Options
	o.AddFlags(pflag.NewFlagSet("test", pflag.ContinueOnError), 1e-5)
	return o
}

// TestSetupDType: --dtype picks how the base weights are held, aliases are
// saved under one name, and an unknown dtype is refused naming the flag.
func TestSetupDType(t *testing.T) {
	dir := t.TempDir()
	md := filepath.Join(dir, "model")
	if err := tinymodel.Write(context.Background(), md, tinymodel.Options{Hidden: 16, Layers: 1, Heads: 2, KVHeads: 1}, ref.New()); err != nil {
		t.Fatal(err)
	}
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	for _, tc := range []struct {
		flag, saved string
		bf16        bool
	}{{"", "float32", false}, {"f32", "float32", false}, {"BF16", "bfloat16", true}, {"bfloat16", "bfloat16", true}} {
		o := defaultOptions()
		o.Model, o.Out, o.Name, o.DType = md, dir, "r"+tc.flag, tc.flag
		if err := o.Validate(); err != nil {
			t.Fatalf("--dtype %q: %v", tc.flag, err)
		}
		if o.DType != tc.saved {
			t.Errorf("--dtype %q normalised to %q, want %q", tc.flag, o.DType, tc.saved)
		}
		base, err := LoadBase(be, &o)
		if err != nil {
			t.Fatal(err)
		}
		env, err := Setup(context.Background(), base, &o, o, Fresh, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := env.Model.Embed.BF16 != nil; got != tc.bf16 || env.Model.Blocks[0].Attn.Q.Weight.BF16 != nil != tc.bf16 {
			t.Errorf("--dtype %q: bfloat16 matrices %v, want %v", tc.flag, got, tc.bf16)
		}
		env.Close()
	}
	o := defaultOptions()
	o.Model, o.Name, o.DType = md, "x", "int8"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--dtype") {
		t.Errorf("--dtype int8: %v, want an error naming --dtype", err)
	}
}

// TestSameConfigDType: a config saved before --dtype existed has no
// "dtype" and means float32, so such runs resume with the default and
// refuse bfloat16.
func TestSameConfigDType(t *testing.T) {
	old := []byte(`{"model": "m", "rank": 8}`)
	for _, tc := range []struct {
		now  string
		same bool
	}{
		{`{"model": "m", "rank": 8, "dtype": "float32"}`, true},
		{`{"model": "m", "rank": 8, "dtype": "bfloat16"}`, false},
		{`{"model": "m", "rank": 4, "dtype": "float32"}`, false},
		{`{"model": "m", "rank": 8, "dtype": "float32", "steps": 9}`, true},
	} {
		if got := sameConfig(old, []byte(tc.now)); got != tc.same {
			t.Errorf("saved %s, now %s: same %v, want %v", old, tc.now, got, tc.same)
		}
		if got := sameConfig([]byte(tc.now), old); got != tc.same {
			t.Errorf("saved %s, now %s: same %v, want %v", tc.now, old, got, tc.same)
		}
	}
}

// mustAdamW is NewAdamW failing t on an error.
func mustAdamW(t testing.TB, ad *model.Adapter, p kernels.AdamWParams, maxGradNorm float64) *AdamW {
	t.Helper()
	o, err := NewAdamW(ad, p, maxGradNorm)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// tinyQAdapter is a rank-1 adapter on q_proj of a one-layer tiny config,
// and a one-worker CPU backend closed when t ends: the optimizer tests'
// smallest setting.
func tinyQAdapter(t *testing.T) (*cpu.Backend, *model.Adapter) {
	t.Helper()
	be, err := cpu.New(cpu.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	c, _ := tinymodel.Options{Hidden: 8, Layers: 1, Heads: 2}.Config()
	ad, err := model.NewAdapter(&c, model.AdapterConfig{Rank: 1, Alpha: 1, Targets: []model.Module{model.ModQ}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	return be, ad
}
