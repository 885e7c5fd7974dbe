package model

import (
	"path/filepath"

	"context"
	"fmt"
	"github.com/hone-rl/hone/format/safetensors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// microConfig is a model small enough for finite differences.
func microConfig(family string) Config {
	c := Config{Family: family, Vocab: 37, Hidden: 12, Intermediate: 20, Layers: 2, Heads: 3, KVHeads: 1, HeadDim: 4,
		RMSNormEps: 1e-5, RoPE: kernels.RoPEConfig{Theta: 10000}}
	switch family {
	case "qwen2":
		c.QKVBias, c.TieEmbeddings = true, true
	case "qwen3":
		c.QKNorm, c.HeadDim = true, 6
	case "llama":
		c.RoPE = kernels.RoPEConfig{Theta: 500000, Scaling: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPos: 16}
	case "mistral":
		// Every layer slides, with the model's one RoPE, through a window
		// shorter than the test sequences (Mistral 7B v0.1).
		c.RoPE.Theta = 1e6
		c.LayerKinds, c.SlidingWindow, c.LocalRoPE = "SS", 3, c.RoPE
	case "gemma3_text":
		// Layer 0 slides with a window shorter than the test sequences.
		c.QKNorm, c.HeadDim, c.TieEmbeddings = true, 6, true
		c.Act, c.NormOffset, c.SandwichNorms = "gelu_tanh", true, true
		c.EmbedScale, c.AttnScale = float32(math.Sqrt(12)), float32(1/math.Sqrt(5))
		c.LayerKinds, c.SlidingWindow = "SF", 3
		c.RoPE.Theta, c.LocalRoPE = 1e6, kernels.RoPEConfig{Theta: 10000}
	}
	return c
}

// randomize fills every weight with seeded values; norms near 1 (under
// NormOffset, stored weights near 0: the norm multiplies by 1+w).
func randomize(m *Model, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	one := 1.0
	if m.Config.NormOffset {
		one = 0
	}
	for _, t := range m.Tensors() {
		norm := strings.HasSuffix(t.Name, "norm.weight")
		std := 1 / math.Sqrt(float64(t.Shape[len(t.Shape)-1]))
		if strings.Contains(t.Name, "embed") || strings.Contains(t.Name, "lm_head") {
			std = 0.5
		}
		for i := range t.Values {
			if norm {
				t.Values[i] = float32(one + 0.1*rng.NormFloat64())
			} else {
				t.Values[i] = float32(std * rng.NormFloat64())
			}
		}
	}
}

// randomAdapter returns an adapter with nonzero A and B on the given targets.
// It is placed on m's backend.
func randomAdapter(t testing.TB, m *Model, targets []Module, rank int, seed uint64) *Adapter {
	ad, err := NewAdapter(&m.Config, AdapterConfig{Rank: rank, Alpha: 2 * float64(rank), Targets: targets}, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr != nil {
				for i := range lr.B {
					lr.B[i] = float32(0.3 * rng.NormFloat64())
				}
			}
		}
	}
	if err := ad.Place(m.Backend()); err != nil {
		t.Fatal(err)
	}
	return ad
}

func newMicro(t testing.TB, family string, be kernels.Backend, seed uint64) *Model {
	m, err := New(microConfig(family), be)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, seed)
	return m
}

// packed builds a batch of sequences with the given lengths, random ids and targets.
func packed(V int, lens []int, seed uint64) *Batch {
	rng := rand.New(rand.NewPCG(seed, 3))
	b := &Batch{SeqOff: []int32{0}}
	for _, n := range lens {
		for i := range n {
			b.IDs = append(b.IDs, int32(rng.IntN(V)))
			b.Targets = append(b.Targets, int32(rng.IntN(V)))
			b.Pos = append(b.Pos, int32(i))
		}
		b.SeqOff = append(b.SeqOff, int32(len(b.IDs)))
	}
	return b
}

func maxRelDiff(a, b []float32) float64 {
	var scale, worst float64
	for _, v := range b {
		scale = max(scale, math.Abs(float64(v)))
	}
	for i := range a {
		d := math.Abs(float64(a[i]-b[i])) / (scale + 1e-30)
		if math.IsNaN(d) { // max would carry the NaN and every "d > tol" pass
			return math.Inf(1)
		}
		worst = max(worst, d)
	}
	return worst
}

var families = []string{"llama", "mistral", "qwen2", "qwen3", "gemma3_text"}

// Decoding through the KV cache — a prompt prefill, then one token at a time,
// several sequences per step — gives the logits of the full forward.
func TestStepMatchesFullForward(t *testing.T) {
	for _, be := range testBackends(t) {
		for _, fam := range families {
			for _, mode := range []string{"f32", "adapter", "bf16+adapter"} {
				t.Run(fmt.Sprintf("%s/%s/%s", be.Name(), fam, mode), func(t *testing.T) {
					checkStepMatchesFull(t, be, fam, mode)
				})
			}
		}
	}
}

// checkStepMatchesFull decodes three sequences of a micro model of family
// fam on be (prompts of 3, 1 and 4 tokens in the first step, then a token
// a step each, all the live sequences in one step) and checks every step's
// logits against the full forward's; mode is "f32", "adapter" or
// "bf16+adapter".
func checkStepMatchesFull(t *testing.T, be kernels.Backend, fam, mode string) {
	ctx := context.Background()
	withAdapter := mode != "f32"
	m := newMicro(t, fam, be, 7)
	defer m.Close()
	if strings.HasPrefix(mode, "bf16") {
		m.ToBF16()
	}
	var ad *Adapter
	if withAdapter {
		ad = randomAdapter(t, m, AllModules(), 2, 9)
	}
	lens := []int{7, 5, 9}
	prompt := []int{3, 1, 4}
	b := packed(m.Config.Vocab, lens, 11)
	full, err := m.Logits(ctx, b, ad)
	if err != nil {
		t.Fatal(err)
	}
	V := m.Config.Vocab
	cache := NewContiguousCache(&m.Config, m.Backend())
	defer cache.Close()
	done := make([]int, len(lens)) // tokens of each sequence already in the cache
	var buf []float32
	defer func() {
		if buf != nil {
			m.FreeLogits(buf)
		}
	}()
	for round := 0; ; round++ {
		var in []StepInput
		var which []int
		for s, n := range lens {
			if done[s] == n {
				continue
			}
			k := 1
			if round == 0 {
				k = prompt[s]
			}
			off := int(b.SeqOff[s]) + done[s]
			in = append(in, StepInput{Seq: 100 + s, IDs: b.IDs[off : off+k]})
			which = append(which, s)
		}
		if len(in) == 0 {
			break
		}
		// Later rounds write into the previous round's logits
		// (StepInto), poisoned so stale values would show.
		for i := range buf {
			buf[i] = float32(math.NaN())
		}
		out, err := m.StepInto(ctx, cache, in, ad, buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != len(in)*V {
			t.Fatalf("round %d: %d logits, want %d", round, len(out), len(in)*V)
		}
		if round > 0 && &out[0] != &buf[0] {
			t.Fatalf("round %d: StepInto allocated though the buffer holds %d logits", round, cap(buf))
		}
		buf = out
		for i, s := range which {
			done[s] += len(in[i].IDs)
			row := int(b.SeqOff[s]) + done[s] - 1
			if d := maxRelDiff(out[i*V:(i+1)*V], full[row*V:(row+1)*V]); d > 1e-5 {
				t.Fatalf("round %d sequence %d position %d: step logits differ from full forward by %.3g", round, s, done[s]-1, d)
			}
		}
	}
	for s, n := range lens {
		if cache.Len(100+s) != n {
			t.Errorf("cache holds %d tokens of sequence %d, want %d", cache.Len(100+s), s, n)
		}
	}
}

// A fresh adapter (B = 0) leaves the model unchanged, and merging an adapter
// into the weights gives the adapted model without the adapter.
func TestFreshAdapterAndMerge(t *testing.T) {
	ctx := context.Background()
	for _, be := range testBackends(t) {
		for _, fam := range families {
			t.Run(be.Name()+"/"+fam, func(t *testing.T) {
				m := newMicro(t, fam, be, 5)
				b := packed(m.Config.Vocab, []int{6, 4}, 1)
				base, err := m.Logits(ctx, b, nil)
				if err != nil {
					t.Fatal(err)
				}
				fresh, err := NewAdapter(&m.Config, AdapterConfig{Rank: 4, Alpha: 8, Targets: AllModules()}, 3)
				if err != nil {
					t.Fatal(err)
				}
				if err := fresh.Place(be); err != nil {
					t.Fatal(err)
				}
				got, err := m.Logits(ctx, b, fresh)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(got, base); d != 0 {
					t.Errorf("fresh adapter changes logits by %.3g", d)
				}
				ad := randomAdapter(t, m, []Module{ModQ, ModV, ModDown}, 3, 4)
				adapted, err := m.Logits(ctx, b, ad)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(adapted, base); d < 1e-3 {
					t.Fatalf("random adapter barely changes logits (%.3g): test is not sensitive", d)
				}
				if err := m.Merge(ad); err != nil {
					t.Fatal(err)
				}
				merged, err := m.Logits(ctx, b, nil)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(merged, adapted); d > 1e-5 {
					t.Errorf("merged model differs from adapter by %.3g", d)
				}
				// The merged weights saved and loaded into a fresh model give the same logits.
				path := filepath.Join(t.TempDir(), "model.safetensors")
				if err := m.SaveWeights(path, safetensors.F32); err != nil {
					t.Fatal(err)
				}
				fresh2, err := New(m.Config, be)
				if err != nil {
					t.Fatal(err)
				}
				set, err := safetensors.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer set.Close()
				if err := fresh2.LoadWeights(set); err != nil {
					t.Fatal(err)
				}
				reloaded, err := fresh2.Logits(ctx, b, nil)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxRelDiff(reloaded, merged); d != 0 {
					t.Errorf("saved and reloaded merged model differs by %.3g", d)
				}
			})
		}
	}
}

// A padded batch (each sequence followed by padding that is its own segment,
// targets −1) gives the same per-token logprobs as the packed batch.
func TestPaddedEqualsPacked(t *testing.T) {
	ctx := context.Background()
	be := testBackends(t)[0]
	m := newMicro(t, "qwen3", be, 2)
	ad := randomAdapter(t, m, AllModules(), 2, 1)
	lens := []int{5, 3}
	b := packed(m.Config.Vocab, lens, 4)
	p, err := m.Forward(ctx, b, ad, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const T = 6
	pad := &Batch{SeqOff: []int32{0}}
	for s, n := range lens {
		lo := int(b.SeqOff[s])
		pad.IDs = append(pad.IDs, b.IDs[lo:lo+n]...)
		pad.Pos = append(pad.Pos, b.Pos[lo:lo+n]...)
		pad.Targets = append(pad.Targets, b.Targets[lo:lo+n]...)
		pad.SeqOff = append(pad.SeqOff, int32(len(pad.IDs)))
		for i := n; i < T; i++ {
			pad.IDs, pad.Pos, pad.Targets = append(pad.IDs, 0), append(pad.Pos, int32(i)), append(pad.Targets, -1)
		}
		pad.SeqOff = append(pad.SeqOff, int32(len(pad.IDs)))
	}
	pp, err := m.Forward(ctx, pad, ad, TrainOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for s, n := range lens {
		for i := range n {
			got, want := pp.Logprob[s*T+i], p.Logprob[int(b.SeqOff[s])+i]
			if math.Abs(float64(got-want)) > 1e-5*math.Abs(float64(want))+1e-6 {
				t.Errorf("sequence %d token %d: padded logprob %v, packed %v", s, i, got, want)
			}
		}
		for i := n; i < T; i++ {
			if pp.Logprob[s*T+i] != 0 {
				t.Errorf("padding row %d of sequence %d has logprob %v, want 0", i, s, pp.Logprob[s*T+i])
			}
		}
	}
}

// The LoRA gradient of L = Σ w·logprob + Σ u·entropy agrees with central
// finite differences on a micro model, for every family.
func TestGradientFiniteDifference(t *testing.T) {
	ctx := context.Background()
	for _, be := range testBackends(t) {
		for _, fam := range families {
			for _, bf16 := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/bf16=%v", be.Name(), fam, bf16), func(t *testing.T) {
					m := newMicro(t, fam, be, 13)
					if bf16 {
						m.ToBF16()
					}
					ad := randomAdapter(t, m, AllModules(), 2, 17)
					b := packed(m.Config.Vocab, []int{4, 3}, 19)
					N := len(b.IDs)
					rng := rand.New(rand.NewPCG(23, 4))
					w, u := make([]float32, N), make([]float32, N)
					for i := range w {
						w[i], u[i] = float32(rng.NormFloat64()), float32(0.5*rng.NormFloat64())
					}
					loss := func() float64 {
						p, err := m.Forward(ctx, b, ad, TrainOptions{})
						if err != nil {
							t.Fatal(err)
						}
						var s float64
						for i := range N {
							s += float64(w[i])*float64(p.Logprob[i]) + float64(u[i])*float64(p.Entropy[i])
						}
						return s
					}
					ad.ZeroGrad()
					p, err := m.Forward(ctx, b, ad, TrainOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if err := p.Backward(ctx, w, u); err != nil {
						t.Fatal(err)
					}
					checked := 0
					ad.Params(func(name string, param, grad []float32) {
						// A few entries of every tensor: the largest-gradient one and two random ones.
						idx := []int{rng.IntN(len(param)), rng.IntN(len(param))}
						big := 0
						for i := range grad {
							if math.Abs(float64(grad[i])) > math.Abs(float64(grad[big])) {
								big = i
							}
						}
						idx = append(idx, big)
						for _, i := range idx {
							const h = 1e-2
							old := param[i]
							param[i] = old + h
							lp := loss()
							param[i] = old - h
							lm := loss()
							param[i] = old
							fd := (lp - lm) / (2 * h)
							if e := math.Abs(fd - float64(grad[i])); e > 2e-2*math.Abs(fd)+2e-3 {
								t.Errorf("%s[%d]: backward %v, finite difference %v", name, i, grad[i], fd)
							}
							checked++
						}
					})
					if checked == 0 {
						t.Fatal("no parameters checked")
					}
				})
			}
		}
	}
}

// Bad input is an error, not a panic.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	m := newMicro(t, "llama", testBackends(t)[0], 1)
	V := int32(m.Config.Vocab)
	cases := map[string]*Batch{
		"empty":        {SeqOff: []int32{0}},
		"id too big":   {IDs: []int32{V}, Pos: []int32{0}, SeqOff: []int32{0, 1}},
		"negative id":  {IDs: []int32{-1}, Pos: []int32{0}, SeqOff: []int32{0, 1}},
		"bad offsets":  {IDs: []int32{1, 2}, Pos: []int32{0, 1}, SeqOff: []int32{0, 1}},
		"bad target":   {IDs: []int32{1}, Pos: []int32{0}, SeqOff: []int32{0, 1}, Targets: []int32{V}},
		"short pos":    {IDs: []int32{1, 2}, Pos: []int32{0}, SeqOff: []int32{0, 2}},
		"decreasing":   {IDs: []int32{1, 2}, Pos: []int32{0, 1}, SeqOff: []int32{0, 2, 1, 2}},
		"negative pos": {IDs: []int32{1}, Pos: []int32{-3}, SeqOff: []int32{0, 1}},
	}
	for name, b := range cases {
		if _, err := m.Forward(ctx, b, nil, TrainOptions{}); err == nil {
			t.Errorf("%s: Forward accepted it", name)
		}
	}
	other := newMicro(t, "qwen3", testBackends(t)[0], 1)
	ad := randomAdapter(t, other, AllModules(), 2, 1)
	if _, err := m.Logits(ctx, packed(m.Config.Vocab, []int{3}, 1), ad); err == nil {
		t.Error("adapter of another shape accepted")
	}
	cache := NewContiguousCache(&m.Config, m.Backend())
	if _, err := m.Step(ctx, cache, []StepInput{{Seq: 1, IDs: []int32{V}}}, nil); err == nil {
		t.Error("Step accepted an out-of-vocabulary id")
	}
	if cache.Len(1) != 0 {
		t.Errorf("failed step left %d tokens in the cache", cache.Len(1))
	}
	if _, err := m.Step(ctx, cache, []StepInput{{Seq: 1, IDs: []int32{1}}, {Seq: 1, IDs: []int32{2}}}, nil); err == nil {
		t.Error("Step accepted the same sequence twice")
	}
	if _, err := New(Config{Family: "gpt2"}, testBackends(t)[0]); err == nil {
		t.Error("New accepted an unknown family")
	}
}

// An adapter written as a PEFT folder reads back equal and gives the same logits.
func TestAdapterRoundTrip(t *testing.T) {
	ctx := context.Background()
	m := newMicro(t, "qwen2", testBackends(t)[0], 3)
	ad := randomAdapter(t, m, []Module{ModK, ModO, ModUp}, 3, 5)
	ad.Config.RSLoRA = true
	for _, layer := range ad.Layers {
		for _, lr := range layer {
			if lr != nil {
				lr.Scale = ad.Config.Scale()
			}
		}
	}
	dir := t.TempDir() + "/step-000001"
	if err := WriteAdapter(dir, ad, "tiny"); err != nil {
		t.Fatal(err)
	}
	back, err := ReadAdapter(dir, &m.Config)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(back.Config) != fmt.Sprint(ad.Config) {
		t.Errorf("config reads back as %+v, wrote %+v", back.Config, ad.Config)
	}
	want, got := ad.Tensors(), back.Tensors()
	if len(got) != len(want) {
		t.Fatalf("%d tensors read, %d written", len(got), len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name || fmt.Sprint(got[i].Values) != fmt.Sprint(want[i].Values) {
			t.Fatalf("tensor %s differs after the round trip", want[i].Name)
		}
	}
	b := packed(m.Config.Vocab, []int{5}, 2)
	l1, err := m.Logits(ctx, b, ad)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := m.Logits(ctx, b, back)
	if err != nil {
		t.Fatal(err)
	}
	if d := maxRelDiff(l2, l1); d != 0 {
		t.Errorf("read-back adapter changes logits by %.3g", d)
	}
}

// A bf16 model saved (as F32, so the float32 norms stay exact) and loaded back (then converted) is the same
// model; its logits are close to the float32 model's; merging into bf16
// weights stays within bf16 rounding of the adapter.
func TestBF16(t *testing.T) {
	ctx := context.Background()
	for _, be := range testBackends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			m := newMicro(t, "qwen2", be, 21)
			b := packed(m.Config.Vocab, []int{5, 4}, 2)
			f32, err := m.Logits(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			m.ToBF16()
			bf, err := m.Logits(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(bf, f32); d == 0 || d > 3e-2 {
				t.Errorf("bf16 logits differ from f32 by %.3g, want small but nonzero", d)
			}
			path := filepath.Join(t.TempDir(), "model.safetensors")
			if err := m.SaveWeights(path, safetensors.F32); err != nil {
				t.Fatal(err)
			}
			m2, err := New(m.Config, be)
			if err != nil {
				t.Fatal(err)
			}
			m2.ToBF16()
			set, err := safetensors.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			if err := m2.LoadWeights(set); err != nil {
				t.Fatal(err)
			}
			bf2, err := m2.Logits(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(bf2, bf); d != 0 {
				t.Errorf("bf16 save/load changes logits by %.3g", d)
			}
			ad := randomAdapter(t, m, AllModules(), 2, 3)
			want, err := m.Logits(ctx, b, ad)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Merge(ad); err != nil {
				t.Fatal(err)
			}
			got, err := m.Logits(ctx, b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d := maxRelDiff(got, want); d > 3e-2 {
				t.Errorf("bf16 merge differs from the adapter by %.3g", d)
			}
		})
	}
}

// An adapter whose layers adapt different modules at different ranks (as a
// PEFT file with layers_to_transform or per-layer choices gives) trains
// correctly, with and without gradient checkpointing.
func TestUnevenAdapter(t *testing.T) {
	ctx := context.Background()
	for _, be := range testBackends(t) {
		t.Run(be.Name(), func(t *testing.T) {
			m := newMicro(t, "llama", be, 4)
			ad := randomAdapter(t, m, AllModules(), 2, 6)
			ad.Layers[0] = [numModules]*LoRA{}                 // layer 0 not adapted
			ad.Layers[1][ModK], ad.Layers[1][ModUp] = nil, nil // layer 1 partly
			b := packed(m.Config.Vocab, []int{5, 3}, 8)
			w := make([]float32, len(b.IDs))
			for i := range w {
				w[i] = float32(i%4) - 1.5
			}
			grads := map[bool][]float32{}
			for _, ckpt := range []bool{false, true} {
				ad.ZeroGrad()
				p, err := m.Forward(ctx, b, ad, TrainOptions{Checkpoint: ckpt})
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Backward(ctx, w, nil); err != nil {
					t.Fatal(err)
				}
				ad.Params(func(_ string, _, g []float32) { grads[ckpt] = append(grads[ckpt], g...) })
			}
			if d := maxRelDiff(grads[true], grads[false]); d > 1e-6 {
				t.Errorf("checkpointed gradient differs by %.3g", d)
			}
			if _, err := m.Logits(ctx, b, ad); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestPack(t *testing.T) {
	b, err := Pack([][]int32{{5, 6, 7}, {8}, {9, 10}}, [][]int32{{6, 7, -1}, {-1}, {10, -1}})
	if err != nil {
		t.Fatal(err)
	}
	want := &Batch{
		IDs: []int32{5, 6, 7, 8, 9, 10}, Pos: []int32{0, 1, 2, 0, 0, 1}, SeqOff: []int32{0, 3, 4, 6},
		Targets: []int32{6, 7, -1, -1, 10, -1},
	}
	if fmt.Sprint(b) != fmt.Sprint(want) {
		t.Errorf("Pack = %+v, want %+v", b, want)
	}
	if _, err := Pack([][]int32{{1, 2}}, [][]int32{{1}}); err == nil {
		t.Error("Pack accepted targets of the wrong length")
	}
	m := newMicro(t, "llama", testBackends(t)[0], 1)
	if _, err := m.Forward(context.Background(), b, nil, TrainOptions{}); err != nil {
		t.Errorf("packed batch rejected: %v", err)
	}
}
