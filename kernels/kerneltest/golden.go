package kerneltest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hone-rl/hone/kernels"
)

// GoldenTol is the relative tolerance against PyTorch's float32 values
// (|got − want| ≤ GoldenTol·(|want| + rms(want))).
const GoldenTol = 1e-5

// golden mirrors testdata/golden/kernels/golden.json, written by
// make_golden.py beside it.
type golden struct {
	RoPE struct {
		Config struct {
			Theta, Factor, Low, High, Orig float64
			HeadDim                        int `json:"head_dim"`
			RotaryDim                      int `json:"rotary_dim"`
		}
		N, H, D              int
		Pos                  []int32
		Inp, Out, Dout, Dinp []float32
		InvFreq              []float32 `json:"inv_freq"`
	} `json:"rope_llama3"`
	Attention struct {
		N, H, KVH, D                        int
		Scale                               float32
		SeqOff                              []int32 `json:"seq_off"`
		Q, K, V, Out, Lse, Dout, Dq, Dk, Dv []float32
	} `json:"attention_gqa"`
	Logprob struct {
		N, C, V, Chunk                                              int
		Hidden, Weight                                              []float32
		Targets                                                     []int32
		Logprob, Entropy, Lse, Dlogprob, Dentropy, Dhidden, Dweight []float32
	} `json:"logprob_chunked"`
	AdamW struct {
		N, Steps int
		Hparams  struct {
			LR, Beta1, Beta2, Eps float32
			WeightDecay           float32 `json:"weight_decay"`
		}
		Param0      []float32
		Grads       [][]float32
		Param, M, V []float32
	} `json:"adamw"`
}

// RunGolden checks backend b against PyTorch values in dir (the repository's
// testdata/golden/kernels): RoPE with llama3 scaling and partial rotary dims,
// GQA attention over packed sequences, the chunked logprob and entropy, three
// AdamW steps; forward and, where there is one, backward.
func RunGolden(t *testing.T, b kernels.Backend, dir string) {
	t.Helper()
	runGolden(t, b, dir, nil)
}

// RunGoldenOps is RunGolden on the named ops only ("RoPE", "Attention",
// "Logprob", "AdamW"), for a backend that implements some ops itself and
// leaves the others to ref. A name that is no op fails t.
func RunGoldenOps(t *testing.T, b kernels.Backend, dir string, ops ...string) {
	t.Helper()
	for _, op := range ops {
		if !slices.Contains(goldenOps, op) {
			t.Errorf("kerneltest.RunGoldenOps: no op %q (have %v)", op, goldenOps)
		}
	}
	runGolden(t, b, dir, ops)
}

// goldenOps are the first parts of RunGolden's subtest names.
var goldenOps = []string{"RoPE", "Attention", "Logprob", "AdamW"}

// runGolden runs the golden subtests whose name starts with one of ops
// and a slash (all of them when ops is nil).
func runGolden(t *testing.T, b kernels.Backend, dir string, ops []string) {
	t.Helper()
	run := func(name string, f func(*testing.T)) {
		if ops == nil || slices.Contains(ops, name[:strings.IndexByte(name, '/')]) {
			t.Run(name, f)
		}
	}
	const rerun = "rerun: /usr/bin/python3 testdata/golden/kernels/make_golden.py testdata/golden/kernels"
	data, err := os.ReadFile(filepath.Join(dir, "golden.json"))
	if err != nil {
		t.Fatalf("golden values: %v (%s)", err, rerun)
	}
	var prov struct{ Files map[string]string }
	pj, err := os.ReadFile(filepath.Join(dir, "provenance.json"))
	if err != nil {
		t.Fatalf("golden provenance: %v (%s)", err, rerun)
	}
	if err := json.Unmarshal(pj, &prov); err != nil {
		t.Fatalf("%s: %v (%s)", filepath.Join(dir, "provenance.json"), err, rerun)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != prov.Files["golden.json"] {
		t.Fatalf("golden.json has sha256 %s, provenance.json says %s: the file was changed by hand (%s)", got, prov.Files["golden.json"], rerun)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("%s: %v (%s)", filepath.Join(dir, "golden.json"), err, rerun)
	}
	// The buffers the ops see are the backend's (see mem), freed at the end.
	m := &mem{b: b}
	defer m.free()
	check := func(t *testing.T, what string, got, want []float32) {
		t.Helper()
		if len(want) == 0 {
			t.Fatalf("%s: golden file has no values (%s)", what, rerun)
		}
		near(t, what+" vs PyTorch ("+rerun+")", got, want, GoldenTol)
	}

	run("RoPE/llama3", func(t *testing.T) {
		r := g.RoPE
		inv, err := kernels.RoPEInvFreq(kernels.RoPEConfig{Theta: r.Config.Theta, HeadDim: r.Config.HeadDim, RotaryDim: r.Config.RotaryDim,
			Scaling: "llama3", Factor: r.Config.Factor, LowFreqFactor: r.Config.Low, HighFreqFactor: r.Config.High, OriginalMaxPos: r.Config.Orig})
		if err != nil {
			t.Fatal(err)
		}
		near(t, "inv_freq vs PyTorch ("+rerun+")", inv, r.InvFreq, 1e-6)
		out := m.zeros(len(r.Out))
		b.RoPEForward(out, m.of(r.Inp), r.Pos, m.of(inv), r.N, r.H, r.D)
		check(t, "out", out, r.Out)
		dinp := m.zeros(len(r.Dinp))
		b.RoPEBackward(dinp, m.of(r.Dout), r.Pos, m.of(inv), r.N, r.H, r.D)
		check(t, "dinp", dinp, r.Dinp)
	})

	run("Attention/GQA", func(t *testing.T) {
		a := g.Attention
		out, lse := m.zeros(len(a.Out)), m.zeros(len(a.Lse))
		q, k, v := m.of(a.Q), m.of(a.K), m.of(a.V)
		b.AttentionForward(out, lse, q, k, v, a.SeqOff, a.N, a.H, a.KVH, a.D, a.Scale)
		check(t, "out", out, a.Out)
		check(t, "lse", lse, a.Lse)
		dq, dk, dv := m.zeros(len(a.Dq)), m.zeros(len(a.Dk)), m.zeros(len(a.Dv))
		b.AttentionBackward(dq, dk, dv, m.of(a.Dout), out, lse, q, k, v, a.SeqOff, a.N, a.H, a.KVH, a.D, a.Scale)
		check(t, "dq", dq, a.Dq)
		check(t, "dk", dk, a.Dk)
		check(t, "dv", dv, a.Dv)
	})

	run("Logprob/chunked", func(t *testing.T) {
		l := g.Logprob
		lp, ent, lse := m.zeros(l.N), m.zeros(l.N), m.zeros(l.N)
		hidden, weight := m.of(l.Hidden), m.of(l.Weight)
		b.LogprobForward(lp, ent, lse, nil, hidden, weight, l.Targets, l.N, l.C, l.V, l.Chunk)
		check(t, "logprob", lp, l.Logprob)
		check(t, "entropy", ent, l.Entropy)
		check(t, "lse", lse, l.Lse)
		dh, dw := m.zeros(len(l.Dhidden)), m.zeros(len(l.Dweight))
		b.LogprobBackward(dh, dw, m.of(l.Dlogprob), m.of(l.Dentropy), lse, ent, hidden, weight, l.Targets, l.N, l.C, l.V, l.Chunk)
		check(t, "dhidden", dh, l.Dhidden)
		check(t, "dweight", dw, l.Dweight)
	})

	run("AdamW/torch.optim", func(t *testing.T) {
		a := g.AdamW
		h := kernels.AdamWParams{LR: a.Hparams.LR, Beta1: a.Hparams.Beta1, Beta2: a.Hparams.Beta2, Eps: a.Hparams.Eps, WeightDecay: a.Hparams.WeightDecay}
		p, mo, v := m.of(a.Param0), m.zeros(a.N), m.zeros(a.N)
		if len(a.Grads) != a.Steps {
			t.Fatalf("golden AdamW: %d gradients for %d steps (%s)", len(a.Grads), a.Steps, rerun)
		}
		for s, gr := range a.Grads {
			b.AdamW(p, m.of(gr), mo, v, a.N, s+1, h)
		}
		check(t, "param", p, a.Param)
		check(t, "exp_avg", mo, a.M)
		check(t, "exp_avg_sq", v, a.V)
	})
}
